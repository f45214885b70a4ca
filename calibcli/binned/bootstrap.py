"""The per-row Poisson bootstrap of the binned estimators: per-bin sums of resampled rows, for one binary
problem or for many groups of rows at once (SPEC 2.4 and 8; issue "every replicate and every group at once").

A resample is given by row multiplicities ``m_ir`` (:class:`calibcli.core.resampling.Multiplicities`, a function
of ``(seed, replicate, global row)``); a bin's sums under it are ``sum_i m_ir X_i`` over the bin's rows.
Rows sorted by z (by group, then z) make every bin a contiguous run:

- :class:`_SortedProblem`: one problem; each run's sums one BLAS product for a block of replicates, and
  quantile bins re-fitted on every resample (SPEC 2.1 on the resample's sorted values);
- :class:`SortedGroups`: G groups, whose ``(G, R, bins)`` statistics the estimators reduce in one call. Past
  ``_COMPILED_DRAWS`` draws (rows x replicates) every (group, bin) run's sums under every replicate come from one
  compiled loop over the rows (:meth:`calibcli.core.resampling.Multiplicities.run_sums`: each draw made and used in
  registers, each run's terms added row after row from zero), and groups of quantile bins re-fit their edges on
  every resample in another (:meth:`calibcli.core.resampling.Multiplicities.quantile_sums`). A smaller bootstrap (an
  ungrouped run's) uses NumPy's draws: one sparse product per block (the ``(runs x statistics, rows)`` matrix of
  the rows' statistics times the ``(rows, replicates)`` multiplicities: the same sums, in the same order) and each
  group's :class:`_SortedProblem` for quantile bins.
"""

from __future__ import annotations

import numpy as np

from calibcli.binned.stats import _N_STATS, _W, _WLL, _WU2, _WY, _WZ, BinStats, _row_stats
from calibcli.core.binning import Binning, quantile_starts_batched, uniform_bin_index
from calibcli.core.resampling import (
    THREADS,
    Multiplicities,
    Scratch,
    compiled_pays,
    in_threads,
    replicate_spans,
)

# ---------------------------------------------------------------------------------------------
# Bootstrap through multiplicities and per-bin sums


#: Above this many runs of rows the per-row bootstrap sums run with one ``reduceat`` rather than a product per run.
_LOOP_RUNS = 4096

#: Multiply-adds of one matrix product that OpenBLAS keeps on one thread (its threshold is 4 x 65536).
_ONE_THREAD_PRODUCT = 1 << 18

#: Multiplicities (replicates x rows) held at once by the per-row bootstrap (2 MB arrays, which stay in the
#: caches: four times larger ran slower); fixes speed and memory, never the numbers.
_BLOCK_ELEMENTS = 1 << 18


