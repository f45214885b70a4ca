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
from dataclasses import asdict, dataclass, replace
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
#: Colours of overlaid curves: the palette of M. Okabe and K. Ito, "Color Universal Design (CUD): how to
#: make figures and presentations that are friendly to colorblind people" (2008), safe for the common
#: colour-vision deficiencies; yellow, the faintest on white, comes last.
COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442")
#: Markers and line styles of overlaid curves, so that overlays stay apart in greyscale too (every
#: curve of up to ten has its own marker).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1.5, 1, 1.5, 1, 1.5)), (0, (7, 2)))
#: Name of the binned metric printed on the diagram.
BINNED_METRIC = "ece_l1_plugin"
#: Size of one panel (inches): width of one kind, height including the histogram. One kind is one
#: column of a two-column paper (3.25 in); ``both`` is the width of the page's text (6.5 in).
PANEL_WIDTH = 3.25
PANEL_HEIGHT = 3.4
#: Size of one diagram in small multiples (inches): four across a page's text.
SMALL_WIDTH = 1.7
SMALL_HEIGHT = 2.4
#: Height added for the figure's title (inches).
TITLE_HEIGHT = 0.35
#: Axis limits of [0, 1] quantities, with a margin so that points at 0 or 1 are drawn whole.
LIMITS = (-0.02, 1.02)
#: Line width of the smooth curve where the predictions' density is zero / at its maximum (seed 003
#: encodes the density in the curve's width).
SMOOTH_WIDTH = (0.4, 2.6)
#: Marker area (points^2) of the emptiest and the fullest bin: a bin's area grows with its row count.
MARKER_AREA = (4.0, 36.0)
#: Scales of the count histogram.
HIST_SCALES = ("linear", "log")
#: Defaults of :class:`FigureStyle`: text size (points) and the fewest rows of a bin the line joins.
FONT_SIZE = 8.0
MIN_COUNT = 10
#: Matplotlib settings of every figure (fixed so that the picture depends only on the data).
_RC = {
    "svg.hashsalt": "calibcli",
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "path.simplify": True,
}


