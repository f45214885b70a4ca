"""``calibcli diagram``: binned and smooth reliability diagrams to PNG, SVG or PDF (SPEC 6).

The command loads the files, computes each curve's data with :mod:`calibcli.diagrams`
(``prepare_binned`` / ``prepare_smooth``), draws them (``plot_diagram``), writes the figure
atomically and prints what it drew (a table, or JSON with ``--json``).
"""

from __future__ import annotations

import functools
import os
import struct
from typing import Annotated, Optional

import numpy as np
import typer

from calibcli import cli_common as cc
from calibcli.binning import EDGE_CONVENTION, STRATEGIES
from calibcli.errors import CalibcliError
from calibcli.modes import MODES, binary_problems, default_mode
from calibcli.report import emit, fmt_interval, fmt_number, new_document, write_atomic
from calibcli.validation import check_option

# The calibcli.diagrams names used here are imported inside the command, which keeps matplotlib
# (and numpy-heavy drawing code) out of `calibcli --help`.

DiagramFiles = cc.files_argument("Several files are overlaid on one figure, one curve each.")
DiagramProbCol = Annotated[
    Optional[list[str]],
    typer.Option(
        "--prob-col",
        help="Column with the positive-class probability (binary). Repeat it to overlay several models "
        "stored as columns of one file.",
    ),
]
Kind = Annotated[str, typer.Option("--kind", help="binned, smooth, or both (side by side).")]
Names = Annotated[
    Optional[list[str]],
    typer.Option("--name", help="Legend name of a curve, one per file (or per --prob-col); repeat it. Default: the file names."),
]
FigureOutput = Annotated[
    str,
    typer.Option("--output", "-o", help="Figure file to write (atomically); the format follows the extension: .png, .svg or .pdf.",
                 show_default=False),
]
Dpi = Annotated[float, typer.Option("--dpi", help="Resolution of PNG output (dots per inch).")]
MaxClasses = Annotated[int, typer.Option("--max-classes", help="Marginal mode: draw at most this many classes (the first ones).")]

#: Largest PNG drawn (its RGBA buffer is 4 bytes per pixel: 400 MB at this size).
MAX_PIXELS = 100e6

ESTIMATORS = {
    "ece_l1_plugin": "sum_b (n_b/n) |acc_b - conf_b| (Guo et al. 2017), percentile bootstrap interval",
    "smece": "SmoothECE at its fixed-point bandwidth s* (Blasiok and Nakkiran 2023), percentile bootstrap interval",
    "bin_accuracy_interval": "Wilson score interval of each bin's accuracy (Wilson 1927)",
    "smooth_band": "pointwise percentile bootstrap band of the kernel regression (bandwidth re-solved per resample)",
}


def _curve_names(files: list[str], columns: list[str | None], names: list[str] | None) -> list[str]:
    """One legend name per (file, column): ``--name`` values, else the file's (and column's) name."""
    n_curves = len(files) * len(columns)
    if names:
        check_option(
            len(names) == n_curves,
            f"--name is given {len(names)} time(s) but there are {n_curves} curve(s) "
            f"({len(files)} file(s) x {len(columns)} probability column(s)): give one --name per curve, or none",
        )
        return list(names)
    stems = [os.path.basename(f) if f != "-" else "stdin" for f in files]
    if len(set(stems)) < len(stems):
        stems = list(files)
    out = []
    for stem in stems:
        for col in columns:
            if len(columns) == 1:
                out.append(stem)
            elif len(files) == 1:
                out.append(col)
            else:
                out.append(f"{stem}:{col}")
    return out


def _run_side_by_side(tasks: dict, advance) -> dict:
    """Results of the callables in ``tasks`` (two threads when there are two; NumPy releases the GIL
    in the heavy calls), calling ``advance()`` as each finishes. The first error raised is re-raised."""
    if len(tasks) < 2:
        out = {}
        for key, task in tasks.items():
            out[key] = task()
            advance()
        return out
    from concurrent.futures import ThreadPoolExecutor, as_completed

    results = {}
    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        futures = {pool.submit(task): key for key, task in tasks.items()}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            advance()
    return {key: results[key] for key in tasks}  # in the order asked, whatever finished first


