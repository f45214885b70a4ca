"""Reliability diagrams at the library level (SPEC 6): ``prepare_binned`` / ``prepare_smooth`` compute
the picture's data, ``plot_binned`` / ``plot_smooth`` / ``plot_diagram`` draw it, ``figure_bytes``
renders it.

The figures are checked by inspecting the matplotlib objects: axis labels, how many curves, and that
the plotted data are the computed statistics (calibcli's own bins, Wilson intervals worked out here,
``calibcli.smooth.estimator.smooth_curve`` at run time), plus the rendered bytes (PNG/SVG/PDF) and that no text
falls outside the figure.
"""

from __future__ import annotations

import io
import math
import struct
import xml.etree.ElementTree as ET
from dataclasses import replace

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.collections import LineCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.patches import Rectangle, StepPatch

from calibcli.diagram.data import DiagramPanel
from calibcli.diagram.bands import wilson_interval
from calibcli.diagram.data import prepare_smooth
from calibcli.diagram.data import prepare_binned
from calibcli.diagram.accumulator import DiagramInputAccumulator
from calibcli.diagram.family import Options as DiagramOptions
from calibcli.diagram import plot as dg
from calibcli.core.binning import fit_binning
from calibcli.core.errors import CalibcliError
from calibcli.binned.stats import bin_statistics
from calibcli.binned.estimators import binned_calibration
from calibcli.smooth.estimator import smooth_curve

from _cli import BINARY  # noqa: E402  (tests/ is on sys.path)

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal


# ---------------------------------------------------------------------------------------------
# Helpers


def make_binary(n: int = 300, seed: int = 0):
    """Labels and predictions of a mildly over-confident model, predictions spread over [0, 1]."""
    rng = np.random.default_rng(seed)
    z = rng.beta(0.7, 0.7, n)
    y = (rng.random(n) < 0.15 + 0.7 * z).astype(np.int64)
    return y, z


