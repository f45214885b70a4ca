"""Per-bin binomial intervals (calibcli.diagram.bands): against statsmodels' proportion_confint, edge bins, weighted bins
by Kish's effective sample size, and coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from calibcli.diagram.bands import binomial_band, clopper_pearson_interval, wilson_interval
from calibcli.core.errors import CalibcliError

STATSMODELS = {"wilson": "wilson", "clopper-pearson": "beta"}


def counts():
    n = np.array([1, 1, 2, 3, 10, 10, 10, 37, 100, 1000, 100_000])
    k = np.array([0, 1, 1, 3, 0, 4, 10, 36, 50, 3, 99_990])
    return k, n


@pytest.mark.parametrize("method", sorted(STATSMODELS))
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.32])
def test_equal_to_statsmodels(method, alpha):
    k, n = counts()
    band = binomial_band(k, n, method=method, alpha=alpha)
    lower, upper = proportion_confint(k, n, alpha=alpha, method=STATSMODELS[method])
    np.testing.assert_allclose(band.lower, lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.upper, upper, rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.proportion, k / n)
    np.testing.assert_array_equal(band.n_eff, n)
    assert band.method == method and band.alpha == alpha


def test_edge_bins():
    # k = 0 and k = n: the exact interval reaches 0 and 1 and its other end is (alpha/2)^(1/n) from there.
    lo, hi = clopper_pearson_interval([0, 5], [5, 5], alpha=0.05)
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert hi[0] == pytest.approx(1 - 0.025 ** (1 / 5), rel=1e-12)
    assert lo[1] == pytest.approx(0.025 ** (1 / 5), rel=1e-12)
    lo, hi = wilson_interval([0, 5], [5, 5])
    assert lo[0] == 0.0 and hi[1] == 1.0
    # Empty bins: NaN, not an error.
    band = binomial_band([0.0, 2.0], [0.0, 4.0], [0.0, 4.0], method="clopper-pearson")
    assert np.isnan(band.lower[0]) and np.isnan(band.upper[0]) and np.isnan(band.proportion[0])
    assert band.lower[1] < 0.5 < band.upper[1]


def test_exact_interval_nests_in_alpha_and_holds_the_estimate():
    k, n = counts()
    lo95, hi95 = clopper_pearson_interval(k, n, alpha=0.05)
    lo99, hi99 = clopper_pearson_interval(k, n, alpha=0.01)
    assert np.all(lo99 <= lo95) and np.all(hi95 <= hi99)
    assert np.all((lo95 <= k / n) & (k / n <= hi95))


def test_weighted_bins_use_kish_effective_size():
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 4.0, size=(6, 40))
    y = (rng.uniform(size=w.shape) < 0.3).astype(float)
    swy, sw, sw2 = (w * y).sum(1), w.sum(1), (w * w).sum(1)
    for method in STATSMODELS:
        band = binomial_band(swy, sw, sw2, method=method)
        n_eff = sw**2 / sw2
        p = swy / sw
        lower, upper = proportion_confint(p * n_eff, n_eff, alpha=0.05, method=STATSMODELS[method])
        np.testing.assert_allclose(band.n_eff, n_eff, rtol=1e-15)
        np.testing.assert_allclose(band.lower, lower, atol=1e-12)
        np.testing.assert_allclose(band.upper, upper, atol=1e-12)
        assert np.all(band.n_eff < 40)  # unequal weights: fewer effective rows than rows
    # Unit weights give the unweighted interval exactly; constant weights are scale-free.
    counts_band = binomial_band([3.0], [10.0], method="clopper-pearson")
    unit = binomial_band([3.0], [10.0], [10.0], method="clopper-pearson")
    scaled = binomial_band([7.5], [25.0], [62.5], method="clopper-pearson")  # weights 2.5
    np.testing.assert_allclose(unit.lower, counts_band.lower, rtol=1e-13)
    np.testing.assert_allclose(scaled.upper, counts_band.upper, rtol=1e-13)


def test_leading_axes_broadcast():
    k = np.array([[0, 3, 5], [1, 2, 9]])
    n = np.array([10, 10, 10])
    band = binomial_band(k, n, method="wilson")
    assert band.lower.shape == (2, 3)
    lower, _ = proportion_confint(k.ravel(), np.tile(n, 2), method="wilson")
    np.testing.assert_allclose(band.lower.ravel(), lower, atol=1e-12)


def test_coverage_by_simulation():
    # 20,000 bins of 15 rows at true rate 0.1: Clopper-Pearson covers at least 95% for every rate; Wilson
    # is close to nominal on average. Monte Carlo standard error of a coverage near 0.95: 0.0015.
    rng = np.random.default_rng(1)
    bins, n, p = 20_000, 15, 0.1
    k = rng.binomial(n, p, size=bins)
    se = math.sqrt(0.95 * 0.05 / bins)
    lo, hi = clopper_pearson_interval(k, np.full(bins, n))
    assert ((lo <= p) & (p <= hi)).mean() >= 0.95 - 3 * se
    lo, hi = wilson_interval(k, np.full(bins, n))
    assert abs(((lo <= p) & (p <= hi)).mean() - 0.95) <= 0.03  # Brown-Cai-DasGupta: within about 3% at n = 15


@pytest.mark.parametrize("call, message", [
    (lambda: binomial_band([1], [2], method="bootstrap"), "band method is 'bootstrap': expected one of wilson"),
    (lambda: binomial_band([1], [2], alpha=1.5), "alpha is 1.5: expected a number strictly between 0 and 1"),
    (lambda: wilson_interval([3], [2]), "bin 0 has 3 successes out of 2 trials"),
    (lambda: clopper_pearson_interval([1], [-1]), "bin 0 has 1 successes out of -1 trials"),
])
def test_bad_input_is_refused(call, message):
    with pytest.raises(CalibcliError) as err:
        call()
    assert message in str(err.value)
