"""T-Cal's binary sweep with weights spanning many orders of magnitude (issue 33): the prefix sums are compensated
(calibcli.tcal.scalar.compensated_prefix), so each level's statistic is a brute-force direct sum's (math.fsum per
bin) within the tolerance rule, and the compiled sweep gives its NumPy reference's numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _tolerance import assert_within_rule

from calibcli.core.binning import uniform_bin_index
from calibcli.tcal.scalar import (
    SortedScalarEngine,
    _positives,
    _uniforms,
    compensated_prefix,
    interval_sums,
    sweep,
)

LEVELS = [2**b for b in range(1, 13)]


def _brute(z, y, w, m: int) -> float:
    """T_m summed bin by bin from the rows (each sum correctly rounded): sum_b ((sum w U)^2 - sum w^2 U^2) / W_b / W."""
    idx = uniform_bin_index(z, m)
    terms = []
    for b in np.unique(idx):
        at = idx == b
        ww, u = w[at], y[at] - z[at]
        weight = math.fsum(ww)
        if weight > 0:
            terms.append((math.fsum(ww * u) ** 2 - math.fsum(ww * ww * u * u)) / weight)
    return math.fsum(terms) / math.fsum(w)


def _data(n: int, tiny: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < z**1.3).astype(np.float64)
    w = np.ones(n)
    w[rng.permutation(n)[: n // 10]] = tiny
    return z, y, w


def _by_partition(engine, values):
    """Per distinct partition, the value of its first requested level."""
    return np.array([values[engine.level_of.index(j)] for j in range(engine.n_parts)])


@pytest.mark.parametrize("tiny", [1e-16, 1e-30, 1e-300, 0.0])
def test_the_statistics_are_the_direct_sums_whatever_the_weights_scale(tiny):
    z, y, w = _data(3000, tiny)
    engine = SortedScalarEngine(z, y, w, LEVELS)
    assert engine.compensated == (tiny > 0)
    want = _by_partition(engine, [_brute(z, y, w, m) for m in LEVELS])
    assert_within_rule(engine.observed(), want)
    # the resampled labels too: the sweep's draws, made again in NumPy, summed directly
    keys = np.random.default_rng(3).integers(0, 2**64 - 1, size=2, dtype=np.uint64, endpoint=True)
    uniform = np.empty((2, engine.n))
    _uniforms(keys, 0, engine.n, uniform)
    drawn = np.empty((2, engine.n))
    drawn[:, engine.order] = (uniform < engine.z).astype(np.float64)  # labels back in input order
    got = engine.statistics_of(drawn)
    for r in range(2):
        assert_within_rule(got[r], _by_partition(engine, [_brute(z, drawn[r], w, m) for m in LEVELS]))


@pytest.mark.parametrize("tiny", [1e-16, 1e-300])
def test_the_compiled_sweep_equals_numpys_with_tiny_weights(tiny):
    z, y, w = _data(70_001, tiny, seed=5)  # three blocks of 2^15 points: the carries and kept prefixes compensated
    levels = [2**b for b in range(1, 30)]  # (as the adaptive test at this n: bins of two points, some all tiny)
    engine = SortedScalarEngine(z, y, w, levels)
    assert engine.compensated  # (ordinary weights keep the plain sums: test_tcal_kernel.py)
    out = {}
    for compiled in (True, False):
        engine.compiled = compiled
        out[compiled] = sweep([engine], [(np.random.default_rng(s), rows) for s, rows in [(1, 3), (2, 2)]])[0]
    assert np.isfinite(out[True]).all()
    assert_within_rule(out[True], out[False])
    zeroed = SortedScalarEngine(z, y, np.where(w == 1.0, 1.0, 0.0), levels)  # the same draws, those rows weighing 0
    zeroed.compiled = True
    assert_within_rule(out[True], sweep([zeroed], [(np.random.default_rng(s), rows) for s, rows in [(1, 3), (2, 2)]])[0])


def test_compensated_interval_sums_keep_the_digits_plain_prefix_sums_cancel():
    x = np.tile([1.0, 1e-16, 1e-16, 1.0], 500)
    start, end = np.arange(1, 2000, 4), np.arange(3, 2001, 4)  # the pairs of 1e-16
    assert_within_rule(interval_sums(compensated_prefix(x), start, end), np.full(len(start), 2e-16))
    plain = np.concatenate([[0.0], np.cumsum(x)])
    assert not np.allclose(plain[end] - plain[start], 2e-16, rtol=1e-3, atol=0)  # what the refusal was about


def test_the_labels_compared_as_integers_are_those_of_the_uniforms():
    """NumPy's sweep labels a point ``bits < ceil(z 2^32)`` (integers, as the compiled loop does): the labels
    ``bits / 2^32 < z`` of the uniforms, at the edges too (z = 0, 1, multiples of 2^-32 and their neighbours), for
    blocks of either parity."""
    rng = np.random.default_rng(11)
    edges = [0.0, 1.0, 0.5, 2.0**-32, 3 * 2.0**-32, np.nextafter(2.0**-32, 0), np.nextafter(0.5, 1), 1 - 2.0**-33]
    z = np.sort(np.concatenate([rng.random(4001), edges]))
    thresholds = np.ceil(z * 2.0**32).astype(np.int64)
    keys = rng.integers(0, 2**64 - 1, size=5, dtype=np.uint64, endpoint=True)
    for a, b in [(0, len(z)), (0, len(z) - 1), (2, 7), (4000, len(z))]:
        uniform = np.empty((len(keys), b - a))
        _uniforms(keys, a, b, uniform)
        got = np.empty((len(keys), b - a), dtype=bool)
        _positives(keys, a, b, thresholds, got)
        np.testing.assert_array_equal(got, uniform < z[a:b])
