"""The input accumulator of the ece family (SPEC 1, 2, 8).

- :class:`InputAccumulator` holds everything one input (or one group of it) needs for the binned
  family: one :class:`~calibcli.binned.accumulator.BinnedAccumulator` per binary problem of the mode
  (SPEC 1), the class totals for ``prior`` class weights, and the multiclass proper scores.
- its smooth counterpart is :class:`calibcli.smooth.inputs.SmoothInputAccumulator`.
- :func:`evaluate_binned` is the in-memory case: one batch of arrays.

Every accumulator here follows the contract of :mod:`calibcli.core.accumulator` (``update``, ``merge``,
``to_dict``/``from_dict``, ``result``), so an engine can build them per fragment and merge.
"""

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibcli.binned.accumulator import BinnedAccumulator
from calibcli.binned.estimators import CalibrationResult
from calibcli.binned.stats import LOG_LOSS_EPS
from calibcli.clinical.accumulator import ClinicalAccumulator, aggregate_clinical
from calibcli.core.accumulator import Accumulator, InputState
from calibcli.core.compensated import add_exact
from calibcli.core.modes import binary_problems, class_weight_values
from calibcli.core.registry import REGISTRY, aggregate_over_classes
from calibcli.core.resampling import (
    Multiplicities,
    alongside,
    compiled_pays,
    in_threads,
    percentile_interval,
    replicate_spans,
)
from calibcli.core.results import Metric, ModeReport
from calibcli.core.rows import ROW_LIMIT, RowSample
from calibcli.core.validation import BYTES_PER_BIN, check_allocation, memory_budget
from calibcli.cumulative.accumulator import EcceAccumulator, ecce_metrics
from calibcli.cumulative.ecce import EcceResult
from calibcli.ece_family.options import Options

STATE_VERSION = 1


@dataclass(frozen=True)
class ProblemResult:
    name: str
    class_index: int | None
    result: CalibrationResult
    clinical: dict | None = None  # how the Cox and ICI metrics were made (calibcli.clinical.accumulator)
    ecce: dict | None = None  # how ECCE-MAD and ECCE-R were made: exact or the grid (calibcli.cumulative.accumulator)


