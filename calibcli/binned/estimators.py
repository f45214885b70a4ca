"""Binned calibration errors, proper scores and their uncertainty (SPEC section 2).

Everything here is computed from per-bin sufficient statistics (:class:`BinStats`): sums of
weights, of ``w z``, ``w y``, ``w u^2`` (``u = y - z``) and of the log-loss per bin. The
statistics of two chunks of data binned with the same fixed bins add up, so a large file can
be reduced chunk by chunk; and the bootstrap resamples rows through multiplicities and per-bin
sums, never through an n-by-R array.

Sample weights are *frequency* weights: a weight of 2 is the same as the row appearing twice.
Counts ``n_b`` and ``n`` in the SPEC formulas are therefore sums of weights.

Estimator names (SPEC 2.2) are used verbatim as keys of :attr:`CalibrationResult.metrics`. Each estimator
registers itself under its name (:func:`calibcli.core.registry.estimator`); the point estimates and the bootstrap
replicates are every registered binned metric, in registry order (:func:`_point_metrics`, :func:`metric_names`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibcli.binned.bootstrap import SortedGroups
from calibcli.binned.kernels import METRICS as BINNED_KERNEL_METRICS
from calibcli.binned.kernels import binned_metrics
from calibcli.binned.stats import (
    LOG_LOSS_EPS,
    BinStats,
    bin_statistics,
)
from calibcli.core.binning import fit_binning, uniform_bin_index
from calibcli.core.family import Bootstrap
from calibcli.core.registry import estimated, estimator, evaluate
from calibcli.core.resampling import in_threads, percentile_intervals
from calibcli.core.results import Metric
from calibcli.core.validation import BYTES_PER_REPLICATE_BIN, check_binary, check_options


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
        from calibcli.core.binning import EDGE_CONVENTION

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


#: Batched statistics of at least this many (row, bin) values in one run go through the compiled estimators
#: (:mod:`calibcli.binned.kernels`): loading the compiler costs about 0.3 s once per process, what NumPy's forms
#: take on about 4 x 10^6 values; a run's few thousand replicates stay on NumPy and never load it.
COMPILED_MIN_VALUES = 1 << 22


def metric_names() -> tuple[str, ...]:
    """The binned family's bootstrappable metrics: every one with a registered estimator, in registry order (the
    report's). Read at each call, so a metric registered after import (one function and one entry) is among them."""
    return estimated("binned")


