"""Model against baseline: every metric of two inputs and their difference with a bootstrap interval.

:func:`compare_streams` runs a baseline and a candidate through the binned family's pipeline
(:class:`calibcli.accumulators.inputs.InputAccumulator`, and
:class:`~calibcli.accumulators.inputs.SmoothInputAccumulator` with ``smooth=True``): the two entries are those
``calibcli ece`` (``smece``) makes. For each headline metric it reports ``candidate - baseline`` with a
percentile interval of the replicated differences.

Pairing (when both score the same examples, the bootstrap must resample *examples*, giving one example
the same multiplicity in both inputs; SPEC 8 keys multiplicities by ``(seed, global row index)``):

- ``id``: rows matched by an ID column present in both. The candidate is read into memory (at most
  :data:`ID_PAIRING_LIMIT` rows), and streamed in the baseline's row order, each row carrying the
  baseline's global row index of its ID: its multiplicities are those of the baseline's row.
- ``order``: the same number of rows and equal labels row by row (checked while streaming): row ``i``
  of both is the same example, and one seed gives both the same multiplicities.
- otherwise unpaired: the candidate is resampled with an independent seed (:func:`derived_seed`).

Which bootstrap gives the paired replicates:

- while each problem keeps its rows (``ROW_LIMIT`` = 2^17 rows), the entries' own per-row Poisson
  bootstraps: the same seed and row indices give both inputs exactly the same multiplicities, so the
  replicated difference is exact (identical inputs give a difference of 0 with the interval [0, 0]);
- beyond, the entries' per-bin bootstraps draw each input's cells independently, which would not be
  paired. :class:`JointCells` keeps, per pair ``(baseline cell, candidate cell)`` (a cell is a bin and a
  label, SPEC 8), the row count and the sums and cross-products of both inputs' per-row values, so the
  draw is made jointly: a joint cell's resampled count is Poisson(count) (independent across joint
  cells, so each input's cell count is Poisson too, as in its own per-bin bootstrap), and given it the
  sums of both inputs' values are drawn from their joint normal law (mean and covariance per row). The
  correlation of the two models on the same examples is kept; aggregated to one input's cells this is
  the per-bin bootstrap of :mod:`calibcli.accumulators.binned`. SmoothECE beyond the row limit has no
  joint draw here: its difference interval is then unpaired (the candidate's SmoothECE is resampled with
the derived seed, ``seeds["candidate_smece"]``), and the report says so.

The paired bootstrap for the difference of two models' metrics on one test set is the standard
construction (Efron & Tibshirani 1993, ch. 10; the bootstrap comparison of classifiers in Bouthillier et
al. 2021 and in ``scikit-learn``'s model-comparison examples resamples rows jointly as well).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from calibcli.accumulators.binned import _row_values
from calibcli.accumulators.inputs import InputAccumulator, MulticlassScores, SmoothInputAccumulator
from calibcli.binning import uniform_bin_index
from calibcli.engines._fragments import prefetched
from calibcli.errors import CalibcliError, shown
from calibcli.estimators import BinStats, summarise_replicates
from calibcli.modes import binary_problems
from calibcli.registry import REGISTRY, aggregate_over_classes
from calibcli.resampling import Multiplicities, percentile_interval, row_hash

#: Rows of the candidate held in memory to pair by an ID column.
ID_PAIRING_LIMIT = 1 << 24
#: The ways two inputs can be paired (``auto``: by ID when an ID column is given, else by row order when the
#: labels agree, else unpaired).
PAIRINGS = ("auto", "order", "none")

# Per-row values of one input in a joint cell: w, w u, w u^2, w ll (u = y - z, ll the clipped log-loss).
_V = 4


def derived_seed(seed: int) -> int:
    """The candidate's seed when the inputs are unpaired: an independent stream derived from ``seed``."""
    return int(row_hash(int(seed), np.array([0x636F6D70]))[0] >> np.uint64(1))  # "comp"