def _rc(font_size: float = FONT_SIZE) -> dict:
    """Matplotlib settings of a figure with text of ``font_size`` points (ticks and legend a point smaller)."""
    smaller = max(1.0, font_size - 1.0)
    return {
        **_RC,
        "font.size": font_size,
        "axes.titlesize": font_size,
        "axes.labelsize": font_size,
        "legend.fontsize": smaller,
        "xtick.labelsize": smaller,
        "ytick.labelsize": smaller,
        "figure.titlesize": font_size + 1.0,
        "axes.linewidth": 0.7,
        "xtick.major.width": 0.7,
        "ytick.major.width": 0.7,
        "xtick.major.size": 2.5,
        "ytick.major.size": 2.5,
        "legend.handlelength": 1.6,
        "legend.borderpad": 0.3,
        "legend.labelspacing": 0.3,
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


@dataclass(frozen=True)
class FigureStyle:
    """How a figure looks, apart from what it shows.

    ``font_size`` (points) is the size of the text (ticks and legends a point smaller); the default
    reads at a printed width of 3.25 in, a column of a two-column paper. Bins with fewer than
    ``min_count`` rows are drawn hollow and faint, and the line joining the points skips them.
    ``hist_scale`` is the count histogram's scale (``linear`` or ``log``, which shows thin bins).
    ``style`` is a matplotlib style name or a ``.mplstyle`` file applied under calibcli's settings
    (its colours replace the default palette). Options are checked here, by name.
    """

    font_size: float = FONT_SIZE
    min_count: int = MIN_COUNT
    hist_scale: str = "linear"
    style: str | None = None

    def __post_init__(self):
        from calibcli.validation import check_options

        check_options({"hist_scale": HIST_SCALES}, font_size=self.font_size, min_count=self.min_count,
                      hist_scale=self.hist_scale)
        if self.style is not None:
            check_style(self.style)

    def colors(self) -> tuple[str, ...]:
        """The curves' colours: the style's colour cycle when a style is given, else :data:`COLORS`."""
        if self.style is None:
            return COLORS
        import matplotlib

        with _drawing_context(self):
            cycle = matplotlib.rcParams["axes.prop_cycle"].by_key().get("color")
        return tuple(cycle) if cycle else COLORS


def check_style(style: str) -> str:
    """``style`` is a matplotlib style name or an existing ``.mplstyle`` file; returns it."""
    import os

    import matplotlib.style

    if style.endswith(".mplstyle") or os.sep in style or (os.altsep and os.altsep in style):
        if not os.path.isfile(style):
            raise CalibcliError(f"{{opt:style}} {style}: no such style file: check the path")
        return style
    available = sorted(matplotlib.style.available)
    if style not in available and style != "default":
        raise CalibcliError(
            f"{{opt:style}} is {style!r}: expected a .mplstyle file or one of matplotlib's styles: "
            f"{', '.join(['default', *available])}"
        )
    return style


def _drawing_context(fs: FigureStyle):
    """The style (when given), then calibcli's text sizes and reproducibility settings over it."""
    from contextlib import ExitStack

    import matplotlib
    import matplotlib.style

    stack = ExitStack()
    if fs.style is not None:
        stack.enter_context(matplotlib.style.context(fs.style))
    stack.enter_context(matplotlib.rc_context(_rc(fs.font_size)))
    return stack


def curve_look(i: int, colors: Sequence[str] = COLORS) -> tuple[str, str, object]:
    """Colour, marker and line style of the ``i``-th overlaid curve."""
    return colors[i % len(colors)], MARKERS[i % len(MARKERS)], LINESTYLES[i % len(LINESTYLES)]


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"


def _interval_text(low, high) -> str:
    return "" if low is None or high is None else f" [{_fmt(low)}, {_fmt(high)}]"


def binned_label(d: BinnedDiagramData, *, compact: bool = False) -> str:
    """The legend entry of a binned curve: its name, the metric with its interval, and n (``compact``:
    the interval and n on a line of their own, for small multiples)."""
    head = f"{d.name}\n" if d.name else ""
    interval = _interval_text(d.ci_low, d.ci_high)
    if compact:
        return f"{head}{d.metric} = {_fmt(d.estimate)}\n{interval.strip()}{', ' if interval else ''}{_n_text(d.n, d.weight_total)}"
    return f"{head}{d.metric} = {_fmt(d.estimate)}{interval}, {_n_text(d.n, d.weight_total)}"


def smooth_label(d: SmoothDiagramData, *, compact: bool = False) -> str:
    """The legend entry of a smooth curve: its name, the SmoothECE with its interval, and n."""
    head = f"{d.name}\n" if d.name else ""
    interval = _interval_text(d.ci_low, d.ci_high)
    if compact:
        return f"{head}smECE = {_fmt(d.smece)}\n{interval.strip()}{', ' if interval else ''}{_n_text(d.n, d.weight_total)}"
    return f"{head}smECE = {_fmt(d.smece)}{interval}, {_n_text(d.n, d.weight_total)}"


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


def _pair_axes(fig, *, ratio: float = 2.6):
    gs = fig.add_gridspec(2, 1, height_ratios=[ratio, 1.0])
    ax = fig.add_subplot(gs[0, 0])
    return ax, fig.add_subplot(gs[1, 0], sharex=ax)


def _style_main(ax, problem: str, title: str | None, *, compact: bool = False) -> None:
    ax.plot([0, 1], [0, 1], color="0.5", linestyle=(0, (4, 3)), linewidth=0.8, zorder=1)
    ax.set_xlim(*LIMITS)
    ax.set_ylim(*LIMITS)
    ax.set_aspect("auto")
    label = _axis_labels(problem)[1]
    ax.set_ylabel(label.replace("frequency of", "frequency\nof") if compact else label)
    ax.grid(True, color="0.92", linewidth=0.5, zorder=0)
    ax.tick_params(labelbottom=False)
    if title:
        ax.set_title(title)


def _style_lower(ax, problem: str, ylabel: str) -> None:
    ax.set_xlabel(_axis_labels(problem)[0])
    ax.set_ylabel(ylabel)
    ax.set_xlim(*LIMITS)
    ax.grid(True, axis="x", color="0.92", linewidth=0.5, zorder=0)


def marker_areas(count: np.ndarray) -> np.ndarray:
    """Marker area (points^2) of each bin: from :data:`MARKER_AREA`'s first value for an almost empty
    bin to its second for the fullest bin, proportional to the row count in between (area, not
    diameter, carries the count, so a sparse bin does not look as weighty as a full one)."""
    c = np.asarray(count, dtype=np.float64)
    top = float(c.max()) if c.size and c.max() > 0 else 1.0
    lo, hi = MARKER_AREA
    return lo + (hi - lo) * c / top


# -- Legends that hide no data -----------------------------------------------------------------

#: Where a legend may go inside a panel, in order of preference: the off-diagonal corners first (where a
#: calibrated curve never goes), then the others.
LEGEND_PLACES = ("upper left", "lower right", "lower left", "upper right", "center left", "center right")
#: What each main panel's data covers, in display coordinates: a function of the axes returning an
#: (m, 4) array of boxes (x0, y0, x1, y1). Filled by plot_binned / plot_smooth, read by place_legends.
_INK = None  # a weakref.WeakKeyDictionary, made on first use


def _ink_registry():
    global _INK
    if _INK is None:
        import weakref

        _INK = weakref.WeakKeyDictionary()
    return _INK


def _boxes(x0, y0, x1, y1) -> np.ndarray:
    b = np.column_stack([np.ravel(x0), np.ravel(y0), np.ravel(x1), np.ravel(y1)]).astype(np.float64)
    return b[np.isfinite(b).all(axis=1)]


def _points_px(ax, x, y) -> np.ndarray:
    xy = np.column_stack([np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)])
    return ax.transData.transform(xy) if len(xy) else np.zeros((0, 2))


