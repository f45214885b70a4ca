"""``calibcli diagram``: binned and smooth reliability diagrams to PNG, SVG or PDF (SPEC 6 and 8).

The command parses options, streams every dataset (a file, a directory of shards, a quoted glob,
stdin, or all files with ``--pool``) through :class:`calibcli.diagram.accumulator.DiagramInputAccumulator` with
the engine of ``--engine`` (local, or a Dask cluster; one entry per ``--group-by`` group), draws
the curves it returns (``plot_diagram``), writes the figure atomically and prints what it drew (a
table, or JSON with ``--json``).
"""

from __future__ import annotations

import os
import struct
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

import calibcli.smooth.estimator
from calibcli.cli import options as cc
from calibcli.core.binning import EDGE_CONVENTION
from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError, warn
from calibcli.core.modes import default_mode
from calibcli.core.outputs import is_stream
from calibcli.core.registry import REGISTRY
from calibcli.core.safe_text import for_matplotlib
from calibcli.core.validation import check_option
from calibcli.diagram import family as diagram_family
from calibcli.diagram import plot as dg
from calibcli.diagram.accumulator import DiagramInputAccumulator, DiagramOptions, DiagramReport
from calibcli.diagram.bands import BAND_DESCRIPTIONS
from calibcli.diagram.data import BINNED_METRIC, SMOOTH_BAND, DiagramPanel
from calibcli.engines.pipeline import check_engine, engine_runner, progress_bar
from calibcli.report.emit import emit, write_atomic

# The calibcli.diagram.plot names used here are imported inside the command, which keeps matplotlib
# (and numpy-heavy drawing code) out of `calibcli --help`.

if TYPE_CHECKING:  # the FILES argument is a list of paths; Typer reads its declaration
    DiagramFiles = list[str]
else:
    DiagramFiles = cc.files_argument(
        "Several files are overlaid on one figure, one curve each (one dataset with --pool)."
    )
DiagramProbCol = Annotated[
    list[str] | None,
    typer.Option(
        "--prob-col",
        help="Column with the positive-class probability (binary). Repeat it to overlay several models "
        "stored as columns of one file.",
    ),
]
FigureOutput = Annotated[
    str,
    typer.Option(
        "--output",
        "-o",
        help="Figure file to write (atomically); the format follows the extension: .png, .svg or .pdf; "
        "'-' writes PNG bytes to stdout (the summary is then not printed), as does a device or pipe without an "
        "extension.",
        show_default=False,
    ),
]
#: Largest PNG drawn (its RGBA buffer is 4 bytes per pixel: 400 MB at this size).
MAX_PIXELS = 100e6


def _dataset_names(files: list[str], pool: bool) -> list[str]:
    """One short name per dataset: the file's (directory's, glob's) base name, or all of them pooled."""
    stems = ["stdin" if f == "-" else os.path.basename(os.path.normpath(f)) or f for f in files]
    if len(set(stems)) < len(stems):
        stems = list(files)
    return [", ".join(stems)] if pool else stems


def _curve_names(files: list[str], pool: bool, columns: list[str | None], names: list[str] | None) -> list[str]:
    """One legend name per (dataset, column): ``--name`` values, else the dataset's (and column's) name."""
    datasets = _dataset_names(files, pool)
    n_curves = len(datasets) * len(columns)
    if names:
        what = f"{len(files)} files pooled into 1 dataset" if pool else f"{len(files)} file(s)"
        check_option(
            len(names) == n_curves,
            f"--name is given {len(names)} time(s) but there are {n_curves} curve(s) "
            f"({what} x {len(columns)} probability column(s)): give one --name per curve, or none",
        )
        return list(names)
    out = []
    for stem in datasets:
        for col in columns:
            if len(columns) == 1:
                out.append(stem)
            elif len(datasets) == 1:
                out.append(col if col is not None else stem)  # (several columns: each is named)
            else:
                out.append(f"{stem}:{col}")
    return out


def _group_text(group: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in group.items())


