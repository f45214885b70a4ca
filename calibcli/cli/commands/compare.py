"""``calibcli compare BASELINE CANDIDATE``: a model against a baseline, metric by metric, with CI gates.

The command parses options, opens both inputs and renders; :func:`calibcli.compare.run.compare_streams`
runs them through the pipeline of ``ece`` (and ``smece`` with ``--smece``) and replicates the
differences with a paired bootstrap when both score the same examples.
"""

from __future__ import annotations

import re
from typing import Annotated

import typer

from calibcli.cli import options as cc
from calibcli.compare import family as compare_family
from calibcli.compare.paired_bootstrap import worse_by
from calibcli.compare.run import ID_ON_LOCAL_ONLY, ID_PAIRING_LIMIT, compare_streams
from calibcli.core.binning import EDGE_CONVENTION
from calibcli.core.documents import new_document
from calibcli.core.errors import CalibcliError, GateFailed, warn
from calibcli.core.modes import default_mode
from calibcli.core.registry import REGISTRY, describe
from calibcli.core.safe_text import for_rich
from calibcli.core.validation import check_options
from calibcli.ece_family.accumulator import BinnedOptions
from calibcli.engines.pipeline import check_engine, engine_runner
from calibcli.io.formats import detect_format, read_schema, unreadable
from calibcli.io.sources import resolve_datasets
from calibcli.report.emit import FORMATS, emit
from calibcli.report.entries import fmt_interval, fmt_number
from calibcli.smooth.inputs import SmoothOptions

#: The entry of the differences in the report's ``files`` (so the tidy renderers show them as rows).
DIFFERENCE_PATH = "candidate - baseline"


@cc.with_groups(
    cc.COLUMNS,
    cc.READING,
    cc.DATASETS.only("batch_rows"),
    cc.ENGINE,
    cc.OWN,
    cc.BOOTSTRAP,
    cc.OUTPUT.only("as_json", "fmt", "output"),
    declared=compare_family.Options,
)
def compare(
    baseline: Annotated[
        str,
        typer.Argument(
            help="The baseline's predictions: a file, a directory of shards, a quoted glob, '-'.",
            show_default=False,
            metavar="BASELINE",
        ),
    ],
    candidate: Annotated[
        str,
        typer.Argument(help="The candidate's predictions, in the same forms.", show_default=False, metavar="CANDIDATE"),
    ],
    **options,
) -> None:
    """Every metric of `ece` (and `smece` with --smece) for BASELINE and CANDIDATE, and candidate - baseline with a
    bootstrap interval: paired (the same multiplicity for the same example in both) when both score the same
    examples, matched by --id-col or by row order; unpaired otherwise, and said so.

    Example: calibcli compare old.parquet new.parquet --fail-if-worse ece_l1_plugin
    """
    fmt, input_format, batch_rows = options["fmt"], options["input_format"], options["batch_rows"]
    check_options({"fmt": FORMATS}, fmt=fmt)
    chosen = compare_family.Options.of(options)  # the choices and rules checked here, once
    id_col, pairing, mode, class_weights = chosen.id_col, chosen.pairing, chosen.mode, chosen.class_weights
    n_bins, strategy, smece, fail_if_worse = chosen.n_bins, chosen.strategy, chosen.smece, chosen.fail_if_worse
    n_boot, alpha, seed = chosen.n_boot, chosen.alpha, chosen.seed
    by = [_threshold(item) for item in chosen.fail_if_worse_by or []]
    gates = list(fail_if_worse or [])
    _check_gate_names(gates + [name for name, _ in by], smece)  # before any reading (again on the report after)
    engine = cc.engine_of(options)
    check_engine(engine.name, engine.scheduler, engine.workers)
    if id_col and engine.name != "local":
        raise CalibcliError(ID_ON_LOCAL_ONLY.format(engine=engine.name))  # before any reading
    spec = cc.spec_of(options)
    datasets = [resolve_datasets([path])[0] for path in (baseline, candidate)]  # both resolved before any reading
    group_by = (id_col,) if id_col else ()
    if id_col:
        for d in datasets:
            _check_id_column(d, id_col, input_format)
    streams = [
        d.open(
            spec,
            input_format=input_format,
            drop_invalid=options["drop_invalid"],
            batch_rows=batch_rows,
            group_by=group_by,
        )
        for d in datasets
    ]
    used_mode = mode or default_mode(streams[0].n_classes)
    binned = BinnedOptions(
        n_bins=n_bins, strategy=strategy, n_boot=n_boot, alpha=alpha, seed=seed, class_weights=class_weights
    )
    smooth = SmoothOptions(n_boot=n_boot, alpha=alpha, seed=seed, class_weights=class_weights) if smece else None
    with engine_runner(engine.name, engine.scheduler, engine.workers) as runner:  # a cluster lives for the run
        try:
            run = compare_streams(
                streams[0],
                streams[1],
                binned,
                mode_a=used_mode,
                smooth_options=smooth,
                id_column=id_col,
                pairing=pairing,
                engine=runner,
            )
        except CalibcliError as exc:
            raise _as_id_problem(exc, id_col) from None
    for entry in run.entries:  # the input section names the ID column it read beside the data
        entry["input"]["group_by"] = []
    for name in gates + [name for name, _ in by]:
        _check_gate_metric(name, run.comparison)
    doc = new_document(
        "compare",
        {
            "baseline": baseline,
            "candidate": candidate,
            "n_bins": n_bins,
            "strategy": strategy,
            "edges_convention": EDGE_CONVENTION,
            "mode": used_mode,
            "class_weights": class_weights,
            "smece": smece,
            "n_boot": n_boot,
            "alpha": alpha,
            "confidence_level": 1.0 - alpha,
            "seed": seed,
            "seeds": run.seeds,
            "pairing": {
                **run.pairing.to_dict(),
                "asked": pairing,
                "id_pairing_limit": ID_PAIRING_LIMIT if id_col else None,
            },
            "bootstrap": "Poisson, keyed by (seed, global row index): paired replicates per row while the rows are "
            "kept, from joint per-bin sufficient statistics beyond; unpaired inputs use independent seeds",
            "estimators": describe("binned"),
            "weights": "frequency weights" if spec.weight_col else None,
            "batch_rows": batch_rows,
            "gates": {"fail_if_worse": gates, "fail_if_worse_by": dict(by)} if gates or by else None,
            "engine": engine.name,
            "workers": runner.workers,
        },
    )
    doc["files"] = run.entries + [_difference_entry(run.comparison, used_mode)]
    doc["comparison"] = run.comparison
    if not run.pairing.paired:
        warn(
            f"{baseline} and {candidate} are compared unpaired ({run.pairing.reason}): the intervals of the "
            f"differences treat them as independent samples"
        )
    failures = _gate_failures(run.comparison, gates, by, baseline, candidate, alpha)
    if gates or by:
        doc["gate"] = {
            "fail_if_worse": gates,
            "fail_if_worse_by": dict(by),
            "passed": not failures,
            "failures": failures,
        }
    emit(doc, as_json=options["as_json"], output=options["output"], render=render_compare, fmt=fmt)
    if failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


