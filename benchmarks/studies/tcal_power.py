"""Power of T-Cal against the oscillating alternative of seed 004, section 4.1 (eq. 10, Figure 3(b)).

``z ~ Uniform(0, 1)``, ``y ~ Bernoulli(g_m(z))`` with
``g_m(z) = z + rho m^(-s) sum_{j=0}^{m-1} (-1)^j zeta(2 m z - m/2 - j)`` and
``zeta(x) = exp(-1 / (x (1 - x)))`` on (0, 1): m bumps of alternating sign and width 1/(2m) on
[1/4, 3/4]. Its l2-ECE is ``rho m^(-s) ||zeta||_2 / sqrt(2)`` (``||zeta||_2 = 0.0098482``); here
``s = 0.3`` and ``rho = 25.5``, so that g stays in [0, 1] (the largest bump, 0.2503 at m = 8, sits where z > 0.28; nothing is clipped) and
the l2-ECE runs over 0.034 to 0.095 as m goes from 256 down to 8, the range of Figure 3(b).

Tests compared, all at alpha = 0.05, all calibrated by the same kind of y-bootstrap (R resamples):
- T-Cal adaptive (Algorithm 2), Bonferroni over its L levels, and min-p over the same resamples;
- T-Cal single scale with the known s (``m* = floor(n^(2/(4s+1)))`` bins, Algorithm 1);
- the plug-in l1-ECE with a fixed 15 equal-width bins (``sum_b |sum_{i in b} (y_i - z_i)| / n``).

Design: G independent draws of z, M label vectors per draw and per m; the R null resamples depend
on z only, so they are shared by the tests on one z (each test is the complete test). Type II error
= 1 - rejection rate; standard errors are cluster ones over the G draws of z.

Run: ``python benchmarks/studies/tcal_power.py`` (G = 60, M = 5: 300 tests per cell) or ``--quick``
(G = 8, M = 5, n = 2000 and 10000 only).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from calibcli.tcal.combine import monte_carlo_combine
from calibcli.tcal.engine import resample_all
from calibcli.tcal.procedure import make_engine
from calibcli.tcal.scales import n_levels, optimal_n_bins

ALPHA = 0.05
S = 0.3
RHO = 25.5
ZETA_L2 = 0.009848179605021675
M_VALUES = (8, 16, 32, 64, 128, 256)


def zeta(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    inside = (x > 0) & (x < 1)
    xi = x[inside]
    out[inside] = np.exp(-1.0 / (xi * (1.0 - xi)))
    return out


def g_m(z: np.ndarray, m: int) -> np.ndarray:
    """Eq. (10): only the bump j = floor(2 m z - m/2) can be non-zero at z."""
    t = 2 * m * z - m / 2
    j = np.floor(t)
    valid = (j >= 0) & (j <= m - 1)
    sign = np.where(j % 2 == 0, 1.0, -1.0)
    bump = np.where(valid, sign * zeta(t - j), 0.0)
    return np.clip(z + RHO * m ** (-S) * bump, 0.0, 1.0)


def l2_ece(m: int) -> float:
    return RHO * m ** (-S) * ZETA_L2 / math.sqrt(2)


def l1_ece_15(U: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """Plug-in l1-ECE with 15 equal-width bins for every row of residuals U (rows x n)."""
    rows, n = U.shape
    keys = (np.arange(rows)[:, None] * 15 + bins[None, :]).ravel()
    sums = np.bincount(keys, weights=U.ravel(), minlength=rows * 15).reshape(rows, 15)
    return np.abs(sums).sum(axis=1) / n


def run_size(n: int, G: int, M: int, seed: int) -> dict:
    L = n_levels(n)
    R = 999  # enough for min-p to differ from Bonferroni (with R = L/alpha - 1 both thresholds are one count)
    adaptive_bins = [2**b for b in range(1, L + 1)]
    m_star = optimal_n_bins(n, S)
    hits = {
        (m, test): np.zeros(G)
        for m in M_VALUES
        for test in ("adaptive/bonferroni", "adaptive/min-p", "single m*", "l1-ECE 15 bins")
    }
    for g in range(G):
        rng = np.random.default_rng([seed, n, g])
        z = np.sort(rng.random(n))
        bins15 = np.minimum(np.floor(z * 15), 14).astype(np.int64)
        adaptive = make_engine("binary", 2, np.zeros(n), z, None, adaptive_bins)
        single = make_engine("binary", 2, np.zeros(n), z, None, [m_star])
        star_adaptive = resample_all(adaptive, rng, R, "y-bootstrap")
        star_single = resample_all(single, rng, R, "y-bootstrap")
        star_l1 = l1_ece_15((rng.random((R, n)) < z) - z, bins15)
        level_of = np.asarray(adaptive.level_of)
        for m in M_VALUES:
            Y = (rng.random((M, n)) < g_m(z, m)).astype(np.float64)
            D = Y - z
            obs_adaptive = adaptive.statistics_of(Y)
            obs_single = single.statistics_of(Y)[:, 0]
            obs_l1 = l1_ece_15(D, bins15)
            for i in range(M):
                mc = monte_carlo_combine(obs_adaptive[i], star_adaptive, level_of, ALPHA)
                hits[(m, "adaptive/bonferroni")][g] += mc.counts.min() <= mc.threshold_bonferroni
                hits[(m, "adaptive/min-p")][g] += mc.counts.min() <= mc.threshold_min_p
                single_p = (1 + np.sum(star_single[:, 0] >= obs_single[i])) / (R + 1)
                hits[(m, "single m*")][g] += single_p <= ALPHA
                l1_p = (1 + np.sum(star_l1 >= obs_l1[i])) / (R + 1)
                hits[(m, "l1-ECE 15 bins")][g] += l1_p <= ALPHA
    return {"hits": {k: v / M for k, v in hits.items()}, "R": R, "L": L, "m_star": m_star}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 x 5 tests per cell, n = 2000 and 10000")
    parser.add_argument(
        "--reps", type=int, default=60, help="draws of the predictions z per cell (G), M = 5 label vectors each"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    G, M = (8, 5) if args.quick else (args.reps, 5)
    sizes = (2000, 10000) if args.quick else (2000, 5000, 10000)
    tests = ("adaptive/bonferroni", "adaptive/min-p", "single m*", "l1-ECE 15 bins")
    print(f"T-Cal power, oscillating alternative of seed 004 eq. (10) (s = {S}, rho = {RHO}), alpha = {ALPHA}")
    print(f"{G} x {M} = {G * M} tests per cell, seed {args.seed}; entries: type II error (cluster standard error)")
    started = time.perf_counter()
    for n in sizes:
        res = run_size(n, G, M, args.seed)
        print()
        print(
            f"n = {n}: L = {res['L']} levels, m* = {res['m_star']} bins (s = {S}), R = {res['R']} y-bootstrap resamples"
        )
        header = f"{'m':>4} {'l2-ECE':>7}  " + "  ".join(f"{t:>20}" for t in tests)
        print(header)
        print("-" * len(header))
        for m in M_VALUES:
            cells = []
            for t in tests:
                rates = res["hits"][(m, t)]
                cells.append(f"{1 - rates.mean():>11.3f} ({rates.std(ddof=1) / math.sqrt(G):.3f})")
            print(f"{m:>4} {l2_ece(m):>7.4f}  " + "  ".join(f"{c:>20}" for c in cells))
    print()
    print(f"wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
