"""``calibcli ece``: binned calibration errors, proper scores, intervals and bounds (SPEC 2).

The command parses options and renders; the pipeline (:func:`calibcli.engines._fragments.run_local`) streams
each dataset through the binned family's accumulators (SPEC 8).
"""

from __future__ import annotations

from typing import Annotated

import typer

from calibcli import cli_common as cc
from calibcli.errors import CalibcliError
from calibcli.families.binned import plan
from calibcli.report import GateSpec, emit_with_gates
from calibcli.binning import STRATEGIES
from calibcli.modes import CLASS_WEIGHTS, MODES
from calibcli.validation import check_options

def ece(
    files: cc.Files,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    pool: cc.Pool = False,
    group_by: cc.GroupBy = None,
    batch_rows: cc.BatchRows = cc.DEFAULT_BATCH_ROWS,
    engine: cc.Engine = "local",
    scheduler: cc.Scheduler = None,
    workers: cc.Workers = None,
    mode: cc.Mode = None,
    class_weights: cc.ClassWeights = "uniform",
    n_bins: cc.NBins = 15,
    strategy: cc.Strategy = "uniform",
    n_boot: cc.NBoot = 1000,
    alpha: cc.Alpha = 0.05,
    seed: cc.Seed = 0,
    as_json: cc.Json = False,
    fmt: cc.Format = "table",
    summary: cc.Summary = None,
    metrics: cc.Metrics = None,
    sort: cc.Sort = None,
    output: cc.Output = None,
    fail_above: cc.FailAbove = None,
    fail_above_upper: cc.FailAboveUpper = None,
    metric: Annotated[str, typer.Option("--metric", help="Metric the gates look at (a name from the report).")] = "ece_l1_plugin",
) -> None:
    """Binned calibration errors (l1, l2, max; plugin and debiased), Brier and log-loss, bootstrap
    intervals and distribution-free bounds, in binary, top-label or marginal mode; per group with
    --group-by. Files, directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli ece sample_data/breast_cancer_nb.csv --n-bins 10 --fail-above 0.05"""
    check_options({"mode": MODES, "strategy": STRATEGIES, "class_weights": CLASS_WEIGHTS}, mode=mode, strategy=strategy,
                  class_weights=class_weights, n_bins=n_bins, n_boot=n_boot, alpha=alpha, batch_rows=batch_rows,
                  fail_above=fail_above, fail_above_upper=fail_above_upper)
    layout = cc.layout(fmt, as_json, summary, metrics, sort)
    gate = GateSpec(metric, fail_above, fail_above_upper)
    if gate.fail_above_upper is not None and n_boot == 0:
        raise CalibcliError("--fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0")
    groups = cc.split_columns(group_by)
    doc, new = plan(mode=mode, class_weights=class_weights, n_bins=n_bins, strategy=strategy, n_boot=n_boot, alpha=alpha,
                    seed=seed, weighted=weight_col is not None, group_by=groups, pool=pool, batch_rows=batch_rows,
                    engine=engine, gate=gate)
    cc.run(cc.Plan(doc, new, gate, n_boot),
           cc.sources(files, cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits), input_format=input_format,
                      drop_invalid=drop_invalid, pool=pool, batch_rows=batch_rows, group_by=groups),
           cc.EngineChoice(engine, scheduler, workers))
    emit_with_gates(doc, gate, output=output, layout=layout)


def register(app: typer.Typer) -> None:
    app.command("ece")(cc.command(ece))
