"""Recalibration maps (SPEC 5): agreement with reference implementations, hand-worked cases, round trips."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from calibcli.calibrators import METHODS, calibrator_from_dict, fit_calibrator, fit_multiclass
from calibcli.calibrators.parametric import fit_beta, fit_platt, fit_polynomial, fit_temperature
from calibcli.calibrators.binned import fit_histogram, fit_scaling_binning
from calibcli.calibrators.isotonic import fit_isotonic, fit_venn_abers
from calibcli.calibrators.multiclass import apply_top_label
from calibcli.core.errors import CalibcliError


def _binary_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = rng.beta(0.7, 0.9, size=n)
    y = (rng.uniform(size=n) < z ** 1.7).astype(np.int64)
    return y, z


def _multiclass_data(n: int, K: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n, K))
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    truth = np.exp(0.5 * logits)
    truth /= truth.sum(axis=1, keepdims=True)
    c = (rng.uniform(size=n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    return np.minimum(c, K - 1), P


def _round_trip(cal):
    return calibrator_from_dict(json.loads(json.dumps(cal.to_dict())))


# --------------------------------------------------------------------------- platt and beta


def test_platt_equals_unpenalised_logistic_regression_with_weights():
    from sklearn.linear_model import LogisticRegression

    y, z = _binary_data(3000, seed=1)
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=len(y))
    cal = fit_platt(y, z, sample_weight=w)
    ref = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-14, max_iter=1000)
    ref.fit(np.log(z / (1 - z))[:, None], y, sample_weight=w)
    assert_allclose([cal.a, cal.b], [ref.coef_[0, 0], ref.intercept_[0]], atol=1e-6)
    assert cal.info["converged"]


def test_platt_gradient_vanishes_and_clip_is_reported():
    y, z = _binary_data(500, seed=3)
    z[:3] = [0.0, 1.0, 1e-15]
    cal = fit_platt(y, z, clip=1e-9)
    assert cal.info["n_clipped"] == 3
    assert cal.to_dict()["options"] == {"clip": 1e-9}
    zc = np.clip(z, 1e-9, 1 - 1e-9)
    t = np.log(zc / (1 - zc))
    resid = cal.predict(z) - y
    assert abs(resid.mean()) < 1e-10 and abs((resid * t).mean()) < 1e-10


def test_platt_integer_weights_equal_duplicated_rows():
    y, z = _binary_data(400, seed=4)
    w = np.random.default_rng(5).integers(0, 4, size=len(y))
    a = fit_platt(y, z, sample_weight=w.astype(float))
    b = fit_platt(np.repeat(y, w), np.repeat(z, w))
    assert_allclose([a.a, a.b], [b.a, b.b], rtol=1e-9)


def test_beta_equals_logistic_regression_on_log_features():
    from sklearn.linear_model import LogisticRegression

    y, z = _binary_data(3000, seed=6)
    cal = fit_beta(y, z)
    X = np.column_stack([np.log(z), -np.log1p(-z)])
    ref = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-14, max_iter=1000).fit(X, y)
    assert_allclose([cal.a, cal.b, cal.c], [*ref.coef_[0], ref.intercept_[0]], atol=1e-6)
    # the map as written: sigmoid(a ln z - b ln(1 - z) + c)
    zz = np.array([0.1, 0.5, 0.9])
    expected = 1 / (1 + np.exp(-(cal.a * np.log(zz) - cal.b * np.log1p(-zz) + cal.c)))
    assert_allclose(cal.predict(zz), expected, rtol=1e-12)


def test_beta_family_contains_the_identity_and_monotone_refit():
    # labels drawn from z itself: a = b = 1, c = 0 is the truth, the fit lands near it
    rng = np.random.default_rng(7)
    z = rng.uniform(0.01, 0.99, size=200_000)
    y = (rng.uniform(size=len(z)) < z).astype(int)
    cal = fit_beta(y, z)
    assert_allclose([cal.a, cal.b, cal.c], [1, 1, 0], atol=0.05)
    # a decreasing relation in ln z: the monotone variant fixes a at 0
    y2 = (rng.uniform(size=len(z)) < np.where(z < 0.5, 0.6 - 0.5 * z, z)).astype(int)
    free = fit_beta(y2, z)
    mono = fit_beta(y2, z, monotone=True)
    assert free.a < 0
    assert mono.a == 0.0 and mono.b >= 0 and mono.info["fixed_at_zero"] == "a"
    assert np.all(np.diff(mono.predict(np.linspace(0.01, 0.99, 50))) >= 0)


# --------------------------------------------------------------------------- temperature


def _log_loss(c, P):
    return -np.mean(np.log(np.maximum(P[np.arange(len(c)), c], 1e-300)))


def test_temperature_minimises_the_log_loss_multiclass():
    c, P = _multiclass_data(4000, 5, seed=8)
    cal = fit_temperature(c, P)
    L = np.log(np.maximum(P, 1e-12))

    def loss(T):
        A = L / T
        A -= A.max(axis=1, keepdims=True)
        Q = np.exp(A)
        return _log_loss(c, Q / Q.sum(axis=1, keepdims=True))

    grid = np.exp(np.linspace(np.log(0.1), np.log(10.0), 2001))
    T0 = grid[np.argmin([loss(T) for T in grid])]
    fine = np.linspace(T0 * 0.995, T0 * 1.005, 2001)
    T1 = fine[np.argmin([loss(T) for T in fine])]
    assert abs(cal.temperature - T1) < 2e-5 * T1
    assert loss(cal.temperature) <= loss(T1) + 1e-12
    assert cal.temperature > 1.2  # the data were generated with logits / 2
    Q = cal.predict(P)
    assert_allclose(Q.sum(axis=1), 1.0, rtol=1e-12)
    assert_allclose(cal.info["log_loss"], loss(cal.temperature), rtol=1e-10)


def test_temperature_binary_is_platt_without_intercept():
    y, z = _binary_data(2000, seed=9)
    cal = fit_temperature(y, z)
    zz = np.linspace(0.01, 0.99, 7)
    assert_allclose(cal.predict(zz), 1 / (1 + np.exp(-np.log(zz / (1 - zz)) / cal.temperature)), rtol=1e-12)
    # the two-class form gives the same temperature as the (n, 2) input
    assert_allclose(fit_temperature(y, np.column_stack([1 - z, z])).temperature, cal.temperature, rtol=1e-12)


def test_temperature_with_logits_input_matches_probabilities():
    c, P = _multiclass_data(1000, 4, seed=10)
    logits = np.log(P) + 3.0  # any per-row shift is irrelevant
    a = fit_temperature(c, P)
    b = fit_temperature(c, logits, logits=True)
    assert_allclose(a.temperature, b.temperature, rtol=1e-8)
    assert_allclose(a.predict(P), b.predict(logits), atol=1e-10)


def test_temperature_without_a_minimiser_is_a_clear_error():
    with pytest.raises(CalibcliError, match="no minimiser with T > 0.*grows"):
        fit_temperature([0, 1, 0, 1], [0.9, 0.1, 0.8, 0.3])
    with pytest.raises(CalibcliError, match="no minimiser with T > 0.*shrinks"):
        fit_temperature([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.7])


# --------------------------------------------------------------------------- histogram and scaling-binning


def test_histogram_hand_example_with_empty_bin_and_weights():
    z = np.array([0.05, 0.1, 0.2, 0.6, 0.7, 0.74, 1.0])
    y = np.array([0, 1, 1, 0, 1, 1, 1])
    cal = fit_histogram(y, z, n_bins=4)
    # bins [0, .25): 2/3; [.25, .5): empty -> midpoint .375; [.5, .75): 2/3; [.75, 1]: 1
    assert_allclose(cal.values, [2 / 3, 0.375, 2 / 3, 1.0])
    assert_allclose(cal.predict([0.0, 0.3, 0.5, 0.75, 1.0]), [2 / 3, 0.375, 2 / 3, 1.0, 1.0])
    w = np.array([1, 3, 0, 1, 1, 2, 1.0])
    cal_w = fit_histogram(y, z, n_bins=4, sample_weight=w)
    assert_allclose(cal_w.values, [3 / 4, 0.375, 3 / 4, 1.0])


def test_histogram_quantile_bins_output_bin_means():
    y, z = _binary_data(1000, seed=11)
    cal = fit_histogram(y, z, n_bins=10, strategy="quantile")
    idx = cal.binning.assign(z)
    for b in range(cal.binning.n_bins_effective):
        assert cal.values[b] == pytest.approx(y[idx == b].mean())
    assert cal.info["n_nonempty_bins"] == 10


def test_histogram_certificate_is_thm_12_6():
    y, z = _binary_data(800, seed=12)
    cert = fit_histogram(y, z, n_bins=20).certificate(delta=0.1)
    assert cert.expected_ece_bound == pytest.approx(math.sqrt(20 / (2 * 800)))
    assert cert.ece_bound == pytest.approx(math.sqrt(20 / 800) / math.sqrt(0.2))
    assert cert.fixed_partition and not cert.weighted
    assert not fit_histogram(y, z, n_bins=20, strategy="quantile").certificate().fixed_partition
    # the certificate survives saving
    assert _round_trip(fit_histogram(y, z, n_bins=20)).certificate(delta=0.1) == cert


def test_scaling_binning_follows_kumar_three_way_split():
    y, z = _binary_data(3000, seed=13)
    cal = fit_scaling_binning(y, z, rng=np.random.default_rng(5), n_bins=8)
    # redo the three steps by hand with the same permutation
    parts = np.array_split(np.random.default_rng(5).permutation(len(y)), 3)
    g = fit_platt(y[parts[0]], z[parts[0]])
    assert (cal.scaler.a, cal.scaler.b) == (g.a, g.b)
    g2 = np.sort(g.predict(z[parts[1]]))
    ranks = np.round(np.arange(1, 8) * len(g2) / 8).astype(int)
    assert_allclose(cal.binning.edges, (g2[ranks - 1] + g2[ranks]) / 2)
    g3 = g.predict(z[parts[2]])
    bins3 = np.searchsorted(cal.binning.edges, g3, side="right")
    assert_allclose(cal.values, [g3[bins3 == b].mean() for b in range(8)], rtol=1e-12)
    out = cal.predict(z)
    assert len(np.unique(out)) <= 8
    assert_array_equal(out, fit_scaling_binning(y, z, rng=np.random.default_rng(5), n_bins=8).predict(z))


def test_scaling_binning_needs_an_rng():
    y, z = _binary_data(30)
    with pytest.raises(CalibcliError, match="rng"):
        fit_scaling_binning(y, z, rng=None)


# --------------------------------------------------------------------------- polynomial


def test_polynomial_hand_example_interpolates_and_clips():
    cal = fit_polynomial([0, 1, 1], [0.0, 0.5, 1.0], degree=2)
    # p(z) = 3 z - 2 z^2 through (0, 0), (.5, 1), (1, 1)
    assert_allclose(cal.coef, [0, 3, -2], atol=1e-12)
    assert_allclose(cal.predict([0.25, 0.75]), [0.625, 1.0])


def test_polynomial_is_weighted_least_squares():
    y, z = _binary_data(500, seed=14)
    w = np.random.default_rng(1).uniform(0.1, 2, size=len(y))
    cal = fit_polynomial(y, z, sample_weight=w, degree=3)
    assert_allclose(cal.coef[::-1], np.polyfit(z, y, 3, w=np.sqrt(w)), rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------- isotonic


def test_isotonic_equals_sklearn_with_ties_and_weights():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(15)
    z = rng.integers(0, 40, size=2000) / 40  # many ties
    y = (rng.uniform(size=len(z)) < z).astype(int)
    w = rng.uniform(0.1, 3, size=len(z))
    ref = IsotonicRegression(out_of_bounds="clip").fit(z, y, sample_weight=w)
    new = np.concatenate([rng.uniform(-0.0, 1.0, size=500), np.unique(z)])
    linear = fit_isotonic(y, z, sample_weight=w, interpolation="linear")
    assert_allclose(linear.predict(z), ref.predict(z), rtol=1e-12, atol=1e-14)
    assert_allclose(linear.predict(new), ref.predict(new), rtol=1e-12, atol=1e-14)
    step = fit_isotonic(y, z, sample_weight=w)
    assert_allclose(step.predict(z), ref.predict(z), rtol=1e-12, atol=1e-14)


def test_isotonic_step_function_hand_example():
    z = [0.1, 0.2, 0.2, 0.4, 0.8]
    y = [1, 0, 1, 0, 1]
    cal = fit_isotonic(y, z)
    # PAVA: 1 | (0, 1) tie -> .5 violates 1 -> pool 1, .5, .5: 2/3; then 0 -> pool all four: 1/2; then 1
    assert_allclose(cal.predict([0.1, 0.2, 0.4, 0.8]), [0.5, 0.5, 0.5, 1.0])
    assert_allclose(cal.predict([0.0, 0.5, 0.79, 0.9]), [0.5, 0.5, 0.5, 1.0])
    lin = fit_isotonic(y, z, interpolation="linear")
    assert_allclose(lin.predict([0.6]), [0.75])



@pytest.mark.parametrize("values", ["continuous", "ties", "increasing", "decreasing"])
def test_pava_in_python_gives_scipys_doubles(values):
    # the Python loop (small inputs: no scipy.optimize import) is scipy's algorithm, operation for operation: the
    # same fit to the last bit, equal values in one block, on both sides of the size where pava switches
    from scipy.optimize import isotonic_regression

    from calibcli.calibrators import isotonic

    rng = np.random.default_rng(16)
    for n in (1, 2, 3, 17, 250, isotonic.PAVA_PYTHON_MAX):
        v = {
            "continuous": rng.uniform(size=n),
            "ties": rng.integers(0, 4, size=n) / 3,
            "increasing": np.sort(rng.uniform(size=n)),
            "decreasing": np.sort(rng.uniform(size=n))[::-1].copy(),
        }[values]
        w = rng.uniform(0.05, 3, size=n) if n % 2 else rng.integers(1, 5, size=n).astype(np.float64)
        ref = isotonic_regression(v, weights=w, increasing=True).x
        assert_array_equal(isotonic._pava_loop(v, w), ref, strict=True)
        assert_array_equal(isotonic.pava(v, w), ref, strict=True)
    big = rng.uniform(size=isotonic.PAVA_PYTHON_MAX + 1)  # scipy's own loop beyond the limit
    assert_array_equal(isotonic.pava(big, np.ones_like(big)), isotonic_regression(big).x, strict=True)


# --------------------------------------------------------------------------- venn-abers


def _venn_abers_direct(zc, yc, zt):
    """Two isotonic fits per test point on the augmented calibration set (seed 002 Algorithm 12.11)."""
    from sklearn.isotonic import IsotonicRegression

    p = np.empty((len(zt), 2))
    for i, t in enumerate(zt):
        for label in (0, 1):
            fit = IsotonicRegression().fit(np.append(zc, t), np.append(yc, label))
            p[i, label] = fit.predict([t])[0]
    return p


@pytest.mark.parametrize("seed", range(40))
def test_venn_abers_equals_two_isotonic_fits_per_point(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    zc = rng.integers(1, 8, size=n) / 8  # ties among calibration points
    yc = rng.integers(0, 2, size=n)
    zt = np.concatenate([np.arange(0, 9) / 8, [0.0, 1.0, 0.01, 0.99], rng.uniform(size=3)])  # ties, outside
    cal = fit_venn_abers(yc, zc)
    p0, p1 = cal.predict_interval(zt)
    direct = _venn_abers_direct(zc, yc, zt)
    assert_allclose(p0, direct[:, 0], atol=1e-12)
    assert_allclose(p1, direct[:, 1], atol=1e-12)
    assert np.all(p0 <= p1)
    assert_allclose(cal.predict(zt), p1 / (1 - p0 + p1))


def test_venn_abers_continuous_scores():
    y, z = _binary_data(60, seed=99)
    zt = np.concatenate([z[:10], np.random.default_rng(3).uniform(size=20)])
    p0, p1 = fit_venn_abers(y, z).predict_interval(zt)
    direct = _venn_abers_direct(z, y, zt)
    assert_allclose(np.column_stack([p0, p1]), direct, atol=1e-12)


# --------------------------------------------------------------------------- multiclass


@pytest.mark.parametrize("method", [m for m in METHODS if m != "temperature"])
@pytest.mark.parametrize("mode", ["marginal", "top-label"])
def test_multiclass_rows_sum_to_one(method, mode):
    c, P = _multiclass_data(600, 4, seed=16)
    cal = fit_multiclass(method, c, P, mode=mode, rng=np.random.default_rng(0))
    Q = cal.predict(P)
    assert Q.shape == P.shape
    assert np.all(Q >= 0)
    assert_allclose(Q.sum(axis=1), 1.0, rtol=1e-12)
    assert_array_equal(_round_trip(cal).predict(P), Q)


def test_top_label_sets_the_confidence_and_keeps_the_ratios():
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [1.0, 0.0, 0.0]])
    Q = apply_top_label(P, np.array([0.8, 0.5, 0.7]))
    assert_allclose(Q, [[0.8, 0.15, 0.05], [0.25, 0.25, 0.5], [0.7, 0.15, 0.15]])
    c, P = _multiclass_data(500, 3, seed=17)
    cal = fit_multiclass("isotonic", c, P, mode="top-label")
    Q = cal.predict(P)
    top = np.argmax(P, axis=1)
    rows = np.arange(len(P))
    assert_allclose(Q[rows, top], cal.calibrators[0].predict(P[rows, top]))


def test_marginal_fits_one_vs_rest_and_renormalises():
    c, P = _multiclass_data(500, 3, seed=18)
    cal = fit_multiclass("platt", c, P, mode="marginal")
    for k in range(3):
        ref = fit_platt((c == k).astype(int), P[:, k])
        assert (cal.calibrators[k].a, cal.calibrators[k].b) == (ref.a, ref.b)
    G = np.column_stack([cal.calibrators[k].predict(P[:, k]) for k in range(3)])
    assert_allclose(cal.predict(P), G / G.sum(axis=1, keepdims=True))
    assert cal.to_dict()["renormalised"] is True


def test_binary_mode_on_two_columns_and_temperature_native():
    y, z = _binary_data(400, seed=19)
    P = np.column_stack([1 - z, z])
    cal = fit_multiclass("isotonic", y, P, mode="binary")
    assert_allclose(cal.predict(P)[:, 1], fit_isotonic(y, z).predict(z))
    c, P3 = _multiclass_data(400, 3, seed=20)
    with pytest.raises(CalibcliError, match="2 probability columns"):
        fit_multiclass("isotonic", c, P3, mode="binary")
    t = fit_multiclass("temperature", c, P3, mode="top-label")
    assert t.to_dict()["mode"] == "multiclass"


# --------------------------------------------------------------------------- saving and loading


@pytest.mark.parametrize("method", METHODS)
def test_round_trip_through_json_reproduces_predictions(method):
    y, z = _binary_data(1500, seed=21)
    cal = fit_calibrator(method, y, z, rng=np.random.default_rng(1))
    text = json.dumps(cal.to_dict(), allow_nan=False)
    back = calibrator_from_dict(json.loads(text))
    new = np.concatenate([np.random.default_rng(2).uniform(size=500), [0.0, 1.0]])
    assert_array_equal(back.predict(new), cal.predict(new))
    assert back.to_dict() == json.loads(text)


def test_round_trip_of_options():
    y, z = _binary_data(500, seed=22)
    for cal in [fit_isotonic(y, z, interpolation="linear"), fit_histogram(y, z, n_bins=7, strategy="quantile"),
                fit_polynomial(y, z, degree=5), fit_beta(y, z, monotone=True, clip=1e-6),
                fit_temperature(y, z, eps=1e-8)]:
        back = _round_trip(cal)
        assert back.to_dict() == json.loads(json.dumps(cal.to_dict()))
        assert_array_equal(back.predict(z), cal.predict(z))


def _platt_dict():
    y, z = _binary_data(200, seed=23)
    return fit_platt(y, z).to_dict()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(method="sigmoid"), "unknown method 'sigmoid'"),
        (lambda d: d["params"].pop("a"), "missing field 'params.a'"),
        (lambda d: d["params"].update(a="1.0"), "field 'params.a' is the string '1.0': expected a finite number"),
        (lambda d: d["params"].update(b=None), "field 'params.b' is null"),
        (lambda d: d["options"].update(clip=0.7), "field 'options.clip' is 0.7"),
        (lambda d: d.pop("params"), "missing field 'params'"),
        (lambda d: d.update(params=[1, 2]), "params is a list: expected a JSON object"),
        (lambda d: d.update(mode="sideways"), "field 'mode' is 'sideways'"),
    ],
)
def test_loading_rejects_malformed_dicts(mutate, message):
    d = _platt_dict()
    mutate(d)
    with pytest.raises(CalibcliError, match=message):
        calibrator_from_dict(d)


def test_loading_rejects_bad_arrays():
    y, z = _binary_data(300, seed=24)
    d = fit_isotonic(y, z).to_dict()
    d["params"]["y_thresholds"] = d["params"]["y_thresholds"][:-1]
    with pytest.raises(CalibcliError, match="y_thresholds' has .* values: expected"):
        calibrator_from_dict(d)
    d = fit_isotonic(y, z).to_dict()
    d["params"]["x_thresholds"] = d["params"]["x_thresholds"][::-1]
    with pytest.raises(CalibcliError, match="x_thresholds' is not strictly increasing"):
        calibrator_from_dict(d)
    d = fit_histogram(y, z, n_bins=5).to_dict()
    d["params"]["values"][2] = 1.5
    with pytest.raises(CalibcliError, match="values' has a value outside"):
        calibrator_from_dict(d)
    c, P = _multiclass_data(300, 3, seed=25)
    d = fit_multiclass("platt", c, P, mode="marginal").to_dict()
    d["calibrators"] = d["calibrators"][:2]
    with pytest.raises(CalibcliError, match="list of 3 calibrators"):
        calibrator_from_dict(d)
    with pytest.raises(CalibcliError, match="expected a JSON object"):
        calibrator_from_dict([1, 2, 3])


def test_unknown_options_and_unweighted_methods_are_usage_errors():
    y, z = _binary_data(100, seed=26)
    with pytest.raises(CalibcliError, match="option 'degree' does not apply to method 'platt'"):
        fit_calibrator("platt", y, z, degree=3)
    with pytest.raises(CalibcliError, match="does not take sample weights"):
        fit_calibrator("venn-abers", y, z, sample_weight=np.ones(len(y)))
    with pytest.raises(CalibcliError, match="unknown recalibration method"):
        fit_calibrator("magic", y, z)


def test_predict_validates_its_input_and_class_count():
    y, z = _binary_data(100, seed=27)
    with pytest.raises(CalibcliError, match="outside \\[0, 1\\]"):
        fit_platt(y, z).predict([0.5, 1.2])
    c, P = _multiclass_data(100, 3, seed=28)
    cal = fit_multiclass("histogram", c, P, mode="top-label")
    with pytest.raises(CalibcliError, match="fitted on 3 classes"):
        cal.predict(np.full((2, 4), 0.25))


# --------------------------------------------------------------------------- invariances


@pytest.mark.parametrize("method", [m for m in METHODS if m != "scaling-binning"])
def test_row_order_does_not_matter(method):
    y, z = _binary_data(400, seed=30)
    perm = np.random.default_rng(31).permutation(len(y))
    new = np.linspace(0, 1, 101)
    assert_allclose(fit_calibrator(method, y[perm], z[perm]).predict(new), fit_calibrator(method, y, z).predict(new),
                    rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["platt", "temperature", "histogram", "isotonic", "polynomial", "beta"])
def test_weight_two_equals_duplicated_rows(method):
    y, z = _binary_data(300, seed=32)
    new = np.linspace(0, 1, 101)
    weighted = fit_calibrator(method, y, z, sample_weight=np.full(len(y), 2.0))
    duplicated = fit_calibrator(method, np.tile(y, 2), np.tile(z, 2))
    assert_allclose(weighted.predict(new), duplicated.predict(new), rtol=1e-9, atol=1e-12)
