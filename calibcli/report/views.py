"""What differs between commands' reports (SPEC 7): the title line, a line per entry, a command's own detail
table, the default summary columns. One :class:`View` per command document in :data:`VIEWS`; everything
else is the shared renderer's (:mod:`calibcli.report.render`). A new family's report is one ``View`` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calibcli.core.documents import entry_label, fmt_interval, fmt_number, segment_text
from calibcli.report import regression_view
from calibcli.report.entries import _level


@dataclass
class DetailTable:
    """A command's own table of details (T-Cal's levels, the binomial test's values, a fit's parameters)."""

    columns: list[tuple[str, str]]  # (name, "left" | "right")
    rows: list[list[str]]
    title: str | None = None


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
    #: Markdown shows the detail tables instead of the long metric rows (the audit's worst segments).
    markdown_tables: bool = False


def _problem(entry: dict, section: str) -> dict | None:
    return next((q for q in entry.get("problems", []) if q["name"] == section), None)


def _rows_text(entry: dict) -> str:
    i = entry["input"]
    return (
        f"{entry['rows_in_group']} rows in the group of {i['rows_used']}"
        if "group" in entry
        else f"{i['rows_used']} rows"
    )


def _dropped_text(i: dict) -> str:
    if not i.get("rows_dropped"):
        return ""
    reasons = ", ".join(f"{k}: {v}" for k, v in i.get("dropped_reasons", {}).items())
    return f", dropped {i['rows_dropped']}" + (f" ({reasons})" if reasons else "")


def _columns_text(i: dict) -> str:
    cols = i["columns"]
    return (
        f"probabilities {', '.join(cols['probabilities'])}{' (logits)' if cols['logits'] else ''}, labels "
        f"{cols['label']}"
        f"{', weights ' + cols['weight'] if cols['weight'] else ''} (columns chosen by {cols['chosen_by']})"
    )


def _boot_text(p: dict, what: str = "") -> str:
    if not p.get("n_boot"):
        return "no bootstrap"
    return (
        f"{p['n_boot']} bootstrap resamples{what}, {_level({'parameters': p})} percentile intervals, seed {p['seed']}"
    )


def _worst_group_line(doc: dict, name: str) -> str | None:
    g = doc["groups"]["metrics"].get(name)
    if not g:
        return None
    return (
        f"{doc['groups']['n_groups']} groups by {', '.join(doc['groups']['by'])}: worst {name} "
        f"{fmt_number(g['worst'])} in {g['worst_group']}; spread {fmt_number(g['spread'])}"
    )


# ece ------------------------------------------------------------------------------------------

#: Metrics shown per class in marginal mode (the aggregate shows every metric).
ECE_PER_CLASS = (
    "ece_l1_plugin",
    "ece_l2_plugin",
    "ece_max_plugin",
    "ece_l2_sq_debiased_kumar",
    "ece_l2_sq_debiased_dpe",
)


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
    return [
        f"{entry_label(f)}: {_rows_text(f)}{_dropped_text(i)}; mode {f['mode']}; K={i['n_classes']}; "
        f"{_columns_text(i)}{bins}"
    ]


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
    return [
        f"{entry_label(f)}: {f.get('rows_in_group', i['rows_used'])} rows{_dropped_text(i)}; mode {f['mode']}; "
        f"K={i['n_classes']}; {_columns_text(i)}{aggregate}"
    ]


# tcal -----------------------------------------------------------------------------------------


#: The classical tests of ``tcal --test`` (Spiegelhalter's Z, Hosmer-Lemeshow, ECCE-R), whose entries have no levels.
CLASSICAL_TESTS = ("spiegelhalter", "hosmer-lemeshow", "ecce")


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
    lines = [
        f"{entry_label(f)}: {_rows_text(f)}; K={i['n_classes']}; mode {f['mode']}",
        f"  {r['statistic_name']} {_infinite(r['statistic'])}, {r['distribution']}: p-value "
        f"{fmt_number(r['p_value'])} at alpha {r['alpha']:g}: {_tcal_verdict(r)}",
    ]
    if f["test"] == "ecce":
        lines.append(
            f"  ECCE-R {fmt_number(r['ecce_r'])}, sigma {fmt_number(r['sigma'])}; ECCE-MAD "
            f"{fmt_number(r['ecce_mad'])} ({_infinite(r['ecce_mad_sigma'])} sigma, p-value "
            f"{fmt_number(r['ecce_mad_pvalue'])}); {r['form']}"
        )
    return lines + [f"  note: {note}" for note in f["notes"]]


def _hosmer_lemeshow_table(f) -> DetailTable:
    return DetailTable(
        columns=[(c, "right") for c in ("group", "predictions", "rows", "observed O_g", "expected E_g", "term")],
        rows=[
            [
                str(k),
                f"[{fmt_number(g['lower'])}, {fmt_number(g['upper'])})",
                str(g["rows"]),
                fmt_number(g["observed"]),
                fmt_number(g["expected"]),
                _infinite(g["term"]),
            ]
            for k, g in enumerate(f["result"]["groups"], 1)
        ],
    )


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
        lines.append(
            f"  predictor takes {distinct} distinct values (discrete when t <= sqrt(n) = {d['threshold']:.1f}): "
            f"{'discrete' if d['discrete'] else 'continuous'}; --discrete {d['choice']} -> {d['used']} test"
        )
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
        return [
            DetailTable(
                columns=[
                    (c, "right")
                    for c in (
                        "value",
                        "n",
                        "positives",
                        "observed rate",
                        "p-value",
                        f"p <= {fmt_number(r['per_value_alpha'])}",
                    )
                ],
                rows=[
                    [
                        fmt_number(v["value"]),
                        str(v["n"]),
                        str(v["positives"]),
                        fmt_number(v["observed_rate"]),
                        fmt_number(v["p_value"]),
                        "yes" if v["reject"] else "",
                    ]
                    for v in r["per_value"]
                ],
            )
        ]
    if "levels" not in r:
        return []
    return [
        DetailTable(
            columns=[
                (c, "right")
                for c in (
                    "level",
                    "m",
                    "cells",
                    "non-empty",
                    "T_m",
                    f"critical (alpha {fmt_number(r['per_level_alpha'])})",
                    "p-value",
                    "rejects",
                )
            ],
            rows=[
                [
                    str(v["level"]),
                    str(v["n_bins"]),
                    str(v["n_cells"]),
                    str(v["n_nonempty"]),
                    fmt_number(v["statistic"]),
                    fmt_number(v["critical_value"]),
                    fmt_number(v["p_value"]),
                    "yes" if v["reject"] else "",
                ]
                for v in r["levels"]
            ],
        )
    ]


def _tcal_group_line(doc: dict) -> str:
    g = doc["groups"]
    worst = [
        f"smallest {name} {fmt_number(m['worst'])} in {m['worst_group']}"
        for name, m in g["metrics"].items()
        if name.endswith("_p_value")
    ]
    return (
        f"{g['n_groups']} groups by {', '.join(g['by'])}: {len(g.get('rejecting', []))} reject perfect calibration"
        + (f"; {'; '.join(worst)}" if worst else "")
    )


# diagram --------------------------------------------------------------------------------------


def _diagram_head(doc: dict) -> list[str]:
    p, d = doc["parameters"], doc["diagram"]
    size = f"{d['width_px']}x{d['height_px']} px" if d["width_px"] else f"{d['width_in']:.3g}x{d['height_in']:.3g} in"
    return [
        f"wrote {d['path']} ({d['format'].upper()}, {size}, {d['bytes']:,} bytes): {p['kind']} diagram, "
        f"{d['mode']} mode, {d['n_panels']} panel(s), {d['n_curves_per_panel']} curve(s) per panel"
    ]


def _diagram_title(doc: dict) -> str:
    p = doc["parameters"]
    boot = f"{p['n_boot']} bootstrap resamples, seed {p['seed']}" if p["n_boot"] else "no bootstrap"
    return f"metrics shown ({_level(doc)} intervals, {boot})"


def _diagram_detail(doc, name, m, section, entry) -> str:
    if "regression_curve" in entry:  # a regression input's diagram: its numbers are calibcli regression's
        return regression_view.detail(doc, name, m, section, entry)
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
    return [
        f"calibcli recalibrate fit: {f['method']} on {f['input']['path']} ({f['input']['rows_used']} rows, "
        f"mode {f['mode']})"
        for f in doc["files"]
    ]


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
    if p.get("predictions") == "regression":
        return regression_view.evaluate_lines(doc, f)
    s = f["split"]
    how = (
        f"fit on {s['n_fit']} rows ({100 * s['fit_fraction']:g}%, seed {s['seed']}), evaluated on {s['n_test']}"
        if s["kind"] == "holdout"
        else f"fit on {s['fit_path']} ({s['n_fit']} rows), evaluated on {s['n_test']}"
    )
    lines = [f"{entry_label(f)}: mode {f['mode']}; {how}; errors on {p['ece_n_bins']} {p['ece_strategy']} bins"]
    notes = [f"T-Cal: {p['n_boot']} y-bootstrap resamples; binomial: exact test per distinct value (Bonferroni)"]
    for r in f["rows"][1:]:
        rows = r["fit_rows"]
        if rows["rows"] != "all":
            notes.append(
                f"{r['method']} fitted on the bottom-k sample of {rows['k']} of the {rows['n']} fit rows (--max-rows)"
            )
    sampled = {
        x["sample"]["n_tested"]
        for r in f["rows"]
        for x in r["test"]["per_problem"]
        if x["sample"]["method"] == "bottom-k"
    }
    if sampled:
        notes.append(f"T-Cal on the bottom-k sample of {max(sampled)} test rows (--max-rows)")
    if f["mode"] == "marginal":
        notes.append("marginal: errors aggregate over classes; marginal recalibrations renormalise each row")
    lines.append("; ".join(notes))
    verdicts = [
        f"{r['method']} {'rejects' if r['test']['reject'] else 'does not reject'} (p "
        f"{fmt_number(r['test']['p_value'])})"
        for r in f["rows"]
        if "test" in r
    ]
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
        out.append(
            f"calibcli recalibrate apply: {f['method']} ({f['mode']}) on {i['path']}: {o['rows']} rows{dropped}, "
            f"columns {', '.join(i['columns'])} recalibrated{added}; written to {o['path']} ({o['format']})"
        )
    return out


# audit ----------------------------------------------------------------------------------------


def _audit_title(doc: dict) -> str:
    p = doc["parameters"]
    return (
        f"calibcli audit: segments of {', '.join(p['segment_columns'])} and their intersections up to depth "
        f"{p['depth']}; ECCE-R on the sigma scale, p-values adjusted by {p['adjust']}, alpha {p['alpha']:g}"
    )


def _audit_lines(doc: dict, f: dict) -> list[str]:
    i, pop = f["input"], f["population"]
    columns = "; ".join(f"{c['column']}: {c['kind']}, {len(c['labels'])} value(s)" for c in f["segment_columns"])
    lines = [
        f"{entry_label(f)}: {i['rows_used']} rows{_dropped_text(i)}; mode {f['mode']}; {columns}",
        f"  {f['n_segments']} segments with rows, {f['n_segments_tested']} tested (at least "
        f"{doc['parameters']['min_segment']} rows); whole population: observed rate "
        f"{fmt_number(pop['observed_rate'])}, mean prediction {fmt_number(pop['mean_prediction'])}",
    ]
    if f["mce_sigma"] is not None:
        lines.append(
            f"  MCE {fmt_number(f['mce_sigma'])} sigma ({fmt_number(f['mce_relative'])}% relative), p-value "
            f"{fmt_number(f['mce_pvalue'])} ({doc['parameters']['mce_method']} over "
            f"{f['n_segments_tested']} segments)"
        )
    return lines


def _audit_tables(doc: dict, f: dict) -> list[DetailTable]:
    top = doc["parameters"].get("top", 10)
    shown = f["segments"][:top]
    alpha = doc["parameters"]["alpha"]
    rows = [
        [
            segment_text(s["definition"]),
            str(s["rows"]),
            fmt_number(s["observed_rate"]),
            fmt_number(s["mean_prediction"]),
            f"{fmt_number(s['o_e'])} {fmt_interval(s['o_e_ci_low'], s['o_e_ci_high'])}",
            fmt_number(s["ecce_r"]),
            fmt_number(s["ecce_r_sigma"]),
            fmt_number(s["p_adjusted"]),
            fmt_number(s["mde"]),
            ("yes" if s["p_adjusted"] is not None and s["p_adjusted"] <= alpha else "")
            if s["tested"]
            else "not tested",
        ]
        for s in shown
    ]
    more = len(f["segments"]) - len(shown)
    title = f"the {len(shown)} worst segments" + (f" of {len(f['segments'])} (--top; --json has all)" if more else "")
    return [
        DetailTable(
            columns=[
                ("segment", "left"),
                ("rows", "right"),
                ("observed", "right"),
                ("predicted", "right"),
                ("O/E [CI]", "right"),
                ("ECCE-R", "right"),
                ("ECCE-R/sigma", "right"),
                ("p adjusted", "right"),
                ("mde", "right"),
                (f"p <= {alpha:g}", "left"),
            ],
            rows=rows,
            title=title,
        )
    ]


VIEWS: dict[str, View] = {
    "audit": View(
        title=_audit_title, entry_lines=_audit_lines, tables=_audit_tables, metric_table=False, markdown_tables=True
    ),
    "ece": View(
        title=_ece_title,
        entry_lines=_ece_lines,
        detail=_ece_detail,
        per_class=ECE_PER_CLASS,
        group_line=lambda doc: _worst_group_line(doc, _gate_metric(doc, "ece_l1_plugin")),
        summary_metrics=("ece_l1_plugin", "ece_l2_debiased_dpe", "brier_score|brier_score_multiclass"),
    ),
    "smece": View(
        title=_smece_title,
        entry_lines=_smece_lines,
        detail=_smece_detail,
        group_line=lambda doc: _worst_group_line(doc, _gate_metric(doc, "smece")),
        summary_metrics=("smece",),
    ),
    "tcal": View(
        title=_tcal_title,
        entry_lines=_tcal_lines,
        summary_lines=_tcal_summary_lines,
        tables=_tcal_tables,
        group_line=_tcal_group_line,
        summary_metrics=("tcal_p_value", "tcal_statistic"),
    ),
    "diagram": View(
        head=_diagram_head,
        title=_diagram_title,
        detail=_diagram_detail,
        tail=_diagram_tail,
        summary_metrics=("ece_l1_plugin", "smece"),
    ),
    "regression": View(
        title=regression_view.title,
        entry_lines=regression_view.entry_lines,
        detail=regression_view.detail,
        group_line=lambda doc: _worst_group_line(doc, _gate_metric(doc, "mace")),
        summary_metrics=("mace", "pit_ks_pvalue", "picp_0.9", "ence", "crps|pinball"),
        problem_label="kind",
    ),
    "selective": View(
        title=lambda doc: (
            f"calibcli selective: {doc['parameters']['n_boot']} bootstrap resamples, seed {doc['parameters']['seed']}; "
            f"confidence descending, ties as blocks"
        ),
        summary_metrics=("accuracy", "aurc", "e_aurc", "augrc", "auroc", "coverage_at_risk_0.1|coverage_at_risk_0.05"),
    ),
    "recalibrate fit": View(head=_fit_head, tables=_fit_tables, problem_label="method", metric_table=False),
    "recalibrate apply": View(head=_apply_head),
    "recalibrate evaluate": View(
        title=_evaluate_title,
        entry_lines=_evaluate_lines,
        summary_lines=_evaluate_lines,
        summary_always=True,
        problem_label="method",
        summary_metrics=(
            "ece_l1_plugin",
            "ece_l2_debiased_dpe",
            "smece",
            "brier_score|brier_score_multiclass",
            "log_loss|log_loss_multiclass",
            "test_p_value",
            *regression_view.EVALUATE_METRICS,  # (regression predictions' rows: docs/commands/regression.md)
        ),
    ),
}
