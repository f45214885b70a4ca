"""``recalibrate evaluate`` on regression dumps: each method's numbers on the test rows are those of ``calibcli
regression`` on ``recalibrate apply``'s output of the same rows, the differences are paired, the split is the
classifier's, and bad input is one Error line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli import run

from calibcli.core.resampling import row_hash

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data" / "regression"
CAL, TEST = str(SAMPLES / "diabetes_forest_cal.csv"), str(SAMPLES / "diabetes_forest.csv")
BOOT = ("--n-boot", "40", "--seed", "3")


def _regression(path, *args) -> dict:
    r = run("regression", path, *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["files"][0]["problems"][0]["metrics"]


def _evaluate(*args) -> dict:
    r = run("recalibrate", "evaluate", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _applied(tmp_path, method, train, test, *fit_args) -> Path:
    cal, out = tmp_path / f"{method}.json", tmp_path / f"{method}_{Path(test).name}"
    r = run("recalibrate", "fit", train, "--method", method, "-o", cal, *fit_args)
    assert r.exit_code == 0, r.stderr
    r = run("recalibrate", "apply", cal, test, "-o", out)
    assert r.exit_code == 0, r.stderr
    return out


def _same_metrics(row: dict, cli: dict) -> None:
    assert set(row) == set(cli)
    for name, m in cli.items():
        for part in ("estimate", "ci_low", "ci_high"):
            if m[part] is None:
                assert row[name][part] is None, (name, part)
            else:
                assert row[name][part] == pytest.approx(m[part], rel=1e-12, abs=1e-15), (name, part)


def _halves(tmp_path, source: str) -> tuple[str, str]:
    frame = pd.read_csv(source)
    half = len(frame) // 2
    train, test = tmp_path / f"train_{Path(source).name}", tmp_path / f"test_{Path(source).name}"
    frame.iloc[:half].to_csv(train, index=False)
    frame.iloc[half:].to_csv(test, index=False)
    return str(train), str(test)


@pytest.mark.parametrize(
    ("source", "methods"),
    [
        (None, ("std-scaling", "isotonic-pit", "conformal")),
        ("diabetes_quantiles.csv", ("isotonic-pit", "conformal")),
        ("diabetes_ensemble.csv", ("isotonic-pit",)),
        ("diabetes_conformal.csv", ("conformal",)),
    ],
)
def test_each_method_gives_the_numbers_of_regression_on_the_applied_rows(tmp_path, source, methods):
    train, test = (CAL, TEST) if source is None else _halves(tmp_path, str(SAMPLES / source))
    doc = _evaluate(test, "--fit", train, *(a for m in methods for a in ("--method", m)), *BOOT)
    (entry,) = doc["files"]
    assert [r["method"] for r in entry["rows"]] == ["uncalibrated", *methods]
    _same_metrics(entry["rows"][0]["metrics"], _regression(test, *BOOT))
    for row in entry["rows"][1:]:
        out = _applied(tmp_path, row["method"], train, test, "--seed", "3")
        _same_metrics(row["metrics"], _regression(out, *BOOT))
        base = row["baseline"]
        before = entry["rows"][0]["metrics"] if base["method"] == "uncalibrated" else base["metrics"]
        for name, d in row["difference"].items():
            assert d["estimate"] == pytest.approx(row["metrics"][name]["estimate"] - before[name]["estimate"], abs=1e-15)
            if row["metrics"][name]["ci_low"] is not None and before[name]["ci_low"] is not None:
                assert d["ci_low"] <= d["ci_high"]
    assert doc["parameters"]["predictions"] == "regression" and doc["parameters"]["n_boot"] == 40


def test_the_baseline_is_the_uncalibrated_prediction_in_the_methods_kind():
    doc = _evaluate(TEST, "--fit", CAL, "--method", "isotonic-pit", "--method", "std-scaling", "--n-boot", "0")
    iso, std = doc["files"][0]["rows"][1:]
    assert iso["kind"] == "quantiles" and iso["baseline"]["kind"] == "quantiles"
    assert iso["baseline"]["levels"] == iso["levels"] == [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
    assert std["baseline"] == {"method": "uncalibrated"}
    assert "nll" in std["difference"] and "nll" not in iso["difference"]  # (quantiles have no likelihood)


def test_the_paired_interval_of_a_real_improvement_excludes_zero():
    """The forest's std is too small (picp_0.9 0.75 on its 150 test rows): std-scaling's 100 calibration rows fix
    it, and the paired interval of the change in MACE and NLL lies below zero."""
    doc = _evaluate(TEST, "--fit", CAL, "--method", "std-scaling", "--n-boot", "400", "--seed", "1")
    d = doc["files"][0]["rows"][1]["difference"]
    assert d["mace"]["estimate"] < 0 and d["mace"]["ci_high"] < 0
    assert d["nll"]["ci_high"] < 0
    assert d["mace"]["ci_method"].startswith("paired Poisson bootstrap")


def test_holdout_splits_by_the_classifiers_rule(tmp_path):
    """The fit part: the round(F n) rows with the smallest row_hash(seed, row index); a Gaussian's numbers without
    the bootstrap do not depend on the row index, so the test rows written to a file of their own give them."""
    frame = pd.read_csv(TEST)
    n, seed = len(frame), 5
    order = np.argsort(row_hash(seed, np.arange(n)))
    fit_rows = np.sort(order[: round(0.4 * n)])
    fit_path, test_path = tmp_path / "fit.csv", tmp_path / "test.csv"
    frame.iloc[fit_rows].to_csv(fit_path, index=False)
    frame.drop(index=fit_rows).to_csv(test_path, index=False)
    doc = _evaluate(TEST, "--holdout", "0.4", "--seed", str(seed), "--method", "std-scaling", "--n-boot", "0")
    entry = doc["files"][0]
    assert entry["split"] == {"kind": "holdout", "fit_fraction": 0.4, "n_fit": 60, "n_test": 90, "seed": seed}
    out = _applied(tmp_path, "std-scaling", fit_path, test_path)
    _same_metrics(entry["rows"][1]["metrics"], _regression(out, "--n-boot", "0"))
    _same_metrics(entry["rows"][0]["metrics"], _regression(test_path, "--n-boot", "0"))


def test_the_table_and_its_lines():
    r = run("recalibrate", "evaluate", TEST, "--fit", CAL, "--method", "std-scaling", "--n-boot", "0")
    assert r.exit_code == 0, r.stderr
    assert "std-scaling" in r.stdout and "mace" in r.stdout
    assert "std-scaling (std scaled by 1.43855) minus uncalibrated: mace -0.09" in r.stdout


def _error(tmp_path, *args) -> str:
    report = tmp_path / "report.json"
    r = run("recalibrate", "evaluate", *args, "--output", report)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    assert not report.exists()
    return r.stderr


def test_bad_input_is_one_error_line_and_nothing_written(tmp_path):
    quantiles = str(SAMPLES / "diabetes_quantiles.csv")
    assert _error(tmp_path, TEST, "--fit", quantiles, "--method", "isotonic-pit") == (
        f"Error: {TEST}: the isotonic-pit calibrator was fitted on quantiles predictions, and the file holds "
        "gaussian: fit it on gaussian predictions of the same model\n"
    )
    no_target = tmp_path / "no_target.csv"
    pd.read_csv(TEST).drop(columns="y").to_csv(no_target, index=False)
    assert "y" in _error(tmp_path, str(no_target), "--holdout", "0.5", "--method", "std-scaling")
    assert _error(tmp_path, TEST, "--holdout", "0.5", "--method", "std-scaling", "--method", "platt") == (
        "Error: --method std-scaling is for regression predictions and platt for a classifier's probabilities: "
        "evaluate one kind at a time\n"
    )
    assert _error(tmp_path, TEST, "--holdout", "0.5", "--method", "std-scaling", "--ece-n-bins", "10") == (
        "Error: --ece-n-bins does not apply to regression predictions (--method std-scaling): drop it\n"
    )
    assert _error(tmp_path, quantiles, "--holdout", "0.5", "--method", "std-scaling").startswith(
        f"Error: {quantiles}: --method std-scaling needs gaussian predictions"
    )
