"""Reports: the JSON document, atomic output, rich tables and CI gates (SPEC section 7).

Every command builds one JSON-able document (:func:`new_document`) and hands it to :func:`emit`,
which prints a table (the command's renderer) or the JSON on stdout and/or writes the JSON to a
file atomically. stdout carries data only; progress, warnings and gate messages go to stderr.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable

import numpy as np

from calibcli._version import __version__
from calibcli.errors import CalibcliError

SCHEMA_VERSION = 1


def new_document(command: str, parameters: dict) -> dict:
    """The common head of every report: tool, version, schema version, command, parameters."""
    return {
        "tool": "calibcli",
        "version": __version__,
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "parameters": parameters,
        "files": [],
    }


def jsonable(value):
    """Plain JSON types; non-finite floats become null (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def metric_json(m) -> dict:
    """A :class:`calibcli.estimators.Metric` (or any object with its fields) as a report entry."""
    out = {"estimate": m.estimate, "ci_low": m.ci_low, "ci_high": m.ci_high, "ci_method": m.ci_method}
    if getattr(m, "upper_bound", None) is not None:
        out["upper_bound"] = m.upper_bound
        out["upper_bound_method"] = m.upper_bound_method
    if getattr(m, "note", None):
        out["note"] = m.note
    return out


def to_json(doc: dict) -> str:
    return json.dumps(jsonable(doc), indent=2, allow_nan=False)


def check_output_path(path: str, flag: str | None = "--output") -> None:
    """Refuse an output path that cannot be written: a directory, a missing folder, no permission.

    Commands call it before any work (through :func:`calibcli.cli_common.command`, naming the option
    ``flag``), so a bad file option fails at once rather than after minutes of resampling.
    """
    where = f"{flag} {path}" if flag else f"cannot write {path}"
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CalibcliError(f"{where}: it is a directory: name a file (one inside it, for example)")
    if not os.path.isdir(folder):
        raise CalibcliError(f"{where}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CalibcliError(f"{where}: no permission to create files in {folder}")


def write_atomic(path: str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    A reader never sees a partly written file, and a failure leaves no file behind.
    """
    check_output_path(path, flag=None)  # commands have checked already; this guards other callers
    folder = os.path.dirname(os.path.abspath(path))
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=".calibcli-", dir=folder)
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


#: What ``--format`` can print on stdout.
FORMATS = ("table", "json", "markdown", "csv")


def emit(doc: dict, *, as_json: bool, output: str | None, render: Callable[[dict, object], None],
         fmt: str = "table") -> None:
    """Write the JSON to ``output`` (atomically) and print the report on stdout: the table (``render``),
    the JSON (``--json`` or ``--format json``), markdown or the tidy CSV (:func:`long_rows`)."""
    text = to_json(doc)
    if output:
        write_atomic(output, text + "\n")
    if as_json or fmt == "json":
        sys.stdout.write(text + "\n")
    elif fmt == "markdown":
        sys.stdout.write(render_markdown(doc))
    elif fmt == "csv":
        sys.stdout.write(render_csv(doc))
    else:
        render(doc, stdout_console())
        return
    sys.stdout.flush()


def stdout_console():
    """A rich console on stdout; colours follow NO_COLOR and whether stdout is a terminal."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def fmt_number(value, digits: int = 4) -> str:
    """Numbers in tables: 4 significant digits, '-' for missing."""
    if value is None:
        return "-"
    value = float(value)
    if not math.isfinite(value):
        return "nan"
    if value == 0:
        return "0"
    if abs(value) < 1e-3 or abs(value) >= 1e5:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def fmt_interval(low, high) -> str:
    if low is None or high is None:
        return "-"
    return f"[{fmt_number(low)}, {fmt_number(high)}]"


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
    return {**spec.describe(), "estimate": est, "ci_high": metric.get("ci_high"), "passed": not failures, "failures": failures}


def emit_with_gates(doc: dict, spec: GateSpec, *, as_json: bool, output: str | None, render, fmt: str = "table") -> None:
    """Summarise the gates, emit the report, then raise :class:`GateFailed` (exit 1) if a gate failed.

    The report is always written in full first, so a failed gate still leaves its evidence.
    """
    from calibcli.errors import GateFailed

    passed = finish_gates(doc, spec)
    emit(doc, as_json=as_json, output=output, render=render, fmt=fmt)
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
# Entries, groups and gates on typed results


def entry_label(entry: dict) -> str:
    """How an entry is named in messages: the input's path, and its group values when grouped."""
    path = entry["input"]["path"]
    group = entry.get("group")
    if not group:
        return path
    return f"{path} [{', '.join(f'{k}={v}' for k, v in group.items())}]"


def group_summary(entries: list[dict], headline: dict[str, dict]) -> dict:
    """Per metric, the worst group and the spread across groups (subgroup calibration).

    ``headline`` maps each entry's label to its headline metrics (JSON metric dicts); "worst" follows
    the metric's direction in :data:`calibcli.metrics.REGISTRY`.
    """
    from calibcli.metrics import REGISTRY, worse

    names = [n for n in next(iter(headline.values())) if REGISTRY.get(n) is None or REGISTRY[n].better != "none"]
    out = {}
    for name in names:
        values = [(label, m[name]["estimate"]) for label, m in headline.items() if m.get(name, {}).get("estimate") is not None]
        if not values:
            continue
        worst_label, worst_value = values[0]
        for label, value in values[1:]:
            if worse(name, value, worst_value):
                worst_label, worst_value = label, value
        estimates = [v for _, v in values]
        best = max(estimates) if name in REGISTRY and REGISTRY[name].better == "higher" else min(estimates)
        out[name] = {"worst_group": worst_label, "worst": worst_value, "best": best,
                     "spread": max(estimates) - min(estimates)}
    return out


# ---------------------------------------------------------------------------------------------
# One renderer: every command's entries as tidy rows, a table, markdown or CSV


#: Columns of the tidy (long) form of a report: one row per entry, problem and metric.
LONG_COLUMNS = ("file", "group", "problem", "metric", "estimate", "ci_low", "ci_high", "bound")


def entry_sections(entry: dict) -> list[tuple[str, dict]]:
    """The ``(problem, {metric: metric dict})`` sections of an entry, in report order: the marginal aggregate,
    each binary problem, the multiclass scores, and a command's headline metrics when it has no problems."""
    sections = []
    if "aggregate" in entry:
        sections.append(("aggregate", entry["aggregate"]["metrics"]))
    for q in entry.get("problems", []):
        if "metrics" in q:
            sections.append((q["name"], q["metrics"]))
    if "multiclass_scores" in entry:
        sections.append(("multiclass", entry["multiclass_scores"]))
    if not sections and entry.get("headline"):
        sections.append((entry.get("mode", ""), entry["headline"]))
    return sections


def long_rows(doc: dict) -> list[dict]:
    """The report as tidy rows (:data:`LONG_COLUMNS`), the same for every command."""
    rows = []
    for entry in doc["files"]:
        group = entry.get("group")
        group_text = ", ".join(f"{k}={v}" for k, v in group.items()) if group else ""
        for problem, metrics in entry_sections(entry):
            for name, m in metrics.items():
                rows.append({"file": entry["input"]["path"], "group": group_text, "problem": problem, "metric": name,
                             "estimate": m.get("estimate"), "ci_low": m.get("ci_low"), "ci_high": m.get("ci_high"),
                             "bound": m.get("upper_bound")})
    return rows


def render_csv(doc: dict) -> str:
    """The tidy rows as CSV (pandas reads it directly); numbers written so that they round-trip."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LONG_COLUMNS)
    for row in long_rows(doc):
        writer.writerow(["" if row[c] is None else (repr(float(row[c])) if isinstance(row[c], float) else row[c])
                         for c in LONG_COLUMNS])
    return buffer.getvalue()


def render_markdown(doc: dict) -> str:
    """The tidy rows as a GitHub-flavoured markdown table, the interval under the estimate's column."""
    p = doc["parameters"]
    level = f"{100 * (1 - p['alpha']):g}%" if isinstance(p.get("alpha"), (int, float)) else "CI"
    lines = [f"**calibcli {doc['command']}**", "", f"| file | group | problem | metric | estimate | {level} CI | bound |",
             "|---|---|---|---|---:|---:|---:|"]

    def cell(text: str) -> str:
        return str(text).replace("|", "\\|")

    for row in long_rows(doc):
        lines.append(f"| {cell(row['file'])} | {cell(row['group'])} | {cell(row['problem'])} | `{row['metric']}` | "
                     f"{fmt_number(row['estimate'])} | {fmt_interval(row['ci_low'], row['ci_high'])} | "
                     f"{fmt_number(row['bound']) if row['bound'] is not None else ''} |")
    if "gate" in doc:
        g = doc["gate"]
        lines += ["", f"Gate: **{'passed' if g['passed'] else 'failed'}**"] + [f"- {f}" for f in g.get("failures", [])]
    return "\n".join(lines) + "\n"


def render_metric_table(doc: dict, console, *, title: str, only: dict[str, tuple[str, ...]] | None = None,
                        detail=None) -> None:
    """The rich table every measuring command prints: one row per entry, problem and metric.

    ``only`` limits a section's metrics by problem kind (``{"class": (...)}`` for per-class rows of a
    marginal report); ``detail(name, metric_dict, problem_dict)`` gives the last column's text.
    """
    from rich.markup import escape
    from rich.table import Table

    p = doc["parameters"]
    level = f"{100 * (1 - p['alpha']):g}%"
    table = Table(title=title, title_justify="left")
    for col, just in (("file", "left"), ("problem", "left"), ("metric", "left"), ("estimate", "right"),
                      (f"{level} CI", "right"), ("bound / note", "left")):
        table.add_column(col, justify=just, overflow="fold")
    for entry in doc["files"]:
        label = escape(entry_label(entry))
        problems = {q["name"]: q for q in entry.get("problems", [])}
        first = True
        for problem, metrics in entry_sections(entry):
            keep = None
            if only and "aggregate" in entry and problem in problems:
                keep = only.get("class")
            for name, m in metrics.items():
                if keep is not None and name not in keep:
                    continue
                extra = detail(name, m, problems.get(problem)) if detail else ""
                table.add_row(label if first else "", problem, name, fmt_number(m.get("estimate")),
                              fmt_interval(m.get("ci_low"), m.get("ci_high")), extra)
                first = False
        table.add_section()
    console.print(table)
