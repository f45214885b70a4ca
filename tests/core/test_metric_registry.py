"""A binned metric is one estimator function registered under one registry entry (calibcli.core.registry.estimator):
the point estimates, the bootstrap replicates and the report's metrics are derived from the registrations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibcli.binned import estimators

from calibcli.core import registry
from calibcli.core.binning import uniform_bin_index
from calibcli.binned.estimators import _point_metrics, binned_calibration, metric_names
from calibcli.binned.stats import bin_statistics

#: The bootstrappable metrics in report order, as the JSON documents have always listed them.
REPORT_ORDER = (
    "ece_l1_plugin", "ece_l2_plugin", "ece_max_plugin", "ece_l2_sq_debiased_kumar", "ece_l2_debiased_kumar",
    "ece_l2_sq_debiased_dpe", "ece_l2_debiased_dpe", "ece_l2_sq_debiased_sun", "brier_score", "brier_reliability",
    "brier_resolution", "brier_uncertainty", "brier_within_bin", "brier_skill_score", "log_loss", "dce",
)


def _stats(seed: int = 3, n: int = 400, n_bins: int = 7):
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    y = (rng.random(n) < z**1.3).astype(int)
    idx = np.minimum((z * n_bins).astype(int), n_bins - 1)
    return y, z, bin_statistics(y, z, idx, n_bins), bin_statistics(y, z, uniform_bin_index(z, 5), 5)


def test_metric_names_are_the_registered_binned_estimators_in_report_order():
    assert metric_names() == REPORT_ORDER
    binned = [m.name for m in registry._ENTRIES if m.family == "binned"]
    # the one binned entry without an estimator: the Sun interval, assembled from its own computation
    assert [name for name in binned if name not in registry.ESTIMATORS] == ["ece_l2_sq_sun_interval"]


def test_point_metrics_are_each_registered_function_called_by_hand():
    _, _, s, s_u = _stats()
    point = _point_metrics(s, s_u)
    assert tuple(point) == REPORT_ORDER
    kumar, dpe = estimators.ece_l2_sq_debiased_kumar(s), estimators.ece_l2_sq_debiased_dpe(s)
    brier = estimators.brier_decomposition(s)
    by_hand = {
        "ece_l1_plugin": estimators.ece_l1_plugin(s), "ece_l2_plugin": estimators.ece_l2_plugin(s),
        "ece_max_plugin": estimators.ece_max_plugin(s), "ece_l2_sq_debiased_kumar": kumar,
        "ece_l2_debiased_kumar": math.sqrt(max(0.0, kumar)), "ece_l2_sq_debiased_dpe": dpe,
        "ece_l2_debiased_dpe": math.sqrt(max(0.0, dpe)), "ece_l2_sq_debiased_sun": estimators.ece_l2_sq_sun_estimate(s),
        **brier, "brier_skill_score": 1.0 - brier["brier_score"] / brier["brier_uncertainty"],
        "log_loss": estimators.log_loss(s), "dce": estimators.dce_estimate(s_u),
    }
    assert point == by_hand  # bit for bit


def test_every_estimator_runs_once_per_evaluation(monkeypatch):
    _, _, s, s_u = _stats()
    calls: dict[str, int] = {}
    for name, entry in list(registry.ESTIMATORS.items()):
        def counted(*args, _f=entry.function, _k=entry.names[0]):
            calls[_k] = calls.get(_k, 0) + 1
            return _f(*args)
        monkeypatch.setitem(registry.ESTIMATORS, name, registry.Estimator(entry.names, entry.inputs, counted))
    _point_metrics(s, s_u)
    assert calls and set(calls.values()) == {1}
    assert calls["brier_score"] == 1  # five metrics from one call


def test_registration_refuses_a_name_without_entry_and_a_second_estimator():
    with pytest.raises(ValueError, match="no_such_metric has no entry in calibcli.core.registry._ENTRIES"):
        registry.estimator("no_such_metric")
    with pytest.raises(ValueError, match="ece_l1_plugin already has an estimator"):
        registry.estimator("ece_l1_plugin")
    with pytest.raises(KeyError, match="neither given nor estimated"):
        registry.evaluate(["ece_l1_plugin"], {})


def test_a_new_metric_is_one_function_and_one_entry(monkeypatch):
    """O/E (sum w y / sum w z) added as an entry and a registered function: it is estimated, bootstrapped and
    reported with every other binned metric, the others unchanged."""
    y, z, _, _ = _stats(seed=5)
    before = binned_calibration(y, z, n_bins=5, n_boot=30, seed=1)
    entry = registry.MetricInfo("observed_to_expected", "sum w y / sum w z", "2.2", "binned", better="target",
                                target=1.0)
    monkeypatch.setattr(registry, "_ENTRIES", [*registry._ENTRIES, entry])
    monkeypatch.setitem(registry.REGISTRY, entry.name, entry)
    monkeypatch.setattr(registry, "ESTIMATORS", dict(registry.ESTIMATORS))

    @registry.estimator("observed_to_expected")
    def observed_to_expected(s):
        return estimators._value(s.sum_y.sum(axis=-1) / s.sum_z.sum(axis=-1))

    after = binned_calibration(y, z, n_bins=5, n_boot=30, seed=1)
    assert list(after.metrics) == [*REPORT_ORDER, "observed_to_expected", "ece_l2_sq_sun_interval"]
    oe = after.metrics["observed_to_expected"]
    assert oe.estimate == pytest.approx(y.sum() / z.sum(), rel=1e-12)
    assert oe.ci_low < oe.estimate < oe.ci_high
    for name, metric in before.metrics.items():
        assert after.metrics[name] == metric
