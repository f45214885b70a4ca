"""Discrete predictors (SPEC 4.4; seed 004, 8.2.4): the exact binomial test per distinct prediction value, and
the ``--discrete auto`` rule that chooses it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.core.validation import check_alpha, check_binary, check_option

#: Discrete predictors (SPEC 4.4): ``--discrete auto`` uses the binomial test when the number of
#: distinct prediction values t satisfies ``t <= sqrt(n)``.
DISCRETE_RULE = "t <= sqrt(n): at most sqrt(n) distinct prediction values (on average >= sqrt(n) predictions per value)"


@dataclass(frozen=True)
class BinomialRow:
    """One distinct prediction value ``value`` with ``n`` predictions, ``positives`` of them positive."""

    value: float
    n: int
    positives: int
    observed_rate: float
    p_value: float
    reject: bool


@dataclass(frozen=True)
class BinomialTestResult:
    """Exact binomial test per distinct value, Bonferroni over the ``n_values`` values (SPEC 4.4)."""

    reject: bool
    p_value: float
    alpha: float
    n: int
    n_values: int
    per_value_alpha: float
    method: str
    rows: tuple[BinomialRow, ...]


@dataclass(frozen=True)
class DiscreteCheck:
    """Whether ``{opt:discrete} auto`` treats the predictor as discrete, and why."""

    discrete: bool
    n_distinct: int
    n: int
    threshold: float
    rule: str


def discreteness(y_prob) -> DiscreteCheck:
    """Apply the ``--discrete auto`` rule: discrete when the distinct values number at most ``sqrt(n)``.

    With ``t <= sqrt(n)`` every value has on average at least ``sqrt(n)`` predictions, enough for a
    binomial test per value; continuous predictors have ``t`` close to ``n``. Histogram-binned and
    scaling-binned models (B values) fall on the discrete side as soon as ``n >= B^2``.
    """
    z = np.asarray(y_prob, dtype=np.float64).reshape(-1)
    return discreteness_from_counts(int(len(np.unique(z))), len(z))


def discreteness_from_counts(n_distinct: int, n: int) -> DiscreteCheck:
    """The rule of :func:`discreteness` for a predictor known by its counts: ``t`` distinct values among ``n``."""
    threshold = math.sqrt(n)
    return DiscreteCheck(
        discrete=bool(n > 0 and n_distinct <= threshold),
        n_distinct=int(n_distinct),
        n=int(n),
        threshold=threshold,
        rule=DISCRETE_RULE,
    )


def is_discrete(y_prob) -> bool:
    """``True`` when :func:`discreteness` says the predictor takes few distinct values."""
    return discreteness(y_prob).discrete


def binomial_test(y_true, y_prob, *, alpha: float = 0.05) -> BinomialTestResult:
    """Exact two-sided binomial test of ``P(Y = 1 | z = v) = v`` per distinct value v (seed 004, 8.2.4).

    For each of the ``t`` distinct values, ``M_v`` positives among ``N_v`` predictions are compared
    with ``Binomial(N_v, v)`` (``scipy.stats.binomtest``, two-sided: the total probability of counts
    no more likely than the observed one). Bonferroni over the t values: reject if
    ``min_v p_v <= alpha / t``; p-value ``min(1, t min_v p_v)``.
    """
    alpha = check_alpha(alpha)
    y, z, _ = check_binary(y_true, y_prob)
    values, inverse = np.unique(z, return_inverse=True)
    N = np.bincount(inverse, minlength=len(values))
    M = np.bincount(inverse, weights=y, minlength=len(values)).astype(np.int64)
    return binomial_test_from_counts(values, N, M, alpha=alpha)


def binomial_test_from_counts(values, n, positives, *, alpha: float = 0.05) -> BinomialTestResult:
    """:func:`binomial_test` from its sufficient statistics: the distinct values ``v`` (increasing), and per
    value the predictions ``N_v`` (``n``) and the positives ``M_v`` (``positives``) among them.

    Counts add across batches and workers, so a streamed run tests every row exactly
    (:class:`calibcli.tcal.accumulator.ValueCounts`).
    """
    alpha = check_alpha(alpha)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    N = np.asarray(n, dtype=np.int64).reshape(-1)
    M = np.asarray(positives, dtype=np.int64).reshape(-1)
    check_option(
        len(values) >= 1 and len(values) == len(N) == len(M),
        f"the binomial test needs one count and one positive count per value, got {len(values)} values, "
        f"{len(N)} counts and {len(M)} positive counts",
    )
    check_option(bool(np.all((values >= 0.0) & (values <= 1.0))), "prediction values must lie in [0, 1]")
    check_option(
        bool(np.all(N >= 1) and np.all((M >= 0) & (M <= N))),
        "every value needs at least one prediction and between 0 and that many positives",
    )
    t = len(values)
    per_value_alpha = alpha / t
    # a loop over the distinct values, not rows
    p = np.array([binomtest_pvalue(int(k), int(nn), float(v)) for k, nn, v in zip(M, N, values, strict=True)])
    rows = tuple(
        BinomialRow(
            value=float(v),
            n=int(nn),
            positives=int(k),
            observed_rate=float(k / nn),
            p_value=float(pv),
            reject=bool(pv <= per_value_alpha),
        )
        for v, nn, k, pv in zip(values, N, M, p, strict=True)
    )
    p_min = float(p.min())
    return BinomialTestResult(
        reject=bool(p_min <= per_value_alpha),
        p_value=min(1.0, t * p_min),
        alpha=float(alpha),
        n=int(N.sum()),
        n_values=int(t),
        per_value_alpha=float(per_value_alpha),
        method="exact two-sided binomial test per distinct value (scipy.stats.binomtest), Bonferroni over values",
        rows=rows,
    )


def binomtest_pvalue(k: int, n: int, p: float) -> float:
    """The two-sided p-value of ``scipy.stats.binomtest(k, n, p)``: the total probability of the counts no more
    likely than ``k`` (within a relative 1e-7), the same steps on the same Boost functions that scipy.stats calls,
    without importing scipy.stats (about a second of a small report's start-up); ``0 <= k <= n``, ``0 <= p <= 1``.
    """
    try:
        from scipy.special._ufuncs import _binom_cdf, _binom_pmf, _binom_sf
    except ImportError:  # (a SciPy without these ufuncs: its own test)
        from scipy.stats import binomtest

        return float(binomtest(k, n, p).pvalue)

    # scipy.stats.binom's pmf, cdf and sf: Boost (its double loop) inside the support [0, n], their values outside it
    n_, p_ = np.float64(n), np.float64(p)

    def pmf(x: float) -> float:
        return (
            min(max(float(_binom_pmf(np.float64(x), n_, p_)), 0.0), 1.0) if 0 <= x <= n and x == math.floor(x) else 0.0
        )

    def cdf(x: float) -> float:
        if x >= n:
            return 1.0
        return min(max(float(_binom_cdf(np.float64(math.floor(x)), n_, p_)), 0.0), 1.0) if x >= 0 else 0.0

    def sf(x: float) -> float:
        if x < 0:
            return 1.0
        return min(max(float(_binom_sf(np.float64(math.floor(x)), n_, p_)), 0.0), 1.0) if x < n else 0.0

    d = pmf(k)
    rerr = 1 + 1e-7
    if k == p * n:
        return 1.0
    if k < p * n:  # the first count above the mode no more likely than k
        ix = _search(lambda x: -pmf(x), -d * rerr, float(np.ceil(p * n)), n)
        y = n - ix + int(d * rerr == pmf(ix))
        pval = cdf(k) + sf(n - y)
    else:  # the last count below the mode no more likely than k
        ix = _search(pmf, d * rerr, 0, float(np.floor(p * n)))
        pval = cdf(ix) + sf(k - 1)
    return min(1.0, pval)


def _search(a, d: float, lo: float, hi: float) -> float:
    """scipy.stats' ``_binary_search_for_binom_tst``: the ``i`` in ``[lo, hi]`` with ``a(i) <= d < a(i + 1)``, ``a``
    increasing there."""
    while lo < hi:
        mid = lo + (hi - lo) // 2
        midval = a(mid)
        if midval < d:
            lo = mid + 1
        elif midval > d:
            hi = mid - 1
        else:
            return mid
    return lo if a(lo) <= d else lo - 1
