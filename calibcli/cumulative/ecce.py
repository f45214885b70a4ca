"""Cumulative calibration statistics: ECCE-MAD, ECCE-R, their scale and p-values (SPEC section 9).

Sort the rows by score ``s``, normalise the weights to sum to 1 (``w_j = 1/n`` without weights) and
form the cumulative differences

    C_0 = 0,    C_k = sum_{j <= k} w_j (y_j - s_j),

evaluated only at the end of each block of equal scores, so that no statistic depends on the order of rows
within a tie (Arrieta-Ibarra, Gujral, Tannen, Tygert and Xu, "Metrics of calibration for probabilistic
predictions", JMLR 23 (2022), sections 2-3; Tygert, "Cumulative deviation of a subpopulation from the full
population", J. Big Data 8 (2021)). SPEC 9 asks for a stable sort; with ties as blocks any sort gives the
same statistics, and the segment code uses NumPy's faster unstable one. Then

    ECCE-MAD = max_k |C_k|                 (Kolmogorov-Smirnov type)
    ECCE-R   = max_k C_k - min_k C_k       (Kuiper type; MCGrad's "ECCE")

over k = 0 .. (number of blocks), and under perfect calibration (``E[y | s] = s``, rows independent) the
standard deviation of ``C`` at the end is

    sigma = sqrt(sum_j w_j^2 s_j (1 - s_j)).

As n grows, ``C / sigma`` behaves as standard Brownian motion ``B`` run on the clock of its own variance, so
ECCE-MAD/sigma tends in law to ``sup_[0,1] |B|`` and ECCE-R/sigma to the range ``sup B - inf B`` on [0, 1];
the p-values come from those two laws (:func:`sup_abs_brownian_sf`, :func:`range_brownian_sf`).

Weights are the papers' (and MCGrad's) weights: ``C`` is the weighted cumulative sum and ``sigma`` has
``w_j^2``, which is the variance of a weighted sum of independent rows. A weight of 2 therefore gives the same
``C`` as a duplicated row but a larger ``sigma`` (a duplicated row is two independent draws; a weighted row
is one). For frequency weights, expand the rows instead.

Segments (Guy, Haimovich, Linder, Okati, Perini, Tax and Tygert, "Measuring multi-calibration",
arXiv:2506.11251, 2025; MCGrad's ``MulticalibrationError``): each segment is a population of its own, with
its weights normalised within it. :func:`ecce_segments` computes every segment of several partitions of the
rows (a column's values, a pair of columns' value pairs) after one sort by score and one stable integer sort
per partition, never a Python loop over segments or rows.

Streams: :func:`ecce_from_cells` computes the same statistics from per-cell sums of ``w``, ``w y``, ``w s``,
``w^2 s (1 - s)`` and ``w |y - s|`` over score cells in score order (per segment: a leading axis). ``C`` is
then known at cell ends only; within a cell it moves by at most that cell's ``sum w |y - s|`` (normalised),
so the largest such sum, :attr:`EcceResult.error_bound`, bounds the error: the grid's ECCE-MAD is within
``[exact - bound, exact]`` and its ECCE-R within ``[exact - 2 bound, exact]``. When every cell holds one
distinct score the grid form is the exact form.

MCGrad (Meta's ``mcgrad`` package, ``mcgrad.metrics``) was read for its conventions; nothing is copied. It
differs here in two ways: it evaluates ``C`` at every row after an unstable sort rather than at tie-block ends,
so with tied scores its statistics depend on the order of the tied rows; and its p-value subtracts a CDF from
1 (p-values below about 1e-16 become machine epsilon), where here the upper tail has its own series and stays
accurate down to the smallest doubles. Without ties the two agree to rounding (benchmarks/studies/audit_size_power.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibcli.core import cancel
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_binary, check_option
from calibcli.cumulative.brownian import (  # the laws of sup|B| and of the range of B, re-exported
    ecce_mad_pvalue,
    ecce_r_pvalue,
    minimum_detectable_ecce_sigma,
    range_brownian_cdf,
    range_brownian_isf,
    range_brownian_sf,
    relative_percent,
    sup_abs_brownian_cdf,
    sup_abs_brownian_sf,
)

__all__ = [
    "CumulativeDifferences",
    "EcceResult",
    "CellSums",
    "cumulative_differences",
    "ecce",
    "ecce_segments",
    "ecce_from_cells",
    "ecce_from_cell_entries",
    "uniform_cells",
    "cell_sums",
    "sup_abs_brownian_cdf",
    "sup_abs_brownian_sf",
    "range_brownian_cdf",
    "range_brownian_sf",
    "range_brownian_isf",
    "ecce_mad_pvalue",
    "ecce_r_pvalue",
    "minimum_detectable_ecce_sigma",
    "relative_percent",
]

# ---------------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CumulativeDifferences:
    """The cumulative differences of one population at tie-block ends (SPEC 9).

    ``scores[b]``: the score of block ``b`` (increasing); ``weight[b]``: the block's normalised weight;
    ``c[k]``, k = 0..B: ``C`` after the first k blocks (``c[0] = 0``); ``sigma``: the scale under perfect
    calibration. ``np.cumsum(weight)`` is the abscissa of the papers' cumulative plots.
    """

    scores: np.ndarray
    weight: np.ndarray
    c: np.ndarray
    sigma: float


@dataclass(frozen=True)
class EcceResult:
    """ECCE statistics of one population (floats) or of many segments (arrays, one entry per segment).

    ``ecce_mad = max |C|``, ``ecce_r = max C - min C``, ``sigma = sqrt(sum w^2 s (1 - s))`` (normalised
    weights); ``*_sigma`` is the statistic divided by ``sigma`` (``0/0 -> 0``, ``x/0 -> inf`` for ``x > 0``:
    scores all 0 or 1 and some label disagreeing is certain miscalibration); ``*_pvalue`` from the laws of
    ``sup |B|`` and of the range of ``B``. ``rows``: rows in the segment; ``weight``: its total weight before
    normalisation; an empty segment (no rows or zero total weight) has NaN statistics.

    ``error_bound``: 0 for the exact form; for the grid form the largest cell's ``sum w |y - s|`` (normalised),
    which bounds how far ``C`` moves between cell ends: the exact ECCE-MAD lies in
    ``[ecce_mad, ecce_mad + error_bound]`` and the exact ECCE-R in ``[ecce_r, ecce_r + 2 error_bound]``.

    For :func:`ecce_segments`, ``partition[i]`` and ``segment[i]`` say which partition and which segment id
    within it entry ``i`` is; otherwise they are ``None``.
    """

    ecce_mad: np.ndarray | float
    ecce_r: np.ndarray | float
    sigma: np.ndarray | float
    ecce_mad_sigma: np.ndarray | float
    ecce_r_sigma: np.ndarray | float
    ecce_mad_pvalue: np.ndarray | float
    ecce_r_pvalue: np.ndarray | float
    rows: np.ndarray | int
    weight: np.ndarray | float
    error_bound: np.ndarray | float
    partition: np.ndarray | None = None
    segment: np.ndarray | None = None


#: The fields of :class:`EcceResult` that hold one value per segment (``partition`` and ``segment`` aside).
STATISTICS = (
    "ecce_mad",
    "ecce_r",
    "sigma",
    "ecce_mad_sigma",
    "ecce_r_sigma",
    "ecce_mad_pvalue",
    "ecce_r_pvalue",
    "rows",
    "weight",
    "error_bound",
)


def _on_sigma_scale(stat: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = stat / sigma
    scaled = np.where(sigma > 0, scaled, np.where(stat > 0, np.inf, 0.0))
    return np.where(np.isnan(stat) | np.isnan(sigma), np.nan, scaled)


def _finish(mx, mn, sigma, rows, weight, bound, partition=None, segment=None, scalar=False) -> EcceResult:
    """Statistics from the max and min of C over k >= 1 (C_0 = 0 is added here)."""
    mx = np.maximum(mx, 0.0)
    mn = np.minimum(mn, 0.0)
    mad = np.maximum(mx, -mn)
    r = mx - mn
    mad_s = _on_sigma_scale(mad, sigma)
    r_s = _on_sigma_scale(r, sigma)
    fields = dict(
        ecce_mad=mad,
        ecce_r=r,
        sigma=sigma,
        ecce_mad_sigma=mad_s,
        ecce_r_sigma=r_s,
        ecce_mad_pvalue=np.asarray(sup_abs_brownian_sf(mad_s)),
        ecce_r_pvalue=np.asarray(range_brownian_sf(r_s)),
        rows=rows,
        weight=weight,
        error_bound=bound,
    )
    if scalar:
        fields = {
            k: (int(v.reshape(-1)[0]) if k == "rows" else float(np.asarray(v).reshape(-1)[0]))
            for k, v in fields.items()
        }
    return EcceResult(**fields, partition=partition, segment=segment)


# ---------------------------------------------------------------------------------------------------------
# Exact form
# ---------------------------------------------------------------------------------------------------------


def cumulative_differences(y_true, y_prob, *, sample_weight=None) -> CumulativeDifferences:
    """``C_k`` at the end of each block of equal scores, weights normalised to sum 1 (SPEC 9).

    Rows are sorted by score with a stable sort; rows with equal scores form one block and ``C`` is
    evaluated only after a whole block, so the result does not depend on the order of rows within ties.
    """
    y, s, w = check_binary(y_true, y_prob, sample_weight)
    order = np.argsort(s, kind="stable")
    s, y, w = s[order], y[order], w[order] / w.sum()
    ends = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    c_rows = np.cumsum(w * (y - s))
    c = np.r_[0.0, c_rows[ends]]
    block_w = np.diff(np.r_[0.0, np.cumsum(w)[ends]])
    sigma = float(np.sqrt(np.sum(w * w * s * (1.0 - s))))
    return CumulativeDifferences(scores=s[ends], weight=block_w, c=c, sigma=sigma)


def ecce(y_true, y_prob, *, sample_weight=None) -> EcceResult:
    """ECCE-MAD and ECCE-R of one population, with sigma, both sigma scales and both p-values (floats).

    Sources: Arrieta-Ibarra et al., JMLR 23 (2022); Tygert, J. Big Data 8 (2021); see the module docstring.
    O(n log n) for the sort.
    """
    return ecce_populations([(y_true, y_prob, sample_weight)])[0]


def ecce_populations(populations: list[tuple]) -> list[EcceResult]:
    """:func:`ecce` of each of many populations ``(y_true, y_prob, sample_weight)`` (a report's groups): each
    one's running sums alone, as :func:`ecce` takes them, then the statistics, sigma scales and p-values of all
    of them in one pass (the same numbers: every step of :func:`_finish` is elementwise, its series a fixed
    number of terms)."""
    parts = []
    for y_true, y_prob, sample_weight in populations:
        y, s, w = check_binary(y_true, y_prob, sample_weight)
        parts.append(_segments_exact(y, s, w, [np.zeros(len(s), dtype=np.uint8)], (1,)))
    if not parts:
        return []
    mx, mn, sigma, rows, weight = (np.concatenate([p[j] for p in parts]) for j in range(5))
    every = _finish(mx, mn, sigma, rows, weight, np.zeros(len(parts)))
    columns = {k: getattr(every, k).tolist() for k in STATISTICS}  # (Python ints and floats, as scalar=True gives)
    return [EcceResult(**{k: v[g] for k, v in columns.items()}) for g in range(len(parts))]


def _check_partitions(segment_ids, n: int, n_segments) -> tuple[list[np.ndarray], tuple[int, ...]]:
    if isinstance(segment_ids, np.ndarray) and segment_ids.ndim == 1:
        parts = [segment_ids]
    elif isinstance(segment_ids, np.ndarray) and segment_ids.ndim == 2:
        parts = list(segment_ids)
    elif isinstance(segment_ids, Sequence) and not isinstance(segment_ids, (str, bytes)):
        parts = [np.asarray(p) for p in segment_ids]
    else:
        raise CalibcliError(
            f"segment_ids has type {type(segment_ids).__name__}: expected an integer array of one id per row, "
            "or a sequence (or 2-D array) of such arrays, one per partition"
        )
    if not parts:
        raise CalibcliError("segment_ids is empty: expected at least one partition of the rows")
    if n_segments is None:
        n_segments = [None] * len(parts)
    elif np.ndim(n_segments) == 0:
        n_segments = [int(n_segments)] * len(parts)
    check_option(
        len(n_segments) == len(parts),
        f"n_segments has {len(n_segments)} entries for {len(parts)} partitions: expected one per partition",
    )
    sizes = []
    for p, (ids, g) in enumerate(zip(parts, n_segments, strict=True)):
        if ids.ndim != 1 or len(ids) != n:
            raise CalibcliError(f"segment_ids[{p}] has shape {ids.shape}: expected ({n},), one id per row")
        if ids.dtype.kind not in "iu":
            raise CalibcliError(
                f"segment_ids[{p}] has type {ids.dtype}: expected integers (a segment's index, -1 for none)"
            )
        top = int(ids.max()) if n else -1
        low = int(ids.min()) if n and ids.dtype.kind == "i" else 0
        if low < -1:
            raise CalibcliError(f"segment_ids[{p}] has the id {low}: expected ids >= 0, or -1 for a row in no segment")
        if g is None:
            g = top + 1
        elif top >= g:
            raise CalibcliError(f"segment_ids[{p}] has the id {top} but n_segments is {g}: expected ids below {g}")
        sizes.append(int(g))
    return parts, tuple(sizes)


def _small_uint(ids: np.ndarray, top: int) -> np.ndarray:
    """Ids as the smallest unsigned type holding ``top``: NumPy's stable argsort is a radix sort for 8- and
    16-bit integers."""
    for t in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(t).max:
            return ids.astype(t, copy=False)
    return ids.astype(np.uint64, copy=False)


def _ids_in_score_order(parts, sizes, order):
    """Each partition's ids in score order as small unsigned integers, -1 replaced by the partition's size.

    A gather by a random permutation costs a cache miss per row whatever the width of the row, so the ids of
    several partitions are packed side by side into one 8-byte word per row (8 partitions of 8-bit ids, 4 of
    16-bit, 2 of 32-bit) and gathered in one pass of a 1-D ``uint64`` take."""
    cols = []
    for ids, g in zip(parts, sizes, strict=True):
        if ids.dtype.kind == "i" and len(ids) and ids.min() < 0:
            ids = np.where(ids < 0, g, ids)
        cols.append((_small_uint(ids, g), g))
    if order is None:
        yield from cols
        return
    n = len(order)
    for itemsize in sorted({c.dtype.itemsize for c, _ in cols}):
        group = [(c, g) for c, g in cols if c.dtype.itemsize == itemsize]
        per_word = 8 // itemsize
        for first in range(0, len(group), per_word):
            batch = group[first : first + per_word]
            if itemsize == 8 or len(batch) == 1:
                for c, g in batch:
                    yield c[order], g
                continue
            packed = np.zeros((n, per_word), dtype=batch[0][0].dtype)
            for j, (c, _) in enumerate(batch):
                packed[:, j] = c
            gathered = packed.view(np.uint64).reshape(n)[order].view(packed.dtype).reshape(n, per_word)
            del packed
            for j, (_, g) in enumerate(batch):
                yield np.ascontiguousarray(gathered[:, j]), g


def _segments_exact(y, s, w, parts, sizes):
    """Max and min of C over k >= 1, sigma, rows and weight of every segment of every partition.

    One sort by score; per partition one stable (radix) sort of the segment ids of the score-sorted
    rows, after which each segment's rows are contiguous and in score order. Within a segment a tie block
    ends where the next row is in another segment or has another score; without ties in the data every row
    ends a block and the tie bookkeeping is skipped. The rows' ``w (y - s)`` are divided by their segment's
    total weight before the running sum, which is restarted at each segment (its first row minus the previous
    segment's total, at most 1 in size), so rounding does not accumulate across segments; a segment's
    ``max C = max(running sum) - (where it restarted)``, exactly the maximum of the differences since
    subtracting a constant is monotone in floating point too.
    """
    n = len(s)
    unit = bool(np.all(w == 1.0))
    if n < 2 or bool(np.all(s[1:] >= s[:-1])):  # already in score order (a caller that sorts once): no gathers
        order = None
        s_o, w_o, d_o = s, w, (y - s) if unit else w * (y - s)
    else:
        # Ties are blocks, so the order within ties does not matter and the faster unstable sort will do
        # (3x faster than the stable one on 1e6 floats here); the result is deterministic all the same.
        order = np.argsort(s)
        s_o = s[order]
        w_o = w if unit else w[order]
        d_o = y[order] - s_o if unit else w_o * (y[order] - s_o)  # w (y - s) in score order, unnormalised
    same_next = s_o[1:] == s_o[:-1]
    tie = None
    if same_next.any():  # index of each row's score block in the global order
        tie = np.zeros(n, dtype=np.int64)
        np.cumsum(~same_next, out=tie[1:])
    v_o = s_o * (1.0 - s_o) if unit else w_o * w_o * s_o * (1.0 - s_o)

    def one(ids_o, g, buffers):
        running, wide = buffers
        # bincount works on intp: widened once into a reused buffer (its own conversion would be a fresh array,
        # whose pages the kernel zeroes, for each call). Rows in no segment carry the id g: counted in a bin
        # past the end and dropped.
        np.copyto(wide, ids_o)
        rows = np.bincount(wide, minlength=g + 1)[:g]
        total = rows.astype(np.float64) if unit else np.bincount(wide, weights=w_o, minlength=g + 1)[:g]
        var = np.bincount(wide, weights=v_o, minlength=g + 1)[:g]
        with np.errstate(divide="ignore", invalid="ignore"):
            sigma = np.where(total > 0, np.sqrt(var) / total, np.nan)
            inv_total = np.where(total > 0, 1.0 / total, 0.0)  # 0, not NaN: a NaN would run into later segments
        n_in = int(rows.sum())
        # the whole population (one segment of every row) is in score order already: no sort, no gather
        perm = None if g == 1 and n_in == n else np.argsort(ids_o, kind="stable")[:n_in]  # radix for 8/16-bit ids
        mx = np.full(g, np.nan)
        mn = np.full(g, np.nan)
        present = np.flatnonzero(rows)
        if len(present):
            counts = rows[present]
            starts = np.zeros(len(present), dtype=np.int64)
            np.cumsum(counts[:-1], out=starts[1:])
            # w (y - s) grouped by segment (in score order within each), then divided by the segment's total
            # weight: a multiplication per segment's run of rows, the same products as scaling row by row before
            # the gather, without a per-row lookup of the factor (a pass over all rows per partition).
            c = running[:n_in]
            if perm is None:
                np.copyto(c, d_o)
            else:  # valid indices; mode "raise" would buffer the output (a fresh copy)
                np.take(d_o, perm, out=c, mode="clip")
            ends = starts + counts
            if len(present) <= 4096:
                for first, stop, factor in zip(
                    starts.tolist(), ends.tolist(), inv_total[present].tolist(), strict=True
                ):
                    c[first:stop] *= factor
            else:
                c *= np.repeat(inv_total[present], counts)
            # Restart the running sum at each segment: subtract the previous segment's total (its C at the
            # end, at most 1 in size) at its first row, so rounding never accumulates over segments; what
            # remains of it is removed as "before".
            seg_total = np.add.reduceat(c, starts)
            c[starts[1:]] -= seg_total[:-1]
            np.cumsum(c, out=c)
            before = np.zeros(len(present))
            before[1:] = c[starts[1:] - 1] - seg_total[:-1]  # where the running sum restarts from
            if tie is None:
                values, segment_first = c, starts
            else:
                t = tie if perm is None else tie[perm]
                block_end = np.empty(len(t), dtype=bool)
                np.not_equal(t[1:], t[:-1], out=block_end[:-1])
                block_end[-1] = True
                block_end[starts[1:] - 1] = True
                ends = np.flatnonzero(block_end)
                values, segment_first = c[ends], np.searchsorted(ends, starts)
            mx[present] = np.maximum.reduceat(values, segment_first) - before
            mn[present] = np.minimum.reduceat(values, segment_first) - before
            empty = present[~(total[present] > 0)]  # rows of zero total weight: no population
            mx[empty] = np.nan
            mn[empty] = np.nan
        return mx, mn, sigma, rows, total

    jobs = list(_ids_in_score_order(parts, sizes, order))
    done = _in_threads(one, jobs, n)
    out_mx, out_mn, out_sigma, out_rows, out_w = (list(x) for x in zip(*done, strict=True))
    return (
        np.concatenate(out_mx),
        np.concatenate(out_mn),
        np.concatenate(out_sigma),
        np.concatenate(out_rows).astype(np.int64),
        np.concatenate(out_w),
    )


#: Rows from which :func:`_segments_exact` computes partitions on two threads (NumPy's sorts, gathers and sums
#: release the GIL); below, one thread.
THREAD_ROWS = 1_000_000


def _in_threads(one, jobs: list, n: int) -> list:
    """``[one(*job, buffers) for job in jobs]``, in order, on up to two threads when the rows are many and the
    machine has two CPUs; each thread reuses its own pair of ``n``-row buffers (float64, intp: no fresh pages to
    fault in per job). A signal stops the queued jobs (:func:`calibcli.core.cancel.shutdown_now`)."""
    import os
    import queue

    threads = min(2, len(jobs), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    if threads < 2 or n < THREAD_ROWS:
        pair = (np.empty(n), np.empty(n, dtype=np.intp))
        return [one(*job, pair) for job in jobs]
    from concurrent.futures import ThreadPoolExecutor

    buffers: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(threads):
        buffers.put((np.empty(n), np.empty(n, dtype=np.intp)))

    def run(job):
        cancel.check()
        buffer = buffers.get()
        try:
            return one(*job, buffer)
        finally:
            buffers.put(buffer)

    pool = ThreadPoolExecutor(max_workers=threads)
    try:
        return list(pool.map(run, jobs))
    finally:
        cancel.shutdown_now(pool)


def ecce_segments(y_true, y_prob, segment_ids, *, n_segments=None, sample_weight=None) -> EcceResult:
    """ECCE statistics of every segment of one or more partitions of the rows, exactly, in one call.

    ``segment_ids``: for one partition, an integer array with each row's segment (``0..G-1``, or -1 for a row
    in none of its segments); for several partitions (the values of each column, of each pair of columns, the
    whole population as all zeros), a sequence or a 2-D array of such arrays. Use small unsigned types
    (``uint8``/``uint16``): the per-partition sort is then a radix sort. ``n_segments``: each partition's
    number of segments (an int, or one per partition; default: its largest id + 1).

    Returns an :class:`EcceResult` of arrays, one entry per segment, partitions one after another
    (``partition`` and ``segment`` say which). Each segment is its own population: weights normalised within
    it, ties as blocks within it, as :func:`ecce` on its rows alone gives (equal to 1e-12). Segments with no
    rows get NaN statistics and ``rows == 0``.

    Cost: one O(n log n) sort, then per partition O(n) (a radix sort of the ids, gathers, one cumulative sum,
    and ``reduceat``), independent of the number of segments. Sources: Guy et al., arXiv:2506.11251 (2025);
    MCGrad's ``MulticalibrationError``, which instead forms a dense segments-by-rows array.
    """
    y, s, w = check_binary(y_true, y_prob, sample_weight)
    parts, sizes = _check_partitions(segment_ids, len(s), n_segments)
    mx, mn, sigma, rows, weight = _segments_exact(y, s, w, parts, sizes)
    partition = np.repeat(np.arange(len(sizes)), sizes)
    segment = np.concatenate([np.arange(g) for g in sizes]) if sizes else np.zeros(0, dtype=np.int64)
    return _finish(mx, mn, sigma, rows, weight, np.zeros(len(mx)), partition=partition, segment=segment)


# ---------------------------------------------------------------------------------------------------------
# Grid ("streaming") form
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellSums:
    """Per-cell sums over score cells in score order (last axis), optionally per segment (leading axes).

    ``w``: sum of weights; ``wy``: of ``w y``; ``ws``: of ``w s``; ``w2v``: of ``w^2 s (1 - s)``; ``wabs``: of
    ``w |y - s|``; ``rows``: row counts. Sums of disjoint batches add (:meth:`merge`), so a stream or a
    cluster's partial results reduce to one state. Weights are not normalised here: :func:`ecce_from_cells`
    normalises by the segment's total.
    """

    w: np.ndarray
    wy: np.ndarray
    ws: np.ndarray
    w2v: np.ndarray
    wabs: np.ndarray
    rows: np.ndarray

    def merge(self, other: CellSums) -> CellSums:
        return CellSums(*(getattr(self, f) + getattr(other, f) for f in ("w", "wy", "ws", "w2v", "wabs", "rows")))


def uniform_cells(y_prob, n_cells: int) -> np.ndarray:
    """Cell of each score on the uniform grid of ``n_cells`` cells over [0, 1]: ``min(floor(s n), n - 1)``.

    Monotone in the score, so cells are in score order and equal scores share a cell.
    """
    check_option(
        isinstance(n_cells, (int, np.integer)) and 1 <= n_cells <= 2**31,
        f"n_cells is {n_cells!r}: expected an integer from 1 to 2^31",
    )
    s = np.asarray(y_prob, dtype=np.float64)
    return np.minimum((s * n_cells).astype(np.int64), n_cells - 1)


def cell_sums(
    y_true, y_prob, cells, *, n_cells: int, segment_ids=None, n_segments: int = 1, sample_weight=None
) -> CellSums:
    """The per-cell sums :func:`ecce_from_cells` needs, for one batch of rows.

    ``cells``: each row's cell index in ``0..n_cells-1``, nondecreasing in the score (e.g. from
    :func:`uniform_cells`); ``segment_ids``: each row's segment in ``0..n_segments-1`` (or -1: skipped), for
    arrays of shape ``(n_segments, n_cells)``; without it, shape ``(n_cells,)``. Dense: for many segments on a
    fine grid, :func:`ecce_from_cell_entries` takes only the occupied (segment, cell) pairs.
    """
    y, s, w = check_binary(y_true, y_prob, sample_weight)
    cells = np.asarray(cells)
    if cells.shape != s.shape or cells.dtype.kind not in "iu":
        raise CalibcliError(
            f"cells has shape {cells.shape} and type {cells.dtype}: expected integers of shape {s.shape}"
        )
    if len(cells) and (cells.min() < 0 or cells.max() >= n_cells):
        raise CalibcliError(f"cells has values in {cells.min()}..{cells.max()}: expected 0..{n_cells - 1}")
    shape: tuple[int, ...]
    if segment_ids is None:
        key, shape = cells.astype(np.int64), (n_cells,)
    else:
        ids = np.asarray(segment_ids)
        keep = ids >= 0
        y, s, w, cells, ids = y[keep], s[keep], w[keep], cells[keep], ids[keep]
        if len(ids) and ids.max() >= n_segments:
            raise CalibcliError(f"segment_ids has the id {ids.max()}: expected ids below n_segments={n_segments}")
        key, shape = ids.astype(np.int64) * n_cells + cells, (n_segments, n_cells)
    size = int(np.prod(shape))

    def total(values):
        return np.bincount(key, weights=values, minlength=size).reshape(shape)

    u = y - s
    return CellSums(
        w=total(w),
        wy=total(w * y),
        ws=total(w * s),
        w2v=total(w * w * s * (1.0 - s)),
        wabs=total(w * np.abs(u)),
        rows=np.bincount(key, minlength=size).reshape(shape),
    )


def ecce_from_cells(sums: CellSums) -> EcceResult:
    """ECCE statistics from per-cell sums in score order (last axis); leading axes (segments) broadcast.

    ``C`` at the end of cell ``j`` is ``sum_{i<=j} (wy_i - ws_i) / W`` with ``W`` the total weight; ``sigma
    = sqrt(sum w2v) / W``; ``error_bound = max_j wabs_j / W`` (SPEC 9: within a cell ``C`` moves by at most
    the cell's normalised ``sum w |y - s|``). Equal to :func:`ecce` when every cell holds rows of one score.
    """
    W = sums.w.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(W > 0, 1.0 / W, np.nan)
        c = np.cumsum(sums.wy - sums.ws, axis=-1) * inv[..., None]
        sigma = np.sqrt(sums.w2v.sum(axis=-1)) * inv
        bound = sums.wabs.max(axis=-1) * inv if sums.wabs.shape[-1] else np.zeros_like(W)
    mx = c.max(axis=-1) if c.shape[-1] else np.full(W.shape, np.nan)
    mn = c.min(axis=-1) if c.shape[-1] else np.full(W.shape, np.nan)
    scalar = np.ndim(W) == 0
    res = _finish(
        np.atleast_1d(mx),
        np.atleast_1d(mn),
        np.atleast_1d(sigma),
        np.atleast_1d(sums.rows.sum(axis=-1)).astype(np.int64),
        np.atleast_1d(W),
        np.atleast_1d(bound),
        scalar=scalar,
    )
    if scalar:
        return res
    shape = np.shape(W)
    return EcceResult(**{f: np.asarray(getattr(res, f)).reshape(shape) for f in STATISTICS})


def ecce_from_cell_entries(segment, cell, w, wy, ws, w2v, wabs, rows=None, *, n_segments: int) -> EcceResult:
    """:func:`ecce_from_cells` for sparse sums: one entry per occupied (segment, cell) pair, in any order.

    For hundreds of segments on a fine grid (2^16 cells) a dense array would be mostly zeros; a stream keeps
    the occupied pairs only (at most one per row). Entries with the same (segment, cell) are added first.
    Returns arrays of length ``n_segments`` (NaN for segments without entries).
    """
    segment = np.asarray(segment, dtype=np.int64)
    cell = np.asarray(cell, dtype=np.int64)
    vals = [np.asarray(a, dtype=np.float64) for a in (w, wy, ws, w2v, wabs)]
    rows = np.ones(len(segment), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    if any(a.shape != segment.shape for a in (cell, rows, *vals)):
        raise CalibcliError("segment, cell and the sums have different shapes: expected one value per entry")
    if len(segment) and (segment.min() < 0 or segment.max() >= n_segments):
        raise CalibcliError(f"segment has ids in {segment.min()}..{segment.max()}: expected 0..{n_segments - 1}")
    order = np.lexsort((cell, segment))
    segment, cell = segment[order], cell[order]
    vals = [a[order] for a in vals]
    rows = rows[order]
    # Add up duplicate (segment, cell) pairs.
    new = np.r_[True, (segment[1:] != segment[:-1]) | (cell[1:] != cell[:-1])] if len(segment) else np.zeros(0, bool)
    starts = np.flatnonzero(new)
    if len(segment):
        vals = [np.add.reduceat(a, starts) for a in vals]
        rows = np.add.reduceat(rows, starts)
        segment = segment[starts]
    w, wy, ws, w2v, wabs = vals
    total = np.bincount(segment, weights=w, minlength=n_segments)
    var = np.bincount(segment, weights=w2v, minlength=n_segments)
    nrows = np.bincount(segment, weights=rows, minlength=n_segments).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(total > 0, 1.0 / total, 0.0)  # 0, not NaN: a NaN would run into later segments
        sigma = np.where(total > 0, np.sqrt(var) / total, np.nan)
    mx = np.full(n_segments, np.nan)
    mn = np.full(n_segments, np.nan)
    bound = np.full(n_segments, np.nan)
    if len(segment):
        c = np.cumsum((wy - ws) * inv[segment])
        new_seg = np.r_[True, segment[1:] != segment[:-1]]
        first = np.flatnonzero(new_seg)
        present = segment[first]
        before = np.r_[0.0, c][first]
        c = c - np.repeat(before, np.diff(np.r_[first, len(c)]))
        mx[present] = np.maximum.reduceat(c, first)
        mn[present] = np.minimum.reduceat(c, first)
        bound[present] = np.maximum.reduceat(wabs * inv[segment], first)
        empty = ~(total[present] > 0)
        mx[present[empty]] = mn[present[empty]] = bound[present[empty]] = np.nan
    return _finish(mx, mn, sigma, nrows, total, bound)
