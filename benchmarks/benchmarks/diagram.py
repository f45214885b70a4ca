"""``calibcli diagram`` (calibcli.diagram): the reliability diagram of 1e6 rows with its bootstrap band, as a user
runs it, next to relplot's smooth diagram (the nearest thing in the reference packages).

Ported from ``bench_diagram.py`` (issue 9's target: a diagram of 1e6 rows in a few seconds, band included). Data:
``_common.rows(1e6)``; relplot's run: 1e5 and 1e6 rows of it, its default 200 resamples, ``savefig`` to PNG.
"""

from __future__ import annotations

import os
import tempfile

from . import _common


class Command:
    """``calibcli diagram FILE -o out.png --kind KIND`` as a fresh process: reading, the binned and smooth statistics
    with 200 resamples, drawing, writing the PNG."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600
    params = (["both", "binned", "smooth"],)
    param_names = ["kind"]

    def setup(self, kind):
        self.path = str(_common.rows(1e6))
        self.tmp = tempfile.TemporaryDirectory()

    def teardown(self, kind):
        self.tmp.cleanup()

    def _run(self, kind):
        return _common.run(
            "diagram",
            self.path,
            "-o",
            os.path.join(self.tmp.name, "out.png"),
            "--kind",
            kind,
            env={"MPLBACKEND": "Agg"},
        )

    def time_diagram(self, kind):
        self._run(kind)

    def track_peak_mb(self, kind):
        """Peak resident memory of the command (MB)."""
        return self._run(kind).peak_mb

    track_peak_mb.unit = "MB"  # type: ignore[attr-defined]


class Relplot:
    """relplot 1.0.3's ``rel_diagram`` (200 bootstrap resamples for the band) and ``savefig`` to PNG, in process,
    imports excluded. Skipped where relplot is not installed."""

    number = 1
    repeat = (1, 2, 120.0)
    timeout = 900
    params = (["1e5", "1e6"],)
    param_names = ["rows"]

    def setup(self, rows):
        try:
            import relplot  # noqa: F401
        except ImportError as exc:
            raise NotImplementedError("relplot is not installed") from exc
        import matplotlib
        import numpy as np
        import pyarrow.parquet as pq

        matplotlib.use("Agg")
        table = pq.read_table(_common.rows(1e6), columns=["prob", "label"]).slice(0, int(float(rows)))
        self.prob, self.label = np.asarray(table["prob"]), np.asarray(table["label"])
        self.tmp = tempfile.TemporaryDirectory()

    def teardown(self, rows):
        self.tmp.cleanup()

    def time_relplot_rel_diagram(self, rows):
        import matplotlib.pyplot as plt
        import relplot

        fig, _ = relplot.rel_diagram(self.prob, self.label)
        fig.savefig(os.path.join(self.tmp.name, "relplot.png"))
        plt.close(fig)
