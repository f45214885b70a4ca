"""``calibcli smece`` (calibcli.smooth): whole processes, the library in process, and issue 37's grouped bar.

Ported from ``bench_smece.py`` (the fixed point and its bootstrap at 1e6 rows, against relplot: ``Relplot``) and
``bench_groups.py`` / ``bench_replicates.py`` (the grouped and the per-row-bootstrap runs).
"""

from __future__ import annotations

from . import _common


class Command:
    """``calibcli smece FILE --json`` as a fresh process, its defaults (1000 resamples): at 1e6 rows the bootstrap
    draws from per-cell sums, at 1e5 rows per row."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600
    params = (["1e5", "1e6"],)
    param_names = ["rows"]

    def setup(self, rows):
        self.path = str(_common.rows(float(rows)))

    def time_smece(self, rows):
        _common.run("smece", self.path)


class Library:
    """``calibcli.metrics.smooth_ece`` in process on 1e6 rows: the fixed point alone, and with 1000 resamples."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        import numpy as np
        import pyarrow.parquet as pq

        from calibcli.metrics import smooth_ece

        table = pq.read_table(_common.rows(1e6), columns=["prob", "label"])
        self.prob, self.label = np.asarray(table["prob"]), np.asarray(table["label"])
        smooth_ece(self.label[:1000], self.prob[:1000], n_boot=10)

    def time_smooth_ece(self):
        from calibcli.metrics import smooth_ece

        smooth_ece(self.label, self.prob)

    def time_smooth_ece_n_boot_1000(self):
        from calibcli.metrics import smooth_ece

        smooth_ece(self.label, self.prob, n_boot=1000)

    def peakmem_smooth_ece(self):
        """Peak resident memory of the process with the 1e6 rows loaded, over the fixed point."""
        from calibcli.metrics import smooth_ece

        smooth_ece(self.label, self.prob)


class Relplot:
    """The reference package: ``relplot.smECE`` (relplot 1.0.3, Blasiok & Nakkiran) on the same 1e6 rows, beside
    ``Library.time_smooth_ece`` (issue 8's bar: calibcli at least 5x faster). Skipped where relplot is not
    installed (asv.conf.json's matrix installs it)."""

    timeout = 600
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self):
        try:
            import relplot  # noqa: F401
        except ImportError as exc:
            raise NotImplementedError("relplot is not installed") from exc
        import numpy as np
        import pyarrow.parquet as pq

        table = pq.read_table(_common.rows(1e6), columns=["prob", "label"])
        self.prob, self.label = np.asarray(table["prob"]), np.asarray(table["label"])

    def time_relplot_smece(self):
        import relplot

        relplot.smECE(self.prob, self.label)


class GroupsBar:
    """Issue 37's bar for ``smece --group-by``: 100 groups (``g100``, about 10,000 rows each) on 1e6 rows against the
    ungrouped ``smece`` on the same rows, both fresh processes with their defaults, in the same benchmark run."""

    timeout = 1800

    def setup_cache(self):
        path = str(_common.rows(1e6))
        _common.run("smece", str(_common.rows(1e4)), "--group-by", "g100")  # the compiled loops in Numba's cache
        alone = _common.run("smece", path)
        grouped = _common.run("smece", path, "--group-by", "g100")
        return {**_common.record("smece --group-by", {"alone": alone, "grouped": grouped}), "load": _common.load()}

    track_bar_groups_wall, track_bar_groups_cpu = _common.ratio_bars(
        "groups",
        "grouped",
        "alone",
        what="``smece --group-by g100`` (100 groups) / ``smece``, one run each",
        unit="x smece",
        bar=5,
    )
