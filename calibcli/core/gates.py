"""Gates (``--fail-above``, ``--fail-above-upper`` on ``--metric``): the spec a family's plan carries, the
verdict on each entry's headline metric, and the document's summary of them. The exit code a failed gate
gives (1) is raised where the report is emitted (:func:`calibcli.report.emit.emit_with_gates`).
"""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.core.errors import CalibcliError

#: Why a metric a gate may name is undefined (null) on some inputs.
UNDEFINED_BECAUSE = {
    "brier_skill_score": "every label is of one class, so the base rate's Brier score, its denominator, is 0",
}


@dataclass(frozen=True)
class GateSpec:
    """``--fail-above`` / ``--fail-above-upper`` on one metric (``--metric``)."""

    metric: str
    fail_above: float | None = None
    fail_above_upper: float | None = None

    @property
    def active(self) -> bool:
        return self.fail_above is not None or self.fail_above_upper is not None

    def describe(self) -> dict:
        return {"metric": self.metric, "fail_above": self.fail_above, "fail_above_upper": self.fail_above_upper}


def check_gate(spec: GateSpec, file_label: str, metric: dict | None) -> dict:
    """Evaluate the gate on one file's headline metric (a JSON metric dict); returns the verdict."""
    if metric is None:
        raise CalibcliError(f"--metric {spec.metric}: no such metric in the report of {file_label}")
    failures = []
    est = metric.get("estimate")
    if est is None or est != est:  # undefined (None, NaN): neither above nor below the threshold
        flag = "--fail-above" if spec.fail_above is not None else "--fail-above-upper"
        raise CalibcliError(
            f"{flag} gates on {spec.metric}, which is undefined for {file_label} (null in the report: "
            f"{UNDEFINED_BECAUSE.get(spec.metric, 'it cannot be computed from these rows')}), so the gate can "
            f"neither pass nor fail: gate on another --metric"
        )
    if spec.fail_above is not None and est is not None and est > spec.fail_above:
        failures.append(f"{file_label}: {spec.metric} = {est:.6g} > {spec.fail_above:g} (--fail-above)")
    if spec.fail_above_upper is not None:
        upper = metric.get("ci_high")
        if upper is not None and upper != upper or upper is None and metric.get("ci_method"):
            raise CalibcliError(
                f"--fail-above-upper gates on the upper end of {spec.metric}'s interval, which is undefined for "
                f"{file_label} (the bootstrap's resamples give no value), so the gate can neither pass nor fail: "
                f"gate on --fail-above or on another --metric"
            )
        if upper is None:
            raise CalibcliError(
                f"--fail-above-upper needs a confidence interval for {spec.metric}, but none was computed: "
                f"pass --n-boot N (N > 0)"
            )
        if upper > spec.fail_above_upper:
            failures.append(
                f"{file_label}: upper end of the confidence interval of {spec.metric} = {upper:.6g} > "
                f"{spec.fail_above_upper:g} (--fail-above-upper)"
            )
    return {
        **spec.describe(),
        "estimate": est,
        "ci_high": metric.get("ci_high"),
        "passed": not failures,
        "failures": failures,
    }


def finish_gates(doc: dict, spec: GateSpec) -> bool:
    """Summarise the per-file gate verdicts into ``doc['gate']``; True when every file passed."""
    if not spec.active:
        return True
    verdicts = [f["gate"] for f in doc["files"] if "gate" in f]
    passed = all(v["passed"] for v in verdicts)
    doc["gate"] = {**spec.describe(), "passed": passed, "failures": [m for v in verdicts for m in v["failures"]]}
    return passed
