"""The binned estimators' compiled loop (:mod:`calibcli.binned.kernels`) against their NumPy forms (the registered
estimators of :mod:`calibcli.binned.estimators`, kept here as the reference): the same numbers within the tolerance
rule (1e-12 relative, SPEC 8.1; the loop sums the bins in its own plain order), on bootstrap resamples and on sums
made to reach every branch (empty bins, single rows, weights, no row at all, many bins)."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.core.binning import fit_binning
from calibcli.core.family import Bootstrap
from _tolerance import assert_within_rule
from calibcli.binned.estimators import _point_metrics, metric_names
from calibcli.binned.stats import BinStats
from calibcli.binned.bootstrap import _SortedProblem
from calibcli.binned.kernels import METRICS
from calibcli.core.registry import evaluate
from calibcli.core.resampling import Multiplicities


def _numpy_metrics(main: BinStats, uniform: BinStats) -> dict:
    """The registered estimators' NumPy forms on batched sums (what the library computed before the kernel)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return evaluate(metric_names(), {"s": main, "s_uniform": uniform})


def _assert_within_rule(main: BinStats, uniform: BinStats) -> None:
    got = _point_metrics(main, uniform, compiled=True)
    want = _numpy_metrics(main, uniform)
    assert list(got) == list(want)
    for name in want:
        assert_within_rule(got[name], want[name], err_msg=name)  # (NaN where NaN)


def test_the_kernels_metrics_are_the_registrys():
    assert METRICS == metric_names()


def _data(n, seed=1):
    rng = np.random.default_rng(seed)
    z = np.round(rng.random(n), 2)
    y = (rng.random(n) < z**1.2).astype(int)
    return y, z, rng.random(n) * 2.0


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_bins", [3, 8, 15, 40])
def test_bootstrap_resamples_within_the_rule(strategy, weighted, n_bins):
    y, z, w = _data(500)
    w = w if weighted else np.ones(len(z))
    problem = _SortedProblem(y, z, w, fit_binning(z, n_bins=n_bins, strategy=strategy), n_bins)
    M = Multiplicities(3, np.arange(len(z))).block(np.arange(200))[:, problem.order]
    main, uniform = problem.resampled(M)
    assert main.weight.shape == (200, problem.binning.n_bins_effective)
    _assert_within_rule(main, uniform)
    # groups x replicates: the same sums as a (G, R, bins) block
    grouped = BinStats(*(a.reshape(4, 50, -1) for a in main._arrays()))
    grouped_uniform = BinStats(*(a.reshape(4, 50, -1) for a in uniform._arrays()))
    _assert_within_rule(grouped, grouped_uniform)


@pytest.mark.parametrize("n_bins", [1, 2, 7, 9, 129, 200, 300, 1000])
def test_sums_reaching_every_branch_within_the_rule(n_bins):
    """Empty bins, bins of one row or of copies of one row, weights below 1, a row with no rows at all (its
    metrics NaN as NumPy makes them), and bin counts past NumPy's 128-value blocks of its pairwise sums (which
    the loop does not follow)."""
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
    _assert_within_rule(main, uniform)
    _assert_within_rule(main, main)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_grouped_bootstrap_is_the_same_compiled_or_not(monkeypatch, strategy):
    """A grouped bootstrap past :data:`COMPILED_MIN_VALUES` (here lowered to 0) gives every interval and replicate
    of the NumPy estimators within the tolerance rule; a run below it never loads the compiled loop."""
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
            groups, Bootstrap(n_boot=60, seed=3), n_bins=10, strategy=strategy, keep_replicates=True
        )
        assert (used["n"] > 0) == compiled
    for a, b in zip(runs[False], runs[True], strict=True):
        for name, m in a.metrics.items():
            got = b.metrics[name]
            for field in ("estimate", "ci_low", "ci_high", "upper_bound"):
                want = getattr(m, field)
                if want is None:
                    assert getattr(got, field) is None, (name, field)
                else:
                    assert_within_rule(getattr(got, field), want, err_msg=f"{name}.{field}")
            assert (got.ci_method, got.upper_bound_method, got.note, got.extra) == (
                m.ci_method, m.upper_bound_method, m.note, m.extra
            )
        for name, r in a.replicates.items():
            assert_within_rule(b.replicates[name], r, err_msg=name)
