"""Issue 24, slow failures through real runs of the installed ``calibcli``: an unreachable or impossible Dask
scheduler, a protocol that is not installed and a scheduler file that is not JSON are each one ``Error:`` line
(exit 2) within seconds (the connect timeout is :data:`CONNECT_TIMEOUT`, not distributed's 30 s).
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


@needs_distributed
def test_a_port_outside_the_tcp_range_is_refused_at_once(data):
    r = calibcli("ece", data.name, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:99999", cwd=data.parent)
    assert one_error_line(r) == ("Error: cannot connect to a Dask scheduler at tcp://127.0.0.1:99999: port 99999 is "
                                 f"not a TCP port (1 to 65535): {HINT}")


@needs_distributed
def test_a_refused_connection_gives_up_after_the_short_connect_timeout(data):
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = calibcli("ece", data.name, "--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{port}", cwd=data.parent)
    line = one_error_line(r)
    assert line.startswith(f"Error: cannot connect to a Dask scheduler at tcp://127.0.0.1:{port} (OSError: ")
    assert "after 5 s" in line and line.endswith(HINT), line


@needs_distributed
def test_a_protocol_that_is_not_installed_is_one_error_line(data):
    if __import__("importlib").util.find_spec("distributed_ucxx") is not None:
        pytest.skip("distributed-ucxx is installed")
    r = calibcli("ece", data.name, "--engine", "dask", "--scheduler", "ucx://127.0.0.1:8786", cwd=data.parent)
    line = one_error_line(r)
    assert line.startswith("Error: cannot connect to a Dask scheduler at ucx://127.0.0.1:8786 (") and line.endswith(HINT)
    assert "internal error" not in line


@needs_distributed
def test_a_scheduler_file_that_is_not_json_is_one_error_line(data):
    (data.parent / "sched.json").write_text("not json\n")
    r = calibcli("ece", data.name, "--engine", "dask", "--scheduler", "sched.json", cwd=data.parent)
    assert one_error_line(r) == ("Error: sched.json is not a Dask scheduler file (not JSON): expected the file written "
                                 "by `dask scheduler --scheduler-file`, or an address tcp://HOST:PORT")
    (data.parent / "sched.json").write_text('{"type": "Scheduler"}\n')
    r = calibcli("ece", data.name, "--engine", "dask", "--scheduler", "sched.json", cwd=data.parent)
    assert one_error_line(r) == ("Error: sched.json is not a Dask scheduler file (no \"address\"): expected the file "
                                 "written by `dask scheduler --scheduler-file`, or an address tcp://HOST:PORT")
