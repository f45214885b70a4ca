"""T-Cal: a test of perfect calibration (SPEC section 4; seed 004).

Lee, Huang, Hassani, Dobriban, *T-Cal: An optimal test for the calibration of predictive
models* (JMLR 2023). Reference implementation: https://github.com/dh7401/T-Cal.

What is here
- :func:`tcal_statistic`: the debiased plug-in estimate ``T_m`` of the squared l2-ECE (SPEC 4.1,
  the paper's eq. 6). Binary / top-label data use the scalar residual ``U = y - z`` with ``m``
  equal-width bins; canonical data (K > 2 columns) use the residual vectors ``U = e_c - P`` and the
  equal-volume simplex partition of SPEC 4.3 (:func:`simplex_bin_keys`). The paper writes the binary
  case with K = 2 vectors, so its ``T^d`` is twice the scalar ``T_m``; its constants are halved here.
- :func:`tcal_test`: the adaptive test (Algorithm 2: levels ``b = 1..L`` with ``m = 2^b`` bins per
  axis) or the single-scale test of Algorithm 1 for a known Holder smoothness ``s``
  (``m* = floor(n^(2/(4s+K-1)))``), with three null distributions (``y-bootstrap``,
  ``consistency``, ``chebyshev``) and two ways to combine levels (``bonferroni``, ``min-p``).
- :func:`binomial_test`: the exact binomial test for predictors with few distinct values
  (the paper's appendix 8.2.4, SPEC 4.4), and the rule :func:`discreteness` that chooses it; both
  also from per-value counts (:func:`binomial_test_from_counts`, :func:`discreteness_from_counts`),
  which a stream accumulates exactly over every row (:mod:`calibcli.accumulators.tcal`).

How the resampling is organised (binary, ``y-bootstrap``; the default and the fast path)
The predictions are sorted once. At every level the equal-width bins are contiguous runs of the
sorted order, so a bin's label-dependent sums are differences of two prefix sums. Since
``y* in {0, 1}``, ``sum w U = sum w y* - sum w z`` and ``sum w^2 U^2 = sum w^2 y* (1 - 2z) + sum w^2 z^2``:
only the prefix sums of ``w y*`` and ``w^2 y* (1 - 2z)`` change between draws. With unit weights they
are an integer count and a fixed-point sum (``1 - 2z`` scaled by ``2^F``, ``F = min(52, 62 - bits(n))``,
so no partial sum overflows int64): integer cumulative sums are exact and several times faster than
floating-point ones. The rounding of ``1 - 2z`` to ``2^-F`` moves ``T_m`` by at most about ``2^-F`` (about
``1e-13`` at n = 10^6); the observed statistic goes through the same arithmetic, so the Monte Carlo
p-value stays exact. A bin holding one point contributes exactly 0 to ``T_m`` for every draw, so only
bins with at least two points are gathered; such a bin is the same set of points at every level from
the one where it appears to the one where it splits, so each distinct bin is visited once per resample
and its contribution is credited to that range of levels: O(R x n) for all L levels together. The
sweep goes block by block through the sorted points (drawing ``y*``, extending the prefix sums,
finishing the bins that end in the block), so the working arrays stay in cache. All levels and both
combination rules use the same draws.

Monte Carlo p-values are ``(1 + #{T* >= T}) / (R + 1)`` (seed 004, 8.3.3). Two statistics of one
level that differ by less than ``1e-7`` times the largest absolute statistic of that level count as
tied (in the manner of ``scipy.stats.permutation_test``'s tolerance): this absorbs floating-point noise
between draws whose bins hold identical data, is a symmetric rule over the R + 1 statistics, and so
keeps the y-bootstrap p-value exact (it can only make it larger).
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np

from calibcli import cancel
from calibcli.binning import uniform_bin_index
from calibcli.validation import check_binary, check_multiclass, check_option

NULLS = ("y-bootstrap", "consistency", "chebyshev")
COMBINES = ("bonferroni", "min-p")

STATISTIC_NAME = "T_m: debiased plug-in estimate of the squared l2-ECE (T-Cal DPE, SPEC 4.1)"

#: Resampled statistics within this relative distance of each other count as ties.
TIE_RTOL = 1e-7

#: Memory budget (bytes) for one chunk of resamples; fixes the chunking, hence the random stream.
_CHUNK_BYTES = 4 * 2**20

#: Points per block of the sorted sweep (binary engine): the block's working arrays fit in cache.
_BLOCK_POINTS = 2**15

#: Worker threads for chunks of resamples (NumPy releases the GIL in the heavy calls).
_N_THREADS = 2

#: Canonical mode: warn when the minimax detectable l2-ECE for Lipschitz (s = 1) miscalibration,
#: ``n^(-2/(K+3))``, exceeds this.
HOPELESS_RATE = 0.1

#: Discrete predictors (SPEC 4.4): ``--discrete auto`` uses the binomial test when the number of
#: distinct prediction values t satisfies ``t <= sqrt(n)``.
DISCRETE_RULE = "t <= sqrt(n): at most sqrt(n) distinct prediction values (on average >= sqrt(n) predictions per value)"

# Contraction towards a fixed interior point before simplex binning (see simplex_bin_keys).
_SIMPLEX_EPS = 2.0**-40


# ----------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TcalLevel:
    """One scale of the test.

    ``level`` is ``b`` (``m = 2^b`` in the adaptive test; 1 for the single-scale test), ``n_bins``
    the bins per axis ``m``, ``n_cells`` the number of cells of the partition (``m^(K-1)``),
    ``n_nonempty`` the cells holding data, ``statistic`` ``T_m``, ``critical_value`` the value of
    ``T_m`` beyond which this level rejects at ``per_level_alpha`` (``None`` when the level cannot
    reject with this many resamples), ``p_value`` the per-level p-value, ``reject`` the per-level
    decision at ``per_level_alpha``.
    """

    level: int
    n_bins: int
    n_cells: int
    n_nonempty: int
    statistic: float
    critical_value: float | None
    p_value: float
    reject: bool


@dataclass(frozen=True)
class TcalResult:
    """Outcome of :func:`tcal_test`.

    ``reject`` is the decision at ``alpha``; ``p_value`` the combined p-value (``bonferroni``:
    ``min(1, L min_b p_b)``; ``min-p``: the Monte Carlo p-value of ``min_b p_b``); both are also
    given as ``p_value_bonferroni`` and ``p_value_min_p`` (from the same resamples; the latter is
    ``None`` for ``chebyshev``). ``levels`` holds
    the per-level table. ``per_level_alpha`` is the level each scale was tested at (``alpha / L``
    for ``bonferroni``, the calibrated threshold for ``min-p``). ``exact`` says whether the
    p-value is exact in finite samples (``y-bootstrap``) rather than approximate (``consistency``)
    or conservative (``chebyshev``). ``warnings`` are sentences for the user.
    """

    reject: bool
    p_value: float
    p_value_bonferroni: float
    p_value_min_p: float | None
    alpha: float
    null: str
    combine: str
    adaptive: bool
    smoothness: float | None
    mode: str
    n_classes: int
    n: int
    n_boot: int
    n_levels: int
    per_level_alpha: float
    exact: bool
    weighted: bool
    statistic_name: str
    levels: tuple[TcalLevel, ...]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class BinomialRow:
    """One distinct prediction value ``value`` with ``n`` predictions, ``positives`` of them positive."""

    value: float
    n: int
    positives: int
    observed_rate: float
    p_value: float
    reject: bool


@dataclass(frozen=True)
class BinomialTestResult:
    """Exact binomial test per distinct value, Bonferroni over the ``n_values`` values (SPEC 4.4)."""

    reject: bool
    p_value: float
    alpha: float
    n: int
    n_values: int
    per_value_alpha: float
    method: str
    rows: tuple[BinomialRow, ...]


@dataclass(frozen=True)
class DiscreteCheck:
    """Whether ``{opt:discrete} auto`` treats the predictor as discrete, and why."""

    discrete: bool
    n_distinct: int
    n: int
    threshold: float
    rule: str


# ----------------------------------------------------------------------------------------------
# Scales
# ----------------------------------------------------------------------------------------------


def n_levels(n: int, n_classes: int = 2) -> int:
    """``L = ceil((2/(K-1)) log2(n / sqrt(ln n)))`` levels of the adaptive test (SPEC 4.2), at least 1."""
    if n < 3:
        return 1
    value = (2.0 / (n_classes - 1)) * math.log2(n / math.sqrt(math.log(n)))
    return max(1, math.ceil(value - 1e-12))


#: Bytes per cell of a single-scale test: counts and sums of the observed statistic and of a resample.
BYTES_PER_CELL = 64


def _check_cells(m: int, K: int, n: int, smoothness: float) -> None:
    """A small smoothness gives ``m* = floor(n^(2/(4s+K-1)))`` bins per axis and ``m*^(K-1)`` cells: refuse,
    naming ``smoothness`` and the smallest value that fits the memory budget, before any cell is allocated."""
    from calibcli.errors import OptionError
    from calibcli.validation import format_bytes, memory_budget

    cells = float(m) ** (K - 1)
    budget = memory_budget()
    if cells * BYTES_PER_CELL <= budget:
        return
    # the smallest s whose cells fit: n^(2(K-1)/(4s+K-1)) <= budget / BYTES_PER_CELL
    least = (2.0 * (K - 1) * math.log(n) / math.log(budget / BYTES_PER_CELL) - (K - 1)) / 4.0
    raise OptionError(
        "smoothness",
        f"{{name}} {smoothness:g} gives m* = {m} bins per axis over {n} rows ({cells:.3g} cells), which would need "
        f"{format_bytes(cells * BYTES_PER_CELL)}; use {{name}} {math.ceil(least * 1000) / 1000:g} or more "
        f"(the memory budget is {format_bytes(budget)}), or the adaptive test (no {{name}})")


def optimal_n_bins(n: int, smoothness: float, n_classes: int = 2) -> int:
    """``m* = floor(n^(2/(4s+K-1)))`` bins per axis for Holder smoothness ``s`` (Theorem 3.1), at least 1."""
    return max(1, math.floor(n ** (2.0 / (4.0 * smoothness + n_classes - 1)) + 1e-9))


def chebyshev_constant(n: int, n_bins: int, n_classes: int = 2, *, scalar: bool = True) -> float:
    """``C`` with critical value ``C / sqrt(alpha)`` of Theorem 3.1.

    The paper's critical value is ``sqrt(2 K^2 / alpha) min(m^((K-1)/2) / n, m^(-(K-1)/2))`` for its
    vector statistic; the scalar binary statistic is half of it, so ``scalar=True`` halves it
    (SPEC 4.1).
    """
    K = n_classes
    half = (K - 1) / 2.0
    scale = min(n_bins**half / n, n_bins ** (-half))
    c = math.sqrt(2.0 * K * K) * scale
    return 0.5 * c if scalar else c


# ----------------------------------------------------------------------------------------------
# Equal-volume simplex partition (SPEC 4.3)
# ----------------------------------------------------------------------------------------------


def _interior_point(K: int) -> np.ndarray:
    weights = 1.0 + ((np.arange(1, K + 1) * 0.6180339887498949) % 1.0)
    return weights / weights.sum()


def simplex_bin_keys(P, n_bins: int) -> np.ndarray:
    """Cell of every row of ``P`` in the equal-volume partition of the simplex (SPEC 4.3).

    ``x = m z``; cube cell ``i_k = min(floor(x_k), m - 1)``; fractional part ``w = x - i``; the
    permutation sorting the partial sums ``v_j = (w_1 + ... + w_j) mod 1`` (j = 1..K-1) names the
    unit simplex of Stanley's triangulation of the hypersimplex slice. These cells are the alcoves
    ``floor(m (z_1 + ... + z_j))``-type regions: ``m^(K-1)`` simplices of equal volume and diameter
    O(1/m) (seed 004, appendix 8.2.3), nested when ``m`` doubles.

    Rows are first moved by ``2^-40`` towards a fixed interior point with irrational-looking
    coordinates, so that rows lying on a cell face (hard 0/1 probabilities, values such as 1/2)
    land in one well-defined cell inside the simplex; rows are also renormalised to sum to 1.

    Returns an int64 array of shape ``(n, 2 (K-1))``: the cube cell of the first ``K - 1``
    coordinates and the permutation. Two rows share a cell exactly when their keys are equal.
    """
    P = np.asarray(P, dtype=np.float64)
    check_option(P.ndim == 2 and P.shape[1] >= 2, f"simplex binning needs an (n, K) array with K >= 2, got shape {P.shape}")
    check_option(n_bins >= 1, f"simplex binning needs m >= 1 bins per axis, got {n_bins}")
    K = P.shape[1]
    Z = P / P.sum(axis=1, keepdims=True)
    Z = (1.0 - _SIMPLEX_EPS) * Z + _SIMPLEX_EPS * _interior_point(K)
    x = Z[:, : K - 1] * n_bins
    cell = np.minimum(np.floor(x), n_bins - 1)
    w = x - cell
    v = np.cumsum(w, axis=1) % 1.0
    perm = np.argsort(v, axis=1, kind="stable")
    return np.concatenate([cell.astype(np.int64), perm.astype(np.int64)], axis=1)


def simplex_bin_index(P, n_bins: int) -> np.ndarray:
    """Dense cell ids ``0..G-1`` of the rows of ``P`` (G = non-empty cells), from :func:`simplex_bin_keys`."""
    keys = simplex_bin_keys(P, n_bins)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Engines: statistics of the observed data and of resamples, for a list of partitions
# ----------------------------------------------------------------------------------------------


class _SortedScalarEngine:
    """Binary / top-label data (y-bootstrap and consistency nulls): prefix sums over the z-sorted order."""

    def __init__(self, z: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_bins_list: list[int]):
        order = np.argsort(z, kind="stable")
        self.order = order
        self.z = z[order]
        self.y = y[order]
        self.w = None if w is None else w[order]
        self.n = len(z)
        self.total_weight = float(self.n if w is None else w.sum())
        zs = self.z
        w2 = np.ones_like(zs) if self.w is None else self.w**2
        wsum = np.concatenate([[0.0], np.cumsum(np.ones_like(zs) if self.w is None else self.w)])
        self.nonempty: list[int] = []
        self.level_of: list[int] = []  # index into self.parts for each requested level
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (starts, ends, 1 / W_b) of bins >= 2 points
        previous_runs = -1
        singletons: list[np.ndarray] = []
        # Dyadic levels (the adaptive test): the bin at m = 2^b is the finest level's bin shifted right, exactly
        # (z 2^b is exact in floating point, and floor(x / 2^k) = floor(floor(x) / 2^k)): one pass of floating
        # point for all levels instead of one per level.
        top = max(n_bins_list, default=1)
        dyadic = all(m & (m - 1) == 0 for m in n_bins_list) and top < 2**62
        finest = uniform_bin_index(zs, top) if dyadic else None
        for m in n_bins_list:
            idx = finest >> (top.bit_length() - m.bit_length()) if dyadic else uniform_bin_index(zs, m)
            starts = np.concatenate([[0], np.flatnonzero(np.diff(idx)) + 1])
            ends = np.concatenate([starts[1:], [self.n]])
            self.nonempty.append(len(starts))
            if len(starts) == previous_runs:  # nested dyadic partitions: same count means same partition
                self.level_of.append(len(self.parts) - 1)
                continue
            previous_runs = len(starts)
            keep = (ends - starts) >= 2
            s, e = starts[keep], ends[keep]
            singletons.append(starts[~keep])
            self.parts.append((s, e, 1.0 / (wsum[e] - wsum[s])))
            self.level_of.append(len(self.parts) - 1)
        # Consistency null: a point alone in its bin at partition j stays alone at finer ones. Order
        # the points by the first partition where they are alone, so that the singleton part of every
        # partition is a prefix of that order.
        first_alone = np.full(self.n, len(self.parts))
        for j in range(len(self.parts) - 1, -1, -1):
            first_alone[singletons[j]] = j
        # (small integers: a radix sort, the same stable order)
        self.alone_order = np.argsort(first_alone.astype(np.int16 if len(self.parts) < 2**15 else np.int64), kind="stable")
        self.alone_count = np.searchsorted(first_alone[self.alone_order], np.arange(len(self.parts)), side="right")
        # Every distinct bin (start, end) over all partitions, with the first and last partition holding
        # it (nested partitions: a bin present at two partitions is present at all in between). About n
        # of them in all, against the sum over the partitions of their bins (about 1.5 n for n = 10^6).
        starts_all = np.concatenate([p[0] for p in self.parts] + [np.zeros(0, dtype=np.int64)])
        ends_all = np.concatenate([p[1] for p in self.parts] + [np.zeros(0, dtype=np.int64)])
        inv_all = np.concatenate([p[2] for p in self.parts] + [np.zeros(0)])
        part_all = np.concatenate([np.full(len(p[0]), j) for j, p in enumerate(self.parts)] + [np.zeros(0, dtype=np.int64)])
        key = starts_all.astype(np.int64) * (self.n + 1) + ends_all
        # (key, partition) pairs are distinct: one sort of the combined integer orders them as a lexsort would
        if (self.n + 1) ** 2 * max(len(self.parts), 1) < 2**62:
            order = np.argsort(key * max(len(self.parts), 1) + part_all)
        else:
            order = np.lexsort((part_all, key))
        key, part_all = key[order], part_all[order]
        first_of_run = np.concatenate([[True], key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=bool)
        run_id = np.cumsum(first_of_run) - 1
        heads = np.flatnonzero(first_of_run)
        last = np.zeros(len(heads), dtype=np.int64)
        np.maximum.at(last, run_id, part_all)
        first = part_all[heads]
        # Group the bins by (first, last) partition: the sum of a group's contributions counts for
        # partitions first..last, a (groups x partitions) 0/1 matrix. The sweep goes through the sorted
        # points block by block (so a block's arrays stay in cache); the bins are ordered by the block
        # holding their end and, within a block, by group, so each block's contributions reduce per group.
        P = len(self.parts)
        pairs, group = np.unique(first * P + last, return_inverse=True)
        self.group_spans = np.zeros((len(pairs), P))
        for g, (f, l) in enumerate(zip(pairs // P, pairs % P)):
            self.group_spans[g, f : l + 1] = 1.0
        bin_start, bin_end, bin_inv = starts_all[order][heads], ends_all[order][heads], inv_all[order][heads]
        self.block_edges = np.append(np.arange(0, self.n, _BLOCK_POINTS), self.n)
        block_of_end = (bin_end - 1) // _BLOCK_POINTS
        # (block, group, end) triples are distinct (two bins ending at one point are nested, so they hold
        # different partitions): one sort of the combined integer where it fits, a lexsort otherwise
        n_groups = max(len(pairs), 1)
        if (int(block_of_end.max(initial=0)) + 1) * n_groups * (self.n + 1) < 2**62:
            by_block = np.argsort((block_of_end * n_groups + group) * (self.n + 1) + bin_end)
        else:
            by_block = np.lexsort((bin_end, group, block_of_end))
        self.bin_start, self.bin_end = bin_start[by_block], bin_end[by_block]
        self.bin_inv_weight = bin_inv[by_block]
        bin_group, block_of_end = group[by_block], block_of_end[by_block]
        bounds = np.searchsorted(block_of_end, np.arange(len(self.block_edges)))
        self.blocks = []  # per block: (first bin, last bin + 1, reduceat offsets within, their groups)
        for k in range(len(self.block_edges) - 1):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            heads_k = np.flatnonzero(np.diff(bin_group[lo:hi], prepend=-1)) if hi > lo else np.zeros(0, dtype=np.int64)
            self.blocks.append((lo, hi, heads_k, bin_group[lo:hi][heads_k]))
        # The deterministic parts of every bin: sum w z (subtracted from sum w y* to give sum w U) and
        # sum w^2 z^2 (the part of sum w^2 U^2 = sum w^2 y* (1 - 2z) + sum w^2 z^2 that does not move).
        wz = np.concatenate([[0.0], np.cumsum(zs if self.w is None else self.w * zs)])
        self.bin_wz = wz[self.bin_end] - wz[self.bin_start]
        wz2 = np.concatenate([[0.0], np.cumsum(w2 * zs * zs)])
        fixed_part = (wz2[self.bin_end] - wz2[self.bin_start]) * self.bin_inv_weight
        self.const = np.bincount(bin_group, weights=fixed_part, minlength=len(pairs)) @ self.group_spans
        # What a positive (y* = 1) adds to the two prefix sums. With unit weights these are an integer
        # count and (1 - 2z) in fixed point, so the prefix sums are exact integer cumsums (several
        # times faster than floating-point ones, whose serial additions cannot be vectorised).
        # Positives counted in int32 while n allows (exact, and half the bytes to sum and gather of int64).
        self.count_dtype = (np.int32 if self.n < 2**31 else np.int64) if self.w is None else np.float64
        if self.w is None:
            self.fixed_bits = min(52, 62 - int(self.n).bit_length())
            self.step_b = np.rint((1.0 - 2.0 * zs) * 2.0**self.fixed_bits).astype(np.int64)
            self.scale_b = 2.0 ** -self.fixed_bits
        else:
            self.step_b = self.w**2 * (1.0 - 2.0 * zs)
            self.scale_b = 1.0
        self._local = threading.local()

    def _workspace(self, rows: int) -> dict:
        """Per-thread buffers, reused from chunk to chunk (fresh large arrays would cost a page fault per page)."""
        space = getattr(self._local, "space", None)
        if space is None or space["rows"] < rows:
            width = int(np.diff(self.block_edges).max(initial=0))
            most_bins = max([hi - lo for (lo, hi, _, _) in self.blocks] + [0])
            prefix_dtype = np.int64 if self.w is None else np.float64
            space = {
                "rows": rows,
                "D": np.empty((rows, width)),
                "positive": np.empty((rows, width), dtype=bool),
                "A": np.empty((rows, self.n + 1), dtype=self.count_dtype),
                "B": np.empty((rows, self.n + 1), dtype=prefix_dtype),
                "hiA": np.empty((rows, most_bins), dtype=self.count_dtype),
                "loA": np.empty((rows, most_bins), dtype=self.count_dtype),
                "hi": np.empty((rows, most_bins), dtype=prefix_dtype),
                "lo": np.empty((rows, most_bins), dtype=prefix_dtype),
                "S": np.empty((rows, most_bins)),
                "Q": np.empty((rows, most_bins)),
            }
            self._local.space = space
        return space

    def _statistics(self, rows: int, labels: Callable[[int, int, np.ndarray], None]) -> np.ndarray:
        """``T_m`` for ``rows`` label vectors and every distinct partition.

        ``labels(a, b, out)`` writes the labels of sorted points ``a..b-1`` (rows x (b - a), bool).
        Per bin, ``sum w U = sum w y - sum w z`` and ``sum w^2 U^2 = sum w^2 y (1 - 2z) + sum w^2 z^2``;
        the label-dependent sums are differences of two prefix sums over the sorted order, built block
        by block. Every distinct bin (of two or more points) of every partition is gathered once, in
        the block holding its end; its contribution ``((sum w U)^2 - sum w^2 U^2) / W_b`` then counts
        for the consecutive partitions that contain it.
        """
        space = self._workspace(rows)
        A, B = space["A"][:rows], space["B"][:rows]
        A[:, 0] = 0
        B[:, 0] = 0
        totals = np.zeros((rows, self.group_spans.shape[0]))
        for k, (first_bin, end_bin, heads, groups) in enumerate(self.blocks):
            a, b = int(self.block_edges[k]), int(self.block_edges[k + 1])
            positive = space["positive"][:rows, : b - a]
            labels(a, b, positive)
            A_k, B_k = A[:, a + 1 : b + 1], B[:, a + 1 : b + 1]
            if self.w is None:
                np.cumsum(positive, axis=1, out=A_k)
            else:
                np.multiply(positive, self.w[a:b], out=A_k)
                np.cumsum(A_k, axis=1, out=A_k)
            A_k += A[:, a : a + 1]
            np.multiply(positive, self.step_b[a:b], out=B_k)
            np.cumsum(B_k, axis=1, out=B_k)
            B_k += B[:, a : a + 1]
            if end_bin == first_bin:
                continue
            count = end_bin - first_bin
            starts, ends = self.bin_start[first_bin:end_bin], self.bin_end[first_bin:end_bin]
            hi, lo = space["hi"][:rows, :count], space["lo"][:rows, :count]
            S, Q = space["S"][:rows, :count], space["Q"][:rows, :count]

            def bin_sums(prefix: np.ndarray, hi=hi, lo=lo) -> np.ndarray:  # prefix[end] - prefix[start], into `hi`
                np.take(prefix, ends, axis=1, out=hi, mode="clip")  # indices are valid; "clip": no buffered copy
                np.take(prefix, starts, axis=1, out=lo, mode="clip")
                return np.subtract(hi, lo, out=hi)

            np.subtract(bin_sums(A, space["hiA"][:rows, :count], space["loA"][:rows, :count]),
                        self.bin_wz[first_bin:end_bin], out=S)
            np.multiply(S, S, out=S)
            np.multiply(bin_sums(B), self.scale_b, out=Q)
            S -= Q
            S *= self.bin_inv_weight[first_bin:end_bin]
            totals[:, groups] += np.add.reduceat(S, heads, axis=1)
        out = totals @ self.group_spans
        out -= self.const
        out /= self.total_weight
        return out

    def observed(self) -> np.ndarray:
        return self.statistics_of(self.y[None, :], sorted_order=True)[0]

    def statistics_of(self, labels_rows: np.ndarray, *, sorted_order: bool = False) -> np.ndarray:
        """``T_m`` per distinct partition for each row of 0/1 labels (rows x n; benchmarks test many
        label vectors on one z this way). Labels are in input order unless ``sorted_order``."""
        positive = np.asarray(labels_rows) > 0.5
        if not sorted_order:
            positive = positive[:, self.order]

        def labels(a: int, b: int, out: np.ndarray) -> None:
            out[:] = positive[:, a:b]

        return self._statistics(positive.shape[0], labels)

    def resampled(self, rng: np.random.Generator, rows: int, null: str) -> np.ndarray:
        if null == "consistency":
            return self._consistency(rng, rows)
        D = self._workspace(rows)["D"]

        def labels(a: int, b: int, out: np.ndarray) -> None:  # y* ~ Bernoulli(z), drawn block by block
            uniform = D.reshape(-1)[: rows * (b - a)].reshape(rows, b - a)  # contiguous, as rng.random needs
            rng.random(out=uniform)
            np.less(uniform, self.z[a:b], out=out)

        return self._statistics(rows, labels)

    def _consistency(self, rng: np.random.Generator, rows: int) -> np.ndarray:
        """Consistency resampling (unit weights): ``z*`` drawn with replacement, ``y* ~ Bernoulli(z*)``.

        The resample is described by copies ``k_i`` of every sorted point and positives ``s_i`` among
        them; a bin then has ``n_b = sum k``, ``sum U = sum (s - k z)`` and
        ``sum U^2 = sum (s (1 - 2z) + k z^2)``; bins with fewer than two copies contribute 0.
        """
        n, z = self.n, self.z
        J = rng.integers(0, n, size=(rows, n))
        positive = rng.random((rows, n)) < z[J]
        J += (np.arange(rows) * n)[:, None]
        k = np.bincount(J.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
        pos = np.bincount(J.ravel(), weights=positive.ravel(), minlength=rows * n).reshape(rows, n)
        A = pos - k * z
        B = pos * (1.0 - 2.0 * z) + k * (z * z)
        # points alone in their bin: contribution (A^2 - B) / k when k >= 2, else 0
        alone = np.where(k >= 2, (A * A - B) / np.maximum(k, 1.0), 0.0)
        alone_prefix = np.zeros((rows, n + 1))
        np.cumsum(np.take(alone, self.alone_order, axis=1), axis=1, out=alone_prefix[:, 1:])
        C = np.zeros((rows, n + 1), dtype=np.complex128)
        body = C[:, 1:]
        body.real = A
        body.imag = B
        np.cumsum(body, axis=1, out=body)
        Ck = np.zeros((rows, n + 1))
        np.cumsum(k, axis=1, out=Ck[:, 1:])
        out = np.take(alone_prefix, self.alone_count, axis=1)
        for j, (s, e, _) in enumerate(self.parts):
            if len(s) == 0:
                continue
            S = np.take(C, e, axis=1)
            S -= np.take(C, s, axis=1)
            nb = np.take(Ck, e, axis=1) - np.take(Ck, s, axis=1)
            contrib = S.real * S.real - S.imag
            out[:, j] += np.where(nb >= 2, contrib / np.maximum(nb, 1.0), 0.0).sum(axis=1)
        return out / n

    def chunk_rows(self) -> int:
        return max(1, _CHUNK_BYTES // (48 * self.n))


class _GroupVectorEngine:
    """Residual vectors ``e_c - P`` grouped by cell ids: canonical data, and the consistency null.

    Binary data go through here with ``P = [1 - z, z]`` and ``scale = 1/2`` (the scalar statistic is
    half the K = 2 vector one).
    """

    def __init__(self, P: np.ndarray, c: np.ndarray, w: np.ndarray | None, groups: list[np.ndarray], scale: float):
        self.P = P
        self.c = c
        self.w = w
        self.n, self.K = P.shape
        self.scale = scale
        self.total_weight = float(self.n if w is None else w.sum())
        self.cumP = np.cumsum(P, axis=1)[:, :-1]
        self.sqnorm = np.einsum("ij,ij->i", P, P)
        self.nonempty: list[int] = []
        self.level_of: list[int] = []
        self.parts: list[np.ndarray] = []
        for g in groups:
            G = int(g.max()) + 1
            self.nonempty.append(G)
            if self.parts and G == int(self.parts[-1].max()) + 1 and np.array_equal(g, self.parts[-1]):
                self.level_of.append(len(self.parts) - 1)
                continue
            self.parts.append(g)
            self.level_of.append(len(self.parts) - 1)
        # y-bootstrap: per partition, what does not depend on the drawn classes. Points alone in their
        # cell contribute 0 and are left out; the rest are renumbered by cell (``cell``, ``n_cells``).
        w = np.ones(self.n) if w is None else w
        self.fixed = []
        for g in self.parts:
            counts = np.bincount(g)
            sel = np.flatnonzero(counts[g] >= 2)
            _, cell = np.unique(g[sel], return_inverse=True)
            n_cells = int(cell.max()) + 1 if len(sel) else 0
            wsum = np.bincount(cell, weights=w[sel], minlength=n_cells)
            wP = np.stack([np.bincount(cell, weights=w[sel] * P[sel, k], minlength=n_cells) for k in range(self.K)], axis=1)
            # sum over the cell of w^2 (1 + |P|^2): the part of sum w^2 |e_c - P|^2 that does not move
            sq_fixed = np.bincount(cell, weights=w[sel] ** 2 * (1.0 + self.sqnorm[sel]), minlength=n_cells)
            self.fixed.append((sel, cell, n_cells, 1.0 / wsum, wP, float(sq_fixed @ (1.0 / wsum)) if n_cells else 0.0))

    def _draw_classes(self, rng: np.random.Generator, cumP: np.ndarray, rows: int) -> np.ndarray:
        """``c* ~ Categorical(P)``: the number of cumulative probabilities at or below a uniform draw."""
        u = rng.random((rows, self.n))
        cls = np.zeros(u.shape, dtype=np.int64)
        for k in range(self.K - 1):  # a loop over classes, not rows
            cls += u >= cumP[..., k]
        return cls

    def _stats(self, J: np.ndarray | None, cls: np.ndarray) -> np.ndarray:
        """``T`` for every row: ``J`` (rows x n) resampled point indices or None, ``cls`` drawn classes."""
        rows = cls.shape[0]
        out = np.zeros((rows, len(self.parts)))
        pts = np.arange(self.n) if J is None else J
        P_c = self.P[pts, cls]
        w = np.ones(self.n) if self.w is None else self.w
        wp = w[pts] if J is not None else np.broadcast_to(w, cls.shape)
        sq_term = None if J is None else (wp * wp) * (1.0 - 2.0 * P_c + self.sqnorm[pts])
        row_off = np.arange(rows)[:, None]
        for j, g in enumerate(self.parts):
            G = int(g.max()) + 1
            if J is None:
                sel, cell, Gs, inv_wsum, wP, sq_fixed = self.fixed[j]
                if Gs == 0:
                    continue
                key = (row_off * Gs + cell[None, :]).ravel()
                cls_s = cls[:, sel]
                w_s = None if self.w is None else np.broadcast_to(self.w[sel], cls_s.shape).ravel()
                cnt = np.bincount(key * self.K + cls_s.ravel(), weights=w_s, minlength=rows * Gs * self.K)
                S1 = cnt.reshape(rows, Gs, self.K) - wP[None, :, :]
                # sum w^2 |e_c - P|^2 = sum w^2 (1 + |P|^2) - 2 sum w^2 P_c
                moving = np.bincount(key, weights=(wp[:, sel] ** 2 * P_c[:, sel]).ravel(), minlength=rows * Gs).reshape(rows, Gs)
                val = np.einsum("rgk,rgk->rg", S1, S1) @ inv_wsum + 2.0 * (moving @ inv_wsum) - sq_fixed
            else:
                gj = g[J]
                key = (row_off * G + gj).ravel()
                num = np.bincount(key, minlength=rows * G).reshape(rows, G)
                Pk = np.stack([np.bincount(key, weights=self.P[J, k].ravel(), minlength=rows * G) for k in range(self.K)], axis=1)
                cnt = np.bincount(key * self.K + cls.ravel(), minlength=rows * G * self.K).astype(np.float64)
                S1 = (cnt - Pk.ravel()).reshape(rows, G, self.K)
                S2 = np.bincount(key, weights=sq_term.ravel(), minlength=rows * G).reshape(rows, G)
                contrib = np.einsum("rgk,rgk->rg", S1, S1) - S2
                contrib = np.where(num >= 2, contrib / np.maximum(num, 1), 0.0)
                val = contrib.sum(axis=1)
            out[:, j] = self.scale * val / self.total_weight
        return out

    def observed(self) -> np.ndarray:
        return self._stats(None, self.c[None, :])[0]

    def resampled(self, rng: np.random.Generator, rows: int, null: str) -> np.ndarray:
        if null == "consistency":
            J = rng.integers(0, self.n, size=(rows, self.n))
            cls = self._draw_classes(rng, self.cumP[J], rows)
            return self._stats(J, cls)
        cls = self._draw_classes(rng, self.cumP, rows)
        return self._stats(None, cls)

    def chunk_rows(self) -> int:
        return max(1, _CHUNK_BYTES // (8 * self.n * (self.K + 6)))


def _resample_all(engine, rng: np.random.Generator, n_boot: int, null: str, progress: Callable[[], None] | None = None) -> np.ndarray:
    """``n_boot`` resampled statistics per distinct partition, chunk by chunk (seeded per chunk).

    ``progress()``, if given, is called once per finished resample, from the calling thread.
    """
    rows = min(engine.chunk_rows(), n_boot)
    sizes = [rows] * (n_boot // rows) + ([n_boot % rows] if n_boot % rows else [])
    seeds = rng.integers(0, 2**63 - 1, size=len(sizes))

    def run(i: int) -> np.ndarray:
        cancel.check()  # a signal stops the resampling threads here, within one chunk
        return engine.resampled(np.random.default_rng(int(seeds[i])), sizes[i], null)

    parts = []
    if len(sizes) > 1 and _N_THREADS > 1:
        pool = ThreadPoolExecutor(max_workers=_N_THREADS)
        try:
            for part in pool.map(run, range(len(sizes))):
                parts.append(part)
                for _ in range(len(part)) if progress is not None else ():
                    progress()
        finally:
            cancel.shutdown_now(pool)  # on an interrupt, the queued chunks are dropped, not run
    else:
        for i in range(len(sizes)):
            parts.append(run(i))
            for _ in range(sizes[i]) if progress is not None else ():
                progress()
    return np.concatenate(parts, axis=0)


# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------


def _prepare(y_true, y_prob, sample_weight):
    """Validate; return (mode, K, y or c, z or P, w or None, weighted)."""
    arr = np.asarray(y_prob)
    if arr.ndim == 2 and arr.shape[1] == 2:
        c, P, w = check_multiclass(y_true, arr, sample_weight)
        y, z = c, P[:, 1].copy()
        mode, K = "binary", 2
        data = (y, z)
    elif arr.ndim == 2:
        c, P, w = check_multiclass(y_true, arr, sample_weight)
        mode, K = "canonical", P.shape[1]
        data = (c, P)
    else:
        y, z, w = check_binary(y_true, arr, sample_weight)
        mode, K = "binary", 2
        data = (y, z)
    weighted = sample_weight is not None and not np.all(w == w[0])
    labels, probs = data
    if weighted:
        keep = w > 0  # rows of weight 0 contribute nothing
        labels, probs, w = labels[keep], probs[keep], w[keep]
    else:
        w = None  # constant weights change nothing: T_m is invariant to a common factor
    return mode, K, labels, probs, w, weighted


def _make_engine(mode: str, K: int, labels, probs, w, n_bins_list: list[int]):
    if mode == "binary":
        return _SortedScalarEngine(probs, labels.astype(np.float64), w, n_bins_list)
    P = probs / probs.sum(axis=1, keepdims=True)
    groups = [simplex_bin_index(P, m) for m in n_bins_list]
    return _GroupVectorEngine(P, labels, w, groups, scale=1.0)


def tcal_statistic(y_true, y_prob, *, n_bins: int, sample_weight=None) -> float:
    """The debiased plug-in statistic ``T_m`` of SPEC 4.1 with ``n_bins`` = m bins per axis.

    Binary (1-D ``y_prob``, or two columns): ``(1/n) sum_b (1/n_b) [(sum_b U)^2 - sum_b U^2]`` with
    ``U = y - z`` and equal-width bins. Canonical (K > 2 columns): the same with ``U = e_c - P``,
    squared norms, and the simplex partition of SPEC 4.3. With weights, ``n`` and ``n_b`` become
    sums of weights and the debiasing term ``sum w^2 U^2``. It estimates the squared l2-ECE (it can
    be negative).
    """
    check_option(int(n_bins) >= 1, f"n_bins is {n_bins}: expected at least 1 bin per axis")
    mode, K, labels, probs, w, _ = _prepare(y_true, y_prob, sample_weight)
    engine = _make_engine(mode, K, labels, probs, w, [int(n_bins)])
    return float(engine.observed()[engine.level_of[0]])


def _tie_tolerance(values: np.ndarray) -> np.ndarray:
    """Per-level tolerance: ``TIE_RTOL`` times the largest absolute statistic over all R + 1 values."""
    return TIE_RTOL * np.max(np.abs(values), axis=0)


def _exceed_counts(all_stats: np.ndarray) -> np.ndarray:
    """``c[j, l] = #{i : T[i, l] >= T[j, l] - tol_l}`` over the R + 1 rows (observed first)."""
    tol = _tie_tolerance(all_stats)
    total = all_stats.shape[0]
    counts = np.empty(all_stats.shape, dtype=np.int64)
    for l in range(all_stats.shape[1]):  # loop over levels (at most ~40), not resamples
        ordered = np.sort(all_stats[:, l])
        counts[:, l] = total - np.searchsorted(ordered, all_stats[:, l] - tol[l], side="left")
    return counts


