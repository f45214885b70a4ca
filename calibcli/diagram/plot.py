"""Reliability diagrams: the picture's data apart from its drawing (SPEC sections 6 and 8).

What a diagram shows comes from the accumulators' results: :class:`DiagramInputAccumulator` streams
one input (or one group of it) through a binned and a smooth accumulator per binary problem
(:mod:`calibcli.core.accumulator`), and :func:`binned_data_from_result` / :func:`smooth_data_from_result`
turn their results into frozen dataclasses. ``prepare_binned`` and ``prepare_smooth`` are the
one-batch case (arrays in memory, rows numbered ``0..n-1``). ``plot_binned``, ``plot_smooth`` and
``plot_diagram`` draw the data with matplotlib and return the :class:`matplotlib.figure.Figure`;
:func:`figure_bytes` renders a figure to PNG, SVG or PDF bytes that depend only on the figure (no
software version or date in the file). The split follows relplot's ``prepare_rel_diagram`` /
``plot_rel_diagram`` and scikit-learn's ``CalibrationDisplay``.

- Binned (Guo et al. 2017, "On Calibration of Modern Neural Networks"; Niculescu-Mizil and Caruana
  2005): per non-empty bin the accuracy (weighted mean of y) against the mean confidence (weighted
  mean of z), with an interval of the accuracy (``band``: the Wilson score interval by default,
  Clopper-Pearson's exact interval, or the bootstrap's percentile interval; :mod:`calibcli.diagram.bands`), the gap to
  the diagonal shaded over the bin's range, the bin counts as a histogram under the panel, and the binned
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
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from calibcli.core.errors import CalibcliError, OptionError
from calibcli.core.safe_text import for_matplotlib
from calibcli.core.validation import check_option, check_options
from calibcli.diagram.data import (
    BinnedDiagramData,
    DiagramPanel,
    SmoothDiagramData,
)
from calibcli.diagram.legends import (
    SMOOTH_WIDTH,
    _binned_ink,
    _legend,
    _smooth_ink,
    marker_areas,
    place_legends,
)

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, not when this module is
    from matplotlib.typing import LineStyleType, RcKeyType

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
LINESTYLES: tuple[LineStyleType, ...] = ("-", "--", ":", "-.", (0, (5, 1.5, 1, 1.5, 1, 1.5)), (0, (7, 2)))
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
#: Scales of the count histogram.
HIST_SCALES = ("linear", "log")
#: Defaults of :class:`FigureStyle`: text size (points) and the fewest rows of a bin the line joins.
FONT_SIZE = 8.0
MIN_COUNT = 10
#: Matplotlib settings of every figure (fixed so that the picture depends only on the data).
_RC: dict[RcKeyType, Any] = {
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
        check_options(
            {"hist_scale": HIST_SCALES}, font_size=self.font_size, min_count=self.min_count, hist_scale=self.hist_scale
        )
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


def curve_look(i: int, colors: Sequence[str] = COLORS) -> tuple[str, str, LineStyleType]:
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
        return (
            f"{head}{d.metric} = "
            f"{_fmt(d.estimate)}\n{interval.strip()}{', ' if interval else ''}{_n_text(d.n, d.weight_total)}"
        )
    return f"{head}{d.metric} = {_fmt(d.estimate)}{interval}, {_n_text(d.n, d.weight_total)}"


def smooth_label(d: SmoothDiagramData, *, compact: bool = False) -> str:
    """The legend entry of a smooth curve: its name, the SmoothECE with its interval, and n."""
    head = f"{d.name}\n" if d.name else ""
    interval = _interval_text(d.ci_low, d.ci_high)
    if compact:
        return (
            f"{head}smECE = {_fmt(d.smece)}\n{interval.strip()}{', ' if interval else ''}{_n_text(d.n, d.weight_total)}"
        )
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


# -- Binned and smooth panels ------------------------------------------------------------------


@dataclass(frozen=True)
class _Panel:
    """A binned or smooth panel being drawn: its curves, the main axes and the one under it (None: no histogram
    or density), the curves' problem, and how its legend is written."""

    curves: tuple
    ax: Any
    lower_ax: Any
    problem: str
    style: FigureStyle
    compact: bool
    names: bool
    fontsize: float | None

    def legend(self, handles: list, label: Callable, ink: Callable) -> None:
        """The legend: per curve its handle and its ``label`` (:func:`binned_label`, :func:`smooth_label`), with the
        curve's name when ``names`` (a `$` in a name is not mathtext), set where it hides least of ``ink``."""
        labels = [
            label(replace(d, name=for_matplotlib(d.name) if self.names else ""), compact=self.compact)
            for d in self.curves
        ]
        fontsize = self.fontsize or _legend_size(self.style, self.compact)
        _legend(self.ax, handles, labels, ink, fontsize, handles_shown=len(self.curves) > 1 or not self.compact)


