"""The binned calibration report of one input in a given mode (SPEC sections 1 and 2).

:func:`evaluate_binned` reduces the input to its binary problems (:mod:`calibcli.modes`), runs the
estimators of :mod:`calibcli.estimators` on each, aggregates the classes in marginal mode, and adds
the multiclass proper scores. Every problem draws its bootstrap resamples from a generator seeded with
the same seed, so all classes see the same resampled rows and the aggregates' intervals are joint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.estimators import (
    LOG_LOSS_EPS,
    CalibrationResult,
    Metric,
    binned_calibration,
    bootstrap_multiplicities,
    percentile_interval,
)
from calibcli.modes import aggregate_lp, binary_problems, class_weights

#: How each metric aggregates over classes in marginal mode: the p of (sum_k v_k CE_k^p)^(1/p),
#: or "sum" for squared errors (aggregate of the squares, p = 2 before the root).
AGGREGATION = {
    "ece_l1_plugin": 1.0,
    "ece_l2_plugin": 2.0,
    "ece_max_plugin": math.inf,
    "ece_l2_sq_debiased_kumar": "sum",
    "ece_l2_sq_debiased_dpe": "sum",
    "ece_l2_sq_debiased_sun": "sum",
    "dce": 1.0,
}
_ROOTS = {
    "ece_l2_debiased_kumar": "ece_l2_sq_debiased_kumar",
    "ece_l2_debiased_dpe": "ece_l2_sq_debiased_dpe",
}


@dataclass(frozen=True)
class ProblemResult:
    name: str
    class_index: int | None
    result: CalibrationResult


@dataclass(frozen=True)
class BinnedReport:
    """Per-problem results, the marginal aggregate and the multiclass proper scores."""

    mode: str
    problems: list[ProblemResult]
    aggregate: dict[str, Metric] | None
    class_weight_scheme: str | None
    class_weight_values: np.ndarray | None
    multiclass_scores: dict[str, Metric] | None

    def headline(self) -> dict[str, Metric]:
        """The metrics a gate or a summary looks at: the aggregate in marginal mode, else the one problem."""
        metrics = dict(self.aggregate) if self.aggregate is not None else dict(self.problems[0].result.metrics)
        if self.multiclass_scores:
            metrics.update(self.multiclass_scores)
        return metrics


def evaluate_binned(
    labels: np.ndarray,
    probs: np.ndarray,
    *,
    mode: str,
    sample_weight: np.ndarray | None = None,
    class_names: list[str] | None = None,
    n_bins: int = 15,
    strategy: str = "uniform",
    n_boot: int = 0,
    alpha: float = 0.05,
    seed: int = 0,
    class_weight_scheme: str = "uniform",
    progress=None,
) -> BinnedReport:
    """Every SPEC 2 estimator for validated ``labels`` and ``probs`` in ``mode``."""
    problems = binary_problems(labels, probs, mode=mode, sample_weight=sample_weight, class_names=class_names)
    keep = mode == "marginal" and n_boot > 0
    results = [
        ProblemResult(
            p.name,
            p.class_index,
            binned_calibration(
                p.y,
                p.z,
                sample_weight=p.sample_weight,
                n_bins=n_bins,
                strategy=strategy,
                n_boot=n_boot,
                alpha=alpha,
                rng=np.random.default_rng(seed),
                keep_replicates=keep,
                progress=progress,
            ),
        )
        for p in problems
    ]
    aggregate = weights = None
    if mode == "marginal":
        weights = class_weights(labels, probs.shape[1], scheme=class_weight_scheme, sample_weight=sample_weight)
        aggregate = _aggregate(results, weights, n_boot, alpha)
    scores = None
    if probs.ndim == 2 and probs.shape[1] > 2 or mode == "marginal":
        scores = multiclass_scores(labels, probs, sample_weight=sample_weight, n_boot=n_boot, alpha=alpha, seed=seed)
    return BinnedReport(mode, results, aggregate, class_weight_scheme if mode == "marginal" else None, weights, scores)


def _aggregate(results: list[ProblemResult], v: np.ndarray, n_boot: int, alpha: float) -> dict[str, Metric]:
    def combine(name: str, values: np.ndarray) -> np.ndarray | float:
        rule = AGGREGATION[name]
        if rule == "sum":
            return np.tensordot(v, values, axes=1)
        if values.ndim == 1:
            return aggregate_lp(values, v, rule)
        if math.isinf(rule):
            return values.max(axis=0)
        return np.tensordot(v, values**rule, axes=1) ** (1.0 / rule)

    out: dict[str, Metric] = {}
    method = f"percentile bootstrap, {n_boot} resamples, classes resampled jointly" if n_boot else None
    for name in [*AGGREGATION, *_ROOTS]:
        base = _ROOTS.get(name, name)
        est = float(combine(base, np.array([r.result.metrics[base].estimate for r in results])))
        lo = hi = None
        if n_boot:
            reps = combine(base, np.array([r.result.replicates[base] for r in results]))
            if name in _ROOTS:
                reps = np.sqrt(np.maximum(reps, 0.0))
            lo, hi = percentile_interval(reps, alpha)
        if name in _ROOTS:
            est = math.sqrt(max(est, 0.0))
        rule = AGGREGATION[base]
        how = "sum_k v_k CE_k^2" if rule == "sum" else ("max_k CE_k" if math.isinf(rule) else f"(sum_k v_k CE_k^{rule:g})^(1/{rule:g})")
        out[name] = Metric(name, est, lo, hi, method, note=f"marginal aggregate {how}")
    return out


def multiclass_scores(labels, probs, *, sample_weight=None, n_boot=0, alpha=0.05, seed=0) -> dict[str, Metric]:
    """Multiclass Brier ``mean ||P_i - e_{c_i}||^2`` and log-loss ``mean -log P_{i,c_i}`` (SPEC 2.3).

    For a single probability column (binary) the vector is ``(1 - z, z)``, so the Brier score is twice
    the binary one. Bootstrap intervals use the same resampled rows as the binned metrics.
    """
    n = len(labels)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    P = probs if probs.ndim == 2 else np.column_stack([1.0 - probs, probs])
    onehot_p = P[np.arange(n), labels]
    brier = (P**2).sum(axis=1) - 2.0 * onehot_p + 1.0
    ll = -np.log(np.clip(onehot_p, LOG_LOSS_EPS, 1.0))
    X = np.column_stack([w, w * brier, w * ll])
    point = X.sum(axis=0)
    est = {"brier_score_multiclass": point[1] / point[0], "log_loss_multiclass": point[2] / point[0]}
    ci = {k: (None, None) for k in est}
    if n_boot:
        rng = np.random.default_rng(seed)
        reps = np.array([bootstrap_multiplicities(n, rng) @ X for _ in range(n_boot)])
        ci = {
            "brier_score_multiclass": percentile_interval(reps[:, 1] / reps[:, 0], alpha),
            "log_loss_multiclass": percentile_interval(reps[:, 2] / reps[:, 0], alpha),
        }
    method = f"percentile bootstrap, {n_boot} resamples" if n_boot else None
    return {
        k: Metric(k, float(v), ci[k][0], ci[k][1], method, note=f"log-loss eps={LOG_LOSS_EPS:g}" if "log" in k else None)
        for k, v in est.items()
    }
