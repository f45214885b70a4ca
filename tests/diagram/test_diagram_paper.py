"""Diagrams fit for a paper (issue 15): nothing drawn hides data, sparse bins drawn as such, the figure
options (--title, --figsize, --dpi, --style, --font-size, --min-count, --hist-scale), a colour-blind-safe
palette whose overlays also differ in greyscale, and small multiples that read at their printed size.

Overlaps are computed from the rendered artists (after ``fig.canvas.draw()``): each legend's window
extent against the display paths of every marker, error bar, line, shaded gap, curve and band, with
matplotlib's own path-box intersection, independently of how calibcli chose the legend's place.
"""

from __future__ import annotations

import struct
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection, PolyCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.patches import Rectangle, StepPatch
from matplotlib.path import Path as MplPath

from calibcli.diagram.legends import marker_areas
from calibcli.diagram.data import prepare_binned
from calibcli.diagram import plot as dg

from _cli import BINARY, MULTI, SAMPLE, run, run_json, write_csv  # noqa: E402  (tests/ is on sys.path)

FAST = ("--n-boot", "0")
SHARDS = SAMPLE / "eval_shards"
OKABE_ITO = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"}


def main_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() not in ("count", "weighted count", "density")]


def lower_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() in ("count", "weighted count", "density")]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _is_diagonal(line) -> bool:
    return np.array_equal(np.asarray(line.get_xdata(), float), [0, 1]) and np.array_equal(np.asarray(line.get_ydata(), float), [0, 1])


def hidden_data(ax, box) -> list[str]:
    """What of ``ax``'s data the display box ``box`` covers, from the drawn artists' display paths."""
    box = box.expanded(1.0, 1.0)
    px = ax.figure.dpi / 72.0
    found = []
    for coll in ax.collections:
        if isinstance(coll, PathCollection):  # markers: a box of the marker's drawn size around each point
            centres = coll.get_offset_transform().transform(coll.get_offsets())
            sizes = np.broadcast_to(coll.get_sizes(), (len(centres),))
            for (x, y), s in zip(centres, sizes):
                r = np.sqrt(s) / 2.0 * px
                if x + r > box.x0 and x - r < box.x1 and y + r > box.y0 and y - r < box.y1:
                    found.append(f"marker at {ax.transData.inverted().transform((x, y)).round(3)}")
        elif isinstance(coll, LineCollection):  # error bars, the smooth curve
            transform = coll.get_transform()
            for path in coll.get_paths():
                if transform.transform_path(path).intersects_bbox(box, filled=False):
                    found.append(f"segment of {coll.get_label() or 'a line collection'} at {path.vertices[0].round(3)}")
                    break
        elif isinstance(coll, PolyCollection):  # the bootstrap band
            transform = coll.get_transform()
            if any(transform.transform_path(p).intersects_bbox(box, filled=True) for p in coll.get_paths()):
                found.append("the band")
    for line in ax.lines:
        if _is_diagonal(line) or not line.get_visible():
            continue
        xy = line.get_xydata()
        pts = ax.transData.transform(xy)
        if line.get_marker() not in ("", "None", None, " ", "none"):
            r = line.get_markersize() / 2.0 * px
            inside = (pts[:, 0] + r > box.x0) & (pts[:, 0] - r < box.x1) & (pts[:, 1] + r > box.y0) & (pts[:, 1] - r < box.y1)
            every = line.get_markevery()  # None (every point) or (start, step), as calibcli sets it
            shown = np.arange(len(pts)) if every is None else np.arange(every[0], len(pts), every[1])
            if (inside[shown] & np.isfinite(pts[shown]).all(axis=1)).any():
                found.append("a line's marker")
        if line.get_linestyle() in ("None", "", " ", "none"):
            continue
        finite = np.isfinite(pts).all(axis=1)
        pieces = np.split(np.arange(len(pts)), np.flatnonzero(~finite))
        for piece in pieces:
            piece = piece[finite[piece]]
            if len(piece) >= 2 and MplPath(pts[piece]).intersects_bbox(box, filled=False):
                found.append("the line joining the bins")
                break
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible():
            ext = patch.get_window_extent()
            if ext.width > 0 and ext.height > 0 and ext.overlaps(box):
                found.append(f"shaded gap at x={patch.get_x():.3f}")
    return found


