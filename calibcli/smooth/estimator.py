"""SmoothECE: the calibration error of a kernel-smoothed residual (SPEC section 3).

Source: J. Blasiok and P. Nakkiran, "Smooth ECE: Principled Reliability Diagrams via Kernel
Smoothing" (2023; seed 003), and its reference package relplot (apple/ml-calibration). The
mathematics follows SPEC section 3 exactly; relplot's numerical shortcuts are *not* reproduced
(see "Differences from relplot 1.0.3" below).

Definitions (binary problem, predictions ``z_i`` in [0, 1], labels ``y_i`` in {0, 1}, weights
``w_i >= 0`` with total ``W``):

- reflected Gaussian kernel ``K_s(t, z) = sum_k [phi_s(t - z - 2k) + phi_s(t + z - 2k)]``, the heat
  kernel of [0, 1] with reflecting ends. ``int_0^1 K_s(t, z) dt = 1`` for every z, including z = 0 and
  z = 1 (a prediction at an end carries its full weight), and the uniform distribution is invariant;
- smoothed residual ``r_s(t) = (1/W) sum_i w_i K_s(t, z_i) (y_i - z_i)`` and
  ``smECE_s = int_0^1 |r_s(t)| dt``, non-increasing in s;
- the SmoothECE is the fixed point ``s*`` with ``smECE_{s*} = s*``; we report ``smECE_{s*}`` and ``s*``.

Data as sums per grid cell (SPEC 8). Everything below is computed from the rows' sums per
``(label, cell)`` of a uniform grid of M cells: the count and ``sum w f^p`` (p = 0..3) and ``sum w^2``,
where ``f`` in [0, 1] is a prediction's position inside its cell (:class:`CellSums`). These sums add
across batches and workers (the state of :class:`calibcli.smooth.accumulator.SmoothAccumulator`),
and the sums on any coarser grid of M / 2^L cells follow from them exactly (``f' = (f + b) / 2^L``,
with b the fine cell's place inside the coarse one, expanded binomially).

Computation (seed 003, section 3.5, made exact). The residual measure is put on a uniform grid by
an interpolating deposit that keeps its mass, mean and second moment in every cell: linear
interpolation ("cloud in cell") onto the cell's two nodes, plus ``f (1 - f) / 4`` times the stencil
``(-1, 1, 1, -1)`` on the nodes ``j - 1 .. j + 2`` (which removes linear interpolation's excess
second moment ``f (1 - f) h^2``). The reflected, period-2 extension of that grid measure is even, so
its Fourier series is a DCT-I of the M + 1 grid values (end values doubled: the reflection of a
point at 0 or 1 lands on itself; stencil weights beyond an end are folded back). For each bandwidth
the spectrum is multiplied by the Gaussian's exact Fourier transform ``exp(-(pi k s)^2 / 2)`` (every
reflection at once, no truncation) and by ``1 / sinc^2``, which compensates the piecewise-linear
reading of the result between nodes; one inverse DCT-I gives ``r_s`` at the grid nodes, and ``|r_s|``
is integrated exactly for the piecewise-linear interpolant (zero crossings inside a cell handled).
Against the exact value (a Fourier sum over the points themselves), the error at a bandwidth of c
cells is about 1e-5 relative at c = 4, 3e-6 at c = 8 and 3e-7 at c = 16, with every point at the
worst place in its cell (linear interpolation alone: 4e-4 at c = 8, 3e-5 at c = 32). The point
estimate uses ``CELLS_PER_SIGMA`` cells per bandwidth where the data allow; the accumulator's grid
of ``STATS_GRID`` cells gives ``MIN_CELLS_PER_SIGMA`` (8) cells at ``sigma = 2^-14``, the SPEC 8
first-pass requirement. A smaller ``s*`` on sums without rows sets ``needs_finer_grid``: the caller
streams the data again into an accumulator of ``finer_grid`` cells. Below two cells per bandwidth
(unresolved) the deposit is plain linear interpolation and the kernel the Gaussian *sampled* at the
nodes, a positive kernel of mass 1. The fixed point is found by Brent's method on ``smECE_s - s``
(strictly decreasing), bracketed by ``|mean residual| <= s* <= mean |residual|``, to
``|s - smECE_s| <= FIXED_POINT_TOL``.

Bootstrap (SPEC 2.4 and 8): the Poisson bootstrap, every replicate re-solving its own ``s*``.

- While the rows are at hand (at most ``ROW_LIMIT`` of them), each row is resampled exactly: row ``i``
  weighs ``m_ir w_i`` in replicate ``r``, with ``m_ir ~ Poisson(1)`` a function of ``(seed, r, i)``
  only (:class:`calibcli.core.resampling.Multiplicities`), so any split of the data gives the same replicates.
- Beyond, replicates are drawn from the per-(label, cell) sums. With unit weights a cell's resampled
  count of positives (and of negatives) is exactly ``Poisson(count)``, independent across cells;
  given that count K, the sums of ``f`` and ``f^2`` over the K resampled rows are drawn with their
  exact conditional mean and variance (``K mean(f)``, ``K var(f)``; normal, clipped to their range;
  ``sum f^2`` keeps the cell's spread). With weights the resampled weight of a cell given K has the
  exact conditional mean ``K mean(w)`` and variance ``K var(w)`` (a gamma law, which stays positive),
  so its unconditional first two moments ``sum w`` and ``sum w^2`` are exact. The draws of replicate r
  come from ``Philox(key=(seed, r))``: a function of the merged sums alone. These within-cell sums
  only move mass by a fraction of a cell between the cell's two nodes, so their approximation is far
  below the replicates' spread (``tests/smooth/test_smooth_accumulator.py`` checks the interval against the
  per-row one).

Differences from relplot 1.0.3 (``relplot.smECE``), all deliberate:
- relplot quantises the bandwidth to 1/1024 and returns the *upper* end of the last bisection
  interval, with a floor of 2/1024; here s* is solved to 1e-7 with no floor;
- relplot's mirrored grid counts a prediction at exactly 0 or 1 once instead of twice (half its
  weight); here it carries its full weight;
- relplot truncates the kernel at +-0.5 and divides by a smoothed density plus 1e-4, which inflates
  its values for badly miscalibrated predictors (large s*); here the kernel has every reflection;
- relplot's bootstrap is unseeded; here every resample is a function of the seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibcli.core.family import Bootstrap
from calibcli.core.resampling import percentile_intervals
from calibcli.core.validation import (
    check_consistent_length,
    check_labels,
    check_option,
    check_options,
    check_probabilities,
    check_sample_weight,
)
from calibcli.smooth.bootstrap import CellBootstrap as _CellBootstrap
from calibcli.smooth.bootstrap import RowBootstrap as _RowBootstrap
from calibcli.smooth.bootstrap import bootstrap_values_groups as _bootstrap_values_groups
from calibcli.smooth.grid import (
    BOOT_CELLS_PER_SIGMA,
    BOOT_MIN_GRID,
    CURVE_POINTS,
    MAX_GRID,
    MIN_CELLS_PER_SIGMA,
    ROW_LIMIT,
    STATS_GRID,
    CellSums,
    _curve_on,
    _grid_level,
    _GridData,
    _solve_fixed_point,
)


@dataclass(frozen=True)
class SmoothCurve:
    """Data of the smooth reliability diagram (SPEC sections 3 and 6), at bandwidth ``sigma``.

    ``t`` is a uniform grid over [0, 1]; ``yhat`` the kernel regression of y on z,
    ``sum_i w_i K(t, z_i) y_i / sum_i w_i K(t, z_i)`` (NaN where the density is below
    ``DENSITY_FLOOR`` times its maximum); ``density`` the prediction density
    ``(1/W) sum_i w_i K(t, z_i)`` (integrates to 1 over [0, 1]). ``band_low``/``band_high`` are the
    pointwise bootstrap percentile band of ``yhat`` (the bandwidth re-solved on each resample), and
    ``ci_low``/``ci_high`` the interval of the smECE from the same resamples; all None without bootstrap.
    """

    t: np.ndarray
    yhat: np.ndarray
    density: np.ndarray
    sigma: float
    smece: float
    sigma_is_fixed_point: bool
    band_low: np.ndarray | None
    band_high: np.ndarray | None
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    alpha: float
    n: int
    weight_total: float
    ci_method: str | None = None
    needs_finer_grid: bool = False


@dataclass(frozen=True)
class SmoothECEResult:
    """SmoothECE of one binary problem (SPEC section 3).

    ``smece`` is ``smECE_sigma``; ``sigma`` is the fixed point s* (``sigma_is_fixed_point``) or the
    bandwidth that was given. ``fixed_point_gap`` is ``|sigma - smece|`` for a fixed point (<= 1e-7).
    ``ci_low``/``ci_high`` are the bootstrap percentile interval at level ``1 - alpha`` (None without
    bootstrap), made as ``ci_method`` says; ``replicates`` holds the ``n_boot`` bootstrap values.
    ``grid_size`` is the number of grid cells used for ``sigma``. ``needs_finer_grid`` is True when
    ``sigma`` is below what the per-cell sums resolve at SPEC 3's accuracy (fewer than
    ``MIN_CELLS_PER_SIGMA`` cells, and the rows are not at hand): stream the data again into an
    accumulator of ``finer_grid`` cells (SPEC 8's second pass). ``curve`` is the smooth reliability
    diagram's data when it was asked for.
    """

    smece: float
    sigma: float
    sigma_is_fixed_point: bool
    n: int
    weight_total: float
    fixed_point_gap: float | None
    ci_low: float | None
    ci_high: float | None
    n_boot: int
    alpha: float
    grid_size: int
    replicates: np.ndarray | None = field(default=None, repr=False, compare=False)
    ci_method: str | None = None
    needs_finer_grid: bool = False
    finer_grid: int | None = None
    curve: SmoothCurve | None = field(default=None, repr=False, compare=False)


def _percentiles(values: np.ndarray, alpha: float, axis=0):
    """Percentile interval; a replicate that could not be computed (NaN) is left out."""
    import warnings

    with warnings.catch_warnings():
        # Where no resample has data (a curve point far from every prediction) the band is NaN.
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(values, [alpha / 2, 1 - alpha / 2], axis=axis)


def percentile_interval(replicates: np.ndarray, alpha: float) -> tuple[float, float]:
    """Percentile bootstrap interval at level ``1 - alpha`` of replicates (NaN ones left out)."""
    low, high = _percentiles(np.asarray(replicates, dtype=np.float64), alpha)
    return float(low), float(high)


# ----------------------------------------------------------------------------------------------
# Finishing a state (the accumulator's result, and the library's one-batch case)
# ----------------------------------------------------------------------------------------------


def _check_sigma(sigma) -> float:
    check_option(sigma is not None, "sigma is None: expected a positive bandwidth")
    check_options(sigma=sigma)
    return float(sigma)


def finish(
    sums: CellSums,
    rows,
    *,
    n: int,
    sigma: float | None = None,
    n_boot: int = 0,
    alpha: float = 0.05,
    seed: int = 0,
    curve_points: int | None = None,
    progress: Callable[[], None] | None = None,
) -> SmoothECEResult:
    """SmoothECE (and the curve) of a binary problem given by its per-cell ``sums`` and, if at hand, its rows.

    ``rows`` is ``(row_index, z, y, w)`` sorted by global row index (``w`` None for unit weights), or
    None; ``n`` the number of rows. With rows, grids finer than ``sums.n_cells`` and the exact per-row
    bootstrap are available; without, the bootstrap draws from the sums and a bandwidth below
    ``MIN_CELLS_PER_SIGMA`` cells sets ``needs_finer_grid``. This is what
    :meth:`calibcli.smooth.accumulator.SmoothAccumulator.result` and the library functions call: the
    one-problem case of :func:`finish_groups`.
    """
    return finish_groups(
        [(sums, rows, n)],
        Bootstrap(n_boot=n_boot, alpha=alpha, seed=seed),
        sigma=sigma,
        curve_points=curve_points,
        progress=None if progress is None else lambda steps=1: [progress() for _ in range(steps)],
    )[0]


def finish_groups(
    problems: list, boot: Bootstrap, *, sigma: float | None = None, curve_points: int | None = None, progress=None
) -> list[SmoothECEResult]:
    """:func:`finish` of many problems (the groups of an input; ``(sums, rows, n)`` each) at once, with the
    bootstrap ``boot`` (resamples, level, seed: the family's options, checked when made): each group's own fixed
    point, then every group's bootstrap replicates together (their fixed points one batched Brent search over
    the groups x replicates, :func:`calibcli.smooth.bootstrap.bootstrap_values_groups`); the same numbers as each
    group alone. ``progress(steps)`` is told the (group, resample) pairs finished."""
    n_boot, alpha, seed = int(boot.n_boot), boot.alpha, boot.seed
    if curve_points is not None:
        check_options(curve_points=curve_points)
    want_curve = curve_points is not None
    fixed = sigma is None
    points: list = []
    boots: list[_RowBootstrap | _CellBootstrap] = []
    for sums, rows, _ in problems:  # each group's own fixed point (its grid refined as it needs)
        data = _GridData(sums, None if rows is None else rows[1:], want_curve=want_curve)
        check_option(data.weight_total > 0, "the rows' total weight is 0: SmoothECE needs rows of positive weight")
        if fixed:
            s, value, gap, n_cells, exact = _solve_fixed_point(data)
        else:
            s = _check_sigma(sigma)
            n_cells = min(_grid_level(s), data.max_cells)
            value, gap, exact = data.smece(s, n_cells), None, False
        points.append((data, s, value, gap, n_cells, exact))
        if n_boot > 0:
            if rows is not None:
                bandwidth = s if not fixed else s / 1.2
                boot_cells = _grid_level(bandwidth, BOOT_CELLS_PER_SIGMA, BOOT_MIN_GRID) if bandwidth > 0 else n_cells
                boots.append(_RowBootstrap(*rows, n_cells=boot_cells, want_curve=want_curve, seed=seed))
            else:
                # Replicates cannot be summed on a finer grid than the sums': leave room for their s* to be
                # half the full-data one. (MIN_GRID's floor kept: the cells are this bootstrap's draws.)
                bandwidth = s if not fixed else s / 2.0
                boot_cells = _grid_level(bandwidth, BOOT_CELLS_PER_SIGMA) if bandwidth > 0 else n_cells
                boots.append(
                    _CellBootstrap(sums.coarsen(min(boot_cells, sums.n_cells)), want_curve=want_curve, seed=seed)
                )
    boot_values = [(None, None)] * len(problems)
    if n_boot > 0:
        t = np.linspace(0.0, 1.0, int(curve_points)) if curve_points is not None else None  # (want_curve)
        boot_values = _bootstrap_values_groups(
            boots,
            sigma=None if fixed else points[0][1],
            sigma_full=[p[1] for p in points],
            n_boot=n_boot,
            curve_t=t,
            progress=progress,
        )
    boots_or_none: list[_RowBootstrap | _CellBootstrap | None] = list(boots) if boots else [None] * len(points)
    return [
        _result(
            point, boot, replicates, curves, n=n, fixed=fixed, n_boot=n_boot, alpha=alpha, curve_points=curve_points
        )
        for point, boot, (replicates, curves), (_, _, n) in zip(
            points, boots_or_none, boot_values, problems, strict=True
        )
    ]


def _result(
    point, boot, replicates, curves, *, n: int, fixed: bool, n_boot: int, alpha: float, curve_points: int | None
) -> SmoothECEResult:
    """One problem's :class:`SmoothECEResult` from its fixed point and its bootstrap replicates."""
    data, s, value, gap, n_cells, exact = point
    needs_finer = not exact and s * n_cells < MIN_CELLS_PER_SIGMA and n_cells < MAX_GRID
    finer_grid = max(_grid_level(s), 2 * n_cells) if needs_finer else None
    ci_low = ci_high = ci_method = None
    if n_boot > 0:
        ci_low, ci_high = (float(v) for v in _percentiles(replicates, alpha))
        ci_method = boot.method.format(n_boot=n_boot)

    shared: dict[str, Any] = {  # what the curve says as the result does
        "smece": float(value),
        "sigma": float(s),
        "sigma_is_fixed_point": fixed,
        "n": int(n),
        "weight_total": data.weight_total,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "n_boot": n_boot,
        "alpha": float(alpha),
        "ci_method": ci_method,
        "needs_finer_grid": needs_finer,
    }
    curve = None
    if curve_points is not None:
        t = np.linspace(0.0, 1.0, int(curve_points))
        yhat, density = _curve_on(data, s, n_cells, t)
        band_low = band_high = None
        if curves is not None:  # every point's interval at once: only points with a NaN replicate one by one
            band_low, band_high = percentile_intervals(np.moveaxis(np.asarray(curves, dtype=np.float64), 0, -1), alpha)
        curve = SmoothCurve(t=t, yhat=yhat, density=density, band_low=band_low, band_high=band_high, **shared)
    return SmoothECEResult(
        **shared,
        fixed_point_gap=None if gap is None else float(gap),
        grid_size=int(n_cells),
        replicates=replicates,
        finer_grid=finer_grid,
        curve=curve,
    )


# ----------------------------------------------------------------------------------------------
# Public API: one batch of rows in memory
# ----------------------------------------------------------------------------------------------


def _check(y_true, y_prob, sample_weight):
    """Validate once; returns ``(y int 0/1, z float, w or None)`` without copying int64/float64 input."""
    z = np.asarray(y_prob, dtype=np.float64)
    check_option(z.ndim == 1, f"binary predictions must be 1-D, got shape {z.shape}")
    y = np.asarray(y_true)
    n = check_consistent_length(y, z, sample_weight, names=("labels", "predictions", "sample_weight"))
    z = check_probabilities(z, name="prediction")
    y = check_labels(y, n_classes=2)
    w = None if sample_weight is None else check_sample_weight(sample_weight, n)
    return y, z, w


def seed_of(rng: np.random.Generator | int | None) -> int:
    """The bootstrap seed of an ``rng`` argument: None -> 0; an int as is; a Generator made by
    ``numpy.random.default_rng(seed)`` and not yet used -> that seed (so ``rng=default_rng(5)`` and
    ``rng=5`` give the same resamples, and the same as an accumulator with seed 5); any other
    Generator -> a seed drawn from it.
    """
    if rng is None:
        return 0
    if isinstance(rng, (int, np.integer)):
        return int(rng) & 0xFFFFFFFFFFFFFFFF
    bit_generator = rng.bit_generator
    seed_seq = getattr(bit_generator, "seed_seq", None)
    if (
        isinstance(seed_seq, np.random.SeedSequence)
        and isinstance(seed_seq.entropy, int)
        and not seed_seq.spawn_key
        and 0 <= seed_seq.entropy < 2**64
        and type(bit_generator)(np.random.SeedSequence(seed_seq.entropy)).state == bit_generator.state
    ):
        return int(seed_seq.entropy)
    return int(rng.integers(0, 2**63))


def _one_batch(y_true, y_prob, sample_weight, **options) -> SmoothECEResult:
    """The one-batch case of :class:`calibcli.smooth.accumulator.SmoothAccumulator` (rows 0..n-1, default
    limits), including its second pass on a finer grid when the first grid cannot resolve s*."""
    y, z, w = _check(y_true, y_prob, sample_weight)
    n = len(z)
    rows = (np.arange(n, dtype=np.int64), z, y, w) if n <= ROW_LIMIT else None
    grid = STATS_GRID
    while True:
        result = finish(CellSums.of_rows(z, y, w, grid), rows, n=n, **options)
        if not result.needs_finer_grid:
            return result
        assert result.finer_grid is not None, "a result that needs a finer grid names it"
        grid = result.finer_grid


def smece_at_sigma(y_true, y_prob, *, sigma: float, sample_weight=None) -> float:
    """``smECE_sigma``: the integral of ``|r_sigma|`` over [0, 1] at a given bandwidth (SPEC 3; seed 003).

    Reflected Gaussian kernel with every reflection; predictions at exactly 0 or 1 carry their full
    weight. Within about 1e-6 (relative) of the exact value for ``sigma >= 8 / MAX_GRID`` (1.9e-6);
    below that the finest grid (cells of 2.4e-7) merges predictions closer than a cell. The fixed
    point is not affected in practice: an s* below 2e-6 is reported as a value below 2e-6.
    """
    return _one_batch(y_true, y_prob, sample_weight, sigma=_check_sigma(sigma)).smece


def smooth_ece(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    sigma: float | None = None,
    n_boot: int = 0,
    alpha: float = 0.05,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[], None] | None = None,
) -> SmoothECEResult:
    """SmoothECE of a binary problem (Blasiok & Nakkiran 2023, seed 003; SPEC section 3).

    By default the bandwidth is the fixed point s* with ``smECE_{s*} = s*``, solved to
    ``|s - smECE_s| <= 1e-7``; with ``sigma`` the value ``smECE_sigma`` at that bandwidth.
    With ``n_boot > 0`` a percentile bootstrap interval at level ``1 - alpha`` (SPEC 2.4, 8): the
    Poisson bootstrap, the bandwidth re-solved on every resample; over rows (row i = global row i)
    up to ``ROW_LIMIT`` rows, from per-cell sums beyond (``ci_method`` says which). The resamples are
    a function of the seed (:func:`seed_of` of ``rng``; None means 0) and of the row numbers, so
    problems made from the same rows with the same seed see the same resampled rows (joint
    intervals across classes, on the per-row path). Equal to a
    :class:`calibcli.smooth.accumulator.SmoothAccumulator` fed the rows as one batch. ``progress``
    is called after each resample.
    """
    return _one_batch(
        y_true, y_prob, sample_weight, sigma=sigma, n_boot=n_boot, alpha=alpha, seed=seed_of(rng), progress=progress
    )


def smooth_curve(
    y_true,
    y_prob,
    *,
    sample_weight=None,
    sigma: float | None = None,
    n_points: int = CURVE_POINTS,
    n_boot: int = 0,
    alpha: float = 0.05,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[], None] | None = None,
) -> SmoothCurve:
    """The smooth reliability diagram's data (seed 003, section 1.1; SPEC sections 3 and 6).

    Kernel regression ``yhat`` of y on z and prediction density at s* (or at ``sigma``) on
    ``n_points`` equally spaced points of [0, 1]; with ``n_boot > 0`` the pointwise percentile band
    of ``yhat`` over resamples (bandwidth re-solved on each) and the smECE interval from the same
    resamples. The same ``rng`` seed gives the same interval as :func:`smooth_ece`.
    """
    check_options(n_points=n_points)
    curve = _one_batch(
        y_true,
        y_prob,
        sample_weight,
        sigma=sigma,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed_of(rng),
        curve_points=int(n_points),
        progress=progress,
    ).curve
    assert curve is not None, "curve_points asks for the curve"
    return curve
