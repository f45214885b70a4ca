"""Replicates as a leading axis: the batched statistical core gives, for every replicate, what the
per-replicate computation gives, and the estimators run a fixed number of times whatever ``n_boot``."""

from __future__ import annotations

import numpy as np
import pytest

import calibcli.estimators as est
from calibcli.accumulators.binned import BinnedAccumulator
from calibcli.binning import fit_binning, quantile_edges_sorted, quantile_starts_batched
from calibcli.estimators import BinStats, _point_metrics, _SortedProblem, binned_calibration, ece_l2_sq_sun_estimate
from calibcli.resampling import Multiplicities


def _data(n, seed=1, ties=True):
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    if ties:
        z = np.round(z, 2)
    y = (rng.random(n) < z**1.2).astype(int)
    return y, z, rng.random(n) * 2.0


def test_multiplicity_blocks_equal_one_replicate_at_a_time():
    rows = Multiplicities(7, np.arange(5000) * 3 + 11)
    block = rows.block(np.array([4, 0, 9]))
    for j, r in enumerate((4, 0, 9)):
        np.testing.assert_array_equal(block[j], rows.replicate(r))


def test_batched_quantile_starts_equal_the_edges_of_each_resample():
    y, z, _ = _data(300)
    zs = np.sort(z)
    rng = np.random.default_rng(2)
    counts = rng.poisson(1.0, size=(40, len(zs))).astype(float)
    counts[3] = 0.0  # a resample with no rows: one bin
    counts[5, :] = 0.0
    counts[5, 17] = 4.0  # every copy of one value: one bin
    starts = quantile_starts_batched(zs, 9, counts)
    for r in range(len(counts)):
        edges = quantile_edges_sorted(zs, 9, counts=counts[r])
        want = np.concatenate([[0], np.searchsorted(zs, edges, side="left")])
        np.testing.assert_array_equal(starts[r, : len(want)], want)
        assert (starts[r, len(want):] == len(zs)).all()


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_batched_estimators_equal_each_replicate_alone(strategy, weighted):
    """Every estimator on (R, bins) sums equals the estimator on each replicate's (bins,) sums."""
    y, z, w = _data(400)
    w = w if weighted else np.ones(len(z))
    problem = _SortedProblem(y, z, w, fit_binning(z, n_bins=8, strategy=strategy), 8)
    M = Multiplicities(3, np.arange(len(z))).block(np.arange(25))[:, problem.order]
    main, uniform = problem.resampled(M)
    assert main.weight.shape == (25, 8)
    batched = _point_metrics(main, uniform)
    batched["sun"] = ece_l2_sq_sun_estimate(main)
    for r in range(25):
        one_main, one_uniform = problem.resampled(M[r])
        alone = _point_metrics(one_main, one_uniform)
        alone["sun"] = ece_l2_sq_sun_estimate(one_main)
        for k, v in alone.items():
            assert batched[k][r] == pytest.approx(v, rel=1e-12, abs=1e-15, nan_ok=True), (k, r)


def test_bin_stats_stack_and_concat_keep_the_self_pairs():
    a = BinStats(np.array([2, 0]), np.array([2.0, 0.0]), np.array([1.0, 0.0]), np.array([1.0, 0.0]),
                 np.array([0.5, 0.0]), np.array([0.3, 0.0]), self_weight=np.array([4.0, 0.0]))
    both = BinStats.stack([a, a])
    assert both.weight.shape == (2, 2) and both.diag_weight.tolist() == [[4.0, 0.0], [4.0, 0.0]]
    assert BinStats.concat([both, both]).count.shape == (4, 2)


def _count_estimator_calls(monkeypatch) -> dict:
    calls = {"n": 0}
    for name in ("ece_l1_plugin", "ece_l2_plugin", "ece_max_plugin", "ece_l2_sq_debiased_kumar",
                 "ece_l2_sq_debiased_dpe", "brier_decomposition", "log_loss", "dce_estimate", "ece_l2_sq_sun_estimate"):
        original = getattr(est, name)

        def counted(*args, _original=original, **kwargs):
            calls["n"] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(est, name, counted)
    return calls


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_estimator_calls_do_not_grow_with_n_boot(monkeypatch, strategy):
    """The per-replicate loop is gone: 10 or 300 resamples (several blocks of rows) make the same calls."""
    y, z, _ = _data(20000, ties=False)
    calls = _count_estimator_calls(monkeypatch)
    counts = []
    for n_boot in (10, 300):
        calls["n"] = 0
        binned_calibration(y, z, n_bins=10, strategy=strategy, n_boot=n_boot, seed=1)
        counts.append(calls["n"])
    assert counts[0] == counts[1] > 0


@pytest.mark.parametrize("weighted", [False, True])
def test_estimator_calls_do_not_grow_with_n_boot_from_cells(monkeypatch, weighted):
    y, z, w = _data(3000, ties=False)
    calls = _count_estimator_calls(monkeypatch)
    counts = []
    for n_boot in (10, 400):
        acc = BinnedAccumulator(n_bins=10, row_limit=100)
        acc.update(np.arange(len(z)), z, y, w if weighted else None)
        calls["n"] = 0
        r = acc.result(n_boot=n_boot, seed=4, keep_replicates=True)
        counts.append(calls["n"])
        assert len(r.replicates["ece_l1_plugin"]) == n_boot
    assert counts[0] == counts[1] > 0