class _SortedProblem:
    """A binary problem sorted by z once, so that every bin is a contiguous run of rows.

    A resample is given by row multiplicities ``m`` (in sorted order); the sums of any statistic
    over a bin are then one product ``m[run] @ X[run]``, which costs O(n) per resample in total and
    never materialises the resampled data. ``m`` may be ``(R, n)``: R resamples at once, each run's
    sums one matrix product ``M[:, run] @ X[run]`` for all of them, and the statistics ``(R, bins)``.
    """

    def __init__(self, y, z, w, binning: Binning, n_uniform: int):
        self.order = np.argsort(z, kind="stable")
        self.z = z[self.order]
        stats = _row_stats(y[self.order].astype(np.float64), self.z, w[self.order])
        ws = w[self.order]
        # (n, 6) in row-major order so that a run's sums are one BLAS product; column 0 counts rows
        self.X = np.ascontiguousarray(np.vstack([np.ones(len(self.z)), stats]).T)
        # Pairs between copies of one original row: m (m - 1) times w^2, w^2 y, w^2 u^2. With unit
        # weights these are columns of X itself (count, y, u^2).
        self.unit_weights = bool(np.all(ws == 1.0))
        self.X_self = (
            np.ascontiguousarray(self.X[:, [0, 1 + _WY, 1 + _WU2]])
            if self.unit_weights
            else (np.ascontiguousarray(np.vstack([ws * ws, ws * stats[_WY], ws * stats[_WU2]]).T))
        )
        self.binning = binning
        self.n_uniform = n_uniform
        # Equal-width bins never move under resampling: their runs are fixed once.
        self.uniform_starts = np.searchsorted(uniform_bin_index(self.z, n_uniform), np.arange(n_uniform))
        if binning.strategy == "uniform":
            self.main_starts = np.searchsorted(uniform_bin_index(self.z, binning.n_bins), np.arange(binning.n_bins))

    def block_size(self) -> int:
        """Resamples per block of :meth:`resampled` that keep its arrays within ``_BLOCK_ELEMENTS`` values."""
        return max(1, _BLOCK_ELEMENTS // max(len(self.z), 1))

    def _run_sums(self, M: np.ndarray, pairs: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sums ``(R, runs, 6)`` of ``M X`` and ``(R, runs, 3)`` of ``pairs X_self`` over the runs of rows
        beginning at ``starts`` (increasing; a run may be empty)."""
        n, R = len(self.z), M.shape[0]
        bounds = np.append(starts, n)
        sums = np.zeros((R, len(starts), _N_STATS + 1))
        dup = np.zeros((R, len(starts), 3))
        if len(starts) <= _LOOP_RUNS:
            for j, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
                # OpenBLAS runs a product of more than 2^18 multiply-adds on several threads, which on a
                # shared machine costs far more than it saves: products below that stay on one thread.
                step = max(1, _ONE_THREAD_PRODUCT // (8 * (b - a))) if b > a else R
                for r in range(0, R, step):
                    sums[r : r + step, j] = M[r : r + step, a:b] @ self.X[a:b]
                    dup[r : r + step, j] = pairs[r : r + step, a:b] @ self.X_self[a:b]
            return sums, dup
        # many runs (most of them empty when there are more bins than rows): one reduceat over the non-empty ones
        nonempty = np.flatnonzero(bounds[:-1] < bounds[1:])
        first = bounds[nonempty]  # increasing; each run ends where the next non-empty one starts
        if len(first):
            sums[:, nonempty] = np.add.reduceat(M[:, :, None] * self.X[None], first, axis=1)
            dup[:, nonempty] = np.add.reduceat(pairs[:, :, None] * self.X_self[None], first, axis=1)
        return sums, dup

    @staticmethod
    def _stats(sums: np.ndarray, dup: np.ndarray) -> BinStats:
        """:class:`BinStats` of bin sums ``(..., bins, 6)`` and self-pair sums ``(..., bins, 3)``."""
        return _bin_stats(np.moveaxis(sums, -1, 0), np.moveaxis(dup, -1, 0))

    def _quantile_sums(self, M: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bin sums on each resample's own quantile bins (SPEC 2.1's edges of its sorted values, z[i]
        repeated M[r, i] times), ``(R, n_bins)`` with the bins that ties merged away left empty at the end.

        Every resample's bins are runs of the sorted rows: the runs between any two consecutive starts of
        any resample in the block ("segments") are summed once for the whole block, and each resample's
        bin is the sum of its segments (one ``reduceat``)."""
        R, n, B = M.shape[0], len(self.z), self.binning.n_bins
        starts = quantile_starts_batched(self.z, B, M)
        segments = np.unique(starts[starts < n])
        seg_sums, seg_dup = self._run_sums(M, pairs, segments)
        S = len(segments)
        nxt = np.append(starts[:, 1:], np.full((R, 1), n), axis=1)
        live = starts < nxt  # bins holding at least one row (the rest stay zero)
        offsets = (np.searchsorted(segments, starts) + S * np.arange(R)[:, None])[live]
        sums = np.zeros((R, B, _N_STATS + 1))
        dup = np.zeros((R, B, 3))
        sums[live] = np.add.reduceat(seg_sums.reshape(R * S, -1), offsets, axis=0)
        dup[live] = np.add.reduceat(seg_dup.reshape(R * S, -1), offsets, axis=0)
        return sums, dup

    def resampled(self, m: np.ndarray) -> tuple[BinStats, BinStats]:
        """Statistics (main bins, equal-width bins) of the resample where sorted row i appears m[i] times;
        ``m`` of shape ``(R, n)`` gives R resamples at once (statistics of shape ``(R, bins)``)."""
        M = np.atleast_2d(m)
        pairs = M - 1.0
        pairs *= M
        if self.binning.strategy == "uniform":
            main = self._stats(*self._run_sums(M, pairs, self.main_starts))
            uniform = (
                main
                if self.n_uniform == self.binning.n_bins
                else self._stats(*self._run_sums(M, pairs, self.uniform_starts))
            )
        else:
            main = self._stats(*self._quantile_sums(M, pairs))
            uniform = self._stats(*self._run_sums(M, pairs, self.uniform_starts))
        if np.ndim(m) == 1:
            main, uniform = (BinStats(*(a[0] for a in s._arrays())) for s in (main, uniform))
        return main, uniform


#: Rows of one block of :class:`SortedGroups` (whole groups; a larger group is a block alone): with
#: ``_BLOCK_ELEMENTS`` multiplicities per block, 128 replicates at a time. The sparse product's cost per
#: multiplicity falls with the replicates it takes at once (0.2 ns per value at 32, 0.14 at 128: its inner loop
#: runs over them) while the draws' does not depend on the shape, so blocks are a few groups wide, not many.
_GROUP_BLOCK_ROWS = 1 << 11
#: The same for quantile bins, whose per-group sums are BLAS products of replicates x rows (:meth:`_SortedProblem.
#: _quantile_sums`): the replicates per block fix those products' shapes, hence OpenBLAS's order of summation (any
#: order agrees within 1e-12 relative; the same shapes print the same numbers from run to run).
_QUANTILE_BLOCK_ROWS = 1 << 13


#: Draws (rows x replicates) from which the bootstrap over groups runs its compiled loop
#: (:func:`calibcli.core.poisson.poisson_run_sums`) rather than sparse products of NumPy's draws: the loop takes a
#: third of their time per draw, but its first call in a process imports Numba and loads its machine code (0.4 s),
#: which pays off from about 1.5e8 draws on. The two are one step's two backends, the same draws and products
#: (each run's terms added row after row from zero), tested against each other within 1e-12 relative (SPEC 8.1).
#: An ungrouped run holds at most 2^17 rows (``accumulators.binned.ROW_LIMIT``): with 1000 resamples it stays
#: below, and never loads Numba, unless the run's inputs together reach it (:func:`calibcli.core.resampling.
#: planning_rows`: many inputs, Numba's load paid once for all).
_COMPILED_DRAWS = 1 << 27


def _run_matrix(cell: np.ndarray, n_cells: int, columns: list[tuple[np.ndarray, int]], width: int):
    """The CSR matrix ``(len(columns) * n_cells, width)`` whose row ``k n_cells + c`` holds ``columns[k]``'s values
    on the rows of run ``c`` (``cell`` non-decreasing, runs contiguous), at the columns ``offset + row`` given by
    ``columns[k] = (values, offset)``: its product with multiplicities (rows x R; the self-pair counts below them
    for ``offset`` = rows) gives every run's sums under every replicate.

    Zero values are left out: a run's sums then take the same products in the same order (rows ascending,
    starting from zero), less some ``+ 0.0`` that change nothing (every term is >= 0)."""
    from scipy.sparse import csr_matrix  # scipy only for the bootstrap over groups

    n = len(cell)
    at = np.arange(n)
    rows, indices, data = [], [], []
    for k, (values, offset) in enumerate(columns):
        keep = np.flatnonzero(values)
        rows.append(k * n_cells + cell[keep])
        indices.append(offset + at[keep])
        data.append(values[keep])
    row = np.concatenate(rows)  # non-decreasing: columns in turn, each in the order of its runs
    indptr = np.zeros(len(columns) * n_cells + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=len(columns) * n_cells), out=indptr[1:])
    return csr_matrix(
        (np.concatenate(data), np.concatenate(indices).astype(np.int64), indptr), shape=(len(columns) * n_cells, width)
    )


class SortedGroups:
    """The rows of G groups (one binary problem each), sorted by group and z once (see the module docstring).

    ``groups`` holds each group's ``(y, z, w, row_index)`` (validated; ``w`` all ones for unit weights);
    ``binnings`` each group's fitted bins (quantile or uniform), ``n_uniform`` the equal-width bins of the dCE.
    The order within a group is that of :class:`_SortedProblem` (a stable sort by z), so a group's
    resamples are the same numbers it gets alone.
    """

    def __init__(self, groups: list, binnings: list[Binning], n_uniform: int):
        sizes = np.array([len(g[1]) for g in groups], dtype=np.int64)
        self.G = len(groups)
        self.bounds = np.concatenate([[0], np.cumsum(sizes)])
        code = np.repeat(np.arange(self.G), sizes)
        # each group's rows in the order of a stable sort by z (what np.lexsort((z, code)) gives, in a sort per group)
        order = np.concatenate(
            [np.argsort(np.asarray(g[1], dtype=np.float64), kind="stable") for g in groups] or [np.empty(0, np.int64)]
        )
        order += np.repeat(self.bounds[:-1], sizes)
        self.z = np.concatenate([np.asarray(g[1], dtype=np.float64) for g in groups])[order]
        y = np.concatenate([np.asarray(g[0]) for g in groups])[order].astype(np.float64)
        w = np.concatenate([np.asarray(g[2], dtype=np.float64) for g in groups])[order]
        self.row_index = np.concatenate([np.asarray(g[3], dtype=np.int64) for g in groups])[order]
        stats = _row_stats(y, self.z, w)
        # With unit weights the weight sums are the counts (the same products of the same ones): taken once.
        self.unit_weights = bool(np.all(w == 1.0))
        #: the statistics summed (0: the count, 1 + j: row j of _row_stats), and their per-row values (rows, K)
        self._sums = [j for j in range(_N_STATS + 1) if not (self.unit_weights and j == 1 + _W)]
        self.X = np.empty((len(self.z), len(self._sums)))
        self.X[:, 0] = 1.0
        self.X[:, 1:] = stats[[j - 1 for j in self._sums[1:]]].T
        # pairs between copies of one row: w^2, w^2 y, w^2 u^2 (with unit weights: count, y, u^2)
        self.X_self = np.empty((len(self.z), 3))
        np.multiply(w, w, out=self.X_self[:, 0])
        np.multiply(w, stats[_WY], out=self.X_self[:, 1])
        np.multiply(w, stats[_WU2], out=self.X_self[:, 2])
        self.binnings = binnings
        self.n_uniform = n_uniform
        self.quantile = binnings[0].strategy == "quantile"
        self.n_main = binnings[0].n_bins
        self.uniform_cell = code * n_uniform + uniform_bin_index(self.z, n_uniform)
        self.main_cell = (
            self.uniform_cell
            if n_uniform == self.n_main
            else code * self.n_main + uniform_bin_index(self.z, self.n_main)
        )
        self._problems: list[_SortedProblem] = []
        if self.quantile:  # each group's own resampled quantile bins (SPEC 2.1 on every resample)
            self._problems = [
                _SortedProblem(
                    np.asarray(g[0]),
                    np.asarray(g[1], dtype=np.float64),
                    np.asarray(g[2], dtype=np.float64),
                    b,
                    n_uniform,
                )
                for g, b in zip(groups, binnings, strict=True)
            ]

    def chunks(self, max_groups: int) -> list[tuple[int, int]]:
        """Consecutive ranges ``(g0, g1)`` of at most ``max_groups`` groups."""
        step = max(1, int(max_groups))
        return [(g0, min(g0 + step, self.G)) for g0 in range(0, self.G, step)]

    def _blocks(self, g0: int, g1: int) -> list[tuple[int, int]]:
        """Groups ``g0..g1`` cut into runs of whole groups of at most ``_GROUP_BLOCK_ROWS`` rows
        (``_QUANTILE_BLOCK_ROWS`` for quantile bins)."""
        out, first = [], g0
        limit = _QUANTILE_BLOCK_ROWS if self.quantile else _GROUP_BLOCK_ROWS
        for g in range(g0 + 1, g1 + 1):
            if g == g1 or self.bounds[g + 1] - self.bounds[first] > limit:
                out.append((first, g))
                first = g
        return out

    def resampled(self, g0: int, g1: int, seed: int, n_boot: int) -> tuple[BinStats, BinStats | None]:
        """Statistics ``(G', n_boot, bins)`` (main bins, equal-width bins; None when those are the main bins) of
        groups ``g0..g1`` under replicates ``0..n_boot-1``.

        The blocks of groups are independent (each writes its own groups' statistics), so they run on
        :data:`calibcli.core.resampling.THREADS` threads (:func:`calibcli.core.resampling.in_threads`); fewer
        blocks than threads (one input's one group: each task of an LLM dump) share out their replicates instead
        (the compiled loop's sums of a replicate do not depend on the others, so the numbers are the same)."""
        Gc = g1 - g0
        separate = self.quantile or self.n_uniform != self.n_main
        main = np.zeros((_N_STATS + 1, Gc, n_boot, self.n_main))
        main_dup = np.zeros((3, Gc, n_boot, self.n_main))
        uni = np.zeros((_N_STATS + 1, Gc, n_boot, self.n_uniform)) if separate else main
        uni_dup = np.zeros((3, Gc, n_boot, self.n_uniform)) if separate else main_dup
        out = {"main": (main, main_dup), "uniform": (uni, uni_dup)}
        blocks = self._blocks(g0, g1)
        spans = [(0, n_boot)]
        if len(blocks) < THREADS and not self.quantile and compiled_pays(self.bounds[-1], n_boot, _COMPILED_DRAWS):
            spans = replicate_spans(n_boot)  # one block (an input's one group): its replicates shared out
        jobs = [(b0, b1, r0, r1) for b0, b1 in blocks for r0, r1 in spans]
        in_threads(lambda b0, b1, r0, r1: self._resample_block(b0, b1, g0, seed, n_boot, out, (r0, r1)), jobs)
        if self.unit_weights:  # the weights of the products' bins (quantile bins' own come with their sums)
            for sums in ([] if self.quantile else [main]) + ([uni] if separate else []):
                sums[1 + _W] = sums[0]
        return _bin_stats(main, main_dup), _bin_stats(uni, uni_dup) if separate else None

    def _resample_block(
        self, b0: int, b1: int, g0: int, seed: int, n_boot: int, out: dict, span: tuple[int, int] | None = None
    ) -> None:
        """The statistics of groups ``b0..b1`` (one block) under every replicate, into ``out`` (their own slices);
        ``span = (r0, r1)``: only replicates ``r0..r1`` (the compiled loop's; equal-width bins).

        Equal-width bins: every (group, bin) run's sums under a block of replicates are one compiled loop over the
        rows (:meth:`calibcli.core.resampling.Multiplicities.run_sums`: each run's terms added in the order of its rows,
        from zero, what the sums row after row give), or for a small bootstrap (below ``_COMPILED_DRAWS``) sparse
        products adding the same terms in the same order (:meth:`_product_block`). Quantile bins: each group's own
        resampled edges (:meth:`_quantile_block`)."""
        a, b = self.bounds[b0], self.bounds[b1]
        Gb = b1 - b0
        separate = self.quantile or self.n_uniform != self.n_main
        rows = Multiplicities(seed, self.row_index[a:b])
        cells = {"uniform": (self.uniform_cell[a:b] - b0 * self.n_uniform, self.n_uniform)}
        if not self.quantile:
            cells["main"] = (self.main_cell[a:b] - b0 * self.n_main, self.n_main)
        if not separate:
            del cells["uniform"]
        X, X_self = self.X[a:b], self.X_self[a:b]
        K = len(self._sums)
        gs = slice(b0 - g0, b1 - g0)
        if compiled_pays(self.bounds[-1], n_boot, _COMPILED_DRAWS):
            # replicates per call: the cells' sums (cells x statistics x R) within _BLOCK_ELEMENTS x 8 values
            widest = Gb * max(nb for _, nb in cells.values()) * (K + 3)
            first, last = (0, n_boot) if span is None else span
            step = min(max(1, 8 * _BLOCK_ELEMENTS // max(widest, 1)), n_boot)
            for r0 in range(first, last, step):
                R = min(step, last - r0)
                for key, (c, nb) in cells.items():
                    sums, dup = np.zeros((Gb * nb, K, R)), np.zeros((Gb * nb, 3, R))
                    rows.run_sums(np.arange(r0, r0 + R), c, X, X_self, sums, dup)
                    s_out, d_out = out[key]
                    s_out[self._sums, gs, r0 : r0 + R] = sums.reshape(Gb, nb, K, R).transpose(2, 0, 3, 1)
                    d_out[:, gs, r0 : r0 + R] = dup.reshape(Gb, nb, 3, R).transpose(2, 0, 3, 1)
        else:
            assert span is None or span == (0, n_boot), "replicates are shared out by the compiled loop only"
            self._product_block(rows, cells, X, X_self, gs, n_boot, out)
        if self.quantile:
            self._quantile_block(b0, b1, g0, rows, n_boot, out["main"])

    def _product_block(
        self, rows: Multiplicities, cells: dict, X: np.ndarray, X_self: np.ndarray, gs: slice, n_boot: int, out: dict
    ) -> None:
        """:meth:`_resample_block`'s equal-width sums without the compiled loop (a small bootstrap): the
        multiplicities of a block of replicates (NumPy's draws) times the sparse matrix of the runs' values."""
        n, K, Gb = len(X), len(self._sums), gs.stop - gs.start
        # each product reads the multiplicities (rows) stacked over their self-pair counts m (m - 1) (rows)
        columns = [(X[:, k], 0) for k in range(K)] + [(X_self[:, j], n) for j in range(3)]
        mats = {key: (_run_matrix(c, Gb * nb, columns, 2 * n), nb) for key, (c, nb) in cells.items()}
        # replicates per block: the multiplicities (rows x R) and the products (runs x statistics x R) in the caches
        runs = Gb * sum(nb for _, nb in cells.values()) * (_N_STATS + 4)
        step = min(max(1, _BLOCK_ELEMENTS // max(n, runs, 1)), n_boot)
        scratch = Scratch()
        stacked = np.empty((2 * n, step))
        for r0 in range(0, n_boot, step):
            R = min(step, n_boot - r0)
            both = stacked[:, :R] if R == step else np.empty((2 * n, R))
            # (rows, R) in sorted order, and below them the self-pair counts m (m - 1)
            rows.columns(np.arange(r0, r0 + R), out=both[:n], scratch=scratch, pairs=both[n:])
            for key, (A, nb) in mats.items():
                s_out, d_out = out[key]
                p = (A @ both).reshape(K + 3, Gb, nb, R).transpose(0, 1, 3, 2)
                s_out[self._sums, gs, r0 : r0 + R] = p[:K]
                d_out[:, gs, r0 : r0 + R] = p[K:]

    def _quantile_block(self, b0: int, b1: int, g0: int, rows: Multiplicities, n_boot: int, main: tuple) -> None:
        """The quantile bins' statistics of groups ``b0..b1`` (one block, ``rows`` its multiplicities) under every
        replicate, into ``main`` (their own slices): each group's bins re-fitted on every resample, by a compiled loop
        per group (:meth:`calibcli.core.resampling.Multiplicities.quantile_sums`: each bin's sums row after row) or,
        for a
        small bootstrap, :meth:`_SortedProblem._quantile_sums`' BLAS products of NumPy's draws (the same bins; sums
        within a few units in the last place, another order of addition)."""
        a = self.bounds[b0]
        n = self.bounds[b1] - a
        sums_out, dup_out = main
        if compiled_pays(self.bounds[-1], n_boot, _COMPILED_DRAWS):  # each group's bins and sums in one compiled loop
            reps = np.arange(n_boot)
            for g in range(b0, b1):
                lo, hi = self.bounds[g], self.bounds[g + 1]
                p = self._problems[g]
                Multiplicities(rows.seed, self.row_index[lo:hi]).quantile_sums(
                    reps, p.z, p.X, p.X_self, sums_out[:, g - g0], dup_out[:, g - g0]
                )
            return
        # replicates per block (the shapes of the BLAS products, hence their order of summation: kept as they were)
        runs = (b1 - b0) * (self.n_main + self.n_uniform) * (_N_STATS + 4)
        step = min(max(1, _BLOCK_ELEMENTS // max(n, runs, 1)), n_boot)
        scratch = Scratch()
        stacked = np.empty((2 * n, step))
        for r0 in range(0, n_boot, step):
            reps = np.arange(r0, min(r0 + step, n_boot))
            R = len(reps)
            both = stacked[:, :R] if R == step else np.empty((2 * n, R))
            # (rows, R) in sorted order, and below them the self-pair counts m (m - 1)
            M = rows.columns(reps, out=both[:n], scratch=scratch, pairs=both[n:])
            pairs = both[n:]
            for g in range(b0, b1):  # each group's bins move with its resample
                lo, hi = self.bounds[g] - a, self.bounds[g + 1] - a
                Mg = np.ascontiguousarray(M[lo:hi].T)
                s, d = self._problems[g]._quantile_sums(Mg, np.ascontiguousarray(pairs[lo:hi].T))
                sums_out[:, g - g0, r0 : r0 + R] = np.moveaxis(s, -1, 0)
                dup_out[:, g - g0, r0 : r0 + R] = np.moveaxis(d, -1, 0)


def _bin_stats(s: np.ndarray, d: np.ndarray) -> BinStats:
    """:class:`BinStats` of sums ``(6, ...)`` and self-pair sums ``(3, ...)`` (statistics first)."""
    weight, sum_y, sum_u2 = s[1 + _W], s[1 + _WY], s[1 + _WU2]
    return BinStats(
        np.rint(s[0]).astype(np.int64),
        weight,
        s[1 + _WZ],
        sum_y,
        sum_u2,
        s[1 + _WLL],
        self_weight=weight + d[0],
        self_y=sum_y + d[1],
        self_u2=sum_u2 + d[2],
    )
