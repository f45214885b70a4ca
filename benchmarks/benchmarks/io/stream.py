"""Streaming (calibcli.io, SPEC 8): memory flat in the rows, throughput against a bare pyarrow pass, on directories
of Parquet shards (``_common.shards``: 1e6 rows in 2 shards, 1e7 in 10; 1e8 in 20 when
``CALIBCLI_BENCH_1E8=1``, which writes 870 MB of shards once).

Ported from ``bench_stream.py``: its memory part (the peak of ``ece --n-boot 1000``, ``smece`` and ``diagram`` as
the rows grow; bar: 1.25x from 1e6 to 1e8) and its throughput part (``ece --n-boot 0`` against reading the same
two columns batch by batch with ``pyarrow.dataset`` and binning them with three ``np.bincount`` per batch; bar:
1.5x). Its bootstrap part is ``binned.ece.Command``; its splits' agreement ``studies/same_numbers.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from .. import _common

SIZES = ["1e6", "1e7"] + (["1e8"] if os.environ.get("CALIBCLI_BENCH_1E8") == "1" else [])

BARE_PASS = r"""
import sys
import numpy as np
import pyarrow.dataset as ds
B = 15
data = ds.dataset(sys.argv[1], format="parquet")
count = np.zeros(B, dtype=np.int64); sum_y = np.zeros(B); sum_z = np.zeros(B)
for batch in data.to_batches(columns=["prob", "label"], batch_size=1 << 20):
    z = batch.column(0).to_numpy()
    y = batch.column(1).to_numpy()
    b = np.minimum((z * B).astype(np.intp), B - 1)
    count += np.bincount(b, minlength=B)
    sum_y += np.bincount(b, weights=y, minlength=B)
    sum_z += np.bincount(b, weights=z, minlength=B)
print(float(np.abs(sum_y - sum_z).sum() / count.sum()))
"""


def _bare(path: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_PASS, path], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


class Memory:
    """Peak resident memory (MB, ``ru_maxrss`` of the process) of a command on a directory of shards, as the rows
    grow: flat means the same few hundred MB at every size."""

    timeout = 1800
    params = (SIZES, ["ece --n-boot 1000", "smece", "diagram"])
    param_names = ["rows", "command"]

    def setup(self, rows, command):
        self.path = str(_common.shards(rows))
        self.tmp = tempfile.TemporaryDirectory()

    def teardown(self, rows, command):
        self.tmp.cleanup()

    def track_peak_mb(self, rows, command):
        """Peak MB of ``calibcli COMMAND DIR``. Bar (issue 11): the 1e8 run at most 1.25x the 1e6 run."""
        if command == "diagram":
            out = os.path.join(self.tmp.name, "out.png")
            return _common.run("diagram", self.path, "-o", out, env={"MPLBACKEND": "Agg"}).peak_mb
        name, *extra = command.split()
        return _common.run(name, self.path, *extra).peak_mb

    track_peak_mb.unit = "MB"  # type: ignore[attr-defined]


class Throughput:
    """``calibcli ece DIR --n-boot 0`` against a bare ``pyarrow.dataset`` pass over the same shards (one untimed
    warm-up each, so the files are in the page cache), both fresh processes."""

    timeout = 1800
    params = (SIZES,)
    param_names = ["rows"]

    def setup_cache(self):
        out = {}
        for rows in SIZES:
            path = str(_common.shards(rows))
            _common.run("ece", path, "--n-boot", "0")
            _bare(path)
            out[rows] = (_common.run("ece", path, "--n-boot", "0").wall, _bare(path))
        return out

    def track_ece_over_bare_pass(self, m, rows):
        """Wall clock of ``ece --n-boot 0`` / the bare pass, in one run. Bar (issue 11): at most 1.5x."""
        ece, bare = m[rows]
        return ece / bare

    track_ece_over_bare_pass.unit = "x bare pyarrow pass (bar <= 1.5)"  # type: ignore[attr-defined]

    def track_rows_per_second(self, m, rows):
        """Millions of rows per second of ``ece --n-boot 0`` (start-up included)."""
        return _common.SHARDS[rows][0] / m[rows][0] / 1e6

    track_rows_per_second.unit = "million rows/s"  # type: ignore[attr-defined]
