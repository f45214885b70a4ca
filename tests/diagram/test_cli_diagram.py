"""`calibcli diagram` through the CLI: the figure drawn (inspected by catching it on its way to
``figure_bytes``), the JSON document, kinds, overlays, marginal small multiples, output formats,
reproducible bytes, a headless subprocess run, and the error paths (one ``Error:`` line, exit 2,
no file left behind).
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection
from matplotlib.container import ErrorbarContainer

from calibcli.diagram.data import prepare_binned
from calibcli.diagram import plot as dg
from calibcli.smooth.estimator import smooth_curve

from _cli import BINARY, MULTI, SAMPLE, run, run_json, write_csv  # noqa: E402  (tests/ is on sys.path)

FAST = ("--n-boot", "0")
NOTE3 = "marginal mode: the first 3 of 10 classes are drawn (--max-classes 3)"


# ---------------------------------------------------------------------------------------------
# Helpers


def make_binary(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = rng.beta(0.7, 0.7, n)
    y = (rng.random(n) < 0.1 + 0.8 * z).astype(np.int64)
    return z, y


@pytest.fixture
def small(tmp_path):
    """A 300-row binary CSV in its own folder (so the figure's folder holds only what the command writes)."""
    folder = tmp_path / "data"
    folder.mkdir()
    return write_csv(folder, "small.csv", *make_binary())


def main_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() not in ("count", "weighted count", "density")]


def lower_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() in ("count", "weighted count", "density")]


def errorbars(ax):
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def smooth_lines(ax):
    return [c for c in ax.collections if isinstance(c, LineCollection) and c.get_label() == "_smooth_curve"]


def legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def wilson_by_hand(k: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z / d * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def fmt3(x: float) -> str:
    return f"{x:.3g}"


# ---------------------------------------------------------------------------------------------
# The figure and the report


def test_binary_figure_and_json_show_the_same_numbers_as_ece_and_the_core(tmp_path, figures):
    out = tmp_path / "bc.png"
    r = run("diagram", BINARY, "-o", out, "--n-boot", "20", "--seed", "3", "--n-bins", "10", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    doc = json.loads(r.stdout)
    assert doc["command"] == "diagram" and doc["schema_version"] == 1
    p = doc["parameters"]
    assert (p["kind"], p["n_bins"], p["strategy"], p["n_boot"], p["seed"], p["dpi"], p["max_classes"]) == (
        "both", 10, "uniform", 20, 3, 300.0, 12)
    assert set(p["estimators"]) == {"ece_l1_plugin", "smece", "bin_accuracy_interval", "smooth_band"}
    (f,) = doc["files"]
    assert f["mode"] == "binary" and f["name"] == "breast_cancer_nb.csv" and f["input"]["rows_used"] == 569
    (curve,) = f["curves"]
    assert (curve["problem"], curve["n"]) == ("binary", 569)

    # The binned numbers are `calibcli ece`'s for the same options and seed.
    ece = run_json("ece", BINARY, "--n-boot", "20", "--seed", "3", "--n-bins", "10")["files"][0]["problems"][0]
    b = curve["binned"]
    assert b["metrics"]["ece_l1_plugin"]["estimate"] == ece["metrics"]["ece_l1_plugin"]["estimate"]
    assert (b["metrics"]["ece_l1_plugin"]["ci_low"], b["metrics"]["ece_l1_plugin"]["ci_high"]) == (
        ece["metrics"]["ece_l1_plugin"]["ci_low"], ece["metrics"]["ece_l1_plugin"]["ci_high"])
    keys = ("lower", "upper", "count", "mean_confidence", "accuracy")
    assert [{k: q[k] for k in keys} for q in b["per_bin"]] == [{k: q[k] for k in keys} for q in ece["bins"]["per_bin"]]
    assert b["n_bins_nonempty"] == len(b["per_bin"]) == ece["bins"]["n_bins_nonempty"]

    # The smooth numbers are smooth_curve's with the same seed.
    df = pd.read_csv(BINARY)
    ref = smooth_curve(df["label"], df["prob"], n_boot=20, rng=3)
    s = curve["smooth"]
    assert s["sigma"] == ref.sigma
    assert (s["metrics"]["smece"]["estimate"], s["metrics"]["smece"]["ci_low"], s["metrics"]["smece"]["ci_high"]) == (
        ref.smece, ref.ci_low, ref.ci_high)

    # The figure shows exactly those numbers.
    # --kind both (the default): two main panels, a histogram and a density under them.
    (fig,) = figures
    binned_ax, smooth_ax = main_axes(fig)
    assert [ax.get_ylabel() for ax in lower_axes(fig)] == ["count", "density"]
    assert (len(errorbars(binned_ax)), len(smooth_lines(binned_ax))) == (1, 0)
    assert (len(errorbars(smooth_ax)), len(smooth_lines(smooth_ax))) == (0, 1)
    (eb,) = errorbars(binned_ax)
    np.testing.assert_array_equal(eb.lines[0].get_xdata(), [q["mean_confidence"] for q in b["per_bin"]])
    np.testing.assert_array_equal(eb.lines[0].get_ydata(), [q["accuracy"] for q in b["per_bin"]])
    (bars,) = eb.lines[2]
    segs = np.array(bars.get_segments())
    ends = np.column_stack([segs[:, :, 1].min(axis=1), segs[:, :, 1].max(axis=1)])
    by_hand = [wilson_by_hand(q["accuracy"] * q["count"], q["count"]) for q in b["per_bin"]]
    np.testing.assert_allclose(ends, by_hand, atol=1e-9)
    np.testing.assert_allclose(ends, [(q["wilson_low"], q["wilson_high"]) for q in b["per_bin"]], atol=1e-12)
    (line,) = smooth_lines(smooth_ax)
    pts = np.column_stack([ref.t, ref.yhat])
    segments = np.stack([pts[:-1], pts[1:]], axis=1)
    np.testing.assert_array_equal(np.array(line.get_segments()), segments[np.isfinite(segments).all(axis=(1, 2))])
    m, sm = b["metrics"]["ece_l1_plugin"], s["metrics"]["smece"]
    assert legend_texts(binned_ax) == [f"ece_l1_plugin = {fmt3(m['estimate'])} [{fmt3(m['ci_low'])}, {fmt3(m['ci_high'])}], n = 569"]
    assert legend_texts(smooth_ax) == [f"smECE = {fmt3(sm['estimate'])} [{fmt3(sm['ci_low'])}, {fmt3(sm['ci_high'])}], n = 569"]
    assert [t.get_text() for t in fig.texts] == ["Reliability diagram of breast_cancer_nb.csv, binary mode"]

    # The file written, as the report says.
    d = doc["diagram"]
    data = out.read_bytes()
    assert (d["path"], d["format"], d["bytes"]) == (str(out), "png", len(data))
    assert (d["width_in"], d["height_in"]) == tuple(fig.get_size_inches())
    assert (d["width_px"], d["height_px"]) == png_size(data)
    assert (d["mode"], d["panels"], d["n_panels"], d["n_curves_per_panel"], d["note"]) == ("binary", ["binary"], 1, 1, None)
    assert (d["classes_drawn"], d["classes_total"]) == (None, None)
    assert [x.name for x in tmp_path.iterdir()] == ["bc.png"]  # no temporary file left


def test_table_output_and_png_pixel_size(small, tmp_path, monkeypatch):
    # 3.25 x 3.75 inches at 72 dpi is 234 x 270 pixels, and the report says so. Relative paths: the table's
    # columns are as wide as the file's name, so a long temporary folder (pytest-xdist's) would wrap its cells.
    monkeypatch.chdir(tmp_path)
    out = Path("F.PNG")
    r = run("diagram", os.path.relpath(small), "-o", out, "--n-boot", "20", "--kind", "binned", "--dpi", "72")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    width, height = png_size(out.read_bytes())
    assert abs(width - dg.PANEL_WIDTH * 72) < 1 and abs(height - (dg.PANEL_HEIGHT + 0.35) * 72) < 1
    assert (width, height) == (234, 270)
    text = " ".join(r.stdout.split())  # the table wraps long lines
    assert text.startswith(f"wrote {out} (PNG, 234x270 px, {out.stat().st_size:,} bytes): binned diagram, binary "
                           f"mode, 1 panel(s), 1 curve(s) per panel")
    assert "metrics shown (95% intervals, 20 bootstrap resamples, seed 0)" in r.stdout
    assert "ece_l1_plugin" in r.stdout and "smece" not in r.stdout and "of 15 uniform bins non-empty" in r.stdout


@pytest.mark.parametrize(("kind", "lower"), [("binned", ["count"]), ("smooth", ["density"])])
def test_kind_gives_one_main_panel(small, tmp_path, figures, kind, lower):
    doc = run_json("diagram", small, "-o", tmp_path / "k.png", "--kind", kind, *FAST)
    (fig,) = figures
    mains = main_axes(fig)
    assert len(mains) == len(lower) and [ax.get_ylabel() for ax in lower_axes(fig)] == lower
    assert all(ax.get_ylabel() == "observed frequency of positives" for ax in mains)
    assert all(ax.get_xlabel() == "predicted probability" for ax in lower_axes(fig))
    assert sum(len(errorbars(ax)) for ax in mains) == (kind != "smooth")
    assert sum(len(smooth_lines(ax)) for ax in mains) == (kind != "binned")
    (curve,) = doc["files"][0]["curves"]
    assert ("binned" in curve, "smooth" in curve) == (kind != "smooth", kind != "binned")
    estimators = set(doc["parameters"]["estimators"])
    assert ("ece_l1_plugin" in estimators, "smece" in estimators) == (kind != "smooth", kind != "binned")
    assert doc["diagram"]["width_in"] == pytest.approx(dg.PANEL_WIDTH * len(lower))


# ---------------------------------------------------------------------------------------------
# Overlays


def test_several_files_are_overlaid_with_a_legend_naming_each(tmp_path, figures):
    a = write_csv(tmp_path, "a.csv", *make_binary(300, seed=1))
    b = write_csv(tmp_path, "b.csv", *make_binary(200, seed=2))
    out = tmp_path / "o.png"
    doc = run_json("diagram", a, b, "-o", out, "--name", "model A", "--name", "model B", *FAST)
    (fig,) = figures
    binned_ax, smooth_ax = main_axes(fig)
    assert len(errorbars(binned_ax)) == 2 and len(smooth_lines(smooth_ax)) == 2
    curves = [f["curves"][0] for f in doc["files"]]
    assert legend_texts(binned_ax) == [
        f"{name}\nece_l1_plugin = {fmt3(c['binned']['metrics']['ece_l1_plugin']['estimate'])}, n = {n}"
        for name, c, n in zip(("model A", "model B"), curves, (300, 200))
    ]
    assert legend_texts(smooth_ax) == [
        f"{name}\nsmECE = {fmt3(c['smooth']['metrics']['smece']['estimate'])}, n = {n}"
        for name, c, n in zip(("model A", "model B"), curves, (300, 200))
    ]
    assert [t.get_text() for t in fig.texts] == ["Reliability diagrams of 2 models, binary mode"]
    assert [f["name"] for f in doc["files"]] == ["model A", "model B"]
    # Each curve draws its own file's bins.
    for eb, f in zip(errorbars(binned_ax), doc["files"]):
        per_bin = f["curves"][0]["binned"]["per_bin"]
        np.testing.assert_array_equal(eb.lines[0].get_xdata(), [q["mean_confidence"] for q in per_bin])
    assert doc["diagram"]["n_curves_per_panel"] == 2

    # Without --name, the legend names the files.
    figures.clear()
    run_json("diagram", a, b, "-o", out, "--kind", "binned", *FAST)
    assert [t.split("\n")[0] for t in legend_texts(main_axes(figures[0])[0])] == ["a.csv", "b.csv"]


def test_repeated_prob_col_overlays_the_columns_of_one_file(tmp_path, figures):
    z, y = make_binary(300, seed=4)
    path = write_csv(tmp_path, "two.csv", z, y, model_a=z, model_b=np.clip(z**1.5, 0, 1))
    out = tmp_path / "c.png"
    doc = run_json("diagram", path, "-o", out, "--prob-col", "model_a", "--prob-col", "model_b", "--kind", "binned", *FAST)
    (fig,) = figures
    (ax,) = main_axes(fig)
    assert len(errorbars(ax)) == 2
    assert [t.split("\n")[0] for t in legend_texts(ax)] == ["model_a", "model_b"]
    for eb, col in zip(errorbars(ax), (z, np.clip(z**1.5, 0, 1))):
        ref = prepare_binned(y, col, n_boot=0)
        np.testing.assert_allclose(eb.lines[0].get_xdata(), ref.confidence, rtol=1e-12)
        np.testing.assert_allclose(eb.lines[0].get_ydata(), ref.accuracy, rtol=1e-12)
    assert [f["input"]["columns"]["probabilities"] for f in doc["files"]] == [["model_a"], ["model_b"]]

    figures.clear()
    run_json("diagram", path, "-o", out, "--prob-col", "model_a", "--prob-col", "model_b", "--name", "raw",
             "--name", "sharpened", "--kind", "smooth", *FAST)
    (ax,) = main_axes(figures[0])
    assert len(smooth_lines(ax)) == 2 and [t.split("\n")[0] for t in legend_texts(ax)] == ["raw", "sharpened"]


# ---------------------------------------------------------------------------------------------
# Multiclass: top-label and marginal small multiples


def test_multiclass_defaults_to_top_label(tmp_path, figures):
    doc = run_json("diagram", MULTI, "-o", tmp_path / "t.png", "--kind", "binned", *FAST)
    assert doc["files"][0]["mode"] == "top-label" and doc["diagram"]["panels"] == ["top-label"]
    ax, hist = figures[0].axes
    assert ax.get_ylabel() == "accuracy" and hist.get_xlabel() == "confidence (top-label probability)"


def test_marginal_mode_one_panel_per_class_capped_with_the_cap_stated(tmp_path, figures):
    out = tmp_path / "m.png"
    r = run("diagram", MULTI, "-o", out, "--mode", "marginal", "--max-classes", "3", "--kind", "binned", *FAST, "--json")
    assert r.exit_code == 0
    assert r.stderr == f"Warning: {NOTE3}\n"
    doc = json.loads(r.stdout)
    d = doc["diagram"]
    assert (d["n_panels"], d["classes_drawn"], d["classes_total"], d["note"]) == (3, 3, 10, NOTE3)
    assert d["panels"] == ["class 0", "class 1", "class 2"]
    (fig,) = figures
    mains = main_axes(fig)
    assert [ax.get_title() for ax in mains] == [f"class {k}\nbinned (15 uniform bins)" for k in range(3)]
    assert [t.get_text() for t in fig.texts] == ["Reliability diagram of digits_nb.parquet, marginal mode", NOTE3]
    # Class 1's panel is class 1 against the rest.
    df = pd.read_parquet(MULTI)
    ref = prepare_binned((df["label"] == 1).astype(int), df["p_1"], n_boot=0)
    np.testing.assert_allclose(errorbars(mains[1])[0].lines[0].get_xdata(), ref.confidence, rtol=1e-12)
    np.testing.assert_allclose(errorbars(mains[1])[0].lines[0].get_ydata(), ref.accuracy, rtol=1e-12)


def test_marginal_mode_under_the_cap_draws_every_class(tmp_path, figures):
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], 200)
    labels = np.array([rng.choice(3, p=row) for row in P])
    path = tmp_path / "three.csv"
    pd.DataFrame({"p_0": P[:, 0], "p_1": P[:, 1], "p_2": P[:, 2], "label": labels}).to_csv(path, index=False)
    r = run("diagram", path, "-o", tmp_path / "m.png", "--mode", "marginal", "--kind", "smooth", *FAST, "--json")
    assert r.exit_code == 0 and r.stderr == ""
    d = json.loads(r.stdout)["diagram"]
    assert (d["n_panels"], d["classes_drawn"], d["classes_total"], d["note"]) == (3, 3, 3, None)
    (fig,) = figures
    assert len(main_axes(fig)) == 3 and len(fig.texts) == 1
    assert [ax.get_title().split("\n")[0] for ax in main_axes(fig)] == ["class 0", "class 1", "class 2"]
    assert [len(smooth_lines(ax)) for ax in main_axes(fig)] == [1, 1, 1]


