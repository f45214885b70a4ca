"""The audit family (``calibcli audit``; SPEC 9): where is the model miscalibrated? Every segment of the
segment columns and their intersections, ECCE-R on the sigma scale with p-values adjusted for the number of
segments, MCE, the worst segments first; the ``--fail-above-sigma`` and ``--fail-if-any-segment`` gates."""

from __future__ import annotations

from calibcli.audit.accumulator import ROW_LIMIT, SegmentAuditAccumulator
from calibcli.audit.grid import GRID_CELLS
from calibcli.audit.options import Options
from calibcli.audit.segments import check_partitions
from calibcli.core.accumulator import per_input
from calibcli.core.documents import new_document
from calibcli.core.documents import segment_text as describe
from calibcli.core.errors import CalibcliError, GateFailed
from calibcli.core.family import Family, Plan
from calibcli.core.gates import GateSpec


def plan(o: Options, sources, engine: str, *, diagrams: int = 0) -> Plan:
    """The audit's document (its parameters; entries from :func:`calibcli.engines.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream. ``sources`` carry the segment columns. ``diagrams``: the
    worst tested segments whose binned diagrams each input's result carries (beside the whole population's;
    ``calibcli report --segment-cols`` draws them)."""
    options, columns, mode = o, o.columns, o.mode
    check_partitions(len(columns), options.depth, options.max_segments)  # before any row is read
    doc = new_document(
        "audit",
        {
            **o.shown("mode"),
            "segment_columns": list(columns),
            **o.shown(
                "depth",
                "max_values",
                "segment_bins",
                "min_segment",
                "max_segments",
                "alpha",
                "power",
                "adjust",
                "mce_method",
            ),
            "n_bins": options.n_bins,
            "segments": "the whole population, each segment column's values (categorical: the max_values most "
            "frequent, the rest 'other'; numeric: segment_bins quantile bins) and their intersections "
            "up to depth columns; missing values are a segment of their own",
            "statistic": "ECCE-R = max C_k - min C_k of the cumulative differences C_k = sum_{j<=k} w_j (y_j - s_j) "
            "over rows sorted by score, ties as blocks; on the sigma scale, sigma = "
            "sqrt(sum w_j^2 s_j (1 - s_j)) (weights normalised within the segment)",
            "p_value": "the range of standard Brownian motion on [0, 1] (asymptotic), per segment; adjusted over the "
            f"tested segments by {options.adjust}",
            "mce": "the largest ECCE-R/sigma over the tested segments; its p-value by "
            f"{options.mce_method} over the number tested",
            "o_e_interval": "(O -+ z sqrt(sum w^2 s (1 - s))) / E, normal approximation",
            "exact": f"every row of an input, up to {ROW_LIMIT:,} rows; beyond, a second pass sums every segment on "
            f"{GRID_CELLS:,} score cells (each segment's ecce_bound states the grid's error; the entry's "
            "grid section says when)",
            "weights": "weights normalised within each segment (ECCE's convention)"
            if sources.spec.weight_col is not None
            else None,
            "pool": sources.pool,
            "batch_rows": sources.batch_rows,
            "engine": engine,
            "gate": _gate(o),
            **o.shown("top"),
        },
    )

    return Plan(doc, per_input(SegmentAuditAccumulator, mode, options, diagrams=diagrams), GateSpec("mce_sigma"), 0)


def _gate(o: Options) -> dict | None:
    """The gates asked for (the report's ``parameters.gate``), or None."""
    if o.fail_above_sigma is None and not o.fail_if_any_segment:
        return None
    return {"fail_above_sigma": o.fail_above_sigma, "fail_if_any_segment": o.fail_if_any_segment}


def finish(doc: dict, o: Options) -> list[str]:
    """The audit's headline at the top of the document, and the gates' verdicts (``doc["gate"]``)."""
    _headline(doc)
    failures = gate_failures(
        doc,
        fail_above_sigma=o.fail_above_sigma,
        fail_if_any_segment=o.fail_if_any_segment,
        alpha=o.alpha,
        min_segment=o.min_segment,
    )
    gate = _gate(o)
    if gate is not None:
        doc["gate"] = {**gate, "passed": not failures, "failures": failures}
    return failures


def _headline(doc: dict) -> None:
    """The audit's headline at the top of the document, so scripts read ``.mce_sigma`` whatever the inputs: the
    input with the largest MCE (the only one, usually), named by ``input``."""
    entries = [e for e in doc["files"] if e.get("mce_sigma") is not None]
    if not entries:
        return
    worst = max(entries, key=lambda e: e["mce_sigma"])
    doc.update(
        input=worst["input"]["path"],
        mce_sigma=worst["mce_sigma"],
        mce_pvalue=worst["mce_pvalue"],
        mce_relative=worst["mce_relative"],
        n_segments_tested=worst["n_segments_tested"],
        segments=worst["segments"],
    )


def check_gate(doc: dict) -> None:
    """Exit 1 (:class:`~calibcli.core.errors.GateFailed`) when a gate failed."""
    failures = (doc.get("gate") or {}).get("failures")
    if failures:
        raise GateFailed("Gate failed: " + "; ".join(failures))


def gate_failures(
    doc: dict, *, fail_above_sigma: float | None, fail_if_any_segment: bool, alpha: float, min_segment: int
) -> list[str]:
    """The gates' verdicts over every entry: one line per failure, naming the input and the segments."""
    failures = []
    for entry in doc["files"]:
        label = entry["input"]["path"]
        mce = entry.get("mce_sigma")
        if (fail_above_sigma is not None or fail_if_any_segment) and not entry.get("n_segments_tested"):
            flags = " and ".join(
                f
                for f, on in (
                    ("--fail-above-sigma", fail_above_sigma is not None),
                    ("--fail-if-any-segment", fail_if_any_segment),
                )
                if on
            )
            rows = entry.get("population", {}).get("rows", 0)
            raise CalibcliError(
                f"{flags}: {label} has no segment of at least --min-segment {min_segment} rows (the whole population "
                f"has {rows}), so no segment is tested, MCE is undefined and the gate would test nothing: pass "
                f"--min-segment {max(min(rows, 100), 1)} or less"
            )
        if fail_above_sigma is not None and mce is not None and mce > fail_above_sigma:
            worst = entry["segments"][0]
            failures.append(
                f"{label}: MCE = {mce:.4g} sigma > {fail_above_sigma:g} (--fail-above-sigma), worst "
                f"segment {describe(worst['definition'])}"
            )
        if fail_if_any_segment:
            found = [s for s in entry["segments"] if s["p_adjusted"] is not None and s["p_adjusted"] <= alpha]
            if found:
                named = "; ".join(f"{describe(s['definition'])} (p_adjusted {s['p_adjusted']:.3g})" for s in found[:5])
                more = f" and {len(found) - 5} more" if len(found) > 5 else ""
                failures.append(
                    f"{label}: {len(found)} segment(s) miscalibrated at alpha {alpha:g} "
                    f"(--fail-if-any-segment): {named}{more}"
                )
    return failures


FAMILY = Family("audit", Options, plan, finish)
