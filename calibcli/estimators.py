"""Binned calibration errors, proper scores and their uncertainty (SPEC section 2).

Everything here is computed from per-bin sufficient statistics (:class:`BinStats`): sums of
weights, of ``w z``, ``w y``, ``w u^2`` (``u = y - z``) and of the log-loss per bin. The
statistics of two chunks of data binned with the same fixed bins add up, so a large file can
be reduced chunk by chunk; and the bootstrap resamples rows through multiplicities and per-bin
sums, never through an n-by-R array.

Sample weights are *frequency* weights: a weight of 2 is the same as the row appearing twice.
Counts ``n_b`` and ``n`` in the SPEC formulas are therefore sums of weights.

Estimator names (SPEC 2.2) are used verbatim as keys of :attr:`CalibrationResult.metrics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibcli.binning import Binning, fit_binning, quantile_edges_sorted, uniform_bin_index
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
    with :meth:`merge`.
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

    def merge(self, other: "BinStats") -> "BinStats":
        """Statistics of the union of two disjoint samples binned with the same bins."""
        return BinStats(*(a + b for a, b in zip(self._arrays(), other._arrays())))

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


def ece_l1_plugin(s: BinStats) -> float:
    """l1-ECE, plugin (Guo et al. 2017; seed 002 binECE): ``sum_b (n_b/n) |acc_b - conf_b|``."""
    return float(np.abs(s.sum_y - s.sum_z).sum() / s.weight.sum())


def ece_l2_plugin(s: BinStats) -> float:
    """l2-ECE, plugin (Kumar et al. 2019 def. 1; T-Cal eq. 5): ``sqrt(sum_b (n_b/n) gap_b^2)``."""
    ne = s.nonempty & (s.weight > 0)
    gap_sq = (s.sum_y[ne] - s.sum_z[ne]) ** 2 / s.weight[ne]
    return float(math.sqrt(gap_sq.sum() / s.weight.sum()))


def ece_max_plugin(s: BinStats) -> float:
    """Maximum calibration error (MCE) over non-empty bins: ``max_b |gap_b|``."""
    ne = s.nonempty & (s.weight > 0)
    return float(np.max(np.abs(s.sum_y[ne] - s.sum_z[ne]) / s.weight[ne]))


def _has_pairs(s: BinStats) -> np.ndarray:
    """Bins holding at least two distinct observations (``n_b >= 2``; with weights, ``n_b^2 > sum w``).

    On a bootstrap resample, a bin holding copies of a single original row has no distinct pair.
    """
    return (s.count >= 2) & (s.weight**2 - s.diag_weight > 1e-9 * np.maximum(s.weight, 1.0) ** 2)


def ece_l2_sq_debiased_kumar(s: BinStats) -> float:
    """Squared l2-ECE, debiased ("cancelling") estimator of Kumar, Liang & Ma (2019, seed 000).

    ``sum_{b: n_b >= 2} (n_b/n) [gap_b^2 - acc_b (1 - acc_b) / (n_b - 1)]``. With weights, ``n_b``
    is the bin's weight and bins whose weight is at most 1 are skipped (they hold fewer than two
    observations' worth of data). Can be negative.

    Computed in its equivalent U-statistic form
    ``gap_b^2 - acc_b(1-acc_b)/(n_b-1) = [(sum y)^2 - sum y^2] / (n_b (n_b - 1)) - 2 acc_b conf_b + conf_b^2``,
    whose self-pair terms generalise to bootstrap resamples (see :class:`BinStats`).
    """
    ok = _has_pairs(s)
    nb = s.weight[ok]
    pairs = nb**2 - s.diag_weight[ok]
    acc_sq = (s.sum_y[ok] ** 2 - s.diag_y[ok]) / pairs
    acc = s.sum_y[ok] / nb
    conf = s.sum_z[ok] / nb
    return float(np.sum(nb * (acc_sq - 2.0 * acc * conf + conf**2)) / s.weight.sum())


def ece_l2_sq_debiased_dpe(s: BinStats) -> float:
    """Squared l2-ECE, debiased plug-in estimator (DPE) of T-Cal (Lee et al. 2023, seed 004 eq. 6).

    ``(1/n) sum_b (1/n_b) [(sum_{i in b} U_i)^2 - sum_{i in b} U_i^2]`` with ``U = y - z``. Can be
    negative.
    """
    ne = s.nonempty & (s.weight > 0)
    su = s.sum_y[ne] - s.sum_z[ne]
    return float(np.sum((su**2 - s.diag_u2[ne]) / s.weight[ne]) / s.weight.sum())


def brier_decomposition(s: BinStats) -> dict[str, float]:
    """Brier score and its Murphy decomposition on the chosen bins (SPEC 2.3).

    ``brier = reliability - resolution + uncertainty + within_bin`` exactly, where ``within_bin``
    is the part the binned decomposition does not explain (within-bin variation of z).
    """
    W = s.weight.sum()
    ne = s.nonempty & (s.weight > 0)
    nb = s.weight[ne]
    conf = s.sum_z[ne] / nb
    acc = s.sum_y[ne] / nb
    ybar = s.sum_y.sum() / W
    brier = s.sum_u2.sum() / W
    reliability = float(np.sum(nb * (conf - acc) ** 2) / W)
    resolution = float(np.sum(nb * (acc - ybar) ** 2) / W)
    uncertainty = float(ybar * (1.0 - ybar))
    return {
        "brier_score": float(brier),
        "brier_reliability": reliability,
        "brier_resolution": resolution,
        "brier_uncertainty": uncertainty,
        "brier_within_bin": float(brier - (reliability - resolution + uncertainty)),
    }


def brier_skill_score(brier: float, uncertainty: float) -> float:
    """Brier skill score against climatology: ``1 - Brier / (ybar (1 - ybar))`` (Murphy 1973; Wilks,
    *Statistical Methods in the Atmospheric Sciences*, 9.4). 1 is perfect, 0 no better than predicting the
    event rate ``ybar`` for everyone; NaN (null in the report) when every label is the same."""
    return 1.0 - brier / uncertainty if uncertainty > 0 else math.nan


def log_loss(s: BinStats) -> float:
    """Mean negative log-likelihood, probabilities clipped to ``[eps, 1 - eps]`` (eps = LOG_LOSS_EPS)."""
    return float(s.sum_log_loss.sum() / s.weight.sum())


def dce_estimate(s_uniform: BinStats) -> float:
    """Distance-to-calibration estimate (seed 002 dCE) on B equal-width bins.

    ``(1/n) sum_k |sum_{i in B_k} (y_i - c_k)|`` with ``c_k`` the upper end ``(k+1)/B`` of the
    (0-indexed) bin ``[k/B, (k+1)/B)``, so that ``|z - c_k| <= 1/B`` inside the bin, as Thm 12.10 uses.
    """
    B = len(s_uniform.weight)
    c = np.arange(1, B + 1) / B
    return float(np.abs(s_uniform.sum_y - s_uniform.weight * c).sum() / s_uniform.weight.sum())


def hoeffding_margin(n: float, delta: float) -> float:
    """``sqrt(2 log(1/delta) / n)``, the McDiarmid margin of seed 002 Thms 12.4 and 12.10."""
    return math.sqrt(2.0 * math.log(1.0 / delta) / n)


def _point_metrics(s: BinStats, s_uniform: BinStats) -> dict[str, float]:
    """Every bootstrappable metric of SPEC 2 from the bins' statistics."""
    kumar = ece_l2_sq_debiased_kumar(s)
    dpe = ece_l2_sq_debiased_dpe(s)
    out = {
        "ece_l1_plugin": ece_l1_plugin(s),
        "ece_l2_plugin": ece_l2_plugin(s),
        "ece_max_plugin": ece_max_plugin(s),
        "ece_l2_sq_debiased_kumar": kumar,
        "ece_l2_debiased_kumar": math.sqrt(max(0.0, kumar)),
        "ece_l2_sq_debiased_dpe": dpe,
        "ece_l2_debiased_dpe": math.sqrt(max(0.0, dpe)),
    }
    out.update(brier_decomposition(s))
    out["brier_skill_score"] = brier_skill_score(out["brier_score"], out["brier_uncertainty"])
    out["log_loss"] = log_loss(s)
    out["dce"] = dce_estimate(s_uniform)
    return out


