"""``calibcli monitor``: calibration over time windows against a reference, with alerts of a stated false-alarm
rate (SPEC 12). The work is :func:`calibcli.monitor.run.monitor`; this module parses, renders and gates."""

from __future__ import annotations

import sys

import typer

from calibcli.cli import options as cc
from calibcli.core.documents import to_json
from calibcli.core.errors import GateFailed
from calibcli.core.outputs import stdout_claimed
from calibcli.core.safe_text import for_rich
from calibcli.monitor import family
from calibcli.monitor import render as mr
from calibcli.monitor.plot import save_plot
from calibcli.monitor.run import monitor as run
from calibcli.report.emit import write_atomic
from calibcli.report.render import fit_columns, print_whole, stdout_console

OUTPUT = cc.OUTPUT.only("as_json", "fmt", "output")


@cc.with_groups(
    cc.COLUMNS,
    cc.READING,
    cc.DATASETS.only("group_by", "batch_rows"),
    cc.ENGINE,
    cc.OWN,
    cc.BOOTSTRAP,
    OUTPUT,
    declared=family.Options,
)
def monitor(files: cc.Files, chosen: family.Options, **options) -> None:
    """Is it drifting? Calibration per time window (--time-col ts --every 7D, or --chunk-rows N), each window's
    SmoothECE and calibration-in-the-large with intervals, a test of perfect calibration and a comparison with
    a reference (the first windows, the windows before a date, or a file), p-values adjusted over the series
    (Holm: family-wise false-alarm rate <= alpha), an alert per window with its reasons and the window from
    which the drift persists. FILES (a directory of daily files, hive partitions, globs, stdin) are one series,
    streamed in flat memory. See the guide "Monitoring calibration in production" (docs/monitoring.md).

    Example: calibcli monitor sample_data/monitor/scores.parquet --time-col ts --every 7D --reference-windows 4"""
    reference = None
    if chosen.reference is not None:
        reference = cc.sources_of([chosen.reference], options)
    doc = run(cc.sources_of(files, options), chosen, cc.engine_of(options), reference=reference)
    if chosen.plot is not None:
        save_plot(doc, chosen.plot)
        sys.stderr.write(
            f"wrote {chosen.plot}: {len(doc['parameters']['metrics'])} panel(s), {len(doc['windows'])} windows\n"
        )
    _emit(doc, fmt="json" if options["as_json"] else options["fmt"], output=options["output"])
    if chosen.fail_on_alert and doc["alerts"]:
        raise GateFailed(f"Gate failed: {doc['alerts']} window(s) alerted (--fail-on-alert)")


def _emit(doc: dict, *, fmt: str, output: str | None) -> None:
    text = to_json(doc)
    if output:
        write_atomic(output, text + "\n", "output")
    if stdout_claimed():
        return
    if fmt == "json":
        sys.stdout.write(text + "\n")
    elif fmt == "markdown":
        sys.stdout.write(mr.render_markdown(doc))
    elif fmt == "csv":
        sys.stdout.write(mr.render_csv(doc))
    else:
        from rich.table import Table

        header, rows = mr.window_cells(doc)
        table = Table(title=f"calibcli monitor: {for_rich(doc['input']['path'])}")
        console = stdout_console()
        widths = fit_columns([[name, *(r[j] for r in rows)] for j, name in enumerate(header)], console.width)
        for name, width in zip(header, widths, strict=True):  # (cells wrap between words, never within one)
            table.add_column(name, width=width)
        for row in rows:
            table.add_row(*(for_rich(c) for c in row))
        print_whole(console, table, sum(w + 3 for w in widths) + 1)  # wider than the terminal rather than cut
        for line in mr.footer_lines(doc):
            console.print(for_rich(line))
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    app.command("monitor")(cc.command(monitor))
