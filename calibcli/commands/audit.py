"""``calibcli audit``: where is the model miscalibrated? The multicalibration audit over segments (SPEC 9).

The command parses options, plans the audit family (:mod:`calibcli.families.audit`), runs the pipeline over
the inputs and renders the worst segments first; the gates name the failing segments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Optional

import typer

from calibcli import cli_common as cc
from calibcli.audit import AuditOptions
from calibcli.errors import CalibcliError, GateFailed
from calibcli.families.audit import gate_failures, plan
from calibcli.multitest import ADJUST_METHODS, MCE_METHODS
from calibcli.report import GateSpec, emit
from calibcli.validation import check_options

SegmentCols = Annotated[
    Optional[str],
    typer.Option("--segment-cols", help="Columns whose values (and their intersections) define the segments, "
                 "comma-separated: categorical columns by value, numeric ones by quantile bins.", show_default=False),
]
AuditMode = Annotated[
    Optional[str],
    typer.Option("--mode", help="binary, or top-label (the confidence of the predicted class against whether it was "
                 "right). Default: binary for one or two probability columns, top-label for K > 2.",
                 metavar=cc.choices("binary", "top-label")),
]


@cc.with_groups(cc.own("segment_cols"), cc.COLUMNS, cc.READING, cc.DATASETS.only("pool", "batch_rows"), cc.ENGINE,
                cc.own("mode", "depth", "max_values", "segment_bins", "min_segment"), cc.BOOTSTRAP.only("alpha"), cc.OWN,
                cc.OUTPUT.only("as_json", "fmt", "output"))
def audit(
    files: cc.Files,
    segment_cols: SegmentCols = None,
    mode: AuditMode = None,
    depth: Annotated[int, typer.Option("--depth", help="Intersections of up to this many segment columns.")] = 2,
    max_values: Annotated[int, typer.Option("--max-values", help="Values kept per categorical column, the most "
                                            "frequent; the rest are one segment, 'other'.")] = 10,
    segment_bins: Annotated[int, typer.Option("--segment-bins", help="Quantile bins of a numeric column (one with more "
                                              "distinct values than this).")] = 4,
    min_segment: Annotated[int, typer.Option("--min-segment", help="Segments with fewer rows are counted, not "
                                             "tested.")] = 100,
    power: Annotated[float, typer.Option("--power", help="Power of the minimum detectable ECCE (mde) of each "
                                         "segment.")] = 0.8,
    adjust: Annotated[str, typer.Option("--adjust", help="Adjust the segments' p-values for their number: holm "
                                        "(family-wise), bh (false discovery rate), by, bonferroni or none.",
                                        metavar=cc.choices(*ADJUST_METHODS))] = "holm",
    mce_method: Annotated[str, typer.Option("--mce-method", help="The MCE p-value over the segments tested: "
                                            "bonferroni (any overlap), sidak (independent segments) or none "
                                            "(MCGrad's unadjusted minimum).", metavar=cc.choices(*MCE_METHODS))]
    = "bonferroni",
    top: Annotated[int, typer.Option("--top", help="Segments shown in the table, the worst first (JSON: all).")] = 10,
    fail_above_sigma: Annotated[Optional[float], typer.Option("--fail-above-sigma", help="Exit 1 when MCE (the "
                                                              "worst tested segment's ECCE-R/sigma) exceeds this.")]
    = None,
    fail_if_any_segment: Annotated[bool, typer.Option("--fail-if-any-segment", help="Exit 1 when any segment's "
                                                      "adjusted p-value is at most --alpha.")] = False,
    **options,
) -> None:
    """Where is it miscalibrated? Every segment of --segment-cols and their intersections up to --depth: the
    cumulative calibration error ECCE-R on its noise scale with p-values adjusted for the number of segments,
    observed/expected, the minimum detectable miscalibration, and MCE, the worst segments first.

    Example: calibcli audit sample_data/ads_segments.csv --segment-cols country,device,age --fail-if-any-segment"""
    columns = cc.split_columns(segment_cols)
    if not columns:
        raise CalibcliError("--segment-cols names no column: name the columns that define the segments, "
                            "e.g. --segment-cols country,device")
    alpha = options["alpha"]
    check_options({"mode": ("binary", "top-label"), "adjust": ADJUST_METHODS, "mce_method": MCE_METHODS}, mode=mode,
                  adjust=adjust, mce_method=mce_method, depth=depth, max_values=max_values, segment_bins=segment_bins,
                  min_segment=min_segment, alpha=alpha, power=power, top=top, batch_rows=options["batch_rows"],
                  fail_above_sigma=fail_above_sigma)
    layout = cc.layout(options["fmt"], options["as_json"], False)  # the worst segments, not a row per entry
    audit_options = AuditOptions(depth=depth, max_values=max_values, segment_bins=segment_bins,
                                 min_segment=min_segment, alpha=alpha, power=power, adjust=adjust,
                                 mce_method=mce_method).check()
    sources = replace(cc.sources_of(files, options), segment_by=columns)
    doc, new = plan(mode=mode, columns=columns, options=audit_options, weighted=sources.spec.weight_col is not None,
                    pool=sources.pool, batch_rows=sources.batch_rows, engine=options["engine"],
                    fail_above_sigma=fail_above_sigma, fail_if_any_segment=fail_if_any_segment)
    doc["parameters"]["top"] = top
    cc.run(cc.Plan(doc, new, GateSpec("mce_sigma"), 0), sources, cc.engine_of(options))
    _headline(doc)
    failures = gate_failures(doc, fail_above_sigma=fail_above_sigma, fail_if_any_segment=fail_if_any_segment,
                             alpha=alpha)
    if doc["parameters"]["gate"] is not None:
        doc["gate"] = {**doc["parameters"]["gate"], "passed": not failures, "failures": failures}
    emit(doc, output=options["output"], layout=layout)
    if failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


def _headline(doc: dict) -> None:
    """The audit's headline at the top of the document, so scripts read ``.mce_sigma`` whatever the inputs: the
    input with the largest MCE (the only one, usually), named by ``input``."""
    entries = [e for e in doc["files"] if e.get("mce_sigma") is not None]
    if not entries:
        return
    worst = max(entries, key=lambda e: e["mce_sigma"])
    doc.update(input=worst["input"]["path"], mce_sigma=worst["mce_sigma"], mce_pvalue=worst["mce_pvalue"],
               mce_relative=worst["mce_relative"], n_segments_tested=worst["n_segments_tested"],
               segments=worst["segments"])


def register(app: typer.Typer) -> None:
    app.command("audit")(cc.command(audit))
