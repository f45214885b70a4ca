"""--format markdown|csv: one tidy rendering of every measuring command's report, parsed back."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from _cli import BINARY, MULTI, SAMPLE, run, run_json

SHARDS = str(SAMPLE / "eval_shards")


@pytest.mark.parametrize("command", ["ece", "smece", "tcal"])
def test_csv_is_the_json_in_long_form(command):
    args = (command, SHARDS, "--group-by", "model", "--n-boot", "400")
    doc = run_json(*args)
    r = run(*args, "--format", "csv")
    assert r.exit_code == 0 and "Error" not in r.stderr
    table = pd.read_csv(io.StringIO(r.stdout), keep_default_na=False)
    assert list(table.columns) == ["file", "group", "problem", "metric", "estimate", "ci_low", "ci_high", "bound"]
    assert set(table["group"]) == {"model=logreg", "model=nb"} and set(table["file"]) == {SHARDS}
    for entry in doc["files"]:
        group = "model=" + entry["group"]["model"]
        if "problems" in entry:
            expected = {(q["name"], k): m for q in entry["problems"] for k, m in q["metrics"].items()}
        else:
            expected = {(entry["mode"], k): m for k, m in entry["headline"].items()}
        rows = table[table["group"] == group]
        assert len(rows) == len(expected)
        for _, row in rows.iterrows():
            m = expected[(row["problem"], row["metric"])]
            assert float(row["estimate"]) == m["estimate"]  # written so that it round-trips
            assert (row["ci_low"] == "") == (m["ci_low"] is None)
            if m["ci_low"] is not None:
                assert float(row["ci_low"]) == m["ci_low"] and float(row["ci_high"]) == m["ci_high"]


def test_markdown_table_has_one_row_per_metric_and_the_gate():
    doc = run_json("ece", MULTI, "--mode", "marginal", "--n-boot", "0")
    r = run("ece", MULTI, "--mode", "marginal", "--n-boot", "0", "--format", "markdown", "--fail-above", "0.01")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    assert lines[0] == "**calibcli ece**" and lines[2].startswith("| file | group | problem | metric | estimate |")
    rows = [l for l in lines if l.startswith(f"| {MULTI} |")]
    n_metrics = len(doc["files"][0]["aggregate"]["metrics"]) + sum(len(q["metrics"]) for q in doc["files"][0]["problems"]) \
        + len(doc["files"][0]["multiclass_scores"])
    assert len(rows) == n_metrics
    assert "| aggregate | `ece_l1_plugin` |" in rows[0]
    assert "Gate: **failed**" in r.stdout


def test_unknown_format_is_one_error_line():
    r = run("smece", BINARY, "--format", "xml")
    assert (r.exit_code, r.stderr) == (2, "Error: --format is 'xml': expected one of table, json, markdown, csv\n")
