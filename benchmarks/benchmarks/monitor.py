"""``calibcli monitor`` (calibcli.monitor; issue 36's bars): 1e7 rows over ten daily Parquet files streamed in flat
memory, and the Dask engine's windows equal to the local engine's.

Data (cached as ``_common`` does, outside the repository): ``monitor_1e7/day-0.parquet`` .. ``day-9.parquet``,
1e6 rows each with a timestamp ``ts`` inside its day (2024-01-01 + day, shuffled within the file), ``prob`` ~
Beta(2, 5) and ``label`` ~ Bernoulli(prob), block ``b`` of 500,000 rows from ``default_rng([36, b])``;
``monitor_1e6/`` the same law, 1e5 rows a day.
"""

from __future__ import annotations

import json
import math
import os

from . import _common

#: The monitor's arguments: daily windows, the first two the reference, no interval resamples (the bar is the
#: stream's memory; the reference's resamples are kept small).
ARGS = ("--time-col", "ts", "--every", "1D", "--reference-windows", "2", "--n-boot", "0", "--n-null", "20")
BLOCK = 500_000


def series(name: str, rows_per_day: int) -> str:
    """The directory of ten daily files (see the module docstring), written on first use."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _common.cache_dir() / f"monitor_{name}_v{_common.DATA_VERSION}"
    if path.is_dir():
        return str(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    start = np.datetime64("2024-01-01T00:00:00", "ns")
    for day in range(10):
        with pq.ParquetWriter(tmp / f"day-{day}.parquet", _schema()) as writer:
            for part in range(max(1, rows_per_day // BLOCK)):
                n = min(BLOCK, rows_per_day)
                rng = np.random.default_rng([36, day, part])
                seconds = rng.integers(0, 86400, n)
                ts = start + np.timedelta64(day, "D") + seconds.astype("timedelta64[s]")
                prob = rng.beta(2.0, 5.0, n)
                label = (rng.random(n) < prob).astype(np.int64)
                writer.write_table(pa.table({"ts": ts, "prob": prob, "label": label}, schema=_schema()))
    os.replace(tmp, path)
    return str(path)


def _schema():
    import pyarrow as pa

    return pa.schema([("ts", pa.timestamp("ns")), ("prob", pa.float64()), ("label", pa.int64())])


def _max_relative_difference(a: dict, b: dict) -> float:
    """The largest relative difference between two monitor documents' window numbers (estimates, intervals and
    the tests' p-values); infinite when their windows or alerts differ."""
    worst = 0.0
    if [(w["start"], w["rows"], w["alert"]) for w in a["windows"]] != [
        (w["start"], w["rows"], w["alert"]) for w in b["windows"]
    ]:
        return math.inf
    for x, y in zip(a["windows"], b["windows"], strict=True):
        pairs = [(x["test"]["p_value"], y["test"]["p_value"])]
        for name, m in x["metrics"].items():
            pairs += [(m[k], y["metrics"][name][k]) for k in ("estimate", "ci_low", "ci_high")]
        for u, v in pairs:
            if u is None or v is None:
                if u is not v:
                    return math.inf
                continue
            scale = max(abs(u), abs(v))
            worst = max(worst, 0.0 if scale == 0 else abs(u - v) / scale)
    return worst


class Bar:
    """Issue 36's bars: ``calibcli monitor`` over 1e7 rows in ten daily files (fresh process, its peak memory), and
    the local and the Dask engine (two local workers) on the 1e6-row series."""

    timeout = 3600

    def setup_cache(self):
        big = _common.run("monitor", series("1e7", 1_000_000), *ARGS)
        small = series("1e6", 100_000)
        local = _common.run("monitor", small, *ARGS)
        dask = _common.run("monitor", small, *ARGS, "--engine", "dask", "--workers", "2")
        runs = _common.record("monitor", {"1e7": big, "local 1e6": local, "dask 1e6": dask})
        return {
            "peak_gb": runs["1e7"].peak_mb * 1024 * 1024 / 1e9,
            "seconds": runs["1e7"].wall,
            "difference": _max_relative_difference(json.loads(local.stdout), json.loads(dask.stdout)),
        }

    def track_bar_monitor_1e7_peak_gb(self, m):
        """Peak resident memory (``ru_maxrss``) of ``monitor`` over 1e7 rows in ten daily files, in GB (1e9 bytes).
        Bar: under 1 GB."""
        return m["peak_gb"]

    track_bar_monitor_1e7_peak_gb.unit = "GB (bar < 1)"  # type: ignore[attr-defined]

    def track_bar_monitor_dask_difference(self, m):
        """The largest relative difference between the Dask engine's windows and the local engine's (estimates,
        intervals, p-values; infinite if a window or an alert differs). Bar: at most 1e-12."""
        return m["difference"]

    track_bar_monitor_dask_difference.unit = "relative difference (bar <= 1e-12)"  # type: ignore[attr-defined]

    def track_monitor_1e7_seconds(self, m):
        """Wall clock of the 1e7-row run (start-up included)."""
        return m["seconds"]

    track_monitor_1e7_seconds.unit = "s"  # type: ignore[attr-defined]
