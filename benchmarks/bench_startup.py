"""Start-up time: the wall time of ``calibcli --help`` (median of 10 runs) against the 0.15 s bar of issue 13.

    python benchmarks/bench_startup.py [--runs 10] [--quick] [--before DIR]

``--before DIR`` also times the calibcli rows with ``PYTHONPATH=DIR`` (a checkout of the previous version), runs
of the two interleaved, and prints after/before ratios: the noise of a shared machine hits both alike.

Each run is a fresh process of the installed console script (what a user types), stdout to /dev/null.
For context it also times the floor under it: a bare ``python -c pass``, ``import typer`` (the CLI
framework) and ``import calibcli.cli.app``; and a command's own help (``calibcli ece --help``), which loads that
command and its libraries. On a busy machine every figure grows by the same factor: compare
``calibcli --help`` with the bare interpreter's start as well as with the bar.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

BAR_S = 0.15


def median_times(argv: list[str], runs: int, env: dict | None = None) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system, from the child's rusage) of ``runs`` runs. CPU
    time hardly grows when other processes share the cores, so it is the steadier figure on a busy machine."""
    wall, cpu = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall.append(time.perf_counter() - t0)
        cpu.append(usage.ru_utime + usage.ru_stime)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed with exit code {proc.returncode}")
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 runs each")
    parser.add_argument("--before", metavar="DIR", help="a checkout of the previous version, timed side by side")
    args = parser.parse_args()
    if args.quick:
        args.runs = 3
    exe = shutil.which("calibcli", path=os.path.dirname(sys.executable)) or shutil.which("calibcli")
    if exe is None:
        raise SystemExit("the calibcli console script is not installed (pip install -e .)")
    py = sys.executable
    rows = [
        ("python -c pass", [py, "-c", "pass"]),
        ("python -c 'import typer'", [py, "-c", "import typer"]),
        ("python -c 'import calibcli.cli.app'", [py, "-c", "import calibcli.cli.app"]),
        ("calibcli --help", [exe, "--help"]),
        ("calibcli ece --help", [exe, "ece", "--help"]),
    ]
    print(f"median of {args.runs} runs (load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs)")
    print(f"  {'':34s} {'wall':>7s}   {'CPU':>7s}")
    results = {}
    for name, argv in rows:
        results[name] = median_times(argv, args.runs)
        print(f"  {name:34s} {results[name][0]:7.3f} s {results[name][1]:7.3f} s")
    (help_s, help_cpu), (floor, floor_cpu) = results["calibcli --help"], results["python -c pass"]
    verdict = "met" if help_s < BAR_S else "missed"
    print(f"calibcli --help: {help_s:.3f} s wall ({help_cpu:.3f} s CPU) vs the {BAR_S} s bar: {verdict}; "
          f"{help_s - floor:.3f} s wall, {help_cpu - floor_cpu:.3f} s CPU above a bare interpreter's start")
    if args.before:
        compare_with(args.before, rows[2:], args.runs)


def compare_with(before: str, rows: list, runs: int) -> None:
    """Each calibcli row with ``PYTHONPATH=before`` and with this environment, one run of each in turn."""
    after_env = dict(os.environ)
    before_env = {**os.environ, "PYTHONPATH": os.path.abspath(before)}
    print(f"side by side with {before} (median of {runs} interleaved runs each)")
    print(f"  {'':34s} {'before':>8s} {'after':>8s} {'ratio':>6s}   (wall; CPU ratio)")
    for name, argv in rows:
        times: dict = {"before": [], "after": []}
        for _ in range(runs):
            times["before"].append(median_times(argv, 1, before_env))
            times["after"].append(median_times(argv, 1, after_env))
        (bw, bc), (aw, ac) = ((statistics.median(t[0] for t in times[k]), statistics.median(t[1] for t in times[k]))
                              for k in ("before", "after"))
        print(f"  {name:34s} {bw:7.3f}s {aw:7.3f}s {aw / bw:6.2f}   ({ac / bc:.2f})")


if __name__ == "__main__":
    main()