def assert_legends_hide_nothing(fig) -> dict:
    """Every main panel's legend covers none of its data, no title and no other panel; returns the places."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    places = {}
    for ax in main_axes(fig):
        legend = ax.get_legend()
        assert legend is not None
        box = legend.get_window_extent(renderer)
        hidden = hidden_data(ax, box)
        assert hidden == [], f"the legend of {ax.get_title()!r} hides {hidden}"
        if ax.get_title():
            assert not ax.title.get_window_extent(renderer).overlaps(box), ax.get_title()
        for other in fig.axes:
            if other is not ax:
                assert not other.get_window_extent(renderer).overlaps(box), (ax.get_title(), other.get_title())
        for text in fig.texts:
            assert not text.get_window_extent(renderer).overlaps(box)
        assert fig.bbox.x0 - 0.5 <= box.x0 and box.x1 <= fig.bbox.x1 + 0.5 and box.y1 <= fig.bbox.y1 + 0.5
        inside = ax.bbox.contains(box.x0 + 1, box.y0 + 1) and ax.bbox.contains(box.x1 - 1, box.y1 - 1)
        places[ax] = "inside" if inside else "outside"
    return places


# ---------------------------------------------------------------------------------------------
# Nothing drawn hides data


def test_breast_cancer_legend_hides_none_of_the_points(tmp_path, figures):
    # The figure the issue reports: the legend used to hide the points at 0.27 and 0.40.
    run_json("diagram", BINARY, "-o", tmp_path / "bc.png", "--n-boot", "50")
    (fig,) = figures
    places = assert_legends_hide_nothing(fig)
    binned = main_axes(fig)[0]
    points = binned.collections[[isinstance(c, PathCollection) for c in binned.collections].index(True)].get_offsets()
    near = [x for x, _ in points if abs(x - 0.27) < 0.02 or abs(x - 0.40) < 0.02]
    assert len(near) == 2  # the two points are drawn ...
    box = binned.get_legend().get_window_extent(fig.canvas.get_renderer())
    for x, y in points:  # ... and no point's centre is under the legend
        cx, cy = binned.transData.transform((x, y))
        assert not box.contains(cx, cy)
    # no corner of the binned panel is free here: its legend sits above the data, under the title
    assert places[binned] == "outside"
    fig.canvas.draw()
    title = binned.title.get_window_extent(fig.canvas.get_renderer())
    assert title.y0 >= box.y1 - 0.5 and box.y0 >= binned.bbox.y1 - 0.5


@pytest.mark.parametrize("case", ["top-label", "two models", "marginal", "calibrated"])
def test_legends_hide_no_data_on_other_inputs(tmp_path, figures, case):
    out = tmp_path / "f.png"
    if case == "top-label":
        run_json("diagram", MULTI, "-o", out, "--n-boot", "20")
    elif case == "two models":
        run_json("diagram", SHARDS / "model=logreg", SHARDS / "model=nb", "-o", out, "--n-boot", "20")
    elif case == "marginal":
        run_json("diagram", MULTI, "-o", out, "--mode", "marginal", "--max-classes", "4", "--n-boot", "20")
    else:  # a calibrated model with predictions in the middle, on a wide figure: an off-diagonal corner is free
        rng = np.random.default_rng(0)
        z = rng.uniform(0.3, 0.7, 4000)
        path = write_csv(tmp_path, "cal.csv", z, (rng.random(4000) < z).astype(int))
        run_json("diagram", path, "-o", out, "--n-boot", "20", "--figsize", "9,4")
    (fig,) = figures
    places = assert_legends_hide_nothing(fig)
    if case == "calibrated":
        assert set(places.values()) == {"inside"}
        assert {ax.get_legend()._loc for ax in places} <= {2, 4}  # upper left or lower right


def test_library_figure_places_its_legend_too():
    # plot_binned without axes makes its own figure and places the legend the same way.
    rng = np.random.default_rng(3)
    z = rng.uniform(0, 1, 600)
    y = (rng.random(600) < 0.2 + 0.6 * z).astype(int)
    fig = dg.plot_binned(prepare_binned(y, z, n_boot=20))
    assert_legends_hide_nothing(fig)


# ---------------------------------------------------------------------------------------------
# Sparse bins: marker area by count, hollow and faint under --min-count, not joined; log histogram


def _sparse_file(tmp_path):
    """Bins of 40, 3, 40, 40, 2 and 40 rows over six uniform bins."""
    rng = np.random.default_rng(7)
    counts = [40, 3, 40, 40, 2, 40]
    z = np.concatenate([rng.uniform(j / 6 + 0.01, (j + 1) / 6 - 0.01, c) for j, c in enumerate(counts)])
    y = (rng.random(len(z)) < z).astype(int)
    return write_csv(tmp_path, "sparse.csv", z, y), counts


def _points(ax):
    (coll,) = [c for c in ax.collections if isinstance(c, PathCollection)]
    return coll


def test_min_count_breaks_the_line_and_marks_sparse_bins(tmp_path, figures):
    path, counts = _sparse_file(tmp_path)
    doc = run_json("diagram", path, "-o", tmp_path / "s.png", "--kind", "binned", "--n-bins", "6", *FAST)
    assert doc["parameters"]["min_count"] == 10  # the default, stated
    (fig,) = figures
    (ax,) = main_axes(fig)
    (eb,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    x = eb.lines[0].get_xdata()
    assert len(x) == 6  # every non-empty bin keeps its point and its interval
    (joined,) = [line for line in ax.lines if not _is_diagonal(line) and line is not eb.lines[0]]
    jx, jy = np.asarray(joined.get_xdata(), float), np.asarray(joined.get_ydata(), float)
    # bins 1 (3 rows) and 4 (2 rows) are gaps in the line; the others are joined
    np.testing.assert_array_equal(np.isnan(jy), [False, True, False, False, True, False])
    np.testing.assert_array_equal(jx[~np.isnan(jx)], np.asarray(x)[[0, 2, 3, 5]])
    # marker area grows with the rows; sparse markers hollow (white face), their bars faint
    coll = _points(ax)
    np.testing.assert_allclose(coll.get_sizes(), marker_areas(np.array(counts)))
    assert coll.get_sizes()[4] < coll.get_sizes()[1] < coll.get_sizes()[0]
    faces = coll.get_facecolors()
    assert [tuple(f) == (1.0, 1.0, 1.0, 1.0) for f in faces] == [c < 10 for c in counts]
    bar_alpha = eb.lines[2][0].get_colors()[:, 3]
    assert [a < 0.5 for a in bar_alpha] == [c < 10 for c in counts]

    # --min-count 0 (or 1) joins every non-empty bin; --min-count 41 joins none
    figures.clear()
    doc = run_json("diagram", path, "-o", tmp_path / "s.png", "--kind", "binned", "--n-bins", "6", "--min-count", "0", *FAST)
    assert doc["parameters"]["min_count"] == 0
    (joined,) = [line for line in main_axes(figures[0])[0].lines if not _is_diagonal(line) and line.get_linestyle() != "None"]
    assert not np.isnan(np.asarray(joined.get_ydata(), float)).any()
    figures.clear()
    run_json("diagram", path, "-o", tmp_path / "s.png", "--kind", "binned", "--n-bins", "6", "--min-count", "41", *FAST)
    (joined,) = [line for line in main_axes(figures[0])[0].lines if not _is_diagonal(line) and line.get_linestyle() != "None"]
    assert np.isnan(np.asarray(joined.get_ydata(), float)).all()


def test_hist_scale_log(tmp_path, figures):
    path, counts = _sparse_file(tmp_path)
    doc = run_json("diagram", path, "-o", tmp_path / "h.png", "--kind", "binned", "--n-bins", "6", "--hist-scale", "log", *FAST)
    assert doc["parameters"]["hist_scale"] == "log"
    (fig,) = figures
    (hist,) = lower_axes(fig)
    assert hist.get_yscale() == "log"
    (stairs,) = [p for p in hist.patches if isinstance(p, StepPatch)]
    np.testing.assert_array_equal(stairs.get_data().values, counts)
    assert stairs.get_data().baseline == 0.5 and hist.get_ylim()[0] == 0.5  # a bin of one row shows as a bar
    figures.clear()
    run_json("diagram", path, "-o", tmp_path / "h.png", "--kind", "binned", "--n-bins", "6", *FAST)
    assert lower_axes(figures[0])[0].get_yscale() == "linear"


# ---------------------------------------------------------------------------------------------
# Palette and overlays in greyscale


def test_palette_is_okabe_ito_and_overlays_differ_in_marker_and_line_style(tmp_path, figures):
    assert set(dg.COLORS) == OKABE_ITO and len(dg.COLORS) == 8
    rng = np.random.default_rng(1)
    files = []
    for k in range(3):
        z = rng.beta(0.8, 0.8, 500)
        files.append(write_csv(tmp_path, f"m{k}.csv", z, (rng.random(500) < np.clip(z + 0.1 * k, 0, 1)).astype(int)))
    run_json("diagram", *files, "-o", tmp_path / "o.png", "--n-boot", "0", "--min-count", "1")
    (fig,) = figures
    binned, smooth = main_axes(fig)
    colours = [matplotlib.colors.to_hex(c.get_edgecolor()[0]) for c in binned.collections if isinstance(c, PathCollection)]
    assert colours == list(dg.COLORS[:3])
    markers = [tuple(map(tuple, c.get_paths()[0].vertices.round(6))) for c in binned.collections if isinstance(c, PathCollection)]
    assert len(set(markers)) == 3  # three marker shapes
    joined = [line for line in binned.lines if not _is_diagonal(line) and line.get_linestyle() != "None"]
    assert len({line.get_linestyle() for line in joined}) == 3
    # the smooth curves: three dash patterns, and markers of three shapes along them
    curves = [c for c in smooth.collections if isinstance(c, LineCollection) and c.get_label() == "_smooth_curve"]
    assert len({str(c.get_linestyle()[0]) for c in curves}) == 3
    assert len({line.get_marker() for line in smooth.lines if line.get_marker() not in ("", "None")}) == 3
    # the legend's entries show each curve's marker and line style
    for ax in (binned, smooth):
        handles = ax.get_legend().legend_handles
        assert len({(h.get_marker(), h.get_linestyle(), matplotlib.colors.to_hex(h.get_color())) for h in handles}) == 3
    # in greyscale (luminance) the three colours are not all alike either
    grey = [np.dot(matplotlib.colors.to_rgb(c), [0.299, 0.587, 0.114]) for c in dg.COLORS[:3]]
    assert max(grey) - min(grey) > 0.1


# ---------------------------------------------------------------------------------------------
# Figure options


def test_title_figsize_dpi_and_font_size(tmp_path, figures):
    out = tmp_path / "t.png"
    doc = run_json("diagram", BINARY, "-o", out, "--kind", "binned", "--title", "Naive Bayes on breast cancer",
                   "--figsize", "5,4", "--dpi", "100", "--font-size", "10", *FAST)
    assert png_size(out.read_bytes()) == (500, 400)
    d, p = doc["diagram"], doc["parameters"]
    assert (d["width_px"], d["height_px"], d["width_in"], d["height_in"]) == (500, 400, 5.0, 4.0)
    assert (p["title"], p["figsize"], p["dpi"], p["font_size"]) == ("Naive Bayes on breast cancer", [5.0, 4.0], 100.0, 10.0)
    (fig,) = figures
    assert [t.get_text() for t in fig.texts] == ["Naive Bayes on breast cancer"]
    ax = main_axes(fig)[0]
    assert ax.yaxis.label.get_fontsize() == 10.0 and ax.title.get_fontsize() == 10.0
    fig.canvas.draw()
    assert ax.get_yticklabels()[0].get_fontsize() == 9.0 and ax.get_legend().get_texts()[0].get_fontsize() == 9.0
    # --title '' draws none; without --title the title says what is drawn
    figures.clear()
    run_json("diagram", BINARY, "-o", out, "--kind", "binned", "--title", "", *FAST)
    assert figures[0].texts == []
    figures.clear()
    doc = run_json("diagram", BINARY, "-o", out, "--kind", "binned", *FAST)
    # (too wide for one column on one line: broken after the comma)
    (title,) = figures[0].texts
    assert title.get_text() == "Reliability diagram of breast_cancer_nb.csv,\nbinary mode"
    figures[0].canvas.draw()
    box = title.get_window_extent(figures[0].canvas.get_renderer())
    assert figures[0].bbox.x0 <= box.x0 and box.x1 <= figures[0].bbox.x1
    # the defaults: one column of a two-column paper (3.25 in) at 300 dpi, 8 pt text
    assert (doc["diagram"]["width_in"], doc["diagram"]["width_px"]) == (3.25, 975)
    assert (doc["parameters"]["dpi"], doc["parameters"]["font_size"], doc["parameters"]["figsize"]) == (300.0, 8.0, None)


def test_figsize_with_x_and_svg_size(tmp_path):
    out = tmp_path / "t.svg"
    doc = run_json("diagram", BINARY, "-o", out, "--kind", "smooth", "--figsize", "5x2.5", *FAST)
    assert (doc["diagram"]["width_in"], doc["diagram"]["height_in"]) == (5.0, 2.5)
    head = out.read_text()[:600]
    assert 'width="360pt"' in head and 'height="180pt"' in head


def test_style_name_and_file(tmp_path, figures):
    doc = run_json("diagram", BINARY, "-o", tmp_path / "g.png", "--kind", "binned", "--style", "ggplot", *FAST)
    assert doc["parameters"]["style"] == "ggplot"
    (fig,) = figures
    ax = main_axes(fig)[0]
    assert matplotlib.colors.to_hex(ax.get_facecolor()) == "#e5e5e5"  # ggplot's grey panel
    assert matplotlib.colors.to_hex(_points(ax).get_edgecolor()[0]) == "#e24a33"  # ggplot's first colour
    style = tmp_path / "mine.mplstyle"
    style.write_text("axes.prop_cycle: cycler('color', ['8c0000', '00008c'])\naxes.facecolor: fafaf0\n")
    figures.clear()
    run_json("diagram", BINARY, "-o", tmp_path / "m.png", "--kind", "binned", "--style", str(style), *FAST)
    ax = main_axes(figures[0])[0]
    assert matplotlib.colors.to_hex(_points(ax).get_edgecolor()[0]) == "#8c0000"
    assert matplotlib.colors.to_hex(ax.get_facecolor()) == "#fafaf0"
    # the style does not leak into the next figure
    figures.clear()
    run_json("diagram", BINARY, "-o", tmp_path / "d.png", "--kind", "binned", *FAST)
    ax = main_axes(figures[0])[0]
    assert matplotlib.colors.to_hex(ax.get_facecolor()) == "#ffffff"
    assert matplotlib.colors.to_hex(_points(ax).get_edgecolor()[0]) == dg.COLORS[0]


def _assert_error(result, folder: Path, message: str | None = None, contains: tuple[str, ...] = ()) -> None:
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if message is not None:
        assert result.stderr == f"Error: {message}\n"
    for fragment in contains:
        assert fragment in result.stderr, result.stderr
    assert result.stdout == ""
    assert list(folder.iterdir()) == []  # no figure, no temporary file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--figsize", "3"], "--figsize is '3': expected two numbers W,H in inches, e.g. 3.25,3.6"),
        (["--figsize", "a,b"], "--figsize is 'a,b': expected two numbers W,H in inches, e.g. 3.25,3.6"),
        (["--figsize", "0.5,3"], "--figsize is '0.5,3': expected a width and a height between 1 and 50 inches"),
        (["--figsize", "60,3"], "--figsize is '60,3': expected a width and a height between 1 and 50 inches"),
        (["--figsize", "nan,3"], "--figsize is 'nan,3': expected a width and a height between 1 and 50 inches"),
        (["--font-size", "0.5"], "--font-size is 0.5: expected a text size between 1 and 100 points"),
        (["--font-size", "inf"], "--font-size is inf: expected a finite number"),
        (["--min-count", "-1"], "--min-count is -1: expected 0 (every bin joined) or a positive number of rows"),
        (["--hist-scale", "sqrt"], "--hist-scale is 'sqrt': expected one of linear, log"),
    ],
)
def test_figure_option_errors(tmp_path, args, message):
    folder = tmp_path / "out"
    folder.mkdir()
    _assert_error(run("diagram", BINARY, "-o", folder / "fig.png", *args, *FAST), folder, message)


def test_style_errors_list_the_available_styles(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    r = run("diagram", BINARY, "-o", folder / "fig.png", "--style", "nosuchstyle", *FAST)
    _assert_error(r, folder, contains=("--style is 'nosuchstyle': expected a .mplstyle file or one of matplotlib's styles: ",
                                       "default", "ggplot", "seaborn-v0_8-paper", "grayscale"))
    missing = tmp_path / "gone.mplstyle"
    r = run("diagram", BINARY, "-o", folder / "fig.png", "--style", str(missing), *FAST)
    _assert_error(r, folder, f"--style {missing}: no such style file: check the path")


def test_library_messages_name_parameters():
    from calibcli.core.errors import CalibcliError

    with pytest.raises(CalibcliError, match="^min_count is -1") as err:
        dg.FigureStyle(min_count=-1)
    assert err.value.for_cli().startswith("--min-count is -1")
    with pytest.raises(CalibcliError, match="^hist_scale is 'sqrt'"):
        dg.FigureStyle(hist_scale="sqrt")
    with pytest.raises(CalibcliError, match="^style is 'nope'"):
        dg.FigureStyle(style="nope")
    with pytest.raises(CalibcliError, match="^figsize is '1,2,3'"):
        dg.parse_figsize("1,2,3")
    assert dg.parse_figsize(" 3.25 , 2 ") == (3.25, 2.0)


# ---------------------------------------------------------------------------------------------
# Small multiples at their printed size


def _visible_text_sizes(fig) -> list[float]:
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.texts if t.get_visible()]
    for ax in fig.axes:
        for t in [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]:
            if t.get_visible() and t.get_text():
                sizes.append(t.get_fontsize())
        if ax.get_legend() is not None:
            sizes += [t.get_fontsize() for t in ax.get_legend().get_texts()]
    return sizes


def test_ten_class_marginal_figure_fits_a_page_with_readable_text(tmp_path, figures):
    out = tmp_path / "m.png"
    doc = run_json("diagram", MULTI, "-o", out, "--mode", "marginal", "--kind", "binned", *FAST)
    d = doc["diagram"]
    # four panels across the width of a page's text (6.8 in), three rows: printed at its own size the
    # smallest text is 6.5 pt (the figure was 16.4 in wide with 7 pt legends: 3 pt on paper)
    assert (d["width_in"], d["n_panels"]) == (6.8, 10) and d["height_in"] < 9.0
    assert (d["width_px"], d["height_px"]) == png_size(out.read_bytes()) == (2040, round(d["height_in"] * 300))
    (fig,) = figures
    assert min(_visible_text_sizes(fig)) >= 6.5
    assert_legends_hide_nothing(fig)
    mains = main_axes(fig)
    # shared axes: y labels and tick labels on the first column only, x labels on the bottom row only
    assert [ax.yaxis.label.get_visible() for ax in mains] == [k % 4 == 0 for k in range(10)]
    lowers = lower_axes(fig)
    assert [ax.xaxis.label.get_visible() for ax in lowers] == [k + 4 >= 10 for k in range(10)]
    assert len({ax.get_ylim() for ax in lowers}) == 1  # the counts on one scale


def test_groups_in_small_multiples_share_one_legend(tmp_path, figures):
    rng = np.random.default_rng(2)
    P = rng.dirichlet([1, 1, 1], 600)
    labels = np.array([rng.choice(3, p=row) for row in P])
    import pandas as pd

    path = tmp_path / "g.csv"
    pd.DataFrame({"p_0": P[:, 0], "p_1": P[:, 1], "p_2": P[:, 2], "label": labels,
                  "site": np.where(np.arange(600) % 3 == 0, "north", "south")}).to_csv(path, index=False)
    run_json("diagram", path, "-o", tmp_path / "g.png", "--mode", "marginal", "--group-by", "site", "--n-boot", "0")
    (fig,) = figures
    (shared,) = fig.legends
    assert [t.get_text() for t in shared.get_texts()] == ["site=north", "site=south"]
    assert len({(h.get_marker(), h.get_linestyle()) for h in shared.legend_handles}) == 2
    for ax in main_axes(fig):  # each panel's legend gives the numbers, not the names again
        assert all(not t.get_text().startswith("site=") for t in ax.get_legend().get_texts())
    assert_legends_hide_nothing(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = shared.get_window_extent(renderer)
    for ax in fig.axes:
        assert not ax.get_tightbbox(renderer).overlaps(box)
    for text in fig.texts:  # the title and the note
        assert not text.get_window_extent(renderer).overlaps(box), text.get_text()
    assert fig.bbox.y0 - 0.5 <= box.y0 and box.y1 <= fig.bbox.y1 + 0.5


def test_a_long_label_is_wrapped_to_fit_a_short_panel(tmp_path, figures):
    run_json("diagram", BINARY, "-o", tmp_path / "s.png", "--kind", "binned", "--figsize", "4,3", "--font-size", "10", *FAST)
    (fig,) = figures
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = main_axes(fig)
    (hist,) = lower_axes(fig)
    assert ax.get_ylabel() == "observed frequency\nof positives"
    assert not ax.yaxis.label.get_window_extent(renderer).overlaps(hist.yaxis.label.get_window_extent(renderer))


# ---------------------------------------------------------------------------------------------
# The documentation's figures come from the script


def test_readme_shows_the_figures_the_script_makes():
    root = Path(__file__).resolve().parents[2]
    script = (root / "scripts" / "make_figures.py").read_text()
    page = (root / "docs" / "commands" / "diagram.md").read_text()  # the diagram page shows them all
    names = [line.split('"')[1] for line in script.splitlines() if line.strip().startswith('("') and '.png"' in line]
    assert len(names) >= 4
    for name in names:
        assert f"](../figures/{name})" in page, name
        assert (root / "docs" / "figures" / name).is_file(), name
