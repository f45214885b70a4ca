"""Every regression metric against the reference package that defines it, on shared seeded data
(uncertainty-toolbox, scoringrules, MAPIE), to 1e-9 relative where the definitions agree."""

from __future__ import annotations

import numpy as np
import pytest
from _data import estimates, gaussian, report
from scipy import stats

uct = pytest.importorskip("uncertainty_toolbox")


def close(a, b, rel=1e-9):
    assert a == pytest.approx(b, rel=rel, abs=1e-15)


@pytest.mark.parametrize("form", ["interval", "quantile"])
def test_gaussian_curve_summaries_equal_uncertainty_toolbox(form):
    mu, s, y = gaussian()
    got = estimates(report("gaussian", np.column_stack([mu, s]), y, curve_form=form))
    close(got["mace"], uct.mean_absolute_calibration_error(mu, s, y, prop_type=form))
    close(got["rmsce"], uct.root_mean_squared_calibration_error(mu, s, y, prop_type=form))
    close(got["miscalibration_area"], uct.miscalibration_area(mu, s, y, prop_type=form))


def test_gaussian_scores_equal_uncertainty_toolbox():
    mu, s, y = gaussian(seed=3)
    got = estimates(report("gaussian", np.column_stack([mu, s]), y))
    close(got["crps"], uct.crps_gaussian(mu, s, y))
    close(got["nll"], uct.nll_gaussian(mu, s, y))
    close(got["pinball"], uct.check_score(mu, s, y))
    close(got["interval_score_avg99"], uct.interval_score(mu, s, y))
    close(got["sharpness"], uct.sharpness(s))


def test_gaussian_crps_and_interval_score_equal_scoringrules():
    sr = pytest.importorskip("scoringrules")
    mu, s, y = gaussian(seed=4)
    got = estimates(report("gaussian", np.column_stack([mu, s]), y, levels=(0.8,)))
    close(got["crps"], float(np.mean(sr.crps_normal(y, mu, s))))
    half = stats.norm.ppf(0.9) * s
    close(got["interval_score_0.8"], float(np.mean(sr.interval_score(y, mu - half, mu + half, 0.2))))


@pytest.mark.parametrize("estimator", ["nrg", "fair"])
def test_ensemble_crps_equals_scoringrules(estimator):
    sr = pytest.importorskip("scoringrules")
    rng = np.random.default_rng(5)
    y = rng.normal(size=400)
    x = rng.normal(size=(400, 17)) * 1.3 + 0.2
    got = estimates(report("samples", x, y, crps_estimator=estimator))
    close(got["crps"], float(np.mean(sr.crps_ensemble(y, x, estimator=estimator))))


def test_interval_metrics_equal_mapie():
    mr = pytest.importorskip("mapie.metrics.regression")
    rng = np.random.default_rng(6)
    n = 999  # (a multiple of MAPIE's 3 bins: its bins and the equal-mass ones then hold the same rows)
    y = rng.normal(size=n)
    centre, half = rng.normal(size=n) * 0.1, rng.uniform(0.5, 2.5, n)
    lo, hi = centre - half, centre + half
    got = estimates(report("intervals", np.column_stack([lo, hi]), y, kind_levels=(0.9,), n_bins=3))
    pis = np.stack([lo, hi], axis=1)[:, :, None]
    close(got["picp_0.9"], float(mr.regression_coverage_score(y, pis)[0]))
    close(got["mpiw_0.9"], float(mr.regression_mean_width_score(pis)[0]))
    close(got["interval_score_0.9"], float(mr.regression_mwi_score(y, pis, confidence_level=0.9)))
    close(got["ssc_0.9"], float(mr.regression_ssc_score(y, pis, num_bins=3)[0]))


def test_pit_ks_equals_scipy_kstest():
    mu, s, y = gaussian(n=700, seed=7)
    rep = report("gaussian", np.column_stack([mu, s]), y)
    ref = stats.kstest(stats.norm.cdf((y - mu) / s), "uniform")
    close(rep.metrics["pit_ks"].estimate, ref.statistic)
    close(rep.metrics["pit_ks_pvalue"].estimate, ref.pvalue)


def test_ence_and_uce_by_their_definition_with_netcal_bins():
    """netcal (which needs PyTorch, not installed here) bins equal-width over the std: --binning equal-width
    follows it; the formula is Levi et al.'s, worked here from the bins."""
    mu, s, y = gaussian(n=1000, seed=8)
    got = estimates(report("gaussian", np.column_stack([mu, s]), y, binning="equal-width", n_bins=5))
    edges = np.linspace(s.min(), s.max(), 6)
    b = np.clip(np.digitize(s, edges[1:-1], right=False), 0, 4)
    ence = uce = 0.0
    for k in range(5):
        m = b == k
        rmv, rmse = np.sqrt(np.mean(s[m] ** 2)), np.sqrt(np.mean((y[m] - mu[m]) ** 2))
        ence += abs(rmv - rmse) / rmv / 5
        uce += m.mean() * abs(rmse**2 - rmv**2)
    close(got["ence"], ence)
    close(got["uce"], uce)
