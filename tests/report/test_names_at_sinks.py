"""Issue 24, names from the data at every sink, through real runs of the installed ``calibcli``: a file name and
a group value holding ``$``, ``|``, a newline, an ANSI escape sequence and a right-to-left override reach the
terminal (tables, lines, stderr), markdown rows and matplotlib text through :mod:`calibcli.core.safe_text`, so that
``diagram 'preds_$1_$2.csv'`` draws, no escape sequence reaches the terminal, an ``Error:`` line stays one line
and a markdown row stays one row.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="file names with control characters as on Linux")

#: A group value with every character a sink would interpret: mathtext, a markdown cell's end, a row's end, an
#: OSC escape sequence (set the window title) ended by BEL, and a right-to-left override.
HOSTILE = "a$1|b\nc\x1b]0;T\x07d\u202ee"
#: How the terminal, stderr and markdown show it (Python's escapes; markdown also escapes the ``|``).
SHOWN = r"a$1|b\nc\x1b]0;T\x07d\u202ee"
SHOWN_MD = r"a$1\|b\nc\x1b]0;T\x07d\u202ee"

#: Characters that must never reach a terminal or a markdown row raw (newline excepted: tables have lines).
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _console_script() -> str:
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


def calibcli(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run([_console_script(), *map(str, args)], capture_output=True, cwd=cwd, timeout=300, env=env)


def _write(path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 400
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(int)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["label", "prob", "grp"])
        for i in range(n):
            w.writerow([y[i], repr(float(p[i])), HOSTILE if i % 2 == 0 else "plain"])


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "preds_$1_$2.csv"
    _write(path)
    return path


def _clean(text: str) -> None:
    assert not RAW.search(text), repr(RAW.search(text).group(0))


def test_ece_table_shows_a_hostile_group_value_escaped(data):
    r = calibcli("ece", data.name, "--group-by", "grp", "--n-boot", "0", cwd=data.parent)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    _clean(out)
    assert f"preds_$1_$2.csv [grp={SHOWN}]" in out


def test_ece_markdown_keeps_one_row_per_metric(data):
    r = calibcli("ece", data.name, "--group-by", "grp", "--n-boot", "0", "--format", "markdown", cwd=data.parent)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    _clean(out)
    rows = [line for line in out.splitlines() if line.startswith("|")]
    cells = {len(re.split(r"(?<!\\)\|", line)) for line in rows}
    assert cells == {9}, cells  # 7 columns: every row, the hostile group's included, has 7 cells
    hostile = [line for line in rows if f"| grp={SHOWN_MD} |" in line]
    plain = [line for line in rows if "| grp=plain |" in line]
    assert hostile and len(hostile) == len(plain)


def test_diagram_draws_a_file_name_and_group_value_with_dollars(data):
    for extra in ([], ["--group-by", "grp"]):
        out = data.parent / f"d{len(extra)}.png"
        r = calibcli("diagram", data.name, *extra, "-o", out.name, cwd=data.parent)
        assert r.returncode == 0, r.stderr
        assert out.read_bytes().startswith(b"\x89PNG")
        _clean(r.stdout.decode())
        _clean(r.stderr.decode())


def test_diagram_draws_names_as_written(data):
    """matplotlib's SVG notes every text it draws as a comment, as shown: the dollars literal, the controls
    visible, in the legend and in the title made from the file name."""
    r = calibcli("diagram", data.name, "--group-by", "grp", "-o", "t.svg", cwd=data.parent)
    assert r.returncode == 0, r.stderr
    svg = (data.parent / "t.svg").read_text(encoding="utf-8")
    _clean(svg.replace("\n", "").replace("\t", ""))
    assert f"<!-- grp={SHOWN} -->" in svg
    assert "<!-- Reliability diagram of preds_$1_$2.csv by grp, binary mode -->" in svg


def test_compare_shows_hostile_file_names_escaped(data):
    other = data.parent / "b$|\u202e\x1b[2Jx.csv"
    shutil.copy(data, other)
    r = calibcli("compare", data.name, other.name, "--n-boot", "20", cwd=data.parent)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    _clean(out)
    assert "candidate b$|\\u202e\\x1b[2Jx.csv: 400 rows" in out


def test_report_stderr_lines_show_group_values_escaped(data):
    r = calibcli("report", data.name, "--group-by", "grp", "-o", "r.html", cwd=data.parent)
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    _clean(err)
    lines = err.splitlines()
    assert lines[0] == "wrote r.html: 2 entries" and len(lines) == 3, err
    assert lines[1].startswith(f"  preds_$1_$2.csv [grp={SHOWN}]: ")


def test_an_error_line_stays_one_line_when_the_file_name_holds_a_newline_and_an_escape(data):
    bad = data.parent / "x\n\x1b[2Jy.csv"
    shutil.copy(data, bad)
    r = calibcli("ece", bad.name, "--label-col", "nope", cwd=data.parent)
    assert r.returncode == 2
    assert r.stderr.decode() == (
        "Error: x\\n\\x1b[2Jy.csv: no column 'nope' (given by --label-col); the file has "
        "columns ['label', 'prob', 'grp']\n"
    )
    assert r.stdout == b""
