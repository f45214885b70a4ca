"""``recalibrate fit`` / ``apply`` on regression dumps: each method fitted on the calibration rows, its document,
the recalibrated columns written back, and the held-out numbers they give."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _cli import run

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data" / "regression"
CAL, TEST = str(SAMPLES / "diabetes_forest_cal.csv"), str(SAMPLES / "diabetes_forest.csv")


def _metrics(path) -> dict:
    r = run("regression", path, "--n-boot", "0", "--json")
    assert r.exit_code == 0, r.stderr
    return {k: m["estimate"] for k, m in json.loads(r.stdout)["files"][0]["problems"][0]["metrics"].items()}


def test_std_scaling_fit_and_apply(tmp_path):
    cal = tmp_path / "std.json"
    r = run("recalibrate", "fit", CAL, "--method", "std-scaling", "-o", cal)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(cal.read_text())
    assert doc["kind"] == "calibcli.regression_calibrator" and doc["method"] == "std-scaling"
    frame = pd.read_csv(CAL)
    assert doc["factor"] == pytest.approx(float((((frame.y - frame["mean"]) / frame["std"]) ** 2).mean() ** 0.5))
    assert r.stderr.startswith(f"wrote {cal}: std-scaling (factor 1.43855), fitted on 100 rows of ")
    out = tmp_path / "out.csv"
    r = run("recalibrate", "apply", cal, TEST, "-o", out)
    assert r.exit_code == 0, r.stderr
    written, original = pd.read_csv(out), pd.read_csv(TEST)
    assert list(written.columns) == list(original.columns)
    assert written["std"].to_numpy() == pytest.approx(original["std"].to_numpy() * doc["factor"])
    before, after = _metrics(TEST), _metrics(out)
    assert before["picp_0.9"] < 0.8 and abs(after["picp_0.9"] - 0.9) < 0.03
    assert after["mace"] < before["mace"]


def test_isotonic_pit_writes_recalibrated_quantiles(tmp_path):
    cal, out = tmp_path / "iso.json", tmp_path / "q.csv"
    assert run("recalibrate", "fit", CAL, "--method", "isotonic-pit", "-o", cal).exit_code == 0
    assert run("recalibrate", "apply", cal, TEST, "-o", out).exit_code == 0
    written = pd.read_csv(out)
    assert list(written.columns) == ["y", "q0.05", "q0.1", "q0.25", "q0.5", "q0.75", "q0.9", "q0.95"]
    metrics = _metrics(out)
    assert metrics["picp_0.9"] > _metrics(TEST)["picp_0.9"]


def test_conformal_widens_the_interval_by_its_margin(tmp_path):
    cal, out = tmp_path / "c.json", tmp_path / "i.csv"
    assert run("recalibrate", "fit", CAL, "--method", "conformal", "--alpha", "0.1", "-o", cal).exit_code == 0
    doc = json.loads(cal.read_text())
    assert doc["level"] == pytest.approx(0.9) and doc["margin"] > 0
    assert run("recalibrate", "apply", cal, TEST, "-o", out).exit_code == 0
    written = pd.read_csv(out)
    assert list(written.columns) == ["y", "lower_0.9", "upper_0.9"]
    assert _metrics(out)["picp_0.9"] >= 0.85


def test_a_method_that_does_not_fit_the_kind_is_one_error_line(tmp_path):
    quantiles = str(SAMPLES / "diabetes_quantiles.csv")
    r = run("recalibrate", "fit", quantiles, "--method", "std-scaling", "-o", tmp_path / "x.json")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: {quantiles}: --method std-scaling needs gaussian predictions, but the file holds quantiles: use "
        "conformal for intervals and quantiles\n"
    )
    assert not (tmp_path / "x.json").exists()
