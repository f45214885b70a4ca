"""SmoothECE's bootstrap loops, compiled (:func:`calibcli.core.compiled.compiled`; SPEC 3 and 8).

Each loop makes the same floating-point operations, in the same order, as the NumPy passes it replaced (those
passes are kept in ``tests/smooth/test_smooth_kernels.py`` as the reference the kernels are checked against, bit for
bit):

- :func:`run_sums`: the Poisson(1) multiplicities of sorted rows in a block of replicates (SplitMix64 outputs
  inverted by table, :func:`calibcli.core.resampling._draws`), and for each replicate its total weight (``np.sum``'s
  pairwise order) and the sums ``g``, ``g f``, ``g f^2`` over each run of equal ``(label, cell)``
  (``np.add.reduceat``'s order: a run's first term plus the pairwise sum of the others);
- :func:`run_deposits`: those sums spread over the grid's nodes (``np.bincount``'s order, from zero) and
  divided by the replicate's total weight.

Each bandwidth's evaluation (the kernel's products, the FFT, the integral) stays in NumPy: ``ece``'s ICI shares it,
and a plain ``ece`` does not load Numba.

NumPy's pairwise summation (``numpy/_core/src/umath/loops_utils.h.src``, ``pairwise_sum``): fewer than 8 terms
are added in turn from 0; up to 128 in eight interleaved partial sums combined as
``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the remainder in turn; beyond, the two halves
(the first a multiple of 8 terms) are summed apart and added. :func:`_pairwise_sum` follows it with an explicit stack.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled, inlined


@inlined
def _pairwise_sum(a, start, count, stack_start, stack_n, stack_phase, partial):
    """NumPy's pairwise sum of ``a[start : start + count]`` (the order described above), followed with an explicit
    stack (``stack_*``, ``partial``: scratch of 64 entries, deeper than any split of an int64 count)."""
    depth = 0
    stack_start[0], stack_n[0], stack_phase[0] = start, count, 0
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
                result += a[j]
        else:
            r0, r1, r2, r3 = a[b], a[b + 1], a[b + 2], a[b + 3]
            r4, r5, r6, r7 = a[b + 4], a[b + 5], a[b + 6], a[b + 7]
            j = b + 8
            end8 = b + k - k % 8
            while j < end8:
                r0 += a[j]
                r1 += a[j + 1]
                r2 += a[j + 2]
                r3 += a[j + 3]
                r4 += a[j + 4]
                r5 += a[j + 5]
                r6 += a[j + 6]
                r7 += a[j + 7]
                j += 8
            result = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
            while j < b + k:
                result += a[j]
                j += 1
        depth -= 1
    return result


@compiled
def run_sums(keys, positions, w, weighted, f, offsets, table, thresholds, total, s0, s1, s2, g, gf, gf2):
    """For each replicate ``r`` of the block (stream key ``keys[r]``) and each sorted row ``i`` (position
    ``positions[i]`` = ``(row + 1) gamma``): ``m = Poisson(1)`` of ``mix(keys[r] + positions[i])``, ``g = m w``;
    ``total[r]`` = the sum of ``g``; ``s0, s1, s2[r, run]`` = the run's sums of ``g``, ``g f``, ``(g f) f``. ``g``,
    ``gf``, ``gf2`` are scratch of the rows' length. A run's sums are taken as its rows are drawn where the run
    is short (its terms after the first added in turn from 0, as NumPy's pairwise sum does below 8 terms)."""
    n = positions.shape[0]
    runs = offsets.shape[0]
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    stack_start = np.empty(64, dtype=np.int64)
    stack_n = np.empty(64, dtype=np.int64)
    stack_phase = np.empty(64, dtype=np.int64)
    partial = np.empty(64, dtype=np.float64)
    for r in range(keys.shape[0]):
        key = keys[r]
        for run in range(runs):
            first = offsets[run]
            stop = offsets[run + 1] if run + 1 < runs else n
            t0 = 0.0
            t1 = 0.0
            t2 = 0.0
            for i in range(first, stop):
                x = key + positions[i]
                x = (x ^ (x >> np.uint64(30))) * mix1
                x = (x ^ (x >> np.uint64(27))) * mix2
                m = np.int64(table[np.int64(x >> np.uint64(52))])
                if m < 0:  # a table cell a threshold splits: search the thresholds
                    u = (x ^ (x >> np.uint64(31))) >> np.uint64(32)
                    m = np.int64(0)
                    while m < thresholds.shape[0] and np.uint64(thresholds[m]) <= u:
                        m += 1
                value = np.float64(m)
                if weighted:
                    value = value * w[i]
                value_f = value * f[i]
                value_f2 = value_f * f[i]
                g[i] = value
                gf[i] = value_f
                gf2[i] = value_f2
                if i > first:
                    t0 += value
                    t1 += value_f
                    t2 += value_f2
            rest = stop - first - 1
            if rest == 0:
                s0[r, run], s1[r, run], s2[r, run] = g[first], gf[first], gf2[first]
            elif rest < 8:
                s0[r, run], s1[r, run], s2[r, run] = g[first] + t0, gf[first] + t1, gf2[first] + t2
            else:
                for which in range(3):  # a long run: np.add.reduceat's first term plus the pairwise sum of the rest
                    a = g if which == 0 else gf if which == 1 else gf2
                    result = _pairwise_sum(a, first + 1, rest, stack_start, stack_n, stack_phase, partial)
                    if which == 0:
                        s0[r, run] = g[first] + result
                    elif which == 1:
                        s1[r, run] = gf[first] + result
                    else:
                        s2[r, run] = gf2[first] + result
        # the total: np.sum's pairwise order over all the rows, from 0
        result = _pairwise_sum(g, 0, n, stack_start, stack_n, stack_phase, partial)
        total[r] = 0.0 + result


@compiled
def run_deposits(positive, cell, s0, s1, s2, total, n_cells, out, lower, upper):
    """Each replicate's runs (sums ``s0, s1, s2`` of ``g``, ``g f``, ``g f^2``; label ``positive``, cell ``cell``)
    spread over the nodes: ``g (y - z)`` (``out[0]``) and, when ``out`` has three parts, ``g y`` and ``g``, split
    ``(1 - f, f)`` between nodes ``cell`` and ``cell + 1`` (``z = (cell + f) / M``); each node's lower and upper
    shares summed apart in the runs' order from zero, added, and divided by ``total[r]``. ``lower``, ``upper``:
    scratch of the nodes' length."""
    parts = out.shape[0]
    size = n_cells + 1
    runs = cell.shape[0]
    for r in range(s0.shape[0]):
        for part in range(parts):
            for j in range(size):
                lower[j] = 0.0
                upper[j] = 0.0
            for run in range(runs):
                c = cell[run]
                a, b, b2 = s0[r, run], s1[r, run], s2[r, run]
                w_lower = a - b
                if part == 0:
                    y_lower = w_lower if positive[run] else 0.0
                    y_upper = b if positive[run] else 0.0
                    z_lower = (c * w_lower + (b - b2)) / n_cells
                    z_upper = (c * b + b2) / n_cells
                    lower[c] += y_lower - z_lower
                    upper[c + 1] += y_upper - z_upper
                elif part == 1:
                    lower[c] += w_lower if positive[run] else 0.0
                    upper[c + 1] += b if positive[run] else 0.0
                else:
                    lower[c] += w_lower
                    upper[c + 1] += b
            t = total[r]
            for j in range(size):
                out[part, r, j] = (lower[j] + upper[j]) / t
