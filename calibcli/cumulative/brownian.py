"""The two laws behind the ECCE p-values (SPEC section 9): the supremum of ``|B|`` and the range
``sup B - inf B`` of standard Brownian motion ``B`` on [0, 1], with their tails computed to full relative
precision, and the minimum detectable ECCE and the relative (percent) scale built on them.

ECCE-MAD/sigma tends in law to ``sup |B|`` and ECCE-R/sigma to the range (Arrieta-Ibarra, Gujral, Tannen,
Tygert and Xu, "Metrics of calibration for probabilistic predictions", JMLR 23 (2022); Tygert, "Cumulative
deviation of a subpopulation from the full population", J. Big Data 8 (2021)); :mod:`calibcli.cumulative.ecce`
computes the statistics and re-exports these functions.
"""

from __future__ import annotations

import math

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_alpha

#: Below this x the small-x (theta-function) series gives the CDF to full relative precision; at and above
#: it the large-x (reflection) series gives the survival function to full relative precision. At x = 1.5 the
#: neglected terms of either series are below 1e-25 of the sum with the term counts below.
_SWITCH = 1.5
_SMALL_TERMS = 8
_TAIL_TERMS = 12


def _normal_sf(z: np.ndarray) -> np.ndarray:
    """P(N(0,1) > z), to full relative precision in the upper tail: the C library's erfc (``math.erfc``), elementwise
    over the few terms of a p-value; it keeps scipy, whose import cost a small ``ece`` a fifth of its time, off the
    path of every ECCE p-value (and is closer to the exact tail than scipy.special.erfc: within 2e-16 relative at
    z = 23 to 25, where scipy's is 6e-14 off)."""
    return 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(z / math.sqrt(2.0))


def _as_float_array(x) -> tuple[np.ndarray, bool]:
    a = np.asarray(x, dtype=np.float64)
    return np.atleast_1d(a), a.ndim == 0


def _unwrap(values: np.ndarray, scalar: bool):
    return float(values[0]) if scalar else values


def _parts(x: np.ndarray, small_cdf, large_sf) -> tuple[np.ndarray, np.ndarray]:
    """(CDF, SF) at x (1-D array), each computed where it is accurate: ``small_cdf(xs)`` gives the CDF on the
    ``(m, 1)`` column of the points in (0, _SWITCH), ``large_sf(xl)`` the SF on those at or above it; the other
    side is one minus it there. ``x <= 0`` gives (0, 1), NaN gives NaN."""
    cdf = np.zeros_like(x)
    sf = np.ones_like(x)
    nan = np.isnan(x)
    small = (x > 0) & (x < _SWITCH)
    large = x >= _SWITCH
    if small.any():
        cdf[small] = small_cdf(x[small][:, None])
        sf[small] = 1.0 - cdf[small]
    if large.any():
        sf[large] = large_sf(x[large][:, None])
        cdf[large] = 1.0 - sf[large]
    cdf[nan] = np.nan
    sf[nan] = np.nan
    return cdf, sf


def _alternating(n_terms: int) -> np.ndarray:
    return np.where(np.arange(n_terms) % 2 == 0, 1.0, -1.0)


def _sup_abs_small_cdf(xs: np.ndarray) -> np.ndarray:
    # P(sup|B| < x) = (4/pi) sum_k (-1)^k / (2k+1) exp(-(2k+1)^2 pi^2 / (8 x^2))
    odd = 2.0 * np.arange(_SMALL_TERMS) + 1.0
    terms = _alternating(_SMALL_TERMS) / odd * np.exp(-(odd**2) * math.pi**2 / (8.0 * xs**2))
    return 4.0 / math.pi * terms.sum(axis=1)


def _sup_abs_large_sf(xl: np.ndarray) -> np.ndarray:
    # P(sup|B| >= x) = 4 sum_j (-1)^j P(N > (2j+1) x)   (reflection principle)
    odd = 2.0 * np.arange(_TAIL_TERMS) + 1.0
    with np.errstate(over="ignore"):
        terms = _alternating(_TAIL_TERMS) * _normal_sf(odd * np.where(np.isinf(xl), np.inf, xl))
    return 4.0 * np.nan_to_num(terms).sum(axis=1)


