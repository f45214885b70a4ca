"""The paired bootstrap's joint state of two inputs beyond the rows kept (:mod:`calibcli.compare.run`).

While each problem keeps its rows (2^17), two inputs scoring the same examples are paired by their own per-row
Poisson bootstraps (the same ``(seed, global row index)`` gives both the same multiplicities). Beyond, each
input's per-bin bootstrap would draw its cells independently. :class:`JointCells` keeps, per pair ``(baseline
cell, candidate cell)`` (a cell is a bin and a label, SPEC 8), the row count and the sums and cross-products of
both inputs' per-row values, so the draw is made jointly: a joint cell's resampled count is Poisson(count), and
given it the sums of both inputs' values are drawn from their joint normal law (mean and covariance per row).
Aggregated to one input's cells this is the per-bin bootstrap of :mod:`calibcli.binned.accumulator`; the
multiclass scores' joint moments are :class:`JointScores`. Every state merges exactly (sums add), so the rows
may be read in ranges on a cluster's workers (``calibcli compare --engine dask``).

The paired bootstrap for the difference of two models' metrics on one test set is the standard construction
(Efron & Tibshirani 1993, ch. 10): :func:`difference` gives ``candidate - baseline`` with its percentile interval
from both sides' replicates (:func:`headline_replicates`, :func:`smooth_replicates`, :func:`scores_replicates`)
and the verdicts (:func:`worse_by`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibcli.binned.accumulator import CellSums, _row_values
from calibcli.binned.stats import BinStats
from calibcli.core.binning import uniform_bin_index
from calibcli.core.compensated import add_exact, run_sums
from calibcli.core.modes import binary_problems
from calibcli.core.registry import REGISTRY, aggregate_over_classes
from calibcli.core.resampling import Multiplicities, percentile_interval
from calibcli.ece_family.accumulator import MulticlassScores
from calibcli.llm.paired import better as selective_better

# Per-row values of one input in a joint cell: w, w u, w u^2, w ll (u = y - z, ll the clipped log-loss).
_V = 4


class JointCells:
    """Per non-empty pair ``(baseline cell, candidate cell)``: the row count, the sums of the 8 per-row values
    ``v = (w, w u, w u^2, w ll)`` of both inputs, and the sums of ``v v^T`` (see the module docstring).

    ``bins_a`` / ``bins_b`` map predictions to bins (``Binning.assign`` or the equal-width index);
    ``n_a`` / ``n_b`` are their numbers of bins.
    """

    def __init__(self, bins_a, n_a: int, bins_b, n_b: int):
        self.bins_a, self.bins_b, self.n_a, self.n_b = bins_a, bins_b, n_a, n_b
        self.keys = np.empty(0, dtype=np.int64)
        self.count = np.empty(0, dtype=np.int64)
        self.sums = np.empty((0, 2 * _V))
        self.moments = np.empty((0, 2 * _V, 2 * _V))
        # the low parts of the sums (calibcli.core.compensated): a batch's sums are added exactly, so the covariances'
        # square roots (eigenbases, which a change in the last bit can turn) see the same floats on any engine
        self.sums_lo = np.empty((0, 2 * _V))
        self.moments_lo = np.empty((0, 2 * _V, 2 * _V))
        self.weighted = False

    def update(self, za, ya, wa, zb, yb, wb, cell_columns: tuple[str, ...] = ()) -> tuple[CellSums | None, ...]:
        """Add aligned rows of both inputs. ``cell_columns``: also return each input's own cells of these rows
        (:class:`~calibcli.binned.accumulator.CellSums` of those columns, the marginals of the joint cells: its
        accumulator need not sum them again), where the rows have unit weights (else None for both)."""
        if len(za) == 0:
            return None, None
        weighted = wa is not None or wb is not None
        self.weighted |= weighted
        key = (2 * self.bins_a(za) + ya) * (2 * self.n_b) + (2 * self.bins_b(zb) + yb)
        # the rows in the order of their joint cells; a stable sort of small keys is a radix sort, linear (the order
        # within a joint cell changes no sum: run_sums' are exact)
        order = np.argsort(key.astype(np.int16) if 4 * self.n_a * self.n_b <= 1 << 15 else key, kind="stable")
        key = key[order]
        starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        keys, n_keys = key[starts], len(starts)
        count = np.diff(np.append(starts, len(key)))
        # the per-row values of both inputs in that order (the same floats as the rows' own: made one by one)
        columns = [
            column
            for z, y, w in ((za, ya, wa), (zb, yb, wb))
            for column in _columns(z[order], y[order], None if w is None else w[order])
        ]
        # the columns whose sums are not the counts (with unit weights w = 1, w v = v and w w = 1), the upper
        # triangle of their products
        free = np.arange(2 * _V) if weighted else np.array([j for j in range(2 * _V) if j % _V])
        upper_i, upper_j = np.triu_indices(len(free))
        top = np.array([max(np.max(columns[j]), -np.min(columns[j])) for j in free])
        scratch = np.empty(len(key))

        def products():  # each product made in the scratch array as run_sums takes it, then the columns themselves
            for i, j in zip(upper_i, upper_j, strict=True):
                yield np.multiply(columns[free[i]], columns[free[j]], out=scratch)
            yield from (columns[j] for j in free)  # (overwritten: no longer needed)

        # the batch's sums exact to about 2^-100 (calibcli.core.compensated.run_sums): added into the state's
        # pairs, they give the same floats however the rows were split into batches (the covariances' square
        # roots, whose small eigenvalues are differences of large sums, see the same numbers)
        got, got_lo = run_sums(products(), starts, np.concatenate([top[upper_i] * top[upper_j], top]))
        sums, sums_lo = (np.zeros((n_keys, 2 * _V)) for _ in range(2))
        moments, moments_lo = (np.zeros((n_keys, 2 * _V, 2 * _V)) for _ in range(2))
        n_products = len(upper_i)
        for out, out_m, part in ((sums, moments, got), (sums_lo, moments_lo, got_lo)):
            out[:, free] = part[:, n_products:]
            out_m[:, free[upper_i], free[upper_j]] = part[:, :n_products]
            out_m[:, free[upper_j], free[upper_i]] = part[:, :n_products]
        if len(free) < 2 * _V:  # unit weights: sum w = sum w w = count, sum w v = sum v (exact)
            ws = np.array([0, _V])
            sums[:, ws] = count[:, None]
            moments[:, ws[:, None], ws[None, :]] = count[:, None, None]
            for out, out_m in ((sums, moments), (sums_lo, moments_lo)):
                out_m[:, ws[:, None], free[None, :]] = out[:, None, free]
                out_m[:, free[:, None], ws[None, :]] = out[:, free, None]
        self._add(keys, count, sums, moments, sums_lo, moments_lo)
        if not cell_columns or weighted:
            return None, None
        batch = (keys, count, sums, sums_lo, moments, moments_lo)
        return tuple(self._marginal(batch, side, cell_columns) for side in (0, 1))

    def _marginal(self, batch, side: int, columns: tuple[str, ...]) -> CellSums:
        """One input's cells of a batch of unit weights (``side`` 0: the baseline's): the sums of its joint cells'
        count and ``columns`` (``wu``, ``wu2``, ``wll`` are sums of the input's values, ``wu3``, ``wu4``, ``wll2`` of
        their products: the same floats as the input's own per-row values), exact (run_sums of the pairs)."""
        keys, count, sums, sums_lo, moments, moments_lo = batch
        cell = keys // (2 * self.n_b) if side == 0 else keys % (2 * self.n_b)
        order = np.argsort(cell, kind="stable")
        cell = cell[order]
        starts = np.flatnonzero(np.concatenate(([True], cell[1:] != cell[:-1])))
        target = cell[starts]
        size = 2 * (self.n_a if side == 0 else self.n_b)
        out_count = np.zeros(size, dtype=np.int64)
        out_count[target] = np.add.reduceat(count[order], starts)
        o = side * _V
        where = {
            "wu": (sums, sums_lo, (o + 1,)),
            "wu2": (sums, sums_lo, (o + 2,)),
            "wll": (sums, sums_lo, (o + 3,)),
            "wu3": (moments, moments_lo, (o + 1, o + 2)),
            "wu4": (moments, moments_lo, (o + 2, o + 2)),
            "wll2": (moments, moments_lo, (o + 3, o + 3)),
        }
        # each column's pairs (hi, lo) side by side, so a run of an input cell's joint cells sums both parts
        pairs = [
            np.stack([hi[(order, *at)], lo[(order, *at)]], axis=1).ravel()
            for hi, lo, at in (where[name] for name in columns)
        ]
        got, got_lo = run_sums(pairs, 2 * starts, np.array([np.max(np.abs(x)) for x in pairs]))
        out = {}
        for j, name in enumerate(columns):
            hi, lo = np.zeros(size), np.zeros(size)
            hi[target], lo[target] = got[:, j], got_lo[:, j]
            out[name] = (hi, lo)
        return CellSums(out_count, out)

    def merge(self, other: JointCells) -> None:
        """Add the joint cells of other rows."""
        self.weighted |= other.weighted
        if len(other.keys):
            self._add(other.keys, other.count, other.sums, other.moments, other.sums_lo, other.moments_lo)

    def _add(self, keys, count, sums, moments, sums_lo=None, moments_lo=None) -> None:
        if not np.array_equal(self.keys, keys):  # joint cells this state has not seen: the union of both
            self._grow(keys)
        at = np.searchsorted(self.keys, keys)
        self.count[at] += count
        for hi, lo, theirs, theirs_lo in (
            (self.sums, self.sums_lo, sums, sums_lo),
            (self.moments, self.moments_lo, moments, moments_lo),
        ):
            part_hi, part_lo = hi[at], lo[at]
            add_exact(part_hi, part_lo, theirs, theirs_lo)
            hi[at], lo[at] = part_hi, part_lo

    def _grow(self, keys) -> None:
        """Make room for the joint cells ``keys`` (sorted): the state's cells become the union, the new ones empty."""
        merged = np.concatenate([self.keys, keys])
        merged.sort()
        merged = merged[np.concatenate(([True], merged[1:] != merged[:-1]))]
        at = np.searchsorted(merged, self.keys)
        count = np.zeros(len(merged), dtype=np.int64)
        count[at] = self.count
        grown = []
        for mine in (self.sums, self.sums_lo, self.moments, self.moments_lo):
            out = np.zeros((len(merged), *mine.shape[1:]))
            out[at] = mine
            grown.append(out)
        self.keys, self.count = merged, count
        self.sums, self.sums_lo, self.moments, self.moments_lo = grown

    def replicates(self, n_boot: int, rng: np.random.Generator) -> tuple[BinStats, BinStats]:
        """``n_boot`` paired replicates of both inputs' per-bin statistics (baseline's list, candidate's list)."""
        J = len(self.keys)
        cell_a = self.keys // (2 * self.n_b)
        cell_b = self.keys % (2 * self.n_b)
        c = self.count.astype(np.float64)
        if self.weighted:
            # the sums of m_i v_i over a joint cell: mean sum v, covariance sum v v^T (exact Poisson moments)
            mean, cov = self.sums, self.moments
        else:
            # unit weights: given the resampled count c*, the sums are c* draws of the cell's rows (w = 1 exactly)
            mean = self.sums / c[:, None]
            cov = self.moments / c[:, None, None] - mean[:, :, None] * mean[:, None, :]
        # the noise only where there is variance: with unit weights the w columns are the counts, exactly
        active = np.arange(2 * _V) if self.weighted else np.array([j for j in range(2 * _V) if j % _V])
        root = _psd_root(cov[:, active[:, None], active[None, :]]).transpose(0, 2, 1)
        sides: list[dict[str, Any]] = []
        for side, cells, n_bins in ((0, cell_a, self.n_a), (1, cell_b, self.n_b)):
            order = np.argsort(cells, kind="stable")
            starts = np.flatnonzero(np.diff(cells[order], prepend=-1))
            totals = np.zeros((2 * n_bins, 2 * _V))
            # per cell: the sums of (w, w u, w u^2, w ll), then of w times each (w^2, w^2 u, w^2 u^2, w^2 ll)
            np.add.at(
                totals,
                cells,
                np.concatenate(
                    [
                        self.sums[:, side * _V : (side + 1) * _V],
                        self.moments[:, side * _V, side * _V : (side + 1) * _V],
                    ],
                    axis=1,
                ),
            )
            count = np.zeros(2 * n_bins)
            np.add.at(count, cells, c)
            sides.append(
                dict(
                    order=order,
                    starts=starts,
                    target=cells[order][starts],
                    n_bins=n_bins,
                    totals=totals,
                    count=count,
                    per_cell=np.zeros((n_boot, 2 * n_bins, _V)),
                    count_star=np.zeros((n_boot, 2 * n_bins)),
                )
            )
        # a block of replicates at a time (about 4e6 numbers per block): the joint cells' draws, summed to each
        # input's cells at once
        block = max(1, int(4e6 // max(1, J * 2 * _V)))
        for r0 in range(0, n_boot, block):
            r1 = min(n_boot, r0 + block)
            c_star = rng.poisson(c, size=(r1 - r0, J)).astype(np.float64)
            # (joint cell, replicate, value): one batched matrix product per block, the sums built in place. The
            # normals are drawn in single precision (the noise needs no more) but multiplied in double: a root
            # rounded to single precision would move with the last bit of the sums, and the draws with it
            draws = np.zeros((J, r1 - r0, 2 * _V))
            normals = rng.standard_normal((J, r1 - r0, len(active)), dtype=np.float32)
            draws[:, :, active] = np.matmul(normals.astype(np.float64), root)
            if self.weighted:
                draws += mean[:, None, :]
            else:
                scale = c_star.T[..., None]
                draws *= np.sqrt(scale)
                draws += scale * mean[:, None, :]
            for side, sd in enumerate(sides):
                values = draws[sd["order"], :, side * _V : (side + 1) * _V]
                sd["per_cell"][r0:r1, sd["target"]] = np.add.reduceat(values, sd["starts"], axis=0).transpose(1, 0, 2)
                sd["count_star"][r0:r1, sd["target"]] = np.add.reduceat(c_star[:, sd["order"]], sd["starts"], axis=1)
        out = [
            _bin_stats_replicates(
                sd["per_cell"], sd["count_star"], sd["count"], sd["totals"], sd["n_bins"], self.weighted
            )
            for sd in sides
        ]
        return out[0], out[1]


class _EqualWidth:
    """The equal-width bin index of ``n`` bins (a binning that pickles, for a task on a cluster)."""

    def __init__(self, n: int):
        self.n = n

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return uniform_bin_index(z, self.n)


def _columns(z, y, w) -> list[np.ndarray]:
    """The per-row values ``(w, w u, w u^2, w ll)`` of one input (w = 1 without weights), one array each."""
    v = _row_values(z, y, w, False)
    ones = np.ones(len(z)) if w is None else v["w"]
    return [ones, v["wu"], v["wu2"], v["wll"]]


def _psd_root(cov: np.ndarray) -> np.ndarray:
    """The symmetric square root ``L = V sqrt(D) V^T`` (so ``L L^T = cov``) of stacked positive semi-definite
    matrices.

    The symmetric root, not ``V sqrt(D)``: an eigenbasis is not a continuous function of the matrix (where two
    eigenvalues are close, a change in the last bit of one sum can turn it), so the draws made with it moved by
    the noise's own scale between file splits and engines; the symmetric root is the same matrix for every
    eigenbasis of ``cov`` and moves by rounding only, so the replicates keep the 1e-12 rule (docs: How it is
    computed, "Determinism"). Both give the same normal law.
    """
    vals, vecs = np.linalg.eigh(cov)
    # eigenvalues at rounding level are zeros (two identical inputs give a singular covariance; their square
    # roots, about 1e-8 of the scale, would make the two inputs' draws differ)
    vals = np.where(vals > 1e-12 * np.max(np.abs(vals), axis=-1, keepdims=True), vals, 0.0)
    return np.matmul(vecs * np.sqrt(vals)[:, None, :], vecs.transpose(0, 2, 1))


def _bin_stats_replicates(per_cell, count_star, count, totals, n_bins: int, weighted: bool) -> BinStats:
    """Per-bin statistics ``(R, bins)`` of every replicate from the drawn per-cell sums, kept within what the
    rows allow and with the pairs of copies of one row set to their expectation given the count (as the
    per-bin bootstrap of :mod:`calibcli.binned.accumulator` does for one input)."""
    W, U, Q, L = (per_cell[..., j] for j in range(_V))
    label = np.tile([0.0, 1.0], n_bins)
    W = np.where(count_star > 0, np.maximum(W, 0.0), 0.0) if weighted else count_star
    U = np.clip(U, (label - 1.0) * W, label * W)
    Q = np.clip(Q, 0.0, W)
    Q = np.maximum(Q, np.divide(U * U, W, out=np.zeros_like(U), where=W > 0))
    L = np.maximum(L, 0.0)
    safe = np.maximum(count, 1.0)
    factor = 1.0 + np.maximum(count_star - 1.0, 0.0) / safe
    sum_w, sum_wu2, sum_w2, sum_w2u2 = totals[:, 0], totals[:, 2], totals[:, _V], totals[:, _V + 2]
    ratio_w = np.divide(sum_w2, sum_w, out=np.ones(len(count)), where=sum_w > 0)
    ratio_u2 = np.divide(sum_w2u2, sum_wu2, out=np.ones(len(count)), where=sum_wu2 > 0)
    B = n_bins
    w_r, u_r, q_r, l_r, f_r, c_r = (a.reshape(-1, B, 2) for a in (W, U, Q, L, factor, count_star))
    self_w = f_r * w_r * ratio_w.reshape(B, 2)
    # every replicate at once: (R, bins, label) arrays summed over the label axis
    return BinStats(
        np.rint(c_r.sum(axis=-1)).astype(np.int64),
        w_r.sum(axis=-1),
        w_r[..., 1] - u_r.sum(axis=-1),
        w_r[..., 1].copy(),
        q_r.sum(axis=-1),
        l_r.sum(axis=-1),
        self_weight=self_w.sum(axis=-1),
        self_y=self_w[..., 1].copy(),
        self_u2=(f_r * q_r * ratio_u2.reshape(B, 2)).sum(axis=-1),
    )


class JointScores:
    """Sums of the per-row ``v = (w, w brier, w log-loss)`` of both inputs and of ``v v^T``: the multiclass
    scores' paired bootstrap from their exact Poisson moments (normal), beyond the row limit."""

    def __init__(self):
        self.sums = np.zeros(6)
        self.moments = np.zeros((6, 6))
        self.sums_lo = np.zeros(6)  # low parts (calibcli.core.compensated), as JointCells keeps them
        self.moments_lo = np.zeros((6, 6))

    def update(self, pa, la, wa, pb, lb, wb) -> None:
        cols = []
        for p, labels, w in ((pa, la, wa), (pb, lb, wb)):
            values = MulticlassScores.per_row(p, labels)
            ww = np.ones(len(labels)) if w is None else w
            cols += [ww, ww * values[:, 0], ww * values[:, 1]]
        v = np.column_stack(cols)
        add_exact(self.sums, self.sums_lo, v.sum(axis=0))
        add_exact(self.moments, self.moments_lo, v.T @ v)

    def replicates(self, n_boot: int, rng: np.random.Generator) -> tuple[dict, dict]:
        root = _psd_root(self.moments[None])[0]  # rounding-level eigenvalues as zeros: identical inputs draw alike
        reps = self.sums + rng.standard_normal((n_boot, 6)) @ root.T
        baseline, candidate = (
            {
                "brier_score_multiclass": reps[:, 3 * s + 1] / reps[:, 3 * s],
                "log_loss_multiclass": reps[:, 3 * s + 2] / reps[:, 3 * s],
            }
            for s in (0, 1)
        )
        return baseline, candidate


class JointState:
    """The paired bootstrap's joint state of one comparison: per binary problem of the mode, the joint cells
    on the main bins (and on the equal-width bins of the dCE for quantile bins); the multiclass scores."""

    def __init__(self, acc_a, acc_b):
        self.problems = []
        for pa, pb in zip(acc_a.problems, acc_b.problems, strict=True):
            main = (
                JointCells(
                    pa.binning.assign, pa.binning.n_bins_effective, pb.binning.assign, pb.binning.n_bins_effective
                )
                if pa.binning is not None and pb.binning is not None
                else None
            )
            uniform = None
            if pa.strategy == "quantile":
                n = pa.n_bins
                uniform = JointCells(_EqualWidth(n), n, _EqualWidth(n), n)
            self.problems.append((main, uniform))
        self.mode, self.class_names = acc_a.mode, list(acc_a.class_names)
        self.scores = JointScores() if acc_a.scores is not None else None

    def merge(self, other: JointState) -> JointState:
        """Add the joint state of other rows (exact: counts and sums add)."""
        for cells, theirs in zip(self.problems, other.problems, strict=True):
            for mine, more in zip(cells, theirs, strict=True):
                if mine is not None:
                    assert more is not None  # (both sides have the same cells: one comparison's states)
                    mine.merge(more)
        if self.scores is not None:
            assert other.scores is not None
            add_exact(self.scores.sums, self.scores.sums_lo, other.scores.sums, other.scores.sums_lo)
            add_exact(self.scores.moments, self.scores.moments_lo, other.scores.moments, other.scores.moments_lo)
        return self

    def update(self, a, b, columns: tuple[str, ...] = ()) -> tuple[list, list]:
        """Aligned batches ``a`` and ``b`` (the same examples, row by row). ``columns``: also return each input's
        own cells of these rows, per binary problem its main and equal-width ones (:meth:`JointCells.update`; None
        where there are no joint cells or the rows have weights), for its accumulator."""
        pa = binary_problems(
            a.labels, a.probs, mode=self.mode, sample_weight=a.sample_weight, class_names=self.class_names
        )
        pb = binary_problems(
            b.labels, b.probs, mode=self.mode, sample_weight=b.sample_weight, class_names=self.class_names
        )
        given: tuple[list, list] = ([], [])
        for (main, uniform), qa, qb in zip(self.problems, pa, pb, strict=True):
            made = [
                (None, None)
                if cells is None
                else cells.update(qa.z, qa.y, qa.sample_weight, qb.z, qb.y, qb.sample_weight, columns)
                for cells in (main, uniform)
            ]
            for side in (0, 1):
                given[side].append((made[0][side], made[1][side]))
        if self.scores is not None:
            self.scores.update(a.probs, a.labels, a.sample_weight, b.probs, b.labels, b.sample_weight)
        return given


# ---------------------------------------------------------------------------------------------------------
# The differences: each side's replicates, and candidate - baseline with its interval and verdicts
# ---------------------------------------------------------------------------------------------------------


def headline_replicates(report, per_problem: list[dict]) -> dict[str, np.ndarray]:
    """Replicates of the binned headline metrics: the marginal aggregate's (combined per class, SPEC 1), or the
    one problem's."""
    if report.aggregate is None:
        out = dict(per_problem[0])
        if "ece_l2_sq_debiased_sun" in out:
            out["ece_l2_sq_sun_interval"] = out["ece_l2_sq_debiased_sun"]  # its estimate is the Sun statistic
        return out
    out = {}
    for name in report.aggregate:
        rule = REGISTRY[name].combine if name in REGISTRY else None
        base = (rule.of if rule is not None else None) or name
        if rule is None or any(base not in p for p in per_problem):
            continue  # no replicates of this metric here
        out[name] = np.asarray(
            aggregate_over_classes(rule, np.array([p[base] for p in per_problem]), report.class_weight_values)
        )
    return out


def smooth_replicates(report, options) -> dict[str, np.ndarray]:
    if report.aggregate is None:
        return {options.metric: np.asarray(report.problems[0].result.replicates)}
    rule = REGISTRY[options.metric].combine
    assert rule is not None  # (smece's class rule)
    reps = aggregate_over_classes(
        rule, np.stack([p.result.replicates for p in report.problems]), report.class_weight_values
    )
    return {options.metric: np.asarray(reps)}


def scores_replicates(scores, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Replicates of one input's multiclass Brier and log-loss, drawn as
    :class:`calibcli.ece_family.accumulator.MulticlassScores` draws them (per row while the rows are kept, else from
    the sums' moments)."""
    if not scores.rows.dropped:
        row_index, values, _, w = scores.rows.arrays()
        X = np.column_stack([np.ones(len(values)) if w is None else w, values * (1.0 if w is None else w[:, None])])
        rows = Multiplicities(seed, row_index)
        reps = np.array([rows.replicate(r) @ X for r in range(n_boot)])
    else:
        s = dict(zip(scores._COLUMNS, scores.sums, strict=True))
        rng = np.random.Generator(np.random.Philox(key=[int(seed) & 0xFFFFFFFFFFFFFFFF, 0x73636F726573]))
        mean = np.array([s["w"], s["wb"], s["wl"]])
        cov = np.array(
            [[s["w2"], s["w2b"], s["w2l"]], [s["w2b"], s["w2bb"], s["w2bl"]], [s["w2l"], s["w2bl"], s["w2ll"]]]
        )
        reps = rng.multivariate_normal(mean, cov, size=n_boot, method="eigh")
    return {"brier_score_multiclass": reps[:, 1] / reps[:, 0], "log_loss_multiclass": reps[:, 2] / reps[:, 0]}


def worse_by(name: str, baseline: float, candidate: float) -> float:
    """How much worse the candidate is than the baseline on ``name`` (negative when better), in the metric's
    own units: the difference, its negative for higher-is-better metrics, or the growth of the distance to
    the target for target metrics (:data:`calibcli.metrics.REGISTRY`)."""
    info = REGISTRY.get(name)
    better = info.better if info is not None else (selective_better(name, "lower") or "lower")
    if better == "target":
        assert info is not None and info.target is not None, f"{name} declares no target"
        return abs(candidate - info.target) - abs(baseline - info.target)
    if better == "higher":
        return baseline - candidate
    if better == "none":
        return 0.0
    return candidate - baseline


def difference(name: str, m_a, m_b, rep_a, rep_b, method, alpha: float) -> dict:
    """One metric's comparison: both estimates, ``candidate - baseline``, its interval and the verdicts."""
    better = REGISTRY[name].better if name in REGISTRY else "lower"
    a, b = float(m_a.estimate), float(m_b.estimate)
    diff = b - a
    lo = hi = None
    ci_method, paired = method or (None, False)
    if rep_a is not None and rep_b is not None and len(rep_a) and len(rep_a) == len(rep_b):
        lo, hi = percentile_interval(np.asarray(rep_b) - np.asarray(rep_a), alpha)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            lo = hi = None
    elif None not in (m_a.ci_low, m_a.ci_high, m_b.ci_low, m_b.ci_high):
        # a metric without replicates here (an interval of its own): the normal approximation from both
        # intervals, as if independent
        # with se_x = width_x / (2 z) for each input's interval at the same level, the difference's half-width
        # z sqrt(se_a^2 + se_b^2) is hypot(width_a, width_b) / 2 whatever z is: no quantile, no division (an
        # alpha near 1 has z = 0, and a width of 0 too)
        half = math.hypot(m_a.ci_high - m_a.ci_low, m_b.ci_high - m_b.ci_low) / 2.0
        lo, hi = diff - half, diff + half
        ci_method, paired = "unpaired: normal approximation from the two inputs' own intervals", False
    if lo is None:
        ci_method = None
    # "worse" follows the registry: larger (lower-is-better), smaller (higher-is-better), or farther from the
    # calibrated value (a Cox slope of 1, an intercept of 0); significant when the difference's interval
    # excludes 0 (for a target metric: the candidate's value has moved, and away from the target)
    worse = worse_by(name, a, b) > 0 if better != "none" else False
    significant = lo is not None and hi is not None and (lo > 0 or hi < 0)
    return {
        "baseline": a,
        "candidate": b,
        "difference": diff,
        "ci_low": lo,
        "ci_high": hi,
        "ci_method": ci_method,
        "paired": bool(paired and lo is not None),
        "better": better,
        "worse": bool(worse),
        "significant": bool(significant),
    }
