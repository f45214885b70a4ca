"""``calibcli selective``'s accumulator: every row's confidence and correctness (the curve needs all of them in
confidence order), merged by concatenation and ordered by global row index before finishing, so the result
does not depend on batches, files or workers (SPEC 8). Bootstrap replicates are SPEC 8's per-row Poisson
multiplicities keyed by ``(seed, global row index)``, applied to the tie blocks' sums (:mod:`calibcli.llm.curves`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core.accumulator import Accumulator
from calibcli.core.errors import CalibcliError
from calibcli.core.modes import binary_problems
from calibcli.core.resampling import Multiplicities, in_threads, percentile_intervals
from calibcli.core.results import Metric
from calibcli.llm import curves
from calibcli.llm.kernels import selective_sums, selective_totals

#: Points of the risk-coverage curve kept in a report (evenly spaced in coverage; every block end below it).
CURVE_POINTS = 201

#: Replicate x row cells drawn at once (memory stays near 8 bytes times this).
_CELLS = 1 << 22

#: Draws (rows x replicates) from which the bootstrap runs its compiled loops (whole weights): NumPy's form costs
#: about a microsecond a draw, so from here on they pay for loading Numba (0.4 s in a process's first call).
_COMPILED_CELLS = 1 << 20

#: Replicates per call of the compiled loops (a job of the bootstrap's threads).
_COMPILED_STEP = 64

#: Metrics whose larger values are better (the gate's --fail-below reads them).
HIGHER_IS_BETTER = ("accuracy", "auroc", "coverage_at_risk")


@dataclass(frozen=True)
class SelectiveOptions:
    coverages: tuple[float, ...]
    risks: tuple[float, ...]
    n_boot: int
    alpha: float
    seed: int


def metric_names(o: SelectiveOptions) -> list[str]:
    return [
        "accuracy",
        "aurc",
        "e_aurc",
        "aurc_oracle",
        "augrc",
        "auroc",
        *(f"risk_at_coverage_{q:g}" for q in o.coverages),
        *(f"coverage_at_risk_{t:g}" for t in o.risks),
    ]


def evaluate(s: np.ndarray, e: np.ndarray, o: SelectiveOptions) -> dict[str, np.ndarray]:
    """Every metric of blocks ``s``, ``e`` (any leading axes)."""
    n, errors = s.sum(axis=-1), e.sum(axis=-1)
    aurc = curves.aurc(s, e)
    oracle = curves.oracle_aurc(n, errors)
    out = {
        "accuracy": 1.0 - errors / n,
        "aurc": aurc,
        "e_aurc": aurc - oracle,
        "aurc_oracle": oracle,
        "augrc": curves.augrc(s, e),
        "auroc": curves.auroc(s, e),
    }
    for q in o.coverages:
        out[f"risk_at_coverage_{q:g}"] = curves.risk_at_coverage(s, e, q)
    parts = curves.coverage_parts(s, e) if o.risks else None  # (once for every level)
    for t in o.risks:
        out[f"coverage_at_risk_{t:g}"] = curves.coverage_at_risk(s, e, t, parts)
    return out


def numpy_replicates(blocks, index, weight, wrong, o: SelectiveOptions, progress=None) -> dict[str, np.ndarray]:
    """Every metric under each of ``o.n_boot`` replicates: :func:`evaluate` on the blocks' sums of a drawn
    ``(replicates, rows)`` block of multiplicities (the reference form)."""
    reps = {name: np.empty(o.n_boot) for name in metric_names(o)}
    draws = Multiplicities(o.seed, index)
    step = max(1, _CELLS // max(len(index), 1))
    for start in range(0, o.n_boot, step):
        chunk = np.arange(start, min(o.n_boot, start + step))
        m = draws.block(chunk)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = evaluate(blocks.sums(m * weight), blocks.sums(m * wrong), o)
        for name, got in values.items():
            reps[name][chunk] = got
        if progress is not None:
            progress(len(chunk))
    return reps


def compiled_replicates(blocks, index, weight, wrong, o: SelectiveOptions, progress=None) -> dict[str, np.ndarray]:
    """:func:`numpy_replicates` by the compiled loops of :mod:`calibcli.llm.kernels` (whole weights only): the same
    multiplicities, each replicate's sums made row after row in confidence order, blocks of replicates on
    :func:`calibcli.core.resampling.in_threads`'s threads; within 1e-12 relative of the NumPy form."""
    order = blocks.order
    draws = Multiplicities(o.seed, index[order])
    w = np.ascontiguousarray(weight[order], dtype=np.float64)
    wr = np.ascontiguousarray(wrong[order], dtype=np.float64)
    starts = np.ascontiguousarray(blocks.starts, dtype=np.int64)
    qs = np.asarray(o.coverages, dtype=np.float64)
    ts = np.asarray(o.risks, dtype=np.float64)

    def job(r0: int, r1: int) -> tuple[int, dict[str, np.ndarray]]:
        positions, keys, thresholds = draws.stream(np.arange(r0, r1))
        R = len(keys)
        n, errors = np.empty(R), np.empty(R)
        selective_totals(positions, keys, w, wr, thresholds, n, errors)
        ranks = np.ascontiguousarray(np.maximum(np.ceil(np.round(np.multiply.outer(qs, n), 9)), 1.0))
        sums, augrc, auroc = np.empty(R), np.empty(R), np.empty(R)
        risk, reach = np.empty((len(qs), R)), np.empty((len(ts), R))
        selective_sums(
            positions, keys, w, wr, starts, thresholds, ranks, ts, curves.RISK_SLACK, sums, augrc, auroc, risk, reach
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            aurc = sums / n
            oracle = curves.oracle_aurc(n, errors)
            pairs = (n - errors) * errors
            out = {
                "accuracy": 1.0 - errors / n,
                "aurc": aurc,
                "e_aurc": aurc - oracle,
                "aurc_oracle": oracle,
                "augrc": augrc / n**2,
                "auroc": (pairs - auroc) / pairs,
            }
            for i, q in enumerate(o.coverages):
                out[f"risk_at_coverage_{q:g}"] = risk[i]
            for i, t in enumerate(o.risks):
                out[f"coverage_at_risk_{t:g}"] = reach[i] / n
        return r0, out

    reps = {name: np.empty(o.n_boot) for name in metric_names(o)}

    def done(result: tuple[int, dict[str, np.ndarray]]) -> None:
        r0, values = result
        for name, got in values.items():
            reps[name][r0 : r0 + len(got)] = got
        if progress is not None:
            progress(len(values["aurc"]))

    in_threads(job, [(r0, min(o.n_boot, r0 + _COMPILED_STEP)) for r0 in range(0, o.n_boot, _COMPILED_STEP)], done)
    return reps


NOTES = {
    "accuracy": "1 - errors / n",
    "aurc": "(1/n) sum_k r_k (Geifman et al. 2019)",
    "e_aurc": "AURC - AURC*, AURC* exact for the order ranking every correct answer first",
    "aurc_oracle": "AURC*: correct answers first",
    "augrc": "(1/n) sum_k (k/n) r_k (Traub et al. 2024), Riemann form",
    "auroc": "P(conf correct > conf wrong) + P(tie)/2",
}


@dataclass(frozen=True)
class SelectiveReport:
    mode: str
    n: int
    weight_total: float
    ties: dict
    metrics: dict[str, Metric]
    curve: dict
    notes: tuple[str, ...]

    @property
    def problems(self) -> list:
        return [self]

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "notes": list(self.notes),
            "n": self.n,
            "ties": dict(self.ties),
            "problems": [
                {
                    "name": self.mode,
                    "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
                    "risk_coverage_curve": self.curve,
                }
            ],
        }

    def headline(self) -> dict:
        return dict(self.metrics)


