"""The audit family (``calibcli audit``; SPEC 9): where is the model miscalibrated? Every segment of the
segment columns and their intersections, ECCE-R on the sigma scale with p-values adjusted for the number of
segments, MCE, the worst segments first; the ``--fail-above-sigma`` and ``--fail-if-any-segment`` gates."""

from __future__ import annotations

from dataclasses import asdict

from calibcli.accumulators.segment_grid import GRID_CELLS
from calibcli.accumulators.segments import ROW_LIMIT, SegmentAuditAccumulator
from calibcli.audit import AuditOptions
from calibcli.modes import default_mode
from calibcli.entries import segment_text as describe
from calibcli.report import new_document


def plan(*, mode: str | None, columns: tuple[str, ...], options: AuditOptions, weighted: bool, pool: bool,
         batch_rows: int, engine: str, fail_above_sigma: float | None, fail_if_any_segment: bool, diagrams: int = 0):
    """The audit's document (its parameters; entries from :func:`calibcli.pipeline.add_entries`) and
    ``new(stream)``, the input accumulator of a stream. Options are checked already. ``diagrams``: the worst
    tested segments whose binned diagrams each input's result carries (beside the whole population's)."""
    doc = new_document(
        "audit",
        {
            "mode": mode or "auto",
            "segment_columns": list(columns),
            **asdict(options),
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
            "weights": "weights normalised within each segment (ECCE's convention)" if weighted else None,
            "pool": pool,
            "batch_rows": batch_rows,
            "engine": engine,
            "gate": {"fail_above_sigma": fail_above_sigma, "fail_if_any_segment": fail_if_any_segment}
            if fail_above_sigma is not None or fail_if_any_segment else None,
        },
    )

    def new(stream):
        return SegmentAuditAccumulator(mode=mode or default_mode(stream.n_classes), n_classes=stream.n_classes,
                                       class_names=stream.class_names, options=options, columns=columns,
                                       diagrams=diagrams)

    return doc, new


def gate_failures(doc: dict, *, fail_above_sigma: float | None, fail_if_any_segment: bool, alpha: float) -> list[str]:
    """The gates' verdicts over every entry: one line per failure, naming the input and the segments."""
    failures = []
    for entry in doc["files"]:
        label = entry["input"]["path"]
        mce = entry.get("mce_sigma")
        if fail_above_sigma is not None and mce is not None and mce > fail_above_sigma:
            worst = entry["segments"][0]
            failures.append(f"{label}: MCE = {mce:.4g} sigma > {fail_above_sigma:g} (--fail-above-sigma), worst "
                            f"segment {describe(worst['definition'])}")
        if fail_if_any_segment:
            found = [s for s in entry["segments"] if s["p_adjusted"] is not None and s["p_adjusted"] <= alpha]
            if found:
                named = "; ".join(f"{describe(s['definition'])} (p_adjusted {s['p_adjusted']:.3g})" for s in found[:5])
                more = f" and {len(found) - 5} more" if len(found) > 5 else ""
                failures.append(f"{label}: {len(found)} segment(s) miscalibrated at alpha {alpha:g} "
                                f"(--fail-if-any-segment): {named}{more}")
    return failures
