"""The metric registry: every number calibcli reports, named once (SPEC 2, 3; STYLE "names from the field").

Each entry says what the metric is, which SPEC section defines it, which direction is better, and how
per-class values combine into the marginal aggregate (SPEC 1: ``(sum_k v_k CE_k^p)^(1/p)``). Commands,
the report renderer, gates and group summaries look metrics up here instead of describing them again.
"""

from __future__ import annotations

import math
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
    family: str  # "binned", "smooth", "scores"
    better: str = "lower"  # "lower", "higher" or "none" (parts of a decomposition)
    combine: ClassRule | None = None


_ENTRIES = [
    MetricInfo("ece_l1_plugin", "sum_b (n_b/n) |acc_b - conf_b| (Guo et al. 2017)", "2.2", "binned", combine=ClassRule(1)),
    MetricInfo("ece_l2_plugin", "sqrt(sum_b (n_b/n) (acc_b - conf_b)^2)", "2.2", "binned", combine=ClassRule(2)),
    MetricInfo("ece_max_plugin", "max_b |acc_b - conf_b| over non-empty bins", "2.2", "binned", combine=ClassRule(math.inf)),
    MetricInfo("ece_l2_sq_debiased_kumar", "Kumar et al. 2019 debiased squared l2 (can be < 0)", "2.2", "binned",
               combine=ClassRule(0)),
    MetricInfo("ece_l2_debiased_kumar", "sqrt(max(0, ece_l2_sq_debiased_kumar))", "2.2", "binned",
               combine=ClassRule(0, of="ece_l2_sq_debiased_kumar", root=True)),
    MetricInfo("ece_l2_sq_debiased_dpe", "T-Cal debiased plug-in estimator of the squared l2 (can be < 0)", "2.2", "binned",
               combine=ClassRule(0)),
    MetricInfo("ece_l2_debiased_dpe", "sqrt(max(0, ece_l2_sq_debiased_dpe))", "2.2", "binned",
               combine=ClassRule(0, of="ece_l2_sq_debiased_dpe", root=True)),
    MetricInfo("ece_l2_sq_debiased_sun", "Sun et al. 2024 debiased squared l2, 1/(n_b-1) form (can be < 0)", "2.4", "binned",
               combine=ClassRule(0)),
    MetricInfo("ece_l2_sq_sun_interval", "Sun et al. 2024 confidence interval for the squared l2-ECE", "2.4", "binned"),
    MetricInfo("brier_score", "mean (z - y)^2", "2.3", "binned"),
    MetricInfo("brier_reliability", "sum_b (n_b/n) (conf_b - acc_b)^2 (Murphy decomposition)", "2.3", "binned"),
    MetricInfo("brier_resolution", "sum_b (n_b/n) (acc_b - ybar)^2 (Murphy decomposition)", "2.3", "binned", better="higher"),
    MetricInfo("brier_uncertainty", "ybar (1 - ybar) (Murphy decomposition)", "2.3", "binned", better="none"),
    MetricInfo("brier_within_bin", "brier - (reliability - resolution + uncertainty)", "2.3", "binned", better="none"),
    MetricInfo("log_loss", "mean -log p(y), probabilities clipped to [eps, 1 - eps]", "2.3", "binned"),
    MetricInfo("dce", "distance to calibration estimate on n_bins equal-width bins (seed 002)", "2.4", "binned",
               combine=ClassRule(1)),
    MetricInfo("brier_score_multiclass", "mean ||P_i - e_{c_i}||^2", "2.3", "scores"),
    MetricInfo("log_loss_multiclass", "mean -log P_{i,c_i}, clipped to [eps, 1]", "2.3", "scores"),
    MetricInfo("tcal_p_value", "T-Cal adaptive test's Monte Carlo p-value (Lee et al. 2023)", "4.2", "tcal", better="higher"),
    MetricInfo("tcal_statistic", "T_m, the debiased plug-in statistic at the level with the smallest p-value", "4.1", "tcal"),
    MetricInfo("binomial_p_value", "exact binomial test per distinct prediction, Bonferroni over the values", "4.4", "tcal",
               better="higher"),
    MetricInfo("smece", "SmoothECE (Blasiok & Nakkiran 2023): smECE at the fixed point sigma* = smECE_sigma*, "
               "reflected Gaussian kernel on [0, 1]", "3", "smooth", combine=ClassRule(1)),
    MetricInfo("smece_at_sigma", "smECE_sigma = int_0^1 |(1/W) sum_i w_i K_sigma(t, z_i) (y_i - z_i)| dt at the given "
               "sigma, reflected Gaussian kernel on [0, 1]", "3", "smooth", combine=ClassRule(1)),
]

#: Every metric by name, in report order.
REGISTRY: dict[str, MetricInfo] = {m.name: m for m in _ENTRIES}


def describe(family: str) -> dict[str, str]:
    """``name -> description`` of a family's metrics (the report's parameters echo it)."""
    return {m.name: m.description for m in _ENTRIES if m.family in (family, "scores" if family == "binned" else family)}


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
    return a < b if better == "higher" else a > b
