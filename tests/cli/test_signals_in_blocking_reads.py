"""Issue 24, through real runs of the installed ``calibcli`` console script: blocking opens and reads of
standard input or a named pipe end with ``Error: interrupted`` on SIGINT and SIGTERM. The tests wait on events
(the process blocked in the kernel's FIFO open, a temporary file growing), never on fixed sleeps or wall-clock
bounds; the subprocess timeouts only stop a hung run.
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
# Blocking opens and endless reads end on SIGINT and SIGTERM


def _wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` holds (polling); fail if the process ends first. The timeout only stops a
    test whose event never comes: the assertion is on the event, not on the time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {what}: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no sign of {what} in {timeout:.0f} s")
        time.sleep(0.01)


def _blocked_opening_a_fifo(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "wait_for_partner"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", [
    ["ece", "{fifo}", "--n-boot", "0"],
    ["recalibrate", "apply", "{cal}", "{fifo}", "-o", "{out}"],
])
def test_a_signal_ends_a_run_blocked_opening_a_named_pipe(tmp_path, fitted, signum, command):
    """A named pipe given as the input with no writer blocks the open in the kernel: the signal ends it."""
    if not os.path.exists("/proc/self/wchan"):
        pytest.skip("needs /proc/<pid>/wchan to see the run blocked in the open")
    fifo = _fifo(tmp_path / "preds.csv")
    args = [a.format(fifo=fifo, cal=fitted, out=tmp_path / "out.csv") for a in command]
    proc = subprocess.Popen([_console_script(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: _blocked_opening_a_fifo(proc.pid), proc, "the open of the named pipe")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, err.decode(), out) == (128 + signum, "Error: interrupted\n", b"")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.csv"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_an_endless_read_of_standard_input(tmp_path, signum):
    """``calibcli ece - < /dev/zero`` copies standard input as it comes: the copy grows until the signal, then
    the run ends and the copy is removed."""
    spool = tmp_path / "tmp"
    spool.mkdir()

    def copying() -> bool:
        for p in spool.iterdir():
            try:
                if p.stat().st_size > 1 << 22:
                    return True
            except FileNotFoundError:  # Python's tempfile probes TMPDIR with a file it removes at once
                continue
        return False

    with open("/dev/zero", "rb") as zero:
        proc = subprocess.Popen([_console_script(), "ece", "-", "--n-boot", "0"], stdin=zero, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(spool)})
        try:
            _wait_for(copying, proc, "the copy of standard input growing")
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert (proc.returncode, err.decode(), out) == (128 + signum, "Error: interrupted\n", b"")
    assert list(spool.iterdir()) == []
