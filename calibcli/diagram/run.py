"""The work of ``calibcli diagram`` (SPEC 6, 8): every dataset (and probability column, and group) streamed
through :class:`~calibcli.diagram.accumulator.DiagramInputAccumulator` on an engine, the curves overlaid panel
by panel, the figure drawn (:func:`~calibcli.diagram.plot.plot_diagram`) and described in the report
document. The command (:mod:`calibcli.cli.commands.diagram`) parses the options, writes the figure and
emits the document.
"""

from __future__ import annotations

import os
import struct
from dataclasses import replace

import calibcli.smooth.estimator
from calibcli.core.binning import EDGE_CONVENTION
from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError, warn
from calibcli.core.modes import default_mode
from calibcli.core.registry import REGISTRY
from calibcli.core.safe_text import for_matplotlib
from calibcli.core.validation import check_option
from calibcli.diagram import plot as dg
from calibcli.diagram.accumulator import DiagramInputAccumulator, DiagramReport
from calibcli.diagram.bands import BAND_DESCRIPTIONS
from calibcli.diagram.data import BINNED_METRIC, SMOOTH_BAND, DiagramPanel
from calibcli.engines.pipeline import engine_runner, progress_bar

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


def _document(chosen, sources, engine, fig_size) -> dict:
    """The document's head: every parameter that shaped the figure, and the estimators drawn."""
    dpi, band, alpha, max_overlays = chosen.dpi, chosen.band, chosen.alpha, chosen.max_overlays
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

    return doc


def _measure(doc: dict, streams: list, base_names: list[str], chosen, *, groups, engine, fig_mode, max_problems):
    """Each stream (and group, up to --max-overlays) reduced on the engine to its report entry and curves'
    report (``chosen``'s accumulator, at most ``max_problems`` binary problems); with the groups seen and the
    groups drawn."""
    n_boot, name, max_overlays = chosen.n_boot, chosen.name, chosen.max_overlays
    want_binned, want_smooth = chosen.binned, chosen.smooth
    entries: list[tuple[dict, DiagramReport]] = []  # (report entry without its curves, its report)
    groups_seen: set[tuple] = set()
    groups_drawn: set[tuple] = set()
    with engine_runner(engine.name, engine.scheduler, engine.workers) as runner:
        doc["parameters"].update(engine=engine.name, workers=runner.workers)
        for stream, base in zip(streams, base_names, strict=True):

            def new(stream=stream):
                return DiagramInputAccumulator(
                    mode=fig_mode,
                    n_classes=stream.n_classes,
                    class_names=stream.class_names,
                    options=chosen,
                    max_problems=max_problems,
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

    return entries, groups_seen, groups_drawn


def _figure(
    doc: dict,
    panel_curves: list,
    base_names: list[str],
    chosen,
    *,
    groups,
    fig_mode,
    note,
    fig_size,
    fig_style,
    fmt: str,
    output: str,
    n_curves: int,
    entries,
    classes: tuple,
    groups_counted: tuple,
):
    """The figure: one panel per problem with the curves overlaid, its title, and its bytes in ``fmt``; the
    document's ``diagram`` block describes what was drawn."""
    kind, dpi, title = chosen.kind, chosen.dpi, chosen.title
    marginal = fig_mode == "marginal"
    n_classes_total = classes[0]
    groups_seen, groups_drawn = groups_counted
    curves_of = panel_curves
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
    return data


def diagram_document(
    files: list[str], output: str, chosen, *, sources, columns: list, engine, fmt: str, fig_size, fig_style
) -> tuple[dict, bytes]:
    """The report document of a diagram run and the figure's bytes (``fmt``: png, svg or pdf); ``chosen``
    the checked :class:`calibcli.diagram.family.Options`, ``sources`` the datasets, ``columns`` the
    probability columns overlaid (``[None]``: the input's own), ``engine`` the engine's choice."""
    mode, name = chosen.mode, chosen.name
    max_classes, max_overlays = chosen.max_classes, chosen.max_overlays
    base_names = _curve_names(files, sources.pool, columns, name)
    groups = sources.group_by
    doc = _document(chosen, sources, engine, fig_size)

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

    entries, groups_seen, groups_drawn = _measure(
        doc,
        streams,
        base_names,
        chosen,
        groups=groups,
        engine=engine,
        fig_mode=fig_mode,
        max_problems=max_classes if marginal else None,
    )
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

    data = _figure(
        doc,
        curves_of,
        base_names,
        chosen,
        groups=groups,
        fig_mode=fig_mode,
        note=note,
        fig_size=fig_size,
        fig_style=fig_style,
        fmt=fmt,
        output=output,
        n_curves=n_curves,
        entries=entries,
        classes=(n_classes_total,),
        groups_counted=(groups_seen, groups_drawn),
    )
    return doc, data
