"""The summaries of regression calibration (SPEC 10), written on sums so that they broadcast over leading axes
(bootstrap replicates): the calibration curve's MACE, RMSCE and miscalibration area, ENCE and UCE over bins of
the predicted standard deviation, the size-stratified coverage of an interval.

Sources: Chung, Neiswanger, Char, Schneider, "Beyond pinball loss: quantile methods for calibrated uncertainty
quantification" (NeurIPS 2021) and uncertainty-toolbox (``mean_absolute_calibration_error``,
``root_mean_squared_calibration_error``, ``miscalibration_area``: the area traced between the curve and the
diagonal, each segment a trapezoid or, where they cross, two triangles); Levi, Gispan, Giladi, Fetaya,
"Evaluating and calibrating uncertainty prediction in regression tasks" (2019; ENCE), netcal's
``ENCE``/``UCE``; Angelopoulos and Bates, "A gentle introduction to conformal prediction" (2021, size-stratified
coverage), MAPIE's ``regression_ssc_score``.
"""

from __future__ import annotations

import numpy as np


def observed_proportions(curve_counts: np.ndarray, weight: np.ndarray | float) -> np.ndarray:
    """``(..., K)`` observed proportions from ``(..., K + 1)`` bin weights: a row in bin ``b`` counts at every
    expected proportion ``p_k`` with ``k >= b``."""
    cum = np.cumsum(curve_counts, axis=-1)[..., :-1]
    return cum / np.asarray(weight)[..., None]


def mace(expected: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``mean_k |obs_k - p_k|``."""
    return np.mean(np.abs(observed - expected), axis=-1)


def rmsce(expected: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``sqrt(mean_k (obs_k - p_k)^2)``."""
    return np.sqrt(np.mean((observed - expected) ** 2, axis=-1))


def miscalibration_area(expected: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """The area between the piecewise-linear curve ``(p_k, obs_k)`` and the diagonal: per segment, the
    trapezoid ``dx |d_l + d_r| / 2`` where the gaps ``d = obs - p`` keep their sign, else the two triangles
    ``dx (d_l^2 + d_r^2) / (2 (|d_l| + |d_r|))`` on either side of the crossing."""
    expected = np.asarray(expected, dtype=np.float64)
    if expected.shape[-1] < 2:
        return np.zeros(observed.shape[:-1])
    d = observed - expected
    dl, dr = d[..., :-1], d[..., 1:]
    dx = np.diff(expected)
    cross = dl * dr < 0
    trapezoid = dx * np.abs(dl + dr) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        hourglass = dx * (dl * dl + dr * dr) / (2.0 * (np.abs(dl) + np.abs(dr)))
    return np.sum(np.where(cross, hourglass, trapezoid), axis=-1)


def equal_mass_bins(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Each row's bin: rows sorted by value (stably), bin ``b`` holding sorted positions ``floor(b n / B) ..
    floor((b + 1) n / B) - 1`` (SPEC 10)."""
    n = len(values)
    order = np.argsort(values, kind="stable")
    position_bin = (np.arange(n) * n_bins) // max(n, 1)
    out = np.empty(n, dtype=np.int64)
    out[order] = position_bin
    return out


def equal_width_bins(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Each row's bin among ``n_bins`` equal-width bins over ``[min, max]`` of the values (netcal's binning;
    the maximum in the last bin)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        return np.zeros(len(values), dtype=np.int64)
    return np.minimum(((values - lo) / (hi - lo) * n_bins).astype(np.int64), n_bins - 1)


def bins_of(values: np.ndarray, n_bins: int, binning: str) -> np.ndarray:
    return equal_mass_bins(values, n_bins) if binning == "equal-mass" else equal_width_bins(values, n_bins)


def ence_uce(w: np.ndarray, sigma2: np.ndarray, r2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ENCE ``mean_b |RMV_b - RMSE_b| / RMV_b`` over non-empty bins and UCE ``sum_b (n_b / n) |MSE_b - MV_b|``,
    from each bin's weight, sum of ``sigma^2`` and sum of ``(y - mu)^2`` (``(..., B)`` arrays)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mv = sigma2 / w
        mse = r2 / w
        rmv, rmse = np.sqrt(mv), np.sqrt(mse)
        ratio = np.abs(rmv - rmse) / rmv
    full = w > 0
    ence = np.sum(np.where(full, ratio, 0.0), axis=-1) / np.maximum(np.sum(full, axis=-1), 1)
    total = np.sum(w, axis=-1)
    uce = np.sum(np.where(full, w * np.abs(mse - mv), 0.0), axis=-1) / total
    return ence, uce


def binned_sums(bins: np.ndarray, n_bins: int, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``(len(weights), n_bins)``... per replicate: the sums of ``weights * values`` in each bin.

    ``weights`` is ``(R, n)`` (multiplicities times row weights) or ``(n,)``; ``values`` ``(n,)``."""
    w = np.atleast_2d(weights)
    offsets = (np.arange(w.shape[0]) * n_bins)[:, None] + bins[None, :]
    out = np.bincount(offsets.ravel(), weights=(w * values[None, :]).ravel(), minlength=w.shape[0] * n_bins)
    return out.reshape(w.shape[0], n_bins) if weights.ndim == 2 else out.reshape(n_bins)


def size_stratified_coverage(covered_sums: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The smallest coverage over the non-empty width bins (MAPIE's ``regression_ssc_score``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = covered_sums / w
    return np.min(np.where(w > 0, cov, np.inf), axis=-1)
