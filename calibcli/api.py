"""The metric functions of the library, on array-likes (NumPy, lists, pandas, polars, pyarrow, torch or JAX
through ``__array__``/``__dlpack__``), with scikit-learn's argument names and order (``y_true`` first,
``y_prob`` second, keyword-only options named as the CLI's flags): :func:`ece`, :func:`dce`,
:func:`sun_interval`, :func:`brier_decomposition`, :func:`brier_score`, :func:`log_loss`, :func:`smooth_ece`,
:func:`tcal_test`, and any metric by its registry name with :func:`compute`. Each returns a frozen
:class:`MetricResult` (``to_dict()``, ``to_frame()``) whose numbers are those of the CLI's JSON for the same
rows. The scikit-learn scorer :func:`make_calibration_scorer` is in :mod:`calibcli.sklearn`.

Users import these from :mod:`calibcli.metrics` (or the top level), which also carries the registry's names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibcli.clinical.accumulator import ClinicalTestAccumulator
from calibcli.core.declarations import CLINICAL_TEST_NAMES, library_signature
from calibcli.core.errors import CalibcliError, library_text
from calibcli.core.modes import default_mode
from calibcli.core.registry import _ENTRIES, REGISTRY
from calibcli.core.results import MetricResult, metric_result
from calibcli.core.validation import check_options, check_type, library_defaults
from calibcli.ece_family import options as ece_options
from calibcli.ece_family.accumulator import InputAccumulator, multiclass_scores
from calibcli.io.arrays import prepare
from calibcli.smooth import options as smece_options
from calibcli.smooth.inputs import SmoothInputAccumulator
from calibcli.tcal import options as tcal_options
from calibcli.tcal.accumulator import TcalInputAccumulator

# =============================================================================================
# Metric functions on array-likes: the library's front door (scikit-learn's names and order)
#
# Each function takes ``y_true`` first and ``y_prob`` second, then keyword-only options named as the
# CLI's flags, and returns a :class:`MetricResult`. Inputs go through :func:`calibcli.io.arrays.prepare`
# (NumPy, lists, pandas, polars, pyarrow, anything with ``__array__`` or ``__dlpack__``) and then through
# the accumulators the commands stream into, fed rows ``0..n-1`` as one batch: the numbers are those of
# ``calibcli ece`` / ``smece`` / ``tcal --json`` on a file holding the same rows, with the same seed.


#: ``(norm, estimator)`` of :func:`ece` -> the metric's name.
ECE_NAMES = {
    ("l1", "plugin"): "ece_l1_plugin",
    ("l2", "plugin"): "ece_l2_plugin",
    ("max", "plugin"): "ece_max_plugin",
    ("l2", "debiased_kumar"): "ece_l2_debiased_kumar",
    ("l2", "debiased_dpe"): "ece_l2_debiased_dpe",
}
NORMS = ("l1", "l2", "max")
ECE_ESTIMATORS = ("plugin", "debiased_kumar", "debiased_dpe")

_SCORES = ("brier_score_multiclass", "log_loss_multiclass")

#: The registry's families of metrics on class probabilities: those :func:`compute` takes.
CLASSIFICATION_FAMILIES = ("binned", "scores", "clinical", "cumulative", "clinical_test", "smooth", "tcal")


def _one_batch(acc, prepared):
    """Feed the rows ``0..n-1`` to an input accumulator as one batch, and again when it asks for a second pass
    (quantile edges, a finer smoothing grid: SPEC 8), as the local engine does with a stream."""

    def feed(a):
        a.update(np.arange(prepared.n, dtype=np.int64), prepared.probs, prepared.labels, prepared.sample_weight)
        return a

    acc = feed(acc)
    if acc.needs_second_pass():
        acc = feed(acc.for_second_pass())
    return acc


def _reported(accumulator_class, options, prepared, mode: str | None):
    """The report of an input accumulator of ``accumulator_class`` with ``options``, in ``mode`` (default: by the
    number of classes), over the rows of ``prepared`` (:func:`_one_batch`)."""
    acc = accumulator_class(
        mode=mode or default_mode(prepared.n_classes),
        n_classes=prepared.n_classes,
        class_names=prepared.class_names,
        options=options,
    )
    return _one_batch(acc, prepared).result()


@library_signature(ece_options.Options, "n_bins", "strategy", "mode", "class_weights", "n_boot", "alpha", "seed")
def binned_metric(
    name: str, y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options
) -> MetricResult:
    """Any metric of the binned family (SPEC 2: the names :func:`describe` ``("binned")`` lists) by name.

    The functions below (:func:`ece`, :func:`dce`, :func:`brier_score`, ...) call it; it runs the
    pipeline of ``calibcli ece`` (:class:`calibcli.ece_family.accumulator.InputAccumulator`) on the rows in memory.
    In ``marginal`` mode the metric is the aggregate over classes (SPEC 1), with the per-class values in
    ``per_class``; metrics without a class rule (Brier, log-loss, the Sun interval) have no aggregate.

    >>> y_true = [0, 1, 1, 0, 1, 1, 0, 1]
    >>> y_prob = [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3]
    >>> r = binned_metric("ece_l2_sq_debiased_kumar", y_true, y_prob, n_bins=5)
    >>> r.name, round(r.estimate, 4), r.related["ece_l2_debiased_kumar"].estimate
    ('ece_l2_sq_debiased_kumar', -0.0106, 0.0)
    """
    return _binned(name, prepare(y_true, y_prob, sample_weight, data=data, logits=logits), **options)


def _binned(name: str, prepared, **options) -> MetricResult:
    """:func:`binned_metric` on inputs already through :func:`calibcli.io.arrays.prepare`."""
    if name not in REGISTRY or REGISTRY[name].family not in ("binned", "scores", "clinical", "cumulative"):
        known = [m.name for m in _ENTRIES if m.family in ("binned", "scores", "clinical", "cumulative")]
        raise CalibcliError(f"{name!r} is not a binned metric: expected one of {', '.join(known)}")
    o = ece_options.Options.library(**options)
    used = o.mode or default_mode(prepared.n_classes)
    acc = InputAccumulator(mode=used, n_classes=prepared.n_classes, class_names=prepared.class_names, options=o)
    report = _one_batch(acc, prepared).result()
    params = {"n_bins": o.n_bins, "strategy": o.strategy, "n_boot": o.n_boot, "alpha": o.alpha, "seed": o.seed}
    if used == "marginal":
        params["class_weights"] = o.class_weights
    details, per_class = {}, {}
    if name in _SCORES:
        metrics = report.multiclass_scores or multiclass_scores(
            prepared.labels,
            prepared.probs,
            sample_weight=prepared.sample_weight,
            n_boot=o.n_boot,
            alpha=o.alpha,
            seed=o.seed,
        )
    elif used == "marginal":
        if REGISTRY[name].combine is None:
            raise CalibcliError(
                f"{name} has no aggregate over classes (only the calibration errors combine, "
                f"docs: How it is computed §1): "
                f"use "
                f"{{opt:mode}} binary or top-label, or for K classes brier_score_multiclass / log_loss_multiclass"
            )
        metrics = report.aggregate
        per_class = {p.name: p.result.metrics[name] for p in report.problems}
    else:
        result = report.problems[0].result
        metrics = result.metrics
        details = {"n_bins_nonempty": result.n_bins_nonempty, "weight_total": result.weight_total}
    return metric_result(
        name, metrics, n=prepared.n, mode=used, params=params, per_class=per_class, details=details, report=report
    )


@library_signature(ece_options.Options, "n_bins", "strategy", "mode", "class_weights", "n_boot", "alpha", "seed")
def ece(
    y_true,
    y_prob,
    *,
    norm: str = "l1",
    estimator: str = "plugin",
    sample_weight=None,
    logits: bool = False,
    data=None,
    **options,
) -> MetricResult:
    """Binned expected calibration error (SPEC 2.2), named by its norm and estimator.

    Parameters
    ----------
    y_true
        Labels: 0/1 or booleans for one probability column; class indices ``0..K-1`` (or class names
        matching ``p_<class>`` columns of a DataFrame) for K columns.
    y_prob
        One probability column (binary), or one column per class: an ``(n, K)`` array, a DataFrame, a
        list column. NumPy, lists, pandas, polars, pyarrow, or anything with ``__array__``/``__dlpack__``.
    norm, estimator
        ``l1``, ``l2`` or ``max``; ``plugin``, or for ``l2`` the debiased ``debiased_kumar`` (Kumar et al.)
        or ``debiased_dpe`` (T-Cal): the metric is ``ece_<norm>_<estimator>`` (``ece_l2_debiased_kumar`` is the
        root of the signed square ``ece_l2_sq_debiased_kumar``, which ``related`` holds beside it).
    sample_weight
        Frequency weights, one per row.
    **options
        The binned family's options, keyword-only, declared once for the command line and the library
        (:class:`calibcli.ece_family.options.Options`; checked when the options object is built):
        ``n_bins`` bins (15), ``strategy`` ``uniform`` (equal width, the default) or ``quantile`` (equal mass;
        SPEC 2.1); ``mode`` ``binary``, ``top-label`` (default for K > 2) or ``marginal`` (SPEC 1), and in
        marginal mode ``class_weights``, the aggregate's weights of the classes, ``uniform`` or by their
        ``prior`` frequency; ``n_boot`` (0: no interval, the library's default), ``alpha`` (0.05) and ``seed``
        (0): the percentile Poisson-bootstrap interval at level ``1 - alpha`` from ``n_boot`` resamples keyed
        by ``(seed, row)`` (SPEC 2.4, 8); ``alpha`` is also the delta of the l1 error's upper bound.
    logits
        ``y_prob`` holds logits (sigmoid / softmax first).
    data
        A DataFrame (pandas, polars), pyarrow Table or mapping: ``y_true``, ``y_prob`` and ``sample_weight``
        may then name its columns (``y_prob`` as a list of names or patterns such as ``"p_*"``).

    Returns
    -------
    MetricResult
        The numbers ``calibcli ece --json`` reports for the same rows and options.

    Examples
    --------
    >>> from calibcli.metrics import ece
    >>> y_true = [0, 1, 1, 0, 1, 1, 0, 1]
    >>> y_prob = [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3]
    >>> r = ece(y_true, y_prob, n_bins=5)
    >>> r.name, round(r.estimate, 4), round(r.upper_bound, 4)
    ('ece_l1_plugin', 0.25, 1.1154)
    >>> r = ece(y_true, y_prob, n_bins=5, norm="l2", estimator="debiased_kumar")
    >>> r.name, sorted(r.related)
    ('ece_l2_debiased_kumar', ['ece_l2_sq_debiased_kumar'])
    """
    check_options({"norm": NORMS, "estimator": ECE_ESTIMATORS}, norm=norm, estimator=estimator)
    name = ECE_NAMES.get((norm, estimator))
    if name is None:
        raise CalibcliError(
            f"the {estimator} estimator has no {norm} form: the debiased estimators estimate the squared "
            f"l2 error; use norm='l2' with them, or estimator='plugin'"
        )
    return binned_metric(name, y_true, y_prob, sample_weight=sample_weight, logits=logits, data=data, **options)


@library_signature(ece_options.Options, "n_bins", "mode", "class_weights", "n_boot", "alpha", "seed")
def dce(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """Distance to calibration (seed 002, SPEC 2.4): the estimate on ``n_bins`` equal-width bins and its upper
    confidence bound ``dCE_hat + 1/B + sqrt(2 log(1/delta)/n)`` with ``delta = alpha``.

    >>> from calibcli.metrics import dce
    >>> r = dce([0, 1, 1, 0, 1, 1, 0, 1], [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3], n_bins=5)
    >>> r.name, round(r.estimate, 4), round(r.upper_bound, 4)
    ('dce', 0.175, 1.2404)
    """
    return binned_metric("dce", y_true, y_prob, sample_weight=sample_weight, logits=logits, data=data, **options)


@library_signature(ece_options.Options, "n_bins", "strategy", "mode", "alpha", "n_boot", "seed")
def sun_interval(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """Confidence interval for the squared l2-ECE of Sun et al. (2024; seed 002 Algorithm 1, SPEC 2.4).

    The estimate is their debiased statistic ``T_m`` (``ece_l2_sq_debiased_sun``, in ``related`` with its
    bootstrap interval when ``n_boot > 0``); ``ci_low``/``ci_high`` the adjusted interval of their eq. (8)
    at level ``1 - alpha``. Binary and top-label mode (one problem).

    >>> from calibcli.metrics import sun_interval
    >>> r = sun_interval([0, 1, 1, 0, 1, 1, 0, 1], [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3], n_bins=5)
    >>> r.name, round(r.ci_low, 4), round(r.ci_high, 4)
    ('ece_l2_sq_sun_interval', 0.0, 0.0869)
    """
    return binned_metric(
        "ece_l2_sq_sun_interval", y_true, y_prob, sample_weight=sample_weight, logits=logits, data=data, **options
    )


@library_signature(ece_options.Options, "n_bins", "strategy", "mode", "n_boot", "alpha", "seed")
def brier_decomposition(
    y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options
) -> MetricResult:
    """The Brier score of one binary problem with its Murphy decomposition on the bins (SPEC 2.3).

    ``related`` holds ``brier_reliability``, ``brier_resolution``, ``brier_uncertainty`` and
    ``brier_within_bin``, which add up exactly: ``brier = reliability - resolution + uncertainty + within_bin``.

    >>> from calibcli.metrics import brier_decomposition
    >>> r = brier_decomposition([0, 1, 1, 0, 1, 1, 0, 1], [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3], n_bins=5)
    >>> parts = {k: m.estimate for k, m in r.related.items()}
    >>> round(r.estimate, 4), round(parts["brier_reliability"] - parts["brier_resolution"]
    ...                              + parts["brier_uncertainty"] + parts["brier_within_bin"], 4)
    (0.125, 0.125)
    """
    return binned_metric(
        "brier_score", y_true, y_prob, sample_weight=sample_weight, logits=logits, data=data, **options
    )


@library_signature(ece_options.Options, "n_boot", "alpha", "seed")
def brier_score(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """Brier score (SPEC 2.3): ``mean (z - y)^2`` for one probability column or two classes
    (``brier_score``), ``mean ||P_i - e_{c_i}||^2`` for K > 2 classes (``brier_score_multiclass``).

    >>> from calibcli.metrics import brier_score
    >>> round(brier_score([0, 1, 1], [0.1, 0.8, 0.6]).estimate, 4)
    0.07
    >>> r = brier_score([0, 2], [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    >>> r.name, round(r.estimate, 4)
    ('brier_score_multiclass', 0.1)
    """
    return _proper_score(
        "brier_score", y_true, y_prob, sample_weight=sample_weight, logits=logits, data=data, **options
    )


@library_signature(ece_options.Options, "n_boot", "alpha", "seed")
def log_loss(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """Log-loss (SPEC 2.3), probabilities clipped to ``[1e-15, 1 - 1e-15]``: ``log_loss`` for one column or two
    classes, ``log_loss_multiclass`` for K > 2 (scikit-learn's ``log_loss`` on the same data, up to the clip).

    >>> from calibcli.metrics import log_loss
    >>> round(log_loss([0, 1, 1], [0.1, 0.8, 0.6]).estimate, 4)
    0.2798
    """
    return _proper_score("log_loss", y_true, y_prob, sample_weight=sample_weight, logits=logits, data=data, **options)


def _proper_score(name: str, y_true, y_prob, *, sample_weight, logits: bool, data, **options) -> MetricResult:
    prepared = prepare(y_true, y_prob, sample_weight, data=data, logits=logits)
    return _binned(name + "_multiclass" if prepared.n_classes > 2 else name, prepared, **options)


@library_signature(smece_options.Options, "sigma", "mode", "class_weights", "n_boot", "alpha", "seed")
def smooth_ece(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """SmoothECE (Blasiok & Nakkiran 2023, seed 003; SPEC 3): ``smece`` at the fixed point
    ``sigma* = smECE_sigma*``, or ``smece_at_sigma`` at a given ``sigma``.

    The options are :func:`ece`'s; ``details`` holds the bandwidth (``sigma``), whether it is the fixed
    point, and the grid. The numbers are those of ``calibcli smece --json`` on the same rows. (The compute
    core with a NumPy ``rng`` is :func:`calibcli.smooth.estimator.smooth_ece`, also exported as
    ``calibcli.smooth_ece``.)

    >>> from calibcli.metrics import smooth_ece
    >>> r = smooth_ece([0, 1, 1, 0, 1, 1, 0, 1], [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3])
    >>> r.name, round(r.estimate, 4), round(r.details["sigma"], 4)
    ('smece', 0.1373, 0.1373)
    """
    o = smece_options.Options.library(**options)
    prepared = prepare(y_true, y_prob, sample_weight, data=data, logits=logits)
    used = o.mode or default_mode(prepared.n_classes)
    acc = SmoothInputAccumulator(mode=used, n_classes=prepared.n_classes, class_names=prepared.class_names, options=o)
    report = _one_batch(acc, prepared).result()
    name = o.metric
    params: dict[str, Any] = {"sigma": o.sigma, "n_boot": o.n_boot, "alpha": o.alpha, "seed": o.seed}
    per_class, details = {}, {}
    if used == "marginal":
        params["class_weights"] = o.class_weights
        per_class = {p.name: p.metrics[name] for p in report.problems}
    else:
        r = report.problems[0].result
        details = {
            "sigma": r.sigma,
            "sigma_is_fixed_point": r.sigma_is_fixed_point,
            "fixed_point_gap": r.fixed_point_gap,
            "grid_cells": r.grid_size,
            "weight_total": r.weight_total,
        }
    return metric_result(
        name,
        report.headline(),
        n=prepared.n,
        mode=used,
        params=params,
        per_class=per_class,
        details=details,
        report=report,
    )


#: The T-Cal options :func:`tcal_test` takes, declared by the tcal family (:class:`calibcli.tcal.options.Options`).
TCAL_KEYWORDS = ("mode", "smoothness", "null", "n_boot", "combine", "discrete", "alpha", "seed", "max_rows")


@library_signature(tcal_options.Options, *TCAL_KEYWORDS)
def tcal_test(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """Is the miscalibration real? T-Cal (Lee et al. 2023, seed 004; SPEC 4), or the exact binomial test per
    value for predictors that take few distinct values (SPEC 4.4, ``discrete``).

    The result's ``metric`` is the p-value (``tcal_p_value`` or ``binomial_p_value``; higher is weaker
    evidence of miscalibration), ``related`` holds the statistic ``T_m`` of the deciding level, and
    ``details`` the decision at ``alpha`` (``reject``), which test ran, and the per-level or per-value
    table. ``mode`` is ``binary``, ``top-label`` or ``canonical`` (the whole probability vector). The
    options and the numbers are those of ``calibcli tcal --json`` on the same rows (``numpy``'s
    ``default_rng(seed)`` draws the resamples). The core on arrays is :func:`calibcli.tcal.tcal_test`.
    The test's warnings (too few resamples to reject, little power) are issued as ``UserWarning``.

    >>> from calibcli.metrics import tcal_test
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.random(2000)
    >>> y = rng.random(2000) < z ** 2          # miscalibrated: P(y = 1 | z) = z^2
    >>> r = tcal_test(y, z, n_boot=500)
    >>> r.name, r.details["reject"], round(r.estimate, 4)
    ('tcal_p_value', True, 0.0399)
    """
    import warnings

    defaults = library_defaults(tcal_options.Options)
    values = {name: options.get(name, defaults[name]) for name in TCAL_KEYWORDS}
    tcal = tcal_options.Options(**values)
    mode = values.pop("mode")
    prepared = prepare(y_true, y_prob, sample_weight, data=data, logits=logits)
    report = _reported(TcalInputAccumulator, tcal, prepared, mode)
    texts = tuple(library_text(w) for w in report.warnings)
    for text in texts:
        warnings.warn(text, UserWarning, stacklevel=2)
    entry = report.to_dict()
    r = entry["result"]
    details = {"test": report.test, "reject": report.reject, "warnings": list(texts), "sample": entry["sample"]}
    if report.test == "tcal":
        details.update(
            n_levels=r["n_levels"],
            levels=r["levels"],
            p_value_bonferroni=r["p_value_bonferroni"],
            p_value_min_p=r["p_value_min_p"],
            exact=r["exact"],
        )
    else:
        details.update(n_values=r["n_values"], per_value=r["per_value"])
    if entry.get("discrete_check"):
        details["discrete_check"] = entry["discrete_check"]
    name = "binomial_p_value" if report.test == "binomial" else "tcal_p_value"
    params = {**values, "n_boot": tcal.resamples}
    return metric_result(
        name, report.headline(), n=prepared.n, mode=report.mode, params=params, details=details, report=report
    )


#: :func:`clinical_test`'s keywords in their order: the T-Cal family's declarations (their library defaults: the
#: Spiegelhalter test, 10 Hosmer-Lemeshow groups) and its own ``sample_weight``, ``logits`` and ``data``.
CLINICAL_KEYWORDS = ("test", "n_bins", "sample_weight", "mode", "alpha", "max_rows", "logits", "data")


@library_signature(tcal_options.Options, *CLINICAL_KEYWORDS)
def clinical_test(y_true, y_prob, *, sample_weight=None, logits: bool = False, data=None, **options) -> MetricResult:
    """Spiegelhalter's Z test, the Hosmer-Lemeshow test (:mod:`calibcli.clinical.classical_tests`) or the ECCE-R test
    (SPEC 9,
    :mod:`calibcli.cumulative.ecce`) of perfect calibration, as ``calibcli tcal --test
    spiegelhalter|hosmer-lemeshow|ecce --json`` computes it for the same rows.

    The result's ``metric`` is the p-value (``spiegelhalter_p_value``, ``hosmer_lemeshow_p_value``,
    ``ecce_p_value``), ``related`` holds the statistic (``ecce_statistic`` is ECCE-R/sigma), ``details`` the
    decision at ``alpha`` and the test's entry (the Hosmer-Lemeshow groups and degrees of freedom; ECCE-R,
    ECCE-MAD, sigma and the form used). ``n_bins``: the Hosmer-Lemeshow groups (deciles); ``max_rows``: the
    ECCE test is exact up to this many rows, on a fine score grid with a stated error bound beyond.

    >>> from calibcli.metrics import clinical_test
    >>> r = clinical_test([0, 0, 1, 1, 0, 1, 1, 0], [0.1, 0.3, 0.35, 0.8, 0.6, 0.9, 0.45, 0.2])
    >>> r.name, round(r.estimate, 4), round(r.related["spiegelhalter_z"].estimate, 4)
    ('spiegelhalter_p_value', 0.783, -0.2754)
    """
    defaults = library_defaults(tcal_options.Options)
    test, n_bins, mode, alpha, max_rows = (
        options.get(k, defaults[k]) for k in ("test", "n_bins", "mode", "alpha", "max_rows")
    )
    chosen = tcal_options.Options.library(
        test=test, n_bins=n_bins if test == "hosmer-lemeshow" else None, alpha=alpha, max_rows=max_rows
    )
    check_options({"test": CLINICAL_TEST_NAMES}, test=test)
    if test != "hosmer-lemeshow":  # (the groups of Hosmer-Lemeshow alone; checked all the same)
        check_type("n_bins", n_bins, int)
        check_options(n_bins=n_bins)
    prepared = prepare(y_true, y_prob, sample_weight, data=data, logits=logits)
    report = _reported(ClinicalTestAccumulator, chosen, prepared, mode)
    entry = report.to_dict()
    name = {
        "spiegelhalter": "spiegelhalter_p_value",
        "hosmer-lemeshow": "hosmer_lemeshow_p_value",
        "ecce": "ecce_p_value",
    }[test]
    params = {
        "test": test,
        "alpha": alpha,
        **({"n_bins": n_bins} if test == "hosmer-lemeshow" else {}),
        **({"max_rows": max_rows} if test == "ecce" else {}),
    }
    details = {"test": test, "reject": report.reject, **{k: v for k, v in entry["result"].items() if k != "reject"}}
    return metric_result(
        name, report.headline(), n=prepared.n, mode=report.mode, params=params, details=details, report=report
    )


def compute(metric: str, y_true, y_prob, **options) -> MetricResult:
    """The metric named ``metric`` (a name of :data:`REGISTRY`), with the options of the function computing it.

    Binned names (``ece_l1_plugin``, ``ece_l2_sq_debiased_kumar``, ``dce``, ``brier_score``, ``log_loss``,
    ``brier_score_multiclass``, ...) take :func:`binned_metric`'s options; ``smece`` and ``smece_at_sigma``
    (which needs ``sigma``) :func:`smooth_ece`'s; ``tcal_p_value``, ``tcal_statistic`` (T-Cal, ``discrete``
    defaults to ``"no"``) and ``binomial_p_value`` (``discrete="yes"``) :func:`tcal_test`'s. This is what
    :func:`calibcli.sklearn.make_calibration_scorer` evaluates.

    >>> from calibcli.metrics import compute
    >>> r = compute("ece_max_plugin", [0, 1, 1, 0, 1, 1, 0, 1], [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3], n_bins=5)
    >>> r.name, round(r.estimate, 4)
    ('ece_max_plugin', 0.4)
    """
    info = REGISTRY.get(metric)
    if info is None:
        raise CalibcliError(f"unknown metric {metric!r}: expected one of {', '.join(REGISTRY)}")
    if info.family not in CLASSIFICATION_FAMILIES:
        raise CalibcliError(
            f"{metric} is a metric of {info.family} predictions, which compute does not take (it takes class "
            f"probabilities): run calibcli {info.family} on them"
        )
    if info.family in ("binned", "scores", "clinical", "cumulative"):
        return binned_metric(metric, y_true, y_prob, **options)
    if info.family == "clinical_test":
        result = clinical_test(
            y_true, y_prob, test=metric.split("_")[0].replace("hosmer", "hosmer-lemeshow"), **options
        )
        return _as(metric, result)
    if info.family == "smooth":
        given = options.get("sigma") is not None
        if given != (metric == "smece_at_sigma"):
            raise CalibcliError(
                "smece_at_sigma needs {opt:sigma}; smece is at the fixed point and takes no {opt:sigma}"
            )
        return smooth_ece(y_true, y_prob, **options)
    options.setdefault("discrete", "yes" if metric == "binomial_p_value" else "no")
    result = tcal_test(y_true, y_prob, **options)
    if metric not in (result.name, *result.related):
        raise CalibcliError(
            f"{metric} is not what the test reported ({result.name}): "
            f"{{opt:discrete}} {options['discrete']} chose the {result.details['test']} test"
        )
    return _as(metric, result)


def _as(metric: str, result: MetricResult) -> MetricResult:
    """A test's result named by ``metric``: the result itself, or one of its related metrics as the headline
    (the same numbers, details and report)."""
    if metric == result.name:
        return result
    return metric_result(
        metric,
        {result.name: result, **result.related},
        n=result.n,
        mode=result.mode,
        params=result.params,
        details=result.details,
        report=result.report,
    )
