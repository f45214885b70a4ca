"""Coverage of SmoothECE's 95% bootstrap percentile interval by simulation (SPEC 3), with its Monte Carlo error.

Data (``make_data``): ``calibrated`` (``z ~ U(0, 1)``, ``y ~ Bernoulli(z)``) and ``overconfident``
(``z ~ Beta(2, 2)``, ``y ~ Bernoulli(0.5 + 0.6 (z - 0.5))``); data set ``r`` is drawn from seed ``--seed + r`` and
its bootstrap from seed ``r``. The population's SmoothECE is computed on a fine grid of z weighted by its density
(each point once as y = 1 with weight ``p(z) c(z)``, once as y = 0 with ``p(z) (1 - c(z))``).

The SmoothECE of a finite sample is biased upwards (sampling noise adds |residual| mass; compare the mean estimate
with the population value), and the percentile interval inherits that bias: on calibrated data (population value 0)
it lies above 0, so it describes the sample's smECE and is not a test of calibration (``calibcli tcal`` is); on
miscalibrated data the bias can cost coverage (compare the coverage with 0.95 and its Monte Carlo error).

    python benchmarks/studies/smece_coverage.py                # 200 data sets of 2000 rows, 200 resamples
    python benchmarks/studies/smece_coverage.py --quick        # 30 of 1000, 100 resamples

Ported from ``bench_smece.py`` (its table 5; its speed tables are the asv suite's ``smooth`` module, its values
against relplot ``studies/peers.py``).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np


def make_data(kind: str, n: int, seed: int = 0):
    """Labels and predictions of a few typical kinds, seeded."""
    rng = np.random.default_rng(seed)
    if kind == "calibrated":
        z = rng.random(n)
        y = rng.random(n) < z
    elif kind == "overconfident":
        z = rng.beta(2.0, 2.0, n)
        y = rng.random(n) < 0.5 + 0.6 * (z - 0.5)
    elif kind == "ends":  # half the predictions exactly 0 or 1
        z = rng.random(n)
        end = rng.random(n) < 0.5
        z[end] = (rng.random(end.sum()) < 0.5).astype(float)
        p = np.where(end, np.where(z == 1.0, 0.9, 0.1), z)
        y = rng.random(n) < p
    elif kind == "badly-wrong":  # confident and almost always wrong
        y = rng.random(n) < 0.5
        z = np.where(y, rng.uniform(0.0, 0.2, n), rng.uniform(0.8, 1.0, n))
    else:
        raise KeyError(kind)
    return y.astype(np.int64), z


def population_smece(kind: str, grid: int = 20001) -> float:
    """SmoothECE of the population behind ``make_data(kind)`` (``calibrated`` or ``overconfident``)."""
    from scipy.stats import beta

    from calibcli.smooth.estimator import smooth_ece

    z = (np.arange(grid) + 0.5) / grid
    if kind == "calibrated":
        density, calibration = np.ones(grid), z
    elif kind == "overconfident":
        density, calibration = beta(2.0, 2.0).pdf(z), 0.5 + 0.6 * (z - 0.5)
    else:
        raise KeyError(kind)
    y = np.concatenate([np.ones(grid, dtype=np.int64), np.zeros(grid, dtype=np.int64)])
    w = np.concatenate([density * calibration, density * (1 - calibration)])
    return smooth_ece(y, np.concatenate([z, z]), sample_weight=w).smece


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="simulated data sets per kind")
    parser.add_argument("--seed", type=int, default=1000, help="data set r draws from seed + r")
    parser.add_argument("--n", type=int, default=2000, help="rows per data set")
    parser.add_argument("--n-boot", type=int, default=200, help="resamples per interval")
    parser.add_argument("--quick", action="store_true", help="30 data sets of 1000 rows, 100 resamples")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.n, args.n_boot = 30, 1000, 100
    from calibcli.smooth.estimator import smooth_ece

    print(
        f"Coverage of the 95% bootstrap interval of SmoothECE: {args.reps} data sets of n = {args.n} per kind, "
        f"{args.n_boot} resamples each, data seeds {args.seed} + r"
    )
    print(f"{'data':<14} {'population':>10} {'mean estimate':>13} {'coverage':>9} {'MC s.e.':>8}")
    started = time.perf_counter()
    for kind in ("overconfident", "calibrated"):
        truth = population_smece(kind)
        hits, estimates = 0, []
        for rep in range(args.reps):
            y, z = make_data(kind, args.n, seed=args.seed + rep)
            res = smooth_ece(y, z, n_boot=args.n_boot, rng=np.random.default_rng(rep))
            hits += res.ci_low <= truth <= res.ci_high
            estimates.append(res.smece)
        cover = hits / args.reps
        se = math.sqrt(cover * (1 - cover) / args.reps) if 0 < cover < 1 else math.sqrt(0.25 / args.reps)
        print(f"{kind:<14} {truth:>10.5f} {np.mean(estimates):>13.5f} {cover:>9.3f} {se:>8.3f}")
    print(
        f"(Monte Carlo s.e. = sqrt(c (1 - c) / reps), or its bound sqrt(0.25 / reps) at c = 0 or 1; "
        f"{time.perf_counter() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()
