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
    inv, heads, groups, totals, S,
):  # fmt: skip
    """One block of the sweep for every row (label vector, one per key).

    ``keys`` (rows,) uint64: the rows' keys, whose draws at the block's points (sorted positions ``first`` on,
    ``first`` even) are those of :func:`calibcli.tcal.scalar._uniforms`: point ``j``'s 32 bits of SplitMix64's
    output at position ``j // 2 + 1``, high for even ``j``, low for odd, positive when ``bits < thresholds[j]``;
    ``thresholds`` (m) int64: ``ceil(z 2^32)`` of the points' predictions (``bits < z 2^32`` for integer bits);
    ``w_a``, ``step_b`` (m): what a positive adds to the two prefix sums (``w`` or a count of 1, and
    ``w^2 (1 - 2z)`` or its fixed-point integer); ``A``, ``B`` (rows x (width + 1 + kept)): the block-local
    prefix sums (index 0 the carry, taken from index ``width`` when ``carry``, else 0; then the kept prefixes at
    ``kept_slots``, copied from ``kept_at``); ``starts``, ``ends`` (count): the bins ending in the block, as
    indices into that buffer, with ``bin_wz`` (sum w z), ``inv`` (1 / W_b), and ``heads`` (offsets of the groups'
    first bins) and ``groups`` (each group's column of ``totals``, rows x groups, added into); ``scale_b``: the
    fixed-point scale of the second prefix sum (1.0 with weights); ``S`` (rows x count or more): scratch."""
    rows = keys.shape[0]
    m = thresholds.shape[0]
    count = starts.shape[0]
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    gamma = np.uint64(0x9E3779B97F4A7C15)
    low = np.uint64(0xFFFFFFFF)
    pair0 = np.uint64(first // 2 + 1)
    n_heads = heads.shape[0]
    zero_a = abs(w_a[0]) * 0  # 0 (or +0.0) of each prefix sum's type
    zero_b = abs(step_b[0]) * 0
    for r in range(rows):
        ca0 = A[r, width] if carry else zero_a
        cb0 = B[r, width] if carry else zero_b
        A[r, 0] = ca0
        B[r, 0] = cb0
        ca = zero_a
        cb = zero_b
        key = keys[r]
        for p in range((m + 1) // 2):  # two points' draws from one 64-bit output
            x = key + (pair0 + np.uint64(p)) * gamma
            x = (x ^ (x >> np.uint64(30))) * mix1
            x = (x ^ (x >> np.uint64(27))) * mix2
            x = x ^ (x >> np.uint64(31))
            j = 2 * p
            # branch-free (a prediction's label is a coin toss for the branch predictor): a negative adds 0
            positive = np.int64(x >> np.uint64(32)) < thresholds[j]
            ca += w_a[j] * positive
            cb += step_b[j] * positive
            A[r, j + 1] = ca + ca0
            B[r, j + 1] = cb + cb0
            if j + 1 < m:
                positive = np.int64(x & low) < thresholds[j + 1]
                ca += w_a[j + 1] * positive
                cb += step_b[j + 1] * positive
                A[r, j + 2] = ca + ca0
                B[r, j + 2] = cb + cb0
        for i in range(kept_at.shape[0]):
            A[r, kept_slots[i]] = A[r, kept_at[i]]
            B[r, kept_slots[i]] = B[r, kept_at[i]]
    for r in range(rows):
        Ar, Br, Sr = A[r], B[r], S[r]  # rows as 1-d views: plain indexing in the loops below
        for i in range(count):
            s = float(Ar[ends[i]] - Ar[starts[i]]) - bin_wz[i]
            s = s * s
            q = float(Br[ends[i]] - Br[starts[i]]) * scale_b
            s = s - q
            Sr[i] = s * inv[i]
        for h in range(n_heads):
            first = heads[h]
            stop = heads[h + 1] if h + 1 < n_heads else count
            part = 0.0
            for i in range(first, stop):  # the group's contributions in the bins' order
                part += Sr[i]
            g = groups[h]
            totals[r, g] = totals[r, g] + part