@dataclass(frozen=True)
class BinnedReport(ModeReport):
    """Per-problem results (:class:`ProblemResult`), the marginal aggregate and the multiclass proper scores."""

    problems: list[ProblemResult]
    multiclass_scores: dict[str, Metric] | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """The report entry's results: mode, problems, aggregate and multiclass scores (SPEC 7)."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "problems": [
                {
                    "name": p.name,
                    "class_index": p.class_index,
                    **p.result.to_dict(),
                    **({"clinical": p.clinical} if p.clinical else {}),
                    **({"ecce": p.ecce} if p.ecce else {}),
                }
                for p in self.problems
            ],
            **self.aggregate_entry(),
        }
        if self.multiclass_scores is not None:
            out["multiclass_scores"] = {k: m.to_dict() for k, m in self.multiclass_scores.items()}
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def headline(self) -> dict[str, Metric]:
        """The metrics a gate or a summary looks at: the aggregate in marginal mode, else the one problem."""
        metrics = dict(self.aggregate) if self.aggregate is not None else dict(self.problems[0].result.metrics)
        if self.multiclass_scores:
            metrics.update(self.multiclass_scores)
        return metrics


# ---------------------------------------------------------------------------------------------
# Multiclass proper scores


class MulticlassScores(Accumulator):
    """Multiclass Brier ``mean ||P_i - e_{c_i}||^2`` and log-loss ``mean -log P_{i,c_i}`` (SPEC 2.3), streamed.

    For a single probability column (binary) the vector is ``(1 - z, z)``, so the Brier score is twice the
    binary one. Intervals: the per-row Poisson bootstrap on the kept rows (the same multiplicities as
    the binned metrics), or beyond ``row_limit`` rows the normal law of the sums with their exact
    Poisson-bootstrap moments (a ratio of sums of many rows).
    """

    kind = "multiclass_scores"
    version = 2  # (2: the sums carry their low parts, calibcli.core.compensated)
    merge_rules = {"sums": "exact", "rows": "merge"}
    _COLUMNS = ("w", "wb", "wl", "w2", "w2b", "w2l", "w2bb", "w2ll", "w2bl")

    def __init__(self, *, row_limit: int = ROW_LIMIT):
        self.sums = np.zeros(len(self._COLUMNS))
        self.sums_lo = np.zeros(len(self._COLUMNS))
        self.rows = RowSample(row_limit, 0, keep_when_full=False)

    @staticmethod
    def per_row(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        P = probs if probs.ndim == 2 else np.column_stack([1.0 - probs, probs])
        onehot_p = P[np.arange(len(labels)), labels]
        brier = (P**2).sum(axis=1) - 2.0 * onehot_p + 1.0
        ll = -np.log(np.clip(onehot_p, LOG_LOSS_EPS, 1.0))
        return np.column_stack([brier, ll])

    def update(self, row_index, probs, labels, w=None) -> "MulticlassScores":
        values = self.per_row(probs, labels)
        b, ll = values[:, 0], values[:, 1]  # Brier score and log-loss per row
        ww = np.ones(len(b)) if w is None else w
        w2 = ww * ww
        # einsum's own loop, not BLAS's dot: on a batch's few thousand rows BLAS's threads cost more CPU than the
        # products (they spin between calls), and an input of many tasks makes these sums once per task
        dot = functools.partial(np.einsum, "i,i->")
        add_exact(
            self.sums,
            self.sums_lo,
            np.array(
                [ww.sum(), dot(ww, b), dot(ww, ll), w2.sum(), dot(w2, b), dot(w2, ll)]
                + [dot(w2, b * b), dot(w2, ll * ll), dot(w2, b * ll)]
            ),
        )
        self.rows.update(row_index, values, labels, w)
        return self

    def result(self, *, n_boot: int, alpha: float, seed: int) -> dict[str, Metric]:
        s = dict(zip(self._COLUMNS, self.sums, strict=True))
        est = {"brier_score_multiclass": s["wb"] / s["w"], "log_loss_multiclass": s["wl"] / s["w"]}
        ci: dict[str, tuple[float | None, float | None]] = {k: (None, None) for k in est}
        method = None
        if n_boot:
            if not self.rows.dropped:
                row_index, values, _, w = self.rows.arrays()
                X = np.column_stack(
                    [np.ones(len(values)) if w is None else w, values * (1.0 if w is None else w[:, None])]
                )
                reps = _row_sums(Multiplicities(seed, row_index), X, n_boot)
                method = f"percentile Poisson bootstrap over rows, {n_boot} resamples"
            else:
                rng = np.random.Generator(
                    np.random.Philox(key=[int(seed) & 0xFFFFFFFFFFFFFFFF, 0x73636F726573])
                )  # "scores"
                mean = np.array([s["w"], s["wb"], s["wl"]])
                cov = np.array(
                    [[s["w2"], s["w2b"], s["w2l"]], [s["w2b"], s["w2bb"], s["w2bl"]], [s["w2l"], s["w2bl"], s["w2ll"]]]
                )
                reps = rng.multivariate_normal(mean, cov, size=n_boot, method="eigh")
                method = f"percentile Poisson bootstrap from the sums' moments (normal), {n_boot} resamples"
            ci = {
                "brier_score_multiclass": percentile_interval(reps[:, 1] / reps[:, 0], alpha),
                "log_loss_multiclass": percentile_interval(reps[:, 2] / reps[:, 0], alpha),
            }
        return {
            k: Metric(
                k, float(v), ci[k][0], ci[k][1], method, note=f"log-loss eps={LOG_LOSS_EPS:g}" if "log" in k else None
            )
            for k, v in est.items()
        }


def _row_sums(rows: Multiplicities, X: np.ndarray, n_boot: int) -> np.ndarray:
    """``(n_boot, K)``: every replicate's sums ``sum_i m_ir X[i]`` of the rows. A compiled loop (each draw made and
    used in registers, the terms added row after row; the replicates shared out between
    :data:`calibcli.core.resampling.THREADS` threads, each replicate's sums the same) once the run's draws pay for
    loading it (:func:`calibcli.core.resampling.compiled_pays`), else blocks of NumPy's draws, each one product with
    ``X`` (the same sums in BLAS's order: within 1e-12 relative)."""
    if compiled_pays(rows.n, n_boot):
        cell, none = np.zeros(rows.n, np.int64), np.empty((rows.n, 0))

        def span(r0: int, r1: int) -> np.ndarray:
            sums = np.zeros((1, X.shape[1], r1 - r0))
            rows.run_sums(np.arange(r0, r1), cell, X, none, sums, np.empty((1, 0, r1 - r0)))
            return sums[0].T

        return np.concatenate(in_threads(span, replicate_spans(n_boot)))
    step = max(1, (1 << 18) // max(rows.n, 1))  # replicates per block: 2 MB of multiplicities
    return np.concatenate(
        [rows.block(np.arange(first, min(first + step, n_boot))) @ X for first in range(0, n_boot, step)]
    )


# ---------------------------------------------------------------------------------------------
# One input (or group) in one mode


class InputAccumulator(InputState):
    """The binned family's state for one input (or group): one accumulator per binary problem of ``mode``."""

    kind = "binned_input"
    state_name = "binned input state"
    merge_rules = {"problems": "merge", "clinical": "merge", "ecce": "merge", "class_totals": "sum", "scores": "merge"}

    def __init__(
        self,
        *,
        edges: list | None = None,
        edges_method: str | None = None,
        **head: Any,
    ):
        super().__init__(**head)
        mode, n_classes, options = self.mode, self.n_classes, self.options
        self.edges_method = edges_method
        n_problems = n_classes if mode == "marginal" else 1
        if n_problems > 1:  # every class gets its own bins: together within the memory budget
            per_value = n_problems * BYTES_PER_BIN
            check_allocation(
                "n_bins",
                options.n_bins,
                float(options.n_bins) * per_value,
                f"the bin arrays of {n_problems} classes",
                most=max(memory_budget() // per_value, 1),
            )
        self.problems = [
            BinnedAccumulator(
                n_bins=options.n_bins,
                strategy=options.strategy,
                row_limit=options.row_limit,
                edges=None if edges is None else edges[k],
                moments=options.n_boot > 0,
            )
            for k in range(n_problems)
        ]
        self.class_totals = np.zeros(n_classes)
        self.scores = MulticlassScores(row_limit=options.row_limit) if self._has_scores else None

        self.clinical = [ClinicalAccumulator() for _ in range(n_problems)]
        # ECCE: exact from the rows the binned accumulators keep; its grid sums for beyond them
        self.ecce = [EcceAccumulator(None) for _ in range(n_problems)]

    @property
    def _has_scores(self) -> bool:
        return self.n_classes > 2 or self.mode == "marginal"

    def update(self, row_index, probs, labels, w=None, cells=None) -> "InputAccumulator":
        """Add rows. ``cells``: per binary problem, the sums of these rows' main and equal-width cells where the
        caller has made them already (:class:`calibcli.binned.accumulator.CellSums`, or None; compare's joint cells
        of two inputs); None: all summed here."""
        problems = binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=list(self.class_names))
        for problem, acc, clinical, ecce, given in zip(
            problems,
            self.problems,
            self.clinical,
            self.ecce,
            cells if cells is not None else [(None, None)] * len(problems),
            strict=True,
        ):
            acc.update(row_index, problem.z, problem.y, problem.sample_weight, given)
            clinical.update(row_index, problem.z, problem.y, problem.sample_weight)
            ecce.update(row_index, problem.z, problem.y, problem.sample_weight)
        if self.mode == "marginal":  # the prior class weights of the aggregate
            self.class_totals += np.bincount(labels, weights=w, minlength=self.n_classes)[: self.n_classes]
        if self.scores is not None:
            self.scores.update(row_index, probs, labels, w)
        return self

    @property
    def n_rows(self) -> int:
        return self.problems[0].n_rows

    def needs_second_pass(self) -> bool:
        """Quantile bins over more rows than are kept: edges from this pass, sums from a second one."""
        return any(p.needs_edges for p in self.problems)

    def for_second_pass(self) -> "InputAccumulator":
        """An empty accumulator for a second pass, with each problem's quantile edges from this pass."""
        fitted = [p.fitted_edges() for p in self.problems]
        return InputAccumulator(**self.head(), edges=[e for e, _ in fitted], edges_method=fitted[0][1])

    def result(self, progress=None, keep_replicates: bool = False) -> BinnedReport:
        """The report; ``keep_replicates`` keeps every problem's bootstrap replicates (a comparison's differences)."""
        return self.results(
            [self],
            progress=None if progress is None else lambda steps=1: [progress() for _ in range(steps)],
            keep_replicates=keep_replicates,
        )[0]

    @classmethod
    def results(cls, accs: list, progress=None, keep_replicates: bool = False, on_chunks=None) -> list[BinnedReport]:
        """The reports of many accumulators of one input's groups (the same options) at once: each problem's
        binned estimators and bootstrap for all groups together (:meth:`BinnedAccumulator.results`), then each
        group's clinical, ECCE and multiclass metrics. ``progress(steps)`` is told the resamples finished."""
        o = accs[0].options
        marginal = accs[0].mode == "marginal"
        keep = (marginal or keep_replicates) and o.n_boot > 0
        kept = [  # each problem's rows of each group, where they are all held
            [None if acc.problems[k].rows.dropped else acc.problems[k].rows.arrays() for acc in accs]
            for k in range(len(accs[0].problems))
        ]

        def others() -> tuple[list, list]:
            clinical = [  # Cox and ICI: every group's at once
                ClinicalAccumulator.results([acc.clinical[k] for acc in accs], alpha=o.alpha, rows=rows)
                for k, rows in enumerate(kept)
            ]
            ecce = [  # ECCE-MAD and ECCE-R: every group's statistics and p-values at once
                EcceAccumulator.results([acc.ecce[k] for acc in accs], rows, row_limit=o.row_limit)
                for k, rows in enumerate(kept)
            ]
            return clinical, ecce

        def binned() -> list:
            return [
                BinnedAccumulator.results(
                    [acc.problems[k] for acc in accs], o, keep_replicates=keep, progress=progress, on_chunks=on_chunks
                )
                for k in range(len(accs[0].problems))
            ]

        # the clinical and ECCE numbers (NumPy in this process) beside the binned bootstrap's threads
        (per_problem_clinical, per_problem_ecce), per_problem = alongside(others, binned)
        return [
            acc._report(
                [done[j] for done in per_problem],
                [done[j] for done in per_problem_clinical],
                [done[j] for done in per_problem_ecce],
            )
            for j, acc in enumerate(accs)
        ]

    def _report(
        self, binned: list[CalibrationResult], clinical: list[tuple[dict, dict]], ecce: list[tuple[EcceResult, dict]]
    ) -> BinnedReport:
        """The report of this input (or group) given its problems' binned results, clinical and ECCE metrics."""
        o = self.options
        marginal = self.mode == "marginal"
        names = [f"class {c}" for c in self.class_names] if marginal else [self.mode]
        results = [ProblemResult(names[k], k if marginal else None, r) for k, r in enumerate(binned)]
        # (the clinical metrics join each problem's)
        for r, (metrics, _), (stats, how) in zip(results, clinical, ecce, strict=True):
            r.result.metrics.update(metrics)
            r.result.metrics.update(ecce_metrics(stats, how))
        results = [
            ProblemResult(r.name, r.class_index, r.result, details, how)
            for r, (_, details), (_, how) in zip(results, clinical, ecce, strict=True)
        ]
        aggregate = weights = None
        notes = []
        if marginal:
            weights = class_weight_values(o.class_weights, self.class_totals)
            aggregate = _aggregate(results, weights, o.n_boot, o.alpha)
            aggregate.update(aggregate_clinical([m for m, _ in clinical], weights))
        if self.edges_method:
            notes.append(f"quantile edges from {self.edges_method}")
        scores = None if self.scores is None else self.scores.result(n_boot=o.n_boot, alpha=o.alpha, seed=o.seed)
        return BinnedReport(
            self.mode, results, aggregate, o.class_weights if marginal else None, weights, scores, tuple(notes)
        )


def _aggregate(results: list[ProblemResult], v: np.ndarray, n_boot: int, alpha: float) -> dict[str, Metric]:
    """The marginal aggregate of every metric that has a class rule in the registry (SPEC 1)."""
    out: dict[str, Metric] = {}
    per_bin = any("sufficient" in (r.result.metrics["ece_l1_plugin"].ci_method or "") for r in results)
    method = (
        None
        if not n_boot
        else (
            f"percentile Poisson bootstrap from per-bin sufficient statistics, {n_boot} resamples, "
            "classes resampled independently"
            if per_bin
            else f"percentile Poisson bootstrap, {n_boot} resamples, classes resampled jointly"
        )
    )
    for name, entry in REGISTRY.items():
        if entry.family != "binned" or entry.combine is None:
            continue
        base = entry.combine.of or name
        est = aggregate_over_classes(entry.combine, np.array([r.result.metrics[base].estimate for r in results]), v)
        lo = hi = None
        if n_boot:
            reps = aggregate_over_classes(
                entry.combine, np.array([(r.result.replicates or {})[base] for r in results]), v
            )
            lo, hi = percentile_interval(reps, alpha)
        out[name] = Metric(name, float(est), lo, hi, method, note=f"marginal aggregate {entry.combine.describe()}")
    return out


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
    class_weights: str = "uniform",
    progress=None,
) -> BinnedReport:
    """Every SPEC 2 estimator for validated ``labels`` and ``probs`` in ``mode``: the one-batch case of the pipeline."""
    n_classes = 2 if probs.ndim == 1 else probs.shape[1]
    names = tuple(class_names or [str(k) for k in range(n_classes)])
    options = Options(
        mode=mode,
        n_bins=n_bins,
        strategy=strategy,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        class_weights=class_weights,
        row_limit=max(len(labels), 1),
    )
    acc = InputAccumulator(mode=mode, n_classes=n_classes, class_names=names, options=options)
    acc.update(np.arange(len(labels)), probs, labels, sample_weight)
    return acc.result(progress=progress)


def multiclass_scores(labels, probs, *, sample_weight=None, n_boot=0, alpha=0.05, seed=0) -> dict[str, Metric]:
    """Multiclass Brier and log-loss with Poisson-bootstrap intervals (the one-batch case of
    :class:`MulticlassScores`)."""
    acc = MulticlassScores(row_limit=max(len(labels), 1))
    acc.update(np.arange(len(labels)), probs, labels, sample_weight)
    return acc.result(n_boot=n_boot, alpha=alpha, seed=seed)
