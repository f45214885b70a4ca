"""Binned calibration errors, proper scores and their uncertainty (SPEC section 2).

Everything here is computed from per-bin sufficient statistics (:class:`BinStats`): sums of
weights, of ``w z``, ``w y``, ``w u^2`` (``u = y - z``) and of the log-loss per bin. The
statistics of two chunks of data binned with the same fixed bins add up, so a large file can
be reduced chunk by chunk; and the bootstrap resamples rows through multiplicities and per-bin
sums, never through an n-by-R array.

Sample weights are *frequency* weights: a weight of 2 is the same as the row appearing twice.
Counts ``n_b`` and ``n`` in the SPEC formulas are therefore sums of weights.

Estimator names (SPEC 2.2) are used verbatim as keys of :attr:`CalibrationResult.metrics`. Each estimator
registers itself under its name (:func:`calibcli.registry.estimator`); the point estimates and the bootstrap
replicates are every registered binned metric, in registry order (:func:`_point_metrics`, :data:`METRIC_NAMES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from calibcli.binning import Binning, fit_binning, quantile_starts_batched, uniform_bin_index
from calibcli.registry import estimated, estimator, evaluate
from calibcli.validation import check_binary, check_options

#: Probabilities are clipped to [LOG_LOSS_EPS, 1 - LOG_LOSS_EPS] inside the log-loss.
LOG_LOSS_EPS = 1e-15

# Columns of the per-row statistics matrix; per-bin sums of these are all any metric needs.
_W, _WZ, _WY, _WU2, _WLL = range(5)
_N_STATS = 5


@dataclass(frozen=True)
class BinStats:
    """Per-bin sums: ``count`` (rows), ``weight`` (sum w), ``sum_z``, ``sum_y``, ``sum_u2``, ``sum_log_loss``.

    All are weighted by the sample weights. Statistics of disjoint chunks binned the same way merge
    with :meth:`merge`. Every array has the bins on its last axis and may carry leading axes: ``(R, bins)``
    holds R bootstrap replicates (and ``(G, R, bins)`` groups of them); the estimators below broadcast
    over them.
    """

    count: np.ndarray
    weight: np.ndarray
    sum_z: np.ndarray
    sum_y: np.ndarray
    sum_u2: np.ndarray
    sum_log_loss: np.ndarray
    # The "diagonal" of the debiased estimators: the part of (sum w)^2, (sum w y)^2 and (sum w u)^2
    # that pairs an observation with itself. On data these equal weight, sum_y and sum_u2 (y^2 = y);
    # on a bootstrap resample they also hold the pairs of copies of one original row, so that the
    # U-statistics stay U-statistics on resamples (no upward bias from duplicated rows).
    self_weight: np.ndarray | None = None
    self_y: np.ndarray | None = None
    self_u2: np.ndarray | None = None

    def merge(self, other: BinStats) -> BinStats:
        """Statistics of the union of two disjoint samples binned with the same bins."""
        return BinStats(*(a + b for a, b in zip(self._arrays(), other._arrays(), strict=True)))

    def _arrays(self):
        return (self.count, self.weight, self.sum_z, self.sum_y, self.sum_u2, self.sum_log_loss,
                self.diag_weight, self.diag_y, self.diag_u2)

    @property
    def diag_weight(self) -> np.ndarray:
        return self.weight if self.self_weight is None else self.self_weight

    @property
    def diag_y(self) -> np.ndarray:
        return self.sum_y if self.self_y is None else self.self_y

    @property
    def diag_u2(self) -> np.ndarray:
        return self.sum_u2 if self.self_u2 is None else self.self_u2

    @classmethod
    def stack(cls, stats: list[BinStats]) -> BinStats:
        """Statistics of equal bin counts stacked along a new leading axis (e.g. one row per replicate)."""
        return cls(*(np.stack(columns) for columns in zip(*(s._arrays() for s in stats), strict=True)))

    @classmethod
    def concat(cls, stats: list[BinStats]) -> BinStats:
        """Batched statistics joined along their leading (replicate) axis."""
        return cls(*(np.concatenate(columns) for columns in zip(*(s._arrays() for s in stats), strict=True)))

    @property
    def nonempty(self) -> np.ndarray:
        return self.count > 0

    @property
    def n_nonempty(self) -> int:
        return int(self.nonempty.sum())


@dataclass(frozen=True)
class Metric:
    """One reported number: its estimate and, when computed, a confidence interval and a bound."""

    name: str
    estimate: float
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None
    upper_bound: float | None = None
    upper_bound_method: str | None = None
    note: str | None = None
    #: Named numbers that belong to the estimate (ECCE's sigma scale and p-value), written beside it.
    extra: dict | None = None

    def to_dict(self) -> dict:
        """The metric as a report entry: estimate, interval and how it was made; bound, note and the extra
        numbers when present."""
        out = {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high, "ci_method": self.ci_method}
        if self.upper_bound is not None:
            out["upper_bound"] = self.upper_bound
            out["upper_bound_method"] = self.upper_bound_method
        if self.note:
            out["note"] = self.note
        if self.extra:
            out.update(self.extra)
        return out


@dataclass(frozen=True)
class CalibrationResult:
    """The binned calibration report of one binary problem (SPEC 2)."""

    n: int
    weight_total: float
    n_bins: int
    strategy: str
    n_bins_nonempty: int
    bin_bounds: np.ndarray
    bin_stats: BinStats
    metrics: dict[str, Metric]
    alpha: float
    n_boot: int
    log_loss_eps: float = LOG_LOSS_EPS
    replicates: dict[str, np.ndarray] | None = field(default=None, repr=False)
    #: With ``keep_replicates``: the main bins' statistics on every resample, shape ``(R, bins)`` (the
    #: diagram's bootstrap band of each bin's observed frequency).
    bin_replicates: BinStats | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """Sizes, the bins (non-empty ones, with their bounds, counts, confidence and accuracy) and the metrics."""
        from calibcli.binning import EDGE_CONVENTION

        s, bounds = self.bin_stats, self.bin_bounds
        return {
            "n": self.n,
            "weight_total": self.weight_total,
            "bins": {
                "strategy": self.strategy,
                "n_bins": self.n_bins,
                "n_bins_nonempty": self.n_bins_nonempty,
                "edges_convention": EDGE_CONVENTION,
                "per_bin": [
                    {
                        "lower": float(bounds[j]),
                        "upper": float(bounds[j + 1]),
                        "count": int(s.count[j]),
                        "weight": float(s.weight[j]),
                        "mean_confidence": float(s.sum_z[j] / s.weight[j]),
                        "accuracy": float(s.sum_y[j] / s.weight[j]),
                    }
                    for j in range(len(s.count))
                    if s.count[j] > 0 and s.weight[j] > 0
                ],
            },
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
        }


# ---------------------------------------------------------------------------------------------
# Per-row and per-bin statistics


def _row_stats(y: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The (5, n) array of weighted per-row statistics: w, w z, w y, w u^2, w log-loss."""
    X = np.empty((_N_STATS, len(z)))
    X[_W] = w
    np.multiply(w, z, out=X[_WZ])
    np.multiply(w, y, out=X[_WY])
    u = np.subtract(y, z, out=X[_WU2])
    np.multiply(u, u, out=u)
    u *= w
    # log-loss: -log of the probability given to the observed label, clipped to [eps, 1 - eps]
    p_true = np.where(y == 1, z, 1.0 - z)
    np.clip(p_true, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS, out=p_true)
    np.log(p_true, out=X[_WLL])
    X[_WLL] *= -w
    return X


