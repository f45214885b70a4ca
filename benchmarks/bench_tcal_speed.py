"""Wall time of the adaptive T-Cal test (``calibcli.tcal.tcal_test``).

Targets (from the issue): n = 10,000 with 3000 y-bootstrap resamples in under 2 s; n = 1,000,000
with 3000 resamples in under a minute, on the project's 2-core machine. The data are calibrated,
``z ~ Uniform(0, 1)``, ``y ~ Bernoulli(z)``; the times include validation, sorting, binning at all
L levels, the resampling and both combination rules. Other nulls are timed at n = 10,000 for
comparison. The machine is shared: the load average is printed next to the times.

Run: ``python benchmarks/bench_tcal_speed.py`` or ``--quick`` (n = 10,000 and 100,000 only).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from calibcli.tcal.procedure import tcal_test


def timed(n: int, R: int, null: str, seed: int = 0) -> tuple[float, object]:
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    y = (rng.random(n) < z).astype(np.int64)
    started = time.perf_counter()
    result = tcal_test(y, z, null=null, n_boot=R, rng=np.random.default_rng(seed + 1))
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10,000 and 100,000 only")
    args = parser.parse_args()
    cases = [(10_000, 3000, "y-bootstrap"), (10_000, 3000, "consistency"), (10_000, 0, "chebyshev"), (100_000, 3000, "y-bootstrap")]
    if not args.quick:
        cases.append((1_000_000, 3000, "y-bootstrap"))
    print(f"T-Cal adaptive test wall time ({os.cpu_count()} CPUs)")
    header = f"{'n':>9} {'R':>5} {'null':<12} {'L':>3} {'seconds':>8} {'p-value':>8} {'load avg':>9}"
    print(header)
    print("-" * len(header))
    for n, R, null in cases:
        seconds, result = timed(n, R, null)
        load = os.getloadavg()[0]
        print(f"{n:>9} {R:>5} {null:<12} {result.n_levels:>3} {seconds:>8.2f} {result.p_value:>8.4f} {load:>9.2f}")


if __name__ == "__main__":
    main()
