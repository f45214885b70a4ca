"""Poisson-bootstrap run sums: every cell's sums of resampled rows under a block of replicates, the draws made
and used in one compiled loop (SPEC 8; :func:`calibcli.kernels.compiled`).

Row ``i``'s multiplicity in replicate ``r`` is SplitMix64's output (Steele, Lea & Flood 2014, "Fast splittable
pseudorandom number generators", OOPSLA) at position ``positions[i]`` of the stream keyed ``keys[r]``, its high
32 bits inverted into Poisson(1) (:mod:`calibcli.resampling`, whose NumPy form these loops give bit for bit):
``x = keys[r] + positions[i]``; ``x = (x ^ x >> 30) * 0xBF58476D1CE4E5B9``; ``x = (x ^ x >> 27) *
0x94D049BB133111EB``; the top bits of that ``x`` index ``table`` (the multiplicity, or -1 where a threshold splits
the table's cell, then ``u = (x ^ x >> 31) >> 32`` is counted against ``thresholds``: ``m = #{k : thresholds[k] <=
u}``).

This module only defines compiled functions (no Numba at import: start-up does not pay for it).
"""

from __future__ import annotations

import numpy as np

from calibcli.kernels import compiled


@compiled
def poisson_run_sums(
    positions: np.ndarray,
    keys: np.ndarray,
    cell: np.ndarray,
    X: np.ndarray,
    X_self: np.ndarray,
    table: np.ndarray,
    thresholds: np.ndarray,
    out: np.ndarray,
    self_out: np.ndarray,
) -> None:
    """Add every row's resampled values into its cell, for every replicate at once.

    - ``positions`` (n,) uint64: the rows' SplitMix64 positions (``Multiplicities._positions``: ``(row + 1)
      gamma``); ``keys`` (R,) uint64: the replicates' stream keys (``resampling._stream_keys(seed, replicates)``);
    - ``cell`` (n,) int64: the cell each row adds into (any order; non-decreasing keeps a cell's sums in cache);
    - ``X`` (n, K) and ``X_self`` (n, J) float64: each row's values and self-pair values (J may be 0);
    - ``table`` (2^b,) int8 and ``thresholds`` uint32: ``resampling._CELL_INT8`` and ``resampling._THRESHOLDS``;
    - ``out`` (cells, K, R) and ``self_out`` (cells, J, R) float64, C-contiguous: ``out[c, k, r] += m_ir X[i, k]``
      and ``self_out[c, j, r] += m_ir (m_ir - 1) X_self[i, j]`` over the rows ``i`` of cell ``c``, ascending.

    Each sum is taken in the order of the rows, each term one product ``m X`` then one addition (no fused
    multiply-add: Numba contracts nothing without ``fastmath``), so starting from zeros the sums are bit for bit
    those of a loop over the rows (or of a sparse product over them, which adds the same terms in that order).
    """
    n = positions.shape[0]
    R = keys.shape[0]
    K = X.shape[1]
    J = X_self.shape[1]
    shift = np.uint64(64)
    size = table.shape[0]
    while size > 1:
        size >>= 1
        shift -= np.uint64(1)
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    s30, s27, s31, s32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
    small = np.empty(R, np.int8)
    m = np.empty(R, np.float64)
    for i in range(n):
        c = cell[i]
        p = positions[i]
        split = False
        for r in range(R):
            x = keys[r] + p
            x = (x ^ (x >> s30)) * mix1
            x = (x ^ (x >> s27)) * mix2
            small[r] = table[x >> shift]
        for r in range(R):
            split |= small[r] < 0
        if split:  # a threshold falls inside the table's cell: the whole finaliser, its u counted
            for r in range(R):
                if small[r] < 0:
                    x = keys[r] + p
                    x = (x ^ (x >> s30)) * mix1
                    x = (x ^ (x >> s27)) * mix2
                    u = (x ^ (x >> s31)) >> s32
                    k = 0
                    while k < thresholds.shape[0] and np.uint64(thresholds[k]) <= u:
                        k += 1
                    small[r] = k
        for r in range(R):
            m[r] = small[r]
        for k in range(K):
            xk = X[i, k]
            for r in range(R):
                out[c, k, r] += m[r] * xk
        if J > 0:
            for r in range(R):
                m[r] = m[r] * (m[r] - 1.0)
            for j in range(J):
                xj = X_self[i, j]
                for r in range(R):
                    self_out[c, j, r] += m[r] * xj
