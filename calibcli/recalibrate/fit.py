"""The rows a recalibration map is fitted on, streamed (SPEC 5, 8).

Fitting a map needs the rows at once. :class:`FitAccumulator` keeps

- the seeded bottom-k sample of the rows (:class:`RowSample`, k = ``max_rows``): every row while at most
  ``max_rows`` arrived, else the k rows with the smallest hash of ``(seed, global row index)``;
- for a binary problem, the exact per-value sums ``sum w y`` and ``sum w (1 - y)`` of every distinct
  prediction while there are at most ``max_distinct`` of them.

A fit whose objective is a weighted sum over rows (Platt, beta, polynomial least squares, isotonic with ties
pooled, equal-width histogram binning) is the same on the rows and on two weighted rows per distinct
prediction, ``(z, 1, sum w y)`` and ``(z, 0, sum w (1 - y))``: beyond ``max_rows`` such methods are fitted
on every row through those sums, exactly. The others (Venn-Abers and scaling-binning, which do not take
weights; quantile histogram bins; temperature and multiclass modes) use the sample, and the report says
which, with k and n.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.accumulator import OnePass
from calibcli.core.rows import RowSample
from calibcli.core.validation import check_options

STATE_VERSION = 1
#: Rows kept for fitting (SPEC 8's default for what needs all rows at once).
MAX_ROWS = 1_000_000
#: Distinct predictions whose per-value sums are kept (SPEC 8: isotonic on at most 2^20 distinct values).
MAX_DISTINCT = 1 << 20
#: Binary methods fitted exactly from per-value sums (their objective is a weighted sum over rows).
REDUCIBLE = ("platt", "beta", "polynomial", "isotonic", "histogram")


class FitAccumulator(OnePass):
    """Rows to fit a recalibration map on (see the module docstring)."""

    kind = "fit"
    state_name = "fit state"

    def __init__(self, *, max_rows: int = MAX_ROWS, seed: int = 0, max_distinct: int = MAX_DISTINCT):
        check_options(max_rows=max_rows)  # the sample it keeps, within the memory budget
        self.sample = RowSample(max_rows, seed)
        self.max_distinct = max_distinct
        self.values: np.ndarray = np.empty(0)
        self.w1: np.ndarray = np.empty(0)
        self.w0: np.ndarray = np.empty(0)
        self.binary: bool | None = None
        self.too_many_values = False

    def update(self, row_index, probs, labels, w=None) -> FitAccumulator:
        self.sample.update(row_index, probs, labels, w)
        self.binary = probs.ndim == 1 if self.binary is None else self.binary
        if self.binary and not self.too_many_values:
            ww = np.ones(len(labels)) if w is None else w
            self._combine(
                np.concatenate([self.values, probs]),
                np.concatenate([self.w1, ww * labels]),
                np.concatenate([self.w0, ww * (1 - labels)]),
            )
        return self

    def _combine(self, values, w1, w0) -> None:
        distinct, inverse = np.unique(values, return_inverse=True)
        if len(distinct) > self.max_distinct:
            self.too_many_values = True
            self.values = self.w1 = self.w0 = np.empty(0)
            return
        self.values = distinct
        self.w1 = np.bincount(inverse, weights=w1, minlength=len(distinct))
        self.w0 = np.bincount(inverse, weights=w0, minlength=len(distinct))

    def merge(self, other: FitAccumulator) -> FitAccumulator:
        self.sample.merge(other.sample)
        self.binary = other.binary if self.binary is None else self.binary
        if other.too_many_values:
            self.too_many_values = True
        if self.binary and not self.too_many_values:
            self._combine(
                np.concatenate([self.values, other.values]),
                np.concatenate([self.w1, other.w1]),
                np.concatenate([self.w0, other.w0]),
            )
        return self

    @property
    def n_rows(self) -> int:
        return self.sample.n_seen

    # (what an engine's runner asks of an accumulator, SPEC 8, is OnePass's: the sample and the per-value sums
    # are complete after one pass, and nothing is resampled when the rows are gathered: the fit itself happens
    # on the client)

    def result(self, progress=None) -> FitAccumulator:
        """The state itself: :meth:`data` gives the rows of each method's fit."""
        return self

    def data(self, method: str, *, mode: str | None = None, options: dict | None = None):
        """``(labels, probs, sample_weight, how)`` to fit ``method`` on; ``how`` says which rows, for the report."""
        n = self.sample.n_seen
        if self.sample.complete:
            _, probs, labels, w = self.sample.arrays()
            return labels, probs, w, {"rows": "all", "n": n}
        reducible = (
            self.binary
            and method in REDUCIBLE
            and mode in (None, "binary")
            and not self.too_many_values
            and (options or {}).get("strategy", "uniform") == "uniform"
        )
        if reducible:
            pos, neg = self.w1 > 0, self.w0 > 0
            probs = np.concatenate([self.values[pos], self.values[neg]])
            labels = np.concatenate([np.ones(pos.sum(), dtype=np.int64), np.zeros(neg.sum(), dtype=np.int64)])
            w = np.concatenate([self.w1[pos], self.w0[neg]])
            return (
                labels,
                probs,
                w,
                {
                    "rows": "all",
                    "n": n,
                    "via": f"exact per-value sums of {len(self.values)} "
                    f"distinct predictions (two weighted rows per value)",
                },
            )
        _, probs, labels, w = self.sample.arrays()
        return (
            labels,
            probs,
            w,
            {
                "rows": "bottom-k sample",
                "k": self.sample.k,
                "n": n,
                "how": f"the {self.sample.k} rows with the smallest hash of (seed {self.sample.seed}, row index)",
            },
        )