def _pt(ax, points: float) -> float:
    """``points`` in display pixels."""
    return points * ax.figure.dpi / 72.0


def _polyline_boxes(ax, x, y, half_width_pt: float, samples: int = 12) -> np.ndarray:
    """Boxes covering a polyline (NaN breaks it): points along each segment, ``half_width_pt`` around."""
    p = _points_px(ax, x, y)
    if len(p) < 2:
        return _boxes([], [], [], [])
    a, b = p[:-1], p[1:]
    ok = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    a, b = a[ok], b[ok]
    f = np.linspace(0.0, 1.0, samples)[None, :, None]
    pts = (a[:, None, :] * (1 - f) + b[:, None, :] * f).reshape(-1, 2)
    h = _pt(ax, half_width_pt)
    return _boxes(pts[:, 0] - h, pts[:, 1] - h, pts[:, 0] + h, pts[:, 1] + h)


def _binned_ink(curves, lines) -> Callable:
    def ink(ax) -> np.ndarray:
        parts = []
        for d, line in zip(curves, lines):
            c = _points_px(ax, d.confidence, d.accuracy)
            r = _pt(ax, np.sqrt(marker_areas(d.count)) / 2.0 + 0.5)
            parts.append(_boxes(c[:, 0] - r, c[:, 1] - r, c[:, 0] + r, c[:, 1] + r))
            lo, hi = _points_px(ax, d.confidence, d.acc_low), _points_px(ax, d.confidence, d.acc_high)
            cap = _pt(ax, 1.0)
            parts.append(_boxes(lo[:, 0] - cap, lo[:, 1], hi[:, 0] + cap, hi[:, 1]))
            g0 = _points_px(ax, d.bin_lower, np.minimum(d.confidence, d.accuracy))
            g1 = _points_px(ax, d.bin_upper, np.maximum(d.confidence, d.accuracy))
            parts.append(_boxes(g0[:, 0], g0[:, 1], g1[:, 0], g1[:, 1]))
            parts.append(_polyline_boxes(ax, line.get_xdata(), line.get_ydata(), 0.6))
        return np.concatenate(parts) if parts else _boxes([], [], [], [])

    return ink


def _smooth_ink(curves) -> Callable:
    def ink(ax) -> np.ndarray:
        parts = []
        for d in curves:
            if d.band_low is not None and d.band_high is not None:
                lo, hi = _points_px(ax, d.t, d.band_low), _points_px(ax, d.t, d.band_high)
                step = np.abs(np.diff(lo[:, 0])).max() if len(lo) > 1 else 1.0
                parts.append(_boxes(lo[:, 0] - step / 2, lo[:, 1], hi[:, 0] + step / 2, hi[:, 1]))
            parts.append(_polyline_boxes(ax, d.t, d.yhat, SMOOTH_WIDTH[1] / 2, samples=3))
        return np.concatenate(parts) if parts else _boxes([], [], [], [])

    return ink


def _clearance(bbox, boxes: np.ndarray) -> float:
    """Distance (display units) from the box ``bbox`` to the nearest of ``boxes``: 0 when they meet,
    infinite when there are none."""
    if not len(boxes):
        return float("inf")
    dx = np.maximum.reduce([boxes[:, 0] - bbox.x1, bbox.x0 - boxes[:, 2], np.zeros(len(boxes))])
    dy = np.maximum.reduce([boxes[:, 1] - bbox.y1, bbox.y0 - boxes[:, 3], np.zeros(len(boxes))])
    return float(np.hypot(dx, dy).min())


def _choose_place(legend, renderer, boxes: np.ndarray) -> str | None:
    """Where ``legend`` hides nothing: of the two off-diagonal corners, the free one farthest from the
    data; else the first free place of :data:`LEGEND_PLACES`; None when every place hides something
    or the legend is wider or taller than the panel."""
    frame = legend.axes.bbox
    room = {}
    for place in LEGEND_PLACES:
        legend.set_loc(place)
        box = legend.get_window_extent(renderer)
        if box.x0 < frame.x0 - 0.5 or box.x1 > frame.x1 + 0.5 or box.y0 < frame.y0 - 0.5 or box.y1 > frame.y1 + 0.5:
            return None
        room[place] = _clearance(box, boxes)
    corners = [p for p in LEGEND_PLACES[:2] if room[p] > 0]
    if corners:
        return max(corners, key=lambda p: (room[p], p == LEGEND_PLACES[0]))
    return next((p for p in LEGEND_PLACES[2:] if room[p] > 0), None)


