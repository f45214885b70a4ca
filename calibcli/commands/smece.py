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


@cc.with_groups(cc.COLUMNS, cc.READING, cc.DATASETS, cc.ENGINE, cc.OWN, cc.BOOTSTRAP, cc.OUTPUT, cc.GATES)
def smece(
    files: cc.Files,
    mode: cc.Mode = None,
    class_weights_scheme: cc.ClassWeights = "uniform",
    sigma: Sigma = None,
    **options,
) -> None:
    """SmoothECE: the calibration error of the kernel-smoothed residual at the bandwidth where
    smECE_sigma = sigma (no bins, no bandwidth to choose), with a bootstrap interval in which the
    bandwidth is re-solved on every resample; binary, top-label or marginal mode; per group with
    --group-by. Files, directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli smece sample_data/digits_nb.parquet --mode top-label"""
    n_boot, alpha, seed = options["n_boot"], options["alpha"], options["seed"]
    fail_above, fail_above_upper = options["fail_above"], options["fail_above_upper"]
    layout = cc.layout_of(options)
    check_options({"mode": MODES, "class_weights_scheme": CLASS_WEIGHTS}, mode=mode, class_weights_scheme=class_weights_scheme,
                  sigma=sigma, n_boot=n_boot, alpha=alpha, batch_rows=options["batch_rows"], fail_above=fail_above,
                  fail_above_upper=fail_above_upper)
    gate = GateSpec(SmoothOptions(sigma=sigma).metric, fail_above, fail_above_upper)
    if gate.fail_above_upper is not None and n_boot == 0:
        raise CalibcliError("--fail-above-upper needs bootstrap intervals: pass --n-boot N with N > 0")
    sources = cc.sources_of(files, options)
    doc, new = plan(mode=mode, class_weights=class_weights_scheme, sigma=sigma, n_boot=n_boot, alpha=alpha, seed=seed,
                    weighted=sources.spec.weight_col is not None, group_by=sources.group_by, pool=sources.pool,
                    batch_rows=sources.batch_rows, engine=options["engine"], gate=gate)
    cc.run(cc.Plan(doc, new, gate, n_boot), sources, cc.engine_of(options))
    emit_with_gates(doc, gate, output=options["output"], layout=layout)

def register(app: typer.Typer) -> None:
    app.command("smece")(cc.command(smece))
