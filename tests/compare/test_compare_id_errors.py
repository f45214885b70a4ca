"""Issue 24, misleading messages through real runs of the installed ``calibcli``: ``compare --id-col`` names
the duplicate ID as the file has it, a NaN ID and an empty ID as such, and a duplicated header in one line.
"""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

HINT = "check the address (tcp://HOST:PORT) or scheduler file, or start one with `dask scheduler`"


def _console_script() -> str:
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


def calibcli(*args, cwd) -> subprocess.CompletedProcess:
    # the timeout only stops a hung run: a connect timeout of 5 s plus start-up is far below it
    return subprocess.run([_console_script(), *map(str, args)], capture_output=True, cwd=cwd, timeout=120)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr
    text = r.stderr.decode()
    lines = [line for line in text.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def _write(path, ids) -> None:
    rng = np.random.default_rng(0)
    n = len(ids)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(int)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["label", "prob", "id"])
        w.writerows([y[i], repr(float(p[i])), ids[i]] for i in range(n))


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "p.csv"
    _write(path, list(range(300)))
    return path


needs_distributed = pytest.mark.skipif(
    __import__("importlib").util.find_spec("distributed") is None, reason="needs distributed (calibcli[dask])")


def test_compare_names_the_duplicate_id_as_the_file_has_it(data):
    n = 300
    _write(data.parent / "dup.csv", [i if i != 7 else 5 for i in range(n)])  # 5 twice, in one batch
    expected = ("Error: dup.csv: the ID 5 of column 'id' appears more than once: IDs must be unique to pair examples "
                "by --id-col")
    for pair in (("p.csv", "dup.csv"), ("dup.csv", "p.csv")):  # as the candidate, and as the baseline
        assert one_error_line(calibcli("compare", *pair, "--id-col", "id", "--n-boot", "0", cwd=data.parent)) == expected
    _write(data.parent / "dups.csv", [f"id-{i}" if i != 9 else "id-3" for i in range(n)])
    _write(data.parent / "s.csv", [f"id-{i}" for i in range(n)])
    for pair in (("s.csv", "dups.csv"), ("dups.csv", "s.csv")):
        assert one_error_line(calibcli("compare", *pair, "--id-col", "id", "--n-boot", "0", cwd=data.parent)) == (
            "Error: dups.csv: the ID 'id-3' of column 'id' appears more than once: IDs must be unique to pair examples "
            "by --id-col")


def test_compare_reports_a_nan_id_as_such(data):
    _write(data.parent / "nan.csv", [float(i) if i != 7 else "nan" for i in range(300)])
    _write(data.parent / "f.csv", [float(i) for i in range(300)])
    for pair in (("f.csv", "nan.csv"), ("nan.csv", "f.csv")):
        assert one_error_line(calibcli("compare", *pair, "--id-col", "id", "--n-boot", "0", cwd=data.parent)) == (
            "Error: nan.csv: row 8, column id: the ID is NaN (missing): every row needs an ID to pair examples by "
            "--id-col")


def test_compare_reports_an_empty_id_as_a_missing_id_not_as_a_group_by_value(data):
    _write(data.parent / "empty.csv", [i if i != 7 else "" for i in range(300)])
    for pair in (("p.csv", "empty.csv"), ("empty.csv", "p.csv")):
        assert one_error_line(calibcli("compare", *pair, "--id-col", "id", "--n-boot", "0", cwd=data.parent)) == (
            "Error: empty.csv: row 8, column id: the ID is empty (missing): every row needs an ID to pair examples by "
            "--id-col")


def test_compare_id_col_on_a_file_with_a_duplicated_header_is_one_error_line(data):
    (data.parent / "dh.csv").write_text("label,prob,id,id\n1,0.5,1,2\n0,0.2,2,3\n")
    assert one_error_line(calibcli("compare", "dh.csv", "dh.csv", "--id-col", "id", "--n-boot", "0", cwd=data.parent)) == (
        "Error: dh.csv: column name 'id' appears more than once in the header: expected unique column names; rename "
        "the duplicates")
