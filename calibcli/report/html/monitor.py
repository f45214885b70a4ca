"""The monitoring part of ``calibcli report --time-col`` (SPEC 12): every input monitored as ``calibcli monitor``
monitors it (the same run, :func:`calibcli.monitor.run.monitor`, on the same options), its picture drawn to SVG
for the page.

:func:`monitor_section` returns the report document's ``monitor`` section: ``files``, one entry per input, each
the document ``calibcli monitor FILE --json`` prints for the same options plus its ``figure`` (each monitored
metric over time, :func:`calibcli.monitor.plot.plot_monitor`). The page
shows the windows' table and the footer lines of ``calibcli monitor``'s own table (:func:`calibcli.monitor.render.
window_rows`, :func:`~calibcli.monitor.render.footer_lines`: the reference, every alert's reasons, the first window
of a persistent drift, the rules) and the picture.
"""

from __future__ import annotations

from dataclasses import replace

from calibcli.diagram import plot as dg
from calibcli.monitor import render as mr
from calibcli.monitor.family import Options
from calibcli.monitor.plot import plot_monitor, prepare_monitor_plot
from calibcli.monitor.run import check_inputs, monitor
from calibcli.report.html import svg_fragment

#: The monitor measures one binary problem: binary, or top-label (the report's marginal mode monitors the top label).
MONITOR_MODES = ("binary", "top-label")


def monitor_section(sources, options: Options, *, engine, reference=None) -> dict:
    """The report's ``monitor`` section: ``files``, one entry per input of ``sources`` (each FILES argument is its
    own series, as the report's other sections take it), each ``calibcli monitor --json``'s document for that
    input with ``figure`` (``svg``, ``panels``).
    ``options``: the monitor family's (checked already); ``engine``: a :class:`calibcli.engines.base.EngineChoice`;
    ``reference``: the ``--reference`` file's sources, or None."""
    files = []
    for number, path in enumerate(sources.files):
        doc = monitor(replace(sources, files=(path,)), options, engine, reference=reference)
        doc["figure"] = _figure(doc, prefix=f"m{number}-")
        files.append(doc)
    return {"files": files}


def check_section(sources, options: Options, *, reference=None) -> None:
    """What the section would fail on when it opens each input (:func:`calibcli.monitor.run.check_inputs`),
    checked before the report's work."""
    for path in sources.files:
        check_inputs(replace(sources, files=(path,)), options, reference)


def _figure(doc: dict, *, prefix: str) -> dict:
    """The monitor's picture (:func:`calibcli.monitor.plot.plot_monitor`, as ``--plot`` draws it) as SVG text."""
    fig = plot_monitor(prepare_monitor_plot(doc), by_time=doc["parameters"]["windows"]["by"] == "time")
    return {
        "svg": svg_fragment(dg.figure_bytes(fig, "svg").decode("utf-8"), prefix=prefix),
        "panels": list(doc["parameters"]["metrics"]),
    }


def monitor_lines(section: dict) -> list[str]:
    """One line per monitored input (and series) for the report's stderr summary: alerts, the drift's start."""
    out = []
    for doc in section["files"]:
        for drift in doc["drift"]:
            alerts = [w["alert"] for w in doc["windows"] if w["group"] == drift["group"] and w["alert"] is not None]
            group = mr.group_text(drift["group"])
            where = doc["input"]["path"] + (f" [{group}]" if group else "")
            since = f"drifting from {drift['from']} on" if drift["from"] is not None else "no persistent drift"
            out.append(f"monitor of {where}: {sum(alerts)} of {len(alerts)} tested windows alerted, {since}")
    return out
