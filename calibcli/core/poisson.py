"""Poisson-bootstrap run sums: every cell's sums of resampled rows under a block of replicates, the draws made
and used in one compiled loop (SPEC 8; :func:`calibcli.core.compiled.compiled`).

Row ``i``'s multiplicity in replicate ``r`` is SplitMix64's output (Steele, Lea & Flood 2014, "Fast splittable
pseudorandom number generators", OOPSLA) at position ``positions[i]`` of the stream keyed ``keys[r]``, its high
32 bits ``u`` inverted into Poisson(1) (:mod:`calibcli.core.resampling`, whose draws these loops give exactly,
integers): ``m = #{k : thresholds[k] <= u}``. The loop counts the first four thresholds for every replicate
(compares that run side by side in vector registers, where a table lookup cannot) and goes on counting only for
the few draws that passed all four (P(m >= 4) = 1.9%).

This module only defines compiled functions (no Numba at import: start-up does not pay for it).
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled, inlined
from calibcli.core.splitmix import splitmix64


@inlined
def poisson_draws(base, offsets, thresholds, out):
    """``out[j]`` (int32) = the Poisson(1) multiplicity at SplitMix64 point ``base + offsets[j]``, for every ``j``:
    one row's draws under every replicate (``base`` its position, ``offsets`` the replicates' keys) or one
    replicate's draws of every row (``base`` its key, ``offsets`` the rows' positions). The first four thresholds
    are counted for every ``j`` side by side; the few draws that passed all four count on."""
    s32 = np.uint64(32)
    t0, t1, t2, t3 = thresholds[0], thresholds[1], thresholds[2], thresholds[3]
    for j in range(out.shape[0]):
        u = np.uint32(splitmix64(offsets[j] + base) >> s32)
        out[j] = np.int32(u >= t0) + np.int32(u >= t1) + np.int32(u >= t2) + np.int32(u >= t3)
    beyond = False
    for j in range(out.shape[0]):
        beyond |= out[j] == 4
    if beyond:  # m >= 4 for some: count on among the thresholds
        for j in range(out.shape[0]):
            if out[j] == 4:
                u = np.uint32(splitmix64(offsets[j] + base) >> s32)
                k = 4
                while k < thresholds.shape[0] and thresholds[k] <= u:
                    k += 1
                out[j] = k


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

    Each sum is taken in the plain order of the rows, each term one product ``m X`` then one addition: the sums
    of a loop over the rows, which the NumPy backend (a sparse product of the drawn multiplicities) matches within
    1e-12 relative. A value of 1 adds ``m`` itself (no product), a value of 0 nothing.
    """
    n = positions.shape[0]
    R = keys.shape[0]
    K = X.shape[1]
    J = X_self.shape[1]
    small = np.empty(R, np.int32)
    m = np.empty(R, np.float64)
    for i in range(n):
        c = cell[i]
        poisson_draws(positions[i], keys, thresholds, small)
        for r in range(R):
            m[r] = small[r]
        for k in range(K):
            xk = X[i, k]
            if xk == 1.0:  # m * 1.0 is m: the same sum without the products
                for r in range(R):
                    out[c, k, r] += m[r]
            elif xk != 0.0:  # (a zero value's terms add nothing)
                for r in range(R):
                    out[c, k, r] += m[r] * xk
        if J > 0:
            for r in range(R):
                m[r] = m[r] * (m[r] - 1.0)
            for j in range(J):
                xj = X_self[i, j]
                if xj == 1.0:
                    for r in range(R):
                        self_out[c, j, r] += m[r]
                elif xj != 0.0:
                    for r in range(R):
                        self_out[c, j, r] += m[r] * xj


@compiled
def poisson_quantile_sums(
    positions: np.ndarray,
    keys: np.ndarray,
    z_sorted: np.ndarray,
    X: np.ndarray,
    X_self: np.ndarray,
    thresholds: np.ndarray,
    out: np.ndarray,
    self_out: np.ndarray,
) -> None:
    """Every replicate's sums over its own quantile bins (SPEC 2.1's edges of the resample's sorted values), for
    one problem whose rows are sorted by ``z_sorted`` (increasing).

    - ``positions``, ``keys``, ``thresholds``: the rows' and the replicates' draws, as :func:`poisson_run_sums`;
    - ``X`` (n, K) and ``X_self`` (n, J) float64: each row's values and self-pair values;
    - ``out`` (K, R, B) and ``self_out`` (J, R, B) float64, zeros (any strides: a slice of a larger array will
      do): replicate ``r``'s bin ``b`` receives ``sum m_ir X[i, k]`` and ``sum m_ir (m_ir - 1) X_self[i, j]`` over
      the rows of that bin, ascending; B bins of which ties may merge some (those left empty, at the end).

    The bins are those of :func:`calibcli.core.binning.quantile_starts_batched`, step for step: with ``cum`` the
    running count of the resample, ``total`` its last value, the edge of rank ``q = round_half_even(k total /
    B)`` (k = 1..B-1, kept when 0 < q < total) is ``(z[first cum >= q] + z[first cum >= q + 1]) / 2``, an edge
    equal to the one before it is dropped, and a bin starts at the first row whose z is not below its edge.
    Bins not reached (ties merged them) keep the zeros they came with.
    """
    n = positions.shape[0]
    R = keys.shape[0]
    K = X.shape[1]
    J = X_self.shape[1]
    B = out.shape[2]
    small = np.empty(n, np.int32)
    m = np.empty(n, np.float64)
    cum = np.empty(n, np.int64)
    starts = np.empty(B + 1, np.int64)
    acc = np.empty(K)
    acc_self = np.empty(J)
    if n == 0:
        return
    for r in range(R):
        poisson_draws(keys[r], positions, thresholds, small)  # the draws as in poisson_run_sums, along the rows
        for i in range(n):
            m[i] = small[i]
        running = np.int64(0)
        for i in range(n):
            running += np.int64(m[i])
            cum[i] = running
        total = running
        # the bins' first rows: 0, then each kept edge's searchsorted(z, edge, "left"), then n
        nb = 1
        starts[0] = 0
        have_previous, previous = False, 0.0
        for k in range(1, B):
            t = k * total / B
            f = np.floor(t)
            d = t - f
            q = np.int64(f)
            if d > 0.5 or (d == 0.5 and q % 2 == 1):
                q += 1
            valid = bool(0 < q < total)
            rank = q if valid else 1
            first = min(np.searchsorted(cum, rank), n - 1)  # first i with cum[i] >= rank
            second = min(np.searchsorted(cum, rank + 1), n - 1)
            edge = 0.5 * (z_sorted[first] + z_sorted[second])
            repeat = have_previous and bool(edge == previous)
            have_previous, previous = valid, edge
            if valid and not repeat:
                starts[nb] = np.searchsorted(z_sorted, edge)  # first i with z[i] >= edge
                nb += 1
        starts[nb] = n
        for b in range(nb):  # every statistic's sum in one pass over the bin's rows (independent additions)
            acc[:] = 0.0
            acc_self[:] = 0.0
            for i in range(starts[b], starts[b + 1]):
                mi = m[i]
                for kk in range(K):
                    acc[kk] += mi * X[i, kk]
                pair = mi * (mi - 1.0)
                for j in range(J):
                    acc_self[j] += pair * X_self[i, j]
            for kk in range(K):
                out[kk, r, b] = acc[kk]
            for j in range(J):
                self_out[j, r, b] = acc_self[j]
