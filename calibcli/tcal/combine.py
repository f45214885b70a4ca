"""Monte Carlo p-values of T-Cal's levels and their combination (SPEC 4.2: ``bonferroni`` and ``min-p``).

Monte Carlo p-values are ``(1 + #{T* >= T}) / (R + 1)`` (seed 004, 8.3.3). Two statistics of one
level that differ by less than ``1e-7`` times the largest absolute statistic of that level count as
tied (in the manner of ``scipy.stats.permutation_test``'s tolerance): this absorbs floating-point noise
between draws whose bins hold identical data, is a symmetric rule over the R + 1 statistics, and so
keeps the y-bootstrap p-value exact (it can only make it larger).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Resampled statistics within this relative distance of each other count as ties.
TIE_RTOL = 1e-7


def _tie_tolerance(values: np.ndarray) -> np.ndarray:
    """Per-level tolerance: ``TIE_RTOL`` times the largest absolute statistic over all R + 1 values."""
    return TIE_RTOL * np.max(np.abs(values), axis=0)


def _exceed_counts(all_stats: np.ndarray) -> np.ndarray:
    """``c[j, l] = #{i : T[i, l] >= T[j, l] - tol_l}`` over the R + 1 rows (observed first)."""
    tol = _tie_tolerance(all_stats)
    total = all_stats.shape[0]
    counts = np.empty(all_stats.shape, dtype=np.int64)
    for j in range(all_stats.shape[1]):  # loop over levels (at most ~40), not resamples
        ordered = np.sort(all_stats[:, j])
        counts[:, j] = total - np.searchsorted(ordered, all_stats[:, j] - tol[j], side="left")
    return counts


@dataclass(frozen=True)
class MonteCarloCombination:
    """Both combination rules from one set of resamples (internal to :func:`tcal_test`, used by benchmarks).

    ``counts[l] = #{j in 0..R : T_j >= T_0}`` for the observed statistic (row 0) at level ``l``, so the
    per-level p-value is ``counts / (R + 1)``. A level rejects when its count is at most the
    threshold: ``floor(alpha/L (R + 1))`` for Bonferroni; for min-p, the largest count ``c`` with
    ``1 + #{resamples whose min count <= c} <= alpha (R + 1)``.
    """

    counts: np.ndarray
    p_levels: np.ndarray
    threshold_bonferroni: int
    threshold_min_p: int
    p_value_bonferroni: float
    p_value_min_p: float


def monte_carlo_combine(
    observed: np.ndarray, star: np.ndarray, level_of: np.ndarray, alpha: float
) -> MonteCarloCombination:
    """Per-level Monte Carlo p-values and both combinations, from statistics per distinct partition.

    ``observed``: one value per distinct partition; ``star``: R x distinct partitions;
    ``level_of``: the distinct partition of each of the L levels.
    """
    L = len(level_of)
    all_stats = np.concatenate([observed[None, :], star], axis=0)
    counts = _exceed_counts(all_stats)[:, level_of]  # (R + 1) x L
    total = all_stats.shape[0]
    p_levels = counts[0] / total
    threshold_b = math.floor(alpha / L * total * (1 + 1e-12))
    q = counts.min(axis=1)  # the min-p statistic, as counts, of the observed and of every resample
    q_star = np.sort(q[1:])
    budget = math.floor(alpha * total * (1 + 1e-12)) - 1
    threshold_m = 0
    if budget >= 0:
        candidates = np.arange(1, total + 1)
        ok = candidates[np.searchsorted(q_star, candidates, side="right") <= budget]
        threshold_m = int(ok.max()) if len(ok) else 0
    return MonteCarloCombination(
        counts=counts[0],
        p_levels=p_levels,
        threshold_bonferroni=int(threshold_b),
        threshold_min_p=int(threshold_m),
        p_value_bonferroni=min(1.0, L * float(p_levels.min())),
        p_value_min_p=(1 + int(np.sum(q[1:] <= q[0]))) / total,
    )
