"""SmoothECE's bootstrap loops, compiled (:func:`calibcli.core.compiled.compiled`; SPEC 3 and 8).

Each loop is the compiled backend of a step of :mod:`calibcli.smooth.bootstrap` whose NumPy backend is the
reference (:meth:`calibcli.smooth.bootstrap.RowBootstrap.resample` and
:func:`calibcli.smooth.bootstrap._run_deposits`, chosen by the number of draws): the same draws and formulas, each
sum taken in the loop's own plain order (not NumPy's pairwise one), so the two agree within 1e-12 relative
(SPEC 8.1; ``tests/smooth/test_smooth_kernels.py``):

- :func:`run_sums`: the Poisson(1) multiplicities of sorted rows in a block of replicates (SplitMix64 outputs
  inverted by table, :func:`calibcli.core.resampling._draws`), and for each replicate its total weight and the
  sums ``g``, ``g f``, ``g f^2`` over each run of equal ``(label, cell)``, added in the rows' order;
- :func:`run_deposits`: those sums spread over the grid's nodes in the runs' order and divided by the
  replicate's total weight.

Each bandwidth's evaluation (the kernel's products, the FFT, the integral) stays in NumPy: ``ece``'s ICI shares it,
and a plain ``ece`` does not load Numba.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled


@compiled
def run_sums(keys, positions, w, weighted, f, offsets, table, thresholds, total, s0, s1, s2):
    """For each replicate ``r`` of the block (stream key ``keys[r]``) and each sorted row ``i`` (position
    ``positions[i]`` = ``(row + 1) gamma``): ``m = Poisson(1)`` of ``mix(keys[r] + positions[i])``, ``g = m w``
    (``w`` read only when ``weighted``); ``s0, s1, s2[r, run]`` = the run's sums of ``g``, ``g f``, ``(g f) f``
    and ``total[r]`` = the sum of every ``g``, each added in the rows' order."""
    n = positions.shape[0]
    runs = offsets.shape[0]
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    for r in range(keys.shape[0]):
        key = keys[r]
        grand = 0.0
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
                t0 += value
                t1 += value_f
                t2 += value_f * f[i]
            s0[r, run], s1[r, run], s2[r, run] = t0, t1, t2
            grand += t0
        total[r] = grand


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