def bin_statistics(y_true, y_prob, bin_index, n_bins, sample_weight=None) -> BinStats:
    """Per-bin sufficient statistics of a binary problem for a given bin assignment."""
    z = np.asarray(y_prob, dtype=np.float64)
    if sample_weight is None:
        return _bin_statistics_unweighted(np.asarray(y_true).astype(np.int64, copy=False), z, bin_index, n_bins)
    y = np.asarray(y_true, dtype=np.float64)
    X = _row_stats(y, z, np.asarray(sample_weight, dtype=np.float64))
    sums = np.stack([np.bincount(bin_index, weights=X[j], minlength=n_bins) for j in range(_N_STATS)])
    count = np.bincount(bin_index, minlength=n_bins)
    return _stats_from_sums(count, sums)


def _bin_statistics_unweighted(y: np.ndarray, z: np.ndarray, bin_index: np.ndarray, n_bins: int) -> BinStats:
    """The same statistics in fewer passes over the data, for unit weights (large files).

    Counts and sums of z are taken per (bin, label) cell, so that ``sum y = count of y = 1`` and
    ``sum (y - z)^2 = count1 - 2 sum_{y=1} z + sum z^2``.
    """
    cell = bin_index * 2 + y
    count = np.bincount(cell, minlength=2 * n_bins).reshape(n_bins, 2)
    sum_z = np.bincount(cell, weights=z, minlength=2 * n_bins).reshape(n_bins, 2)
    sum_z2 = np.bincount(bin_index, weights=z * z, minlength=n_bins)
    p_true = np.where(y == 1, z, 1.0 - z)
    np.clip(p_true, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS, out=p_true)
    sum_ll = -np.bincount(bin_index, weights=np.log(p_true, out=p_true), minlength=n_bins)
    n_pos = count[:, 1].astype(np.float64)
    total = count.sum(axis=1)
    sum_u2 = np.maximum(n_pos - 2.0 * sum_z[:, 1] + sum_z2, 0.0)
    return BinStats(total, total.astype(np.float64), sum_z.sum(axis=1), n_pos, sum_u2, sum_ll)


