"""Reliability diagrams: the picture's data apart from its drawing (SPEC sections 6 and 8).

What a diagram shows comes from the accumulators' results: :class:`DiagramInputAccumulator` streams
one input (or one group of it) through a binned and a smooth accumulator per binary problem
(:mod:`calibcli.accumulators`), and :func:`binned_data_from_result` / :func:`smooth_data_from_result`
turn their results into frozen dataclasses. ``prepare_binned`` and ``prepare_smooth`` are the
one-batch case (arrays in memory, rows numbered ``0..n-1``). ``plot_binned``, ``plot_smooth`` and
``plot_diagram`` draw the data with matplotlib and return the :class:`matplotlib.figure.Figure`;
:func:`figure_bytes` renders a figure to PNG, SVG or PDF bytes that depend only on the figure (no
software version or date in the file). The split follows relplot's ``prepare_rel_diagram`` /
``plot_rel_diagram`` and scikit-learn's ``CalibrationDisplay``.

- Binned (Guo et al. 2017, "On Calibration of Modern Neural Networks"; Niculescu-Mizil and Caruana
  2005): per non-empty bin the accuracy (weighted mean of y) against the mean confidence (weighted
  mean of z), with the Wilson score interval of the accuracy (Wilson 1927), the gap to the diagonal
  shaded over the bin's range, the bin counts as a histogram under the panel, and the binned
  ``ece_l1_plugin`` with its percentile bootstrap interval (the numbers ``calibcli ece`` prints).
  Empty bins have no accuracy and are not drawn.
- Smooth (Blasiok and Nakkiran 2023, seed 003): the Nadaraya-Watson regression of y on z with the
  reflected Gaussian kernel at the SmoothECE bandwidth s*, its pointwise bootstrap band, the
  kernel density of the predictions under the panel, and the SmoothECE with its interval (the
  numbers ``calibcli smece`` prints).

Bootstrap intervals and bands are the Poisson bootstrap keyed by ``(seed, global row index)``
(SPEC 8), so a streamed dataset, however it is split into batches or files, gives the figure of the
same rows in memory.

matplotlib is imported only inside the drawing functions (never by ``calibcli --help``), and
figures are built on the headless Agg canvas, without pyplot's global state.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Callable, Sequence

import numpy as np

from calibcli.binning import STRATEGIES
from calibcli.errors import CalibcliError
from calibcli.validation import check_binary, check_option

#: Kinds of diagram the ``diagram`` command draws.
KINDS = ("binned", "smooth", "both")
#: Output formats by file extension.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
#: Colours of overlaid curves (matplotlib's tab10, in order).
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: Name of the binned metric printed on the diagram.
BINNED_METRIC = "ece_l1_plugin"
#: Size of one panel (inches): width of one kind, height including the histogram.
PANEL_WIDTH = 5.0
PANEL_HEIGHT = 5.2
#: Axis limits of [0, 1] quantities, with a margin so that points at 0 or 1 are drawn whole.
LIMITS = (-0.02, 1.02)
#: Line width of the smooth curve where the predictions' density is zero / at its maximum (seed 003
#: encodes the density in the curve's width).
SMOOTH_WIDTH = (0.4, 3.2)
#: Matplotlib settings of every figure (fixed so that the picture depends only on the data).
_RC = {
    "font.size": 10.0,
    "axes.titlesize": 11.0,
    "axes.labelsize": 10.0,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 9.0,
    "ytick.labelsize": 9.0,
    "svg.hashsalt": "calibcli",
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "path.simplify": True,
}


# ---------------------------------------------------------------------------------------------
# The picture's data


#: What the diagram's intervals are, for the report's parameters (the metrics' own descriptions are
#: in :data:`calibcli.metrics.REGISTRY`).
BIN_ACCURACY_INTERVAL = "Wilson score interval of each bin's accuracy (Wilson 1927)"
SMOOTH_BAND = "pointwise percentile band of the kernel regression over the same bootstrap resamples (bandwidth re-solved on each)"


@dataclass(frozen=True)
class BinnedDiagramData:
    """What a binned reliability diagram of one binary problem shows (SPEC 6).

    Per non-empty bin ``j`` (empty bins are absent from these arrays): its range
    ``[bin_lower, bin_upper)``, ``count`` (rows), ``weight`` (sum of sample weights),
    ``confidence`` (weighted mean prediction), ``accuracy`` (weighted mean label) and the Wilson
    score interval ``[acc_low, acc_high]`` at level ``1 - alpha``. ``bounds``, ``counts_all`` (rows)
    and ``weights_all`` (sums of the frequency weights) describe every bin (empty ones included) for
    the histogram, which shows the weights when the rows are weighted. ``estimate``, ``ci_low``,
    ``ci_high`` are the ``ece_l1_plugin`` and its percentile bootstrap interval (None without
    bootstrap), made as ``ci_method`` says.
    """

    name: str
    problem: str
    n: int
    weight_total: float
    strategy: str
    n_bins: int
    n_bins_nonempty: int
    bounds: np.ndarray
    counts_all: np.ndarray
    weights_all: np.ndarray
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    acc_low: np.ndarray
    acc_high: np.ndarray
    metric: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    alpha: float
    ci_method: str | None = None

    def to_dict(self) -> dict:
        """The report's ``binned`` section of a curve: bins, the metric with its interval, every non-empty bin."""
        from calibcli.estimators import Metric

        return {
            "strategy": self.strategy,
            "n_bins": self.n_bins,
            "n_bins_nonempty": self.n_bins_nonempty,
            "metrics": {self.metric: Metric(self.metric, self.estimate, self.ci_low, self.ci_high, self.ci_method).to_dict()},
            "per_bin": [
                {
                    "lower": float(lo), "upper": float(hi), "count": int(c), "mean_confidence": float(conf),
                    "accuracy": float(acc), "wilson_low": float(al), "wilson_high": float(ah),
                }
                for lo, hi, c, conf, acc, al, ah in zip(self.bin_lower, self.bin_upper, self.count, self.confidence,
                                                        self.accuracy, self.acc_low, self.acc_high)
            ],
        }


