"""Diagrams of regression predictions (SPEC 6, 10): the calibration curve and the PIT histogram.

``calibcli diagram`` on a regression input (a Gaussian mean and std, quantiles, central intervals or samples,
as ``calibcli regression`` reads them) streams each input through the regression family's own accumulator
(:class:`calibcli.regression.accumulator.RegressionAccumulator`), so every number drawn is the one
``calibcli regression --json`` prints for the same options:

- the calibration curve: the observed proportion against the expected one at each level (uncertainty-toolbox's
  ``plot_calibration``: the curve, the diagonal, the area between them), with the percentile band of the
  seeded Poisson bootstrap at each level (``calibration_curve.band`` of the regression report), and MACE with
  its interval in the legend;
- the PIT histogram (Gneiting, Balabdaoui and Raftery 2007, "Probabilistic forecasts, calibration and
  sharpness"): the density of the PIT values in ``--pit-bins`` bins, the uniform density 1 that a calibrated
  prediction gives, and the band a uniform PIT's bars fall in (each bin's count Binomial(n, 1/bins), its central
  ``1 - alpha`` interval, pointwise), with the KS p-value in the legend. Interval inputs have no PIT: their
  figure is the curve alone.

:func:`prepare_regression_diagram` turns a regression report's problem into :class:`RegressionDiagramData`;
:func:`plot_regression_diagram` draws one or several of them (overlaid) and returns the figure; matplotlib is
imported only there.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import warn
from calibcli.core.safe_text import for_matplotlib
from calibcli.core.validation import check_option
from calibcli.diagram import plot as dg
from calibcli.diagram.legends import _boxes, _legend, _points_px, _polyline_boxes, place_legends
from calibcli.diagram.plot import curve_look
from calibcli.diagram.run import MAX_PIXELS, _curve_names, _group_text
from calibcli.engines.pipeline import run
from calibcli.regression import family as regression

#: What the diagram's JSON calls the figure's mode for a regression input.
MODE = "regression"


@dataclass(frozen=True)
class RegressionDiagramData:
    """One regression input's curve and PIT histogram, as drawn (every array a copy of the report's numbers)."""

    name: str
    kind: str
    form: str
    n: int
    expected: np.ndarray
    observed: np.ndarray
    band_low: np.ndarray | None  # the curve's bootstrap band (None without --n-boot)
    band_high: np.ndarray | None
    band: dict | None  # method, confidence_level, n_boot
    mace: dict  # estimate, ci_low, ci_high
    pit_edges: np.ndarray | None  # None: intervals (no PIT)
    pit_density: np.ndarray | None
    uniform_band: dict | None  # low, high (density), confidence_level, method
    pit_ks_pvalue: float | None

    def to_dict(self) -> dict:
        """What the diagram's JSON lists of this curve: every number drawn."""
        out: dict = {
            "name": self.name,
            "kind": self.kind,
            "n": self.n,
            "calibration_curve": {
                "form": self.form,
                "expected": self.expected.tolist(),
                "observed": self.observed.tolist(),
                "band_low": None if self.band_low is None else self.band_low.tolist(),
                "band_high": None if self.band_high is None else self.band_high.tolist(),
                "band": self.band,
                "mace": self.mace,
            },
            "pit_histogram": None,
        }
        if self.pit_edges is not None and self.pit_density is not None:
            out["pit_histogram"] = {
                "edges": self.pit_edges.tolist(),
                "density": self.pit_density.tolist(),
                "uniform_density": 1.0,
                "uniform_band": self.uniform_band,
                "pit_ks_pvalue": self.pit_ks_pvalue,
            }
        return out