@dataclass(frozen=True)
class Pairing:
    """How the two inputs were matched: ``how`` is ``id``, ``order`` or ``none``; ``reason`` says why."""

    how: str
    reason: str
    id_column: str | None = None

    @property
    def paired(self) -> bool:
        return self.how != "none"

    def to_dict(self) -> dict:
        return {"paired": self.paired, "by": self.how, "id_column": self.id_column, "reason": self.reason}


# ---------------------------------------------------------------------------------------------
# The joint state of one binary problem beyond the row limit


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
        self.weighted = False

    def update(self, za, ya, wa, zb, yb, wb) -> None:
        if len(za) == 0:
            return
        self.weighted |= wa is not None or wb is not None
        cell_a = 2 * self.bins_a(za) + ya
        cell_b = 2 * self.bins_b(zb) + yb
        key = cell_a.astype(np.int64) * (2 * self.n_b) + cell_b
        keys, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
        v = np.column_stack([_values(za, ya, wa), _values(zb, yb, wb)])
        n_keys = len(keys)
        count = np.bincount(inverse, minlength=n_keys)
        sums = np.stack([np.bincount(inverse, weights=v[:, j], minlength=n_keys) for j in range(2 * _V)], axis=1)
        moments = np.zeros((n_keys, 2 * _V, 2 * _V))
        for i in range(2 * _V):
            for j in range(i, 2 * _V):
                moments[:, i, j] = moments[:, j, i] = np.bincount(inverse, weights=v[:, i] * v[:, j], minlength=n_keys)
        self._add(keys, count, sums, moments)

    def _add(self, keys, count, sums, moments) -> None:
        merged = np.union1d(self.keys, keys)
        out_count = np.zeros(len(merged), dtype=np.int64)
        out_sums = np.zeros((len(merged), 2 * _V))
        out_moments = np.zeros((len(merged), 2 * _V, 2 * _V))
        for k, c, s, m in ((self.keys, self.count, self.sums, self.moments), (keys, count, sums, moments)):
            at = np.searchsorted(merged, k)
            out_count[at] += c
            out_sums[at] += s
            out_moments[at] += m
        self.keys, self.count, self.sums, self.moments = merged, out_count, out_sums, out_moments

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
        root = _psd_root(cov[:, active[:, None], active[None, :]]).transpose(0, 2, 1).astype(np.float32)
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
            # (joint cell, replicate, value): one batched matrix product per block (single precision: it is the
            # noise, about 1e-7 of its own scale), the sums built in place
            draws = np.zeros((J, r1 - r0, 2 * _V))
            draws[:, :, active] = np.matmul(rng.standard_normal((J, r1 - r0, len(active)), dtype=np.float32), root)
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


def _values(z, y, w) -> np.ndarray:
    """The (n, 4) per-row values ``(w, w u, w u^2, w ll)`` of one input (w = 1 without weights)."""
    v = _row_values(z, y, w, False)
    ones = np.ones(len(z)) if w is None else v["w"]
    return np.column_stack([ones, v["wu"], v["wu2"], v["wll"]])


def _psd_root(cov: np.ndarray) -> np.ndarray:
    """``L`` with ``L L^T = cov`` for stacked positive semi-definite matrices (eigen-decomposition)."""
    vals, vecs = np.linalg.eigh(cov)
    # eigenvalues at rounding level are zeros (two identical inputs give a singular covariance; their square
    # roots, about 1e-8 of the scale, would make the two inputs' draws differ)
    vals = np.where(vals > 1e-12 * np.max(np.abs(vals), axis=-1, keepdims=True), vals, 0.0)
    return vecs * np.sqrt(vals)[:, None, :]


