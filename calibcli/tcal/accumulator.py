"""T-Cal on streams (SPEC 4 and 8): the rows the test runs on, and the binomial test's exact counts.

T-Cal needs every row at once (it sorts the predictions and redraws labels). A stream keeps its rows in
a :class:`~calibcli.core.rows.RowSample`: all of them while at most ``max_rows`` were seen
(default 1,000,000, SPEC 8), else the bottom-k sample, the ``k = max_rows`` rows with the smallest hash
of ``(seed, global row index)``. Bottom-k sets merge exactly, and the test runs on the rows in global
row order with ``numpy.random.default_rng(seed)``: the sample and the result do not depend on batch
sizes, file order or which worker saw which rows, and with every row kept the result is
:func:`calibcli.tcal.tcal_test` on the whole input.

The binomial test for discrete predictors (SPEC 4.4) needs only, per distinct value v, the predictions
``N_v`` and the positives ``M_v``: :class:`ValueCounts` adds them exactly over every row (beyond
``max_rows`` too) while there are at most ``MAX_DISTINCT`` (2^20) values. Beyond that the predictor
counts as continuous: the ``auto`` rule ``t <= sqrt(n)`` could call it discrete only beyond 2^40 rows.

:class:`TcalInputAccumulator` holds both for one input (or one group of it) and follows the contract of
:mod:`calibcli.core.accumulator` (``update``, ``merge``, ``to_dict``/``from_dict``, ``result``);
:class:`TcalReport` is its finished entry of the report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from calibcli.core.accumulator import Accumulator, OnePass
from calibcli.core.errors import CalibcliError, OptionError
from calibcli.core.modes import binary_problems
from calibcli.core.results import Metric
from calibcli.core.rows import RowSample, describe_sample
from calibcli.core.validation import check_options
from calibcli.tcal.binomial import (
    DISCRETE_RULE,
    BinomialTestResult,
    binomial_test_from_counts,
    discreteness_from_counts,
)
from calibcli.tcal.options import MAX_DISTINCT, TCAL_MODES, Options
from calibcli.tcal.procedure import tcal_test, tcal_tests
from calibcli.tcal.results import TcalResult

STATE_VERSION = 1

#: Batches wait as they are, and are summed by value into the state (one sort of all that waits) once they hold this
#: many entries and twice the state's: a sort of every row at the end, not one per batch and again per merge, while
#: the rows waiting stay within what T-Cal's row sample holds anyway (``--max-rows``, 1e6 by default).
_COMPACT_ENTRIES = 1 << 20


# ---------------------------------------------------------------------------------------------
# Per-value counts for the binomial test


def _collapse(values: np.ndarray, n: np.ndarray, positives: np.ndarray):
    """Entries with equal values summed: ``(distinct values increasing, N_v, M_v)`` (integers stay integers).

    The counts are integers, so their sums do not depend on the order within equal values: an unstable sort
    (several times faster than a stable one on floats) gives the same result; ``-0.0`` is stored as ``0.0``.
    """
    order = np.argsort(values)
    v = values[order] + 0.0
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
    if len(starts) == len(v):  # every value distinct (continuous scores): nothing to sum
        return v, n[order], positives[order]
    return v[starts], np.add.reduceat(n[order], starts), np.add.reduceat(positives[order], starts)


class ValueCounts(Accumulator):
    """Per distinct prediction value ``v``: the rows ``N_v`` and the positives ``M_v`` (SPEC 4.4), exact.

    ``n`` counts every row offered. Once more than ``cap`` distinct values were seen the counts are
    dropped and ``overflowed`` set: the predictor is not discrete. Counts merge by adding, so they are
    the same however the rows were split. Batches wait in a list and are summed into the state when they
    outnumber it (:data:`_COMPACT_ENTRIES`; amortised: the work per row does not grow with the number of values),
    and before the state is pickled or written.
    """

    kind = "value_counts"
    state_name = "value-counts state"

    def __init__(self, cap: int = MAX_DISTINCT):
        if cap < 1:
            raise ValueError(f"cap is {cap}: expected at least one value")
        self.cap = int(cap)
        self.n = 0
        self.overflowed = False
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._held = 0
        self._state_size = 0

    def update(self, z: np.ndarray, y: np.ndarray) -> ValueCounts:
        """Add a batch of predictions ``z`` (1-D) and labels ``y`` in {0, 1}."""
        z = np.asarray(z, dtype=np.float64).reshape(-1)
        self.n += len(z)
        if self.overflowed or len(z) == 0:
            return self
        y = np.asarray(y, dtype=np.int64).reshape(-1)
        # the batch as it is (copied: the reader may reuse its arrays), summed by value when the parts are compacted
        self._add((z.copy(), np.ones(len(z), dtype=np.int64), y.copy()))
        return self

    def merge(self, other: ValueCounts) -> ValueCounts:
        """Add the counts of other rows (same ``cap``)."""
        if other.cap != self.cap:
            raise ValueError("value counts with different caps cannot be merged")
        self.n += other.n
        if self.overflowed or other.overflowed:
            self._overflow()
            return self
        for part in other._parts:
            self._add(part)
        return self

    def _add(self, part) -> None:
        self._parts.append(part)
        self._held += len(part[0])
        if len(part[0]) > self.cap or self._held > max(2 * self._state_size, _COMPACT_ENTRIES):
            self._compact()

    def _compact(self) -> None:
        if not self._parts or (len(self._parts) == 1 and self._held == self._state_size):
            return  # (nothing waits: the one part is the state, summed already)
        part = _collapse(*(np.concatenate(column) for column in zip(*self._parts, strict=True)))
        if len(part[0]) > self.cap:
            self._overflow()
            return
        self._parts = [part]
        self._held = self._state_size = len(part[0])

    def __getstate__(self) -> dict:
        """The state as it travels (a worker's to the scheduler, ``to_dict``): its waiting batches summed first, so
        a discrete predictor's state is its few values, not its rows."""
        if not self.overflowed:
            self._compact()
        return super().__getstate__()

    def _overflow(self) -> None:
        self.overflowed = True
        self._parts, self._held, self._state_size = [], 0, 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(values, N_v, M_v)``: the distinct values in increasing order and their counts (int64)."""
        if not self.overflowed:
            self._compact()
        if self.overflowed:
            raise ValueError(f"more than {self.cap} distinct values were seen: the counts were dropped")
        if not self._parts:
            return np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        return self._parts[0]

    @property
    def n_distinct(self) -> int | None:
        """Distinct values seen; None when more than ``cap``."""
        if not self.overflowed:
            self._compact()
        if self.overflowed:
            return None
        return len(self._parts[0][0]) if self._parts else 0


# ---------------------------------------------------------------------------------------------
# The finished entry


@dataclass(frozen=True)
class TcalReport:
    """One entry of a ``tcal`` report: the mode, the discreteness check, which test ran on which rows, its result.

    ``result`` is a :class:`calibcli.tcal.TcalResult` (``test == "tcal"``) or a
    :class:`calibcli.tcal.BinomialTestResult` (``"binomial"``); ``warnings`` are sentences for the user.
    """

    mode: str
    notes: tuple[str, ...]
    discrete_check: dict | None
    test: str
    sample: dict
    result: TcalResult | BinomialTestResult
    warnings: tuple[str, ...] = ()

    @property
    def reject(self) -> bool:
        return bool(self.result.reject)

    def to_dict(self) -> dict:
        out: dict = {"mode": self.mode, "notes": list(self.notes)}
        if self.discrete_check is not None:
            out["discrete_check"] = dict(self.discrete_check)
        out["test"] = self.test
        out["sample"] = dict(self.sample)
        r = self.result
        if isinstance(r, BinomialTestResult):  # (test "binomial")
            out["result"] = {
                "reject": r.reject,
                "p_value": r.p_value,
                "alpha": r.alpha,
                "n": r.n,
                "n_values": r.n_values,
                "per_value_alpha": r.per_value_alpha,
                "method": r.method,
                "per_value": [asdict(row) for row in r.rows],
            }
            return out
        out["result"] = {
            "reject": r.reject,
            "p_value": r.p_value,
            "p_value_bonferroni": r.p_value_bonferroni,
            "p_value_min_p": r.p_value_min_p,
            "combine": r.combine,
            "null": r.null,
            "exact": r.exact,
            "alpha": r.alpha,
            "per_level_alpha": r.per_level_alpha,
            "n": r.n,
            "n_classes": r.n_classes,
            "n_boot": r.n_boot,
            "n_levels": r.n_levels,
            "adaptive": r.adaptive,
            "smoothness": r.smoothness,
            "weighted": r.weighted,
            "statistic_name": r.statistic_name,
            "levels": [asdict(level) for level in r.levels],
            "warnings": list(self.warnings),
            "can_reject": r.can_reject,
        }
        return out

    def headline(self) -> dict:
        """The test's p-value (``tcal_p_value`` or ``binomial_p_value``; lower is stronger evidence of
        miscalibration) and, for T-Cal, ``tcal_statistic``: ``T_m`` at the level with the smallest p-value;
        :class:`calibcli.binned.estimators.Metric` objects by name."""
        r = self.result
        if isinstance(r, BinomialTestResult):
            return {
                "binomial_p_value": Metric(
                    "binomial_p_value",
                    r.p_value,
                    note=f"exact binomial test per value, Bonferroni over {r.n_values} values",
                )
            }
        deciding = min(r.levels, key=lambda level: level.p_value)
        return {
            "tcal_p_value": Metric(
                "tcal_p_value", r.p_value, note=f"{r.combine} over {r.n_levels} level(s), null {r.null}"
            ),
            "tcal_statistic": Metric(
                "tcal_statistic",
                deciding.statistic,
                note=f"T_m at level {deciding.level} (m = {deciding.n_bins}), the level with the smallest p-value",
            ),
        }


# ---------------------------------------------------------------------------------------------
# One input (or group)


class TcalInputAccumulator(OnePass):
    """T-Cal's state for one input (or group) in one mode: the rows (:class:`RowSample`) and, outside
    canonical mode, the per-value counts (:class:`ValueCounts`) of the binary problem.

    ``mode`` is ``binary``, ``top-label`` or ``canonical`` (``canonical`` with K = 2 is ``binary``, with a note).
    """

    kind = "tcal_input"
    state_name = "T-Cal input state"
    same, same_message = ("mode", "options"), "T-Cal states of different modes or options cannot be merged"
    merge_rules = {"rows": "merge", "counts": "merge"}

    def __init__(self, *, mode: str, n_classes: int, class_names: tuple[str, ...], options: Options):
        check_options({"mode": TCAL_MODES}, mode=mode)
        self.requested_mode, self.n_classes, self.class_names = mode, int(n_classes), tuple(class_names)
        self.options = options
        self.notes: list[str] = []
        self.mode = mode
        if mode == "canonical" and n_classes == 2:
            self.notes.append(
                "canonical mode with K = 2 is binary mode on the positive class (docs: How it is computed §1)"
            )
            self.mode = "binary"
        if self.mode == "canonical" and options.wanted_discrete == "yes":
            raise OptionError(
                "discrete",
                "{name} yes tests one probability per prediction, and canonical mode tests "
                "probability vectors: use the binary or top-label mode with it",
            )
        self.rows = RowSample(options.max_rows, options.seed)
        self.counts = None if self.mode == "canonical" else ValueCounts(options.max_distinct)

    def update(self, row_index, probs, labels, w=None) -> TcalInputAccumulator:
        if self.mode == "canonical":
            if probs.ndim == 1:
                raise CalibcliError(
                    "canonical mode needs one probability column per class, but the input has a single "
                    "probability column: use the binary mode, or give a column for every class"
                )
            self.rows.update(row_index, probs, labels, w)
            return self
        if w is not None and self.options.wanted_discrete == "yes":
            raise OptionError(
                "discrete",
                "{name} yes: the exact binomial test counts predictions and cannot use sample "
                "weights: drop the weight column, or use {name} no",
            )
        (problem,) = binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=list(self.class_names))
        self.rows.update(row_index, problem.z, problem.y, problem.sample_weight)
        assert self.counts is not None  # (counted in every mode but canonical)
        self.counts.update(problem.z, problem.y)
        return self

    @property
    def n_rows(self) -> int:
        return self.rows.n_seen

    @property
    def problems(self) -> list[str]:
        """The tests that resample (for a progress bar): T-Cal's mode, or none for the binomial test."""
        return [] if self._decide()[1] else [self.mode]

    def _decide(self) -> tuple[dict | None, bool, list[str]]:
        """The discreteness check of SPEC 4.4 on every row, whether the binomial test is used, and warnings."""
        if self.counts is None:
            return None, False, []
        choice = self.options.wanted_discrete
        counts = self.counts
        check: dict[str, Any]
        if counts.n_distinct is None:
            check = {
                "discrete": False,
                "n_distinct": None,
                "n_distinct_more_than": counts.cap,
                "n": counts.n,
                "threshold": math.sqrt(counts.n),
                "rule": DISCRETE_RULE,
            }
        else:
            check = asdict(discreteness_from_counts(counts.n_distinct, counts.n))
        use = choice == "yes" or (choice == "auto" and check["discrete"])
        warnings = []
        if use and self.rows.weighted:  # "yes" with weights stopped at the first batch
            warnings.append(
                "the predictor is discrete but has sample weights; T-Cal is used (the binomial test counts rows)"
            )
            use = False
        if use and counts.overflowed:
            raise OptionError(
                "discrete",
                f"{{name}} yes: the predictor takes more than {counts.cap} distinct values, too "
                f"many for a binomial test per value: use {{name}} auto or no",
            )
        return {**check, "choice": choice, "used": "binomial" if use else "tcal"}, use, warnings

    def result(self, progress=None) -> TcalReport:
        """The binomial test on the counts of every row, or T-Cal on the rows held (all, or the bottom-k sample)."""
        decision = self._decide()
        if decision[1]:
            return self._report(decision, None)
        o = self.options
        row_index, z, y, w = self.rows.arrays()
        result = tcal_test(y, z, sample_weight=w, **o.procedure, rng=np.random.default_rng(o.seed), progress=progress)
        return self._report(decision, result, len(row_index))

    def _report(
        self, decision: tuple[dict | None, bool, list[str]], result: TcalResult | None, kept: int = 0
    ) -> TcalReport:
        """The entry, from :meth:`_decide`'s decision and T-Cal's result on ``kept`` rows (None: the binomial
        test, run here on the counts)."""
        o = self.options
        check, use_binomial, warnings = decision
        n = self.n_rows
        if use_binomial:
            assert self.counts is not None  # (the binomial test is chosen from the counts)
            values, N, M = self.counts.arrays()
            binomial = binomial_test_from_counts(values, N, M, alpha=o.alpha)
            sample = {
                **describe_sample(n, n, o.max_rows, o.seed),
                "description": f"all {n} rows (exact per-value counts)",
            }
            return TcalReport(self.mode, tuple(self.notes), check, "binomial", sample, binomial, tuple(warnings))
        assert result is not None  # (T-Cal ran)
        sample = describe_sample(n, kept, o.max_rows, o.seed)
        return TcalReport(
            self.mode, tuple(self.notes), check, "tcal", sample, result, tuple(warnings) + result.warnings
        )

    # -- state -----------------------------------------------------------------------------------


