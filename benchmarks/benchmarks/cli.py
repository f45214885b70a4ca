"""The command line (calibcli.cli): how soon a signal stops a long run of the installed ``calibcli``.

Ported from ``bench_interrupt.py``. The tests (tests/core/test_outputs_signals.py) check that a signalled run ends
with ``Error: interrupted``, 128 + the signal and nothing written, waiting up to a minute (a hung run's bound); how
*soon* it ends is measured here. Target: within a second of the signal, in every phase of every command. Each run
lasts minutes without the signal (``--n-boot 100000``); the signal is sent ``delay`` seconds after the process has
opened its input (the tests' delays, so reading, fitting and resampling are all hit). Data: 200,000 and 100,000 rows
of CSV, seeds 12 and 13, written once into the benchmarks' cache.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from . import _common

RUNS = {  # name: (arguments, input, signal, delay)
    "tcal SIGINT": (["tcal", "{big}", "--n-boot", "100000"], "big", signal.SIGINT, 1.0),
    "tcal SIGTERM": (["tcal", "{big}", "--n-boot", "100000"], "big", signal.SIGTERM, 2.5),
    "diagram SIGINT": (["diagram", "{medium}", "--n-boot", "20000", "-o", "{out}"], "medium", signal.SIGINT, 1.0),
    "diagram SIGTERM": (["diagram", "{medium}", "--n-boot", "20000", "-o", "{out}"], "medium", signal.SIGTERM, 3.0),
    "evaluate SIGINT": (
        ["recalibrate", "evaluate", "{big}", "--method", "platt", "--holdout", "0.5", "--n-boot", "100000"],
        "big",
        signal.SIGINT,
        1.0,
    ),
    "ece SIGTERM": (["ece", "{medium}", "--n-boot", "100000"], "medium", signal.SIGTERM, 2.0),
    "smece SIGINT": (["smece", "{big}", "--n-boot", "100000"], "big", signal.SIGINT, 2.0),
}


def csv_rows(n: int, seed: int) -> Path:
    import numpy as np

    path = _common.cache_dir() / f"interrupt_{n}_{seed}_v{_common.DATA_VERSION}.csv"
    if not path.exists():
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.02, 0.98, n)
        y = (rng.uniform(size=n) < p).astype(int)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as fh:
            fh.write("prob,label\n")
            np.savetxt(fh, np.column_stack([p, y]), fmt=["%.6f", "%d"], delimiter=",")
        os.replace(tmp, path)
    return path


def _opened(pid: int, path: Path) -> bool:
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


class Interrupt:
    """Seconds from the signal to the process's exit."""

    timeout = 600
    params = (list(RUNS),)
    param_names = ["run"]

    def setup(self, run):
        self.data = {"big": csv_rows(200_000, 12), "medium": csv_rows(100_000, 13)}

    def track_stop_seconds(self, run):
        """Seconds from the signal to the exit. Target: within a second."""
        template, which, signum, delay = RUNS[run]
        out = Path(_common.cache_dir()) / f"interrupt_{os.getpid()}.png"
        argv = [a.format(big=self.data["big"], medium=self.data["medium"], out=out) for a in template]
        proc = subprocess.Popen([_common.calibcli(), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        source = self.data[which].resolve()
        started = time.monotonic()
        while not _opened(proc.pid, source) and proc.poll() is None and time.monotonic() < started + 10.0:
            time.sleep(0.02)
        time.sleep(delay)
        if proc.poll() is not None:
            raise RuntimeError(f"{run}: the command ended before the signal")
        sent = time.monotonic()
        proc.send_signal(signum)
        proc.wait(timeout=120)
        if proc.returncode != 128 + signum:
            raise RuntimeError(f"{run}: exit {proc.returncode}, expected {128 + signum}")
        return time.monotonic() - sent

    track_stop_seconds.unit = "seconds (target < 1)"  # type: ignore[attr-defined]
