"""T-Cal's y-bootstrap sweep, compiled (:func:`calibcli.core.compiled.compiled`; SPEC 4.2, seed 004).

:func:`sweep_block` is one block of :meth:`calibcli.tcal.scalar.SortedScalarEngine`'s sweep for a set of label
vectors: the labels ``y* = [u < z]`` of the block's points, the prefix sums of ``w y*`` and ``w^2 y* (1 - 2z)``
extended over the block, and each bin ending in the block turned into its contribution
``((sum w U)^2 - sum w^2 U^2) / W_b``, summed per group of bins into the resample's totals. It makes the same
floating-point operations in the same order as the NumPy passes it replaced (``np.less``, two ``np.cumsum``, the
carries, the gathers at the bins' ends and starts, the elementwise arithmetic, ``np.add.reduceat`` over the
groups and the fancy-indexed addition into the totals): the same statistics bit for bit, so the Monte Carlo
counts ``#{T* >= T}`` and the p-values do not move. Integer prefix sums (unit weights) are exact in any order;
float prefix sums run in turn from each block's own zero, the carry added after, as ``np.cumsum`` then ``+=``
did. ``np.add.reduceat`` adds a group's first contribution to NumPy's pairwise sum of the rest
(``numpy/_core/src/umath/loops_utils.h.src``, ``pairwise_sum``: fewer than 8 terms in turn from 0; up to 128 in
eight interleaved partial sums combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the
remainder in turn; beyond, two halves, the first a multiple of 8 terms, summed apart and added), followed here
with an explicit stack.

Where NumPy made one pass per operation over a ``(rows, block)`` array, the loop makes each point's label and
prefix sums in registers and writes each prefix once: the sweep's cost falls to about that of its uniform draws.
"""

from __future__ import annotations

from calibcli.core.compiled import compiled


@compiled
def sweep_block(
    u, z, w_a, step_b, A, B, carry, width, kept_at, kept_slots, starts, ends, bin_wz, scale_b, inv, heads, groups,
    totals, S,
):  # fmt: skip
    """One block of the sweep for every row (label vector) of ``u``.

    ``u`` (rows x m): the rows' uniforms at the block's points (a point is positive when ``u < z``); ``z``,
    ``w_a``, ``step_b`` (m): the points' predictions and what a positive adds to the two prefix sums (``w`` or a
    count of 1, and ``w^2 (1 - 2z)`` or its fixed-point integer); ``A``, ``B`` (rows x (width + 1 + kept)): the
    block-local prefix sums (index 0 the carry, taken from index ``width`` when ``carry``, else 0; then the
    kept prefixes at ``kept_slots``, copied from ``kept_at``); ``starts``, ``ends`` (count): the bins ending in
    the block, as indices into that buffer, with ``bin_wz`` (sum w z), ``inv`` (1 / W_b), and ``heads``
    (offsets of the groups' first bins) and ``groups`` (each group's column of ``totals``, rows x groups, added
    into); ``scale_b``: the fixed-point scale of the second prefix sum (1.0 with weights); ``S`` (rows x count
    or more): scratch."""
    rows, m = u.shape
    count = starts.shape[0]
    n_heads = heads.shape[0]
    stack_start = [0] * 64
    stack_n = [0] * 64
    stack_phase = [0] * 64
    partial = [0.0] * 64
    zero_a = abs(w_a[0]) * 0  # 0 (or +0.0) of each prefix sum's type
    zero_b = abs(step_b[0]) * 0
    for r in range(rows):
        ca0 = A[r, width] if carry else zero_a
        cb0 = B[r, width] if carry else zero_b
        A[r, 0] = ca0
        B[r, 0] = cb0
        ca = zero_a
        cb = zero_b
        for j in range(m):
            # branch-free (a prediction's label is a coin toss for the branch predictor): a negative adds 0,
            # which leaves the sum as it is, as NumPy's cumsum over the masked values did
            positive = u[r, j] < z[j]
            ca += w_a[j] * positive
            cb += step_b[j] * positive
            A[r, j + 1] = ca + ca0
            B[r, j + 1] = cb + cb0
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
            rest = stop - first - 1
            # np.add.reduceat: the first term plus the pairwise sum of the rest
            depth = 0
            stack_start[0], stack_n[0], stack_phase[0] = first + 1, rest, 0
            result = 0.0
            while depth >= 0:
                b, k, phase = stack_start[depth], stack_n[depth], stack_phase[depth]
                if k > 128:
                    half = k // 2
                    half -= half % 8
                    if phase == 0:
                        stack_phase[depth] = 1
                        depth += 1
                        stack_start[depth], stack_n[depth], stack_phase[depth] = b, half, 0
                        continue
                    if phase == 1:
                        partial[depth] = result
                        stack_phase[depth] = 2
                        depth += 1
                        stack_start[depth], stack_n[depth], stack_phase[depth] = b + half, k - half, 0
                        continue
                    result = partial[depth] + result
                elif k < 8:
                    result = 0.0
                    for j in range(b, b + k):
                        result += Sr[j]
                else:
                    r0, r1, r2, r3 = Sr[b], Sr[b + 1], Sr[b + 2], Sr[b + 3]
                    r4, r5, r6, r7 = Sr[b + 4], Sr[b + 5], Sr[b + 6], Sr[b + 7]
                    j = b + 8
                    end8 = b + k - k % 8
                    while j < end8:
                        r0 += Sr[j]
                        r1 += Sr[j + 1]
                        r2 += Sr[j + 2]
                        r3 += Sr[j + 3]
                        r4 += Sr[j + 4]
                        r5 += Sr[j + 5]
                        r6 += Sr[j + 6]
                        r7 += Sr[j + 7]
                        j += 8
                    result = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
                    while j < b + k:
                        result += Sr[j]
                        j += 1
                depth -= 1
            g = groups[h]
            totals[r, g] = totals[r, g] + (Sr[first] if rest == 0 else Sr[first] + result)