METRIC_NAMES = (
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


def ece_l2_sq_sun_estimate(s: BinStats) -> float:
    """Sun et al.'s debiased squared l2-ECE: ``(1/n) sum_{b: n_b >= 2} [(sum U)^2 - sum U^2] / (n_b - 1)``.

    ``n_b - 1`` is written ``(n_b^2 - diag_weight) / n_b``, the number of distinct pairs per element.
    """
    ok = _has_pairs(s)
    nb = s.weight[ok]
    su = s.sum_y[ok] - s.sum_z[ok]
    return float(np.sum(nb * (su**2 - s.diag_u2[ok]) / (nb**2 - s.diag_weight[ok])) / s.weight.sum())


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


#: Above this many bins the per-row bootstrap sums runs with one ``reduceat`` rather than a product per bin.
_LOOP_RUNS = 256

class _SortedProblem:
    """A binary problem sorted by z once, so that every bin is a contiguous run of rows.

    A resample is given by row multiplicities ``m`` (in sorted order); the sums of any statistic
    over a bin are then one dot product ``m[run] @ X[run]``, which costs O(n) per resample in
    total and never materialises the resampled data.
    """

    def __init__(self, y, z, w, binning: Binning, n_uniform: int):
        self.order = np.argsort(z, kind="stable")
        self.z = z[self.order]
        stats = _row_stats(y[self.order].astype(np.float64), self.z, w[self.order])
        ws = w[self.order]
        # (n, 6) in row-major order so that a bin's sums are one BLAS dot product; column 0 counts rows
        self.X = np.ascontiguousarray(np.vstack([np.ones(len(self.z)), stats]).T)
        # Pairs between copies of one original row: m (m - 1) times w^2, w^2 y, w^2 u^2. With unit
        # weights these are columns of X itself (count, y, u^2), read in the same pass as the sums.
        self.unit_weights = bool(np.all(ws == 1.0))
        self.X_self = None if self.unit_weights else np.ascontiguousarray(
            np.vstack([ws * ws, ws * stats[_WY], ws * stats[_WU2]]).T
        )
        self.binning = binning
        self._pairs = np.empty(len(self.z))  # m (m - 1) of a resample; one buffer for all of them
        # Equal-width bins never move under resampling: their runs are fixed once.
        self.uniform_starts = np.searchsorted(uniform_bin_index(self.z, n_uniform), np.arange(n_uniform))
        if binning.strategy == "uniform":
            self.main_starts = np.searchsorted(uniform_bin_index(self.z, binning.n_bins), np.arange(binning.n_bins))

    def _sums(self, m: np.ndarray, pairs: np.ndarray, starts: np.ndarray) -> BinStats:
        bounds = np.append(starts, len(self.z))
        if len(starts) > _LOOP_RUNS:
            return self._sums_many(m, pairs, bounds)
        runs = list(zip(bounds[:-1], bounds[1:]))
        if self.unit_weights:
            both = np.array([np.stack([m[a:b], pairs[a:b]]) @ self.X[a:b] for a, b in runs]).reshape(-1, 2, _N_STATS + 1)
            sums = both[:, 0].T
            dup = both[:, 1][:, [0, 1 + _WY, 1 + _WU2]].T
        else:
            sums = np.array([m[a:b] @ self.X[a:b] for a, b in runs]).reshape(-1, _N_STATS + 1).T
            dup = np.array([pairs[a:b] @ self.X_self[a:b] for a, b in runs]).reshape(-1, 3).T
        s = _stats_from_sums(np.rint(sums[0]).astype(np.int64), sums[1:])
        return BinStats(
            s.count, s.weight, s.sum_z, s.sum_y, s.sum_u2, s.sum_log_loss,
            self_weight=s.weight + dup[0], self_y=s.sum_y + dup[1], self_u2=s.sum_u2 + dup[2],
        )

    def _sums_many(self, m: np.ndarray, pairs: np.ndarray, bounds: np.ndarray) -> BinStats:
        """:meth:`_sums` for many bins (most of them empty when there are more bins than rows): one
        ``reduceat`` over the non-empty runs instead of a product per run."""
        n_bins = len(bounds) - 1
        nonempty = np.flatnonzero(bounds[:-1] < bounds[1:])
        first = bounds[nonempty]  # increasing; each run ends where the next non-empty one starts
        sums = np.zeros((_N_STATS + 1, n_bins))
        dup = np.zeros((3, n_bins))
        if len(first):
            sums[:, nonempty] = np.add.reduceat(m[:, None] * self.X, first, axis=0).T
            X_self = self.X[:, [0, 1 + _WY, 1 + _WU2]] if self.unit_weights else self.X_self
            dup[:, nonempty] = np.add.reduceat(pairs[:, None] * X_self, first, axis=0).T
        s = _stats_from_sums(np.rint(sums[0]).astype(np.int64), sums[1:])
        return BinStats(
            s.count, s.weight, s.sum_z, s.sum_y, s.sum_u2, s.sum_log_loss,
            self_weight=s.weight + dup[0], self_y=s.sum_y + dup[1], self_u2=s.sum_u2 + dup[2],
        )

    def resampled(self, m: np.ndarray) -> tuple[BinStats, BinStats]:
        """Statistics (main bins, equal-width bins) of the resample where sorted row i appears m[i] times."""
        if self.binning.strategy == "uniform":
            starts = self.main_starts
        else:
            # The resample's sorted values are z[i] repeated m[i] times; SPEC 2.1's edges of those.
            edges = quantile_edges_sorted(self.z, self.binning.n_bins, counts=m)
            starts = np.concatenate([[0], np.searchsorted(self.z, edges, side="left")])
        pairs = np.subtract(m, 1.0, out=self._pairs)
        pairs *= m
        main = self._sums(m, pairs, starts)
        if self.binning.strategy == "uniform":
            return main, main
        return main, self._sums(m, pairs, self.uniform_starts)


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
    point["ece_l2_sq_debiased_sun"] = sun.estimate
    W = float(w.sum())

    ci: dict[str, tuple[float, float]] = {}
    replicates = None
    if n_boot > 0:
        problem = _SortedProblem(y, z, w, binning, n_bins)
        rows = Multiplicities(seed, np.arange(len(z)) if row_index is None else row_index)
        drawn, m_sorted = np.empty(len(z)), np.empty(len(z))  # buffers reused by every resample
        resamples = (problem.resampled(np.take(rows.replicate(r, out=drawn), problem.order, out=m_sorted, mode="clip"))
                     for r in range(n_boot))  # "clip": no buffered copy
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
    )