def _threshold(item: str) -> tuple[str, float]:
    """``METRIC=X`` of --fail-if-worse-by."""
    name, sep, value = item.partition("=")
    try:
        x = float(value) if sep else None
    except ValueError:
        x = None
    if not name.strip() or x is None or not (x >= 0.0) or x == float("inf"):
        raise CalibcliError(
            f"--fail-if-worse-by is {item!r}: expected METRIC=X with X a number >= 0, for example ece_l1_plugin=0.01"
        )
    return name.strip(), x


_EMPTY_GROUP_VALUE = re.compile(
    r"(?P<where>.*): row (?P<row>\d+), column (?P<column>.*): the group-by value is empty: "
)


def _as_id_problem(exc: CalibcliError, id_col: str | None) -> CalibcliError:
    """The ID column is read through the group-by machinery, whose message for an empty cell speaks of
    --group-by: said of the ID instead (as a NaN ID is, in :mod:`calibcli.compare.run`)."""
    found = _EMPTY_GROUP_VALUE.match(exc.template) if id_col else None
    if found is None or found["column"] != id_col:
        return exc
    return CalibcliError(
        f"{found['where']}: row {found['row']}, column {found['column']}: the ID is empty (missing): "
        f"every row needs an ID to pair examples by {{opt:id_col}}"
    )


def _check_id_column(dataset, id_col: str, input_format) -> None:
    """The ID column is in the first file of the dataset (the message names the option, not a group-by)."""
    location = dataset.locations()[0]
    path = dataset.files[0]
    fmt = detect_format("-" if location == "-" else path, input_format)
    try:
        names = list(read_schema(location, fmt).names)
    except CalibcliError:
        raise
    except Exception as exc:  # a duplicated header name, unreadable bytes: worded as every reader words them
        raise unreadable(path, fmt, exc, location) from None
    if id_col not in names and id_col not in dataset.partition_kinds:
        raise CalibcliError(f"{path}: no column {id_col!r} (given by --id-col); the file has columns {names}")


def _check_gate_names(names: list[str], smece: bool) -> None:
    """Gate metrics that no report of this command can have fail at once, before minutes of reading."""
    families = {"tcal", "clinical_test"} | (set() if smece else {"smooth"})
    known = [n for n, m in REGISTRY.items() if m.family not in families]
    for name in names:
        if not smece and name in REGISTRY and REGISTRY[name].family == "smooth":
            raise CalibcliError(f"{name} is compared with --smece: add --smece to gate on it")
        if name not in REGISTRY or REGISTRY[name].family in families:
            raise CalibcliError(f"no metric {name!r} to gate on: expected one of {', '.join(known)}")


