"""The one renderer: every command's table, the batch summary, markdown and tidy CSV from the same sections."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibcli.core.documents import fmt_interval, fmt_number
from calibcli.report.entries import shortest_unique_suffixes
from tests._cli import BINARY, MULTI, run, run_json


def _model_dumps(tmp_path, n_files=9, n=400):
    """Nine model dumps in two run folders whose calibration differs file by file (one is calibrated)."""
    rng = np.random.default_rng(7)
    paths = []
    for k in range(n_files):
        folder = tmp_path / ("run_a" if k % 2 else "run_b")
        folder.mkdir(exist_ok=True)
        p = rng.uniform(0.02, 0.98, n)
        y = (rng.uniform(size=n) < p).astype(int)
        z = np.clip(p + 0.04 * k * np.sign(p - 0.5), 0.001, 0.999)  # file k is over-confident by 0.04 k
        path = folder / f"checkpoint_{k:02d}_validation_predictions.csv"
        pd.DataFrame({"prob": z, "label": y}).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_shortest_unique_suffix_never_cuts_a_name():
    short = shortest_unique_suffixes(["/a/run_1/model.csv", "/a/run_2/model.csv", "/b/other.csv", "-"])
    assert short == {
        "/a/run_1/model.csv": "run_1/model.csv",
        "/a/run_2/model.csv": "run_2/model.csv",
        "/b/other.csv": "other.csv",
        "-": "-",
    }
    assert shortest_unique_suffixes(["x/m.csv", "m.csv"]) == {"x/m.csv": "x/m.csv", "m.csv": "m.csv"}


def test_many_files_get_one_summary_row_each_that_fits_100_columns(tmp_path, monkeypatch):
    paths = _model_dumps(tmp_path)
    doc = run_json("ece", *paths, "--n-boot", "20")
    monkeypatch.setenv("COLUMNS", "100")
    r = run("ece", *paths, "--n-boot", "20")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    assert len(lines) < 9 * 3 + 12  # one row (two lines: estimate, interval) per file, not a row per metric
    for entry, path in zip(doc["files"], paths):
        name = os.path.basename(path)
        assert sum(name in line for line in lines) == 1, name  # the whole name on one line, once
        m = entry["problems"][0]["metrics"]["ece_l1_plugin"]
        assert fmt_number(m["estimate"]) in r.stdout and fmt_interval(m["ci_low"], m["ci_high"]) in r.stdout
    # the full table is still there on request
    full = run("ece", *paths, "--n-boot", "20", "--no-summary")
    assert full.stdout.count("ece_max_plugin") == 9


def test_metrics_and_sort_choose_and_order_the_columns(tmp_path):
    paths = _model_dumps(tmp_path, n_files=5)
    doc = run_json("ece", *paths, "--n-boot", "0")
    est = {
        os.path.basename(e["input"]["path"]): e["problems"][0]["metrics"]["ece_max_plugin"]["estimate"]
        for e in doc["files"]
    }
    r = run(
        "ece",
        *paths,
        "--n-boot",
        "0",
        "--metrics",
        "ece_max_plugin,brier_score",
        "--sort",
        "ece_max_plugin",
        "--format",
        "markdown",
    )
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[2] == "| file | `ece_max_plugin` | `brier_score` |"
    rows = [line.split(" | ") for line in lines[4:] if line.startswith("| ")]
    names = [row[0].lstrip("| ").split("/")[-1] for row in rows]
    assert names == sorted(est, key=est.get)  # best (smallest) first
    assert [row[1] for row in rows] == [fmt_number(est[n]) for n in names]


def test_unknown_summary_metric_is_one_error_line_naming_the_option():
    r = run("ece", BINARY, "--n-boot", "0", "--metrics", "ece_l1_plugin,nonsense")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("Error: --metrics names 'nonsense', which this report does not have: expected some of ")
    assert r.stderr.count("\n") == 1 and "ece_l1_plugin" in r.stderr
    r = run("smece", BINARY, "--n-boot", "0", "--sort", "ece_l1_plugin")
    assert r.exit_code == 2 and r.stderr.startswith("Error: --sort names 'ece_l1_plugin'")


@pytest.mark.parametrize(
    "args",
    [
        ["tcal", BINARY, "--n-boot", "100"],
        ["diagram", BINARY, "--n-boot", "10", "--kind", "both"],
        [
            "recalibrate",
            "evaluate",
            BINARY,
            "--method",
            "platt",
            "--method",
            "isotonic",
            "--holdout",
            "0.5",
            "--n-boot",
            "20",
        ],
        ["recalibrate", "fit", BINARY, "--method", "platt"],
        ["smece", MULTI, "--mode", "marginal", "--n-boot", "10"],
    ],
)
def test_every_command_prints_the_same_tidy_csv_as_its_json(args, tmp_path):
    """--format csv is the tidy long table for every command, equal to the JSON's numbers."""
    extra = (
        ["-o", str(tmp_path / ("d.png" if args[0] == "diagram" else "cal.json"))]
        if args[0] == "diagram" or args[1:2] == ["fit"]
        else []
    )
    doc = run_json(*args, *extra)
    r = run(*args, *extra, "--format", "csv")
    assert r.exit_code == 0, r.stderr
    table = pd.read_csv(io.StringIO(r.stdout), keep_default_na=False)
    assert list(table.columns) == ["file", "group", "problem", "metric", "estimate", "ci_low", "ci_high", "bound"]
    assert len(table) > 0
    from calibcli.report.render import long_rows

    expected = long_rows(doc)
    assert len(expected) == len(table)
    for row, want in zip(table.itertuples(), expected):
        assert (row.file, row.problem, row.metric) == (want["file"], want["problem"], want["metric"])
        assert (row.estimate == "") == (want["estimate"] is None)
        if want["estimate"] is not None:
            assert float(row.estimate) == pytest.approx(want["estimate"], rel=0, abs=0)
        if want["ci_low"] is not None:
            assert float(row.ci_low) == want["ci_low"] and float(row.ci_high) == want["ci_high"]


def test_evaluate_prints_one_summary_row_per_method_with_the_test():
    args = [
        "recalibrate",
        "evaluate",
        BINARY,
        "--method",
        "platt",
        "--method",
        "isotonic",
        "--holdout",
        "0.5",
        "--n-boot",
        "20",
    ]
    doc = run_json(*args)
    r = run(*args, "--format", "markdown")
    assert r.exit_code == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| breast_cancer_nb.csv |")]
    assert [row.split(" | ")[1] for row in rows] == ["uncalibrated", "platt", "isotonic"]
    for row, method in zip(rows, doc["files"][0]["rows"]):
        assert fmt_number(method["metrics"]["ece_l1_plugin"]["estimate"]) in row
        assert row.rstrip(" |").endswith(fmt_number(method["test"]["p_value"]))


def test_piped_tables_follow_COLUMNS(tmp_path):
    paths = _model_dumps(tmp_path, n_files=4)
    env = {**os.environ, "COLUMNS": "90"}
    proc = subprocess.run(
        [sys.executable, "-m", "calibcli", "ece", *paths, "--n-boot", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert max(len(line.rstrip()) for line in proc.stdout.splitlines()) <= 90
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "calibcli", "ece", *paths, "--n-boot", "0", "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        ).stdout
    )
    for entry in doc["files"]:
        assert fmt_number(entry["problems"][0]["metrics"]["ece_l1_plugin"]["estimate"]) in proc.stdout
