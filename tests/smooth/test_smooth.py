"""SmoothECE (SPEC section 3; seed 003) against a brute-force evaluation of the definition.

The reference ``brute_smece`` below sums the reflected Gaussian kernel directly over the data
(``K_s(t, z) = sum_k [phi_s(t - z - 2k) + phi_s(t + z - 2k)]`` with every reflection that matters),
with no grid for the data, and integrates ``|r_s|`` over t on a fine mesh (uniform over [0, 1] plus
thousands of points within 12 sigma of every prediction), exactly for the piecewise-linear
interpolant. The fixed point reference is bisection on that brute-force ``smECE_s``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.core.errors import CalibcliError
from calibcli.smooth.grid import FIXED_POINT_TOL
from calibcli.smooth.estimator import SmoothCurve, SmoothECEResult, smece_at_sigma, smooth_curve, smooth_ece

ACCURACY = 1e-5  # SPEC 3: within 1e-5 absolute of the brute-force value


# ----------------------------------------------------------------------------------------------
# Brute-force reference
# ----------------------------------------------------------------------------------------------


def brute_kernel(t: np.ndarray, z: float, s: float) -> np.ndarray:
    """Reflected Gaussian kernel by direct summation over enough images of z."""
    reach = int(math.ceil((1 + 40 * s) / 2)) + 1
    out = np.zeros_like(t)
    for k in range(-reach, reach + 1):
        for d in (t - z - 2 * k, t + z - 2 * k):
            out += np.exp(-0.5 * (d / s) ** 2)
    return out / (s * math.sqrt(2 * math.pi))


def brute_mesh(z: np.ndarray, s: float) -> np.ndarray:
    parts = [np.linspace(0.0, 1.0, 20001)]
    if s < 0.05:
        for zi in np.unique(z):
            parts.append(np.clip(np.linspace(zi - 12 * s, zi + 12 * s, 4001), 0.0, 1.0))
    return np.unique(np.concatenate(parts))


def brute_residual(t, y, z, s, w=None):
    y = np.asarray(y, dtype=float)
    z = np.asarray(z, dtype=float)
    w = np.ones_like(z) if w is None else np.asarray(w, dtype=float)
    c = w * (y - z) / w.sum()
    atoms, inverse = np.unique(z, return_inverse=True)
    mass = np.bincount(inverse, weights=c)
    r = np.zeros_like(t)
    for zi, ci in zip(atoms, mass):
        r += ci * brute_kernel(t, zi, s)
    return r


def brute_smece(y, z, s, w=None) -> float:
    t = brute_mesh(np.asarray(z, dtype=float), s)
    r = brute_residual(t, y, z, s, w)
    a, b = r[:-1], r[1:]
    total = np.abs(a) + np.abs(b)
    cross = a * b < 0
    seg = total.copy()
    seg[cross] = (a[cross] ** 2 + b[cross] ** 2) / total[cross]
    return float((seg * np.diff(t)).sum() / 2)


def brute_fixed_point(y, z, w=None, iterations: int = 24) -> float:
    """Bisection on the brute-force smECE_s - s over [|mean residual|, mean |residual|]."""
    y = np.asarray(y, dtype=float)
    z = np.asarray(z, dtype=float)
    wt = np.ones_like(z) if w is None else np.asarray(w, dtype=float)
    lo = abs(np.sum(wt * (y - z))) / wt.sum()
    hi = np.sum(wt * np.abs(y - z)) / wt.sum()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if brute_smece(y, z, mid, w) > mid:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# ----------------------------------------------------------------------------------------------
# Data sets
# ----------------------------------------------------------------------------------------------


def _data(name: str):
    rng = np.random.default_rng(sum(map(ord, name)))
    if name == "calibrated":
        z = rng.random(12)
        return (rng.random(12) < z).astype(int), z
    if name == "overconfident":
        z = rng.random(12)
        return (rng.random(12) < 0.5 + 0.4 * (z - 0.5)).astype(int), z
    if name == "ends":  # predictions at exactly 0 and 1, right and wrong
        return np.array([0, 1, 1, 0, 1, 0, 1, 1]), np.array([0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 0.2, 0.97])
    if name == "constant":
        return np.array([1, 0, 0, 1, 1, 0, 1]), np.full(7, 0.3)
    if name == "single":
        return np.array([1]), np.array([0.3])
    if name == "tiny":  # nearly perfect, confident predictions
        y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
        return y, np.where(y == 1, 1 - 2e-4, 3e-4) + np.linspace(0, 1e-4, 8)
    if name == "huge":  # nearly always wrong
        y = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1])
        return y, np.where(y == 1, 0.04, 0.93) + np.linspace(0, 0.02, 9)
    raise KeyError(name)


DATASETS = ["calibrated", "overconfident", "ends", "constant", "single", "tiny", "huge"]


# ----------------------------------------------------------------------------------------------
# Accuracy against the brute force
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATASETS)
def test_smece_at_sigma_matches_brute_force(name):
    y, z = _data(name)
    for s in (1e-4, 0.004, 0.03, 0.2, 1.5):
        assert smece_at_sigma(y, z, sigma=s) == pytest.approx(brute_smece(y, z, s), abs=ACCURACY), s


def test_smece_at_sigma_matches_brute_force_with_weights():
    y, z = _data("overconfident")
    w = np.linspace(0.1, 3.0, len(z))
    for s in (0.01, 0.08):
        assert smece_at_sigma(y, z, sigma=s, sample_weight=w) == pytest.approx(
            brute_smece(y, z, s, w), abs=ACCURACY
        )


@pytest.mark.parametrize("name", ["calibrated", "overconfident", "ends", "tiny", "huge"])
def test_fixed_point_matches_brute_force_bisection(name):
    y, z = _data(name)
    result = smooth_ece(y, z)
    assert result.sigma_is_fixed_point
    assert abs(result.sigma - result.smece) <= FIXED_POINT_TOL
    assert result.fixed_point_gap <= FIXED_POINT_TOL
    assert result.smece == pytest.approx(brute_fixed_point(y, z), abs=ACCURACY)


def test_fixed_point_with_weights_matches_brute_force():
    y, z = _data("calibrated")
    w = np.arange(1, len(z) + 1, dtype=float)
    assert smooth_ece(y, z, sample_weight=w).smece == pytest.approx(brute_fixed_point(y, z, w), abs=ACCURACY)


def test_larger_sample_matches_brute_force_at_its_fixed_point():
    rng = np.random.default_rng(7)
    z = np.round(rng.beta(2, 5, 300), 3)  # repeated values, as from a real model
    y = (rng.random(300) < z**0.7).astype(int)
    result = smooth_ece(y, z)
    assert brute_smece(y, z, result.sigma) == pytest.approx(result.smece, abs=ACCURACY)


# ----------------------------------------------------------------------------------------------
# Exact cases
# ----------------------------------------------------------------------------------------------


def test_single_prediction_and_constant_predictor_are_exact():
    # The kernel integrates to 1 for every z: one atom keeps its whole mass at every bandwidth.
    for s in (1e-3, 0.1, 10.0):
        assert smece_at_sigma([1], [0.3], sigma=s) == pytest.approx(0.7, abs=1e-12)
        assert smece_at_sigma([0, 1, 1, 1], [0.25] * 4, sigma=s) == pytest.approx(0.5, abs=1e-12)
    assert smooth_ece([1], [0.3]).sigma == pytest.approx(0.7, abs=1e-12)
    assert smooth_ece([0, 1, 1, 1], [0.25] * 4).smece == pytest.approx(0.5, abs=1e-12)


def test_prediction_at_an_end_carries_full_weight():
    # relplot 1.0.3 counts a prediction at exactly 0 or 1 half; SPEC 3 requires full weight.
    for s in (0.01, 0.3):
        assert smece_at_sigma([1], [0.0], sigma=s) == pytest.approx(1.0, abs=1e-12)
        assert smece_at_sigma([0], [1.0], sigma=s) == pytest.approx(1.0, abs=1e-12)


def test_perfectly_wrong_predictor_scores_one():
    y = np.array([0, 1, 1, 0, 1, 0])
    z = 1.0 - y
    for s in (0.01, 0.03, 0.05):  # the kernels at 0 and 1 overlap by < 1e-20
        assert smece_at_sigma(y, z, sigma=s) == pytest.approx(1.0, abs=1e-12)
    assert smece_at_sigma(y, z, sigma=0.1) < 1.0 - 1e-7
    # All labels 1, all predictions 0: smECE_s = 1 for every s, so s* = 1.
    result = smooth_ece(np.ones(5, dtype=int), np.zeros(5))
    assert result.smece == pytest.approx(1.0, abs=1e-9)
    assert result.sigma == pytest.approx(1.0, abs=1e-9)


def test_balanced_perfectly_wrong_predictor_fixed_point():
    # Residuals +1 at z = 0 and -1 at z = 1 cancel once the kernel is wide enough, so smECE_s falls
    # from 1 and the fixed point is below 1 (brute force: 0.45609...). relplot 1.0.3 reports 1.0 here
    # because its kernel is truncated at +-0.5 and the two ends never meet.
    y = np.array([0, 1, 1, 0, 1, 0])
    result = smooth_ece(y, 1.0 - y)
    assert result.smece == pytest.approx(brute_fixed_point(y, 1.0 - y), abs=ACCURACY)
    assert 0.45 < result.smece < 0.46


def test_perfect_predictor_scores_zero():
    y = np.array([0, 1, 1, 0])
    result = smooth_ece(y, y.astype(float))
    assert result.smece == 0.0 and result.sigma == 0.0


def test_calibrated_within_each_atom_scores_zero():
    # z = 0.5 with half positives: the residual cancels at the atom, smECE_s = 0 for every s.
    result = smooth_ece([0, 1, 0, 1], [0.5] * 4)
    assert result.smece == pytest.approx(0.0, abs=1e-12)


def test_uniform_distribution_is_invariant():
    # Predictions spread uniformly (ends included) give a flat density, with no dip at 0 or 1.
    z = np.linspace(0.0, 1.0, 20001)
    y = (z > 0.5).astype(int)
    curve = smooth_curve(y, z, sigma=0.05, n_points=101)
    assert np.allclose(curve.density, 1.0, atol=1e-3)


# ----------------------------------------------------------------------------------------------
# Properties
# ----------------------------------------------------------------------------------------------


def test_non_increasing_in_sigma():
    rng = np.random.default_rng(3)
    z = rng.random(500)
    y = (rng.random(500) < z**2).astype(int)
    values = [smece_at_sigma(y, z, sigma=s) for s in np.geomspace(1e-4, 3.0, 40)]
    assert np.all(np.diff(values) <= 1e-9)


def test_invariant_to_row_order():
    rng = np.random.default_rng(4)
    z = rng.random(400)
    y = (rng.random(400) < z).astype(int)
    w = rng.random(400)
    perm = rng.permutation(400)
    a = smooth_ece(y, z, sample_weight=w)
    b = smooth_ece(y[perm], z[perm], sample_weight=w[perm])
    assert a.smece == pytest.approx(b.smece, abs=1e-12)
    assert smece_at_sigma(y, z, sigma=0.02) == pytest.approx(smece_at_sigma(y[perm], z[perm], sigma=0.02), abs=1e-12)


def test_integer_weights_equal_duplicated_rows():
    rng = np.random.default_rng(5)
    z = rng.random(200)
    y = (rng.random(200) < z**1.5).astype(int)
    counts = rng.integers(0, 4, 200)
    weighted = smooth_ece(y, z, sample_weight=counts)
    duplicated = smooth_ece(np.repeat(y, counts), np.repeat(z, counts))
    assert weighted.smece == pytest.approx(duplicated.smece, abs=1e-10)
    assert weighted.weight_total == counts.sum()


def test_calibrated_predictor_shrinks_with_n():
    rng = np.random.default_rng(6)
    values = []
    for n in (1_000, 10_000, 100_000):
        z = rng.random(n)
        y = (rng.random(n) < z).astype(int)
        values.append(smooth_ece(y, z).smece)
    assert values[0] > values[1] > values[2]
    assert values[2] < 0.02


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.floats(0.0, 1.0, allow_nan=False), st.floats(0.01, 5.0)),
        min_size=1,
        max_size=30,
    ),
    st.floats(1e-3, 2.0),
)
def test_bounds_hypothesis(rows, sigma):
    # |mean residual| <= smECE_s <= mean |residual| for every s; the fixed point lies in between too.
    y, z, w = (np.array(col) for col in zip(*rows))
    u = y - z
    lo = abs(np.sum(w * u)) / w.sum()
    hi = np.sum(w * np.abs(u)) / w.sum()
    value = smece_at_sigma(y, z, sigma=sigma, sample_weight=w)
    assert lo - 1e-9 <= value <= hi + 1e-9
    result = smooth_ece(y, z, sample_weight=w)
    assert lo - 1e-9 <= result.smece <= hi + 1e-9
    assert result.fixed_point_gap <= FIXED_POINT_TOL


# ----------------------------------------------------------------------------------------------
# Bootstrap and curve
# ----------------------------------------------------------------------------------------------


def _typical(n=3000, seed=8):
    rng = np.random.default_rng(seed)
    z = rng.beta(2, 2, n)
    y = (rng.random(n) < 0.5 + 0.7 * (z - 0.5)).astype(int)  # overconfident
    return y, z


def test_bootstrap_reproducible_and_contains_estimate():
    y, z = _typical()
    a = smooth_ece(y, z, n_boot=200, rng=np.random.default_rng(11))
    b = smooth_ece(y, z, n_boot=200, rng=np.random.default_rng(11))
    c = smooth_ece(y, z, n_boot=200, rng=np.random.default_rng(12))
    assert isinstance(a, SmoothECEResult)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert np.array_equal(a.replicates, b.replicates)
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.ci_low < a.smece < a.ci_high
    assert a.n_boot == 200 and len(a.replicates) == 200 and a.alpha == 0.05
    # The bandwidth is re-solved on every resample: each replicate is its own fixed point, so
    # replicates differ from smECE at the full-data s*.
    fixed_sigma = smooth_ece(y, z, sigma=a.sigma, n_boot=200, rng=np.random.default_rng(11))
    assert not np.allclose(fixed_sigma.replicates, a.replicates)
    assert fixed_sigma.ci_low < fixed_sigma.smece < fixed_sigma.ci_high


def test_no_bootstrap_gives_no_interval():
    y, z = _typical(500)
    result = smooth_ece(y, z)
    assert result.ci_low is None and result.ci_high is None and result.replicates is None


def test_bootstrap_with_weights_is_reproducible():
    y, z = _typical(800)
    w = np.random.default_rng(1).random(800)
    a = smooth_ece(y, z, sample_weight=w, n_boot=50, rng=np.random.default_rng(3))
    b = smooth_ece(y, z, sample_weight=w, n_boot=50, rng=3)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert a.ci_low < a.smece < a.ci_high


def test_curve_matches_brute_force_kernel_regression():
    y, z = _data("overconfident")
    curve = smooth_curve(y, z, n_points=11)
    assert isinstance(curve, SmoothCurve)
    assert curve.sigma == pytest.approx(smooth_ece(y, z).sigma, abs=1e-12)
    t = curve.t
    num = sum(yi * brute_kernel(t, zi, curve.sigma) for yi, zi in zip(y, z))
    den = sum(brute_kernel(t, zi, curve.sigma) for zi in z)
    assert np.allclose(curve.density, den / len(z), atol=1e-4 * den.max() / len(z))
    assert np.allclose(curve.yhat, num / den, atol=1e-4)


def test_curve_density_integrates_to_one_even_at_the_ends():
    curve = smooth_curve([1, 0, 1], [0.0, 1.0, 1.0], sigma=0.05, n_points=4001)
    assert np.trapezoid(curve.density, curve.t) == pytest.approx(1.0, abs=1e-5)


def test_curve_band_and_interval_agree_with_smooth_ece():
    y, z = _typical(2000)
    curve = smooth_curve(y, z, n_points=51, n_boot=100, rng=np.random.default_rng(5))
    result = smooth_ece(y, z, n_boot=100, rng=np.random.default_rng(5))
    assert (curve.ci_low, curve.ci_high) == (result.ci_low, result.ci_high)
    assert curve.smece == pytest.approx(result.smece, abs=1e-12)
    inside = (curve.band_low <= curve.yhat) & (curve.yhat <= curve.band_high)
    assert inside.mean() > 0.9
    assert np.all(curve.band_high - curve.band_low < 0.3)


def test_curve_band_all_points_at_once_is_each_points_nan_quantile():
    # the band's percentiles are taken for every curve point at once (only points with a NaN replicate one by one):
    # the same doubles as numpy's nanquantile of each point's replicates, NaN where no replicate has a value
    import warnings

    from calibcli.core.resampling import percentile_intervals

    rng = np.random.default_rng(6)
    curves = rng.uniform(size=(1000, 40))
    curves[rng.uniform(size=curves.shape) < 0.05 * (np.arange(40) % 3 == 0)] = np.nan
    curves[:, 7] = np.nan  # far from every prediction: no replicate has a value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.nanquantile(curves, [0.025, 0.975], axis=0)
    low, high = percentile_intervals(np.moveaxis(curves, 0, -1), 0.05)
    np.testing.assert_array_equal(low, want[0], strict=True)
    np.testing.assert_array_equal(high, want[1], strict=True)
    assert np.isnan(low[7]) and np.isnan(high[7]) and np.isfinite(np.delete(low, 7)).all()


# ----------------------------------------------------------------------------------------------
# Input checks
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.0, -0.1, float("nan"), float("inf")])
def test_bad_sigma_is_rejected(sigma):
    with pytest.raises(CalibcliError, match="sigma"):
        smece_at_sigma([0, 1], [0.2, 0.7], sigma=sigma)
    with pytest.raises(CalibcliError, match="sigma"):
        smooth_ece([0, 1], [0.2, 0.7], sigma=sigma)


def test_bad_bootstrap_options_are_rejected():
    with pytest.raises(CalibcliError, match="alpha"):
        smooth_ece([0, 1], [0.2, 0.7], n_boot=10, alpha=1.5)
    with pytest.raises(CalibcliError, match="n_boot"):
        smooth_ece([0, 1], [0.2, 0.7], n_boot=-1)


def test_bad_input_is_rejected():
    with pytest.raises(CalibcliError, match="outside"):
        smooth_ece([0, 1], [0.2, 1.7])
    with pytest.raises(CalibcliError, match="label"):
        smooth_ece([0, 2], [0.2, 0.7])
    with pytest.raises(CalibcliError, match="lengths"):
        smooth_ece([0, 1, 1], [0.2, 0.7])


def test_progress_is_called_once_per_resample_and_zero_weight_resamples_are_skipped():
    calls = []
    y, z = _typical(300)
    smooth_ece(y, z, n_boot=17, rng=np.random.default_rng(0), progress=lambda: calls.append(1))
    assert len(calls) == 17
    # Only one row has weight: a resample that misses it has no data, and its replicate is NaN.
    w = np.zeros(300)
    w[0] = 1.0
    result = smooth_ece(y, z, sample_weight=w, n_boot=20, rng=np.random.default_rng(0))
    assert np.isnan(result.replicates).any() and not np.isnan(result.replicates).all()
    assert result.ci_low == pytest.approx(abs(y[0] - z[0]), abs=1e-9)
    assert result.ci_high == pytest.approx(abs(y[0] - z[0]), abs=1e-9)


def test_tiny_residual_and_unresolved_bandwidth():
    # One-signed residuals: smECE_s = |mean residual| for every s, so s* equals it exactly.
    result = smooth_ece([1], [0.99999])
    assert result.smece == pytest.approx(1e-5, rel=1e-9) and result.fixed_point_gap == 0.0
    # A bandwidth of a few grid cells at most: the kernel stays positive (no ringing).
    y, z = _data("calibrated")
    for s in (1e-6, 1e-7):
        assert smece_at_sigma(y, z, sigma=s) == pytest.approx(brute_smece(y, z, s), abs=1e-9)


@pytest.mark.parametrize(
    "f, a, b",
    [
        (lambda x: x**3 - 2 * x - 5, 2.0, 3.0),  # Wallis's example
        (lambda x: np.exp(-5 * x) - x, 0.0, 1.0),  # decreasing, like smECE_s - s
        (lambda x: np.tanh(50 * (x - 0.3)), 0.0, 1.0),  # nearly a step: bisection steps needed
        (lambda x: (x - 0.7) ** 3, 0.0, 1.0),  # a triple root: slow interpolation
        (lambda x: x - 1e-9, 0.0, 1.0),  # root near an end
    ],
)
def test_brent_root_matches_scipy_brentq(f, a, b):
    from scipy.optimize import brentq

    from calibcli.smooth.grid import _brent_root

    calls = []

    def counted(x):
        calls.append(x)
        return f(x)

    root = _brent_root(counted, a, b, xtol=1e-13, rtol=4 * np.finfo(float).eps)
    expected = brentq(f, a, b, xtol=1e-13, rtol=4 * np.finfo(float).eps, maxiter=200)
    assert root == pytest.approx(expected, abs=2e-13)
    assert all(a <= x <= b for x in calls) and len(calls) < 120


def test_bootstrap_replicates_on_their_sized_grid_match_brute_force():
    """A resample over rows is solved on a grid sized to its bandwidth (BOOT_CELLS_PER_SIGMA cells per sigma, from
    BOOT_MIN_GRID cells; issue 37), not MIN_GRID's 4,096 cells: each replicate is a fixed point of the brute-force
    smECE of that resample (the rows weighted by their multiplicities) within SPEC 3's 1e-5."""
    from calibcli.core.resampling import Multiplicities
    from calibcli.smooth.grid import BOOT_CELLS_PER_SIGMA, BOOT_MIN_GRID, MIN_GRID, _grid_level

    y, z = _typical(60, seed=3)
    result = smooth_ece(y, z, n_boot=3, rng=5)
    assert _grid_level(result.sigma / 1.2, BOOT_CELLS_PER_SIGMA, BOOT_MIN_GRID) < MIN_GRID  # a coarser grid
    multiplicities = Multiplicities(5, np.arange(len(z)))
    for r in range(3):
        s = float(result.replicates[r])
        assert abs(brute_smece(y, z, s, multiplicities.replicate(r)) - s) <= ACCURACY
