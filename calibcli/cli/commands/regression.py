"""``calibcli regression``: the calibration of regression predictions (docs/regression.md)."""

from __future__ import annotations

import typer

from calibcli.cli import options as cc
from calibcli.cli import regression_input
from calibcli.engines.pipeline import run
from calibcli.regression import family as regression
from calibcli.report.emit import emit_with_gates

COLUMNS = cc.group_of(regression.Columns, name="columns")


@cc.with_groups(
    COLUMNS, cc.READING, cc.DATASETS, cc.ENGINE, cc.OWN, cc.BOOTSTRAP, cc.OUTPUT, cc.GATES, declared=regression.Options
)
def regression_command(files: cc.Files, chosen: regression.Options, **options) -> None:
    """Calibration of regression predictions: a Gaussian (--mean/--std or --var), quantiles (q0.05 ...
    q0.95), central intervals (--lower/--upper/--level) or samples (s0 ... sN) against the observed target
    (y or target). PIT values and their KS test, the calibration curve with MACE, RMSCE and the miscalibration
    area (as uncertainty-toolbox defines them), ENCE/UCE, coverage, width and interval score per level, CRPS,
    NLL and pinball loss, each with a seeded bootstrap interval; per group with --group-by. Files, directories
    of shards and quoted globs are streamed in flat memory. Definitions and sources: docs/regression.md.

    Example: calibcli regression sample_data/regression/diabetes_gp.csv"""
    layout = cc.layout_of(options)
    sources = regression_input.regression_sources(files, options, group_by=cc.split_columns(options.get("group_by")))
    doc = run(regression.FAMILY, sources, chosen, cc.engine_of(options))
    emit_with_gates(doc, chosen.gate, output=options["output"], layout=layout)


def register(app: typer.Typer) -> None:
    app.command("regression")(cc.command(regression_command))
