"""The tcal family (``calibcli tcal``; SPEC 4): is the miscalibration statistically real? T-Cal, or exact
binomial tests for discrete predictors; the ``--fail-on-reject`` gate."""

from __future__ import annotations

from calibcli.core.accumulator import per_input
from calibcli.core.documents import entry_label, new_document
from calibcli.core.errors import CalibcliError, cli_text, flag_of, warn
from calibcli.core.family import Family, Plan, sources_block
from calibcli.core.gates import GateSpec
from calibcli.tcal.accumulator import TcalInputAccumulator
from calibcli.tcal.binomial import DISCRETE_RULE
from calibcli.tcal.options import Options
from calibcli.tcal.results import STATISTIC_NAME

#: What T-Cal's entries carry as their gate metric (the --fail-on-reject gate is T-Cal's own).
GATE = GateSpec("tcal_p_value")


def plan(o: Options, sources, engine: str) -> Plan:
    """The T-Cal test's document (its parameters; entries come from :func:`calibcli.engines.pipeline.add_entries`,
    then :func:`finish_entries`) and ``new(stream)``, the input accumulator of a stream: the command apart from
    running it, so that ``calibcli report`` feeds it in one pass beside the other families."""
    discrete = o.wanted_discrete
    doc = new_document(
        "tcal",
        {
            **o.shown("mode"),
            "test": "adaptive" if o.smoothness is None else "single-scale",
            **o.shown("smoothness", "null"),
            "n_boot": o.resamples,
            **o.shown("combine", "alpha", "seed"),
            "discrete": discrete,
            "discrete_rule": DISCRETE_RULE,
            "discrete_counts": f"per distinct value over every row, up to {o.max_distinct} values "
            "(more: the predictor is continuous)",
            "max_rows": o.max_rows,
            "sample": f"T-Cal runs on every row up to {o.max_rows} rows, else on the bottom-k sample of {o.max_rows} "
            "rows with the smallest hash of (seed, global row index)",
            "statistic": STATISTIC_NAME,
            "binning": "equal-width bins [j/m, (j+1)/m), the last closed (binary, top-label); "
            "equal-volume simplex cells (canonical, docs: How it is computed §4.3)",
            "p_value": "(1 + #{T* >= T}) / (R + 1) per level"
            if o.null != "chebyshev"
            else "min(1, (C_m / T_m)^2): the smallest level at which Theorem 3.1's test rejects",
            "fail_on_reject": o.fail_on_reject,
            **sources_block(sources, engine),
        },
    )
    return Plan(doc, per_input(TcalInputAccumulator, o.mode, o), GATE, o.resamples)


def finish(doc: dict, o: Options) -> list[str]:
    """:func:`finish_entries` with the options' level and gate."""
    return finish_entries(doc, alpha=o.alpha, fail_on_reject=o.fail_on_reject)


def finish_entries(doc: dict, *, alpha: float, fail_on_reject: bool) -> list[str]:
    """After every entry is in: the tests' warnings in the command line's words (and on stderr), which
    groups reject, the ``--fail-on-reject`` gate; the gate's failures."""
    for entry in doc["files"]:
        warnings = entry["result"].get("warnings")
        if warnings:  # the report speaks the command line's language: options by their flags
            entry["result"]["warnings"] = [cli_text(w, flag_of) for w in warnings]
    failures = gates(doc, alpha=alpha, fail_on_reject=fail_on_reject)  # (a gate that cannot decide: its one line)
    for entry in doc["files"]:
        for message in entry["result"].get("warnings", []):
            warn(f"{entry_label(entry)}: {message}")
    return failures


def gates(doc: dict, *, alpha: float, fail_on_reject: bool) -> list[str]:
    """Which groups reject (the worst group and spread of each p-value come from the shared summary) and
    the ``--fail-on-reject`` gate; its failures."""
    if "groups" in doc:
        _summarise_groups(doc)
    failures = [f for entry in doc["files"] for f in _gate(entry, alpha, fail_on_reject)]
    if fail_on_reject:
        doc["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    return failures


def _gate(entry: dict, alpha: float, active: bool) -> list[str]:
    """The ``--fail-on-reject`` verdict of one entry (``entry["gate"]``); the failure messages."""
    if not active:
        return []
    r = entry["result"]
    failures = []
    p = r.get("p_value")
    if r.get("can_reject") is False or p is None or p != p:
        why = next((w for w in r.get("warnings", []) if "cannot reject" in w), "its p-value is undefined")
        raise CalibcliError(
            f"{{opt:fail_on_reject}}: {entry_label(entry)}: the test cannot decide, so the gate would pass whatever "
            f"the data ({why})"
        )
    if r["reject"]:
        failures.append(
            f"{entry_label(entry)}: {entry['test']} rejects perfect calibration "
            f"(p-value {r['p_value']:.4g} <= alpha {alpha:g})"
        )
    entry["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    return failures


def _summarise_groups(doc: dict) -> None:
    """Which groups reject (the worst group and spread of each p-value come from the shared summary)."""
    doc["groups"]["rejecting"] = [entry_label(e) for e in doc["files"] if e["result"]["reject"]]


FAMILY = Family("tcal", Options, plan, finish)
