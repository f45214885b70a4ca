"""``calibcli report`` (calibcli.report): the page of 1e6 rows and of the bundled 569-row sample, and issue 37's
report bars.

Ported from ``bench_report.py`` (the report's whole process; its in-process phase timers are not kept: cProfile
answers where the time goes) and ``bench_replicates.py`` (``report`` against its parts).
"""

from __future__ import annotations

import tempfile

from . import _common


class Command:
    """``calibcli report FILE -o page.html --json-output report.json`` as a fresh process, its defaults (1000
    resamples, the 5 default recalibration methods held out)."""

    number = 1
    repeat = (1, 2, 120.0)
    warmup_time = 0
    timeout = 900
    params = (["sample", "1e6"],)
    param_names = ["data"]

    def setup(self, data):
        self.path = str(_common.SAMPLE if data == "sample" else _common.rows(1e6))
        self.tmp = tempfile.TemporaryDirectory()

    def teardown(self, data):
        self.tmp.cleanup()

    def time_report(self, data):
        _common.run(*_common.report_args(self.path, self.tmp.name), json_output=False)


class Bar:
    """Issue 37's report bars, fresh processes with their defaults, in the same benchmark run: ``report`` on 1e6 rows
    against ``ece`` + ``smece`` + ``tcal`` on the same rows (the sum of their times), and ``report`` on
    ``sample_data/breast_cancer_nb.csv`` (569 rows) against ``ece`` on that file."""

    timeout = 1800

    def setup_cache(self):
        big, sample = str(_common.rows(1e6)), str(_common.SAMPLE)
        _common.run("tcal", str(_common.rows(1e4)))  # the compiled loops in Numba's cache
        out = {name: _common.run(name, big) for name in ("ece", "smece", "tcal")}
        with tempfile.TemporaryDirectory() as tmp:
            out["report"] = _common.run(*_common.report_args(big, tmp), json_output=False)
            out["sample_ece"] = _common.run("ece", sample)
            out["sample_report"] = _common.run(*_common.report_args(sample, tmp), json_output=False)
        return {**_common.record("report", out), "load": _common.load()}

    track_bar_report_over_parts_wall, track_bar_report_over_parts_cpu = _common.ratio_bars(
        "report_over_parts",
        "report",
        ("ece", "smece", "tcal"),
        what="``report`` / (``ece`` + ``smece`` + ``tcal``) on 1e6 rows, one run each",
        unit="x parts",
        bar=1.5,
    )

    track_bar_report_sample_over_ece_wall, track_bar_report_sample_over_ece_cpu = _common.ratio_bars(
        "report_sample_over_ece",
        "sample_report",
        "sample_ece",
        what="``report`` / ``ece`` on the bundled 569-row ``breast_cancer_nb.csv``",
        unit="x ece",
        bar=3,
    )
