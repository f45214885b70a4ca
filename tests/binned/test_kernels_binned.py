"""The binned estimators' compiled loop (:mod:`calibcli.binned.kernels`) against their NumPy forms (the registered
estimators of :mod:`calibcli.binned.estimators`, kept here as the reference): the same numbers bit for bit, on bootstrap
resamples and on sums made to reach every branch (empty bins, single rows, weights, no row at all, more than 128
bins)."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.core.binning import fit_binning
from calibcli.binned.estimators import METRIC_NAMES, _point_metrics
from calibcli.binned.stats import BinStats
from calibcli.binned.bootstrap import _SortedProblem
from calibcli.binned.kernels import METRICS
from calibcli.core.registry import evaluate
from calibcli.core.resampling import Multiplicities


def _numpy_metrics(main: BinStats, uniform: BinStats) -> dict:
    """The registered estimators' NumPy forms on batched sums (what the library computed before the kernel)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return evaluate(METRIC_NAMES, {"s": main, "s_uniform": uniform})


def _assert_bit_for_bit(main: BinStats, uniform: BinStats) -> None:
    got = _point_metrics(main, uniform, compiled=True)
    want = _numpy_metrics(main, uniform)
    assert list(got) == list(want)
    for name in want:
        a, b = np.asarray(got[name]), np.asarray(want[name])
        assert a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)  # (NaN where NaN)
        assert (np.signbit(a) == np.signbit(b)).all(), name  # (and -0.0 where -0.0)


def test_the_kernels_metrics_are_the_registrys():
    assert METRICS == METRIC_NAMES


def _data(n, seed=1):
    rng = np.random.default_rng(seed)
    z = np.round(rng.random(n), 2)
    y = (rng.random(n) < z**1.2).astype(int)
    return y, z, rng.random(n) * 2.0


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_bins", [3, 8, 15, 40])
def test_bootstrap_resamples_bit_for_bit(strategy, weighted, n_bins):
    y, z, w = _data(500)
    w = w if weighted else np.ones(len(z))
    problem = _SortedProblem(y, z, w, fit_binning(z, n_bins=n_bins, strategy=strategy), n_bins)
    M = Multiplicities(3, np.arange(len(z))).block(np.arange(200))[:, problem.order]
    main, uniform = problem.resampled(M)
    assert main.weight.shape == (200, problem.binning.n_bins_effective)
    _assert_bit_for_bit(main, uniform)
    # groups x replicates: the same sums as a (G, R, bins) block
    grouped = BinStats(*(a.reshape(4, 50, -1) for a in main._arrays()))
    grouped_uniform = BinStats(*(a.reshape(4, 50, -1) for a in uniform._arrays()))
    _assert_bit_for_bit(grouped, grouped_uniform)


@pytest.mark.parametrize("n_bins", [1, 2, 7, 9, 129, 200, 300, 1000])
def test_sums_reaching_every_branch_bit_for_bit(n_bins):
    """Empty bins, bins of one row or of copies of one row, weights below 1, a row with no rows at all (its
    metrics NaN as NumPy makes them), and bin counts past NumPy's 128-value blocks of its pairwise sums."""
    rng = np.random.default_rng(n_bins)
    R = 300
    count = rng.poisson(rng.choice([0.3, 2.0, 50.0], size=(R, 1)), size=(R, n_bins))
    count[0] = 0  # no row
    count[1] = 0
    count[1, 0] = 1  # one row
    weight = count * rng.choice([1.0, 0.4, 3.7], size=(R, 1)) * rng.uniform(0.5, 1.5, (R, n_bins))
    weight[2] = count[2]  # unweighted
    weight[3, : n_bins // 2] = 0.0  # rows of weight 0 in occupied bins
    sum_z = weight * rng.random((R, n_bins))
    sum_y = np.minimum(weight, np.round(weight * rng.random((R, n_bins)), 1))
    sum_y[4] = weight[4]  # every label 1: no uncertainty, the skill score NaN
    sum_u2 = weight * rng.random((R, n_bins)) * 0.3
    sum_ll = weight * rng.random((R, n_bins))
    dup = rng.random((R, n_bins)) < 0.3  # copies of one row: the self-pair sums equal the sums
    self_weight = np.where(dup, weight**2, weight * rng.uniform(1.0, 3.0, (R, n_bins)))
    self_y = np.where(dup, sum_y**2, sum_y * 1.5)
    self_u2 = np.where(dup, sum_u2 * weight, sum_u2 * 2.0)
    main = BinStats(count, weight, sum_z, sum_y, sum_u2, sum_ll, self_weight, self_y, self_u2)
    nu = max(n_bins // 2, 1)
    uniform = BinStats(*(a[:, :nu] * 1.0 for a in main._arrays()))
    _assert_bit_for_bit(main, uniform)
    _assert_bit_for_bit(main, main)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_grouped_bootstrap_is_the_same_compiled_or_not(monkeypatch, strategy):
    """A grouped bootstrap past :data:`COMPILED_MIN_VALUES` (here lowered to 0) gives every interval and replicate
    of the NumPy estimators bit for bit; a run below it never loads the compiled loop."""
    import calibcli.binned.estimators as est

    groups = []
    for g in range(7):
        y, z, w = _data(150 + 40 * g, seed=g)
        groups.append((y, z, w if g % 2 else None, np.arange(len(z)) * 7 + g))
    runs = {}
    for compiled in (False, True):
        monkeypatch.setattr(est, "COMPILED_MIN_VALUES", 0 if compiled else 1 << 62)
        used = {"n": 0}
        original = est.binned_metrics

        def counted(*args, _original=original, _used=used):
            _used["n"] += 1
            return _original(*args)

        monkeypatch.setattr(est, "binned_metrics", counted)
        runs[compiled] = est.binned_calibration_groups(
            groups,
            n_bins=10,
            strategy=strategy,
            n_boot=60,
            seed=3,
            keep_replicates=True,
        )
        assert (used["n"] > 0) == compiled
    for a, b in zip(runs[False], runs[True], strict=True):
        for name, m in a.metrics.items():
            assert b.metrics[name] == m, name
        for name, r in a.replicates.items():
            np.testing.assert_array_equal(b.replicates[name], r, err_msg=name)
