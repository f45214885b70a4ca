"""How ``calibcli regression``'s report reads (docs/commands/regression.md): its title line, a line per entry
(the kind, the columns, the rows), the last column's note, the default summary columns. The ``View`` itself is
registered in :data:`calibcli.report.views.VIEWS`."""

from __future__ import annotations

from calibcli.core.documents import entry_label, fmt_interval, fmt_number


def title(doc: dict) -> str:
    p = doc["parameters"]
    boot = (
        f"{p['n_boot']} bootstrap resamples, {1 - p['alpha']:.0%} percentile intervals, seed {p['seed']}"
        if p.get("n_boot")
        else "no bootstrap"
    )
    return f"calibcli regression: {boot}"


def _columns(cols: dict) -> str:
    kind = cols["kind"]
    if kind == "gaussian":
        spread = f"std {cols['std']}" if "std" in cols else f"var {cols['var']}"
        what = f"mean {cols['mean']}, {spread}"
    elif kind == "quantiles":
        what = f"{len(cols['quantiles'])} quantiles at {', '.join(f'{v:g}' for v in cols['levels'])}"
    elif kind == "intervals":
        what = ", ".join(
            f"[{lo}, {hi}] at {lv:g}" for lo, hi, lv in zip(cols["lower"], cols["upper"], cols["levels"], strict=True)
        )
    else:
        what = f"{len(cols['samples'])} samples"
    return f"{kind}: {what}; target {cols['target']}" + (f", weights {cols['weight']}" if cols.get("weight") else "")


def entry_lines(doc: dict, f: dict) -> list[str]:
    i = f["input"]
    problem = f["problems"][0]
    dropped = f", dropped {i['rows_dropped']}" if i.get("rows_dropped") else ""
    curve = problem["calibration_curve"]
    crossed = problem.get("crossed_quantiles")
    cross = f"; crossed quantiles in {crossed['rows']} rows (sorted)" if crossed and crossed["rows"] else ""
    return [
        f"{entry_label(f)}: {f.get('rows_in_group', i['rows_used'])} rows{dropped}; {_columns(i['columns'])}; "
        f"calibration curve: {curve['form']} form at {len(curve['expected'])} levels{cross}"
    ]


def detail(doc, name, m, section, entry) -> str:
    note = m.get("note") or ""
    if name.startswith("picp_"):
        return f"nominal {name[len('picp_') :]}"
    if name == "pit_ks_pvalue":
        return f"n {entry['problems'][0]['pit_ks']['n']}; {note}"
    return note


#: ``recalibrate evaluate``'s summary columns on regression predictions (where the rows have them).
EVALUATE_METRICS = ("mace", "pit_ks_pvalue", "crps", "pinball", "nll", "picp_0.9|picp_0.95")
#: The differences the lines of ``recalibrate evaluate`` on regression predictions show, where a row has them.
EVALUATE_DIFFERENCES = ("mace", "miscalibration_area", "crps", "pinball", "nll")


def evaluate_lines(doc: dict, f: dict) -> list[str]:
    """``recalibrate evaluate`` on regression predictions: the split, then each method's difference from its
    baseline (the uncalibrated predictions written as it writes them) in the headline metrics and the coverage,
    with the paired bootstrap interval."""
    p, s = doc["parameters"], f["split"]
    how = (
        f"fit on {s['n_fit']} rows ({100 * s['fit_fraction']:g}%, seed {s['seed']}), evaluated on {s['n_test']}"
        if s["kind"] == "holdout"
        else f"fit on {s['fit_path']} ({s['n_fit']} rows), evaluated on {s['n_test']}"
    )
    boot = (
        f"{p['n_boot']} paired bootstrap resamples, {1 - p['alpha']:.0%} intervals, seed {p['seed']}"
        if p["n_boot"]
        else "no bootstrap"
    )
    lines = [f"{entry_label(f)}: {f['kind']}; {how}; {boot}"]
    for r in f["rows"][1:]:
        base = r["baseline"]
        against = (
            "uncalibrated"
            if base["method"] == "uncalibrated"
            else f"the uncalibrated {base['kind']} at the same levels"
        )
        parts = []
        names = [*EVALUATE_DIFFERENCES, *(n for n in r["difference"] if n.startswith("picp_"))]
        for name in names:
            d = r["difference"].get(name)
            if d is None:
                continue
            interval = f" {fmt_interval(d['ci_low'], d['ci_high'])}" if d["ci_low"] is not None else ""
            parts.append(f"{name} {fmt_number(d['estimate'])}{interval}")
        lines.append(f"{r['method']} ({r['what']}) minus {against}: {'; '.join(parts) or 'no metric in common'}")
    return lines
