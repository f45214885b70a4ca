"""``recalibrate fit`` / ``apply`` on regression dumps: each method fitted on the calibration rows, its document,
the recalibrated columns written back, and the held-out numbers they give."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
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
        "isotonic-pit or conformal for quantiles\n"
    )
    assert not (tmp_path / "x.json").exists()


def _fit_apply(tmp_path, fit_on, apply_to, method="isotonic-pit"):
    cal, out = tmp_path / f"{method}.json", tmp_path / f"{method}.csv"
    r = run("recalibrate", "fit", fit_on, "--method", method, "-o", cal)
    assert r.exit_code == 0, r.stderr
    r = run("recalibrate", "apply", cal, apply_to, "-o", out)
    assert r.exit_code == 0, r.stderr
    return json.loads(cal.read_text()), pd.read_csv(out), r.stderr


def test_isotonic_pit_relabels_quantiles_with_the_levels_they_hold(tmp_path):
    """Each quantile keeps its values, named by R(tau): on its own fit rows, the share of targets at or below it
    (the PIT's empirical CDF at tau, linear between the PIT values: within 1/n of the observed share)."""
    quantiles = str(SAMPLES / "diabetes_quantiles.csv")
    doc, written, stderr = _fit_apply(tmp_path, quantiles, quantiles)
    original = pd.read_csv(quantiles)
    q = np.sort(original[["q0.05", "q0.25", "q0.5", "q0.75", "q0.95"]].to_numpy(), axis=1)
    names = [c for c in written.columns if c != "y"]
    levels = np.array([float(c[1:]) for c in names])
    expected = np.interp([0.05, 0.25, 0.5, 0.75, 0.95], doc["p"], doc["r"])
    assert levels == pytest.approx(expected, rel=1e-5)  # (6 significant digits in the names)
    assert written[names].to_numpy() == pytest.approx(q, rel=1e-15)
    observed = (original["y"].to_numpy()[:, None] <= q).mean(axis=0)
    assert np.all(np.abs(levels - observed) <= 1 / len(q) + 1e-6)
    assert "re-labelled with their recalibrated levels (q" in stderr
    assert doc["fitted_on"]["columns"]["kind"] == "quantiles" and doc["fitted_on"]["seed"] == 0


def test_isotonic_pit_writes_an_ensembles_members_as_relabelled_quantiles(tmp_path):
    ensemble = str(SAMPLES / "diabetes_ensemble.csv")
    doc, written, _ = _fit_apply(tmp_path, ensemble, ensemble)
    members = pd.read_csv(ensemble).drop(columns="y").to_numpy()
    names = [c for c in written.columns if c != "y"]
    assert len(names) == members.shape[1]
    m = members.shape[1]
    levels = np.array([float(c[1:]) for c in names])
    assert levels == pytest.approx(np.interp(np.arange(1, m + 1) / (m + 1), doc["p"], doc["r"]), rel=1e-5)
    assert written[names].to_numpy() == pytest.approx(np.sort(members, axis=1), rel=1e-15)
    # held out: the members of the same model on rows it was not fitted on keep the kind's map
    r = run("regression", tmp_path / "isotonic-pit.csv", "--n-boot", "0", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["files"][0]["problems"][0]["kind"] == "quantiles"


def test_isotonic_pit_refuses_intervals_and_a_map_of_another_kind(tmp_path):
    conformal = str(SAMPLES / "diabetes_conformal.csv")
    r = run("recalibrate", "fit", conformal, "--method", "isotonic-pit", "-o", tmp_path / "x.json")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: {conformal}: --method isotonic-pit needs gaussian or quantiles or samples predictions, but the "
        "file holds intervals: an interval has no PIT nor std: use conformal\n"
    )
    assert not (tmp_path / "x.json").exists()
    cal = tmp_path / "g.json"
    assert run("recalibrate", "fit", CAL, "--method", "isotonic-pit", "-o", cal).exit_code == 0
    quantiles = str(SAMPLES / "diabetes_quantiles.csv")
    r = run("recalibrate", "apply", cal, quantiles, "-o", tmp_path / "out.csv")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: {quantiles}: the isotonic-pit calibrator was fitted on gaussian predictions, and the file holds "
        "quantiles: fit it on quantiles predictions of the same model\n"
    )
    assert not (tmp_path / "out.csv").exists()
