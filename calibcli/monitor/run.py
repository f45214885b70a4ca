"""``calibcli monitor``'s work (SPEC 12): one pass over the windows, the reference, the tests, the alerts.

Each window is a group (SPEC 8): the rows are read once, every window's rows into the input accumulators of
``calibcli ece`` and ``calibcli smece`` (their own ``plan``, members of one
:class:`~calibcli.core.composite.Composite`) and a bounded sample of its rows for the reference's nulls
(:class:`~calibcli.monitor.reference.ReferenceRows`); each family's entries are then finished by its command's
own code, so a window's numbers are those the command prints on that window's rows alone. The reference is
the first windows (their accumulators merged), the windows before a date, or a file read the same way.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

from calibcli.core.composite import Composite
from calibcli.core.documents import new_document, segment_text, to_json
from calibcli.core.errors import CalibcliError
from calibcli.core.family import sources_block
from calibcli.core.modes import default_mode
from calibcli.ece_family import family as binned
from calibcli.engines.base import EngineChoice
from calibcli.engines.pipeline import add_entries, engine_runner
from calibcli.io.windows import WindowedPlan
from calibcli.monitor.alerts import ADJUST_RULES, adjusted, persisting_from
from calibcli.monitor.family import Options
from calibcli.monitor.reference import ReferenceRows, log_normal_p, null_smece, wald_difference_p
from calibcli.monitor.segments import SEGMENT_RULE, new_windowed_audit
from calibcli.smooth import family as smooth

#: The default engine: this process.
LOCAL = EngineChoice()

#: The calibration test of every window, and how it is made.
TEST = "ecce_r"
TEST_RULE = (
    "ECCE-R/sigma against the range of Brownian motion (SPEC 9; exact on every row up to the ece family's row "
    "limit, a fine score grid with its error bound beyond): the windows' test of perfect calibration. SPEC 12 "
    "names T-Cal first; ECCE-R is used for every window so that one test, free of bins and bandwidths and "
    "O(n log n), is adjusted over the series"
)
#: How the drift's first window is found.
PERSIST_RULE = "the first window from which every later tested window is alerted (None: the last is calm)"
#: Where each Wald-tested metric's details are in the ece entry's Cox block.
_COX = {"calibration_in_the_large": "calibration_in_the_large", "cox_slope": "slope", "cox_intercept": "intercept"}


def monitor(sources, options: Options, engine: EngineChoice = LOCAL, reference=None) -> dict:
    """The monitor's document for ``sources`` (their datasets pooled into one series) with ``options``; ``reference``
    (a :class:`calibcli.io.streams.Sources`) is the reference file's sources when ``--reference`` is given."""
    windowing = options.windowing
    sources = series_of(sources, options)
    families = _families(options, sources, engine.name)
    audited = _audited(sources, options, engine.name)
    with engine_runner(engine.name, engine.scheduler, engine.workers) as runner:
        stream = next(iter(sources.open()))
        if audited is not None:  # opened (its segment columns checked) before any work
            audit_stream = next(iter(audited[0].open()))
        windows, described, accs = _read(runner, stream, families, options)
        audits: dict[int, dict] = {}
        if audited is not None:  # a second read with the segment columns, every window audited as calibcli audit
            found, _ = runner.run(audit_stream, lambda: audited[2](audit_stream))
            audits = found[0][1].audits() if found else {}
        if reference is not None:
            ref_stream = next(iter(replace(reference, pool=True, group_by=sources.group_by).open()))
            ref_entries, ref_described, ref_accs = _read(runner, ref_stream, families, options)
    windowing = replace(windowing, tz=stream.plan.windows.tz)
    for w in windows:
        key = w.pop("key")
        w["start"], w["end"] = windowing.bounds(key)
        if audited is not None:
            entry = dict(audits.get(key) or {})
            w["segments"] = entry.pop("segments", [])
            w["audit"] = {k: v for k, v in entry.items() if k not in ("mode", "segment_columns")}
    key = windowing.key
    series = _series(windows)
    refs = {}
    for group, members in series.items():  # the references' accumulators merged before the windows are finished
        if reference is None:
            chosen = _reference_windows(members, windows, options)
            refs[group] = _window_reference(group, chosen, windows, accs, families, options)
    _finish(windows, accs, described, families)
    if reference is not None:
        _finish(ref_entries, ref_accs, ref_described, families)
        refs = {group: _file_reference(group, ref_entries, ref_accs, ref_described) for group in series}
    for ref in refs.values():
        if "_merged" in ref:
            ref.update(_finished(ref.pop("_merged"), families))
    tests = _tests(windows, series, refs, options)
    _alerts(windows, series, tests, options)
    doc = new_document("monitor", _parameters(options, windowing, sources, engine, families))
    doc["parameters"]["audit"] = None if audited is None else {**audited[1], "rule": _segment_rule(audited[1])}
    doc["input"] = described
    doc["reference"] = strip_private([refs[g] for g in series])
    doc["windows"] = strip_private(windows)
    doc["drift"] = [_drift(group, series[group], windows) for group in series]
    doc["alerts"] = sum(1 for w in windows if w["alert"])
    doc["window_key"] = key
    del doc["files"]
    return json.loads(to_json(doc))


