"""Adjusted p-values and the MCE p-value (calibcli.audit.multitest): against statsmodels, NaN and tie conventions,
leading axes, and the family-wise size of the MCE and Holm gates by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from calibcli.cumulative import ecce as cu
from calibcli.core.errors import CalibcliError
from calibcli.audit.multitest import adjust_pvalues, benjamini_hochberg, holm, mce_pvalue

STATSMODELS = {"holm": "holm", "bh": "fdr_bh", "by": "fdr_by", "bonferroni": "bonferroni"}


def pvalue_families(rng):
    """Uniform, mixed (some signals) and heavily tied families, and the edge cases 0 and 1."""
    yield rng.uniform(size=40)
    yield np.r_[rng.uniform(size=30), rng.uniform(size=10) * 1e-4]
    yield np.round(rng.uniform(size=50), 1)  # many ties
    yield np.array([0.0, 1.0, 0.5, 0.0, 1e-300])
    yield np.array([0.03])


@pytest.mark.parametrize("method", sorted(STATSMODELS))
def test_equal_to_statsmodels(method):
    rng = np.random.default_rng(1)
    for p in pvalue_families(rng):
        expected = multipletests(p, method=STATSMODELS[method])[1]
        np.testing.assert_allclose(adjust_pvalues(p, method=method), expected, rtol=0, atol=1e-12)
    assert adjust_pvalues(np.array([0.2, 0.01]), method="none").tolist() == [0.2, 0.01]


def test_hand_worked_holm_and_bh():
    p = np.array([0.01, 0.04, 0.03, 0.20])
    # Holm: sorted 0.01, 0.03, 0.04, 0.20 times 4, 3, 2, 1 = 0.04, 0.09, 0.08 -> running max 0.09, 0.20.
    np.testing.assert_allclose(holm(p), [0.04, 0.09, 0.09, 0.20], atol=1e-15)
    # BH: times 4/1, 4/2, 4/3, 4/4 = 0.04, 0.06, 0.0533.., 0.20 -> running min from the top.
    np.testing.assert_allclose(benjamini_hochberg(p), [0.04, 0.0533333333333333, 0.0533333333333333, 0.20], atol=1e-15)


def test_ties_get_equal_adjusted_values_whatever_their_order():
    rng = np.random.default_rng(2)
    p = np.round(rng.uniform(size=60), 1)
    for method in ("holm", "bh", "by"):
        adj = adjust_pvalues(p, method=method)
        for v in np.unique(p):
            assert np.ptp(adj[p == v]) == 0.0
        perm = rng.permutation(len(p))
        np.testing.assert_array_equal(adjust_pvalues(p[perm], method=method), adj[perm])


def test_nan_is_not_tested():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=20) ** 2
    q = p.copy()
    q[[2, 11, 19]] = np.nan
    keep = ~np.isnan(q)
    for method in ("holm", "bh", "by", "bonferroni"):
        adj = adjust_pvalues(q, method=method)
        assert np.isnan(adj[~keep]).all()
        np.testing.assert_allclose(adj[keep], multipletests(q[keep], method=STATSMODELS[method])[1], atol=1e-12)
    assert np.isnan(adjust_pvalues(np.full(3, np.nan), method="holm")).all()
    assert adjust_pvalues(np.zeros(0), method="bh").shape == (0,)


def test_leading_axes_are_separate_families():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=(2, 3, 25)) ** 2
    p[1, 2, 5] = np.nan
    for method in ("holm", "bh"):
        adj = adjust_pvalues(p, method=method)
        assert adj.shape == p.shape
        for i in range(2):
            for j in range(3):
                row = p[i, j]
                keep = ~np.isnan(row)
                np.testing.assert_allclose(
                    adj[i, j][keep], multipletests(row[keep], method=STATSMODELS[method])[1], atol=1e-12
                )


def test_bad_input_is_refused():
    with pytest.raises(CalibcliError, match="a p-value is 1.5: expected values in"):
        adjust_pvalues([0.1, 1.5])
    with pytest.raises(CalibcliError, match="adjust method is 'fdr': expected one of holm, bh"):
        adjust_pvalues([0.1], method="fdr")
    with pytest.raises(CalibcliError, match="MCE p-value method is 'holm'"):
        mce_pvalue(3.0, 10, method="holm")
    with pytest.raises(CalibcliError, match="n_tested is"):
        mce_pvalue(3.0, 2.5)


def test_mce_pvalue_methods():
    x = np.array([1.0, 3.0, 4.5, 8.0])
    p1 = cu.range_brownian_sf(x)
    np.testing.assert_allclose(mce_pvalue(x, 200), np.minimum(1, 200 * p1), rtol=1e-15)
    # Sidak against the naive formula where it is accurate (p1 not tiny) ...
    np.testing.assert_allclose(mce_pvalue(x[:3], 200, method="sidak"), 1 - (1 - p1[:3]) ** 200, rtol=1e-10)
    # ... and against its expansion m p1 (1 - (m - 1) p1 / 2) where the naive one loses digits (p1 ~ 5e-15).
    assert mce_pvalue(8.0, 200, method="sidak") == pytest.approx(200 * p1[3] * (1 - 199 * p1[3] / 2), rel=1e-14)
    np.testing.assert_allclose(mce_pvalue(x, 200, method="none"), p1, rtol=1e-15)
    # Sidak keeps full relative precision when 1 - p1 rounds to 1.
    assert mce_pvalue(30.0, 1000, method="sidak") == pytest.approx(1000 * cu.range_brownian_sf(30.0), rel=1e-12)
    # One segment: no adjustment; none tested: NaN.
    assert mce_pvalue(3.0, 1) == pytest.approx(cu.range_brownian_sf(3.0), rel=1e-15)
    assert math.isnan(mce_pvalue(3.0, 0))
    # Bonferroni on the maximum = Holm's smallest adjusted p-value, so the two gates agree.
    ps = cu.range_brownian_sf(np.array([0.5, 2.0, 3.1, 4.2]))
    assert mce_pvalue(4.2, 4) == pytest.approx(holm(ps).min(), rel=1e-15)


def test_family_wise_size_with_overlapping_segments():
    # 300 calibrated data sets of 6000 rows; per data set 1 + 12 + 8 + 96 = 117 overlapping segments (the
    # whole population, two columns and their intersections), all data sets in one call as one partition per
    # column set. The family-wise false alarm rate of "MCE p <= 0.05" (Bonferroni), the same as Holm's "any
    # adjusted p <= 0.05", must stay within 5%: Monte Carlo standard error at 0.05 is sqrt(0.05*0.95/300)
    # = 0.0126, we allow 0.05 + 2 SE. MCGrad's unadjusted minimum p-value must be far above 5% here,
    # which shows that the check can fail. (benchmarks/studies/audit_size_power.py runs 200 segments with more replicates.)
    rng = np.random.default_rng(11)
    reps, n = 300, 6000
    s = rng.beta(2, 5, size=reps * n)
    y = (rng.uniform(size=s.size) < s).astype(np.int8)
    rep = np.repeat(np.arange(reps), n)
    a = rng.integers(0, 12, size=s.size)
    b = rng.integers(0, 8, size=s.size)
    parts = [rep, rep * 12 + a, rep * 8 + b, rep * 96 + a * 8 + b]
    res = cu.ecce_segments(y, s, [p.astype(np.uint32) for p in parts])
    m = 1 + 12 + 8 + 96
    sig = np.concatenate([res.ecce_r_sigma[res.partition == k].reshape(reps, -1) for k in range(4)], axis=1)
    pv = np.concatenate([res.ecce_r_pvalue[res.partition == k].reshape(reps, -1) for k in range(4)], axis=1)
    assert sig.shape == (reps, m)
    mce = mce_pvalue(sig.max(axis=1), m)
    any_holm = (adjust_pvalues(pv, method="holm") <= 0.05).any(axis=1)
    np.testing.assert_array_equal(mce <= 0.05, any_holm)
    se = math.sqrt(0.05 * 0.95 / reps)
    assert (mce <= 0.05).mean() <= 0.05 + 2 * se
    assert (mce_pvalue(sig.max(axis=1), m, method="none") <= 0.05).mean() > 0.5