@dataclass(frozen=True)
class MonteCarloCombination:
    """Both combination rules from one set of resamples (internal to :func:`tcal_test`, used by benchmarks).

    ``counts[l] = #{j in 0..R : T_j >= T_0}`` for the observed statistic (row 0) at level ``l``, so the
    per-level p-value is ``counts / (R + 1)``. A level rejects when its count is at most the
    threshold: ``floor(alpha/L (R + 1))`` for Bonferroni; for min-p, the largest count ``c`` with
    ``1 + #{resamples whose min count <= c} <= alpha (R + 1)``.
    """

    counts: np.ndarray
    p_levels: np.ndarray
    threshold_bonferroni: int
    threshold_min_p: int
    p_value_bonferroni: float
    p_value_min_p: float


def monte_carlo_combine(observed: np.ndarray, star: np.ndarray, level_of: np.ndarray, alpha: float) -> MonteCarloCombination:
    """Per-level Monte Carlo p-values and both combinations, from statistics per distinct partition.

    ``observed``: one value per distinct partition; ``star``: R x distinct partitions;
    ``level_of``: the distinct partition of each of the L levels.
    """
    L = len(level_of)
    all_stats = np.concatenate([observed[None, :], star], axis=0)
    counts = _exceed_counts(all_stats)[:, level_of]  # (R + 1) x L
    total = all_stats.shape[0]
    p_levels = counts[0] / total
    threshold_b = math.floor(alpha / L * total * (1 + 1e-12))
    q = counts.min(axis=1)  # the min-p statistic, as counts, of the observed and of every resample
    q_star = np.sort(q[1:])
    budget = math.floor(alpha * total * (1 + 1e-12)) - 1
    threshold_m = 0
    if budget >= 0:
        candidates = np.arange(1, total + 1)
        ok = candidates[np.searchsorted(q_star, candidates, side="right") <= budget]
        threshold_m = int(ok.max()) if len(ok) else 0
    return MonteCarloCombination(
        counts=counts[0],
        p_levels=p_levels,
        threshold_bonferroni=int(threshold_b),
        threshold_min_p=int(threshold_m),
        p_value_bonferroni=min(1.0, L * float(p_levels.min())),
        p_value_min_p=(1 + int(np.sum(q[1:] <= q[0]))) / total,
    )