def diagram(
    files: DiagramFiles,
    output: FigureOutput,
    kind: Kind = "both",
    prob_col: DiagramProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: cc.Mode = None,
    n_bins: cc.NBins = 15,
    strategy: cc.Strategy = "uniform",
    n_boot: cc.NBoot = 200,
    alpha: cc.Alpha = 0.05,
    seed: cc.Seed = 0,
    name: Names = None,
    dpi: Dpi = 150.0,
    max_classes: MaxClasses = 12,
    as_json: cc.Json = False,
) -> None:
    """Draw reliability diagrams: binned (accuracy per bin with Wilson intervals, bin histogram) and
    smooth (kernel regression at the SmoothECE bandwidth with a bootstrap band, density), with the
    metric and its interval in the legend. Several files or --prob-col columns are overlaid; marginal
    mode draws one panel per class."""
    from calibcli import diagrams as dg

    cc.check_choice(kind, dg.KINDS, "--kind")
    if mode is not None:
        cc.check_choice(mode, MODES, "--mode")
    cc.check_choice(strategy, STRATEGIES, "--strategy")
    check_option(n_bins >= 1, f"--n-bins is {n_bins}: expected a positive number of bins")
    check_option(n_boot >= 0, f"--n-boot is {n_boot}: expected 0 (no intervals or band) or a positive count")
    check_option(0.0 < alpha < 1.0, f"--alpha is {alpha}: expected a number strictly between 0 and 1")
    check_option(10.0 <= dpi <= 1200.0, f"--dpi is {dpi:g}: expected a resolution between 10 and 1200")
    check_option(max_classes >= 1, f"--max-classes is {max_classes}: expected at least 1")
    fmt = dg.format_of(output)  # (the folder is checked before the command starts, in cc.command)
    columns: list[str | None] = list(dict.fromkeys(prob_col)) if prob_col else [None]
    if len(columns) > 1:
        check_option(prob_cols is None, "--prob-col is repeated to overlay binary models, which excludes --prob-cols")
        check_option("-" not in files, "several --prob-col columns need a file: standard input ('-') can be read only once")
    curve_names = _curve_names(files, columns, name)

    want_binned = kind in ("binned", "both")
    want_smooth = kind in ("smooth", "both")
    doc = new_document(
        "diagram",
        {
            "kind": kind,
            "n_bins": n_bins,
            "strategy": strategy,
            "edges_convention": EDGE_CONVENTION,
            "mode": mode or "auto",
            "n_boot": n_boot,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "max_classes": max_classes,
            "dpi": dpi,
            "estimators": {k: v for k, v in ESTIMATORS.items()
                           if (want_binned or k not in ("ece_l1_plugin", "bin_accuracy_interval"))
                           and (want_smooth or k not in ("smece", "smooth_band"))},
            "weights": "frequency weights" if weight_col else None,
        },
    )

    # panels keyed by problem name, in first-seen order; each holds the overlaid curves
    panels: dict[str, dict] = {}
    modes_seen: set[str] = set()
    n_classes_total = 0
    curve_index = 0
    for path in files:
        for col in columns:
            spec = cc.column_spec(col, prob_cols, label_col, weight_col, logits)
            loaded = next(iter(cc.load_inputs([path], spec, input_format=input_format, drop_invalid=drop_invalid)))
            file_mode = mode or default_mode(loaded.n_classes)
            modes_seen.add(file_mode)
            problems = binary_problems(loaded.labels, loaded.probs, mode=file_mode, sample_weight=loaded.sample_weight,
                                       class_names=list(loaded.class_names))
            if file_mode == "marginal":
                n_classes_total = max(n_classes_total, len(problems))
                problems = problems[:max_classes]
            curve_name = curve_names[curve_index]
            # one curve per panel: its name goes in the figure's title rather than in every legend
            legend_name = curve_name if len(curve_names) > 1 else ""
            curve_index += 1
            entry = {"input": loaded.describe(), "mode": file_mode, "name": curve_name, "curves": []}
            total = len(problems) * (int(want_binned) + int(want_smooth))
            with cc.progress_bar(total, f"diagram {loaded.path}") as advance:
                for p in problems:
                    panel = panels.setdefault(p.name, {"binned": [], "smooth": []})
                    curve = {"name": curve_name, "problem": p.name, "class_index": p.class_index, "n": int(len(p.z))}
                    # The binned and the smooth statistics (each with its own seeded resamples) are
                    # independent: with --kind both they run side by side, one per core.
                    tasks = {}
                    if want_binned:
                        tasks["binned"] = functools.partial(
                            dg.prepare_binned, p.y, p.z, sample_weight=p.sample_weight, n_bins=n_bins, strategy=strategy,
                            n_boot=n_boot, alpha=alpha, seed=seed, name=legend_name, problem=p.name)
                    if want_smooth:
                        tasks["smooth"] = functools.partial(
                            dg.prepare_smooth, p.y, p.z, sample_weight=p.sample_weight, n_boot=n_boot, alpha=alpha,
                            rng=np.random.default_rng(seed), name=legend_name, problem=p.name)
                    for key, result in _run_side_by_side(tasks, advance).items():
                        panel[key].append(result)
                        curve[key] = _binned_json(result) if key == "binned" else _smooth_json(result)
                    entry["curves"].append(curve)
            doc["files"].append(entry)

    if len(modes_seen) > 1:
        raise CalibcliError(
            f"the inputs need different modes ({', '.join(sorted(modes_seen))}) and cannot share one figure: "
            f"pass --mode for all of them"
        )
    (fig_mode,) = modes_seen
    note = None
    if fig_mode == "marginal" and n_classes_total > max_classes:
        note = f"marginal mode: the first {max_classes} of {n_classes_total} classes are drawn (--max-classes {max_classes})"
        cc.warn(note)
    overlaid = len(files) * len(columns)
    title = f"Reliability diagram of {curve_names[0]}" if overlaid == 1 else f"Reliability diagrams of {overlaid} models"
    title += f", {fig_mode} mode"
    panel_list = [
        dg.DiagramPanel(title=(key if fig_mode == "marginal" else ""), binned=tuple(v["binned"]), smooth=tuple(v["smooth"]))
        for key, v in panels.items()
    ]
    fig = dg.plot_diagram(panel_list, kind=kind, title=title, note=note)
    if fmt == "png":
        w_px, h_px = (float(v) * dpi for v in fig.get_size_inches())
        check_option(
            w_px * h_px <= MAX_PIXELS,
            f"--dpi {dpi:g}: the PNG would be {w_px:,.0f} x {h_px:,.0f} pixels ({w_px * h_px / 1e6:,.0f} megapixels), "
            f"more than {MAX_PIXELS / 1e6:,.0f}: lower --dpi (or --max-classes), or write .svg or .pdf",
        )
    data = dg.figure_bytes(fig, fmt, dpi=dpi)
    width_in, height_in = fig.get_size_inches()
    # The PNG's size as rendered, from its IHDR chunk: matplotlib truncates inches x dpi (and its
    # own floating-point product), so rounding here could report a pixel more than the file has.
    width_px, height_px = struct.unpack(">II", data[16:24]) if fmt == "png" else (None, None)
    write_atomic(output, data)
    doc["diagram"] = {
        "path": output,
        "format": fmt,
        "bytes": len(data),
        "width_in": float(width_in),
        "height_in": float(height_in),
        "width_px": width_px,
        "height_px": height_px,
        "mode": fig_mode,
        "panels": [p.title or fig_mode for p in panel_list],
        "n_panels": len(panel_list),
        "n_curves_per_panel": overlaid,
        "classes_drawn": len(panel_list) if fig_mode == "marginal" else None,
        "classes_total": n_classes_total if fig_mode == "marginal" else None,
        "note": note,
    }
    emit(doc, as_json=as_json, output=None, render=render_diagram)


