"""Poisson-bootstrap run sums: every cell's sums of resampled rows under a block of replicates, the draws made
and used in one compiled loop (SPEC 8; :func:`calibcli.kernels.compiled`).

Row ``i``'s multiplicity in replicate ``r`` is SplitMix64's output (Steele, Lea & Flood 2014, "Fast splittable
pseudorandom number generators", OOPSLA) at position ``positions[i]`` of the stream keyed ``keys[r]``, its high
32 bits ``u`` inverted into Poisson(1) (:mod:`calibcli.resampling`, whose NumPy form these loops give bit for bit):
``m = #{k : thresholds[k] <= u}``. The loop counts the first four thresholds for every replicate (compares that
run side by side in vector registers, where a table lookup cannot) and goes on counting only for the few draws
that passed all four (P(m >= 4) = 1.9%).

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
    thresholds: np.ndarray,
    out: np.ndarray,
    self_out: np.ndarray,
) -> None:
    """Add every row's resampled values into its cell, for every replicate at once.

    - ``positions`` (n,) uint64: the rows' SplitMix64 positions (``Multiplicities._positions``: ``(row + 1)
      gamma``); ``keys`` (R,) uint64: the replicates' stream keys (``resampling._stream_keys(seed, replicates)``);
    - ``cell`` (n,) int64: the cell each row adds into (any order; non-decreasing keeps a cell's sums in cache);
    - ``X`` (n, K) and ``X_self`` (n, J) float64: each row's values and self-pair values (J may be 0);
    - ``thresholds`` (at least 4,) uint32, increasing: ``2^32 P(M <= k)``, ``resampling._THRESHOLDS``;
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
    mix1 = np.uint64(0xBF58476D1CE4E5B9)
    mix2 = np.uint64(0x94D049BB133111EB)
    s30, s27, s31, s32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
    t0, t1, t2, t3 = thresholds[0], thresholds[1], thresholds[2], thresholds[3]
    small = np.empty(R, np.int32)
    m = np.empty(R, np.float64)
    for i in range(n):
        c = cell[i]
        p = positions[i]
        for r in range(R):
            x = keys[r] + p
            x = (x ^ (x >> s30)) * mix1
            x = (x ^ (x >> s27)) * mix2
            u = np.uint32((x ^ (x >> s31)) >> s32)
            small[r] = np.int32(u >= t0) + np.int32(u >= t1) + np.int32(u >= t2) + np.int32(u >= t3)
        beyond = False
        for r in range(R):
            beyond |= small[r] == 4
        if beyond:  # m >= 4 for some replicates: count on among the thresholds
            for r in range(R):
                if small[r] == 4:
                    x = keys[r] + p
                    x = (x ^ (x >> s30)) * mix1
                    x = (x ^ (x >> s27)) * mix2
                    u = np.uint32((x ^ (x >> s31)) >> s32)
                    k = 4
                    while k < thresholds.shape[0] and thresholds[k] <= u:
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
