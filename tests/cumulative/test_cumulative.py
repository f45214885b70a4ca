"""ECCE statistics (calibcli.cumulative.ecce, SPEC 9): against direct references, invariances, the grid form and its
bound, the Brownian-motion laws (series against each other, known moments, simulation), size and the MDE."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibcli.cumulative import brownian
from calibcli.cumulative import ecce as cu
from calibcli.core.errors import CalibcliError

trapezoid = getattr(np, "trapezoid", None) or np.trapz  # NumPy < 2 has only trapz


def reference(y, s, w=None):
    """O(n * distinct scores) reference straight from the definition: C at every distinct score t is the
    normalised sum of w (y - s) over rows with score <= t; C_0 = 0."""
    y = np.asarray(y, dtype=float)
    s = np.asarray(s, dtype=float)
    w = np.ones_like(s) if w is None else np.asarray(w, dtype=float)
    w = w / w.sum()
    c = np.array([0.0] + [np.sum((w * (y - s))[s <= t]) for t in np.unique(s)])
    sigma = math.sqrt(np.sum(w * w * s * (1 - s)))
    return {"ecce_mad": np.abs(c).max(), "ecce_r": c.max() - c.min(), "sigma": sigma, "c": c}


def tied_data(rng, n, levels=13):
    """Scores on a few levels (many ties), labels calibrated, positive weights."""
    s = rng.integers(0, levels + 1, size=n) / levels
    y = (rng.uniform(size=n) < s).astype(np.int64)
    w = rng.uniform(0.2, 3.0, size=n)
    return y, s, w


def test_four_points_by_hand():
    # Scores 0.2, 0.4, 0.4, 0.8; labels 0, 1, 0, 1; weights 1/4. Differences w (y - s): -0.05, 0.15, -0.10,
    # 0.05. The two rows at 0.4 are one block, so C = 0, -0.05, 0.00, 0.05 (never 0.10 or -0.15, which the
    # rows one at a time would give in one order or the other).
    y = [0, 1, 0, 1]
    s = [0.2, 0.4, 0.4, 0.8]
    r = cu.ecce(y, s)
    assert r.ecce_mad == pytest.approx(0.05, abs=1e-15)
    assert r.ecce_r == pytest.approx(0.10, abs=1e-15)
    assert r.sigma == pytest.approx(math.sqrt(0.8) / 4, abs=1e-15)  # sqrt(.16 + .24 + .24 + .16) / 4
    assert r.ecce_r_sigma == pytest.approx(0.10 / (math.sqrt(0.8) / 4), rel=1e-14)
    assert r.ecce_r_pvalue == pytest.approx(float(cu.range_brownian_sf(r.ecce_r_sigma)), rel=1e-15)
    assert r.rows == 4 and r.error_bound == 0.0
    cd = cu.cumulative_differences(y, s)
    np.testing.assert_allclose(cd.c, [0.0, -0.05, 0.0, 0.05], atol=1e-15)
    np.testing.assert_array_equal(cd.scores, [0.2, 0.4, 0.8])
    np.testing.assert_allclose(cd.weight, [0.25, 0.5, 0.25], atol=1e-15)
    # Either order of the tied rows gives the same statistics.
    r2 = cu.ecce([0, 0, 1, 1], [0.2, 0.4, 0.4, 0.8])
    assert (r2.ecce_mad, r2.ecce_r) == pytest.approx((r.ecce_mad, r.ecce_r), abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_reference_with_weights_and_ties(seed):
    rng = np.random.default_rng(seed)
    y, s, w = tied_data(rng, 300)
    s[:50] = rng.uniform(size=50)  # some distinct scores too
    for weights in (None, w):
        ref = reference(y, s, weights)
        r = cu.ecce(y, s, sample_weight=weights)
        for key in ("ecce_mad", "ecce_r", "sigma"):
            assert abs(getattr(r, key) - ref[key]) <= 1e-12, key
        np.testing.assert_allclose(cu.cumulative_differences(y, s, sample_weight=weights).c, ref["c"], rtol=0, atol=1e-12)


def test_shuffling_rows_within_ties_and_overall_changes_nothing():
    rng = np.random.default_rng(5)
    y, s, w = tied_data(rng, 500, levels=5)
    base = cu.ecce(y, s, sample_weight=w)
    for _ in range(5):
        p = rng.permutation(len(s))
        r = cu.ecce(y[p], s[p], sample_weight=w[p])
        for key in ("ecce_mad", "ecce_r", "sigma", "ecce_r_pvalue", "ecce_mad_pvalue"):
            assert abs(getattr(r, key) - getattr(base, key)) <= 1e-12, key


def test_scaling_weights_changes_nothing():
    rng = np.random.default_rng(6)
    y, s, w = tied_data(rng, 200)
    a, b = cu.ecce(y, s, sample_weight=w), cu.ecce(y, s, sample_weight=1000.0 * w)
    for key in ("ecce_mad", "ecce_r", "sigma"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-12)


def test_segments_equal_each_segment_alone():
    rng = np.random.default_rng(7)
    n = 2000
    y, s, w = tied_data(rng, n, levels=40)
    a = rng.integers(-1, 6, size=n).astype(np.int8)  # -1: in no segment of this partition
    b = rng.integers(0, 3, size=n).astype(np.uint8)
    ab = np.where(a >= 0, a * 3 + b, -1)  # a depth-2 partition
    whole = np.zeros(n, dtype=np.uint8)
    res = cu.ecce_segments(y, s, [whole, a, b, ab], n_segments=[1, 7, 3, 21], sample_weight=w)
    assert len(res.ecce_r) == 1 + 7 + 3 + 21
    np.testing.assert_array_equal(res.partition, np.repeat([0, 1, 2, 3], [1, 7, 3, 21]))
    for i, (p, g) in enumerate(zip(res.partition, res.segment)):
        ids = [whole, a, b, ab][p]
        m = ids == g
        if not m.any():
            assert res.rows[i] == 0 and np.isnan(res.ecce_r[i]) and np.isnan(res.ecce_r_pvalue[i])
            continue
        ref = reference(y[m], s[m], w[m])
        assert res.rows[i] == m.sum()
        assert res.weight[i] == pytest.approx(w[m].sum(), rel=1e-12)
        for key in ("ecce_mad", "ecce_r", "sigma"):
            assert abs(getattr(res, key)[i] - ref[key]) <= 1e-12, (p, g, key)
    # Segment 6 of partition a is absent (ids go to 5): no rows, NaN.
    assert res.rows[1 + 6] == 0 and np.isnan(res.ecce_mad[1 + 6])
    # The whole population as a partition equals ecce().
    single = cu.ecce(y, s, sample_weight=w)
    assert res.ecce_r[0] == pytest.approx(single.ecce_r, abs=1e-15)


def test_segment_of_zero_weight_is_empty_and_leaves_the_others_alone():
    rng = np.random.default_rng(12)
    y, s, w = tied_data(rng, 300)
    ids = rng.integers(0, 3, size=300)
    w[ids == 0] = 0.0  # segment 0 has rows but no weight: no population
    res = cu.ecce_segments(y, s, ids, sample_weight=w)
    assert res.rows[0] == (ids == 0).sum() and res.weight[0] == 0 and np.isnan(res.ecce_r[0])
    assert np.isnan(res.sigma[0]) and np.isnan(res.ecce_r_pvalue[0])
    for g in (1, 2):
        assert abs(res.ecce_r[g] - reference(y[ids == g], s[ids == g], w[ids == g])["ecce_r"]) <= 1e-12
    sums = cu.cell_sums(y, s, cu.uniform_cells(s, 8), n_cells=8, segment_ids=ids, n_segments=3, sample_weight=w)
    g, c = np.nonzero(sums.rows)
    sparse = cu.ecce_from_cell_entries(g, c, sums.w[g, c], sums.wy[g, c], sums.ws[g, c], sums.w2v[g, c],
                                       sums.wabs[g, c], n_segments=3)
    dense = cu.ecce_from_cells(sums)
    assert np.isnan(sparse.ecce_r[0]) and np.isnan(dense.ecce_r[0])
    np.testing.assert_allclose(sparse.ecce_r[1:], dense.ecce_r[1:], atol=1e-12)


def test_rows_already_in_score_order_give_the_same_result():
    # Sorted input takes the path without gathers; it must agree with the general path.
    rng = np.random.default_rng(13)
    y, s, w = tied_data(rng, 3000, levels=50)
    ids = rng.integers(-1, 40, size=3000)
    o = np.argsort(s, kind="stable")
    a = cu.ecce_segments(y, s, [ids, ids % 7], sample_weight=w)
    b = cu.ecce_segments(y[o], s[o], [ids[o], ids[o] % 7], sample_weight=w[o])
    np.testing.assert_array_equal(a.rows, b.rows)
    for key in ("ecce_mad", "ecce_r", "sigma", "weight"):
        np.testing.assert_allclose(getattr(a, key), getattr(b, key), rtol=0, atol=1e-12, err_msg=key)


def test_small_segment_after_a_large_miscalibrated_one_keeps_its_precision():
    # Segment 0: 200,000 rows all positive at score 0.01 (its running sum reaches 2e5); segment 1: 50 rows
    # whose scores interleave with segment 0's. Segment 1's statistics must not inherit segment 0's rounding.
    rng = np.random.default_rng(14)
    big, small = 200_000, 50
    s = np.r_[np.full(big, 0.01) + rng.uniform(0, 1e-3, big), rng.uniform(0.005, 0.02, small)]
    y = np.r_[np.ones(big, dtype=int), (rng.uniform(size=small) < 0.5).astype(int)]
    ids = np.r_[np.zeros(big, dtype=np.uint8), np.ones(small, dtype=np.uint8)]
    res = cu.ecce_segments(y, s, ids)
    ref = reference(y[big:], s[big:])
    assert abs(res.ecce_r[1] - ref["ecce_r"]) <= 1e-14 and abs(res.ecce_mad[1] - ref["ecce_mad"]) <= 1e-14


def test_segments_2d_array_and_default_sizes():
    rng = np.random.default_rng(8)
    y, s, w = tied_data(rng, 400)
    ids = rng.integers(0, 4, size=(2, 400))
    r1 = cu.ecce_segments(y, s, ids)
    r2 = cu.ecce_segments(y, s, [ids[0], ids[1]], n_segments=4)
    np.testing.assert_array_equal(r1.ecce_r, r2.ecce_r)
    assert len(r1.ecce_r) == 8


@pytest.mark.parametrize("bad, message", [
    ("text", "segment_ids has type str"),
    ([np.zeros(3, dtype=int)], "segment_ids[0] has shape (3,): expected (10,)"),
    ([np.full(10, -2)], "segment_ids[0] has the id -2"),
    ([np.zeros(10)], "segment_ids[0] has type float64"),
])
def test_segment_ids_checked(bad, message):
    with pytest.raises(CalibcliError) as err:
        cu.ecce_segments(np.zeros(10, dtype=int), np.full(10, 0.3), bad)
    assert message in str(err.value)
    with pytest.raises(CalibcliError, match="has the id 4 but n_segments is 3"):
        cu.ecce_segments(np.zeros(10, dtype=int), np.full(10, 0.3), np.full(10, 4), n_segments=3)


def test_sigma_zero_conventions():
    # Scores 0 and 1 only: sigma = 0. Labels agreeing: no deviation, p = 1; one disagreeing: certain
    # miscalibration, inf sigmas and p = 0.
    r = cu.ecce([0, 1, 1], [0.0, 1.0, 1.0])
    assert r.sigma == 0 and r.ecce_r == 0 and r.ecce_r_sigma == 0 and r.ecce_r_pvalue == 1.0
    r = cu.ecce([1, 1, 1], [0.0, 1.0, 1.0])
    assert r.ecce_r == pytest.approx(1 / 3) and r.ecce_r_sigma == np.inf and r.ecce_r_pvalue == 0.0


def test_grid_equals_exact_when_cells_hold_one_score():
    rng = np.random.default_rng(9)
    y, s, w = tied_data(rng, 1000, levels=30)
    ids = rng.integers(0, 5, size=1000)
    cells = np.searchsorted(np.unique(s), s)  # one distinct score per cell
    k = len(np.unique(s))
    exact = cu.ecce_segments(y, s, ids, sample_weight=w)
    dense = cu.ecce_from_cells(cu.cell_sums(y, s, cells, n_cells=k, segment_ids=ids, n_segments=5, sample_weight=w))
    sums = cu.cell_sums(y, s, cells, n_cells=k, segment_ids=ids, n_segments=5, sample_weight=w)
    g, c = np.nonzero(sums.rows)
    sparse = cu.ecce_from_cell_entries(g, c, sums.w[g, c], sums.wy[g, c], sums.ws[g, c], sums.w2v[g, c],
                                       sums.wabs[g, c], sums.rows[g, c], n_segments=5)
    for key in ("ecce_mad", "ecce_r", "sigma", "ecce_r_sigma", "ecce_mad_pvalue", "ecce_r_pvalue"):
        np.testing.assert_allclose(getattr(dense, key), getattr(exact, key), rtol=0, atol=1e-12, err_msg=key)
        np.testing.assert_allclose(getattr(sparse, key), getattr(exact, key), rtol=0, atol=1e-12, err_msg=key)
    np.testing.assert_array_equal(dense.rows, exact.rows)
    np.testing.assert_array_equal(sparse.rows, exact.rows)
    # One population, no segment axis: floats.
    one = cu.ecce_from_cells(cu.cell_sums(y, s, cells, n_cells=k, sample_weight=w))
    assert isinstance(one.ecce_r, float) and one.ecce_r == pytest.approx(cu.ecce(y, s, sample_weight=w).ecce_r, abs=1e-12)


@pytest.mark.parametrize("n_cells", [1, 4, 16, 64])
def test_grid_stays_within_its_bound(n_cells):
    rng = np.random.default_rng(10 + n_cells)
    n = 3000
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < np.clip(s + 0.1 * np.sin(6 * s), 0, 1)).astype(int)  # miscalibrated
    w = rng.uniform(0.5, 2, size=n)
    ids = rng.integers(0, 4, size=n)
    exact = cu.ecce_segments(y, s, ids, sample_weight=w)
    grid = cu.ecce_from_cells(cu.cell_sums(y, s, cu.uniform_cells(s, n_cells), n_cells=n_cells, segment_ids=ids,
                                           n_segments=4, sample_weight=w))
    tol = 1e-12
    assert np.all(grid.ecce_mad <= exact.ecce_mad + tol)
    assert np.all(exact.ecce_mad <= grid.ecce_mad + grid.error_bound + tol)
    assert np.all(grid.ecce_r <= exact.ecce_r + tol)
    assert np.all(exact.ecce_r <= grid.ecce_r + 2 * grid.error_bound + tol)
    np.testing.assert_allclose(grid.sigma, exact.sigma, rtol=1e-12)  # sigma is exact on any grid
    if n_cells == 64:  # a fine grid is close: the bound shrinks with the cells
        assert np.all(grid.error_bound < 0.02)


def test_cell_sums_merge_like_one_pass():
    rng = np.random.default_rng(11)
    y, s, w = tied_data(rng, 1000)
    ids = rng.integers(0, 3, size=1000)
    cells = cu.uniform_cells(s, 32)
    whole = cu.cell_sums(y, s, cells, n_cells=32, segment_ids=ids, n_segments=3, sample_weight=w)
    a = cu.cell_sums(y[:400], s[:400], cells[:400], n_cells=32, segment_ids=ids[:400], n_segments=3,
                     sample_weight=w[:400])
    b = cu.cell_sums(y[400:], s[400:], cells[400:], n_cells=32, segment_ids=ids[400:], n_segments=3,
                     sample_weight=w[400:])
    merged = cu.ecce_from_cells(b.merge(a))
    direct = cu.ecce_from_cells(whole)
    for key in ("ecce_mad", "ecce_r", "sigma", "error_bound"):
        np.testing.assert_allclose(getattr(merged, key), getattr(direct, key), rtol=1e-12, atol=1e-15)


def test_sparse_entries_from_batches_add_up_and_leading_axes_broadcast():
    # Two batches' sparse entries concatenated (the same (segment, cell) pairs twice) give the one-pass result.
    rng = np.random.default_rng(15)
    y, s, w = tied_data(rng, 2000)
    ids = rng.integers(0, 4, size=2000)
    cells = cu.uniform_cells(s, 64)

    def entries(sl):
        sums = cu.cell_sums(y[sl], s[sl], cells[sl], n_cells=64, segment_ids=ids[sl], n_segments=4,
                            sample_weight=w[sl])
        g, c = np.nonzero(sums.rows)
        return [g, c] + [getattr(sums, f)[g, c] for f in ("w", "wy", "ws", "w2v", "wabs", "rows")]

    a, b = entries(slice(0, 700)), entries(slice(700, None))
    both = [np.concatenate([x, z]) for x, z in zip(a, b)]
    split = cu.ecce_from_cell_entries(*both[:7], both[7], n_segments=4)
    whole = cu.ecce_from_cells(cu.cell_sums(y, s, cells, n_cells=64, segment_ids=ids, n_segments=4, sample_weight=w))
    for key in ("ecce_mad", "ecce_r", "sigma", "error_bound", "rows"):
        np.testing.assert_allclose(getattr(split, key), getattr(whole, key), rtol=1e-12, atol=1e-15, err_msg=key)
    # Leading axes: (replicates, segments, cells) reduce over cells only.
    stacked = cu.CellSums(*(np.stack([getattr(cu.cell_sums(y, s, cells, n_cells=64, segment_ids=ids, n_segments=4,
                                                             sample_weight=w), f)] * 3)
                            for f in ("w", "wy", "ws", "w2v", "wabs", "rows")))
    res = cu.ecce_from_cells(stacked)
    assert res.ecce_r.shape == (3, 4)
    np.testing.assert_allclose(res.ecce_r[2], whole.ecce_r, rtol=1e-15)


def test_uniform_cells_monotone_and_in_range():
    s = np.array([0.0, 0.1, 0.49999, 0.5, 0.99, 1.0])
    np.testing.assert_array_equal(cu.uniform_cells(s, 2), [0, 0, 0, 1, 1, 1])
    with pytest.raises(CalibcliError, match="n_cells is 0"):
        cu.uniform_cells(s, 0)


# --- the laws of sup|B| and of the range of B ---------------------------------------------------------------


@pytest.mark.parametrize("parts", [brownian._range_parts, brownian._sup_abs_parts])
def test_series_agree_where_both_converge(parts, monkeypatch):
    # Force each series to cover [0.9, 2.5] in turn: the small-x series (switch at 2.5) and the large-x
    # series (switch at 0.9) must give the same CDF and survival function there.
    x = np.linspace(0.9, 2.49, 60)
    monkeypatch.setattr(brownian, "_SWITCH", 2.5)
    cdf_small, sf_small = parts(x)
    monkeypatch.setattr(brownian, "_SWITCH", 0.9)
    cdf_large, sf_large = parts(x)
    np.testing.assert_allclose(cdf_small, cdf_large, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(sf_small, sf_large, rtol=1e-12, atol=1e-15)


def test_laws_have_their_known_moments():
    # E sup|B| = sqrt(pi/2); E R = 2 sqrt(2/pi), E R^2 = 4 log 2 (Feller 1951). Integrating the survival
    # functions over [0, 40] exercises both series over their whole range.
    x = np.linspace(0.0, 40.0, 400_001)
    sf_m = cu.sup_abs_brownian_sf(x)
    sf_r = cu.range_brownian_sf(x)
    assert trapezoid(sf_m, x) == pytest.approx(math.sqrt(math.pi / 2), rel=1e-9)
    assert trapezoid(sf_r, x) == pytest.approx(2 * math.sqrt(2 / math.pi), rel=1e-9)
    assert trapezoid(2 * x * sf_r, x) == pytest.approx(4 * math.log(2), rel=1e-9)
    # Distribution functions: monotone, between 0 and 1, cdf + sf = 1.
    for cdf, sf in ((cu.sup_abs_brownian_cdf(x), sf_m), (cu.range_brownian_cdf(x), sf_r)):
        assert np.all(np.diff(sf) <= 1e-16) and np.all((sf >= 0) & (sf <= 1))
        np.testing.assert_allclose(cdf + sf, 1.0, atol=1e-15)
    # The range is at least the largest |B|, so its tail is heavier.
    assert np.all(sf_r >= sf_m)


def test_tails_accurate_relative_to_tiny_values():
    # Tiny x: the first term of the small-x series alone (the next is smaller by exp(-pi^2 / x^2) < 1e-400).
    x = np.array([0.02, 0.05, 0.1])
    np.testing.assert_allclose(cu.range_brownian_cdf(x),
                               (8 / x**2 + 8 / math.pi**2) * np.exp(-math.pi**2 / (2 * x**2)), rtol=1e-13)
    np.testing.assert_allclose(cu.sup_abs_brownian_cdf(x),
                               4 / math.pi * np.exp(-math.pi**2 / (8 * x**2)), rtol=1e-13)
    # Huge x: P(R > x) ~ 8 P(N > x), P(sup|B| > x) ~ 4 P(N > x); the next terms are below 1e-40 relative.
    # P(N > x) from the continued fraction (Laplace), independent of the code's erfc.
    x = np.array([12.0, 20.0, 30.0, 37.0])

    def normal_sf(z):
        frac = z
        for k in range(200, 0, -1):
            frac = z + k / frac
        return np.exp(-z * z / 2) / math.sqrt(2 * math.pi) / frac

    np.testing.assert_allclose(cu.range_brownian_sf(x), 8 * normal_sf(x), rtol=1e-12)
    np.testing.assert_allclose(cu.sup_abs_brownian_sf(x), 4 * normal_sf(x), rtol=1e-12)
    assert cu.range_brownian_sf(40.0) == 0.0 and cu.sup_abs_brownian_sf(np.inf) == 0.0


def test_edge_values_and_shapes():
    sf = cu.range_brownian_sf(np.array([[-1.0, 0.0], [np.nan, np.inf]]))
    assert sf.shape == (2, 2)
    assert sf[0, 0] == 1.0 and sf[0, 1] == 1.0 and np.isnan(sf[1, 0]) and sf[1, 1] == 0.0
    assert isinstance(cu.sup_abs_brownian_sf(1.0), float)
    assert cu.range_brownian_cdf(0.0) == 0.0 and np.isnan(cu.sup_abs_brownian_cdf(np.nan))


def test_quantile_inverts_survival():
    p = np.array([0.5, 0.1, 0.05, 0.01, 1e-6, 1e-100, 1e-300])
    x = cu.range_brownian_isf(p)
    np.testing.assert_allclose(cu.range_brownian_sf(x), p, rtol=1e-12)
    assert cu.range_brownian_isf(1.0) == 0.0 and cu.range_brownian_isf(0.0) == np.inf


def test_laws_against_simulated_brownian_motion():
    # 4000 paths of a 1000-step random walk; the discrete maximum falls short of the continuous one by about
    # 0.5826 / sqrt(steps) per boundary (Siegmund's correction, added here). Monte Carlo standard error of a
    # proportion near 0.5: sqrt(0.25 / 4000) = 0.0079; we allow 4 standard errors.
    rng = np.random.default_rng(2024)
    paths, steps = 4000, 1000
    b = np.zeros((paths, steps + 1))
    np.cumsum(rng.standard_normal((paths, steps)) / math.sqrt(steps), axis=1, out=b[:, 1:])
    shift = 0.5826 / math.sqrt(steps)
    r = b.max(axis=1) - b.min(axis=1) + 2 * shift
    m = np.abs(b).max(axis=1) + shift
    for x in (1.0, 1.5, 2.0, 2.5, 3.0):
        for sample, law in ((r, cu.range_brownian_sf), (m, cu.sup_abs_brownian_sf)):
            p = float(law(x))
            se = math.sqrt(p * (1 - p) / paths)
            assert abs((sample > x).mean() - p) <= 4 * se + 1e-3, (x, law.__name__)


def test_size_on_calibrated_data():
    # 2000 calibrated samples of 300 rows each, all in one call as 2000 segments. The rejection rate at 0.05
    # has Monte Carlo standard error sqrt(0.05 * 0.95 / 2000) = 0.0049; allow 3 standard errors. (A longer
    # run at n = 400, 4000 samples, gave 0.047 for ECCE-R and 0.049 for ECCE-MAD.)
    rng = np.random.default_rng(99)
    reps, n = 2000, 300
    s = rng.uniform(0.05, 0.95, size=reps * n)
    y = (rng.uniform(size=s.size) < s).astype(np.int8)
    res = cu.ecce_segments(y, s, np.repeat(np.arange(reps), n).astype(np.uint16))
    se = math.sqrt(0.05 * 0.95 / reps)
    for p in (res.ecce_r_pvalue, res.ecce_mad_pvalue):
        assert abs((p <= 0.05).mean() - 0.05) <= 3 * se


def test_minimum_detectable_ecce():
    # Definition: q(alpha) + Phi^-1(power) with q the range law's upper quantile.
    from statistics import NormalDist

    q = float(cu.range_brownian_isf(0.05))
    assert cu.range_brownian_sf(q) == pytest.approx(0.05, rel=1e-12)
    assert cu.minimum_detectable_ecce_sigma(0.05, 0.8) == pytest.approx(q + NormalDist().inv_cdf(0.8), rel=1e-12)
    np.testing.assert_allclose(cu.minimum_detectable_ecce_sigma([0.05, 0.01], 0.9),
                               [cu.minimum_detectable_ecce_sigma(0.05, 0.9), cu.minimum_detectable_ecce_sigma(0.01, 0.9)])
    with pytest.raises(CalibcliError, match="strictly between 0 and 1"):
        cu.minimum_detectable_ecce_sigma(0.05, 1.0)
    # A constant miscalibration of that size is detected with at least the stated power: 1000 samples of
    # 1000 rows, each with y ~ Bernoulli(s + delta) and delta = MDE * sigma. Monte Carlo standard error of
    # the power near 0.8: 0.013; the bound is conservative, so the measured power should exceed 0.8 - 3 SE.
    rng = np.random.default_rng(3)
    reps, n = 1000, 1000
    s = rng.uniform(0.3, 0.7, size=reps * n)
    sigma = math.sqrt(np.mean(s * (1 - s)) / n)  # about the same in every sample
    delta = cu.minimum_detectable_ecce_sigma(0.05, 0.8) * sigma
    y = (rng.uniform(size=s.size) < s + delta).astype(np.int8)
    res = cu.ecce_segments(y, s, np.repeat(np.arange(reps), n).astype(np.uint16))
    power = (res.ecce_r_pvalue <= 0.05).mean()
    assert power >= 0.8 - 3 * math.sqrt(0.8 * 0.2 / reps)


def test_relative_percent_is_mcgrads_scale():
    # MCGrad: mce_relative = mce_sigma * global sigma / min(p, 1 - p) * 100.
    assert cu.relative_percent(4.0, global_sigma=0.002, prevalence=0.8) == pytest.approx(4.0 * 0.002 / 0.2 * 100)
    np.testing.assert_allclose(cu.relative_percent([1.0, 2.0], global_sigma=0.01, prevalence=0.1), [10.0, 20.0])
    assert math.isnan(cu.relative_percent(3.0, global_sigma=0.01, prevalence=0.0))


def test_the_normal_tail_of_the_brownian_laws_is_scipys_to_full_precision_without_importing_scipy():
    """The large-x series' normal tail is the C library's erfc, elementwise: within a few units in the last place
    of scipy's over the range the series meets (both within 1e-13 relative, deep in the tail too), and computing a
    p-value of both laws in a new process imports no scipy (its import cost a small ``ece`` a fifth of its time)."""
    import subprocess
    import sys

    from scipy.special import erfc

    z = np.linspace(0.0, 37.0, 20001)
    theirs, ours = erfc(z / math.sqrt(2.0)) / 2, brownian._normal_sf(z)
    normal = theirs > np.finfo(np.float64).tiny
    assert np.all(np.abs(ours[normal] - theirs[normal]) <= 1e-13 * theirs[normal])
    assert brownian._normal_sf(np.array([np.inf, -np.inf])).tolist() == [0.0, 1.0]
    assert np.isnan(brownian._normal_sf(np.array([np.nan])))[0]
    probe = (
        "import sys\n"
        "from calibcli.cumulative import brownian\n"
        "print(brownian.sup_abs_brownian_sf(3.2), brownian.range_brownian_sf(3.2))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[1] == "[]", out[1]
    sup, rng = (float(v) for v in out[0].split())
    assert sup == pytest.approx(brownian.sup_abs_brownian_sf(3.2), rel=1e-15)
    assert rng == pytest.approx(brownian.range_brownian_sf(3.2), rel=1e-15)
