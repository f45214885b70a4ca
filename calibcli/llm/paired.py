"""Two models' selective metrics on the same items, paired by item key (``calibcli selective CANDIDATE --against
BASELINE``): candidate minus baseline for every metric, with a paired Poisson bootstrap (an item gets the same
multiplicity in both, keyed by its position in the sorted keys, so the interval reflects the items shared)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.core.resampling import Multiplicities, percentile_intervals
from calibcli.core.results import Metric
from calibcli.llm import curves
from calibcli.llm.accumulator import _CELLS, SelectiveOptions, evaluate


@dataclass(frozen=True)
class Answers:
    """One model's answers: item keys, confidences, correctness (1/0)."""

    name: str
    keys: np.ndarray
    confidence: np.ndarray
    correct: np.ndarray


def answers_of(table, name: str) -> Answers:
    """The answers of a converted dump's table (``item``, and ``confidence``/``label`` or ``p_0..`` and ``label``)."""
    import pyarrow.compute as pc

    names = table.column_names
    if "item" not in names or "label" not in names:
        raise CalibcliError(
            f"{name}: no item key column 'item': --against pairs answers by item, which LLM dumps carry "
            f"(lm-eval's doc_hash, OpenAI's custom_id, Inspect's sample id)"
        )
    label = table["label"].to_numpy()
    probs = [c for c in names if c.startswith("p_") and c[2:].isdigit()]
    if probs:
        matrix = np.column_stack([table[c].to_numpy() for c in sorted(probs, key=lambda c: int(c[2:]))])
        conf, correct = matrix.max(axis=1), (matrix.argmax(axis=1) == label).astype(np.float64)
    elif "confidence" in names:
        conf, correct = table["confidence"].to_numpy().astype(np.float64), label.astype(np.float64)
    else:
        raise CalibcliError(f"{name}: no confidence or p_0.. columns to compare")
    keys = np.asarray(pc.cast(table["item"], "string").to_pylist(), dtype=object)
    return Answers(name, keys, conf, correct)


def _aligned(a: Answers, b: Answers) -> tuple[np.ndarray, np.ndarray]:
    oa, ob = np.argsort(a.keys, kind="stable"), np.argsort(b.keys, kind="stable")
    ka, kb = a.keys[oa], b.keys[ob]
    if len(ka) != len(kb) or not np.array_equal(ka, kb):
        only_a = len(set(ka) - set(kb))
        only_b = len(set(kb) - set(ka))
        raise CalibcliError(
            f"{b.name}: the items differ from {a.name}'s ({only_a} only in {a.name}, {only_b} only in {b.name}): "
            f"--against compares two models on the same items"
        )
    if len(set(ka)) != len(ka):
        raise CalibcliError(f"{a.name}: an item key appears twice: expected one answer per item")
    return oa, ob


#: Which way each selective metric is better (``compare``'s verdicts; ``risk_at_coverage_q`` lower,
#: ``coverage_at_risk_t`` higher, by prefix).
BETTER = {
    "accuracy": "higher",
    "aurc": "lower",
    "e_aurc": "lower",
    "aurc_oracle": "none",
    "augrc": "lower",
    "auroc": "higher",
    "risk_at_coverage_": "lower",
    "coverage_at_risk_": "higher",
}


def better(name: str, default: str | None = None) -> str | None:
    """``lower`` or ``higher``: the direction in which the selective metric ``name`` improves (``default`` for a
    name that is not one)."""
    return BETTER.get(name) or next((v for k, v in BETTER.items() if k.endswith("_") and name.startswith(k)), default)


@dataclass(frozen=True)
class PairedSides:
    """Both models' selective metrics on the items they share (in the sorted keys' order): the point estimates and,
    with ``n_boot > 0``, the replicates of one paired bootstrap (``(n_boot,)`` per metric and side)."""

    n: int
    baseline: dict[str, float]
    candidate: dict[str, float]
    baseline_replicates: dict[str, np.ndarray] | None
    candidate_replicates: dict[str, np.ndarray] | None


def paired_sides(base: Answers, cand: Answers, o: SelectiveOptions) -> PairedSides:
    """Every selective metric of both models, paired by item key: an item's bootstrap multiplicity is keyed by its
    position among the sorted keys, so the row order of either input changes no number."""
    oa, ob = _aligned(base, cand)
    sides = []
    for answers, order in ((base, oa), (cand, ob)):
        conf, wrong = answers.confidence[order], 1.0 - answers.correct[order]
        sides.append((curves.tie_blocks(conf), wrong))
    n = len(oa)

    def metrics(weight: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        (ba, wa), (bb, wb) = sides
        with np.errstate(invalid="ignore", divide="ignore"):
            return evaluate(ba.sums(weight), ba.sums(weight * wa), o), evaluate(
                bb.sums(weight), bb.sums(weight * wb), o
            )

    pa, pb = metrics(np.ones(n))
    reps_a = reps_b = None
    if o.n_boot > 0:
        reps_a, reps_b = ({k: np.empty(o.n_boot) for k in pa} for _ in range(2))
        draws = Multiplicities(o.seed, np.arange(n))
        step = max(1, _CELLS // max(n, 1))
        for start in range(0, o.n_boot, step):
            chunk = np.arange(start, min(o.n_boot, start + step))
            ra, rb = metrics(draws.block(chunk))
            for k in pa:
                reps_a[k][chunk], reps_b[k][chunk] = ra[k], rb[k]
    return PairedSides(n, {k: float(v) for k, v in pa.items()}, {k: float(v) for k, v in pb.items()}, reps_a, reps_b)


def paired_difference(base: Answers, cand: Answers, o: SelectiveOptions) -> dict[str, Metric]:
    """candidate - baseline for every selective metric, with paired bootstrap intervals."""
    both = paired_sides(base, cand, o)
    names = list(both.baseline)
    point = {k: both.candidate[k] - both.baseline[k] for k in names}
    low = high = None
    if both.baseline_replicates is not None and both.candidate_replicates is not None:
        stacked = np.vstack([both.candidate_replicates[k] - both.baseline_replicates[k] for k in names])
        stacked[~np.isfinite(stacked)] = np.nan
        low, high = percentile_intervals(stacked, o.alpha)
    out = {}
    for i, (k, value) in enumerate(point.items()):
        out[k] = Metric(
            k,
            value if np.isfinite(value) else None,  # type: ignore[arg-type]  # (AUROC undefined on one side)
            None if low is None or not np.isfinite(low[i]) else float(low[i]),
            None if high is None or not np.isfinite(high[i]) else float(high[i]),
            "paired percentile bootstrap (Poisson, per item)" if low is not None else None,
            note=f"candidate - baseline ({base.name}), {both.n} items paired by key",
        )
    return out
