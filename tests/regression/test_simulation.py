"""Statistical claims checked by seeded simulation (small versions; Monte Carlo error stated in each)."""

from __future__ import annotations

import numpy as np

from calibcli.regression.library import regression_metrics


def test_pit_ks_pvalue_has_its_size_on_calibrated_predictions():
    """400 calibrated Gaussian datasets of 150 rows: the test rejects at alpha 0.05 in 5% of them (Monte Carlo sd
    0.011; the bound is 3.5 sd)."""
    rng = np.random.default_rng(2026)
    rejected = 0
    for _ in range(400):
        mu = rng.normal(size=150)
        s = rng.uniform(0.5, 2.0, 150)
        y = mu + s * rng.normal(size=150)
        rejected += regression_metrics(y, mean=mu, std=s)["pit_ks_pvalue"].estimate < 0.05
    assert abs(rejected / 400 - 0.05) < 0.038


def test_bootstrap_interval_of_the_coverage_covers_the_true_coverage():
    """120 datasets of 400 rows whose 90% intervals truly cover 90%: the 95% percentile interval of picp_0.9 holds
    0.9 in about 95% of them (Monte Carlo sd 0.02; the bound allows 3.5 sd below)."""
    rng = np.random.default_rng(34)
    held = 0
    for k in range(120):
        mu = rng.normal(size=400)
        s = rng.uniform(0.5, 2.0, 400)
        y = mu + s * rng.normal(size=400)
        m = regression_metrics(y, mean=mu, std=s, n_boot=200, seed=k)["picp_0.9"]
        held += m.ci_low <= 0.9 <= m.ci_high
    assert held / 120 > 0.95 - 0.07
