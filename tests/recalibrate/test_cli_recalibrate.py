"""`calibcli recalibrate fit | apply | evaluate` through the CLI: files, JSON, exact error lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from typer.testing import CliRunner

from calibcli import __version__
from calibcli.calibrators.binned import fit_histogram
from calibcli.calibrators.isotonic import fit_isotonic
from calibcli.calibrators import fit_multiclass
from calibcli.calibrators.parametric import fit_temperature
from calibcli.cli.app import app

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
BINARY = str(SAMPLE / "breast_cancer_nb.csv")
BINARY_PQ = str(SAMPLE / "breast_cancer_nb.parquet")
MULTI = str(SAMPLE / "digits_nb.parquet")
MULTI_CSV = str(SAMPLE / "digits_nb.csv")
LOGITS = str(SAMPLE / "digits_svm.parquet")
runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    return r


# --------------------------------------------------------------------------- fit


def test_fit_writes_a_versioned_calibrator_that_matches_the_library(tmp_path):
    out = tmp_path / "iso.json"
    r = ok("recalibrate", "fit", BINARY, "--method", "isotonic", "-o", out, "--json")
    report = json.loads(r.stdout)
    assert report["command"] == "recalibrate fit" and report["files"][0]["calibrator_file"] == str(out)
    doc = json.loads(out.read_text())
    assert doc["kind"] == "calibcli calibrator" and doc["schema_version"] == 1 and doc["version"] == __version__
    assert (doc["method"], doc["mode"], doc["n_classes"], doc["n"]) == ("isotonic", "binary", 2, 569)
    assert doc["columns"] == {"probabilities": ["prob"], "layout": "single", "logits": False, "label": "label",
                              "weight": None}
    df = pd.read_csv(BINARY)
    ref = fit_isotonic(df["label"], df["prob"])
    assert doc["calibrator"] == json.loads(json.dumps(ref.to_dict()))


def test_fit_histogram_reports_the_certificate(tmp_path):
    r = ok("recalibrate", "fit", BINARY, "--method", "histogram", "--n-bins", "10", "-o", tmp_path / "h.json",
           "--alpha", "0.1", "--json")
    cert = json.loads(r.stdout)["files"][0]["certificate"]
    assert cert["expected_ece_bound"] == pytest.approx(np.sqrt(10 / (2 * 569)))
    assert cert["ece_bound"] == pytest.approx(np.sqrt(10 / 569) / np.sqrt(0.2))
    assert cert["fixed_partition"] is True
    table = ok("recalibrate", "fit", BINARY, "--method", "histogram", "-o", tmp_path / "h2.json").stdout
    assert "E[ECE] bound (Thm 12.6)" in table


def test_fit_multiclass_modes(tmp_path):
    ok("recalibrate", "fit", MULTI, "--method", "platt", "--mode", "marginal", "-o", tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["mode"] == "marginal" and len(doc["calibrator"]["calibrators"]) == 10
    assert doc["columns"]["layout"] == "columns" and doc["class_names"] == [str(k) for k in range(10)]
    ok("recalibrate", "fit", LOGITS, "--logits", "--method", "temperature", "-o", tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    assert (doc["mode"], doc["columns"]["layout"], doc["columns"]["logits"]) == ("multiclass", "vector", True)


# --------------------------------------------------------------------------- apply


def test_apply_reproduces_the_library_and_keeps_other_columns(tmp_path):
    cal = tmp_path / "h.json"
    ok("recalibrate", "fit", BINARY, "--method", "histogram", "--n-bins", "8", "-o", cal)
    ok("recalibrate", "apply", cal, BINARY_PQ, "-o", tmp_path / "out.csv")
    out = pd.read_csv(tmp_path / "out.csv")
    df = pd.read_csv(BINARY)
    assert list(out.columns) == ["prob", "label"]
    assert_array_equal(out["label"], df["label"])
    assert_allclose(out["prob"], fit_histogram(df["label"], df["prob"], n_bins=8).predict(df["prob"]), rtol=1e-15)


@pytest.mark.parametrize("ext", ["parquet", "feather", "jsonl", "tsv", "csv.gz"])
def test_apply_output_format_follows_the_extension(tmp_path, ext):
    cal = tmp_path / "t.json"
    ok("recalibrate", "fit", MULTI, "--method", "temperature", "-o", cal)
    out = tmp_path / f"out.{ext}"
    ok("recalibrate", "apply", cal, MULTI_CSV, "-o", out)
    read = {"parquet": pd.read_parquet, "feather": pd.read_feather, "jsonl": lambda p: pd.read_json(p, lines=True),
            "tsv": lambda p: pd.read_csv(p, sep="\t"), "csv.gz": pd.read_csv}[ext]
    got = read(out)
    df = pd.read_parquet(MULTI)
    P = df[[f"p_{k}" for k in range(10)]].to_numpy()
    expected = fit_temperature(df["label"], P).predict(P)
    assert_allclose(got[[f"p_{k}" for k in range(10)]].to_numpy(), expected, rtol=1e-12)
    assert_allclose(got[[f"p_{k}" for k in range(10)]].sum(axis=1), 1.0, rtol=1e-12)


def test_apply_marginal_rows_sum_to_one_and_match_library(tmp_path):
    cal = tmp_path / "m.json"
    ok("recalibrate", "fit", MULTI, "--method", "isotonic", "--mode", "marginal", "-o", cal)
    ok("recalibrate", "apply", cal, MULTI, "-o", tmp_path / "o.parquet")
    got = pd.read_parquet(tmp_path / "o.parquet")[[f"p_{k}" for k in range(10)]].to_numpy()
    df = pd.read_parquet(MULTI)
    P = df[[f"p_{k}" for k in range(10)]].to_numpy()
    assert_array_equal(got, fit_multiclass("isotonic", df["label"], P, mode="marginal").predict(P))


def test_apply_vector_column_and_logits(tmp_path):
    cal = tmp_path / "t.json"
    ok("recalibrate", "fit", LOGITS, "--logits", "--method", "temperature", "-o", cal)
    r = ok("recalibrate", "apply", cal, LOGITS, "-o", tmp_path / "o.parquet")
    assert "hold recalibrated probabilities" in r.stderr
    got = np.stack(pd.read_parquet(tmp_path / "o.parquet")["logits"].to_numpy())
    assert got.shape == (1797, 10)
    assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)
    r = run("recalibrate", "apply", cal, LOGITS, "-o", tmp_path / "o.csv")
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {tmp_path / 'o.csv'}: column 'logits' holds a vector per row, which CSV cannot "
                        f"store: write .parquet, .feather or .jsonl instead\n")
    assert not (tmp_path / "o.csv").exists()


def test_apply_refuses_other_columns_and_classes(tmp_path):
    cal = tmp_path / "iso.json"
    ok("recalibrate", "fit", BINARY, "--method", "isotonic", "-o", cal)
    r = run("recalibrate", "apply", cal, MULTI_CSV, "-o", tmp_path / "x.csv")
    assert r.exit_code == 2
    assert r.stderr.startswith(f"Error: {MULTI_CSV}: no column 'prob', which the calibrator expects (fitted on "
                               f"columns prob, classes ['0', '1'])")
    r = run("recalibrate", "apply", cal, MULTI_CSV, "-o", tmp_path / "x.csv", "--prob-cols", "p_*")
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {MULTI_CSV}: the calibrator was fitted on one probability column (prob) but 10 columns "
                        f"were given: pass --prob-col/--prob-cols naming one probability column\n")
    mcal = tmp_path / "m.json"
    ok("recalibrate", "fit", MULTI, "--method", "temperature", "-o", mcal)
    r = run("recalibrate", "apply", mcal, MULTI_CSV, "-o", tmp_path / "x.csv", "--prob-cols", "p_0,p_1,p_2")
    assert r.exit_code == 2 and "the calibrator was fitted on 10 class probabilities" in r.stderr
    assert not (tmp_path / "x.csv").exists()


def test_apply_maps_renamed_columns(tmp_path):
    cal = tmp_path / "p.json"
    ok("recalibrate", "fit", BINARY, "--method", "platt", "-o", cal)
    df = pd.read_csv(BINARY).rename(columns={"prob": "score_v2"})
    src = tmp_path / "renamed.csv"
    df.to_csv(src, index=False)
    ok("recalibrate", "apply", cal, src, "-o", tmp_path / "o.csv", "--prob-col", "score_v2")
    assert list(pd.read_csv(tmp_path / "o.csv").columns) == ["score_v2", "label"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("this is not json", "not a calibrator: invalid JSON (Expecting value: line 1 column 1): expected the JSON document"),
        ('{"kind": "calibcli calibrator", "schema_version": 1, "method": "pla', "(the file looks truncated)"),
        ("[1, 2, 3]", 'not a calibrator: the JSON has no "kind": "calibcli calibrator"'),
    ],
)
def test_apply_rejects_bad_calibrator_files(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    out = tmp_path / "out.csv"
    r = run("recalibrate", "apply", bad, BINARY, "-o", out)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"Error: {bad}: ") and message in r.stderr and r.stderr.count("\n") == 1
    assert not out.exists()


def test_apply_rejects_other_schema_versions_and_malformed_parameters(tmp_path):
    cal = tmp_path / "p.json"
    ok("recalibrate", "fit", BINARY, "--method", "platt", "-o", cal)
    doc = json.loads(cal.read_text())
    out = tmp_path / "out.csv"
    doc2 = dict(doc, schema_version=2)
    (tmp_path / "v2.json").write_text(json.dumps(doc2))
    r = run("recalibrate", "apply", tmp_path / "v2.json", BINARY, "-o", out)
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {tmp_path / 'v2.json'}: calibrator schema version 2 is not supported by calibcli "
                        f"{__version__} (it reads version 1): refit it with this version, or use the calibcli version "
                        f"that wrote it ({__version__})\n")
    doc3 = json.loads(cal.read_text())
    doc3["calibrator"]["params"]["a"] = "steep"
    (tmp_path / "bad_a.json").write_text(json.dumps(doc3))
    r = run("recalibrate", "apply", tmp_path / "bad_a.json", BINARY, "-o", out)
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {tmp_path / 'bad_a.json'}: calibrator: field 'params.a' is the string 'steep': "
                        f"expected a finite number\n")
    doc4 = json.loads(cal.read_text())
    doc4["calibrator"]["method"] = "sorcery"
    (tmp_path / "m.json").write_text(json.dumps(doc4))
    r = run("recalibrate", "apply", tmp_path / "m.json", BINARY, "-o", out)
    assert r.exit_code == 2 and "unknown method 'sorcery'" in r.stderr
    r = run("recalibrate", "apply", tmp_path / "missing.json", BINARY, "-o", out)
    assert r.stderr == f"Error: {tmp_path / 'missing.json'}: no such calibrator file: check the path\n"
    assert not out.exists()


# --------------------------------------------------------------------------- evaluate


def test_evaluate_holdout_compares_methods(tmp_path):
    r = ok("recalibrate", "evaluate", BINARY, "--method", "platt", "--method", "histogram", "--holdout", "0.5",
           "--n-boot", "99", "--json", "-o", tmp_path / "rep.json")
    doc = json.loads(r.stdout)
    assert json.loads((tmp_path / "rep.json").read_text()) == doc
    assert doc["command"] == "recalibrate evaluate"
    (f,) = doc["files"]
    assert f["split"] == {"kind": "holdout", "fit_fraction": 0.5, "n_fit": 284, "n_test": 285, "seed": 0}
    assert [row["method"] for row in f["rows"]] == ["uncalibrated", "platt", "histogram"]
    for row in f["rows"]:
        assert set(row["metrics"]) >= {"ece_l1_plugin", "ece_l2_sq_debiased_dpe", "smece", "brier_score", "log_loss"}
        assert row["test"]["test"] in ("T-Cal", "binomial") and 0 <= row["test"]["p_value"] <= 1
    # the uncalibrated naive Bayes model is badly calibrated; Platt scaling fixes most of it
    before, platt = f["rows"][0]["metrics"], f["rows"][1]["metrics"]
    assert platt["ece_l1_plugin"]["estimate"] < before["ece_l1_plugin"]["estimate"]
    assert platt["log_loss"]["estimate"] < before["log_loss"]["estimate"]
    # histogram outputs take at most 15 values: the binomial test per value is used
    assert f["rows"][2]["test"]["test"] == "binomial"
    again = json.loads(ok("recalibrate", "evaluate", BINARY, "--method", "platt", "--method", "histogram",
                          "--holdout", "0.5", "--n-boot", "99", "--json").stdout)
    assert again["files"] == doc["files"]


def test_evaluate_numbers_are_those_of_the_library():
    from calibcli.calibrators.parametric import fit_platt
    from calibcli.binned.estimators import binned_calibration

    doc = json.loads(ok("recalibrate", "evaluate", BINARY, "--method", "platt", "--holdout", "0.6", "--seed", "4",
                        "--n-boot", "19", "--json").stdout)
    from calibcli.core.resampling import row_hash

    df = pd.read_csv(BINARY)
    # the fit part: the round(F n) rows with the smallest hash of (seed, row index); the test part: the others
    order = np.argsort(row_hash(4, np.arange(len(df))))
    n_fit = int(round(0.6 * len(df)))
    fit_idx, test_idx = np.sort(order[:n_fit]), np.sort(order[n_fit:])
    assert doc["files"][0]["split"]["n_fit"] == n_fit == len(fit_idx)
    cal = fit_platt(df["label"].to_numpy()[fit_idx], df["prob"].to_numpy()[fit_idx])
    after = cal.predict(df["prob"].to_numpy()[test_idx])
    ref = binned_calibration(df["label"].to_numpy()[test_idx], after, n_bins=15)
    got = doc["files"][0]["rows"][1]["metrics"]
    assert got["ece_l1_plugin"]["estimate"] == pytest.approx(ref.metrics["ece_l1_plugin"].estimate, rel=1e-12)
    assert got["ece_l2_sq_debiased_dpe"]["estimate"] == pytest.approx(ref.metrics["ece_l2_sq_debiased_dpe"].estimate)


def test_evaluate_with_a_fit_file_and_multiclass_marginal(tmp_path):
    r = ok("recalibrate", "evaluate", MULTI_CSV, "--fit", MULTI, "--method", "temperature", "--method", "platt",
           "--mode", "marginal", "--n-boot", "19", "--json")
    f = json.loads(r.stdout)["files"][0]
    assert f["mode"] == "marginal" and f["split"]["kind"] == "files" and f["split"]["n_fit"] == 1797
    assert "brier_score_multiclass" in f["rows"][0]["metrics"]
    assert f["rows"][2]["test"]["combined_over"] == 10
    table = ok("recalibrate", "evaluate", MULTI, "--method", "temperature", "--holdout", "0.5", "--n-boot", "19").stdout
    assert "temperature" in table and "uncalibrated" in table and "mode top-label" in table


@pytest.mark.parametrize(
    "args, line",
    [
        (["--method", "platt"], "Error: pass either --holdout FRACTION (split FILE) or --fit TRAIN (fit on TRAIN, "
                                "evaluate on FILE)\n"),
        (["--method", "platt", "--holdout", "1.5"], "Error: --holdout is 1.5: expected the fraction of rows to fit on, "
                                                    "in (0, 1)\n"),
        (["--method", "magic", "--holdout", "0.5"], "Error: --method is 'magic': expected one of platt, temperature, "
                                                    "histogram, isotonic, scaling-binning, polynomial, beta, venn-abers\n"),
        (["--method", "platt", "--degree", "2", "--holdout", "0.5"],
         "Error: --degree does not apply to --method platt: it is an option of polynomial\n"),
        (["--method", "platt", "--holdout", "0.5", "--mode", "marginal"],
         "Error: --mode marginal needs one probability column per class, but the input has a single probability "
         "column: use --mode binary, or pass --prob-cols for every class\n"),
    ],
)
def test_evaluate_usage_errors(args, line):
    r = run("recalibrate", "evaluate", BINARY, *args)
    assert r.exit_code == 2
    assert r.stderr == line


def test_fit_usage_errors(tmp_path):
    weighted = tmp_path / "w.csv"
    pd.read_csv(BINARY).assign(w=2.0).to_csv(weighted, index=False)
    r = run("recalibrate", "fit", weighted, "--method", "venn-abers", "--weight-col", "w", "-o", tmp_path / "x.json")
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: method 'venn-abers' does not take sample weights")
    assert not (tmp_path / "x.json").exists()
    r = run("recalibrate", "fit", BINARY, "--method", "histogram", "--strategy", "octile", "-o", tmp_path / "x.json")
    assert r.stderr == "Error: --strategy is 'octile': expected one of uniform, quantile\n"
    ok("recalibrate", "fit", weighted, "--method", "isotonic", "--weight-col", "w", "-o", tmp_path / "w.json")
    doc = json.loads((tmp_path / "w.json").read_text())
    assert doc["columns"]["weight"] == "w"


def test_installed_command_runs_as_a_subprocess(tmp_path):
    exe = Path(sys.executable).parent / "calibcli"
    cal = tmp_path / "c.json"
    r = subprocess.run([str(exe), "recalibrate", "fit", BINARY, "--method", "beta", "-o", str(cal)],
                       capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    assert json.loads(cal.read_text())["method"] == "beta"


def test_apply_invalid_rows_fail_or_are_dropped(tmp_path):
    cal = tmp_path / "p.json"
    ok("recalibrate", "fit", BINARY, "--method", "platt", "-o", cal)
    df = pd.read_csv(BINARY)
    df.loc[3, "prob"] = np.nan
    df.loc[7, "prob"] = 1.5
    src = tmp_path / "bad_rows.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "o.csv"
    r = run("recalibrate", "apply", cal, src, "-o", out)
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {src}: row 4, column prob: probabilities nan are not valid (finite, within [0, 1], "
                        f"summing to 1 per row); 2 such row(s): fix the file or pass --drop-invalid to leave them out "
                        f"of the output\n")
    assert not out.exists()
    rep = json.loads(ok("recalibrate", "apply", cal, src, "-o", out, "--drop-invalid", "--json").stdout)
    assert rep["files"][0]["input"]["rows_dropped"] == 2 and rep["files"][0]["output"]["rows"] == 567
    assert len(pd.read_csv(out)) == 567


def test_evaluate_with_weights_uses_tcal_and_warns_as_the_tcal_command_does(tmp_path):
    # the tcal command's rule: the binomial test counts rows, so a weighted discrete predictor gets T-Cal, with a warning
    weighted = tmp_path / "w.csv"
    pd.read_csv(BINARY).assign(w=np.arange(569) % 3 + 1.0).to_csv(weighted, index=False)
    r = ok("recalibrate", "evaluate", weighted, "--weight-col", "w", "--method", "histogram", "--holdout", "0.5",
           "--n-boot", "299", "--json")
    assert r.stderr == ("Warning: the predictor is discrete but has sample weights; T-Cal is used (the binomial test "
                        "counts rows)\n")
    rows = json.loads(r.stdout)["files"][0]["rows"]
    assert rows[1]["test"]["test"] == "T-Cal" and rows[1]["test"]["weights_ignored"] is False
    assert rows[1]["test"]["per_problem"][0]["discrete_check"]["discrete"] is True
    assert all(row["test"]["per_problem"][0]["weighted"] is True for row in rows)