class SelectiveAccumulator(Accumulator):
    """The rows of one input (or group): row index, confidence, correctness, weight."""

    kind = "selective"
    state_name = "selective state"
    same, same_message = ("mode",), "selective states of different modes cannot be merged"
    merge_rules = {"parts": "concat", "n": "sum", "weighted": "max"}

    def __init__(self, *, mode: str, options: SelectiveOptions):
        self.mode = mode
        self.options = options
        self.parts: list = []
        self.n = 0
        self.weighted = False

    def update(self, row_index, probs, labels, w=None) -> SelectiveAccumulator:
        (problem,) = binary_problems(labels, probs, mode=self.mode, sample_weight=w)
        weight = np.ones(len(problem.z)) if w is None else np.asarray(w, dtype=np.float64)
        self.weighted = self.weighted or w is not None
        self.parts.append(
            (
                np.asarray(row_index, dtype=np.int64),
                np.asarray(problem.z, dtype=np.float64),
                problem.y.astype(np.int8),
                weight,
            )
        )
        self.n += len(problem.z)
        return self

    @property
    def n_rows(self) -> int:
        return self.n

    @property
    def problems(self) -> list:
        return [self.mode]

    def needs_second_pass(self) -> bool:
        return False

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Row index, confidence, correctness, weight, in global row order."""
        index, conf, correct, weight = (np.concatenate([p[i] for p in self.parts]) for i in range(4))
        order = np.argsort(index, kind="stable")
        return index[order], conf[order], correct[order], weight[order]

    def result(self, progress=None) -> SelectiveReport:
        if self.n == 0:
            raise CalibcliError("no rows: expected at least one answer with a confidence")
        o = self.options
        index, conf, correct, weight = self.rows()
        blocks = curves.tie_blocks(conf)
        wrong = weight * (1 - correct)
        s, e = blocks.sums(weight), blocks.sums(wrong)
        point = evaluate(s, e, o)
        low = high = None
        if o.n_boot > 0:
            if len(index) * o.n_boot >= _COMPILED_CELLS and bool(np.all(weight == np.floor(weight))):
                reps = compiled_replicates(blocks, index, weight, wrong, o, progress)
            else:
                reps = numpy_replicates(blocks, index, weight, wrong, o, progress)
            stacked = np.vstack([reps[name] for name in point])
            stacked[~np.isfinite(stacked)] = np.nan
            low, high = percentile_intervals(stacked, o.alpha)
        metrics = {}
        for i, (name, estimate) in enumerate(point.items()):
            v = float(estimate)
            finite = np.isfinite(v)
            note = NOTES.get(name) or ("r_k at k = ceil(q n)" if name.startswith("risk_at") else "max{k/n : r_k <= t}")
            metrics[name] = Metric(
                name,
                v if finite else None,  # type: ignore[arg-type]  # (undefined: AUROC with one class)
                None if low is None or not np.isfinite(low[i]) else float(low[i]),
                None if high is None or not np.isfinite(high[i]) else float(high[i]),
                "percentile bootstrap (Poisson, per row)" if low is not None else None,
                note=note if finite else note + "; undefined here (every answer right, or every one wrong)",
            )
        coverage, risk = curves.risk_curve(s, e)
        if len(coverage) > CURVE_POINTS:
            pick = np.unique(np.searchsorted(coverage, np.linspace(0, 1, CURVE_POINTS)).clip(0, len(coverage) - 1))
            coverage, risk = coverage[pick], risk[pick]
        ties = {**blocks.tie_counts(), "rule": "tie blocks: errors spread evenly within a block"}
        notes = (
            (f"{ties['tie_blocks']} tie block(s) holding {ties['rows_in_ties']} rows: their errors spread evenly",)
            if ties["tie_blocks"]
            else ()
        )
        return SelectiveReport(
            self.mode,
            self.n,
            float(s.sum()),
            ties,
            metrics,
            {"coverage": coverage.tolist(), "risk": risk.tolist()},
            notes,
        )
