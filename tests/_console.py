"""Shared by the tests that run the installed ``calibcli`` console script on real descriptors, datasets and
pipes (tests/io/test_output_targets.py, tests/io/test_dataset_members.py, tests/cli/test_signals_in_blocking_reads.py):
the script, its one error line, a folder's snapshot, and the input and calibrator they use."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._cli import BINARY




def _console_script() -> str:
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("the calibcli console script is not installed (pip install -e .)")
    return exe


def calibcli(*args, cwd=None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([_console_script(), *map(str, args)], capture_output=True, cwd=cwd, timeout=120, **kwargs)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` through bash, with ``calibcli`` the installed console script."""
    return subprocess.run(command.replace("calibcli ", f"'{_console_script()}' "), shell=True, executable="/bin/bash",
                          capture_output=True, cwd=cwd, timeout=120)


def one_error_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert text.count("\n") == 1 and text.startswith("Error: "), text
    return text.rstrip("\n")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (links as their targets' text), to check that nothing changed."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = b"-> " + os.readlink(p).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
        elif not p.is_dir():
            out[rel] = b"special"
    return out


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "in.csv"
    path.write_bytes(Path(BINARY).read_bytes())
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fit") / "cal.json"
    r = calibcli("recalibrate", "fit", BINARY, "--method", "platt", "-o", path)
    assert r.returncode == 0, r.stderr
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path