def _check_gate_metric(name: str, comparison: dict) -> None:
    if name not in comparison:
        raise CalibcliError(f"no metric {name!r} to gate on: expected one of {', '.join(comparison)}")
    if comparison[name]["better"] == "none":
        raise CalibcliError(f"{name} has no better direction (a part of a decomposition): gate on another metric")


def _gate_failures(
    comparison: dict, gates: list[str], by: list[tuple[str, float]], baseline: str, candidate: str, alpha: float
) -> list[str]:
    level = f"{100 * (1 - alpha):g}%"
    out = []

    def says(name: str, c: dict) -> str:
        return (
            f"{candidate} (candidate) is worse than {baseline} (baseline) on {name}: {fmt_number(c['candidate'])} vs "
            f"{fmt_number(c['baseline'])}, difference {c['difference']:+.4g} ({level} CI "
            f"{fmt_interval(c['ci_low'], c['ci_high'])}{', paired' if c['paired'] else ', unpaired'})"
        )

    for name in gates:
        c = comparison[name]
        if c["worse"] and c["significant"]:
            out.append(says(name, c) + " (--fail-if-worse: the interval excludes 0)")
    for name, x in by:
        c = comparison[name]
        by_how_much = worse_by(name, c["baseline"], c["candidate"])
        if by_how_much > x:
            out.append(says(name, c) + f" (--fail-if-worse-by: worse by {by_how_much:.4g} > {x:g})")
    return out


def _difference_entry(comparison: dict, mode: str) -> dict:
    """The differences as a report entry, so that the tidy renderers (CSV, markdown) list them as rows."""
    return {
        "input": {"path": DIFFERENCE_PATH},
        "role": "difference",
        "mode": mode,
        "headline": {
            name: {
                "estimate": c["difference"],
                "ci_low": c["ci_low"],
                "ci_high": c["ci_high"],
                "ci_method": c["ci_method"],
            }
            for name, c in comparison.items()
        },
    }


def verdict(c: dict) -> str:
    """A comparison row's verdict: better / worse (significant or not), or no direction."""
    if c["better"] == "none":
        return "-"
    if c["difference"] == 0:
        return "equal"
    word = "worse" if c["worse"] else "better"
    if c["ci_low"] is None:
        return word
    return f"{word} (significant)" if c["significant"] else f"{word} (not significant)"


def render_compare(doc: dict, console) -> None:
    """The table of a comparison: metric | baseline | candidate | difference | CI | verdict."""
    from rich.table import Table

    p = doc["parameters"]
    level = f"{100 * (1 - p['alpha']):g}%"
    pairing = p["pairing"]
    how = {
        "id": f"paired by ID column {for_rich(pairing['id_column'])}",
        "order": "paired by row order",
        "none": "unpaired",
    }[pairing["by"]]
    boot = (
        f"{p['n_boot']} bootstrap resamples, {level} percentile intervals, seed {p['seed']}"
        if p["n_boot"]
        else "no bootstrap"
    )
    title = (
        f"calibcli compare: candidate - baseline; {p['n_bins']} {p['strategy']} bins, mode {p['mode']}; {how}; {boot}"
    )
    table = Table(title=title, title_justify="left")
    widest = max([len(name) for name in doc["comparison"]] + [6])
    for col, just in (
        ("metric", "left"),
        ("baseline", "right"),
        ("candidate", "right"),
        (f"difference\n{level} CI", "right"),
    ):  # names and numbers are never broken
        table.add_column(
            col,
            justify="left" if just == "left" else "right",
            no_wrap=True,
            min_width=widest if col == "metric" else None,
        )
    table.add_column("verdict", justify="left")  # wraps at spaces
    for name, c in doc["comparison"].items():  # the interval under the difference: fits 100 columns
        table.add_row(
            for_rich(name),
            fmt_number(c["baseline"]),
            fmt_number(c["candidate"]),
            f"{c['difference']:+.4g}\n{fmt_interval(c['ci_low'], c['ci_high'])}",
            verdict(c),
        )
    console.print(table)
    rows = {f["role"]: f["input"].get("rows_used") for f in doc["files"] if f.get("family") == "ece"}
    console.print(
        f"baseline {for_rich(p['baseline'])}: {rows.get('baseline')} rows; candidate {for_rich(p['candidate'])}: "
        f"{rows.get('candidate')} rows; {how} ({for_rich(pairing['reason'])})"
    )
    unpaired = [n for n, c in doc["comparison"].items() if c["ci_low"] is not None and not c["paired"]]
    if pairing["paired"] and unpaired:
        console.print(f"unpaired intervals for {', '.join(unpaired)} (see ci_method in the JSON report)")
    if "gate" in doc:
        g = doc["gate"]
        console.print(f"gate: {'passed' if g['passed'] else 'FAILED'}")


def register(app: typer.Typer) -> None:
    app.command("compare")(cc.command(compare))
