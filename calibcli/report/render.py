"""One renderer for every command's report: tables, the batch summary, markdown and tidy CSV (SPEC 7).

A report document (:func:`calibcli.core.documents.new_document`) holds entries (one per file, dataset or
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

import os
import sys
from dataclasses import dataclass, field

from calibcli.core.documents import fmt_interval, fmt_number, group_text
from calibcli.core.errors import OptionError
from calibcli.core.registry import REGISTRY
from calibcli.core.safe_text import for_markdown_cell, for_rich, for_terminal
from calibcli.report.entries import _level, entry_sections, metric_cells, shortest_unique_suffixes, summary_sections
from calibcli.report.views import VIEWS, DetailTable, View, _problem

#: Columns of the tidy (long) form of a report: one row per entry, problem and metric.
LONG_COLUMNS = ("file", "group", "problem", "metric", "estimate", "ci_low", "ci_high", "bound")

#: Beyond this many summary rows the summary is the default table layout.
SUMMARY_AUTO = 3


# ---------------------------------------------------------------------------------------------
# The tidy long form: CSV and markdown


def long_rows(doc: dict) -> list[dict]:
    """The report as tidy rows (:data:`LONG_COLUMNS`), the same for every command."""
    return [
        {"file": entry["input"]["path"], "group": group_text(entry), **metric_cells(problem, name, m)}
        for entry in doc["files"]
        for problem, metrics in entry_sections(entry)
        for name, m in metrics.items()
    ]


def render_csv(doc: dict) -> str:
    """The tidy rows as CSV (pandas reads it directly); numbers written so that they round-trip."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LONG_COLUMNS)
    for row in long_rows(doc):
        writer.writerow(
            [
                "" if row[c] is None else (repr(float(row[c])) if isinstance(row[c], float) else row[c])
                for c in LONG_COLUMNS
            ]
        )
    return buffer.getvalue()


def _md(text) -> str:
    """A name from the data as one markdown cell: ``|``, newlines and control characters cannot break the row."""
    return for_markdown_cell(text)


def render_markdown(
    doc: dict, *, summary: bool | None = None, metrics: list[str] | None = None, sort: str | None = None
) -> str:
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
    elif (view := VIEWS.get(doc["command"], View())).markdown_tables:  # the command's own tables (the audit's)
        for entry in doc["files"]:
            lines += [_md(line) for line in (view.entry_lines(doc, entry) if view.entry_lines else [])]
            for t in view.tables(doc, entry) if view.tables else []:
                lines += ["", f"*{_md(t.title)}*", ""] if t.title else [""]
                lines.append("| " + " | ".join(_md(name) for name, _ in t.columns) + " |")
                lines.append("|" + "".join("---|" if just == "left" else "---:|" for _, just in t.columns))
                lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in t.rows]
            lines.append("")
    else:
        lines += [
            f"| file | group | problem | metric | estimate | {level} CI | bound |",
            "|---|---|---|---|---:|---:|---:|",
        ]
        for r in long_rows(doc):
            lines.append(
                f"| {_md(r['file'])} | {_md(r['group'])} | {_md(r['problem'])} | `{r['metric']}` | "
                f"{fmt_number(r['estimate'])} | {fmt_interval(r['ci_low'], r['ci_high'])} | "
                f"{fmt_number(r['bound']) if r['bound'] is not None else ''} |"
            )
    if "gate" in doc:
        g = doc["gate"]
        lines += ["", f"Gate: **{'passed' if g['passed'] else 'failed'}**"] + [
            f"- {_md(f)}" for f in g.get("failures", [])
        ]
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
    have = available_metrics(doc)
    for option, wanted in (("metrics", names or []), ("sort", [sort] if sort else [])):
        unknown = [n for n in wanted if n not in have]
        if unknown:
            raise OptionError(
                option,
                f"{{name}} names {', '.join(repr(n) for n in unknown)}, which this report does not have: "
                f"expected some of {', '.join(have)}",
            )


def default_metrics(doc: dict) -> list[str]:
    """The view's headline metrics that the report has: of each ``a|b`` alternative, the first present."""
    have = available_metrics(doc)
    view = VIEWS.get(doc["command"])
    chosen = []
    for alternatives in view.summary_metrics if view else ():
        found = next((n for n in alternatives.split("|") if n in have), None)
        if found:
            chosen.append(found)
    return chosen or have[:4]


