"""Benchmark: the floor of ``smece --group-by g100`` set by its Fourier transforms, against the bar of issue 22.

The bar asks ``smece --group-by g100`` (1e6 rows, 100 groups of about 10,000 rows, 1000 resamples) in at most 5x
the ungrouped ``smece`` on the same rows, with every seeded number unchanged to 1e-12. Every replicate of every
group solves SmoothECE's bandwidth fixed point (SPEC 3) by a bracketed search whose path is fixed by the values it
evaluates, each evaluation a real FFT of the replicate's spectrum on its grid (at least 4,096 cells,
``calibcli.smooth.grid.MIN_GRID``: an 8,192-point transform). Another set of evaluations (fewer, on a coarser grid,
or by another FFT whose rounding differs) takes another path and stops at another bandwidth within the search's
tolerance, so the same numbers need these transforms.

What is measured, in one run:

1. ``smece --group-by g100`` in this process with ``numpy.fft.rfft`` counted: how many transforms, of what shapes
   (every call of the run, the spectra's and the evaluations');
2. those transforms alone, replayed on random data of the same shapes, split between two threads (the machine's
   2 cores; pocketfft releases the GIL): the wall time of the transforms with nothing else;
3. the ungrouped ``smece`` on the same rows (median of 3 fresh processes) and the grouped one (1 fresh process).

The floor is (2) against 5x (3): when the transforms alone take longer than the bar allows the whole command,
the bar cannot be met with these numbers on this machine.

Measured 2026-11-28 on main after the compiled loops (load 1.9 on the 2 cores)::

    transforms in smece --group-by g100: 17,609 calls, 5,648,793,600 points in all
    those transforms alone, on 2 threads: 6.32 s
    smece (ungrouped, median of 3): 0.79 s; the bar (5x): 3.95 s
    smece --group-by g100: 13.93 s (17.6x)
    floor / ungrouped: 8.0x against the bar's 5x: cannot be met with these numbers

Usage: ``python benchmarks/bench_smece_floor.py`` (the data: ``benchmarks/out/groups_1e6.parquet``, written by
``benchmarks/bench_groups.py``).
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "out" / "groups_1e6.parquet"


def count_transforms() -> list[tuple[tuple[int, ...], int]]:
    """Run the grouped smece here with ``numpy.fft.rfft`` wrapped: the (shape, axis) of every call."""
    calls: list[tuple[tuple[int, ...], int]] = []
    real_rfft = np.fft.rfft

    def counting_rfft(a, n=None, axis=-1, norm=None, out=None):
        calls.append((tuple(np.shape(a)), axis))
        return real_rfft(a, n=n, axis=axis, norm=norm)

    np.fft.rfft = counting_rfft
    try:
        from calibcli.cli.entry import main

        sys.argv = ["calibcli", "smece", str(DATA), "--group-by", "g100", "--json"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main()
    finally:
        np.fft.rfft = real_rfft
    return calls


def replay(calls: list[tuple[tuple[int, ...], int]], threads: int = 2) -> float:
    """Wall time of the same transforms on random data, the calls dealt round-robin to ``threads`` threads."""
    rng = np.random.default_rng(0)
    shapes = sorted({shape for shape, _ in calls})
    data = {shape: rng.random(shape) for shape in shapes}

    def run(part):
        for shape, axis in part:
            np.fft.rfft(data[shape], axis=axis)

    parts = [calls[i::threads] for i in range(threads)]
    workers = [threading.Thread(target=run, args=(p,)) for p in parts]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def command_seconds(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "calibcli", *args], check=True, capture_output=True, env=dict(os.environ))
    return time.perf_counter() - start


def main() -> None:
    calls = count_transforms()
    points = sum(int(np.prod(shape)) for shape, _ in calls)
    floor = replay(calls)
    alone = statistics.median(command_seconds(["smece", str(DATA), "--json"]) for _ in range(3))
    grouped = command_seconds(["smece", str(DATA), "--group-by", "g100", "--json"])
    print(f"transforms in smece --group-by g100: {len(calls):,} calls, {points:,} points in all")
    print(f"those transforms alone, on 2 threads: {floor:.2f} s")
    print(f"smece (ungrouped, median of 3): {alone:.2f} s; the bar (5x): {5 * alone:.2f} s")
    print(f"smece --group-by g100: {grouped:.2f} s ({grouped / alone:.1f}x)")
    verdict = "cannot be met with these numbers" if floor > 5 * alone else "not excluded by the transforms"
    print(f"floor / ungrouped: {floor / alone:.1f}x against the bar's 5x: {verdict}")


if __name__ == "__main__":
    main()
