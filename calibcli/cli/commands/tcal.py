"""``calibcli tcal``: is the miscalibration real? The T-Cal test (SPEC 4; seed 004), or a classical test
(:mod:`calibcli.clinical.family`). The options are declared once, in :class:`calibcli.tcal.options.Options`."""

from __future__ import annotations

import typer

from calibcli.cli import options as cc
from calibcli.core.declarations import CLINICAL_TEST_NAMES
from calibcli.core.errors import GateFailed
from calibcli.engines.pipeline import run
from calibcli.report.emit import emit
from calibcli.tcal import family as tcal_family
from calibcli.tcal.options import Options


@cc.with_groups(cc.COLUMNS, cc.READING, cc.DATASETS, cc.OWN, cc.BOOTSTRAP, cc.ENGINE, cc.OUTPUT, declared=Options)
def tcal(files: cc.Files, chosen: Options, **options) -> None:
    """Test the hypothesis of perfect calibration with T-Cal (adaptive debiased plug-in test,
    Lee et al.), or with exact binomial tests for predictors that take few distinct values; per group
    with --group-by. Files, directories of shards and quoted globs are streamed: T-Cal runs on every row
    up to --max-rows, else on a seeded bottom-k sample; the binomial test counts every row.

    Example: calibcli tcal sample_data/breast_cancer_nb.csv --alpha 0.05 --fail-on-reject"""
    layout = cc.layout_of(options)
    family = tcal_family.FAMILY
    if chosen.test in CLINICAL_TEST_NAMES:
        # the classical tests' family (Cox fits, calibrators, smoothing: about 0.05 s of imports) only when named
        from calibcli.clinical import family as clinical

        family = clinical.FAMILY
    doc = run(family, cc.sources_of(files, options), chosen, cc.engine_of(options))
    emit(doc, output=options["output"], layout=layout)
    if chosen.fail_on_reject and not doc["gate"]["passed"]:
        raise GateFailed("Gate failed: " + "; ".join(doc["gate"]["failures"]))


def register(app: typer.Typer) -> None:
    app.command("tcal")(cc.command(tcal))