@cc.with_groups(
    cc.COLUMNS.but(prob_col=DiagramProbCol),
    cc.READING,
    cc.DATASETS,
    cc.OWN,
    cc.BOOTSTRAP,
    cc.ENGINE,
    cc.OUTPUT.only("as_json", "fmt", "summary", "metrics", "sort"),
    declared=diagram_family.Options,
)
def diagram(files: DiagramFiles, output: FigureOutput, **options) -> None:
    """Draw reliability diagrams: binned (accuracy per bin with its interval, --band; bin histogram) and
    smooth (kernel regression at the SmoothECE bandwidth with a bootstrap band, density), with the
    metric and its interval in the legend. Several files or --prob-col columns are overlaid, and so
    are the groups of --group-by; marginal mode draws one panel per class. Files, directories of
    shards and quoted globs are streamed in flat memory.

    Example: calibcli diagram sample_data/breast_cancer_nb.csv -o reliability.png"""
    chosen = diagram_family.Options.of(options)  # the choices and rules checked here, once
    kind, mode, n_bins, strategy, name = chosen.kind, chosen.mode, chosen.n_bins, chosen.strategy, chosen.name
    dpi, title, figsize, style, font_size = chosen.dpi, chosen.title, chosen.figsize, chosen.style, chosen.font_size
    min_count, hist_scale, max_classes, max_overlays = (
        chosen.min_count,
        chosen.hist_scale,
        chosen.max_classes,
        chosen.max_overlays,
    )
    n_boot, alpha, seed, band = chosen.n_boot, chosen.alpha, chosen.seed, chosen.band
    if band == "bootstrap" and chosen.binned:
        check_option(
            n_boot > 0,
            "--band bootstrap draws the bins' intervals from the bootstrap resamples: pass "
            "--n-boot above 0, or --band wilson or clopper-pearson",
        )
    prob_col = options["prob_col"]
    layout = cc.layout_of(options)
    fig_style = dg.FigureStyle(font_size=font_size, min_count=min_count, hist_scale=hist_scale, style=style)
    fig_size = None if figsize is None else dg.parse_figsize(figsize)
    engine = cc.engine_of(options)
    check_engine(engine.name, engine.scheduler, engine.workers)

    # (the folder is checked before the command starts, in cc.command); stdout, a device or a pipe: PNG
    fmt = "png" if is_stream(output) and os.path.splitext(output)[1].lower() not in dg.FORMATS else dg.format_of(output)
    columns: list[str | None] = list(dict.fromkeys(prob_col)) if prob_col else [None]
    if len(columns) > 1:
        check_option(
            options["prob_cols"] is None, "--prob-col is repeated to overlay binary models, which excludes --prob-cols"
        )
        check_option(
            "-" not in files, "several --prob-col columns need a file: standard input ('-') can be read only once"
        )
    sources = cc.sources_of(files, options)
    base_names = _curve_names(files, sources.pool, columns, name)
    groups = sources.group_by

    want_binned, want_smooth = chosen.binned, chosen.smooth
    estimators = {}
    if want_binned:
        estimators[BINNED_METRIC] = REGISTRY[BINNED_METRIC].description + ", percentile bootstrap interval"
        estimators["bin_accuracy_interval"] = BAND_DESCRIPTIONS[band]
    if want_smooth:
        estimators["smece"] = REGISTRY["smece"].description + ", percentile bootstrap interval"
        estimators["smooth_band"] = SMOOTH_BAND
    doc = new_document(
        "diagram",
        {
            **chosen.shown("kind", "n_bins", "strategy"),
            "edges_convention": EDGE_CONVENTION,
            **chosen.shown("mode", "n_boot"),
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
            f"{calibcli.smooth.estimator.ROW_LIMIT} rows, from per-bin and per-cell sufficient statistics beyond",
            "first_pass_grid_cells": calibcli.smooth.estimator.STATS_GRID if want_smooth else None,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            **chosen.shown("seed", "max_classes"),
            "max_overlays": max_overlays if groups else None,
            "dpi": dpi,
            "figsize": None if fig_size is None else list(fig_size),
            **chosen.shown("font_size", "min_count", "hist_scale"),
            "band": band if want_binned else None,
            **chosen.shown("style", "title"),
            "estimators": estimators,
            "weights": "frequency weights" if sources.spec.weight_col else None,
            "group_by": list(groups) or None,
            "pool": sources.pool,
            "batch_rows": sources.batch_rows,
            "engine": engine.name,
        },
    )

    # Every dataset is opened (columns, classes) before any is read: a bad column or a mix of modes
    # fails before minutes of streaming. One stream per (dataset, probability column).
    per_column = [list(replace(sources, spec=replace(sources.spec, prob_col=col)).open()) for col in columns]
    streams = [s for per_dataset in zip(*per_column, strict=True) for s in per_dataset]  # dataset-major, as the names
    modes = [mode or default_mode(s.n_classes) for s in streams]
    if len(set(modes)) > 1:
        raise CalibcliError(
            f"the inputs need different modes ({', '.join(sorted(set(modes)))}) and cannot share one figure: "
            f"pass --mode for all of them"
        )
    fig_mode = modes[0]
    marginal = fig_mode == "marginal"
    diagram_options = DiagramOptions(
        binned=want_binned,
        smooth=want_smooth,
        n_bins=n_bins,
        strategy=strategy,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
        max_problems=max_classes if marginal else None,
        band=band,
    )

    entries: list[tuple[dict, DiagramReport]] = []  # (report entry without its curves, its report)
    groups_seen: set[tuple] = set()
    groups_drawn: set[tuple] = set()
    with engine_runner(engine.name, engine.scheduler, engine.workers) as runner:
        doc["parameters"].update(engine=engine.name, workers=runner.workers)
        for stream, base in zip(streams, base_names, strict=True):

            def new(stream=stream):
                return DiagramInputAccumulator(
                    mode=fig_mode, n_classes=stream.n_classes, class_names=stream.class_names, options=diagram_options
                )

            accumulators, described = runner.run(stream, new)
            if groups:
                groups_seen.update(tuple(g.items()) for g, _ in accumulators)
                del accumulators[max_overlays:]  # (in sorted order) the groups beyond the cap are counted, not drawn
            for group, acc in accumulators:
                entry = {"input": described}
                curve_name = base
                if group is not None:
                    groups_drawn.add(tuple(group.items()))
                    entry["group"] = group
                    entry["rows_in_group"] = acc.n_rows
                    # one dataset named by its file: the group alone names the curve
                    curve_name = (
                        _group_text(group) if len(base_names) == 1 and not name else f"{base} [{_group_text(group)}]"
                    )
                total = n_boot * len(acc.problems) * (int(want_binned) + int(want_smooth))
                with progress_bar(total, f"diagram {curve_name}") as advance:
                    report = acc.result(progress=advance)
                entry.update(mode=report.mode, name=curve_name)
                if report.notes:
                    entry["notes"] = list(report.notes)
                entries.append((entry, report))

    n_curves = len(entries)
    # one curve per panel: its name goes in the figure's title rather than in every legend
    curves_of = [
        report.curves(entry["name"], legend=entry["name"] if n_curves > 1 else "") for entry, report in entries
    ]
    for (entry, _), curves in zip(entries, curves_of, strict=True):
        doc["files"].append({**entry, "curves": [c.to_dict() for c in curves]})

    n_classes_total = max(s.n_classes for s in streams) if marginal else 0
    notes = []
    if marginal and n_classes_total > max_classes:
        notes.append(
            f"marginal mode: the first {max_classes} of {n_classes_total} classes are drawn (--max-classes "
            f"{max_classes})"
        )
    if groups and len(groups_seen) > len(groups_drawn):
        notes.append(
            f"the first {max_overlays} of {len(groups_seen)} groups by {', '.join(groups)} are drawn "
            f"(--max-overlays {max_overlays})"
        )
    note = "; ".join(notes) or None
    for text in notes:
        warn(text)
    if groups:
        doc["groups"] = {"by": list(groups), "n_groups": len(groups_seen), "n_groups_drawn": len(groups_drawn)}

    models = len(base_names)
    auto_title = (
        f"Reliability diagram of {base_names[0]}" if models == 1 else f"Reliability diagrams of {models} models"
    )
    if groups and n_curves == 1:  # the one curve's group, as its legend would name it
        auto_title += f" [{_group_text(entries[0][0]['group'])}]"
    elif groups:
        auto_title += f" by {', '.join(groups)}"
    auto_title += f", {fig_mode} mode"
    panels: dict[str, dict] = {}  # keyed by problem name, in first-seen order; each holds the overlaid curves
    for curves in curves_of:
        for c in curves:
            panel = panels.setdefault(c.problem, {"binned": [], "smooth": []})
            if c.binned is not None:
                panel["binned"].append(c.binned)
            if c.smooth is not None:
                panel["smooth"].append(c.smooth)
    panel_list = [
        DiagramPanel(title=(key if marginal else ""), binned=tuple(v["binned"]), smooth=tuple(v["smooth"]))
        for key, v in panels.items()
    ]
    auto_title, note = for_matplotlib(auto_title), (for_matplotlib(note) if note else note)  # names from the data
    fig = dg.plot_diagram(
        panel_list,
        kind=kind,
        title=auto_title if title is None else (title or None),
        note=note,
        figsize=fig_size,
        style=fig_style,
    )
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
    write_atomic(output, data, "output")
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
        "n_curves_per_panel": n_curves,
        "classes_drawn": len(panel_list) if marginal else None,
        "classes_total": n_classes_total if marginal else None,
        "groups_drawn": len(groups_drawn) if groups else None,
        "groups_total": len(groups_seen) if groups else None,
        "note": note,
    }
    emit(doc, layout=layout)


def register(app: typer.Typer) -> None:
    app.command("diagram")(cc.command(diagram))
