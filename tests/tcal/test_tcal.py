"""Tests of the T-Cal core (SPEC section 4; seed 004)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibcli.tcal.scalar as scalar_module
from calibcli.core.binning import uniform_bin_index
from calibcli.core.errors import CalibcliError
from calibcli.tcal.binomial import (
    binomial_test,
    binomial_test_from_counts,
    binomtest_pvalue,
    discreteness,
    discreteness_from_counts,
    is_discrete,
)
from calibcli.tcal.scales import chebyshev_constant, n_levels, optimal_n_bins
from calibcli.tcal.simplex import simplex_bin_index, simplex_bin_keys
from calibcli.tcal.procedure import tcal_statistic, tcal_test, tcal_tests
from calibcli.tcal import engine as engine_module
from calibcli.tcal.scalar import SharedDraws, SortedScalarEngine, is_stable_order, sweep
from calibcli.tcal.vector import GroupVectorEngine


def calibrated(n, seed, skew=False):
    rng = np.random.default_rng(seed)
    z = rng.random(n) ** (3 if skew else 1)
    y = (rng.random(n) < z).astype(int)
    return y, z


# ----------------------------------------------------------------------------------------------
# The statistic
# ----------------------------------------------------------------------------------------------


def test_statistic_hand_computed_binary():
    # bins [0, .5) and [.5, 1]: U = (-0.1, 0.8) and (0.4, -0.7)
    # bin 1: ((0.7)^2 - 0.65) / 2 = -0.08; bin 2: ((-0.3)^2 - 0.65) / 2 = -0.28; T = -0.36 / 4
    z = np.array([0.1, 0.2, 0.6, 0.7])
    y = np.array([0, 1, 1, 0])
    assert tcal_statistic(y, z, n_bins=2) == pytest.approx(-0.09, abs=1e-12)
    # one bin: (0.4^2 - 1.3) / 4 / 4
    assert tcal_statistic(y, z, n_bins=1) == pytest.approx(-0.07125, abs=1e-12)
    # singleton bins contribute exactly 0
    assert tcal_statistic(y, z, n_bins=10) == 0.0


def test_statistic_hand_computed_canonical():
    # one cell: U1 = (0.5, -0.3, -0.2), U2 = (-0.2, -0.2, 0.4); ||U1 + U2||^2 = 0.38, sum ||U||^2 = 0.62
    P = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    c = np.array([0, 2])
    assert tcal_statistic(c, P, n_bins=1) == pytest.approx((0.38 - 0.62) / 4, abs=1e-12)


def test_statistic_two_columns_equal_binary_and_engines_agree():
    y, z = calibrated(500, 1)
    t = tcal_statistic(y, z, n_bins=8)
    assert tcal_statistic(y, np.stack([1 - z, z], axis=1), n_bins=8) == pytest.approx(t, abs=1e-15)
    # the vector engine with K = 2 and scale 1/2 (used by the consistency null) gives the same number
    groups = [np.unique(np.minimum(np.floor(z * 8), 7), return_inverse=True)[1].reshape(-1)]
    engine = GroupVectorEngine(np.stack([1 - z, z], axis=1), y, None, groups, scale=0.5)
    assert engine.observed()[0] == pytest.approx(t, rel=1e-10, abs=1e-15)


def test_statistic_invariances():
    y, z = calibrated(300, 2)
    t = tcal_statistic(y, z, n_bins=4)
    perm = np.random.default_rng(0).permutation(300)
    assert tcal_statistic(y[perm], z[perm], n_bins=4) == pytest.approx(t, abs=1e-14)
    assert tcal_statistic(y, z, n_bins=4, sample_weight=np.full(300, 3.0)) == pytest.approx(t, abs=1e-14)


def test_statistic_weighted_formula():
    z = np.array([0.1, 0.2, 0.3])
    y = np.array([1, 0, 1])
    w = np.array([1.0, 2.0, 3.0])
    U = y - z
    expected = ((w @ U) ** 2 - (w**2) @ (U**2)) / w.sum() / w.sum()
    assert tcal_statistic(y, z, n_bins=1, sample_weight=w) == pytest.approx(expected, abs=1e-14)


def brute_force_statistic(y, z, m, w=None):
    """SPEC 4.1 directly: per-bin sums with bincount, no prefix sums."""
    w = np.ones(len(z)) if w is None else w
    b = np.minimum(np.floor(z * m), m - 1).astype(int)
    U = y - z
    W = np.bincount(b, weights=w, minlength=m)
    S1 = np.bincount(b, weights=w * U, minlength=m)
    S2 = np.bincount(b, weights=w * w * U * U, minlength=m)
    keep = W > 0
    return float(np.sum((S1[keep] ** 2 - S2[keep]) / W[keep]) / w.sum())


@pytest.mark.parametrize("n, dyadic", [(2, True), (3, True), (50, True), (3000, True), (3000, False)])
def test_distinct_bins_are_each_levels_runs(n, dyadic):
    # the bins found from the gaps between sorted predictions (one pass for all levels) are, at every level,
    # exactly the runs of equal bin index of that level: the non-empty count, and the bins of >= 2 points
    rng = np.random.default_rng(n)
    z = np.round(rng.random(n) ** 2, 2)  # ties, and values on bin edges
    levels = [2**b for b in range(1, n_levels(n) + 1)] if dyadic else [7]
    engine = SortedScalarEngine(z, np.zeros(n), None, levels)
    zs = np.sort(z)
    for j, m in enumerate(levels):
        idx = uniform_bin_index(zs, m)
        starts = np.concatenate([[0], np.flatnonzero(np.diff(idx)) + 1])
        ends = np.append(starts[1:], n)
        keep = ends - starts >= 2
        assert engine.nonempty[j] == len(starts)
        s, e, inv = engine.parts[engine.level_of[j]]
        np.testing.assert_array_equal(s, starts[keep])
        np.testing.assert_array_equal(e, ends[keep])
        np.testing.assert_array_equal(inv, 1.0 / (ends[keep] - starts[keep]))
    # the partitions are distinct and nested: each level with a new count is a new partition
    counts = [engine.nonempty[j] for j in range(len(levels))]
    expected = [sum(1 for i in range(1, j + 1) if counts[i] != counts[i - 1]) for j in range(len(levels))]
    assert engine.level_of == expected


@pytest.mark.parametrize("n, block", [(40, None), (3000, None), (3000, 97)])
def test_all_levels_match_brute_force_with_ties_and_weights(n, block, monkeypatch):
    # the adaptive test's per-level statistics (distinct bins shared across levels) against the formula;
    # a small block size makes the sorted sweep cross many blocks, with bins spanning several of them
    if block is not None:
        monkeypatch.setattr(scalar_module, "_BLOCK_POINTS", block)
    rng = np.random.default_rng(21)
    z = np.round(rng.random(n) ** 3, 3)  # skewed, with ties
    y = (rng.random(n) < z).astype(int)
    w = rng.random(n) + 0.5
    for weights in (None, w):
        r = tcal_test(y, z, sample_weight=weights, n_boot=20, rng=np.random.default_rng(0))
        for level in r.levels:
            assert level.statistic == pytest.approx(brute_force_statistic(y, z, level.n_bins, weights), abs=1e-13)


@pytest.mark.parametrize("weighted", [False, True])
def test_sweeps_of_several_chunks_equal_one_chunk_at_a_time(weighted, monkeypatch):
    # chunks of one resample (as at 1e6 rows: a small chunk budget here), swept 1 and 5 at a time (the last
    # sweep partial), over blocks of 97 points (bins crossing blocks start from kept prefix sums): the same floats
    monkeypatch.setattr(scalar_module, "_BLOCK_POINTS", 97)
    monkeypatch.setattr(scalar_module, "CHUNK_BYTES", 1)
    rng = np.random.default_rng(8)
    z = np.round(rng.random(1500) ** 2, 3)
    y = (rng.random(1500) < z).astype(float)
    w = rng.random(1500) + 0.5 if weighted else None
    engine = SortedScalarEngine(z, y, w, [2**b for b in range(1, n_levels(1500) + 1)])
    assert engine.chunk_rows() == 1 and engine.n_kept > 0
    stars = {}
    for rows in (1, 5):
        monkeypatch.setattr(scalar_module, "SWEEP_ROWS", rows)
        stars[rows] = engine_module.resample_all(engine, np.random.default_rng(3), 23, "y-bootstrap")
    assert stars[1].shape == (23, engine.n_parts)
    np.testing.assert_array_equal(stars[1], stars[5])
    # and a chunk of several resamples (small data) swept with others: each chunk's rows as it draws them alone
    monkeypatch.setattr(scalar_module, "CHUNK_BYTES", 48 * 1500 * 3)
    assert engine.chunk_rows() == 3
    alone = [engine.resampled(np.random.default_rng(s), 3, "y-bootstrap") for s in (4, 5)]
    together = sweep([engine], [(np.random.default_rng(4), 3), (np.random.default_rng(5), 3)])[0]
    np.testing.assert_array_equal(np.concatenate(alone), together)


def test_is_stable_order_is_the_stable_sort():
    rng = np.random.default_rng(9)
    z = np.round(rng.random(400), 2)  # ties
    order = np.argsort(z, kind="stable")
    maps = {
        "strictly increasing": z**0.7,
        "with new ties (isotonic-like steps)": np.floor(z * 5) / 5,
        "decreasing": 1 - z,
        "constant": np.full(400, 0.3),
    }
    for name, g in maps.items():
        own = np.argsort(g, kind="stable")
        assert is_stable_order(g, order) == np.array_equal(own, order), name
        assert is_stable_order(g, own), name
    assert is_stable_order(z**0.7, order) and not is_stable_order(np.floor(z * 5) / 5, order)
    assert not is_stable_order(z, order[:-1]) and not is_stable_order(z, order[::-1])


def test_tcal_tests_equal_each_test_alone_and_share_their_draws(monkeypatch):
    # recalibrated predictions of the same rows (strictly monotone maps, a map creating ties, a decreasing one),
    # weighted rows, fewer rows, canonical data and another null: each result equals tcal_test with the same seed
    rng = np.random.default_rng(10)
    n = 3000
    z = rng.beta(2, 5, n)
    y = (rng.random(n) < z**1.2).astype(int)
    P = rng.dirichlet([1, 2, 3], 300)
    c = np.array([rng.choice(3, p=p) for p in P])
    problems = [
        (y, z, None),
        (y, z**0.9, None),
        (y, 1 / (1 + np.exp(-(2 * np.log(z / (1 - z)) + 0.3))), None),
        (y, np.clip(np.round(z * 20) / 20, 0.01, 0.99), None),
        (y, 1 - z, None),
        (y, z, rng.random(n) + 0.5),
        (y[:1000], z[:1000], None),
        (c, P, None),
    ]
    shared = []
    real_sweep = scalar_module.sweep

    def counting_sweep(engines, chunks):
        shared.append(len(engines))
        return real_sweep(engines, chunks)

    monkeypatch.setattr(scalar_module, "sweep", counting_sweep)
    for options in ({"n_boot": 200}, {"n_boot": 150, "combine": "min-p", "smoothness": 1.0}):
        shared.clear()
        together = tcal_tests(problems, seed=7, **options)
        assert set(shared) == {6, 1}  # the six binary tests of 3000 rows drew once; the test of 1000 rows alone
        for (labels, probs, weights), result in zip(problems, together, strict=True):
            alone = tcal_test(labels, probs, sample_weight=weights, rng=np.random.default_rng(7), **options)
            assert result == alone
    consistency = tcal_tests([(y, z, None), (y, z**0.9, None)], seed=2, n_boot=30, null="consistency")
    alone = [tcal_test(y, g, null="consistency", n_boot=30, rng=np.random.default_rng(2)) for g in (z, z**0.9)]
    assert consistency == alone


def test_shared_draws_need_the_same_number_of_points():
    a = SortedScalarEngine(np.linspace(0.1, 0.9, 50), np.zeros(50), None, [2, 4])
    b = SortedScalarEngine(np.linspace(0.1, 0.9, 60), np.zeros(60), None, [2, 4])
    with pytest.raises(ValueError, match="same number of points"):
        SharedDraws([a, b])
    with pytest.raises(ValueError, match="only the y-bootstrap"):
        SharedDraws([a, a]).resampled_chunks([(np.random.default_rng(0), 1)], "consistency")


def test_statistic_mean_zero_under_calibration():
    # E[T_m] = 0 exactly for calibrated data (the debiasing); check the simulation mean within 4 SE
    reps, n = 1500, 200
    rng = np.random.default_rng(3)
    z = rng.random(n)
    values = np.array([tcal_statistic((rng.random(n) < z).astype(int), z, n_bins=8) for _ in range(reps)])
    se = values.std(ddof=1) / math.sqrt(reps)
    assert abs(values.mean()) < 4 * se
    # while the plug-in (biased) version would sit at about (m/n) * mean z(1-z) > 0: far more than 4 SE
    assert 8 / n * np.mean(z * (1 - z)) > 10 * se


def test_statistic_positive_for_miscalibration():
    rng = np.random.default_rng(4)
    z = rng.random(20000)
    y = (rng.random(20000) < z**2).astype(int)
    # the squared l2-ECE of z -> z^2 is integral (z - z^2)^2 = 1/30
    assert tcal_statistic(y, z, n_bins=16) == pytest.approx(1 / 30, abs=0.004)


# ----------------------------------------------------------------------------------------------
# Scales and constants
# ----------------------------------------------------------------------------------------------


def test_levels_and_optimal_bins():
    assert n_levels(10_000) == math.ceil(2 * math.log2(10_000 / math.sqrt(math.log(10_000))))
    assert n_levels(10_000) == 24
    assert n_levels(10_000, 3) == 12
    assert n_levels(1_000_000) == 37
    assert optimal_n_bins(10_000, 1.0) == math.floor(10_000 ** (2 / 5))
    assert optimal_n_bins(10_000, 0.5, 3) == 100


def test_chebyshev_constant_is_half_the_papers_for_scalar():
    n, m = 1000, 16
    paper = math.sqrt(2 * 2**2) * min(math.sqrt(m) / n, 1 / math.sqrt(m))
    assert chebyshev_constant(n, m) == pytest.approx(paper / 2)
    assert chebyshev_constant(n, m, 3, scalar=False) == pytest.approx(math.sqrt(18) * min(m / n, 1 / m))


# ----------------------------------------------------------------------------------------------
# Equal-volume simplex partition (SPEC 4.3)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("K,m", [(3, 2), (3, 3), (3, 4), (4, 2), (4, 3)])
def test_simplex_partition_has_equal_volume_cells(K, m):
    N = 120_000
    P = np.random.default_rng(5).dirichlet(np.ones(K), size=N)
    keys = simplex_bin_keys(P, m)
    assert keys.shape == (N, 2 * (K - 1))
    cells, counts = np.unique(keys, axis=0, return_counts=True)
    n_cells = m ** (K - 1)
    assert len(cells) == n_cells
    # uniform points: every cell's count is Binomial(N, 1/n_cells); allow 5 standard deviations
    expected = N / n_cells
    sd = math.sqrt(N * (1 / n_cells) * (1 - 1 / n_cells))
    assert np.all(np.abs(counts - expected) < 5 * sd)
    # cells are small: every coordinate varies by less than 1/m within a cell
    index = simplex_bin_index(P, m)
    for k in range(K):
        spread = np.bincount(index, weights=None, minlength=n_cells)  # sizes, for the shape check
        assert spread.sum() == N
        hi = np.full(n_cells, -np.inf)
        lo = np.full(n_cells, np.inf)
        np.maximum.at(hi, index, P[:, k])
        np.minimum.at(lo, index, P[:, k])
        assert np.all(hi - lo <= 1 / m + 1e-12)


def test_simplex_partition_maps_boundary_points_into_valid_cells():
    K, m = 3, 4
    P = np.random.default_rng(6).dirichlet(np.ones(K), size=50_000)
    valid = {tuple(k) for k in simplex_bin_keys(P, m)}
    assert len(valid) == m ** (K - 1)
    grid = np.array([[a, b, m - a - b] for a in range(m + 1) for b in range(m + 1 - a)]) / m
    edges = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3], [0.25, 0.0, 0.75]])
    for key in simplex_bin_keys(np.vstack([grid, edges]), m):
        assert tuple(key) in valid


def test_simplex_partition_is_nested_when_m_doubles():
    P = np.random.default_rng(7).dirichlet(np.ones(4), size=20_000)
    coarse = simplex_bin_index(P, 2)
    fine = simplex_bin_index(P, 4)
    # every fine cell lies inside exactly one coarse cell
    pairs = np.unique(np.stack([fine, coarse], axis=1), axis=0)
    assert len(pairs) == len(np.unique(fine))


# ----------------------------------------------------------------------------------------------
# The test
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("null", ["y-bootstrap", "consistency", "chebyshev"])
def test_decisions_calibrated_and_miscalibrated(null):
    y, z = calibrated(2000, 8)
    result = tcal_test(y, z, null=null, n_boot=500, rng=np.random.default_rng(0))
    assert not result.reject
    assert result.p_value > 0.05
    rng = np.random.default_rng(9)
    wiggle = (
        0.3 * np.sin(4 * np.pi * z) if null == "chebyshev" else 0.25 * np.sin(6 * np.pi * z)
    )  # chebyshev is conservative
    y_bad = (rng.random(2000) < np.clip(z + wiggle, 0, 1)).astype(int)
    bad = tcal_test(y_bad, z, null=null, n_boot=500, rng=np.random.default_rng(0))
    assert bad.reject
    assert bad.p_value <= 0.05
    assert len(bad.levels) == n_levels(2000)
    assert any(level.reject for level in bad.levels)


def test_min_p_and_bonferroni_from_same_resamples():
    y, z = calibrated(1000, 10)
    rng = np.random.default_rng(9)
    y_bad = (rng.random(1000) < np.clip(z + 0.2 * np.sin(8 * np.pi * z), 0, 1)).astype(int)
    b = tcal_test(y_bad, z, n_boot=400, rng=np.random.default_rng(1))
    p = tcal_test(y_bad, z, n_boot=400, combine="min-p", rng=np.random.default_rng(1))
    # same resamples: identical per-level statistics and per-level p-values
    assert [l.p_value for l in b.levels] == [l.p_value for l in p.levels]
    assert [l.statistic for l in b.levels] == [l.statistic for l in p.levels]
    assert b.p_value == pytest.approx(min(1.0, b.n_levels * min(l.p_value for l in b.levels)))
    assert p.reject and b.reject
    assert p.p_value <= b.p_value
    # each result reports both combinations
    assert b.p_value_min_p == p.p_value and p.p_value_bonferroni == b.p_value
    assert p.per_level_alpha >= b.per_level_alpha  # min-p is never stricter per level than Bonferroni


def test_p_values_reproducible_with_seed():
    y, z = calibrated(800, 11)
    a = tcal_test(y, z, n_boot=200, combine="min-p", rng=np.random.default_rng(42))
    b = tcal_test(y, z, n_boot=200, combine="min-p", rng=np.random.default_rng(42))
    assert a == b
    c = tcal_test(y, z, n_boot=200, combine="min-p", rng=np.random.default_rng(43))
    assert [l.p_value for l in a.levels] != [l.p_value for l in c.levels]


def test_monte_carlo_p_value_formula_and_critical_values():
    y, z = calibrated(500, 12)
    r = tcal_test(y, z, smoothness=1.0, n_boot=99, alpha=0.1, rng=np.random.default_rng(0))
    level = r.levels[0]
    assert r.n_levels == 1 and level.n_bins == optimal_n_bins(500, 1.0)
    assert level.p_value * 100 == pytest.approx(round(level.p_value * 100))  # (1 + count) / (R + 1)
    assert level.p_value >= 1 / 100
    assert r.per_level_alpha == pytest.approx(0.1)
    # rejection is T_m above the critical value
    assert level.reject == (level.statistic > level.critical_value)


def test_y_bootstrap_p_value_is_valid():
    # exact Monte Carlo test: P(p <= k / (R + 1)) <= k / (R + 1) under calibration
    reps, R = 300, 19
    pvals = []
    for seed in range(reps):
        y, z = calibrated(150, 100 + seed, skew=seed % 2 == 1)
        pvals.append(tcal_test(y, z, smoothness=1.0, n_boot=R, rng=np.random.default_rng(seed)).p_value)
    pvals = np.array(pvals)
    for level in (0.1, 0.25, 0.5):
        rate = np.mean(pvals <= level + 1e-12)
        assert rate <= level + 3 * math.sqrt(level * (1 - level) / reps)
    assert abs(pvals.mean() - 0.5 * (1 + 1 / (R + 1))) < 4 * 0.29 / math.sqrt(reps)


def test_chebyshev_p_value_matches_its_decision():
    rng = np.random.default_rng(13)
    z = rng.random(20000)
    y = (rng.random(20000) < np.clip(z + 0.3 * np.sin(4 * np.pi * z), 0, 1)).astype(int)
    r = tcal_test(y, z, null="chebyshev")
    assert r.n_boot == 0 and not r.exact
    for level in r.levels:
        assert level.reject == (level.p_value <= r.per_level_alpha + 1e-15)
        if level.statistic > 0:
            C = chebyshev_constant(20000, level.n_bins)
            assert level.p_value == pytest.approx(min(1.0, (C / level.statistic) ** 2))
            assert level.critical_value == pytest.approx(C / math.sqrt(r.per_level_alpha))
    assert r.reject == (r.p_value <= r.alpha)


def test_canonical_mode_runs_and_warns_for_many_classes():
    rng = np.random.default_rng(14)
    P = rng.dirichlet(np.ones(3), size=600)
    c = (rng.random(600)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    r = tcal_test(c, P, n_boot=100, rng=np.random.default_rng(0))
    assert r.mode == "canonical" and r.n_classes == 3
    assert r.n_levels == n_levels(600, 3)
    assert r.levels[0].n_cells == 4
    assert not r.reject
    P8 = rng.dirichlet(np.ones(8), size=300)
    c8 = rng.integers(0, 8, size=300)
    r8 = tcal_test(c8, P8, n_boot=50, rng=np.random.default_rng(0))
    assert any("top-label" in w for w in r8.warnings)


def test_canonical_detects_miscalibration():
    rng = np.random.default_rng(15)
    P = rng.dirichlet(np.ones(3), size=3000)
    sharp = P**3 / (P**3).sum(axis=1, keepdims=True)  # labels drawn from sharper probabilities
    c = (rng.random(3000)[:, None] > np.cumsum(sharp, axis=1)).sum(axis=1)
    for null in ("y-bootstrap", "consistency"):
        r = tcal_test(c, P, null=null, n_boot=300, rng=np.random.default_rng(0))
        assert r.reject


def test_too_few_resamples_warns():
    y, z = calibrated(1000, 16)
    r = tcal_test(y, z, n_boot=50, rng=np.random.default_rng(0))
    assert not r.reject
    assert any("cannot reject" in w for w in r.warnings)
    assert all(level.critical_value is None for level in r.levels)


def test_bad_options_are_usage_errors():
    y, z = calibrated(100, 17)
    with pytest.raises(CalibcliError, match="min-p"):
        tcal_test(y, z, null="chebyshev", combine="min-p")
    with pytest.raises(CalibcliError, match="unknown null"):
        tcal_test(y, z, null="bootstrap")
    with pytest.raises(CalibcliError, match="y-bootstrap only"):
        tcal_test(y, z, null="consistency", sample_weight=np.arange(1, 101.0))
    with pytest.raises(CalibcliError, match="alpha"):
        tcal_test(y, z, alpha=1.5)


def test_weighted_y_bootstrap_runs():
    y, z = calibrated(1000, 18)
    w = np.random.default_rng(0).random(1000) + 0.5
    r = tcal_test(y, z, sample_weight=w, n_boot=200, rng=np.random.default_rng(0))
    assert r.weighted and r.exact and not r.reject


# ----------------------------------------------------------------------------------------------
# Discrete predictors (SPEC 4.4)
# ----------------------------------------------------------------------------------------------


def test_binomial_test_hand_computed():
    # value 0.5: 8 of 10 positive, two-sided p = 2 * (45 + 10 + 1) / 1024 = 0.109375
    # value 0.2: 1 of 5 positive is the most likely count, p = 1
    z = np.array([0.5] * 10 + [0.2] * 5)
    y = np.array([1] * 8 + [0] * 2 + [1] + [0] * 4)
    r = binomial_test(y, z, alpha=0.05)
    rows = {row.value: row for row in r.rows}
    assert rows[0.5].p_value == pytest.approx(0.109375)
    assert rows[0.5].n == 10 and rows[0.5].positives == 8
    assert rows[0.2].p_value == pytest.approx(1.0)
    assert r.n_values == 2 and r.per_value_alpha == pytest.approx(0.025)
    assert r.p_value == pytest.approx(0.21875)
    assert not r.reject


def test_binomial_test_rejects_miscalibrated_bins():
    rng = np.random.default_rng(20)
    z = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], size=5000)
    assert not binomial_test((rng.random(5000) < z).astype(int), z).reject
    assert binomial_test((rng.random(5000) < np.clip(z + 0.08, 0, 1)).astype(int), z).reject


def test_discreteness_rule():
    z = np.repeat([0.1, 0.4, 0.8], 100)
    check = discreteness(z)
    assert check.discrete and check.n_distinct == 3 and check.threshold == pytest.approx(math.sqrt(300))
    assert "sqrt(n)" in check.rule
    assert not is_discrete(np.random.default_rng(0).random(300))
    assert is_discrete(np.round(np.random.default_rng(0).random(20_000), 2))  # 101 values <= 141


def test_binomtest_pvalue_is_scipys_binomtest():
    from scipy.stats import binomtest

    rng = np.random.default_rng(37)
    for n in (1, 2, 3, 10, 37, 569, 12_345, 10**6):
        for p in (0.0, 1.0, 0.5, 0.1, 1 / 3, *rng.random(4)):
            mode = p * n
            ks = {0, n, int(mode), min(n, int(mode) + 1), max(0, int(mode) - 1), *rng.integers(0, n + 1, 6).tolist()}
            for k in ks:
                assert binomtest_pvalue(k, n, float(p)) == binomtest(k, n, float(p)).pvalue, (k, n, p)


def test_binomial_test_and_discreteness_from_counts_equal_the_row_versions():
    rng = np.random.default_rng(21)
    z = rng.choice([0.15, 0.35, 0.6, 0.95], size=3000)
    y = (rng.random(3000) < z).astype(int)
    values = np.array([0.15, 0.35, 0.6, 0.95])
    n = np.array([(z == v).sum() for v in values])
    m = np.array([y[z == v].sum() for v in values])
    assert binomial_test_from_counts(values, n, m, alpha=0.01) == binomial_test(y, z, alpha=0.01)
    assert discreteness_from_counts(4, 3000) == discreteness(z)
    assert not discreteness_from_counts(56, 3000).discrete and discreteness_from_counts(54, 3000).discrete
    with pytest.raises(CalibcliError, match="between 0 and that many positives"):
        binomial_test_from_counts([0.5], [3], [4])


def test_progress_called_once_per_resample():
    y, z = calibrated(3000, 22)
    calls = []
    tcal_test(y, z, n_boot=257, rng=np.random.default_rng(0), progress=lambda: calls.append(1))
    assert len(calls) == 257
