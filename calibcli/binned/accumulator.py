"""The binned family's accumulator: every SPEC 2 estimator of one binary problem, streamed (SPEC 8).

State, for rows of one binary problem (``u = y - z``, weights ``w``, one per row):

- per (bin, label) cell: the row count and the sums ``w``, ``w u``, ``w u^2``, ``w ll`` (ll the clipped
  log-loss), which give every point estimate; and, for the bootstrap from sufficient statistics, the
  higher moments ``w u^3``, ``w u^4``, ``w ll^2`` and the squared-weight sums ``w^2 u^k``, ``w^2 ll``,
  ``w^2 ll^2``. Cells are kept on the main bins (equal-width, or quantile bins whose edges were fixed by
  a first pass) and, for quantile bins, on the equal-width bins the dCE uses;
- the rows themselves while at most ``row_limit`` were seen (:class:`RowSample`); then the result is
  exactly :func:`calibcli.binned.estimators.binned_calibration` on them, with the per-row Poisson bootstrap
  keyed by global row index (quantile edges re-fitted on every resample, as SPEC 2.4 says);
- for quantile bins without edges, a quantile sketch of the predictions (exact values up to
  ``EXACT_QUANTILE_LIMIT``, then Apache DataSketches' KLL), from which a second pass takes its edges.

Beyond ``row_limit`` rows the bootstrap replicates are drawn from the cells (SPEC 8): with unit weights
a cell's resampled row count is exactly Poisson(count) and independent across cells, and given that
count the sums of ``u``, ``u^2`` are drawn from the normal law with the cell's per-row mean and
covariance (the central limit theorem for a sum of that many draws), the log-loss sum likewise; with
weights, the sums' exact Poisson-bootstrap means ``sum w x`` and covariances ``sum w^2 x x^T`` are used.
The pairs of copies of one row that the debiased estimators exclude are set to their expectation given
the resampled count. Bins stay where the first pass put them. ``benchmarks/studies/stream_coverage.py`` checks the
interval's coverage against the per-row bootstrap by simulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.binned.estimators import (
    CalibrationResult,
    _point_metrics,
    assemble_metrics,
    binned_calibration_groups,
    ece_l2_sq_sun_interval,
    summarise_replicates,
)
from calibcli.binned.stats import LOG_LOSS_EPS, BinStats
from calibcli.core import cancel
from calibcli.core.accumulator import Accumulator
from calibcli.core.arraystate import ArrayState
from calibcli.core.binning import Binning, fit_binning, uniform_bin_index
from calibcli.core.compensated import add_exact, bincount_exact_rows
from calibcli.core.errors import CalibcliError
from calibcli.core.family import Bootstrap
from calibcli.core.rows import ROW_LIMIT, RowSample
from calibcli.core.validation import BYTES_PER_RESAMPLE_CELL, check_allocation, check_options, memory_budget

#: 2: the cells' sums carry their low parts (:mod:`calibcli.core.compensated`).
STATE_VERSION = 2

#: Predictions kept exactly for quantile edges; beyond, a KLL sketch.
EXACT_QUANTILE_LIMIT = 1 << 24
#: KLL sketch size: normalised rank error about 0.17% (DataSketches' formula for k = 2000).
KLL_K = 2000

#: Columns of a cell's sums (each a sum over the cell's rows).
CELL_COLUMNS = ("w", "wu", "wu2", "wll", "wu3", "wu4", "wll2", "w2", "w2u", "w2u2", "w2u3", "w2u4", "w2ll", "w2ll2")
_C = {name: j for j, name in enumerate(CELL_COLUMNS)}


def _row_values(z: np.ndarray, y: np.ndarray, w: np.ndarray | None, moments: bool) -> dict[str, np.ndarray]:
    """Per-row quantities summed into the cells (the bootstrap's higher moments only when ``moments``)."""
    u = y - z
    # the probability given to the observed label is 1 - |y - z| (y in {0, 1}, z in [0, 1])
    ll = np.abs(u)
    np.subtract(1.0, ll, out=ll)
    np.clip(ll, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS, out=ll)
    np.log(ll, out=ll)
    np.negative(ll, out=ll)
    u2 = u * u
    values = {"wu": u, "wu2": u2, "wll": ll}
    if moments:
        values.update(wu3=u2 * u, wu4=u2 * u2, wll2=ll * ll)
    if w is None:
        return values
    out = {"w": w}
    for key, v in values.items():
        out[key] = w * v
    if moments:
        w2 = w * w
        out.update(
            w2=w2,
            w2u=w2 * u,
            w2u2=w2 * u2,
            w2u3=w2 * values["wu3"],
            w2u4=w2 * values["wu4"],
            w2ll=w2 * ll,
            w2ll2=w2 * values["wll2"],
        )
    return out


def _cell_index(bin_index: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The (bin, label) cell of every row, ``2 bin + y``, computed in place in the bin index."""
    bin_index <<= 1
    bin_index += y
    return bin_index


@dataclass(frozen=True)
class CellSums:
    """One batch's per (bin, label) cell counts and exact sums, made by a caller that has them already (compare's
    joint cells of two inputs, :mod:`calibcli.compare.paired_bootstrap`, whose marginals they are): ``count``
    (cells,) and, per column of :data:`CELL_COLUMNS` that the rows give, its pair ``(hi, lo)``
    (:mod:`calibcli.core.compensated`'s, the sum exact to far below its last bit)."""

    count: np.ndarray
    sums: dict[str, tuple[np.ndarray, np.ndarray]]


class _Cells(Accumulator):
    """Per (bin, label) counts and sums on a fixed binning.

    The sums are exact pairs (``sums``, ``sums_lo``: :mod:`calibcli.core.compensated`): a batch's sums are added
    once per batch, and ``sums`` is the same float however the batches were split among tasks and merged (the
    bootstrap's variances by cancellation and the within-bin Brier residual would show a change of order)."""

    merge_rules = {"count": "sum", "sums": "exact"}

    def __init__(self, n_bins: int):
        self.n_bins = n_bins
        self.count = np.zeros(2 * n_bins, dtype=np.int64)
        self.sums = np.zeros((len(CELL_COLUMNS), 2 * n_bins))
        self.sums_lo = np.zeros_like(self.sums)

    def add(self, cell: np.ndarray, values: dict[str, np.ndarray], weighted: bool) -> None:
        size = 2 * self.n_bins
        count = np.bincount(cell, minlength=size)
        self.count += count
        # the batch's sums exact too (bincount_exact_rows), so the state's are the same floats however the rows were
        # batched and ordered (the per-bin draws' within-bin Brier interval moved by 1e-11 relative with plain ones)
        rows = [_C[key] for key in values]
        batch, batch_lo = np.zeros_like(self.sums), np.zeros_like(self.sums)
        batch[rows], batch_lo[rows] = bincount_exact_rows(cell, np.stack(list(values.values())), count)
        add_exact(self.sums, self.sums_lo, batch, batch_lo)

    def add_sums(self, batch: CellSums) -> None:
        """Add a batch's cells summed by the caller (:class:`CellSums`): the same state as :meth:`add` of its rows."""
        self.count += batch.count
        rows = [_C[key] for key in batch.sums]
        sums, sums_lo = np.zeros_like(self.sums), np.zeros_like(self.sums)
        sums[rows] = [hi for hi, _ in batch.sums.values()]
        sums_lo[rows] = [lo for _, lo in batch.sums.values()]
        add_exact(self.sums, self.sums_lo, sums, sums_lo)

    def completed(self, weighted: bool) -> np.ndarray:
        """The sums with the unit-weight columns filled in (``w = 1``: ``w^2 x = w x``, ``sum w = count``)."""
        s = self.sums.copy()
        if not weighted:
            s[_C["w"]] = self.count
            for a, b in (
                ("w2", "w"),
                ("w2u", "wu"),
                ("w2u2", "wu2"),
                ("w2u3", "wu3"),
                ("w2u4", "wu4"),
                ("w2ll", "wll"),
                ("w2ll2", "wll2"),
            ):
                s[_C[a]] = s[_C[b]]
        return s

    def bin_stats(self, weighted: bool) -> BinStats:
        s = self.completed(weighted).reshape(len(CELL_COLUMNS), self.n_bins, 2)
        count = self.count.reshape(self.n_bins, 2)
        w, wu = s[_C["w"]], s[_C["wu"]]
        # z = y - u: sum w z = sum_{y=1} w - sum w u
        return BinStats(
            count.sum(axis=1),
            w.sum(axis=1),
            w[:, 1] - wu.sum(axis=1),
            w[:, 1].copy(),
            s[_C["wu2"]].sum(axis=1),
            s[_C["wll"]].sum(axis=1),
        )


class QuantileSketch(ArrayState):
    """Predictions for quantile edges: exact while at most ``EXACT_QUANTILE_LIMIT``, then a KLL sketch."""

    _kll: Any  # a datasketches kll_doubles_sketch, made once the values are too many (None until then)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        if self._kll is not None:  # (DataSketches' sketches do not pickle: their own bytes travel)
            state["_kll"] = bytes(self._kll.serialize())
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if self._kll is not None:
            from datasketches import kll_doubles_sketch

            self._kll = kll_doubles_sketch.deserialize(self._kll)

    def __init__(self, exact_limit: int = EXACT_QUANTILE_LIMIT):
        self.exact_limit = exact_limit
        self.n = 0
        self._values: list[np.ndarray] = []
        self._kll = None

    def update(self, z: np.ndarray) -> None:
        self.n += len(z)
        if self._kll is None and self.n <= self.exact_limit:
            self._values.append(np.array(z, dtype=np.float64))
            return
        kll = self._sketch()
        kll.update(np.ascontiguousarray(z, dtype=np.float64))

    def _sketch(self):
        if self._kll is None:
            try:
                from datasketches import kll_doubles_sketch
            except ImportError:
                raise CalibcliError(
                    f"quantile bins over more than {self.exact_limit} predictions need a quantile sketch: "
                    f'pip install "calibcli[stream]" (Apache DataSketches), or use {{opt:strategy}} uniform'
                ) from None
            self._kll = kll_doubles_sketch(KLL_K)
            for part in self._values:
                self._kll.update(part)
            self._values = []
        return self._kll

    def merge(self, other: QuantileSketch) -> None:
        self.n += other.n
        if self._kll is None and other._kll is None and self.n <= self.exact_limit:
            self._values.extend(other._values)
            return
        kll = self._sketch()
        if other._kll is not None:
            kll.merge(other._kll)
        for part in other._values:
            kll.update(part)

    @property
    def exact(self) -> bool:
        return self._kll is None

    def rank_error(self) -> float:
        return 0.0 if self._kll is None else float(self._kll.normalized_rank_error(False))

    def binning(self, n_bins: int) -> Binning:
        """SPEC 2.1's quantile edges: exact from the values, or from the sketch's quantiles."""
        if self._kll is None:
            return fit_binning(
                np.concatenate(self._values) if self._values else np.empty(0), n_bins=n_bins, strategy="quantile"
            )
        ranks = np.round(np.arange(1, n_bins) * self.n / n_bins)
        ranks = ranks[(ranks > 0) & (ranks < self.n)]
        lower = np.asarray(self._kll.get_quantiles(((ranks - 0.5) / self.n).tolist()))
        upper = np.asarray(self._kll.get_quantiles(((ranks + 0.5) / self.n).tolist()))
        return Binning("quantile", n_bins, np.unique(0.5 * (lower + upper)))


class BinnedAccumulator(Accumulator):
    """Streamed binned calibration of one binary problem (see the module docstring).

    ``edges``: the interior quantile edges fixed by a first pass (quantile strategy over more than
    ``row_limit`` rows); None otherwise. ``seed`` keys the row sample (it keeps every row or none).
    """

    kind = "binned"
    state_name = "binned accumulator state"
    version = STATE_VERSION

    def __init__(
        self,
        *,
        n_bins: int = 15,
        strategy: str = "uniform",
        edges: np.ndarray | None = None,
        row_limit: int = ROW_LIMIT,
        binning_note: str | None = None,
        moments: bool = True,
    ):
        check_options(n_bins=n_bins)  # within range and the memory budget, before the cells are allocated
        self.binning: Binning | None
        if strategy == "uniform":
            self.binning = fit_binning(np.empty(0), n_bins=n_bins, strategy="uniform")
        elif edges is not None:
            self.binning = Binning("quantile", n_bins, np.asarray(edges, dtype=np.float64))
        else:
            self.binning = None  # quantile bins not known yet: rows and a sketch only
        self.n_bins = n_bins
        self.strategy = strategy
        self.binning_note = binning_note
        self.rows = RowSample(row_limit, 0, keep_when_full=False)
        self.cells: _Cells | None = None if self.binning is None else _Cells(self.binning.n_bins_effective)
        self.uniform_cells = _Cells(n_bins) if strategy == "quantile" else None
        self.sketch: QuantileSketch | None = QuantileSketch() if self.binning is None else None
        self.weighted = False
        self.moments = moments  # the higher moments the per-bin bootstrap needs (off: point estimates only)

    # -- streaming -------------------------------------------------------------------------------

    def update(
        self,
        row_index: np.ndarray,
        z: np.ndarray,
        y: np.ndarray,
        w: np.ndarray | None = None,
        cells: tuple[CellSums | None, CellSums | None] = (None, None),
    ) -> BinnedAccumulator:
        """Add rows. ``cells``: the sums of these rows' main and equal-width cells where the caller has them
        (:class:`CellSums`, the columns :meth:`row_columns` names; None: summed here)."""
        if len(z) == 0:
            return self
        self.weighted |= w is not None
        self.rows.update(row_index, z, y, w)
        main, uniform = cells
        for given in (main, uniform):
            assert given is None or tuple(given.sums) == self.row_columns(w is not None), "other columns"
        summed_here = (self.cells is not None and main is None) or (self.uniform_cells is not None and uniform is None)
        values = _row_values(z, y, w, self.moments) if summed_here else {}
        if self.cells is not None and self.binning is not None:  # (cells exist once the bins are known)
            if main is not None:
                self.cells.add_sums(main)
            else:
                self.cells.add(_cell_index(self.binning.assign(z), y), values, w is not None)
        if self.uniform_cells is not None:
            if uniform is not None:
                self.uniform_cells.add_sums(uniform)
            else:
                self.uniform_cells.add(_cell_index(uniform_bin_index(z, self.n_bins), y), values, w is not None)
        if self.sketch is not None:
            self.sketch.update(z)
        return self

    def row_columns(self, weighted: bool) -> tuple[str, ...]:
        """The columns of :data:`CELL_COLUMNS` that rows (with weights or not) sum into the cells, in
        :func:`_row_values`' order (the others follow from them: :meth:`_Cells.completed`)."""
        empty = np.empty(0)
        return tuple(_row_values(empty, empty, empty if weighted else None, self.moments))

    merge_rules = {"weighted": "max", "rows": "merge", "cells": "merge", "uniform_cells": "merge", "sketch": "merge"}

    def merge(self, other: BinnedAccumulator) -> BinnedAccumulator:
        if (other.n_bins, other.strategy, other.moments) != (self.n_bins, self.strategy, self.moments) or (
            (self.binning is None) != (other.binning is None)
            or (
                self.binning is not None
                and other.binning is not None
                and not np.array_equal(self.binning.edges, other.binning.edges)
            )
        ):
            raise ValueError("binned accumulators with different bins cannot be merged")
        return super().merge(other)

    @property
    def n_rows(self) -> int:
        return self.rows.n_seen

    @property
    def needs_edges(self) -> bool:
        """Quantile bins over more rows than are kept: a second pass with :meth:`fitted_edges` is needed."""
        return self.binning is None and self.rows.dropped

    def fitted_edges(self) -> tuple[np.ndarray, str]:
        """Quantile edges for a second pass, and how they were found (exact, or the sketch's rank error)."""
        assert self.sketch is not None  # (kept while the quantile bins are not known)
        binning = self.sketch.binning(self.n_bins)
        how = (
            "exact quantiles of all predictions"
            if self.sketch.exact
            else f"KLL sketch (Apache DataSketches, k={KLL_K}), normalised rank error {self.sketch.rank_error():.2g}"
        )
        return binning.edges, how

    # -- state -----------------------------------------------------------------------------------

    # -- result ----------------------------------------------------------------------------------

    def result(
        self, *, n_boot: int = 0, alpha: float = 0.05, seed: int = 0, keep_replicates: bool = False, progress=None
    ) -> CalibrationResult:
        """Every SPEC 2 estimator with bootstrap intervals (see the module docstring for which bootstrap): the one
        accumulator case of :meth:`results`; ``progress()`` is called once per finished resample."""
        steps = None if progress is None else lambda n: [progress() for _ in range(n)]
        boot = Bootstrap(n_boot=n_boot, alpha=alpha, seed=seed)
        return self.results([self], boot, keep_replicates=keep_replicates, progress=steps)[0]

    @classmethod
    def results(
        cls, accs: list, boot: Bootstrap, *, keep_replicates: bool = False, progress=None, on_chunks=None
    ) -> list[CalibrationResult]:
        """:meth:`result` of many accumulators of the same options (the groups of an input) at once, with the
        bootstrap ``boot`` (resamples, level, seed: the family's options): those that hold their rows through
        :func:`calibcli.binned.estimators.binned_calibration_groups` (one ``(G, R, bins)`` bootstrap, every
        estimator called once per chunk of groups), those beyond their row limit from their cells.
        ``progress(steps)`` is told the (group, resample) pairs finished."""
        out: list = [None] * len(accs)
        held = [j for j, acc in enumerate(accs) if acc.rows.n_seen and not acc.rows.dropped]
        if held:
            first = accs[held[0]]
            groups = [(y, z, w, row) for row, z, y, w in (accs[j].rows.arrays() for j in held)]
            done = binned_calibration_groups(
                groups,
                boot,
                n_bins=first.n_bins,
                strategy=first.strategy,
                keep_replicates=keep_replicates,
                progress=progress,
                on_chunks=on_chunks,
            )
            for j, r in zip(held, done, strict=True):
                out[j] = r
        for j, acc in enumerate(accs):  # beyond the row limit (at most one group per ROW_LIMIT rows), or empty
            if out[j] is None:
                one = None if progress is None else lambda: progress(1)
                out[j] = acc._result_from_cells(boot, keep_replicates=keep_replicates, progress=one)
        return out

    def _result_from_cells(self, boot: Bootstrap, *, keep_replicates, progress) -> CalibrationResult:
        n_boot, alpha, seed = boot.n_boot, boot.alpha, boot.seed
        if self.rows.n_seen == 0:
            raise CalibcliError("no rows to evaluate: expected at least one prediction")
        if self.binning is None:
            raise ValueError("quantile bins over this many rows need their edges from a first pass (see needs_edges)")
        assert self.cells is not None  # (with its bins)
        main = self.cells.bin_stats(self.weighted)
        uniform = main if self.uniform_cells is None else self.uniform_cells.bin_stats(self.weighted)
        point = _point_metrics(main, uniform)
        sun = ece_l2_sq_sun_interval(main, alpha=alpha)
        ci, replicates, draws_main = {}, None, None
        if n_boot > 0:
            if not self.moments:
                raise ValueError("bootstrap from per-bin statistics needs an accumulator built with moments=True")
            _check_cell_bootstrap(
                n_boot, len(self.cells.count) + (0 if self.uniform_cells is None else len(self.uniform_cells.count))
            )
            rng = np.random.Generator(
                np.random.Philox(key=[int(seed) & 0xFFFFFFFFFFFFFFFF, 0x62696E6E6564])
            )  # "binned"
            draws_main = _cell_replicates(self.cells, self.weighted, n_boot, rng)
            draws_uniform = (
                draws_main
                if self.uniform_cells is None
                else _cell_replicates(self.uniform_cells, self.weighted, n_boot, rng)
            )
            ci, replicates = summarise_replicates(
                (draws_main, draws_uniform), list(point), alpha, keep_replicates=keep_replicates, progress=progress
            )
        W = float(main.weight.sum())
        method = (
            f"Poisson bootstrap from per-bin sufficient statistics, {n_boot} resamples, bins fixed" if n_boot else None
        )
        metrics = assemble_metrics(point, ci, method, sun, W, alpha, self.n_bins)
        return CalibrationResult(
            n=int(main.count.sum()),
            weight_total=W,
            n_bins=self.n_bins,
            strategy=self.strategy,
            n_bins_nonempty=main.n_nonempty,
            bin_bounds=self.binning.bounds(),
            bin_stats=main,
            metrics=metrics,
            alpha=alpha,
            n_boot=n_boot,
            replicates=replicates,
            bin_replicates=draws_main if keep_replicates else None,
        )


def _check_cell_bootstrap(n_boot: int, n_cells: int) -> None:
    """The bootstrap from per-bin statistics holds every replicate of every cell at once: refuse (naming
    ``n_boot``, with the largest count that fits) before drawing, when that exceeds the memory budget."""
    per_resample = n_cells * BYTES_PER_RESAMPLE_CELL
    check_allocation(
        "n_boot",
        n_boot,
        float(n_boot) * per_resample,
        f"the bootstrap of {n_cells} (bin, label) cells from per-bin statistics",
        most=max(memory_budget() // per_resample, 0),
        hint=", or fewer {opt:n_bins}",
    )


def _cell_replicates(cells: _Cells, weighted: bool, n_boot: int, rng: np.random.Generator) -> BinStats:
    """``n_boot`` bootstrap replicates of the per-bin statistics, drawn from the cells' moments, as one
    :class:`BinStats` of shape ``(n_boot, bins)``."""
    s = cells.completed(weighted)
    count = cells.count.astype(np.float64)
    n_cells = len(count)
    label = np.tile([0.0, 1.0], cells.n_bins)
    c_star = rng.poisson(count, size=(n_boot, n_cells)).astype(np.float64)
    safe = np.maximum(count, 1.0)
    if weighted:
        # (sum w, sum w u, sum w u^2) ~ N(mean, sum w^2 x x^T), per cell
        mean = np.stack([s[_C["w"]], s[_C["wu"]], s[_C["wu2"]]], axis=-1)
        cov = np.stack(
            [
                np.stack([s[_C["w2"]], s[_C["w2u"]], s[_C["w2u2"]]], -1),
                np.stack([s[_C["w2u"]], s[_C["w2u2"]], s[_C["w2u3"]]], -1),
                np.stack([s[_C["w2u2"]], s[_C["w2u3"]], s[_C["w2u4"]]], -1),
            ],
            -2,
        )
        scale = np.ones((n_boot, n_cells))
    else:
        # given the resampled count c*, the sums of (u, u^2) over c* draws from the cell: c* mean, c* cov
        mu = np.stack([s[_C["wu"]], s[_C["wu2"]]], -1) / safe[:, None]
        m3, m4 = s[_C["wu3"]] / safe, s[_C["wu4"]] / safe
        var_u = mu[:, 1] - mu[:, 0] ** 2
        cov_uu2 = m3 - mu[:, 0] * mu[:, 1]
        var_u2 = m4 - mu[:, 1] ** 2
        mean = np.concatenate([np.ones((n_cells, 1)), mu], axis=1)  # per row: (1, u, u^2)
        cov = np.zeros((n_cells, 3, 3))
        cov[:, 1, 1], cov[:, 1, 2], cov[:, 2, 1], cov[:, 2, 2] = var_u, cov_uu2, cov_uu2, var_u2
        scale = c_star
    chol = _psd_cholesky(cov)
    noise = rng.standard_normal((n_boot, n_cells, 3))
    sums = scale[..., None] * mean[None] + np.sqrt(scale)[..., None] * np.einsum("cij,rcj->rci", chol, noise)
    W, U, Q = sums[..., 0], sums[..., 1], sums[..., 2]
    if weighted:
        W = np.where(c_star > 0, np.maximum(W, 0.0), 0.0)
    else:
        W = c_star
    # keep each sum inside what its rows allow: u in [label - 1, label], u^2 in [0, 1]
    lo_u, hi_u = (label - 1.0) * W, label * W
    U = np.clip(U, lo_u, hi_u)
    Q = np.clip(Q, 0.0, W)
    Q = np.maximum(Q, np.divide(U * U, W, out=np.zeros_like(U), where=W > 0))
    # log-loss sum: regression on the weight sum, with the residual variance of the cell
    ll_mean = s[_C["wll"]] / np.maximum(s[_C["w"]], 1e-300)
    ll_var = np.maximum(s[_C["w2ll2"]] - 2 * ll_mean * s[_C["w2ll"]] + ll_mean**2 * s[_C["w2"]], 0.0)
    if not weighted:
        ll_var = ll_var / safe * c_star  # per-row variance times the resampled count
    L = np.maximum(W * ll_mean + np.sqrt(ll_var) * rng.standard_normal((n_boot, n_cells)), 0.0)
    # pairs of copies of one row: E[sum m^2 | c*] = c* (1 + (c* - 1)/c) for c rows resampled c* times
    factor = 1.0 + np.maximum(c_star - 1.0, 0.0) / safe
    ratio_w = np.divide(s[_C["w2"]], s[_C["w"]], out=np.ones(n_cells), where=s[_C["w"]] > 0)
    ratio_u2 = np.divide(s[_C["w2u2"]], s[_C["wu2"]], out=np.ones(n_cells), where=s[_C["wu2"]] > 0)
    # every replicate at once: (R, bins, label) arrays, summed over the label axis
    cancel.check()  # a signal stops the bootstrap here (also in a worker thread)
    B = cells.n_bins
    w_r, u_r, q_r, l_r, f_r, c_r = (a.reshape(n_boot, B, 2) for a in (W, U, Q, L, factor, c_star))
    self_pairs = f_r * w_r * ratio_w.reshape(B, 2)
    return BinStats(
        np.rint(c_r.sum(axis=-1)).astype(np.int64),
        w_r.sum(axis=-1),
        w_r[..., 1] - u_r.sum(axis=-1),
        w_r[..., 1],
        q_r.sum(axis=-1),
        l_r.sum(axis=-1),
        self_weight=self_pairs.sum(axis=-1),
        self_y=self_pairs[..., 1],
        self_u2=(f_r * q_r * ratio_u2.reshape(B, 2)).sum(axis=-1),
    )


def _psd_cholesky(cov: np.ndarray) -> np.ndarray:
    """A square root ``L`` with ``L L^T = cov`` for stacked positive semi-definite 3x3 matrices."""
    vals, vecs = np.linalg.eigh(cov)
    return vecs * np.sqrt(np.maximum(vals, 0.0))[:, None, :]
