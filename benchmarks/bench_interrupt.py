"""Benchmark: how soon a signal stops a long run (SIGINT or SIGTERM to the installed ``calibcli``).

The tests (``tests/core/test_outputs_signals.py``) check that a signalled run ends with ``Error: interrupted``,
128 + the signal and nothing written, waiting up to a minute for it (a hung run's bound, so that a loaded CI
machine cannot fail them by chance); how *soon* it ends is a speed figure, measured here. The target: within
a second of the signal, in every phase of every command.

Each command below lasts minutes without the signal (``--n-boot 100000``); the signal is sent ``delay``
seconds after the run has opened its input (the same delays as the tests, so reading, fitting and resampling
phases are all hit), and the time from the signal to the process's exit is measured, ``--repeats`` times.

    python benchmarks/bench_interrupt.py                 # every run, 3 repeats
    python benchmarks/bench_interrupt.py --repeats 5 --only tcal ece
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RUNS = {  # name: (arguments, input, delays by signal)
    "tcal": (["tcal", "{big}", "--n-boot", "100000"], "big", {signal.SIGINT: 1.0, signal.SIGTERM: 2.5}),
    "diagram": (["diagram", "{medium}", "--n-boot", "20000", "-o", "{out}.png"], "medium",
                {signal.SIGINT: 1.0, signal.SIGTERM: 3.0}),
    "evaluate": (["recalibrate", "evaluate", "{big}", "--method", "platt", "--holdout", "0.5", "--n-boot", "100000"],
                 "big", {signal.SIGINT: 1.0, signal.SIGTERM: 3.0}),
    "ece": (["ece", "{medium}", "--n-boot", "100000"], "medium", {signal.SIGTERM: 2.0}),
    "smece": (["smece", "{big}", "--n-boot", "100000"], "big", {signal.SIGINT: 2.0}),
}


def write_rows(path: Path, n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p).astype(int)
    with open(path, "w") as fh:
        fh.write("prob,label\n")
        np.savetxt(fh, np.column_stack([p, y]), fmt=["%.6f", "%d"], delimiter=",")
    return path


def opened(pid: int, path: Path) -> bool:
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def stop_time(exe: str, args: list[str], source: Path, signum: int, delay: float) -> tuple[float, int]:
    """Seconds from the signal to the exit, and the exit code."""
    proc = subprocess.Popen([exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while not opened(proc.pid, source) and proc.poll() is None and time.monotonic() < started + 3.0:
        time.sleep(0.02)
    time.sleep(delay)
    if proc.poll() is not None:
        raise SystemExit(f"{args[0]} ended before the signal")
    sent = time.monotonic()
    proc.send_signal(signum)
    proc.wait(timeout=120)
    return time.monotonic() - sent, proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=sorted(RUNS), default=sorted(RUNS))
    args = parser.parse_args(argv)
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable)) or shutil.which("calibcli")
    if exe is None:
        raise SystemExit("install calibcli first (pip install .)")
    with tempfile.TemporaryDirectory() as tmp:
        data = {"big": write_rows(Path(tmp) / "big.csv", 200_000, 12),
                "medium": write_rows(Path(tmp) / "medium.csv", 100_000, 13)}
        print(f"{'command':<10} {'signal':<8} {'delay s':>7} {'median stop s':>13} {'max stop s':>10}  exit codes")
        for name in args.only:
            template, which, delays = RUNS[name]
            for signum, delay in delays.items():
                times, codes = [], set()
                for _ in range(args.repeats):
                    argv_ = [a.format(big=data["big"], medium=data["medium"], out=Path(tmp) / "out") for a in template]
                    seconds, code = stop_time(exe, argv_, data[which], signum, delay)
                    times.append(seconds)
                    codes.add(code)
                print(f"{name:<10} {signal.Signals(signum).name:<8} {delay:>7.1f} {statistics.median(times):>13.3f} "
                      f"{max(times):>10.3f}  {sorted(codes)}")
        print(f"load average after the runs: {os.getloadavg()[0]:.2f} (2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
