"""Per-bin binomial intervals for a reliability diagram's observed frequency (``diagram --band``).

In a bin of ``n`` rows with ``k`` positives the observed frequency ``k / n`` estimates the bin's true rate;
these intervals cover that rate with probability about (Wilson) or at least (Clopper-Pearson) ``1 - alpha``,
bin by bin (not simultaneously over bins). Everything is vectorised over bins (and any leading axes).

- **Wilson** (Wilson, "Probable inference, the law of succession, and statistical inference", JASA 22
  (1927)): the score interval, the roots in ``p`` of ``(k/n - p)^2 = z^2 p (1 - p) / n`` with
  ``z = Phi^{-1}(1 - alpha/2)``: centre ``(k/n + z^2/(2n)) / (1 + z^2/n)``, half-width
  ``z / (1 + z^2/n) sqrt(k/n (1 - k/n) / n + z^2 / (4 n^2))``. Coverage close to nominal on average, never
  degenerate at ``k = 0`` or ``k = n`` (Brown, Cai and DasGupta, "Interval estimation for a binomial
  proportion", Statist. Sci. 16 (2001)).
- **Clopper-Pearson** (Clopper and Pearson, Biometrika 26 (1934)): the exact interval, inverting the two
  one-sided binomial tests: lower ``Beta^{-1}(alpha/2; k, n - k + 1)`` (0 when ``k = 0``), upper
  ``Beta^{-1}(1 - alpha/2; k + 1, n - k)`` (1 when ``k = n``). Coverage at least ``1 - alpha`` for every true
  rate, hence conservative; the choice for small bins (scikit-learn's discussion of calibration-curve
  uncertainty settles on it for that reason).

Weighted bins: with weights, a bin's observed frequency is ``p = sum w y / sum w`` and its variance under a
binomial model is ``p (1 - p) sum w^2 / (sum w)^2``, the variance of a proportion from ``n_eff`` rows with
Kish's effective sample size ``n_eff = (sum w)^2 / sum w^2`` (Kish, "Survey sampling", 1965). Both
intervals are computed with ``n = n_eff`` and ``k = p n_eff`` (not rounded; the Beta quantiles take real
parameters), as Korn and Graubard do for Clopper-Pearson ("Confidence intervals for proportions with small
expected number of positive counts estimated from survey data", Survey Methodology 24 (1998)). Unit weights
give ``n_eff = n`` and ``k`` exactly, so the unweighted intervals are the special case. Frequency weights
(a weight of 2 meaning a row seen twice) are instead counts: pass ``sum_w2=None`` to treat ``sum w`` as the
number of trials.

A bin with no rows (``n = 0``) gets NaN bounds.

- **Bootstrap** (:func:`bootstrap_band`): the percentile interval of each bin's observed frequency over the
  Poisson bootstrap's resamples of the rows, bins fixed (SPEC 2.4, 8). It needs no binomial model, but in a bin
  whose rows are all negatives (or all positives) every resample has the same frequency and the interval has
  zero width, exactly where the other two are widest: the reason scikit-learn's discussion of calibration-curve
  uncertainty (scikit-learn issue 30664, 2025) prefers Clopper-Pearson to bootstrap bands for small bins.

Every band contains the observed frequency: an end within rounding of it is set to it (so that a drawn error
bar never has a negative length), and a percentile interval that misses it (possible in a skewed bin) is
widened to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_alpha

__all__ = [
    "BinomialBand",
    "BAND_METHODS",
    "DIAGRAM_BANDS",
    "BAND_DESCRIPTIONS",
    "binomial_band",
    "bootstrap_band",
    "wilson_interval",
    "clopper_pearson_interval",
]

#: The interval methods :func:`binomial_band` knows.
BAND_METHODS = ("wilson", "clopper-pearson")
#: The bands a reliability diagram draws (``diagram --band``): the binomial ones and the bootstrap.
DIAGRAM_BANDS = (*BAND_METHODS, "bootstrap")
#: What each band is, for a report's parameters.
BAND_DESCRIPTIONS = {
    "wilson": "Wilson score interval of each bin's observed frequency (Wilson 1927)",
    "clopper-pearson": "Clopper-Pearson exact interval of each bin's observed frequency (Clopper and Pearson 1934)",
    "bootstrap": "percentile interval of each bin's observed frequency over the bootstrap resamples, bins fixed",
}


def _counts(successes, trials) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    k, n = np.broadcast_arrays(k, n)
    bad = (n < 0) | (k < 0) | (k > n * (1 + 1e-12)) | ~np.isfinite(n) | ~np.isfinite(k)
    if bad.any():
        i = np.flatnonzero(bad.reshape(-1))[0]
        raise CalibcliError(
            f"bin {i} has {float(k.reshape(-1)[i]):g} successes out of {float(n.reshape(-1)[i]):g} trials: expected "
            "finite counts with 0 <= successes <= trials"
        )
    return np.minimum(k, n), n


def wilson_interval(successes, trials, *, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval ``(lower, upper)`` for a binomial proportion; vectorised (see the module docstring).

    ``successes`` and ``trials`` may be real (effective counts). ``trials == 0`` gives NaN.
    """
    alpha = check_alpha(alpha)
    k, n = _counts(successes, trials)
    z = -NormalDist().inv_cdf(alpha / 2.0)  # the upper quantile, exact for the smallest alpha (1e-17)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    lower = np.clip(centre - half, 0.0, 1.0)
    upper = np.clip(centre + half, 0.0, 1.0)
    # At k = 0 (k = n) the bound is 0 (1) exactly; rounding may leave 1e-17.
    lower = np.where(k <= 0, 0.0, lower)
    upper = np.where(k >= n, 1.0, upper)
    empty = ~(n > 0)
    return _around(np.where(empty, np.nan, lower), np.where(empty, np.nan, upper), p)


