"""``calibcli ece`` (calibcli.binned): whole processes as a user runs them, the library's bootstrap in process, and
issue 37's grouped bars.

Data: ``_common.rows`` (1e6 rows of distinct Beta(2, 5) scores, 1,000 groups ``g``). Ported from
``bench_ece.py`` (the library's bootstrap at 1e6 rows), ``bench_groups.py`` (the grouped runs, the memory budget)
and ``bench_replicates.py`` (the per-row bootstrap at 1e5 rows, uniform and quantile bins).
"""

from __future__ import annotations

from .. import _common


class Command:
    """``calibcli ece FILE --json`` as a fresh process (start-up, reading, 1000 resamples, the JSON)."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600
    params = (["1e5", "1e6"], ["uniform", "quantile"])
    param_names = ["rows", "strategy"]

    def setup(self, rows, strategy):
        self.path = str(_common.rows(float(rows)))

    def time_ece(self, rows, strategy):
        _common.run("ece", self.path, "--strategy", strategy)


class GroupedCommand:
    """``ece --group-by g`` over 1,000 groups of 1e6 rows, as a fresh process; with a memory budget that makes it
    run the groups in chunks (``CALIBCLI_MEMORY_BUDGET=400M``: the same numbers)."""

    number = 1
    repeat = (1, 2, 120.0)
    warmup_time = 0
    timeout = 900
    params = (["none", "400M"],)
    param_names = ["memory_budget"]

    def setup(self, budget):
        self.path = str(_common.rows(1e6))
        _common.run("ece", str(_common.rows(1e4)), "--group-by", "g")  # the compiled loops in Numba's cache first

    def time_ece_group_by(self, budget):
        env = {} if budget == "none" else {"CALIBCLI_MEMORY_BUDGET": budget}
        _common.run("ece", self.path, "--group-by", "g", env=env)


class Library:
    """``calibcli.metrics.ece`` with 1000 bootstrap resamples on 1e6 rows, in process (no start-up, no reading)."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        import numpy as np
        import pyarrow.parquet as pq

        table = pq.read_table(_common.rows(1e6), columns=["prob", "label"])
        self.prob = np.asarray(table["prob"])
        self.label = np.asarray(table["label"])
        from calibcli.metrics import ece

        ece(self.label[:1000], self.prob[:1000], n_boot=10)  # imports and compiled loops out of the timing

    def time_ece_n_boot_1000(self):
        from calibcli.metrics import ece

        ece(self.label, self.prob, n_boot=1000)

    def time_ece_point(self):
        from calibcli.metrics import ece

        ece(self.label, self.prob)


class GroupsBar:
    """Issue 37's bars for ``ece --group-by``: 1,000 groups on 1e6 rows against the ungrouped ``ece`` on the same rows,
    both fresh processes with their defaults, measured in the same benchmark run (after a warm-up that leaves the
    compiled loops in Numba's cache: the first run after an install is ``startup.FirstRun``)."""

    timeout = 1200

    def setup_cache(self):
        path = str(_common.rows(1e6))
        _common.run("ece", str(_common.rows(1e4)), "--group-by", "g")  # the compiled loops in Numba's cache first
        alone = _common.run("ece", path)
        grouped = _common.run("ece", path, "--group-by", "g")
        return {"alone": alone, "grouped": grouped, "load": _common.load()}

    def track_bar_groups_wall(self, m):
        """Wall clock of ``ece --group-by g`` (1,000 groups) / ``ece``, one run each. Bar: at most 5x."""
        return m["grouped"].wall / m["alone"].wall

    track_bar_groups_wall.unit = "x ece wall (bar <= 5)"  # type: ignore[attr-defined]

    def track_bar_groups_cpu(self, m):
        """The same ratio in CPU time (every thread; steadier on a shared machine). Bar (on wall): at most 5x."""
        return m["grouped"].cpu / m["alone"].cpu

    track_bar_groups_cpu.unit = "x ece CPU (bar on wall <= 5)"  # type: ignore[attr-defined]

    def track_bar_groups_peak_gb(self, m):
        """Peak resident memory of the 1,000-group run (``ru_maxrss``), in GB (1e9 bytes). Bar: at most 1 GB."""
        return m["grouped"].peak_mb * 1024 * 1024 / 1e9

    track_bar_groups_peak_gb.unit = "GB (bar <= 1)"  # type: ignore[attr-defined]
