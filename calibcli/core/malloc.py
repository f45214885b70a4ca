"""glibc's allocator settings for streaming runs: reuse freed batch-sized arrays instead of unmapping them.

A streamed run allocates the same few arrays for every batch (a 131,072-row column is 1 MB; a 500,000-row
fragment's 4 MB). glibc serves allocations above its mmap threshold (128 kB, raised adaptively) with a
fresh ``mmap`` and returns them to the kernel on ``free``, so every batch faults its pages in again; the
reader thread's arena and Dask's own ``MALLOC_TRIM_THRESHOLD_`` defeat the adaptive threshold. Measured
(``benchmarks/tools/dask_timeline.py``, docs/dask_benchmark.md): a 500,000-row fragment 57 ms -> 26 ms, its
kernel time 29 -> 4.5 ms; ``calibcli ece`` on 1e7 rows with 1000 resamples 1.8-2.1 s -> 1.3 s, peak memory
+6%.

:data:`SETTINGS` are the same values the Dask engine gives its workers. The environment variables of
glibc (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) are read when the process starts, so here
they are applied with ``mallopt`` once a command runs; a user who set either variable keeps their choice.
Nothing happens on another C library or platform.
"""

from __future__ import annotations

import os
import sys

#: Arrays up to 32 MiB come from the heap and are reused; the heap's top is trimmed beyond 128 MiB free.
SETTINGS = {"MALLOC_MMAP_THRESHOLD_": 32 * 2**20, "MALLOC_TRIM_THRESHOLD_": 128 * 2**20}

#: ``mallopt`` parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_done = False


def tune_allocator() -> bool:
    """Apply :data:`SETTINGS` to this process with glibc's ``mallopt`` (once); True when applied."""
    global _done
    if _done:
        return False
    _done = True
    if not sys.platform.startswith("linux") or any(name in os.environ for name in SETTINGS):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
            return False  # not glibc (musl has no mallopt tuning of this kind)
        ok = libc.mallopt(_M_MMAP_THRESHOLD, SETTINGS["MALLOC_MMAP_THRESHOLD_"])
        ok &= libc.mallopt(_M_TRIM_THRESHOLD, SETTINGS["MALLOC_TRIM_THRESHOLD_"])
        return bool(ok)
    except (OSError, AttributeError):
        return False