def clopper_pearson_interval(successes, trials, *, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson ("exact") interval ``(lower, upper)``; vectorised (see the module docstring).

    Beta quantiles from SciPy (``scipy.special.betaincinv``, the inverse that ``scipy.stats.beta.ppf`` uses),
    imported when called. ``successes`` and ``trials`` may be real (effective counts). ``trials == 0`` gives NaN.
    """
    from scipy.special import betaincinv

    alpha = check_alpha(alpha)
    k, n = _counts(successes, trials)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(k > 0, betaincinv(np.where(k > 0, k, 1.0), n - k + 1.0, alpha / 2.0), 0.0)
        upper = np.where(k < n, betaincinv(k + 1.0, np.where(k < n, n - k, 1.0), 1.0 - alpha / 2.0), 1.0)
    empty = ~(n > 0)
    return np.where(empty, np.nan, lower), np.where(empty, np.nan, upper)


@dataclass(frozen=True)
class BinomialBand:
    """Per-bin interval for the observed frequency: ``lower``/``upper`` bounds, the observed ``proportion``
    (``sum w y / sum w``), the ``n_eff`` used (Kish's effective sample size; the row count without weights),
    the ``method`` and ``alpha``."""

    lower: np.ndarray
    upper: np.ndarray
    proportion: np.ndarray
    n_eff: np.ndarray
    method: str
    alpha: float


def binomial_band(sum_wy, sum_w, sum_w2=None, *, method: str = "wilson", alpha: float = 0.05) -> BinomialBand:
    """Per-bin binomial intervals from a diagram's per-bin sums; vectorised over bins and leading axes.

    ``sum_wy``: per bin, the sum of ``w y`` (the count of positives without weights); ``sum_w``: the sum of
    weights (the row count); ``sum_w2``: the sum of ``w^2``, for Kish's effective sample size
    ``(sum w)^2 / sum w^2``; ``None`` takes ``sum_w`` as the number of trials (unit or frequency weights).
    ``method``: ``wilson`` or ``clopper-pearson``. Bins with zero weight get NaN.
    """
    if method not in BAND_METHODS:
        raise CalibcliError(f"band method is {method!r}: expected one of {', '.join(BAND_METHODS)}")
    alpha = check_alpha(alpha)
    swy = np.asarray(sum_wy, dtype=np.float64)
    sw = np.asarray(sum_w, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(sw > 0, swy / sw, np.nan)
        if sum_w2 is None:
            n_eff = sw
        else:
            sw2 = np.asarray(sum_w2, dtype=np.float64)
            n_eff = np.where(sw2 > 0, sw * sw / sw2, 0.0)
    k = np.where(sw > 0, p * n_eff, 0.0)
    if sum_w2 is None:
        k = np.where(sw > 0, swy, 0.0)  # exact counts when they are counts
    interval = wilson_interval if method == "wilson" else clopper_pearson_interval
    lower, upper = _around(*interval(k, n_eff, alpha=alpha), p)
    return BinomialBand(
        lower=lower, upper=upper, proportion=p, n_eff=np.asarray(n_eff, dtype=np.float64), method=method, alpha=alpha
    )


def _around(lower: np.ndarray, upper: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The band widened to contain ``p`` (NaN where ``p`` or a bound is NaN)."""
    with np.errstate(invalid="ignore"):
        return np.where(lower > p, p, lower), np.where(upper < p, p, upper)


def bootstrap_band(sum_wy, sum_w, replicate_sum_wy, replicate_sum_w, *, alpha: float = 0.05) -> BinomialBand:
    """Per-bin percentile bootstrap interval of the observed frequency ``sum w y / sum w``.

    ``sum_wy``, ``sum_w``: the data's per-bin sums (shape ``(..., bins)``); ``replicate_sum_wy``,
    ``replicate_sum_w``: the same sums on each resample, replicates on the first axis ``(R, ..., bins)`` (the
    bins fixed). A resample with no weight in a bin has no frequency there and is left out of that bin's
    interval; a bin empty in the data, or in every resample, gets NaN. ``n_eff`` is the bin's ``sum_w``.
    See the module docstring for the bins where this band collapses.
    """
    import warnings

    alpha = check_alpha(alpha)
    swy, sw = np.asarray(sum_wy, dtype=np.float64), np.asarray(sum_w, dtype=np.float64)
    rwy, rw = np.asarray(replicate_sum_wy, dtype=np.float64), np.asarray(replicate_sum_w, dtype=np.float64)
    if rw.ndim != sw.ndim + 1 or rw.shape[1:] != sw.shape or rwy.shape != rw.shape:
        raise CalibcliError(
            f"the bootstrap band's replicates have shape {rw.shape}: expected (replicates, "
            f"{', '.join(map(str, sw.shape))}), the bins of the data on a leading axis of resamples"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(sw > 0, swy / sw, np.nan)
        freq = np.where(rw > 0, rwy / rw, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a bin empty in every resample: NaN, said above
        lower, upper = (
            np.nanquantile(freq, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
            if len(freq)
            else (np.full(sw.shape, np.nan), np.full(sw.shape, np.nan))
        )
    lower, upper = _around(np.where(sw > 0, lower, np.nan), np.where(sw > 0, upper, np.nan), p)
    return BinomialBand(lower=lower, upper=upper, proportion=p, n_eff=sw, method="bootstrap", alpha=alpha)
