"""Issue 24, through real runs of the installed ``calibcli`` console script: outputs that resolve to this
process's own descriptors are written to them (never renamed over), and outputs that would become part of an
input dataset are refused. Every error case checks the exit code 2, stderr as one exact ``Error:`` line, and
that nothing was written or changed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._cli import BINARY
from tests._console import _console_script, calibcli, data, fitted, one_error_line, shell, snapshot  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="descriptors, FIFOs and /proc as on Linux")


# ---------------------------------------------------------------------------------------------
# Outputs that are this process's stdout, stderr or another descriptor


EARLIER = "an earlier line of the log\n"


@pytest.mark.parametrize("output, redirect", [
    ("/dev/stdout", ">> run.log"),
    ("/proc/self/fd/1", ">> run.log"),
    ("/dev/fd/1", ">> run.log"),
    ("run.log", ">> run.log"),  # the same file as stdout, by its own name
    ("link.json", ">> run.log"),  # a link of the user's own to /dev/stdout
    ("/dev/stderr", "2>> run.log >/dev/null"),
    ("/dev/fd/3", "3>> run.log >/dev/null"),
    ("/proc/self/fd/3", "3>> run.log >/dev/null"),
])
def test_an_output_that_is_a_descriptor_is_appended_to_not_replaced(tmp_path, data, output, redirect):
    """``calibcli ece f -o /dev/stdout >> run.log`` keeps the log's earlier lines: the report is written to the
    descriptor at its offset (append mode), not renamed over the file the descriptor points to."""
    (tmp_path / "run.log").write_text(EARLIER)
    (tmp_path / "link.json").symlink_to("/dev/stdout")
    r = shell(f"calibcli ece in.csv --n-boot 0 -o {output} {redirect}", tmp_path)
    assert r.returncode == 0, r.stderr
    log = (tmp_path / "run.log").read_text()
    assert log.startswith(EARLIER)
    report = json.JSONDecoder().raw_decode(log[len(EARLIER):])[0]
    assert report["command"] == "ece" and report["files"][0]["input"]["rows_used"] == 569
    assert stat.S_ISREG(os.lstat(tmp_path / "run.log").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "link.json", "run.log"]  # no temporary file left


def test_every_output_of_a_command_goes_to_the_descriptor(tmp_path, data):
    """``recalibrate fit`` writes a calibrator and a report; both to descriptors, the files kept."""
    (tmp_path / "cal.log").write_text(EARLIER)
    (tmp_path / "report.log").write_text(EARLIER)
    r = shell("calibcli recalibrate fit in.csv --method platt -o /dev/fd/3 --report /dev/fd/4 3>>cal.log 4>>report.log",
              tmp_path)
    assert r.returncode == 0, r.stderr
    for name, key in (("cal.log", "calibrator"), ("report.log", "command")):
        text = (tmp_path / name).read_text()
        assert text.startswith(EARLIER)
        assert key in json.loads(text[len(EARLIER):])


def test_recalibrated_rows_and_a_diagram_go_to_the_descriptor(tmp_path, data, fitted):
    (tmp_path / "rows.log").write_text(EARLIER)
    r = shell(f"calibcli recalibrate apply '{fitted}' in.csv --output-format csv -o /dev/stdout >> rows.log", tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "rows.log").read_text().splitlines()
    assert lines[0] == EARLIER.strip() and lines[1].startswith("prob,label")
    assert all(len(line.split(",")) == 2 for line in lines[2:2 + 569])  # (the command's summary line follows)
    (tmp_path / "plot.log").write_bytes(b"earlier bytes\n")
    r = shell("calibcli diagram in.csv --n-boot 0 --kind binned -o /dev/stdout >> plot.log", tmp_path)
    assert r.returncode == 0, r.stderr
    got = (tmp_path / "plot.log").read_bytes()
    assert got.startswith(b"earlier bytes\n\x89PNG\r\n\x1a\n") and b"IEND\xaeB`\x82" in got  # (the table follows)


def test_a_descriptor_open_for_reading_only_is_refused(tmp_path, data):
    (tmp_path / "run.log").write_text(EARLIER)
    r = shell("calibcli ece in.csv --n-boot 0 -o /dev/fd/3 3< run.log", tmp_path)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == "Error: --output /dev/fd/3: descriptor 3 is open for reading only: name another file"
    assert (tmp_path / "run.log").read_text() == EARLIER


# ---------------------------------------------------------------------------------------------
# Outputs that would become part of an input dataset


@pytest.fixture
def preds(tmp_path, data) -> Path:
    folder = tmp_path / "preds"
    (folder / "day=1").mkdir(parents=True)
    for name in ("a.csv", "b.csv"):
        (folder / name).write_bytes(data.read_bytes())
    (folder / "day=1" / "c.csv").write_bytes(data.read_bytes())
    return folder


@pytest.mark.parametrize("args, message", [
    (["recalibrate", "apply", "{cal}", "preds/*.csv", "-o", "preds/out.csv"],
     "--output preds/out.csv is matched by the input pattern 'preds/*.csv': it would become one of its files "
     "(read by the next run): write it elsewhere, or narrow the pattern"),
    (["recalibrate", "apply", "{cal}", "preds/**/*.csv", "-o", "preds/day=1/out.csv"],
     "--output preds/day=1/out.csv is matched by the input pattern 'preds/**/*.csv': it would become one of its "
     "files (read by the next run): write it elsewhere, or narrow the pattern"),
    (["ece", "preds", "--n-boot", "0", "-o", "preds/x.csv"],
     "--output preds/x.csv is inside the input directory preds: it would become one of its files (read by the "
     "next run): write it outside preds"),
    (["ece", "preds", "--n-boot", "0", "-o", "preds/day=2/x.parquet"],
     "--output preds/day=2/x.parquet is inside the input directory preds: it would become one of its files (read "
     "by the next run): write it outside preds"),
    (["ece", "alias", "--n-boot", "0", "-o", "preds/x.jsonl"],  # the directory through a link to it
     "--output preds/x.jsonl is inside the input directory alias: it would become one of its files (read by the "
     "next run): write it outside alias"),
    (["ece", "in.csv", "preds", "--n-boot", "0", "--json", "-o", "out.json", "--format", "csv"], None),
    (["recalibrate", "fit", "preds", "--method", "platt", "-o", "c.json", "--report", "preds/r.tsv"],
     "--report preds/r.tsv is inside the input directory preds: it would become one of its files (read by the "
     "next run): write it outside preds"),
    (["diagram", "preds/*.csv", "--n-boot", "0", "--kind", "binned", "-o", "preds/d.png"], None),
])
def test_an_output_inside_an_input_dataset_is_refused(tmp_path, preds, fitted, args, message):
    (tmp_path / "alias").symlink_to("preds")
    before = snapshot(tmp_path)
    r = calibcli(*[a.format(cal=fitted) for a in args], cwd=tmp_path)
    if message is None:  # not part of the dataset: an ordinary run (a .png is not a format read as data)
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2, r.stderr
    assert one_error_line(r.stderr) == f"Error: {message}"
    assert r.stdout == b""
    assert snapshot(tmp_path) == before


def test_outputs_beside_a_dataset_or_hidden_in_it_are_written(tmp_path, preds):
    """Hidden and ``_``-prefixed names are never part of a dataset; a sibling folder is not the folder."""
    (tmp_path / "preds2").mkdir()
    for output in ("preds/.report.csv", "preds/_out/x.csv", "preds2/x.csv"):
        (tmp_path / output).parent.mkdir(exist_ok=True)
        r = calibcli("ece", "preds", "--n-boot", "0", "-o", output, cwd=tmp_path)
        assert r.returncode == 0, (output, r.stderr)
        assert json.loads((tmp_path / output).read_text())["command"] == "ece"


def test_a_directory_read_whole_refuses_any_file_in_it(tmp_path, data):
    """A directory of files without a known extension is read whole with --input-format: any name joins it."""
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "part-00000").write_bytes(data.read_bytes())
    r = calibcli("ece", "parts", "--input-format", "csv", "--n-boot", "0", "-o", "parts/report", cwd=tmp_path)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == ("Error: --output parts/report is inside the input directory parts: it would "
                                        "become one of its files (read by the next run): write it outside parts")
    assert sorted(p.name for p in parts.iterdir()) == ["part-00000"]
