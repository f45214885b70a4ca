"""``calibcli selective``: selective prediction, declared once (SPEC 11): how often is the model wrong among the
answers it is most sure of? Any input with a confidence: LLM dumps (``--from``) and classifiers alike (top-label:
the confidence of the predicted class, correct when it is the label; one probability column: the confidence that
the answer is right, the label saying whether it is)."""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.core.declarations import GATE_METRIC, MODE
from calibcli.core.documents import entry_label, new_document
from calibcli.core.errors import CalibcliError
from calibcli.core.family import Family, GatedMetrics, Plan, sources_block
from calibcli.core.gates import GateSpec, check_gate
from calibcli.core.validation import declared, option
from calibcli.llm.accumulator import HIGHER_IS_BETTER, NOTES, SelectiveAccumulator, SelectiveOptions, metric_names
from calibcli.llm.curves import RISK_SLACK

SELECTIVE_MODES = ("binary", "top-label")


def _levels(text: str, what: str, flag: str) -> tuple[float, ...]:
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            v = float(part)
        except ValueError:
            raise CalibcliError(f"{flag} has {part!r}: expected {what} between 0 and 1, comma-separated") from None
        if not 0 < v <= 1:
            raise CalibcliError(f"{flag} has {v:g}: expected {what} in (0, 1]")
        out.append(v)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class Options(GatedMetrics):
    """``selective``'s options: the levels, the gated metric, the bootstrap."""

    mode: str | None = declared(
        None,
        MODE.narrowed(
            SELECTIVE_MODES,
            help="top-label (default with a column per class: the predicted class's probability, correct when it "
            "is the label) or binary (one column: the confidence that the answer is right, the label 1 when it is).",
        ),
    )
    coverage: str = option(
        "0.5,0.8,0.9,0.95", "--coverage", help="Coverages q for risk_at_coverage_q (comma-separated, in (0, 1])."
    )
    risk: str = option(
        "0.05,0.1,0.2", "--risk", help="Target risks t for coverage_at_risk_t (comma-separated, in (0, 1])."
    )
    metric: str = declared("aurc", GATE_METRIC)
    fail_below: float | None = option(
        None,
        "--fail-below",
        help="Exit 1 when the gated metric's estimate is below this value (for accuracy, auroc, coverage_at_risk_t).",
    )
    against: str | None = option(
        None,
        "--against",
        help="A baseline (an LLM dump of the same items): each input's metrics minus the baseline's, with a paired "
        "bootstrap interval (answers paired by item key).",
    )
    diagram: str | None = option(
        None, "--diagram", help="Also draw the risk-coverage curve of every input to this image (PNG, SVG or PDF)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.coverages  # noqa: B018  (checked when made)
        self.risks  # noqa: B018

    @property
    def coverages(self) -> tuple[float, ...]:
        return _levels(self.coverage, "coverages", "--coverage")

    @property
    def risks(self) -> tuple[float, ...]:
        return _levels(self.risk, "risks", "--risk")

    @property
    def gate_metric(self) -> str:
        return self.metric

    @property
    def selective(self) -> SelectiveOptions:
        return SelectiveOptions(self.coverages, self.risks, self.n_boot, self.alpha, self.seed)


def plan(o: Options, sources, engine: str) -> Plan:
    names = metric_names(o.selective)
    if o.metric not in names:
        raise CalibcliError(f"--metric is {o.metric!r}: expected one of {', '.join(names)}")
    if o.fail_below is not None and o.metric not in HIGHER_IS_BETTER and not o.metric.startswith(HIGHER_IS_BETTER):
        raise CalibcliError(
            f"--fail-below gates a metric where larger is better (accuracy, auroc, coverage_at_risk_t), not "
            f"{o.metric}: use --fail-above for it"
        )
    parameters = {
        "mode": o.mode or "auto",
        "coverages": list(o.coverages),
        "risks": list(o.risks),
        "order": "confidence descending; equal confidences are one block, its errors spread evenly",
        "risk": "r_k = errors among the k most confident / k",
        "estimators": {
            **NOTES,
            "risk_at_coverage_q": "r_k at k = ceil(q n)",
            "coverage_at_risk_t": f"max{{k/n : r_k <= t}} (0 when none; relative slack {RISK_SLACK:g})",
        },
        "n_boot": o.n_boot,
        "bootstrap": "Poisson, keyed by (seed, global row index), per row",
        "alpha": o.alpha,
        "confidence_level": 1 - o.alpha,
        "seed": o.seed,
        "metric": o.metric,
        **sources_block(sources, engine),
    }
    doc = new_document("selective", parameters)
    options = o.selective

    def new(stream):
        one_column = len(stream.prob_columns) == 1 and not stream.plan.columns.vector_column
        mode = o.mode or ("binary" if one_column else "top-label")
        if mode == "top-label" and one_column:
            raise CalibcliError(
                f"{stream.name}: --mode top-label needs a probability column per class; the input has one column "
                f"(a confidence): use --mode binary"
            )
        return SelectiveAccumulator(mode=mode, options=options)

    return Plan(doc, new, GateSpec(o.metric), o.n_boot)


def gate(doc: dict, o: Options) -> list[str]:
    """The gates' failures on every entry (``--fail-above``, ``--fail-above-upper``, ``--fail-below``), written
    into the entries and ``doc['gate']``."""
    spec = GateSpec(o.metric, o.fail_above, o.fail_above_upper)
    if not spec.active and o.fail_below is None:
        return []
    failures: list[str] = []
    for entry in doc["files"]:
        label = entry_label(entry)
        metric = entry["problems"][0]["metrics"][o.metric]
        verdict = check_gate(spec, label, metric)
        est = metric.get("estimate")
        if o.fail_below is not None and (est is None or est < o.fail_below):
            shown = "undefined" if est is None else f"{est:.6g}"
            verdict["failures"].append(f"{label}: {o.metric} = {shown} < {o.fail_below:g} (--fail-below)")
            verdict["passed"] = False
        verdict["fail_below"] = o.fail_below
        entry["gate"] = verdict
        failures += verdict["failures"]
    doc["gate"] = {**spec.describe(), "fail_below": o.fail_below, "passed": not failures, "failures": failures}
    return failures


FAMILY = Family("selective", Options, plan)
