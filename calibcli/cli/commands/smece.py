"""``calibcli smece``: SmoothECE, the binning-free calibration error (SPEC 3; seed 003)."""

from __future__ import annotations

import typer

from calibcli.cli import options as cc
from calibcli.smooth.family import FAMILY
from calibcli.smooth.options import Options


@cc.with_groups(
    cc.COLUMNS, cc.READING, cc.DATASETS, cc.ENGINE, cc.OWN, cc.BOOTSTRAP, cc.OUTPUT, cc.GATES, declared=Options
)
def smece(files: cc.Files, chosen: Options, **options) -> None:
    """SmoothECE: the calibration error of the kernel-smoothed residual at the bandwidth where
    smECE_sigma = sigma (no bins, no bandwidth to choose), with a bootstrap interval in which the
    bandwidth is re-solved on every resample; binary, top-label or marginal mode; per group with
    --group-by. Files, directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli smece sample_data/digits_nb.parquet --mode top-label"""
    cc.run_gated(FAMILY, files, options, chosen)


def register(app: typer.Typer) -> None:
    app.command("smece")(cc.command(smece))
