"""Legends that hide no data, and labels and titles that fit (SPEC 6): the layout half of the reliability
diagrams. :mod:`calibcli.diagram.plot` draws the curves; :func:`place_legends` (called when a figure is
saved or shown) moves every legend to the place, among :data:`LEGEND_PLACES`, that covers the least ink,
else outside the panel, and shrinks tick labels and titles that would overlap.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

#: Line width of the smooth curve where the predictions' density is zero / at its maximum (seed 003
#: encodes the density in the curve's width).
SMOOTH_WIDTH = (0.4, 2.6)
#: Marker area (points^2) of the emptiest and the fullest bin: a bin's area grows with its row count.
MARKER_AREA = (4.0, 36.0)


def marker_areas(count: np.ndarray) -> np.ndarray:
    """Marker area (points^2) of each bin: from :data:`MARKER_AREA`'s first value for an almost empty
    bin to its second for the fullest bin, proportional to the row count in between (area, not
    diameter, carries the count, so a sparse bin does not look as weighty as a full one)."""
    c = np.asarray(count, dtype=np.float64)
    top = float(c.max()) if c.size and c.max() > 0 else 1.0
    lo, hi = MARKER_AREA
    return lo + (hi - lo) * c / top


#: Where a legend may go inside a panel, in order of preference: the off-diagonal corners first (where a
#: calibrated curve never goes), then the others.
LEGEND_PLACES = ("upper left", "lower right", "lower left", "upper right", "center left", "center right")
#: What each main panel's data covers, in display coordinates: a function of the axes returning an
#: (m, 4) array of boxes (x0, y0, x1, y1). Filled by plot_binned / plot_smooth, read by place_legends.
_INK: weakref.WeakKeyDictionary | None = None  # made on first use


def _ink_registry():
    global _INK
    if _INK is None:
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
        for d, line in zip(curves, lines, strict=True):
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
    legend = ax.legend(
        handles,
        labels,
        loc=LEGEND_PLACES[0],
        frameon=True,
        framealpha=0.92,
        fontsize=fontsize,
        borderaxespad=0.35,
        edgecolor="0.8",
        fancybox=False,
        **extra,
    )
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
        below = [
            other.yaxis.label
            for other in ax.get_shared_x_axes().get_siblings(ax)
            if other is not ax and other.bbox.y1 <= ax.bbox.y0 + 0.5 and other.yaxis.label.get_text()
        ]
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
    if title is None:
        return False
    text = title.get_text()
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
    entries = [
        (ax, ink)
        for ax, ink in list(registry.items())
        if ax.get_figure(root=True) is fig and ax.get_legend() is not None
    ]
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
