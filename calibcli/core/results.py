"""The result records: :class:`Metric`, the one number every family reports (its estimate, interval and
bound), and the library's :class:`MetricResult`, one metric of one set of predictions with how it was made
(the metric functions of :mod:`calibcli.api` return it), and the metrics reported beside each one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibcli.core.documents import jsonable


@dataclass(frozen=True)
class ModeReport:
    """One input's results in one mode, as the binned and smooth families report them: a result per binary problem
    and, in marginal mode, their aggregate over the classes with the class weights it was made with."""

    mode: str
    problems: list
    aggregate: dict[str, Metric] | None
    class_weights: str | None
    class_weight_values: np.ndarray | None

    def aggregate_entry(self) -> dict[str, Any]:
        """The report entry's ``aggregate`` (the weights and the aggregated metrics), or nothing without one."""
        if self.aggregate is None:
            return {}
        assert self.class_weight_values is not None  # (an aggregate is a weighted one)
        return {
            "aggregate": {
                "class_weights": self.class_weights,
                "class_weight_values": self.class_weight_values.tolist(),
                "metrics": {k: m.to_dict() for k, m in self.aggregate.items()},
            }
        }


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
class MetricResult(Metric):
    """One metric of one set of predictions: a :class:`Metric` (``name``, ``estimate``,
    ``ci_low``, ``ci_high``, ``ci_method``, ``upper_bound``, ``upper_bound_method``, ``note``) with how it was made.

    ``name`` is the registry's name (:data:`REGISTRY`): it says which estimator it is. ``related`` holds
    the metrics reported beside it (the signed square of a debiased l2 error beside its root, SPEC 2.2; the
    parts of the Murphy decomposition beside the Brier score; the T-Cal statistic beside its p-value);
    ``per_class`` the per-class values of a marginal aggregate (SPEC 1); ``params`` the options that made
    it; ``details`` what else the computation reports (non-empty bins, the bandwidth s*, the test's
    decision). ``report`` is the full report object of the computation (not compared, not serialised).
    ``float(result)`` is the estimate.
    """

    n: int = 0
    mode: str = "binary"
    params: dict = field(default_factory=dict)
    related: dict = field(default_factory=dict)
    per_class: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict, repr=False)
    report: object = field(default=None, repr=False, compare=False)

    def __float__(self) -> float:
        return float(self.estimate)

    def to_dict(self) -> dict:
        """Plain JSON values: the metric's name (``metric``), its entry as the CLI's report writes it
        (:meth:`Metric.to_dict`), n, mode, the parameters, the related and per-class metrics, the details."""
        return jsonable(
            {
                "metric": self.name,
                **super().to_dict(),
                "n": self.n,
                "mode": self.mode,
                "params": dict(self.params),
                "related": {k: m.to_dict() for k, m in self.related.items()},
                "per_class": {k: m.to_dict() for k, m in self.per_class.items()},
                "details": dict(self.details),
            }
        )

    def to_frame(self, **labels):
        """A one-row :class:`pandas.DataFrame`, so that results of several models concatenate into a table.

        ``labels`` come first as columns (``to_frame(model="nb")``); then the metric's name, estimate,
        interval, bound, n and mode, the parameters, the related metrics' and the per-class estimates
        (``<metric> <class>``), and the scalar details.
        """
        import pandas as pd

        row = {
            **labels,
            "metric": self.name,
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "upper_bound": self.upper_bound,
            "n": self.n,
            "mode": self.mode,
        }
        row.update(self.params)
        row.update({name: m.estimate for name, m in self.related.items()})
        row.update({f"{self.name} {name}": m.estimate for name, m in self.per_class.items()})
        row.update({k: v for k, v in self.details.items() if isinstance(v, (bool, int, float, str)) and k not in row})
        return pd.DataFrame([row])


BRIER_PARTS = ("brier_score", "brier_reliability", "brier_resolution", "brier_uncertainty", "brier_within_bin")

#: Metrics reported beside a metric (SPEC 2.2: a debiased square and its root side by side, never one alone).
RELATED = {
    "ece_l2_debiased_kumar": ("ece_l2_sq_debiased_kumar",),
    "ece_l2_sq_debiased_kumar": ("ece_l2_debiased_kumar",),
    "ece_l2_debiased_dpe": ("ece_l2_sq_debiased_dpe",),
    "ece_l2_sq_debiased_dpe": ("ece_l2_debiased_dpe",),
    "ece_l2_sq_sun_interval": ("ece_l2_sq_debiased_sun",),
    "ece_l2_sq_debiased_sun": ("ece_l2_sq_sun_interval",),
    "tcal_p_value": ("tcal_statistic",),
    "tcal_statistic": ("tcal_p_value",),
    "spiegelhalter_p_value": ("spiegelhalter_z",),
    "spiegelhalter_z": ("spiegelhalter_p_value",),
    "hosmer_lemeshow_p_value": ("hosmer_lemeshow_statistic",),
    "hosmer_lemeshow_statistic": ("hosmer_lemeshow_p_value",),
    "ecce_p_value": ("ecce_statistic",),
    "ecce_statistic": ("ecce_p_value",),
    **{name: tuple(p for p in BRIER_PARTS if p != name) for name in BRIER_PARTS},
}


def metric_result(
    name: str, metrics: dict, *, n: int, mode: str, params: dict, per_class=None, details=None, report=None
) -> MetricResult:
    """The :class:`MetricResult` of metric ``name`` among a computation's ``metrics``, with the metrics reported
    beside it (:data:`RELATED`) and how it was made."""
    m = metrics[name]
    return MetricResult(
        name,
        float(m.estimate),
        m.ci_low,
        m.ci_high,
        m.ci_method,
        m.upper_bound,
        m.upper_bound_method,
        m.note,
        m.extra,
        n=n,
        mode=mode,
        params=params,
        related={k: metrics[k] for k in RELATED.get(name, ()) if k in metrics},
        per_class=dict(per_class or {}),
        details=dict(details or {}),
        report=report,
    )