def _bin_stats_replicates(per_cell, count_star, count, totals, n_bins: int, weighted: bool) -> BinStats:
    """Per-bin statistics ``(R, bins)`` of every replicate from the drawn per-cell sums, kept within what the
    rows allow and with the pairs of copies of one row set to their expectation given the count (as the
    per-bin bootstrap of :mod:`calibcli.accumulators.binned` does for one input)."""
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

    def update(self, pa, la, wa, pb, lb, wb) -> None:
        cols = []
        for p, labels, w in ((pa, la, wa), (pb, lb, wb)):
            values = MulticlassScores.per_row(p, labels)
            ww = np.ones(len(labels)) if w is None else w
            cols += [ww, ww * values[:, 0], ww * values[:, 1]]
        v = np.column_stack(cols)
        self.sums += v.sum(axis=0)
        self.moments += v.T @ v

    def replicates(self, n_boot: int, rng: np.random.Generator) -> tuple[dict, dict]:
        root = _psd_root(self.moments[None])[0]  # rounding-level eigenvalues as zeros: identical inputs draw alike
        reps = self.sums + rng.standard_normal((n_boot, 6)) @ root.T
        a, b = (
            {
                "brier_score_multiclass": reps[:, 3 * s + 1] / reps[:, 3 * s],
                "log_loss_multiclass": reps[:, 3 * s + 2] / reps[:, 3 * s],
            }
            for s in (0, 1)
        )
        return a, b


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
                uniform = JointCells(
                    lambda z, n=n: uniform_bin_index(z, n), n, lambda z, n=n: uniform_bin_index(z, n), n
                )
            self.problems.append((main, uniform))
        self.mode, self.class_names = acc_a.mode, list(acc_a.class_names)
        self.scores = JointScores() if acc_a.scores is not None else None

    def update(self, a, b) -> None:
        """Aligned batches ``a`` and ``b`` (the same examples, row by row)."""
        pa = binary_problems(
            a.labels, a.probs, mode=self.mode, sample_weight=a.sample_weight, class_names=self.class_names
        )
        pb = binary_problems(
            b.labels, b.probs, mode=self.mode, sample_weight=b.sample_weight, class_names=self.class_names
        )
        for (main, uniform), qa, qb in zip(self.problems, pa, pb, strict=True):
            for cells in (main, uniform):
                if cells is not None:
                    cells.update(qa.z, qa.y, qa.sample_weight, qb.z, qb.y, qb.sample_weight)
        if self.scores is not None:
            self.scores.update(a.probs, a.labels, a.sample_weight, b.probs, b.labels, b.sample_weight)


# ---------------------------------------------------------------------------------------------
# Streaming two inputs


@dataclass(frozen=True)
class _Rows:
    """Validated rows (a slice of one or more batches), with the fields of :class:`calibcli.io.Batch`."""

    probs: np.ndarray
    labels: np.ndarray
    sample_weight: np.ndarray | None
    row_index: np.ndarray
    ids: np.ndarray | None
    source: str

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, sel) -> _Rows:
        return _Rows(
            self.probs[sel],
            self.labels[sel],
            None if self.sample_weight is None else self.sample_weight[sel],
            self.row_index[sel],
            None if self.ids is None else self.ids[sel],
            self.source,
        )


def _rows(batch) -> _Rows:
    return _Rows(
        batch.probs,
        batch.labels,
        batch.sample_weight,
        batch.row_index,
        None if batch.groups is None else np.asarray(batch.groups[0]),
        batch.source,
    )


def _empty(rows: _Rows | None) -> bool:
    return rows is None or len(rows) == 0


def _lockstep(stream_a, stream_b):
    """Both streams' rows in equal-length chunks (row ``i`` of the one beside row ``i`` of the other); at the end
    of the shorter, the rest of the longer with None beside it."""
    its = [prefetched(stream_a.batches()), prefetched(stream_b.batches())]
    held: list[_Rows | None] = [None, None]
    done = [False, False]
    while True:
        for k in (0, 1):
            while not done[k] and _empty(held[k]):
                batch = next(its[k], None)
                if batch is None:
                    done[k] = True
                else:
                    held[k] = _rows(batch)
        have = [not _empty(held[k]) for k in (0, 1)]
        if not any(have):
            return
        if not all(have):
            k = 0 if have[0] else 1
            out: list[_Rows | None] = [None, None]
            out[k] = held[k]
            held[k] = None
            yield out[0], out[1]
            continue
        first, second = held
        assert first is not None and second is not None  # (both have rows)
        n = min(len(first), len(second))
        parts = first.take(slice(0, n)), second.take(slice(0, n))
        held = [first.take(slice(n, None)), second.take(slice(n, None))]
        yield parts[0], parts[1]


