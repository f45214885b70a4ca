"""``calibcli audit``: where is the model miscalibrated? The multicalibration audit over segments (SPEC 9).

The command parses the audit family's options (declared once in :mod:`calibcli.audit.family`), runs the
pipeline over the inputs and renders the worst segments first; the gates name the failing segments.
"""

from __future__ import annotations

from dataclasses import replace

import typer

from calibcli.audit import family as audit_family
from calibcli.audit.options import Options
from calibcli.cli import options as cc
from calibcli.engines.pipeline import run
from calibcli.report.emit import emit


@cc.with_groups(
    cc.own("segment_cols"),
    cc.COLUMNS,
    cc.READING,
    cc.DATASETS.only("pool", "batch_rows"),
    cc.ENGINE,
    cc.own("mode", "depth", "max_values", "segment_bins", "min_segment"),
    cc.BOOTSTRAP.only("alpha"),
    cc.OWN,
    cc.OUTPUT.only("as_json", "fmt", "output"),
    declared=Options,
)
def audit(files: cc.Files, chosen: Options, **options) -> None:
    """Where is it miscalibrated? Every segment of --segment-cols and their intersections up to --depth: the
    cumulative calibration error ECCE-R on its noise scale with p-values adjusted for the number of segments,
    observed/expected, the minimum detectable miscalibration, and MCE, the worst segments first.

    Example: calibcli audit sample_data/ads_segments.csv --segment-cols country,device,age --fail-if-any-segment"""
    layout = cc.layout(options["fmt"], options["as_json"], False)  # the worst segments, not a row per entry
    sources = replace(cc.sources_of(files, options), segment_by=chosen.columns)
    doc = run(audit_family.FAMILY, sources, chosen, cc.engine_of(options))
    emit(doc, output=options["output"], layout=layout)
    audit_family.check_gate(doc)


def register(app: typer.Typer) -> None:
    app.command("audit")(cc.command(audit))