def _range_small_cdf(xs: np.ndarray) -> np.ndarray:
    # P(R <= x) = sum_k (8/x^2 + 8/((2k+1)^2 pi^2)) exp(-(2k+1)^2 pi^2 / (2 x^2))   (Feller 1951)
    odd = 2.0 * np.arange(_SMALL_TERMS) + 1.0
    terms = (8.0 / xs**2 + 8.0 / (odd**2 * math.pi**2)) * np.exp(-(odd**2) * math.pi**2 / (2.0 * xs**2))
    return terms.sum(axis=1)


def _range_large_sf(xl: np.ndarray) -> np.ndarray:
    # P(R > x) = 8 sum_{k>=1} (-1)^(k-1) k P(N > k x): the integral of Feller's density
    # f(r) = 8 sum_k (-1)^(k-1) k^2 phi(k r) from x to infinity.
    k = np.arange(1, _TAIL_TERMS + 1, dtype=np.float64)
    terms = _alternating(_TAIL_TERMS) * k * _normal_sf(k * xl)
    return 8.0 * np.nan_to_num(terms).sum(axis=1)


def _sup_abs_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(CDF, SF) of sup_[0,1] |B| at x (1-D array), each computed where it is accurate."""
    return _parts(x, _sup_abs_small_cdf, _sup_abs_large_sf)


def _range_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(CDF, SF) of the range of B on [0, 1] at x (1-D array), each computed where it is accurate."""
    return _parts(x, _range_small_cdf, _range_large_sf)


def sup_abs_brownian_cdf(x):
    """``P(sup_[0,1] |B| <= x)`` for standard Brownian motion ``B``; vectorised over ``x``.

    For ``x < 1.5`` the theta-function series ``(4/pi) sum_{k>=0} (-1)^k/(2k+1) exp(-(2k+1)^2 pi^2/(8x^2))``
    (SPEC 9; Feller, "An introduction to probability theory", vol. II, X.5), accurate relative to the CDF
    however small; above, ``1 - sup_abs_brownian_sf(x)``. ``x <= 0`` gives 0, NaN gives NaN.
    """
    a, scalar = _as_float_array(x)
    return _unwrap(_sup_abs_parts(a.ravel())[0].reshape(a.shape), scalar)


def sup_abs_brownian_sf(x):
    """``P(sup_[0,1] |B| > x)``: the asymptotic p-value of ECCE-MAD/sigma; vectorised over ``x``.

    For ``x >= 1.5`` the reflection series ``4 sum_{j>=0} (-1)^j P(N(0,1) > (2j+1) x)``, accurate relative to
    the p-value down to the smallest positive double (about ``x = 38``; beyond it the p-value is 0.0, its
    correctly rounded value); below, ``1 - sup_abs_brownian_cdf(x)``. ``x <= 0`` gives 1, NaN gives NaN.
    """
    a, scalar = _as_float_array(x)
    return _unwrap(_sup_abs_parts(a.ravel())[1].reshape(a.shape), scalar)


def range_brownian_cdf(x):
    """``P(sup_[0,1] B - inf_[0,1] B <= x)``: the law of the range of standard Brownian motion.

    For ``x < 1.5`` the series ``sum_{k>=0} (8/x^2 + 8/((2k+1)^2 pi^2)) exp(-(2k+1)^2 pi^2/(2x^2))`` (Feller,
    "The asymptotic distribution of the range of sums of independent random variables", Ann. Math. Statist.
    22 (1951); the form used by MCGrad's ``_ecce_cdf`` and the JMLR paper's code), accurate relative to the CDF
    however small; above, ``1 - range_brownian_sf(x)``. ``x <= 0`` gives 0, NaN gives NaN.
    """
    a, scalar = _as_float_array(x)
    return _unwrap(_range_parts(a.ravel())[0].reshape(a.shape), scalar)


def range_brownian_sf(x):
    """``P(range of B on [0,1] > x)``: the asymptotic p-value of ECCE-R/sigma; vectorised over ``x``.

    For ``x >= 1.5`` the series ``8 sum_{k>=1} (-1)^(k-1) k P(N(0,1) > k x)``, the tail integral of Feller's
    density ``8 sum_k (-1)^(k-1) k^2 phi(k x)``, accurate relative to the p-value down to the smallest positive
    double (near ``x = 38``); below, ``1 - range_brownian_cdf(x)``. ``x <= 0`` gives 1, NaN gives NaN.
    """
    a, scalar = _as_float_array(x)
    return _unwrap(_range_parts(a.ravel())[1].reshape(a.shape), scalar)


