"""Binned estimators (SPEC 2): hand-worked cases, invariances, properties, the bootstrap engine."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibcli
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.core.binning import fit_binning, uniform_bin_index
from calibcli.core.errors import CalibcliError
from calibcli.binned.bootstrap import _SortedProblem
from calibcli.binned.estimators import (
    _point_metrics,
    binned_calibration,
    ece_l2_sq_sun_estimate,
    ece_l2_sq_sun_interval,
)
from calibcli.binned.stats import bin_statistics

# The four-point example worked by hand, two uniform bins:
#   bin 0 = [0, .5): z = .1, .4, y = 0, 1 -> conf .25, acc .5, gap +.25
#   bin 1 = [.5, 1]: z = .6, .9, y = 0, 1 -> conf .75, acc .5, gap -.25
Z4 = np.array([0.1, 0.4, 0.6, 0.9])
Y4 = np.array([0, 1, 0, 1])


def estimates(result):
    return {k: m.estimate for k, m in result.metrics.items()}


def test_four_point_example_by_hand():
    r = binned_calibration(Y4, Z4, n_bins=2)
    e = estimates(r)
    assert e["ece_l1_plugin"] == pytest.approx(0.25)
    assert e["ece_l2_plugin"] == pytest.approx(0.25)
    assert e["ece_max_plugin"] == pytest.approx(0.25)
    # Kumar: sum_b (2/4) [gap^2 - acc(1-acc)/(n_b - 1)] = 2 * .5 * (.0625 - .25)
    assert e["ece_l2_sq_debiased_kumar"] == pytest.approx(-0.1875)
    assert e["ece_l2_debiased_kumar"] == 0.0
    # DPE: U = (-.1, .6, -.6, .1); per bin ((sum U)^2 - sum U^2)/n_b = (.25 - .37)/2 = -.06
    assert e["ece_l2_sq_debiased_dpe"] == pytest.approx(-0.03)
    # Sun: the same numerators over n_b - 1 = 1
    assert e["ece_l2_sq_debiased_sun"] == pytest.approx(-0.06)
    assert e["brier_score"] == pytest.approx(0.185)
    assert e["brier_reliability"] == pytest.approx(0.0625)
    assert e["brier_resolution"] == pytest.approx(0.0)
    assert e["brier_uncertainty"] == pytest.approx(0.25)
    assert e["brier_within_bin"] == pytest.approx(0.185 - 0.3125)
    assert e["log_loss"] == pytest.approx(-(2 * math.log(0.9) + 2 * math.log(0.4)) / 4)
    # dCE: representatives 1/2 and 1: |(0 - .5) + (1 - .5)| + |(0 - 1) + (1 - 1)| = 1, over n = 4
    assert e["dce"] == pytest.approx(0.25)
    margin = math.sqrt(2 * math.log(1 / 0.05) / 4)
    assert r.metrics["ece_l1_plugin"].upper_bound == pytest.approx(0.25 + margin)
    assert r.metrics["dce"].upper_bound == pytest.approx(0.25 + 0.5 + margin)
    assert r.n_bins_nonempty == 2


def test_murphy_decomposition_adds_up():
    rng = np.random.default_rng(3)
    z = rng.random(500)
    y = (rng.random(500) < z**2).astype(int)
    e = estimates(binned_calibration(y, z, n_bins=10))
    parts = e["brier_reliability"] - e["brier_resolution"] + e["brier_uncertainty"] + e["brier_within_bin"]
    assert parts == pytest.approx(e["brier_score"], abs=1e-12)


def test_prediction_of_exactly_one_lands_in_last_bin():
    assert uniform_bin_index(np.array([0.0, 0.5, 1.0]), 4).tolist() == [0, 2, 3]
    r = binned_calibration([1, 1], [1.0, 1.0], n_bins=4)
    assert r.bin_stats.count.tolist() == [0, 0, 0, 2]


def test_quantile_ties_merge_bins_and_never_straddle_an_edge():
    z = np.array([0.2, 0.2, 0.2, 0.2, 0.8])
    b = fit_binning(z, n_bins=2, strategy="quantile")
    idx = b.assign(z)
    assert len(set(idx[:4])) == 1  # equal values share a bin
    r = binned_calibration([0, 1, 0, 1, 1], z, n_bins=2, strategy="quantile")
    assert r.n_bins_nonempty == 1


def test_quantile_edges_are_midpoints_at_rounded_ranks():
    z = np.array([0.05, 0.1, 0.3, 0.35, 0.7, 0.9])
    b = fit_binning(z, n_bins=3, strategy="quantile")
    np.testing.assert_allclose(b.edges, [0.2, 0.525])


def test_sun_interval_formulas():
    rng = np.random.default_rng(5)
    z = rng.random(2000)
    y = (rng.random(2000) < np.clip(z + 0.1, 0, 1)).astype(int)
    s = bin_statistics(y, z, uniform_bin_index(z, 10), 10)
    iv = ece_l2_sq_sun_interval(s, alpha=0.05)
    # direct: T = (1/n) sum_b 1/(n_b - 1) sum_{a != c} U_a U_c
    u = y - z
    b = uniform_bin_index(z, 10)
    T = sum(((u[b == k].sum()) ** 2 - (u[b == k] ** 2).sum()) / ((b == k).sum() - 1) for k in range(10)) / len(z)
    assert iv.estimate == pytest.approx(T)
    assert iv.estimate == pytest.approx(ece_l2_sq_sun_estimate(s))
    # eq. (7) directly
    p = np.array([(b == k).mean() for k in range(10)])
    E = np.array([u[b == k].mean() for k in range(10)])
    V = np.array([(u[b == k] ** 2).mean() - u[b == k].mean() ** 2 for k in range(10)])
    sigma1 = math.sqrt(np.sum(p * E**4) - np.sum(p * E**2) ** 2 + 4 * np.sum(p * E**2 * V))
    assert iv.sigma1 == pytest.approx(sigma1)
    half = 1.959963984540054 * sigma1 / math.sqrt(len(z))
    assert iv.high == pytest.approx(max(T, 0) + half)
    assert iv.case == 1 and iv.low == pytest.approx(T - half)  # clearly miscalibrated: the symmetric case
    assert not iv.includes_zero


def test_sun_interval_includes_zero_when_calibrated():
    rng = np.random.default_rng(6)
    z = rng.random(3000)
    y = (rng.random(3000) < z).astype(int)
    iv = ece_l2_sq_sun_interval(bin_statistics(y, z, uniform_bin_index(z, 10), 10), alpha=0.05)
    assert iv.includes_zero and iv.low == 0.0


def _shuffled(rng, *arrays):
    perm = rng.permutation(len(arrays[0]))
    return [a[perm] for a in arrays]


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_row_order_invariance(strategy):
    rng = np.random.default_rng(0)
    z = rng.random(400)
    y = (rng.random(400) < z**1.5).astype(int)
    a = estimates(binned_calibration(y, z, n_bins=12, strategy=strategy))
    ys, zs = _shuffled(rng, y, z)
    b = estimates(binned_calibration(ys, zs, n_bins=12, strategy=strategy))
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=1e-12, abs=1e-15), k


PLUGIN = (
    "ece_l1_plugin",
    "ece_l2_plugin",
    "ece_max_plugin",
    "brier_score",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "log_loss",
    "dce",
)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_duplicating_every_row_leaves_plugin_metrics_unchanged(strategy):
    rng = np.random.default_rng(1)
    z = rng.random(300)
    y = (rng.random(300) < z).astype(int)
    a = estimates(binned_calibration(y, z, n_bins=10, strategy=strategy))
    b = estimates(binned_calibration(np.tile(y, 2), np.tile(z, 2), n_bins=10, strategy=strategy))
    for k in PLUGIN:
        assert a[k] == pytest.approx(b[k], rel=1e-12, abs=1e-15), k


def test_weight_two_equals_duplicated_rows_for_every_metric():
    rng = np.random.default_rng(2)
    z = rng.random(200)
    y = (rng.random(200) < z).astype(int)
    w = rng.integers(1, 4, size=200).astype(float)
    a = estimates(binned_calibration(y, z, sample_weight=w, n_bins=8))
    b = estimates(binned_calibration(np.repeat(y, w.astype(int)), np.repeat(z, w.astype(int)), n_bins=8))
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=1e-10, abs=1e-14), k


def test_debiased_estimators_have_mean_near_zero_on_calibrated_data():
    rng = np.random.default_rng(7)
    reps = {"ece_l2_sq_debiased_kumar": [], "ece_l2_sq_debiased_dpe": [], "ece_l2_sq_debiased_sun": [], "plugin_sq": []}
    for _ in range(300):
        z = rng.random(400)
        y = (rng.random(400) < z).astype(int)
        e = estimates(binned_calibration(y, z, n_bins=10))
        for k in reps:
            reps[k].append(e["ece_l2_plugin"] ** 2 if k == "plugin_sq" else e[k])
    for k in ("ece_l2_sq_debiased_kumar", "ece_l2_sq_debiased_dpe", "ece_l2_sq_debiased_sun"):
        v = np.array(reps[k])
        se = v.std(ddof=1) / math.sqrt(len(v))
        assert abs(v.mean()) < 4 * se, (k, v.mean(), se)
    # while the plugin square is biased upwards by about B * E[z(1-z)] / n
    assert np.mean(reps["plugin_sq"]) > 10 * 0.1667 / 400 * 0.5


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60),
    st.integers(1, 20),
    st.sampled_from(["uniform", "quantile"]),
)
def test_bounds_hold(rows, n_bins, strategy):
    z = np.array([r[0] for r in rows])
    y = np.array([int(r[1]) for r in rows])
    e = estimates(binned_calibration(y, z, n_bins=n_bins, strategy=strategy))
    assert 0 <= e["ece_l1_plugin"] <= e["ece_l2_plugin"] + 1e-12
    assert e["ece_l2_plugin"] <= e["ece_max_plugin"] + 1e-12 <= 1 + 1e-12
    assert 0 <= e["brier_score"] <= 1
    assert 0 <= e["dce"] <= 1 + 1e-12
    assert e["ece_l2_sq_debiased_dpe"] <= e["ece_l2_plugin"] ** 2 + 1e-12


def test_bin_statistics_merge_across_chunks():
    rng = np.random.default_rng(4)
    z = rng.random(1000)
    y = (rng.random(1000) < z).astype(int)
    idx = uniform_bin_index(z, 15)
    whole = bin_statistics(y, z, idx, 15)
    merged = bin_statistics(y[:300], z[:300], idx[:300], 15).merge(bin_statistics(y[300:], z[300:], idx[300:], 15))
    for a, b in zip(whole._arrays(), merged._arrays()):
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_bootstrap_engine_equals_explicit_resample(strategy):
    """Per-bin sums through multiplicities equal the metrics of the explicitly resampled data."""
    rng = np.random.default_rng(8)
    n = 150
    z = np.round(rng.random(n), 2)  # ties on purpose
    y = (rng.random(n) < z).astype(int)
    w = np.ones(n)
    binning = fit_binning(z, n_bins=7, strategy=strategy)
    problem = _SortedProblem(y, z, w, binning, 7)
    for _ in range(5):
        m = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        s_b, s_u = problem.resampled(m[problem.order])
        fast = _point_metrics(s_b, s_u)
        ys, zs = np.repeat(y, m.astype(int)), np.repeat(z, m.astype(int))
        slow = estimates(binned_calibration(ys, zs, n_bins=7, strategy=strategy))
        for k in PLUGIN:
            assert fast[k] == pytest.approx(slow[k], rel=1e-10, abs=1e-14), k
        # debiased on a resample: pairs of copies of one original row are excluded
        origin = np.repeat(np.arange(n), m.astype(int))
        bins = fit_binning(zs, n_bins=7, strategy=strategy).assign(zs)
        u = ys - zs
        total = 0.0
        for b in np.unique(bins):
            sel = bins == b
            ub, ob = u[sel], origin[sel]
            distinct = ob[:, None] != ob[None, :]
            total += (ub[:, None] * ub[None, :] * distinct).sum() / sel.sum()
        assert fast["ece_l2_sq_debiased_dpe"] == pytest.approx(total / len(zs), rel=1e-9, abs=1e-14)


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(9)
    z = rng.random(800)
    y = (rng.random(800) < z**1.3).astype(int)
    a = binned_calibration(y, z, n_boot=200, seed=42)
    b = binned_calibration(y, z, n_boot=200, seed=42)
    c = binned_calibration(y, z, n_boot=200, seed=43)
    assert a.metrics == b.metrics
    assert a.metrics["ece_l1_plugin"].ci_low != c.metrics["ece_l1_plugin"].ci_low
    m = a.metrics["ece_l2_sq_debiased_dpe"]
    assert m.ci_low < m.estimate < m.ci_high


def test_bad_arguments_raise_calibcli_error():
    with pytest.raises(CalibcliError, match="outside \\[0, 1\\]"):
        binned_calibration([0, 1], [0.2, 1.2])
    with pytest.raises(CalibcliError, match="alpha"):
        binned_calibration([0, 1], [0.2, 0.3], alpha=1.5)
    with pytest.raises(CalibcliError, match="strategy"):
        binned_calibration([0, 1], [0.2, 0.3], strategy="kmeans")
    with pytest.raises(CalibcliError, match="no rows"):
        binned_calibration([], [])


@pytest.mark.parametrize("seed", [-1, 2**64, 1.0])
def test_a_seed_the_bootstrap_cannot_key_is_refused_as_calibcli_ece_refuses_it(seed):
    """The seed is checked where the bootstrap's options are made, by the rule ``calibcli.ece`` and ``--seed``
    use: before, -1 and 2**64 were masked to 64 bits (2**64 gave seed 0's intervals) and 1.0 truncated."""
    rng = np.random.default_rng(2)
    z = rng.random(60)
    y = (rng.random(60) < z).astype(int)
    for call in (calibcli.ece, binned_calibration):
        with pytest.raises(ValueError, match="seed is .*: expected a non-negative integer below 2\\^64"):
            call(y, z, n_boot=5, seed=seed)


def test_quantile_edges_with_counts_equal_those_of_the_repeated_sample():
    # the bootstrap's quantile bins: edges of z repeated m times, without building the repeated array
    from calibcli.core.binning import quantile_edges_sorted

    rng = np.random.default_rng(11)
    z = np.sort(np.round(rng.random(200), 2))  # ties too
    for n_bins in (1, 2, 7, 15, 40):
        m = rng.integers(0, 4, len(z))
        np.testing.assert_array_equal(
            quantile_edges_sorted(z, n_bins, counts=m), quantile_edges_sorted(np.repeat(z, m), n_bins)
        )


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_sums_are_the_same_per_bin_or_by_reduceat(monkeypatch, strategy, weighted):
    """Many bins (more than rows) take one reduceat over the non-empty runs; few take a product per bin:
    the intervals agree to rounding (a million bins on 569 rows once took 19 s per resample)."""
    import calibcli.binned.bootstrap as bb
    import calibcli.binned.estimators as est

    rng = np.random.default_rng(3)
    z = rng.uniform(size=500)
    y = (rng.uniform(size=500) < z).astype(int)
    w = rng.integers(1, 4, 500).astype(float) if weighted else None
    results = []
    for loop in (10**9, 0):
        monkeypatch.setattr(bb, "_LOOP_RUNS", loop)
        results.append(est.binned_calibration(y, z, n_bins=700, strategy=strategy, n_boot=15, seed=2, sample_weight=w))
    for name, m in results[0].metrics.items():
        other = results[1].metrics[name]
        if m.ci_low is not None and np.isfinite(m.ci_low):
            assert other.ci_low == pytest.approx(m.ci_low, abs=1e-13) and other.ci_high == pytest.approx(
                m.ci_high, abs=1e-13
            )
