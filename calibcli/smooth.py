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

Computation (seed 003, section 3.5, made exact). The residual measure is put once on a uniform
grid of M cells over [0, 1] by linear interpolation ("cloud in cell"). The reflected, period-2
extension of that grid measure is even, so its Fourier series is a DCT-I of the M + 1 grid values
(end values doubled: the reflection of a point at 0 or 1 lands on itself). For each bandwidth the
spectrum is multiplied by the Gaussian's exact Fourier transform ``exp(-(pi k s)^2 / 2)`` (every
reflection at once, no truncation) and by ``1 / sinc^2``, which undoes on average the extra
smoothing of the linear interpolation; one inverse DCT-I gives ``r_s`` at the grid nodes, and
``|r_s|`` is integrated exactly for the piecewise-linear interpolant (zero crossings inside a cell
handled). The grid has at least ``CELLS_PER_SIGMA`` cells per bandwidth: coarser grids are exact
restrictions of the finest deposit (linear interpolation composes), finer ones are deposited
again. The fixed point is found by Brent's method on ``smECE_s - s`` (strictly decreasing), bracketed
by ``|mean residual| <= s* <= mean |residual|``, to ``|s - smECE_s| <= FIXED_POINT_TOL``.

Differences from relplot 1.0.3 (``relplot.smECE``), all deliberate:
- relplot quantises the bandwidth to 1/1024 and returns the *upper* end of the last bisection
  interval, with a floor of 2/1024; here s* is solved to 1e-7 with no floor;
- relplot's mirrored grid counts a prediction at exactly 0 or 1 once instead of twice (half its
  weight); here it carries its full weight;
- relplot truncates the kernel at +-0.5 and divides by a smoothed density plus 1e-4, which inflates
  its values for badly miscalibrated predictors (large s*); here the kernel has every reflection;
- relplot's bootstrap is unseeded; here every resample comes from the ``rng`` argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from calibcli.validation import (
    check_consistent_length,
    check_labels,
    check_option,
    check_probabilities,
    check_sample_weight,
)

#: The fixed point is solved until ``|s - smECE_s| <= FIXED_POINT_TOL``.
FIXED_POINT_TOL = 1e-7
#: Grid cells per bandwidth (at least); the discretisation error is O((1/CELLS_PER_SIGMA)^2) relative.
CELLS_PER_SIGMA = 200
#: Grid cells per bandwidth for bootstrap resamples: relative error about 0.04 / cells^2 (6e-5 here),
#: far below the spread of the replicates, which only feed percentiles.
BOOT_CELLS_PER_SIGMA = 25
#: Coarsest and finest grids (number of cells, powers of two).
MIN_GRID = 2**12
MAX_GRID = 2**22
#: Grid deposited first; finer grids are deposited only when a bandwidth needs them.
FIRST_GRID = 2**16
#: Rows processed at a time when depositing, which bounds the temporary memory.
CHUNK_ROWS = 2**18
#: Default number of points of the smoothed curve.
CURVE_POINTS = 501
#: The kernel regression is left undefined (NaN) where the smoothed density is below this fraction of
#: its maximum: there the ratio is dominated by floating-point round-off of the FFT.
DENSITY_FLOOR = 1e-9


@dataclass(frozen=True)
class SmoothECEResult:
    """SmoothECE of one binary problem (SPEC section 3).

    ``smece`` is ``smECE_sigma``; ``sigma`` is the fixed point s* (``sigma_is_fixed_point``) or the
    bandwidth that was given. ``fixed_point_gap`` is ``|sigma - smece|`` for a fixed point (<= 1e-7).
    ``ci_low``/``ci_high`` are the bootstrap percentile interval at level ``1 - alpha`` (None without
    bootstrap); ``replicates`` holds the ``n_boot`` bootstrap values. ``grid_size`` is the number of grid
    cells used for ``sigma``.
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


# ----------------------------------------------------------------------------------------------
# Grid deposit and the smoothed residual on a grid
# ----------------------------------------------------------------------------------------------


def _grid_level(sigma: float) -> int:
    """Number of cells (power of two) giving at least CELLS_PER_SIGMA cells per ``sigma``."""
    if not sigma > 0:
        return MAX_GRID
    want = CELLS_PER_SIGMA / sigma
    if want >= MAX_GRID:
        return MAX_GRID
    return int(min(MAX_GRID, max(MIN_GRID, 1 << int(np.ceil(np.log2(want))))))


def _cell_position(z: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Left grid node ``j`` (in 0..M-1) and fraction ``f`` in [0, 1] of every z on an M-cell grid."""
    x = z * n_cells
    j = np.floor(x).astype(np.intp)
    np.minimum(j, n_cells - 1, out=j)
    np.subtract(x, j, out=x)
    return j, x


