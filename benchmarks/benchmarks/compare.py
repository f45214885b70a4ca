"""``calibcli compare`` (calibcli.compare): two models' predictions of the same 1e6 rows, and issue 37's bar.

Ported from ``bench_compare.py`` (its speed half; the coverage half is ``studies/compare_coverage.py``) and
``bench_replicates.py`` (``compare`` against ``ece``).
"""

from __future__ import annotations

from . import _common


class Command:
    """``calibcli compare A B --json`` as a fresh process (paired by row order; 1000 resamples, the joint per-bin
    draw beyond the rows kept)."""

    number = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0
    timeout = 600

    def setup(self):
        self.a, self.b = str(_common.rows(1e6)), str(_common.candidate(1e6))

    def time_compare(self):
        _common.run("compare", self.a, self.b)


class Bar:
    """Issue 37's bar: ``compare`` on 1e6 rows against ``ece`` on the baseline's file, fresh processes with their
    defaults, in the same benchmark run."""

    timeout = 900

    def setup_cache(self):
        a, b = str(_common.rows(1e6)), str(_common.candidate(1e6))
        runs = {"ece": _common.run("ece", a), "compare": _common.run("compare", a, b)}
        return {**_common.record("compare", runs), "load": _common.load()}

    track_bar_compare_over_ece_wall, track_bar_compare_over_ece_cpu = _common.ratio_bars(
        "compare_over_ece",
        "compare",
        "ece",
        what="``compare A B`` / ``ece A`` on 1e6 rows, one run each",
        unit="x ece",
        bar=1.3,
    )
