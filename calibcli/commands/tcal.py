"""``calibcli tcal``: is the miscalibration real? The T-Cal test (SPEC 4; seed 004)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from calibcli import cli_common as cc
from calibcli.accumulators.tcal import MAX_ROWS, TCAL_MODES
from calibcli.errors import CalibcliError, GateFailed
from calibcli.report import GateSpec, emit, entry_label, fmt_number, new_document

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
        "of (seed, row index); the same however the data are split). The binomial test counts every row.",
    ),
]


def tcal(
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
    mode: TcalMode = None,
    smoothness: Smoothness = None,
    null: Null = "y-bootstrap",
    n_boot: TcalNBoot = 1000,
    combine: Combine = "bonferroni",
    discrete: Discrete = "auto",
    alpha: TcalAlpha = 0.05,
    seed: cc.Seed = 0,
    max_rows: MaxRows = MAX_ROWS,
    engine: cc.Engine = "local",
    scheduler: cc.Scheduler = None,
    workers: cc.Workers = None,
    as_json: cc.Json = False,
    fmt: cc.Format = "table",
    output: cc.Output = None,
    fail_on_reject: FailOnReject = False,
) -> None:
    """Test the hypothesis of perfect calibration with T-Cal (adaptive debiased plug-in test,
    Lee et al.), or with exact binomial tests for predictors that take few distinct values; per group
    with --group-by. Files, directories of shards and quoted globs are streamed: T-Cal runs on every row
    up to --max-rows, else on a seeded bottom-k sample; the binomial test counts every row.

    Example: calibcli tcal sample_data/breast_cancer_nb.csv --alpha 0.05 --fail-on-reject"""
    from calibcli.accumulators.tcal import TcalInputAccumulator, TcalOptions
    from calibcli.engines.local import open_streams
    from calibcli.tcal import DISCRETE_RULE, STATISTIC_NAME
    from calibcli.validation import check_options

    from calibcli.report import FORMATS

    check_options({"mode": TCAL_MODES, "fmt": FORMATS}, mode=mode, batch_rows=batch_rows, fmt=fmt)
    options = TcalOptions(smoothness=smoothness, null=null, n_boot=n_boot, combine=combine, alpha=alpha, seed=seed,
                          discrete=discrete, max_rows=max_rows)
    if null == "chebyshev" and combine == "min-p":
        raise CalibcliError(
            "--combine min-p calibrates the minimum p-value over resamples, and --null chebyshev draws none: "
            "use --combine bonferroni with chebyshev, or a resampling null"
        )
    groups = cc.split_columns(group_by)
    doc = new_document(
        "tcal",
        {
            "mode": mode or "auto",
            "test": "adaptive" if smoothness is None else "single-scale",
            "smoothness": smoothness,
            "null": null,
            "n_boot": options.resamples,
            "combine": combine,
            "alpha": alpha,
            "seed": seed,
            "discrete": discrete,
            "discrete_rule": DISCRETE_RULE,
            "discrete_counts": f"per distinct value over every row, up to {options.max_distinct} values "
                               "(more: the predictor is continuous)",
            "max_rows": max_rows,
            "sample": f"T-Cal runs on every row up to {max_rows} rows, else on the bottom-k sample of {max_rows} rows "
                      "with the smallest hash of (seed, global row index)",
            "statistic": STATISTIC_NAME,
            "binning": "equal-width bins [j/m, (j+1)/m), the last closed (binary, top-label); "
            "equal-volume simplex cells (canonical, SPEC 4.3)",
            "p_value": "(1 + #{T* >= T}) / (R + 1) per level"
            if null != "chebyshev"
            else "min(1, (C_m / T_m)^2): the smallest level at which Theorem 3.1's test rejects",
            "fail_on_reject": fail_on_reject,
            "weights": "frequency weights" if weight_col else None,
            "group_by": list(groups) or None,
            "pool": pool,
            "batch_rows": batch_rows,
            "engine": engine,
        },
    )

    new = cc.per_input(TcalInputAccumulator, mode, options)

    streams = open_streams(files, cc.column_spec(prob_col, prob_cols, label_col, weight_col, logits),
                           input_format=input_format, drop_invalid=drop_invalid, pool=pool, batch_rows=batch_rows,
                           group_by=groups)
    cc.evaluate_streams(doc, streams, new, gate=GateSpec("tcal_p_value"), n_boot=options.resamples, engine=engine,
                        scheduler=scheduler, workers=workers)
    from calibcli.errors import cli_text

    for entry in doc["files"]:
        warnings = entry["result"].get("warnings")
        if warnings:  # the report speaks the command line's language: options by their flags
            entry["result"]["warnings"] = [cli_text(w, cc.flag_of) for w in warnings]
        for message in entry["result"].get("warnings", []):
            cc.warn(f"{entry_label(entry)}: {message}")
    if "groups" in doc:
        _summarise_groups(doc)
    failures = [f for entry in doc["files"] for f in _gate(entry, alpha, fail_on_reject)]
    if fail_on_reject:
        doc["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    emit(doc, as_json=as_json, output=output, render=render_tcal, fmt=fmt)
    if fail_on_reject and failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


def _gate(entry: dict, alpha: float, active: bool) -> list[str]:
    """The ``--fail-on-reject`` verdict of one entry (``entry["gate"]``); the failure messages."""
    if not active:
        return []
    r = entry["result"]
    failures = []
    if r["reject"]:
        failures.append(f"{entry_label(entry)}: {entry['test']} rejects perfect calibration "
                        f"(p-value {r['p_value']:.4g} <= alpha {alpha:g})")
    entry["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    return failures


def _summarise_groups(doc: dict) -> None:
    """Which groups reject (the worst group and spread of each p-value come from the shared summary)."""
    doc["groups"]["rejecting"] = [entry_label(e) for e in doc["files"] if e["result"]["reject"]]


def render_tcal(doc: dict, console) -> None:
    """The readable report: the decision and p-value per file, then the per-level or per-value table."""
    from rich.table import Table

    p = doc["parameters"]
    for f in doc["files"]:
        i = f["input"]
        r = f["result"]
        verdict = "REJECT perfect calibration" if r["reject"] else "no evidence of miscalibration"
        dropped = f", {i['rows_dropped']} dropped" if i["rows_dropped"] else ""
        rows = f"{f['rows_in_group']} rows in the group of {i['rows_used']}" if "group" in f else f"{i['rows_used']} rows"
        console.print(f"[bold]{entry_label(f)}[/bold]: {rows}{dropped}; K={i['n_classes']}; mode {f['mode']}")
        if "discrete_check" in f:
            d = f["discrete_check"]
            distinct = f"{d['n_distinct']}" if d["n_distinct"] is not None else f"more than {d['n_distinct_more_than']}"
            console.print(
                f"  predictor takes {distinct} distinct values (discrete when t <= sqrt(n) = {d['threshold']:.1f}): "
                f"{'discrete' if d['discrete'] else 'continuous'}; --discrete {d['choice']} -> {d['used']} test"
            )
        console.print(f"  rows tested: {f['sample']['description']}")
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
    if "groups" in doc:
        g = doc["groups"]
        worst = [f"smallest {name} {fmt_number(m['worst'])} in {m['worst_group']}" for name, m in g["metrics"].items()
                 if name.endswith("_p_value")]
        console.print(f"{g['n_groups']} groups by {', '.join(g['by'])}: {len(g['rejecting'])} reject perfect calibration"
                      + (f"; {'; '.join(worst)}" if worst else ""))
    if "gate" in doc:
        console.print(f"gate --fail-on-reject: {'passed' if doc['gate']['passed'] else 'FAILED'}")


def register(app: typer.Typer) -> None:
    app.command("tcal")(cc.command(tcal))