def summarise_replicates(resamples, names: list[str], alpha: float, *, keep_replicates: bool = False, progress=None):
    """Percentile intervals ``{name: (low, high)}`` (and the replicates when kept) of every bootstrappable
    metric, from the ``(main bins, equal-width bins)`` statistics of each resample in turn."""
    reps = []
    for s_b, s_u in resamples:
        if not s_b.weight.sum() > 0:  # a Poisson resample can draw no row (probability e^-n): no metric values,
            reps.append([math.nan] * len(names))  # and the interval is taken over the other resamples
        else:
            p = _point_metrics(s_b, s_u)
            p["ece_l2_sq_debiased_sun"] = ece_l2_sq_sun_estimate(s_b)
            reps.append([p[k] for k in names])
        if progress is not None:
            progress()
    reps = np.array(reps, dtype=np.float64).reshape(-1, len(names))
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
                upper_bound_method=f"distribution-free, seed 002 Thm 12.4: estimate + sqrt(2 log(1/delta)/n), delta={alpha:g}",
            )
        elif name == "dce":
            kwargs = dict(
                upper_bound=point[name] + 1.0 / n_bins + margin,
                upper_bound_method=f"seed 002 Thm 12.10: estimate + 1/B + sqrt(2 log(1/delta)/n), delta={alpha:g}, B={n_bins}",
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