def _stats_from_sums(count: np.ndarray, sums: np.ndarray) -> BinStats:
    return BinStats(count, sums[_W], sums[_WZ], sums[_WY], sums[_WU2], sums[_WLL])


# ---------------------------------------------------------------------------------------------
# Estimators on per-bin statistics (SPEC 2.2, 2.3, 2.4)
#
# Every estimator reduces over the last axis (the bins) and broadcasts the leading ones, so the same
# function gives the point estimate from ``(bins,)`` sums and all the bootstrap replicates at once from
# ``(R, bins)`` sums (NumPy's gufunc habit): a replicate is never a Python loop. On ``(bins,)`` sums an
# estimator returns a Python float, on batched sums an array of the leading shape.


def _value(x):
    """A 0-d result as a Python float; a batched one as the array."""
    return float(x) if np.ndim(x) == 0 else x


def _masked_sum(value_fn, mask):
    """``sum_b value_b`` over the bins where ``mask`` holds (last axis), ``value_fn()`` not evaluated (nor
    warning) elsewhere.

    On ``(bins,)`` sums the selected values are summed as a compressed array, on batched sums as the
    row with zeros elsewhere: the same sum, whose last bit may differ with the order numpy adds in
    (every printed point estimate stays the bit-for-bit value it always had)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        values = value_fn()
    if np.ndim(mask) == 1:
        return np.broadcast_to(values, mask.shape)[mask].sum()
    return np.where(mask, values, 0.0).sum(axis=-1)


def _occupied(s: BinStats) -> np.ndarray:
    """Non-empty bins of positive weight: the bins a gap is defined on."""
    return s.nonempty & (s.weight > 0)


@estimator("ece_l1_plugin")
def ece_l1_plugin(s: BinStats):
    """l1-ECE, plugin (Guo et al. 2017; seed 002 binECE): ``sum_b (n_b/n) |acc_b - conf_b|``."""
    return _value(np.abs(s.sum_y - s.sum_z).sum(axis=-1) / s.weight.sum(axis=-1))


@estimator("ece_l2_plugin")
def ece_l2_plugin(s: BinStats):
    """l2-ECE, plugin (Kumar et al. 2019 def. 1; T-Cal eq. 5): ``sqrt(sum_b (n_b/n) gap_b^2)``."""
    gap_sq = _masked_sum(lambda: (s.sum_y - s.sum_z) ** 2 / s.weight, _occupied(s))
    return _value(np.sqrt(gap_sq / s.weight.sum(axis=-1)))


@estimator("ece_max_plugin")
def ece_max_plugin(s: BinStats):
    """Maximum calibration error (MCE) over non-empty bins: ``max_b |gap_b|``."""
    ne = _occupied(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(ne, np.abs(s.sum_y - s.sum_z) / s.weight, -np.inf)
    out = gap.max(axis=-1)
    if np.ndim(out) == 0 and not ne.any():
        raise ValueError("the maximum calibration error needs a non-empty bin")
    return _value(np.where(ne.any(axis=-1), out, np.nan))


def _has_pairs(s: BinStats) -> np.ndarray:
    """Bins holding at least two distinct observations (``n_b >= 2``; with weights, ``n_b^2 > sum w``).

    On a bootstrap resample, a bin holding copies of a single original row has no distinct pair.
    """
    return (s.count >= 2) & (s.weight**2 - s.diag_weight > 1e-9 * np.maximum(s.weight, 1.0) ** 2)


@estimator("ece_l2_sq_debiased_kumar")
def ece_l2_sq_debiased_kumar(s: BinStats):
    """Squared l2-ECE, debiased ("cancelling") estimator of Kumar, Liang & Ma (2019, seed 000).

    ``sum_{b: n_b >= 2} (n_b/n) [gap_b^2 - acc_b (1 - acc_b) / (n_b - 1)]``. With weights, ``n_b``
    is the bin's weight and bins whose weight is at most 1 are skipped (they hold fewer than two
    observations' worth of data). Can be negative.

    Computed in its equivalent U-statistic form
    ``gap_b^2 - acc_b(1-acc_b)/(n_b-1) = [(sum y)^2 - sum y^2] / (n_b (n_b - 1)) - 2 acc_b conf_b + conf_b^2``,
    whose self-pair terms generalise to bootstrap resamples (see :class:`BinStats`).
    """
    def term():
        nb = s.weight
        acc_sq = (s.sum_y**2 - s.diag_y) / (nb**2 - s.diag_weight)
        acc = s.sum_y / nb
        conf = s.sum_z / nb
        return nb * (acc_sq - 2.0 * acc * conf + conf**2)

    return _value(_masked_sum(term, _has_pairs(s)) / s.weight.sum(axis=-1))


def _root_of_square(sq):
    """``sqrt(max(0, sq))``: a debiased squared error's root, 0 where the signed square is negative (SPEC 2.2)."""
    return _value(np.sqrt(np.maximum(0.0, sq)))