def series_of(sources, options: Options):
    """``sources`` as the monitor reads them: their datasets pooled into one series, windowed by ``options``."""
    if sources.spec.weight_col is not None:
        raise CalibcliError(
            "{opt:weight_col} is not taken by monitor: its resampled nulls draw unweighted rows; monitor unweighted "
            "predictions"
        )
    return replace(sources, pool=True, windows=options.windowing)


def check_inputs(sources, options: Options, reference=None) -> None:
    """Fail before any work on what the run would fail on when it opens its inputs: a weight column, a missing
    or non-time ``--time-col`` (checked against each dataset's first file), a reference that cannot be opened."""
    list(series_of(sources, options).open())
    if reference is not None:
        list(replace(reference, pool=True, group_by=sources.group_by).open())


def _audited(sources, options: Options, engine: str):
    """With ``--segment-cols``: the sources read with the segment columns (the window key first among them), the
    audit's parameters (as ``calibcli audit`` prints them) and ``new(stream)`` of the windows' audits."""
    chosen = options.audit
    if chosen is None:
        return None
    if sources.group_by:
        raise CalibcliError(
            "{opt:segment_cols} audits each window of one series: it does not take {opt:group_by} (add the group "
            "columns to {opt:segment_cols}, whose intersections are audited too)"
        )
    parameters, new = new_windowed_audit(chosen, sources, engine)
    return replace(sources, segment_by=chosen.columns), parameters, new


def _segment_rule(parameters: dict) -> str:
    return SEGMENT_RULE.format(adjust=parameters["adjust"], mce=parameters["mce_method"])


def _families(options: Options, sources, engine: str) -> dict:
    shared = ("mode", "n_boot", "alpha", "seed")  # (checked when the monitor's options were made: not again)
    ece_options = binned.Options.from_checked(options, *shared)
    smece_options = smooth.Options.from_checked(options, *shared)
    return {
        "ece": (binned.plan(ece_options, sources, engine), ece_options),
        "smece": (smooth.plan(smece_options, sources, engine), smece_options),
    }


def _read(runner, stream, families: dict, options: Options):
    """Read ``stream`` once into every window's (group's) composite: the window records (key, group, rows), the
    input section and the ``(group, composite)`` pairs, not finished yet (a reference merges some first)."""
    mode = options.mode or default_mode(stream.n_classes)
    if mode == "top-label" and stream.n_classes == 2:
        mode = "binary"

    def new():
        members = {name: plan.new(stream) for name, (plan, _) in families.items()}
        members["rows"] = ReferenceRows(mode=mode, k=options.reference_rows, seed=options.seed)
        return Composite(members)

    accumulators, described = runner.run(stream, new)
    windows = stream.plan.windows if isinstance(stream.plan, WindowedPlan) else None
    records = []
    for i, (group, acc) in enumerate(accumulators):
        values = dict(group or {})
        key = values.pop(windows.key) if windows is not None else None
        records.append({"key": key, "group": values or None, "rows": acc["rows"].n_rows, "_acc": i})
    return records, described, accumulators


def _finish(records: list[dict], accumulators: list, described: dict, families: dict) -> None:
    """Each record's metrics and test, from its composite finished by each family's own code."""
    docs: dict = {}
    for name, (plan, _) in families.items():
        docs[name] = {"parameters": {}, "files": []}
        add_entries(
            docs[name],
            described,
            [(group, acc[name]) for group, acc in accumulators],
            gate=plan.gate,
            resamples=plan.resamples,
            headlines={},
        )
    for record, ece_entry, smece_entry in zip(records, docs["ece"]["files"], docs["smece"]["files"], strict=True):
        record.update(_window_numbers(ece_entry, smece_entry))


