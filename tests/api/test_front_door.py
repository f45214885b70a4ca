"""The library's front door (issue 33): its errors are ValueErrors, and TypeErrors where the type is wrong (the
project's own classes, as scikit-learn's InvalidParameterError is both); every option is checked by its
declaration, naming the parameter; missing labels are called missing; a Recalibrator's bad weights raise what
scikit-learn raises."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.core.errors import CalibcliError, OptionError, OptionTypeError
from calibcli.metrics import brier_score, clinical_test, ece, smooth_ece, tcal_test

RNG = np.random.default_rng(1)
P = RNG.uniform(0.05, 0.95, 200)
Y = (RNG.uniform(size=200) < P).astype(int)


def test_every_error_is_a_value_error_and_a_type_error_is_both():
    assert issubclass(CalibcliError, ValueError) and issubclass(OptionError, ValueError)
    assert issubclass(OptionTypeError, TypeError) and issubclass(OptionTypeError, ValueError)
    with pytest.raises(ValueError):
        ece(Y, P, n_bins=0)
    with pytest.raises(ValueError):
        ece([0, 1, 2], [0.1, 0.5, 0.9])


WRONG_TYPES = [
    (lambda: ece(Y, P, alpha=True), "alpha", "alpha is True: expected a number strictly between 0 and 1 (a number, not bool)"),
    (lambda: ece(Y, P, n_bins="15"), "n_bins", "n_bins is '15': expected a positive number of bins (an integer, not text)"),
    (lambda: ece(Y, P, alpha=None), "alpha", "alpha is None: expected a number strictly between 0 and 1"),
    (lambda: ece(Y, P, seed=None), "seed", "seed is None: expected a non-negative integer below 2^64"),
    (lambda: ece(Y, P, seed=1.5), "seed", "seed is 1.5: expected a non-negative integer below 2^64 (an integer: seed=N)"),
    (lambda: ece(Y, P, seed="7"), "seed", "seed is '7': expected a non-negative integer below 2^64 (an integer, not text)"),
    (lambda: ece(Y, P, seed=True), "seed", "seed is True: expected a non-negative integer below 2^64 (an integer, not True)"),
    (lambda: ece(Y, P, strategy=3), "strategy", "strategy is 3: expected one of uniform, quantile"),
    (lambda: brier_score(Y, P, seed=None), "seed", "seed is None: expected a non-negative integer below 2^64"),
    (lambda: smooth_ece(Y, P, alpha=None), "alpha", "alpha is None: expected a number strictly between 0 and 1"),
    (lambda: smooth_ece(Y, P, n_boot="10"), "n_boot",
     "n_boot is '10': expected 0 (no intervals) or a positive count (an integer, not text)"),
    (lambda: tcal_test(Y, P, seed=None), "seed", "seed is None: expected a non-negative integer below 2^64"),
    (lambda: tcal_test(Y, P, seed="7"), "seed", "seed is '7': expected a non-negative integer below 2^64 (an integer, not text)"),
    (lambda: tcal_test(Y, P, alpha=True), "alpha", "alpha is True: expected a number strictly between 0 and 1 (a number, not bool)"),
    (lambda: clinical_test(Y, P, alpha=None), "alpha", "alpha is None: expected a number strictly between 0 and 1"),
    (lambda: clinical_test(Y, P, test="hosmer-lemeshow", n_bins="10"), "n_bins",
     "n_bins is '10': expected a positive number of bins (an integer, not text)"),
]


@pytest.mark.parametrize("call, parameter, message", WRONG_TYPES)
def test_a_value_of_the_wrong_type_is_the_projects_type_error_naming_the_parameter(call, parameter, message):
    with pytest.raises(TypeError) as info:
        call()
    assert isinstance(info.value, OptionTypeError) and info.value.parameter == parameter
    assert str(info.value) == message


@pytest.mark.parametrize("call, message", [
    (lambda: ece(Y, P, seed=-1), "seed is -1: expected a non-negative integer below 2^64"),
    (lambda: ece(Y, P, seed=2**64), "seed is 18446744073709551616: expected a non-negative integer below 2^64"),
    (lambda: smooth_ece(Y, P, seed=-1), "seed is -1: expected a non-negative integer below 2^64"),
    (lambda: tcal_test(Y, P, seed=-1), "seed is -1: expected a non-negative integer below 2^64"),
    (lambda: tcal_test(Y, P, seed=2**64), "seed is 18446744073709551616: expected a non-negative integer below 2^64"),
])
def test_a_seed_outside_0_to_2_64_is_refused(call, message):
    with pytest.raises(OptionError) as info:
        call()
    assert not isinstance(info.value, TypeError)
    assert str(info.value) == message


def test_the_largest_seed_runs_and_numpy_integers_are_seeds():
    assert ece(Y, P, seed=2**64 - 1, n_boot=5).ci_low is not None
    assert ece(Y, P, seed=np.uint64(3), n_boot=5).ci_low == ece(Y, P, seed=3, n_boot=5).ci_low


def test_nullable_booleans_with_na_are_missing_labels_not_text():
    pd = pytest.importorskip("pandas")
    labels = pd.array([True, False, None, True], dtype="boolean")
    with pytest.raises(CalibcliError) as info:
        ece(labels, [0.1, 0.2, 0.3, 0.4])
    assert str(info.value) == (
        "y_true at row 2 is missing (<NA>): expected a label on every row; drop the rows without one (pandas: dropna)"
    )
    assert ece(pd.array([True, False, True, True], dtype="boolean"), [0.1, 0.2, 0.3, 0.4]).estimate == ece(
        [1, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]
    ).estimate


@pytest.mark.parametrize("bad, message", [
    (np.nan, "Input sample_weight contains NaN."),
    (np.inf, "Input sample_weight contains infinity or a value too large for dtype('float64')."),
])
def test_a_recalibrators_non_finite_weights_raise_what_scikit_learn_raises(bad, message):
    pytest.importorskip("sklearn")
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression

    from calibcli.sklearn import Recalibrator

    X = RNG.normal(size=(60, 2))
    y = np.arange(60) % 2
    w = np.r_[bad, np.ones(59)]
    with pytest.raises(ValueError) as theirs:
        CalibratedClassifierCV(LogisticRegression(), cv=3).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError) as ours:
        Recalibrator(LogisticRegression(), cv=3).fit(X, y, sample_weight=w)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value) == message


def test_the_metric_functions_signatures_come_from_the_family_declarations():
    import inspect

    from calibcli import api
    from calibcli.core.validation import library_defaults
    from calibcli.ece_family.options import Options as EceOptions
    from calibcli.smooth.options import Options as SmoothOptions

    for func, declared in [(api.ece, EceOptions), (api.dce, EceOptions), (api.sun_interval, EceOptions),
                           (api.brier_decomposition, EceOptions), (api.brier_score, EceOptions),
                           (api.log_loss, EceOptions), (api.binned_metric, EceOptions),
                           (api.smooth_ece, SmoothOptions)]:
        params = inspect.signature(func).parameters
        defaults = library_defaults(declared)
        taken = [name for name in params if name in defaults]
        assert taken and all(params[name].default == defaults[name] for name in taken), func.__name__
        assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in taken), func.__name__
    from calibcli.tcal.options import Options as TcalFamilyOptions

    params = inspect.signature(api.tcal_test).parameters
    for name, default in library_defaults(TcalFamilyOptions).items():
        if name in api.TCAL_KEYWORDS:
            assert params[name].default == default, name
    assert library_defaults(EceOptions)["n_boot"] == 0 and EceOptions().n_boot == 1000  # library vs command line
    # clinical_test: the same declarations, their library defaults (Spiegelhalter's test, 10 groups) and its own
    # keywords placed among them: the signature it always had, name by name, default by default, in order
    params = inspect.signature(api.clinical_test).parameters
    assert [(p.name, p.kind, p.default) for p in params.values()] == [
        ("y_true", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("y_prob", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("test", inspect.Parameter.KEYWORD_ONLY, "spiegelhalter"),
        ("n_bins", inspect.Parameter.KEYWORD_ONLY, 10),
        ("sample_weight", inspect.Parameter.KEYWORD_ONLY, None),
        ("mode", inspect.Parameter.KEYWORD_ONLY, None),
        ("alpha", inspect.Parameter.KEYWORD_ONLY, 0.05),
        ("max_rows", inspect.Parameter.KEYWORD_ONLY, 1_000_000),
        ("logits", inspect.Parameter.KEYWORD_ONLY, False),
        ("data", inspect.Parameter.KEYWORD_ONLY, None),
    ]
    tcal_defaults = library_defaults(TcalFamilyOptions)
    assert all(params[name].default == tcal_defaults[name] for name in ("test", "n_bins", "mode", "alpha", "max_rows"))
    assert params["n_bins"].annotation is int  # (the library takes a number of groups, not None)
    assert TcalFamilyOptions().test == "auto" and TcalFamilyOptions().n_bins is None  # the command line's
    with pytest.raises(TypeError, match=r"^clinical_test\(\) got an unexpected keyword argument 'n_boot'$"):
        clinical_test(Y, P, n_boot=10)
    with pytest.raises(TypeError, match=r"^ece\(\) got an unexpected keyword argument 'n_bin'$"):
        ece(Y, P, n_bin=10)
