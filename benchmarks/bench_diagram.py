"""Benchmark: ``calibcli diagram`` on a 1,000,000-row Parquet file, next to relplot 1.0.3.

Target (from the issue): a diagram of a 1,000,000-row file in a few seconds, bootstrap band included.

Prints two tables:
1. ``calibcli diagram FILE -o out.png`` as a user runs it (a fresh process: imports, reading the
   file, binned and smooth statistics with the default 200 bootstrap resamples, drawing, writing the
   PNG) for ``--kind both|binned|smooth`` on a calibrated and an overconfident model, with the
   process's peak resident memory. Best of ``--repeat`` runs; the load average is printed (the
   machine is shared).
2. relplot's smooth diagram with its default 200 bootstrap resamples (``relplot.rel_diagram`` and
   ``savefig`` to PNG, in process, imports excluded), the nearest thing in the reference packages, at
   the same sizes; relplot has no bootstrap for its binned diagram.

Data are seeded (seed 0). Run: ``python benchmarks/bench_diagram.py [--quick] [--repeat N]``
(``--quick``: n = 100,000 and no relplot run at 1e6).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# Runs the CLI in a fresh interpreter and reports its own peak RSS on stderr's last line.
_RUNNER = (
    "import resource, sys\n"
    "from calibcli.cli.app import main\n"
    "sys.argv = ['calibcli'] + sys.argv[1:]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "else:\n"
    "    code = 0\n"
    "print(f'PEAK_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def make_data(kind: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "calibrated":
        z = rng.beta(2.0, 2.0, n)
        y = rng.random(n) < z
    else:  # overconfident: the true rate is pulled towards 1/2
        z = rng.beta(0.7, 0.7, n)
        y = rng.random(n) < 0.5 + 0.6 * (z - 0.5)
    return y.astype(np.int64), z


def run_cli(path: str, out: str, kind: str) -> tuple[float, float]:
    """Wall seconds and peak MiB of one ``calibcli diagram`` process."""
    env = dict(os.environ, MPLBACKEND="Agg")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, "diagram", path, "-o", out, "--kind", kind, "--json"],
        capture_output=True, text=True, env=env,
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"calibcli diagram failed:\n{proc.stderr}")
    peak_kb = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("PEAK_KB"))
    return seconds, peak_kb / 1024


def run_relplot(y: np.ndarray, z: np.ndarray, out: str) -> float:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import relplot

    started = time.perf_counter()
    fig, _ = relplot.rel_diagram(z, y)  # default: 200 bootstrap resamples for the band
    fig.savefig(out)
    seconds = time.perf_counter() - started
    plt.close(fig)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100,000; no relplot run at 1e6")
    parser.add_argument("--repeat", type=int, default=2, help="runs per case (the best is reported)")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000

    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        print(f"1. calibcli diagram on a {n:,}-row Parquet file, default 200 resamples, PNG; best of {args.repeat}")
        header = f"{'model':<14} {'--kind':<7} {'seconds':>8} {'peak MiB':>9} {'load avg':>9}"
        print(header)
        print("-" * len(header))
        for model in ("calibrated", "overconfident"):
            y, z = make_data(model, n)
            path = os.path.join(tmp, f"{model}.parquet")
            pd.DataFrame({"label": y, "prob": z}).to_parquet(path)
            for kind in ("both", "binned", "smooth"):
                runs = [run_cli(path, os.path.join(tmp, "out.png"), kind) for _ in range(args.repeat)]
                seconds = min(r[0] for r in runs)
                peak = max(r[1] for r in runs)
                print(f"{model:<14} {kind:<7} {seconds:>8.2f} {peak:>9.0f} {os.getloadavg()[0]:>9.2f}")

        print()
        print("2. relplot 1.0.3 smooth diagram (rel_diagram, 200 bootstrap resamples, savefig PNG), in process")
        header = f"{'model':<14} {'n':>9} {'seconds':>8} {'load avg':>9}"
        print(header)
        print("-" * len(header))
        sizes = [100_000] if args.quick else [100_000, 1_000_000]
        for model in ("calibrated", "overconfident"):
            for size in sizes:
                y, z = make_data(model, size)
                seconds = run_relplot(y, z, os.path.join(tmp, "relplot.png"))
                print(f"{model:<14} {size:>9,} {seconds:>8.2f} {os.getloadavg()[0]:>9.2f}")


if __name__ == "__main__":
    main()