def _window_numbers(ece_entry: dict, smece_entry: dict) -> dict:
    """A window's metrics (estimate and interval; the Cox coefficients' standard errors) and its test's p-value."""
    problem = ece_entry["problems"][0]
    smooth_metric = smece_entry["problems"][0]["metrics"]["smece"]
    metrics = {"smece": _interval(smooth_metric)}
    cox = (problem.get("clinical") or {}).get("cox") or {}
    for name, part in _COX.items():
        if name in problem["metrics"]:
            metrics[name] = {**_interval(problem["metrics"][name]), "se": (cox.get(part) or {}).get("se")}
    ecce = problem["metrics"].get(TEST) or {}
    return {"metrics": metrics, "test": {"name": TEST, "p_value": ecce.get(f"{TEST}_pvalue"), "note": ecce.get("note")}}


def _interval(metric: dict) -> dict:
    return {"estimate": metric["estimate"], "ci_low": metric.get("ci_low"), "ci_high": metric.get("ci_high")}


def _series(windows: list[dict]) -> dict:
    """The windows of each group (the whole input when ungrouped), in time order: group text -> window indices."""
    out: dict[str, list[int]] = {}
    for i, w in enumerate(windows):
        out.setdefault(json.dumps(w["group"], sort_keys=True), []).append(i)
    return out  # (the engine gives the groups sorted: by window, then by the other group columns)


def _reference_windows(members: list[int], windows: list[dict], options: Options) -> list[int]:
    if options.reference_until is not None:
        import pandas as pd

        until = pd.Timestamp(options.until, unit="ns")
        return [i for i in members if pd.Timestamp(windows[i]["start"]) < until]
    return members[: options.reference_windows or 1]


def _window_reference(group: str, chosen: list[int], windows: list[dict], accs, families: dict, options) -> dict:
    """The reference of one series made of its first windows: their accumulators merged and finished as one input."""
    label = "" if group == "null" else f" of group {group}"
    if not chosen:
        raise CalibcliError(
            f"the reference{label} has no rows: no window starts before {{opt:reference_until}} "
            f"{options.reference_until}; pass a later date, or {{opt:reference_windows}}"
        )
    for i in chosen:
        windows[i]["role"] = "reference"
    merged = copy.deepcopy(accs[windows[chosen[0]]["_acc"]][1])
    for i in chosen[1:]:
        merged.merge(copy.deepcopy(accs[windows[i]["_acc"]][1]))
    return {
        "group": json.loads(group),
        "source": "windows",
        "windows": [[windows[i]["start"], windows[i]["end"]] for i in chosen],
        "rows": merged["rows"].n_rows,
        "_rows": merged["rows"],
        "_merged": merged,  # finished once the windows' accumulators are (it holds copies of them)
    }


def _finished(composite, families: dict) -> dict:
    docs = {}
    for name, (plan, _) in families.items():
        doc: dict = {"parameters": {}, "files": []}
        add_entries(
            doc,
            {"path": "reference"},
            [(None, composite[name])],
            gate=plan.gate,
            resamples=plan.resamples,
            headlines={},
        )
        docs[name] = doc["files"][0]
    return _window_numbers(docs["ece"], docs["smece"])


def _file_reference(group: str, entries: list[dict], accs, described: dict) -> dict:
    wanted = json.loads(group)
    for e in entries:
        if e["group"] == wanted:
            return {
                "group": wanted,
                "source": "file",
                "path": described["path"],
                "rows": e["rows"],
                "metrics": e["metrics"],
                "test": e["test"],
                "_rows": accs[e["_acc"]][1]["rows"],
            }
    raise CalibcliError(
        f"the reference file {described['path']} has no rows of group {group}: expected rows of every group monitored"
    )


