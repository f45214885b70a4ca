"""T-Cal's y-bootstrap sweep, compiled (:func:`calibcli.core.compiled.compiled`; SPEC 4.2, seed 004).

:func:`sweep_block` is one block of :meth:`calibcli.tcal.scalar.SortedScalarEngine`'s sweep for a set of label
vectors: the labels ``y* = [u < z]`` of the block's points (the counter-based uniforms ``u`` of each resample's
key, :func:`calibcli.tcal.scalar._uniforms`, made here in registers: two points from one 64-bit output), the
prefix sums of ``w y*`` and ``w^2 y* (1 - 2z)`` extended over the block, and each bin ending in the block turned
into its contribution ``((sum w U)^2 - sum w^2 U^2) / W_b``, summed per group of bins into the resample's totals.
It is the compiled backend of the sweep whose NumPy backend (the same draws, ``np.less``, two ``np.cumsum``, the
carries, the gathers at the bins' ends and starts, the elementwise arithmetic, ``np.add.reduceat`` over the
groups) is the reference: the same labels and formulas, a group's contributions added in the bins' plain order
rather than NumPy's pairwise one, so the statistics agree within 1e-12 relative (SPEC 8.1;
``tests/tcal/test_tcal_kernel.py``). Integer prefix sums (unit weights) are exact in any order; float prefix sums
run in turn from each block's own zero, the carry added after.

Where NumPy made one pass per operation over a ``(rows, block)`` array, the loop makes each point's draw, label
and prefix sums in registers and writes each prefix once.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled


@compiled
def sweep_block(
    keys, first, thresholds, w_a, step_b, A, B, carry, width, kept_at, kept_slots, starts, ends, bin_wz, scale_b,
    inv, heads, groups, totals,
):  # fmt: skip
    """One block of the sweep for every row (label vector, one per key).

    ``keys`` (rows,) uint64: the rows' keys, whose draws at the block's points (sorted positions ``first`` on,
    ``first`` even) are those of :func:`calibcli.tcal.scalar._uniforms`: point ``j``'s 32 bits of SplitMix64's
    output at position ``j // 2 + 1``, high for even ``j``, low for odd, positive when ``bits < thresholds[j]``;
    ``thresholds`` (m) int64: ``ceil(z 2^32)`` of the points' predictions (``bits < z 2^32`` for integer bits);
    ``w_a``, ``step_b`` (m): what a positive adds to the two prefix sums (``w`` or a count of 1, and
    ``w^2 (1 - 2z)`` or its fixed-point integer); ``A``, ``B`` ((width + 1 + kept) x rows: a point's rows side by
    side, so that the loops over the rows run in vector registers): the block-local prefix sums (index 0 the
    carry, taken from index ``width`` when ``carry``, else 0; then the kept prefixes at ``kept_slots``, copied from
    ``kept_at``); ``starts``, ``ends`` (count): the bins ending in the block, as indices into that buffer, with
    ``bin_wz`` (sum w z), ``inv`` (1 / W_b), and ``heads`` (offsets of the groups' first bins) and ``groups``
    (each group's column of ``totals``, rows x groups, added into); ``scale_b``: the fixed-point scale of the
    second prefix sum (1.0 with weights)."""
    rows = keys.shape[0]
    m = thresholds.shape[0]
    count = starts.shape[0]
    n_heads = heads.shape[0]
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    gamma = np.uint64(0x9E3779B97F4A7C15)
    low = np.uint64(0xFFFFFFFF)
    pair0 = np.uint64(first // 2 + 1)
    zero_a = abs(w_a[0]) * 0  # 0 (or +0.0) of each prefix sum's type
    zero_b = abs(step_b[0]) * 0
    ca = np.empty(rows, A.dtype)
    cb = np.empty(rows, B.dtype)
    ca0 = np.empty(rows, A.dtype)
    cb0 = np.empty(rows, B.dtype)
    hi = np.empty(rows, np.int64)
    lo = np.empty(rows, np.int64)
    for r in range(rows):
        ca0[r] = A[width, r] if carry else zero_a
        cb0[r] = B[width, r] if carry else zero_b
        A[0, r] = ca0[r]
        B[0, r] = cb0[r]
        ca[r] = zero_a
        cb[r] = zero_b
    for p in range((m + 1) // 2):  # two points' draws from one 64-bit output, every row side by side
        step = (pair0 + np.uint64(p)) * gamma
        for r in range(rows):
            x = keys[r] + step
            x = (x ^ (x >> np.uint64(30))) * mix1
            x = (x ^ (x >> np.uint64(27))) * mix2
            x = x ^ (x >> np.uint64(31))
            hi[r] = np.int64(x >> np.uint64(32))
            lo[r] = np.int64(x & low)
        j = 2 * p
        t0, w0, s0 = thresholds[j], w_a[j], step_b[j]
        for r in range(rows):  # branch-free (a label is a coin toss for the branch predictor): a negative adds 0
            positive = hi[r] < t0
            ca[r] += w0 * positive
            cb[r] += s0 * positive
            A[j + 1, r] = ca[r] + ca0[r]
            B[j + 1, r] = cb[r] + cb0[r]
        if j + 1 < m:
            t1, w1, s1 = thresholds[j + 1], w_a[j + 1], step_b[j + 1]
            for r in range(rows):
                positive = lo[r] < t1
                ca[r] += w1 * positive
                cb[r] += s1 * positive
                A[j + 2, r] = ca[r] + ca0[r]
                B[j + 2, r] = cb[r] + cb0[r]
    for i in range(kept_at.shape[0]):
        for r in range(rows):
            A[kept_slots[i], r] = A[kept_at[i], r]
            B[kept_slots[i], r] = B[kept_at[i], r]
    part = np.empty(rows)
    for h in range(n_heads):  # each bin's numbers read once for all rows; a group's bins summed in their order
        first_bin = heads[h]
        stop = heads[h + 1] if h + 1 < n_heads else count
        for r in range(rows):
            part[r] = 0.0
        for i in range(first_bin, stop):
            e, b, wz, iv = ends[i], starts[i], bin_wz[i], inv[i]
            for r in range(rows):
                s = float(A[e, r] - A[b, r]) - wz
                q = float(B[e, r] - B[b, r]) * scale_b
                part[r] += (s * s - q) * iv
        g = groups[h]
        for r in range(rows):
            totals[r, g] = totals[r, g] + part[r]


@compiled
def sweep_block_weighted(
    keys, first, thresholds, w_a, step_b, A, B, AL, BL, carry, width, kept_at, kept_slots, starts, ends, bin_wz,
    inv, heads, groups, totals,
):  # fmt: skip
    """:func:`sweep_block` with weights: the two prefix sums are float and compensated, as
    :func:`calibcli.tcal.scalar.compensated_prefix` (``A``, ``B`` the running sums from the carry on, ``AL``, ``BL``
    the running sums of each addition's TwoSum error), and a bin's sums are ``(hi_e - hi_s) + (lo_e - lo_s)``: the
    NumPy backend's additions in its order, so rows of weight 1e-16 among rows of weight 1 keep their digits in both."""
    rows = keys.shape[0]
    m = thresholds.shape[0]
    count = starts.shape[0]
    n_heads = heads.shape[0]
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    gamma = np.uint64(0x9E3779B97F4A7C15)
    low = np.uint64(0xFFFFFFFF)
    pair0 = np.uint64(first // 2 + 1)
    sa = np.empty(rows)
    sb = np.empty(rows)
    la = np.empty(rows)
    lb = np.empty(rows)
    hi = np.empty(rows, np.int64)
    lo = np.empty(rows, np.int64)
    for r in range(rows):
        sa[r] = A[width, r] if carry else 0.0
        sb[r] = B[width, r] if carry else 0.0
        la[r] = AL[width, r] if carry else 0.0
        lb[r] = BL[width, r] if carry else 0.0
        A[0, r] = sa[r]
        B[0, r] = sb[r]
        AL[0, r] = la[r]
        BL[0, r] = lb[r]
    for p in range((m + 1) // 2):  # two points' draws from one 64-bit output, every row side by side
        step = (pair0 + np.uint64(p)) * gamma
        for r in range(rows):
            x = keys[r] + step
            x = (x ^ (x >> np.uint64(30))) * mix1
            x = (x ^ (x >> np.uint64(27))) * mix2
            x = x ^ (x >> np.uint64(31))
            hi[r] = np.int64(x >> np.uint64(32))
            lo[r] = np.int64(x & low)
        for j in range(2 * p, min(2 * p + 2, m)):
            t, wj, s = thresholds[j], w_a[j], step_b[j]
            bits = hi if j % 2 == 0 else lo
            for r in range(rows):  # branch-free: a negative adds 0 (and a TwoSum error of 0)
                positive = bits[r] < t
                xa = wj * positive
                xb = s * positive
                prev = sa[r]
                sa[r] = prev + xa
                back = sa[r] - prev
                la[r] += (prev - (sa[r] - back)) + (xa - back)
                prev = sb[r]
                sb[r] = prev + xb
                back = sb[r] - prev
                lb[r] += (prev - (sb[r] - back)) + (xb - back)
                A[j + 1, r] = sa[r]
                B[j + 1, r] = sb[r]
                AL[j + 1, r] = la[r]
                BL[j + 1, r] = lb[r]
    for i in range(kept_at.shape[0]):
        for r in range(rows):
            A[kept_slots[i], r] = A[kept_at[i], r]
            B[kept_slots[i], r] = B[kept_at[i], r]
            AL[kept_slots[i], r] = AL[kept_at[i], r]
            BL[kept_slots[i], r] = BL[kept_at[i], r]
    part = np.empty(rows)
    for h in range(n_heads):  # each bin's numbers read once for all rows; a group's bins summed in their order
        first_bin = heads[h]
        stop = heads[h + 1] if h + 1 < n_heads else count
        for r in range(rows):
            part[r] = 0.0
        for i in range(first_bin, stop):
            e, b, wz, iv = ends[i], starts[i], bin_wz[i], inv[i]
            for r in range(rows):
                s = ((A[e, r] - A[b, r]) + (AL[e, r] - AL[b, r])) - wz
                q = (B[e, r] - B[b, r]) + (BL[e, r] - BL[b, r])
                part[r] += (s * s - q) * iv
        g = groups[h]
        for r in range(rows):
            totals[r, g] = totals[r, g] + part[r]
