"""The binned family's estimators on every row of batched per-bin sums, one compiled loop (SPEC 2.2-2.4).

A grouped bootstrap has ``(G, R, bins)`` statistics: 1,000 groups x 1,000 resamples x 15 bins. Each estimator of
:mod:`calibcli.binned.estimators` is a handful of array operations over them, and the sixteen metrics together are about
a hundred passes over blocks of 10^7 numbers, where the arithmetic is a few operations per bin. Here each row's
bins are read once and every metric of :data:`METRICS` computed from them in registers.

This loop is the compiled backend of :func:`calibcli.binned.estimators._point_metrics`, whose NumPy backend (the
registered estimators) is the reference: the same formulas on each bin, each sum over the bins taken in the plain
order of the bins (not NumPy's pairwise order), so the two agree within 1e-12 relative (SPEC 8.1), which the tests
check on bootstrap resamples, weighted and not, uniform and quantile bins. A metric registered beyond
:data:`METRICS` is evaluated by the registry on the same sums.

Only functions wrapped by :func:`calibcli.core.compiled.compiled` live here: Numba is imported on the first call.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.compiled import compiled

#: The metrics :func:`binned_metrics` returns, in its columns' order (the registry's order of the binned family;
#: ``tests/binned/test_kernels_binned.py`` checks that they lead :func:`calibcli.binned.estimators.metric_names`).
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
    for r in range(rows):
        # the sums over the bins, in the bins' order: the weight, |gap|, gap^2 / n, Kumar's, the DPE's and Sun's
        # terms, sum y, sum u^2, the log loss, the reliability's terms
        W = s_gap = s_gap2 = s_kumar = s_dpe = s_sun = s_y = s_u2 = s_ll = s_rel = 0.0
        worst = -np.inf
        any_occupied = False
        for b in range(nb):
            n_b = weight[r, b]
            gap = sum_y[r, b] - sum_z[r, b]
            W += n_b
            s_gap += abs(gap)
            s_y += sum_y[r, b]
            s_u2 += sum_u2[r, b]
            s_ll += sum_log_loss[r, b]
            if not (count[r, b] > 0 and n_b > 0):  # an empty bin adds nothing more (a weight of 0 has no pairs)
                continue
            big = n_b if n_b >= 1.0 else 1.0  # np.maximum(n_b, 1.0)
            pairs = count[r, b] >= 2 and n_b * n_b - diag_weight[r, b] > 1e-9 * (big * big)
            acc = sum_y[r, b] / n_b
            conf = sum_z[r, b] / n_b
            s_gap2 += gap * gap / n_b
            s_dpe += (gap * gap - diag_u2[r, b]) / n_b
            if pairs:
                acc_sq = (sum_y[r, b] * sum_y[r, b] - diag_y[r, b]) / (n_b * n_b - diag_weight[r, b])
                s_kumar += n_b * (acc_sq - 2.0 * acc * conf + conf * conf)
                s_sun += n_b * (gap * gap - diag_u2[r, b]) / (n_b * n_b - diag_weight[r, b])
            d = conf - acc
            s_rel += n_b * (d * d)
            any_occupied = True
            g = abs(gap) / n_b
            if g > worst or g != g:  # np.max: the largest, NaN if any is
                worst = g
        ybar = s_y / W
        s_res = 0.0  # the resolution's terms need the mean label: a second pass over the bins
        for b in range(nb):
            if count[r, b] > 0 and weight[r, b] > 0:
                d = sum_y[r, b] / weight[r, b] - ybar
                s_res += weight[r, b] * (d * d)
        s_dce = s_dce_w = 0.0
        for b in range(nu):
            s_dce += abs(u_sum_y[r, b] - u_weight[r, b] * ((b + 1.0) / nu))
            s_dce_w += u_weight[r, b]
        kumar = s_kumar / W
        dpe = s_dpe / W
        brier = s_u2 / W
        reliability = s_rel / W
        resolution = s_res / W
        uncertainty = ybar * (1.0 - ybar)
        out[r, 0] = s_gap / W
        out[r, 1] = np.sqrt(s_gap2 / W)
        out[r, 2] = worst if any_occupied else np.nan
        out[r, 3] = kumar
        out[r, 4] = np.sqrt(0.0 if 0.0 >= kumar else kumar)  # np.maximum(0.0, x): NaN stays NaN
        out[r, 5] = dpe
        out[r, 6] = np.sqrt(0.0 if 0.0 >= dpe else dpe)
        out[r, 7] = s_sun / W
        out[r, 8] = brier
        out[r, 9] = reliability
        out[r, 10] = resolution
        out[r, 11] = uncertainty
        out[r, 12] = brier - (reliability - resolution + uncertainty)
        out[r, 13] = 1.0 - brier / uncertainty if uncertainty > 0 else np.nan
        out[r, 14] = s_ll / W
        out[r, 15] = s_dce / s_dce_w
