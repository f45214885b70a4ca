"""Issue 24, through real runs of the installed ``calibcli`` console script: a dataset's members are checked by
type before they are opened (a device, a socket, a FIFO inside a directory is refused; a pipe named as the input
is read). Every error case checks the exit code 2 and stderr as one exact ``Error:`` line.
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
from tests._console import _console_script, _fifo, calibcli, data, fitted, one_error_line, shell, snapshot  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="descriptors, FIFOs and /proc as on Linux")


# ---------------------------------------------------------------------------------------------
# A dataset's members are regular files, checked before any is opened


def _socket(path: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


@pytest.mark.parametrize("make, kind", [
    (_fifo, "a named pipe (FIFO)"),
    (_socket, "a socket"),
    (lambda p: p.symlink_to("/dev/zero") or p, "a character device (a link to /dev/zero)"),
    (lambda p: p.symlink_to("missing.csv") or p, None),
])
@pytest.mark.parametrize("how", ["directory", "glob"])
def test_a_member_that_is_not_a_regular_file_is_refused_by_type(tmp_path, data, make, kind, how):
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "a.csv").write_bytes(data.read_bytes())
    make(folder / "b.csv")
    arg = "shards" if how == "directory" else "shards/*.csv"
    before = snapshot(tmp_path)
    for command in (["ece", arg, "--n-boot", "0"], ["recalibrate", "fit", arg, "--method", "platt", "-o", "c.json"]):
        r = calibcli(*command, cwd=tmp_path)  # a run that opened the member would block, or read for ever
        assert r.returncode == 2, r.stderr
        if kind is None:
            expected = (f"Error: shards/b.csv (in {arg}): is a symbolic link to 'missing.csv', which does not exist: "
                        f"fix or remove the link")
        else:
            expected = (f"Error: shards/b.csv (in {arg}): is {kind}, not a regular file: the files of a directory or "
                        f"a pattern are read as data; move it out of {arg}")
        assert one_error_line(r.stderr) == expected
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_a_device_named_as_the_input_is_refused(tmp_path, path, kind):
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    r = calibcli("ece", path, "--n-boot", "0", cwd=tmp_path)
    assert r.returncode == 2
    assert one_error_line(r.stderr) == (f"Error: {path}: is {kind}, not a file of predictions: name a regular file, "
                                        f"a directory of them, a pipe, or '-' for standard input")


def test_a_pipe_named_as_the_input_is_still_read(tmp_path, data):
    """Process substitution (``<(cmd)``, a pipe behind /dev/fd/N) and /dev/stdin stay inputs."""
    r = shell("calibcli ece <(cat in.csv) --n-boot 0 --json", tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_used"] == 569
    r = shell("cat in.csv | calibcli ece /dev/stdin --n-boot 0 --json", tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_used"] == 569