def _deposit_chunk(j: np.ndarray, f: np.ndarray, values: np.ndarray, n_cells: int) -> np.ndarray:
    """Linear-interpolation deposit of ``values`` located at cells ``j`` + fraction ``f``."""
    upper = values * f
    out = np.bincount(j, weights=values - upper, minlength=n_cells + 1)
    out[1:] += np.bincount(j, weights=upper, minlength=n_cells + 1)[:-1]
    return out


def _restrict(a: np.ndarray) -> np.ndarray:
    """Exact restriction of a linear-interpolation deposit from M to M/2 cells."""
    out = a[::2].copy()
    half = 0.5 * a[1::2]
    out[:-1] += half
    out[1:] += half
    return out


def _spectrum(a: np.ndarray) -> np.ndarray:
    """DCT-I of the grid measure = Fourier series of its reflected period-2 extension."""
    from scipy.fft import dct

    x = a.copy()
    x[0] *= 2.0  # the reflection of a point at 0 (or 1) lands on itself
    x[-1] *= 2.0
    return dct(x, type=1)


#: Frequencies where the Gaussian's transform exp(-(pi k s)^2 / 2) is below exp(-44) are dropped.
_CUTOFF = 3.0


def _multiplier(n_cells: int, sigma: float) -> np.ndarray:
    """Fourier multiplier of the reflected kernel on an ``n_cells`` grid, up to its cutoff.

    From two cells per sigma up: the Gaussian's exact transform ``exp(-(pi k s)^2 / 2)``, divided by
    ``sinc^2``, which undoes the linear-interpolation deposit's own smoothing on average. Below that
    (a bandwidth the grid cannot resolve): the transform of the Gaussian *sampled* at the grid nodes,
    which stays a positive kernel of mass 1 (a truncated transform would ring), uncorrected.
    """
    if sigma * n_cells < 2.0:
        from scipy.fft import dct

        if not sigma > 0:
            return np.ones(n_cells + 1)
        reach = min(n_cells + 1, int(40 * sigma * n_cells) + 2)
        samples = np.zeros(n_cells + 1)
        samples[:reach] = np.exp(-0.5 * (np.arange(reach) / (sigma * n_cells)) ** 2)
        transform = dct(samples, type=1)
        return transform / transform[0]
    n_live = min(n_cells + 1, int(np.ceil(_CUTOFF / sigma)) + 1)
    k = np.arange(n_live, dtype=np.float64)
    return np.exp(-0.5 * (np.pi * sigma * k) ** 2) / np.sinc(k / (2 * n_cells)) ** 2


def _smoothed_on_grid(spectrum: np.ndarray, sigma: float) -> np.ndarray:
    """``K_s`` applied to the grid measure, evaluated at the M + 1 grid nodes (a density)."""
    from scipy.fft import dct

    n_cells = len(spectrum) - 1
    mult = _multiplier(n_cells, sigma)
    product = np.zeros(n_cells + 1)
    np.multiply(spectrum[: len(mult)], mult, out=product[: len(mult)])
    return 0.5 * dct(product, type=1, overwrite_x=True)


def _abs_integral(r: np.ndarray) -> float:
    """Exact integral over [0, 1] of ``|piecewise-linear interpolant of r|`` on a uniform grid."""
    a = r[:-1]
    b = r[1:]
    abs_sum = np.abs(a) + np.abs(b)
    cross = (a * b) < 0
    seg = abs_sum.copy()
    seg[cross] = (a[cross] ** 2 + b[cross] ** 2) / abs_sum[cross]
    return float(seg.sum() * 0.5 / (len(r) - 1))