@dataclass(frozen=True)
class SmoothDiagramData:
    """What a smooth reliability diagram of one binary problem shows (SPEC 3 and 6, seed 003).

    ``yhat`` is the kernel regression of y on z at ``t`` (bandwidth ``sigma`` = s*), NaN where the
    predictions' density vanishes; ``band_low``/``band_high`` its pointwise bootstrap band (None
    without bootstrap); ``density`` the predictions' smoothed density. ``smece`` and
    ``ci_low``/``ci_high`` are the SmoothECE and its percentile bootstrap interval, made as
    ``ci_method`` says; ``grid_cells`` the grid s* was solved on (when known).
    """

    name: str
    problem: str
    n: int
    weight_total: float
    t: np.ndarray
    yhat: np.ndarray
    band_low: np.ndarray | None
    band_high: np.ndarray | None
    density: np.ndarray
    sigma: float
    smece: float
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    alpha: float
    ci_method: str | None = None
    grid_cells: int | None = None

    def to_dict(self) -> dict:
        """The report's ``smooth`` section of a curve: s*, the SmoothECE with its interval, the band."""
        from calibcli.estimators import Metric

        return {
            "sigma": self.sigma,
            "grid_cells": self.grid_cells,
            "metrics": {"smece": Metric("smece", self.smece, self.ci_low, self.ci_high, self.ci_method).to_dict()},
            "band": None if self.band_low is None else f"pointwise percentile band, {self.ci_method}",
        }


@dataclass(frozen=True)
class DiagramPanel:
    """One panel of a figure: a title and the curves overlaid in it (binned, smooth or both)."""

    title: str
    binned: tuple[BinnedDiagramData, ...] = ()
    smooth: tuple[SmoothDiagramData, ...] = ()


