"""Reports: the JSON document, atomic output, rich tables and CI gates (SPEC section 7).

Every command builds one JSON-able document (:func:`new_document`) and hands it to :func:`emit`,
which prints a table (the command's renderer) or the JSON on stdout and/or writes the JSON to a
file atomically. stdout carries data only; progress, warnings and gate messages go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from calibcli.core.documents import (
    to_json,
)
from calibcli.core.errors import GateFailed
from calibcli.core.gates import GateSpec, finish_gates
from calibcli.core.outputs import stdout_claimed, write_output
from calibcli.io.targets import check_output_target
from calibcli.report import render as rd


def check_output_path(path: str, flag: str | None = "--output", inputs=()) -> None:
    """Refuse an output path that cannot be written (a directory, a missing folder, no permission) or
    that is one of ``inputs`` (``(what, argument)`` pairs): :func:`calibcli.io.targets.check_output_target`.

    Commands call it before any work (through :func:`calibcli.cli.options.command`, naming the option
    ``flag``), so a bad file option fails at once rather than after minutes of resampling.
    """
    check_output_target(path, flag.lstrip("-").replace("-", "_") if flag else None, inputs)


def write_atomic(path: str, data: bytes | str, option: str | None = None) -> None:
    """Write ``data`` to ``path`` (``option`` names it in errors): :func:`calibcli.core.outputs.write_output`
    ('-' is stdout; a regular file is replaced through a temporary file and a rename, so a reader never
    sees a partly written file and a failure leaves no file behind; a link's target is replaced; a
    device is written straight to)."""
    write_output(path, data, option)


#: What ``--format`` can print on stdout.
FORMATS = ("table", "json", "markdown", "csv")


@dataclass(frozen=True)
class Layout:
    """How the report is shown on stdout: ``--format``, ``--json``, ``--summary``, ``--metrics``, ``--sort``."""

    fmt: str = "table"
    summary: bool | None = None
    metrics: tuple[str, ...] | None = None
    sort: str | None = None

    @classmethod
    def of(
        cls,
        fmt: str = "table",
        as_json: bool = False,
        summary: bool | None = None,
        metrics=None,
        sort: str | None = None,
    ) -> Layout:
        return cls("json" if as_json else fmt, summary, tuple(metrics) if metrics else None, sort)


def emit(
    doc: dict,
    *,
    as_json: bool = False,
    output: str | None = None,
    fmt: str = "table",
    layout: Layout | None = None,
    render: Callable[[dict, object], None] | None = None,
) -> None:
    """Write the JSON to ``output`` (atomically) and print the report on stdout in its layout: the table
    or the batch summary (:func:`calibcli.report.render.render_table`), the JSON, markdown or the tidy CSV.

    ``--metrics`` and ``--sort`` are checked against the report before anything is written.
    """
    layout = layout or Layout.of(fmt, as_json)
    if layout.metrics or layout.sort:
        rd.check_metric_names(doc, list(layout.metrics or ()), layout.sort)
    as_json = as_json or layout.fmt == "json"
    text = to_json(doc) if output or as_json else ""  # (the text only where it goes: 0.3 s for 1,000 groups)
    if output:
        write_atomic(output, text + "\n", "output")

    if stdout_claimed():  # a file went to stdout ('-o -'): it carries nothing else
        return
    metrics = list(layout.metrics) if layout.metrics else None
    if as_json:
        sys.stdout.write(text + "\n")
    elif layout.fmt == "markdown":
        sys.stdout.write(rd.render_markdown(doc, summary=layout.summary, metrics=metrics, sort=layout.sort))
    elif layout.fmt == "csv":
        sys.stdout.write(rd.render_csv(doc))
    else:
        console = rd.stdout_console()
        if render is not None:
            render(doc, console)
        else:
            rd.render_table(doc, console, summary=layout.summary, metrics=metrics, sort=layout.sort)
        return
    sys.stdout.flush()


# ---------------------------------------------------------------------------------------------
# Gates


def emit_with_gates(
    doc: dict,
    spec: GateSpec,
    *,
    as_json: bool = False,
    output: str | None = None,
    render=None,
    fmt: str = "table",
    layout: Layout | None = None,
) -> None:
    """Summarise the gates, emit the report, then raise :class:`GateFailed` (exit 1) if a gate failed.

    The report is always written in full first, so a failed gate still leaves its evidence.
    """
    passed = finish_gates(doc, spec)
    emit(doc, as_json=as_json, output=output, render=render, fmt=fmt, layout=layout)
    if not passed:
        raise GateFailed("Gate failed: " + "; ".join(doc["gate"]["failures"]))


# ---------------------------------------------------------------------------------------------
# Groups
