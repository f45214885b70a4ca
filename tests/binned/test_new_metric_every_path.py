"""A new binned metric really is one function and one entry (calibcli.core.registry): a metric that exists only in
this test, registered as contributing.md says, is estimated with a bootstrap interval on every path that computes
binned metrics: the library, ``ece`` on one problem, ``ece --group-by`` over 1,000 groups (the compiled estimators'
path, which evaluates the metrics it knows and leaves the rest to the registry on the same sums), the Dask engine
(a real ``distributed.LocalCluster``, in-process workers so that they see the test's registration) and ``compare``.
"""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from _cli import run
from calibcli.api import binned_metric
from calibcli.binned import estimators, kernels
from calibcli.core import registry

NAME = "observed_to_expected"
GROUPS = 1000
ROWS_PER_GROUP = 40
N_BOOT = 300
N_BINS = 15


@pytest.fixture
def observed_to_expected(monkeypatch):
    """O/E = sum w y / sum w z, one MetricInfo entry and one registered function (undone after the test)."""
    entry = registry.MetricInfo(NAME, "sum w y / sum w z", "2.2", "binned", better="target", target=1.0)
    monkeypatch.setattr(registry, "_ENTRIES", [*registry._ENTRIES, entry])
    monkeypatch.setitem(registry.REGISTRY, NAME, entry)
    monkeypatch.setattr(registry, "ESTIMATORS", dict(registry.ESTIMATORS))

    @registry.estimator(NAME)
    def oe(s):
        return estimators._value(s.sum_y.sum(axis=-1) / s.sum_z.sum(axis=-1))

    assert NAME not in kernels.METRICS  # the compiled loop does not know it
    return NAME


def _data(tmp_path):
    rng = np.random.default_rng(7)
    n = GROUPS * ROWS_PER_GROUP
    g = np.repeat(np.arange(GROUPS), ROWS_PER_GROUP)
    z = rng.beta(2.0, 3.0, n)
    y = (rng.random(n) < np.clip(z * (0.8 + 0.4 * (g % 3) / 2), 0, 1)).astype(np.int64)
    frame = pd.DataFrame({"prob": z, "label": y, "g": g})
    path = tmp_path / "groups.parquet"
    frame.to_parquet(path, row_group_size=10_000)
    one = tmp_path / "one.parquet"
    frame[frame.g == 5].drop(columns="g").to_parquet(one)
    return frame, str(path), str(one)


def _json(*args) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _metric(problem: dict) -> dict:
    return problem["metrics"][NAME]


def _assert_interval(m: dict, want: float) -> None:
    assert math.isclose(m["estimate"], want, rel_tol=1e-12)
    assert m["ci_low"] < m["estimate"] < m["ci_high"]
    assert "bootstrap" in m["ci_method"]


def test_a_metric_registered_in_a_test_runs_on_every_path(observed_to_expected, tmp_path):
    frame, grouped, one = _data(tmp_path)
    five = frame[frame.g == 5]
    oe_five = five.label.sum() / five.prob.sum()

    # the library
    lib = binned_metric(NAME, five.label.to_numpy(), five.prob.to_numpy(), n_boot=N_BOOT, seed=3)
    assert math.isclose(lib.estimate, oe_five, rel_tol=1e-12)
    assert lib.ci_low < lib.estimate < lib.ci_high

    # ece on one problem: the library's numbers
    single = _metric(_json("ece", one, "--n-boot", N_BOOT, "--seed", 3)["files"][0]["problems"][0])
    _assert_interval(single, oe_five)
    assert (single["ci_low"], single["ci_high"]) == pytest.approx((lib.ci_low, lib.ci_high), rel=1e-12)

    # ece --group-by over 1,000 groups: past the compiled estimators' threshold
    assert GROUPS * N_BOOT * N_BINS >= estimators.COMPILED_MIN_VALUES
    doc = _json("ece", grouped, "--group-by", "g", "--n-boot", N_BOOT, "--seed", 3)
    files = doc["files"]
    assert len(files) == GROUPS
    sums = frame.groupby("g").agg(y=("label", "sum"), z=("prob", "sum"))
    for f in files:
        g = int(f["group"]["g"])
        _assert_interval(_metric(f["problems"][0]), sums.y[g] / sums.z[g])
    # a group alone and inside the grouped run: the same estimate
    by_group = {int(f["group"]["g"]): f for f in files}
    five_in_groups = _metric(by_group[5]["problems"][0])
    assert math.isclose(five_in_groups["estimate"], single["estimate"], rel_tol=1e-12)

    # the Dask engine: the local engine's report to 1e-12
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None, silence_logs=logging.CRITICAL
    ) as cluster:
        remote = _json(
            "ece", grouped, "--group-by", "g", "--n-boot", N_BOOT, "--seed", 3, "--engine", "dask",
            "--scheduler", cluster.scheduler_address,
        )  # fmt: skip
    assert len(remote["files"]) == GROUPS
    for a, b in zip(remote["files"], files, strict=True):
        assert a["group"] == b["group"]
        ma, mb = _metric(a["problems"][0]), _metric(b["problems"][0])
        for key in ("estimate", "ci_low", "ci_high"):
            assert math.isclose(ma[key], mb[key], rel_tol=1e-12), (a["group"], key)

    # compare: the metric's difference with a paired interval
    other = tmp_path / "other.parquet"
    shifted = five.drop(columns="g").assign(prob=np.clip(five.prob * 0.7, 0, 1))
    shifted.to_parquet(other)
    comparison = _json("compare", one, str(other), "--n-boot", N_BOOT, "--seed", 3)["comparison"][NAME]
    assert math.isclose(comparison["baseline"], oe_five, rel_tol=1e-12)
    assert math.isclose(comparison["candidate"], five.label.sum() / shifted.prob.sum(), rel_tol=1e-12)
    assert comparison["ci_low"] < comparison["difference"] < comparison["ci_high"]
    assert comparison["paired"] is True