def wilson_interval(successes, total, *, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion ``successes / total`` at level ``1 - alpha``.

    E. B. Wilson, "Probable inference, the law of succession, and statistical inference" (JASA,
    1927). With frequency weights, ``successes`` and ``total`` are sums of weights. ``total``
    must be positive.
    """
    s = np.asarray(successes, dtype=np.float64)
    n = np.asarray(total, dtype=np.float64)
    zq = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    p = np.clip(s / n, 0.0, 1.0)
    z2n = zq * zq / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = zq / (1.0 + z2n) * np.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    # The interval contains p; at p = 0 or 1 an end equals p exactly, which rounding of centre -+ half
    # can miss by an ulp (a negative error-bar length, which matplotlib refuses to draw).
    return np.minimum(np.clip(centre - half, 0.0, 1.0), p), np.maximum(np.clip(centre + half, 0.0, 1.0), p)


def binned_data_from_result(result, *, name: str = "", problem: str = "binary") -> BinnedDiagramData:
    """The binned diagram of one binary problem from its :class:`calibcli.estimators.CalibrationResult`.

    ``result`` is what :meth:`calibcli.accumulators.binned.BinnedAccumulator.result` (or, for rows in
    memory, :func:`calibcli.estimators.binned_calibration`) returns: its per-bin sums give the points,
    its ``ece_l1_plugin`` the legend; the Wilson interval of each bin's accuracy, at the result's
    level ``1 - alpha``, is added here.
    """
    s = result.bin_stats
    bounds = np.asarray(result.bin_bounds, dtype=np.float64)
    keep = s.nonempty & (s.weight > 0)
    weight = s.weight[keep]
    acc_low, acc_high = wilson_interval(s.sum_y[keep], weight, alpha=result.alpha)
    m = result.metrics[BINNED_METRIC]
    return BinnedDiagramData(
        name=name,
        problem=problem,
        n=result.n,
        weight_total=result.weight_total,
        strategy=result.strategy,
        n_bins=result.n_bins,
        n_bins_nonempty=int(keep.sum()),
        bounds=bounds,
        counts_all=np.asarray(s.count, dtype=np.int64),
        weights_all=np.asarray(s.weight, dtype=np.float64),
        bin_lower=bounds[:-1][keep],
        bin_upper=bounds[1:][keep],
        count=np.asarray(s.count[keep], dtype=np.int64),
        weight=weight,
        confidence=s.sum_z[keep] / weight,
        accuracy=s.sum_y[keep] / weight,
        acc_low=acc_low,
        acc_high=acc_high,
        metric=BINNED_METRIC,
        estimate=m.estimate,
        ci_low=m.ci_low,
        ci_high=m.ci_high,
        n_boot=result.n_boot,
        alpha=result.alpha,
        ci_method=m.ci_method,
    )


def smooth_data_from_result(result, *, name: str = "", problem: str = "binary") -> SmoothDiagramData:
    """The smooth diagram of one binary problem from its SmoothECE result.

    ``result`` is a :class:`calibcli.smooth.SmoothECEResult` made with its curve
    (:meth:`calibcli.accumulators.smooth.SmoothAccumulator.result` with ``curve_points``), or the
    :class:`calibcli.smooth.SmoothCurve` itself (:func:`calibcli.smooth.smooth_curve`).
    """
    curve = getattr(result, "curve", result)
    if curve is None:
        raise ValueError("the SmoothECE result has no curve: ask for one with curve_points")
    method = curve.ci_method
    if method is not None and curve.sigma_is_fixed_point:
        method += ", bandwidth re-solved on each"
    return SmoothDiagramData(
        name=name,
        problem=problem,
        n=int(curve.n),
        weight_total=float(curve.weight_total),
        t=np.asarray(curve.t),
        yhat=np.asarray(curve.yhat),
        band_low=None if curve.band_low is None else np.asarray(curve.band_low),
        band_high=None if curve.band_high is None else np.asarray(curve.band_high),
        density=np.asarray(curve.density),
        sigma=float(curve.sigma),
        smece=float(curve.smece),
        ci_low=curve.ci_low,
        ci_high=curve.ci_high,
        n_boot=int(curve.n_boot),
        alpha=float(curve.alpha),
        ci_method=method,
        grid_cells=getattr(result, "grid_size", None),
    )


def prepare_binned(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    n_bins: int = 15,
    strategy: str = "uniform",
    n_boot: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    name: str = "",
    problem: str = "binary",
) -> BinnedDiagramData:
    """The data of a binned reliability diagram of rows in memory (SPEC 2.1 bins, SPEC 6).

    The one-batch case of :func:`binned_data_from_result`: rows ``0..n-1`` through
    :func:`calibcli.estimators.binned_calibration`, which is what a binned accumulator holding every
    row computes, so the numbers are ``calibcli ece``'s for the same options and ``seed`` (the
    Poisson bootstrap keyed by ``(seed, row)``).
    """
    from calibcli.estimators import binned_calibration

    check_option(strategy in STRATEGIES, f"{{opt:strategy}} is {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    result = binned_calibration(
        y_true, y_prob, sample_weight=sample_weight, n_bins=n_bins, strategy=strategy,
        n_boot=n_boot, alpha=alpha, seed=seed,
    )
    return binned_data_from_result(result, name=name, problem=problem)


def prepare_smooth(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    n_boot: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    n_points: int = 501,
    name: str = "",
    problem: str = "binary",
) -> SmoothDiagramData:
    """The data of a smooth reliability diagram of rows in memory (seed 003).

    The one-batch case of :func:`smooth_data_from_result`: :func:`calibcli.smooth.smooth_curve` with
    the bootstrap keyed by ``(seed, row)``, which is what a smooth accumulator fed rows ``0..n-1``
    gives (``calibcli smece``'s numbers for the same ``seed``).
    """
    from calibcli.smooth import smooth_curve

    y, z, w = check_binary(y_true, y_prob, sample_weight)
    with warnings.catch_warnings():
        # Where no resample has data, the band is NaN (not drawn); numpy's "All-NaN slice" warning
        # about it is not news for the user.
        warnings.simplefilter("ignore", RuntimeWarning)
        c = smooth_curve(y, z, sample_weight=None if sample_weight is None else w, n_points=n_points,
                         n_boot=n_boot, alpha=alpha, rng=int(seed))
    return smooth_data_from_result(c, name=name, problem=problem)


# ---------------------------------------------------------------------------------------------
# One input (or group), streamed: a binned and a smooth accumulator per binary problem


@dataclass(frozen=True)
class DiagramOptions:
    """What a diagram computes: which kinds, the bins, the bootstrap, the smooth curve's points.

    ``max_problems`` caps the binary problems accumulated (marginal mode draws the first classes
    only, so the others are never summed).
    """

    binned: bool = True
    smooth: bool = True
    n_bins: int = 15
    strategy: str = "uniform"
    n_boot: int = 0
    alpha: float = 0.05
    seed: int = 0
    curve_points: int = 501
    max_problems: int | None = None
    row_limit: int | None = None  # None: the accumulators' own limit (ROW_LIMIT rows kept per problem)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DiagramProblem:
    """The finished statistics of one binary problem: the binned and / or the smooth result."""

    name: str
    class_index: int | None
    binned: object | None  # calibcli.estimators.CalibrationResult
    smooth: object | None  # calibcli.smooth.SmoothECEResult, with its curve

    @property
    def n(self) -> int:
        return (self.binned or self.smooth).n


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
        out = {"name": self.name, "problem": self.problem, "class_index": self.class_index, "n": self.n}
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

    def curves(self, name: str, *, legend: str | None = None) -> list[DiagramCurve]:
        """One curve per problem, named ``name`` in the report and ``legend`` (default ``name``) on the figure."""
        legend = name if legend is None else legend
        return [
            DiagramCurve(
                name=name, problem=p.name, class_index=p.class_index, n=p.n,
                binned=None if p.binned is None else binned_data_from_result(p.binned, name=legend, problem=p.name),
                smooth=None if p.smooth is None else smooth_data_from_result(p.smooth, name=legend, problem=p.name),
            )
            for p in self.problems
        ]


class DiagramInputAccumulator:
    """A diagram's state for one input (or group): per binary problem of ``mode`` (at most
    ``options.max_problems`` of them) a :class:`~calibcli.accumulators.binned.BinnedAccumulator` and a
    :class:`~calibcli.accumulators.smooth.SmoothAccumulator` that keeps the curve, as asked.

    The protocol of :class:`calibcli.evaluation.InputAccumulator` (``update``, ``merge``, ``n_rows``,
    ``problems``, ``needs_second_pass`` / ``for_second_pass``, ``to_dict`` / ``from_dict``,
    ``result``), so :func:`calibcli.evaluation.run_local` streams it, per group too. A second pass is
    needed for quantile bins over more rows than are kept (edges from the first pass) or for an s*
    below what the smoothing grid resolves (a finer grid); both families are summed again in it.
    """

    kind = "diagram_input"

    def __init__(self, *, mode: str, n_classes: int, class_names: tuple[str, ...], options: DiagramOptions,
                 edges: list | None = None, edges_method: str | None = None, grids: list[int] | None = None):
        from calibcli.accumulators.binned import ROW_LIMIT, BinnedAccumulator
        from calibcli.accumulators.smooth import SmoothAccumulator
        from calibcli.smooth import STATS_GRID

        self.mode, self.n_classes, self.class_names, self.options = mode, int(n_classes), tuple(class_names), options
        self.edges_method = edges_method
        n_problems = self.n_classes if mode == "marginal" else 1
        if options.max_problems is not None:
            n_problems = min(n_problems, options.max_problems)
        row_limit = ROW_LIMIT if options.row_limit is None else options.row_limit
        self.binned = [
            BinnedAccumulator(n_bins=options.n_bins, strategy=options.strategy, row_limit=row_limit,
                              edges=None if edges is None else edges[k])
            for k in range(n_problems)
        ] if options.binned else None
        grids = grids or [STATS_GRID] * n_problems
        self.smooth = [SmoothAccumulator(row_limit=row_limit, seed=options.seed, want_curve=True, n_cells=g)
                       for g in grids] if options.smooth else None
        self._grids: list[int] | None | bool = False  # second-pass grids, once checked (False: not yet)

    @property
    def problems(self) -> list:
        """Per binary problem, its accumulators (binned, smooth; None for a kind not drawn)."""
        n = len(self.binned if self.binned is not None else self.smooth)
        return [(None if self.binned is None else self.binned[k], None if self.smooth is None else self.smooth[k])
                for k in range(n)]

    def _binary_problems(self, labels, probs, w):
        from calibcli.modes import binary_problems

        names = list(self.class_names)
        if self.mode == "marginal" and probs.ndim == 2:
            # only the classes drawn: class k's problem reads column k alone
            keep = len(self.binned if self.binned is not None else self.smooth)
            return binary_problems(labels, probs[:, :keep], mode=self.mode, sample_weight=w, class_names=names[:keep])
        return binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=names)

    def update(self, row_index, probs, labels, w=None) -> "DiagramInputAccumulator":
        for k, problem in enumerate(self._binary_problems(labels, probs, w)):
            if self.binned is not None:
                self.binned[k].update(row_index, problem.z, problem.y, problem.sample_weight)
            if self.smooth is not None:
                self.smooth[k].update(row_index, problem.z, problem.y, problem.sample_weight)
        self._grids = False
        return self

    def merge(self, other: "DiagramInputAccumulator") -> "DiagramInputAccumulator":
        for mine, theirs in ((self.binned, other.binned), (self.smooth, other.smooth)):
            for a, b in zip(mine or (), theirs or ()):
                a.merge(b)
        self._grids = False
        return self

    @property
    def n_rows(self) -> int:
        return (self.binned or self.smooth)[0].n_rows

    def _second_pass_grids(self) -> list[int] | None:
        """Per problem, the smoothing grid of a second pass; None when every s* is resolved by this pass.

        Only without the rows at hand can s* be finer than the grid resolves; the check solves s*
        alone (no bootstrap), once per state.
        """
        if self.smooth is None:
            return None
        if self._grids is False:
            checks = [None if acc.rows_kept else acc.result(n_boot=0, alpha=self.options.alpha) for acc in self.smooth]
            finer = [c is not None and c.needs_finer_grid for c in checks]
            self._grids = [c.finer_grid if f else acc.n_cells for c, f, acc in zip(checks, finer, self.smooth)] if any(finer) else None
        return self._grids

    def needs_second_pass(self) -> bool:
        return any(acc.needs_edges for acc in self.binned or ()) or self._second_pass_grids() is not None

    def for_second_pass(self) -> "DiagramInputAccumulator":
        """An empty accumulator for a second pass: quantile edges and smoothing grids from this pass."""
        edges = edges_method = None
        if self.binned is not None and any(acc.needs_edges for acc in self.binned):
            fitted = [acc.fitted_edges() for acc in self.binned]
            edges, edges_method = [e for e, _ in fitted], fitted[0][1]
        grids = None if self.smooth is None else (self._second_pass_grids() or [acc.n_cells for acc in self.smooth])
        return DiagramInputAccumulator(mode=self.mode, n_classes=self.n_classes, class_names=self.class_names,
                                       options=self.options, edges=edges, edges_method=edges_method, grids=grids)

    def to_dict(self) -> dict:
        from calibcli.evaluation import STATE_VERSION

        return {
            "kind": self.kind, "version": STATE_VERSION, "mode": self.mode, "n_classes": self.n_classes,
            "class_names": list(self.class_names), "edges_method": self.edges_method,
            "options": self.options.to_dict(),
            "binned": None if self.binned is None else [acc.to_dict() for acc in self.binned],
            "smooth": None if self.smooth is None else [acc.to_dict() for acc in self.smooth],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "DiagramInputAccumulator":
        from calibcli.accumulators.binned import BinnedAccumulator
        from calibcli.accumulators.smooth import SmoothAccumulator
        from calibcli.evaluation import STATE_VERSION

        if d.get("kind") != cls.kind or d.get("version") != STATE_VERSION:
            raise ValueError(f"not a diagram input state of version {STATE_VERSION}")
        smooth = None if d["smooth"] is None else [SmoothAccumulator.from_dict(s) for s in d["smooth"]]
        out = cls(mode=d["mode"], n_classes=d["n_classes"], class_names=tuple(d["class_names"]),
                  options=DiagramOptions(**d["options"]), edges_method=d["edges_method"],
                  grids=None if smooth is None else [acc.n_cells for acc in smooth])
        out.binned = None if d["binned"] is None else [BinnedAccumulator.from_dict(b) for b in d["binned"]]
        out.smooth = smooth
        return out

    def result(self, progress: Callable[[], None] | None = None) -> DiagramReport:
        """Every problem's binned and smooth results (with bootstrap intervals, and the curve with its band).

        With both kinds the two families run side by side, one thread each (NumPy releases the GIL
        in the heavy calls); ``progress`` is called after every bootstrap resample.
        """
        o = self.options
        marginal = self.mode == "marginal"
        names = [f"class {c}" for c in self.class_names] if marginal else [self.mode]
        tasks = {}
        if self.binned is not None:
            tasks["binned"] = lambda: [acc.result(n_boot=o.n_boot, alpha=o.alpha, seed=o.seed, progress=progress)
                                       for acc in self.binned]
        if self.smooth is not None:
            def smooth_results():
                with warnings.catch_warnings():
                    # Where no resample has data, the band is NaN (not drawn); numpy's "All-NaN slice"
                    # warning about it is not news for the user.
                    warnings.simplefilter("ignore", RuntimeWarning)
                    return [acc.result(n_boot=o.n_boot, alpha=o.alpha, seed=o.seed, curve_points=o.curve_points,
                                       progress=progress) for acc in self.smooth]
            tasks["smooth"] = smooth_results
        done = run_side_by_side(tasks)
        n = len(self.problems)
        problems = [
            DiagramProblem(names[k], k if marginal else None,
                           done["binned"][k] if "binned" in done else None, done["smooth"][k] if "smooth" in done else None)
            for k in range(n)
        ]
        notes = (f"quantile edges from {self.edges_method}",) if self.edges_method else ()
        return DiagramReport(self.mode, problems, notes)


def run_side_by_side(tasks: dict[str, Callable[[], object]]) -> dict[str, object]:
    """Results of the callables in ``tasks``, in two threads when there are two. The first error raised
    is re-raised."""
    if len(tasks) < 2:
        return {key: task() for key, task in tasks.items()}
    from concurrent.futures import ThreadPoolExecutor

    from calibcli import cancel

    pool = ThreadPoolExecutor(max_workers=len(tasks))
    try:
        futures = {key: pool.submit(task) for key, task in tasks.items()}
        return {key: future.result() for key, future in futures.items()}
    finally:  # on an error or a signal, the other task stops at its next cancel.check()
        cancel.shutdown_now(pool)


# ---------------------------------------------------------------------------------------------
# Drawing


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"


def _interval_text(low, high) -> str:
    return "" if low is None or high is None else f" [{_fmt(low)}, {_fmt(high)}]"


def binned_label(d: BinnedDiagramData) -> str:
    """The legend entry of a binned curve: its name, the metric with its interval, and n."""
    head = f"{d.name}\n" if d.name else ""
    return f"{head}{d.metric} = {_fmt(d.estimate)}{_interval_text(d.ci_low, d.ci_high)}, {_n_text(d.n, d.weight_total)}"


def smooth_label(d: SmoothDiagramData) -> str:
    """The legend entry of a smooth curve: its name, the SmoothECE with its interval, and n."""
    head = f"{d.name}\n" if d.name else ""
    return f"{head}smECE = {_fmt(d.smece)}{_interval_text(d.ci_low, d.ci_high)}, {_n_text(d.n, d.weight_total)}"


def _n_text(n: int, weight_total: float) -> str:
    """``n = rows``, and the total frequency weight when the rows are weighted."""
    return f"n = {n:,}" if weight_total == n else f"n = {n:,} rows, weight {weight_total:,.6g}"


def _axis_labels(problem: str) -> tuple[str, str]:
    if problem == "top-label":
        return "confidence (top-label probability)", "accuracy"
    return "predicted probability", "observed frequency of positives"


def _as_tuple(data) -> tuple:
    return tuple(data) if isinstance(data, (list, tuple)) else (data,)


def _new_figure(figsize):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _pair_axes(fig, *, ratio: float = 3.2):
    gs = fig.add_gridspec(2, 1, height_ratios=[ratio, 1.0])
    ax = fig.add_subplot(gs[0, 0])
    return ax, fig.add_subplot(gs[1, 0], sharex=ax)


def _style_main(ax, problem: str, title: str | None) -> None:
    ax.plot([0, 1], [0, 1], color="0.45", linestyle="--", linewidth=1.0, zorder=1)
    ax.set_xlim(*LIMITS)
    ax.set_ylim(*LIMITS)
    ax.set_aspect("auto")
    ax.set_ylabel(_axis_labels(problem)[1])
    ax.grid(True, color="0.92", linewidth=0.6, zorder=0)
    ax.tick_params(labelbottom=False)
    if title:
        ax.set_title(title)


def _style_lower(ax, problem: str, ylabel: str) -> None:
    ax.set_xlabel(_axis_labels(problem)[0])
    ax.set_ylabel(ylabel)
    ax.set_xlim(*LIMITS)
    ax.grid(True, axis="x", color="0.92", linewidth=0.6, zorder=0)


#: The two off-diagonal corners where the legend may go, as (x range, y range) of the axes it covers
#: (roughly: a legend line of a metric with its interval spans three quarters of a panel's width).
_CORNERS = {"upper left": ((0.0, 0.78), (0.84, 1.0)), "lower right": ((0.22, 1.0), (0.0, 0.16))}


def _legend(ax, fontsize=None, *, ink: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = ()) -> None:
    """The legend (metric, interval, n) in the off-diagonal corner that hides the least of the data.

    ``ink`` lists what is drawn as vertical spans ``(x, y_low, y_high)`` (error bars, shaded gaps,
    the band); a corner's cost is the total length of those spans inside it, growing with the number
    of legend lines. The off-diagonal corners are where a calibrated curve never goes; ties go to the
    upper left. (A fixed rule rather than matplotlib's ``loc="best"``: the same for every backend and
    cheap for curves of many points.)
    """
    entries = max(1, len(ax.get_legend_handles_labels()[0]))
    cost = {}
    for corner, ((x0, x1), (y0, y1)) in _CORNERS.items():
        grow = 0.07 * (entries - 1)
        y0, y1 = (y0 - grow, y1) if corner == "upper left" else (y0, y1 + grow)
        total = 0.0
        for x, lo, hi in ink:
            x, lo, hi = (np.asarray(v, dtype=np.float64) for v in (x, lo, hi))
            inside = (x >= x0) & (x <= x1) & np.isfinite(lo) & np.isfinite(hi)
            total += float(np.sum(np.clip(np.minimum(hi, y1) - np.maximum(lo, y0), 0.0, None)[inside]))
        cost[corner] = total
    loc = min(cost, key=lambda c: (cost[c], c != "upper left"))
    ax.legend(loc=loc, frameon=True, framealpha=0.9, fontsize=fontsize, handlelength=1.4, borderaxespad=0.4)


def plot_binned(data, *, ax=None, hist_ax=None, title: str | None = None, legend_fontsize=None):
    """Draw one :class:`BinnedDiagramData` or several overlaid; returns the Figure.

    Without ``ax`` a new figure is made with the main panel and the histogram under it; with
    ``ax`` the curves go there and the histogram into ``hist_ax`` when one is given. Draws, per
    curve: the points (accuracy against mean confidence, joined by a line) with Wilson error bars,
    the gap to the diagonal shaded over each bin's range, and the bin counts as stairs.
    """
    from matplotlib.patches import Rectangle

    curves = _as_tuple(data)
    if ax is None:
        fig = _new_figure((PANEL_WIDTH, PANEL_HEIGHT))
        ax, hist_ax = _pair_axes(fig)
    problem = curves[0].problem if curves else "binary"
    _style_main(ax, problem, title)
    several = len(curves) > 1
    weighted = any(d.weight_total != d.n for d in curves)  # frequency weights: the histogram counts them
    for i, d in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        for lo, hi, conf, acc in zip(d.bin_lower, d.bin_upper, d.confidence, d.accuracy):
            ax.add_patch(Rectangle((lo, min(conf, acc)), hi - lo, abs(acc - conf), facecolor=color,
                                   alpha=0.10 if several else 0.22, edgecolor="none", zorder=2))
        ax.errorbar(
            d.confidence, d.accuracy, yerr=np.vstack([d.accuracy - d.acc_low, d.acc_high - d.accuracy]),
            color=color, marker="o", markersize=4.0, linestyle="none", elinewidth=1.0, capsize=2.5,
            label=binned_label(d), zorder=3,
        )
        ax.plot(*_joined_across_full_bins(d), color=color, linewidth=1.0, zorder=3)
        if hist_ax is not None:
            hist_ax.stairs(d.weights_all if weighted else d.counts_all, d.bounds, color=color, fill=not several, alpha=0.55 if not several else 1.0,
                           linewidth=1.2, zorder=2)
    ink = [(d.confidence, d.acc_low, d.acc_high) for d in curves]
    ink += [(0.5 * (d.bin_lower + d.bin_upper), np.minimum(d.confidence, d.accuracy), np.maximum(d.confidence, d.accuracy))
            for d in curves]
    _legend(ax, legend_fontsize, ink=ink)
    if hist_ax is not None:
        _style_lower(hist_ax, problem, "weighted count" if weighted else "count")
        hist_ax.set_ylim(bottom=0.0)
    return ax.figure


def _joined_across_full_bins(d: BinnedDiagramData) -> tuple[np.ndarray, np.ndarray]:
    """The points' line, broken (a NaN) wherever empty bins lie between two drawn points, so that a
    straight segment never suggests data where there is none."""
    x, y = np.asarray(d.confidence, dtype=np.float64), np.asarray(d.accuracy, dtype=np.float64)
    gap = np.flatnonzero(np.asarray(d.bin_lower)[1:] > np.asarray(d.bin_upper)[:-1]) + 1
    return np.insert(x, gap, np.nan), np.insert(y, gap, np.nan)


def plot_smooth(data, *, ax=None, density_ax=None, title: str | None = None, legend_fontsize=None):
    """Draw one :class:`SmoothDiagramData` or several overlaid; returns the Figure.

    Per curve: the kernel regression at s* with its pointwise bootstrap band, and the predictions'
    density in ``density_ax`` (made under ``ax`` when no ``ax`` is given).
    """
    curves = _as_tuple(data)
    if ax is None:
        fig = _new_figure((PANEL_WIDTH, PANEL_HEIGHT))
        ax, density_ax = _pair_axes(fig)
    problem = curves[0].problem if curves else "binary"
    _style_main(ax, problem, title)
    several = len(curves) > 1
    for i, d in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        if d.band_low is not None and d.band_high is not None:
            ax.fill_between(d.t, d.band_low, d.band_high, color=color, alpha=0.15 if several else 0.25,
                            linewidth=0, zorder=2)
        _density_width_line(ax, d, color)
        if density_ax is not None:
            density_ax.plot(d.t, d.density, color=color, linewidth=1.2, zorder=3)
            if not several:
                density_ax.fill_between(d.t, 0.0, d.density, color=color, alpha=0.3, linewidth=0, zorder=2)
    _legend(ax, legend_fontsize, ink=[(d.t, d.yhat if d.band_low is None else d.band_low,
                                       d.yhat if d.band_high is None else d.band_high) for d in curves])
    if density_ax is not None:
        _style_lower(density_ax, problem, "density")
        density_ax.set_ylim(bottom=0.0)
    return ax.figure


def smooth_line_widths(density: np.ndarray) -> np.ndarray:
    """Line width of each segment of the smooth curve: grows with the predictions' density there."""
    dens = np.asarray(density, dtype=np.float64)
    mid = 0.5 * (dens[:-1] + dens[1:])
    top = float(np.nanmax(mid)) if mid.size and np.nanmax(mid) > 0 else 1.0
    lo, hi = SMOOTH_WIDTH
    return lo + (hi - lo) * np.clip(mid / top, 0.0, 1.0)


