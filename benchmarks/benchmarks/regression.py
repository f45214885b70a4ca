"""``calibcli regression`` (calibcli.regression) and issue 34's bars, printed side by side in one run.

Data: 1,000,000 rows of a heteroscedastic Gaussian prediction (``mean``, ``std``, ``y``; the std 0.7 of the true one,
overconfident; seed 0) as one Parquet file, and 10,000,000 rows of the same law as 10 Parquet shards (block ``b`` from
``default_rng([34, b])``), cached as :mod:`._common` caches its files.

Bars: on 1e6 rows ``calibcli regression --n-boot 0`` at least 5x faster than uncertainty-toolbox's vectorised
metrics on the same rows (their own timing, in their own process: MACE, RMSCE, miscalibration area, CRPS, NLL, check
score, interval score, sharpness), and 1e7 rows streamed in under 1 GB peak memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from . import _common

BLOCK = 1_000_000


def _block(b: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng([34, b])
    x = rng.uniform(-2, 2, BLOCK)
    mu = np.sin(x)
    s = 0.2 + 0.3 * np.abs(x)
    return pa.table({"mean": mu, "std": 0.7 * s, "y": mu + rng.normal(size=BLOCK) * s})


def gaussian_rows() -> Path:
    """1e6 rows, one Parquet file."""
    path = _common.cache_dir() / f"regression_1e6_v{_common.DATA_VERSION}.parquet"
    if not path.exists():
        _common._write_atomically(path, _block(0))
    return path


def gaussian_shards(blocks: int = 10) -> Path:
    """``blocks`` x 1e6 rows as Parquet shards of one block each."""
    import pyarrow.parquet as pq

    path = _common.cache_dir() / f"regression_{blocks}e6_v{_common.DATA_VERSION}"
    if path.exists():
        return path
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    for b in range(blocks):
        pq.write_table(_block(b), tmp / f"part-{b:02d}.parquet")
    os.replace(tmp, path)
    return path


#: uncertainty-toolbox's metrics on the rows, timed in their own process (reading the file is not counted)
_UCT = """
import sys, time
import pyarrow.parquet as pq
import uncertainty_toolbox as uct
t = pq.read_table(sys.argv[1])
mu, s, y = (t.column(c).to_numpy() for c in ("mean", "std", "y"))
start = time.perf_counter()
uct.mean_absolute_calibration_error(mu, s, y, vectorized=True)
uct.root_mean_squared_calibration_error(mu, s, y, vectorized=True)
uct.miscalibration_area(mu, s, y, vectorized=True)
uct.crps_gaussian(mu, s, y)
uct.nll_gaussian(mu, s, y)
uct.check_score(mu, s, y)
uct.interval_score(mu, s, y)
uct.sharpness(s)
print(time.perf_counter() - start)
"""


def uct_seconds(path: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _UCT, str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


class Command:
    """Whole runs of ``calibcli regression``."""

    timeout = 600

    def setup(self):
        self.rows = gaussian_rows()

    def time_regression_1e6_no_boot(self):
        _common.run("regression", str(self.rows), "--n-boot", "0")

    def time_regression_1e6_boot_200(self):
        _common.run("regression", str(self.rows), "--n-boot", "200")


class Bar:
    """Issue 34's bars in one run: the speed ratio against uncertainty-toolbox and the 1e7-row peak memory."""

    timeout = 1800

    def setup_cache(self):
        rows, shards = gaussian_rows(), gaussian_shards()
        runs = {
            "calibcli_1e6": _common.run("regression", str(rows), "--n-boot", "0"),
            "calibcli_1e7_shards": _common.run("regression", str(shards), "--n-boot", "0"),
        }
        _common.record("regression", runs)
        return {"runs": runs, "uct": uct_seconds(rows), "load": _common.load()}

    def track_bar_uct_over_calibcli(self, m):
        """Bar (issue 34): >= 5 times faster than uncertainty-toolbox's vectorised metrics, on 1e6 rows."""
        return m["uct"] / m["runs"]["calibcli_1e6"].wall

    track_bar_uct_over_calibcli.unit = "x uncertainty-toolbox's own time (bar >= 5)"  # type: ignore[attr-defined]

    def track_bar_1e7_peak_mb(self, m):
        """Bar (issue 34): under 1024 MB of peak memory while 1e7 rows stream."""
        return m["runs"]["calibcli_1e7_shards"].peak_mb

    track_bar_1e7_peak_mb.unit = "MB peak for 1e7 rows (bar < 1024)"  # type: ignore[attr-defined]


if __name__ == "__main__":  # the bars side by side, without asv: python -m benchmarks.benchmarks.regression
    bar = Bar()
    m = bar.setup_cache()
    c6, c7 = m["runs"]["calibcli_1e6"], m["runs"]["calibcli_1e7_shards"]
    print(f"load {m['load']:.2f}")
    print(
        f"1e6 rows: calibcli regression --n-boot 0 {c6.wall:.2f} s wall ({c6.cpu:.2f} s CPU, {c6.peak_mb:.0f} MB); "
        f"uncertainty-toolbox {m['uct']:.2f} s: {bar.track_bar_uct_over_calibcli(m):.1f}x (bar >= 5)"
    )
    print(f"1e7 rows (10 shards): {c7.wall:.2f} s wall, peak {c7.peak_mb:.0f} MB (bar < 1024)")
