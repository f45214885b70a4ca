"""The binary engine of T-Cal: binary and top-label data under the y-bootstrap and the consistency null.

How the resampling is organised (``y-bootstrap``, the default and the fast path). The predictions are sorted once.
At every level the equal-width bins are contiguous runs of the sorted order, so a bin's label-dependent sums are
differences of two prefix sums. Since ``y* in {0, 1}``, ``sum w U = sum w y* - sum w z`` and ``sum w^2 U^2 = sum w^2
y* (1 - 2z) + sum w^2 z^2``: only the prefix sums of ``w y*`` and ``w^2 y* (1 - 2z)`` change between draws. With
unit weights they are an integer count and a fixed-point sum (``1 - 2z`` scaled by ``2^F``, ``F = min(52, 62 -
bits(n))``, so no partial sum overflows int64): integer cumulative sums are exact and several times faster than
floating-point ones. With weights spanning many orders of magnitude (a bin's weight below :data:`COMPENSATED_SHARE`
of the total) the float prefix sums are compensated (:func:`compensated_prefix`), so a bin's sums keep their digits
(rows of weight 1e-16 among rows of weight 1 would otherwise cancel to 0). The rounding of ``1 - 2z`` to ``2^-F``
moves ``T_m`` by at most about ``2^-F`` (about ``1e-13`` at n = 10^6); the observed statistic goes through the same
arithmetic, so the Monte Carlo p-value stays exact. A bin holding one point contributes exactly 0 to ``T_m`` for
every draw, so only bins with at least two points are gathered; such a bin is the same set of points at every level
from the one where it appears to the one where it splits, so each distinct bin is visited once per resample and its
contribution is credited to that range of levels: O(R x n) for all L levels together. NumPy's sweep goes block by
block through the sorted points (drawing ``y*``, extending the prefix sums, finishing the bins that end in the
block), so the working arrays stay in cache; the prefix sums are block-local (plus the few that bins crossing a block
boundary start from). The compiled sweep (:func:`calibcli.tcal.kernels.sweep_streamed`, for large work) keeps only
running sums and a stack of the sums at the starts of the bins still open (:func:`stream_layout`). Several seeded
chunks of resamples go through one sweep together (:data:`SWEEP_ROWS`), and tests of other predictions of the same
rows can compare the same draws with their own predictions (:func:`sweep`). All levels and both combination rules
use the same draws.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.core.binning import uniform_bin_index
from calibcli.core.resampling import _GAMMA, _MIX1, _MIX2
from calibcli.tcal.engine import CHUNK_BYTES
from calibcli.tcal.kernels import nested_bins, sweep_streamed

#: Points per block of the sorted sweep (binary engine): the block's working arrays fit in cache (even: a
#: block's draws start at a pair of points).
_BLOCK_POINTS = 2**15

#: Label vectors swept together (several seeded chunks of resamples): each NumPy call of the sweep then serves
#: this many resamples, so its fixed cost (and the hand-over of the GIL between threads) is shared.
SWEEP_ROWS = 4
#: The same for the compiled sweep, whose loops run over a point's label vectors side by side in vector registers:
#: the more, the faster (1e6 points, per 1,000 resamples: 4 rows 4.2 s of CPU, 8 3.1 s, 16 2.3 s, 32 1.4 s).
COMPILED_SWEEP_ROWS = 64

#: Labels (points x resamples) from which the y-bootstrap's sweep runs as one compiled loop
#: (:func:`calibcli.tcal.kernels.sweep_streamed`) rather than NumPy's passes, and the bins are found by a compiled
#: pass (:func:`calibcli.tcal.kernels.nested_bins`): importing Numba and loading its cached code costs about 0.25 s
#: once per process, NumPy's passes about 7 ns a label on one thread and the loop about 1 ns. Measured as whole
#: ``calibcli tcal`` processes, NumPy against the loop: 1e4 points with 3000 resamples (3e7 labels) 0.52-0.59 s
#: against 0.60-0.69 s, 4e7 and 4.5e7 labels even, 6e7 labels 0.71-0.87 s against 0.60-0.68 s; below, a test does
#: not load it. They are the sweep's two backends: the same statistics within 1e-12 relative (SPEC 8.1;
#: tests/tcal/test_tcal_kernel.py).
COMPILED_LABELS = 1 << 25


def _gap_levels(zs: np.ndarray, n_bins_list: list[int]) -> np.ndarray:
    """For each gap between neighbours of the sorted predictions ``zs`` (gap i between points i - 1 and i,
    i = 1..n-1), the index into ``n_bins_list`` of the first level whose equal-width bins separate them
    (``len(n_bins_list)`` when none does). The levels must be nested (each refines the previous one).

    Dyadic levels (the adaptive test): the bin at m = 2^b is the finest level's bin shifted right, exactly
    (z 2^b is exact in floating point, and floor(x / 2^k) = floor(floor(x) / 2^k)), so two neighbours are
    separated at m exactly when their finest bins differ in a bit at or above the shift: one pass of floating
    point and one search for all levels.
    """
    L = len(n_bins_list)
    top = max(n_bins_list, default=1)
    if L and all(m & (m - 1) == 0 for m in n_bins_list) and top < 2**62:
        finest = uniform_bin_index(zs, top)
        differ = finest[1:] ^ finest[:-1]
        shifts = np.array([top.bit_length() - m.bit_length() for m in n_bins_list], dtype=np.int64)
        thresholds = np.left_shift(np.int64(1), shifts)  # separated at level l  <=>  differ >= 2^shift_l
        order = np.argsort(thresholds, kind="stable")
        separated = np.searchsorted(thresholds[order], differ, side="right")  # levels that separate the gap
        # nested levels: the ones that separate a gap are the finest ones, so the first is L - (their number)
        return (L - separated).astype(np.int64)
    out = np.full(max(len(zs) - 1, 0), L, dtype=np.int64)
    for level in range(L - 1, -1, -1):
        idx = uniform_bin_index(zs, n_bins_list[level])
        out[idx[1:] != idx[:-1]] = level
    return out


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``numpy.unique`` without its sort or hash)."""
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def _nested_bins(gap_part: np.ndarray, P: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct bin of two or more points over nested partitions ``0..P-1`` of ``n`` sorted points.

    ``gap_part[i - 1]`` is the partition where gap i (between points i - 1 and i) becomes a boundary (``P``:
    never). Returns ``(start, end, first, last)``: the bin holds points ``start..end-1`` at partitions
    ``first..last``. Partition by partition, the new boundaries split the bins holding them: the bins they
    end and begin are new there, the bins they fall in end at the previous partition. About n bins in
    all, against the sum over the partitions of their bins (about 20 n for n = 10^6 and 37 levels).
    """
    positions = np.arange(1, n, dtype=np.int64)
    small = np.int16 if P < 2**15 else np.int64
    by_part = np.argsort(gap_part.astype(small), kind="stable")  # by partition, then position (a radix sort)
    cuts = np.concatenate([[0], np.cumsum(np.bincount(gap_part, minlength=P + 1))])
    bounds = np.concatenate([[0], positions[by_part[cuts[0] : cuts[1]]], [n]])
    ids = np.arange(len(bounds) - 1)  # the id of the bin beginning at each boundary (but the last)
    starts, ends, firsts = [bounds[:-1]], [bounds[1:]], [np.zeros(len(ids), dtype=np.int64)]
    died_ids, died_at = [], []
    next_id = len(ids)
    for q in range(1, P):
        new = positions[by_part[cuts[q] : cuts[q + 1]]]  # increasing
        at = np.searchsorted(bounds, new)  # bounds[at - 1] < new < bounds[at]
        split = _distinct_sorted(at - 1)
        died_ids.append(ids[split])
        died_at.append(np.full(len(split), q - 1, dtype=np.int64))
        placed = at + np.arange(len(new))  # where the new boundaries go
        is_new = np.zeros(len(bounds) + len(new), dtype=bool)
        is_new[placed] = True
        merged = np.empty(len(is_new), dtype=np.int64)
        merged[placed] = new
        merged[~is_new] = bounds
        bounds = merged
        grown = np.full(len(ids) + len(new), -1, dtype=np.int64)
        grown[~is_new[:-1]] = ids
        ids = grown
        # the bins they end and the bins they begin, in increasing order
        begun = np.stack([placed - 1, placed], axis=1).reshape(-1)
        begun = begun[np.concatenate([[True], begun[1:] != begun[:-1]])]
        ids[begun] = next_id + np.arange(len(begun))
        next_id += len(begun)
        starts.append(bounds[begun])
        ends.append(bounds[begun + 1])
        firsts.append(np.full(len(begun), q, dtype=np.int64))
    start, end, first = np.concatenate(starts), np.concatenate(ends), np.concatenate(firsts)
    last = np.full(len(start), P - 1, dtype=np.int64)
    if died_ids:
        last[np.concatenate(died_ids)] = np.concatenate(died_at)
    keep = end - start >= 2  # a point alone in its bin contributes 0 at every draw
    return start[keep], end[keep], first[keep], last[keep]


def compensated_prefix(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The prefix sums of ``x`` (a leading 0) as ``(hi, lo)`` pairs: ``hi`` the running sum in floating point,
    ``lo`` the running sum of each addition's rounding error (TwoSum, Knuth; Ogita, Rump & Oishi 2005, "Accurate
    sum and dot product", Algorithm 4.1). An interval's sum, :func:`interval_sums`, is then the difference of two
    prefix sums to about ``eps^2`` of the running sums rather than ``eps``: rows of weight 1e-16 among rows of
    weight 1 keep their digits (plain prefix sums would cancel them to 0 or to rounding noise)."""
    hi = np.zeros(len(x) + 1)
    np.cumsum(x, out=hi[1:])
    lo = np.zeros(len(x) + 1)
    lo[1:] = _two_sum_errors(hi[:-1], x, hi[1:])
    np.cumsum(lo[1:], out=lo[1:])
    return hi, lo


def _two_sum_errors(prev: np.ndarray, x: np.ndarray, cur: np.ndarray) -> np.ndarray:
    """The rounding error of each addition ``cur = fl(prev + x)``, exactly (Knuth's TwoSum, branch-free)."""
    back = cur - prev
    return (prev - (cur - back)) + (x - back)


def interval_sums(prefix: tuple[np.ndarray, np.ndarray], start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The sums of points ``start..end-1`` from :func:`compensated_prefix`'s pairs."""
    hi, lo = prefix
    return (hi[end] - hi[start]) + (lo[end] - lo[start])


#: With weights, the sweep's prefix sums are compensated (:func:`compensated_prefix`) when some bin's weight (or
#: weight squared) is below this share of the total: plain running sums would keep fewer than about 20 of its 52
#: bits (rows of weight 1e-16 among rows of weight 1 would keep none). Above it they keep its digits to the
#: tolerance rule, and the sweep keeps its speed (compensation doubles the prefix sums' memory traffic).
COMPENSATED_SHARE = 2.0**-32


def _bin_inverse_weights(w: np.ndarray | None, bin_start: np.ndarray, bin_end: np.ndarray) -> tuple[np.ndarray, bool]:
    """``1 / W_b`` of every bin (0 for a bin whose rows all weigh 0: it adds nothing, as in exact arithmetic, its
    sums exact zeros), and whether the sweep's prefix sums must be compensated (:data:`COMPENSATED_SHARE`). ``W_b``
    is a compensated sum (:func:`interval_sums`): a bin of rows weighing 1e-16 among rows weighing 1 has its own
    weight, not the rounding noise of the running sums."""
    if w is None:
        return 1.0 / (bin_end - bin_start), False
    positive = np.concatenate([[0], np.cumsum(w > 0, dtype=np.int64)])
    weighted = positive[bin_end] - positive[bin_start] > 0
    w_prefix, w2_prefix = compensated_prefix(w), compensated_prefix(w * w)
    bin_w = interval_sums(w_prefix, bin_start, bin_end)
    bin_w2 = interval_sums(w2_prefix, bin_start, bin_end)
    small = (bin_w < COMPENSATED_SHARE * w_prefix[0][-1]) | (bin_w2 < COMPENSATED_SHARE * w2_prefix[0][-1])
    with np.errstate(divide="ignore"):
        return np.where(weighted, 1.0 / np.where(weighted, bin_w, 1.0), 0.0), bool((weighted & small).any())


def compiled_nested_bins(gap_part: np.ndarray, P: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_nested_bins`' bins (the same set) found in one compiled pass (:func:`calibcli.tcal.kernels.nested_bins`),
    in increasing order of their ends."""
    part = np.empty(n + 1, dtype=np.int64)
    part[0] = part[n] = -1
    part[1:n] = gap_part
    room = [np.empty(2 * n + 1, dtype=np.int64) for _ in range(4)]
    count = nested_bins(part, P, *room)
    start, end, first, last = (a[:count].copy() for a in room)
    return start, end, first, last


@dataclass(frozen=True)
class StreamLayout:
    """The bins as the compiled sweep (:func:`calibcli.tcal.kernels.sweep_streamed`) meets them: ``by_end`` orders
    them by their ends, ``end_ptr[i]..end_ptr[i + 1] - 1`` (in that order) end at sorted position ``i``, ``slot``
    is the stack slot holding the sums at each one's start, ``push_slot[i]`` the slot the sums at position ``i``
    are kept in (-1: no bin starts there)."""

    by_end: np.ndarray
    end_ptr: np.ndarray
    slot: np.ndarray
    push_slot: np.ndarray


def stream_layout(start: np.ndarray, end: np.ndarray, n: int) -> StreamLayout:
    """The compiled sweep's layout of nested bins ``start..end-1`` (any order).

    A start's sums are held from the start to the end of the largest bin beginning there; those intervals are
    nested or disjoint, so a start's slot is its depth among them, the number of the others that contain it:
    two starts of one slot are held one after the other, and at most one per partition is held at a time."""
    by_end = np.arange(len(end)) if np.all(end[1:] >= end[:-1]) else np.argsort(end, kind="stable")
    start, end = start[by_end], end[by_end]
    held = np.full(n + 1, -1, dtype=np.int64)  # the end of the largest bin starting at each position (-1: none)
    np.maximum.at(held, start, end)
    held_from = np.flatnonzero(held >= 0)
    ended_by = np.cumsum(np.bincount(held[held_from], minlength=n + 1))  # held intervals ended at or before
    # intervals containing a start s: those held from s or before, less those ended by s (ended before s began)
    push_slot = np.full(n + 1, -1, dtype=np.int64)
    push_slot[held_from] = np.arange(len(held_from)) - ended_by[held_from]
    end_ptr = np.concatenate([[0], np.cumsum(np.bincount(end, minlength=n + 1))])
    return StreamLayout(by_end, end_ptr, push_slot[start], push_slot)


@dataclass(frozen=True)
class BlockLayout:
    """The bins as the NumPy sweep meets them, block by block of :data:`_BLOCK_POINTS` sorted points
    (:func:`block_layout`)."""

    edges: np.ndarray
    width: int
    kept: np.ndarray
    local_start: np.ndarray
    local_end: np.ndarray
    bin_inv_weight: np.ndarray
    bin_wz: np.ndarray
    blocks: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def block_layout(
    start: np.ndarray, end: np.ndarray, group: np.ndarray, n: int, inv: np.ndarray, wz: np.ndarray
) -> BlockLayout:
    """The NumPy sweep's layout of the bins ``start..end-1`` (of ``group``, ``1 / W_b`` ``inv``, ``sum w z``
    ``wz``): ordered by the block holding their end and, within a block, by group, so each block's
    contributions reduce per group.

    Block-local prefix sums: block k's buffer holds the prefix sums at points a..b of the block (index 0: the
    carry from the blocks before), then the kept prefix sums at the starts of the bins that begin in an earlier
    block than the one holding their end (at most one per partition per block boundary: such bins are nested).
    Each bin's end and start are indices into that buffer."""
    edges = np.append(np.arange(0, n, _BLOCK_POINTS), n)
    block_of_end = (end - 1) // _BLOCK_POINTS
    n_groups = int(group.max(initial=0)) + 1
    # (block, group, end) triples are distinct (two bins ending at one point are nested, so they hold
    # different partitions): one sort of the combined integer where it fits, a lexsort otherwise
    if (int(block_of_end.max(initial=0)) + 1) * n_groups * (n + 1) < 2**62:
        by_block = np.argsort((block_of_end * n_groups + group) * (n + 1) + end)
    else:
        by_block = np.lexsort((end, group, block_of_end))
    start, end = start[by_block], end[by_block]
    group, block_of_end = group[by_block], block_of_end[by_block]
    bounds = np.searchsorted(block_of_end, np.arange(len(edges)))
    width = int(np.diff(edges).max(initial=0))
    block_start = edges[block_of_end]
    crossing = start < block_start
    # prefix positions kept for later blocks, by slot (np.unique's first call imports numpy.ma: 7 ms of a start)
    kept = _distinct_sorted(np.sort(start[crossing]))
    local_end = end - block_start
    local_start = start - block_start
    local_start[crossing] = width + 1 + np.searchsorted(kept, start[crossing])
    kept_block = kept // _BLOCK_POINTS  # kept while sweeping the block holding the position (its index 0 too)
    kept_bounds = np.searchsorted(kept_block, np.arange(len(edges)))
    # per block: (first bin, last bin + 1, reduceat offsets within, their groups, kept positions, their slots)
    blocks = []
    for k in range(len(edges) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        heads_k = np.flatnonzero(np.diff(group[lo:hi], prepend=-1)) if hi > lo else np.zeros(0, dtype=np.int64)
        slots = np.arange(int(kept_bounds[k]), int(kept_bounds[k + 1]))
        where = kept[slots] - int(edges[k])
        blocks.append((lo, hi, heads_k, group[lo:hi][heads_k], where, width + 1 + slots))
    return BlockLayout(edges, width, kept, local_start, local_end, inv[by_block], wz[by_block], blocks)


class SortedScalarEngine:
    """Binary / top-label data (y-bootstrap and consistency nulls): prefix sums over the z-sorted order."""

    def __init__(
        self,
        z: np.ndarray,
        y: np.ndarray,
        w: np.ndarray | None,
        n_bins_list: list[int],
        *,
        order: np.ndarray | None = None,
        resamples: int = 0,
    ):
        """``order``: a candidate for the stable sort order of ``z`` (the order of other predictions of the same
        rows, which a monotone map keeps): used when it is that order (checked in one pass), else ``z`` is sorted.
        ``resamples``: how many y-bootstrap resamples will be swept (with the points, it chooses the backend)."""
        if order is None or not is_stable_order(z, order):
            order = stable_argsort(z)
        self.order = order
        self.z = z[order]
        self.y = y[order]
        self.w = None if w is None else w[order]
        self.n = len(z)
        self.total_weight = float(self.n if w is None else w.sum())
        zs = self.z
        w2 = np.ones_like(zs) if self.w is None else self.w**2
        # Each gap between neighbours of the sorted order (gap i lies between points i - 1 and i) becomes a bin
        # boundary at some level and stays one at every finer level (nested partitions).
        gap_level = _gap_levels(zs, n_bins_list)  # index of the first requested level holding it (len = never)
        per_level = np.cumsum(np.bincount(gap_level, minlength=len(n_bins_list) + 1))[: len(n_bins_list)]
        self.nonempty: list[int] = [int(1 + c) for c in per_level]
        # Levels with as many bins as the previous one hold the same (nested) partition: one distinct
        # partition per change, and level_of maps each requested level to its partition.
        new_partition = np.concatenate([[True], np.diff(per_level) != 0]) if len(per_level) else np.zeros(0, bool)
        self.level_of: list[int] = [int(j) for j in np.cumsum(new_partition) - 1]
        P = self.n_parts = int(new_partition.sum())
        gap_part = np.append(np.asarray(self.level_of, dtype=np.int64), P)[gap_level]
        #: the y-bootstrap's sweep as one compiled loop (:data:`COMPILED_LABELS`); tests set it either way
        self.compiled = self.n * resamples >= COMPILED_LABELS
        bin_start, bin_end, first, last = (compiled_nested_bins if self.compiled else _nested_bins)(gap_part, P, self.n)
        bin_inv, self.compensated = _bin_inverse_weights(self.w, bin_start, bin_end)
        self._bins = (bin_start, bin_end, first, last, bin_inv)  # for the consistency null's partitions
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._gap_part = gap_part  # (the consistency null's singletons, made when first asked for)
        self._alone: tuple[np.ndarray, np.ndarray] | None = None
        # Group the bins by (first, last) partition, group first * P + last: the sum of a group's contributions
        # counts for partitions first..last, a (groups x partitions) 0/1 matrix.
        self.bin_group = first * P + last
        self.group_spans = np.zeros((P * P, P))
        for f in range(P):
            for t in range(f, P):
                self.group_spans[f * P + t, f : t + 1] = 1.0
        # The deterministic parts of every bin: sum w z (subtracted from sum w y* to give sum w U) and
        # sum w^2 z^2 (the part of sum w^2 U^2 = sum w^2 y* (1 - 2z) + sum w^2 z^2 that does not move).
        # (compensated sums: a bin's parts keep their digits whatever the weights of the rows before it)
        self.bin_wz = interval_sums(compensated_prefix(zs if self.w is None else self.w * zs), bin_start, bin_end)
        fixed_part = interval_sums(compensated_prefix(w2 * zs * zs), bin_start, bin_end) * bin_inv
        self.const = np.bincount(self.bin_group, weights=fixed_part, minlength=P * P) @ self.group_spans
        # What a positive (y* = 1) adds to the two prefix sums. With unit weights these are an integer
        # count and (1 - 2z) in fixed point, so the prefix sums are exact integer cumsums (several
        # times faster than floating-point ones, whose serial additions cannot be vectorised).
        # Positives counted in int32 while n allows (exact, and half the bytes to sum and gather of int64).
        self.count_dtype = (np.int32 if self.n < 2**31 else np.int64) if self.w is None else np.float64
        self.step_b: np.ndarray
        # the compiled loop's draws: u = bits / 2^32 < z  <=>  bits < z 2^32 (exact)  <=>  bits < ceil(z 2^32)
        self.thresholds = np.ceil(self.z * 2.0**32).astype(np.int64)
        # what a positive adds to the first prefix sum: a count of 1, or its weight
        self.w_a = np.ones(self.n, dtype=self.count_dtype) if self.w is None else self.w
        if self.w is None:
            self.fixed_bits = min(52, 62 - int(self.n).bit_length())
            self.step_b = np.rint((1.0 - 2.0 * zs) * 2.0**self.fixed_bits).astype(np.int64)
            self.scale_b = 2.0**-self.fixed_bits
        else:
            self.step_b = self.w**2 * (1.0 - 2.0 * zs)
            self.scale_b = 1.0
        self._layouts: dict[str, Any] = {}
        self._local = threading.local()

    @property
    def streamed(self) -> StreamLayout:
        """The compiled sweep's layout of the bins (:func:`stream_layout`), made when first asked for."""
        if "stream" not in self._layouts:
            layout = stream_layout(self._bins[0], self._bins[1], self.n)
            # the bins' numbers in the order the sweep meets them, stored before the layout: a sweep thread that
            # finds the layout (resample_all's threads ask for it at once) finds these too
            self._layouts["stream_bins"] = tuple(
                a[layout.by_end] for a in (self.bin_wz, self.bin_inv_weights, self.bin_group)
            )
            self._layouts["stream"] = layout
        return self._layouts["stream"]

    @property
    def blocked(self) -> BlockLayout:
        """The NumPy sweep's layout of the bins (:func:`block_layout`), made when first asked for."""
        if "blocks" not in self._layouts:
            self._layouts["blocks"] = block_layout(
                self._bins[0], self._bins[1], self.bin_group, self.n, self.bin_inv_weights, self.bin_wz
            )
        return self._layouts["blocks"]

    @property
    def bin_inv_weights(self) -> np.ndarray:
        """``1 / W_b`` of every distinct bin (of two or more points)."""
        return self._bins[4]

    @property
    def n_kept(self) -> int:
        """Prefix sums the NumPy sweep keeps for bins crossing a block boundary."""
        return len(self.blocked.kept)

    def _workspace(self, rows: int) -> dict:
        """Per-thread buffers, reused from sweep to sweep (fresh large arrays would cost a page fault per page)."""
        space = getattr(self._local, "space", None)
        if space is None or space["rows"] < rows:
            layout = self.blocked
            most_bins = max([blk[1] - blk[0] for blk in layout.blocks] + [0])
            prefix_dtype = np.int64 if self.w is None else np.float64
            local = layout.width + 1 + len(layout.kept)
            space = {
                "rows": rows,
                "positive": np.empty((rows, layout.width), dtype=bool),
                "A": np.empty((rows, local), dtype=self.count_dtype),
                "B": np.empty((rows, local), dtype=prefix_dtype),
                # with weights: the compensations of the two prefix sums (compensated_prefix), and a point's steps
                "AL": np.empty((rows, local) if self.compensated else (0, 0)),
                "BL": np.empty((rows, local) if self.compensated else (0, 0)),
                "X": np.empty((rows, layout.width) if self.compensated else (0, 0)),
                "hiA": np.empty((rows, most_bins), dtype=self.count_dtype),
                "loA": np.empty((rows, most_bins), dtype=self.count_dtype),
                "hi": np.empty((rows, most_bins), dtype=prefix_dtype),
                "lo": np.empty((rows, most_bins), dtype=prefix_dtype),
                "S": np.empty((rows, most_bins)),
                "Q": np.empty((rows, most_bins)),
            }
            self._local.space = space
        return space

    def _begin(self, rows: int) -> tuple[dict, np.ndarray]:
        """A sweep over ``rows`` label vectors: this thread's buffers and the per-group totals (zeros)."""
        return self._workspace(rows), np.zeros((rows, self.group_spans.shape[0]))

    def _swept(self, keys: np.ndarray) -> np.ndarray:
        """The per-group totals (rows x groups) of the resamples of ``keys`` (a point is positive when its
        uniform, :func:`_uniforms`, is below its prediction): block by block with NumPy's passes, or past
        :data:`COMPILED_LABELS` labels in one compiled loop that makes the same draws (its sums within 1e-12
        relative)."""
        if self.compiled:
            layout = self.streamed
            wz, inv, group = self._layouts["stream_bins"]
            totals = np.zeros((self.group_spans.shape[0], len(keys)))
            sweep_streamed(
                keys, self.thresholds, self.w_a, self.step_b, self.scale_b, self.compensated, layout.end_ptr,
                layout.slot, wz, inv, group, layout.push_slot, totals,
            )  # fmt: skip
            return totals.T
        space, totals = self._begin(len(keys))
        edges = self.blocked.edges
        for k in range(len(edges) - 1):
            a, b = int(edges[k]), int(edges[k + 1])
            positive = space["positive"][: len(keys), : b - a]
            _positives(keys, a, b, self.thresholds, positive)
            self._block(k, positive, space, totals)
        return totals

    def _block(self, k: int, positive: np.ndarray, space: dict, totals: np.ndarray) -> None:
        """Sweep block ``k`` of the sorted points, given their labels ``positive`` (rows x points of the block):
        extend the prefix sums, then add the contributions of the bins ending in the block to ``totals``.

        Per bin, ``sum w U = sum w y - sum w z`` and ``sum w^2 U^2 = sum w^2 y (1 - 2z) + sum w^2 z^2``; the
        label-dependent sums are differences of two prefix sums over the sorted order. Every distinct bin (of
        two or more points) of every partition is gathered once, in the block holding its end; its
        contribution ``((sum w U)^2 - sum w^2 U^2) / W_b`` then counts for the consecutive partitions that
        contain it.
        """
        layout = self.blocked
        first_bin, end_bin, heads, groups, kept_at, kept_slots = layout.blocks[k]
        a, b = int(layout.edges[k]), int(layout.edges[k + 1])
        rows = positive.shape[0]
        A, B = space["A"][:rows], space["B"][:rows]
        weighted = self.compensated
        AL, BL = space["AL"][:rows], space["BL"][:rows]  # (their compensations, with weights: empty otherwise)
        prefixes = (A, B, AL, BL) if weighted else (A, B)
        for prefix in prefixes:  # the carry: the prefix sums at the end of the previous block (its last index)
            prefix[:, 0] = prefix[:, layout.width] if k else 0
        A_k, B_k = A[:, 1 : b - a + 1], B[:, 1 : b - a + 1]
        if self.w is None:  # from the block's own zero, the carry added after (integer sums, unit weights: exact)
            np.cumsum(positive, axis=1, out=A_k)
            np.multiply(positive, self.step_b[a:b], out=B_k)
            np.cumsum(B_k, axis=1, out=B_k)
            if k:  # (the first block's carry is zero)
                A_k += A[:, :1]
                B_k += B[:, :1]
        elif not weighted:  # float running sums on from the carry: the compiled loop's additions
            for prefix, step in ((A, self.w_a[a:b]), (B, self.step_b[a:b])):
                np.multiply(positive, step, out=prefix[:, 1 : b - a + 1])
                np.cumsum(prefix[:, : b - a + 1], axis=1, out=prefix[:, : b - a + 1])
        else:  # compensated prefix sums, running on from the carry (compensated_prefix, row by row)
            for hi, lo, step in ((A, AL, self.w_a[a:b]), (B, BL, self.step_b[a:b])):
                x = space["X"][:rows, : b - a]
                np.multiply(positive, step, out=x)
                head = hi[:, : b - a + 1]
                head[:, 1:] = x
                np.cumsum(head, axis=1, out=head)
                lo[:, 1 : b - a + 1] = _two_sum_errors(head[:, :-1], x, head[:, 1:])
                np.cumsum(lo[:, : b - a + 1], axis=1, out=lo[:, : b - a + 1])
        if len(kept_at):  # the prefix sums later blocks' bins start from
            for prefix in prefixes:
                prefix[:, kept_slots] = prefix[:, kept_at]
        if end_bin == first_bin:
            return
        count = end_bin - first_bin
        starts, ends = layout.local_start[first_bin:end_bin], layout.local_end[first_bin:end_bin]
        hi, lo = space["hi"][:rows, :count], space["lo"][:rows, :count]
        S, Q = space["S"][:rows, :count], space["Q"][:rows, :count]

        def bin_sums(prefix: np.ndarray, hi=hi, lo=lo) -> np.ndarray:
            # prefix[end] - prefix[start], into `hi`
            np.take(prefix, ends, axis=1, out=hi, mode="wrap")  # indices are valid; "wrap": no buffered copy
            np.take(prefix, starts, axis=1, out=lo, mode="wrap")
            return np.subtract(hi, lo, out=hi)

        sum_a = bin_sums(A, space["hiA"][:rows, :count], space["loA"][:rows, :count])
        if weighted:  # (hi_e - hi_s) + (lo_e - lo_s), as interval_sums
            sum_a += bin_sums(AL, space["hi"][:rows, :count], space["lo"][:rows, :count])
        np.subtract(sum_a, layout.bin_wz[first_bin:end_bin], out=S)
        np.multiply(S, S, out=S)
        sum_b = bin_sums(B)
        if weighted:
            sum_b += bin_sums(BL, space["hiA"][:rows, :count], space["loA"][:rows, :count])
        np.multiply(sum_b, self.scale_b, out=Q)
        S -= Q
        S *= layout.bin_inv_weight[first_bin:end_bin]
        totals[:, groups] += np.add.reduceat(S, heads, axis=1)

    def _end(self, totals: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
        """``T_m`` per distinct partition from a sweep's per-group totals: ``sizes`` rows at a time (each chunk's
        rows as one product, as a sweep of that chunk alone computes them)."""
        parts, r = [], 0
        for size in sizes:
            parts.append(np.array(totals[r : r + size]) @ self.group_spans)
            r += size
        out = np.concatenate(parts, axis=0)
        out -= self.const
        out /= self.total_weight
        return out

    def _statistics(self, rows: int, labels: Callable[[int, int, np.ndarray], None]) -> np.ndarray:
        """``T_m`` for ``rows`` label vectors and every distinct partition.

        ``labels(a, b, out)`` writes the labels of sorted points ``a..b-1`` (rows x (b - a), bool); the sweep
        then goes block by block (:meth:`_block`).
        """
        space, totals = self._begin(rows)
        edges = self.blocked.edges
        for k in range(len(edges) - 1):
            a, b = int(edges[k]), int(edges[k + 1])
            positive = space["positive"][:rows, : b - a]
            labels(a, b, positive)
            self._block(k, positive, space, totals)
        return self._end(totals, [rows])

    @property
    def alone(self) -> tuple[np.ndarray, np.ndarray]:
        """The consistency null's singletons: a point alone in its bin at partition j stays alone at finer ones.
        ``(order, count)``: the points by the first partition where they are alone (both its gaps are
        boundaries), and per partition how many of that order are alone (a prefix of it)."""
        if self._alone is None:
            gap_part, P = self._gap_part, self.n_parts
            first_alone = np.maximum(np.concatenate([[0], gap_part]), np.concatenate([gap_part, [0]]))
            small = np.int16 if P < 2**15 else np.int64  # (small integers: a radix sort, the same stable order)
            order = np.argsort(first_alone.astype(small), kind="stable")
            self._alone = order, np.searchsorted(first_alone[order], np.arange(P), side="right")
        return self._alone

    @property
    def parts(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per distinct partition, ``(starts, ends, 1 / W_b)`` of its bins of two or more points, in sorted order
        (the consistency null's layout; made when first asked for)."""
        if self._parts is None:
            by_start = np.argsort(self._bins[0], kind="stable")
            start, end, first, last, inv = (a[by_start] for a in self._bins)
            parts = []
            for j in range(self.n_parts):
                at = (first <= j) & (last >= j)
                parts.append((start[at], end[at], inv[at]))
            self._parts = parts
        return self._parts

    def observed(self) -> np.ndarray:
        if self.compiled:
            return self._observed_streamed()
        return self.statistics_of(self.y[None, :], sorted_order=True)[0]

    def _observed_streamed(self) -> np.ndarray:
        """``T_m`` of the observed labels with the compiled sweep's arithmetic: the same running sums, formulas and
        order of additions into each group's total, so the observed statistic and the resampled ones are the
        same function of the labels (ties between them, where labels tie, stay ties)."""
        layout = self.streamed
        positive = self.y > 0.5
        start, end = self._bins[0][layout.by_end], self._bins[1][layout.by_end]
        wz, inv, group = self._layouts["stream_bins"]
        if self.compensated:
            S = interval_sums(compensated_prefix(np.where(positive, self.w_a, 0.0)), start, end) - wz
            Q = interval_sums(compensated_prefix(np.where(positive, self.step_b, 0.0)), start, end)
        else:
            A = np.concatenate([[0], np.cumsum(np.where(positive, self.w_a, 0))])
            B = np.concatenate([[0], np.cumsum(np.where(positive, self.step_b, 0))])
            S = (A[end] - A[start]).astype(np.float64) - wz
            Q = (B[end] - B[start]).astype(np.float64) * self.scale_b
        totals = np.bincount(group, weights=(S * S - Q) * inv, minlength=self.group_spans.shape[0])
        return self._end(totals[None, :], [1])[0]

    def statistics_of(self, labels_rows: np.ndarray, *, sorted_order: bool = False) -> np.ndarray:
        """``T_m`` per distinct partition for each row of 0/1 labels (rows x n; benchmarks test many
        label vectors on one z this way). Labels are in input order unless ``sorted_order``."""
        positive = np.asarray(labels_rows) > 0.5
        if not sorted_order:
            positive = positive[:, self.order]

        def labels(a: int, b: int, out: np.ndarray) -> None:
            out[:] = positive[:, a:b]

        return self._statistics(positive.shape[0], labels)

    def resampled(self, rng: np.random.Generator, rows: int, null: str) -> np.ndarray:
        return self.resampled_chunks([(rng, rows)], null)

    def resampled_chunks(self, chunks: Sequence[tuple[np.random.Generator, int]], null: str) -> np.ndarray:
        if null == "consistency":
            return np.concatenate([self._consistency(rng, rows) for rng, rows in chunks], axis=0)
        return sweep([self], chunks)[0]

    def sweep_rows(self) -> int:
        return COMPILED_SWEEP_ROWS if self.compiled else SWEEP_ROWS

    def _consistency(self, rng: np.random.Generator, rows: int) -> np.ndarray:
        """Consistency resampling (unit weights): ``z*`` drawn with replacement, ``y* ~ Bernoulli(z*)``.

        The resample is described by copies ``k_i`` of every sorted point and positives ``s_i`` among
        them; a bin then has ``n_b = sum k``, ``sum U = sum (s - k z)`` and
        ``sum U^2 = sum (s (1 - 2z) + k z^2)``; bins with fewer than two copies contribute 0.
        """
        n, z = self.n, self.z
        alone_order, alone_count = self.alone
        J = rng.integers(0, n, size=(rows, n))
        positive = rng.random((rows, n)) < z[J]
        J += (np.arange(rows) * n)[:, None]
        k = np.bincount(J.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
        pos = np.bincount(J.ravel(), weights=positive.ravel(), minlength=rows * n).reshape(rows, n)
        A = pos - k * z
        B = pos * (1.0 - 2.0 * z) + k * (z * z)
        # points alone in their bin: contribution (A^2 - B) / k when k >= 2, else 0
        alone = np.where(k >= 2, (A * A - B) / np.maximum(k, 1.0), 0.0)
        alone_prefix = np.zeros((rows, n + 1))
        np.cumsum(np.take(alone, alone_order, axis=1), axis=1, out=alone_prefix[:, 1:])
        C = np.zeros((rows, n + 1), dtype=np.complex128)
        body = C[:, 1:]
        body.real = A
        body.imag = B
        np.cumsum(body, axis=1, out=body)
        Ck = np.zeros((rows, n + 1))
        np.cumsum(k, axis=1, out=Ck[:, 1:])
        out = np.take(alone_prefix, alone_count, axis=1)
        for j, (s, e, _) in enumerate(self.parts):
            if len(s) == 0:
                continue
            S = np.take(C, e, axis=1)
            S -= np.take(C, s, axis=1)
            nb = np.take(Ck, e, axis=1) - np.take(Ck, s, axis=1)
            contrib = S.real * S.real - S.imag
            out[:, j] += np.where(nb >= 2, contrib / np.maximum(nb, 1.0), 0.0).sum(axis=1)
        return out / n

    def chunk_rows(self) -> int:
        return max(1, CHUNK_BYTES // (48 * self.n))


def stable_argsort(z: np.ndarray) -> np.ndarray:
    """``numpy.argsort(z, kind="stable")``: NumPy's unstable sort (several times faster on floats), which is the
    stable one where no two values tie (checked in one pass), else the stable sort."""
    order = np.argsort(z)
    zs = z[order]
    return np.argsort(z, kind="stable") if np.any(zs[1:] == zs[:-1]) else order


def is_stable_order(z: np.ndarray, order: np.ndarray) -> bool:
    """Whether ``order`` is ``numpy.argsort(z, kind="stable")``: ``z[order]`` non-decreasing and, among equal
    values, increasing row indices (the one permutation a stable sort returns). One pass, no sort."""
    if len(order) != len(z):
        return False
    zs = z[order]
    rising = zs[1:] > zs[:-1]
    return bool(np.all(rising | ((zs[1:] == zs[:-1]) & (order[1:] > order[:-1]))))


def sweep(engines: Sequence[SortedScalarEngine], chunks: Sequence[tuple[np.random.Generator, int]]) -> list[np.ndarray]:
    """y-bootstrap statistics of several seeded chunks of resamples for several engines over the same number of
    points, in one sweep: per engine, ``sum(rows)`` x its distinct partitions, equal to each chunk's
    ``engine.resampled(rng, rows, "y-bootstrap")`` stacked.

    Each chunk's generator gives each of its resamples one 64-bit key (:func:`_keys`), and the uniforms of the
    resample are counter-based draws of that key at the sorted points' positions (:func:`_uniforms`); a point's
    label is ``uniform < z`` at its place in the sorted order, so engines of other predictions of the same number
    of rows (the held-out comparison's methods) compare the same uniforms with their own sorted predictions,
    each engine making them again from the keys as it sweeps (a draw costs less than reading a stored one back).
    """
    first = engines[0]
    if any(e.n != first.n for e in engines):
        raise ValueError("engines sharing draws must hold the same number of points")
    if len({id(e) for e in engines}) != len(engines):  # (an engine's buffers serve one sweep at a time)
        raise ValueError("an engine can take part in a sweep once")
    keys = _keys(chunks)
    sizes = [size for _, size in chunks]
    return [engine._end(engine._swept(keys), sizes) for engine in engines]


class SharedDraws:
    """Binary engines over the same number of points resampled together under the y-bootstrap (a
    :class:`~calibcli.tcal.engine.Resampler`): one set of uniform draws, compared with each engine's sorted
    predictions (:func:`sweep`). The statistics are each engine's, side by side (:meth:`split` parts them)."""

    def __init__(self, engines: Sequence[SortedScalarEngine]):
        if not engines or any(e.n != engines[0].n for e in engines):
            raise ValueError("engines sharing draws must hold the same number of points")
        self.engines = list(engines)

    def chunk_rows(self) -> int:
        return self.engines[0].chunk_rows()  # (a function of the number of points: the same for all)

    def sweep_rows(self) -> int:
        return min(engine.sweep_rows() for engine in self.engines)

    def resampled_chunks(self, chunks: Sequence[tuple[np.random.Generator, int]], null: str) -> np.ndarray:
        if null != "y-bootstrap":
            raise ValueError(f"only the y-bootstrap draws labels alone (got the {null} null)")
        return np.concatenate(sweep(self.engines, chunks), axis=1)

    def split(self, star: np.ndarray) -> list[np.ndarray]:
        """Each engine's columns of what :meth:`resampled_chunks` returned."""
        edges = np.cumsum([0] + [e.n_parts for e in self.engines])
        return [star[:, lo:hi] for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


def _keys(chunks: Sequence[tuple[np.random.Generator, int]]) -> np.ndarray:
    """One 64-bit key per resample of the chunks (uint64, in order), each chunk's from its own generator."""
    return np.concatenate(
        [rng.integers(0, 2**64 - 1, size=size, dtype=np.uint64, endpoint=True) for rng, size in chunks]
    )


def _mixed(keys: np.ndarray, a: int, b: int) -> np.ndarray:
    """SplitMix64's outputs (rows x pairs) that draw sorted points ``a..b-1`` (``a`` even) under each resample's
    key: the pair of points ``j``, ``j + 1`` (``j`` even) takes the output at position ``j // 2 + 1`` of the key's
    stream (Steele, Lea & Flood 2014; the mixing of :mod:`calibcli.core.resampling`)."""
    pairs = (b - a + 1) // 2
    position = (np.arange(a // 2, a // 2 + pairs, dtype=np.uint64) + np.uint64(1)) * _GAMMA
    with np.errstate(over="ignore"):
        x = keys[:, None] + position[None, :]
        x ^= x >> np.uint64(30)
        x *= _MIX1
        x ^= x >> np.uint64(27)
        x *= _MIX2
        x ^= x >> np.uint64(31)
    return x


def _uniforms(keys: np.ndarray, a: int, b: int, out: np.ndarray) -> None:
    """The uniforms of sorted points ``a..b-1`` (``a`` even) under each resample's key into ``out`` (rows x
    points): point ``j`` takes half of its pair's output (:func:`_mixed`), the high 32 bits for even ``j``, the low
    ones for odd ``j``, as ``bits / 2^32``: two points' draws from one 64-bit output. The NumPy form of the draws
    that :func:`calibcli.tcal.kernels.sweep_streamed` makes in its loop, the same numbers."""
    x = _mixed(keys, a, b)
    np.multiply(x >> np.uint64(32), 2.0**-32, out=out[:, 0::2])
    np.multiply(x[:, : (b - a) // 2] & np.uint64(0xFFFFFFFF), 2.0**-32, out=out[:, 1::2])


def _positives(keys: np.ndarray, a: int, b: int, thresholds: np.ndarray, out: np.ndarray) -> None:
    """The labels ``uniform < z`` of sorted points ``a..b-1`` (:func:`_uniforms`) into ``out`` (rows x points,
    bool), compared as integers: ``bits / 2^32 < z`` exactly when ``bits < ceil(z 2^32)`` (``thresholds``, all
    points), as the compiled loop compares them. The same labels, without the uniforms' two conversions to float."""
    x = _mixed(keys, a, b)  # (the halves below 2^32 viewed as int64, as the thresholds are)
    np.less((x >> np.uint64(32)).view(np.int64), thresholds[a:b:2], out=out[:, 0::2])
    x &= np.uint64(0xFFFFFFFF)
    np.less(x[:, : (b - a) // 2].view(np.int64), thresholds[a + 1 : b : 2], out=out[:, 1::2])
