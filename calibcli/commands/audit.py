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


Depth = Annotated[int, typer.Option("--depth", help="Intersections of up to this many segment columns.")]
MaxValues = Annotated[int, typer.Option("--max-values", help="Values kept per categorical column, the most frequent; the "
                                        "rest are one segment, 'other'.")]
SegmentBins = Annotated[int, typer.Option("--segment-bins", help="Quantile bins of a numeric column (one with more "
                                          "distinct values than this).")]
MinSegment = Annotated[int, typer.Option("--min-segment", help="Segments with fewer rows are counted, not tested.")]
Power = Annotated[float, typer.Option("--power", help="Power of the minimum detectable ECCE (mde) of each segment.")]
Adjust = Annotated[str, typer.Option("--adjust", help="Adjust the segments' p-values for their number: holm "
                                     "(family-wise), bh (false discovery rate), by, bonferroni or none.",
                                     metavar=cc.choices(*ADJUST_METHODS))]
MceMethod = Annotated[str, typer.Option("--mce-method", help="The MCE p-value over the segments tested: bonferroni "
                                        "(any overlap), sidak (independent segments) or none (MCGrad's unadjusted "
                                        "minimum).", metavar=cc.choices(*MCE_METHODS))]
Top = Annotated[int, typer.Option("--top", help="Segments shown in the table, the worst first (JSON: all).")]

#: The audit's options, declared once: ``calibcli audit`` and ``calibcli report --segment-cols`` take them
#: (:func:`audit_options_of` reads and checks them).
AUDIT = cc.OptionGroup("audit", (
    cc.Opt("depth", Depth, 2), cc.Opt("max_values", MaxValues, 10), cc.Opt("segment_bins", SegmentBins, 4),
    cc.Opt("min_segment", MinSegment, 100), cc.Opt("power", Power, 0.8), cc.Opt("adjust", Adjust, "holm"),
    cc.Opt("mce_method", MceMethod, "bonferroni"), cc.Opt("top", Top, 10)))
#: How the segments are formed (the rest of the group: how they are judged and shown).
_SEGMENTS = ("depth", "max_values", "segment_bins", "min_segment")


def audit_options_of(options: dict, *, alpha: float) -> AuditOptions:
    """The :data:`AUDIT` group's values of a command's ``options``, checked (one rule per option name, messages
    naming the flags)."""
    names = [o.name for o in AUDIT.options]
    values = {k: options[k] for k in names}
    check_options({"adjust": ADJUST_METHODS, "mce_method": MCE_METHODS}, alpha=alpha, **values)
    return AuditOptions(alpha=alpha, **{k: v for k, v in values.items() if k != "top"}).check()


@cc.with_groups(cc.own("segment_cols"), cc.COLUMNS, cc.READING, cc.DATASETS.only("pool", "batch_rows"), cc.ENGINE,
                cc.own("mode"), AUDIT.only(*_SEGMENTS), cc.BOOTSTRAP.only("alpha"),
                AUDIT.only(*(o.name for o in AUDIT.options if o.name not in _SEGMENTS)), cc.OWN,
                cc.OUTPUT.only("as_json", "fmt", "output"))
def audit(
    files: cc.Files,
    segment_cols: SegmentCols = None,
    mode: AuditMode = None,
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
    check_options({"mode": ("binary", "top-label")}, mode=mode, batch_rows=options["batch_rows"],
                  fail_above_sigma=fail_above_sigma)
    audit_options = audit_options_of(options, alpha=alpha)
    layout = cc.layout(options["fmt"], options["as_json"], False)  # the worst segments, not a row per entry
    sources = replace(cc.sources_of(files, options), segment_by=columns)
    doc, new = plan(mode=mode, columns=columns, options=audit_options, weighted=sources.spec.weight_col is not None,
                    pool=sources.pool, batch_rows=sources.batch_rows, engine=options["engine"],
                    fail_above_sigma=fail_above_sigma, fail_if_any_segment=fail_if_any_segment)
    doc["parameters"]["top"] = options["top"]
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
