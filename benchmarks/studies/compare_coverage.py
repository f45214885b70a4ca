"""``calibcli compare``: the paired interval's coverage by simulation (issue 13). Its speed against one file's
bootstrap is the asv suite's ``compare`` module (``compare.Bar``).

``--reps`` simulated test sets of ``--n`` examples from one population (``--seed``, default 20261123: the truth's draws, then every test set's): p ~ Beta(2, 2),
y ~ Bernoulli(p), model A ``clip(p + N(0, 0.05))`` and model B ``clip(A^1.15 + N(0, 0.01))`` (correlated, as two
versions of one model are). The "true" difference of each metric is its difference on ``--n-true`` examples
of the same population. For each simulated test set, intervals of the difference at 95% from ``--n-boot``
resamples: paired per row (all rows kept), paired from joint per-bin statistics (the row limit set below n,
as beyond 2^17 rows), and unpaired (independent seeds). Reported: coverage of the true difference with its
Monte Carlo standard error, and the median width. Plug-in ECE estimates are biased at finite n (they
overestimate), so their coverage of the population value falls short for every method; the Brier score and
log-loss are means of per-row terms and unbiased.

    python benchmarks/studies/compare_coverage.py                  # 200 test sets
    python benchmarks/studies/compare_coverage.py --reps 150 --n-true 2000000
    python benchmarks/studies/compare_coverage.py --quick          # small sizes
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np
import pandas as pd

METRICS = ("brier_score", "log_loss", "ece_l1_plugin", "ece_l2_sq_debiased_kumar")


def population(n: int, rng: np.random.Generator):
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(np.int64)
    za = np.clip(p + rng.normal(0, 0.05, n), 0, 1)
    zb = np.clip(za**1.15 + rng.normal(0, 0.01, n), 0, 1)
    return y, za, zb


def coverage(sims: int, n: int, n_true: int, n_boot: int, folder: str, seed: int = 20261123) -> None:
    from calibcli.compare.run import compare_streams
    from calibcli.ece_family import options as ece_options
    from calibcli.ece_family.accumulator import InputAccumulator
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    rng = np.random.default_rng(seed)
    y, za, zb = population(n_true, rng)
    truth = {}
    for name, z in (("a", za), ("b", zb)):
        acc = InputAccumulator(
            mode="binary", n_classes=2, class_names=("0", "1"), options=ece_options.Options.library(row_limit=1)
        )
        acc.update(np.arange(n_true), z, y)
        truth[name] = acc.result().headline()
    true_diff = {m: truth["b"][m].estimate - truth["a"][m].estimate for m in METRICS}
    methods = {
        "paired, per row": dict(row_limit=1 << 17, pairing="auto"),
        "paired, joint per-bin": dict(row_limit=max(1, n // 8), pairing="auto"),
        "unpaired": dict(row_limit=1 << 17, pairing="none"),
    }
    hits = {k: {m: 0 for m in METRICS} for k in methods}
    widths = {k: {m: [] for m in METRICS} for k in methods}
    t0 = time.perf_counter()
    for s in range(sims):
        y, za, zb = population(n, rng)
        paths = [os.path.join(folder, f"sim_{k}.parquet") for k in "ab"]
        pd.DataFrame({"prob": za, "label": y}).to_parquet(paths[0])
        pd.DataFrame({"prob": zb, "label": y}).to_parquet(paths[1])
        for name, how in methods.items():
            streams = [resolve_datasets([p])[0].open(ColumnSpec()) for p in paths]
            run = compare_streams(
                streams[0],
                streams[1],
                ece_options.Options.library(n_boot=n_boot, seed=s, row_limit=how["row_limit"]),
                mode_a="binary",
                pairing=how["pairing"],
            )
            for m in METRICS:
                c = run.comparison[m]
                hits[name][m] += c["ci_low"] <= true_diff[m] <= c["ci_high"]
                widths[name][m].append(c["ci_high"] - c["ci_low"])
    elapsed = time.perf_counter() - t0
    print(
        f"\ncoverage of the true difference by 95% intervals: {sims} simulated test sets of {n} examples, "
        f"{n_boot} resamples each, truth from {n_true} examples ({elapsed:.0f} s)"
    )
    se = math.sqrt(0.95 * 0.05 / sims)
    print(f"  Monte Carlo standard error of a coverage near 95%: {100 * se:.1f} points")
    print(f"  {'metric':26s} {'true diff':>10s}  " + "  ".join(f"{k:>30s}" for k in methods))
    for m in METRICS:
        cells = [f"{100 * hits[k][m] / sims:5.1f}% (width {np.median(widths[k][m]):.2e})" for k in methods]
        print(f"  {m:26s} {true_diff[m]:+10.5f}  " + "  ".join(f"{c:>30s}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", "--sims", dest="sims", type=int, default=200, help="simulated test sets")
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--n", type=int, default=4000, help="examples per test set")
    parser.add_argument("--n-true", type=int, default=4_000_000, help="examples of the truth's population sample")
    parser.add_argument("--n-boot", "--sim-boot", dest="sim_boot", type=int, default=200, help="resamples per interval")
    parser.add_argument("--quick", action="store_true", help="small sizes: 20 simulations")
    args = parser.parse_args()
    if args.quick:
        args.sims, args.n_true, args.sim_boot = 20, 200_000, 100
    with tempfile.TemporaryDirectory() as folder:
        coverage(args.sims, args.n, args.n_true, args.sim_boot, folder, args.seed)


if __name__ == "__main__":
    main()