def _point_metrics(s: BinStats, s_uniform: BinStats, *, compiled: bool = False) -> dict:
    """Every bootstrappable metric of SPEC 2 (:func:`metric_names`, each registered estimator of the binned family)
    from the bins' statistics (floats, or arrays over the leading axes of batched statistics), in report order.

    ``compiled`` (batched statistics: replicates, groups, ``(..., bins)``) is the same function's second backend:
    one compiled loop computes the metrics it knows (:data:`calibcli.binned.kernels.METRICS`) on each row in one
    pass over the sums instead of a hundred, and the registry evaluates the others on the same sums. The two
    backends agree within 1e-12 relative (SPEC 8.1; ``tests/binned/test_kernels_binned.py``), the compiled loop
    summing over the bins in its own plain order. It is chosen for the runs whose statistics pass
    :data:`COMPILED_MIN_VALUES`."""
    names = metric_names()
    if not compiled or s.weight.ndim == 1:
        return evaluate(names, {"s": s, "s_uniform": s_uniform})
    lead = s.weight.shape[:-1]
    rows = int(np.prod(lead))
    out = np.empty((rows, len(BINNED_KERNEL_METRICS)))
    if rows:

        def flat(a: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(a).reshape(rows, a.shape[-1])

        count, weight, sum_z, sum_y, sum_u2, sum_log_loss, diag_weight, diag_y, diag_u2 = map(flat, s._arrays())
        binned_metrics(
            count,
            weight,
            sum_z,
            sum_y,
            sum_u2,
            sum_log_loss,
            diag_weight,
            diag_y,
            diag_u2,
            flat(s_uniform.weight),
            flat(s_uniform.sum_y),
            out,
        )
    given: dict = {"s": s, "s_uniform": s_uniform}
    given.update({name: out[:, j].reshape(lead) for j, name in enumerate(BINNED_KERNEL_METRICS)})
    return evaluate(names, given)


# ---------------------------------------------------------------------------------------------
# The l2-ECE confidence interval of Sun et al. (2024)


@dataclass(frozen=True)
class SunInterval:
    """Confidence interval for the squared l2-ECE (Sun, Song, Sun, Zhao 2024; seed 002 Algorithm 1)."""

    # each a number, or an array of one per group for ``(G, bins)`` sums
    estimate: float | np.ndarray  # T_m, debiased with 1/(n_b - 1)
    low: float | np.ndarray
    high: float | np.ndarray
    includes_zero: bool | np.ndarray
    sigma1: float | np.ndarray
    case: int | np.ndarray  # which branch of eq. (8)

    def at(self, g: int) -> SunInterval:
        """Group ``g``'s interval, of an interval computed on ``(G, bins)`` sums."""
        return SunInterval(
            float(np.asarray(self.estimate)[g]),
            float(np.asarray(self.low)[g]),
            float(np.asarray(self.high)[g]),
            bool(np.asarray(self.includes_zero)[g]),
            float(np.asarray(self.sigma1)[g]),
            int(np.asarray(self.case)[g]),
        )


@estimator("ece_l2_sq_debiased_sun")
def ece_l2_sq_sun_estimate(s: BinStats):
    """Sun et al.'s debiased squared l2-ECE: ``(1/n) sum_{b: n_b >= 2} [(sum U)^2 - sum U^2] / (n_b - 1)``.

    ``n_b - 1`` is written ``(n_b^2 - diag_weight) / n_b``, the number of distinct pairs per element.
    Reduces over the last axis (the bins), like every estimator here.
    """
    term = _masked_sum(
        lambda: s.weight * ((s.sum_y - s.sum_z) ** 2 - s.diag_u2) / (s.weight**2 - s.diag_weight), _has_pairs(s)
    )
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

    On ``(G, bins)`` sums (groups) every field is an array over the groups (:meth:`SunInterval.at` takes one).
    """
    from statistics import NormalDist  # the stdlib quantile keeps scipy off the ece start-up path

    W = s.weight.sum(axis=-1)
    T = ece_l2_sq_sun_estimate(s)
    ne = s.nonempty & (s.weight > 0)
    Wb = np.expand_dims(W, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_u = (s.sum_y - s.sum_z) / s.weight
        var_u = np.maximum(s.sum_u2 / s.weight - mean_u**2, 0.0)
        p = s.weight / Wb
    sigma1_sq = (
        _masked_sum(lambda: p * mean_u**4, ne)
        - _masked_sum(lambda: p * mean_u**2, ne) ** 2
        + 4.0 * _masked_sum(lambda: p * mean_u**2 * var_u, ne)
    )
    sigma1 = np.sqrt(np.maximum(sigma1_sq, 0.0))

    z_half = -NormalDist().inv_cdf(alpha / 2.0)  # upper quantiles by symmetry: 1 - 1e-17 rounds to 1
    z_one = -NormalDist().inv_cdf(alpha)
    t_plus = np.maximum(T, 0.0)
    se = sigma1 / np.sqrt(W)
    high = t_plus + z_half * se
    first = t_plus / 2.0 <= t_plus - z_half * se
    second = ~first & (t_plus - z_one * se < t_plus / 2.0)
    low = np.where(first, t_plus - z_half * se, np.where(second, np.maximum(0.0, t_plus - z_one * se), t_plus / 2.0))
    case = np.where(first, 1, np.where(second, 2, 3))

    # Zero-inclusion threshold z_alpha * sigma_0 / (n sqrt(Vol)): under calibration the variance of
    # n T_m is about 2 sum_b v_b^2 with v_b the within-bin variance of U; estimate v_b by mean_b U^2.
    sigma0_over_sqrt_vol = np.sqrt(2.0 * _masked_sum(lambda: (s.sum_u2 / s.weight) ** 2, ne))
    includes_zero = t_plus < z_one * sigma0_over_sqrt_vol / W
    low = np.where(includes_zero, 0.0, low)
    if np.ndim(W) == 0:
        return SunInterval(T, float(low), float(high), bool(includes_zero), float(sigma1), int(case))
    return SunInterval(T, low, high, includes_zero, sigma1, case)


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
        replicate r, drawn by :class:`calibcli.core.resampling.Multiplicities` from ``(seed, r, row index)``.
    row_index
        Global index of every row (default ``0..n-1``): the key of its bootstrap multiplicities, so
        that problems built from the same rows (the classes of a marginal report) and streamed runs
        see the same resampled rows.
    keep_replicates
        Keep the bootstrap replicates in the result (for joint intervals of aggregates).
    progress
        Optional callable invoked once per finished resample (progress bars).
    """
    steps = None if progress is None else lambda n: [progress() for _ in range(n)]
    boot = Bootstrap(n_boot=n_boot, alpha=alpha, seed=seed)  # (checked when made, as every options object)
    check_options(n_bins=n_bins)  # in range and the memory budget, before allocating
    one = binned_calibration_groups(
        [(y_true, y_prob, sample_weight, row_index)],
        boot,
        n_bins=n_bins,
        strategy=strategy,
        keep_replicates=keep_replicates,
        progress=steps,
    )
    return one[0]


#: Bytes per (group, replicate, bin) of the grouped bootstrap: the statistics of every resample of a chunk of
#: groups (9 arrays) and the estimators' temporaries over them.
BYTES_PER_GROUP_REPLICATE_BIN = BYTES_PER_REPLICATE_BIN  # (checked up front in calibcli.core.validation)
#: The grouped bootstrap holds at most this many bytes of ``(G, R, bins)`` statistics at once (and at most half
#: the memory budget): more groups are taken in chunks of groups, each one call of every estimator. 256 MB: the
#: clinical and ECCE numbers run beside the bootstrap (:func:`calibcli.core.resampling.alongside`), and 512 MB
#: chunks took a 1,000-group run of 1e6 rows to 0.85 GB at its peak (0.74 GB now), no faster (fixes memory and
#: speed, never the numbers).
GROUP_CHUNK_BYTES = 1 << 28


def group_chunk(n_boot: int, n_bins: int) -> int:
    """Groups of one chunk of the grouped bootstrap: ``(G, n_boot, n_bins)`` statistics within
    :data:`GROUP_CHUNK_BYTES` and half the memory budget (at least one group)."""
    from calibcli.core.validation import memory_budget

    per_group = max(n_boot, 1) * n_bins * BYTES_PER_GROUP_REPLICATE_BIN
    return max(1, min(GROUP_CHUNK_BYTES, memory_budget() // 2) // per_group)


def _take(s: BinStats, index) -> BinStats:
    """The statistics at ``index`` of their leading axes (a group, or a group's bins)."""
    return BinStats(*(a[index] for a in s._arrays()))


def binned_calibration_groups(
    groups: list,
    boot: Bootstrap,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    keep_replicates: bool = False,
    progress=None,
    on_chunks=None,
) -> list[CalibrationResult]:
    """:func:`binned_calibration` of many groups of rows at once, one result per group: ``groups`` holds each
    group's ``(y_true, y_prob, sample_weight, row_index)`` (``row_index`` None: ``0..n-1``), ``boot`` the
    bootstrap's resamples, level and seed; ``n_bins`` and ``boot`` as checked where they were made (a family's
    options object, or :func:`binned_calibration`), not again here.

    The groups' per-bin statistics are ``(G, bins)`` arrays taken in one pass over their rows (``bincount`` on
    combined group-bin indices) and their bootstrap statistics ``(G, R, bins)`` (:class:`SortedGroups`), so
    every estimator runs once for all groups and replicates, or once per chunk of groups when
    ``(G, R, bins)`` passes :func:`group_chunk` (``on_chunks(n_chunks, groups_per_chunk)`` is told).
    Every group's numbers are those of :func:`binned_calibration` on its rows alone: a row's multiplicities
    are keyed by ``(seed, replicate, row index)``, whichever group it is in. ``progress(steps)``, if given, is
    called with the number of (group, resample) pairs finished.
    """
    checked = [check_binary(y, z, w) for y, z, w, _ in groups]
    unweighted = all(g[2] is None for g in groups)
    n_boot, alpha, seed = boot.n_boot, boot.alpha, boot.seed
    G = len(groups)
    if strategy == "uniform":
        binnings = [fit_binning(np.empty(0), n_bins=n_bins, strategy=strategy)] * G
    else:
        binnings = [fit_binning(z, n_bins=n_bins, strategy=strategy) for _, z, _ in checked]
    nb = max(b.n_bins_effective for b in binnings)
    sizes = np.array([len(z) for _, z, _ in checked], dtype=np.int64)
    code = np.repeat(np.arange(G), sizes)
    y_all, z_all, w_all = (np.concatenate([c[j] for c in checked]) for j in range(3))
    main_bin = (
        uniform_bin_index(z_all, n_bins)
        if strategy == "uniform"
        else np.concatenate([b.assign(z) for b, (_, z, _) in zip(binnings, checked, strict=True)])
    )
    w_bins = None if unweighted else w_all
    stats = _reshaped(bin_statistics(y_all, z_all, code * nb + main_bin, G * nb, w_bins), G)
    stats_uniform = (
        stats
        if strategy == "uniform"
        else _reshaped(
            bin_statistics(y_all, z_all, code * n_bins + uniform_bin_index(z_all, n_bins), G * n_bins, w_bins), G
        )
    )
    if G == 1:  # one problem: (bins,) sums, whose estimates are the compressed sums they always were
        stats, stats_uniform = _take(stats, 0), _take(stats_uniform, 0)
    point = _point_metrics(stats, stats_uniform)
    sun = ece_l2_sq_sun_interval(stats, alpha=alpha)
    names = list(point)

    ci: list[dict] = [{} for _ in range(G)]
    replicates: list[dict | None] = [None] * G
    bin_replicates: list = [None] * G  # each group's per-bin resamples (main bins), kept with keep_replicates
    if n_boot > 0:
        problems = SortedGroups(
            [
                (y, z, w, np.arange(len(z)) if row is None else row)
                for (y, z, w), (_, _, _, row) in zip(checked, groups, strict=True)
            ],
            binnings,
            n_bins,
        )
        compiled = G * n_boot * (nb + (0 if strategy == "uniform" else n_bins)) >= COMPILED_MIN_VALUES
        chunks = problems.chunks(group_chunk(n_boot, nb + (0 if strategy == "uniform" else n_bins)))
        if on_chunks is not None and len(chunks) > 1:
            on_chunks(len(chunks), chunks[0][1] - chunks[0][0])
        for g0, g1 in chunks:  # chunks of groups bound the memory; each is array operations
            main, uniform = problems.resampled(g0, g1, seed, n_boot)
            uniform = main if uniform is None else uniform
            if G == 1:
                main, uniform = _take(main, 0), _take(uniform, 0)
            if G == 1:
                low_high, reps = summarise_replicates(
                    (main, uniform),
                    names,
                    alpha,
                    keep_replicates=keep_replicates,
                    progress=None if progress is None else lambda: progress(1),
                )
            else:
                low_high, reps = _summarise_halves(main, uniform, names, alpha, keep_replicates, progress, compiled)
            if G == 1:
                ci[0], replicates[0] = low_high, reps
                bin_replicates[0] = main if keep_replicates else None
                continue
            for g in range(g0, g1):
                ci[g] = {k: (float(lo[g - g0]), float(hi[g - g0])) for k, (lo, hi) in low_high.items()}
                replicates[g] = None if reps is None else {k: v[g - g0] for k, v in reps.items()}
                bin_replicates[g] = _take(main, g - g0) if keep_replicates else None

    method = f"percentile Poisson bootstrap over rows, {n_boot} resamples" if n_boot > 0 else None
    out = []
    for g, ((_, z, w), binning) in enumerate(zip(checked, binnings, strict=True)):
        s = stats if G == 1 else _take(stats, (g, slice(0, binning.n_bins_effective)))
        W = float(w.sum())
        point_g = point if G == 1 else {k: float(v[g]) for k, v in point.items()}
        out.append(
            CalibrationResult(
                n=len(z),
                weight_total=W,
                n_bins=n_bins,
                strategy=strategy,
                n_bins_nonempty=s.n_nonempty,
                bin_bounds=binning.bounds(),
                bin_stats=s,
                metrics=assemble_metrics(point_g, ci[g], method, sun if G == 1 else sun.at(g), W, alpha, n_bins),
                alpha=alpha,
                n_boot=n_boot,
                replicates=replicates[g],
                bin_replicates=bin_replicates[g],
            )
        )
    return out


def _summarise_halves(
    main: BinStats, uniform: BinStats, names: list[str], alpha: float, keep: bool, progress, compiled: bool = False
):
    """:func:`summarise_replicates` of ``(G, R, bins)`` statistics, the first and the second half of the groups on
    two threads (:func:`calibcli.core.resampling.in_threads`; each group's numbers are its own whichever half it is in,
    and every estimator runs twice, however many groups)."""
    G = main.weight.shape[0]
    halves = [(0, (G + 1) // 2), ((G + 1) // 2, G)] if G > 1 else [(0, G)]

    def half(g0: int, g1: int):
        part = slice(g0, g1)
        return summarise_replicates(
            (_take(main, part), _take(uniform, part)), names, alpha, keep_replicates=keep, compiled=compiled
        )

    parts = in_threads(half, halves)
    if progress is not None:
        progress(int(np.prod(main.weight.shape[:-1])))
    ci = {k: tuple(np.concatenate(sides) for sides in zip(*(c[k] for c, _ in parts), strict=True)) for k in names}
    reps = None if not keep else {k: np.concatenate([r[k] for _, r in parts]) for k in names}
    return ci, reps


def _reshaped(s: BinStats, G: int) -> BinStats:
    """Statistics of ``G * bins`` combined (group, bin) cells as ``(G, bins)``."""
    main = (a.reshape(G, -1) for a in (s.count, s.weight, s.sum_z, s.sum_y, s.sum_u2, s.sum_log_loss))
    self_pairs = (None if a is None else a.reshape(G, -1) for a in (s.self_weight, s.self_y, s.self_u2))
    return BinStats(*main, *self_pairs)


def summarise_replicates(
    resamples, names: list[str], alpha: float, *, keep_replicates: bool = False, progress=None, compiled: bool = False
):
    """Percentile intervals ``{name: (low, high)}`` (and the replicates when kept) of every bootstrappable
    metric, from the ``(main bins, equal-width bins)`` statistics of the resamples.

    ``resamples`` is that pair of :class:`BinStats` with the replicates on the axis before the bins
    (``(R, bins)``, or ``(G, R, bins)`` for groups: every estimator then runs once for all of them), or an
    iterable of per-replicate pairs, which are stacked first. With leading axes the intervals and the
    replicates are arrays over them. ``progress()``, if given, is called once per replicate of ``(R, bins)``
    statistics; ``progress(steps)`` once with the number of (group, replicate) pairs of ``(G, R, bins)`` ones.
    ``compiled``: the estimators' compiled backend (:func:`_point_metrics`), within 1e-12 relative of NumPy's.
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
    lead = () if main is None else main.weight.shape[:-1]
    reps = np.full((*lead, len(names)), math.nan)
    if main is not None and main.weight.size:
        with np.errstate(divide="ignore", invalid="ignore"):
            p = _point_metrics(main, uniform, compiled=compiled)
        for j, k in enumerate(names):
            reps[..., j] = p[k]
        # a Poisson resample can draw no row (probability e^-n): no metric values, and the interval is
        # taken over the other resamples
        reps[~(main.weight.sum(axis=-1) > 0)] = math.nan
    if progress is not None and len(lead) > 1:
        progress(int(np.prod(lead)))
    elif progress is not None:
        for _ in range(lead[0] if lead else 0):
            progress()
    low, high = percentile_intervals(np.moveaxis(reps, -1, -2), alpha)
    ci: dict[str, tuple]  # (low, high): numbers, or arrays over the leading axes
    if len(lead) <= 1:
        ci = {k: (float(low[j]), float(high[j])) for j, k in enumerate(names)}
    else:
        ci = {k: (low[..., j], high[..., j]) for j, k in enumerate(names)}
    return ci, ({k: reps[..., j] for j, k in enumerate(names)} if keep_replicates else None)


def assemble_metrics(
    point: dict, ci: dict, ci_method: str | None, sun: SunInterval, W: float, alpha: float, n_bins: int
) -> dict[str, Metric]:
    """The :class:`Metric` objects of a binned report: estimates, intervals and the distribution-free bounds."""
    metrics = {}
    margin = hoeffding_margin(W, alpha)
    for name in metric_names():
        lo, hi = ci.get(name, (None, None))
        kwargs = {}
        if name == "ece_l1_plugin":
            kwargs = dict(
                upper_bound=point[name] + margin,
                upper_bound_method="distribution-free, seed 002 Thm 12.4: estimate + sqrt(2 log(1/delta)/n), "
                f"delta={alpha:g}",
            )
        elif name == "dce":
            kwargs = dict(
                upper_bound=point[name] + 1.0 / n_bins + margin,
                upper_bound_method=f"seed 002 Thm 12.10: estimate + 1/B + sqrt(2 log(1/delta)/n), delta={alpha:g}, "
                f"B={n_bins}",
            )
        elif name == "ece_l2_sq_debiased_sun":
            kwargs = dict(
                note=(
                    f"Sun et al. (2024) interval for the squared l2-ECE: [{sun.low:.6g}, {sun.high:.6g}]"
                    f"{' (includes 0)' if sun.includes_zero else ''}, eq. (8) case {sun.case}"
                ),
            )
        metrics[name] = Metric(
            name=name,
            estimate=point[name],
            ci_low=lo,
            ci_high=hi,
            ci_method=ci_method if lo is not None else None,
            **kwargs,
        )
    metrics["ece_l2_sq_sun_interval"] = Metric(
        name="ece_l2_sq_sun_interval",
        estimate=float(sun.estimate),  # (one problem's interval: numbers)
        ci_low=float(sun.low),
        ci_high=float(sun.high),
        ci_method=f"Sun et al. 2024 (seed 002 Algorithm 1), eq. (8) case {sun.case}"
        + (", zero included" if sun.includes_zero else ""),
    )
    return metrics