# ----------------------------------------------------------------------------------------------
# A binary problem on grids
# ----------------------------------------------------------------------------------------------


class _GridData:
    """Weighted data of one binary problem, with cached grid deposits and their spectra.

    ``z`` predictions, ``y`` labels (0/1), ``w`` weights or None (unit weights; for a bootstrap
    resample, the multiplicities times the weights). Deposits (of the residual, and on request of w*y
    and w) are computed in chunks of CHUNK_ROWS rows, so temporary memory stays a few chunk-sized
    arrays; coarser grids are exact restrictions of the finest one deposited.
    """

    def __init__(self, z, y, w, *, want_curve: bool = False):
        self.z = z
        self.y = y
        self.w = w
        self.want_curve = want_curve
        self.n = len(z)
        self._deposits: dict[int, tuple[np.ndarray, ...]] = {}
        self._spectra: dict[tuple[int, int], np.ndarray] = {}
        self.weight_total, self.mean_residual, self.mean_abs_residual = self._moments()

    def _chunks(self):
        for start in range(0, self.n, CHUNK_ROWS):
            stop = min(self.n, start + CHUNK_ROWS)
            z = self.z[start:stop]
            y = self.y[start:stop]
            w = None if self.w is None else self.w[start:stop]
            yield z, y, w

    def _moments(self) -> tuple[float, float, float]:
        total = signed = absolute = 0.0
        for z, y, w in self._chunks():
            u = y - z
            if w is None:
                total += len(z)
                signed += float(u.sum())
                absolute += float(np.abs(u).sum())
            else:
                total += float(w.sum())
                signed += float(w @ u)
                absolute += float(w @ np.abs(u))
        return total, signed / total, absolute / total

    def deposit(self, n_cells: int) -> tuple[np.ndarray, ...]:
        """Grid measures at ``n_cells`` cells: residual (and w*y, w for curves), each divided by W."""
        if n_cells in self._deposits:
            return self._deposits[n_cells]
        finer = [m for m in self._deposits if m > n_cells]
        if finer:
            source = min(finer)
            out = self._deposits[source]
            while source > n_cells:
                out = tuple(_restrict(a) for a in out)
                source //= 2
        else:
            size = max(n_cells, FIRST_GRID)
            parts = 3 if self.want_curve else 1
            acc = [np.zeros(size + 1) for _ in range(parts)]
            for z, y, w in self._chunks():
                j, f = _cell_position(z, size)
                wu = y - z if w is None else w * (y - z)
                acc[0] += _deposit_chunk(j, f, wu, size)
                if self.want_curve:
                    acc[1] += _deposit_chunk(j, f, y if w is None else w * y, size)
                    acc[2] += _deposit_chunk(j, f, np.ones_like(z) if w is None else w, size)
            out = tuple(a / self.weight_total for a in acc)
            self._deposits[size] = out
            while size > n_cells:
                out = tuple(_restrict(a) for a in out)
                size //= 2
        self._deposits[n_cells] = out
        return out

    def spectrum(self, n_cells: int, part: int = 0) -> np.ndarray:
        key = (n_cells, part)
        if key not in self._spectra:
            self._spectra[key] = _spectrum(self.deposit(n_cells)[part])
        return self._spectra[key]

    def smece(self, sigma: float, n_cells: int | None = None) -> float:
        """``smECE_sigma`` on a grid of ``n_cells`` cells (default: enough cells for ``sigma``)."""
        if n_cells is None:
            n_cells = _grid_level(sigma)
        return _abs_integral(_smoothed_on_grid(self.spectrum(n_cells), sigma))