def _tests(windows: list[dict], series: dict, refs: dict, options: Options) -> list[tuple[int, str, float]]:
    """Every test of every monitored window: ``(window, reason kind, p-value)``; each window's comparisons."""
    tests: list[tuple[int, str, float]] = []
    for group, members in series.items():
        ref = refs[group]
        z, y = ref["_rows"].arrays()
        for i in members:
            w = windows[i]
            w.setdefault("role", "monitored")
            w["comparisons"] = {}
            if w["role"] == "reference":
                continue
            if w["rows"] < options.min_rows:
                w["too_small"] = True
                continue
            w["too_small"] = False
            if w["test"]["p_value"] is not None:
                tests.append((i, "test", float(w["test"]["p_value"])))
            if (w.get("audit") or {}).get("mce_pvalue") is not None:
                tests.append((i, "segments", float(w["audit"]["mce_pvalue"])))
            for name in options.monitored:
                mine, theirs = w["metrics"].get(name), ref["metrics"].get(name)
                if mine is None or theirs is None:
                    continue
                if name == "smece":
                    null = null_smece(z, y, w["rows"], n_null=options.n_null, seed=options.seed, window=i)
                    p, empirical = log_normal_p(mine["estimate"], null)
                    w["comparisons"][name] = {
                        "reference": theirs["estimate"],
                        "null_median": float(sorted(null)[len(null) // 2]),
                        "p_value": p,
                        "p_empirical": empirical,
                        "direction": "above the reference",
                    }
                elif mine.get("se") is not None and theirs.get("se") is not None:
                    p = wald_difference_p(mine, theirs)
                    w["comparisons"][name] = {"reference": theirs["estimate"], "p_value": p, "direction": "two-sided"}
                else:
                    continue
                tests.append((i, name, p))
    return tests


def _alerts(windows: list[dict], series: dict, tests: list, options: Options) -> None:
    adj = adjusted([p for _, _, p in tests], options.adjust)
    for w in windows:
        w["alert"] = None if w["role"] == "reference" or w.get("too_small") else False
        w["reasons"] = []
        if w.get("too_small"):
            w["reasons"].append(f"too small to test: {w['rows']} rows, below --min-rows {options.min_rows}")
    for (i, kind, _), q in zip(tests, adj, strict=True):
        w = windows[i]
        if kind == "test":
            w["test"]["p_adjusted"] = q
        elif kind == "segments":
            w["audit"]["p_adjusted"] = q
        else:
            w["comparisons"][kind]["p_adjusted"] = q
        if q < options.alpha:
            w["alert"] = True
            w["reasons"].append(_reason(w, kind, q, options.alpha))


def _reason(w: dict, kind: str, q: float, alpha: float) -> str:
    if kind == "test":
        return f"miscalibrated: the ECCE-R test rejects perfect calibration (adjusted p {q:.3g})"
    if kind == "segments":
        worst = next(s for s in w["segments"] if s["definition"] and s["tested"])
        flagged = sum(1 for s in w["segments"] if s["p_adjusted"] is not None and s["p_adjusted"] <= alpha)
        return (
            f"segment {segment_text(worst['definition'])} is miscalibrated: ECCE-R {worst['ecce_r_sigma']:.3g} sigma, "
            f"the window's worst of {w['audit']['n_segments_tested']} tested (the audit's MCE, adjusted p {q:.3g}); "
            f"{flagged} segment(s) flagged by the window's audit"
        )
    c = w["comparisons"][kind]
    mine = w["metrics"][kind]["estimate"]
    word = "above" if kind == "smece" else ("above" if mine > c["reference"] else "below")
    return f"{kind} {mine:.4g} is {word} the reference's {c['reference']:.4g} (adjusted p {q:.3g})"


def _drift(group: str, members: list[int], windows: list[dict]) -> dict:
    alerts = [windows[i]["alert"] for i in members]
    start = persisting_from(alerts)
    if start is None:
        return {"group": json.loads(group), "from": None, "window": None, "rule": PERSIST_RULE}
    return {
        "group": json.loads(group),
        "from": windows[members[start]]["start"],
        "window": members[start],
        "rule": PERSIST_RULE,
    }


def _parameters(options: Options, windowing, sources, engine, families: dict) -> dict:
    reference = (
        {"file": options.reference}
        if options.reference is not None
        else {"until": options.reference_until}
        if options.reference_until is not None
        else {"windows": options.reference_windows or 1}
    )
    return {
        "windows": windowing.describe(),
        **options.shown("mode"),
        "reference": reference,
        "metrics": list(options.monitored),
        "test": TEST,
        "test_rule": TEST_RULE,
        "comparison_rules": {
            "smece": f"one-sided: the window's SmoothECE against {options.n_null} resamples of its size from the "
            f"reference's rows (at most {options.reference_rows}, bottom-k beyond), p from a normal law on their "
            "logarithms",
            "wald": "two-sided Wald test of equal coefficients, window and reference independent rows",
        },
        "adjust": options.adjust,
        "adjust_rule": ADJUST_RULES[options.adjust],
        "alpha": options.alpha,
        "n_boot": options.n_boot,
        "n_null": options.n_null,
        "reference_rows": options.reference_rows,
        "min_rows": options.min_rows,
        "seed": options.seed,
        "fail_on_alert": options.fail_on_alert,
        **sources_block(sources, engine.name),
        "engine": engine.name,
        "documents": {name: plan.doc["parameters"] for name, (plan, _) in families.items()},
    }


def strip_private(doc):
    """The document without its working fields (names starting with ``_``)."""
    if isinstance(doc, dict):
        return {k: strip_private(v) for k, v in doc.items() if not k.startswith("_")}
    if isinstance(doc, list):
        return [strip_private(v) for v in doc]
    return doc