@estimator("ece_l2_debiased_kumar", of=("ece_l2_sq_debiased_kumar",))
def ece_l2_debiased_kumar(ece_l2_sq_debiased_kumar):
    """l2-ECE, Kumar et al.'s debiased estimator: the root of the signed square, 0 when it is negative."""
    return _root_of_square(ece_l2_sq_debiased_kumar)


@estimator("ece_l2_debiased_dpe", of=("ece_l2_sq_debiased_dpe",))
def ece_l2_debiased_dpe(ece_l2_sq_debiased_dpe):
    """l2-ECE, T-Cal's debiased plug-in estimator: the root of the signed square, 0 when it is negative."""
    return _root_of_square(ece_l2_sq_debiased_dpe)


@estimator("ece_l2_sq_debiased_dpe")
def ece_l2_sq_debiased_dpe(s: BinStats):
    """Squared l2-ECE, debiased plug-in estimator (DPE) of T-Cal (Lee et al. 2023, seed 004 eq. 6).

    ``(1/n) sum_b (1/n_b) [(sum_{i in b} U_i)^2 - sum_{i in b} U_i^2]`` with ``U = y - z``. Can be
    negative.
    """
    term = _masked_sum(lambda: ((s.sum_y - s.sum_z) ** 2 - s.diag_u2) / s.weight, _occupied(s))
    return _value(term / s.weight.sum(axis=-1))


@estimator("brier_score", "brier_reliability", "brier_resolution", "brier_uncertainty", "brier_within_bin")
def brier_decomposition(s: BinStats) -> dict:
    """Brier score and its Murphy decomposition on the chosen bins (SPEC 2.3).

    ``brier = reliability - resolution + uncertainty + within_bin`` exactly, where ``within_bin``
    is the part the binned decomposition does not explain (within-bin variation of z).
    """
    W = s.weight.sum(axis=-1)
    ne = _occupied(s)
    ybar = s.sum_y.sum(axis=-1) / W
    brier = s.sum_u2.sum(axis=-1) / W
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = s.sum_z / s.weight
        acc = s.sum_y / s.weight
    reliability = _masked_sum(lambda: s.weight * (conf - acc) ** 2, ne) / W
    resolution = _masked_sum(lambda: s.weight * (acc - np.expand_dims(ybar, -1)) ** 2, ne) / W
    uncertainty = ybar * (1.0 - ybar)
    return {
        "brier_score": _value(brier),
        "brier_reliability": _value(reliability),
        "brier_resolution": _value(resolution),
        "brier_uncertainty": _value(uncertainty),
        "brier_within_bin": _value(brier - (reliability - resolution + uncertainty)),
    }


@estimator("brier_skill_score", of=("brier_score", "brier_uncertainty"))
def brier_skill_score(brier, uncertainty):
    """Brier skill score against climatology: ``1 - Brier / (ybar (1 - ybar))`` (Murphy 1973; Wilks,
    *Statistical Methods in the Atmospheric Sciences*, 9.4). 1 is perfect, 0 no better than predicting the
    event rate ``ybar`` for everyone; NaN (null in the report) when every label is the same."""
    if np.ndim(uncertainty) == 0:
        return 1.0 - brier / uncertainty if uncertainty > 0 else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(uncertainty > 0, 1.0 - brier / uncertainty, np.nan)


@estimator("log_loss")
def log_loss(s: BinStats):
    """Mean negative log-likelihood, probabilities clipped to ``[eps, 1 - eps]`` (eps = LOG_LOSS_EPS)."""
    return _value(s.sum_log_loss.sum(axis=-1) / s.weight.sum(axis=-1))


@estimator("dce", of=("s_uniform",))
def dce_estimate(s_uniform: BinStats):
    """Distance-to-calibration estimate (seed 002 dCE) on B equal-width bins.

    ``(1/n) sum_k |sum_{i in B_k} (y_i - c_k)|`` with ``c_k`` the upper end ``(k+1)/B`` of the
    (0-indexed) bin ``[k/B, (k+1)/B)``, so that ``|z - c_k| <= 1/B`` inside the bin, as Thm 12.10 uses.
    """
    B = s_uniform.weight.shape[-1]
    c = np.arange(1, B + 1) / B
    return _value(np.abs(s_uniform.sum_y - s_uniform.weight * c).sum(axis=-1) / s_uniform.weight.sum(axis=-1))


def hoeffding_margin(n: float, delta: float) -> float:
    """``sqrt(2 log(1/delta) / n)``, the McDiarmid margin of seed 002 Thms 12.4 and 12.10."""
    return math.sqrt(2.0 * math.log(1.0 / delta) / n)