def _brent_root(f: Callable[[float], float], a: float, b: float, *, xtol: float, rtol: float, maxiter: int = 200) -> float:
    """A root of ``f`` in ``[a, b]``, where ``f(a)`` and ``f(b)`` have opposite signs, by Brent's method.

    R. P. Brent, *Algorithms for Minimization without Derivatives* (1973), ch. 4: keep a bracket
    ``[b, c]`` around the root with ``b`` the best point; step by inverse quadratic interpolation
    through the last three points (or the secant through two) when the step lands well inside the
    bracket and the steps keep shrinking, by bisection otherwise. Stops when the bracket's half width
    is at most ``(xtol + rtol |b|) / 2``. (Written here rather than imported from scipy.optimize,
    whose import alone costs about half a second on every ``smece`` and ``diagram`` run.)
    """
    fa, fb = f(a), f(b)
    if fa == 0.0:
        return a
    c, fc = a, fa
    step = previous_step = b - a
    for _ in range(maxiter):
        if fb == 0.0:
            return b
        if (fb > 0) == (fc > 0):  # the root lies between a and b: make a the far end
            c, fc = a, fa
            step = previous_step = b - a
        if abs(fc) < abs(fb):  # b must be the point with the smaller |f|
            a, fa = b, fb
            b, fb = c, fc
            c, fc = a, fa
        tol = 0.5 * (xtol + rtol * abs(b))
        half = 0.5 * (c - b)
        if abs(half) <= tol:
            return b
        if abs(previous_step) >= tol and abs(fa) > abs(fb):
            ratio = fb / fa
            if a == c:  # two distinct points: secant
                p, q = 2.0 * half * ratio, 1.0 - ratio
            else:  # three: inverse quadratic interpolation
                qa, rb = fa / fc, fb / fc
                p = ratio * (2.0 * half * qa * (qa - rb) - (b - a) * (rb - 1.0))
                q = (qa - 1.0) * (rb - 1.0) * (ratio - 1.0)
            if p > 0:
                q = -q
            p = abs(p)
            if 2.0 * p < min(3.0 * half * q - abs(tol * q), abs(previous_step * q)):
                previous_step, step = step, p / q
            else:
                step = previous_step = half
        else:
            step = previous_step = half
        a, fa = b, fb
        b += step if abs(step) > tol else (tol if half > 0 else -tol)
        fb = f(b)
    raise RuntimeError(f"Brent's method did not converge in {maxiter} iterations")


def _solve_fixed_point(
    data: _GridData,
    *,
    start_cells: int = MIN_GRID,
    cells_per_sigma: float = CELLS_PER_SIGMA,
    guess: float | None = None,
) -> tuple[float, float, float, int]:
    """Fixed point ``s* = smECE_{s*}``; returns ``(s*, smECE_{s*}, gap, grid cells)``.

    Brent's method on the strictly decreasing ``g(s) = smECE_s - s`` over the bracket
    ``[|mean residual|, mean |residual|]`` (``smECE_s`` lies between these for every s), at a fixed
    grid; the grid is refined and the root re-solved until the grid has ``cells_per_sigma`` cells
    per s*. A ``guess`` (e.g. the full-data s* for a bootstrap resample) first narrows the bracket to
    ``[0.8 guess, 1.25 guess]`` when the root lies there.
    """
    lo = abs(data.mean_residual)
    hi = data.mean_abs_residual
    n_cells = start_cells
    grid_variation = float(np.abs(data.deposit(n_cells)[0]).sum())
    if grid_variation <= 1e-12 * hi:
        # The residuals cancel wherever predictions coincide: smECE_s <= grid variation ~ 0 for all s.
        return 0.0, grid_variation, grid_variation, n_cells
    if hi - lo <= 0.5 * FIXED_POINT_TOL:
        # Residuals of one sign: the kernel is positive with mass 1, so smECE_s = lo = hi for every s
        # (exactly; no grid needed).
        s = 0.5 * (lo + hi)
        return s, s, 0.0, n_cells
    while True:
        values: dict[float, float] = {}

        def g(s, n_cells=n_cells, values=values):
            if s not in values:
                values[s] = data.smece(s, n_cells) - s
            return values[s]

        a, b = lo, hi
        if guess is not None and lo < guess < hi:
            inner_a, inner_b = max(lo, 0.8 * guess), min(hi, 1.25 * guess)
            if g(inner_a) <= 0:
                b = inner_a
            elif g(inner_b) >= 0:
                a = inner_b
            else:
                a, b = inner_a, inner_b
        if g(a) <= 0:
            s = a
        elif g(b) >= 0:
            s = b
        else:
            s = _brent_root(g, a, b, xtol=1e-13, rtol=4 * np.finfo(float).eps)
        needed = _grid_level(s * CELLS_PER_SIGMA / cells_per_sigma)
        if needed <= n_cells or n_cells >= MAX_GRID:
            value = g(s) + s
            return float(s), value, abs(value - s), n_cells
        n_cells = needed
        guess = s


