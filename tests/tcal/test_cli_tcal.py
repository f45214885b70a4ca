"""`calibcli tcal` through the CLI: decision, p-values, per-level table, discrete predictors, gate."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibcli.tcal.binomial import binomial_test
from calibcli.tcal.procedure import tcal_test

from _cli import BINARY, MULTI, run, run_json, write_csv  # noqa: E402  (tests/ is on sys.path)


def test_json_document_matches_the_core(tmp_path):
    doc = run_json("tcal", BINARY, "--n-boot", "300", "--seed", "5")
    assert doc["command"] == "tcal"
    p = doc["parameters"]
    assert (p["null"], p["combine"], p["n_boot"], p["alpha"], p["seed"], p["test"]) == (
        "y-bootstrap",
        "bonferroni",
        300,
        0.05,
        5,
        "adaptive",
    )
    (f,) = doc["files"]
    assert f["test"] == "tcal" and f["mode"] == "binary"
    assert f["discrete_check"]["used"] == "tcal" and f["discrete_check"]["n_distinct"] > 24
    df = pd.read_csv(BINARY)
    ref = tcal_test(df["label"].to_numpy(), df["prob"].to_numpy(), n_boot=300, rng=np.random.default_rng(5))
    r = f["result"]
    assert r["p_value"] == ref.p_value and r["reject"] == ref.reject
    assert r["p_value_min_p"] == ref.p_value_min_p
    assert r["n_levels"] == ref.n_levels == len(r["levels"])
    assert [lv["statistic"] for lv in r["levels"]] == [lv.statistic for lv in ref.levels]
    assert set(r["levels"][0]) == {
        "level",
        "n_bins",
        "n_cells",
        "n_nonempty",
        "statistic",
        "critical_value",
        "p_value",
        "reject",
    }


def test_table_output_names_statistic_and_decision():
    r = run("tcal", BINARY, "--n-boot", "400")
    assert r.exit_code == 0
    assert "T-Cal adaptive" in r.stdout and "p-value" in r.stdout
    assert "debiased plug-in estimate of the squared l2-ECE" in r.stdout
    assert r.stderr == ""


def test_calibrated_file_passes_gate_and_miscalibrated_fails(tmp_path):
    rng = np.random.default_rng(0)
    z = rng.random(3000)
    good = write_csv(tmp_path, "good.csv", z, (rng.random(3000) < z).astype(int))
    bad = write_csv(
        tmp_path, "bad.csv", z, (rng.random(3000) < np.clip(z + 0.2 * np.sin(6 * np.pi * z), 0, 1)).astype(int)
    )
    ok = run("tcal", good, "--n-boot", "500", "--fail-on-reject", "--json")
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["gate"] == {"fail_on_reject": True, "passed": True, "failures": []}
    failed = run("tcal", good, bad, "--n-boot", "500", "--fail-on-reject", "--combine", "min-p", "--json")
    assert failed.exit_code == 1
    doc = json.loads(failed.stdout)
    assert [f["result"]["reject"] for f in doc["files"]] == [False, True]
    assert doc["gate"]["passed"] is False
    assert failed.stderr.startswith("Gate failed: ") and "bad.csv: tcal rejects perfect calibration" in failed.stderr
    # without the gate, a rejection is still exit 0
    assert run("tcal", bad, "--n-boot", "500").exit_code == 0


def test_discrete_predictor_uses_binomial_test(tmp_path):
    rng = np.random.default_rng(1)
    z = rng.choice([0.2, 0.5, 0.8], size=900)
    y = (rng.random(900) < z).astype(int)
    path = write_csv(tmp_path, "binned.csv", z, y)
    doc = run_json("tcal", path)
    (f,) = doc["files"]
    assert f["test"] == "binomial"
    assert f["discrete_check"] == {
        "discrete": True,
        "n_distinct": 3,
        "n": 900,
        "threshold": 30.0,
        "rule": doc["parameters"]["discrete_rule"],
        "choice": "auto",
        "used": "binomial",
    }
    ref = binomial_test(y, z)
    assert f["result"]["p_value"] == pytest.approx(ref.p_value)
    assert [row["value"] for row in f["result"]["per_value"]] == [0.2, 0.5, 0.8]
    forced = run_json("tcal", path, "--discrete", "no", "--n-boot", "100")["files"][0]
    assert forced["test"] == "tcal" and forced["discrete_check"]["used"] == "tcal"
    table = run("tcal", path)
    assert "exact binomial test per value" in table.stdout and "t <= sqrt(n)" in table.stdout


def test_single_scale_chebyshev_and_top_label():
    doc = run_json("tcal", MULTI, "--smoothness", "1", "--null", "chebyshev")
    (f,) = doc["files"]
    r = f["result"]
    assert f["mode"] == "top-label" and r["n_levels"] == 1 and not r["adaptive"]
    assert r["levels"][0]["n_bins"] == int(1797**0.4)
    assert r["n_boot"] == 0 and r["p_value_min_p"] is None and r["exact"] is False


def test_canonical_mode_warns_for_many_classes():
    r = run("tcal", MULTI, "--mode", "canonical", "--n-boot", "50", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["files"][0]["mode"] == "canonical" and doc["files"][0]["result"]["n_classes"] == 10
    assert "--mode top-label" in r.stderr and r.stderr.startswith("Warning: ")


def test_canonical_with_two_classes_is_binary():
    f = run_json("tcal", BINARY, "--mode", "canonical", "--n-boot", "100")["files"][0]
    assert f["mode"] == "binary" and "binary mode on the positive class" in f["notes"][0]


def test_too_few_resamples_warns_on_stderr():
    r = run("tcal", BINARY, "--n-boot", "100")
    assert r.exit_code == 0
    assert "the test cannot reject; use --n-boot 319 or more" in r.stderr


def test_output_file_written(tmp_path):
    out = tmp_path / "tcal.json"
    r = run("tcal", BINARY, "--n-boot", "100", "--output", out)
    assert r.exit_code == 0 and out.exists()
    assert json.loads(out.read_text())["files"][0]["result"]["n_boot"] == 100


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--null", "bootstrap"],
            "Error: --null is 'bootstrap': expected one of y-bootstrap, consistency, chebyshev\n",
        ),
        (["--combine", "max"], "Error: --combine is 'max': expected one of bonferroni, min-p\n"),
        (["--mode", "marginal"], "Error: --mode is 'marginal': expected one of binary, top-label, canonical\n"),
        (["--alpha", "0"], "Error: --alpha is 0.0: expected a number strictly between 0 and 1\n"),
        (
            ["--null", "chebyshev", "--combine", "min-p"],
            "Error: --combine min-p calibrates the minimum p-value over resamples, and --null chebyshev draws none: "
            "use --combine bonferroni with chebyshev, or a resampling null\n",
        ),
    ],
)
def test_usage_errors(args, message):
    r = run("tcal", BINARY, *args)
    assert r.exit_code == 2
    assert r.stderr == message


_IMPORTS_PROBE = """
import json, sys
sys.argv = ["calibcli", *sys.argv[2:]]
from calibcli.cli.entry import main
try:
    main()
except SystemExit:
    pass
with open(OUT, "w") as fh:
    json.dump(sorted(sys.modules), fh)
"""


@pytest.mark.parametrize("test, loaded", [("auto", False), ("spiegelhalter", True)])
def test_the_classical_tests_are_imported_only_when_asked_for(tmp_path, test, loaded):
    # T-Cal's start-up does not pay for the classical tests' family (Cox fits, calibrators, smoothing)
    import subprocess
    import sys

    out = tmp_path / "modules.json"
    probe = _IMPORTS_PROBE.replace("OUT", repr(str(out)))
    args = ["tcal", str(BINARY), "--n-boot", "20", "--json", "--test", test]
    proc = subprocess.run([sys.executable, "-c", probe, "-", *args], capture_output=True, text=True, timeout=120)
    modules = json.loads(out.read_text())
    assert '"command": "tcal"' in proc.stdout
    assert ("calibcli.clinical.family" in modules) is loaded
    assert ("calibcli.calibrators" in modules) is loaded
