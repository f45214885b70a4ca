"""``calibcli diagram``: binned and smooth reliability diagrams to PNG, SVG or PDF (SPEC 6 and 8).

The command parses options and checks them, then :func:`calibcli.diagram.run.diagram_document` streams every
dataset (a file, a directory of shards, a quoted glob, stdin, or all files with ``--pool``) on the engine of
``--engine`` and draws the figure; the command writes it atomically and prints what it drew (a table, or
JSON with ``--json``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from calibcli.cli import options as cc
from calibcli.cli import regression_input
from calibcli.core.outputs import is_stream
from calibcli.core.validation import check_option
from calibcli.diagram import family as diagram_family
from calibcli.diagram import plot as dg
from calibcli.diagram.regression import regression_diagram_document
from calibcli.diagram.run import diagram_document
from calibcli.engines.pipeline import check_engine
from calibcli.regression import family as regression
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

#: The options of the classifier's reliability diagrams that a regression diagram (the calibration curve and the
#: PIT histogram, drawn from --n-levels, --pit-bins and --curve-form) has no use for: refused when given.
CLASSIFIER_ONLY = ("kind", "mode", "n_bins", "strategy", "band", "min_count", "hist_scale", "max_classes")


@cc.with_groups(
    cc.COLUMNS.but(prob_col=DiagramProbCol),
    regression_input.COLUMNS,
    cc.READING,
    cc.DATASETS,
    cc.OWN,
    regression_input.CURVE,
    cc.BOOTSTRAP,
    cc.ENGINE,
    cc.OUTPUT.only("as_json", "fmt", "summary", "metrics", "sort"),
    declared=diagram_family.Options,
)
def diagram(files: DiagramFiles, output: FigureOutput, chosen: diagram_family.Options, **options) -> None:
    """Draw reliability diagrams: binned (accuracy per bin with its interval, --band; bin histogram) and
    smooth (kernel regression at the SmoothECE bandwidth with a bootstrap band, density), with the
    metric and its interval in the legend. Several files or --prob-col columns are overlaid, and so
    are the groups of --group-by; marginal mode draws one panel per class. On a regression dump
    (--mean/--std, quantiles, --lower/--upper, samples; as calibcli regression reads it): the
    calibration curve with its bootstrap band and the PIT histogram with the uniform band. Files,
    directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli diagram sample_data/breast_cancer_nb.csv -o reliability.png"""
    if chosen.band == "bootstrap" and chosen.binned:
        check_option(
            chosen.n_boot > 0,
            "--band bootstrap draws the bins' intervals from the bootstrap resamples: pass "
            "--n-boot above 0, or --band wilson or clopper-pearson",
        )
    prob_col = options["prob_col"]
    layout = cc.layout_of(options)
    fig_style = dg.FigureStyle(
        font_size=chosen.font_size, min_count=chosen.min_count, hist_scale=chosen.hist_scale, style=chosen.style
    )
    fig_size = None if chosen.figsize is None else dg.parse_figsize(chosen.figsize)
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
    if regression_input.is_regression(files, options):
        doc, data = _regression(
            files, output, chosen, options, fmt=fmt, fig_size=fig_size, fig_style=fig_style, engine=engine
        )
    else:
        sources = cc.sources_of(files, options)
        doc, data = diagram_document(
            files,
            output,
            chosen,
            sources=sources,
            columns=columns,
            engine=engine,
            fmt=fmt,
            fig_size=fig_size,
            fig_style=fig_style,
        )
    write_atomic(output, data, "output")
    emit(doc, layout=layout)


def _regression(files, output, chosen, options, *, fmt, fig_size, fig_style, engine) -> tuple[dict, bytes]:
    """``diagram`` on regression inputs (:mod:`calibcli.diagram.regression`): the document and the figure's bytes
    of the regression family's numbers for the curve and the PIT histogram."""
    check_option(
        len(options["prob_col"] or ()) == 0, "--prob-col is a classifier's column: a regression dump takes --mean etc."
    )
    regression_input.refuse_classifier_options(
        options, diagram_family.Options, CLASSIFIER_ONLY, "diagrams (binned and smooth reliability diagrams)"
    )
    reg_options = regression.Options.of(
        {k: options[k] for k in ("curve_form", "n_levels", "pit_bins", "n_boot", "alpha", "seed")}
    )
    sources = regression_input.regression_sources(files, options, group_by=cc.split_columns(options.get("group_by")))
    return regression_diagram_document(
        files,
        output,
        chosen,
        reg_options,
        sources=sources,
        engine=engine,
        fmt=fmt,
        fig_size=fig_size,
        fig_style=fig_style,
    )


def register(app: typer.Typer) -> None:
    app.command("diagram")(cc.command(diagram))