def _point_metrics(s: BinStats, s_uniform: BinStats) -> dict:
    """Every bootstrappable metric of SPEC 2 (:data:`METRIC_NAMES`, each registered estimator of the binned family)
    from the bins' statistics (floats, or arrays over the leading axes of batched statistics), in report order."""
    return evaluate(METRIC_NAMES, {"s": s, "s_uniform": s_uniform})


# ---------------------------------------------------------------------------------------------
# The l2-ECE confidence interval of Sun et al. (2024)


@dataclass(frozen=True)
class SunInterval:
    """Confidence interval for the squared l2-ECE (Sun, Song, Sun, Zhao 2024; seed 002 Algorithm 1)."""

    estimate: float  # T_m, debiased with 1/(n_b - 1)
    low: float
    high: float
    includes_zero: bool
    sigma1: float
    case: int  # which branch of eq. (8)


@estimator("ece_l2_sq_debiased_sun")
def ece_l2_sq_sun_estimate(s: BinStats):
    """Sun et al.'s debiased squared l2-ECE: ``(1/n) sum_{b: n_b >= 2} [(sum U)^2 - sum U^2] / (n_b - 1)``.

    ``n_b - 1`` is written ``(n_b^2 - diag_weight) / n_b``, the number of distinct pairs per element.
    Reduces over the last axis (the bins), like every estimator here.
    """
    term = _masked_sum(lambda: s.weight * ((s.sum_y - s.sum_z) ** 2 - s.diag_u2) / (s.weight**2 - s.diag_weight),
                       _has_pairs(s))
    return _value(term / s.weight.sum(axis=-1))


def ece_l2_sq_sun_interval(s: BinStats, *, alpha: float) -> SunInterval:
    """The adjusted interval of Sun et al. (seed 002 Algorithm 1, eqs. (6)-(8)), scalar residuals (k = 1).

    ``T_m = (1/n) sum_{b: n_b >= 2} 1/(n_b - 1) sum_{a != c in b} U_a U_c``; ``sigma_1^2`` by eq. (7)
    with per-bin mean ``E_b = mean U`` and variance ``Cov_b = mean U^2 - E_b^2``; the interval by eq. (8).
    Zero is added when ``T_m^+ < z_alpha sigma_0 / (n sqrt(Vol(B)))``. That threshold is z_alpha times
    the standard deviation of T_m under calibration, ``sqrt(2 sum_b v_b^2) / n`` with ``v_b`` the
    within-bin variance of U; the paper evaluates it for uniform z (``sigma_0^2 = 2 int v(z)^2 dz``),
    here ``v_b`` is estimated by the bin's mean of ``U^2``, which matches the paper for uniform z and
    stays valid for any distribution of z.
    """
    from statistics import NormalDist  # the stdlib quantile keeps scipy off the ece start-up path

    W = s.weight.sum()
    T = ece_l2_sq_sun_estimate(s)
    ne = s.nonempty & (s.weight > 0)
    nb_all = s.weight[ne]
    mean_u = (s.sum_y[ne] - s.sum_z[ne]) / nb_all
    var_u = np.maximum(s.sum_u2[ne] / nb_all - mean_u**2, 0.0)
    p = nb_all / W
    sigma1_sq = np.sum(p * mean_u**4) - np.sum(p * mean_u**2) ** 2 + 4.0 * np.sum(p * mean_u**2 * var_u)
    sigma1 = math.sqrt(max(float(sigma1_sq), 0.0))

    z_half = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    z_one = NormalDist().inv_cdf(1.0 - alpha)
    t_plus = max(T, 0.0)
    se = sigma1 / math.sqrt(W)
    high = t_plus + z_half * se
    if t_plus / 2.0 <= t_plus - z_half * se:
        low, case = t_plus - z_half * se, 1
    elif t_plus - z_one * se < t_plus / 2.0:
        low, case = max(0.0, t_plus - z_one * se), 2
    else:
        low, case = t_plus / 2.0, 3

    # Zero-inclusion threshold z_alpha * sigma_0 / (n sqrt(Vol)): under calibration the variance of
    # n T_m is about 2 sum_b v_b^2 with v_b the within-bin variance of U; estimate v_b by mean_b U^2.
    v_b = s.sum_u2[ne] / nb_all
    sigma0_over_sqrt_vol = math.sqrt(2.0 * float(np.sum(v_b**2)))
    includes_zero = t_plus < z_one * sigma0_over_sqrt_vol / W
    if includes_zero:
        low = 0.0
    return SunInterval(T, float(low), float(high), bool(includes_zero), sigma1, case)


# ---------------------------------------------------------------------------------------------
# Bootstrap through multiplicities and per-bin sums


#: Above this many runs of rows the per-row bootstrap sums run with one ``reduceat`` rather than a product per run.
_LOOP_RUNS = 4096

#: Multiply-adds of one matrix product that OpenBLAS keeps on one thread (its threshold is 4 x 65536).
_ONE_THREAD_PRODUCT = 1 << 18

