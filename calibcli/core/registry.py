"""The metric registry: every number calibcli reports, named once (SPEC 2, 3; STYLE "names from the field").

Each entry says what the metric is, which SPEC section defines it, which direction is better, and how
per-class values combine into the marginal aggregate (SPEC 1: ``(sum_k v_k CE_k^p)^(1/p)``). Commands,
the report renderer, gates and group summaries look metrics up here instead of describing them again.

A new metric is its estimator function plus one :class:`MetricInfo` entry in ``_ENTRIES``: the function
registers itself as the metric's estimator with :func:`estimator` (``@estimator("dce", of=("s_uniform",))``),
and the binned family computes every registered metric, in registry order, from its per-bin statistics
(:func:`evaluate`, which ``calibcli.binned.estimators`` calls for the point estimates and every bootstrap replicate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClassRule:
    """How per-class values of a metric combine: the p of the lp aggregate, or a weighted sum of squares.

    ``of`` names the per-class metric combined when it is not the metric itself (the aggregate of a
    debiased l2 error is the root of the aggregate of its square).
    """

    p: float  # 1, 2, inf; 0 means "weighted sum" (of squared errors)
    of: str | None = None
    root: bool = False

    def describe(self) -> str:
        if self.p == 0:
            return "sqrt(sum_k v_k CE_k^2)" if self.root else "sum_k v_k CE_k^2"
        if math.isinf(self.p):
            return "max_k CE_k"
        return f"(sum_k v_k CE_k^{self.p:g})^(1/{self.p:g})"


@dataclass(frozen=True)
class MetricInfo:
    name: str
    description: str
    spec: str
    family: str  # "binned", "smooth", "scores", "tcal", "clinical" (Cox, ICI in ece), "cumulative" (ECCE in ece),
    # "clinical_test" (tcal --test)
    better: str = "lower"  # "lower", "higher", "none" (parts of a decomposition) or "target" (closer to target)
    combine: ClassRule | None = None
    target: float | None = None  # the calibrated value of a "target" metric (a calibration slope is 1)


_ENTRIES = [
    MetricInfo(
        "ece_l1_plugin", "sum_b (n_b/n) |acc_b - conf_b| (Guo et al. 2017)", "2.2", "binned", combine=ClassRule(1)
    ),
    MetricInfo("ece_l2_plugin", "sqrt(sum_b (n_b/n) (acc_b - conf_b)^2)", "2.2", "binned", combine=ClassRule(2)),
    MetricInfo(
        "ece_max_plugin", "max_b |acc_b - conf_b| over non-empty bins", "2.2", "binned", combine=ClassRule(math.inf)
    ),
    MetricInfo(
        "ece_l2_sq_debiased_kumar",
        "Kumar et al. 2019 debiased squared l2 (can be < 0)",
        "2.2",
        "binned",
        combine=ClassRule(0),
    ),
    MetricInfo(
        "ece_l2_debiased_kumar",
        "sqrt(max(0, ece_l2_sq_debiased_kumar))",
        "2.2",
        "binned",
        combine=ClassRule(0, of="ece_l2_sq_debiased_kumar", root=True),
    ),
    MetricInfo(
        "ece_l2_sq_debiased_dpe",
        "T-Cal debiased plug-in estimator of the squared l2 (can be < 0)",
        "2.2",
        "binned",
        combine=ClassRule(0),
    ),
    MetricInfo(
        "ece_l2_debiased_dpe",
        "sqrt(max(0, ece_l2_sq_debiased_dpe))",
        "2.2",
        "binned",
        combine=ClassRule(0, of="ece_l2_sq_debiased_dpe", root=True),
    ),
    MetricInfo(
        "ece_l2_sq_debiased_sun",
        "Sun et al. 2024 debiased squared l2, 1/(n_b-1) form (can be < 0)",
        "2.4",
        "binned",
        combine=ClassRule(0),
    ),
    MetricInfo("ece_l2_sq_sun_interval", "Sun et al. 2024 confidence interval for the squared l2-ECE", "2.4", "binned"),
    MetricInfo("brier_score", "mean (z - y)^2", "2.3", "binned"),
    MetricInfo("brier_reliability", "sum_b (n_b/n) (conf_b - acc_b)^2 (Murphy decomposition)", "2.3", "binned"),
    MetricInfo(
        "brier_resolution", "sum_b (n_b/n) (acc_b - ybar)^2 (Murphy decomposition)", "2.3", "binned", better="higher"
    ),
    MetricInfo("brier_uncertainty", "ybar (1 - ybar) (Murphy decomposition)", "2.3", "binned", better="none"),
    MetricInfo("brier_within_bin", "brier - (reliability - resolution + uncertainty)", "2.3", "binned", better="none"),
    MetricInfo(
        "brier_skill_score",
        "1 - brier / (ybar (1 - ybar)), climatology reference (Murphy 1973; Wilks)",
        "2.3",
        "binned",
        better="higher",
        combine=ClassRule(1),
    ),
    MetricInfo("log_loss", "mean -log p(y), probabilities clipped to [eps, 1 - eps]", "2.3", "binned"),
    MetricInfo(
        "dce",
        "distance to calibration estimate on n_bins equal-width bins (seed 002)",
        "2.4",
        "binned",
        combine=ClassRule(1),
    ),
    MetricInfo("brier_score_multiclass", "mean ||P_i - e_{c_i}||^2", "2.3", "scores"),
    MetricInfo("log_loss_multiclass", "mean -log P_{i,c_i}, clipped to [eps, 1]", "2.3", "scores"),
    MetricInfo(
        "tcal_p_value", "T-Cal adaptive test's Monte Carlo p-value (Lee et al. 2023)", "4.2", "tcal", better="higher"
    ),
    MetricInfo(
        "tcal_statistic", "T_m, the debiased plug-in statistic at the level with the smallest p-value", "4.1", "tcal"
    ),
    MetricInfo(
        "binomial_p_value",
        "exact binomial test per distinct prediction, Bonferroni over the values",
        "4.4",
        "tcal",
        better="higher",
    ),
    MetricInfo(
        "cox_slope",
        "b of logit P(y=1) = a + b logit(p) (Cox 1958), Wald interval; 1 when calibrated",
        "calibcli.clinical.classical_tests",
        "clinical",
        better="target",
        target=1.0,
    ),
    MetricInfo(
        "cox_intercept",
        "a of logit P(y=1) = a + b logit(p) (Cox 1958), fitted with the slope, Wald interval",
        "calibcli.clinical.classical_tests",
        "clinical",
        better="target",
        target=0.0,
    ),
    MetricInfo(
        "calibration_in_the_large",
        "a of logit P(y=1) = a + logit(p), the slope fixed at 1 (Cox 1958), Wald interval; 0 when calibrated",
        "calibcli.clinical.classical_tests",
        "clinical",
        better="target",
        target=0.0,
    ),
    MetricInfo(
        "ici",
        "integrated calibration index: weighted mean of |f(p) - p|, f the SmoothECE kernel regression "
        "at s* (Austin & Steyerberg 2019, who use loess)",
        "calibcli.clinical.classical_tests",
        "clinical",
        combine=ClassRule(1),
    ),
    MetricInfo(
        "e50",
        "weighted median of |f(p) - p| (Austin & Steyerberg 2019)",
        "calibcli.clinical.classical_tests",
        "clinical",
        combine=ClassRule(1),
    ),
    MetricInfo(
        "e90",
        "weighted 90th percentile of |f(p) - p| (Austin & Steyerberg 2019)",
        "calibcli.clinical.classical_tests",
        "clinical",
        combine=ClassRule(1),
    ),
    MetricInfo(
        "emax",
        "max of |f(p) - p| over the predictions (Austin & Steyerberg 2019)",
        "calibcli.clinical.classical_tests",
        "clinical",
        combine=ClassRule(math.inf),
    ),
    MetricInfo(
        "spiegelhalter_p_value",
        "Spiegelhalter (1986) Z test's two-sided p-value",
        "calibcli.clinical.classical_tests",
        "clinical_test",
        better="higher",
    ),
    MetricInfo(
        "spiegelhalter_z",
        "Z = sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2 p (1 - p)) (Spiegelhalter 1986)",
        "calibcli.clinical.classical_tests",
        "clinical_test",
        better="target",
        target=0.0,
    ),
    MetricInfo(
        "hosmer_lemeshow_p_value",
        "Hosmer-Lemeshow test's chi-square (G - 2 df) p-value",
        "calibcli.clinical.classical_tests",
        "clinical_test",
        better="higher",
    ),
    MetricInfo(
        "hosmer_lemeshow_statistic",
        "C-hat = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g)) over deciles of risk (Hosmer & Lemeshow 1980)",
        "calibcli.clinical.classical_tests",
        "clinical_test",
    ),
    MetricInfo(
        "ecce_mad",
        "ECCE-MAD = max_k |C_k|, C_k = sum_{j<=k} w_j (y_j - s_j) in score order, weights normalised, "
        "tie blocks (Arrieta-Ibarra et al. 2022); with ecce_mad_sigma (/ sqrt(sum w^2 s (1 - s))) and "
        "ecce_mad_pvalue (sup |B|)",
        "9",
        "cumulative",
    ),
    MetricInfo(
        "ecce_r",
        "ECCE-R = max_k C_k - min_k C_k (Kuiper type; Arrieta-Ibarra et al. 2022); with ecce_r_sigma "
        "and ecce_r_pvalue (range of standard Brownian motion)",
        "9",
        "cumulative",
    ),
    MetricInfo(
        "ecce_p_value",
        "p-value of ECCE-R/sigma from the law of the range of standard Brownian motion "
        "(tcal --test ecce; Arrieta-Ibarra et al. 2022)",
        "9",
        "clinical_test",
        better="higher",
    ),
    MetricInfo(
        "ecce_statistic",
        "ECCE-R/sigma: (max_k C_k - min_k C_k) / sqrt(sum w^2 s (1 - s)), C the cumulative "
        "differences in score order (tcal --test ecce)",
        "9",
        "clinical_test",
    ),
    MetricInfo(
        "smece",
        "SmoothECE (Blasiok & Nakkiran 2023): smECE at the fixed point sigma* = smECE_sigma*, "
        "reflected Gaussian kernel on [0, 1]",
        "3",
        "smooth",
        combine=ClassRule(1),
    ),
    MetricInfo(
        "smece_at_sigma",
        "smECE_sigma = int_0^1 |(1/W) sum_i w_i K_sigma(t, z_i) (y_i - z_i)| dt at the given "
        "sigma, reflected Gaussian kernel on [0, 1]",
        "3",
        "smooth",
        combine=ClassRule(1),
    ),
    # regression predictions (SPEC 10; calibcli.regression): names as uncertainty-toolbox, netcal and MAPIE name them
    MetricInfo("mace", "mean_k |obs_k - p_k| over the calibration curve (uncertainty-toolbox)", "10", "regression"),
    MetricInfo(
        "rmsce", "sqrt(mean_k (obs_k - p_k)^2) over the calibration curve (uncertainty-toolbox)", "10", "regression"
    ),
    MetricInfo(
        "miscalibration_area",
        "area between the calibration curve and the diagonal (uncertainty-toolbox)",
        "10",
        "regression",
    ),
    MetricInfo("pit_ks", "Kolmogorov-Smirnov distance of the PIT from U(0, 1)", "10", "regression"),
    MetricInfo("pit_ks_pvalue", "exact p-value of pit_ks (scipy.stats.kstwo)", "10", "regression", better="higher"),
    MetricInfo(
        "ence", "mean_b |RMV_b - RMSE_b| / RMV_b over bins of the predicted std (Levi et al. 2019)", "10", "regression"
    ),
    MetricInfo("uce", "sum_b (n_b / n) |MSE_b - MV_b| over bins of the predicted std (netcal)", "10", "regression"),
    MetricInfo("crps", "mean continuous ranked probability score (Gneiting and Raftery 2007)", "10", "regression"),
    MetricInfo("nll", "mean Gaussian negative log-likelihood", "10", "regression"),
    MetricInfo("pinball", "mean pinball (check) loss over levels and rows", "10", "regression"),
    MetricInfo("sharpness", "sqrt(mean sigma^2) (uncertainty-toolbox)", "10", "regression", better="none"),
    MetricInfo(
        "interval_score_avg99",
        "Winkler score averaged over central intervals at linspace(0.01, 0.99, 99) (uncertainty-toolbox)",
        "10",
        "regression",
    ),
]

#: Every metric by name, in report order.
REGISTRY: dict[str, MetricInfo] = {m.name: m for m in _ENTRIES}


def describe(family: str) -> dict[str, str]:
    """``name -> description`` of a family's metrics (the report's parameters echo it); the binned family's
    report also carries the multiclass scores, the clinical statistics (Cox, ICI) and ECCE."""
    also = ("scores", "clinical", "cumulative") if family == "binned" else ()
    return {m.name: m.description for m in _ENTRIES if m.family == family or m.family in also}


def aggregate_over_classes(rule: ClassRule, values: np.ndarray, v: np.ndarray):
    """Combine per-class values (axis 0; replicates may follow on axis 1) with class weights ``v`` (SPEC 1)."""
    values = np.asarray(values, dtype=np.float64)
    if rule.p == 0:
        out = np.tensordot(v, values, axes=1)
        return np.sqrt(np.maximum(out, 0.0)) if rule.root else out
    if math.isinf(rule.p):
        return values.max(axis=0)
    return np.tensordot(v, values**rule.p, axes=1) ** (1.0 / rule.p)


def worse(name: str, a: float, b: float) -> bool:
    """Whether value ``a`` of metric ``name`` is worse than ``b`` (higher for lower-is-better metrics)."""
    better = REGISTRY[name].better if name in REGISTRY else "lower"
    if better == "target":  # farther from the calibrated value (a slope of 1, an intercept of 0)
        target = REGISTRY[name].target
        assert target is not None, f"{name} is judged by its distance to a target but declares none"
        return abs(a - target) > abs(b - target)
    return a < b if better == "higher" else a > b


# ---------------------------------------------------------------------------------------------
# Estimators: the function that computes a metric, registered on the function by its entry's name


@dataclass(frozen=True)
class Estimator:
    """A function computing the metrics ``names`` (one value, or a dict holding each of several) from its
    ``inputs``: named inputs of the family's computation (the binned family's ``s``, the per-bin statistics, and
    ``s_uniform``, those of the dCE's equal-width bins) or metrics registered before it in registry order."""

    names: tuple[str, ...]
    inputs: tuple[str, ...]
    function: Callable