def prepare_regression_diagram(problem: dict, name: str) -> RegressionDiagramData:
    """The diagram's data of one problem of a regression report (``files[].problems[0]`` of
    ``calibcli regression --json``, or :meth:`RegressionReport.to_dict`)."""
    curve = problem["calibration_curve"]
    band = curve.get("band")
    metrics = problem["metrics"]
    m = metrics["mace"]
    pit = problem.get("pit_histogram")
    return RegressionDiagramData(
        name=name,
        kind=problem["kind"],
        form=curve["form"],
        n=int(problem["n"]),
        expected=np.asarray(curve["expected"], dtype=np.float64),
        observed=np.asarray(curve["observed"], dtype=np.float64),
        band_low=None if band is None else np.asarray(band["low"], dtype=np.float64),
        band_high=None if band is None else np.asarray(band["high"], dtype=np.float64),
        band=None if band is None else {k: band[k] for k in ("method", "confidence_level", "n_boot")},
        mace={k: m.get(k) for k in ("estimate", "ci_low", "ci_high")},
        pit_edges=None if pit is None else np.asarray(pit["edges"], dtype=np.float64),
        pit_density=None if pit is None else np.asarray(pit["density"], dtype=np.float64),
        uniform_band=None if pit is None else dict(pit["uniform_band"]),
        pit_ks_pvalue=None if "pit_ks_pvalue" not in metrics else metrics["pit_ks_pvalue"]["estimate"],
    )


# ---------------------------------------------------------------------------------------------
# Drawing

#: One panel's size (inches): a column of a two-column paper, as the classifier's diagrams.
PANEL = (3.25, 3.4)
_TITLE_HEIGHT = 0.35


def _fmt(x) -> str:
    return "n/a" if x is None else (f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}")


def _curve_label(d: RegressionDiagramData, several: bool) -> str:
    m = d.mace
    interval = f" [{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]" if m.get("ci_low") is not None else ""
    head = f"{for_matplotlib(d.name)}: " if several else ""
    return f"{head}MACE {_fmt(m['estimate'])}{interval}, n {d.n:,}"


def _pit_label(d: RegressionDiagramData, several: bool) -> str:
    head = f"{for_matplotlib(d.name)}: " if several else ""
    return f"{head}KS p {_fmt(d.pit_ks_pvalue)}"


def plot_regression_diagram(
    data: Sequence[RegressionDiagramData], *, title: str | None = None, figsize=None, style=None
):
    """The calibration curve (left) and the PIT histogram (right; left out when no input has a PIT) of one or
    several regression inputs, overlaid; ``style`` a :class:`calibcli.diagram.plot.FigureStyle`. Returns the
    Figure (headless, no pyplot)."""
    fs = style or dg.FigureStyle()
    with_pit = [d for d in data if d.pit_edges is not None]
    n_panels = 2 if with_pit else 1
    size = figsize or (PANEL[0] * n_panels, PANEL[1] + (_TITLE_HEIGHT if title else 0.0))
    colors = fs.colors()
    several = len(data) > 1
    with dg._drawing_context(fs):
        fig = dg._new_figure(size)
        axes = fig.subplots(1, n_panels, squeeze=False)[0]
        _draw_curves(axes[0], data, colors, several)
        if with_pit:
            _draw_pit(axes[1], data, colors, several)
        if title:
            fig.suptitle(title)
        place_legends(fig)
    return fig


def _draw_curves(ax, data, colors, several: bool) -> None:
    ax.plot([0, 1], [0, 1], color="0.5", linestyle=(0, (4, 3)), linewidth=0.8, zorder=1, label="_diagonal")
    lines, labels = [], []
    for i, d in enumerate(data):
        color, marker, linestyle = curve_look(i, colors)
        if d.band_low is not None and d.band_high is not None:
            ax.fill_between(d.expected, d.band_low, d.band_high, color=color, alpha=0.22, linewidth=0, zorder=2)
        if not several:  # the area between the curve and the diagonal (uncertainty-toolbox's miscalibration area)
            ax.fill_between(d.expected, d.expected, d.observed, color=color, alpha=0.10, linewidth=0, zorder=2)
        few = len(d.expected) <= 25
        (line,) = ax.plot(
            d.expected,
            d.observed,
            color=color,
            linestyle=linestyle,
            linewidth=1.2,
            marker=marker if few else None,
            markersize=3.5,
            zorder=3,
        )
        lines.append(line)
        labels.append(_curve_label(d, several))
    forms = sorted({d.form for d in data})
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("expected proportion" + (" (interval level)" if forms == ["interval"] else ""))
    ax.set_ylabel("observed proportion")
    ax.set_title(f"calibration curve ({', '.join(forms)} form)")
    ax.grid(True, color="0.92", linewidth=0.5, zorder=0)
    _legend(ax, lines, labels, _curve_ink(data, lines))


