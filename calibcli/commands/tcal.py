"""``calibcli tcal``: is the miscalibration real? The T-Cal test (SPEC 4; seed 004)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Optional

import numpy as np
import typer

from calibcli import cli_common as cc
from calibcli.errors import CalibcliError, GateFailed
from calibcli.modes import binary_problems, default_mode
from calibcli.report import emit, fmt_number, new_document
from calibcli.tcal import COMBINES, DISCRETE_RULE, NULLS, STATISTIC_NAME, binomial_test, discreteness, tcal_test
from calibcli.validation import check_option

TCAL_MODES = ("binary", "top-label", "canonical")
DISCRETE_CHOICES = ("auto", "yes", "no")

TcalMode = Annotated[
    Optional[str],
    typer.Option(
        "--mode",
        help="binary, top-label or canonical (the whole probability vector, equal-volume simplex bins). "
        "Default: binary for one or two probability columns, top-label for K > 2.",
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
    ),
]
Discrete = Annotated[
    str,
    typer.Option(
        "--discrete",
        help="Exact binomial test per distinct prediction value instead of T-Cal: auto (when the predictor takes "
        "at most sqrt(n) distinct values), yes or no.",
    ),
]
FailOnReject = Annotated[bool, typer.Option("--fail-on-reject", help="Exit 1 when the test rejects perfect calibration.")]


def tcal(
    files: cc.Files,
    prob_col: cc.ProbCol = None,
    prob_cols: cc.ProbCols = None,
    label_col: cc.LabelCol = None,
    weight_col: cc.WeightCol = None,
    logits: cc.Logits = False,
    input_format: cc.InputFormat = None,
    drop_invalid: cc.DropInvalid = False,
    mode: TcalMode = None,
    smoothness: Smoothness = None,
    null: Null = "y-bootstrap",
    n_boot: TcalNBoot = 1000,
    combine: Combine = "bonferroni",
    discrete: Discrete = "auto",
    alpha: TcalAlpha = 0.05,
    seed: cc.Seed = 0,
    as_json: cc.Json = False,
    output: cc.Output = None,
    fail_on_reject: FailOnReject = False,
) -> None:
    """Test the hypothesis of perfect calibration with T-Cal (adaptive debiased plug-in test,
    Lee et al.), or with exact binomial tests for predictors that take few distinct values."""
    if mode is not None:
        cc.check_choice(mode, TCAL_MODES, "--mode")
    cc.check_choice(null, NULLS, "--null")
    cc.check_choice(combine, COMBINES, "--combine")
    cc.check_choice(discrete, DISCRETE_CHOICES, "--discrete")
    check_option(0.0 < alpha < 1.0, f"--alpha is {alpha}: expected a number strictly between 0 and 1")
    check_option(null == "chebyshev" or n_boot >= 1, f"--n-boot is {n_boot}: expected at least 1 resample for --null {null}")
    check_option(smoothness is None or smoothness > 0, f"--smoothness is {smoothness}: expected a positive Holder exponent")
    check_option(
        not (null == "chebyshev" and combine == "min-p"),
        "--combine min-p calibrates the minimum p-value over resamples, and --null chebyshev draws none: "
        "use --combine bonferroni with chebyshev, or a resampling null",
    )

    spec = cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits)
    doc = new_document(
        "tcal",
        {
            "mode": mode or "auto",
            "test": "adaptive" if smoothness is None else "single-scale",
            "smoothness": smoothness,
            "null": null,
            "n_boot": 0 if null == "chebyshev" else n_boot,
            "combine": combine,
            "alpha": alpha,
            "seed": seed,
            "discrete": discrete,
            "discrete_rule": DISCRETE_RULE,
            "statistic": STATISTIC_NAME,
            "binning": "equal-width bins [j/m, (j+1)/m), the last closed (binary, top-label); "
            "equal-volume simplex cells (canonical, SPEC 4.3)",
            "p_value": "(1 + #{T* >= T}) / (R + 1) per level"
            if null != "chebyshev"
            else "min(1, (C_m / T_m)^2): the smallest level at which Theorem 3.1's test rejects",
            "fail_on_reject": fail_on_reject,
            "weights": "frequency weights" if weight_col else None,
        },
    )
    failures: list[str] = []
    for loaded in cc.load_inputs(files, spec, input_format=input_format, drop_invalid=drop_invalid):
        entry = _test_file(loaded, mode, smoothness, null, n_boot, combine, discrete, alpha, seed)
        doc["files"].append(entry)
        if entry["result"]["reject"]:
            failures.append(
                f"{loaded.path}: {entry['test']} rejects perfect calibration "
                f"(p-value {entry['result']['p_value']:.4g} <= alpha {alpha:g})"
            )
    if fail_on_reject:
        doc["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    emit(doc, as_json=as_json, output=output, render=render_tcal)
    if fail_on_reject and failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


def _test_file(loaded, mode, smoothness, null, n_boot, combine, discrete, alpha, seed) -> dict:
    K = loaded.n_classes
    file_mode = mode or default_mode(K)
    notes: list[str] = []
    if file_mode == "canonical" and K == 2:
        notes.append("canonical mode with K = 2 is binary mode on the positive class (SPEC 1)")
        file_mode = "binary"
    if file_mode == "canonical":
        if loaded.probs.ndim == 1:
            raise CalibcliError(
                "--mode canonical needs one probability column per class, but the input has a single probability "
                "column: use --mode binary, or pass --prob-cols for every class"
            )
        if discrete == "yes":
            raise CalibcliError("--discrete yes tests one probability per prediction: use --mode binary or top-label with it")
        labels, probs, weights = loaded.labels, loaded.probs, loaded.sample_weight
        check = None
    else:
        (problem,) = binary_problems(
            loaded.labels, loaded.probs, mode=file_mode, sample_weight=loaded.sample_weight, class_names=list(loaded.class_names)
        )
        labels, probs, weights = problem.y, problem.z, problem.sample_weight
        check = discreteness(probs)

    use_binomial = check is not None and (discrete == "yes" or (discrete == "auto" and check.discrete))
    if use_binomial and weights is not None:
        if discrete == "yes":
            raise CalibcliError(
                "--discrete yes: the exact binomial test counts predictions and cannot use sample weights: "
                "drop --weight-col, or use --discrete no"
            )
        cc.warn(f"{loaded.path}: the predictor is discrete but has sample weights; T-Cal is used (the binomial test counts rows)")
        use_binomial = False
    entry = {"input": loaded.describe(), "mode": file_mode, "notes": notes}
    if check is not None:
        entry["discrete_check"] = {**asdict(check), "choice": discrete, "used": "binomial" if use_binomial else "tcal"}
    if use_binomial:
        result = binomial_test(labels, probs, alpha=alpha)
        entry["test"] = "binomial"
        entry["result"] = {
            "reject": result.reject,
            "p_value": result.p_value,
            "alpha": result.alpha,
            "n": result.n,
            "n_values": result.n_values,
            "per_value_alpha": result.per_value_alpha,
            "method": result.method,
            "per_value": [asdict(row) for row in result.rows],
        }
        return entry
    total = 0 if null == "chebyshev" else n_boot
    with cc.progress_bar(total, f"T-Cal resamples {loaded.path}") as advance:
        result = tcal_test(
            labels,
            probs,
            sample_weight=weights,
            smoothness=smoothness,
            null=null,
            n_boot=n_boot,
            combine=combine,
            alpha=alpha,
            rng=np.random.default_rng(seed),
            progress=advance,
        )
    for message in result.warnings:
        cc.warn(f"{loaded.path}: {message}")
    entry["test"] = "tcal"
    entry["result"] = {
        "reject": result.reject,
        "p_value": result.p_value,
        "p_value_bonferroni": result.p_value_bonferroni,
        "p_value_min_p": result.p_value_min_p,
        "combine": result.combine,
        "null": result.null,
        "exact": result.exact,
        "alpha": result.alpha,
        "per_level_alpha": result.per_level_alpha,
        "n": result.n,
        "n_classes": result.n_classes,
        "n_boot": result.n_boot,
        "n_levels": result.n_levels,
        "adaptive": result.adaptive,
        "smoothness": result.smoothness,
        "weighted": result.weighted,
        "statistic_name": result.statistic_name,
        "levels": [asdict(level) for level in result.levels],
        "warnings": list(result.warnings),
    }
    return entry


def render_tcal(doc: dict, console) -> None:
    """The readable report: the decision and p-value per file, then the per-level or per-value table."""
    from rich.table import Table

    p = doc["parameters"]
    for f in doc["files"]:
        i = f["input"]
        r = f["result"]
        verdict = "REJECT perfect calibration" if r["reject"] else "no evidence of miscalibration"
        dropped = f", {i['rows_dropped']} dropped" if i["rows_dropped"] else ""
        console.print(f"[bold]{i['path']}[/bold]: {i['rows_used']} rows{dropped}; K={i['n_classes']}; mode {f['mode']}")
        if "discrete_check" in f:
            d = f["discrete_check"]
            console.print(
                f"  predictor takes {d['n_distinct']} distinct values (discrete when t <= sqrt(n) = {d['threshold']:.1f}): "
                f"{'discrete' if d['discrete'] else 'continuous'}; --discrete {d['choice']} -> {d['used']} test"
            )
        for note in f["notes"]:
            console.print(f"  note: {note}")
        if f["test"] == "binomial":
            console.print(f"  exact binomial test per value, Bonferroni over {r['n_values']} values")
            console.print(f"  p-value {fmt_number(r['p_value'])} at alpha {r['alpha']:g}: {verdict}")
            table = Table(title_justify="left")
            for col in ("value", "n", "positives", "observed rate", "p-value", f"p <= {fmt_number(r['per_value_alpha'])}"):
                table.add_column(col, justify="right")
            for row in r["per_value"]:
                table.add_row(
                    fmt_number(row["value"]), str(row["n"]), str(row["positives"]), fmt_number(row["observed_rate"]),
                    fmt_number(row["p_value"]), "yes" if row["reject"] else "",
                )
            console.print(table)
            continue
        how = "adaptive" if r["adaptive"] else f"single scale (s = {r['smoothness']:g})"
        resampling = f"{r['n_boot']} resamples, seed {p['seed']}" if r["null"] != "chebyshev" else "no resampling"
        other = ""
        if r["p_value_min_p"] is not None:
            other_name = "min-p" if r["combine"] == "bonferroni" else "bonferroni"
            other_value = r["p_value_min_p"] if r["combine"] == "bonferroni" else r["p_value_bonferroni"]
            other = f" ({other_name}: {fmt_number(other_value)})"
        console.print(f"  T-Cal {how}, null {r['null']} ({resampling}), {r['n_levels']} level(s), combine {r['combine']}")
        console.print(f"  p-value {fmt_number(r['p_value'])}{other} at alpha {r['alpha']:g}: {verdict}")
        table = Table(title_justify="left")
        for col in ("level", "m", "cells", "non-empty", "T_m", f"critical (alpha {fmt_number(r['per_level_alpha'])})", "p-value", "rejects"):
            table.add_column(col, justify="right")
        for level in r["levels"]:
            table.add_row(
                str(level["level"]), str(level["n_bins"]), str(level["n_cells"]), str(level["n_nonempty"]),
                fmt_number(level["statistic"]), fmt_number(level["critical_value"]), fmt_number(level["p_value"]),
                "yes" if level["reject"] else "",
            )
        console.print(table)
        console.print(f"  statistic: {r['statistic_name']}")
    if "gate" in doc:
        console.print(f"gate --fail-on-reject: {'passed' if doc['gate']['passed'] else 'FAILED'}")


def register(app: typer.Typer) -> None:
    app.command("tcal")(cc.command(tcal))