@contextmanager
def _panel(
    data, ax, lower_ax, style: FigureStyle, title: str | None, *, compact: bool, names: bool, fontsize
) -> Iterator[_Panel]:
    """The frame of a binned or smooth panel: inside ``style``'s drawing context, a new figure with the main panel
    and the one under it when ``ax`` is None, and the main panel styled for the curves' problem; yields the
    :class:`_Panel` of the curves (``data``: one or several); then places a new figure's legends
    (:func:`place_legends`)."""
    curves = _as_tuple(data)
    standalone = ax is None
    with _drawing_context(style):
        if standalone:
            ax, lower_ax = _pair_axes(_new_figure((PANEL_WIDTH, PANEL_HEIGHT)))
        problem = curves[0].problem if curves else "binary"
        _style_main(ax, problem, title, compact=compact)
        yield _Panel(curves, ax, lower_ax, problem, style, compact, names, fontsize)
        if standalone:
            place_legends(ax.figure)


def plot_binned(
    data,
    *,
    ax=None,
    hist_ax=None,
    title: str | None = None,
    legend_fontsize=None,
    style: FigureStyle | None = None,
    compact: bool = False,
    legend_names: bool = True,
):
    """Draw one :class:`BinnedDiagramData` or several overlaid; returns the Figure.

    Without ``ax`` a new figure is made with the main panel and the histogram under it (and the legend
    placed where it hides no data); with ``ax`` the curves go there and the histogram into ``hist_ax``
    when one is given, and the caller places the legend (:func:`place_legends`). Draws, per curve:
    the points (accuracy against mean confidence) with marker area growing with the bin's rows, the
    error bars of its band (``d.band``), a line joining the points of bins with at least ``style.min_count`` rows
    (sparser bins hollow and faint, not joined), the gap to the diagonal shaded over each bin's range, and the bin
    counts as stairs (on a log scale with ``style.hist_scale == "log"``). Overlaid curves differ in
    colour, marker and line style.
    """
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    style = style or FigureStyle()
    with _panel(data, ax, hist_ax, style, title, compact=compact, names=legend_names, fontsize=legend_fontsize) as p:
        curves, ax, hist_ax = p.curves, p.ax, p.lower_ax
        several = len(curves) > 1
        weighted = any(d.weight_total != d.n for d in curves)  # frequency weights: the histogram counts them
        colors = style.colors()
        handles, lines = [], []
        for i, d in enumerate(curves):
            color, marker, linestyle = curve_look(i, colors)
            sparse = np.asarray(d.count) < style.min_count
            for lo, hi, conf, acc in zip(d.bin_lower, d.bin_upper, d.confidence, d.accuracy, strict=True):
                ax.add_patch(
                    Rectangle(
                        (lo, min(conf, acc)),
                        hi - lo,
                        abs(acc - conf),
                        facecolor=color,
                        alpha=0.10 if several else 0.18,
                        edgecolor="none",
                        zorder=2,
                    )
                )
            eb = ax.errorbar(
                d.confidence,
                d.accuracy,  # a bound no resample reached (NaN): no bar on that side
                yerr=np.nan_to_num(np.vstack([d.accuracy - d.acc_low, d.acc_high - d.accuracy]), nan=0.0),
                color=color,
                marker="",
                linestyle="none",
                elinewidth=0.9,
                capsize=0.0,
                zorder=3,
            )
            faint = np.array([to_rgba(color, 0.35 if s else 1.0) for s in sparse]).reshape(-1, 4)
            for coll in eb.lines[2]:
                coll.set_color(faint)
            line = ax.plot(
                *_joined_across_full_bins(d, style.min_count), color=color, linestyle=linestyle, linewidth=1.0, zorder=3
            )[0]
            lines.append(line)
            faces = np.array([to_rgba("white") if s else to_rgba(color) for s in sparse]).reshape(-1, 4)
            ax.scatter(
                d.confidence,
                d.accuracy,
                s=marker_areas(d.count),
                marker=marker,
                facecolors=faces,
                edgecolors=color,
                linewidths=0.8,
                zorder=4,
            )
            if hist_ax is not None:
                values = d.weights_all if weighted else d.counts_all
                floor = _log_floor(values) if style.hist_scale == "log" else 0.0
                hist_ax.stairs(
                    values,
                    d.bounds,
                    color=color,
                    fill=not several,
                    alpha=0.55 if not several else 1.0,
                    linewidth=1.0,
                    linestyle="-" if not several else linestyle,
                    baseline=floor,
                    zorder=2,
                )
            handles.append(
                Line2D([], [], color=color, marker=marker, linestyle=linestyle, linewidth=1.0, markersize=4.5)
            )
        p.legend(handles, binned_label, _binned_ink(curves, lines))
        if hist_ax is not None:
            _style_lower(hist_ax, p.problem, "weighted count" if weighted else "count")
            if style.hist_scale == "log":
                hist_ax.set_yscale("log")
                hist_ax.set_ylim(bottom=min(_log_floor(d.weights_all if weighted else d.counts_all) for d in curves))
            else:
                hist_ax.set_ylim(bottom=0.0)
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


