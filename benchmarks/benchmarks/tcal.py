"""``calibcli tcal`` (calibcli.tcal): whole processes, the library in process, and issue 37's T-Cal bars.

Ported from ``bench_tcal_speed.py`` (the adaptive test at 1e4 and 1e6 rows, 3000 resamples) and
``bench_replicates.py`` (``tcal`` against ``ece`` at 1e6 rows, ``tcal`` at 1e4 rows with 3000 resamples).
"""

from __future__ import annotations

from . import _common


class Command:
    """``calibcli tcal FILE --json`` as a fresh process with its defaults (adaptive, y-bootstrap, 1000 resamples)."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600
    params = (["1e4", "1e6"],)
    param_names = ["rows"]

    def setup(self, rows):
        self.path = str(_common.rows(float(rows)))

    def time_tcal(self, rows):
        _common.run("tcal", self.path)


class Library:
    """``calibcli.metrics.tcal_test`` in process, 3000 resamples (issue 10's targets: 1e4 rows under 2 s, 1e6 rows
    under a minute)."""

    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)
    params = (["1e4", "1e5"],)
    param_names = ["rows"]

    def setup(self, rows):
        import numpy as np
        import pyarrow.parquet as pq

        from calibcli.metrics import tcal_test

        table = pq.read_table(_common.rows(float(rows)), columns=["prob", "label"])
        self.prob, self.label = np.asarray(table["prob"]), np.asarray(table["label"])
        tcal_test(self.label[:1000], self.prob[:1000], n_boot=20)

    def time_tcal_test_3000(self, rows):
        from calibcli.metrics import tcal_test

        tcal_test(self.label, self.prob, n_boot=3000)


class Bar:
    """Issue 37's T-Cal bars, fresh processes with their defaults, in the same benchmark run: ``tcal`` on 1e6 rows
    against ``ece`` on the same rows, and ``tcal --n-boot 3000`` on 1e4 rows in seconds."""

    timeout = 1200

    def setup_cache(self):
        small = str(_common.rows(1e4))
        _common.run("tcal", small)  # the compiled loops in Numba's cache
        path = str(_common.rows(1e6))
        runs = {
            "ece": _common.run("ece", path),
            "tcal": _common.run("tcal", path),
            "tcal_1e4": _common.run("tcal", small, "--n-boot", "3000"),
        }
        return {**_common.record("tcal", runs), "load": _common.load()}

    track_bar_tcal_over_ece_wall, track_bar_tcal_over_ece_cpu = _common.ratio_bars(
        "tcal_over_ece",
        "tcal",
        "ece",
        what="``tcal`` / ``ece`` on 1e6 rows, one run each",
        unit="x ece",
        bar=4,
    )

    def track_bar_tcal_1e4_3000_seconds(self, m):
        """Wall clock of ``tcal --n-boot 3000`` on 1e4 rows, the whole process. Bar: under 0.5 s."""
        return m["tcal_1e4"].wall

    track_bar_tcal_1e4_3000_seconds.unit = "seconds (bar < 0.5)"  # type: ignore[attr-defined]
