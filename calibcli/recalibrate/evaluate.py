"""``recalibrate evaluate`` on streams (SPEC 5, 8): the holdout split, the fit part, before/after on the test part.

A holdout evaluation fits on a seeded fraction F of the rows and measures on the others. On a stream the
split is made by row identity, so it does not depend on batch sizes, file order or workers: the fit part is
the ``k = round(F n)`` rows with the smallest :func:`calibcli.core.resampling.row_hash` of ``(seed, global row
index)`` (the hash is a bijection of 64-bit integers, so there are no ties), the test part every other row.
Three passes, each a mergeable accumulator that an engine can run:

1. :class:`SplitCounter`: the rows ``n`` and a histogram of the hashes' top 16 bits. The k-th smallest hash
   then lies in a known bucket, after ``before`` rows of the smaller buckets (about n / 2^16 rows per bucket).
2. :class:`HoldoutFitAccumulator`: the rows of the smaller buckets go into a
   :class:`~calibcli.recalibrate.fit.FitAccumulator` (at most ``max_rows`` rows plus exact per-value sums),
   the boundary bucket's rows into a bottom-``rank`` :class:`~calibcli.core.rows.RowSample`; at the
   end those join the fit part, and the largest hash among them is the split's threshold.
3. :class:`EvaluateAccumulator`: the rows whose hash exceeds the threshold (every row of FILE when the fit
   data came from another file), through each calibrator per batch, into the accumulators of the ``ece``,
   ``smece`` and ``tcal`` commands, per method and for the uncalibrated predictions. The calibrators travel
   as their JSON documents, so a distributed engine can rebuild them on its workers.

Memory stays flat in n: the histogram, at most ``max_rows`` fit rows and the per-value sums, the boundary
bucket, and the measuring accumulators' bounded states.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from calibcli.calibrators import calibrator_from_dict
from calibcli.core.accumulator import Accumulator, OnePass
from calibcli.core.documents import metric_json
from calibcli.core.modes import binary_problems
from calibcli.core.resampling import row_hash
from calibcli.core.rows import RowSample
from calibcli.core.validation import check_option
from calibcli.ece_family.accumulator import InputAccumulator
from calibcli.recalibrate.fit import MAX_DISTINCT, FitAccumulator
from calibcli.smooth.inputs import SmoothInputAccumulator
from calibcli.tcal.accumulator import TcalInputAccumulator, tcal_reports
from calibcli.tcal.binomial import BinomialTestResult

STATE_VERSION = 1
#: The holdout split's rule, as the reports state it (the classifier's and the regression predictions').
SPLIT_RULE = (
    "the fit part is the round(F n) rows with the smallest hash of (seed, global row index), the test part "
    "every other row: the same rows whatever the batch size, file order or engine"
)
#: Bits of the hash histogram of the first pass (2^16 buckets).
BUCKET_BITS = 16
_SHIFT = np.uint64(64 - BUCKET_BITS)


def _bucket(seed: int, row_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = row_hash(seed, row_index)
    return h, (h >> _SHIFT).astype(np.int64)


class SplitCounter(OnePass):
    """First pass of a holdout split: the rows, whether the input has one probability column, and how many
    rows fall in each of the 2^16 buckets of ``row_hash(seed, row index)``."""

    kind = "holdout_split_counter"
    state_name = "holdout split counter"
    merge_rules = {"n": "sum", "binary": "first", "histogram": "sum"}

    def __init__(self, *, seed: int):
        self.seed = int(seed)
        self.n = 0
        self.binary: bool | None = None
        self.histogram = np.zeros(1 << BUCKET_BITS, dtype=np.int64)

    def update(self, row_index, probs, labels, w=None) -> SplitCounter:
        self.n += len(row_index)
        self.binary = probs.ndim == 1 if self.binary is None else self.binary
        _, b = _bucket(self.seed, row_index)
        self.histogram += np.bincount(b, minlength=len(self.histogram))
        return self

    @property
    def n_rows(self) -> int:
        return self.n

    def boundary(self, k: int) -> tuple[int, int]:
        """``(bucket, rank)``: the k-th smallest hash is the ``rank``-th smallest of bucket ``bucket`` (1 <= k <= n)."""
        if not 1 <= k <= self.n:
            raise ValueError(f"k is {k}: expected 1 to {self.n} rows")
        cumulative = np.cumsum(self.histogram)
        bucket = int(np.searchsorted(cumulative, k))
        before = int(cumulative[bucket - 1]) if bucket else 0
        return bucket, k - before


class HoldoutFitAccumulator(OnePass):
    """Second pass of a holdout split: the fit part (the ``k`` rows with the smallest hashes) into a
    :class:`FitAccumulator`, given the boundary ``(bucket, rank)`` of :meth:`SplitCounter.boundary`."""

    kind = "holdout_fit"
    state_name = "holdout fit state"
    merge_rules = {"fit": "merge", "edge": "merge"}

    def __init__(self, *, seed: int, bucket: int, rank: int, max_rows: int, max_distinct: int = MAX_DISTINCT):
        self.seed, self.bucket, self.rank = int(seed), int(bucket), int(rank)
        self.fit = FitAccumulator(max_rows=max_rows, seed=seed, max_distinct=max_distinct)
        self.edge = RowSample(self.rank, self.seed)  # the boundary bucket: its `rank` smallest hashes are fit rows

    def update(self, row_index, probs, labels, w=None) -> HoldoutFitAccumulator:
        _, b = _bucket(self.seed, row_index)
        for mask, acc in ((b < self.bucket, self.fit), (b == self.bucket, self.edge)):
            if mask.any():
                acc.update(row_index[mask], probs[mask], labels[mask], None if w is None else w[mask])
        return self

    @property
    def n_rows(self) -> int:
        return self.fit.n_rows + min(self.edge.n_seen, self.rank)

    def finish(self) -> tuple[FitAccumulator, int]:
        """The fit part's accumulator and the split's threshold: a row is a test row when its hash exceeds it."""
        row_index, z, y, w = self.edge.arrays()
        if len(row_index) != self.rank:
            raise ValueError(
                f"the boundary bucket holds {len(row_index)} rows: expected {self.rank} (another pass "
                f"over the data saw other rows)"
            )
        fit = FitAccumulator.from_dict(self.fit.to_dict())
        if self.edge.weighted and w is None:
            w = np.ones(len(row_index))
        fit.update(row_index, z, y, w)
        return fit, int(row_hash(self.seed, row_index).max())


class HoldoutSplit(Accumulator):
    """Passes 1 and 2 of a holdout split as one accumulator: :class:`SplitCounter`, then (a second pass, which
    it always asks for) the :class:`HoldoutFitAccumulator` of the boundary the counts give for the fit
    fraction ``holdout``. So the counting pass can share its read with other families (``calibcli report``
    runs it in a :class:`~calibcli.core.composite.Composite`), and an engine runs both passes in one
    ``run``. :meth:`finish` gives the fit part, the split's threshold and its sizes.

    The second pass's state carries the first pass's totals (``n``, ``n_fit``, ``binary``: the same in
    every fragment's copy, so a merge keeps one), not the histogram.
    """

    kind = "holdout_split"
    state_name = "holdout split state"
    merge_rules = {"_state": "merge"}

    def __init__(
        self,
        *,
        seed: int,
        holdout: float,
        max_rows: int,
        totals: dict | None = None,
        fit: HoldoutFitAccumulator | None = None,
    ):
        self.seed, self.holdout, self.max_rows = int(seed), float(holdout), int(max_rows)
        self.counter = SplitCounter(seed=seed) if fit is None else None
        self.totals, self.fit = totals, fit

    @property
    def _state(self) -> SplitCounter | HoldoutFitAccumulator:
        if self.fit is None:
            assert self.counter is not None  # (the first pass counts)
            return self.counter
        return self.fit

    def update(self, row_index, probs, labels, w=None) -> HoldoutSplit:
        self._state.update(row_index, probs, labels, w)
        return self

    @property
    def n_rows(self) -> int:
        if self.fit is None:
            assert self.counter is not None
            return self.counter.n_rows
        assert self.totals is not None  # (the second pass knows the first's totals)
        return self.totals["n"]

    @property
    def problems(self) -> list:
        return []

    def needs_second_pass(self) -> bool:
        return self.fit is None

    def for_second_pass(self) -> HoldoutSplit:
        """The fit part's pass: ``n_fit = round(holdout n)`` rows, at least 2 in each part (else the error)."""
        assert self.counter is not None  # (asked for after the first pass only)
        n = self.counter.n_rows
        n_fit = int(round(self.holdout * n))
        check_option(
            2 <= n_fit <= n - 2,
            f"--holdout {self.holdout} leaves {n_fit} of {n} rows to fit on and "
            f"{n - n_fit} to evaluate: expected at least 2 in each part",
        )
        bucket, rank = self.counter.boundary(n_fit)
        return HoldoutSplit(
            seed=self.seed,
            holdout=self.holdout,
            max_rows=self.max_rows,
            totals={"n": n, "n_fit": n_fit, "binary": self.counter.binary},
            fit=HoldoutFitAccumulator(seed=self.seed, bucket=bucket, rank=rank, max_rows=self.max_rows),
        )

    def finish(self) -> tuple[FitAccumulator, int, dict]:
        """After both passes: the fit part's accumulator, the threshold (a row is a test row when its hash
        exceeds it) and the totals ``{"n", "n_fit", "binary"}``."""
        if self.fit is None:
            raise ValueError("the holdout split's second pass has not run")
        assert self.totals is not None
        fit, threshold = self.fit.finish()
        return fit, threshold, dict(self.totals)

    def result(self, progress=None) -> HoldoutSplit:
        return self


# ---------------------------------------------------------------------------------------------
# The test part: before/after through the measuring commands' accumulators


class _MethodStates(TypedDict):
    """One method's accumulators (or the uncalibrated predictions'): ``ece``'s, ``smece``'s, and a test per
    binary problem."""

    binned: InputAccumulator
    smooth: SmoothInputAccumulator
    tests: list[TcalInputAccumulator]


class EvaluateAccumulator(Accumulator):
    """Third pass: per method (and ``uncalibrated``), the ``ece``, ``smece`` and ``tcal`` accumulators of the
    test rows' (recalibrated) predictions in ``mode``.

    ``calibrators``: ``[(method, calibrator.to_dict())]``; ``split``: ``{"seed", "threshold"}`` to keep the rows
    whose hash exceeds the threshold, or None for every row. The T-Cal test runs per binary problem of the mode
    (one per class in ``marginal``, combined by Bonferroni in :meth:`rows`).
    """

    kind = "recalibrate_evaluate"
    state_name = "recalibrate-evaluate state"

    def __init__(
        self,
        *,
        calibrators: list[tuple[str, dict]],
        split: dict | None,
        mode: str,
        n_classes: int,
        class_names: tuple[str, ...],
        binned,
        smooth,
        tcal,
    ):
        self.calibrator_dicts = [(m, d) for m, d in calibrators]
        self.calibrators = [(m, calibrator_from_dict(d)) for m, d in calibrators]
        self.split = None if split is None else {"seed": int(split["seed"]), "threshold": int(split["threshold"])}
        self.mode, self.n_classes, self.class_names = mode, int(n_classes), tuple(class_names)
        self.binned_options, self.smooth_options, self.tcal_options = binned, smooth, tcal
        self.names = ["uncalibrated", *(m for m, _ in calibrators)]
        names = self.class_names
        marginal = mode == "marginal"
        self.states: dict[str, _MethodStates] = {}
        for name in self.names:
            tests = (
                [
                    TcalInputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=tcal)
                    for _ in range(n_classes)
                ]
                if marginal
                else [TcalInputAccumulator(mode=mode, n_classes=n_classes, class_names=names, options=tcal)]
            )
            self.states[name] = {
                "binned": InputAccumulator(mode=mode, n_classes=n_classes, class_names=names, options=binned),
                "smooth": SmoothInputAccumulator(mode=mode, n_classes=n_classes, class_names=names, options=smooth),
                "tests": tests,
            }

    def update(self, row_index, probs, labels, w=None) -> EvaluateAccumulator:
        if self.split is not None:
            keep = row_hash(self.split["seed"], row_index) > np.uint64(self.split["threshold"])
            if not keep.all():
                row_index, probs, labels = row_index[keep], probs[keep], labels[keep]
                w = None if w is None else w[keep]
        if len(row_index) == 0:
            return self
        predictions = [("uncalibrated", probs), *((m, cal.predict(probs)) for m, cal in self.calibrators)]
        for name, p in predictions:
            state = self.states[name]
            state["binned"].update(row_index, p, labels, w)
            state["smooth"].update(row_index, p, labels, w)
            if self.mode == "marginal":
                for test, problem in zip(
                    state["tests"],
                    binary_problems(labels, p, mode="marginal", sample_weight=w, class_names=list(self.class_names)),
                    strict=True,
                ):
                    test.update(row_index, problem.z, problem.y, problem.sample_weight)
            else:
                state["tests"][0].update(row_index, p, labels, w)
        return self

    def merge(self, other: EvaluateAccumulator) -> EvaluateAccumulator:
        for name in self.names:
            mine, theirs = self.states[name], other.states[name]
            mine["binned"].merge(theirs["binned"])
            mine["smooth"].merge(theirs["smooth"])
            for a, b in zip(mine["tests"], theirs["tests"], strict=True):
                a.merge(b)
        return self

    @property
    def n_rows(self) -> int:
        return self.states["uncalibrated"]["binned"].n_rows

    @property
    def problems(self) -> list:
        return []

    def needs_second_pass(self) -> bool:
        """Quantile ECE bins beyond the rows kept, or a SmoothECE bandwidth finer than the first grid (SPEC 8)."""
        return any(s["binned"].needs_second_pass() or s["smooth"].needs_second_pass() for s in self.states.values())

    def for_second_pass(self) -> EvaluateAccumulator:
        """Empty accumulators for a second pass over the same rows, with the edges and grids of this one."""
        out = self._empty()
        for name in self.names:
            out.states[name]["binned"] = self.states[name]["binned"].for_second_pass()
            out.states[name]["smooth"] = self.states[name]["smooth"].for_second_pass()
        return out

    def _empty(self) -> EvaluateAccumulator:
        return EvaluateAccumulator(
            calibrators=self.calibrator_dicts,
            split=self.split,
            mode=self.mode,
            n_classes=self.n_classes,
            class_names=self.class_names,
            binned=self.binned_options,
            smooth=self.smooth_options,
            tcal=self.tcal_options,
        )

    def result(self, progress=None) -> EvaluateAccumulator:
        return self

    # -- the report's rows -------------------------------------------------------------------------

    def rows(self) -> tuple[dict[str, dict], list[str]]:
        """Per name (``uncalibrated``, then each method): ``{"metrics", "test"}`` of the report, and the
        tests' warnings (each once)."""
        out, warnings = {}, []
        names = ["ece_l1_plugin", "ece_l2_sq_debiased_dpe", "ece_l2_debiased_dpe", "ece_l2_sq_debiased_kumar"]
        # every method's tests at once: they test the same rows with the same seed (shared draws and sorts)
        tests = [test for name in self.names for test in self.states[name]["tests"]]
        reports = iter(tcal_reports(tests))
        for name in self.names:
            state = self.states[name]
            head = state["binned"].result().headline()
            scores = (
                ["brier_score_multiclass", "log_loss_multiclass"]
                if "brier_score_multiclass" in head
                else ["brier_score", "log_loss"]
            )
            metrics = {k: metric_json(head[k]) for k in names + scores}
            metrics["smece"] = metric_json(state["smooth"].result().headline()["smece"])
            problem_names = [f"class {c}" for c in self.class_names] if self.mode == "marginal" else [self.mode]
            per_problem = []
            for problem in problem_names:  # (one test per problem, in order)
                report = next(reports)
                for warning in report.warnings:
                    if warning not in warnings:
                        warnings.append(warning)
                r = report.result
                binomial = isinstance(r, BinomialTestResult)  # (report.test == "binomial")
                entry: dict[str, Any] = {
                    "problem": problem,
                    "test": "binomial" if binomial else "T-Cal",
                    "p_value": r.p_value,
                }
                entry.update(
                    {"n_values": r.n_values, "weighted": False}
                    if isinstance(r, BinomialTestResult)
                    else {"n_levels": r.n_levels, "weighted": r.weighted}
                )
                entry["sample"] = report.sample
                entry["discrete_check"] = report.discrete_check
                per_problem.append(entry)
            out[name] = {"metrics": metrics, "test": _combined(per_problem, self.tcal_options.alpha)}
        return out, warnings

    # -- state -------------------------------------------------------------------------------------


def _combined(per_problem: list[dict], alpha: float) -> dict:
    """The per-problem tests as one decision: Bonferroni over the classes, ``p = min(1, K min_k p_k)``."""
    t = len(per_problem)
    p = min(1.0, t * min(x["p_value"] for x in per_problem))
    return {
        "test": "+".join(sorted({x["test"] for x in per_problem})),
        "p_value": p,
        "reject": bool(p <= alpha),
        "alpha": alpha,
        "combined_over": t,
        "rule": "Bonferroni over the classes: p = min(1, K min_k p_k)" if t > 1 else None,
        "per_problem": per_problem,
        # tcal's rule never runs the binomial test on weighted rows (T-Cal is used, with a warning)
        "weights_ignored": False,
    }
