"""Weights are scale-free (issue 33): extreme weights are rescaled by an exact power of two where they enter (the
library's checks, and each input's reader with one scale for the whole input), so any positive scale gives the
unit-weight numbers, without RuntimeWarnings; a range no scale can hold is one Error line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from calibcli.binned.estimators import binned_calibration
from calibcli.core.validation import scaled_weights, weight_scale
from calibcli.diagram.data import prepare_binned
from tests._cli import run

N = 2000
SCALES = [5e-324, 1e-300, 1e-200, 1e200, 1e306, 1e308]


def _rows():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, N)
    return p, (rng.uniform(size=N) < p**1.3).astype(np.int64)


@pytest.mark.parametrize("scale", SCALES)
def test_any_scale_of_unit_weights_gives_the_unit_weight_numbers(scale):
    p, y = _rows()
    unit = binned_calibration(y, p, n_bins=15).metrics
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from an overflow or underflow
        scaled = binned_calibration(y, p, sample_weight=np.full(N, scale), n_bins=15).metrics
    for name in ("ece_l1_plugin", "ece_l2_plugin", "ece_max_plugin", "brier_score", "brier_skill_score"):
        assert scaled[name].estimate == pytest.approx(unit[name].estimate, rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("weights", [np.full(N, 5e-324), np.where(np.arange(N) % 2 == 0, 0.0, 1e300)])
def test_diagram_bands_of_extreme_weights_have_width_on_every_bin_with_rows(weights):
    p, y = _rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = prepare_binned(y, p, sample_weight=weights, n_bins=10)
    low, high = np.asarray(d.acc_low, dtype=float), np.asarray(d.acc_high, dtype=float)
    assert not np.isnan(low).any() and not np.isnan(high).any()
    assert (high - low > 0.01).all()


def test_ordinary_weights_are_left_as_given():
    w = np.random.default_rng(1).uniform(0.01, 100.0, 1000)
    assert weight_scale(w) == 0
    assert scaled_weights(w, 0) is w
    assert weight_scale(np.full(5, 5e-324)) == 1074 and weight_scale(np.full(5, 1e300)) == -996


@pytest.mark.parametrize("scale", [5e-324, 1e200, 1e306])
def test_the_cli_gives_the_unit_weight_numbers_and_a_quiet_stderr(tmp_path, scale):
    p, y = _rows()
    for name, w in (("unit", np.ones(N)), ("scaled", np.full(N, scale))):
        pd.DataFrame({"prob": p, "label": y, "w": w}).to_parquet(tmp_path / f"{name}.parquet")
    runs = {}
    for name in ("unit", "scaled"):
        r = run("ece", tmp_path / f"{name}.parquet", "--weight-col", "w", "--n-boot", "20", "--json")
        assert r.exit_code == 0 and r.stderr == "", r.stderr
        runs[name] = json.loads(r.stdout)["files"][0]["problems"][0]["metrics"]
    for name in (
        "ece_l1_plugin",
        "ece_l2_plugin",
        "brier_score",
        "smece" if "smece" in runs["unit"] else "brier_score",
    ):
        a, b = runs["unit"][name], runs["scaled"][name]
        assert b["estimate"] == pytest.approx(a["estimate"], rel=1e-12), name
        assert b["ci_low"] == pytest.approx(a["ci_low"], rel=1e-9) and b["ci_high"] == pytest.approx(
            a["ci_high"], rel=1e-9
        )


def test_a_dynamic_range_no_scale_can_hold_is_one_error_line(tmp_path):
    n = 70_000  # the scale comes from the first 65,536 rows: tiny; the last rows are then far beyond the range
    rng = np.random.default_rng(2)
    p = rng.uniform(0.05, 0.95, n)
    w = np.full(n, 1e-310)
    w[-100:] = 1e300
    path = tmp_path / "range.parquet"
    pd.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p).astype(int), "w": w}).to_parquet(path)
    r = run("ece", path, "--weight-col", "w", "--n-boot", "0")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: {path}: sample weights up to 1e+300 leave the float range (about 1.8e308) once rescaled with the "
        "others: their range is wider than a float holds, so give the negligible ones a weight of 0\n"
    )
