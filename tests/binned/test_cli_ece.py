"""`calibcli ece` through the CLI: JSON document, modes, gates, output file, version."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from _cli import BINARY, MULTI, SAMPLE, run, run_json  # tests/ is on sys.path
from calibcli import __version__
from calibcli.binned.estimators import binned_calibration


def test_version():
    r = run("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"calibcli {__version__}"


def test_json_document_binary():
    doc = run_json("ece", BINARY, "--n-boot", "50", "--seed", "3", "--n-bins", "10")
    assert doc["tool"] == "calibcli" and doc["version"] == __version__ and doc["schema_version"] == 1
    assert doc["command"] == "ece"
    p = doc["parameters"]
    assert (p["n_bins"], p["strategy"], p["n_boot"], p["alpha"], p["seed"]) == (10, "uniform", 50, 0.05, 3)
    (f,) = doc["files"]
    assert f["mode"] == "binary"
    assert f["input"]["rows_read"] == 569 and f["input"]["columns"]["probabilities"] == ["prob"]
    assert f["input"]["columns"]["chosen_by"] == "auto"
    (prob,) = f["problems"]
    assert prob["bins"]["n_bins"] == 10 and prob["bins"]["n_bins_nonempty"] == len(prob["bins"]["per_bin"])
    m = prob["metrics"]["ece_l1_plugin"]
    df = pd.read_csv(BINARY)
    ref = binned_calibration(df["label"], df["prob"], n_bins=10, n_boot=50, seed=3)
    assert m["estimate"] == pytest.approx(ref.metrics["ece_l1_plugin"].estimate)
    assert m["ci_low"] == pytest.approx(ref.metrics["ece_l1_plugin"].ci_low)
    assert m["ci_low"] <= m["estimate"] <= m["ci_high"]
    assert "upper_bound" in m and "Thm 12.4" in m["upper_bound_method"]
    assert set(prob["metrics"]) >= {
        "ece_l2_sq_debiased_kumar",
        "ece_l2_debiased_kumar",
        "ece_l2_sq_debiased_dpe",
        "dce",
        "log_loss",
    }


def test_same_seed_same_numbers_and_csv_equals_parquet():
    a = run_json("ece", BINARY, "--n-boot", "30")
    b = run_json("ece", str(SAMPLE / "breast_cancer_nb.parquet"), "--n-boot", "30")
    assert a["files"][0]["problems"] == b["files"][0]["problems"]


def test_multiclass_defaults_to_top_label_and_reports_multiclass_scores():
    doc = run_json("ece", MULTI, "--n-boot", "0")
    f = doc["files"][0]
    assert f["mode"] == "top-label" and f["input"]["n_classes"] == 10
    assert [q["name"] for q in f["problems"]] == ["top-label"]
    assert "brier_score_multiclass" in f["multiclass_scores"]


def test_marginal_mode_reports_every_class_and_the_aggregate():
    doc = run_json("ece", MULTI, "--mode", "marginal", "--n-boot", "20", "--class-weights", "prior")
    f = doc["files"][0]
    assert len(f["problems"]) == 10
    per_class = np.array([q["metrics"]["ece_l1_plugin"]["estimate"] for q in f["problems"]])
    v = np.array(f["aggregate"]["class_weight_values"])
    assert v.sum() == pytest.approx(1.0)
    agg = f["aggregate"]["metrics"]
    assert agg["ece_l1_plugin"]["estimate"] == pytest.approx(np.sum(v * per_class))
    l2 = np.array([q["metrics"]["ece_l2_plugin"]["estimate"] for q in f["problems"]])
    assert agg["ece_l2_plugin"]["estimate"] == pytest.approx(np.sqrt(np.sum(v * l2**2)))
    assert agg["ece_max_plugin"]["estimate"] == pytest.approx(
        max(q["metrics"]["ece_max_plugin"]["estimate"] for q in f["problems"])
    )
    assert agg["ece_l1_plugin"]["ci_low"] is not None


def test_list_column_logits():
    doc = run_json("ece", str(SAMPLE / "digits_svm.parquet"), "--logits", "--n-boot", "0")
    f = doc["files"][0]
    assert f["input"]["columns"]["probabilities"] == ["logits"] and f["input"]["columns"]["logits"] is True
    assert f["input"]["n_classes"] == 10


def test_several_files_one_entry_each():
    doc = run_json("ece", BINARY, MULTI, "--n-boot", "0")
    assert [f["input"]["path"] for f in doc["files"]] == [BINARY, MULTI]


def test_gate_fails_with_exit_1_and_names_file_metric_value_threshold(tmp_path):
    out = tmp_path / "r.json"
    r = run("ece", BINARY, "--n-boot", "0", "--fail-above", "0.01", "--output", out)
    assert r.exit_code == 1
    value = json.loads(out.read_text())["files"][0]["problems"][0]["metrics"]["ece_l1_plugin"]["estimate"]
    assert r.stderr == f"Gate failed: {BINARY}: ece_l1_plugin = {value:.6g} > 0.01 (--fail-above)\n"
    doc = json.loads(out.read_text())
    assert doc["gate"]["passed"] is False and doc["files"][0]["gate"]["passed"] is False


def test_gate_passes_and_gates_on_the_upper_end():
    r = run("ece", BINARY, "--n-boot", "0", "--fail-above", "0.5")
    assert r.exit_code == 0
    r = run("ece", BINARY, "--n-boot", "40", "--metric", "ece_l2_plugin", "--fail-above-upper", "0.1", "--json")
    doc = json.loads(r.stdout)
    upper = doc["files"][0]["problems"][0]["metrics"]["ece_l2_plugin"]["ci_high"]
    assert (r.exit_code == 1) == (upper > 0.1)
    assert "upper end of the confidence interval of ece_l2_plugin" in r.stderr


def test_gate_usage_errors():
    r = run("ece", BINARY, "--n-boot", "0", "--fail-above-upper", "0.1")
    assert r.exit_code == 2
    assert r.stderr == "Error: --fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0\n"
    r = run("ece", BINARY, "--n-boot", "0", "--fail-above", "0.1", "--metric", "ece")
    assert r.exit_code == 2
    assert r.stderr == f"Error: --metric ece: no such metric in the report of {BINARY}\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--mode", "canonical"], "Error: --mode is 'canonical': expected one of binary, top-label, marginal\n"),
        (["--strategy", "kmeans"], "Error: --strategy is 'kmeans': expected one of uniform, quantile\n"),
        (["--alpha", "0"], "Error: --alpha is 0.0: expected a number strictly between 0 and 1\n"),
        (["--n-bins", "0"], "Error: --n-bins is 0: expected a positive number of bins\n"),
    ],
)
def test_option_errors(args, message):
    r = run("ece", BINARY, *args)
    assert r.exit_code == 2 and r.stderr == message


def test_table_output_names_estimators_and_parameters():
    r = run("ece", BINARY, "--n-boot", "20", "--seed", "1")
    assert r.exit_code == 0
    assert "ece_l1_plugin" in r.stdout and "ece_l2_sq_debiased_kumar" in r.stdout
    assert "20 bootstrap resamples" in r.stdout and "seed 1" in r.stdout
    assert r.stderr == ""


def test_output_file_is_written_and_table_still_printed(tmp_path):
    out = tmp_path / "report.json"
    r = run("ece", BINARY, "--n-boot", "0", "-o", out)
    assert r.exit_code == 0 and "ece_l1_plugin" in r.stdout
    assert json.loads(out.read_text())["command"] == "ece"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary left behind


def test_bad_input_leaves_no_output_file(tmp_path):
    out = tmp_path / "report.json"
    r = run("ece", BINARY, str(tmp_path / "missing.csv"), "-o", out)
    assert r.exit_code == 2 and not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_weights_column(tmp_path):
    df = pd.DataFrame({"prob": [0.1, 0.4, 0.6, 0.9], "label": [0, 1, 0, 1], "w": [1, 2, 1, 2]})
    path = tmp_path / "w.csv"
    df.to_csv(path, index=False)
    doc = run_json("ece", path, "--weight-col", "w", "--n-bins", "2", "--n-boot", "0")
    m = doc["files"][0]["problems"][0]["metrics"]
    # bin 0: conf (0.1 + 0.8)/3 = .3, acc 2/3; bin 1: conf (.6 + 1.8)/3 = .8, acc 2/3
    assert m["ece_l1_plugin"]["estimate"] == pytest.approx(0.5 * abs(2 / 3 - 0.3) + 0.5 * abs(2 / 3 - 0.8))
    assert doc["files"][0]["input"]["columns"]["weight"] == "w"
