"""``calibcli compare BASELINE CANDIDATE``: a model against a baseline, metric by metric, with CI gates.

The command parses options, opens both inputs and renders; :func:`calibcli.compare.run.compare_streams`
runs them through the pipeline of ``ece`` (and ``smece`` with ``--smece``) and replicates the
differences with a paired bootstrap when both score the same examples.
"""

from __future__ import annotations

from typing import Annotated

import typer

from calibcli.cli import options as cc
from calibcli.compare import family as compare_family
from calibcli.compare.document import check_gate_names, compare_document, threshold
from calibcli.compare.run import ID_ON_LOCAL_ONLY
from calibcli.core.documents import fmt_interval, fmt_number
from calibcli.core.errors import CalibcliError, GateFailed
from calibcli.core.safe_text import for_rich
from calibcli.core.validation import check_options
from calibcli.engines.pipeline import check_engine
from calibcli.report.emit import FORMATS, emit
from calibcli.report.render import print_whole, table_width


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
    chosen: compare_family.Options,
    **options,
) -> None:
    """Every metric of `ece` (and `smece` with --smece) for BASELINE and CANDIDATE, and candidate - baseline with a
    bootstrap interval: paired (the same multiplicity for the same example in both) when both score the same
    examples, matched by --id-col or by row order; unpaired otherwise, and said so.

    Example: calibcli compare old.parquet new.parquet --fail-if-worse ece_l1_plugin
    """
    fmt, input_format, batch_rows = options["fmt"], options["input_format"], options["batch_rows"]
    check_options({"fmt": FORMATS}, fmt=fmt)
    by = [threshold(item) for item in chosen.fail_if_worse_by or []]
    gates = list(chosen.fail_if_worse or [])
    check_gate_names(gates + [name for name, _ in by], chosen.smece)  # before any reading (again on the report after)
    engine = cc.engine_of(options)
    check_engine(engine.name, engine.scheduler, engine.workers)
    if chosen.id_col and engine.name != "local":
        raise CalibcliError(ID_ON_LOCAL_ONLY.format(engine=engine.name))  # before any reading
    spec = cc.spec_of(options)
    doc, failures = compare_document(
        baseline,
        candidate,
        chosen,
        spec=spec,
        engine=engine,
        gated=(gates, by),
        reading={"input_format": input_format, "drop_invalid": options["drop_invalid"], "batch_rows": batch_rows},
    )
    emit(doc, as_json=options["as_json"], output=options["output"], render=render_compare, fmt=fmt)
    if failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


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
    verdicts = [verdict(c) for c in doc["comparison"].values()]
    longest_word = max([len("verdict")] + [len(word) for v in verdicts for word in v.split()])
    table.add_column("verdict", justify="left", min_width=longest_word)  # wraps at spaces, never within a word
    cells = [
        [
            name,
            fmt_number(c["baseline"]),
            fmt_number(c["candidate"]),
            f"{c['difference']:+.4g}\n{fmt_interval(c['ci_low'], c['ci_high'])}",  # the interval under the difference
        ]
        for name, c in doc["comparison"].items()
    ]
    for row, said in zip(cells, verdicts, strict=True):
        table.add_row(for_rich(row[0]), *row[1:], said)
    headers = ["metric", "baseline", "candidate", f"difference\n{level} CI"]
    need = table_width([[h, *(row[j] for row in cells)] for j, h in enumerate(headers)] + [["x" * longest_word]])
    print_whole(console, table, need)  # (fits 100 columns; on a narrower terminal, wider than it rather than cut)
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
