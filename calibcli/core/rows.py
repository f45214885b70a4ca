"""A bounded, mergeable sample of rows: all rows while they fit, else the seeded bottom-k (SPEC 8).

What needs every row at once (T-Cal, isotonic, Venn-Abers; the exact per-row bootstrap of small
data) keeps its rows in a :class:`RowSample`. Rows are identified by their global row index, and the
sample beyond ``k`` rows is the ``k`` rows with the smallest :func:`calibcli.core.resampling.row_hash` of
``(seed, row index)``. Bottom-k sets merge by keeping the k smallest hashes, so the sample is the same
however the data were batched, ordered or split between workers, and ``complete`` says whether it
still holds every row seen.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.accumulator import Accumulator
from calibcli.core.resampling import row_hash

STATE_VERSION = 1

#: Rows as ``(row_index, z, y, w)``; ``w`` None for unit weights.
_Part = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


class RowSample(Accumulator):
    """Rows ``(row_index, z, y, w)`` of a stream, at most ``k`` of them.

    ``z`` is 1-D (a binary problem) or 2-D (class probabilities); ``y`` int64; ``w`` float64 or None
    for unit weights. ``n_seen`` counts every row offered. With ``keep_when_full=False`` the sample is
    dropped (not thinned) as soon as more than ``k`` rows were seen: for callers that only want the
    rows when they have all of them.
    """

    kind = "row_sample"
    state_name = "row-sample state"

    def __init__(self, k: int, seed: int = 0, *, keep_when_full: bool = True):
        if k < 1:
            raise ValueError(f"k is {k}: expected at least one row")
        self.k = int(k)
        self.seed = int(seed)
        self.keep_when_full = keep_when_full
        self.n_seen = 0
        self._parts: list[_Part] = []
        self._held = 0
        self.weighted = False
        self.dropped = False
        self._threshold = None  # once thinned: the largest hash held (a row must hash below it to enter)

    @property
    def complete(self) -> bool:
        """The sample holds every row seen (no thinning happened)."""
        return self.n_seen <= self.k

    def update(self, row_index: np.ndarray, z: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> RowSample:
        n = len(row_index)
        self.n_seen += n
        if w is not None:
            self.weighted = True
        if self.dropped or n == 0:
            return self
        if not self.complete and not self.keep_when_full:
            self._drop()
            return self
        row_index = np.asarray(row_index, dtype=np.int64)
        z, y = np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.int64)
        w = None if w is None else np.asarray(w, dtype=np.float64)
        if self._threshold is not None:  # full: only rows that beat the k-th smallest hash can enter
            keep = row_hash(self.seed, row_index) < self._threshold
            row_index, z, y = row_index[keep], z[keep], y[keep]
            w = None if w is None else w[keep]
        self._parts.append((row_index, z, y, w))
        self._held += len(row_index)
        if self._held > 2 * self.k:
            self._thin()
        return self

    def merge(self, other: RowSample) -> RowSample:
        """Add the rows of another sample of disjoint rows (same ``k`` and ``seed``)."""
        if (other.k, other.seed) != (self.k, self.seed):
            raise ValueError("row samples with different k or seed cannot be merged")
        self.n_seen += other.n_seen
        self.weighted |= other.weighted
        if self.dropped or other.dropped or (not self.complete and not self.keep_when_full):
            self._drop()
            return self
        self._parts.extend(other._parts)
        self._held += other._held
        if self._held > self.k:
            self._thin()
        return self

    def _drop(self) -> None:
        self.dropped = True
        self._parts, self._held = [], 0

    def _thin(self) -> None:
        row, z, y, w = self._concat()
        if len(row) > self.k:
            hashes = row_hash(self.seed, row)
            keep = np.argpartition(hashes, self.k - 1)[: self.k]
            row, z, y = row[keep], z[keep], y[keep]
            w = None if w is None else w[keep]
            self._threshold = hashes[keep].max()
        self._parts, self._held = [(row, z, y, w)], len(row)

    def _concat(self) -> _Part:
        if not self._parts:
            return np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64), None
        row = np.concatenate([p[0] for p in self._parts])
        z = np.concatenate([p[1] for p in self._parts])
        y = np.concatenate([p[2] for p in self._parts])
        w = None
        if self.weighted:
            w = np.concatenate([np.ones(len(p[0])) if p[3] is None else p[3] for p in self._parts])
        return row, z, y, w

    def arrays(self) -> _Part:
        """``(row_index, z, y, w)`` of the rows held, sorted by row index (``w`` None for unit weights)."""
        if self.dropped:
            raise ValueError("the row sample was dropped: more rows than it may hold were seen")
        if self._held > self.k:
            self._thin()
        row, z, y, w = self._concat()
        order = np.argsort(row, kind="stable")
        self._parts = [(row[order], z[order], y[order], None if w is None else w[order])]
        return self._parts[0]

    # -- state -----------------------------------------------------------------------------------


def describe_sample(n: int, n_tested: int, k: int, seed: int) -> dict:
    """Which rows a test ran on (SPEC 8): all ``n``, or the bottom-k sample of ``k`` of them."""
    if n_tested >= n:
        return {"method": "all rows", "n": n, "n_tested": n, "k": k, "seed": seed, "description": f"all {n} rows"}
    return {
        "method": "bottom-k",
        "n": n,
        "n_tested": n_tested,
        "k": k,
        "seed": seed,
        "description": f"bottom-k sample of {n_tested} of {n} rows, hash of (seed, row index) with seed {seed}",
    }


#: Rows every family keeps for its exact per-row computations (the binned per-row bootstrap and exact quantile
#: edges, the smooth fit, the audit); beyond, sufficient statistics.
ROW_LIMIT = 1 << 17
