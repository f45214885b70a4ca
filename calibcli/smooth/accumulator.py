"""SmoothECE and the smooth reliability curve of one binary problem, streamed (SPEC 3 and 8).

The state is small and adds exactly:

- :class:`calibcli.smooth.estimator.CellSums` on a grid of ``n_cells`` cells (default ``STATS_GRID`` = 2^17):
  per non-empty ``(label, cell)`` the row count and the sums of ``w``, ``w f``, ``w f^2``, ``w f^3``
  and ``w^2`` (f the position in the cell; ``w`` and ``w^2`` left out for unit weights). Grid
  measures of the residual, of ``w y`` and of ``w`` on this grid or any coarser one follow exactly, and
  so does SmoothECE at any bandwidth the grid resolves (at least ``MIN_CELLS_PER_SIGMA`` = 8 cells:
  ``sigma >= 2^-14`` on the default grid, SPEC 8's first pass). At most ``2 n_cells`` entries (10 MB
  on the default grid with unit weights, 15 MB with weights), whatever the number of rows.
- A :class:`calibcli.core.rows.RowSample` of the rows while at most ``row_limit`` were seen
  (dropped beyond): with them, :meth:`SmoothAccumulator.result` resamples rows exactly (the Poisson
  bootstrap keyed by ``(seed, global row index)``) and may use grids finer than ``n_cells``.

Second pass. Without the rows, a fixed point ``s*`` (or a given sigma) below 8 cells of the grid
cannot be resolved at SPEC 3's accuracy: the result then has ``needs_finer_grid`` set and names the
grid in ``finer_grid``; stream the data again into ``SmoothAccumulator(n_cells=result.finer_grid)``
(:meth:`SmoothAccumulator.for_grid`). :func:`calibcli.smooth.estimator.smooth_ece` does exactly this with rows
in memory, so the library and a streamed run give the same numbers.

Results do not depend on batch sizes, order, or which worker saw which rows beyond float rounding
(sums per batch in a fixed order, added in any order): the estimate, s* and the interval agree to
1e-12 relative, and the bootstrap draws are functions of the seed and of the merged state only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibcli.core.accumulator import Accumulator
from calibcli.core.errors import CalibcliError
from calibcli.core.family import Bootstrap
from calibcli.core.rows import RowSample
from calibcli.core.validation import check_consistent_length, check_finite, check_labels, check_probabilities
from calibcli.smooth.estimator import SmoothECEResult, finish_groups
from calibcli.smooth.grid import (
    CURVE_POINTS,
    DENSE_MAX_CELLS,
    MAX_GRID,
    MIN_GRID,
    ROW_LIMIT,
    STATS_GRID,
    CellSums,
    DenseSums,
)

STATE_VERSION = 1

#: Batches' sums are added to the state once this many entries are waiting (or at a result / merge).
_PENDING_ENTRIES = 1 << 16


class SmoothAccumulator(Accumulator):
    """Streamed SmoothECE of one binary problem (see the module docstring).

    ``row_limit``: rows kept for the exact per-row bootstrap; ``seed``: the default bootstrap seed of
    :meth:`result` (and the row sample's key); ``want_curve``: :meth:`result` also gives the smooth
    reliability diagram's data (``result.curve``); ``n_cells``: the grid of the sums (a power of two,
    ``MIN_GRID`` to ``MAX_GRID``).
    """

    kind = "smooth"
    state_name = "smooth accumulator state"

    def __init__(
        self, *, row_limit: int = ROW_LIMIT, seed: int = 0, want_curve: bool = False, n_cells: int = STATS_GRID
    ):
        n_cells = int(n_cells)
        if not (MIN_GRID <= n_cells <= MAX_GRID and n_cells & (n_cells - 1) == 0):
            raise ValueError(f"n_cells is {n_cells}: expected a power of two from {MIN_GRID} to {MAX_GRID}")
        self.n_cells = n_cells
        self.row_limit = int(row_limit)
        self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.want_curve = bool(want_curve)
        self.rows = RowSample(self.row_limit, self.seed, keep_when_full=False)
        self._sums = CellSums.empty(n_cells)
        self._pending: list[CellSums] = []
        self._dense = DenseSums(n_cells) if n_cells <= DENSE_MAX_CELLS else None

    def for_grid(self, n_cells: int) -> SmoothAccumulator:
        """An empty accumulator with these options on a grid of ``n_cells`` cells (for a second pass)."""
        return SmoothAccumulator(row_limit=self.row_limit, seed=self.seed, want_curve=self.want_curve, n_cells=n_cells)

    # -- streaming -------------------------------------------------------------------------------

    def update(self, row_index, z, y, w=None) -> SmoothAccumulator:
        """Add a batch: global row indices (int64), predictions in [0, 1], labels 0/1, weights >= 0 or None."""
        row_index = np.asarray(row_index, dtype=np.int64).reshape(-1)
        if len(row_index) == 0 and len(z) == 0 and len(y) == 0:
            return self
        check_consistent_length(row_index, z, y, w, names=("row_index", "predictions", "labels", "sample_weight"))
        z = check_probabilities(np.asarray(z, dtype=np.float64).reshape(-1), name="prediction")
        y = check_labels(np.asarray(y).reshape(-1), n_classes=2)
        if w is not None:
            w = np.asarray(w, dtype=np.float64).reshape(-1)
            check_finite(w, name="sample weight")
            if (w < 0).any():
                raise CalibcliError(f"sample weight at row {int(np.argmax(w < 0))} is negative: expected weights >= 0")
        if self.rows.n_seen + len(z) <= self.row_limit:  # kept: copies, so a caller may reuse its buffers
            row_index, z, y = row_index.copy(), z.copy(), y.copy()
            w = None if w is None else w.copy()
        self.rows.update(row_index, z, y, w)
        if self._dense is not None:  # a grid small enough to sum densely: no sorting, no growing buffers
            self._dense.add_rows(z, y, w)
            return self
        self._pending.append(CellSums.of_rows(z, y, w, self.n_cells))
        if sum(len(p) for p in self._pending) > max(_PENDING_ENTRIES, len(self._sums)):
            self._flush()
        return self

    def merge(self, other: SmoothAccumulator) -> SmoothAccumulator:
        """Add the state of another accumulator of disjoint rows (same grid, row limit and seed)."""
        if (other.n_cells, other.row_limit, other.seed) != (self.n_cells, self.row_limit, self.seed):
            raise ValueError("smooth accumulators with different grids, row limits or seeds cannot be merged")
        self.rows.merge(other.rows)
        self._pending.append(other.sums)
        self.want_curve |= other.want_curve
        self._flush()
        return self

    def _flush(self) -> None:
        if self._dense is not None and self._dense.rows:
            self._pending.append(self._dense.take())
        if self._pending:
            self._sums = CellSums.combine([self._sums, *self._pending], self.n_cells)
            self._pending = []

    @property
    def sums(self) -> CellSums:
        """The per-(label, cell) sums of every row seen."""
        self._flush()
        return self._sums

    @property
    def n_rows(self) -> int:
        return self.rows.n_seen

    @property
    def rows_kept(self) -> bool:
        """The rows are at hand: the exact per-row bootstrap and any grid are available."""
        return not self.rows.dropped and self.rows.complete

    @property
    def nbytes(self) -> int:
        """Memory of the sums (the kept rows come on top: at most ``row_limit`` rows of 24 to 32 bytes)."""
        return self.sums.nbytes

    # -- state -----------------------------------------------------------------------------------

    # -- result ----------------------------------------------------------------------------------

    @classmethod
    def results(
        cls, accs: list, boot: Bootstrap, *, sigma: float | None = None, curve_points: int | None = None, progress=None
    ) -> list:
        """:meth:`result` of many accumulators (the groups of an input) at once, with the bootstrap ``boot``
        (resamples, level, seed: the family's options; :func:`calibcli.smooth.estimator.finish_groups`: their
        bootstraps together); ``curve_points`` as :meth:`result` takes it (default: ``CURVE_POINTS`` if the first
        wants a curve); ``progress(steps)``."""
        for acc in accs:
            if acc.rows.n_seen == 0:
                raise CalibcliError("no rows to evaluate: expected at least one prediction")
        first = accs[0]
        if curve_points is None and first.want_curve:
            curve_points = CURVE_POINTS
        problems = [(acc.sums, acc.rows.arrays() if acc.rows_kept else None, acc.rows.n_seen) for acc in accs]
        return finish_groups(problems, boot, sigma=sigma, curve_points=curve_points, progress=progress)

    def result(
        self,
        *,
        sigma: float | None = None,
        n_boot: int = 0,
        alpha: float = 0.05,
        seed: int | None = None,
        curve_points: int | None = None,
        progress: Callable[[], None] | None = None,
    ) -> SmoothECEResult:
        """SmoothECE (fixed point s*, or ``smECE_sigma``) with a Poisson-bootstrap interval (SPEC 3, 8).

        ``seed`` (default: the accumulator's) keys the resamples: over rows while they are kept
        (``ci_method`` "Poisson bootstrap over rows"), from the per-cell sums beyond ("... from
        per-cell sufficient statistics"). With ``curve_points`` (or ``want_curve``: ``CURVE_POINTS``)
        ``result.curve`` holds the smooth reliability diagram's data with its bootstrap band. Check
        ``result.needs_finer_grid``: see the module docstring.
        """
        each = None if progress is None else lambda steps=1: [progress() for _ in range(steps)]
        boot = Bootstrap(n_boot=n_boot, alpha=alpha, seed=self.seed if seed is None else int(seed) & 0xFFFFFFFFFFFFFFFF)
        return type(self).results([self], boot, sigma=sigma, curve_points=curve_points, progress=each)[0]
