"""The binned family's estimators on every row of batched per-bin sums, one compiled loop (SPEC 2.2-2.4).

A grouped bootstrap has ``(G, R, bins)`` statistics: 1,000 groups x 1,000 resamples x 15 bins. Each estimator of
:mod:`calibcli.binned.estimators` is a handful of array operations over them, and the sixteen metrics together are about
a hundred passes over blocks of 10^7 numbers, where the arithmetic is a few operations per bin. Here each row's
bins are read once and every metric of the row computed from them in registers.

The numbers are those of :mod:`calibcli.binned.estimators`' NumPy forms on the same sums, bit for bit: the same
operations on each bin in the same order, and every sum over the bins added as NumPy adds a row of a contiguous
array (its pairwise summation: eight running sums, combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) +
(r6 + r7))``, the rest added one by one; halves of a multiple of eight beyond 128 values; NumPy's
``pairwise_sum`` in ``loops_utils.h.src``), the bins a metric skips as the zeros ``np.where`` puts there. The
tests compare the two on bootstrap resamples, weighted and not, uniform and quantile bins.

Only functions wrapped by :func:`calibcli.core.compiled.compiled` live here: Numba is imported on the first call.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled, inlined

#: The metrics :func:`binned_metrics` returns, in its columns' order (the registry's order of the binned family;
#: ``tests/binned/test_kernels_binned.py`` checks it against :data:`calibcli.binned.estimators.METRIC_NAMES`).
METRICS = (
    "ece_l1_plugin",
    "ece_l2_plugin",
    "ece_max_plugin",
    "ece_l2_sq_debiased_kumar",
    "ece_l2_debiased_kumar",
    "ece_l2_sq_debiased_dpe",
    "ece_l2_debiased_dpe",
    "ece_l2_sq_debiased_sun",
    "brier_score",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "brier_within_bin",
    "brier_skill_score",
    "log_loss",
    "dce",
)


@inlined
def _metrics_of_sums(sums: np.ndarray, worst: float, any_occupied: bool, out: np.ndarray, r: int) -> None:
    """Row ``r`` of ``out``: the metrics of :data:`METRICS` from the row's 13 sums over the bins (see
    :func:`binned_metrics`), its largest gap ``worst`` and whether any bin is occupied."""
    W = sums[0]
    kumar = sums[3] / W
    dpe = sums[4] / W
    ybar = sums[6] / W
    brier = sums[7] / W
    reliability = sums[9] / W
    resolution = sums[10] / W
    uncertainty = ybar * (1.0 - ybar)
    out[r, 0] = sums[1] / W
    out[r, 1] = np.sqrt(sums[2] / W)
    out[r, 2] = worst if any_occupied else np.nan
    out[r, 3] = kumar
    out[r, 4] = np.sqrt(0.0 if 0.0 >= kumar else kumar)  # np.maximum(0.0, x): NaN stays NaN
    out[r, 5] = dpe
    out[r, 6] = np.sqrt(0.0 if 0.0 >= dpe else dpe)
    out[r, 7] = sums[5] / W
    out[r, 8] = brier
    out[r, 9] = reliability
    out[r, 10] = resolution
    out[r, 11] = uncertainty
    out[r, 12] = brier - (reliability - resolution + uncertainty)
    out[r, 13] = 1.0 - brier / uncertainty if uncertainty > 0 else np.nan
    out[r, 14] = sums[8] / W
    out[r, 15] = sums[11] / sums[12]


@compiled
def binned_metrics(
    count: np.ndarray,
    weight: np.ndarray,
    sum_z: np.ndarray,
    sum_y: np.ndarray,
    sum_u2: np.ndarray,
    sum_log_loss: np.ndarray,
    diag_weight: np.ndarray,
    diag_y: np.ndarray,
    diag_u2: np.ndarray,
    u_weight: np.ndarray,
    u_sum_y: np.ndarray,
    out: np.ndarray,
) -> None:
    """Every metric of :data:`METRICS` of each row of ``(rows, bins)`` sums into ``out[row]`` (``(rows, 16)``):
    ``count`` ... ``diag_u2`` the main bins' :class:`calibcli.binned.stats.BinStats` arrays (``diag_*`` with the
    self-pair terms), ``u_weight`` and ``u_sum_y`` the equal-width bins' (``(rows, B)``, the dCE's)."""
    rows, nb = weight.shape
    nu = u_weight.shape[1]
    # per-bin terms of the 13 sums over the bins: 0 n, 1 |gap|, 2 gap^2/n, 3 Kumar, 4 DPE, 5 Sun, 6 sum y,
    # 7 sum u^2, 8 log loss, 9 reliability, 10 resolution (after the mean label), 11 dCE's |.|, 12 dCE's n
    terms = np.zeros((13, max(nb, nu)))
    sums = np.zeros(13)
    todo = np.empty((64, 3), dtype=np.int64)  # pairwise summation's blocks: (start, length, combine?)
    partial = np.empty(64)  # and the sums of the blocks done
    for r in range(rows):
        worst = -np.inf
        any_occupied = False
        for b in range(nb):
            n_b = weight[r, b]
            occupied = count[r, b] > 0 and n_b > 0
            big = n_b if n_b >= 1.0 else 1.0  # np.maximum(n_b, 1.0)
            pairs = count[r, b] >= 2 and n_b * n_b - diag_weight[r, b] > 1e-9 * (big * big)
            gap = sum_y[r, b] - sum_z[r, b]
            terms[0, b] = n_b
            terms[1, b] = abs(gap)
            terms[6, b] = sum_y[r, b]
            terms[7, b] = sum_u2[r, b]
            terms[8, b] = sum_log_loss[r, b]
            if not occupied:  # (a bin with pairs is occupied: a weight of 0 has none)
                for j in (2, 3, 4, 5, 9, 10):
                    terms[j, b] = 0.0
                continue
            # each quotient once, for every estimator that divides by the bin's weight (the same numbers)
            acc = sum_y[r, b] / n_b
            conf = sum_z[r, b] / n_b
            terms[2, b] = gap * gap / n_b
            terms[4, b] = (gap * gap - diag_u2[r, b]) / n_b
            if pairs:
                acc_sq = (sum_y[r, b] * sum_y[r, b] - diag_y[r, b]) / (n_b * n_b - diag_weight[r, b])
                terms[3, b] = n_b * (acc_sq - 2.0 * acc * conf + conf * conf)
                terms[5, b] = n_b * (gap * gap - diag_u2[r, b]) / (n_b * n_b - diag_weight[r, b])
            else:
                terms[3, b] = 0.0
                terms[5, b] = 0.0
            d = conf - acc
            terms[9, b] = n_b * (d * d)
            terms[10, b] = acc  # (the resolution's term once the mean label is known)
            any_occupied = True
            g = abs(gap) / n_b
            if g > worst or g != g:  # np.max: the largest, NaN if any is
                worst = g
        for b in range(nu):
            terms[11, b] = abs(u_sum_y[r, b] - u_weight[r, b] * ((b + 1.0) / nu))
            terms[12, b] = u_weight[r, b]
        for j in range(13):
            n = nu if j >= 11 else nb
            if j == 10:  # the resolution's terms need the mean label
                ybar = sums[6] / sums[0]
                for b in range(nb):
                    if count[r, b] > 0 and weight[r, b] > 0:
                        d = terms[10, b] - ybar
                        terms[10, b] = weight[r, b] * (d * d)
            # NumPy's pairwise sum of terms[j, :n]: blocks of at most 128 values with eight running sums,
            # longer ones split in two at a multiple of 8 and the halves' sums added (post-order)
            top = 1
            todo[0, 0] = 0
            todo[0, 1] = n
            todo[0, 2] = 0
            done = 0
            while top > 0:
                top -= 1
                lo = todo[top, 0]
                k = todo[top, 1]
                if todo[top, 2] == 1:  # both halves are summed: add them
                    done -= 1
                    partial[done - 1] = partial[done - 1] + partial[done]
                    continue
                if k > 128:
                    k2 = k // 2
                    k2 -= k2 % 8
                    todo[top, 2] = 1
                    todo[top + 1, 0] = lo + k2
                    todo[top + 1, 1] = k - k2
                    todo[top + 1, 2] = 0
                    todo[top + 2, 0] = lo
                    todo[top + 2, 1] = k2
                    todo[top + 2, 2] = 0
                    top += 3
                    continue
                if k < 8:
                    part = 0.0
                    for i in range(k):
                        part += terms[j, lo + i]
                else:
                    r0 = terms[j, lo]
                    r1 = terms[j, lo + 1]
                    r2 = terms[j, lo + 2]
                    r3 = terms[j, lo + 3]
                    r4 = terms[j, lo + 4]
                    r5 = terms[j, lo + 5]
                    r6 = terms[j, lo + 6]
                    r7 = terms[j, lo + 7]
                    i = 8
                    whole = k - k % 8
                    while i < whole:
                        r0 += terms[j, lo + i]
                        r1 += terms[j, lo + i + 1]
                        r2 += terms[j, lo + i + 2]
                        r3 += terms[j, lo + i + 3]
                        r4 += terms[j, lo + i + 4]
                        r5 += terms[j, lo + i + 5]
                        r6 += terms[j, lo + i + 6]
                        r7 += terms[j, lo + i + 7]
                        i += 8
                    part = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
                    while i < k:
                        part += terms[j, lo + i]
                        i += 1
                partial[done] = part
                done += 1
            sums[j] = partial[0]
        _metrics_of_sums(sums, worst, any_occupied, out, r)
