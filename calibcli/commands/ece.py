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


@cc.with_groups(cc.COLUMNS, cc.READING, cc.DATASETS, cc.ENGINE, cc.OWN, cc.BOOTSTRAP, cc.OUTPUT, cc.GATES)
def ece(
    files: cc.Files,
    mode: cc.Mode = None,
    class_weights: cc.ClassWeights = "uniform",
    n_bins: cc.NBins = 15,
    strategy: cc.Strategy = "uniform",
    metric: Annotated[str, typer.Option("--metric", help="Metric the gates look at (a name from the report).")] = "ece_l1_plugin",
    **options,
) -> None:
    """Binned calibration errors (l1, l2, max; plugin and debiased), Brier and log-loss, bootstrap
    intervals and distribution-free bounds, in binary, top-label or marginal mode; per group with
    --group-by. Files, directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli ece sample_data/breast_cancer_nb.csv --n-bins 10 --fail-above 0.05"""
    n_boot, alpha, seed = options["n_boot"], options["alpha"], options["seed"]
    fail_above, fail_above_upper = options["fail_above"], options["fail_above_upper"]
    check_options({"mode": MODES, "strategy": STRATEGIES, "class_weights": CLASS_WEIGHTS}, mode=mode, strategy=strategy,
                  class_weights=class_weights, n_bins=n_bins, n_boot=n_boot, alpha=alpha,
                  batch_rows=options["batch_rows"], fail_above=fail_above, fail_above_upper=fail_above_upper)
    layout = cc.layout_of(options)
    gate = GateSpec(metric, fail_above, fail_above_upper)
    if gate.fail_above_upper is not None and n_boot == 0:
        raise CalibcliError("--fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0")
    sources = cc.sources_of(files, options)
    doc, new = plan(mode=mode, class_weights=class_weights, n_bins=n_bins, strategy=strategy, n_boot=n_boot, alpha=alpha,
                    seed=seed, weighted=sources.spec.weight_col is not None, group_by=sources.group_by, pool=sources.pool,
                    batch_rows=sources.batch_rows, engine=options["engine"], gate=gate)
    cc.run(cc.Plan(doc, new, gate, n_boot), sources, cc.engine_of(options))
    emit_with_gates(doc, gate, output=options["output"], layout=layout)


def register(app: typer.Typer) -> None:
    app.command("ece")(cc.command(ece))
