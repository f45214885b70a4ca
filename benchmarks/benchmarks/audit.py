"""``calibcli audit`` (calibcli.audit) and ECCE over many segments (calibcli.cumulative), against MCGrad's
``MulticalibrationError``.

Ported from ``bench_audit.py`` (the command at 1e6 rows, 4 categorical columns at depth 2, and at 1e7 rows, 6 columns
of which 3 numeric; issue 23's bars: calibcli at least 5x faster than MCGrad, the 1e7 run under 30 s) and
``bench_ecce.py``'s timings (its agreement with MCGrad and the size and power tables are
``studies/audit_size_power.py``). Data: ``prob`` ~ Beta(2, 5), a +0.05 miscalibration planted in one pair of values,
seed 0, written once into the benchmarks' cache.
"""

from __future__ import annotations

import tempfile

from . import _common

CATEGORICAL = {"country": 8, "device": 3, "browser": 5, "plan": 4}
NUMERIC = ("age", "income", "hour")


def audit_data(n: float, numeric: bool):
    """The seeded audit file of ``n`` rows: 4 categorical columns, or 3 categorical and 3 numeric ones."""
    import numpy as np
    import pyarrow as pa

    count = int(n)
    path = _common.cache_dir() / f"audit_{n:.0e}{'_numeric' if numeric else ''}_v{_common.DATA_VERSION}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, count)
    cols = {}
    names = list(CATEGORICAL)[:3] if numeric else list(CATEGORICAL)
    for name in names:
        k = CATEGORICAL[name]
        weights = rng.dirichlet(np.ones(k) * 2)
        cols[name] = pa.array(np.array([f"{name}_{j}" for j in range(k)])[rng.choice(k, count, p=weights)])
    if numeric:
        cols["age"] = rng.integers(18, 90, count)
        cols["income"] = np.round(rng.lognormal(10, 0.6, count), 2)
        cols["hour"] = rng.uniform(0, 24, count)
    planted = (np.asarray(cols[names[0]]) == f"{names[0]}_1") & (np.asarray(cols[names[1]]) == f"{names[1]}_2")
    y = (rng.uniform(size=count) < np.clip(s + 0.05 * planted, 0, 1)).astype(np.int64)
    _common._write_atomically(path, pa.table({"prob": s, "label": y, **cols}))
    return path


class Command:
    """``calibcli audit FILE --segment-cols ... --json`` as a fresh process: 1e6 rows and 4 categorical columns,
    and 1e7 rows and 6 columns (3 numeric, in quantile bins) at depth 2 (issue 23's bar: under 30 s)."""

    number = 1
    repeat = (1, 2, 120.0)
    warmup_time = 0
    timeout = 900
    params = (["1e6 categorical", "1e7 mixed"],)
    param_names = ["data"]

    def setup(self, data):
        numeric = data.endswith("mixed")
        self.path = str(audit_data(float(data.split()[0]), numeric))
        self.columns = ",".join(list(CATEGORICAL)[:3] + list(NUMERIC) if numeric else list(CATEGORICAL))

    def time_audit(self, data):
        _common.run("audit", self.path, "--segment-cols", self.columns)

    def track_peak_mb(self, data):
        """Peak resident memory of the command (MB)."""
        return _common.run("audit", self.path, "--segment-cols", self.columns).peak_mb

    track_peak_mb.unit = "MB"  # type: ignore[attr-defined]


def _frame():
    import pyarrow.parquet as pq

    return pq.read_table(audit_data(1e6, False)).to_pandas()


class Mcgrad:
    """The reference: MCGrad's ``MulticalibrationError`` (float64, depth 2, segments of at least 100 rows) on the
    1e6-row categorical file, in process after its data frame is built (its time is the metric alone), beside
    ``Command.time_audit`` (the whole command). Skipped where mcgrad is not installed (``pip install mcgrad``)."""

    timeout = 900
    number = 1
    repeat = (1, 2, 120.0)

    def setup(self):
        try:
            import mcgrad  # noqa: F401
        except ImportError as exc:
            raise NotImplementedError("mcgrad is not installed") from exc
        self.df = _frame()

    def time_mcgrad_multicalibration_error(self):
        from mcgrad.metrics import MulticalibrationError

        m = MulticalibrationError(
            self.df,
            label_column="label",
            score_column="prob",
            categorical_segment_columns=list(CATEGORICAL),
            max_depth=2,
            max_values_per_segment_feature=20,
            min_samples_per_segment=100,
            max_n_segments=None,
            precision_dtype="float64",
        )
        float(m.mce_sigma)


class Report:
    """``calibcli report FILE --segment-cols ...``: the page with the segment audit of 1e6 rows, a fresh process."""

    number = 1
    repeat = (1, 1, 120.0)
    warmup_time = 0
    timeout = 900

    def setup(self):
        self.path = str(audit_data(1e6, False))
        self.tmp = tempfile.TemporaryDirectory()

    def teardown(self):
        self.tmp.cleanup()

    def time_report_with_segments(self):
        _common.run(
            *_common.report_args(self.path, self.tmp.name, "--segment-cols", ",".join(CATEGORICAL), "--n-boot", "200"),
            json_output=False,
        )
