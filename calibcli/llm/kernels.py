"""Compiled loops of ``calibcli selective``'s bootstrap: every replicate's metrics in two passes over the rows in
confidence order, the Poisson multiplicities drawn and used in registers (:mod:`calibcli.core.compiled`).

The NumPy form (:func:`calibcli.llm.accumulator.evaluate` on the blocks' sums of a drawn ``(replicates, rows)``
block) makes a pass over memory for each of its two dozen array operations; here a row's draw feeds every metric
at once. Only for whole weights (then every block sum, cumulative sum, AUGRC and AUROC sum is an exact integer or
half-integer, the same in both forms to the last bit), where the AURC's harmonic differences are the sums
``sum_{j=1..s} 1 / (A + j)`` they stand for (:func:`calibcli.llm.curves.aurc` writes them with the digamma
function), added with Neumaier's compensation. Risk at coverage and coverage at risk take the same operations in the
same order as :mod:`calibcli.llm.curves`. Tested against the NumPy form within 1e-12 relative (tests/llm).

Row ``i``'s multiplicity in replicate ``r`` is :class:`calibcli.core.resampling.Multiplicities`'s: SplitMix64
(Steele, Lea & Flood 2014) at ``keys[r] + positions[i]``, its high 32 bits ``u`` inverted into Poisson(1),
``m = #{k : thresholds[k] <= u}``, drawn by :func:`calibcli.core.poisson.poisson_draws` (as the binned bootstrap's
loops draw it).

This module only defines compiled functions (no Numba at import: start-up does not pay for it).
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled, inlined
from calibcli.core.poisson import poisson_draws


@inlined
def _resampled_sums(positions, keys, weight, wrong, thresholds, first, last, m, n_out, e_out):
    """``n_out[r] = sum_i m_ir weight_i`` and ``e_out[r] = sum_i m_ir wrong_i`` over the rows ``first..last - 1``
    (zeroed here, added row after row), ``m`` (R,) int32 scratch for a row's draws."""
    for r in range(keys.shape[0]):
        n_out[r] = 0.0
        e_out[r] = 0.0
    for i in range(first, last):
        poisson_draws(positions[i], keys, thresholds, m)
        wi = weight[i]
        ei = wrong[i]
        for r in range(keys.shape[0]):
            n_out[r] += np.float64(m[r]) * wi
            e_out[r] += np.float64(m[r]) * ei


@compiled
def selective_totals(
    positions: np.ndarray,
    keys: np.ndarray,
    weight: np.ndarray,
    wrong: np.ndarray,
    thresholds: np.ndarray,
    n_out: np.ndarray,
    e_out: np.ndarray,
) -> None:
    """``n_out[r] = sum_i m_ir weight_i`` and ``e_out[r] = sum_i m_ir wrong_i`` (zeroed here): each replicate's
    total weight and errors, which fix its risk-at-coverage ranks before :func:`selective_sums` runs."""
    n = positions.shape[0]
    R = keys.shape[0]
    m = np.empty(R, np.int32)
    _resampled_sums(positions, keys, weight, wrong, thresholds, 0, n, m, n_out, e_out)


