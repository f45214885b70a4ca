"""Randomness that does not depend on how the data were split (SPEC 8).

Every random quantity a streamed evaluation needs is a function of ``(seed, global row index)``
(and of the replicate number), never of the order in which batches, files or workers arrive:

- :func:`poisson_multiplicities`: the bootstrap multiplicity ``m_ir ~ Poisson(1)`` of row ``i`` in
  replicate ``r`` (the Poisson bootstrap), from a counter-based generator: the SplitMix64 output
  (Steele, Lea & Flood 2014) at position ``i`` of the stream keyed by ``(seed, r)``. Each row's draw is
  computed from its own index alone, so any subset of rows, in any order and any batching, gets the
  same multiplicities, at a cost proportional to its own rows (a group's rows scattered over a large
  dataset cost no more than the same rows side by side).
- :func:`row_hash`: a 64-bit hash of ``(seed, i)`` (SplitMix64 finaliser, Steele, Lea & Flood 2014),
  used to pick the bottom-k sample of rows that a test needing all rows at once runs on.
- :func:`percentile_interval`: the percentile bootstrap interval (SPEC 2.4).

Poisson(1) draws are made by inversion: a uniform 32-bit integer ``u`` gives
``m = #{k >= 1 : u >= 2^32 P(M <= k - 1)}``, so each probability of the law is exact to within 2^-32.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from calibcli.core import cancel
from calibcli.core.poisson import poisson_quantile_sums, poisson_run_sums

#: Multiplicities above this are drawn as this value; P(Poisson(1) > 12) = 1.2e-10 < 2^-32 * 1.
_MAX_MULTIPLICITY = 12

#: 2^32 * P(M <= k) for k = 0..MAX-1: the inversion thresholds of Poisson(1).
_THRESHOLDS = np.array(
    [
        min(round(math.ldexp(sum(math.exp(-1.0) / math.factorial(j) for j in range(k + 1)), 32)), 2**32 - 1)
        for k in range(_MAX_MULTIPLICITY)
    ],
    dtype=np.uint64,
).astype(np.uint32)

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)

_GAMMA = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's increment (the golden ratio)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
    """SplitMix64's finaliser, in place on a uint64 array (``tmp``: scratch of the same shape)."""
    tmp = np.empty_like(x) if tmp is None else tmp
    for shift, factor in ((30, _MIX1), (27, _MIX2)):
        np.right_shift(x, np.uint64(shift), out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        np.multiply(x, factor, out=x)
    np.right_shift(x, np.uint64(31), out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    return x


def _stream_key(seed: int, replicate: int) -> np.uint64:
    """The start of replicate ``replicate``'s SplitMix64 stream: a hash of ``(seed, replicate)``."""
    return _stream_keys(seed, np.array([replicate]))[0]


def _stream_keys(seed: int, replicates: np.ndarray) -> np.ndarray:
    """:func:`_stream_key` of every replicate of ``replicates`` at once (uint64)."""
    reps = np.asarray(replicates, dtype=np.int64).reshape(-1)
    x = np.full(len(reps), int(seed) & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = _mix(x)
        x ^= reps.astype(np.uint64) * _GAMMA + np.uint64(0x632BE59BD9B4E019)
        x = _mix(x)
    return x


#: Bits of ``u`` read by the table of :func:`_draws`: a 4096-entry table stays in the first-level cache.
_TABLE_BITS = 12
#: Poisson(1) multiplicity of each value of the high ``_TABLE_BITS`` bits of ``u`` (float64), -1 where those bits
#: do not settle it (a threshold falls inside the cell: 12 of the 4096 cells).
_TABLE_SPLIT = np.zeros(1 << _TABLE_BITS, dtype=bool)
_TABLE_SPLIT[
    (_THRESHOLDS[(_THRESHOLDS & ((1 << (32 - _TABLE_BITS)) - 1)) != 0] >> (32 - _TABLE_BITS)).astype(np.int64)
] = True
_CELL_FLOAT = np.where(
    _TABLE_SPLIT,
    -1.0,
    np.searchsorted(
        _THRESHOLDS.astype(np.int64), np.arange(1 << _TABLE_BITS, dtype=np.int64) << (32 - _TABLE_BITS), side="right"
    ),
)


#: The same table as small integers (-1 where split), what the per-row draws look up (a 4 kB table; a byte per
#: draw to check for split cells and widen, rather than eight).
_CELL_INT8 = _CELL_FLOAT.astype(np.int8)


class Scratch:
    """Reusable arrays of one thread's draws (:meth:`Multiplicities.columns`): a block of ``(rows, R)`` states
    and their table cells, kept from one block to the next so that no block faults fresh pages in."""

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` (uninitialised), the same memory as the last one of ``name`` when
        that was at least as large."""
        size = int(np.prod(shape))
        have = self._arrays.get(name)
        if have is None or have.dtype != np.dtype(dtype) or have.size < size:
            have = self._arrays[name] = np.empty(size, dtype=dtype)
        return have[:size].reshape(shape)


def _draws(
    x: np.ndarray, out: np.ndarray, scratch: Scratch | None = None, pairs: np.ndarray | None = None
) -> np.ndarray:
    """Poisson(1) multiplicities of the SplitMix64 states ``x`` (uint64, overwritten) into ``out`` (float64,
    same shape): ``mix(x)``'s high 32 bits inverted.

    Inversion by table: bits 33-63 of the output are those before SplitMix64's last step ``x ^= x >> 31``,
    so the high ``_TABLE_BITS`` bits are read before it, and the step is taken (and ``u`` searched among the
    thresholds) only for the few values those bits do not settle; the same numbers as the whole finaliser,
    in fewer passes over the block. The table is read as bytes (``mode="wrap"``: the cells are in range, so
    no bounds are checked), the split cells found among those bytes and the result widened to float64 last.
    ``pairs`` (float64, same shape), if given, receives ``m (m - 1)``, computed on the bytes (exact integers)."""
    scratch = Scratch() if scratch is None else scratch
    tmp = scratch.get("tmp", x.shape, np.uint64)
    for shift, factor in ((30, _MIX1), (27, _MIX2)):
        np.right_shift(x, np.uint64(shift), out=tmp)
        np.bitwise_xor(x, tmp, out=x)
        np.multiply(x, factor, out=x)
    np.right_shift(x, np.uint64(64 - _TABLE_BITS), out=tmp)
    small = scratch.get("small", x.shape, np.int8)
    np.take(_CELL_INT8, tmp.view(np.int64), out=small, mode="wrap")
    flat = small.reshape(-1)
    split = np.flatnonzero(flat.view(np.uint8) >= 128)  # the -1 cells (a byte compare: cheaper than flat < 0)
    if len(split):
        xs = x.reshape(-1)[split]
        xs ^= xs >> np.uint64(31)
        flat[split] = np.searchsorted(_THRESHOLDS, (xs >> np.uint64(32)).astype(np.uint32), side="right")
    np.copyto(out, small)
    if pairs is not None:  # m (m - 1) <= 132: exact in a byte (m = 0 wraps to 255 x 0 = 0)
        count = small.view(np.uint8)
        pair_count = scratch.get("pairs", x.shape, np.uint8)
        np.subtract(count, np.uint8(1), out=pair_count)
        np.multiply(pair_count, count, out=pair_count)
        np.copyto(pairs, pair_count)
    return out


class Multiplicities:
    """Bootstrap multiplicities of a fixed set of rows (global indices), one replicate at a time.

    ``Multiplicities(seed, row_index).replicate(r)`` is ``m_ir ~ Poisson(1)`` for those rows (float64),
    a function of ``(seed, r, i)`` only: the same rows get the same values however the data were
    batched, ordered or split between workers. Row ``i`` of replicate ``r`` is the SplitMix64 output
    ``mix(key(seed, r) + (i + 1) gamma)``, whose high 32 bits are inverted into Poisson(1).
    """

    def __init__(self, seed: int, row_index: np.ndarray):
        self.seed = int(seed)
        with np.errstate(over="ignore"):
            self._positions = (np.asarray(row_index, dtype=np.int64).astype(np.uint64) + np.uint64(1)) * _GAMMA
        self.n = len(self._positions)

    def replicate(self, r: int, out: np.ndarray | None = None) -> np.ndarray:
        """Multiplicities of the rows (in the order given) in replicate ``r``.

        Every per-row bootstrap draws its replicates here or in :meth:`block`, so a signal stops it
        here (:func:`calibcli.core.cancel.check`, also in worker threads)."""
        return self.block(np.array([r]), out=None if out is None else out.reshape(1, -1))[0]

    def block(self, replicates, out: np.ndarray | None = None) -> np.ndarray:
        """Multiplicities of the rows in each of ``replicates`` at once: an ``(len(replicates), n)`` array
        whose row ``j`` is :meth:`replicate` of ``replicates[j]`` (the same numbers, one set of array
        operations for the whole block)."""
        cancel.check()
        keys = _stream_keys(self.seed, replicates)
        out = np.empty((len(keys), self.n)) if out is None else out
        return _draws(np.add.outer(keys, self._positions), out)

    def stream(self, replicates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What a compiled loop needs to make these rows' draws under ``replicates`` itself, as
        :func:`calibcli.core.poisson.poisson_run_sums` does: the rows' SplitMix64 positions, the replicates' stream
        keys (uint64) and the inversion thresholds (uint32). A signal stops the run here."""
        cancel.check()
        return self._positions, _stream_keys(self.seed, replicates), _THRESHOLDS

    def columns(
        self,
        replicates,
        out: np.ndarray | None = None,
        scratch: Scratch | None = None,
        pairs: np.ndarray | None = None,
    ) -> np.ndarray:
        """:meth:`block` transposed, made in that layout: ``(n, len(replicates))``, row ``i`` the
        multiplicities of row ``i`` in every replicate (what a sparse product over rows reads). ``out`` (float64,
        that shape) and ``scratch`` (a thread's :class:`Scratch`) let a loop over blocks reuse its memory;
        ``pairs`` (float64, that shape), if given, receives the self-pair counts ``m (m - 1)``."""
        cancel.check()
        keys = _stream_keys(self.seed, replicates)
        scratch = Scratch() if scratch is None else scratch
        x = scratch.get("x", (self.n, len(keys)), np.uint64)
        np.add(self._positions[:, None], keys[None, :], out=x)
        return _draws(x, np.empty((self.n, len(keys))) if out is None else out, scratch, pairs)

    def run_sums(
        self,
        replicates,
        cell: np.ndarray,
        X: np.ndarray,
        X_self: np.ndarray,
        out: np.ndarray,
        self_out: np.ndarray,
    ) -> None:
        """Add the rows' resampled sums into their cells under every replicate of ``replicates`` at once (a
        compiled loop, :func:`calibcli.core.poisson.poisson_run_sums`; the multiplicities are never stored):
        ``out[c, k, j] += m X[i, k]`` and ``self_out[c, l, j] += m (m - 1) X_self[i, l]`` over the rows ``i`` of
        cell ``cell[i] = c``, ascending, with ``m`` row ``i``'s multiplicity in replicate ``replicates[j]``.

        ``cell`` (n,) int64 (non-decreasing runs are cheapest), ``X`` (n, K) and ``X_self`` (n, J) float64 (J may
        be 0), ``out`` (cells, K, R) and ``self_out`` (cells, J, R) float64 C-contiguous, R = len(replicates).
        Started from zeros, each sum is a loop over its rows adding ``m X`` (in the rows' plain order).
        A signal stops it between slices of rows (:func:`calibcli.core.cancel.check`)."""
        keys = _stream_keys(self.seed, replicates)
        cell = np.ascontiguousarray(cell, dtype=np.int64)
        X = np.ascontiguousarray(X, dtype=np.float64)
        X_self = np.ascontiguousarray(X_self, dtype=np.float64)
        if len(cell) != self.n or len(X) != self.n or len(X_self) != self.n:
            raise ValueError(
                f"{self.n} rows of positions, but {len(cell)}, {len(X)}, {len(X_self)} of cells and values"
            )
        if out.shape[1:] != (X.shape[1], len(keys)) or self_out.shape[1:] != (X_self.shape[1], len(keys)):
            raise ValueError(
                f"sums of shape {out.shape} and {self_out.shape} for {X.shape[1]} and "
                f"{X_self.shape[1]} values under {len(keys)} replicates"
            )
        if not (out.flags.c_contiguous and self_out.flags.c_contiguous):
            raise ValueError("the sums must be C-contiguous arrays")
        if self.n and (cell.min() < 0 or cell.max() >= min(len(out), len(self_out) if X_self.shape[1] else len(out))):
            raise ValueError(f"cells must lie in 0..{len(out) - 1}")
        # slices of about 2^21 draws between checks for a signal (a few ms each)
        step = max(1, (1 << 21) // max(len(keys), 1))
        for a in range(0, self.n, step):
            cancel.check()
            b = min(a + step, self.n)
            poisson_run_sums(self._positions[a:b], keys, cell[a:b], X[a:b], X_self[a:b], _THRESHOLDS, out, self_out)

    def quantile_sums(
        self,
        replicates,
        z_sorted: np.ndarray,
        X: np.ndarray,
        X_self: np.ndarray,
        out: np.ndarray,
        self_out: np.ndarray,
    ) -> None:
        """Every replicate's sums over its own quantile bins, the rows sorted by ``z_sorted`` (a compiled loop,
        :func:`calibcli.core.poisson.poisson_quantile_sums`: SPEC 2.1's edges of each resample, then each bin's
        sums): ``out`` (K, R, B) and ``self_out`` (J, R, B) float64, zeros, any strides. The bins are those of
        :func:`calibcli.core.binning.quantile_starts_batched`; each bin's sums are added row after row from zero. A
        signal stops it between slices of replicates (:func:`calibcli.core.cancel.check`)."""
        keys = _stream_keys(self.seed, replicates)
        z_sorted = np.ascontiguousarray(z_sorted, dtype=np.float64)
        X = np.ascontiguousarray(X, dtype=np.float64)
        X_self = np.ascontiguousarray(X_self, dtype=np.float64)
        if len(z_sorted) != self.n or len(X) != self.n or len(X_self) != self.n:
            raise ValueError(f"{self.n} rows of positions, but {len(z_sorted)}, {len(X)}, {len(X_self)} of values")
        if out.shape[:2] != (X.shape[1], len(keys)) or self_out.shape[:2] != (X_self.shape[1], len(keys)):
            raise ValueError(
                f"sums of shape {out.shape} and {self_out.shape} for {X.shape[1]} and "
                f"{X_self.shape[1]} values under {len(keys)} replicates"
            )
        step = max(1, (1 << 21) // max(self.n, 1))
        for a in range(0, len(keys), step):
            cancel.check()
            b = min(a + step, len(keys))
            poisson_quantile_sums(
                self._positions, keys[a:b], z_sorted, X, X_self, _THRESHOLDS, out[:, a:b], self_out[:, a:b]
            )


#: Draws (rows x replicates) from which a per-row bootstrap runs its compiled loops (:mod:`calibcli.core.poisson`)
#: rather than NumPy's draws: the loops take a third of the time per draw, but their first call in a process imports
#: Numba and loads its machine code (0.4 s), which pays off from about 1.5e8 draws on. Both are one step's two
#: backends, the same draws, tested against each other within 1e-12 relative (SPEC 8.1).
COMPILED_DRAWS = 1 << 27

#: Rows that the per-row bootstraps of the whole run will resample, when the run knows them before its first
#: bootstrap (:func:`planned_rows`); 0 when it does not.
_PLANNED_ROWS = 0


@contextlib.contextmanager
def planning_rows(rows: int) -> Iterator[None]:
    """For as long as the context lasts, the run's per-row bootstraps resample ``rows`` rows in all (many inputs,
    each under the per-row limit: the LLM dumps of a directory). Each bootstrap then chooses its backend by the
    whole run's draws, not its own: Numba's load, paid once, is paid back over all the inputs together."""
    global _PLANNED_ROWS
    before, _PLANNED_ROWS = _PLANNED_ROWS, max(int(rows), 0)
    try:
        yield
    finally:
        _PLANNED_ROWS = before


def planned_rows() -> int:
    """The rows of the whole run's per-row bootstraps (:func:`planning_rows`), 0 when not told."""
    return _PLANNED_ROWS


def compiled_pays(rows: int, n_boot: int, threshold: int | None = None) -> bool:
    """Whether a per-row bootstrap of ``rows`` rows and ``n_boot`` replicates runs the compiled loops: when its own
    draws, or the whole run's (:func:`planned_rows`), reach ``threshold`` (default :data:`COMPILED_DRAWS`)."""
    return max(int(rows), _PLANNED_ROWS) * int(n_boot) >= (COMPILED_DRAWS if threshold is None else threshold)


#: Threads of the per-row bootstrap's blocks (:func:`in_threads`): NumPy's ufuncs and SciPy's sparse products
#: release the GIL, and the machines this runs on have 2 cores or more; at most the CPUs this process may use.
THREADS = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def replicate_spans(n_boot: int, parts: int | None = None) -> list[tuple[int, int]]:
    """Replicates ``0..n_boot`` cut into ``parts`` (default :data:`THREADS`) consecutive spans, as equal as they
    go, none empty: the jobs of one bootstrap shared out between threads (:func:`in_threads`)."""
    parts = THREADS if parts is None else max(1, int(parts))
    cuts = [n_boot * k // parts for k in range(parts + 1)]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def alongside(side: Callable[[], Any], main: Callable[[], Any]) -> tuple[Any, Any]:
    """``(side(), main())``: ``side`` in a thread of its own while ``main`` runs in this one, which keeps its pool
    for :func:`in_threads` (a bootstrap's threads leave a CPU idle whenever this thread waits on them or works
    alone; ``side`` fills it). The two must share no state they change. On one CPU, one after the other. An error
    in ``main`` is raised once ``side`` has stopped (at its next :func:`calibcli.core.cancel.check` on a signal);
    else ``side``'s."""
    if THREADS < 2:
        return side(), main()
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="calibcli-side")
    try:
        future = pool.submit(side)
        done = main()
        return future.result(), done
    finally:
        cancel.shutdown_now(pool)


def in_threads(
    function: Callable[..., Any], jobs: Sequence[tuple], on_done: Callable[[Any], None] | None = None
) -> list:
    """``[function(*job) for job in jobs]``, in order, on up to :data:`THREADS` threads (each job whole on one
    thread; the jobs must be independent); ``on_done(result)`` is called in the calling thread as each job's
    result arrives, in order (a progress bar). A signal stops it: every job starts with
    :func:`calibcli.core.cancel.check`, the queued ones are dropped (:func:`calibcli.core.cancel.shutdown_now`) and the
    first error is raised here. Called from a thread other than the main one (a diagram's worker, which has a
    sibling), the jobs run in that thread, one after another: no pool inside a pool."""
    import threading

    def run(job: tuple) -> Any:
        cancel.check()
        return function(*job)

    out = []
    if THREADS < 2 or len(jobs) < 2 or threading.current_thread() is not threading.main_thread():
        for job in jobs:
            out.append(run(job))
            if on_done is not None:
                on_done(out[-1])
        return out
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=min(THREADS, len(jobs)), thread_name_prefix="calibcli-boot")
    try:
        for result in pool.map(run, jobs):
            out.append(result)
            if on_done is not None:
                on_done(result)
        return out
    finally:
        cancel.shutdown_now(pool)


def poisson_multiplicities(seed: int, replicate: int, row_index: np.ndarray) -> np.ndarray:
    """Multiplicity ``m_ir`` (float64) of every row in ``row_index`` (global indices) in one replicate."""
    return Multiplicities(seed, row_index).replicate(replicate)


def row_hash(seed: int, row_index: np.ndarray) -> np.ndarray:
    """64-bit hash of ``(seed, row)`` for every row (uint64): SplitMix64's finaliser of ``row + seed * phi``."""
    x = np.asarray(row_index, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64((int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x & _MASK64


def percentile_interval(replicates: np.ndarray, alpha: float) -> tuple[float, float]:
    """Percentile bootstrap interval at level ``1 - alpha``; replicates that are NaN are left out."""
    lo, hi = percentile_intervals(replicates, alpha)
    return float(lo), float(hi)


def percentile_intervals(replicates: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`percentile_interval` of every row at once: ``replicates`` ``(..., R)`` gives ``(low, high)`` of
    the leading shape (NaN replicates left out of each row; a row of NaN gives NaN)."""
    import warnings

    values = np.asarray(replicates, dtype=np.float64)
    q = [alpha / 2.0, 1.0 - alpha / 2.0]
    gaps = np.isnan(values).any(axis=-1) | (values.shape[-1] == 0)
    if not gaps.any():  # (nanquantile takes every row alone once one has a NaN: only those rows go that way)
        lo, hi = np.quantile(values, q, axis=-1)
        return lo, hi
    lo, hi = np.empty(gaps.shape), np.empty(gaps.shape)
    if (~gaps).any():
        lo[~gaps], hi[~gaps] = np.quantile(values[~gaps], q, axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # every replicate NaN (or none): the interval is NaN
        lo[gaps], hi[gaps] = np.nanquantile(values[gaps], q, axis=-1) if values.shape[-1] else (np.nan, np.nan)
    return lo, hi