def _interval(low, high) -> dict:
    return {"ci_low": low, "ci_high": high}


def _binned_json(b) -> dict:
    return {
        "strategy": b.strategy,
        "n_bins": b.n_bins,
        "n_bins_nonempty": b.n_bins_nonempty,
        "metrics": {
            b.metric: {
                "estimate": b.estimate,
                **_interval(b.ci_low, b.ci_high),
                "ci_method": f"percentile bootstrap, {b.n_boot} resamples" if b.n_boot else None,
            }
        },
        "per_bin": [
            {
                "lower": float(lo), "upper": float(hi), "count": int(c), "mean_confidence": float(conf),
                "accuracy": float(acc), "wilson_low": float(al), "wilson_high": float(ah),
            }
            for lo, hi, c, conf, acc, al, ah in zip(b.bin_lower, b.bin_upper, b.count, b.confidence, b.accuracy,
                                                    b.acc_low, b.acc_high)
        ],
    }


def _smooth_json(s) -> dict:
    return {
        "sigma": s.sigma,
        "metrics": {
            "smece": {
                "estimate": s.smece,
                **_interval(s.ci_low, s.ci_high),
                "ci_method": f"percentile bootstrap, {s.n_boot} resamples" if s.n_boot else None,
            }
        },
        "band": f"pointwise percentile bootstrap band, {s.n_boot} resamples" if s.n_boot else None,
    }


