"""The segment audit's part of ``calibcli report --segment-cols`` (SPEC 9): every input audited as
``calibcli audit`` audits it (the same family plan, accumulator and options), and the binned reliability diagrams of
the whole population beside those of the worst tested segments, drawn to SVG for the page.

:func:`audit_section` returns the report document's ``audit`` section: the audit's parameters (as ``calibcli audit
--json`` prints them) and one entry per input (every segment, worst first, as ``audit --json`` has them) with its
figure. The page shows the worst ``top`` segments in a table, and the figure.
"""

from __future__ import annotations

import json

from calibcli.audit.family import plan
from calibcli.core.documents import segment_text, to_json
from calibcli.diagram import plot as dg
from calibcli.diagram.data import DiagramPanel
from calibcli.engines.pipeline import engine_runner
from calibcli.report.html import svg_fragment

#: The worst tested segments whose diagrams are drawn beside the whole population's (a figure of 4 panels).
SEGMENT_DIAGRAMS = 3
#: The audit measures one binary problem: binary, or top-label (marginal mode audits the top label).
AUDIT_MODES = ("binary", "top-label")


def audit_section(streams: list, sources, options, *, engine: dict) -> dict:
    """The report's ``audit`` section: ``parameters`` (the audit's) and ``files``, one entry per input with
    ``audit --json``'s numbers and ``figure`` (``svg``, the ``panels`` drawn: the whole population, then the worst
    tested segments). ``streams``: ``sources`` opened (with the segment columns); ``options``: the audit family's
    (:class:`calibcli.audit.options.Options`), checked already."""
    made = plan(options, sources, engine["engine"], diagrams=SEGMENT_DIAGRAMS)
    doc, new = made.doc, made.new
    doc["parameters"]["diagrams"] = (
        f"binned ({options.n_bins} uniform bins, Wilson bands) of the whole "
        f"population and of the {SEGMENT_DIAGRAMS} worst tested segments"
    )
    with engine_runner(engine["engine"], engine["scheduler"], engine["workers"]) as runner:
        doc["parameters"]["workers"] = runner.workers
        for number, stream in enumerate(streams):
            accumulators, described = runner.run(stream, lambda stream=stream: new(stream))
            for _, acc in accumulators:  # one per input: the audit does not split by group
                report = acc.result()
                entry = {
                    "input": described,
                    **report.to_dict(),
                    "headline": {},
                }  # as calibcli.engines.pipeline.add_entries
                # beyond the rows it holds the audit keeps sums, not rows: no segment diagrams then
                entry["figure"] = _figure(report.diagrams, prefix=f"a{number}-") if report.diagrams else None
                doc["files"].append(entry)
    return json.loads(to_json(doc))  # as the command prints it


def _figure(diagrams, *, prefix: str) -> dict:
    """The whole population's and the worst segments' binned diagrams as small multiples, one SVG."""
    panels = [DiagramPanel(title=_title(d.definition), binned=(d.data,)) for d in diagrams]
    fig = dg.plot_diagram(panels, kind="binned")
    return {
        "svg": svg_fragment(dg.figure_bytes(fig, "svg").decode("utf-8"), prefix=prefix),
        "panels": [segment_text(d.definition) for d in diagrams],
    }


def _title(definition: dict) -> str:
    """A panel's title: the segment's values (a small multiple is narrow; the caption names the columns), or the
    whole population. :func:`calibcli.diagram.plot.plot_diagram` makes it safe for matplotlib."""
    return ", ".join(str(v) for v in definition.values()) if definition else "whole population"


def worst_segments(entry: dict, top: int) -> list[dict]:
    """The ``top`` worst segments of an audit entry, the whole population left out (it has its own line)."""
    return [s for s in entry["segments"] if s["definition"]][:top]


def audit_lines(section: dict) -> list[str]:
    """One line per audited input for the report's stderr summary: MCE, its p-value, the worst segment."""
    out = []
    for entry in section["files"]:
        worst = worst_segments(entry, 1)
        if entry.get("mce_sigma") is None:
            out.append(f"audit of {entry['input']['path']}: no segment tested (each under --min-segment rows)")
            continue
        out.append(
            f"audit of {entry['input']['path']}: MCE {entry['mce_sigma']:.3g} sigma "
            f"(p {entry['mce_pvalue']:.3g}, "
            f"{entry['n_segments_tested']} segments tested)"
            + (f", worst segment {segment_text(worst[0]['definition'])}" if worst else "")
        )
    return out
