"""Type I error of the T-Cal test on calibrated data (SPEC 4.2; seed 004, 8.3.3).

For every null (y-bootstrap, consistency, chebyshev) and combination rule (bonferroni, min-p),
the rejection rate at alpha = 0.05 of the adaptive test on calibrated synthetic data:
``z ~ Uniform(0, 1)`` or the skewed ``z = u^3``, ``y ~ Bernoulli(z)``, n = 500, 2000, 10000.

Design. ``G`` independent draws of the predictions z; for each, ``M`` independent label vectors
(so ``G x M`` seeded repetitions, each a complete test). The ``R`` resamples of a test depend on z
only, so the M tests of one z share them: every test is exactly the test ``tcal_test`` runs (same
statistic, same p-values), only the resampling work is shared. The Monte Carlo standard error is
the cluster one, ``sd(per-z rejection rates) / sqrt(G)``, which accounts for that sharing.
R is the smallest count with which Bonferroni can reject at all (``ceil(L/alpha) - 1``), and at
least 199. A rate above ``alpha + 2 SE`` is flagged.

Run: ``python benchmarks/studies/tcal_validity.py`` (full: G = 100, M = 10, i.e. 1000 tests per cell)
or ``--quick`` (G = 10, M = 10).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from calibcli.tcal.combine import monte_carlo_combine
from calibcli.tcal.engine import resample_all
from calibcli.tcal.procedure import make_engine
from calibcli.tcal.scales import chebyshev_constant, n_levels

ALPHA = 0.05
DISTRIBUTIONS = {"uniform": lambda u: u, "u^3 (skewed)": lambda u: u**3}


def run_cell(dist: str, n: int, G: int, M: int, seed: int) -> dict:
    L = n_levels(n)
    R = max(199, math.ceil(L / ALPHA) - 1)
    n_bins_list = [2**b for b in range(1, L + 1)]
    C = np.array([chebyshev_constant(n, m) for m in n_bins_list])
    rejections = {
        key: np.zeros(G)
        for key in (
            "y-bootstrap/bonferroni",
            "y-bootstrap/min-p",
            "consistency/bonferroni",
            "consistency/min-p",
            "chebyshev/bonferroni",
        )
    }
    for g in range(G):
        rng = np.random.default_rng([seed, n, g, list(DISTRIBUTIONS).index(dist)])
        z = np.sort(DISTRIBUTIONS[dist](rng.random(n)))
        Y = (rng.random((M, n)) < z).astype(np.float64)
        engine = make_engine("binary", 2, Y[0], z, None, n_bins_list)
        level_of = np.asarray(engine.level_of)
        observed = engine.statistics_of(Y)  # M x distinct partitions
        for null in ("y-bootstrap", "consistency"):
            star = resample_all(engine, rng, R, null)
            for i in range(M):
                mc = monte_carlo_combine(observed[i], star, level_of, ALPHA)
                rejections[f"{null}/bonferroni"][g] += mc.counts.min() <= mc.threshold_bonferroni
                rejections[f"{null}/min-p"][g] += mc.counts.min() <= mc.threshold_min_p
        T = observed[:, level_of]
        rejections["chebyshev/bonferroni"][g] = np.sum(np.any(T >= C / math.sqrt(ALPHA / L), axis=1))
    return {key: (value / M, R, L) for key, value in rejections.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 x 10 tests per cell instead of 100 x 10")
    parser.add_argument(
        "--reps", type=int, default=100, help="draws of the predictions z per cell (G), M = 10 label vectors each"
    )
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    G, M = (10, 10) if args.quick else (args.reps, 10)
    sizes = (500, 2000, 10000)
    print(
        f"T-Cal type I error at alpha = {ALPHA}: adaptive test, calibrated data, {G} x {M} = {G * M} tests per cell, seed {args.seed}"
    )
    print("rate = rejection rate; se = cluster Monte Carlo standard error; FLAG when rate > alpha + 2 se")
    print()
    header = f"{'z distribution':<14} {'n':>6} {'L':>3} {'R':>4}  {'null/combine':<24} {'rate':>7} {'se':>7}  flag"
    print(header)
    print("-" * len(header))
    flagged = 0
    started = time.perf_counter()
    for dist in DISTRIBUTIONS:
        for n in sizes:
            cell = run_cell(dist, n, G, M, args.seed)
            for key, (rates, R, L) in cell.items():
                rate = float(rates.mean())
                se = float(rates.std(ddof=1) / math.sqrt(G))
                flag = "FLAG" if rate > ALPHA + 2 * se else ""
                flagged += bool(flag)
                r_shown = "-" if key.startswith("chebyshev") else str(R)
                print(f"{dist:<14} {n:>6} {L:>3} {r_shown:>4}  {key:<24} {rate:>7.4f} {se:>7.4f}  {flag}")
    print()
    print(f"flagged cells: {flagged}; wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
