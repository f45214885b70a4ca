"""Shared data of the regression tests: seeded heteroscedastic predictions of every kind."""

from __future__ import annotations

import numpy as np

from calibcli.regression.accumulator import RegressionAccumulator
from calibcli.regression.kinds import Prediction, RegressionOptions


def gaussian(n=3000, seed=0, scale=0.7):
    """Means, stds (overconfident by ``scale``) and targets."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, n)
    mu = np.sin(x)
    s = 0.2 + 0.3 * np.abs(x)
    y = mu + rng.normal(0, 1, n) * s
    return mu, s * scale, y


def report(kind, preds, y, kind_levels=(), w=None, row_index=None, **options):
    """The finished report of one accumulator over these rows."""
    o = RegressionOptions(**options)
    acc = RegressionAccumulator(Prediction(kind, tuple(kind_levels), o))
    row_index = np.arange(len(y)) if row_index is None else row_index
    acc.update(row_index, np.asarray(preds, dtype=float).reshape(len(y), -1), np.asarray(y, dtype=float), w)
    return acc.result()


def estimates(rep):
    return {k: m.estimate for k, m in rep.metrics.items()}