def _density_width_line(ax, d: SmoothDiagramData, color: str) -> None:
    """The kernel regression as a line whose width follows the density (thin where data are scarce)."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    points = np.column_stack([d.t, d.yhat])
    segments = np.stack([points[:-1], points[1:]], axis=1)
    widths = smooth_line_widths(d.density)
    ok = np.isfinite(segments).all(axis=(1, 2))
    ax.add_collection(LineCollection(segments[ok], linewidths=widths[ok], colors=color, capstyle="round",
                                     joinstyle="round", zorder=3, label="_smooth_curve"))
    ax.add_line(Line2D([], [], color=color, linewidth=2.0, label=smooth_label(d)))


def figure_size(n_panels: int, kind: str) -> tuple[tuple[float, float], int, int]:
    """Figure size (inches) and the (rows, columns) grid of ``n_panels`` panels of ``kind``."""
    per = 2 if kind == "both" else 1
    ncols = min(n_panels, 2 if per == 2 else 4)
    ncols = max(ncols, 1)
    nrows = -(-n_panels // ncols)
    scale = 1.0 if n_panels == 1 else 0.82
    return (PANEL_WIDTH * per * ncols * scale, PANEL_HEIGHT * nrows * scale + 0.35), nrows, ncols


def plot_diagram(panels: Sequence[DiagramPanel], *, kind: str = "both", title: str | None = None,
                 note: str | None = None, figsize=None):
    """The whole figure: panels (small multiples, e.g. one per class) of ``kind`` in a grid.

    Each panel has the binned diagram, the smooth one, or both side by side, each with its
    histogram or density underneath. ``title`` goes on top, ``note`` (e.g. which classes are shown)
    at the bottom. Returns the Figure.
    """
    import matplotlib

    if kind not in KINDS:
        raise CalibcliError(f"{{opt:kind}} is {kind!r}: expected one of {', '.join(KINDS)}")
    panels = list(panels)
    check_option(len(panels) >= 1, "nothing to draw: expected at least one panel")
    size, nrows, ncols = figure_size(len(panels), kind)
    with matplotlib.rc_context(_RC):
        fig = _new_figure(figsize or size)
        small = len(panels) > 1
        legend_fontsize = 7.0 if small else None
        subfigs = fig.subfigures(nrows, ncols, squeeze=False)
        for k, sf in enumerate(subfigs.flat):
            if k >= len(panels):
                continue
            p = panels[k]
            kinds = [x for x in ("binned", "smooth") if kind in (x, "both")]
            gs = sf.add_gridspec(2, len(kinds), height_ratios=[3.2, 1.0])
            for j, which in enumerate(kinds):
                ax = sf.add_subplot(gs[0, j])
                lower = sf.add_subplot(gs[1, j], sharex=ax)
                sub = _panel_title(p, which)
                if which == "binned":
                    plot_binned(p.binned, ax=ax, hist_ax=lower, title=sub, legend_fontsize=legend_fontsize)
                else:
                    plot_smooth(p.smooth, ax=ax, density_ax=lower, title=sub, legend_fontsize=legend_fontsize)
        if title:
            fig.suptitle(title, fontsize=12)
        if note:
            fig.supxlabel(note, fontsize=9, color="0.3")
    return fig


def _panel_title(p: DiagramPanel, which: str) -> str:
    """``binned (15 uniform bins)`` or ``smooth (bandwidth s* = 0.05)``, after the panel's title."""
    if which == "binned":
        b = p.binned[0] if p.binned else None
        what = f"binned ({b.n_bins} {b.strategy} bins)" if b is not None else "binned"
    else:
        sig = {round(c.sigma, 12) for c in p.smooth}
        what = f"smooth (bandwidth s* = {_fmt(p.smooth[0].sigma)})" if len(sig) == 1 else "smooth (bandwidth s* of each curve)"
    return f"{p.title} \u00b7 {what}" if p.title else what


def figure_bytes(fig, fmt: str, *, dpi: float = 150) -> bytes:
    """Render ``fig`` to PNG, SVG or PDF bytes, with no date or software version in the file.

    The same figure gives the same bytes (PNG/SVG/PDF metadata fixed; SVG ids salted with a
    constant).
    """
    import matplotlib

    if fmt not in FORMATS.values():
        raise CalibcliError(f"unknown figure format {fmt!r}: expected one of {', '.join(FORMATS.values())}")
    metadata = {
        "png": {"Software": None},
        "svg": {"Date": None, "Creator": None},
        "pdf": {"Creator": None, "Producer": None, "CreationDate": None, "ModDate": None},
    }[fmt]
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=metadata)
    return buf.getvalue()


def format_of(path: str) -> str:
    """The figure format named by ``path``'s extension (png, svg, pdf)."""
    import os

    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise CalibcliError(
            f"{{opt:output}} {path}: cannot tell the figure format from the extension {ext or '(none)'!r}: expected "
            f"{', '.join(FORMATS)}"
        )
    return FORMATS[ext]
