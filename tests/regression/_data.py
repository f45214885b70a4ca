"""Shared data of the regression tests: seeded heteroscedastic predictions of every kind, and the check that bad
input is refused."""

from __future__ import annotations

import numpy as np
from _cli import run

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


def assert_refused(tmp_path, text, options, message):
    """``calibcli regression`` on a CSV of ``text`` with ``options`` exits 2 with the one line ``Error: message``
    (``{p}`` in it: the file's path) and writes no report."""
    path = tmp_path / "in.csv"
    path.write_text(text)
    out = tmp_path / "report.json"
    r = run("regression", path, *options, "--n-boot", "0", "--output", out)
    assert r.exit_code == 2, r.stderr
    assert r.stderr == "Error: " + message.format(p=path) + "\n", r.stderr
    assert not out.exists()
