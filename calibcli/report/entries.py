"""How a report entry reads (SPEC 7): numbers and intervals as text, an entry's sections
(``(problem, {metric: metric dict})``, whatever the command), its label and its group. The renderer
(:mod:`calibcli.report.render`), the views (:mod:`calibcli.report.views`) and the HTML page share them.
"""

from __future__ import annotations

from calibcli.core.documents import segment_text

Section = tuple[str, dict]


# ---------------------------------------------------------------------------------------------
# Numbers


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
    for seg in entry.get("segments", []):  # the audit: a section per segment, the worst first
        sections.append(
            (
                segment_text(seg["definition"]),
                {
                    "ecce_r_sigma": _metric(seg["ecce_r_sigma"]),
                    "ecce_r": _metric(seg["ecce_r"]),
                    "p_value": _metric(seg["p_value"]),
                    "p_adjusted": _metric(seg["p_adjusted"]),
                    "o_e": {
                        **_metric(seg["o_e"]),
                        "ci_low": seg["o_e_ci_low"],
                        "ci_high": seg["o_e_ci_high"],
                        "ci_method": "normal" if seg["o_e_ci_low"] is not None else None,
                    },
                    "mde": _metric(seg["mde"]),
                    "ece_l1_plugin": _metric(seg["ece_l1_plugin"]),
                    "rows": _metric(seg["rows"]),
                },
            )
        )
    if not sections and entry.get("headline"):
        sections.append((entry.get("mode", ""), entry["headline"]))
    return sections


def metric_cells(problem: str, name: str, m: dict) -> dict:
    """One metric of a section (:func:`entry_sections`) as a table row: its problem, name, estimate, interval and
    bound (what the tidy CSV and the HTML page's full table show of it)."""
    return {
        "problem": problem,
        "metric": name,
        "estimate": m.get("estimate"),
        "ci_low": m.get("ci_low"),
        "ci_high": m.get("ci_high"),
        "bound": m.get("upper_bound"),
    }


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


def _level(doc: dict) -> str:
    alpha = doc["parameters"].get("alpha")
    return f"{100 * (1 - alpha):g}%" if isinstance(alpha, (int, float)) else ""
