"""The smooth family's state for one input or group (SPEC 3): one
:class:`~calibcli.smooth.accumulator.SmoothAccumulator`
per binary problem of the mode, the class totals of the marginal aggregate, and the report it finishes to.
"""

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

import calibcli.smooth.estimator
from calibcli.core.accumulator import InputState
from calibcli.core.modes import binary_problems, class_weight_values
from calibcli.core.registry import REGISTRY, aggregate_over_classes
from calibcli.core.resampling import percentile_interval
from calibcli.core.results import Metric, ModeReport
from calibcli.smooth.accumulator import SmoothAccumulator


@dataclass(frozen=True)
class SmoothProblemResult:
    name: str
    class_index: int | None
    result: calibcli.smooth.estimator.SmoothECEResult
    metric: str

    @property
    def metrics(self) -> dict[str, Metric]:
        r = self.result
        method = (
            None
            if r.ci_method is None
            else (r.ci_method + (", bandwidth re-solved on each" if r.sigma_is_fixed_point else ", fixed sigma"))
        )
        return {self.metric: Metric(self.metric, float(r.smece), r.ci_low, r.ci_high, method)}

    def to_dict(self) -> dict:
        r = self.result
        return {
            "name": self.name,
            "class_index": self.class_index,
            "n": r.n,
            "weight_total": r.weight_total,
            "sigma": r.sigma,
            "sigma_is_fixed_point": r.sigma_is_fixed_point,
            "fixed_point_gap": r.fixed_point_gap,
            "grid_cells": r.grid_size,
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
        }


@dataclass(frozen=True)
class SmoothReport(ModeReport):
    problems: list[SmoothProblemResult]

    def to_dict(self) -> dict:
        return {"mode": self.mode, "problems": [p.to_dict() for p in self.problems], **self.aggregate_entry()}

    def headline(self) -> dict[str, Metric]:
        return dict(self.aggregate) if self.aggregate is not None else dict(self.problems[0].metrics)


class SmoothInputAccumulator(InputState):
    """The smooth family's state for one input (or group): one SmoothAccumulator per binary problem."""

    kind = "smooth_input"
    state_name = "smooth input state"
    merge_rules = {"problems": "merge", "class_totals": "sum"}

    def __init__(
        self,
        *,
        grids: list[int] | None = None,
        **head: Any,
    ):
        super().__init__(**head)
        mode, n_classes, options = self.mode, self.n_classes, self.options
        n_problems = n_classes if mode == "marginal" else 1
        grids = grids or [calibcli.smooth.estimator.STATS_GRID] * n_problems  # read now: the library may change it
        self.problems = [SmoothAccumulator(row_limit=options.row_limit, seed=options.seed, n_cells=g) for g in grids]
        self.class_totals = np.zeros(n_classes)
        self._results: list[calibcli.smooth.estimator.SmoothECEResult] | None = None
        self._point_results: list[calibcli.smooth.estimator.SmoothECEResult] | None = None

    def update(self, row_index, probs, labels, w=None) -> "SmoothInputAccumulator":
        for problem, acc in zip(
            binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=list(self.class_names)),
            self.problems,
            strict=True,
        ):
            acc.update(row_index, problem.z, problem.y, problem.sample_weight)
        self.class_totals += np.bincount(labels, weights=w, minlength=self.n_classes)[: self.n_classes]
        self._results = self._point_results = None
        return self

    def _after_merge(self) -> None:
        self._results = self._point_results = None

    @property
    def n_rows(self) -> int:
        return self.problems[0].n_rows

    def _finish(self, progress=None):
        if self._results is None:
            self.results(
                [self], progress=None if progress is None else lambda steps=1: [progress() for _ in range(steps)]
            )
        return self._results

    def _points(self):
        """Each problem's fixed point alone (no bootstrap): what decides a second pass."""
        if self._results is not None:
            return self._results
        if self._point_results is None:
            point = self.options.but(n_boot=0)  # (the family's options, checked when made: not again)
            self._point_results = [
                SmoothAccumulator.results([acc], point, sigma=point.sigma)[0] for acc in self.problems
            ]
        return self._point_results

    def needs_second_pass(self) -> bool:
        """A bandwidth below what the first pass's grid resolves, without the rows at hand (SPEC 8)."""
        return any(r.needs_finer_grid for r in self._points())

    def for_second_pass(self) -> "SmoothInputAccumulator":
        grids = [
            r.finer_grid if r.needs_finer_grid else acc.n_cells
            for r, acc in zip(self._points(), self.problems, strict=True)
        ]
        return SmoothInputAccumulator(**self.head(), grids=grids)

    @classmethod
    def results(cls, accs: list, progress=None, on_chunks=None) -> list[SmoothReport]:
        """The reports of many accumulators of one input's groups (the same options) at once: each problem's
        SmoothECE of every group, their bootstraps together (:meth:`SmoothAccumulator.results`).
        ``progress(steps)`` is told the resamples finished."""
        o = accs[0].options
        todo = [acc for acc in accs if acc._results is None]
        if todo:
            per_problem = [
                SmoothAccumulator.results([acc.problems[k] for acc in todo], o, sigma=o.sigma, progress=progress)
                for k in range(len(todo[0].problems))
            ]
            for j, acc in enumerate(todo):
                acc._results = [done[j] for done in per_problem]
        return [acc.result() for acc in accs]

    def result(self, progress=None) -> SmoothReport:
        o = self.options
        marginal = self.mode == "marginal"
        names = [f"class {c}" for c in self.class_names] if marginal else [self.mode]
        if self._results is None:
            self._finish(progress)
        results = [
            SmoothProblemResult(names[k], k if marginal else None, r, o.metric) for k, r in enumerate(self._finish())
        ]
        aggregate = weights = None
        if marginal:
            weights = class_weight_values(o.class_weights, self.class_totals)
            rule = REGISTRY[o.metric].combine
            assert rule is not None  # (smece's class rule)
            estimate = float(aggregate_over_classes(rule, np.array([r.result.smece for r in results]), weights))
            low = high = method = None
            if o.n_boot:
                per_class = cast(list[np.ndarray], [r.result.replicates for r in results])  # (kept with n_boot)
                reps = aggregate_over_classes(rule, np.stack(per_class), weights)
                low, high = percentile_interval(reps, o.alpha)
                per_row = all("over rows" in (r.result.ci_method or "") for r in results)
                method = f"{results[0].result.ci_method}, classes resampled {'jointly' if per_row else 'independently'}"
            aggregate = {
                o.metric: Metric(o.metric, estimate, low, high, method, note=f"marginal aggregate {rule.describe()}")
            }
        return SmoothReport(self.mode, results, aggregate, o.class_weights if marginal else None, weights)