def _draw_pit(ax, data, colors, several: bool) -> None:
    with_pit = [(i, d) for i, d in enumerate(data) if d.pit_edges is not None]
    band = with_pit[0][1].uniform_band
    same_band = all(d.uniform_band == band for _, d in with_pit)
    if band is not None and same_band:  # over the bars, translucent: a bar out of it shows where it leaves it
        ax.axhspan(band["low"], band["high"], color="0.55", alpha=0.22, linewidth=0, zorder=4)
        for edge in (band["low"], band["high"]):
            ax.axhline(edge, color="0.45", linestyle=(0, (1, 1.5)), linewidth=0.7, zorder=4)
    ax.axhline(1.0, color="0.3", linestyle=(0, (4, 3)), linewidth=0.8, zorder=4)
    handles, labels = [], []
    for i, d in with_pit:
        color = colors[i % len(colors)]
        edges, density = d.pit_edges, d.pit_density
        if several:
            h = ax.stairs(density, edges, color=color, linewidth=1.2, linestyle=curve_look(i, colors)[2], zorder=3)
        else:
            h = ax.stairs(density, edges, fill=True, color=color, alpha=0.45, zorder=3)
        handles.append(h)
        labels.append(_pit_label(d, several))
    ax.set_xlim(0.0, 1.0)
    top = max(float(np.max(d.pit_density)) for _, d in with_pit)
    if band is not None:
        top = max(top, band["high"])
    ax.set_ylim(0.0, top * 1.35)
    ax.set_xlabel("PIT value")
    ax.set_ylabel("density")
    level = f"{band['confidence_level']:.0%} " if band is not None else ""
    ax.set_title("PIT histogram" + (f" (uniform: 1, {level}band)" if band is not None and same_band else ""))
    ax.grid(True, axis="y", color="0.92", linewidth=0.5, zorder=0)
    _legend(ax, handles, labels, _pit_ink(with_pit))


def _curve_ink(data, lines):
    def ink(ax) -> np.ndarray:
        parts = []
        for d, line in zip(data, lines, strict=True):
            parts.append(_polyline_boxes(ax, line.get_xdata(), line.get_ydata(), 1.5))
            if d.band_low is not None and d.band_high is not None:
                lo, hi = _points_px(ax, d.expected, d.band_low), _points_px(ax, d.expected, d.band_high)
                parts.append(_boxes(lo[:, 0] - 1.0, np.minimum(lo[:, 1], hi[:, 1]), hi[:, 0] + 1.0, hi[:, 1]))
        return np.concatenate(parts) if parts else _boxes([], [], [], [])

    return ink


def _pit_ink(with_pit):
    def ink(ax) -> np.ndarray:
        parts = []
        for _, d in with_pit:
            lo = _points_px(ax, d.pit_edges[:-1], np.zeros(len(d.pit_density)))
            hi = _points_px(ax, d.pit_edges[1:], d.pit_density)
            parts.append(_boxes(lo[:, 0], lo[:, 1], hi[:, 0], hi[:, 1]))
            band = d.uniform_band
            if band is not None:
                b0 = _points_px(ax, [0.0], [band["low"]])
                b1 = _points_px(ax, [1.0], [band["high"]])
                parts.append(_boxes(b0[:, 0], b0[:, 1], b1[:, 0], b1[:, 1]))
        return np.concatenate(parts) if parts else _boxes([], [], [], [])

    return ink


