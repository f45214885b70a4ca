"""The diagram family's accumulator (SPEC 6, 8): one input (or group), streamed, with a binned and a smooth
accumulator per binary problem; its report gives the curves :mod:`calibcli.diagram.plot` draws
(:func:`~calibcli.diagram.data.prepare_binned` and :func:`~calibcli.diagram.data.prepare_smooth` are its one-batch
case).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import calibcli.smooth.estimator
from calibcli.binned.accumulator import BinnedAccumulator
from calibcli.binned.estimators import CalibrationResult
from calibcli.core import cancel
from calibcli.core.accumulator import InputState
from calibcli.core.modes import binary_problems
from calibcli.diagram.data import (
    DEFAULT_BAND,
    BinnedDiagramData,
    SmoothDiagramData,
    binned_data_from_result,
    smooth_data_from_result,
)
from calibcli.smooth.accumulator import SmoothAccumulator


@dataclass(frozen=True)
class DiagramProblem:
    """The finished statistics of one binary problem: the binned and / or the smooth result."""

    name: str
    class_index: int | None
    binned: CalibrationResult | None
    smooth: calibcli.smooth.estimator.SmoothECEResult | None  # with its curve

    @property
    def n(self) -> int:
        drawn = self.binned or self.smooth
        assert drawn is not None  # (a diagram draws at least one kind)
        return drawn.n


@dataclass(frozen=True)
class DiagramCurve:
    """One curve of a figure: one binary problem of one input (or group), its binned and / or smooth data."""

    name: str
    problem: str
    class_index: int | None
    n: int
    binned: BinnedDiagramData | None = None
    smooth: SmoothDiagramData | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "problem": self.problem, "class_index": self.class_index, "n": self.n}
        if self.binned is not None:
            out["binned"] = self.binned.to_dict()
        if self.smooth is not None:
            out["smooth"] = self.smooth.to_dict()
        return out


@dataclass(frozen=True)
class DiagramReport:
    """What :meth:`DiagramInputAccumulator.result` returns: the mode and one result per problem drawn."""

    mode: str
    problems: list[DiagramProblem]
    notes: tuple[str, ...] = ()
    band: str = DEFAULT_BAND

    def curves(self, name: str, *, legend: str | None = None) -> list[DiagramCurve]:
        """One curve per problem, named ``name`` in the report and ``legend`` (default ``name``) on the figure."""
        legend = name if legend is None else legend
        return [
            DiagramCurve(
                name=name,
                problem=p.name,
                class_index=p.class_index,
                n=p.n,
                binned=None
                if p.binned is None
                else binned_data_from_result(p.binned, name=legend, problem=p.name, band=self.band),
                smooth=None if p.smooth is None else smooth_data_from_result(p.smooth, name=legend, problem=p.name),
            )
            for p in self.problems
        ]


class DiagramInputAccumulator(InputState):
    """A diagram's state for one input (or group): per binary problem of ``mode`` (at most
    ``options.max_problems`` of them) a :class:`~calibcli.binned.accumulator.BinnedAccumulator` and a
    :class:`~calibcli.smooth.accumulator.SmoothAccumulator` that keeps the curve, as asked.

    The protocol of :class:`calibcli.ece_family.accumulator.InputAccumulator` (``update``, ``merge``, ``n_rows``,
    ``problems``, ``needs_second_pass`` / ``for_second_pass``, ``to_dict`` / ``from_dict``,
    ``result``), so :func:`calibcli.engines.fragments.run_local` streams it, per group too. A second pass is
    needed for quantile bins over more rows than are kept (edges from the first pass) or for an s*
    below what the smoothing grid resolves (a finer grid); both families are summed again in it.
    """

    kind = "diagram_input"
    state_name = "diagram input state"
    merge_rules = {"binned": "merge", "smooth": "merge"}

    def __init__(
        self,
        *,
        max_problems: int | None = None,
        edges: list | None = None,
        edges_method: str | None = None,
        grids: list[int] | None = None,
        **head: Any,
    ):
        super().__init__(**head)
        mode, options = self.mode, self.options
        self.edges_method, self.max_problems = edges_method, max_problems
        n_problems = self.n_classes if mode == "marginal" else 1
        if max_problems is not None:
            n_problems = min(n_problems, max_problems)
        row_limit = options.row_limit
        self.binned = (
            [
                BinnedAccumulator(
                    n_bins=options.n_bins,
                    strategy=options.strategy,
                    row_limit=row_limit,
                    edges=None if edges is None else edges[k],
                )
                for k in range(n_problems)
            ]
            if options.binned
            else None
        )
        grids = grids or [calibcli.smooth.estimator.STATS_GRID] * n_problems  # read now: the library may change it
        self.smooth = (
            [SmoothAccumulator(row_limit=row_limit, seed=options.seed, want_curve=True, n_cells=g) for g in grids]
            if options.smooth
            else None
        )
        self._grids: list[int] | None | bool = False  # second-pass grids, once checked (False: not yet)

    @property
    def problems(self) -> list:
        """Per binary problem, its accumulators (binned, smooth; None for a kind not drawn)."""
        n = len(self._per_problem())
        return [
            (None if self.binned is None else self.binned[k], None if self.smooth is None else self.smooth[k])
            for k in range(n)
        ]

    def _per_problem(self) -> list:
        """The accumulators of the first kind drawn (binned, else smooth): one per binary problem."""
        drawn = self.binned if self.binned is not None else self.smooth
        assert drawn is not None  # (a diagram draws at least one kind)
        return drawn

    def _binary_problems(self, labels, probs, w):
        names = list(self.class_names)
        if self.mode == "marginal" and probs.ndim == 2:
            # only the classes drawn: class k's problem reads column k alone
            keep = len(self._per_problem())
            return binary_problems(labels, probs[:, :keep], mode=self.mode, sample_weight=w, class_names=names[:keep])
        return binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=names)

    def update(self, row_index, probs, labels, w=None) -> DiagramInputAccumulator:
        for k, problem in enumerate(self._binary_problems(labels, probs, w)):
            if self.binned is not None:
                self.binned[k].update(row_index, problem.z, problem.y, problem.sample_weight)
            if self.smooth is not None:
                self.smooth[k].update(row_index, problem.z, problem.y, problem.sample_weight)
        self._grids = False
        return self

    def _after_merge(self) -> None:
        self._grids = False

    @property
    def n_rows(self) -> int:
        drawn = self.binned or self.smooth
        assert drawn is not None  # (a diagram draws at least one kind)
        return drawn[0].n_rows

    def _second_pass_grids(self) -> list[int] | None:
        """Per problem, the smoothing grid of a second pass; None when every s* is resolved by this pass.

        Only without the rows at hand can s* be finer than the grid resolves; the check solves s*
        alone (no bootstrap), once per state.
        """
        if self.smooth is None:
            return None
        if self._grids is False:
            checks = [
                None
                if acc.rows_kept
                else SmoothAccumulator.results([acc], self.options.but(n_boot=0, seed=acc.seed))[0]
                for acc in self.smooth
            ]  # (the options, checked when made: not again)
            finer = [c.finer_grid if c is not None and c.needs_finer_grid else None for c in checks]
            self._grids = (
                [acc.n_cells if g is None else g for g, acc in zip(finer, self.smooth, strict=True)]
                if any(g is not None for g in finer)
                else None
            )
        return cast("list[int] | None", self._grids)  # (checked: no longer False)

    def needs_second_pass(self) -> bool:
        return any(acc.needs_edges for acc in self.binned or ()) or self._second_pass_grids() is not None

    def for_second_pass(self) -> DiagramInputAccumulator:
        """An empty accumulator for a second pass: quantile edges and smoothing grids from this pass."""
        edges = edges_method = None
        if self.binned is not None and any(acc.needs_edges for acc in self.binned):
            fitted = [acc.fitted_edges() for acc in self.binned]
            edges, edges_method = [e for e, _ in fitted], fitted[0][1]
        grids = None if self.smooth is None else (self._second_pass_grids() or [acc.n_cells for acc in self.smooth])
        return DiagramInputAccumulator(
            **self.head(), max_problems=self.max_problems, edges=edges, edges_method=edges_method, grids=grids
        )

    def result(self, progress: Callable[[], None] | None = None) -> DiagramReport:
        """Every problem's binned and smooth results (with bootstrap intervals, and the curve with its band).

        With both kinds the two families run side by side, one thread each (NumPy releases the GIL
        in the heavy calls); ``progress`` is called after every bootstrap resample.
        """
        o = self.options  # (checked when made: the accumulators' results take it as it is)
        steps = None if progress is None else lambda n=1: [progress() for _ in range(n)]
        marginal = self.mode == "marginal"
        names = [f"class {c}" for c in self.class_names] if marginal else [self.mode]
        tasks: dict[str, Callable[[], list]] = {}
        binned, smooth = self.binned, self.smooth
        if binned is not None:
            tasks["binned"] = lambda: [
                BinnedAccumulator.results([acc], o, progress=steps, keep_replicates=o.band == "bootstrap")[
                    0
                ]  # the band's per-bin resamples
                for acc in binned
            ]
        if smooth is not None:

            def smooth_results():
                with warnings.catch_warnings():
                    # Where no resample has data, the band is NaN (not drawn); numpy's "All-NaN slice"
                    # warning about it is not news for the user.
                    warnings.simplefilter("ignore", RuntimeWarning)
                    return [
                        SmoothAccumulator.results([acc], o, curve_points=o.curve_points, progress=steps)[0]
                        for acc in smooth
                    ]

            tasks["smooth"] = smooth_results
        done = run_side_by_side(tasks)
        n = len(self.problems)
        problems = [
            DiagramProblem(
                names[k],
                k if marginal else None,
                done["binned"][k] if "binned" in done else None,
                done["smooth"][k] if "smooth" in done else None,
            )
            for k in range(n)
        ]
        notes = (f"quantile edges from {self.edges_method}",) if self.edges_method else ()
        return DiagramReport(self.mode, problems, notes, band=o.band)


def run_side_by_side(tasks: Mapping[str, Callable[[], Any]]) -> dict[str, Any]:
    """Results of the callables in ``tasks``, in two threads when there are two. The first error raised
    is re-raised."""
    if len(tasks) < 2:
        return {key: task() for key, task in tasks.items()}
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=len(tasks))
    try:
        futures = {key: pool.submit(task) for key, task in tasks.items()}
        return {key: future.result() for key, future in futures.items()}
    finally:  # on an error or a signal, the other task stops at its next cancel.check()
        cancel.shutdown_now(pool)
