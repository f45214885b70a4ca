"""``calibcli selective``: when can I trust the answer? The risk-coverage curve, AURC, E-AURC, AUGRC, risk at
coverage, coverage at risk and AUROC of the confidence, with bootstrap intervals and gates (docs/guides/llm.md).

The command parses the selective family's options (:mod:`calibcli.llm.family`), runs the pipeline over the
inputs (LLM dumps with ``--from``, or any table of predictions), gates, renders, and draws the diagram when asked.
"""

from __future__ import annotations

import typer

from calibcli.cli import options as cc
from calibcli.core.errors import CalibcliError, GateFailed
from calibcli.diagram.plot import figure_bytes, format_of
from calibcli.engines.pipeline import run
from calibcli.io.loaded import read_whole_table
from calibcli.llm import family as selective_family
from calibcli.llm.paired import answers_of, paired_difference
from calibcli.llm.plot import plot_risk_coverage, prepare_risk_coverage
from calibcli.report.emit import emit, write_atomic


@cc.with_groups(
    cc.COLUMNS,
    cc.READING,
    cc.DATASETS,
    cc.ENGINE,
    cc.OWN,
    cc.BOOTSTRAP,
    cc.OUTPUT,
    cc.GATES,
    declared=selective_family.Options,
)
def selective(files: cc.Files, chosen: selective_family.Options, **options) -> None:
    """How often is the model wrong among the answers it is most sure of? The risk-coverage curve, aurc, e_aurc,
    augrc, risk_at_coverage_q, coverage_at_risk_t and the auroc of confidence for correctness, with bootstrap
    intervals; ties in confidence as blocks. LLM evaluation dumps with --from (docs/guides/llm.md) or any predictions.

    Example: calibcli selective sample_data/llm/lm_eval --fail-above 0.6"""
    layout = cc.layout_of(options)
    if chosen.diagram:
        format_of(chosen.diagram)  # a bad extension fails before any reading
    doc = run(selective_family.FAMILY, cc.sources_of(files, options), chosen, cc.engine_of(options))
    if chosen.against:
        add_comparison(doc, chosen)
    failures = selective_family.gate(doc, chosen)
    if chosen.diagram:
        figure = plot_risk_coverage(prepare_risk_coverage(doc))
        write_atomic(chosen.diagram, figure_bytes(figure, format_of(chosen.diagram)), "diagram")
        doc["diagram"] = chosen.diagram
    emit(doc, output=options["output"], layout=layout)
    if failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


def add_comparison(doc: dict, chosen) -> None:
    """Every entry's metrics minus the baseline's (``--against``), as a section ``candidate - baseline``."""
    (baseline,) = [read_whole_table(chosen.against)[0]]
    base = answers_of(baseline, chosen.against)
    for entry in doc["files"]:
        if entry.get("group") is not None:
            raise CalibcliError("--against compares whole inputs: drop --group-by")
        table, _, display = read_whole_table(entry["input"]["path"])
        diff = paired_difference(base, answers_of(table, display), chosen.selective)
        entry["problems"].append({"name": "candidate - baseline", "metrics": {k: m.to_dict() for k, m in diff.items()}})
    doc["parameters"]["against"] = chosen.against


def register(app: typer.Typer) -> None:
    app.command("selective")(cc.command(selective))
