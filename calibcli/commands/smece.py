"""``calibcli smece``: SmoothECE, the binning-free calibration error (SPEC 3; seed 003)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from calibcli import cli_common as cc
from calibcli.errors import CalibcliError
from calibcli.families.smooth import plan
from calibcli.report import GateSpec, emit_with_gates
from calibcli.accumulators.inputs import SmoothOptions
from calibcli.modes import CLASS_WEIGHTS, MODES
from calibcli.validation import check_options

Sigma = Annotated[
    Optional[float],
    typer.Option(
        "--sigma",
        help="Kernel bandwidth: report smECE at this sigma. Default: the fixed point sigma* = smECE_sigma* "
        "(solved to 1e-7), the SmoothECE proper.",
    ),
]


def smece(
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
    class_weights_scheme: cc.ClassWeights = "uniform",
    sigma: Sigma = None,
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
) -> None:
    """SmoothECE: the calibration error of the kernel-smoothed residual at the bandwidth where
    smECE_sigma = sigma (no bins, no bandwidth to choose), with a bootstrap interval in which the
    bandwidth is re-solved on every resample; binary, top-label or marginal mode; per group with
    --group-by. Files, directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli smece sample_data/digits_nb.parquet --mode top-label"""
    layout = cc.layout(fmt, as_json, summary, metrics, sort)
    check_options({"mode": MODES, "class_weights_scheme": CLASS_WEIGHTS}, mode=mode, class_weights_scheme=class_weights_scheme,
                  sigma=sigma, n_boot=n_boot, alpha=alpha, batch_rows=batch_rows, fail_above=fail_above,
                  fail_above_upper=fail_above_upper)
    gate = GateSpec(SmoothOptions(sigma=sigma).metric, fail_above, fail_above_upper)
    if gate.fail_above_upper is not None and n_boot == 0:
        raise CalibcliError("--fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0")
    groups = cc.split_columns(group_by)
    doc, new = plan(mode=mode, class_weights=class_weights_scheme, sigma=sigma, n_boot=n_boot, alpha=alpha, seed=seed,
                    weighted=weight_col is not None, group_by=groups, pool=pool, batch_rows=batch_rows, engine=engine,
                    gate=gate)

    cc.run(cc.Plan(doc, new, gate, n_boot),
           cc.sources(files, cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits), input_format=input_format,
                      drop_invalid=drop_invalid, pool=pool, batch_rows=batch_rows, group_by=groups),
           cc.EngineChoice(engine, scheduler, workers))
    emit_with_gates(doc, gate, output=output, layout=layout)


def register(app: typer.Typer) -> None:
    app.command("smece")(cc.command(smece))