#: Metric name -> its estimator (:func:`estimator` fills it as the estimator modules are imported).
ESTIMATORS: dict[str, Estimator] = {}


def estimator(*names: str, of: tuple[str, ...] = ("s",)):
    """Decorator: the function estimates the registry metrics ``names`` from the inputs ``of`` (in that order;
    default the per-bin statistics ``s``). With several names it returns a dict holding each. A name without a
    :class:`MetricInfo` entry, or one already estimated, is refused when the module defining it is imported."""
    for name in names:
        if name not in REGISTRY:
            raise ValueError(f"{name} has no entry in calibcli.core.registry._ENTRIES: add its MetricInfo first")
        if name in ESTIMATORS:
            raise ValueError(f"{name} already has an estimator ({ESTIMATORS[name].function.__qualname__})")

    def register(function: Callable) -> Callable:
        entry = Estimator(tuple(names), tuple(of), function)
        for name in names:
            ESTIMATORS[name] = entry
        return function

    return register


def estimated(family: str) -> tuple[str, ...]:
    """The metrics of ``family`` that have a registered estimator, in registry order (the order of the report)."""
    return tuple(m.name for m in _ENTRIES if m.family == family and m.name in ESTIMATORS)


def evaluate(names: Iterable[str], given: dict) -> dict:
    """The metrics ``names`` (in that order) from the named inputs ``given``, each estimator called once; an
    estimator's metric inputs are computed first, from the same inputs."""
    values = dict(given)

    def value(name: str):
        if name not in values:
            if name not in ESTIMATORS:
                raise KeyError(f"{name} is neither given nor estimated")
            entry = ESTIMATORS[name]
            out = entry.function(*(value(i) for i in entry.inputs))
            values.update(out if len(entry.names) > 1 else {name: out})
        return values[name]

    return {name: value(name) for name in names}