def _legend(ax, handles, labels, ink: Callable, fontsize=None, *, handles_shown: bool = True) -> None:
    """The legend of a main panel; :func:`place_legends` then puts it where it hides nothing. Without
    ``handles_shown`` (one curve in a small panel) the legend is its text alone."""
    extra = {} if handles_shown else {"handlelength": 0.0, "handletextpad": 0.0}
    legend = ax.legend(handles, labels, loc=LEGEND_PLACES[0], frameon=True, framealpha=0.92, fontsize=fontsize,
                       borderaxespad=0.35, edgecolor="0.8", fancybox=False, **extra)
    if not handles_shown:
        for handle in legend.legend_handles:
            handle.set_visible(False)
    _ink_registry()[ax] = ink


def _legend_outside(ax) -> None:
    """Move ``ax``'s legend above the panel (its title above the legend): a place of its own."""
    legend = ax.get_legend()
    legend.set_loc("lower center")
    legend.set_bbox_to_anchor((0.0, 1.0, 1.0, 0.0), transform=ax.transAxes)
    renderer = ax.figure.canvas.get_renderer()
    height_pt = legend.get_window_extent(renderer).height * 72.0 / ax.figure.dpi
    if ax.get_title():
        # the title, raised over the legend, keeps the legend's room in the layout; the legend itself is
        # left out of it, so that a legend a little wider than its panel does not shrink the panel
        # (the title's pad is to its baseline: leave room for descenders under it)
        ax.set_title(ax.get_title(), pad=height_pt + 3.0 + 0.3 * ax.title.get_fontsize())
        legend.set_in_layout(False)