def _id_text(value) -> str:
    """An ID as the file has it: ``5``, ``2.5``, ``'id-3'`` (quoted, as messages quote text), never ``np.int64(5)``."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return shown(value) if isinstance(value, str) else str(value)


def _check_ids(rows: _Rows, id_column: str, name: str) -> None:
    """Refuse a NaN ID (a float ID column's missing value): it equals no ID, not even itself."""
    if rows.ids is not None and rows.ids.dtype.kind == "f" and len(rows.ids):
        bad = np.flatnonzero(np.isnan(rows.ids))
        if len(bad):
            raise CalibcliError(
                f"{name}: row {int(rows.row_index[bad[0]]) + 1}, column {shown(id_column, quote=False)}: "
                f"the ID is NaN (missing): every row needs an ID to pair examples by {{opt:id_col}}"
            )


class _Candidate:
    """The candidate in memory, indexed by its IDs, to be streamed in the baseline's order (pairing by ID)."""

    def __init__(self, stream, id_column: str, baseline_name: str):
        parts = [_rows(b) for b in stream.batches()]
        self.name, self.baseline_name, self.id_column = stream.name, baseline_name, id_column
        n = sum(len(p) for p in parts)
        if n > ID_PAIRING_LIMIT:
            raise CalibcliError(
                f"{stream.name} has {n} rows: pairing by {{opt:id_col}} holds the candidate in memory, "
                f"at most {ID_PAIRING_LIMIT} rows; pair by row order (same order, no {{opt:id_col}})"
            )
        for p in parts:
            _check_ids(p, id_column, stream.name)
        cat = (lambda xs: np.concatenate(xs)) if parts else (lambda xs: np.empty(0))
        self.probs = cat([p.probs for p in parts])
        self.labels = cat([p.labels for p in parts])
        self.weights = None if not parts or parts[0].sample_weight is None else cat([p.sample_weight for p in parts])
        self.ids = cat([p.ids for p in parts])
        self.order = np.argsort(self.ids, kind="stable")
        self.sorted_ids = self.ids[self.order]
        same = np.flatnonzero(self.sorted_ids[1:] == self.sorted_ids[:-1])
        if len(same):
            raise CalibcliError(
                f"{stream.name}: the ID {_id_text(self.sorted_ids[same[0]])} of column {id_column!r} appears more "
                f"than once: IDs must be unique to pair examples by {{opt:id_col}}"
            )
        self.restart()

    def restart(self) -> None:
        """Before a pass over the baseline: no ID matched yet."""
        self.matched = np.zeros(len(self.labels), dtype=bool)
        self.missing_here = 0  # baseline IDs that the candidate lacks

    def aligned(self, a: _Rows) -> _Rows | None:
        """The candidate's rows of the baseline rows' IDs, in their order and with their global row indices."""
        _check_ids(a, self.id_column, self.baseline_name)
        assert a.ids is not None  # (rows paired by ID carry their IDs)
        ids = _comparable(a.ids, self.sorted_ids)
        sorted_ids = _comparable(self.sorted_ids, a.ids)
        at = np.searchsorted(sorted_ids, ids)
        found = at < len(sorted_ids)
        found[found] = sorted_ids[at[found]] == ids[found]
        self.missing_here += int((~found).sum())
        rows = self.order[at[found]]
        if self.matched[rows].any() or len(np.unique(rows)) < len(rows):
            if self.matched[rows].any():  # seen in an earlier batch of the baseline
                twice = a.ids[found][np.flatnonzero(self.matched[rows])[0]]
            else:  # twice in this batch: the candidate row matched by two baseline rows
                ordered = np.sort(rows)
                twice = self.ids[ordered[1:][ordered[1:] == ordered[:-1]][0]]
            raise CalibcliError(
                f"{self.baseline_name}: the ID {_id_text(twice)} of column {self.id_column!r} appears more than once: "
                f"IDs must be unique to pair examples by {{opt:id_col}}"
            )
        self.matched[rows] = True
        if not found.all():
            return None
        labels = self.labels[rows]
        if not np.array_equal(labels, a.labels):
            j = int(np.flatnonzero(labels != a.labels)[0])
            raise CalibcliError(
                f"the ID {_id_text(a.ids[j])} has label index {a.labels[j]} in {self.baseline_name} and {labels[j]} in "
                f"{self.name}: rows paired by {{opt:id_col}} must be the same examples with the same labels"
            )
        return _Rows(
            self.probs[rows],
            labels,
            None if self.weights is None else self.weights[rows],
            a.row_index,
            a.ids,
            self.name,
        )

    def check_complete(self) -> None:
        missing_there = int((~self.matched).sum())
        if self.missing_here or missing_there:
            raise CalibcliError(
                f"the IDs of column {self.id_column!r} differ: {self.missing_here} of {self.baseline_name}'s IDs "
                f"are missing from {self.name}, and {missing_there} of {self.name}'s IDs are missing from "
                f"{self.baseline_name}: pairing by {{opt:id_col}} needs the same examples in both"
            )


def _comparable(ids: np.ndarray, other: np.ndarray) -> np.ndarray:
    """IDs as text when the two inputs store them differently (numbers in one, text in the other)."""
    if ids.dtype.kind in "iuf" and other.dtype.kind in "iuf":
        return ids
    if ids.dtype.kind == "O" and other.dtype.kind == "O":
        return ids
    return ids.astype(str).astype(object)


# ---------------------------------------------------------------------------------------------
# The comparison


@dataclass
class ComparisonRun:
    """What :func:`compare_streams` returns: both inputs' entries, the comparison and how inputs were paired."""

    entries: list[dict]  # baseline ece, candidate ece (then smece, smece with smooth=True)
    comparison: dict  # metric -> {baseline, candidate, difference, ci_low, ci_high, ci_method, paired, ...}
    pairing: Pairing
    seeds: dict


def compare_streams(
    stream_a,
    stream_b,
    binned_options,
    *,
    mode_a,
    mode_b=None,
    smooth_options=None,
    id_column=None,
    pairing: str = "auto",
) -> ComparisonRun:
    """Compare a baseline stream ``stream_a`` with a candidate ``stream_b`` (see the module docstring).

    ``binned_options`` (:class:`calibcli.accumulators.inputs.BinnedOptions`) and ``smooth_options``
    (:class:`~calibcli.accumulators.inputs.SmoothOptions`, or None for no SmoothECE) apply to both; ``mode_a`` is the
    mode (both inputs must have the same classes). ``id_column``: pair by that column (the streams must have
    been opened with ``group_by=(id_column,)``). ``pairing``: ``auto``, ``order`` (an error when the rows are
    not the same examples in the same order) or ``none``.
    """
    if pairing not in PAIRINGS:
        raise CalibcliError(f"{{opt:pairing}} is {pairing!r}: expected one of {', '.join(PAIRINGS)}")
    if id_column is not None and pairing == "none":
        raise CalibcliError(
            "{opt:id_col} pairs the inputs by ID, {opt:pairing} none asks for no pairing: give one of them"
        )
    if id_column is not None and pairing == "order":
        raise CalibcliError("{opt:id_col} pairs the inputs by ID, {opt:pairing} order by row order: give one of them")
    if tuple(stream_a.class_names) != tuple(stream_b.class_names):
        raise CalibcliError(
            f"{stream_a.name} has classes {list(stream_a.class_names)} and {stream_b.name} has "
            f"{list(stream_b.class_names)}: a comparison needs the same classes in both"
        )
    seed = binned_options.seed

    def new_accs(options_seed):
        accs: list[InputAccumulator | SmoothInputAccumulator] = [
            InputAccumulator(
                mode=mode_a,
                n_classes=stream_a.n_classes,
                class_names=stream_a.class_names,
                options=replace(binned_options, seed=options_seed),
            )
        ]
        if smooth_options is not None:
            accs.append(
                SmoothInputAccumulator(
                    mode=mode_a,
                    n_classes=stream_a.n_classes,
                    class_names=stream_a.class_names,
                    options=replace(smooth_options, seed=options_seed),
                )
            )
        return accs

    accs_a, accs_b = new_accs(seed), new_accs(seed)
    candidate = _Candidate(stream_b, id_column, stream_a.name) if id_column is not None else None
    state: dict[str, Any] = {
        "paired": pairing != "none",
        "reason": None if pairing != "none" else "no pairing asked for",
    }

    def one_pass(now_a, now_b, joint_now) -> None:
        """Stream both inputs once into the accumulators ``now_a``/``now_b`` (None: not this pass) and the joint
        state."""

        def feed(accs, rows):
            for acc in accs:
                if acc is not None:
                    acc.update(rows.row_index, rows.probs, rows.labels, rows.sample_weight)

        if candidate is not None:
            candidate.restart()
            for batch in stream_a.batches():
                a = _rows(batch)
                b = candidate.aligned(a)
                feed(now_a, a)
                if b is not None:
                    feed(now_b, b)
                    if joint_now is not None:
                        joint_now.update(a, b)
            candidate.check_complete()
            return
        n_a = n_b = 0
        for a, b in _lockstep(stream_a, stream_b):
            if a is not None:
                feed(now_a, a)
                n_a += len(a)
            if b is not None:
                feed(now_b, b)
                n_b += len(b)
            if state["paired"] and a is not None and b is not None:
                if not np.array_equal(a.labels, b.labels) or not np.array_equal(a.row_index, b.row_index):
                    _unpair(state, pairing, a, b, stream_a.name, stream_b.name)
                elif joint_now is not None:
                    joint_now.update(a, b)
        if state["paired"] and n_a != n_b:
            _unpair(state, pairing, None, None, stream_a.name, stream_b.name, (n_a, n_b))

    joint = JointState(accs_a[0], accs_b[0]) if state["paired"] else None
    one_pass(accs_a, accs_b, joint)
    paired = state["paired"]
    if not paired:  # independent multiplicities for the candidate: its own seed stream
        joint = None
        for acc in accs_b:
            _reseed(acc, derived_seed(seed))
    # a second pass where an accumulator asks for one (quantile edges, a finer smoothing grid: SPEC 8)
    needs = [[acc.needs_second_pass() for acc in accs] for accs in (accs_a, accs_b)]
    if any(needs[0]) or any(needs[1]):
        now_a = [acc.for_second_pass() if need else None for acc, need in zip(accs_a, needs[0], strict=True)]
        now_b = [acc.for_second_pass() if need else None for acc, need in zip(accs_b, needs[1], strict=True)]
        second_joint = JointState(now_a[0], now_b[0]) if paired and needs[0][0] and needs[1][0] else None
        one_pass(now_a, now_b, second_joint)
        accs_a = [new if new is not None else old for new, old in zip(now_a, accs_a, strict=True)]
        accs_b = [new if new is not None else old for new, old in zip(now_b, accs_b, strict=True)]
        joint = second_joint or joint
    if paired:
        how = "id" if candidate is not None else "order"
        reason = (
            f"matched by the ID column {id_column!r}"
            if how == "id"
            else "the same number of rows and the same labels row by row"
        )
    else:
        how, reason = "none", state["reason"]
    pairing_used = Pairing(how, reason, id_column)
    seeds = {"baseline": seed, "candidate": seed if paired else derived_seed(seed)}
    entries, comparison = _finish(accs_a, accs_b, joint, binned_options, seeds, pairing_used, stream_a, stream_b)
    return ComparisonRun(entries, comparison, pairing_used, seeds)


def _unpair(state: dict, pairing: str, a, b, name_a: str, name_b: str, counts=None) -> None:
    """The rows are not the same examples in the same order: unpaired, or an error when pairing was asked for."""
    if counts is not None:
        reason = f"{name_a} has {counts[0]} rows and {name_b} has {counts[1]}"
    elif not np.array_equal(a.row_index, b.row_index):
        j = int(np.flatnonzero(a.row_index != b.row_index)[0])
        reason = (
            f"different rows were dropped as invalid: row {a.row_index[j] + 1} of {name_a} ({a.source}) is beside "
            f"row {b.row_index[j] + 1} of {name_b} ({b.source})"
        )
    else:
        j = int(np.flatnonzero(a.labels != b.labels)[0])
        reason = (
            f"the labels differ first at row {a.row_index[j] + 1} (label index {a.labels[j]} in {name_a} ({a.source}), "
            f"{b.labels[j]} in {name_b} ({b.source}))"
        )
    if pairing == "order":
        raise CalibcliError(
            f"{name_a} and {name_b} cannot be paired by row order: {reason}; pair them by an ID column "
            f"({{opt:id_col}}) or compare them unpaired"
        )
    state["paired"], state["reason"] = False, reason


def _reseed(acc, seed: int) -> None:
    """Give an input accumulator another bootstrap seed (its state does not depend on the seed)."""
    acc.options = replace(acc.options, seed=seed)
    if hasattr(acc, "_results"):
        acc._results = None


# ---------------------------------------------------------------------------------------------
# Results: both entries, the replicated differences


def _finish(accs_a, accs_b, joint, options, seeds: dict, pairing: Pairing, stream_a, stream_b):
    """Both inputs' report entries (as ``ece`` / ``smece`` make them) and the comparison of their headline metrics."""
    n_boot, alpha = options.n_boot, options.alpha
    reports = [accs[0].result(keep_replicates=True) for accs in (accs_a, accs_b)]
    rows_kept = all(not p.rows.dropped for accs in (accs_a, accs_b) for p in accs[0].problems)
    headline = [r.headline() for r in reports]
    reps: list[dict] = [{}, {}]
    methods: dict[str, tuple[str, bool]] = {}
    if n_boot:
        if not pairing.paired or rows_kept:
            per_problem = [[p.result.replicates for p in r.problems] for r in reports]
            how = (
                "paired Poisson bootstrap over rows (the same multiplicities for the same example in both inputs)"
                if pairing.paired
                else "unpaired: independent Poisson bootstraps of the two inputs"
            )
        else:
            rng = np.random.Generator(np.random.Philox(key=[int(seeds["baseline"]) & 0xFFFFFFFFFFFFFFFF, 0x636F6D70]))
            per_problem = [[], []]
            names = list(reports[0].problems[0].result.replicates)
            for main, uniform in joint.problems:
                main_a, main_b = main.replicates(n_boot, rng)
                uni_a, uni_b = (main_a, main_b) if uniform is None else uniform.replicates(n_boot, rng)
                for side, (m, u) in enumerate(((main_a, uni_a), (main_b, uni_b))):
                    per_problem[side].append(summarise_replicates((m, u), names, alpha, keep_replicates=True)[1])
            how = (
                "paired Poisson bootstrap from joint per-bin sufficient statistics (the two inputs' cells drawn "
                "jointly, so one example weighs the same in both)"
            )
        for side, report in enumerate(reports):
            reps[side].update(_headline_replicates(report, per_problem[side]))
        for name in reps[0]:
            methods[name] = (how, pairing.paired)
        if reports[0].multiclass_scores is not None:
            if pairing.paired and not rows_kept:
                rng = np.random.Generator(
                    np.random.Philox(key=[int(seeds["baseline"]) & 0xFFFFFFFFFFFFFFFF, 0x73636F72])
                )
                scores = joint.scores.replicates(n_boot, rng)
                how_scores = "paired Poisson bootstrap from the joint moments of both inputs' sums (normal)"
            else:
                scores = [
                    _scores_replicates(accs[0].scores, n_boot, s)
                    for accs, s in ((accs_a, seeds["baseline"]), (accs_b, seeds["candidate"]))
                ]
                how_scores = how
            for side in (0, 1):
                reps[side].update(scores[side])
            for name in scores[0]:
                methods[name] = (how_scores, pairing.paired)
    entries = []
    for role, stream, report in (("baseline", stream_a, reports[0]), ("candidate", stream_b, reports[1])):
        entries.append({"input": stream.describe(), "role": role, "family": "ece", **report.to_dict()})
    if len(accs_a) > 1:
        kept = all(acc.rows_kept for accs in (accs_a, accs_b) for acc in accs[1].problems)
        if pairing.paired and not kept:  # the per-cell SmoothECE bootstrap is not paired: independent seeds then
            _reseed(accs_b[1], derived_seed(seeds["baseline"]))
            seeds["candidate_smece"] = derived_seed(seeds["baseline"])
        smooth = [accs[1].result() for accs in (accs_a, accs_b)]
        for side, report in enumerate(smooth):
            headline[side].update(report.headline())
            if n_boot:
                reps[side].update(_smooth_replicates(report, accs_a[1].options))
        smooth_paired = pairing.paired and kept
        for name in smooth[0].headline():
            methods[name] = (
                "paired Poisson bootstrap over rows"
                if smooth_paired
                else "unpaired: independent Poisson bootstraps"
                if not pairing.paired
                else "unpaired: the SmoothECE bootstrap from per-cell sums (beyond the rows kept) is not paired, "
                "so this interval treats the inputs as independent (wider than a paired one)",
                smooth_paired,
            )
        for role, stream, report in (("baseline", stream_a, smooth[0]), ("candidate", stream_b, smooth[1])):
            entries.append({"input": stream.describe(), "role": role, "family": "smece", **report.to_dict()})
    comparison = {}
    for name, m_a in headline[0].items():
        m_b = headline[1].get(name)
        if m_b is None:
            continue
        comparison[name] = _difference(name, m_a, m_b, reps[0].get(name), reps[1].get(name), methods.get(name), alpha)
    return entries, comparison


def _headline_replicates(report, per_problem: list[dict]) -> dict[str, np.ndarray]:
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


def _smooth_replicates(report, options) -> dict[str, np.ndarray]:
    if report.aggregate is None:
        return {options.metric: np.asarray(report.problems[0].result.replicates)}
    rule = REGISTRY[options.metric].combine
    assert rule is not None  # (smece's class rule)
    reps = aggregate_over_classes(
        rule, np.stack([p.result.replicates for p in report.problems]), report.class_weight_values
    )
    return {options.metric: np.asarray(reps)}


def _scores_replicates(scores, n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Replicates of one input's multiclass Brier and log-loss, drawn as
    :class:`calibcli.accumulators.inputs.MulticlassScores` draws them (per row while the rows are kept, else from
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
    better = info.better if info is not None else "lower"
    if better == "target":
        assert info is not None and info.target is not None, f"{name} declares no target"
        return abs(candidate - info.target) - abs(baseline - info.target)
    if better == "higher":
        return baseline - candidate
    if better == "none":
        return 0.0
    return candidate - baseline


def _difference(name: str, m_a, m_b, rep_a, rep_b, method, alpha: float) -> dict:
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
        from statistics import NormalDist

        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        se = math.hypot(m_a.ci_high - m_a.ci_low, m_b.ci_high - m_b.ci_low) / (2.0 * z)
        lo, hi = diff - z * se, diff + z * se
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
