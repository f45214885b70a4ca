"""``calibcli ece``: binned calibration errors, proper scores, intervals and bounds (SPEC 2).

The command parses the binned family's options (declared once in :mod:`calibcli.ece_family.options`); the pipeline
(:func:`calibcli.engines.pipeline.run`) streams each dataset through the binned family's accumulators (SPEC 8).
"""

from __future__ import annotations

import typer

from calibcli.cli import options as cc
from calibcli.ece_family.family import FAMILY
from calibcli.ece_family.options import Options


@cc.with_groups(
    cc.COLUMNS, cc.READING, cc.DATASETS, cc.ENGINE, cc.OWN, cc.BOOTSTRAP, cc.OUTPUT, cc.GATES, declared=Options
)
def ece(files: cc.Files, chosen: Options, **options) -> None:
    """Binned calibration errors (l1, l2, max; plugin and debiased), Brier and log-loss, bootstrap
    intervals and distribution-free bounds, in binary, top-label or marginal mode; per group with
    --group-by. Files, directories of shards and quoted globs are streamed in flat memory.

    Example: calibcli ece sample_data/breast_cancer_nb.csv --n-bins 10 --fail-above 0.05"""
    cc.run_gated(FAMILY, files, options, chosen)


def register(app: typer.Typer) -> None:
    app.command("ece")(cc.command(ece))
