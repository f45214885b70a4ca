"""Reports: the JSON document, atomic output, rich tables and CI gates (SPEC section 7).

Every command builds one JSON-able document (:func:`new_document`) and hands it to :func:`emit`,
which prints a table (the command's renderer) or the JSON on stdout and/or writes the JSON to a
file atomically. stdout carries data only; progress, warnings and gate messages go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from calibcli import render as rd
from calibcli.documents import (  # noqa: F401  (the document's shapes, where commands have always found them)
    SCHEMA_VERSION,
    jsonable,
    metric_json,
    new_document,
    to_json,
)
from calibcli.errors import CalibcliError, GateFailed
from calibcli.io.targets import check_output_target
from calibcli.outputs import stdout_claimed, write_output
from calibcli.registry import REGISTRY, worse
from calibcli.render import (  # noqa: F401  (the renderer's names, where commands have always found them)
    entry_label,
    entry_sections,
    fmt_interval,
    fmt_number,
    long_rows,
    render_csv,
    render_markdown,
    render_metric_table,
    stderr_console,
    stdout_console,
)


def check_output_path(path: str, flag: str | None = "--output", inputs=()) -> None:
    """Refuse an output path that cannot be written (a directory, a missing folder, no permission) or
    that is one of ``inputs`` (``(what, argument)`` pairs): :func:`calibcli.io.targets.check_output_target`.

    Commands call it before any work (through :func:`calibcli.cli_common.command`, naming the option
    ``flag``), so a bad file option fails at once rather than after minutes of resampling.
    """
    check_output_target(path, flag.lstrip("-").replace("-", "_") if flag else None, inputs)


def write_atomic(path: str, data: bytes | str, option: str | None = None) -> None:
    """Write ``data`` to ``path`` (``option`` names it in errors): :func:`calibcli.outputs.write_output`
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
    or the batch summary (:func:`calibcli.render.render_table`), the JSON, markdown or the tidy CSV.

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


@dataclass(frozen=True)
class GateSpec:
    """``--fail-above`` / ``--fail-above-upper`` on one metric (``--metric``)."""

    metric: str
    fail_above: float | None = None
    fail_above_upper: float | None = None

    @property
    def active(self) -> bool:
        return self.fail_above is not None or self.fail_above_upper is not None

    def describe(self) -> dict:
        return {"metric": self.metric, "fail_above": self.fail_above, "fail_above_upper": self.fail_above_upper}


def check_gate(spec: GateSpec, file_label: str, metric: dict | None) -> dict:
    """Evaluate the gate on one file's headline metric (a JSON metric dict); returns the verdict."""
    if metric is None:
        raise CalibcliError(f"--metric {spec.metric}: no such metric in the report of {file_label}")
    failures = []
    est = metric.get("estimate")
    if spec.fail_above is not None and est is not None and est > spec.fail_above:
        failures.append(f"{file_label}: {spec.metric} = {est:.6g} > {spec.fail_above:g} (--fail-above)")
    if spec.fail_above_upper is not None:
        upper = metric.get("ci_high")
        if upper is None:
            raise CalibcliError(
                f"--fail-above-upper needs a confidence interval for {spec.metric}, but none was computed: "
                f"pass --n-boot N (N > 0)"
            )
        if upper > spec.fail_above_upper:
            failures.append(
                f"{file_label}: upper end of the confidence interval of {spec.metric} = {upper:.6g} > "
                f"{spec.fail_above_upper:g} (--fail-above-upper)"
            )
    return {
        **spec.describe(),
        "estimate": est,
        "ci_high": metric.get("ci_high"),
        "passed": not failures,
        "failures": failures,
    }


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


def finish_gates(doc: dict, spec: GateSpec) -> bool:
    """Summarise the per-file gate verdicts into ``doc['gate']``; True when every file passed."""
    if not spec.active:
        return True
    verdicts = [f["gate"] for f in doc["files"] if "gate" in f]
    passed = all(v["passed"] for v in verdicts)
    doc["gate"] = {**spec.describe(), "passed": passed, "failures": [m for v in verdicts for m in v["failures"]]}
    return passed


# ---------------------------------------------------------------------------------------------
# Groups


def group_summary(entries: list[dict], headline: dict[str, dict]) -> dict:
    """Per metric, the worst group and the spread across groups (subgroup calibration).

    ``headline`` maps each entry's label to its headline metrics (JSON metric dicts); "worst" follows
    the metric's direction in :data:`calibcli.metrics.REGISTRY`.
    """
    names = [n for n in next(iter(headline.values())) if REGISTRY.get(n) is None or REGISTRY[n].better != "none"]
    out = {}
    for name in names:
        values = [
            (label, m[name]["estimate"]) for label, m in headline.items() if m.get(name, {}).get("estimate") is not None
        ]
        if not values:
            continue
        worst_label, worst_value = values[0]
        for label, value in values[1:]:
            if worse(name, value, worst_value):
                worst_label, worst_value = label, value
        estimates = [v for _, v in values]
        best = max(estimates) if name in REGISTRY and REGISTRY[name].better == "higher" else min(estimates)
        out[name] = {
            "worst_group": worst_label,
            "worst": worst_value,
            "best": best,
            "spread": max(estimates) - min(estimates),
        }
    return out
