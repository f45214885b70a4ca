"""``calibcli report --time-col``: the monitoring section on the report's page, end to end.

The section holds ``calibcli monitor``'s own document for each input and the same options (the options come from
the monitor's declaration, so both commands take the same flags with the same rules), the page shows the windows'
table, the alerts' reasons, the first window of the persistent drift and the picture; without ``--time-col`` the
report is what it was.
"""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from _cli import SAMPLE, run

MONITOR = SAMPLE / "monitor"
SCORES = str(MONITOR / "scores.parquet")
DAILY = str(MONITOR / "daily")
VALIDATION = str(MONITOR / "validation.csv")
FAST = ("--n-boot", "50", "--method", "platt")
NO_WINDOWS = "Error: windows need --time-col with --every, or --chunk-rows: pass one of them"
WINDOWS = ("--time-col", "ts", "--every", "W", "--reference-windows", "4", "--n-null", "50")


def _report(tmp_path, *args):
    page, data = tmp_path / "report.html", tmp_path / "report.json"
    r = run("report", *args, "-o", page, "--json-output", data, *FAST)
    assert r.exit_code == 0, r.stderr
    return page.read_text(), json.loads(data.read_text()), r.stderr


def _monitor(*args):
    r = run("monitor", *args, "--n-boot", "50", "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _without_figure(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "figure"}


@pytest.fixture(scope="module")
def monitored(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("report_monitor"), SCORES, *WINDOWS)


def test_the_section_is_the_monitor_commands_document(monitored):
    _, doc, stderr = monitored
    theirs = _monitor(SCORES, *WINDOWS)
    (entry,) = doc["monitor"]["files"]
    assert _without_figure(entry) == theirs
    # the planted drift of the sample (week 9 on), as docs/commands/monitor.md says
    assert entry["drift"][0]["from"] == "2024-02-26T00:00:00" and entry["alerts"] == 4
    assert f"  monitor of {SCORES}: 4 of 8 tested windows alerted, drifting from 2024-02-26T00:00:00 on" in stderr


@pytest.mark.parametrize(
    "inputs, options",
    [
        # several inputs: each its own series (a directory of daily files is one), a reference file, chunks of rows,
        # the shared --adjust and --mode, and the monitor's own --metrics and --min-rows
        (
            (SCORES, DAILY),
            ("--chunk-rows", "500", "--reference", VALIDATION, "--adjust", "bh", "--metrics", "smece,cox_slope"),
        ),
        ((SCORES,), ("--time-col", "ts", "--every", "14D", "--reference-until", "2024-02-01", "--min-rows", "600")),
    ],
    ids=["chunks-reference-file-two-inputs", "until-min-rows"],
)
def test_every_input_gets_the_monitor_commands_document_for_the_same_options(tmp_path, inputs, options):
    _, doc, _ = _report(tmp_path, *inputs, *options, "--n-null", "40", "--mode", "binary")
    entries = doc["monitor"]["files"]
    assert [e["input"]["path"] for e in entries] == list(inputs)
    for path, entry in zip(inputs, entries, strict=True):
        assert _without_figure(entry) == _monitor(path, *options, "--n-null", "40", "--mode", "binary")


def test_group_by_monitors_each_group_of_each_input(tmp_path):
    import pandas as pd

    scores = pd.read_parquet(SCORES)
    scores["region"] = ["north" if i % 3 else "south" for i in range(len(scores))]
    path = tmp_path / "regions.parquet"
    scores.to_parquet(path, index=False)
    _, doc, stderr = _report(tmp_path, path, *WINDOWS, "--group-by", "region")
    (entry,) = doc["monitor"]["files"]
    assert _without_figure(entry) == _monitor(path, *WINDOWS, "--group-by", "region")
    assert [d["group"] for d in entry["drift"]] == [{"region": "north"}, {"region": "south"}]
    assert [e["group"] for e in doc["files"]] == [{"region": "north"}, {"region": "south"}]
    assert sum(line.startswith(f"  monitor of {path} [region=") for line in stderr.splitlines()) == 2


def test_the_page_shows_the_windows_alerts_drift_and_picture(monitored):
    from calibcli.monitor.render import footer_lines, window_cells
    from calibcli.report.html import SVG_IN_PAGE, render_page

    html, doc, _ = monitored
    assert render_page(doc) == html
    (entry,) = doc["monitor"]["files"]
    body = re.search(r'<section class="monitor card" id="monitor-1">(.*?)</section>', html, re.S).group(1)
    header, cells = window_cells(entry)
    assert re.findall(r'<th scope="col">(.*?)</th>', body) == header
    rows = re.findall(r'<tr data-window="(\d+)" data-role="(\w+)"( class="flagged")?>(.*?)</tr>', body, re.S)
    assert [int(i) for i, *_ in rows] == list(range(len(entry["windows"])))
    assert [role for _, role, *_ in rows] == [w["role"] for w in entry["windows"]]
    assert [bool(flag) for _, _, flag, _ in rows] == [bool(w["alert"]) for w in entry["windows"]]
    assert [re.findall(r"<td>(.*?)</td>", r[3]) for r in rows] == cells
    assert sum(bool(flag) for _, _, flag, _ in rows) == entry["alerts"] == 4
    assert re.search(r'data-field="drift-from">2024-02-26T00:00:00<', body)
    lines = [unescape(line) for line in re.findall(r"<li>(.*?)</li>", body)]
    assert lines == footer_lines(entry)
    assert any("miscalibrated: the ECCE-R test rejects perfect calibration" in line for line in lines)
    # the picture: one panel per monitored metric, its ids prefixed (one page's id space)
    svg = entry["figure"]["svg"]
    assert svg.startswith("<svg") and 'id="m0-' in svg and 'data-kind="monitor"><svg' in body
    assert len(re.findall(r'<g id="m0-axes_\d+"', svg)) == len(entry["parameters"]["metrics"]) == 2
    embedded = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert embedded["monitor"]["files"][0]["figure"]["svg"] == SVG_IN_PAGE  # the SVG is in the page once
    assert _without_figure(embedded["monitor"]["files"][0]) == _without_figure(entry)


def test_without_time_col_the_report_is_unchanged(tmp_path, monitored):
    html, doc, stderr = monitored
    plain_html, plain, plain_stderr = _report(tmp_path, SCORES)
    assert "monitor" not in plain and 'class="monitor card"' not in plain_html
    assert "monitor of" not in plain_stderr
    # the monitoring section is added to the page; nothing else moves
    assert {k: v for k, v in doc.items() if k not in ("monitor", "command_line")} == {
        k: v for k, v in plain.items() if k != "command_line"
    }
    without = re.sub(r'<section class="monitor card".*?</section>\n', "", html, flags=re.S)
    without = without.replace(_embedded(html), _embedded(plain_html))
    without = without.replace(doc["command_line"], plain["command_line"])
    assert without == plain_html
    assert doc["command_line"].endswith(" --time-col ts --every W --reference-windows 4 --n-null 50")


def _embedded(html: str) -> str:
    return re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1)