#: Multiplicities (replicates x rows) held at once by the per-row bootstrap (2 MB arrays, which stay in the
#: caches: four times larger ran slower); fixes speed and memory, never the numbers.
_BLOCK_ELEMENTS = 1 << 18


class _SortedProblem:
    """A binary problem sorted by z once, so that every bin is a contiguous run of rows.

    A resample is given by row multiplicities ``m`` (in sorted order); the sums of any statistic
    over a bin are then one product ``m[run] @ X[run]``, which costs O(n) per resample in total and
    never materialises the resampled data. ``m`` may be ``(R, n)``: R resamples at once, each run's
    sums one matrix product ``M[:, run] @ X[run]`` for all of them, and the statistics ``(R, bins)``.
    """

    def __init__(self, y, z, w, binning: Binning, n_uniform: int):
        self.order = np.argsort(z, kind="stable")
        self.z = z[self.order]
        stats = _row_stats(y[self.order].astype(np.float64), self.z, w[self.order])
        ws = w[self.order]
        # (n, 6) in row-major order so that a run's sums are one BLAS product; column 0 counts rows
        self.X = np.ascontiguousarray(np.vstack([np.ones(len(self.z)), stats]).T)
        # Pairs between copies of one original row: m (m - 1) times w^2, w^2 y, w^2 u^2. With unit
        # weights these are columns of X itself (count, y, u^2).
        self.unit_weights = bool(np.all(ws == 1.0))
        self.X_self = np.ascontiguousarray(self.X[:, [0, 1 + _WY, 1 + _WU2]]) if self.unit_weights else (
            np.ascontiguousarray(np.vstack([ws * ws, ws * stats[_WY], ws * stats[_WU2]]).T))
        self.binning = binning
        self.n_uniform = n_uniform
        # Equal-width bins never move under resampling: their runs are fixed once.
        self.uniform_starts = np.searchsorted(uniform_bin_index(self.z, n_uniform), np.arange(n_uniform))
        if binning.strategy == "uniform":
            self.main_starts = np.searchsorted(uniform_bin_index(self.z, binning.n_bins), np.arange(binning.n_bins))

    def block_size(self) -> int:
        """Resamples per block of :meth:`resampled` that keep its arrays within ``_BLOCK_ELEMENTS`` values."""
        return max(1, _BLOCK_ELEMENTS // max(len(self.z), 1))

    def _run_sums(self, M: np.ndarray, pairs: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sums ``(R, runs, 6)`` of ``M X`` and ``(R, runs, 3)`` of ``pairs X_self`` over the runs of rows
        beginning at ``starts`` (increasing; a run may be empty)."""
        n, R = len(self.z), M.shape[0]
        bounds = np.append(starts, n)
        sums = np.zeros((R, len(starts), _N_STATS + 1))
        dup = np.zeros((R, len(starts), 3))
        if len(starts) <= _LOOP_RUNS:
            for j, (a, b) in enumerate(pairwise(bounds)):
                # OpenBLAS runs a product of more than 2^18 multiply-adds on several threads, which on a
                # shared machine costs far more than it saves: products below that stay on one thread.
                step = max(1, _ONE_THREAD_PRODUCT // (8 * (b - a))) if b > a else R
                for r in range(0, R, step):
                    sums[r:r + step, j] = M[r:r + step, a:b] @ self.X[a:b]
                    dup[r:r + step, j] = pairs[r:r + step, a:b] @ self.X_self[a:b]
            return sums, dup
        # many runs (most of them empty when there are more bins than rows): one reduceat over the non-empty ones
        nonempty = np.flatnonzero(bounds[:-1] < bounds[1:])
        first = bounds[nonempty]  # increasing; each run ends where the next non-empty one starts
        if len(first):
            sums[:, nonempty] = np.add.reduceat(M[:, :, None] * self.X[None], first, axis=1)
            dup[:, nonempty] = np.add.reduceat(pairs[:, :, None] * self.X_self[None], first, axis=1)
        return sums, dup

    @staticmethod
    def _stats(sums: np.ndarray, dup: np.ndarray) -> BinStats:
        """:class:`BinStats` of bin sums ``(..., bins, 6)`` and self-pair sums ``(..., bins, 3)``."""
        s = np.moveaxis(sums, -1, 0)
        d = np.moveaxis(dup, -1, 0)
        weight, sum_y, sum_u2 = s[1 + _W], s[1 + _WY], s[1 + _WU2]
        return BinStats(np.rint(s[0]).astype(np.int64), weight, s[1 + _WZ], sum_y, sum_u2, s[1 + _WLL],
                        self_weight=weight + d[0], self_y=sum_y + d[1], self_u2=sum_u2 + d[2])

    def _quantile_sums(self, M: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bin sums on each resample's own quantile bins (SPEC 2.1's edges of its sorted values, z[i]
        repeated M[r, i] times), ``(R, n_bins)`` with the bins that ties merged away left empty at the end.

        Every resample's bins are runs of the sorted rows: the runs between any two consecutive starts of
        any resample in the block ("segments") are summed once for the whole block, and each resample's
        bin is the sum of its segments (one ``reduceat``)."""
        R, n, B = M.shape[0], len(self.z), self.binning.n_bins
        starts = quantile_starts_batched(self.z, B, M)
        segments = np.unique(starts[starts < n])
        seg_sums, seg_dup = self._run_sums(M, pairs, segments)
        S = len(segments)
        nxt = np.append(starts[:, 1:], np.full((R, 1), n), axis=1)
        live = starts < nxt  # bins holding at least one row (the rest stay zero)
        offsets = (np.searchsorted(segments, starts) + S * np.arange(R)[:, None])[live]
        sums = np.zeros((R, B, _N_STATS + 1))
        dup = np.zeros((R, B, 3))
        sums[live] = np.add.reduceat(seg_sums.reshape(R * S, -1), offsets, axis=0)
        dup[live] = np.add.reduceat(seg_dup.reshape(R * S, -1), offsets, axis=0)
        return sums, dup

    def resampled(self, m: np.ndarray) -> tuple[BinStats, BinStats]:
        """Statistics (main bins, equal-width bins) of the resample where sorted row i appears m[i] times;
        ``m`` of shape ``(R, n)`` gives R resamples at once (statistics of shape ``(R, bins)``)."""
        M = np.atleast_2d(m)
        pairs = M - 1.0
        pairs *= M
        if self.binning.strategy == "uniform":
            main = self._stats(*self._run_sums(M, pairs, self.main_starts))
            uniform = main if self.n_uniform == self.binning.n_bins else self._stats(
                *self._run_sums(M, pairs, self.uniform_starts))
        else:
            main = self._stats(*self._quantile_sums(M, pairs))
            uniform = self._stats(*self._run_sums(M, pairs, self.uniform_starts))
        if np.ndim(m) == 1:
            main, uniform = (BinStats(*(a[0] for a in s._arrays())) for s in (main, uniform))
        return main, uniform


from calibcli.resampling import percentile_interval  # noqa: E402  (re-exported: one definition)

# ---------------------------------------------------------------------------------------------
# The whole report of one binary problem


def binned_calibration(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    n_bins: int = 15,
    strategy: str = "uniform",
    n_boot: int = 0,
    alpha: float = 0.05,
    seed: int = 0,
    row_index=None,
    keep_replicates: bool = False,
    progress=None,
) -> CalibrationResult:
    """Every estimator of SPEC section 2 for one binary problem.

    Parameters
    ----------
    y_true, y_prob, sample_weight
        Labels in {0, 1}, predictions in [0, 1] and optional frequency weights.
    n_bins, strategy
        Binning (SPEC 2.1). The dCE always uses ``n_bins`` equal-width bins, as seed 002 defines it.
    n_boot, alpha, seed
        Percentile bootstrap with ``n_boot`` resamples at level ``1 - alpha``; the binning rule is
        re-applied to each resample. ``alpha`` is also the ``delta`` of the distribution-free bounds.
        Resamples are Poisson bootstraps (SPEC 8): row i appears ``m_ir ~ Poisson(1)`` times in
        replicate r, drawn by :class:`calibcli.resampling.Multiplicities` from ``(seed, r, row index)``.
    row_index
        Global index of every row (default ``0..n-1``): the key of its bootstrap multiplicities, so
        that problems built from the same rows (the classes of a marginal report) and streamed runs
        see the same resampled rows.
    keep_replicates
        Keep the bootstrap replicates in the result (for joint intervals of aggregates).
    progress
        Optional callable invoked once per finished resample (progress bars).
    """
    from calibcli.resampling import Multiplicities

    unweighted = sample_weight is None
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    check_options(n_bins=n_bins, n_boot=n_boot, alpha=alpha)  # in range and the memory budget, before allocating
    binning = fit_binning(z, n_bins=n_bins, strategy=strategy)
    w_bins = None if unweighted else w
    stats = bin_statistics(y, z, binning.assign(z), binning.n_bins_effective, w_bins)
    stats_uniform = stats if strategy == "uniform" else bin_statistics(y, z, uniform_bin_index(z, n_bins), n_bins, w_bins)
    point = _point_metrics(stats, stats_uniform)
    sun = ece_l2_sq_sun_interval(stats, alpha=alpha)
    W = float(w.sum())

    ci: dict[str, tuple[float, float]] = {}
    replicates = None
    if n_boot > 0:
        problem = _SortedProblem(y, z, w, binning, n_bins)
        rows = Multiplicities(seed, np.arange(len(z)) if row_index is None else row_index)
        block = problem.block_size()
        parts = []
        for first in range(0, n_boot, block):  # blocks of replicates bound the memory; each is array operations
            reps = np.arange(first, min(first + block, n_boot))
            parts.append(problem.resampled(np.take(rows.block(reps), problem.order, axis=1)))
        resamples = tuple(BinStats.concat([p[j] for p in parts]) for j in (0, 1))
        ci, replicates = summarise_replicates(resamples, list(point), alpha, keep_replicates=keep_replicates,
                                              progress=progress)

    method = f"percentile Poisson bootstrap over rows, {n_boot} resamples" if n_boot > 0 else None
    return CalibrationResult(
        n=len(z),
        weight_total=W,
        n_bins=n_bins,
        strategy=strategy,
        n_bins_nonempty=stats.n_nonempty,
        bin_bounds=binning.bounds(),
        bin_stats=stats,
        metrics=assemble_metrics(point, ci, method, sun, W, alpha, n_bins),
        alpha=alpha,
        n_boot=n_boot,
        replicates=replicates,
        bin_replicates=resamples[0] if n_boot > 0 and keep_replicates else None,
    )


def summarise_replicates(resamples, names: list[str], alpha: float, *, keep_replicates: bool = False, progress=None):
    """Percentile intervals ``{name: (low, high)}`` (and the replicates when kept) of every bootstrappable
    metric, from the ``(main bins, equal-width bins)`` statistics of the resamples.

    ``resamples`` is that pair of :class:`BinStats` with the replicates on a leading axis ``(R, bins)``
    (every estimator then runs once for all of them), or an iterable of per-replicate pairs, which are
    stacked first. ``progress()``, if given, is called once per replicate.
    """
    if isinstance(resamples, tuple) and len(resamples) == 2 and isinstance(resamples[0], BinStats):
        main, uniform = resamples
    else:
        pairs = list(resamples)
        if not pairs:
            main = uniform = None
        else:
            main = BinStats.stack([a for a, _ in pairs])
            uniform = BinStats.stack([b for _, b in pairs])
    n_rep = 0 if main is None else main.weight.shape[0]
    reps = np.full((n_rep, len(names)), math.nan)
    if n_rep:
        with np.errstate(divide="ignore", invalid="ignore"):
            p = _point_metrics(main, uniform)
        for j, k in enumerate(names):
            reps[:, j] = p[k]
        # a Poisson resample can draw no row (probability e^-n): no metric values, and the interval is
        # taken over the other resamples
        reps[~(main.weight.sum(axis=-1) > 0)] = math.nan
    for _ in range(n_rep) if progress is not None else ():
        progress()
    ci = {k: percentile_interval(reps[:, j], alpha) for j, k in enumerate(names)}
    return ci, ({k: reps[:, j] for j, k in enumerate(names)} if keep_replicates else None)


def assemble_metrics(point: dict, ci: dict, ci_method: str | None, sun: SunInterval, W: float, alpha: float,
                     n_bins: int) -> dict[str, Metric]:
    """The :class:`Metric` objects of a binned report: estimates, intervals and the distribution-free bounds."""
    metrics = {}
    margin = hoeffding_margin(W, alpha)
    for name in METRIC_NAMES:
        lo, hi = ci.get(name, (None, None))
        kwargs = {}
        if name == "ece_l1_plugin":
            kwargs = dict(
                upper_bound=point[name] + margin,
                upper_bound_method="distribution-free, seed 002 Thm 12.4: estimate + sqrt(2 log(1/delta)/n), " f"delta={alpha:g}",
            )
        elif name == "dce":
            kwargs = dict(
                upper_bound=point[name] + 1.0 / n_bins + margin,
                upper_bound_method=f"seed 002 Thm 12.10: estimate + 1/B + sqrt(2 log(1/delta)/n), delta={alpha:g}, " f"B={n_bins}",
            )
        elif name == "ece_l2_sq_debiased_sun":
            kwargs = dict(
                note=(
                    f"Sun et al. (2024) interval for the squared l2-ECE: [{sun.low:.6g}, {sun.high:.6g}]"
                    f"{' (includes 0)' if sun.includes_zero else ''}, eq. (8) case {sun.case}"
                ),
            )
        metrics[name] = Metric(name=name, estimate=point[name], ci_low=lo, ci_high=hi,
                               ci_method=ci_method if lo is not None else None, **kwargs)
    metrics["ece_l2_sq_sun_interval"] = Metric(
        name="ece_l2_sq_sun_interval",
        estimate=sun.estimate,
        ci_low=sun.low,
        ci_high=sun.high,
        ci_method=f"Sun et al. 2024 (seed 002 Algorithm 1), eq. (8) case {sun.case}"
        + (", zero included" if sun.includes_zero else ""),
    )
    return metrics


#: The binned family's bootstrappable metrics: every one with a registered estimator, in registry order (the
#: report's). Named here, after every estimator above has registered itself.
METRIC_NAMES = estimated("binned")
