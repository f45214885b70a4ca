"""The monitor's document as a table of windows (rows of text cells), markdown and tidy CSV (SPEC 7, 12).
Names from the data (group values) are escaped for each sink."""

from __future__ import annotations

import csv
import io
import json

from calibcli.core.documents import fmt_interval, fmt_number, segment_text
from calibcli.core.safe_text import for_markdown_cell

#: The table's fixed columns before the metrics, and after them.
HEAD = ("start", "end", "rows")
TAIL = ("test p (adj.)", "alert")


def group_text(group: dict | None) -> str:
    """A series' group as text: ``col=value, ...`` (empty when ungrouped)."""
    return "" if not group else ", ".join(f"{k}={v}" for k, v in group.items())


def _alert_text(w: dict) -> str:
    if w["role"] == "reference":
        return "reference"
    if w["alert"] is None:
        return "too small"
    return "ALERT" if w["alert"] else "-"


def window_cells(doc: dict) -> tuple[list[str], list[list[str]]]:
    """The table of windows: header and one row of text cells per window."""
    metrics = doc["parameters"]["metrics"]
    grouped = any(w["group"] for w in doc["windows"])
    audited = doc["parameters"].get("audit") is not None
    header = [*(["group"] if grouped else []), *HEAD, *(f"{m} [interval]" for m in metrics)]
    header += [*(["worst segment (sigma, p adj.)"] if audited else []), *TAIL]
    rows = []
    for w in doc["windows"]:
        cells = [group_text(w["group"])] if grouped else []
        cells += [w["start"], w["end"], str(w["rows"])]
        for name in metrics:
            m = w["metrics"].get(name) or {}
            cells.append(f"{fmt_number(m.get('estimate'))} {fmt_interval(m.get('ci_low'), m.get('ci_high'))}")
        if audited:
            cells.append(_worst_text(w))
        t = w["test"]
        p = t.get("p_adjusted", t.get("p_value"))
        cells.append(fmt_number(p) if w["role"] == "monitored" and not w.get("too_small") else "-")
        cells.append(_alert_text(w))
        rows.append(cells)
    return header, rows


def _worst_text(w: dict) -> str:
    """A window's worst tested segment, its ECCE-R/sigma and the audit's MCE p-value adjusted over the series."""
    worst = next((s for s in w.get("segments") or [] if s["definition"] and s["tested"]), None)
    if worst is None:
        return "-"
    q = (w.get("audit") or {}).get("p_adjusted")
    return f"{segment_text(worst['definition'])} ({fmt_number(worst['ecce_r_sigma'])}, {fmt_number(q)})"


def window_rows(doc: dict) -> tuple[list[str], list[tuple[list[str], dict]]]:
    """The table of windows with each row's window record beside its cells (for a page that marks the alerts)."""
    header, rows = window_cells(doc)
    return header, list(zip(rows, doc["windows"], strict=True))


def footer_lines(doc: dict) -> list[str]:
    """What the table's footer says: the reference, the alerts and their reasons, the drift, the rules."""
    p = doc["parameters"]
    lines = []
    for ref in doc["reference"]:
        where = ref.get("path") or f"{len(ref.get('windows') or [])} window(s) from {ref['windows'][0][0]}"
        group = group_text(ref["group"])
        numbers = ", ".join(f"{m} {fmt_number((ref['metrics'].get(m) or {}).get('estimate'))}" for m in p["metrics"])
        lines.append(f"reference{' [' + group + ']' if group else ''}: {where}, {ref['rows']} rows; {numbers}")
    for w in doc["windows"]:
        for reason in w["reasons"]:
            group = group_text(w["group"])
            lines.append(f"{w['start']}{' [' + group + ']' if group else ''}: {reason}")
    for d in doc["drift"]:
        group = group_text(d["group"])
        if d["from"] is not None:
            lines.append(f"drift{' [' + group + ']' if group else ''}: alerted from {d['from']} on")
    lines.append(f"{doc['alerts']} window(s) alerted; {p['adjust_rule']}, alpha {p['alpha']}")
    lines.append(f"windows: {p['windows']['rule']}; {p['windows'].get('time_zone', 'by row order')}")
    return lines


def render_markdown(doc: dict) -> str:
    """The table of windows in GitHub markdown, then its footer as a list."""
    header, rows = window_cells(doc)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(for_markdown_cell(c) for c in row) + " |" for row in rows]
    out.append("")
    out += [f"- {for_markdown_cell(line)}" for line in footer_lines(doc)]
    return "\n".join(out) + "\n"


def render_csv(doc: dict) -> str:
    """Tidy rows: window start, end, group, rows, metric, estimate, ci_low, ci_high, p_value, p_adjusted, alert."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        [
            "start",
            "end",
            "group",
            "rows",
            "role",
            "metric",
            "estimate",
            "ci_low",
            "ci_high",
            "p_value",
            "p_adjusted",
            "alert",
        ]
    )
    for w in doc["windows"]:
        group = json.dumps(w["group"], sort_keys=True) if w["group"] else ""
        alert = "" if w["alert"] is None else str(w["alert"]).lower()
        window = [w["start"], w["end"], group, w["rows"], w["role"]]
        for name in doc["parameters"]["metrics"]:
            m = w["metrics"].get(name) or {}
            c = w["comparisons"].get(name) or {}
            estimate = [m.get("estimate"), m.get("ci_low"), m.get("ci_high")]
            writer.writerow([*window, name, *estimate, c.get("p_value"), c.get("p_adjusted"), alert])
        t = w["test"]
        writer.writerow([*window, f"test:{t['name']}", None, None, None, t.get("p_value"), t.get("p_adjusted"), alert])
    return buf.getvalue()
