"""Every group's ECCE at once (:func:`calibcli.cumulative.ecce.ecce_populations`) equals each group's alone, bit for
bit: its running sums are its own, and the statistics, sigma scales and p-values are elementwise."""

from __future__ import annotations

import dataclasses

import numpy as np

from calibcli.cumulative.ecce import ecce_populations


def _alone(y, z, w):
    return ecce_populations([(y, z, w)])[0]


def test_many_populations_at_once_equal_each_alone():
    rng = np.random.default_rng(11)
    populations = []
    for g in range(60):
        n = int(rng.integers(1, 400))
        z = np.round(rng.random(n), int(rng.integers(1, 4)))  # ties
        shift = rng.choice([0.0, 0.05, 0.3])  # calibrated, a little off, far off: p-values of every size
        y = (rng.random(n) < np.clip(z + shift, 0, 1)).astype(int)
        w = None if g % 3 else rng.gamma(1.0, 1.0, n)
        populations.append((y, z, w))
    populations.append((np.array([1, 1, 0]), np.array([1.0, 1.0, 0.0]), None))  # sigma 0: on the scale, 0 or inf
    populations.append((np.array([0, 1]), np.array([0.0, 1.0]), None))
    populations.append((np.array([1]), np.array([0.5]), None))  # one row
    together = ecce_populations(populations)
    assert len(together) == len(populations)
    pvalues = []
    for pop, got in zip(populations, together, strict=True):
        want = _alone(*pop)
        for field in dataclasses.fields(want):
            a, b = getattr(got, field.name), getattr(want, field.name)
            assert type(a) is type(b), field.name
            assert (a == b) or (a != a and b != b), (field.name, a, b)  # (NaN where NaN)
            if isinstance(a, float):
                assert np.signbit(a) == np.signbit(b)
        pvalues.append(got.ecce_r_pvalue)
    assert min(pvalues) < 1e-6 and max(pvalues) > 0.5  # both series of the p-values were reached
    assert ecce_populations([]) == []
