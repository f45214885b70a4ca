"""What a T-Cal engine does, and the driver of its resamples.

An engine holds one input's data for a list of partitions (the levels of the test) and computes ``T_m`` of
the observed labels and of resampled ones per distinct partition (nested levels that hold the same bins
share one). Two engines implement it: :class:`calibcli.tcal.scalar.SortedScalarEngine` (binary and
top-label data, prefix sums over the sorted predictions) and :class:`calibcli.tcal.vector.GroupVectorEngine`
(canonical data, residual vectors grouped by simplex cell). :func:`resample_all` draws the resamples chunk
by chunk, each chunk seeded from the caller's generator, so the numbers depend only on the seed (several
chunks may be computed in one call, each still from its own generator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from calibcli.core import cancel

#: Memory budget (bytes) for one chunk of resamples; fixes the chunking, hence the random stream.
CHUNK_BYTES = 4 * 2**20

#: Worker threads for chunks of resamples (NumPy releases the GIL in the heavy calls).
N_THREADS = 2


class Resampler(Protocol):
    """What :func:`resample_all` needs: the chunking of the resamples and the statistics of seeded chunks."""

    def chunk_rows(self) -> int:
        """Resamples per chunk (fixed by the memory budget, so it fixes the random stream)."""
        ...

    def sweep_rows(self) -> int:
        """Resamples computed together at most (several chunks in one call, when a chunk holds fewer)."""
        ...

    def resampled_chunks(self, chunks: Sequence[tuple[np.random.Generator, int]], null: str) -> np.ndarray:
        """``T_m`` of the resamples of several chunks, each ``(rng, rows)`` drawn from its own generator, stacked:
        the rows of ``resampled(rng, rows, null)`` of each chunk (sum of rows x distinct partitions)."""
        ...


class Engine(Resampler, Protocol):
    """The statistics of one input under a list of partitions.

    ``nonempty[l]``: non-empty cells of requested level ``l``; ``level_of[l]``: the distinct partition
    computing that level (one value per distinct partition in what ``observed`` and ``resampled`` return).
    """

    nonempty: list[int]
    level_of: list[int]

    def observed(self) -> np.ndarray:
        """``T_m`` of the observed labels, one value per distinct partition."""
        ...

    def resampled(self, rng: np.random.Generator, rows: int, null: str) -> np.ndarray:
        """``T_m`` of ``rows`` resamples under ``null`` drawn from ``rng``: rows x distinct partitions."""
        ...


def resample_all(
    engine: Resampler,
    rng: np.random.Generator,
    n_boot: int,
    null: str,
    progress: Callable[[], None] | None = None,
) -> np.ndarray:
    """``n_boot`` resampled statistics per distinct partition, chunk by chunk (seeded per chunk).

    The chunks (and so the numbers) are fixed by ``engine.chunk_rows()``; consecutive chunks are computed
    together up to ``engine.sweep_rows()`` resamples, each from its own generator, on ``N_THREADS`` threads.
    ``progress()``, if given, is called once per finished resample, from the calling thread.
    """
    rows = min(engine.chunk_rows(), n_boot)
    sizes = [rows] * (n_boot // rows) + ([n_boot % rows] if n_boot % rows else [])
    seeds = rng.integers(0, 2**63 - 1, size=len(sizes))
    per_sweep = max(1, engine.sweep_rows() // rows)
    sweeps = [range(i, min(i + per_sweep, len(sizes))) for i in range(0, len(sizes), per_sweep)]

    def run(j: int) -> np.ndarray:
        cancel.check()  # a signal stops the resampling threads here, within one sweep
        return engine.resampled_chunks([(np.random.default_rng(int(seeds[i])), sizes[i]) for i in sweeps[j]], null)

    parts = []
    if len(sweeps) > 1 and N_THREADS > 1:
        pool = ThreadPoolExecutor(max_workers=N_THREADS)
        try:
            for part in pool.map(run, range(len(sweeps))):
                parts.append(part)
                if progress is not None:
                    for _ in range(len(part)):
                        progress()
        finally:
            cancel.shutdown_now(pool)  # on an interrupt, the queued sweeps are dropped, not run
    else:
        for j in range(len(sweeps)):
            parts.append(run(j))
            if progress is not None:
                for _ in range(len(parts[-1])):
                    progress()
    return np.concatenate(parts, axis=0)
