"""`calibcli smece` through the CLI: JSON document, modes, weights, bootstrap, gates, output, errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibcli.core.modes import softmax
from calibcli.smooth.estimator import smece_at_sigma, smooth_ece

from _cli import BINARY, MULTI, SAMPLE, run, run_json, write_csv  # noqa: E402  (tests/ is on sys.path)



def test_json_document_binary_matches_the_core():
    doc = run_json("smece", BINARY, "--n-boot", "100", "--seed", "3")
    assert doc["command"] == "smece" and doc["schema_version"] == 1
    p = doc["parameters"]
    assert (p["sigma"], p["n_boot"], p["alpha"], p["seed"], p["mode"]) == ("fixed point", 100, 0.05, 3, "auto")
    assert p["fixed_point_tolerance"] == 1e-7 and "smece" in p["estimators"]
    (f,) = doc["files"]
    assert f["mode"] == "binary" and f["input"]["rows_used"] == 569
    (q,) = f["problems"]
    df = pd.read_csv(BINARY)
    ref = smooth_ece(df["label"].to_numpy(), df["prob"].to_numpy(), n_boot=100, rng=np.random.default_rng(3))
    m = q["metrics"]["smece"]
    assert m["estimate"] == ref.smece and (m["ci_low"], m["ci_high"]) == (ref.ci_low, ref.ci_high)
    assert "bandwidth re-solved on each" in m["ci_method"]
    assert q["sigma"] == ref.sigma and q["sigma_is_fixed_point"] is True
    assert abs(q["sigma"] - m["estimate"]) <= 1e-7 and q["fixed_point_gap"] <= 1e-7
    assert m["ci_low"] <= m["estimate"] <= m["ci_high"]


def test_same_seed_same_numbers_and_csv_equals_parquet():
    a = run_json("smece", BINARY, "--n-boot", "40", "--seed", "9")
    b = run_json("smece", str(SAMPLE / "breast_cancer_nb.parquet"), "--n-boot", "40", "--seed", "9")
    c = run_json("smece", BINARY, "--n-boot", "40", "--seed", "10")
    assert a["files"][0]["problems"] == b["files"][0]["problems"]
    assert a["files"][0]["problems"][0]["metrics"] != c["files"][0]["problems"][0]["metrics"]


def test_fixed_sigma():
    doc = run_json("smece", BINARY, "--sigma", "0.05", "--n-boot", "0")
    (q,) = doc["files"][0]["problems"]
    df = pd.read_csv(BINARY)
    assert doc["parameters"]["sigma"] == 0.05 and "smece_at_sigma" in doc["parameters"]["estimators"]
    assert q["sigma"] == 0.05 and q["sigma_is_fixed_point"] is False
    m = q["metrics"]["smece_at_sigma"]
    assert m["estimate"] == pytest.approx(smece_at_sigma(df["label"], df["prob"], sigma=0.05), abs=1e-12)
    assert m["ci_low"] is None and m["ci_method"] is None


def test_table_output():
    r = run("smece", BINARY, "--n-boot", "50")
    assert r.exit_code == 0, r.stderr
    assert "calibcli smece: sigma* = fixed point; 50 bootstrap resamples" in r.stdout
    assert "smece" in r.stdout and "569 rows; mode binary" in r.stdout
    assert r.stderr == ""


def test_top_label_default_for_multiclass_and_logits():
    doc = run_json("smece", MULTI, "--n-boot", "0")
    f = doc["files"][0]
    assert f["mode"] == "top-label" and [q["name"] for q in f["problems"]] == ["top-label"]
    df = pd.read_parquet(MULTI)
    P = df[[f"p_{k}" for k in range(10)]].to_numpy()
    pred = P.argmax(axis=1)
    ref = smooth_ece((pred == df["label"].to_numpy()).astype(int), P.max(axis=1))
    assert f["problems"][0]["metrics"]["smece"]["estimate"] == ref.smece

    svm = run_json("smece", str(SAMPLE / "digits_svm.parquet"), "--logits", "--n-boot", "0")
    logits = np.stack(pd.read_parquet(SAMPLE / "digits_svm.parquet")["logits"].to_numpy())
    Q = softmax(logits)
    labels = pd.read_parquet(SAMPLE / "digits_svm.parquet")["label"].to_numpy()
    ref = smooth_ece((Q.argmax(axis=1) == labels).astype(int), Q.max(axis=1))
    assert svm["files"][0]["problems"][0]["metrics"]["smece"]["estimate"] == pytest.approx(ref.smece, abs=1e-12)


def test_marginal_mode_per_class_and_joint_aggregate_interval():
    doc = run_json("smece", MULTI, "--mode", "marginal", "--n-boot", "30", "--class-weights", "prior")
    f = doc["files"][0]
    assert len(f["problems"]) == 10
    per_class = np.array([q["metrics"]["smece"]["estimate"] for q in f["problems"]])
    v = np.array(f["aggregate"]["class_weight_values"])
    labels = pd.read_parquet(MULTI)["label"].to_numpy()
    assert v == pytest.approx(np.bincount(labels, minlength=10) / len(labels))
    agg = f["aggregate"]["metrics"]["smece"]
    assert agg["estimate"] == pytest.approx(float(v @ per_class), abs=1e-12)
    assert agg["ci_low"] <= agg["estimate"] <= agg["ci_high"]
    assert "classes resampled jointly" in agg["ci_method"]
    # Class 3 alone, through the core with the same seed, gives the same interval.
    P = pd.read_parquet(MULTI)[[f"p_{k}" for k in range(10)]].to_numpy()
    ref = smooth_ece((labels == 3).astype(int), P[:, 3], n_boot=30, rng=np.random.default_rng(0))
    q3 = f["problems"][3]["metrics"]["smece"]
    assert (q3["estimate"], q3["ci_low"], q3["ci_high"]) == (ref.smece, ref.ci_low, ref.ci_high)


def test_weights_equal_duplicated_rows(tmp_path):
    rng = np.random.default_rng(0)
    z = rng.random(300)
    y = (rng.random(300) < z**1.3).astype(int)
    w = rng.integers(1, 4, 300)
    weighted = write_csv(tmp_path, "w.csv", z, y, weight=w)
    dup = write_csv(tmp_path, "d.csv", np.repeat(z, w), np.repeat(y, w))
    a = run_json("smece", weighted, "--weight-col", "weight", "--n-boot", "0")
    b = run_json("smece", dup, "--n-boot", "0")
    ma = a["files"][0]["problems"][0]
    mb = b["files"][0]["problems"][0]
    assert ma["metrics"]["smece"]["estimate"] == pytest.approx(mb["metrics"]["smece"]["estimate"], abs=1e-10)
    assert ma["weight_total"] == w.sum() and a["parameters"]["weights"] == "frequency weights"


def test_several_files_and_output_file(tmp_path):
    out = tmp_path / "report.json"
    r = run("smece", BINARY, str(SAMPLE / "breast_cancer_nb.parquet"), "--n-boot", "0", "--output", out)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [f["input"]["path"] for f in doc["files"]] == [BINARY, str(SAMPLE / "breast_cancer_nb.parquet")]
    assert "sigma* = fixed point" in r.stdout  # the table still goes to stdout


def test_gates(tmp_path):
    est = run_json("smece", BINARY, "--n-boot", "50")["files"][0]["problems"][0]["metrics"]["smece"]
    r = run("smece", BINARY, "--n-boot", "0", "--fail-above", "0.01")
    assert r.exit_code == 1
    assert r.stderr == f"Gate failed: {BINARY}: smece = {est['estimate']:.6g} > 0.01 (--fail-above)\n"
    assert run("smece", BINARY, "--n-boot", "0", "--fail-above", "0.5").exit_code == 0
    r = run("smece", BINARY, "--n-boot", "50", "--fail-above-upper", f"{est['ci_high'] - 1e-6}", "--json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["gate"]["passed"] is False and doc["gate"]["metric"] == "smece"
    assert "upper end of the confidence interval of smece" in r.stderr
    assert run("smece", BINARY, "--n-boot", "50", "--fail-above-upper", f"{est['ci_high'] + 1e-6}").exit_code == 0
    # Marginal mode gates the aggregate.
    doc = json.loads(run("smece", MULTI, "--mode", "marginal", "--n-boot", "0", "--fail-above", "1", "--json").stdout)
    assert doc["files"][0]["gate"]["estimate"] == doc["files"][0]["aggregate"]["metrics"]["smece"]["estimate"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sigma", "0"], "Error: --sigma is 0.0: expected a positive bandwidth, or no --sigma for the fixed point\n"),
        (["--sigma", "-1"], "Error: --sigma is -1.0: expected a positive bandwidth, or no --sigma for the fixed point\n"),
        (["--alpha", "1"], "Error: --alpha is 1.0: expected a number strictly between 0 and 1\n"),
        (["--n-boot", "-5"], "Error: --n-boot is -5: expected 0 (no intervals) or a positive count\n"),
        (["--mode", "canonical"], "Error: --mode is 'canonical': expected one of binary, top-label, marginal\n"),
        (["--class-weights", "equal"], "Error: --class-weights is 'equal': expected one of uniform, prior\n"),
        (["--n-boot", "0", "--fail-above-upper", "0.1"],
         "Error: --fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0\n"),
    ],
)
def test_usage_errors(args, message):
    r = run("smece", BINARY, *args)
    assert r.exit_code == 2
    assert r.stderr == message
    assert r.stdout == ""


def test_bad_input_is_one_line_exit_2(tmp_path):
    bad = write_csv(tmp_path, "bad.csv", [0.2, 1.4, 0.5], [0, 1, 1])
    r = run("smece", bad)
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1 and "outside [0, 1]" in r.stderr
    r = run("smece", str(tmp_path / "missing.csv"))
    assert r.exit_code == 2 and r.stderr.startswith("Error: ")


def test_predictions_at_the_ends_carry_full_weight(tmp_path):
    path = write_csv(tmp_path, "ends.csv", [0.0, 0.0, 1.0], [1, 1, 1])
    q = run_json("smece", path, "--n-boot", "0")["files"][0]["problems"][0]
    # Residuals +1, +1, 0: smECE_s = 2/3 for every s, so s* = 2/3.
    assert q["metrics"]["smece"]["estimate"] == pytest.approx(2 / 3, abs=1e-9)