def tcal_test(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    smoothness: float | None = None,
    null: str = "y-bootstrap",
    n_boot: int = 1000,
    combine: str = "bonferroni",
    alpha: float = 0.05,
    rng: np.random.Generator | None = None,
    progress: Callable[[], None] | None = None,
) -> TcalResult:
    """Test the null hypothesis of perfect calibration with T-Cal (seed 004; SPEC 4.2).

    Inputs: binary labels and 1-D probabilities (binary or top-label data; the caller reduces
    top-label to binary), or integer labels and an (n, K) probability matrix (canonical mode;
    K = 2 columns reduce to binary on column 1).

    ``smoothness=None`` runs the adaptive test (Algorithm 2): levels ``b = 1..L`` with ``m = 2^b``.
    A number ``s`` runs the single-scale test with ``m* = floor(n^(2/(4s+K-1)))`` bins per axis.

    ``null``: ``y-bootstrap`` (keep z, draw ``y* ~ Bernoulli(z)``; the Monte Carlo p-value is exact),
    ``consistency`` (z* resampled with replacement, then ``y* ~ Bernoulli(z*)``; approximate), or
    ``chebyshev`` (no resampling; the conservative critical value of Theorem 3.1). One set of
    ``n_boot`` resamples serves every level and both combination rules.

    ``combine``: ``bonferroni`` (reject if some level has ``p_b <= alpha/L``; p-value
    ``min(1, L min_b p_b)``) or ``min-p`` (``min_b p_b`` calibrated against its own distribution over
    the same resamples; exact under the y-bootstrap). For ``chebyshev``, the per-level p-value is
    the smallest level at which Theorem 3.1's test rejects: ``min(1, (C_m / T_m)^2)`` for
    ``T_m > 0`` (its critical value is ``C_m / sqrt(alpha)``), else 1; ``min-p`` needs resamples
    and is refused.

    ``rng``: the source of all randomness (``None`` means ``numpy.random.default_rng(0)``).
    ``progress``: called once per finished resample (for a progress bar).
    Sample weights are supported by the y-bootstrap only (weights held fixed, labels redrawn).
    """
    check_option(null in NULLS, f"unknown null {null!r}: expected one of {', '.join(NULLS)}")
    check_option(combine in COMBINES, f"unknown combine rule {combine!r}: expected one of {', '.join(COMBINES)}")
    check_option(0.0 < alpha < 1.0, f"alpha is {alpha}: expected a level strictly between 0 and 1")
    check_option(null == "chebyshev" or int(n_boot) >= 1, f"{{opt:n_boot}} is {n_boot}: expected at least 1 resample")
    check_option(
        not (null == "chebyshev" and combine == "min-p"),
        "{opt:combine} min-p calibrates the minimum p-value over resamples, and {opt:null} chebyshev draws none: "
        "use {opt:combine} bonferroni with chebyshev, or a resampling null",
    )
    check_option(smoothness is None or smoothness > 0, f"{{opt:smoothness}} is {smoothness}: expected a positive Holder exponent")
    mode, K, labels, probs, w, weighted = _prepare(y_true, y_prob, sample_weight)
    check_option(
        not weighted or null == "y-bootstrap",
        f"sample weights are supported by {{opt:null}} y-bootstrap only (got {{opt:null}} {null}): "
        "drop the weights or use the y-bootstrap",
    )
    n = len(labels)
    check_option(n >= 2, f"T-Cal needs at least 2 predictions, got {n}")
    rng = np.random.default_rng(0) if rng is None else rng
    R = 0 if null == "chebyshev" else int(n_boot)

    adaptive = smoothness is None
    if adaptive:
        L = n_levels(n, K)
        n_bins_list = [2**b for b in range(1, L + 1)]
    else:
        L = 1
        n_bins_list = [optimal_n_bins(n, float(smoothness), K)]
        _check_cells(n_bins_list[0], K, n, float(smoothness))

    warnings: list[str] = []
    if mode == "canonical":
        rate = n ** (-2.0 / (K + 3))
        if rate > HOPELESS_RATE:
            warnings.append(
                f"canonical mode with K = {K} classes splits the simplex into m^{K - 1} cells "
                f"({2 ** (K - 1)} already at m = 2), and the smallest detectable l2-ECE shrinks only like "
                f"n^(-2s/(4s+K-1)) (about {rate:.2f} here for s = 1): the test has little power; "
                f"use {{opt:mode}} top-label to test the confidence of the predicted class instead"
            )

    engine = _make_engine(mode, K, labels, probs, w, n_bins_list)
    observed = engine.observed()  # one value per distinct partition
    level_of = np.asarray(engine.level_of)
    T_obs = observed[level_of]
    n_cells = [m ** (K - 1) for m in n_bins_list]

    if null == "chebyshev":
        C = np.array([chebyshev_constant(n, m, K, scalar=(mode == "binary")) for m in n_bins_list])
        p_levels = np.where(T_obs > 0, np.minimum(1.0, (C / np.where(T_obs > 0, T_obs, 1.0)) ** 2), 1.0)
        per_level_alpha = alpha / L
        crit = [float(c / math.sqrt(per_level_alpha)) for c in C]
        reject_levels = [bool(t >= cv) for t, cv in zip(T_obs, crit)]
        p_value = min(1.0, L * float(p_levels.min()))
        p_value_min_p = None
        reject = any(reject_levels)
        exact = False
    else:
        star = _resample_all(engine, rng, R, null, progress)
        mc = monte_carlo_combine(observed, star, level_of, alpha)
        p_levels = mc.p_levels
        threshold = mc.threshold_bonferroni if combine == "bonferroni" else mc.threshold_min_p
        p_value = mc.p_value_bonferroni if combine == "bonferroni" else mc.p_value_min_p
        p_value_min_p = mc.p_value_min_p
        total = R + 1
        per_level_alpha = threshold / total
        reject_levels = [bool(c <= threshold) for c in mc.counts]
        reject = any(reject_levels)
        crit = []
        for l in range(L):
            if threshold < 1 or threshold - 1 >= R:
                crit.append(None)
                continue
            column = np.sort(star[:, level_of[l]])[::-1]
            crit.append(float(column[threshold - 1]))
        if threshold < 1:
            need = math.ceil(L / alpha) - 1 if combine == "bonferroni" else math.ceil(1 / alpha) - 1
            warnings.append(
                f"with {{opt:n_boot}} {R} the smallest attainable p-value is 1/{total} = {1 / total:.3g}, too large for "
                f"{'alpha/L = ' + format(alpha / L, '.3g') if combine == 'bonferroni' else 'alpha = ' + format(alpha, '.3g')}: "
                f"the test cannot reject; use {{opt:n_boot}} {need} or more"
            )
        exact = null == "y-bootstrap"
        if null == "consistency":
            warnings.append(
                "{opt:null} consistency resamples the predictions as well as the labels: its p-value is approximate, "
                "not exact (seed 004, 8.3.3); {opt:null} y-bootstrap is exact"
            )

    levels = tuple(
        TcalLevel(
            level=(b + 1 if adaptive else 1),
            n_bins=int(m),
            n_cells=int(cells),
            n_nonempty=int(engine.nonempty[b]),
            statistic=float(T_obs[b]),
            critical_value=crit[b],
            p_value=float(p_levels[b]),
            reject=reject_levels[b],
        )
        for b, (m, cells) in enumerate(zip(n_bins_list, n_cells))
    )
    return TcalResult(
        reject=bool(reject),
        p_value=float(p_value),
        p_value_bonferroni=min(1.0, L * float(np.min(p_levels))),
        p_value_min_p=None if p_value_min_p is None else float(p_value_min_p),
        alpha=float(alpha),
        null=null,
        combine=combine,
        adaptive=adaptive,
        smoothness=None if smoothness is None else float(smoothness),
        mode=mode,
        n_classes=K,
        n=n,
        n_boot=R,
        n_levels=L,
        per_level_alpha=float(per_level_alpha),
        exact=bool(exact),
        weighted=bool(weighted),
        statistic_name=STATISTIC_NAME,
        levels=levels,
        warnings=tuple(warnings),
    )