def _fit_labels(axes, renderer) -> bool:
    """Wrap a main panel's y label taller than the panel (``observed frequency`` / ``of positives``), and
    make it smaller if it still is, so that it does not run into the label under it; returns whether one
    changed."""
    wrapped = False
    for ax in axes:
        label = ax.yaxis.label
        text = label.get_text()
        if not label.get_visible() or not text:
            continue
        height = label.get_window_extent(renderer).height
        # room: the panel's height, or down to the label of the panel under it (centred on the panel)
        centre = 0.5 * (ax.bbox.y0 + ax.bbox.y1)
        below = [other.yaxis.label for other in ax.get_shared_x_axes().get_siblings(ax)
                 if other is not ax and other.bbox.y1 <= ax.bbox.y0 + 0.5 and other.yaxis.label.get_text()]
        room = max([ax.bbox.height] + [2.0 * (centre - lab.get_window_extent(renderer).y1) - 4.0 for lab in below])
        if height <= room:
            continue
        if " " in text and "\n" not in text:
            words = text.split(" ")
            half = max(1, len(words) // 2)
            label.set_text(" ".join(words[:half]) + "\n" + " ".join(words[half:]))
            wrapped = True
        elif label.get_fontsize() > 5.0:  # wrapped and still too tall: a smaller size, down to 5 pt
            label.set_fontsize(max(5.0, label.get_fontsize() * room / height * 0.97))
            wrapped = True
    return wrapped


def _fit_title(fig, renderer) -> bool:
    """Break the figure's title over two lines (after a comma near its middle, else a space) when it is
    wider than the figure; returns whether it was broken."""
    title = getattr(fig, "_suptitle", None)
    text = "" if title is None else title.get_text()
    if "\n" in text or " " not in text or title.get_window_extent(renderer).width <= fig.bbox.width * 0.98:
        return False
    middle = len(text) / 2
    commas = [i + 1 for i, c in enumerate(text) if c == "," and i + 1 < len(text) and text[i + 1] == " "]
    spaces = [i for i, c in enumerate(text) if c == " "]
    cut = min(commas or spaces, key=lambda i: abs(i - middle))
    title.set_text(text[:cut].rstrip() + "\n" + text[cut:].lstrip())
    return True


def place_legends(fig) -> dict:
    """Put every main panel's legend where it hides no data, by the rendered extents.

    After the figure's layout is made, each legend goes where its window extent meets none of the
    data's (markers at their drawn size, error bars, the line joining the bins, the shaded gaps, the
    smooth curve and its band): the off-diagonal corner (upper left or lower right, where a calibrated
    curve never goes) farther from the data, else the first free place of :data:`LEGEND_PLACES`.
    When no place inside is free, the legend goes above the panel, outside the data, and the title
    above it. Moving a legend out shrinks the panels, so the check repeats until nothing moves.
    Returns ``{axes: place}`` (``"outside"`` for those moved out).
    """
    registry = _ink_registry()
    entries = [(ax, ink) for ax, ink in list(registry.items())
               if ax.get_figure(root=True) is fig and ax.get_legend() is not None]
    placed: dict = {}
    for _ in range(4):
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        moved = _fit_labels([ax for ax, _ in entries], renderer) | _fit_title(fig, renderer)
        for ax, ink in entries:
            if placed.get(ax) == "outside":
                continue
            legend = ax.get_legend()
            place = _choose_place(legend, renderer, ink(ax))
            if place is not None:
                legend.set_loc(place)
                moved |= placed.get(ax) not in (None, place)
                placed[ax] = place
            else:
                _legend_outside(ax)
                placed[ax] = "outside"
                moved = True
        if not moved:
            break
    for ax, _ in entries:
        registry.pop(ax, None)
    return placed


# -- Binned and smooth panels ------------------------------------------------------------------


def plot_binned(data, *, ax=None, hist_ax=None, title: str | None = None, legend_fontsize=None,
                style: FigureStyle | None = None, compact: bool = False, legend_names: bool = True):
    """Draw one :class:`BinnedDiagramData` or several overlaid; returns the Figure.

    Without ``ax`` a new figure is made with the main panel and the histogram under it (and the legend
    placed where it hides no data); with ``ax`` the curves go there and the histogram into ``hist_ax``
    when one is given, and the caller places the legend (:func:`place_legends`). Draws, per curve:
    the points (accuracy against mean confidence) with marker area growing with the bin's rows, Wilson
    error bars, a line joining the points of bins with at least ``style.min_count`` rows (sparser bins
    hollow and faint, not joined), the gap to the diagonal shaded over each bin's range, and the bin
    counts as stairs (on a log scale with ``style.hist_scale == "log"``). Overlaid curves differ in
    colour, marker and line style.
    """
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    style = style or FigureStyle()
    curves = _as_tuple(data)
    standalone = ax is None
    with _drawing_context(style):
        if standalone:
            fig = _new_figure((PANEL_WIDTH, PANEL_HEIGHT))
            ax, hist_ax = _pair_axes(fig)
        problem = curves[0].problem if curves else "binary"
        _style_main(ax, problem, title, compact=compact)
        several = len(curves) > 1
        weighted = any(d.weight_total != d.n for d in curves)  # frequency weights: the histogram counts them
        colors = style.colors()
        handles, labels, lines = [], [], []
        for i, d in enumerate(curves):
            color, marker, linestyle = curve_look(i, colors)
            sparse = np.asarray(d.count) < style.min_count
            for lo, hi, conf, acc in zip(d.bin_lower, d.bin_upper, d.confidence, d.accuracy):
                ax.add_patch(Rectangle((lo, min(conf, acc)), hi - lo, abs(acc - conf), facecolor=color,
                                       alpha=0.10 if several else 0.18, edgecolor="none", zorder=2))
            eb = ax.errorbar(
                d.confidence, d.accuracy, yerr=np.vstack([d.accuracy - d.acc_low, d.acc_high - d.accuracy]),
                color=color, marker="", linestyle="none", elinewidth=0.9, capsize=0.0, zorder=3,
            )
            faint = np.array([to_rgba(color, 0.35 if s else 1.0) for s in sparse]).reshape(-1, 4)
            for coll in eb.lines[2]:
                coll.set_color(faint)
            line = ax.plot(*_joined_across_full_bins(d, style.min_count), color=color, linestyle=linestyle,
                           linewidth=1.0, zorder=3)[0]
            lines.append(line)
            faces = np.array([to_rgba("white") if s else to_rgba(color) for s in sparse]).reshape(-1, 4)
            ax.scatter(d.confidence, d.accuracy, s=marker_areas(d.count), marker=marker, facecolors=faces,
                       edgecolors=color, linewidths=0.8, zorder=4)
            if hist_ax is not None:
                values = d.weights_all if weighted else d.counts_all
                floor = _log_floor(values) if style.hist_scale == "log" else 0.0
                hist_ax.stairs(values, d.bounds, color=color, fill=not several, alpha=0.55 if not several else 1.0,
                               linewidth=1.0, linestyle="-" if not several else linestyle, baseline=floor, zorder=2)
            handles.append(Line2D([], [], color=color, marker=marker, linestyle=linestyle, linewidth=1.0,
                                  markersize=4.5))
            shown = d if legend_names else replace(d, name="")
            labels.append(binned_label(shown, compact=compact))
        _legend(ax, handles, labels, _binned_ink(curves, lines), legend_fontsize or _legend_size(style, compact),
                handles_shown=several or not compact)
        if hist_ax is not None:
            _style_lower(hist_ax, problem, "weighted count" if weighted else "count")
            if style.hist_scale == "log":
                hist_ax.set_yscale("log")
                hist_ax.set_ylim(bottom=min(_log_floor(d.weights_all if weighted else d.counts_all) for d in curves))
            else:
                hist_ax.set_ylim(bottom=0.0)
        if standalone:
            place_legends(ax.figure)
    return ax.figure


def _legend_size(style: FigureStyle, compact: bool) -> float:
    """Legend text size: a point under the text, a point and a half in small multiples."""
    return max(1.0, style.font_size - (1.5 if compact else 1.0))


def _log_floor(values) -> float:
    """Where a log-scale histogram's bars start: half the smallest positive count (0.5 for counts)."""
    v = np.asarray(values, dtype=np.float64)
    positive = v[v > 0]
    return float(min(0.5, 0.5 * positive.min())) if positive.size else 0.5


def _joined_across_full_bins(d: BinnedDiagramData, min_count: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The points' line, broken (a NaN) wherever empty bins lie between two drawn points, so that a
    straight segment never suggests data where there is none, and at every bin with fewer than
    ``min_count`` rows (its point is NaN: no segment reaches it, so a few rows do not swing the line)."""
    x, y = np.asarray(d.confidence, dtype=np.float64), np.asarray(d.accuracy, dtype=np.float64)
    sparse = np.asarray(d.count) < min_count
    x, y = np.where(sparse, np.nan, x), np.where(sparse, np.nan, y)
    gap = np.flatnonzero(np.asarray(d.bin_lower)[1:] > np.asarray(d.bin_upper)[:-1]) + 1
    return np.insert(x, gap, np.nan), np.insert(y, gap, np.nan)


def plot_smooth(data, *, ax=None, density_ax=None, title: str | None = None, legend_fontsize=None,
                style: FigureStyle | None = None, compact: bool = False, legend_names: bool = True):
    """Draw one :class:`SmoothDiagramData` or several overlaid; returns the Figure.

    Per curve: the kernel regression at s* with its pointwise bootstrap band, and the predictions'
    density in ``density_ax`` (made under ``ax`` when no ``ax`` is given). Overlaid curves differ in
    colour, line style and markers along the curve.
    """
    from matplotlib.lines import Line2D

    style = style or FigureStyle()
    curves = _as_tuple(data)
    standalone = ax is None
    with _drawing_context(style):
        if standalone:
            fig = _new_figure((PANEL_WIDTH, PANEL_HEIGHT))
            ax, density_ax = _pair_axes(fig)
        problem = curves[0].problem if curves else "binary"
        _style_main(ax, problem, title, compact=compact)
        several = len(curves) > 1
        colors = style.colors()
        handles, labels = [], []
        for i, d in enumerate(curves):
            color, marker, linestyle = curve_look(i, colors)
            if d.band_low is not None and d.band_high is not None:
                ax.fill_between(d.t, d.band_low, d.band_high, color=color, alpha=0.12 if several else 0.22,
                                linewidth=0, zorder=2)
            _density_width_line(ax, d, color, linestyle if several else "-")
            if several:  # markers along the curve, so that overlays differ in greyscale too
                ax.plot(d.t, d.yhat, linestyle="none", marker=marker, markevery=(i * 7 % 40 + 10, 50),
                        markersize=3.5, markerfacecolor=color, markeredgecolor="white", markeredgewidth=0.4,
                        color=color, zorder=4)
            if density_ax is not None:
                density_ax.plot(d.t, d.density, color=color, linewidth=1.0, linestyle=linestyle if several else "-",
                                zorder=3)
                if not several:
                    density_ax.fill_between(d.t, 0.0, d.density, color=color, alpha=0.3, linewidth=0, zorder=2)
            handles.append(Line2D([], [], color=color, linewidth=1.6, linestyle=linestyle if several else "-",
                                  marker=marker if several else "", markersize=3.5))
            shown = d if legend_names else replace(d, name="")
            labels.append(smooth_label(shown, compact=compact))
        _legend(ax, handles, labels, _smooth_ink(curves), legend_fontsize or _legend_size(style, compact),
                handles_shown=several or not compact)
        if density_ax is not None:
            _style_lower(density_ax, problem, "density")
            density_ax.set_ylim(bottom=0.0)
        if standalone:
            place_legends(ax.figure)
    return ax.figure


def smooth_line_widths(density: np.ndarray) -> np.ndarray:
    """Line width of each segment of the smooth curve: grows with the predictions' density there."""
    dens = np.asarray(density, dtype=np.float64)
    mid = 0.5 * (dens[:-1] + dens[1:])
    top = float(np.nanmax(mid)) if mid.size and np.nanmax(mid) > 0 else 1.0
    lo, hi = SMOOTH_WIDTH
    return lo + (hi - lo) * np.clip(mid / top, 0.0, 1.0)


def _density_width_line(ax, d: SmoothDiagramData, color: str, linestyle="-") -> None:
    """The kernel regression as a line whose width follows the density (thin where data are scarce).

    A solid curve is one segment per pair of points; a dashed one (an overlay) is drawn in runs of
    about a twentieth of the curve, each at its mean width, so that the dash pattern shows.
    """
    from matplotlib.collections import LineCollection

    points = np.column_stack([d.t, d.yhat])
    widths = smooth_line_widths(d.density)
    if linestyle == "-":
        segments = np.stack([points[:-1], points[1:]], axis=1)
        ok = np.isfinite(segments).all(axis=(1, 2))
        segments, widths = list(segments[ok]), widths[ok]
    else:
        run = max(2, len(points) // 20)
        segments, run_widths = [], []
        for start in range(0, len(points) - 1, run):
            chunk = points[start:start + run + 1]
            ok = np.isfinite(chunk).all(axis=1)
            if ok.sum() >= 2:
                segments.append(chunk[ok])
                run_widths.append(float(np.mean(widths[start:start + run])))
        widths = np.asarray(run_widths)
    ax.add_collection(LineCollection(segments, linewidths=widths, colors=color, linestyles=linestyle,
                                     capstyle="butt" if linestyle != "-" else "round", joinstyle="round",
                                     zorder=3, label="_smooth_curve"))


# -- The whole figure --------------------------------------------------------------------------


def figure_size(n_panels: int, kind: str) -> tuple[tuple[float, float], int, int]:
    """Figure size (inches) and the (rows, columns) grid of ``n_panels`` panels of ``kind``.

    One panel: :data:`PANEL_WIDTH` per kind (a paper's column; ``both`` is the text's width). Small
    multiples: :data:`SMALL_WIDTH` per diagram, two binned-and-smooth pairs or four single diagrams
    across (6.8 in, a page's text), so that a page of them prints at its natural size.
    """
    per = 2 if kind == "both" else 1
    ncols = max(1, min(n_panels, 2 if per == 2 else 4))
    nrows = -(-n_panels // ncols)
    if n_panels == 1:
        return (PANEL_WIDTH * per, PANEL_HEIGHT + TITLE_HEIGHT), 1, 1
    return (SMALL_WIDTH * per * ncols, SMALL_HEIGHT * nrows + TITLE_HEIGHT), nrows, ncols


def plot_diagram(panels: Sequence[DiagramPanel], *, kind: str = "both", title: str | None = None,
                 note: str | None = None, figsize=None, style: FigureStyle | None = None):
    """The whole figure: panels (small multiples, e.g. one per class) of ``kind`` in a grid.

    Each panel has the binned diagram, the smooth one, or both side by side, each with its
    histogram or density underneath. ``title`` goes on top, ``note`` (e.g. which classes are shown)
    at the bottom. Small multiples share their axes (labels on the outer panels only, counts and
    densities on one scale per kind) and, when curves are overlaid, one legend naming them under the
    grid (each panel's legend then gives its numbers). Every legend is placed where it hides no data
    (:func:`place_legends`). ``figsize`` (inches) overrides :func:`figure_size`. Returns the Figure.
    """
    if kind not in KINDS:
        raise CalibcliError(f"{{opt:kind}} is {kind!r}: expected one of {', '.join(KINDS)}")
    panels = list(panels)
    check_option(len(panels) >= 1, "nothing to draw: expected at least one panel")
    style = style or FigureStyle()
    size, nrows, ncols = figure_size(len(panels), kind)
    kinds = [x for x in ("binned", "smooth") if kind in (x, "both")]
    small = len(panels) > 1
    n_curves = max(max(len(p.binned), len(p.smooth)) for p in panels)
    shared_legend = small and n_curves > 1
    with _drawing_context(style):
        fig = _new_figure(figsize or size)
        # the first column also holds the y labels: a little wider, so that its panels match the others
        widths = [1.12] + [1.0] * (ncols - 1) if small and ncols > 1 else None
        subfigs = fig.subfigures(nrows, ncols, squeeze=False, width_ratios=widths)
        lowers: dict[str, list] = {}  # the histograms / densities of each kind, put on one scale
        for k, sf in enumerate(subfigs.flat):
            if k >= len(panels):
                continue
            p = panels[k]
            row, col = divmod(k, ncols)
            gs = sf.add_gridspec(2, len(kinds), height_ratios=[2.6, 1.0])
            for j, which in enumerate(kinds):
                ax = sf.add_subplot(gs[0, j])
                lower = sf.add_subplot(gs[1, j], sharex=ax)
                lowers.setdefault(which, []).append(lower)
                sub = _panel_title(p, which, compact=small)
                common = dict(ax=ax, title=sub, style=style, compact=small, legend_names=not shared_legend)
                if which == "binned":
                    plot_binned(p.binned, hist_ax=lower, **common)
                else:
                    plot_smooth(p.smooth, density_ax=lower, **common)
                if small:
                    _share_labels(ax, lower, first_column=(col == 0 and j == 0), first_of_kind=(col == 0),
                                  bottom=(k + ncols >= len(panels)), own_scale=(which == "smooth"))
        counts = lowers.get("binned", [])
        if small and counts:
            # the counts on one scale (set, not shared: axes shared across subfigures redraw the figure at
            # each change); densities keep their own, a spike in one class would flatten the others
            top = max(a.get_ylim()[1] for a in counts)
            for a in counts:
                a.set_ylim(top=top)
        if shared_legend:
            _shared_legend(fig, panels, kinds, style)
        if title:
            fig.suptitle(title)
        if note:
            fig.supxlabel(note, fontsize=max(1.0, style.font_size - 1.0), color="0.3")
        place_legends(fig)
    return fig


def _share_labels(ax, lower, *, first_column: bool, first_of_kind: bool, bottom: bool, own_scale: bool) -> None:
    """Small multiples: axis labels once per row and column (the text stays, hidden, for readers of
    the figure's objects). The reliability panels all span [0, 1] and the counts share a scale: their
    tick labels on the first column only; a density (``own_scale``) keeps its tick labels."""
    if not first_column:
        ax.yaxis.label.set_visible(False)
        ax.tick_params(labelleft=False)
    if not first_of_kind:
        lower.yaxis.label.set_visible(False)
        if not own_scale:
            lower.tick_params(labelleft=False)
    if not bottom:
        lower.xaxis.label.set_visible(False)


def _shared_legend(fig, panels, kinds, style: FigureStyle) -> None:
    """One legend above small multiples naming the overlaid curves by colour, marker and line style."""
    from matplotlib.lines import Line2D

    names: list[str] = []
    for p in panels:
        for d in (p.binned if "binned" in kinds and p.binned else p.smooth):
            if d.name not in names:
                names.append(d.name)
    colors = style.colors()
    handles = []
    for i, _ in enumerate(names):
        color, marker, linestyle = curve_look(i, colors)
        handles.append(Line2D([], [], color=color, marker=marker, linestyle=linestyle, linewidth=1.2, markersize=4.5))
    fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 4), frameon=False)


def _panel_title(p: DiagramPanel, which: str, *, compact: bool = False) -> str:
    """``binned (15 uniform bins)`` or ``smooth (bandwidth s* = 0.05)``, after the panel's title (``compact``,
    for small multiples: the panel's title on a line of its own and ``s* = 0.05``)."""
    if which == "binned":
        b = p.binned[0] if p.binned else None
        what = f"binned ({b.n_bins} {b.strategy} bins)" if b is not None else "binned"
    else:
        sig = {round(c.sigma, 12) for c in p.smooth}
        bandwidth = "s*" if compact else "bandwidth s*"
        what = f"smooth ({bandwidth} = {_fmt(p.smooth[0].sigma)})" if len(sig) == 1 else f"smooth ({bandwidth} of each curve)"
    if not p.title:
        return what
    return f"{p.title}\n{what}" if compact else f"{p.title} \u00b7 {what}"


def parse_figsize(text: str) -> tuple[float, float]:
    """``"W,H"`` (inches) as a pair of numbers, each between 1 and 50."""
    from calibcli.errors import OptionError

    parts = [x.strip() for x in str(text).replace("x", ",").split(",")]
    try:
        w, h = (float(x) for x in parts)
    except ValueError:
        raise OptionError("figsize", f"{{name}} is {text!r}: expected two numbers W,H in inches, e.g. 3.25,3.6") from None
    if not (np.isfinite(w) and np.isfinite(h) and 1.0 <= w <= 50.0 and 1.0 <= h <= 50.0):
        raise OptionError("figsize", f"{{name}} is {text!r}: expected a width and a height between 1 and 50 inches")
    return w, h


def figure_bytes(fig, fmt: str, *, dpi: float = 300) -> bytes:
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