def render_diagram(doc: dict, console) -> None:
    """What was drawn: the file written, its panels, and the metrics shown on it."""
    from rich.table import Table

    p = doc["parameters"]
    d = doc["diagram"]
    level = f"{100 * (1 - p['alpha']):g}%"
    size = f"{d['width_px']}x{d['height_px']} px" if d["width_px"] else f"{d['width_in']:.3g}x{d['height_in']:.3g} in"
    console.print(
        f"wrote {d['path']} ({d['format'].upper()}, {size}, {d['bytes']:,} bytes): {p['kind']} diagram, "
        f"{d['mode']} mode, {d['n_panels']} panel(s), {d['n_curves_per_panel']} curve(s) per panel"
    )
    boot = f"{p['n_boot']} bootstrap resamples, seed {p['seed']}" if p["n_boot"] else "no bootstrap"
    table = Table(title=f"metrics shown ({level} intervals, {boot})", title_justify="left")
    for col, just in (("curve", "left"), ("panel", "left"), ("n", "right"), ("metric", "left"), ("estimate", "right"),
                      (f"{level} CI", "right"), ("detail", "left")):
        table.add_column(col, justify=just, overflow="fold")
    for f in doc["files"]:
        for c in f["curves"]:
            rows = []
            if "binned" in c:
                b = c["binned"]
                rows.append((b["metrics"]["ece_l1_plugin"], "ece_l1_plugin",
                             f"{b['n_bins_nonempty']} of {b['n_bins']} {b['strategy']} bins non-empty"))
            if "smooth" in c:
                s = c["smooth"]
                rows.append((s["metrics"]["smece"], "smece", f"s* = {fmt_number(s['sigma'])}"))
            for m, metric, detail in rows:
                table.add_row(c["name"], c["problem"], f"{c['n']:,}", metric, fmt_number(m["estimate"]),
                              fmt_interval(m["ci_low"], m["ci_high"]), detail)
    console.print(table)
    if d["note"]:
        console.print(d["note"])


def register(app: typer.Typer) -> None:
    app.command("diagram")(cc.command(diagram))