# ----------------------------------------------------------------------------------------------
# Public API
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


def _check_sigma(sigma) -> float:
    check_option(
        sigma is not None and np.isfinite(sigma) and sigma > 0,
        f"sigma is {sigma!r}: expected a positive bandwidth (or none, to solve for the fixed point)",
    )
    return float(sigma)


def _check_bootstrap(n_boot, alpha):
    check_option(int(n_boot) == n_boot and n_boot >= 0, f"n_boot is {n_boot!r}: expected an integer >= 0")
    check_option(0 < alpha < 1, f"alpha is {alpha!r}: expected a level in (0, 1), e.g. 0.05")


def smece_at_sigma(y_true, y_prob, *, sigma: float, sample_weight=None) -> float:
    """``smECE_sigma``: the integral of ``|r_sigma|`` over [0, 1] at a given bandwidth (SPEC 3; seed 003).

    Reflected Gaussian kernel with every reflection; predictions at exactly 0 or 1 carry their full
    weight. Within about 1e-6 (relative) of the exact value for ``sigma >= 10 / MAX_GRID`` (2.4e-6);
    below that the finest grid (cells of 2.4e-7) merges predictions closer than a cell. The fixed
    point is not affected in practice: an s* below 2.4e-6 is reported as a value below 2.4e-6.
    """
    y, z, w = _check(y_true, y_prob, sample_weight)
    sigma = _check_sigma(sigma)
    return _GridData(z, y, w).smece(sigma)


