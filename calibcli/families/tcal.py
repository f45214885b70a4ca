"""The tcal family (``calibcli tcal``; SPEC 4): is the miscalibration statistically real? T-Cal, or exact
binomial tests for discrete predictors; the ``--fail-on-reject`` gate."""

from __future__ import annotations

from calibcli.accumulators import per_input
from calibcli.accumulators.tcal import TcalInputAccumulator, TcalOptions
from calibcli.errors import CalibcliError, cli_text, flag_of, warn
from calibcli.report import GateSpec, entry_label, new_document
from calibcli.tcal import DISCRETE_RULE, STATISTIC_NAME
from calibcli.families import sources_parameters


#: What T-Cal's entries carry as their gate metric (the --fail-on-reject gate is T-Cal's own).
GATE = GateSpec("tcal_p_value")


def plan(*, mode: str | None, smoothness: float | None, null: str, n_boot: int, combine: str, discrete: str,
         alpha: float, seed: int, max_rows: int, fail_on_reject: bool, weighted: bool, group_by: tuple[str, ...],
         pool: bool, batch_rows: int, engine: str):
    """The T-Cal test's document (its parameters; entries come from :func:`calibcli.pipeline.add_entries`,
    then :func:`finish_entries`), ``new(stream)``, the input accumulator of a stream, and the options: the
    command apart from running it, so that ``calibcli report`` feeds it in one pass beside the other
    families. ``--discrete`` is already reconciled with ``--test``."""
    options = TcalOptions(smoothness=smoothness, null=null, n_boot=n_boot, combine=combine, alpha=alpha, seed=seed,
                          discrete=discrete, max_rows=max_rows)
    if null == "chebyshev" and combine == "min-p":
        raise CalibcliError(
            "--combine min-p calibrates the minimum p-value over resamples, and --null chebyshev draws none: "
            "use --combine bonferroni with chebyshev, or a resampling null"
        )
    doc = new_document(
        "tcal",
        {
            "mode": mode or "auto",
            "test": "adaptive" if smoothness is None else "single-scale",
            "smoothness": smoothness,
            "null": null,
            "n_boot": options.resamples,
            "combine": combine,
            "alpha": alpha,
            "seed": seed,
            "discrete": discrete,
            "discrete_rule": DISCRETE_RULE,
            "discrete_counts": f"per distinct value over every row, up to {options.max_distinct} values "
                               "(more: the predictor is continuous)",
            "max_rows": max_rows,
            "sample": f"T-Cal runs on every row up to {max_rows} rows, else on the bottom-k sample of {max_rows} rows "
                      "with the smallest hash of (seed, global row index)",
            "statistic": STATISTIC_NAME,
            "binning": "equal-width bins [j/m, (j+1)/m), the last closed (binary, top-label); "
            "equal-volume simplex cells (canonical, SPEC 4.3)",
            "p_value": "(1 + #{T* >= T}) / (R + 1) per level"
            if null != "chebyshev"
            else "min(1, (C_m / T_m)^2): the smallest level at which Theorem 3.1's test rejects",
            "fail_on_reject": fail_on_reject,
            **sources_parameters(weighted=weighted, group_by=group_by, pool=pool, batch_rows=batch_rows, engine=engine),
        },
    )
    return doc, per_input(TcalInputAccumulator, mode, options), options


def finish_entries(doc: dict, *, alpha: float, fail_on_reject: bool) -> list[str]:
    """After every entry is in: the tests' warnings in the command line's words (and on stderr), which
    groups reject, the ``--fail-on-reject`` gate; the gate's failures."""
    for entry in doc["files"]:
        warnings = entry["result"].get("warnings")
        if warnings:  # the report speaks the command line's language: options by their flags
            entry["result"]["warnings"] = [cli_text(w, flag_of) for w in warnings]
        for message in entry["result"].get("warnings", []):
            warn(f"{entry_label(entry)}: {message}")
    return gates(doc, alpha=alpha, fail_on_reject=fail_on_reject)


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
    if r["reject"]:
        failures.append(f"{entry_label(entry)}: {entry['test']} rejects perfect calibration "
                        f"(p-value {r['p_value']:.4g} <= alpha {alpha:g})")
    entry["gate"] = {"fail_on_reject": True, "passed": not failures, "failures": failures}
    return failures


def _summarise_groups(doc: dict) -> None:
    """Which groups reject (the worst group and spread of each p-value come from the shared summary)."""
    doc["groups"]["rejecting"] = [entry_label(e) for e in doc["files"] if e["result"]["reject"]]
