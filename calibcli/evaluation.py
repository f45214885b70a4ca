"""One evaluation pipeline: batches -> accumulators (per group, per binary problem) -> reports (SPEC 1, 2, 8).

- :class:`InputAccumulator` holds everything one input (or one group of it) needs for the binned
  family: one :class:`~calibcli.accumulators.binned.BinnedAccumulator` per binary problem of the mode
  (SPEC 1), the class totals for ``prior`` class weights, and the multiclass proper scores.
- :class:`Grouped` keys input accumulators by the ``--group-by`` values (SPEC 8 "Groups").
- :func:`run_local` is the local engine: it streams a dataset once (twice for quantile bins over
  more rows than are kept) and returns one finished :class:`BinnedReport` per entry.
- :func:`evaluate_binned` is the in-memory case: one batch of arrays.

Every accumulator here follows the contract of :mod:`calibcli.accumulators` (``update``, ``merge``,
``to_dict``/``from_dict``, ``result``), so a distributed engine can build them per fragment and merge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibcli.accumulators.binned import ROW_LIMIT, BinnedAccumulator
from calibcli.accumulators.rows import RowSample
from calibcli.errors import CalibcliError
from calibcli.estimators import LOG_LOSS_EPS, CalibrationResult, Metric
from calibcli.metrics import REGISTRY, aggregate_over_classes
from calibcli.modes import binary_problems, default_mode
from calibcli.resampling import Multiplicities, percentile_interval

STATE_VERSION = 1
#: More distinct groups than this is an error (SPEC 8).
MAX_GROUPS = 10_000


@dataclass(frozen=True)
class ProblemResult:
    name: str
    class_index: int | None
    result: CalibrationResult
    clinical: dict | None = None  # how the Cox and ICI metrics were made (calibcli.accumulators.clinical)


@dataclass(frozen=True)
class BinnedReport:
    """Per-problem results, the marginal aggregate and the multiclass proper scores."""

    mode: str
    problems: list[ProblemResult]
    aggregate: dict[str, Metric] | None
    class_weight_scheme: str | None
    class_weight_values: np.ndarray | None
    multiclass_scores: dict[str, Metric] | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """The report entry's results: mode, problems, aggregate and multiclass scores (SPEC 7)."""
        out = {"mode": self.mode,
               "problems": [{"name": p.name, "class_index": p.class_index, **p.result.to_dict(),
                             **({"clinical": p.clinical} if p.clinical else {})} for p in self.problems]}
        if self.aggregate is not None:
            out["aggregate"] = {
                "class_weights": self.class_weight_scheme,
                "class_weight_values": self.class_weight_values.tolist(),
                "metrics": {k: m.to_dict() for k, m in self.aggregate.items()},
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


class MulticlassScores:
    """Multiclass Brier ``mean ||P_i - e_{c_i}||^2`` and log-loss ``mean -log P_{i,c_i}`` (SPEC 2.3), streamed.

    For a single probability column (binary) the vector is ``(1 - z, z)``, so the Brier score is twice the
    binary one. Intervals: the per-row Poisson bootstrap on the kept rows (the same multiplicities as
    the binned metrics), or beyond ``row_limit`` rows the normal law of the sums with their exact
    Poisson-bootstrap moments (a ratio of sums of many rows).
    """

    kind = "multiclass_scores"
    _COLUMNS = ("w", "wb", "wl", "w2", "w2b", "w2l", "w2bb", "w2ll", "w2bl")

    def __init__(self, *, row_limit: int = ROW_LIMIT):
        self.sums = np.zeros(len(self._COLUMNS))
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
        b, l = values[:, 0], values[:, 1]
        ww = np.ones(len(b)) if w is None else w
        w2 = ww * ww
        self.sums += [ww.sum(), ww @ b, ww @ l, w2.sum(), w2 @ b, w2 @ l, w2 @ (b * b), w2 @ (l * l), w2 @ (b * l)]
        self.rows.update(row_index, values, labels, w)
        return self

    def merge(self, other: "MulticlassScores") -> "MulticlassScores":
        self.sums += other.sums
        self.rows.merge(other.rows)
        return self

    def to_dict(self) -> dict:
        return {"kind": self.kind, "version": STATE_VERSION, "sums": self.sums.tolist(), "rows": self.rows.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> "MulticlassScores":
        out = cls()
        out.sums = np.asarray(d["sums"], dtype=np.float64)
        out.rows = RowSample.from_dict(d["rows"])
        return out

    def result(self, *, n_boot: int, alpha: float, seed: int) -> dict[str, Metric]:
        s = dict(zip(self._COLUMNS, self.sums))
        est = {"brier_score_multiclass": s["wb"] / s["w"], "log_loss_multiclass": s["wl"] / s["w"]}
        ci = {k: (None, None) for k in est}
        method = None
        if n_boot:
            if not self.rows.dropped:
                row_index, values, _, w = self.rows.arrays()
                X = np.column_stack([np.ones(len(values)) if w is None else w, values * (1.0 if w is None else w[:, None])])
                rows = Multiplicities(seed, row_index)
                reps = np.array([rows.replicate(r) @ X for r in range(n_boot)])
                method = f"percentile Poisson bootstrap over rows, {n_boot} resamples"
            else:
                rng = np.random.Generator(np.random.Philox(key=[int(seed) & 0xFFFFFFFFFFFFFFFF, 0x73636F726573]))  # "scores"
                mean = np.array([s["w"], s["wb"], s["wl"]])
                cov = np.array([[s["w2"], s["w2b"], s["w2l"]], [s["w2b"], s["w2bb"], s["w2bl"]], [s["w2l"], s["w2bl"], s["w2ll"]]])
                reps = rng.multivariate_normal(mean, cov, size=n_boot, method="eigh")
                method = f"percentile Poisson bootstrap from the sums' moments (normal), {n_boot} resamples"
            ci = {
                "brier_score_multiclass": percentile_interval(reps[:, 1] / reps[:, 0], alpha),
                "log_loss_multiclass": percentile_interval(reps[:, 2] / reps[:, 0], alpha),
            }
        return {
            k: Metric(k, float(v), ci[k][0], ci[k][1], method, note=f"log-loss eps={LOG_LOSS_EPS:g}" if "log" in k else None)
            for k, v in est.items()
        }


# ---------------------------------------------------------------------------------------------
# One input (or group) in one mode


@dataclass(frozen=True)
class BinnedOptions:
    """What the binned family computes; validated once (:func:`calibcli.validation.check_options`)."""

    n_bins: int = 15
    strategy: str = "uniform"
    n_boot: int = 0
    alpha: float = 0.05
    seed: int = 0
    class_weights: str = "uniform"
    row_limit: int = ROW_LIMIT


class InputAccumulator:
    """The binned family's state for one input (or group): one accumulator per binary problem of ``mode``."""

    kind = "binned_input"

    def __init__(self, *, mode: str, n_classes: int, class_names: tuple[str, ...], options: BinnedOptions,
                 edges: list | None = None, edges_method: str | None = None):
        self.mode, self.n_classes, self.class_names, self.options = mode, n_classes, tuple(class_names), options
        self.edges_method = edges_method
        n_problems = n_classes if mode == "marginal" else 1
        if n_problems > 1:  # every class gets its own bins: together within the memory budget
            from calibcli.validation import BYTES_PER_BIN, check_allocation, memory_budget

            per_value = n_problems * BYTES_PER_BIN
            check_allocation("n_bins", options.n_bins, float(options.n_bins) * per_value,
                             f"the bin arrays of {n_problems} classes", most=max(memory_budget() // per_value, 1))
        self.problems = [
            BinnedAccumulator(n_bins=options.n_bins, strategy=options.strategy, row_limit=options.row_limit,
                              edges=None if edges is None else edges[k], moments=options.n_boot > 0)
            for k in range(n_problems)
        ]
        self.class_totals = np.zeros(n_classes)
        self.scores = MulticlassScores(row_limit=options.row_limit) if self._has_scores else None
        from calibcli.accumulators.clinical import ClinicalAccumulator

        self.clinical = [ClinicalAccumulator() for _ in range(n_problems)]

    @property
    def _has_scores(self) -> bool:
        return self.n_classes > 2 or self.mode == "marginal"

    def update(self, row_index, probs, labels, w=None) -> "InputAccumulator":
        for problem, acc, clinical in zip(binary_problems(labels, probs, mode=self.mode, sample_weight=w,
                                                          class_names=list(self.class_names)), self.problems, self.clinical):
            acc.update(row_index, problem.z, problem.y, problem.sample_weight)
            clinical.update(row_index, problem.z, problem.y, problem.sample_weight)
        if self.mode == "marginal":  # the prior class weights of the aggregate
            self.class_totals += np.bincount(labels, weights=w, minlength=self.n_classes)[: self.n_classes]
        if self.scores is not None:
            self.scores.update(row_index, probs, labels, w)
        return self

    def merge(self, other: "InputAccumulator") -> "InputAccumulator":
        for mine, theirs in zip(self.problems, other.problems):
            mine.merge(theirs)
        for mine, theirs in zip(self.clinical, other.clinical):
            mine.merge(theirs)
        self.class_totals += other.class_totals
        if self.scores is not None:
            self.scores.merge(other.scores)
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
        return InputAccumulator(mode=self.mode, n_classes=self.n_classes, class_names=self.class_names,
                                options=self.options, edges=[e for e, _ in fitted], edges_method=fitted[0][1])

    def to_dict(self) -> dict:
        o = self.options
        return {
            "kind": self.kind, "version": STATE_VERSION, "mode": self.mode, "n_classes": self.n_classes,
            "class_names": list(self.class_names), "edges_method": self.edges_method,
            "options": {"n_bins": o.n_bins, "strategy": o.strategy, "n_boot": o.n_boot, "alpha": o.alpha, "seed": o.seed,
                        "class_weights": o.class_weights, "row_limit": o.row_limit},
            "problems": [p.to_dict() for p in self.problems],
            "class_totals": self.class_totals.tolist(),
            "scores": None if self.scores is None else self.scores.to_dict(),
            "clinical": [c.to_dict() for c in self.clinical],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "InputAccumulator":
        if d.get("kind") != cls.kind or d.get("version") != STATE_VERSION:
            raise ValueError(f"not a binned input state of version {STATE_VERSION}")
        out = cls(mode=d["mode"], n_classes=d["n_classes"], class_names=tuple(d["class_names"]),
                  options=BinnedOptions(**d["options"]), edges_method=d["edges_method"])
        out.problems = [BinnedAccumulator.from_dict(p) for p in d["problems"]]
        out.class_totals = np.asarray(d["class_totals"], dtype=np.float64)
        out.scores = None if d["scores"] is None else MulticlassScores.from_dict(d["scores"])
        from calibcli.accumulators.clinical import ClinicalAccumulator

        out.clinical = [ClinicalAccumulator.from_dict(c) for c in d["clinical"]]
        return out

    def result(self, progress=None, keep_replicates: bool = False) -> BinnedReport:
        """The report; ``keep_replicates`` keeps every problem's bootstrap replicates (a comparison's differences)."""
        o = self.options
        marginal = self.mode == "marginal"
        keep = (marginal or keep_replicates) and o.n_boot > 0
        names = [f"class {c}" for c in self.class_names] if marginal else [self.mode]
        results = [
            ProblemResult(names[k], k if marginal else None,
                          acc.result(n_boot=o.n_boot, alpha=o.alpha, seed=o.seed, keep_replicates=keep, progress=progress))
            for k, acc in enumerate(self.problems)
        ]
        from calibcli.accumulators.clinical import aggregate_clinical

        clinical = [c.result(alpha=o.alpha, rows=None if acc.rows.dropped else acc.rows.arrays())  # Cox and ICI
                    for c, acc in zip(self.clinical, self.problems)]  # metrics join each problem's
        for r, (metrics, _) in zip(results, clinical):
            r.result.metrics.update(metrics)
        results = [ProblemResult(r.name, r.class_index, r.result, details) for r, (_, details) in zip(results, clinical)]
        aggregate = weights = None
        notes = []
        if marginal:
            weights = class_weight_values(o.class_weights, self.class_totals)
            aggregate = _aggregate(results, weights, o.n_boot, o.alpha)
            aggregate.update(aggregate_clinical([m for m, _ in clinical], weights))
        if self.edges_method:
            notes.append(f"quantile edges from {self.edges_method}")
        scores = None if self.scores is None else self.scores.result(n_boot=o.n_boot, alpha=o.alpha, seed=o.seed)
        return BinnedReport(self.mode, results, aggregate, o.class_weights if marginal else None, weights, scores, tuple(notes))


def class_weight_values(scheme: str, class_totals: np.ndarray) -> np.ndarray:
    """The ``v_k`` of the marginal aggregate: ``1/K`` (uniform) or the class frequency (prior, seed 001)."""
    if scheme == "uniform":
        return np.full(len(class_totals), 1.0 / len(class_totals))
    return class_totals / class_totals.sum()


def _aggregate(results: list[ProblemResult], v: np.ndarray, n_boot: int, alpha: float) -> dict[str, Metric]:
    """The marginal aggregate of every metric that has a class rule in the registry (SPEC 1)."""
    out: dict[str, Metric] = {}
    per_bin = any("sufficient" in (r.result.metrics["ece_l1_plugin"].ci_method or "") for r in results)
    method = None if not n_boot else (
        f"percentile Poisson bootstrap from per-bin sufficient statistics, {n_boot} resamples, classes resampled independently"
        if per_bin else f"percentile Poisson bootstrap, {n_boot} resamples, classes resampled jointly")
    for name, entry in REGISTRY.items():
        if entry.family != "binned" or entry.combine is None:
            continue
        base = entry.combine.of or name
        est = aggregate_over_classes(entry.combine, np.array([r.result.metrics[base].estimate for r in results]), v)
        lo = hi = None
        if n_boot:
            reps = aggregate_over_classes(entry.combine, np.array([r.result.replicates[base] for r in results]), v)
            lo, hi = percentile_interval(reps, alpha)
        out[name] = Metric(name, float(est), lo, hi, method, note=f"marginal aggregate {entry.combine.describe()}")
    return out


# ---------------------------------------------------------------------------------------------
# Groups


def _group_codes(columns: tuple[np.ndarray, ...]) -> tuple[np.ndarray, list[tuple]]:
    """Row codes ``0..G-1`` of the distinct value combinations, and those combinations."""
    codes = np.zeros(len(columns[0]), dtype=np.int64)
    levels_per_column = []
    for col in columns:
        levels, inverse = np.unique(np.asarray(col), return_inverse=True)
        codes = codes * len(levels) + inverse
        levels_per_column.append(levels)
    distinct, inverse = np.unique(codes, return_inverse=True)
    keys = []
    for code in distinct:
        key = []
        for levels in reversed(levels_per_column):
            code, j = divmod(int(code), len(levels))
            key.append(levels[j].item() if hasattr(levels[j], "item") else levels[j])
        keys.append(tuple(reversed(key)))
    return inverse.reshape(-1), keys


class Grouped:
    """Accumulators keyed by the values of the group columns; each group is its own input (SPEC 8).

    ``factory()`` makes a new group's accumulator (``factory(key)`` with ``keyed=True``: a second pass
    starts each group from its own template). Keys are tuples of plain values (int, float, str, bool).
    """

    kind = "grouped"

    def __init__(self, factory, *, max_groups: int = MAX_GROUPS, keyed: bool = False):
        self.factory = factory
        self.max_groups = max_groups
        self.keyed = keyed
        self.groups: dict[tuple, object] = {}

    def update(self, groups: tuple[np.ndarray, ...], row_index, probs, labels, w=None) -> "Grouped":
        codes, keys = _group_codes(groups)
        if len(keys) == 1:
            self._get(keys[0]).update(row_index, probs, labels, w)
            return self
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
        for j, key in enumerate(keys):
            sel = order[bounds[j]: bounds[j + 1]]
            self._get(key).update(row_index[sel], probs[sel], labels[sel], None if w is None else w[sel])
        return self

    def _get(self, key: tuple):
        if key not in self.groups:
            if len(self.groups) >= self.max_groups:
                raise CalibcliError(
                    f"more than {self.max_groups} distinct groups (at most {self.max_groups} are reported, SPEC 8): "
                    f"group by fewer or coarser columns"
                )
            self.groups[key] = self.factory(key) if self.keyed else self.factory()
        return self.groups[key]

    def merge(self, other: "Grouped") -> "Grouped":
        for key, acc in other.groups.items():
            if key in self.groups:
                self.groups[key].merge(acc)
            elif len(self.groups) >= self.max_groups:
                self._get(key)  # raises: too many groups
            else:
                self.groups[key] = acc
        return self

    def to_dict(self) -> dict:
        """Every group's state, in order of first appearance: ``{"groups": [[key, state], ...]}`` (a key is
        the list of the group's values; None for the whole input of an ungrouped run)."""
        return {"kind": self.kind, "version": STATE_VERSION, "max_groups": self.max_groups,
                "groups": [[None if key is None else list(key), acc.to_dict()] for key, acc in self.groups.items()]}

    @classmethod
    def from_dict(cls, d: dict, load, factory=None, *, keyed: bool = False) -> "Grouped":
        """The groups of :meth:`to_dict`, each state read back with ``load`` (an accumulator class's
        ``from_dict``)."""
        if d.get("kind") != cls.kind or d.get("version") != STATE_VERSION:
            raise ValueError(f"not a grouped state of version {STATE_VERSION}")
        out = cls(factory, max_groups=d["max_groups"], keyed=keyed)
        out.groups = {None if key is None else tuple(key): load(state) for key, state in d["groups"]}
        return out


# ---------------------------------------------------------------------------------------------
# The local engine and the in-memory case


# ---------------------------------------------------------------------------------------------
# The smooth family (SPEC 3)


@dataclass(frozen=True)
class SmoothOptions:
    """What the smooth family computes: SmoothECE at the fixed point (``sigma`` None) or at ``sigma``."""

    sigma: float | None = None
    n_boot: int = 0
    alpha: float = 0.05
    seed: int = 0
    class_weights: str = "uniform"
    row_limit: int = ROW_LIMIT

    @property
    def metric(self) -> str:
        return "smece" if self.sigma is None else "smece_at_sigma"


@dataclass(frozen=True)
class SmoothProblemResult:
    name: str
    class_index: int | None
    result: object  # calibcli.smooth.SmoothECEResult
    metric: str

    @property
    def metrics(self) -> dict[str, Metric]:
        r = self.result
        method = None if r.ci_method is None else (
            r.ci_method + (", bandwidth re-solved on each" if r.sigma_is_fixed_point else ", fixed sigma"))
        return {self.metric: Metric(self.metric, float(r.smece), r.ci_low, r.ci_high, method)}

    def to_dict(self) -> dict:
        r = self.result
        return {
            "name": self.name, "class_index": self.class_index, "n": r.n, "weight_total": r.weight_total,
            "sigma": r.sigma, "sigma_is_fixed_point": r.sigma_is_fixed_point, "fixed_point_gap": r.fixed_point_gap,
            "grid_cells": r.grid_size, "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
        }


@dataclass(frozen=True)
class SmoothReport:
    mode: str
    problems: list[SmoothProblemResult]
    aggregate: dict[str, Metric] | None
    class_weight_scheme: str | None
    class_weight_values: np.ndarray | None

    def to_dict(self) -> dict:
        out = {"mode": self.mode, "problems": [p.to_dict() for p in self.problems]}
        if self.aggregate is not None:
            out["aggregate"] = {"class_weights": self.class_weight_scheme,
                                "class_weight_values": self.class_weight_values.tolist(),
                                "metrics": {k: m.to_dict() for k, m in self.aggregate.items()}}
        return out

    def headline(self) -> dict[str, Metric]:
        return dict(self.aggregate) if self.aggregate is not None else dict(self.problems[0].metrics)


class SmoothInputAccumulator:
    """The smooth family's state for one input (or group): one SmoothAccumulator per binary problem."""

    kind = "smooth_input"

    def __init__(self, *, mode: str, n_classes: int, class_names: tuple[str, ...], options: SmoothOptions,
                 grids: list[int] | None = None):
        from calibcli.accumulators.smooth import SmoothAccumulator
        from calibcli.smooth import STATS_GRID

        self.mode, self.n_classes, self.class_names, self.options = mode, n_classes, tuple(class_names), options
        n_problems = n_classes if mode == "marginal" else 1
        grids = grids or [STATS_GRID] * n_problems
        self.problems = [SmoothAccumulator(row_limit=options.row_limit, seed=options.seed, n_cells=g) for g in grids]
        self.class_totals = np.zeros(n_classes)
        self._results = None

    def update(self, row_index, probs, labels, w=None) -> "SmoothInputAccumulator":
        for problem, acc in zip(binary_problems(labels, probs, mode=self.mode, sample_weight=w,
                                                class_names=list(self.class_names)), self.problems):
            acc.update(row_index, problem.z, problem.y, problem.sample_weight)
        self.class_totals += np.bincount(labels, weights=w, minlength=self.n_classes)[: self.n_classes]
        self._results = None
        return self

    def merge(self, other: "SmoothInputAccumulator") -> "SmoothInputAccumulator":
        for mine, theirs in zip(self.problems, other.problems):
            mine.merge(theirs)
        self.class_totals += other.class_totals
        self._results = None
        return self

    @property
    def n_rows(self) -> int:
        return self.problems[0].n_rows

    def _finish(self, progress=None):
        if self._results is None:
            o = self.options
            self._results = [acc.result(sigma=o.sigma, n_boot=o.n_boot, alpha=o.alpha, seed=o.seed, progress=progress)
                             for acc in self.problems]
        return self._results

    def needs_second_pass(self) -> bool:
        """A bandwidth below what the first pass's grid resolves, without the rows at hand (SPEC 8)."""
        return any(r.needs_finer_grid for r in self._finish())

    def for_second_pass(self) -> "SmoothInputAccumulator":
        grids = [r.finer_grid if r.needs_finer_grid else acc.n_cells for r, acc in zip(self._finish(), self.problems)]
        return SmoothInputAccumulator(mode=self.mode, n_classes=self.n_classes, class_names=self.class_names,
                                      options=self.options, grids=grids)

    def to_dict(self) -> dict:
        o = self.options
        return {"kind": self.kind, "version": STATE_VERSION, "mode": self.mode, "n_classes": self.n_classes,
                "class_names": list(self.class_names),
                "options": {"sigma": o.sigma, "n_boot": o.n_boot, "alpha": o.alpha, "seed": o.seed,
                            "class_weights": o.class_weights, "row_limit": o.row_limit},
                "problems": [p.to_dict() for p in self.problems], "class_totals": self.class_totals.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "SmoothInputAccumulator":
        from calibcli.accumulators.smooth import SmoothAccumulator

        if d.get("kind") != cls.kind or d.get("version") != STATE_VERSION:
            raise ValueError(f"not a smooth input state of version {STATE_VERSION}")
        problems = [SmoothAccumulator.from_dict(p) for p in d["problems"]]
        out = cls(mode=d["mode"], n_classes=d["n_classes"], class_names=tuple(d["class_names"]),
                  options=SmoothOptions(**d["options"]), grids=[p.n_cells for p in problems])
        out.problems = problems
        out.class_totals = np.asarray(d["class_totals"], dtype=np.float64)
        return out

    def result(self, progress=None) -> SmoothReport:
        o = self.options
        marginal = self.mode == "marginal"
        names = [f"class {c}" for c in self.class_names] if marginal else [self.mode]
        if progress is not None and self._results is None:
            self._finish(progress)
        results = [SmoothProblemResult(names[k], k if marginal else None, r, o.metric) for k, r in enumerate(self._finish())]
        aggregate = weights = None
        if marginal:
            weights = class_weight_values(o.class_weights, self.class_totals)
            rule = REGISTRY[o.metric].combine
            estimate = float(aggregate_over_classes(rule, np.array([r.result.smece for r in results]), weights))
            low = high = method = None
            if o.n_boot:
                reps = aggregate_over_classes(rule, np.stack([r.result.replicates for r in results]), weights)
                low, high = percentile_interval(reps, o.alpha)
                per_row = all("over rows" in (r.result.ci_method or "") for r in results)
                method = f"{results[0].result.ci_method}, classes resampled {'jointly' if per_row else 'independently'}"
            aggregate = {o.metric: Metric(o.metric, estimate, low, high, method, note=f"marginal aggregate {rule.describe()}")}
        return SmoothReport(self.mode, results, aggregate, o.class_weights if marginal else None, weights)


def run_local(stream, new) -> list[tuple[dict | None, object]]:
    """Stream ``stream`` into input accumulators made by ``new()``: ``(group values or None, accumulator)`` pairs.

    One pass; a second one when an accumulator asks for it (quantile edges or a finer smoothing grid
    fixed by the first pass, SPEC 8). Groups come in sorted order.
    """
    state = _stream_into(stream.batches(), stream.group_by, {}, lambda key: new())
    if any(acc.needs_second_pass() for acc in state.values()):
        second = _stream_into(stream.batches(), stream.group_by, for_second_pass(state), None)
        state = after_second_pass(state, second)
    return _entries(stream.group_by, state)


def for_second_pass(state: dict) -> dict:
    """Every group's second-pass state (group key -> accumulator), once some group asked for a second pass.

    Every group gets one (``for_second_pass()``), as one family's command sums all its groups the same way.
    An accumulator class may decide for all the groups at once (``second_pass_of(state)``): a
    :class:`~calibcli.accumulators.composite.Composite` re-runs, in every group, the members that asked in
    some group, and no other (so each member gets the passes its own command gives it)."""
    accs = list(state.values())
    joint = getattr(type(accs[0]), "second_pass_of", None) if accs else None
    if joint is not None:
        return joint(state)
    return {key: acc.for_second_pass() for key, acc in state.items()}


def after_second_pass(first: dict, second: dict) -> dict:
    """The finished states of a two-pass run: per group, the second pass's state, or what the first-pass
    state makes of it (``after_second_pass(second)``, when it has one: a :class:`~calibcli.accumulators.
    composite.Composite` keeps the members that needed no second pass from the first)."""
    out = {}
    for key, acc in second.items():
        join = getattr(first.get(key), "after_second_pass", None)
        out[key] = acc if join is None else join(acc)
    return out


def _entries(group_by: tuple[str, ...], state: dict) -> list[tuple[dict | None, object]]:
    """``(group values or None, accumulator)`` pairs, groups in sorted order (numbers before text)."""
    keys = sorted(state, key=lambda key: () if key is None else tuple((type(v).__name__, v) for v in key))
    return [(None if key is None else dict(zip(group_by, key)), state[key]) for key in keys]


class _Failed:
    def __init__(self, exc: BaseException):
        self.exc = exc


def prefetched(batches):
    """``batches``, the next one read in a background thread while this one is reduced (pyarrow releases
    the GIL while it reads and decodes). At most two batches are in memory: the reader starts batch i + 1
    only once batch i has been handed over. Errors are raised here, in order; when the consumer stops
    early, the reader stops before its next batch.

    The reader thread never outlives this generator: it is not a daemon, closing the generator (its
    consumer must close it, :func:`_stream_into` does) waits for it, and it closes the batches' source
    (pyarrow's reader) itself. A daemon thread still inside pyarrow when the interpreter exits is
    stopped by the interpreter mid-call, which aborts the process (SIGABRT) now and then: a consumer
    that raised (a bad option found at its first batch) while the reader was reading ahead did so."""
    import queue
    import threading

    items: queue.Queue = queue.Queue()
    may_read = threading.Semaphore(1)
    stop = threading.Event()
    done = object()

    def read() -> None:
        source = iter(batches)
        try:
            while True:
                while not may_read.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                batch = next(source, done)
                items.put(batch)
                if batch is done:
                    return
                del batch
        except BaseException as exc:  # handed to the consumer, which raises it
            items.put(_Failed(exc))
        finally:  # let go of the file in this thread, whichever way the reading ended
            close = getattr(source, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # the reading already failed or stopped; nothing more to report
                    pass

    reader = threading.Thread(target=read, name="calibcli-reader", daemon=False)
    reader.start()
    try:
        while True:
            item = items.get()
            if item is done:
                return
            if isinstance(item, _Failed):
                raise item.exc
            may_read.release()  # read the next batch while this one is reduced
            yield item
            del item
    finally:
        stop.set()
        reader.join()


def _stream_into(batches, group_by: tuple[str, ...], state: dict, new) -> dict:
    """One pass over ``batches`` into ``state`` (group key -> accumulator; key None without groups);
    ``new(key)`` makes the accumulator of a key not yet in ``state``. The next batch is read while this
    one is reduced (:func:`prefetched`)."""
    batches = prefetched(batches)
    try:
        if group_by:
            grouped = Grouped(new, keyed=True)
            grouped.groups = state
            for batch in batches:
                grouped.update(batch.groups, batch.row_index, batch.probs, batch.labels, batch.sample_weight)
                del batch  # the reader can free it while it reads the next one
            return grouped.groups
        acc = state.get(None)
        for batch in batches:
            if acc is None:
                acc = new(None)
            acc.update(batch.row_index, batch.probs, batch.labels, batch.sample_weight)
            del batch  # the reader can free it while it reads the next one
        return {} if acc is None else {None: acc}
    finally:  # an error here stops the reader thread now, not when the traceback is freed (at exit)
        batches.close()


# ---------------------------------------------------------------------------------------------
# Fragments: the pipeline as independent tasks (the Dask engine; SPEC 8 "Engines")


def run_fragment(fragments, kind, first: dict | None = None, second: dict | None = None) -> dict:
    """Read one fragment, or a run of consecutive fragments (:func:`pack_fragments`), into input
    accumulators of class ``kind``: the task a distributed engine runs on a worker (only the fragments'
    paths and options travel; the rows are read where the task runs). The fragments' batches go through
    the same accumulators, one after the other, as in the local engine.

    First pass: every group starts from ``first``, an empty accumulator's ``to_dict()``. Second pass:
    each group starts from its own template in ``second`` (group key -> ``for_second_pass().to_dict()``
    of the merged first pass). Returns ``{"counts": RowCounts.to_dict(), "state": Grouped.to_dict()}``
    (the groups this fragment has rows of; key None without groups). Pure: the same fragment gives the
    same document, so a task lost with its worker can run again anywhere.
    """
    from calibcli.io import RowCounts
    from calibcli.io.sources import Fragment

    if second is not None:
        def new(key):
            return kind.from_dict(second[key])
    else:
        def new(key):
            return kind.from_dict(first)
    fragments = (fragments,) if isinstance(fragments, Fragment) else tuple(fragments)
    counts = RowCounts()
    grouped = Grouped(new, keyed=True)
    batches = (batch for fragment in fragments for batch in fragment.batches(counts))
    grouped.groups = _stream_into(batches, fragments[0].plan.group_by, {}, new)
    return {"counts": counts.to_dict(), "state": grouped.to_dict()}


#: Rows of a distributed engine's task at most (unless one fragment has more): about half a second of
#: ``ece --n-boot 1000`` on one core, so that per-task costs (the scheduler, a state sent and merged,
#: the read-ahead thread started) stay a few percent.
MAX_TASK_ROWS = 2**23
#: Tasks per worker: enough that a worker slower than the others (a shared machine) leaves little of
#: the run to wait for at the end, few enough that per-task costs do not add up.
TASKS_PER_WORKER = 12


def task_rows(fragments, workers: int) -> int:
    """The rows a task gets by default: the dataset's rows over ``TASKS_PER_WORKER`` tasks per worker,
    at most :data:`MAX_TASK_ROWS`."""
    total = sum(f.n_rows or 0 for f in fragments)
    return max(1, min(MAX_TASK_ROWS, -(-total // (TASKS_PER_WORKER * max(1, workers)))))


def pack_fragments(fragments, rows: int) -> list[tuple]:
    """Consecutive fragments in runs of at most ``rows`` rows (a larger fragment, or one of unknown
    size, alone): the tasks of a distributed engine. Merging is associative, so the runs change no
    result beyond float rounding (SPEC 8: 1e-12)."""
    tasks: list[tuple] = []
    current: list = []
    held = 0
    for fragment in fragments:
        n = fragment.n_rows if fragment.n_rows is not None else rows
        if current and held + n > rows:
            tasks.append(tuple(current))
            current, held = [], 0
        current.append(fragment)
        held += n
    if current:
        tasks.append(tuple(current))
    return tasks


def run_fragments(stream, new, map_fragments) -> tuple[list[tuple[dict | None, object]], object]:
    """The pipeline over ``stream.fragments()``: the same entries as :func:`run_local`, and the merged
    :class:`~calibcli.io.RowCounts` of the first pass (for :meth:`Stream.describe`).

    ``map_fragments(fragments, kind, first=..., second=...)`` runs :func:`run_fragment` on every fragment
    (anywhere: in this process, on a cluster) and yields the documents in fragment order, raising a
    fragment's error when its turn comes (so the first bad fragment in row order is the one reported,
    as locally). States are merged here in fragment order, then the dataset is checked as a whole
    (:meth:`Stream.check_counts`), then a second pass runs when an accumulator asks for it.
    """
    fragments, unreadable = _fragments(stream)
    template = new()
    kind = type(template)
    state, counts = _merge_documents(map_fragments(fragments, kind, first=template.to_dict()), kind)
    if unreadable is not None:  # the files before it were fine: now it is its turn, as locally
        raise unreadable
    stream.check_counts(counts)
    if any(acc.needs_second_pass() for acc in state.values()):
        second = {key: acc.to_dict() for key, acc in for_second_pass(state).items()}
        state = after_second_pass(state, _merge_documents(map_fragments(fragments, kind, second=second), kind)[0])
    return _entries(stream.group_by, state), counts


def _fragments(stream) -> tuple[list, CalibcliError | None]:
    """The stream's fragments; when a file's metadata cannot be read, the fragments of the files before
    it and the error, to raise once those have been read (the local engine reads files in order, so a bad
    row in an earlier file is the error it reports)."""
    try:
        return stream.fragments(), None
    except CalibcliError as exc:
        error = exc
    from calibcli.io.sources import Stream

    files = stream._files  # (the per-file listing of the stream; see Stream.fragments)
    for j in range(len(files)):
        try:
            Stream(stream.dataset, stream.plan, files[j: j + 1]).fragments()
        except CalibcliError:
            return (Stream(stream.dataset, stream.plan, files[:j]).fragments() if j else []), error
    return [], error


def _merge_documents(documents, kind) -> tuple[dict, object]:
    """Merge :func:`run_fragment` documents, in the order given: (group key -> accumulator, RowCounts)."""
    from calibcli.io import RowCounts

    counts = RowCounts()
    merged = Grouped(None)
    for doc in documents:
        counts = counts.merge(RowCounts.from_dict(doc["counts"]))
        merged.merge(Grouped.from_dict(doc["state"], kind.from_dict))
    return merged.groups, counts


def map_in_process(fragments, kind, *, first=None, second=None):
    """:func:`run_fragment` on each fragment in turn, in this process (the reference for an engine's map)."""
    for fragment in fragments:
        yield run_fragment(fragment, kind, first, second)


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
    """Every SPEC 2 estimator for validated ``labels`` and ``probs`` in ``mode``: the one-batch case of the pipeline."""
    n_classes = 2 if probs.ndim == 1 else probs.shape[1]
    names = tuple(class_names or [str(k) for k in range(n_classes)])
    options = BinnedOptions(n_bins=n_bins, strategy=strategy, n_boot=n_boot, alpha=alpha, seed=seed,
                            class_weights=class_weight_scheme, row_limit=max(len(labels), 1))
    acc = InputAccumulator(mode=mode, n_classes=n_classes, class_names=names, options=options)
    acc.update(np.arange(len(labels)), probs, labels, sample_weight)
    return acc.result(progress=progress)


def multiclass_scores(labels, probs, *, sample_weight=None, n_boot=0, alpha=0.05, seed=0) -> dict[str, Metric]:
    """Multiclass Brier and log-loss with Poisson-bootstrap intervals (the one-batch case of :class:`MulticlassScores`)."""
    acc = MulticlassScores(row_limit=max(len(labels), 1))
    acc.update(np.arange(len(labels)), probs, labels, sample_weight)
    return acc.result(n_boot=n_boot, alpha=alpha, seed=seed)