# ---------------------------------------------------------------------------------------------
# Output formats, reproducibility, headless rendering


@pytest.mark.parametrize(("name", "fmt"), [("f.svg", "svg"), ("f.pdf", "pdf")])
def test_format_follows_the_extension(small, tmp_path, name, fmt):
    out = tmp_path / name
    doc = run_json("diagram", small, "-o", out, "--kind", "binned", *FAST)
    data = out.read_bytes()
    assert doc["diagram"]["format"] == fmt and doc["diagram"]["bytes"] == len(data)
    assert doc["diagram"]["width_px"] is None and doc["diagram"]["height_px"] is None
    if fmt == "svg":
        assert ET.parse(io.BytesIO(data)).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    else:
        assert data.startswith(b"%PDF-")
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == [name]


def test_headless_and_reproducible_same_inputs_and_seed_give_the_same_png_bytes(small, tmp_path):
    # The installed command, with no display and a backend that does not exist: the command draws on
    # the Agg canvas directly, never through pyplot's backend selection.
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    env.update(NO_COLOR="1", MPLBACKEND="module://calibcli_tests_no_such_backend")
    exe = Path(sys.executable).parent / "calibcli"
    args = ["diagram", small, "--kind", "smooth", "--n-boot", "20", "--seed", "5"]
    sub = tmp_path / "sub.png"
    proc = subprocess.run([str(exe), *args, "-o", str(sub)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.startswith(f"wrote {sub} (PNG, ")
    # Run again (in-process): the same bytes. Another seed: another bootstrap band, other bytes.
    run_json(*args, "-o", tmp_path / "again.png")
    run_json(*args[:-1], "6", "-o", tmp_path / "other.png")
    assert sub.read_bytes() == (tmp_path / "again.png").read_bytes()
    assert sub.read_bytes() != (tmp_path / "other.png").read_bytes()


def test_an_svg_of_small_multiples_is_the_same_bytes_in_every_process(tmp_path):
    """Matplotlib names each clip rectangle by a hash of its bounds, whose last bits moved with Python's string
    hashing: the same marginal figure drawn in two processes differed in its ids. They are numbered in order of
    first appearance, so two processes with other hash seeds write the same bytes."""
    root = Path(__file__).resolve().parents[2]
    written = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"seed{hash_seed}.svg"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "NO_COLOR": "1"}
        args = ["diagram", str(root / "sample_data" / "digits_nb.csv"), "--mode", "marginal", "--max-classes", "4"]
        proc = subprocess.run(
            [sys.executable, "-m", "calibcli", *args, "--n-boot", "20", "-o", str(out)],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        written.append(out.read_bytes())
    assert b'clip-path="url(#p0000000000)"' in written[0]
    assert written[0] == written[1]


# ---------------------------------------------------------------------------------------------
# Errors: one `Error:` line on stderr, exit 2, nothing on stdout, no file left behind


def assert_error(result, folder: Path, message: str | None = None, contains: str | None = None) -> None:
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if message is not None:
        assert result.stderr == f"Error: {message}\n"
    if contains is not None:
        assert contains in result.stderr
    assert result.stdout == ""
    assert [p.name for p in folder.iterdir()] == []  # no figure, no temporary file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--n-bins", "0"], "--n-bins is 0: expected a positive number of bins"),
        (["--n-bins", "-3"], "--n-bins is -3: expected a positive number of bins"),
        (["--n-boot", "-1"], "--n-boot is -1: expected 0 (no intervals) or a positive count"),
        (["--alpha", "1.5"], "--alpha is 1.5: expected a number strictly between 0 and 1"),
        (["--dpi", "5"], "--dpi is 5.0: expected a resolution between 10 and 1200"),
        (["--max-classes", "0"], "--max-classes is 0: expected at least 1"),
        (["--kind", "hexbin"], "--kind is 'hexbin': expected one of binned, smooth, both"),
        (["--strategy", "equal"], "--strategy is 'equal': expected one of uniform, quantile"),
        (["--mode", "canonical"], "--mode is 'canonical': expected one of binary, top-label, marginal"),
        (["--name", "a", "--name", "b"],
         "--name is given 2 time(s) but there are 1 curve(s) (1 file(s) x 1 probability column(s)): give one --name "
         "per curve, or none"),
    ],
)
def test_option_errors(small, tmp_path, args, message):
    folder = tmp_path / "out"
    folder.mkdir()
    assert_error(run("diagram", small, "-o", folder / "fig.png", *args), folder, message)


