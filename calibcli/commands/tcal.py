"""``calibcli tcal``: is the miscalibration real? The T-Cal test (SPEC 4; seed 004)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from calibcli import cli_common as cc
from calibcli.accumulators.tcal import MAX_ROWS, TCAL_MODES
from calibcli.errors import CalibcliError, GateFailed
from calibcli.families.tcal import GATE, finish_entries, plan
from calibcli.families.tcal import gates as _gates
from calibcli.report import GateSpec, emit, new_document
from calibcli.accumulators.clinical import CLINICAL_TESTS, ClinicalTestAccumulator, ClinicalTestOptions, ECCE_METHOD
from calibcli.accumulators.cumulative import N_CELLS
from calibcli.clinical import HL_CAVEATS
from calibcli.validation import check_options

TcalMode = Annotated[
    Optional[str],
    typer.Option(
        "--mode",
        help="binary, top-label or canonical (the whole probability vector, equal-volume simplex bins). "
        "Default: binary for one or two probability columns, top-label for K > 2.",
        metavar=cc.choices(*TCAL_MODES),
    ),
]
Smoothness = Annotated[
    Optional[float],
    typer.Option(
        "--smoothness",
        help="Holder smoothness s of the miscalibration, if known: single-scale test with m* = floor(n^(2/(4s+K-1))) "
        "bins. Default: the adaptive test over the dyadic levels m = 2, 4, ..., 2^L.",
    ),
]
Null = Annotated[
    str,
    typer.Option(
        "--null",
        help="Null distribution: y-bootstrap (keep z, redraw y ~ Bernoulli(z); exact p-values), consistency "
        "(also resample z; approximate) or chebyshev (no resampling; conservative critical values of Theorem 3.1).",
        metavar=cc.choices("y-bootstrap", "consistency", "chebyshev"),
    ),
]
TcalNBoot = Annotated[int, typer.Option("--n-boot", help="Resamples for the null distribution; one set serves every level.")]
TcalAlpha = Annotated[float, typer.Option("--alpha", help="Level of the test: reject when the p-value is at most alpha.")]
Combine = Annotated[
    str,
    typer.Option(
        "--combine",
        help="Combining the levels: bonferroni (reject if some level has p <= alpha/L) or min-p "
        "(min_b p_b calibrated over the same resamples; exact and more powerful).",
        metavar=cc.choices("bonferroni", "min-p"),
    ),
]
Discrete = Annotated[
    str,
    typer.Option(
        "--discrete",
        help="Exact binomial test per distinct prediction value instead of T-Cal: auto (when the predictor takes "
        "at most sqrt(n) distinct values), yes or no.",
        metavar=cc.choices("auto", "yes", "no"),
    ),
]
FailOnReject = Annotated[bool, typer.Option("--fail-on-reject", help="Exit 1 when the test rejects perfect calibration.")]
MaxRows = Annotated[
    int,
    typer.Option(
        "--max-rows",
        help="T-Cal runs on every row up to this many, else on the bottom-k sample of this many rows (smallest hash "
        "of (seed, row index); the same however the data are split). The binomial test counts every row. "
        "--test ecce is exact up to this many rows and uses every row on a fine score grid beyond.",
    ),
]
#: ``--test`` choices: T-Cal or the binomial test as --discrete decides (auto), one of them, or a classical test.
TESTS = ("auto", "tcal", "binomial", "spiegelhalter", "hosmer-lemeshow", "ecce")
TestChoice = Annotated[
    str,
    typer.Option(
        "--test",
        help="Which test: auto (T-Cal, or the exact binomial test when --discrete says so), tcal, binomial, "
        "spiegelhalter (Spiegelhalter's Z, 1986) or hosmer-lemeshow (C-hat over --n-bins deciles of risk, G - 2 df; "
        "depends on the grouping, weak at small n, rejects nearly every model at large n) or ecce (ECCE-R/sigma "
        "against the range of Brownian motion, SPEC 9: no bins, O(n log n); exact up to --max-rows rows, a "
        "2^16-cell score grid with its error bound beyond).",
        metavar=cc.choices(*TESTS),
    ),
]
HLBins = Annotated[
    Optional[int],
    typer.Option("--n-bins", help="Groups of the Hosmer-Lemeshow test (quantile bins of the predictions). Default: 10."),
]


@cc.with_groups(cc.COLUMNS, cc.READING, cc.DATASETS, cc.OWN, cc.BOOTSTRAP.but(n_boot=TcalNBoot, alpha=TcalAlpha),
                cc.ENGINE, cc.OUTPUT)
def tcal(
    files: cc.Files,
    mode: TcalMode = None,
    smoothness: Smoothness = None,
    null: Null = "y-bootstrap",
    combine: Combine = "bonferroni",
    discrete: Discrete = "auto",
    max_rows: MaxRows = MAX_ROWS,
    test: TestChoice = "auto",
    n_bins: HLBins = None,
    fail_on_reject: FailOnReject = False,
    **options,
) -> None:
    """Test the hypothesis of perfect calibration with T-Cal (adaptive debiased plug-in test,
    Lee et al.), or with exact binomial tests for predictors that take few distinct values; per group
    with --group-by. Files, directories of shards and quoted globs are streamed: T-Cal runs on every row
    up to --max-rows, else on a seeded bottom-k sample; the binomial test counts every row.

    Example: calibcli tcal sample_data/breast_cancer_nb.csv --alpha 0.05 --fail-on-reject"""
    n_boot, alpha, seed = options["n_boot"], options["alpha"], options["seed"]
    layout = cc.layout_of(options)
    check_options({"mode": TCAL_MODES, "test": TESTS}, mode=mode, batch_rows=options["batch_rows"], test=test, n_bins=n_bins)
    if n_bins is not None and test != "hosmer-lemeshow":
        raise CalibcliError(f"--n-bins sets the groups of --test hosmer-lemeshow, and --test is {test}: drop --n-bins")
    sources = cc.sources_of(files, options)
    if test in CLINICAL_TESTS:
        _classical_test(test, sources, cc.engine_of(options), mode=mode, n_bins=10 if n_bins is None else n_bins,
                        alpha=alpha, max_rows=max_rows, output=options["output"], layout=layout,
                        fail_on_reject=fail_on_reject)
        return
    if test in ("tcal", "binomial"):
        wanted = "no" if test == "tcal" else "yes"
        if discrete not in ("auto", wanted):
            raise CalibcliError(f"--test {test} and --discrete {discrete} disagree: --test {test} is --discrete {wanted}")
        discrete = wanted
    doc, new, test_options = plan(mode=mode, smoothness=smoothness, null=null, n_boot=n_boot, combine=combine,
                                  discrete=discrete, alpha=alpha, seed=seed, max_rows=max_rows,
                                  fail_on_reject=fail_on_reject, weighted=sources.spec.weight_col is not None,
                                  group_by=sources.group_by, pool=sources.pool, batch_rows=sources.batch_rows,
                                  engine=options["engine"])
    cc.run(cc.Plan(doc, new, GATE, test_options.resamples), sources, cc.engine_of(options))
    finish_entries(doc, alpha=alpha, fail_on_reject=fail_on_reject)
    _emit(doc, fail_on_reject=fail_on_reject, output=options["output"], layout=layout)

def _classical_test(test: str, sources, engine, *, mode, n_bins: int, alpha: float, max_rows: int, output, layout,
                    fail_on_reject: bool) -> None:
    """``--test spiegelhalter|hosmer-lemeshow|ecce``: the test on every row through the pipeline, entries shaped
    as T-Cal's (test, sample, result with reject and p-value), gated by --fail-on-reject."""
    options = ClinicalTestOptions(test=test, n_bins=n_bins, alpha=alpha, max_rows=max_rows)
    parameters = {"mode": mode or "auto", "test": test, "alpha": alpha}
    if test == "spiegelhalter":
        parameters.update(statistic="Z = sum w (y - p)(1 - 2p) / sqrt(sum w (1 - 2p)^2 p (1 - p)) (Spiegelhalter 1986)",
                          p_value="two-sided, standard normal")
    elif test == "ecce":
        parameters.update(statistic=ECCE_METHOD.split("; ")[0], p_value="range of standard Brownian motion on [0, 1] "
                          "(asymptotic)", max_rows=max_rows,
                          rows=f"exact on every row up to {max_rows} rows; beyond, sums over {N_CELLS} uniform score "
                               f"cells with the error bound stated (SPEC 9)",
                          weights_convention="weights as the papers: C weighted, sigma with w^2 (a weight is one "
                                             "draw, not a count)")
    else:
        parameters.update(n_bins=n_bins, grouping="deciles of risk: quantile bins of the predictions (SPEC 2.1; ties "
                                                  "merge bins)",
                          statistic="C-hat = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g)) (Hosmer & Lemeshow 1980)",
                          p_value="chi-square with G - 2 degrees of freedom, G the non-empty groups", caveats=HL_CAVEATS)
    parameters.update(fail_on_reject=fail_on_reject, weights="frequency weights" if sources.spec.weight_col is not None else None,
                      group_by=list(sources.group_by) or None, pool=sources.pool, batch_rows=sources.batch_rows,
                      engine=engine.name)
    doc = new_document("tcal", parameters)
    new = cc.per_input(ClinicalTestAccumulator, mode, options)
    gate_metric = {"spiegelhalter": "spiegelhalter_p_value", "hosmer-lemeshow": "hosmer_lemeshow_p_value",
                   "ecce": "ecce_p_value"}[test]
    cc.run(cc.Plan(doc, new, GateSpec(gate_metric), 0), sources, engine)
    _gates(doc, alpha=alpha, fail_on_reject=fail_on_reject)
    _emit(doc, fail_on_reject=fail_on_reject, output=output, layout=layout)


def _emit(doc: dict, *, fail_on_reject: bool, output, layout) -> None:
    """The report; then exit 1 if the ``--fail-on-reject`` gate failed."""
    emit(doc, output=output, layout=layout)
    if fail_on_reject and not doc["gate"]["passed"]:
        raise GateFailed("Gate failed: " + "; ".join(doc["gate"]["failures"]))


def register(app: typer.Typer) -> None:
    app.command("tcal")(cc.command(tcal))
