"""``calibcli smece``: SmoothECE, the binning-free calibration error (SPEC 3; seed 003)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from calibcli import cli_common as cc
from calibcli.errors import CalibcliError
from calibcli.report import GateSpec, emit_with_gates, new_document

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
    from calibcli.evaluation import SmoothOptions
    from calibcli.modes import CLASS_WEIGHTS, MODES
    from calibcli.validation import check_options

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

    cc.run_family(doc, files, cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits), new,
                  input_format=input_format, drop_invalid=drop_invalid, pool=pool, batch_rows=batch_rows, group_by=groups,
                  gate=gate, n_boot=n_boot, engine=engine, scheduler=scheduler, workers=workers)
    emit_with_gates(doc, gate, output=output, layout=layout)


def plan(*, mode: str | None, class_weights: str, sigma: float | None, n_boot: int, alpha: float, seed: int,
         weighted: bool, group_by: tuple[str, ...], pool: bool, batch_rows: int, engine: str, gate=None):
    """``smece``'s document (its parameters; entries come from :func:`calibcli.cli_common.add_entries`) and
    ``new(stream)``, the input accumulator of a stream: the command apart from running it, so that
    ``calibcli report`` feeds it in one pass beside the other families. Options are checked already."""
    from calibcli.evaluation import SmoothInputAccumulator, SmoothOptions
    from calibcli.metrics import REGISTRY
    from calibcli.smooth import FIXED_POINT_TOL, STATS_GRID

    options = SmoothOptions(sigma=sigma, n_boot=n_boot, alpha=alpha, seed=seed, class_weights=class_weights)
    metric = options.metric
    gate = gate if gate is not None else GateSpec(metric, None, None)
    doc = new_document(
        "smece",
        {
            "sigma": "fixed point" if sigma is None else sigma,
            "fixed_point_tolerance": FIXED_POINT_TOL if sigma is None else None,
            "kernel": "reflected Gaussian on [0, 1] (every reflection; predictions at 0 or 1 carry full weight)",
            "mode": mode or "auto",
            "class_weights": class_weights,
            "marginal_aggregate": "sum_k v_k smECE_k (the lp rule with p = 1)",
            "n_boot": n_boot,
            "bootstrap": "Poisson, keyed by (seed, global row index); per row up to "
                         f"{options.row_limit} rows, from per-cell sufficient statistics beyond"
                         + (", bandwidth re-solved on each resample" if sigma is None else ", fixed sigma"),
            "first_pass_grid_cells": STATS_GRID,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "estimators": {metric: REGISTRY[metric].description},
            "weights": "frequency weights" if weighted else None,
            "group_by": list(group_by) or None,
            "pool": pool,
            "batch_rows": batch_rows,
            "engine": engine,
            "gate": gate.describe() if gate.active else None,
        },
    )
    return doc, cc.per_input(SmoothInputAccumulator, mode, options)


def register(app: typer.Typer) -> None:
    app.command("smece")(cc.command(smece))
