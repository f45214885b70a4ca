"""Issue 24, library options through the command line's rules: a counting option is an integer (a bool or a
float is refused with the option's rule, as the CLI words it, never numpy's UFuncTypeError), a whole float too
large for the memory budget gets the budget's message on both fronts (``n_bins=1e20``, ``--n-bins 1e20``), and a
prefit Recalibrator refuses one class as the cross-fitted one does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from calibcli import ece
from calibcli.core.errors import OptionError
from tests._cli import BINARY

RNG = np.random.default_rng(0)
P = RNG.uniform(0.05, 0.95, 300)
Y = (RNG.uniform(size=300) < P).astype(int)


@pytest.mark.parametrize("value, message", [
    (True, "n_bins is True: expected a positive number of bins (an integer, not True)"),
    (False, "n_bins is False: expected a positive number of bins (an integer, not False)"),
    (15.0, "n_bins is 15.0: expected a positive number of bins (an integer: n_bins=15)"),
    (np.float64(15.0), "n_bins is 15.0: expected a positive number of bins (an integer: n_bins=15)"),
    (2.5, "n_bins is 2.5: expected a positive number of bins (an integer: n_bins=N)"),
])
def test_ece_refuses_a_bool_or_a_float_number_of_bins(value, message):
    with pytest.raises(OptionError) as err:
        ece(Y, P, n_bins=value)
    assert str(err.value) == message


def test_ece_takes_python_and_numpy_integers_alike():
    assert ece(Y, P, n_bins=np.int64(10)).estimate == ece(Y, P, n_bins=10).estimate


def test_n_bins_1e20_gets_the_memory_budget_message_in_the_library():
    with pytest.raises(OptionError) as err:
        ece(Y, P, n_bins=1e20)
    text = str(err.value)
    assert text.startswith("n_bins 1e+20 would need ") and "for the bin arrays; use at most " in text, text
    assert "the memory budget is" in text


def _console_script() -> str:
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


@pytest.mark.parametrize("value", ["1e20", "100000000000000000000"])
def test_n_bins_1e20_gets_the_memory_budget_message_on_the_command_line(value):
    r = subprocess.run([_console_script(), "ece", BINARY, "--n-bins", value], capture_output=True, timeout=120)
    assert r.returncode == 2 and r.stdout == b""
    text = r.stderr.decode()
    assert text.count("\n") == 1 and text.startswith("Error: --n-bins 100000000000000000000 would need "), text
    assert "for the bin arrays; use at most " in text and "the memory budget is" in text


def test_a_fractional_n_bins_is_refused_by_the_parser():
    r = subprocess.run([_console_script(), "ece", BINARY, "--n-bins", "2.5"], capture_output=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.decode() == "Error: Invalid value for '--n-bins': '2.5' is not a whole number (see 'calibcli ece --help')\n"


def test_a_prefit_recalibrator_refuses_one_class_as_the_cross_fitted_one_does():
    pytest.importorskip("sklearn")
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    from calibcli.sklearn import Recalibrator

    X = RNG.normal(size=(200, 3))
    model = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    one = np.zeros(200, dtype=np.int64)
    for estimator in (FrozenEstimator(model), model):
        with pytest.raises(ValueError) as err:
            Recalibrator(estimator).fit(X, one)
        assert str(err.value) == ("y holds one class (0): fitting the recalibration map needs examples of at least 2 "
                                  "classes")
    with pytest.raises(ValueError) as err:
        Recalibrator(LogisticRegression(), cv=3).fit(X, one)
    assert str(err.value) == "y holds one class (0): a classifier needs at least 2 classes"


def test_a_value_in_a_message_prints_as_written_not_as_a_numpy_repr():
    with pytest.raises(Exception) as err:
        ece(np.array([0.0981, 1.0, 0.0]), np.array([0.2, 0.5, 0.1]))
    assert str(err.value) == "label at row 0 is 0.0981: expected an integer class index in 0..1"