def range_brownian_isf(p):
    """The ``x`` with ``range_brownian_sf(x) = p``: the critical value of the ECCE-R/sigma test at level ``p``.

    Vectorised bisection on [0, 40] to the last bit (the survival function is continuous and strictly
    decreasing). ``p >= 1`` gives 0, ``p <= 0`` gives ``inf``, NaN gives NaN.
    """
    a, scalar = _as_float_array(p)
    flat = a.ravel()
    lo = np.zeros_like(flat)
    hi = np.full_like(flat, 40.0)
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        above = _range_parts(mid)[1] > flat  # sf(mid) > p: the root is to the right
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    out = 0.5 * (lo + hi)
    out = np.where(flat >= 1.0, 0.0, np.where(flat <= 0.0, np.inf, out))
    out[np.isnan(flat)] = np.nan
    return _unwrap(out.reshape(a.shape), scalar)


def ecce_mad_pvalue(ecce_mad_sigma):
    """Asymptotic p-value of ECCE-MAD on the sigma scale: :func:`sup_abs_brownian_sf`."""
    return sup_abs_brownian_sf(ecce_mad_sigma)


def ecce_r_pvalue(ecce_r_sigma):
    """Asymptotic p-value of ECCE-R on the sigma scale: :func:`range_brownian_sf`."""
    return range_brownian_sf(ecce_r_sigma)


def minimum_detectable_ecce_sigma(alpha=0.05, power=0.8):
    """Minimum detectable ECCE-R on the sigma scale: ``range_brownian_isf(alpha) + Phi^{-1}(power)``.

    Definition (SPEC 9): the smallest miscalibration, in units of sigma, that the level-``alpha`` ECCE-R test
    (reject when ECCE-R/sigma exceeds the range law's ``1 - alpha`` quantile ``q``) detects with probability at
    least ``power``, for a segment whose predictions are off by the same amount ``delta * sigma`` throughout
    (so that ``C`` drifts linearly to ``delta * sigma`` and ECCE-R equals ``delta * sigma`` without noise).

    The range of the path is at least its end value minus its start value, so ``ECCE-R/sigma >= delta + Z``
    with ``Z`` standard normal in the limit, and ``P(reject) >= Phi(delta - q)``. The returned ``delta`` solves
    ``Phi(delta - q) = power``: a miscalibration of this size is detected with at least the stated power
    (an upper bound on the exact MDE, tight when ``power`` is high; the tests measure the exact power at it by
    simulation). Compare MCGrad's ``mde``: a fixed 5 sigma. Multiply by a segment's ``sigma`` for the
    absolute scale. Vectorised over ``alpha`` and ``power`` (broadcast).
    """
    from scipy.special import ndtri

    alpha = np.asarray(alpha, dtype=np.float64)
    power = np.asarray(power, dtype=np.float64)
    for level in alpha.ravel().tolist():  # the one rule and wording of alpha (calibcli.core.validation)
        check_alpha(level)
    if np.any(~((power > 0) & (power < 1))):
        raise CalibcliError(
            f"power must lie strictly between 0 and 1, got power={power.tolist()}: pass for example power=0.8"
        )
    out = np.asarray(range_brownian_isf(alpha)) + ndtri(power)
    return float(out) if out.ndim == 0 else out


def relative_percent(ecce_sigma, *, global_sigma, prevalence):
    """A sigma-scale statistic (a segment's ECCE-R/sigma, or MCE) on MCGrad's relative scale, in percent.

    ``ecce_sigma * global_sigma / min(prevalence, 1 - prevalence) * 100``, with ``global_sigma`` the whole
    population's sigma and ``prevalence`` its weighted rate of positives: MCGrad's
    ``MulticalibrationError.mce_relative`` and ``segments_ecce_relative`` (the sigma scale converted back to
    probability units with the *global* sigma, as a share of the rarer class's rate). Broadcast over
    ``ecce_sigma``; NaN where the prevalence is 0 or 1.
    """
    x = np.asarray(ecce_sigma, dtype=np.float64)
    base = min(float(prevalence), 1.0 - float(prevalence))
    out = x * float(global_sigma) / base * 100.0 if base > 0 else np.full_like(x, np.nan)
    return float(out) if np.ndim(out) == 0 else out
