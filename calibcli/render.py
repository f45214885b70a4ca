"""One renderer for every command's report: tables, the batch summary, markdown and tidy CSV (SPEC 7).

A report document (:func:`calibcli.report.new_document`) holds entries (one per file, dataset or
group); every entry exposes its numbers as *sections*, ``(problem, {metric: metric dict})``, whatever
the command (:func:`entry_sections`). Everything printed is made from those sections:

- the metric table (``--format table``): one row per entry, problem and metric;
- the batch summary (``--summary``, the default beyond :data:`SUMMARY_AUTO` entries): one row per
  entry, the chosen metrics (``--metrics``) as columns with the interval under each estimate, sorted
  by ``--sort``, names shortened to their shortest unique path suffix;
- markdown (pull requests, ``$GITHUB_STEP_SUMMARY``) in either layout, and the tidy long CSV.

What differs between commands (the title line, a line per entry, a command's own detail table) is
described by a :class:`View` in :data:`VIEWS`, not drawn by the command.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Callable

#: Columns of the tidy (long) form of a report: one row per entry, problem and metric.
LONG_COLUMNS = ("file", "group", "problem", "metric", "estimate", "ci_low", "ci_high", "bound")

#: Beyond this many summary rows the summary is the default table layout.
SUMMARY_AUTO = 3

Section = tuple[str, dict]


# ---------------------------------------------------------------------------------------------
# Numbers


def fmt_number(value, digits: int = 4) -> str:
    """Numbers in tables: 4 significant digits, '-' for missing."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
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


def _metric(estimate, *, note: str | None = None, **extra) -> dict:
    """A number that is not a bootstrap estimate (a p-value, a fitted parameter) as a metric dict."""
    out = {"estimate": estimate, "ci_low": None, "ci_high": None, "ci_method": None}
    if note:
        out["note"] = note
    out.update(extra)
    return out


# ---------------------------------------------------------------------------------------------
# Sections: every command's numbers in one shape