class _Bootstrap:
    """Row resampling with replacement (SPEC 2.4) through multiplicities, one resample at a time.

    Every deposited quantity is a sum over rows of ``g = multiplicity x weight`` times a function of
    the row's label y, cell j and position f in its cell: ``w (y - z)``, ``w y`` and ``w`` split as
    ``(1 - f, f)`` between nodes j and j + 1, with ``z = (j + f) / M``. With the rows sorted by
    ``(y, j)`` once, all of them follow from three sums per run of equal ``(y, j)``: ``sum g``,
    ``sum g f`` and ``sum g f^2`` (``np.add.reduceat``; never an n-by-R array). A resample draws the
    multiplicities of the rows in their original order (:func:`calibcli.estimators.bootstrap_multiplicities`,
    so generators seeded alike resample the same rows of every class) and gathers them into that
    order. A resample whose bandwidth needs a finer grid is deposited again from its rows.
    """

    def __init__(self, y, z, w, *, n_cells: int, want_curve: bool):
        self.n = len(z)
        self.n_cells = n_cells
        self.want_curve = want_curve
        j, f = _cell_position(z, n_cells)
        self.order = np.lexsort((j, y))
        self.z, self.y, self.f = z[self.order], y[self.order], f[self.order]
        self.w = None if w is None else w[self.order]
        cell = j[self.order]
        self.offsets = np.flatnonzero(np.diff(cell + (n_cells + 1) * self.y, prepend=-1))  # runs of equal (y, cell)
        self.run_cell = cell[self.offsets]
        self.run_positive = self.y[self.offsets] == 1
        # Reused by every resample (fresh 8n-byte arrays would cost a page fault per page each time).
        self._drawn, self._m, self._gf = np.empty(self.n), np.empty(self.n), np.empty(self.n)

    def _deposits(self, g: np.ndarray) -> list[np.ndarray]:
        """Unnormalised grid deposits of ``g (y - z)`` (and ``g y``, ``g`` for curves) at ``n_cells``."""
        gf = np.multiply(g, self.f, out=self._gf)
        s0 = np.add.reduceat(g, self.offsets)
        s1 = np.add.reduceat(gf, self.offsets)
        np.multiply(gf, self.f, out=gf)
        s2 = np.add.reduceat(gf, self.offsets)
        size, cell = self.n_cells + 1, self.run_cell

        def deposit(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
            return np.bincount(cell, weights=lower, minlength=size) + np.bincount(cell + 1, weights=upper, minlength=size)

        pos = self.run_positive
        w_lower, w_upper = s0 - s1, s1
        y_lower, y_upper = np.where(pos, w_lower, 0.0), np.where(pos, w_upper, 0.0)
        # sum g z (1 - f) and sum g z f, from z = (j + f) / M
        z_lower = (cell * w_lower + (s1 - s2)) / self.n_cells
        z_upper = (cell * s1 + s2) / self.n_cells
        out = [deposit(y_lower - z_lower, y_upper - z_upper)]
        if self.want_curve:
            out += [deposit(y_lower, y_upper), deposit(w_lower, w_upper)]
        return out

    def resample(self, rng: np.random.Generator):
        """One bootstrap resample as a ``_GridData`` whose deposit at ``n_cells`` is precomputed.

        Its row weights live in buffers that the next call overwrites: use it before drawing again.
        """
        from calibcli.estimators import bootstrap_multiplicities

        m = np.take(bootstrap_multiplicities(self.n, rng, out=self._drawn), self.order, out=self._m, mode="clip")  # "clip": no buffered copy
        g = m if self.w is None else m * self.w
        total = float(self.n) if self.w is None else float(g.sum())
        if total <= 0:
            return None
        deposits = [dep / total for dep in self._deposits(g)]
        data = _GridData.__new__(_GridData)
        data.z, data.y, data.w = self.z, self.y, g
        data.want_curve = self.want_curve
        data.n = self.n
        data._spectra = {}
        data._deposits = {self.n_cells: tuple(deposits)}
        data.weight_total = total
        # The deposit keeps the residual's total mass; |mean residual| <= s* <= 1 brackets the root.
        data.mean_residual = float(deposits[0].sum())
        data.mean_abs_residual = 1.0
        return data


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
    With ``n_boot > 0`` a percentile bootstrap interval at level ``1 - alpha`` (SPEC 2.4): rows are
    resampled with replacement and the bandwidth is re-solved on every resample. ``rng`` is a
    ``numpy.random.Generator`` (or a seed; None means seed 0), so results are reproducible: the
    resamples' row multiplicities are drawn from ``rng`` one resample after the other, so problems
    with the same n and generators seeded alike see the same rows (joint intervals across classes). ``progress``
    is called after each resample.
    """
    y, z, w = _check(y_true, y_prob, sample_weight)
    _check_bootstrap(n_boot, alpha)
    fixed = sigma is None
    data = _GridData(z, y, w)
    if fixed:
        s, value, gap, n_cells = _solve_fixed_point(data)
    else:
        s = _check_sigma(sigma)
        n_cells = _grid_level(s)
        value, gap = data.smece(s, n_cells), None
    replicates = ci_low = ci_high = None
    if n_boot > 0:
        replicates = _bootstrap_values(y, z, w, sigma=None if fixed else s, n_cells=n_cells,
                                       n_boot=int(n_boot), rng=np.random.default_rng(0 if rng is None else rng),
                                       progress=progress, sigma_full=s)
        ci_low, ci_high = (float(v) for v in _percentiles(replicates, alpha))
    return SmoothECEResult(
        smece=float(value),
        sigma=float(s),
        sigma_is_fixed_point=fixed,
        n=len(z),
        weight_total=data.weight_total,
        fixed_point_gap=None if gap is None else float(gap),
        ci_low=ci_low,
        ci_high=ci_high,
        n_boot=int(n_boot),
        alpha=float(alpha),
        grid_size=int(n_cells),
        replicates=replicates,
    )


def _bootstrap_values(y, z, w, *, sigma, n_cells, n_boot, rng, curve_t=None, progress=None, sigma_full=None):
    """smECE of each resample (and its kernel regression on ``curve_t`` when given).

    Resamples use a grid with BOOT_CELLS_PER_SIGMA cells per bandwidth (fixed sigma), or 1.2 times
    that per full-data s* (fixed point; a resample whose s* is much smaller gets a finer grid).
    """
    bandwidth = sigma if sigma is not None else sigma_full / 1.2
    n_cells = _grid_level(bandwidth * CELLS_PER_SIGMA / BOOT_CELLS_PER_SIGMA) if bandwidth > 0 else n_cells
    boot = _Bootstrap(y, z, w, n_cells=n_cells, want_curve=curve_t is not None)
    values = np.full(n_boot, np.nan)
    curves = None if curve_t is None else np.full((n_boot, len(curve_t)), np.nan)
    for b in range(n_boot):
        data = boot.resample(rng)
        if data is not None:  # None: the resample drew only rows of weight 0 (its value stays NaN)
            if sigma is None:
                # Resamples' s* scatter around the full-data s*: start from it, on a grid with
                # BOOT_CELLS_PER_SIGMA cells per bandwidth (discretisation error ~1e-4 relative at most,
                # far below the bootstrap's own spread).
                s, values[b], _, cells = _solve_fixed_point(
                    data, start_cells=n_cells, cells_per_sigma=BOOT_CELLS_PER_SIGMA, guess=sigma_full
                )
            else:
                s, cells = sigma, n_cells
                values[b] = data.smece(s, cells)
            if curves is not None:
                curves[b] = _curve_on(data, s, cells, curve_t)[0]
        if progress is not None:
            progress()
    return values if curves is None else (values, curves)


def _curve_on(data: _GridData, sigma: float, n_cells: int, t: np.ndarray):
    """Kernel regression of y on z and the density at bandwidth ``sigma``, interpolated to ``t``."""
    grid = np.linspace(0.0, 1.0, n_cells + 1)
    smooth_y = _smoothed_on_grid(data.spectrum(n_cells, 1), sigma)
    density = _smoothed_on_grid(data.spectrum(n_cells, 2), sigma)
    smooth_y = np.interp(t, grid, smooth_y)
    density = np.interp(t, grid, density)
    defined = density > DENSITY_FLOOR * density.max()
    yhat = np.full_like(t, np.nan)
    yhat[defined] = smooth_y[defined] / density[defined]
    return yhat, density


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
    of ``yhat`` over row resamples (bandwidth re-solved on each) and the smECE interval from the same
    resamples. The same ``rng`` seed gives the same interval as :func:`smooth_ece`.
    """
    y, z, w = _check(y_true, y_prob, sample_weight)
    _check_bootstrap(n_boot, alpha)
    check_option(int(n_points) == n_points and n_points >= 2, f"n_points is {n_points!r}: expected an integer >= 2")
    fixed = sigma is None
    data = _GridData(z, y, w, want_curve=True)
    if fixed:
        s, value, _, n_cells = _solve_fixed_point(data)
    else:
        s = _check_sigma(sigma)
        n_cells = _grid_level(s)
        value = data.smece(s, n_cells)
    t = np.linspace(0.0, 1.0, int(n_points))
    yhat, density = _curve_on(data, s, n_cells, t)
    band_low = band_high = ci_low = ci_high = None
    if n_boot > 0:
        values, curves = _bootstrap_values(
            y, z, w, sigma=None if fixed else s, n_cells=n_cells, n_boot=int(n_boot),
            rng=np.random.default_rng(0 if rng is None else rng), curve_t=t, progress=progress, sigma_full=s,
        )
        ci_low, ci_high = (float(v) for v in _percentiles(values, alpha))
        band_low, band_high = _percentiles(curves, alpha, axis=0)
    return SmoothCurve(
        t=t,
        yhat=yhat,
        density=density,
        sigma=float(s),
        smece=float(value),
        sigma_is_fixed_point=fixed,
        band_low=band_low,
        band_high=band_high,
        ci_low=ci_low,
        ci_high=ci_high,
        n_boot=int(n_boot),
        alpha=float(alpha),
        n=len(z),
        weight_total=data.weight_total,
    )