def tcal_reports(accumulators: Sequence[TcalInputAccumulator]) -> list[TcalReport]:
    """Each accumulator's :meth:`~TcalInputAccumulator.result`, the same entries, with the T-Cal tests of
    accumulators of equal options computed together (:func:`calibcli.tcal.tcal_tests`: the draws of tests of
    the same number of rows made once, a sort order tried before sorting again). ``recalibrate evaluate``
    tests the predictions of every method on the same held-out rows this way."""
    decisions = [acc._decide() for acc in accumulators]
    together: dict[Options, list[int]] = {}
    for i, (acc, decision) in enumerate(zip(accumulators, decisions, strict=True)):
        if not decision[1]:
            together.setdefault(acc.options, []).append(i)
    results: dict[int, TcalResult] = {}
    kept: dict[int, int] = {}
    for o, members in together.items():
        problems = []
        for i in members:
            row_index, z, y, w = accumulators[i].rows.arrays()
            problems.append((y, z, w))
            kept[i] = len(row_index)
        tests = tcal_tests(problems, seed=o.seed, **o.procedure)
        results.update(zip(members, tests, strict=True))
    return [
        acc._report(d, results.get(i), kept.get(i, 0))
        for i, (acc, d) in enumerate(zip(accumulators, decisions, strict=True))
    ]