def wilson_by_hand(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson (1927): (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def fmt3(x: float) -> str:
    """How the legend prints a number (3 significant digits)."""
    return f"{x:.3g}"


def main_axes(fig):
    """The reliability panels (the axes above a histogram or a density)."""
    return [ax for ax in fig.axes if ax.get_ylabel() not in ("count", "weighted count", "density")]


def lower_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() in ("count", "weighted count", "density")]


def errorbars(ax) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def smooth_lines(ax) -> list[LineCollection]:
    return [c for c in ax.collections if isinstance(c, LineCollection) and c.get_label() == "_smooth_curve"]


def legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def error_bar_ends(container: ErrorbarContainer) -> np.ndarray:
    """(x, low, high) of each vertical error bar."""
    (bars,) = container.lines[2]
    segs = np.array(bars.get_segments())
    assert np.allclose(segs[:, 0, 0], segs[:, 1, 0])  # vertical
    return np.column_stack([segs[:, 0, 0], segs[:, :, 1].min(axis=1), segs[:, :, 1].max(axis=1)])


def visible_texts(fig):
    """Every piece of text the figure draws: titles, axis labels, tick labels in view, legends, supertitles."""
    texts = list(fig.texts)
    for sf in fig.subfigs:
        texts += list(sf.texts)
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
        for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            for tick in axis.get_major_ticks():
                if min(lo, hi) - 1e-9 <= tick.get_loc() <= max(lo, hi) + 1e-9:
                    texts.append(tick.label1)
        legend = ax.get_legend()
        if legend is not None:
            texts += legend.get_texts()
    return [t for t in texts if t.get_visible() and t.get_text()]


def assert_nothing_clipped(fig) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = visible_texts(fig)
    assert len(texts) > 10
    for t in texts:
        bb = t.get_window_extent(renderer)
        inside = bb.x0 >= box.x0 - 0.5 and bb.y0 >= box.y0 - 0.5 and bb.x1 <= box.x1 + 0.5 and bb.y1 <= box.y1 + 0.5
        assert inside, f"{t.get_text()!r} at {bb.bounds} is outside the figure {box.bounds}"
    for ax in fig.axes:
        tight = ax.get_tightbbox(renderer)
        assert tight.x0 >= box.x0 - 0.5 and tight.x1 <= box.x1 + 0.5, ax.get_title()
        assert tight.y0 >= box.y0 - 0.5 and tight.y1 <= box.y1 + 0.5, ax.get_title()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def one_panel(y, z, *, n_boot=20, seed=0, name="", problem="binary", **binned):
    b = prepare_binned(y, z, n_boot=n_boot, seed=seed, name=name, problem=problem, **binned)
    s = prepare_smooth(y, z, n_boot=n_boot, seed=seed, n_points=201, name=name, problem=problem)
    return b, s


# ---------------------------------------------------------------------------------------------
# Wilson intervals


def test_wilson_interval_by_hand():
    lo, hi = wilson_interval([3, 0, 10, 7.5], [10, 10, 10, 12.5])
    for j, (k, n) in enumerate([(3, 10), (0, 10), (10, 10), (7.5, 12.5)]):
        assert (lo[j], hi[j]) == pytest.approx(wilson_by_hand(k, n), abs=1e-12)
    # The textbook value for 3 successes in 10 (95%): [0.1078, 0.6032].
    assert (lo[0], hi[0]) == pytest.approx((0.10779, 0.60322), abs=5e-5)
    # 0 of n: the interval starts at 0 and ends at z^2 / (n + z^2).
    assert lo[1] == 0.0 and hi[1] == pytest.approx(Z95**2 / (10 + Z95**2), abs=1e-12)
    # Level 1 - alpha: a 90% interval is narrower than the 95% one.
    lo90, hi90 = wilson_interval(3, 10, alpha=0.10)
    assert lo[0] < lo90 < hi90 < hi[0]
    assert (lo90, hi90) == pytest.approx(wilson_by_hand(3, 10, z=1.6448536269514722), abs=1e-12)


def test_wilson_interval_reaches_exactly_0_and_1_at_the_ends():
    # All-negative and all-positive bins: the interval must contain the accuracy exactly, whatever the
    # rounding of centre -+ half (otherwise the error bar has a negative length and cannot be drawn).
    n = np.arange(1, 201, dtype=np.float64)
    for alpha in (0.05, 0.1, 0.01):
        lo0, hi0 = wilson_interval(np.zeros_like(n), n, alpha=alpha)
        lo1, hi1 = wilson_interval(n, n, alpha=alpha)
        assert (lo0 == 0.0).all() and (hi1 == 1.0).all()
        assert (hi0 > 0).all() and (lo1 < 1).all()


@settings(max_examples=200, deadline=None)
@given(
    total=st.floats(min_value=1e-3, max_value=1e6, allow_nan=False),
    frac=st.floats(min_value=0.0, max_value=1.0),
    alpha=st.floats(min_value=1e-4, max_value=0.5),
)
def test_wilson_interval_contains_the_proportion(total, frac, alpha):
    successes = frac * total
    lo, hi = wilson_interval(successes, total, alpha=alpha)
    p = successes / total
    assert 0.0 <= lo <= min(p, 1.0) and max(p, 0.0) <= hi <= 1.0


# ---------------------------------------------------------------------------------------------
# prepare_binned


def test_prepare_binned_hand_worked_example():
    z = np.array([0.05, 0.10, 0.15, 0.60, 0.70, 0.90, 1.00])
    y = np.array([0, 0, 1, 1, 0, 1, 1])
    d = prepare_binned(y, z, n_bins=4, n_boot=0)
    # Bins [0, .25): rows 0-2; [.25, .5): empty; [.5, .75): rows 3-4; [.75, 1]: rows 5-6 (1.0 in the last bin).
    assert d.n == 7 and d.n_bins == 4 and d.n_bins_nonempty == 3 and d.strategy == "uniform"
    np.testing.assert_array_equal(d.bounds, [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_array_equal(d.counts_all, [3, 0, 2, 2])
    np.testing.assert_array_equal(d.bin_lower, [0, 0.5, 0.75])
    np.testing.assert_array_equal(d.bin_upper, [0.25, 0.75, 1])
    np.testing.assert_array_equal(d.count, [3, 2, 2])
    np.testing.assert_allclose(d.confidence, [0.1, 0.65, 0.95], atol=1e-15)
    np.testing.assert_allclose(d.accuracy, [1 / 3, 0.5, 1.0], atol=1e-15)
    ece = (3 * abs(1 / 3 - 0.1) + 2 * abs(0.5 - 0.65) + 2 * abs(1.0 - 0.95)) / 7
    assert d.metric == "ece_l1_plugin" and d.estimate == pytest.approx(ece, abs=1e-15)
    assert d.ci_low is None and d.ci_high is None
    for j, (k, n) in enumerate([(1, 3), (1, 2), (2, 2)]):
        assert (d.acc_low[j], d.acc_high[j]) == pytest.approx(wilson_by_hand(k, n), abs=1e-12)
    assert d.acc_high[2] == 1.0


@pytest.mark.parametrize(("strategy", "n_bins"), [("uniform", 15), ("uniform", 7), ("quantile", 10)])
def test_prepare_binned_equals_calibcli_binning(strategy, n_bins):
    df = pd.read_csv(BINARY)
    y, z = df["label"].to_numpy(), df["prob"].to_numpy()
    d = prepare_binned(y, z, n_bins=n_bins, strategy=strategy, n_boot=20, seed=4)
    binning = fit_binning(z, n_bins=n_bins, strategy=strategy)
    idx = binning.assign(z)
    s = bin_statistics(y, z, idx, binning.n_bins_effective)
    nonempty = s.count > 0
    np.testing.assert_array_equal(d.bounds, binning.bounds())
    np.testing.assert_array_equal(d.counts_all, np.bincount(idx, minlength=binning.n_bins_effective))
    assert d.n_bins_nonempty == nonempty.sum() == len(d.confidence)
    # Per-bin means taken directly from the rows of each bin.
    occupied = np.flatnonzero(nonempty)
    np.testing.assert_allclose(d.confidence, [z[idx == j].mean() for j in occupied], rtol=1e-12)
    np.testing.assert_allclose(d.accuracy, [y[idx == j].mean() for j in occupied], rtol=1e-12)
    # The metric and its interval are the numbers `calibcli ece` computes with the same seed.
    ref = binned_calibration(y, z, n_bins=n_bins, strategy=strategy, n_boot=20, seed=4)
    m = ref.metrics["ece_l1_plugin"]
    assert (d.estimate, d.ci_low, d.ci_high) == (m.estimate, m.ci_low, m.ci_high)
    assert d.ci_low <= d.estimate <= d.ci_high


def test_prepare_binned_frequency_weights_equal_duplicated_rows():
    y, z = make_binary(120, seed=2)
    w = np.random.default_rng(3).integers(1, 4, len(z))
    a = prepare_binned(y, z, sample_weight=w, n_bins=8, n_boot=0)
    b = prepare_binned(np.repeat(y, w), np.repeat(z, w), n_bins=8, n_boot=0)
    for field in ("confidence", "accuracy", "acc_low", "acc_high", "weight", "bin_lower", "bin_upper"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12, err_msg=field)
    assert a.estimate == pytest.approx(b.estimate, abs=1e-12)
    assert a.weight_total == w.sum() and a.n == 120
    # the histogram counts the weights (as the duplicated rows), and the legend says so
    np.testing.assert_allclose(a.weights_all, b.counts_all)
    fig = dg.plot_binned(a)
    (hist,) = lower_axes(fig)
    assert hist.get_ylabel() == "weighted count"
    (stairs,) = [p for p in hist.patches if hasattr(p, "get_data")]
    np.testing.assert_allclose(stairs.get_data().values, b.counts_all)
    assert legend_texts(fig.axes[0])[0].endswith(f"n = 120 rows, weight {w.sum():,}")


def test_prepare_binned_rejects_bad_options():
    y, z = make_binary(50)
    with pytest.raises(CalibcliError, match="strategy is 'equal'") as err:  # the library names the parameter
        prepare_binned(y, z, strategy="equal")
    assert err.value.for_cli().startswith("--strategy is 'equal'")  # the command line, the flag
    with pytest.raises(CalibcliError, match="n_bins is 0") as err:
        prepare_binned(y, z, n_bins=0)
    assert err.value.for_cli().startswith("--n-bins is 0")
    with pytest.raises(CalibcliError, match="outside"):
        prepare_binned(y, np.where(z > 0.5, 1.3, z))


# ---------------------------------------------------------------------------------------------
# plot_binned


def test_binned_figure_draws_the_prepared_statistics():
    y, z = make_binary(300)
    d = prepare_binned(y, z, n_bins=10, n_boot=20, seed=0)
    fig = dg.plot_binned(d)
    assert len(fig.axes) == 2
    ax, hist = fig.axes
    assert ax.get_xlabel() == "" and ax.get_ylabel() == "observed frequency of positives"
    assert hist.get_xlabel() == "predicted probability" and hist.get_ylabel() == "count"
    # The diagonal.
    assert any(np.array_equal(line.get_xdata(), [0, 1]) and np.array_equal(line.get_ydata(), [0, 1]) for line in ax.lines)
    # One curve: points at (mean confidence, accuracy) of each non-empty bin.
    (eb,) = errorbars(ax)
    points = eb.lines[0]
    np.testing.assert_array_equal(points.get_xdata(), d.confidence)
    np.testing.assert_array_equal(points.get_ydata(), d.accuracy)
    # Wilson bars, recomputed here from the bin counts.
    by_hand = np.array([wilson_by_hand(k, n) for k, n in zip(d.accuracy * d.count, d.count)])
    ends = error_bar_ends(eb)
    np.testing.assert_allclose(ends[:, 0], d.confidence, atol=1e-12)
    np.testing.assert_allclose(ends[:, 1:], by_hand, atol=1e-9)
    # The gap to the diagonal, shaded over each bin's range.
    gaps = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(gaps) == d.n_bins_nonempty
    for r, lo, hi, conf, acc in zip(gaps, d.bin_lower, d.bin_upper, d.confidence, d.accuracy):
        assert (r.get_x(), r.get_x() + r.get_width()) == pytest.approx((lo, hi))
        assert (r.get_y(), r.get_y() + r.get_height()) == pytest.approx((min(conf, acc), max(conf, acc)))
    # The histogram: every bin's count, on the bin edges.
    (stairs,) = [p for p in hist.patches if isinstance(p, StepPatch)]
    np.testing.assert_array_equal(stairs.get_data().values, d.counts_all)
    np.testing.assert_array_equal(stairs.get_data().edges, d.bounds)
    assert d.counts_all.sum() == 300
    # The metric with its interval, and n, in the legend.
    assert legend_texts(ax) == [f"ece_l1_plugin = {fmt3(d.estimate)} [{fmt3(d.ci_low)}, {fmt3(d.ci_high)}], n = 300"]


def test_empty_bins_are_not_drawn_as_zero():
    rng = np.random.default_rng(1)
    z = np.concatenate([rng.uniform(0.0, 0.2, 60), rng.uniform(0.8, 1.0, 60)])
    y = (rng.random(120) < z).astype(int)
    d = prepare_binned(y, z, n_bins=10, n_boot=0)
    assert d.n_bins_nonempty == 4 and list(d.counts_all[2:8]) == [0] * 6
    fig = dg.plot_binned(d)
    ax = fig.axes[0]
    (eb,) = errorbars(ax)
    x = np.asarray(eb.lines[0].get_xdata())
    assert len(x) == 4 and ((x < 0.2) | (x >= 0.8)).all()  # nothing drawn in the empty middle bins
    assert len(error_bar_ends(eb)) == 4
    assert all(r.get_x() < 0.2 or r.get_x() >= 0.8 for r in ax.patches if isinstance(r, Rectangle))
    assert legend_texts(ax) == [f"ece_l1_plugin = {fmt3(d.estimate)}, n = 120"]  # no bootstrap: no interval
    # the line joining the points breaks over the empty bins (no segment from 0.2 to 0.8)
    (joined,) = [line for line in ax.lines if np.isnan(np.asarray(line.get_xdata(), dtype=float)).any()]
    np.testing.assert_array_equal(joined.get_xdata(), [x[0], x[1], np.nan, x[2], x[3]])
    np.testing.assert_array_equal(joined.get_ydata(), [d.accuracy[0], d.accuracy[1], np.nan, d.accuracy[2], d.accuracy[3]])


def test_all_positive_and_all_negative_bins_are_drawn():
    # 13 rows all positive: centre + half of the Wilson interval rounds to 1 - 1.1e-16 (a negative error
    # bar length, which matplotlib refuses); 10 rows all negative: centre - half rounds to 2.8e-17.
    z = np.r_[np.full(13, 0.95), np.full(10, 0.05)]
    y = np.r_[np.ones(13, int), np.zeros(10, int)]
    d = prepare_binned(y, z, n_bins=5, n_boot=0)
    np.testing.assert_array_equal(d.accuracy, [0.0, 1.0])
    assert d.acc_low[0] == 0.0 and d.acc_high[1] == 1.0
    ends = error_bar_ends(errorbars(dg.plot_binned(d).axes[0])[0])
    np.testing.assert_allclose(ends[:, 1:], [wilson_by_hand(0, 10), wilson_by_hand(13, 13)], atol=1e-12)


def test_top_label_axis_labels():
    y, z = make_binary(100)
    z = 0.5 + 0.5 * z
    fig = dg.plot_binned(prepare_binned(y, z, n_boot=0, problem="top-label"))
    ax, hist = fig.axes
    assert ax.get_ylabel() == "accuracy" and hist.get_xlabel() == "confidence (top-label probability)"


# ---------------------------------------------------------------------------------------------
# prepare_smooth and plot_smooth


def test_prepare_smooth_is_smooth_curve():
    y, z = make_binary(300, seed=5)
    d = prepare_smooth(y, z, n_boot=20, seed=7, n_points=201)
    ref = smooth_curve(y, z, n_boot=20, rng=7, n_points=201)
    assert (d.sigma, d.smece, d.ci_low, d.ci_high, d.n, d.n_boot) == (ref.sigma, ref.smece, ref.ci_low, ref.ci_high, 300, 20)
    for field in ("t", "yhat", "density", "band_low", "band_high"):
        np.testing.assert_array_equal(getattr(d, field), getattr(ref, field), err_msg=field)
    # The curve is the kernel regression at the same bandwidth, s*.
    at_sigma = smooth_curve(y, z, sigma=d.sigma, n_points=201)
    np.testing.assert_allclose(d.yhat, at_sigma.yhat, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert d.ci_low <= d.smece <= d.ci_high
    no_boot = prepare_smooth(y, z, n_boot=0)
    assert no_boot.band_low is None and no_boot.ci_low is None and len(no_boot.t) == 501


def test_smooth_figure_draws_the_smooth_curve():
    y, z = make_binary(300, seed=5)
    d = prepare_smooth(y, z, n_boot=20, seed=7, n_points=201)
    fig = dg.plot_smooth(d)
    ax, dens = fig.axes
    assert ax.get_ylabel() == "observed frequency of positives"
    assert dens.get_xlabel() == "predicted probability" and dens.get_ylabel() == "density"
    # The curve: segments joining consecutive (t, yhat) where yhat is defined, widths following the density.
    (curve,) = smooth_lines(ax)
    ref = smooth_curve(y, z, n_boot=20, rng=7, n_points=201)
    pts = np.column_stack([ref.t, ref.yhat])
    expected = np.stack([pts[:-1], pts[1:]], axis=1)
    ok = np.isfinite(expected).all(axis=(1, 2))
    assert ok.sum() >= 150
    np.testing.assert_array_equal(np.array(curve.get_segments()), expected[ok])
    np.testing.assert_allclose(curve.get_linewidths(), dg.smooth_line_widths(ref.density)[ok])
    # The bootstrap band: its outline passes through every (t, band_low) and (t, band_high).
    bands = [c for c in ax.collections if c is not curve]
    assert len(bands) == 1
    vertices = np.concatenate([p.vertices for p in bands[0].get_paths()])
    outline = {(round(a, 12), round(b, 12)) for a, b in vertices}
    for band in (ref.band_low, ref.band_high):
        fin = np.isfinite(band)
        assert {(round(a, 12), round(b, 12)) for a, b in zip(ref.t[fin], band[fin])} <= outline
    # The density underneath.
    (line,) = dens.lines
    np.testing.assert_array_equal(line.get_xdata(), ref.t)
    np.testing.assert_array_equal(line.get_ydata(), ref.density)
    assert legend_texts(ax) == [f"smECE = {fmt3(ref.smece)} [{fmt3(ref.ci_low)}, {fmt3(ref.ci_high)}], n = 300"]


# ---------------------------------------------------------------------------------------------
# DiagramInputAccumulator: the streamed case, from which prepare_* are the one-batch case


class _Stream:
    """The few things :func:`calibcli.engines.fragments.run_local` reads from a stream: batches of rows."""

    group_by = ()

    def __init__(self, labels, probs, w=None, *, batch: int):
        self.labels, self.probs, self.w, self.batch = labels, probs, w, batch

    def batches(self):
        from types import SimpleNamespace

        for start in range(0, len(self.labels), self.batch):
            sel = slice(start, start + self.batch)
            yield SimpleNamespace(row_index=np.arange(start, min(start + self.batch, len(self.labels))),
                                  probs=self.probs[sel], labels=self.labels[sel],
                                  sample_weight=None if self.w is None else self.w[sel], groups=())


def _streamed(labels, probs, w=None, *, batch=37, mode="binary", n_classes=2, max_problems=None, **options):
    from calibcli.engines.fragments import run_local

    opts = DiagramOptions(**options)
    ((group, acc),) = run_local(_Stream(labels, probs, w, batch=batch), lambda: DiagramInputAccumulator(
        mode=mode, n_classes=n_classes, class_names=tuple(str(k) for k in range(n_classes)), options=opts,
        max_problems=max_problems))
    assert group is None
    return acc


def _same(a, b, *, rtol=0.0) -> None:
    """Two diagram data objects hold the same numbers (to ``rtol``)."""
    assert type(a) is type(b)
    for field in a.__dataclass_fields__:
        x, y = getattr(a, field), getattr(b, field)
        if isinstance(x, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=0, equal_nan=True, err_msg=field)
        elif isinstance(x, float) and rtol:
            assert x == pytest.approx(y, rel=rtol), field
        else:
            assert x == y, field


@pytest.mark.parametrize("weighted", [False, True])
def test_prepare_is_the_one_batch_case_of_the_streamed_accumulator(weighted):
    y, z = make_binary(500, seed=8)
    w = np.random.default_rng(1).integers(1, 4, len(z)).astype(float) if weighted else None
    acc = _streamed(y, z, w, batch=37, n_bins=12, n_boot=20, seed=5, curve_points=201)
    assert acc.n_rows == 500 and len(acc.problems) == 1
    report = acc.result()
    (curve,) = report.curves("m")
    assert (curve.name, curve.problem, curve.class_index, curve.n) == ("m", "binary", None, 500)
    _same(curve.binned, prepare_binned(y, z, sample_weight=w, n_bins=12, n_boot=20, seed=5, name="m"))
    ref = prepare_smooth(y, z, sample_weight=w, n_boot=20, seed=5, n_points=201, name="m")
    assert curve.smooth.grid_cells is not None and ref.grid_cells is None
    _same(replace(curve.smooth, grid_cells=None), ref, rtol=1e-12)
    # the report sections come from these objects
    doc = curve.to_dict()
    assert doc["binned"] == curve.binned.to_dict() and doc["smooth"]["sigma"] == curve.smooth.sigma
    assert doc["binned"]["metrics"]["ece_l1_plugin"]["ci_method"] == "percentile Poisson bootstrap over rows, 20 resamples"
    assert doc["smooth"]["metrics"]["smece"]["ci_method"] == (
        "Poisson bootstrap over rows, 20 resamples, bandwidth re-solved on each")


def test_accumulator_states_merge_and_round_trip_through_json():
    import json

    y, z = make_binary(400, seed=9)
    whole = _streamed(y, z, batch=400, n_boot=10, seed=2, curve_points=101).result().curves("x")[0]
    # two workers, each with every other block of rows, their states shipped as JSON and merged
    opts = DiagramOptions(n_boot=10, seed=2, curve_points=101)
    parts = [DiagramInputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=opts) for _ in range(2)]
    for k, start in enumerate(range(0, 400, 50)):
        rows = np.arange(start, start + 50)
        parts[k % 2].update(rows, z[rows], y[rows])
    shipped = [DiagramInputAccumulator.from_dict(json.loads(json.dumps(p.to_dict()))) for p in parts]
    merged = shipped[1].merge(shipped[0])
    assert merged.n_rows == 400
    (curve,) = merged.result().curves("x")
    _same(curve.binned, whole.binned)
    _same(curve.smooth, whole.smooth, rtol=1e-12)
    with pytest.raises(ValueError, match="not a diagram input state"):
        DiagramInputAccumulator.from_dict({**parts[0].to_dict(), "kind": "binned_input"})


def test_second_pass_fixes_quantile_edges_beyond_the_rows_kept():
    rng = np.random.default_rng(4)
    z = rng.beta(0.7, 0.7, 1000)
    y = (rng.random(1000) < z).astype(int)
    acc = _streamed(y, z, batch=64, kind="binned", strategy="quantile", n_bins=10, n_boot=0, row_limit=100)
    report = acc.result()
    assert report.notes == ("quantile edges from exact quantiles of all predictions",)
    ref = prepare_binned(y, z, strategy="quantile", n_bins=10, n_boot=0)
    (curve,) = report.curves("")
    assert curve.smooth is None
    np.testing.assert_array_equal(curve.binned.bounds, ref.bounds)
    np.testing.assert_array_equal(curve.binned.counts_all, ref.counts_all)
    np.testing.assert_allclose(curve.binned.confidence, ref.confidence, rtol=1e-12)
    assert curve.binned.estimate == pytest.approx(ref.estimate, rel=1e-12)


def test_second_pass_on_a_finer_grid_when_s_star_is_below_what_the_first_resolves():
    # A residual of mean 0.001 at one point: s* = 0.001, four cells of a 4096-cell grid (SPEC 3 wants
    # eight); without the rows, the accumulator streams the data again on a finer grid.
    from calibcli.engines.fragments import run_local

    z = np.full(1000, 0.5)
    y = np.zeros(1000, dtype=np.int64)
    y[::2] = 1
    y[1] = 1  # 501 positives
    opts = DiagramOptions(kind="smooth", n_boot=0, row_limit=100)
    first = DiagramInputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=opts, grids=[4096])
    first.update(np.arange(1000), z, y)
    assert first.needs_second_pass()
    second = first.for_second_pass()
    assert second.n_rows == 0 and second.smooth[0].n_cells >= 8 * 1000
    ((_, acc),) = run_local(_Stream(y, z, batch=64), lambda: DiagramInputAccumulator(
        mode="binary", n_classes=2, class_names=("0", "1"), options=opts, grids=[4096]))
    (curve,) = acc.result().curves("")
    assert curve.smooth.grid_cells == acc.smooth[0].n_cells > 4096
    assert curve.smooth.sigma == pytest.approx(0.001, rel=1e-6)
    assert curve.smooth.sigma == pytest.approx(prepare_smooth(y, z, n_boot=0).sigma, rel=1e-6)


def test_marginal_accumulates_only_the_classes_drawn():
    rng = np.random.default_rng(6)
    P = rng.dirichlet([1, 1, 1, 1], 300)
    labels = np.array([rng.choice(4, p=row) for row in P])
    acc = _streamed(labels, P, batch=50, mode="marginal", n_classes=4, n_boot=0, max_problems=2)
    assert len(acc.problems) == 2
    curves = acc.result().curves("m")
    assert [(c.problem, c.class_index) for c in curves] == [("class 0", 0), ("class 1", 1)]
    for k, c in enumerate(curves):
        _same(c.binned, prepare_binned((labels == k).astype(int), P[:, k], n_boot=0, name="m", problem=f"class {k}"))


# ---------------------------------------------------------------------------------------------
# plot_diagram: kinds, overlays, small multiples


@pytest.mark.parametrize(("kind", "lower"), [("binned", ["count"]), ("smooth", ["density"]), ("both", ["count", "density"])])
def test_kind_gives_its_panels(kind, lower):
    b, s = one_panel(*make_binary(200))
    fig = dg.plot_diagram([DiagramPanel(title="", binned=(b,), smooth=(s,))], kind=kind, title="Reliability diagram of m")
    mains = main_axes(fig)
    assert len(mains) == len(lower) and len(fig.axes) == 2 * len(lower)
    assert [ax.get_ylabel() for ax in lower_axes(fig)] == lower
    assert all(ax.get_xlabel() == "predicted probability" for ax in lower_axes(fig))
    assert all(ax.get_ylabel() == "observed frequency of positives" for ax in mains)
    titles = [ax.get_title() for ax in mains]
    expected = {"binned": "binned (15 uniform bins)", "smooth": f"smooth (bandwidth s* = {fmt3(s.sigma)})"}
    assert titles == [expected[k] for k in ("binned", "smooth") if kind in (k, "both")]
    assert sum(len(errorbars(ax)) for ax in mains) == (kind != "smooth")
    assert sum(len(smooth_lines(ax)) for ax in mains) == (kind != "binned")
    assert [t.get_text() for t in fig.texts] == ["Reliability diagram of m"]
    width, height = fig.get_size_inches()
    assert width == pytest.approx(dg.PANEL_WIDTH * (2 if kind == "both" else 1))


def test_overlay_names_each_curve_in_the_legend():
    names = ["model A", "model B", "model C"]
    data = [one_panel(*make_binary(200, seed=k), name=nm) for k, nm in enumerate(names)]
    panel = DiagramPanel(title="", binned=tuple(b for b, _ in data), smooth=tuple(s for _, s in data))
    fig = dg.plot_diagram([panel], kind="both")
    binned_ax, smooth_ax = main_axes(fig)
    assert len(errorbars(binned_ax)) == 3 and len(smooth_lines(smooth_ax)) == 3
    assert [t.split("\n")[0] for t in legend_texts(binned_ax)] == names
    assert [t.split("\n")[0] for t in legend_texts(smooth_ax)] == names
    for (b, s), tb, ts in zip(data, legend_texts(binned_ax), legend_texts(smooth_ax)):
        assert tb == f"{b.name}\nece_l1_plugin = {fmt3(b.estimate)} [{fmt3(b.ci_low)}, {fmt3(b.ci_high)}], n = 200"
        assert ts == f"{s.name}\nsmECE = {fmt3(s.smece)} [{fmt3(s.ci_low)}, {fmt3(s.ci_high)}], n = 200"
    # Each curve's points are its own data, each in its own colour.
    for (b, _), eb in zip(data, errorbars(binned_ax)):
        np.testing.assert_array_equal(eb.lines[0].get_xdata(), b.confidence)
    colours = [matplotlib.colors.to_hex(eb.lines[0].get_color()) for eb in errorbars(binned_ax)]
    assert colours == list(dg.COLORS[:3])
    # One histogram and one density line per curve.
    hist, dens = lower_axes(fig)
    assert len([p for p in hist.patches if isinstance(p, StepPatch)]) == 3 and len(dens.lines) == 3
    # Different bandwidths: the panel title says so.
    assert smooth_ax.get_title() == "smooth (bandwidth s* of each curve)"


def test_small_multiples_one_panel_per_class_and_the_note():
    y, z = make_binary(200)
    panels = []
    for k in range(3):
        b, s = one_panel(y, np.clip(z + 0.02 * k, 0, 1), n_boot=0, problem=f"class {k}")
        panels.append(DiagramPanel(title=f"class {k}", binned=(b,), smooth=(s,)))
    fig = dg.plot_diagram(panels, kind="both", title="T", note="the first 3 of 9 classes are drawn")
    mains = main_axes(fig)
    assert len(mains) == 6 and len(fig.axes) == 12
    # small multiples: the class on a line of its own, so that the title fits its panel
    assert [ax.get_title() for ax in mains] == [
        f"class {k}\n{which}" for k, (b, s) in enumerate((p.binned[0], p.smooth[0]) for p in panels)
        for which in ("binned (15 uniform bins)", f"smooth (s* = {fmt3(s.sigma)})")
    ]
    assert [len(errorbars(ax)) + len(smooth_lines(ax)) for ax in mains] == [1] * 6
    assert [t.get_text() for t in fig.texts] == ["T", "the first 3 of 9 classes are drawn"]
    # Pairs of panels in two columns; binned-only or smooth-only panels in rows of four.
    assert dg.figure_size(3, "both")[1:] == (2, 2) and len(fig.subfigs) == 4
    assert dg.figure_size(5, "binned")[1:] == (2, 4) and dg.figure_size(9, "smooth")[1:] == (3, 4)
    assert dg.figure_size(1, "both")[0] == (2 * dg.PANEL_WIDTH, dg.PANEL_HEIGHT + 0.35)


def test_plot_diagram_rejects_bad_arguments():
    b, s = one_panel(*make_binary(50), n_boot=0)
    with pytest.raises(CalibcliError, match="kind is 'hex'") as err:
        dg.plot_diagram([DiagramPanel(title="", binned=(b,), smooth=(s,))], kind="hex")
    assert err.value.for_cli().startswith("--kind is 'hex'")
    with pytest.raises(CalibcliError, match="nothing to draw"):
        dg.plot_diagram([], kind="both")


# ---------------------------------------------------------------------------------------------
# Layout: no text outside the figure


def _layout(which: str):
    if which == "overlay":  # one panel, two curves with long names in the legends
        names = ["a rather long model name number one.parquet", "another quite long model name.parquet"]
        data = [one_panel(*make_binary(200, seed=k), name=nm) for k, nm in enumerate(names)]
        panel = DiagramPanel(title="", binned=tuple(b for b, _ in data), smooth=tuple(s for _, s in data))
        return [panel], "both", "Reliability diagrams of 2 models, binary mode", None
    # small multiples: two binned + smooth pairs side by side, or binned panels in rows of four (the last
    # one partly empty)
    kind = "binned" if which == "marginal-binned" else "both"
    n_panels = 5 if kind == "binned" else 2
    y, z = make_binary(200)
    panels = []
    for k in range(n_panels):
        b, s = one_panel(y, np.clip(z * (0.5 + 0.05 * k), 0, 1), n_boot=0, problem=f"class {k}")
        panels.append(DiagramPanel(title=f"class {k}", binned=(b,), smooth=(s,)))
    note = f"marginal mode: the first {n_panels} of 26 classes are drawn (--max-classes {n_panels})"
    return panels, kind, "Reliability diagram of x.parquet, marginal mode", note


@pytest.mark.parametrize("which", ["overlay", "marginal-binned", "marginal-both"])
def test_no_text_is_clipped(which):
    panels, kind, title, note = _layout(which)
    fig = dg.plot_diagram(panels, kind=kind, title=title, note=note)
    assert_nothing_clipped(fig)


# ---------------------------------------------------------------------------------------------
# Rendering


def test_png_svg_pdf_bytes_depend_only_on_the_data():
    def render():
        b, s = one_panel(*make_binary(200), seed=3)
        fig = dg.plot_diagram([DiagramPanel(title="", binned=(b,), smooth=(s,))], kind="smooth")
        return fig, {fmt: dg.figure_bytes(fig, fmt, dpi=72) for fmt in ("png", "svg", "pdf")}

    fig, first = render()
    _, second = render()
    assert first == second
    # PNG: the figure's size times the dpi (3.25 x 3.75 inches at 72 dpi is 234 x 270).
    width_in, height_in = fig.get_size_inches()
    width, height = png_size(first["png"])
    assert abs(width - width_in * 72) < 1 and abs(height - height_in * 72) < 1
    assert (width, height) == (234, 270)
    assert ET.parse(io.BytesIO(first["svg"])).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert first["pdf"].startswith(b"%PDF-") and first["pdf"].rstrip().endswith(b"%%EOF")
    version = matplotlib.__version__.encode()
    for fmt, data in first.items():
        assert version not in data, fmt
    assert b"Software" not in first["png"] and b"CreationDate" not in first["pdf"]


def test_figure_bytes_rejects_an_unknown_format():
    from matplotlib.figure import Figure

    with pytest.raises(CalibcliError, match="unknown figure format 'gif': expected one of png, svg, pdf"):
        dg.figure_bytes(Figure(), "gif")


def test_format_of():
    assert [dg.format_of(p) for p in ("a.png", "dir/b.svg", "c.PDF", "d.tar.png")] == ["png", "svg", "pdf", "png"]
    with pytest.raises(CalibcliError) as e:
        dg.format_of("fig.jpg")
    assert e.value.for_cli() == "--output fig.jpg: cannot tell the figure format from the extension '.jpg': expected .png, .svg, .pdf"
    with pytest.raises(CalibcliError, match=r"extension '\(none\)'"):
        dg.format_of("figure")


@pytest.mark.parametrize("flip, corner", [(False, "lower right"), (True, "upper left")])
def test_legend_goes_to_the_off_diagonal_corner_that_hides_least(flip, corner):
    # low predictions that come true put points (and the band) in the upper left; flipped, in the lower right
    rng = np.random.default_rng(5)
    z = np.concatenate([rng.uniform(0.0, 0.3, 400), rng.uniform(0.3, 1.0, 400)])
    y = np.concatenate([np.ones(400, int), (rng.random(400) < z[400:]).astype(int)])
    if flip:
        z, y = 1.0 - z, 1 - y
    for fig in (dg.plot_binned(prepare_binned(y, z, n_boot=0)),
                dg.plot_smooth(prepare_smooth(y, z, n_boot=20, seed=0))):
        assert fig.axes[0].get_legend()._loc == {"upper left": 2, "lower right": 4}[corner]