@compiled
def selective_sums(
    positions: np.ndarray,
    keys: np.ndarray,
    weight: np.ndarray,
    wrong: np.ndarray,
    starts: np.ndarray,
    thresholds: np.ndarray,
    ranks: np.ndarray,
    risks: np.ndarray,
    slack_factor: float,
    aurc_out: np.ndarray,
    augrc_out: np.ndarray,
    auroc_out: np.ndarray,
    risk_out: np.ndarray,
    reach_out: np.ndarray,
) -> None:
    """Every replicate's sums over the blocks of equal confidence, most confident first.

    - ``positions`` (n,) uint64, ``weight`` and ``wrong`` (n,) float64 (whole): the rows in confidence order;
      ``starts`` (blocks,) int64: each block's first row; ``keys`` (R,) uint64: the replicates' stream keys;
    - ``ranks`` (Q, R): each replicate's ``k = max(ceil(q N), 1)`` of every coverage ``q``; ``risks`` (T,) the
      target risks, ``slack_factor`` :data:`calibcli.llm.curves.RISK_SLACK`;
    - out (written here): ``aurc_out[r] = sum_k r_k`` (divide by N), ``augrc_out[r] = sum_b s B + e (s + 1) / 2``
      (divide by N^2), ``auroc_out[r] = sum_b (s - e) (B + e / 2)`` (the AUROC is ``1 - that / (C E)``),
      ``risk_out[q, r] = r_k`` at rank ``ranks[q, r]`` (NaN when no block reaches it), ``reach_out[t, r]`` the
      largest ``k`` with ``r_k <= t`` (divide by N).

    A block's AURC term ``sum_{j=1..s} (B + j e/s) / (A + j)`` is summed plainly (its first four terms side by side
    for every replicate, the rest in a loop where s > 4) and added to the replicate's total with Neumaier's
    compensation; each of a replicate's steps is written without a branch so that the replicates run side by side.
    """
    R = keys.shape[0]
    Q = ranks.shape[0]
    T = risks.shape[0]
    nb = starts.shape[0]
    n = positions.shape[0]
    A = np.zeros(R)
    B = np.zeros(R)
    hi = np.zeros(R)
    lo = np.zeros(R)
    s_r = np.zeros(R)
    e_r = np.zeros(R)
    m = np.empty(R, np.int32)
    ratios = np.zeros(R)
    slacks = np.empty(T)
    for t in range(T):
        slacks[t] = slack_factor * max(1.0, risks[t])
    for r in range(R):
        augrc_out[r] = 0.0
        auroc_out[r] = 0.0
        for q in range(Q):
            risk_out[q, r] = np.nan
        for t in range(T):
            reach_out[t, r] = 0.0
    for b in range(nb):
        first = starts[b]
        last = starts[b + 1] if b + 1 < nb else n
        _resampled_sums(positions, keys, weight, wrong, thresholds, first, last, m, s_r, e_r)
        long_block = False
        for r in range(R):
            s = s_r[r]
            e = e_r[r]
            a = A[r]
            bb = B[r]
            ratio = e / (s if s > 0.0 else 1.0)  # (0 where s = 0: e is 0 there)
            ratios[r] = ratio
            term = (
                (bb + ratio) / (a + 1.0) * (s >= 1.0)
                + (bb + 2.0 * ratio) / (a + 2.0) * (s >= 2.0)
                + (bb + 3.0 * ratio) / (a + 3.0) * (s >= 3.0)
                + (bb + 4.0 * ratio) / (a + 4.0) * (s >= 4.0)
            )
            long_block |= s > 4.0
            total = hi[r] + term
            lo[r] += (max(hi[r], term) - total) + min(hi[r], term)  # (terms >= 0: Neumaier's step)
            hi[r] = total
            augrc_out[r] += s * bb + e * (s + 1.0) / 2.0
            auroc_out[r] += (s - e) * (bb + 0.5 * e)
        for t in range(T):
            tt = risks[t]
            slack = slacks[t]
            for r in range(R):
                s = s_r[r]
                a = A[r]
                c = ratios[r] - tt
                d = tt * a - B[r] + slack * (a + s)
                jj = min(s, d / (c if c > 0.0 else 1.0)) if c > 0.0 else (s if s * c <= d else 0.0)
                jj = np.floor(jj + 1e-9)
                reach = a + jj if (jj > 0.0 and s > 0.0) else 0.0
                reach_out[t, r] = max(reach_out[t, r], reach)
        if long_block:  # the AURC terms j > 4 of a block of more than 4 units
            for r in range(R):
                s = s_r[r]
                if s > 4.0:
                    a = A[r]
                    bb = B[r]
                    ratio = ratios[r]
                    term = 0.0
                    j = 5.0
                    while j <= s:
                        term += (bb + j * ratio) / (a + j)
                        j += 1.0
                    total = hi[r] + term
                    lo[r] += (max(hi[r], term) - total) + min(hi[r], term)
                    hi[r] = total
        for q in range(Q):
            hit = False
            for r in range(R):
                hit |= (A[r] < ranks[q, r]) & (A[r] + s_r[r] >= ranks[q, r])
            if hit:  # the first block reaching rank k, for some replicates
                for r in range(R):
                    kq = ranks[q, r]
                    a = A[r]
                    if a < kq and a + s_r[r] >= kq:
                        risk_out[q, r] = (B[r] + (kq - a) * e_r[r] / s_r[r]) / kq
        for r in range(R):
            A[r] += s_r[r]
            B[r] += e_r[r]
    for r in range(R):
        aurc_out[r] = hi[r] + lo[r]