@pytest.mark.parametrize(
    "args, message",
    [
        (("--every", "W"), NO_WINDOWS),
        (("--reference-windows", "3"), NO_WINDOWS),
        (
            ("--time-col", "nope", "--every", "W"),
            f"Error: {SCORES}: no column 'nope' (given by --time-col); the file has columns ['ts', 'prob', 'label']",
        ),
        (
            ("--time-col", "ts", "--every", "W", "--adjust", "by"),
            "Error: --adjust is 'by', the audit's alone: the monitor's windows (--time-col) are adjusted by holm, "
            "bonferroni, bh, none: pass one of them",
        ),
        (
            ("--time-col", "ts", "--every", "W", "--weight-col", "label"),
            "Error: --weight-col is not taken by monitor: its resampled nulls draw unweighted rows; monitor "
            "unweighted predictions",
        ),
        (
            ("--time-col", "ts", "--every", "0D"),
            None,  # the monitor's own message (tests/monitor): the same words here
        ),
    ],
    ids=["every-alone", "reference-alone", "missing-column", "adjust-by", "weights", "zero-window"],
)
def test_bad_monitor_options_fail_before_any_work(tmp_path, args, message):
    r = run("report", SCORES, "-o", tmp_path / "r.html", "--json-output", tmp_path / "r.json", *args)
    if message is None:
        theirs = run("monitor", SCORES, *args)
        assert theirs.exit_code == 2
        message = theirs.stderr.strip()
    assert (r.exit_code, r.stderr) == (2, message + "\n")
    assert list(tmp_path.iterdir()) == []
