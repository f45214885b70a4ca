"""Size and power of the segment audit's grid form (SPEC 9, "Streams"), against the exact audit of the same rows.

Beyond ``ROW_LIMIT`` rows the audit sums every segment on ``GRID_CELLS`` score cells in a second pass and reads
ECCE-R at the cells' edges only, so its ECCE-R is at most the exact one (and at least the exact one minus twice
the stated ``ecce_bound``). With sigma the same, the grid's p-values are never smaller: whenever the grid form
rejects, the exact form does too. This script measures what that costs: the rejection rate of MCE at alpha =
0.05 (Bonferroni over the tested segments, the default) under calibration (size) and with one segment shifted
(power), for both forms on the same draws.

How coarse the grid is, for a segment, is its share of rows per cell, 1 / cells when scores spread evenly over
the cells, whatever the rows: at the real 65,536 cells a segment's walk is read at 65,536 points. Here the
cells are made far coarser (64 to 4,096 cells) on 4,000 rows, so that the loss shows at all.

Data, seed ``1000 + r`` for repetition r: ``s ~ Beta(2, 5)``, a column ``country`` uniform on 4 values,
``y ~ Bernoulli(s)`` (size) or ``Bernoulli(s + 0.05 [country = br])`` (power); ``--min-segment 50``.
Monte Carlo standard errors: ``sqrt(p (1 - p) / reps)``; the difference of the two forms is paired (the same
draws), so its error is smaller (the grid's rejections are a subset of the exact form's, a property checked on
every repetition here).

Run: ``python benchmarks/studies/audit_grid_validity.py`` (2,000 repetitions under calibration, 1,000 under the
shift, for 4,096, 256 and 64 cells; about 2 minutes) or ``--quick``.

Measured 2026-11-28 (4,000 rows):

=======  ==========  ================  ===============  ==========================
cells    rows/cell   size exact/grid   power exact/grid  grid rejects, exact not
=======  ==========  ================  ===============  ==========================
4,096    ~1          0.035 / 0.035     0.835 / 0.834     0
256      ~16         0.035 / 0.030     0.835 / 0.825     0
64       ~62         0.035 / 0.023     0.835 / 0.814     0
=======  ==========  ================  ===============  ==========================

(size: 2,000 repetitions, SE 0.004; power: 1,000 repetitions, SE 0.012.) The grid form is conservative and its
power loss is a point or two even at 64 cells, a thousand times coarser than the real grid.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pyarrow as pa

import calibcli.audit.grid as segment_grid
from calibcli.audit.accumulator import SegmentAuditAccumulator
from calibcli.audit.options import Options
from calibcli.io.columns import segment_values

ALPHA = 0.05
COUNTRIES = np.array(["de", "fr", "br", "us"], dtype=object)


def audit(s: np.ndarray, y: np.ndarray, country: np.ndarray, *, grid: bool) -> dict:
    """The audit of one draw by ``country``, exact or (a row limit below the rows) on the grid."""
    acc = SegmentAuditAccumulator(
        mode="binary",
        n_classes=2,
        class_names=("0", "1"),
        options=Options(segment_cols="country", min_segment=50),
        row_limit=100 if grid else 10**9,
    )
    columns = (segment_values(pa.chunked_array([country]), "str", "country", "f", 0),)
    index, probs = np.arange(len(s)), np.c_[1 - s, s]
    acc.update(index, probs, y, columns=columns)
    if acc.needs_second_pass():
        acc = acc.for_second_pass()
        acc.update(index, probs, y, columns=columns)
    return acc.result().to_dict()


def draw(r: int, n: int, shift: float, seed: int = 1000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + r)
    s = rng.beta(2.0, 5.0, n)
    country = COUNTRIES[rng.integers(0, len(COUNTRIES), n)]
    y = (rng.uniform(size=n) < np.clip(s + shift * (country == "br"), 0.0, 1.0)).astype(np.int64)
    return s, y, country


def rates(cells: int, n: int, reps: int, shift: float, seed: int = 1000) -> tuple[float, float, int]:
    """Rejection rates (exact, grid) of MCE at ALPHA over ``reps`` draws, and how often the grid rejected where
    the exact form did not."""
    segment_grid.GRID_CELLS = cells
    exact = grid = grid_only = 0
    for r in range(reps):
        s, y, country = draw(r, n, shift, seed)
        e = audit(s, y, country, grid=False)["mce_pvalue"] <= ALPHA
        g = audit(s, y, country, grid=True)["mce_pvalue"] <= ALPHA
        exact, grid, grid_only = exact + e, grid + g, grid_only + (g and not e)
    return exact / reps, grid / reps, grid_only


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 repetitions per cell")
    parser.add_argument("--reps", type=int, default=2000, help="repetitions under calibration (half as many shifted)")
    parser.add_argument("--seed", type=int, default=1000, help="repetition r draws from seed + r")
    parser.add_argument("--rows", type=int, default=4000)
    args = parser.parse_args()
    null_reps, alt_reps = (200, 200) if args.quick else (args.reps, max(1, args.reps // 2))
    print(
        f"segment audit, grid form against exact: {args.rows} rows, MCE at alpha {ALPHA}, Bonferroni, "
        f"seeds {args.seed} + r"
    )
    print(
        f"{'cells':>6} {'rows/cell':>9}  {'size exact':>10} {'size grid':>9}  {'power exact':>11} {'power grid':>10}"
        f"  {'grid-only rejections':>20}"
    )
    for cells in (4096, 256, 64):
        t = time.perf_counter()
        size_e, size_g, only_null = rates(cells, args.rows, null_reps, 0.0, args.seed)
        power_e, power_g, only_alt = rates(cells, args.rows, alt_reps, 0.05, args.seed)
        print(
            f"{cells:>6} {args.rows / cells:>9.1f}  {size_e:>10.3f} {size_g:>9.3f}  {power_e:>11.3f} {power_g:>10.3f}"
            f"  {only_null + only_alt:>20}   ({time.perf_counter() - t:.0f} s)"
        )
    se_size = math.sqrt(ALPHA * (1 - ALPHA) / null_reps)
    print(
        f"Monte Carlo SE: size about {se_size:.3f} ({null_reps} repetitions), power at most "
        f"{math.sqrt(0.25 / alt_reps):.3f} ({alt_reps})"
    )


if __name__ == "__main__":
    main()