def summary_table(doc: dict, *, metrics: list[str] | None = None, sort: str | None = None) -> SummaryTable:
    """The summary rows: names (shortest unique suffix), group, problem/method where it varies, the metrics."""
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
    labels = (
        ["file"]
        + (["group"] if has_group else [])
        + ([problem_label] if len(problems) > 1 or (view and view.summary_always) else [])
    )
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
                assert info is not None and info.target is not None, f"{sort} declares no target"
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


def print_whole(console, table, need: int) -> None:
    """Print ``table`` (a rich table) on ``console``, or, when its narrowest layout (names and numbers whole,
    wrapped text at its longest word: ``need`` characters, which the caller counts) is wider than the console, on
    a console that wide over the same file: rather wider than the terminal than a number cut short."""
    if need <= console.width:
        console.print(table)
        return
    from rich.console import Console

    Console(
        file=console.file,
        highlight=False,
        soft_wrap=False,
        width=need,
        no_color=console.no_color,
        force_terminal=console.is_terminal,
    ).print(table)


def fit_columns(columns: list[list[str]], width: int, whole: list[bool] | None = None) -> list[int]:
    """Widths for a rich table's columns (``columns``: each column's header and cells) that fit ``width``
    characters where they can: each column as wide as its longest line, and when that is too wide, the widest
    columns narrowed in turn, never below their longest word (text wraps between words, never within a date, a
    number or an interval's bound), nor at all where ``whole[j]`` (a column that never wraps). The table may come
    out wider than ``width``; :func:`print_whole` then prints it whole."""
    from rich.cells import cell_len

    lines = [[line for text in column for line in text.split("\n")] for column in columns]
    widths = [max([1] + [cell_len(line) for line in column]) for column in lines]
    floor = [max([1] + [cell_len(word) for line in column for word in line.split()]) for column in lines]
    floor = [w if whole and whole[j] else f for j, (w, f) in enumerate(zip(widths, floor, strict=True))]
    excess = sum(w + 3 for w in widths) + 1 - width
    while excess > 0:  # a character off the widest column that can still narrow
        narrowable = [k for k in range(len(widths)) if widths[k] > floor[k]]
        if not narrowable:
            break
        widths[max(narrowable, key=lambda k: widths[k])] -= 1
        excess -= 1
    return widths


def table_width(columns: list[list[str]]) -> int:
    """Characters a rich table takes whose columns are at least as wide as their longest line (``columns``: each
    column's header and cells): each its width + 2 padding + 1 rule, + 1 rule."""
    return sum(max(len(line) for text in column for line in text.split("\n")) + 3 for column in columns) + 1


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
    return [
        [
            fmt_number(m.get("estimate"))
            + ("" if m.get("ci_low") is None else "\n" + fmt_interval(m.get("ci_low"), m.get("ci_high")))
            if m
            else "-"
            for m in row.values
        ]
        for row in table.rows
    ]


def _summary_width(table: SummaryTable, cells: list[list[str]], name_width: int) -> int:
    """Characters a rich table of these columns takes: each column its width + 2 padding + 1 rule, + 1 rule."""
    widths = [
        max([len(table.metrics[j])] + [len(line) for c in cells for line in c[j].splitlines()])
        for j in range(len(table.metrics))
    ]
    other = [max([len(table.labels[i])] + [len(r.labels[i]) for r in table.rows]) for i in range(1, len(table.labels))]
    return sum(w + 3 for w in widths) + sum(w + 3 for w in other) + max(name_width, 4) + 3 + 1


def _plain(console, header: list[str], body: list[list[str]]) -> bool:
    """Whether :func:`box_table` draws what rich would for this table on ``console``: no styles there (not a
    terminal), some rows, and every cell printable ASCII (one character, one column; nothing for_rich changes
    but the markup escapes rich takes out again) over lines without edge spaces."""
    if console.color_system is not None or not body:
        return False
    for cell in [*header, *(c for row in body for c in row)]:
        for line in cell.split("\n"):
            if not (line.isascii() and line.isprintable()) or line != line.strip(" "):
                return False
    return True