def plot_smooth(
    data,
    *,
    ax=None,
    density_ax=None,
    title: str | None = None,
    legend_fontsize=None,
    style: FigureStyle | None = None,
    compact: bool = False,
    legend_names: bool = True,
):
    """Draw one :class:`SmoothDiagramData` or several overlaid; returns the Figure.

    Per curve: the kernel regression at s* with its pointwise bootstrap band, and the predictions'
    density in ``density_ax`` (made under ``ax`` when no ``ax`` is given). Overlaid curves differ in
    colour, line style and markers along the curve.
    """
    from matplotlib.lines import Line2D

    style = style or FigureStyle()
    with _panel(data, ax, density_ax, style, title, compact=compact, names=legend_names, fontsize=legend_fontsize) as p:
        curves, ax, density_ax = p.curves, p.ax, p.lower_ax
        several = len(curves) > 1
        colors = style.colors()
        handles = []
        for i, d in enumerate(curves):
            color, marker, linestyle = curve_look(i, colors)
            if d.band_low is not None and d.band_high is not None:
                ax.fill_between(
                    d.t, d.band_low, d.band_high, color=color, alpha=0.12 if several else 0.22, linewidth=0, zorder=2
                )
            _density_width_line(ax, d, color, linestyle if several else "-")
            if several:  # markers along the curve, so that overlays differ in greyscale too
                ax.plot(
                    d.t,
                    d.yhat,
                    linestyle="none",
                    marker=marker,
                    markevery=(i * 7 % 40 + 10, 50),
                    markersize=3.5,
                    markerfacecolor=color,
                    markeredgecolor="white",
                    markeredgewidth=0.4,
                    color=color,
                    zorder=4,
                )
            if density_ax is not None:
                density_ax.plot(
                    d.t, d.density, color=color, linewidth=1.0, linestyle=linestyle if several else "-", zorder=3
                )
                if not several:
                    density_ax.fill_between(d.t, 0.0, d.density, color=color, alpha=0.3, linewidth=0, zorder=2)
            handles.append(
                Line2D(
                    [],
                    [],
                    color=color,
                    linewidth=1.6,
                    linestyle=linestyle if several else "-",
                    marker=marker if several else "",
                    markersize=3.5,
                )
            )
        p.legend(handles, smooth_label, _smooth_ink(curves))
        if density_ax is not None:
            _style_lower(density_ax, p.problem, "density")
            density_ax.set_ylim(bottom=0.0)
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
    segments: list[np.ndarray]
    if linestyle == "-":
        pairs = np.stack([points[:-1], points[1:]], axis=1)
        ok = np.isfinite(pairs).all(axis=(1, 2))
        segments, widths = list(pairs[ok]), widths[ok]
    else:
        run = max(2, len(points) // 20)
        segments, run_widths = [], []
        for start in range(0, len(points) - 1, run):
            chunk = points[start : start + run + 1]
            ok = np.isfinite(chunk).all(axis=1)
            if ok.sum() >= 2:
                segments.append(chunk[ok])
                run_widths.append(float(np.mean(widths[start : start + run])))
        widths = np.asarray(run_widths)
    ax.add_collection(
        LineCollection(
            segments,
            linewidths=widths,
            colors=color,
            linestyles=linestyle,
            capstyle="butt" if linestyle != "-" else "round",
            joinstyle="round",
            zorder=3,
            label="_smooth_curve",
        )
    )


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


def plot_diagram(
    panels: Sequence[DiagramPanel],
    *,
    kind: str = "both",
    title: str | None = None,
    note: str | None = None,
    figsize=None,
    style: FigureStyle | None = None,
):
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
                    _share_labels(
                        ax,
                        lower,
                        first_column=(col == 0 and j == 0),
                        first_of_kind=(col == 0),
                        bottom=(k + ncols >= len(panels)),
                        own_scale=(which == "smooth"),
                    )
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
        for d in p.binned if "binned" in kinds and p.binned else p.smooth:
            if for_matplotlib(d.name) not in names:
                names.append(for_matplotlib(d.name))
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
        what = (
            f"smooth ({bandwidth} = {_fmt(p.smooth[0].sigma)})"
            if len(sig) == 1
            else f"smooth ({bandwidth} of each curve)"
        )
    if not p.title:
        return what
    name = for_matplotlib(p.title)  # a class name or a group value from the data
    return f"{name}\n{what}" if compact else f"{name} \u00b7 {what}"


def parse_figsize(text: str) -> tuple[float, float]:
    """``"W,H"`` (inches) as a pair of numbers, each between 1 and 50."""
    parts = [x.strip() for x in str(text).replace("x", ",").split(",")]
    try:
        w, h = (float(x) for x in parts)
    except ValueError:
        raise OptionError(
            "figsize", f"{{name}} is {text!r}: expected two numbers W,H in inches, e.g. 3.25,3.6"
        ) from None
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
    return _numbered_clip_ids(buf.getvalue()) if fmt == "svg" else buf.getvalue()


#: A clip rectangle's id in matplotlib's SVG, where it is defined and where it is used: ``p`` and a hash of the
#: rectangle's bounds, whose last bits move with Python's string hashing (PYTHONHASHSEED): the same small-multiples
#: figure drawn in two processes had other ids, and nothing else differed.
_CLIP_ID = re.compile(rb'(id="|url\(#)(p[0-9a-f]{10})(?=[")])')


def _numbered_clip_ids(svg: bytes) -> bytes:
    """The SVG with its clip rectangles' ids numbered in order of first appearance (``p0000000000``, ...), so the
    same figure gives the same bytes in every process; nothing drawn changes."""
    numbers: dict[bytes, bytes] = {}

    def number(m: re.Match) -> bytes:
        return m.group(1) + numbers.setdefault(m.group(2), b"p%010x" % len(numbers))

    return _CLIP_ID.sub(number, svg)


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
