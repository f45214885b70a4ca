"""The T-Cal test (SPEC 4.2; Algorithms 1 and 2 of seed 004) and its statistic (SPEC 4.1), on arrays.

:func:`tcal_test` validates the input, chooses the levels, builds the engine for the data's mode
(:mod:`calibcli.tcal.scalar` or :mod:`calibcli.tcal.vector`), draws one set of resamples for every level
(:func:`calibcli.tcal.engine.resample_all`) and combines the per-level p-values
(:mod:`calibcli.tcal.combine`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.core.validation import check_alpha, check_binary, check_multiclass, check_option
from calibcli.tcal.combine import monte_carlo_combine
from calibcli.tcal.engine import Engine, resample_all
from calibcli.tcal.results import COMBINES, NULLS, STATISTIC_NAME, TcalLevel, TcalResult
from calibcli.tcal.scalar import SharedDraws, SortedScalarEngine
from calibcli.tcal.scales import chebyshev_constant, check_cells, n_levels, optimal_n_bins
from calibcli.tcal.simplex import simplex_bin_index
from calibcli.tcal.vector import GroupVectorEngine

#: Canonical mode: warn when the minimax detectable l2-ECE for Lipschitz (s = 1) miscalibration,
#: ``n^(-2/(K+3))``, exceeds this.
HOPELESS_RATE = 0.1


def prepare(y_true, y_prob, sample_weight):
    """Validate; return (mode, K, y or c, z or P, w or None, weighted)."""
    arr = np.asarray(y_prob)
    if arr.ndim == 2 and arr.shape[1] == 2:
        c, P, w = check_multiclass(y_true, arr, sample_weight)
        y, z = c, P[:, 1].copy()
        mode, K = "binary", 2
        data = (y, z)
    elif arr.ndim == 2:
        c, P, w = check_multiclass(y_true, arr, sample_weight)
        mode, K = "canonical", P.shape[1]
        data = (c, P)
    else:
        y, z, w = check_binary(y_true, arr, sample_weight)
        mode, K = "binary", 2
        data = (y, z)
    weighted = sample_weight is not None and not np.all(w == w[0])
    labels, probs = data
    if weighted:
        keep = w > 0  # rows of weight 0 contribute nothing
        labels, probs, w = labels[keep], probs[keep], w[keep]
    else:
        w = None  # constant weights change nothing: T_m is invariant to a common factor
    return mode, K, labels, probs, w, weighted


def make_engine(mode: str, K: int, labels, probs, w, n_bins_list: list[int], order=None, swept: int = 0) -> Engine:
    """The engine of the data's mode; ``order``: a candidate sort order of binary predictions (checked);
    ``swept``: the y-bootstrap resamples it will sweep (the size of the work chooses the sweep's backend)."""
    if mode == "binary":
        return SortedScalarEngine(probs, labels.astype(np.float64), w, n_bins_list, order=order, resamples=swept)
    P = probs / probs.sum(axis=1, keepdims=True)
    groups = [simplex_bin_index(P, m) for m in n_bins_list]
    return GroupVectorEngine(P, labels, w, groups, scale=1.0)


def tcal_statistic(y_true, y_prob, *, n_bins: int, sample_weight=None) -> float:
    """The debiased plug-in statistic ``T_m`` of SPEC 4.1 with ``n_bins`` = m bins per axis.

    Binary (1-D ``y_prob``, or two columns): ``(1/n) sum_b (1/n_b) [(sum_b U)^2 - sum_b U^2]`` with
    ``U = y - z`` and equal-width bins. Canonical (K > 2 columns): the same with ``U = e_c - P``,
    squared norms, and the simplex partition of SPEC 4.3. With weights, ``n`` and ``n_b`` become
    sums of weights and the debiasing term ``sum w^2 U^2``. It estimates the squared l2-ECE (it can
    be negative).
    """
    check_option(int(n_bins) >= 1, f"n_bins is {n_bins}: expected at least 1 bin per axis")
    mode, K, labels, probs, w, _ = prepare(y_true, y_prob, sample_weight)
    engine = make_engine(mode, K, labels, probs, w, [int(n_bins)])
    return float(engine.observed()[engine.level_of[0]])


@dataclass(frozen=True)
class _Test:
    """One test set up (validated, its levels and engine made), before its resamples."""

    engine: Engine
    mode: str
    K: int
    n: int
    L: int
    R: int
    null: str
    combine: str
    alpha: float
    adaptive: bool
    smoothness: float | None
    weighted: bool
    n_bins_list: list[int]
    warnings: list[str]


@dataclass(frozen=True)
class _Options:
    """The options of :func:`tcal_test` (and :func:`tcal_tests`) that every test of a call shares."""

    smoothness: float | None
    null: str
    n_boot: int
    combine: str
    alpha: float


def _set_up(y_true, y_prob, sample_weight, o: _Options, orders: dict[int, np.ndarray]) -> _Test:
    """Validate the options and the data (in this order, so the first error is the same), choose the levels
    and make the engine. ``orders``: sort orders of binary predictions by their number of rows, to try first
    (other predictions of the same rows; a monotone recalibration keeps their order) and to add to."""
    check_option(o.null in NULLS, f"unknown null {o.null!r}: expected one of {', '.join(NULLS)}")
    check_option(o.combine in COMBINES, f"unknown combine rule {o.combine!r}: expected one of {', '.join(COMBINES)}")
    alpha = check_alpha(o.alpha)
    check_option(
        o.null == "chebyshev" or int(o.n_boot) >= 1, f"{{opt:n_boot}} is {o.n_boot}: expected at least 1 resample"
    )
    check_option(
        not (o.null == "chebyshev" and o.combine == "min-p"),
        "{opt:combine} min-p calibrates the minimum p-value over resamples, and {opt:null} chebyshev draws none: "
        "use {opt:combine} bonferroni with chebyshev, or a resampling null",
    )
    check_option(
        o.smoothness is None or o.smoothness > 0,
        f"{{opt:smoothness}} is {o.smoothness}: expected a positive Holder exponent",
    )
    mode, K, labels, probs, w, weighted = prepare(y_true, y_prob, sample_weight)
    check_option(
        not weighted or o.null == "y-bootstrap",
        f"sample weights are supported by {{opt:null}} y-bootstrap only (got {{opt:null}} {o.null}): "
        "drop the weights or use the y-bootstrap",
    )
    n = len(labels)
    check_option(n >= 2, f"T-Cal needs at least 2 predictions, got {n}")
    R = 0 if o.null == "chebyshev" else int(o.n_boot)

    adaptive = o.smoothness is None
    if o.smoothness is None:
        L = n_levels(n, K)
        n_bins_list = [2**b for b in range(1, L + 1)]
    else:
        L = 1
        n_bins_list = [optimal_n_bins(n, float(o.smoothness), K)]
        check_cells(n_bins_list[0], K, n, float(o.smoothness))

    warnings: list[str] = []
    if mode == "canonical":
        rate = n ** (-2.0 / (K + 3))
        if rate > HOPELESS_RATE:
            warnings.append(
                f"canonical mode with K = {K} classes splits the simplex into m^{K - 1} cells "
                f"({2 ** (K - 1)} already at m = 2), and the smallest detectable l2-ECE shrinks only like "
                f"n^(-2s/(4s+K-1)) (about {rate:.2f} here for s = 1): the test has little power; "
                f"use {{opt:mode}} top-label to test the confidence of the predicted class instead"
            )

    order = orders.get(n) if mode == "binary" else None
    engine = make_engine(mode, K, labels, probs, w, n_bins_list, order=order, swept=R if o.null == "y-bootstrap" else 0)
    if isinstance(engine, SortedScalarEngine):
        orders.setdefault(n, engine.order)
    return _Test(
        engine, mode, K, n, L, R, o.null, o.combine, alpha, adaptive, o.smoothness, weighted, n_bins_list, warnings
    )


def _result(t: _Test, star: np.ndarray | None) -> TcalResult:
    """The test's result from its resampled statistics (``star``: R x distinct partitions; None for chebyshev)."""
    engine, mode, K, n, L, R = t.engine, t.mode, t.K, t.n, t.L, t.R
    null, combine, alpha, adaptive, smoothness = t.null, t.combine, t.alpha, t.adaptive, t.smoothness
    weighted, n_bins_list, warnings = t.weighted, t.n_bins_list, list(t.warnings)
    observed = engine.observed()  # one value per distinct partition
    level_of = np.asarray(engine.level_of)
    T_obs = observed[level_of]
    n_cells = [m ** (K - 1) for m in n_bins_list]

    crit: list[float | None]
    if null == "chebyshev":
        C = np.array([chebyshev_constant(n, m, K, scalar=(mode == "binary")) for m in n_bins_list])
        p_levels = np.where(T_obs > 0, np.minimum(1.0, (C / np.where(T_obs > 0, T_obs, 1.0)) ** 2), 1.0)
        per_level_alpha = alpha / L
        critical = [float(c / math.sqrt(per_level_alpha)) for c in C]
        reject_levels = [bool(t >= cv) for t, cv in zip(T_obs, critical, strict=True)]
        crit = list(critical)
        p_value = min(1.0, L * float(p_levels.min()))
        p_value_min_p = None
        reject = any(reject_levels)
        exact = False
        can_reject = True  # a critical value for every level, whatever alpha
    else:
        assert star is not None  # (drawn for every null but chebyshev)
        mc = monte_carlo_combine(observed, star, level_of, alpha)
        p_levels = mc.p_levels
        threshold = mc.threshold_bonferroni if combine == "bonferroni" else mc.threshold_min_p
        p_value = mc.p_value_bonferroni if combine == "bonferroni" else mc.p_value_min_p
        p_value_min_p = mc.p_value_min_p
        total = R + 1
        per_level_alpha = threshold / total
        reject_levels = [bool(c <= threshold) for c in mc.counts]
        reject = any(reject_levels)
        # too few resamples for alpha whatever the data (min-p's threshold may also be 0 from ties in these data)
        can_reject = math.floor((alpha / L if combine == "bonferroni" else alpha) * total * (1 + 1e-12)) >= 1
        crit = []
        for j in range(L):
            if threshold < 1 or threshold - 1 >= R:
                crit.append(None)
                continue
            column = np.sort(star[:, level_of[j]])[::-1]
            crit.append(float(column[threshold - 1]))
        if threshold < 1:
            need = math.ceil(L / alpha) - 1 if combine == "bonferroni" else math.ceil(1 / alpha) - 1
            level = f"alpha/L = {alpha / L:.3g}" if combine == "bonferroni" else f"alpha = {alpha:.3g}"
            # the level these resamples can reach, for when the resamples it would take do not fit in memory
            least_alpha = (L if combine == "bonferroni" else 1) / total
            per = L if combine == "bonferroni" else 1
            fix = (
                f"use {{opt:n_boot}} {need} or more"
                if need <= MOST_RESAMPLES_ADVISED
                else f"use {{opt:alpha}} {_up(least_alpha)} or more (at {{opt:n_boot}} {R})"
                if least_alpha < 0.5
                else f"use {{opt:alpha}} 0.05 with {{opt:n_boot}} {math.ceil(per / 0.05) - 1} or more"
            )
            warnings.append(
                f"with {{opt:n_boot}} {R} the smallest attainable p-value is 1/{total} = {1 / total:.3g}, "
                f"too large for {level}: the test cannot reject; {fix}"
            )
        exact = null == "y-bootstrap"
        if null == "consistency":
            warnings.append(
                "{opt:null} consistency resamples the predictions as well as the labels: its p-value is approximate, "
                "not exact (seed 004, 8.3.3); {opt:null} y-bootstrap is exact"
            )

    levels = tuple(
        TcalLevel(
            level=(b + 1 if adaptive else 1),
            n_bins=int(m),
            n_cells=int(cells),
            n_nonempty=int(engine.nonempty[b]),
            statistic=float(T_obs[b]),
            critical_value=crit[b],
            p_value=float(p_levels[b]),
            reject=reject_levels[b],
        )
        for b, (m, cells) in enumerate(zip(n_bins_list, n_cells, strict=True))
    )
    return TcalResult(
        reject=bool(reject),
        p_value=float(p_value),
        p_value_bonferroni=min(1.0, L * float(np.min(p_levels))),
        p_value_min_p=None if p_value_min_p is None else float(p_value_min_p),
        alpha=float(alpha),
        null=null,
        combine=combine,
        adaptive=adaptive,
        smoothness=None if smoothness is None else float(smoothness),
        mode=mode,
        n_classes=K,
        n=n,
        n_boot=R,
        n_levels=L,
        per_level_alpha=float(per_level_alpha),
        exact=bool(exact),
        weighted=bool(weighted),
        statistic_name=STATISTIC_NAME,
        levels=levels,
        warnings=tuple(warnings),
        can_reject=can_reject,
    )


def _up(x: float) -> str:
    """``x`` rounded up to 3 significant digits: an advised level that is at least the one needed."""
    digits = 2 - math.floor(math.log10(x))
    return f"{math.ceil(x * 10**digits) / 10**digits:.3g}"


#: The most resamples a warning advises: beyond, it advises a larger alpha (1e18 resamples would never finish).
MOST_RESAMPLES_ADVISED = 10_000_000


def tcal_test(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    smoothness: float | None = None,
    null: str = "y-bootstrap",
    n_boot: int = 1000,
    combine: str = "bonferroni",
    alpha: float = 0.05,
    rng: np.random.Generator | None = None,
    progress: Callable[[], None] | None = None,
) -> TcalResult:
    """Test the null hypothesis of perfect calibration with T-Cal (seed 004; SPEC 4.2).

    Inputs: binary labels and 1-D probabilities (binary or top-label data; the caller reduces
    top-label to binary), or integer labels and an (n, K) probability matrix (canonical mode;
    K = 2 columns reduce to binary on column 1).

    ``smoothness=None`` runs the adaptive test (Algorithm 2): levels ``b = 1..L`` with ``m = 2^b``.
    A number ``s`` runs the single-scale test with ``m* = floor(n^(2/(4s+K-1)))`` bins per axis.

    ``null``: ``y-bootstrap`` (keep z, draw ``y* ~ Bernoulli(z)``; the Monte Carlo p-value is exact),
    ``consistency`` (z* resampled with replacement, then ``y* ~ Bernoulli(z*)``; approximate), or
    ``chebyshev`` (no resampling; the conservative critical value of Theorem 3.1). One set of
    ``n_boot`` resamples serves every level and both combination rules.

    ``combine``: ``bonferroni`` (reject if some level has ``p_b <= alpha/L``; p-value
    ``min(1, L min_b p_b)``) or ``min-p`` (``min_b p_b`` calibrated against its own distribution over
    the same resamples; exact under the y-bootstrap). For ``chebyshev``, the per-level p-value is
    the smallest level at which Theorem 3.1's test rejects: ``min(1, (C_m / T_m)^2)`` for
    ``T_m > 0`` (its critical value is ``C_m / sqrt(alpha)``), else 1; ``min-p`` needs resamples
    and is refused.

    ``rng``: the source of all randomness (``None`` means ``numpy.random.default_rng(0)``).
    ``progress``: called once per finished resample (for a progress bar).
    Sample weights are supported by the y-bootstrap only (weights held fixed, labels redrawn).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    options = _Options(smoothness, null, n_boot, combine, alpha)
    (result,) = _run([(y_true, y_prob, sample_weight)], options, lambda: rng, progress)
    return result


def tcal_tests(
    problems: Sequence[tuple[Any, Any, Any]],
    *,
    seed: int,
    smoothness: float | None = None,
    null: str = "y-bootstrap",
    n_boot: int = 1000,
    combine: str = "bonferroni",
    alpha: float = 0.05,
) -> list[TcalResult]:
    """:func:`tcal_test` of each ``(y_true, y_prob, sample_weight)`` with ``rng=numpy.random.default_rng(seed)``
    and the same options, the same results, computed together: the held-out comparison of recalibration
    methods (``recalibrate evaluate``, ``calibcli report``) tests several predictions of the same rows.

    What is shared is what is provably the same. Binary tests of the same number of rows under the
    y-bootstrap draw the same uniforms (the same seed, chunks and blocks), compared with each test's own sorted
    predictions: they are drawn once (:func:`calibcli.tcal.scalar.sweep`). Each binary test first tries the
    sort order of the previous one with as many rows (monotone maps keep it, and ties they create are
    checked: :func:`calibcli.tcal.scalar.is_stable_order`), and sorts only when it is not its own.
    """
    return _run(problems, _Options(smoothness, null, n_boot, combine, alpha), lambda: np.random.default_rng(seed))


def _run(
    problems: Sequence[tuple[Any, Any, Any]],
    o: _Options,
    rng: Callable[[], np.random.Generator],
    progress: Callable[[], None] | None = None,
) -> list[TcalResult]:
    """The tests of :func:`tcal_tests` (:func:`tcal_test`'s is the one problem's): each set of resamples drawn
    from a generator of its own, ``rng()``, and ``progress()`` called once per resample of each set."""
    orders: dict[int, np.ndarray] = {}
    tests = [_set_up(y_true, y_prob, sample_weight, o, orders) for y_true, y_prob, sample_weight in problems]
    stars: list[np.ndarray | None] = [None] * len(tests)
    shared: dict[int, list[int]] = {}  # rows -> the binary y-bootstrap tests that can share their draws
    for i, t in enumerate(tests):
        if t.R and t.null == "y-bootstrap" and isinstance(t.engine, SortedScalarEngine):
            shared.setdefault(t.n, []).append(i)
        elif t.R:
            stars[i] = resample_all(t.engine, rng(), t.R, t.null, progress)
    for members in shared.values():
        engines = [tests[i].engine for i in members]
        assert all(isinstance(e, SortedScalarEngine) for e in engines)  # (as grouped above)
        draws = SharedDraws([e for e in engines if isinstance(e, SortedScalarEngine)])
        star = resample_all(draws, rng(), tests[members[0]].R, o.null, progress)
        for i, part in zip(members, draws.split(star), strict=True):
            stars[i] = part
    return [_result(t, star) for t, star in zip(tests, stars, strict=True)]