def box_table(header: list[str], body: list[list[str]], right: list[bool], min_width: dict[int, int]) -> str:
    """A table as rich's default ``Table`` draws it unstyled (heavy head, one space of padding, columns as
    wide as their widest line, cells over several lines top-aligned), for columns that do not wrap.

    rich lays out 1,000 rows in 0.4 s, a tenth of a 1,000-group ``ece``; this takes 10 ms. Only for what
    :func:`_plain` accepts (tests check it against rich on such tables)."""
    cells = [[c.split("\n") for c in row] for row in body]
    widths = [
        max([len(header[j]), min_width.get(j, 0)] + [len(line) for row in cells for line in row[j]])
        for j in range(len(header))
    ]

    def text(parts: list[str], edge: str) -> str:
        padded = [(p.rjust(w) if r else p.ljust(w)) for p, w, r in zip(parts, widths, right, strict=True)]
        return edge + edge.join(f" {p} " for p in padded) + edge

    def rule(left: str, fill: str, cross: str, end: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + end

    lines = [rule("┏", "━", "┳", "┓"), text(header, "┃"), rule("┡", "━", "╇", "┩")]
    for row in cells:
        for k in range(max(len(c) for c in row)):
            lines.append(text([c[k] if k < len(c) else "" for c in row], "│"))
    lines.append(rule("└", "─", "┴", "┘"))
    return "\n".join(lines) + "\n"


def print_summary(doc: dict, console, table: SummaryTable, *, title: str | None, chosen: bool = False) -> None:
    """The summary as a rich table that fits the console: numbers never broken, names broken only at '/'.

    When the default columns do not fit, the last ones are left out (and the caption says how to ask
    for them); columns chosen with ``--metrics`` are all shown, wider than the terminal if need be.
    """
    from rich.table import Table

    total = console.width or 160
    names = [r.labels[0] for r in table.rows]
    cells = _summary_cells(table)
    fixed = _summary_width(table, cells, 0) - 4  # everything but the name column
    floor = max([4] + [len(c) + 1 for n in names for c in n.split("/")])
    dropped: list[str] = []
    while not chosen and len(table.metrics) > 1 and fixed + floor + 3 > total:
        dropped.insert(0, table.metrics.pop())
        for row, c in zip(table.rows, cells, strict=True):
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
        console.print(for_rich(title), soft_wrap=True)
    header = ["file", *table.labels[1:], *table.metrics]
    body = [[name, *row.labels[1:], *values] for row, name, values in zip(table.rows, wrapped, cells, strict=True)]
    right = [False] * len(table.labels) + [True] * len(table.metrics)
    need = _summary_width(table, cells, name_width)
    if _plain(console, header, body):  # the same characters rich draws, without its layout engine
        console.out(box_table(header, body, right, {0: name_width}), end="", highlight=False)
    else:
        out = Table()
        out.add_column("file", no_wrap=True, min_width=name_width)
        for label in table.labels[1:]:
            out.add_column(label, no_wrap=True)
        for name in table.metrics:
            out.add_column(name, justify="right", no_wrap=True)
        for cells_of_row in body:  # a wrapped name's lines each made safe (its line breaks kept)
            out.add_row(*["\n".join(for_rich(line) for line in cell.split("\n")) for cell in cells_of_row])
        print_whole(console, out, need)  # rather wider than the terminal than a broken name or number
    if notes:
        console.print(for_rich("; ".join(notes)), soft_wrap=True)


def print_metric_table(doc: dict, console, view: View) -> None:
    """The long table: one row per entry, problem and metric, with a detail column."""
    from rich.table import Table

    level = _level(doc)
    short = shortest_unique_suffixes([e["input"]["path"] for e in doc["files"]])
    if view.title:
        console.print(for_rich(view.title(doc)), soft_wrap=True)
    columns = (
        ("file", "left", False),
        (view.problem_label, "left", False),
        ("metric", "left", False),
        ("estimate", "right", False),
        (f"{level} CI".strip(), "right", False),
        ("bound / note", "left", True),
    )
    sections = []  # each entry's rows: the text shown in each cell
    for entry in doc["files"]:
        group = group_text(entry)
        label = short[entry["input"]["path"]] + (f" [{group}]" if group else "")
        problems = {q["name"] for q in entry.get("problems", [])}
        rows: list[list[str]] = []
        for problem, metrics in entry_sections(entry):
            keep = view.per_class if ("aggregate" in entry and problem in problems) else None
            for name, m in metrics.items():
                if keep is not None and name not in keep:
                    continue
                extra = view.detail(doc, name, m, problem, entry) if view.detail else (m.get("note") or "")
                rows.append(
                    [
                        "" if rows else for_terminal(label),
                        for_terminal(str(problem)),
                        name,
                        fmt_number(m.get("estimate")),
                        fmt_interval(m.get("ci_low"), m.get("ci_high")),
                        for_terminal(extra or ""),
                    ]
                )
        sections.append(rows)
    shown = [[col, *(row[j] for rows in sections for row in rows)] for j, (col, _, _) in enumerate(columns)]
    # names and numbers whole (never cut short to fit the terminal: wider than it instead), the note wrapping
    widths = fit_columns(shown, console.width, whole=[not wrap for _, _, wrap in columns])
    table = Table()
    for (col, just, wrap), width in zip(columns, widths, strict=True):
        table.add_column(
            col, justify="left" if just == "left" else "right", no_wrap=not wrap, overflow="fold", width=width
        )
    for rows in sections:
        for row in rows:
            table.add_row(*(for_rich(c) for c in row))
        table.add_section()
    print_whole(console, table, sum(w + 3 for w in widths) + 1)


def render_table(
    doc: dict, console, *, summary: bool | None = None, metrics: list[str] | None = None, sort: str | None = None
) -> None:
    """Every command's table: its title, the metric table or the summary, its per-entry lines and detail
    tables, and the group and gate lines."""

    view = VIEWS.get(doc["command"], View())
    for line in view.head(doc) if view.head else []:
        console.print(for_rich(line), soft_wrap=True)
    if use_summary(doc, summary):
        print_summary(
            doc,
            console,
            summary_table(doc, metrics=metrics, sort=sort),
            title=view.title(doc) if view.title else None,
            chosen=bool(metrics),
        )
        lines_of = view.summary_lines
    else:
        if view.metric_table and any(entry_sections(e) for e in doc["files"]):
            print_metric_table(doc, console, view)
        lines_of = view.entry_lines
    for entry in doc["files"]:
        for line in lines_of(doc, entry) if lines_of else []:
            console.print(for_rich(line), soft_wrap=True)
        if view.tables and not use_summary(doc, summary):
            for t in view.tables(doc, entry):
                _print_detail_table(console, t)
    for line in view.tail(doc) if view.tail else []:
        console.print(for_rich(line), soft_wrap=True)
    if "groups" in doc and view.group_line:
        group_line = view.group_line(doc)
        if group_line:
            console.print(for_rich(group_line), soft_wrap=True)
    if "gate" in doc:
        g = doc["gate"]
        name = f"on {g['metric']}" if g.get("metric") else "--fail-on-reject"
        if "fail_if_any_segment" in g:  # the audit's gates
            name = " and ".join(
                flag
                for flag, on in (
                    ("--fail-above-sigma", g["fail_above_sigma"] is not None),
                    ("--fail-if-any-segment", g["fail_if_any_segment"]),
                )
                if on
            )
        console.print(f"gate {name}: {'passed' if g['passed'] else 'FAILED'}")


def _print_detail_table(console, t: DetailTable) -> None:
    """A command's detail table (segments, classes, tests): cells wrap between words, never within a number or a
    name (a p-value of 2.849e-11 folded as "2.849e-1" over "1"), wider than the terminal rather than cut."""
    from rich.table import Table

    table = Table(title=for_rich(t.title) if t.title else t.title, title_justify="left")
    shown = [[for_terminal(name), *(for_terminal(row[j]) for row in t.rows)] for j, (name, _) in enumerate(t.columns)]
    widths = fit_columns(shown, console.width)
    for (name, just), width in zip(t.columns, widths, strict=True):
        table.add_column(for_rich(name), justify="left" if just == "left" else "right", overflow="fold", width=width)
    for row in t.rows:
        table.add_row(*[for_rich(c) for c in row])
    print_whole(console, table, sum(w + 3 for w in widths) + 1)


def render_metric_table(
    doc: dict, console, *, title: str, only: dict[str, tuple[str, ...]] | None = None, detail=None
) -> None:
    """The long metric table with a given title (for callers outside :data:`VIEWS`); ``detail(name,
    metric dict, problem dict or None)`` gives the last column's text."""
    view = View(
        title=lambda _doc: title,
        per_class=(only or {}).get("class"),
        detail=(lambda _doc, name, m, section, entry: detail(name, m, _problem(entry, section))) if detail else None,
    )
    print_metric_table(doc, console, view)