def test_too_many_pixels_is_refused_before_rendering(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    result = run("diagram", MULTI, "--mode", "marginal", "--dpi", "1200", "--n-boot", "0", "-o", folder / "fig.png")
    assert_error(result, folder, None)
    assert result.stderr.startswith("Error: --dpi 1200: the PNG would be ")
    assert result.stderr.rstrip().endswith("more than 100: lower --dpi (or --max-classes), or write .svg or .pdf")


def test_output_errors(small, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    for name, ext in (("fig.gif", "'.gif'"), ("fig", "'(none)'"), ("fig.png.txt", "'.txt'")):
        path = folder / name
        assert_error(run("diagram", small, "-o", path, *FAST), folder,
                     f"--output {path}: cannot tell the figure format from the extension {ext}: expected .png, .svg, .pdf")
    missing = folder / "nowhere" / "fig.png"
    assert_error(run("diagram", small, "-o", missing, *FAST), folder,
                 f"--output {missing}: the folder {folder / 'nowhere'} does not exist")


def test_input_errors(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "fig.png"
    bad_prob = write_csv(data, "bad.csv", [0.2, 1.4, 0.5], [0, 1, 1])
    bad_label = write_csv(data, "label.csv", [0.2, 0.4, 0.5], [0, 2, 1])
    folder_input = data / "folder.csv"
    folder_input.mkdir()
    truncated = data / "cut.parquet"
    truncated.write_bytes((SAMPLE / "breast_cancer_nb.parquet").read_bytes()[:2000])
    cases = [
        ([str(data / "missing.csv")], f"{data / 'missing.csv'}: no such file: check the path"),
        ([bad_prob], "row 2, column prob: probability is 1.4, outside [0, 1]"),
        ([bad_label], "row 2, column label: label in column 'label' is not one of the 2 classes (found 2;"),
        ([str(truncated)], "cannot read as Parquet"),
        ([str(folder_input)], "is a directory"),
        # A bad second file stops the run before any figure is written.
        ([BINARY, bad_prob], "outside [0, 1]"),
        # Inputs needing different modes cannot share one figure.
        ([BINARY, MULTI], "the inputs need different modes (binary, top-label) and cannot share one figure: pass --mode"),
        ([BINARY, "--prob-col", "prob", "--prob-col", "nope"], "no column 'nope' (given by --prob-col)"),
    ]
    for args, fragment in cases:
        assert_error(run("diagram", *args, "-o", out, "--kind", "binned", *FAST), folder, contains=fragment)
    # Several --prob-col columns cannot come from standard input.
    r = run("diagram", "-", "-o", out, "--prob-col", "a", "--prob-col", "b", *FAST, input="a,b,label\n0.1,0.2,0\n")
    assert_error(r, folder, "several --prob-col columns need a file: standard input ('-') can be read only once")
    # --drop-invalid turns the bad row into a dropped one and the figure is drawn.
    r = run("diagram", bad_prob, "-o", out, "--drop-invalid", "--kind", "binned", *FAST, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["rows_used"] == 2 and out.exists()
