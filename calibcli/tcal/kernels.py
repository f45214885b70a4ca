"""T-Cal's y-bootstrap sweep, compiled (:func:`calibcli.core.compiled.compiled`; SPEC 4.2, seed 004).

:func:`sweep_streamed` is :class:`calibcli.tcal.scalar.SortedScalarEngine`'s sweep for a set of label vectors
in one pass over the sorted points: each point's label ``y* = [u < z]`` (the counter-based uniforms ``u`` of each
resample's key, :func:`calibcli.tcal.scalar._uniforms`, made here in registers: two points from one 64-bit
output) extends the running sums of ``w y*`` and ``w^2 y* (1 - 2z)``, and each distinct bin is finished at its
end as ``((sum w U)^2 - sum w^2 U^2) / W_b`` from the running sums and those kept at its start, added into its
group's total. The bins of all partitions are nested intervals, so the starts still needed at any point are a
chain of at most one per partition: a stack of a few dozen kept sums (:func:`calibcli.tcal.scalar.stream_layout`
gives each its slot), which stays in the first-level cache; no prefix sum is written to memory.

It is the compiled backend of the sweep whose NumPy backend (the same draws, ``np.less``, two ``np.cumsum`` per
block, the gathers at the bins' ends and starts, ``np.add.reduceat`` over the groups) is the reference: the same
labels, running sums and formulas, a group's contributions added in the order of the bins' ends rather than
NumPy's pairwise one, so the statistics agree within 1e-12 relative (SPEC 8.1; ``tests/tcal/test_tcal_kernel.py``).
Integer running sums (unit weights) are exact in any order; float ones (weights) are the NumPy backend's running
sums, addition for addition, compensated (TwoSum) where tiny bins need it.

:func:`nested_bins` finds the distinct bins of nested partitions in one pass with a stack (the bins are a
laminar family: the pairs of boundaries with only later boundaries between them), where the NumPy form
(:func:`calibcli.tcal.scalar._nested_bins`) takes one pass per partition.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled
from calibcli.core.splitmix import splitmix64


@compiled
def sweep_streamed(
    keys, thresholds, w_a, step_b, scale_b, compensated, end_ptr, bin_slot, bin_wz, bin_inv, bin_group, push_slot,
    totals,
):  # fmt: skip
    """Every label vector's bins summed into ``totals`` (groups x rows, added into), one row per key.

    ``keys`` (rows,) uint64: the rows' keys; sorted point ``j``'s draw is 32 bits of SplitMix64's output at
    position ``j // 2 + 1`` (high for even ``j``, low for odd), positive when ``bits < thresholds[j]``
    (``ceil(z 2^32)``, int64); ``w_a``, ``step_b`` (n): what a positive adds to the two running sums (a count of 1
    or ``w``; ``w^2 (1 - 2z)`` or its fixed-point integer, scaled back by ``scale_b``); ``compensated``: the float
    running sums carry their TwoSum errors (:func:`calibcli.tcal.scalar.compensated_prefix`), a bin's sum being
    ``(hi_e - hi_s) + (lo_e - lo_s)``. At sorted position ``i`` (0..n, before point ``i``) the bins
    ``end_ptr[i]..end_ptr[i + 1] - 1`` end: their start's sums are in slot ``bin_slot`` of the stack, ``bin_wz``
    (sum w z), ``bin_inv`` (1 / W_b) and ``bin_group`` (the row of ``totals``) are theirs; then, when
    ``push_slot[i] >= 0``, the running sums are kept in that slot (a bin starts there)."""
    rows = keys.shape[0]
    n = thresholds.shape[0]
    depth = 1
    for i in range(push_slot.shape[0]):
        depth = max(depth, push_slot[i] + 1)
    gamma = np.uint64(0x9E3779B97F4A7C15)
    low = np.uint64(0xFFFFFFFF)
    zero_a = abs(w_a[0]) * 0  # 0 (or +0.0) of each running sum's type
    zero_b = abs(step_b[0]) * 0
    ca = np.full(rows, zero_a)  # the running sums, and their TwoSum errors when compensated
    cb = np.full(rows, zero_b)
    la = np.zeros(rows)
    lb = np.zeros(rows)
    ka = np.zeros((depth, rows), dtype=ca.dtype)  # the stack of sums kept at the starts of bins not yet ended
    kb = np.zeros((depth, rows), dtype=cb.dtype)
    kla = np.zeros((depth, rows))
    klb = np.zeros((depth, rows))
    bits = np.empty(rows, np.int64)
    spare = np.empty(rows, np.int64)  # the low halves of the last output: the next (odd) point's draws
    for i in range(n + 1):
        for k in range(end_ptr[i], end_ptr[i + 1]):  # the bins ending here, each read once for all rows
            s, wz, iv, g = bin_slot[k], bin_wz[k], bin_inv[k], bin_group[k]
            if compensated:
                for r in range(rows):
                    sa = ((ca[r] - ka[s, r]) + (la[r] - kla[s, r])) - wz
                    sb = (cb[r] - kb[s, r]) + (lb[r] - klb[s, r])
                    totals[g, r] += (sa * sa - sb) * iv
            else:
                for r in range(rows):
                    sa = float(ca[r] - ka[s, r]) - wz
                    sb = float(cb[r] - kb[s, r]) * scale_b
                    totals[g, r] += (sa * sa - sb) * iv
        p = push_slot[i]
        if p >= 0:
            for r in range(rows):
                ka[p, r] = ca[r]
                kb[p, r] = cb[r]
            if compensated:
                for r in range(rows):
                    kla[p, r] = la[r]
                    klb[p, r] = lb[r]
        if i == n:
            break
        if i % 2 == 0:  # two points' draws from one 64-bit output, every row side by side
            step = np.uint64(i // 2 + 1) * gamma
            for r in range(rows):
                x = splitmix64(keys[r] + step)
                bits[r] = np.int64(x >> np.uint64(32))
                spare[r] = np.int64(x & low)
        else:
            for r in range(rows):
                bits[r] = spare[r]
        t, wa, sb = thresholds[i], w_a[i], step_b[i]
        if compensated:
            for r in range(rows):  # branch-free: a negative adds 0 (and a TwoSum error of 0)
                positive = bits[r] < t
                xa = wa * positive
                xb = sb * positive
                prev = ca[r]
                ca[r] = prev + xa
                back = ca[r] - prev
                la[r] += (prev - (ca[r] - back)) + (xa - back)
                prev = cb[r]
                cb[r] = prev + xb
                back = cb[r] - prev
                lb[r] += (prev - (cb[r] - back)) + (xb - back)
        else:
            for r in range(rows):  # branch-free (a label is a coin toss for the branch predictor)
                positive = bits[r] < t
                ca[r] += wa * positive
                cb[r] += sb * positive


@compiled
def nested_bins(part, P, start, end, first, last):
    """The distinct bins of two or more points over nested partitions ``0..P-1`` of ``n`` sorted points, in
    increasing order of their ends (smaller bins first among equal ends); returns how many.

    ``part`` (n + 1,) int64: at sorted position ``g`` (before point ``g``) the partition from which it is a bin
    boundary (``P``: never; positions 0 and n: -1, always). A bin ``[s, e)`` holds at partitions ``max(part[s],
    part[e])`` to ``min(part[s + 1..e - 1]) - 1``. The stack holds the positions whose ``part`` is below every
    later one seen (increasing up the stack): each is a bin's start with the current position as its end exactly
    when the position above it in the stack has a larger ``part`` than the current one (the minimum between
    them), so every bin is found once, at its end. ``start``, ``end``, ``first``, ``last``: room for ``2 n`` bins."""
    n1 = part.shape[0]
    stack = np.empty(P + 3, np.int64)
    depth = 0
    count = 0
    for e in range(n1):
        v = part[e]
        j = depth - 2  # (the top is e - 1: a bin of one point)
        while j >= 0:
            inner = part[stack[j + 1]]  # the smallest part strictly between stack[j] and e
            if inner <= v:
                break
            s = stack[j]
            f = max(part[s], v, 0)
            if f < inner:  # (the bin holds at some partition: its ends are boundaries before its inside is)
                start[count] = s
                end[count] = e
                first[count] = f
                last[count] = inner - 1
                count += 1
            j -= 1
        while depth > 0 and part[stack[depth - 1]] >= v:
            depth -= 1
        stack[depth] = e
        depth += 1
    return count