def _scalar_items(d, prefix: str = ""):
    """Numeric leaves of a nested parameter dict, with dotted names (lists of numbers are skipped)."""
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _scalar_items(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        for j, v in enumerate(d):
            yield from _scalar_items(v, f"{prefix}[{j}]")
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        yield prefix, d


def entry_sections(entry: dict) -> list[Section]:
    """The ``(problem, {metric: metric dict})`` sections of an entry, in report order, for every command:

    - ``ece`` / ``smece``: the marginal aggregate, each binary problem, the multiclass scores;
    - ``diagram``: each drawn curve's metrics (binned and smooth);
    - ``recalibrate evaluate``: each method's metrics and its test's p-value;
    - ``recalibrate fit``: the fitted map's scalar parameters and its certificate's bounds;
    - otherwise (``tcal``, ``compare``): the entry's headline metrics.
    """
    sections: list[Section] = []
    if "aggregate" in entry:
        sections.append(("aggregate", entry["aggregate"]["metrics"]))
    for q in entry.get("problems", []):
        if "metrics" in q:
            sections.append((q["name"], q["metrics"]))
    if "multiclass_scores" in entry:
        sections.append(("multiclass", entry["multiclass_scores"]))
    for c in entry.get("curves", []):
        metrics = {}
        for part in ("binned", "smooth"):
            if part in c:
                metrics.update(c[part]["metrics"])
        sections.append((c["problem"], metrics))
    for r in entry.get("rows", []):
        metrics = dict(r["metrics"])
        if "test" in r:
            t = r["test"]
            metrics["test_p_value"] = _metric(t["p_value"], note=t["test"], reject=t["reject"])
        sections.append((r["method"], metrics))
    if "params" in entry and "method" in entry:
        metrics = {f"param {k}": _metric(v) for k, v in _scalar_items(entry["params"])}
        cert = entry.get("certificate")
        if cert:
            metrics["expected_ece_bound"] = _metric(cert["expected_ece_bound"], note="E[ECE] bound (Thm 12.6)")
            metrics["ece_bound"] = _metric(cert["ece_bound"], note=f"ECE bound, prob. {1 - cert['delta']:g} (Thm 12.6)")
        sections.append((entry["method"], metrics))
    if not sections and entry.get("headline"):
        sections.append((entry.get("mode", ""), entry["headline"]))
    return sections


def summary_sections(entry: dict) -> list[Section]:
    """The sections a summary row shows: the aggregate (marginal) or the entry's problem(s), with the
    multiclass scores merged in; per method or per curve where a command has several."""
    sections = entry_sections(entry)
    if "aggregate" in entry or entry.get("problems"):
        main = [s for s in sections if s[0] not in ("multiclass",)]
        if "aggregate" in entry:
            main = [s for s in main if s[0] == "aggregate"]
        extra = dict(entry.get("multiclass_scores", {}))
        return [(name, {**metrics, **extra}) for name, metrics in main]
    return sections


def group_text(entry: dict) -> str:
    group = entry.get("group")
    return ", ".join(f"{k}={v}" for k, v in group.items()) if group else ""


def entry_label(entry: dict) -> str:
    """How an entry is named in messages: the input's path, and its group values when grouped."""
    path = entry["input"]["path"]
    group = group_text(entry)
    return f"{path} [{group}]" if group else path


def shortest_unique_suffixes(paths: list[str]) -> dict[str, str]:
    """Each path shortened to its last components, as few as keep the names distinct (never cut mid-name)."""
    parts = {p: [c for c in p.replace("\\", "/").split("/") if c] or [p] for p in set(paths)}
    out = {}
    for p, comps in parts.items():
        for k in range(1, len(comps) + 1):
            tail = comps[-k:]
            clash = [q for q, other in parts.items() if q != p and other[-k:] == tail]
            if not clash:
                break
        out[p] = p if k == len(comps) else "/".join(comps[-k:])
    return out


# ---------------------------------------------------------------------------------------------
# The tidy long form: CSV and markdown


def long_rows(doc: dict) -> list[dict]:
    """The report as tidy rows (:data:`LONG_COLUMNS`), the same for every command."""
    rows = []
    for entry in doc["files"]:
        for problem, metrics in entry_sections(entry):
            for name, m in metrics.items():
                rows.append({"file": entry["input"]["path"], "group": group_text(entry), "problem": problem, "metric": name,
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


def _level(doc: dict) -> str:
    alpha = doc["parameters"].get("alpha")
    return f"{100 * (1 - alpha):g}%" if isinstance(alpha, (int, float)) else ""


def _md(text) -> str:
    return str(text).replace("|", "\\|")


def render_markdown(doc: dict, *, summary: bool | None = None, metrics: list[str] | None = None,
                    sort: str | None = None) -> str:
    """A GitHub-flavoured markdown table: the long form (one row per metric, the interval beside the
    estimate), or the summary (one row per entry, an estimate and its interval per metric column)."""
    level = _level(doc) or "CI"
    lines = [f"**calibcli {doc['command']}**", ""]
    table = summary_table(doc, metrics=metrics, sort=sort) if use_summary(doc, summary) else None
    if table is not None:
        lines.append("| " + " | ".join(table.labels + [f"`{m}`" for m in table.metrics]) + " |")
        lines.append("|" + "---|" * len(table.labels) + "---:|" * len(table.metrics))
        for row in table.rows:
            cells = [_md(v) for v in row.labels]
            for m in row.values:
                est = fmt_number(m.get("estimate")) if m else "-"
                ci = fmt_interval(m.get("ci_low"), m.get("ci_high")) if m else "-"
                cells.append(est if ci == "-" else f"{est} {ci}")
            lines.append("| " + " | ".join(cells) + " |")
        if any(row.values for row in table.rows):
            lines += ["", f"Estimates with {level} intervals in brackets."]
    else:
        lines += [f"| file | group | problem | metric | estimate | {level} CI | bound |", "|---|---|---|---|---:|---:|---:|"]
        for row in long_rows(doc):
            lines.append(f"| {_md(row['file'])} | {_md(row['group'])} | {_md(row['problem'])} | `{row['metric']}` | "
                         f"{fmt_number(row['estimate'])} | {fmt_interval(row['ci_low'], row['ci_high'])} | "
                         f"{fmt_number(row['bound']) if row['bound'] is not None else ''} |")
    if "gate" in doc:
        g = doc["gate"]
        lines += ["", f"Gate: **{'passed' if g['passed'] else 'failed'}**"] + [f"- {_md(f)}" for f in g.get("failures", [])]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The summary layout: one row per entry (and method or curve), metrics as columns


@dataclass
class SummaryRow:
    labels: list[str]
    values: list[dict | None]
    entry: dict


@dataclass
class SummaryTable:
    labels: list[str]
    metrics: list[str]
    rows: list[SummaryRow] = field(default_factory=list)


def use_summary(doc: dict, summary: bool | None) -> bool:
    """``--summary`` / ``--no-summary``; by default the summary beyond :data:`SUMMARY_AUTO` rows, and
    always for commands whose report is a comparison of rows (``recalibrate evaluate``)."""
    if summary is not None:
        return summary
    view = VIEWS.get(doc["command"])
    if view is not None and view.summary_always:
        return True
    return sum(len(summary_sections(e)) for e in doc["files"]) > SUMMARY_AUTO


def available_metrics(doc: dict) -> list[str]:
    names: dict[str, None] = {}
    for entry in doc["files"]:
        for _, metrics in summary_sections(entry):
            names.update(dict.fromkeys(metrics))
    return list(names)


def check_metric_names(doc: dict, names: list[str] | None, sort: str | None) -> None:
    """Refuse ``--metrics`` / ``--sort`` names the report does not have, listing those it has."""
    from calibcli.errors import OptionError

    have = available_metrics(doc)
    for option, wanted in (("metrics", names or []), ("sort", [sort] if sort else [])):
        unknown = [n for n in wanted if n not in have]
        if unknown:
            raise OptionError(option, f"{{name}} names {', '.join(repr(n) for n in unknown)}, which this report does not have: "
                                      f"expected some of {', '.join(have)}")


def default_metrics(doc: dict) -> list[str]:
    """The view's headline metrics that the report has: of each ``a|b`` alternative, the first present."""
    have = available_metrics(doc)
    view = VIEWS.get(doc["command"])
    chosen = []
    for alternatives in (view.summary_metrics if view else ()):
        found = next((n for n in alternatives.split("|") if n in have), None)
        if found:
            chosen.append(found)
    return chosen or have[:4]


def summary_table(doc: dict, *, metrics: list[str] | None = None, sort: str | None = None) -> SummaryTable:
    """The summary rows: names (shortest unique suffix), group, problem/method where it varies, the metrics."""
    from calibcli.metrics import REGISTRY

    if metrics:
        metrics = list(metrics)
    else:  # the defaults, led by the metric the rows are sorted by
        metrics = default_metrics(doc)
        if sort:
            metrics = [sort] + [m for m in metrics if m != sort]
    short = shortest_unique_suffixes([e["input"]["path"] for e in doc["files"]])
    pairs = [(entry, problem, values) for entry in doc["files"] for problem, values in summary_sections(entry)]
    has_group = any(entry.get("group") for entry, _, _ in pairs)
    problems = {problem for _, problem, _ in pairs}
    view = VIEWS.get(doc["command"])
    problem_label = view.problem_label if view else "problem"
    labels = ["file"] + (["group"] if has_group else []) + ([problem_label] if len(problems) > 1 or (view and view.summary_always) else [])
    table = SummaryTable(labels=labels, metrics=metrics)
    for entry, problem, values in pairs:
        row = [short[entry["input"]["path"]]]
        if has_group:
            row.append(group_text(entry))
        if len(labels) > len(row):
            row.append(problem)
        table.rows.append(SummaryRow(labels=row, values=[values.get(m) for m in metrics], entry=entry))
    if sort:
        info = REGISTRY.get(sort)
        better = info.better if info is not None else "lower"
        j = metrics.index(sort) if sort in metrics else None

        def key(row: SummaryRow):
            m = row.values[j] if j is not None else next((v for _, v in summary_sections(row.entry)), {}).get(sort)
            est = (m or {}).get("estimate")
            if est is None:
                return (1, 0.0)
            if better == "target":  # closest to the calibrated value first
                return (0, abs(est - info.target))
            return (0, -est if better == "higher" else est)

        table.rows.sort(key=key)  # best first; missing values last (a stable sort keeps the given order among ties)
    return table


# ---------------------------------------------------------------------------------------------
# Rich tables on a terminal


def terminal_width() -> int | None:
    """The width tables fit: ``COLUMNS`` when set (also when piped), the terminal's width, else 160."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return None
    return 160


def stdout_console():
    """A rich console on stdout; colours follow NO_COLOR and whether stdout is a terminal."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=terminal_width())


def stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _wrap_name(name: str, width: int) -> str:
    """Break a path over lines at '/' only, each line at most ``width`` where the components allow."""
    if len(name) <= width or "/" not in name:
        return name
    lines, current = [], ""
    for comp in name.split("/"):
        piece = comp if not current else "/" + comp
        if current and len(current) + len(piece) > width:
            lines.append(current)
            current = "/" + comp
        else:
            current += piece
    lines.append(current)
    return "\n".join(lines)


def _fit_names(names: list[str], budget: int) -> tuple[list[str], int]:
    """Wrap names at '/' to fit ``budget`` columns (never below the longest path component)."""
    if not names:
        return names, 0
    floor = max(len(c) + 1 for n in names for c in n.split("/"))
    width = max(budget, floor)
    wrapped = [_wrap_name(n, width) for n in names]
    return wrapped, max(len(line) for w in wrapped for line in w.splitlines())


def _summary_cells(table: SummaryTable) -> list[list[str]]:
    return [[fmt_number(m.get("estimate")) + ("" if m.get("ci_low") is None else "\n" + fmt_interval(m.get("ci_low"), m.get("ci_high")))
             if m else "-" for m in row.values] for row in table.rows]


def _summary_width(table: SummaryTable, cells: list[list[str]], name_width: int) -> int:
    """Characters a rich table of these columns takes: each column its width + 2 padding + 1 rule, + 1 rule."""
    widths = [max([len(table.metrics[j])] + [len(line) for c in cells for line in c[j].splitlines()])
              for j in range(len(table.metrics))]
    other = [max([len(table.labels[i])] + [len(r.labels[i]) for r in table.rows]) for i in range(1, len(table.labels))]
    return sum(w + 3 for w in widths) + sum(w + 3 for w in other) + max(name_width, 4) + 3 + 1


def print_summary(doc: dict, console, table: SummaryTable, *, title: str | None, chosen: bool = False) -> None:
    """The summary as a rich table that fits the console: numbers never broken, names broken only at '/'.

    When the default columns do not fit, the last ones are left out (and the caption says how to ask
    for them); columns chosen with ``--metrics`` are all shown, wider than the terminal if need be.
    """
    from rich.markup import escape
    from rich.table import Table

    total = console.width or 160
    names = [r.labels[0] for r in table.rows]
    cells = _summary_cells(table)
    fixed = _summary_width(table, cells, 0) - 4  # everything but the name column
    floor = max([4] + [len(c) + 1 for n in names for c in n.split("/")])
    dropped: list[str] = []
    while not chosen and len(table.metrics) > 1 and fixed + floor + 3 > total:
        dropped.insert(0, table.metrics.pop())
        for row, c in zip(table.rows, cells):
            row.values.pop()
            c.pop()
        fixed = _summary_width(table, cells, 0) - 4
    wrapped, name_width = _fit_names(names, total - fixed - 3)
    level = _level(doc)
    notes = []
    if any(m and m.get("ci_low") is not None for r in table.rows for m in r.values):
        notes.append(f"estimate, {level} interval below")
    if dropped:
        notes.append(f"{', '.join(dropped)} left out to fit {total} columns: choose with --metrics")
    if title:
        console.print(escape(title), soft_wrap=True)
    out = Table()
    out.add_column("file", no_wrap=True, min_width=name_width)
    for label in table.labels[1:]:
        out.add_column(label, no_wrap=True)
    for name in table.metrics:
        out.add_column(name, justify="right", no_wrap=True)
    for row, name, values in zip(table.rows, wrapped, cells):
        out.add_row(escape(name), *[escape(v) for v in row.labels[1:]], *values)
    need = _summary_width(table, cells, name_width)
    if need > total:  # rather wider than the terminal than a broken name or number
        from rich.console import Console

        wide = Console(file=console.file, highlight=False, soft_wrap=False, width=need, no_color=console.no_color,
                       force_terminal=console.is_terminal)
        wide.print(out)
    else:
        console.print(out)
    if notes:
        console.print(escape("; ".join(notes)), soft_wrap=True)


def print_metric_table(doc: dict, console, view: "View") -> None:
    """The long table: one row per entry, problem and metric, with a detail column."""
    from rich.markup import escape
    from rich.table import Table

    level = _level(doc)
    short = shortest_unique_suffixes([e["input"]["path"] for e in doc["files"]])
    if view.title:
        console.print(escape(view.title(doc)), soft_wrap=True)
    table = Table()
    for col, just, wrap in (("file", "left", False), (view.problem_label, "left", False), ("metric", "left", False),
                            ("estimate", "right", False), (f"{level} CI".strip(), "right", False),
                            ("bound / note", "left", True)):
        table.add_column(col, justify=just, no_wrap=not wrap, overflow="fold")
    for entry in doc["files"]:
        group = group_text(entry)
        label = escape(short[entry["input"]["path"]] + (f" [{group}]" if group else ""))
        problems = {q["name"] for q in entry.get("problems", [])}
        first = True
        for problem, metrics in entry_sections(entry):
            keep = view.per_class if ("aggregate" in entry and problem in problems) else None
            for name, m in metrics.items():
                if keep is not None and name not in keep:
                    continue
                extra = view.detail(doc, name, m, problem, entry) if view.detail else (m.get("note") or "")
                table.add_row(label if first else "", escape(str(problem)), name, fmt_number(m.get("estimate")),
                              fmt_interval(m.get("ci_low"), m.get("ci_high")), escape(extra or ""))
                first = False
        table.add_section()
    console.print(table)


def render_table(doc: dict, console, *, summary: bool | None = None, metrics: list[str] | None = None,
                 sort: str | None = None) -> None:
    """Every command's table: its title, the metric table or the summary, its per-entry lines and detail
    tables, and the group and gate lines."""
    from rich.markup import escape

    view = VIEWS.get(doc["command"], View())
    for line in view.head(doc) if view.head else []:
        console.print(escape(line), soft_wrap=True)
    if use_summary(doc, summary):
        print_summary(doc, console, summary_table(doc, metrics=metrics, sort=sort),
                      title=view.title(doc) if view.title else None, chosen=bool(metrics))
        lines_of = view.summary_lines
    else:
        if view.metric_table and any(entry_sections(e) for e in doc["files"]):
            print_metric_table(doc, console, view)
        lines_of = view.entry_lines
    for entry in doc["files"]:
        for line in lines_of(doc, entry) if lines_of else []:
            console.print(escape(line), soft_wrap=True)
        if view.tables and not use_summary(doc, summary):
            for t in view.tables(doc, entry):
                _print_detail_table(console, t)
    for line in view.tail(doc) if view.tail else []:
        console.print(escape(line), soft_wrap=True)
    if "groups" in doc and view.group_line:
        line = view.group_line(doc)
        if line:
            console.print(escape(line), soft_wrap=True)
    if "gate" in doc:
        g = doc["gate"]
        name = f"on {g['metric']}" if g.get("metric") else "--fail-on-reject"
        console.print(f"gate {name}: {'passed' if g['passed'] else 'FAILED'}")


@dataclass
class DetailTable:
    """A command's own table of details (T-Cal's levels, the binomial test's values, a fit's parameters)."""

    columns: list[tuple[str, str]]  # (name, "left" | "right")
    rows: list[list[str]]
    title: str | None = None


def _print_detail_table(console, t: DetailTable) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=t.title, title_justify="left")
    for name, just in t.columns:
        table.add_column(escape(name), justify=just, overflow="fold")
    for row in t.rows:
        table.add_row(*[escape(c) for c in row])
    console.print(table)


# ---------------------------------------------------------------------------------------------
# What differs between commands


@dataclass
class View:
    """How one command's report reads: everything else is the shared renderer's."""

    title: Callable[[dict], str] | None = None
    head: Callable[[dict], list[str]] | None = None
    entry_lines: Callable[[dict, dict], list[str]] | None = None
    summary_lines: Callable[[dict, dict], list[str]] | None = None
    tables: Callable[[dict, dict], list[DetailTable]] | None = None
    #: The last column's text: ``detail(doc, metric name, metric dict, section name, entry)``.
    detail: Callable[[dict, str, dict, str, dict], str] | None = None
    tail: Callable[[dict], list[str]] | None = None
    group_line: Callable[[dict], str | None] | None = None
    per_class: tuple[str, ...] | None = None
    #: Summary columns by default; ``"a|b"``: the first of a and b that the report has.
    summary_metrics: tuple[str, ...] = ()
    summary_always: bool = False
    problem_label: str = "problem"
    #: False when the command's own detail table already shows every number (``recalibrate fit``).
    metric_table: bool = True


def _problem(entry: dict, section: str) -> dict | None:
    return next((q for q in entry.get("problems", []) if q["name"] == section), None)


def _rows_text(entry: dict) -> str:
    i = entry["input"]
    return f"{entry['rows_in_group']} rows in the group of {i['rows_used']}" if "group" in entry else f"{i['rows_used']} rows"


def _dropped_text(i: dict) -> str:
    if not i.get("rows_dropped"):
        return ""
    reasons = ", ".join(f"{k}: {v}" for k, v in i.get("dropped_reasons", {}).items())
    return f", dropped {i['rows_dropped']}" + (f" ({reasons})" if reasons else "")


def _columns_text(i: dict) -> str:
    cols = i["columns"]
    return (f"probabilities {', '.join(cols['probabilities'])}{' (logits)' if cols['logits'] else ''}, labels {cols['label']}"
            f"{', weights ' + cols['weight'] if cols['weight'] else ''} (columns chosen by {cols['chosen_by']})")


def _boot_text(p: dict, what: str = "") -> str:
    if not p.get("n_boot"):
        return "no bootstrap"
    return f"{p['n_boot']} bootstrap resamples{what}, {_level({'parameters': p})} percentile intervals, seed {p['seed']}"


def _worst_group_line(doc: dict, name: str) -> str | None:
    g = doc["groups"]["metrics"].get(name)
    if not g:
        return None
    return (f"{doc['groups']['n_groups']} groups by {', '.join(doc['groups']['by'])}: worst {name} {fmt_number(g['worst'])} "
            f"in {g['worst_group']}; spread {fmt_number(g['spread'])}")


# ece ------------------------------------------------------------------------------------------

#: Metrics shown per class in marginal mode (the aggregate shows every metric).
ECE_PER_CLASS = ("ece_l1_plugin", "ece_l2_plugin", "ece_max_plugin", "ece_l2_sq_debiased_kumar", "ece_l2_sq_debiased_dpe")


def _ece_title(doc: dict) -> str:
    p = doc["parameters"]
    return f"calibcli ece: {p['n_bins']} {p['strategy']} bins, {_boot_text(p)}"


def _ece_detail(doc, name, m, section, entry) -> str:
    if m.get("upper_bound") is not None:
        return f"upper bound {fmt_number(m['upper_bound'])} (delta={doc['parameters']['bound_delta']:g})"
    if name == "ece_l2_sq_sun_interval":
        return "Sun et al. interval"
    return m.get("note") or ""


def _ece_lines(doc, f) -> list[str]:
    i = f["input"]
    nonempty = sorted({q["bins"]["n_bins_nonempty"] for q in f["problems"] if "bins" in q})
    bins = ""
    if nonempty:
        bins = f"; {nonempty[0] if len(nonempty) == 1 else f'{nonempty[0]}-{nonempty[-1]} (per class)'} non-empty bins"
    return [f"{entry_label(f)}: {_rows_text(f)}{_dropped_text(i)}; mode {f['mode']}; K={i['n_classes']}; "
            f"{_columns_text(i)}{bins}"]


def _gate_metric(doc: dict, default: str) -> str:
    return (doc["parameters"].get("gate") or {}).get("metric", default)


# smece ----------------------------------------------------------------------------------------


def _smece_title(doc: dict) -> str:
    p = doc["parameters"]
    bandwidth = "sigma* = fixed point" if p["sigma"] == "fixed point" else f"sigma = {p['sigma']:g}"
    how = " (bandwidth re-solved on each)" if p["sigma"] == "fixed point" else " (fixed sigma)"
    return f"calibcli smece: {bandwidth}; {_boot_text(p, how)}"


def _smece_detail(doc, name, m, section, entry) -> str:
    problem = _problem(entry, section)
    if problem is None:  # the marginal aggregate
        return f"sum_k v_k smECE_k, {entry.get('aggregate', {}).get('class_weights', '')} weights"
    return f"sigma {fmt_number(problem['sigma'])}, n {problem['n']}"


def _smece_lines(doc, f) -> list[str]:
    i = f["input"]
    aggregate = ""
    if "aggregate" in f:
        aggregate = f"; aggregate = sum_k v_k smECE_k with {f['aggregate']['class_weights']} class weights"
    return [f"{entry_label(f)}: {f.get('rows_in_group', i['rows_used'])} rows{_dropped_text(i)}; mode {f['mode']}; "
            f"K={i['n_classes']}; {_columns_text(i)}{aggregate}"]


# tcal -----------------------------------------------------------------------------------------


#: The classical tests of ``tcal --test`` (Spiegelhalter's Z, Hosmer-Lemeshow), whose entries have no levels.
CLASSICAL_TESTS = ("spiegelhalter", "hosmer-lemeshow")


def _tcal_title(doc: dict) -> str:
    p = doc["parameters"]
    if p.get("test") in CLASSICAL_TESTS:
        return f"calibcli tcal --test {p['test']}: alpha {p['alpha']:g}"
    return f"calibcli tcal: alpha {p['alpha']:g}, seed {p['seed']}"


def _infinite(value) -> str:
    """A statistic the JSON holds as null because it is infinite (a Hosmer-Lemeshow group of certain
    predictions that missed)."""
    return "inf" if value is None or value == float("inf") else fmt_number(value)


def _classical_lines(doc, f) -> list[str]:
    i, r = f["input"], f["result"]
    lines = [f"{entry_label(f)}: {_rows_text(f)}; K={i['n_classes']}; mode {f['mode']}",
             f"  {r['statistic_name']} {_infinite(r['statistic'])}, {r['distribution']}: p-value "
             f"{fmt_number(r['p_value'])} at alpha {r['alpha']:g}: {_tcal_verdict(r)}"]
    return lines + [f"  note: {note}" for note in f["notes"]]


def _hosmer_lemeshow_table(f) -> DetailTable:
    return DetailTable(
        columns=[(c, "right") for c in ("group", "predictions", "rows", "observed O_g", "expected E_g", "term")],
        rows=[[str(k), f"[{fmt_number(g['lower'])}, {fmt_number(g['upper'])})", str(g["rows"]), fmt_number(g["observed"]),
               fmt_number(g["expected"]), _infinite(g["term"])] for k, g in enumerate(f["result"]["groups"], 1)])


def _tcal_verdict(r: dict) -> str:
    return "REJECT perfect calibration" if r["reject"] else "no evidence of miscalibration"


def _tcal_lines(doc, f) -> list[str]:
    if f["test"] in CLASSICAL_TESTS:
        return _classical_lines(doc, f)
    p = doc["parameters"]
    i, r = f["input"], f["result"]
    lines = [f"{entry_label(f)}: {_rows_text(f)}{_dropped_text(i)}; K={i['n_classes']}; mode {f['mode']}"]
    if "discrete_check" in f:
        d = f["discrete_check"]
        distinct = f"{d['n_distinct']}" if d["n_distinct"] is not None else f"more than {d['n_distinct_more_than']}"
        lines.append(f"  predictor takes {distinct} distinct values (discrete when t <= sqrt(n) = {d['threshold']:.1f}): "
                     f"{'discrete' if d['discrete'] else 'continuous'}; --discrete {d['choice']} -> {d['used']} test")
    lines.append(f"  rows tested: {f['sample']['description']}")
    lines += [f"  note: {note}" for note in f["notes"]]
    if f["test"] == "binomial":
        lines.append(f"  exact binomial test per value, Bonferroni over {r['n_values']} values")
        lines.append(f"  p-value {fmt_number(r['p_value'])} at alpha {r['alpha']:g}: {_tcal_verdict(r)}")
        return lines
    how = "adaptive" if r["adaptive"] else f"single scale (s = {r['smoothness']:g})"
    resampling = f"{r['n_boot']} resamples, seed {p['seed']}" if r["null"] != "chebyshev" else "no resampling"
    other = ""
    if r["p_value_min_p"] is not None:
        other_name = "min-p" if r["combine"] == "bonferroni" else "bonferroni"
        other_value = r["p_value_min_p"] if r["combine"] == "bonferroni" else r["p_value_bonferroni"]
        other = f" ({other_name}: {fmt_number(other_value)})"
    lines.append(f"  T-Cal {how}, null {r['null']} ({resampling}), {r['n_levels']} level(s), combine {r['combine']}")
    lines.append(f"  p-value {fmt_number(r['p_value'])}{other} at alpha {r['alpha']:g}: {_tcal_verdict(r)}")
    lines.append(f"  statistic: {r['statistic_name']}")
    return lines


def _tcal_summary_lines(doc, f) -> list[str]:
    return []


def _tcal_tables(doc, f) -> list[DetailTable]:
    r = f["result"]
    if f["test"] == "hosmer-lemeshow":
        return [_hosmer_lemeshow_table(f)]
    if f["test"] == "binomial":
        return [DetailTable(
            columns=[(c, "right") for c in ("value", "n", "positives", "observed rate", "p-value",
                                             f"p <= {fmt_number(r['per_value_alpha'])}")],
            rows=[[fmt_number(v["value"]), str(v["n"]), str(v["positives"]), fmt_number(v["observed_rate"]),
                   fmt_number(v["p_value"]), "yes" if v["reject"] else ""] for v in r["per_value"]])]
    if "levels" not in r:
        return []
    return [DetailTable(
        columns=[(c, "right") for c in ("level", "m", "cells", "non-empty", "T_m",
                                         f"critical (alpha {fmt_number(r['per_level_alpha'])})", "p-value", "rejects")],
        rows=[[str(v["level"]), str(v["n_bins"]), str(v["n_cells"]), str(v["n_nonempty"]), fmt_number(v["statistic"]),
               fmt_number(v["critical_value"]), fmt_number(v["p_value"]), "yes" if v["reject"] else ""]
              for v in r["levels"]])]


def _tcal_group_line(doc: dict) -> str:
    g = doc["groups"]
    worst = [f"smallest {name} {fmt_number(m['worst'])} in {m['worst_group']}" for name, m in g["metrics"].items()
             if name.endswith("_p_value")]
    return (f"{g['n_groups']} groups by {', '.join(g['by'])}: {len(g.get('rejecting', []))} reject perfect calibration"
            + (f"; {'; '.join(worst)}" if worst else ""))


# diagram --------------------------------------------------------------------------------------


def _diagram_head(doc: dict) -> list[str]:
    p, d = doc["parameters"], doc["diagram"]
    size = f"{d['width_px']}x{d['height_px']} px" if d["width_px"] else f"{d['width_in']:.3g}x{d['height_in']:.3g} in"
    return [f"wrote {d['path']} ({d['format'].upper()}, {size}, {d['bytes']:,} bytes): {p['kind']} diagram, "
            f"{d['mode']} mode, {d['n_panels']} panel(s), {d['n_curves_per_panel']} curve(s) per panel"]


def _diagram_title(doc: dict) -> str:
    p = doc["parameters"]
    boot = f"{p['n_boot']} bootstrap resamples, seed {p['seed']}" if p["n_boot"] else "no bootstrap"
    return f"metrics shown ({_level(doc)} intervals, {boot})"


def _diagram_detail(doc, name, m, section, entry) -> str:
    curve = next((c for c in entry["curves"] if c["problem"] == section), None)
    if curve is None:
        return ""
    text = f"{curve['name']}, n {curve['n']:,}: " if curve.get("name") else f"n {curve['n']:,}: "
    if name in curve.get("binned", {}).get("metrics", {}):
        b = curve["binned"]
        return text + f"{b['n_bins_nonempty']} of {b['n_bins']} {b['strategy']} bins non-empty"
    s = curve.get("smooth", {})
    return text + f"s* = {fmt_number(s.get('sigma'))}"


def _diagram_tail(doc: dict) -> list[str]:
    note = doc["diagram"].get("note")
    return [note] if note else []


# recalibrate ----------------------------------------------------------------------------------


def _fit_head(doc: dict) -> list[str]:
    return [f"calibcli recalibrate fit: {f['method']} on {f['input']['path']} ({f['input']['rows_used']} rows, "
            f"mode {f['mode']})" for f in doc["files"]]


def _flatten(d, prefix: str = ""):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(d, list) and d and isinstance(d[0], dict):
        for j, v in enumerate(d):
            yield from _flatten(v, f"{prefix}[{j}]")
    else:
        yield prefix, _fmt_any(d)


def _fmt_any(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v).lower() if v is not None else "-"
    if isinstance(v, float):
        return fmt_number(v, 6)
    if isinstance(v, list):
        return "[" + ", ".join(_fmt_any(x) for x in v) + "]"
    return str(v)


def _fit_tables(doc, f) -> list[DetailTable]:
    rows = [[k, v] for k, v in _flatten(f["params"])]
    info = f.get("fit_info")
    rows += [[f"info {k}", v] for k, v in _flatten(info if isinstance(info, dict) else {"per_class": info})]
    if "certificate" in f:
        c = f["certificate"]
        rows.append(["E[ECE] bound (Thm 12.6)", _fmt_any(c["expected_ece_bound"])])
        rows.append([f"ECE bound, prob. {1 - c['delta']:g} (Thm 12.6)", _fmt_any(c["ece_bound"])])
        if c["note"]:
            rows.append(["certificate note", c["note"]])
    if f.get("renormalised"):
        rows.append(["marginal", f["renormalised"]])
    rows.append(["written to", f["calibrator_file"]])
    return [DetailTable(columns=[("item", "left"), ("value", "left")], rows=rows)]


def _evaluate_lines(doc, f) -> list[str]:
    p = doc["parameters"]
    s = f["split"]
    how = (f"fit on {s['n_fit']} rows ({100 * s['fit_fraction']:g}%, seed {s['seed']}), evaluated on {s['n_test']}"
           if s["kind"] == "holdout" else f"fit on {s['fit_path']} ({s['n_fit']} rows), evaluated on {s['n_test']}")
    lines = [f"{entry_label(f)}: mode {f['mode']}; {how}; errors on {p['ece_n_bins']} {p['ece_strategy']} bins"]
    notes = [f"T-Cal: {p['n_boot']} y-bootstrap resamples; binomial: exact test per distinct value (Bonferroni)"]
    for r in f["rows"][1:]:
        rows = r["fit_rows"]
        if rows["rows"] != "all":
            notes.append(f"{r['method']} fitted on the bottom-k sample of {rows['k']} of the {rows['n']} fit rows (--max-rows)")
    sampled = {x["sample"]["n_tested"] for r in f["rows"] for x in r["test"]["per_problem"] if x["sample"]["method"] == "bottom-k"}
    if sampled:
        notes.append(f"T-Cal on the bottom-k sample of {max(sampled)} test rows (--max-rows)")
    if f["mode"] == "marginal":
        notes.append("marginal: errors aggregate over classes; marginal recalibrations renormalise each row")
    lines.append("; ".join(notes))
    verdicts = [f"{r['method']} {'rejects' if r['test']['reject'] else 'does not reject'} (p {fmt_number(r['test']['p_value'])})"
                for r in f["rows"] if "test" in r]
    if verdicts:
        tests = sorted({r["test"]["test"] for r in f["rows"] if "test" in r})
        lines.append(f"calibration test ({', '.join(tests)}) at alpha {p['alpha']:g}: {'; '.join(verdicts)}")
    return lines


def _evaluate_title(doc: dict) -> str:
    return "calibcli recalibrate evaluate: before and after recalibration, on the test rows"


def _apply_head(doc: dict) -> list[str]:
    out = []
    for f in doc["files"]:
        i, o = f["input"], f["output"]
        dropped = f" ({i['rows_dropped']} rows with invalid probabilities left out)" if i["rows_dropped"] else ""
        added = f", interval columns {', '.join(o['interval_columns'])} added" if o.get("interval_columns") else ""
        out.append(f"calibcli recalibrate apply: {f['method']} ({f['mode']}) on {i['path']}: {o['rows']} rows{dropped}, "
                   f"columns {', '.join(i['columns'])} recalibrated{added}; written to {o['path']} ({o['format']})")
    return out


VIEWS: dict[str, View] = {
    "ece": View(title=_ece_title, entry_lines=_ece_lines, detail=_ece_detail, per_class=ECE_PER_CLASS,
                group_line=lambda doc: _worst_group_line(doc, _gate_metric(doc, "ece_l1_plugin")),
                summary_metrics=("ece_l1_plugin", "ece_l2_debiased_dpe", "brier_score|brier_score_multiclass")),
    "smece": View(title=_smece_title, entry_lines=_smece_lines, detail=_smece_detail,
                  group_line=lambda doc: _worst_group_line(doc, _gate_metric(doc, "smece")), summary_metrics=("smece",)),
    "tcal": View(title=_tcal_title, entry_lines=_tcal_lines, summary_lines=_tcal_summary_lines, tables=_tcal_tables,
                 group_line=_tcal_group_line, summary_metrics=("tcal_p_value", "tcal_statistic")),
    "diagram": View(head=_diagram_head, title=_diagram_title, detail=_diagram_detail, tail=_diagram_tail,
                    summary_metrics=("ece_l1_plugin", "smece")),
    "recalibrate fit": View(head=_fit_head, tables=_fit_tables, problem_label="method", metric_table=False),
    "recalibrate apply": View(head=_apply_head),
    "recalibrate evaluate": View(title=_evaluate_title, entry_lines=_evaluate_lines, summary_lines=_evaluate_lines,
                                 summary_always=True, problem_label="method",
                                 summary_metrics=("ece_l1_plugin", "ece_l2_debiased_dpe", "smece",
                                                  "brier_score|brier_score_multiclass", "log_loss|log_loss_multiclass",
                                                  "test_p_value")),
}


def render_metric_table(doc: dict, console, *, title: str, only: dict[str, tuple[str, ...]] | None = None,
                        detail=None) -> None:
    """The long metric table with a given title (for callers outside :data:`VIEWS`); ``detail(name,
    metric dict, problem dict or None)`` gives the last column's text."""
    view = View(title=lambda _doc: title, per_class=(only or {}).get("class"),
                detail=(lambda _doc, name, m, section, entry: detail(name, m, _problem(entry, section))) if detail else None)
    print_metric_table(doc, console, view)
