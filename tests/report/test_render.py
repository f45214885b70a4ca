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
from tests._cli import BINARY, MULTI, run, run_json, write_csv


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


def _rich_table(header, body, right, min_width):
    """What rich's own Table prints for these columns (no wrapping, unstyled), on a console wide enough."""
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for j, name in enumerate(header):
        table.add_column(name, justify="right" if right[j] else "left", no_wrap=True, min_width=min_width.get(j))
    for row in body:
        table.add_row(*row)
    buffer = io.StringIO()
    Console(file=buffer, width=1000, highlight=False, soft_wrap=False).print(table)
    return buffer.getvalue()


def test_the_plain_box_table_is_the_table_rich_draws():
    from calibcli.report.render import box_table

    rng = np.random.default_rng(3)
    alphabet = list("abcxyz0129./_-=[]() ")
    for trial in range(300):
        cols = int(rng.integers(1, 6))
        right = [bool(rng.integers(2)) for _ in range(cols)]
        header = ["".join(rng.choice(alphabet[:12], int(rng.integers(1, 12)))) for _ in range(cols)]

        def cell():
            lines = ["".join(rng.choice(alphabet, int(rng.integers(0, 16)))).strip(" ") for _ in range(rng.integers(1, 4))]
            return "\n".join(line or "-" for line in lines)

        body = [[cell() for _ in range(cols)] for _ in range(int(rng.integers(1, 8)))]
        min_width = {0: int(rng.integers(0, 20))} if trial % 2 else {}
        expected = _rich_table(header, [[c.replace("[", "\\[") for c in row] for row in body], right, min_width)
        assert box_table(header, body, right, min_width) == expected, (header, body)


def test_the_summary_is_the_same_drawn_plainly_or_by_rich(tmp_path, monkeypatch):
    from rich.console import Console

    from calibcli.report import render as rd

    paths = _model_dumps(tmp_path, n_files=5, n=300)
    deep = tmp_path / "a_rather_long_folder_name" / "and_another_long_one" / "[x] model.csv"
    deep.parent.mkdir(parents=True)
    deep.write_text(open(paths[0]).read())
    doc = run_json("ece", *paths, str(deep), "--n-boot", "20", "--group-by", "label")

    def draw(width):
        buffer = io.StringIO()
        rd.render_table(doc, Console(file=buffer, width=width, highlight=False, soft_wrap=False))
        return buffer.getvalue()

    plain = {width: draw(width) for width in (60, 100, 160)}
    monkeypatch.setattr(rd, "_plain", lambda *args: False)
    assert {width: draw(width) for width in (60, 100, 160)} == plain
    assert "[x] model.csv" in plain[160]


def test_a_wrapped_name_is_shown_over_lines_and_no_number_is_cut(tmp_path, monkeypatch):
    """Names broken at '/' to fit the terminal were shown with a literal backslash-n (the line break escaped as a
    control character), which widened the column until rich cut the numbers beside it short with an ellipsis."""
    paths = []
    for folder in ("aaaaaaaaaaaaaaaaaaaa/bbbbbbbbbbbbbbbbbbbbbbbb/cccccccccccccccc", "dd/bbbbbbbbbbbbbbbbbbbbbbbb/cccccccccccccccc"):
        (tmp_path / folder).mkdir(parents=True)
        paths.append(write_csv(tmp_path / folder, "m.csv", [0.2, 0.7, 0.9, 0.4] * 30, [0, 1, 1, 1] * 30))
    paths += [write_csv(tmp_path, name, [0.3, 0.6] * 50, [0, 1] * 50) for name in ("p3.csv", "p4.csv")]
    doc = run_json("ece", *paths, "--n-boot", "20")
    monkeypatch.setenv("COLUMNS", "50")
    r = run("ece", *paths, "--n-boot", "20")
    assert r.exit_code == 0, r.stderr
    assert "\\n" not in r.stdout and "…" not in r.stdout
    assert "/bbbbbbbbbbbbbbbbbbbbbbbb" in r.stdout and "/cccccccccccccccc/m.csv" in r.stdout
    for entry in doc["files"]:
        m = entry["problems"][0]["metrics"]["ece_l1_plugin"]
        assert fmt_number(m["estimate"]) in r.stdout and fmt_interval(m["ci_low"], m["ci_high"]) in r.stdout


@pytest.mark.parametrize("columns", ["60", "80", "100"])
def test_the_metric_table_never_cuts_a_name_or_number_on_a_narrow_terminal(monkeypatch, columns):
    """`ece FILE` on an 80-column terminal printed 0.06027 as "0.0602", cut the intervals and metric names, and
    dropped the bound column: rich cropped the columns that do not wrap to fit. Now only the note wraps, and the
    table is printed wider than the terminal when it must be."""
    path = str(BINARY)
    doc = run_json("ece", path, "--n-boot", "50")
    monkeypatch.setenv("COLUMNS", columns)
    r = run("ece", path, "--n-boot", "50")
    assert r.exit_code == 0, r.stderr
    rows = {line.split("│")[3].strip(): line for line in r.stdout.splitlines() if line.count("│") == 7}
    for name, m in doc["files"][0]["problems"][0]["metrics"].items():
        assert name in rows, name
        cells = [c.strip() for c in rows[name].split("│")]
        assert cells[4] == fmt_number(m["estimate"]) and cells[5] == fmt_interval(m["ci_low"], m["ci_high"])
    assert "upper bound" in r.stdout