# ----------------------------------------------------------------------------------------------
# Discrete predictors (SPEC 4.4)
# ----------------------------------------------------------------------------------------------


def discreteness(y_prob) -> DiscreteCheck:
    """Apply the ``--discrete auto`` rule: discrete when the distinct values number at most ``sqrt(n)``.

    With ``t <= sqrt(n)`` every value has on average at least ``sqrt(n)`` predictions, enough for a
    binomial test per value; continuous predictors have ``t`` close to ``n``. Histogram-binned and
    scaling-binned models (B values) fall on the discrete side as soon as ``n >= B^2``.
    """
    z = np.asarray(y_prob, dtype=np.float64).reshape(-1)
    return discreteness_from_counts(int(len(np.unique(z))), len(z))


def discreteness_from_counts(n_distinct: int, n: int) -> DiscreteCheck:
    """The rule of :func:`discreteness` for a predictor known by its counts: ``t`` distinct values among ``n``."""
    threshold = math.sqrt(n)
    return DiscreteCheck(discrete=bool(n > 0 and n_distinct <= threshold), n_distinct=int(n_distinct), n=int(n),
                         threshold=threshold, rule=DISCRETE_RULE)


def is_discrete(y_prob) -> bool:
    """``True`` when :func:`discreteness` says the predictor takes few distinct values."""
    return discreteness(y_prob).discrete