# ---------------------------------------------------------------------------------------------
# The command's work


def regression_diagram_document(
    files: list[str], output: str, chosen, regression_options, *, sources, engine, fmt: str, fig_size, fig_style
) -> tuple[dict, bytes]:
    """The report document of ``calibcli diagram`` on regression inputs and the figure's bytes: the regression
    family run on ``sources`` with ``regression_options`` (its entries, numbers and parameters as ``calibcli
    regression --json`` gives them), each entry's drawn data beside it (``regression_curve``), the figure's
    parameters from ``chosen`` (:class:`calibcli.diagram.family.Options`) and its ``diagram`` block."""
    doc = run(regression.FAMILY, sources, regression_options, engine)
    entries = doc["files"]
    if len(entries) > chosen.max_overlays and sources.group_by:
        warn(f"the first {chosen.max_overlays} of {len(entries)} groups are drawn (--max-overlays)")
    drawn = entries[: chosen.max_overlays] if sources.group_by else entries
    base = _curve_names(files, sources.pool, [None], chosen.name)
    by_path = dict(zip(files, base, strict=False)) if not sources.pool else {}
    data = []
    for entry in drawn:
        name = by_path.get(entry["input"].get("path"), base[0]) if len(base) > 1 else base[0]
        if entry.get("group"):
            group = _group_text(entry["group"])
            name = group if len(base) == 1 and not chosen.name else f"{name} [{group}]"
        d = prepare_regression_diagram(entry["problems"][0], name)
        entry.update(mode=MODE, name=name, regression_curve=d.to_dict())
        data.append(d)
    doc["command"] = "diagram"
    doc["parameters"] = {
        "kind": MODE,
        **doc["parameters"],
        **chosen.shown("dpi", "font_size", "style", "title", "max_overlays"),
        "figsize": None if fig_size is None else list(fig_size),
        "curve_band": "percentile interval of the observed proportion at each level over the --n-boot bootstrap "
        "resamples (calibration_curve.band of calibcli regression)",
        "pit_band": "pointwise central interval of a bin's density under a uniform PIT (Binomial(n, 1/bins))",
    }
    models = len(base)
    auto = f"Calibration of {base[0]}" if models == 1 else f"Calibration of {models} models"
    if sources.group_by:
        auto += f" by {', '.join(sources.group_by)}"
    title = for_matplotlib(auto) if chosen.title is None else (for_matplotlib(chosen.title) if chosen.title else None)
    fig = plot_regression_diagram(data, title=title, figsize=fig_size, style=fig_style)
    if fmt == "png":
        w_px, h_px = (float(v) * chosen.dpi for v in fig.get_size_inches())
        check_option(
            w_px * h_px <= MAX_PIXELS,
            f"--dpi {chosen.dpi:g}: the PNG would be {w_px:,.0f} x {h_px:,.0f} pixels, more than "
            f"{MAX_PIXELS / 1e6:,.0f} megapixels: lower --dpi, or write .svg or .pdf",
        )
    data_bytes = dg.figure_bytes(fig, fmt, dpi=chosen.dpi)
    width_in, height_in = fig.get_size_inches()
    width_px, height_px = struct.unpack(">II", data_bytes[16:24]) if fmt == "png" else (None, None)
    panels = ["calibration curve"] + (["PIT histogram"] if any(d.pit_edges is not None for d in data) else [])
    doc["diagram"] = {
        "path": output,
        "format": fmt,
        "bytes": len(data_bytes),
        "width_in": float(width_in),
        "height_in": float(height_in),
        "width_px": width_px,
        "height_px": height_px,
        "mode": MODE,
        "panels": panels,
        "n_panels": len(panels),
        "n_curves_per_panel": len(data),
        "groups_drawn": len(drawn) if sources.group_by else None,
        "groups_total": len(entries) if sources.group_by else None,
        "note": None,
    }
    return doc, data_bytes