def binomial_test(y_true, y_prob, *, alpha: float = 0.05) -> BinomialTestResult:
    """Exact two-sided binomial test of ``P(Y = 1 | z = v) = v`` per distinct value v (seed 004, 8.2.4).

    For each of the ``t`` distinct values, ``M_v`` positives among ``N_v`` predictions are compared
    with ``Binomial(N_v, v)`` (``scipy.stats.binomtest``, two-sided: the total probability of counts
    no more likely than the observed one). Bonferroni over the t values: reject if
    ``min_v p_v <= alpha / t``; p-value ``min(1, t min_v p_v)``.
    """
    check_option(0.0 < alpha < 1.0, f"alpha is {alpha}: expected a level strictly between 0 and 1")
    y, z, _ = check_binary(y_true, y_prob)
    values, inverse = np.unique(z, return_inverse=True)
    N = np.bincount(inverse, minlength=len(values))
    M = np.bincount(inverse, weights=y, minlength=len(values)).astype(np.int64)
    return binomial_test_from_counts(values, N, M, alpha=alpha)


def binomial_test_from_counts(values, n, positives, *, alpha: float = 0.05) -> BinomialTestResult:
    """:func:`binomial_test` from its sufficient statistics: the distinct values ``v`` (increasing), and per
    value the predictions ``N_v`` (``n``) and the positives ``M_v`` (``positives``) among them.

    Counts add across batches and workers, so a streamed run tests every row exactly
    (:class:`calibcli.accumulators.tcal.ValueCounts`).
    """
    from scipy.stats import binomtest

    check_option(0.0 < alpha < 1.0, f"alpha is {alpha}: expected a level strictly between 0 and 1")
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    N = np.asarray(n, dtype=np.int64).reshape(-1)
    M = np.asarray(positives, dtype=np.int64).reshape(-1)
    check_option(len(values) >= 1 and len(values) == len(N) == len(M),
                 f"the binomial test needs one count and one positive count per value, got {len(values)} values, "
                 f"{len(N)} counts and {len(M)} positive counts")
    check_option(bool(np.all((values >= 0.0) & (values <= 1.0))), "prediction values must lie in [0, 1]")
    check_option(bool(np.all(N >= 1) and np.all((M >= 0) & (M <= N))),
                 "every value needs at least one prediction and between 0 and that many positives")
    t = len(values)
    per_value_alpha = alpha / t
    p = np.array([binomtest(int(k), int(nn), float(v)).pvalue for k, nn, v in zip(M, N, values)])  # loop over values
    rows = tuple(
        BinomialRow(
            value=float(v),
            n=int(nn),
            positives=int(k),
            observed_rate=float(k / nn),
            p_value=float(pv),
            reject=bool(pv <= per_value_alpha),
        )
        for v, nn, k, pv in zip(values, N, M, p)
    )
    p_min = float(p.min())
    return BinomialTestResult(
        reject=bool(p_min <= per_value_alpha),
        p_value=min(1.0, t * p_min),
        alpha=float(alpha),
        n=int(N.sum()),
        n_values=int(t),
        per_value_alpha=float(per_value_alpha),
        method="exact two-sided binomial test per distinct value (scipy.stats.binomtest), Bonferroni over values",
        rows=rows,
    )


__all__ = [
    "COMBINES",
    "NULLS",
    "BinomialRow",
    "BinomialTestResult",
    "DiscreteCheck",
    "TcalLevel",
    "TcalResult",
    "binomial_test",
    "binomial_test_from_counts",
    "chebyshev_constant",
    "discreteness",
    "discreteness_from_counts",
    "is_discrete",
    "n_levels",
    "optimal_n_bins",
    "simplex_bin_index",
    "simplex_bin_keys",
    "tcal_statistic",
    "tcal_test",
]
