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
across batches and workers (the state of :class:`calibcli.accumulators.smooth.SmoothAccumulator`),
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
  only (:class:`calibcli.resampling.Multiplicities`), so any split of the data gives the same replicates.
- Beyond, replicates are drawn from the per-(label, cell) sums. With unit weights a cell's resampled
  count of positives (and of negatives) is exactly ``Poisson(count)``, independent across cells;
  given that count K, the sums of ``f`` and ``f^2`` over the K resampled rows are drawn with their
  exact conditional mean and variance (``K mean(f)``, ``K var(f)``; normal, clipped to their range;
  ``sum f^2`` keeps the cell's spread). With weights the resampled weight of a cell given K has the
  exact conditional mean ``K mean(w)`` and variance ``K var(w)`` (a gamma law, which stays positive),
  so its unconditional first two moments ``sum w`` and ``sum w^2`` are exact. The draws of replicate r
  come from ``Philox(key=(seed, r))``: a function of the merged sums alone. These within-cell sums
  only move mass by a fraction of a cell between the cell's two nodes, so their approximation is far
  below the replicates' spread (``tests/test_smooth_accumulator.py`` checks the interval against the
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

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from calibcli import cancel
from calibcli.validation import (
    check_consistent_length,
    check_labels,
    check_option,
    check_probabilities,
    check_sample_weight,
)

#: The fixed point is solved until ``|s - smECE_s| <= FIXED_POINT_TOL``.
FIXED_POINT_TOL = 1e-7
#: Grid cells per bandwidth for the point estimate where the data allow (error ~1e-7 relative).
CELLS_PER_SIGMA = 32
#: The fewest cells per bandwidth that keep SPEC 3's 1e-5 absolute accuracy (error <= 3e-6 relative).
MIN_CELLS_PER_SIGMA = 8
#: Grid cells per bandwidth for bootstrap resamples (linear interpolation: relative error about
#: 0.04 / cells^2, 6e-5 here, far below the spread of the replicates, which only feed percentiles).
BOOT_CELLS_PER_SIGMA = 25
#: Coarsest and finest grids (number of cells, powers of two).
MIN_GRID = 2**12
MAX_GRID = 2**22
#: Grid of the per-cell sums that a stream accumulates (SPEC 8's first pass): MIN_CELLS_PER_SIGMA
#: cells at sigma = 2^-14.
STATS_GRID = 2**17
#: Rows kept for the exact per-row bootstrap (and for grids finer than STATS_GRID); beyond, the
#: bootstrap works from the per-cell sums.
ROW_LIMIT = 2**17
#: Rows processed at a time when summing, which bounds the temporary memory.
CHUNK_ROWS = 2**18
#: Default number of points of the smoothed curve.
CURVE_POINTS = 501
#: The kernel regression is left undefined (NaN) where the smoothed density is below this fraction of
#: its maximum: there the ratio is dominated by floating-point round-off of the FFT.
DENSITY_FLOOR = 1e-9

CI_METHOD_ROWS = "Poisson bootstrap over rows, {n_boot} resamples"
CI_METHOD_CELLS = "Poisson bootstrap from per-cell sufficient statistics, {n_boot} resamples"


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


# ----------------------------------------------------------------------------------------------
# Grid spectra and the smoothed residual on a grid
# ----------------------------------------------------------------------------------------------


def _grid_level(sigma: float, cells_per_sigma: float = CELLS_PER_SIGMA) -> int:
    """Number of cells (power of two) giving at least ``cells_per_sigma`` cells per ``sigma``."""
    if not sigma > 0:
        return MAX_GRID
    want = cells_per_sigma / sigma
    if want >= MAX_GRID:
        return MAX_GRID
    if want <= MIN_GRID:  # a wide kernel (sigma beyond cells_per_sigma / MIN_GRID, up to any finite value)
        return MIN_GRID
    return int(min(MAX_GRID, max(MIN_GRID, 1 << int(np.ceil(np.log2(want))))))


def _dct1(x: np.ndarray) -> np.ndarray:
    """The DCT-I of ``x`` (scipy.fft.dct(x, type=1), unnormalised): the real FFT of its even extension
    ``x_0 .. x_N, x_{N-1} .. x_1``. numpy.fft loads in a millisecond where scipy.fft takes 0.15 s or more,
    which every ``ece`` (its ICI), ``smece`` and ``diagram`` run paid; the values are the same (both are pocketfft)."""
    return np.fft.rfft(np.concatenate([x, x[-2:0:-1]])).real


def _spectrum(a: np.ndarray) -> np.ndarray:
    """DCT-I of the grid measure = Fourier series of its reflected period-2 extension."""
    x = a.copy()
    x[0] *= 2.0  # the reflection of a point at 0 (or 1) lands on itself
    x[-1] *= 2.0
    return _dct1(x)


#: Frequencies where the Gaussian's transform exp(-(pi k s)^2 / 2) is below exp(-44) are dropped.
_CUTOFF = 3.0


def _resolved(sigma: float, n_cells: int) -> bool:
    """At least two cells per bandwidth: the moment-keeping deposit and the exact transform apply."""
    return sigma * n_cells >= 2.0


def _multiplier(n_cells: int, sigma: float) -> np.ndarray:
    """Fourier multiplier of the reflected kernel on an ``n_cells`` grid, up to its cutoff.

    From two cells per sigma up: the Gaussian's exact transform ``exp(-(pi k s)^2 / 2)``, divided by
    ``sinc^2``, which compensates reading the result piecewise linearly between nodes. Below that
    (a bandwidth the grid cannot resolve): the transform of the Gaussian *sampled* at the grid nodes,
    which stays a positive kernel of mass 1 (a truncated transform would ring), uncorrected.
    """
    if not _resolved(sigma, n_cells):
        if not sigma > 0:
            return np.ones(n_cells + 1)
        reach = min(n_cells + 1, int(40 * sigma * n_cells) + 2)
        samples = np.zeros(n_cells + 1)
        with np.errstate(over="ignore"):  # a bandwidth far below a cell: the far samples are exp(-inf) = 0
            samples[:reach] = np.exp(-0.5 * (np.arange(reach) / (sigma * n_cells)) ** 2)
        transform = _dct1(samples)
        return transform / transform[0]
    n_live = min(n_cells + 1, int(np.ceil(_CUTOFF / sigma)) + 1)
    k = np.arange(n_live, dtype=np.float64)
    with np.errstate(over="ignore"):  # a huge sigma: (pi k sigma)^2 overflows to inf, and exp(-inf) = 0 is right
        return np.exp(-0.5 * ((np.pi * k) * sigma) ** 2) / np.sinc(k / (2 * n_cells)) ** 2


def _smoothed_on_grid(spectrum: np.ndarray, sigma: float) -> np.ndarray:
    """``K_s`` applied to the grid measure, evaluated at the M + 1 grid nodes (a density)."""
    n_cells = len(spectrum) - 1
    mult = _multiplier(n_cells, sigma)
    product = np.zeros(n_cells + 1)
    np.multiply(spectrum[: len(mult)], mult, out=product[: len(mult)])
    return 0.5 * _dct1(product)


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
# Per-(label, cell) sums: the state that streams, merges and coarsens
# ----------------------------------------------------------------------------------------------

_FIELDS = ("w", "wf", "wf2", "wf3", "ww")


class CellSums:
    """Sums of one binary problem's rows per ``(label, cell)`` of a uniform grid of ``n_cells`` cells.

    ``key = label * n_cells + cell`` (sorted, only the non-empty ones), ``count`` the rows' number
    (int64), and float sums over the rows of ``w`` (``w``), ``w f`` (``wf``), ``w f^2``, ``w f^3`` and
    ``w^2`` (``ww``), where ``f = z n_cells - cell`` is the position in the cell (exact in floating
    point, ``n_cells`` being a power of two). ``w`` and ``ww`` are None for unit weights (both equal
    the count). Coarser grids follow exactly (:meth:`coarsen`); :meth:`deposits` puts the residual,
    ``w y`` and ``w`` on the grid.
    """

    def __init__(self, n_cells: int, key: np.ndarray, count: np.ndarray, w, wf, wf2, wf3, ww):
        self.n_cells = int(n_cells)
        self.key, self.count = key, count
        self.w, self.wf, self.wf2, self.wf3, self.ww = w, wf, wf2, wf3, ww

    @classmethod
    def empty(cls, n_cells: int) -> "CellSums":
        none = np.empty(0)
        return cls(n_cells, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), None, none, none, none, None)

    def __len__(self) -> int:
        return len(self.key)

    @property
    def weighted(self) -> bool:
        return self.w is not None

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.key, self.count, self.w, self.wf, self.wf2, self.wf3, self.ww) if a is not None)

    def field(self, name: str) -> np.ndarray:
        """One of the sums; ``w`` and ``ww`` as floats even for unit weights."""
        value = getattr(self, name)
        return self.count.astype(np.float64) if value is None else value

    # -- building and adding -----------------------------------------------------------------

    @classmethod
    def of_rows(cls, z: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_cells: int) -> "CellSums":
        """The sums of rows ``(z, y, w)`` (``w`` None for unit weights), in chunks of CHUNK_ROWS rows
        (densely, as :class:`DenseSums` adds a batch, on grids of at most ``DENSE_MAX_CELLS`` cells)."""
        if n_cells <= DENSE_MAX_CELLS:
            dense = DenseSums(n_cells)
            dense.add_rows(z, y, w)
            return dense.take()
        parts = []
        for start in range(0, len(z), CHUNK_ROWS):
            stop = min(len(z), start + CHUNK_ROWS)
            parts.append(cls._of_chunk(z[start:stop], y[start:stop], None if w is None else w[start:stop], n_cells))
        return cls.combine(parts, n_cells)

    @classmethod
    def _of_chunk(cls, z, y, w, n_cells: int) -> "CellSums":
        x = z * n_cells
        j = np.floor(x).astype(np.int64)
        np.minimum(j, n_cells - 1, out=j)
        f = np.subtract(x, j, out=x)
        key = np.asarray(y, dtype=np.int64) * n_cells + j
        wf = f if w is None else w * f
        wf2 = wf * f
        wf3 = wf2 * f
        columns = [w, wf, wf2, wf3, None if w is None else w * w]
        return cls._group(key, None, columns, n_cells)

    @classmethod
    def _group(cls, key, count, columns, n_cells: int) -> "CellSums":
        """Sum entries of equal key: ``count`` (None: one per entry) and the five columns (None: equal to the count)."""
        if len(key) == 0:
            return cls.empty(n_cells)
        size = 2 * n_cells
        if 8 * len(key) >= size:  # many entries: dense sums, no sort
            counts = np.bincount(key, weights=count, minlength=size)
            where = np.flatnonzero(counts)
            counts = counts[where].astype(np.int64)
            sums = [None if c is None else np.bincount(key, weights=c, minlength=size)[where] for c in columns]
            return cls(n_cells, where.astype(np.int64), counts, *sums)
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        starts = np.flatnonzero(np.diff(sorted_key, prepend=-1))
        if count is None:
            counts = np.diff(np.append(starts, len(key))).astype(np.int64)
        else:
            counts = np.add.reduceat(count[order], starts)
        sums = [None if c is None else np.add.reduceat(c[order], starts) for c in columns]
        return cls(n_cells, sorted_key[starts], counts, *sums)

    @classmethod
    def combine(cls, parts: list["CellSums"], n_cells: int) -> "CellSums":
        """The sums of several parts of disjoint rows (same grid)."""
        parts = [p for p in parts if len(p)]
        if any(p.n_cells != n_cells for p in parts):
            raise ValueError("cell sums on different grids cannot be added")
        if not parts:
            return cls.empty(n_cells)
        if len(parts) == 1:
            return parts[0]
        key = np.concatenate([p.key for p in parts])
        count = np.concatenate([p.count for p in parts])
        columns = []
        for name in _FIELDS:
            if name in ("w", "ww") and not any(p.weighted for p in parts):
                columns.append(None)
            else:
                columns.append(np.concatenate([p.field(name) for p in parts]))
        return cls._group(key, count, columns, n_cells)

    def coarsen(self, n_cells: int) -> "CellSums":
        """The same rows' sums on a grid of ``n_cells`` cells (a power of two dividing this grid's)."""
        if n_cells == self.n_cells:
            return self
        if n_cells > self.n_cells or self.n_cells % n_cells:
            raise ValueError(f"cannot coarsen a grid of {self.n_cells} cells to {n_cells}")
        if not len(self):
            return CellSums.empty(n_cells)
        ratio = self.n_cells // n_cells
        label, cell = np.divmod(self.key, self.n_cells)
        key = label * n_cells + cell // ratio
        b = (cell % ratio).astype(np.float64)  # the fine cell's place in the coarse one: f' = (f + b) / ratio
        w = self.field("w")
        wf = (self.wf + b * w) / ratio
        wf2 = (self.wf2 + b * (2.0 * self.wf + b * w)) / ratio**2
        wf3 = (self.wf3 + b * (3.0 * self.wf2 + b * (3.0 * self.wf + b * w))) / ratio**3
        starts = np.flatnonzero(np.diff(key, prepend=-1))  # keys stay sorted
        sums = [None if c is None else np.add.reduceat(c, starts) for c in (self.w, wf, wf2, wf3, self.ww)]
        return CellSums(n_cells, key[starts], np.add.reduceat(self.count, starts), *sums)

    # -- what the grid computation needs -------------------------------------------------------

    def _label_cell(self):
        label, cell = np.divmod(self.key, self.n_cells)
        return label.astype(np.float64), cell

    def totals(self) -> tuple[float, float, float]:
        """``(W, sum w (y - z) / W, sum w |y - z| / W)``."""
        label, cell = self._label_cell()
        w = self.field("w")
        wz = (cell * w + self.wf) / self.n_cells
        total = float(w.sum())
        if not total > 0:
            return total, 0.0, 0.0
        signed = float((label * w - wz).sum())
        absolute = float((label * (w - wz) + (1.0 - label) * wz).sum())
        return total, signed / total, absolute / total

    def deposits(self, parts: int = 1, corrected: bool = True):
        """Unnormalised grid measures (M + 1 nodes): residual ``w (y - z)``, and for ``parts=3`` also ``w y`` and ``w``.

        Returns ``(linear, correction)``: the linear-interpolation deposits and (``corrected``) the
        stencil that also keeps each cell's second moment (None otherwise); see the module docstring.
        """
        m = self.n_cells
        label, cell = self._label_cell()
        w = self.field("w")
        lower = w - self.wf  # sum w (1 - f); the upper node gets sum w f
        z_lower = (cell * lower + self.wf - self.wf2) / m  # sum w z (1 - f), with z = (cell + f) / m
        z_upper = (cell * self.wf + self.wf2) / m  # sum w z f
        pairs = [(label * lower - z_lower, label * self.wf - z_upper)]
        if parts == 3:
            pairs += [(label * lower, label * self.wf), (lower, self.wf)]
        linear = []
        for low, up in pairs:
            out = np.zeros(m + 1)
            out[:m] += np.bincount(cell, weights=low, minlength=m)
            out[1:] += np.bincount(cell, weights=up, minlength=m)
            linear.append(out)
        if not corrected:
            return tuple(linear), None
        spread = 0.25 * (self.wf - self.wf2)  # sum w f (1 - f) / 4
        spread_z = 0.25 * (cell * (self.wf - self.wf2) + self.wf2 - self.wf3) / m  # sum w z f (1 - f) / 4
        weights = [label * spread - spread_z]
        if parts == 3:
            weights += [label * spread, spread]
        correction = []
        for q in weights:
            c = np.bincount(cell, weights=q, minlength=m)
            ext = np.zeros(m + 3)  # nodes -1 .. m + 1
            ext[0:m] -= c
            ext[1:m + 1] += c
            ext[2:m + 2] += c
            ext[3:m + 3] -= c
            out = ext[1:m + 2].copy()
            out[1] += ext[0]  # node -1 is the reflection of node 1
            out[m - 1] += ext[m + 2]  # node m + 1 that of node m - 1
            correction.append(out)
        return tuple(linear), tuple(correction)

    # -- state -----------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        def floats(a):
            return None if a is None else a.tolist()

        return {"n_cells": self.n_cells, "key": self.key.tolist(), "count": self.count.tolist(),
                **{name: floats(getattr(self, name)) for name in _FIELDS}}

    @classmethod
    def from_dict(cls, d: dict) -> "CellSums":
        def floats(a):
            return None if a is None else np.asarray(a, dtype=np.float64).reshape(-1)

        return cls(int(d["n_cells"]), np.asarray(d["key"], dtype=np.int64).reshape(-1),
                   np.asarray(d["count"], dtype=np.int64).reshape(-1), *(floats(d[name]) for name in _FIELDS))


# ----------------------------------------------------------------------------------------------
# A binary problem on grids
# ----------------------------------------------------------------------------------------------


#: Grids up to this many cells sum batches straight into dense per-(label, cell) arrays (a few MB).
DENSE_MAX_CELLS = 1 << 18


class DenseSums:
    """Per-(label, cell) sums of the rows added since the last :meth:`take`, as dense arrays.

    The same sums as :meth:`CellSums.of_rows` (count, ``w``, ``w f``, ``w f^2``, ``w f^3``,
    ``w^2``; ``w`` and ``ww`` only once a weighted batch arrives), added batch by batch with bincount.
    """

    def __init__(self, n_cells: int):
        self.n_cells = n_cells
        self._reset()

    def _reset(self) -> None:
        size = 2 * self.n_cells
        self.rows = 0
        self.count = np.zeros(size, dtype=np.int64)
        self.wf, self.wf2, self.wf3 = np.zeros(size), np.zeros(size), np.zeros(size)
        self.w = self.ww = None

    def add_rows(self, z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        """Add rows, CHUNK_ROWS at a time (bounded temporaries; the same sums however a batch is cut)."""
        for start in range(0, len(z), CHUNK_ROWS):
            stop = min(len(z), start + CHUNK_ROWS)
            self._add_chunk(z[start:stop], y[start:stop], None if w is None else w[start:stop])

    def _add_chunk(self, z: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        n, size = self.n_cells, 2 * self.n_cells
        x = z * n
        j = np.floor(x).astype(np.int64)
        np.minimum(j, n - 1, out=j)
        f = np.subtract(x, j, out=x)
        key = np.asarray(y, dtype=np.int64) * n
        key += j
        if w is not None and self.w is None:  # unit weights so far: their w and w^2 are the counts
            self.w, self.ww = self.count.astype(np.float64), self.count.astype(np.float64)
        counts = np.bincount(key, minlength=size)
        self.count += counts
        if self.w is not None:
            ww = np.ones(len(z)) if w is None else w
            self.w += np.bincount(key, weights=ww, minlength=size)
            self.ww += np.bincount(key, weights=ww * ww, minlength=size)
            wf = ww * f
        else:
            wf = f
        self.wf += np.bincount(key, weights=wf, minlength=size)
        wf2 = wf * f
        self.wf2 += np.bincount(key, weights=wf2, minlength=size)
        wf2 *= f
        self.wf3 += np.bincount(key, weights=wf2, minlength=size)
        self.rows += len(z)

    def take(self) -> CellSums:
        """The sums so far as (sparse) cell sums; the arrays start again from zero."""
        where = np.flatnonzero(self.count)
        pick = (lambda a: None if a is None else a[where])
        out = CellSums(self.n_cells, where.astype(np.int64), self.count[where], pick(self.w), pick(self.wf),
                       pick(self.wf2), pick(self.wf3), pick(self.ww))
        self._reset()
        return out


def _restrict(a: np.ndarray) -> np.ndarray:
    """Exact restriction of a linear-interpolation deposit from M to M/2 cells."""
    out = a[::2].copy()
    half = 0.5 * a[1::2]
    out[:-1] += half
    out[1:] += half
    return out


class _GridData:
    """One binary problem's grid measures (each divided by the total weight W) and their spectra, cached.

    ``sums`` are its :class:`CellSums` on the finest grid kept; ``rows`` (``(z, y, w)`` or None) let
    finer grids be summed from the rows, up to MAX_GRID (``max_cells``). ``corrected`` selects the
    moment-keeping deposit at resolved bandwidths (point estimates); bootstrap resamples use linear
    interpolation (:meth:`of_deposits`).
    """

    def __init__(self, sums: CellSums | None, rows=None, *, want_curve: bool = False, corrected: bool = True):
        self.sums = sums
        self.rows = rows
        self.want_curve = want_curve
        self.corrected = corrected
        self.max_cells = MAX_GRID if rows is not None else (sums.n_cells if sums is not None else 0)
        self._deposits: dict[tuple[int, bool], tuple[np.ndarray, ...]] = {}
        self._spectra: dict[tuple[int, int, bool], np.ndarray] = {}
        if sums is not None:
            self.weight_total, self.mean_residual, self.mean_abs_residual = sums.totals()

    @classmethod
    def of_deposits(cls, deposits, n_cells: int, total: float, rows=None, *, want_curve: bool) -> "_GridData":
        """A bootstrap resample given by its normalised linear deposits at ``n_cells`` (and its rows, if any)."""
        data = cls(None, rows, want_curve=want_curve, corrected=False)
        data.max_cells = MAX_GRID if rows is not None else n_cells
        data._deposits[(n_cells, False)] = tuple(deposits)
        data.weight_total = total
        # The deposit keeps the residual's total mass; |mean residual| <= s* <= 1 brackets the root.
        data.mean_residual = float(deposits[0].sum())
        data.mean_abs_residual = 1.0
        return data

    def deposit(self, n_cells: int, corrected: bool = False) -> tuple[np.ndarray, ...]:
        """Grid measures at ``n_cells`` cells: residual (and w*y, w for curves), each divided by W."""
        key = (n_cells, corrected)
        if key in self._deposits:
            return self._deposits[key]
        parts = 3 if self.want_curve else 1
        if self.sums is not None and n_cells <= self.sums.n_cells:
            sums = self.sums.coarsen(n_cells)
        elif self.rows is not None:
            z, y, w = self.rows
            sums = CellSums.of_rows(z, y, w, n_cells)
        else:
            finer = [m for (m, c) in self._deposits if m > n_cells and not c]
            if corrected or not finer:
                raise ValueError(f"no data for a grid of {n_cells} cells")
            source = min(finer)
            out = self._deposits[(source, False)]
            while source > n_cells:
                out = tuple(_restrict(a) for a in out)
                source //= 2
            self._deposits[key] = out
            return out
        linear, correction = sums.deposits(parts, corrected)
        linear = tuple(a / self.weight_total for a in linear)
        self._deposits[(n_cells, False)] = linear
        if corrected:
            self._deposits[key] = tuple(a + c / self.weight_total for a, c in zip(linear, correction))
        return self._deposits[key]

    def spectrum(self, n_cells: int, part: int, corrected: bool) -> np.ndarray:
        key = (n_cells, part, corrected)
        if key not in self._spectra:
            self._spectra[key] = _spectrum(self.deposit(n_cells, corrected)[part])
        return self._spectra[key]

    def corrected_at(self, sigma: float, n_cells: int) -> bool:
        return self.corrected and _resolved(sigma, n_cells)

    def smece(self, sigma: float, n_cells: int) -> float:
        """``smECE_sigma`` on a grid of ``n_cells`` cells."""
        spectrum = self.spectrum(n_cells, 0, self.corrected_at(sigma, n_cells))
        return _abs_integral(_smoothed_on_grid(spectrum, sigma))


def _curve_on(data: _GridData, sigma: float, n_cells: int, t: np.ndarray):
    """Kernel regression of y on z and the density at bandwidth ``sigma``, interpolated to ``t``."""
    grid = np.linspace(0.0, 1.0, n_cells + 1)
    corrected = data.corrected_at(sigma, n_cells)
    smooth_y = _smoothed_on_grid(data.spectrum(n_cells, 1, corrected), sigma)
    density = _smoothed_on_grid(data.spectrum(n_cells, 2, corrected), sigma)
    smooth_y = np.interp(t, grid, smooth_y)
    density = np.interp(t, grid, density)
    defined = density > DENSITY_FLOOR * density.max()
    yhat = np.full_like(t, np.nan)
    yhat[defined] = smooth_y[defined] / density[defined]
    return yhat, density


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
) -> tuple[float, float, float, int, bool]:
    """Fixed point ``s* = smECE_{s*}``; returns ``(s*, smECE_{s*}, gap, grid cells, exact)``.

    Brent's method on the strictly decreasing ``g(s) = smECE_s - s`` over the bracket
    ``[|mean residual|, mean |residual|]`` (``smECE_s`` lies between these for every s), at a fixed
    grid; the grid is refined and the root re-solved until the grid has ``cells_per_sigma`` cells
    per s* or is the finest the data allow (``data.max_cells``). A ``guess`` (e.g. the full-data s*
    for a bootstrap resample) first narrows the bracket to ``[0.8 guess, 1.25 guess]`` when the root
    lies there. ``exact``: s* needed no grid (all residuals cancel, or are of one sign).
    """
    lo = abs(data.mean_residual)
    hi = data.mean_abs_residual
    n_cells = min(start_cells, data.max_cells)
    grid_variation = float(np.abs(data.deposit(n_cells)[0]).sum())
    if grid_variation <= 1e-12 * hi:
        # The residuals cancel wherever predictions coincide: smECE_s <= grid variation ~ 0 for all s.
        return 0.0, grid_variation, grid_variation, n_cells, True
    if hi - lo <= 0.5 * FIXED_POINT_TOL:
        # Residuals of one sign: the kernel is positive with mass 1, so smECE_s = lo = hi for every s
        # (exactly; no grid needed).
        s = 0.5 * (lo + hi)
        return s, s, 0.0, n_cells, True
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
        needed = min(_grid_level(s, cells_per_sigma), data.max_cells)
        if needed <= n_cells:
            value = g(s) + s
            return float(s), value, abs(value - s), n_cells, False
        # At most 8 times finer per step: an s* solved on a grid that cannot resolve it is a poor
        # guess, and overshooting to the finest grid costs seconds per evaluation there.
        n_cells = min(needed, 8 * n_cells)
        guess = s


# ----------------------------------------------------------------------------------------------
# Bootstrap: the Poisson bootstrap over rows, or from the per-cell sums
# ----------------------------------------------------------------------------------------------


def _run_deposits(positive, cell, s0, s1, s2, n_cells: int, want_curve: bool) -> list[np.ndarray]:
    """Unnormalised linear deposits from runs of equal ``(label, cell)`` with sums ``s0, s1, s2`` of ``g, g f, g f^2``.

    ``g (y - z)``, ``g y`` and ``g`` split as ``(1 - f, f)`` between nodes ``cell`` and ``cell + 1``,
    with ``z = (cell + f) / M``: all three follow from the three sums of each run.
    """
    size = n_cells + 1

    def deposit(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        return np.bincount(cell, weights=lower, minlength=size) + np.bincount(cell + 1, weights=upper, minlength=size)

    w_lower, w_upper = s0 - s1, s1
    y_lower, y_upper = np.where(positive, w_lower, 0.0), np.where(positive, w_upper, 0.0)
    # sum g z (1 - f) and sum g z f, from z = (cell + f) / M
    z_lower = (cell * w_lower + (s1 - s2)) / n_cells
    z_upper = (cell * s1 + s2) / n_cells
    out = [deposit(y_lower - z_lower, y_upper - z_upper)]
    if want_curve:
        out += [deposit(y_lower, y_upper), deposit(w_lower, w_upper)]
    return out


class _RowBootstrap:
    """The Poisson bootstrap over rows (SPEC 8), one replicate at a time, without an n-by-R array.

    Row ``i`` weighs ``m_ir w_i`` in replicate ``r``, ``m_ir ~ Poisson(1)`` from
    :class:`calibcli.resampling.Multiplicities` (a function of ``(seed, r, global row index)``). With
    the rows sorted by ``(y, cell)`` once, every deposit follows from three sums per run of equal
    ``(y, cell)``: ``sum g``, ``sum g f`` and ``sum g f^2`` (``np.add.reduceat``). A resample whose
    bandwidth needs a finer grid is summed again from its rows.
    """

    method = CI_METHOD_ROWS

    def __init__(self, row_index, z, y, w, *, n_cells: int, want_curve: bool, seed: int):
        from calibcli.resampling import Multiplicities

        self.n = len(z)
        self.n_cells = n_cells
        self.want_curve = want_curve
        self.multiplicities = Multiplicities(seed, row_index)
        x = z * n_cells
        j = np.minimum(np.floor(x).astype(np.intp), n_cells - 1)
        f = x - j
        self.order = np.lexsort((j, y))
        self.z, self.y, self.f = z[self.order], y[self.order], f[self.order]
        self.w = None if w is None else w[self.order]
        cell = j[self.order]
        self.offsets = np.flatnonzero(np.diff(cell + (n_cells + 1) * self.y, prepend=-1))  # runs of equal (y, cell)
        self.run_cell = cell[self.offsets]
        self.run_positive = self.y[self.offsets] == 1
        # Reused by every resample (fresh 8n-byte arrays would cost a page fault per page each time).
        self._drawn, self._m, self._gf = np.empty(self.n), np.empty(self.n), np.empty(self.n)
        self._g = None if w is None else np.empty(self.n)

    def resample(self, r: int) -> _GridData | None:
        """Replicate ``r`` as a ``_GridData`` (None when it drew no weight).

        Its row weights live in buffers that the next call overwrites: use it before drawing again.
        """
        drawn = self.multiplicities.replicate(r, out=self._drawn)
        m = np.take(drawn, self.order, out=self._m, mode="clip")  # "clip": no buffered copy
        g = m if self.w is None else np.multiply(m, self.w, out=self._g)
        total = float(g.sum())
        if not total > 0:
            return None
        gf = np.multiply(g, self.f, out=self._gf)
        s0 = np.add.reduceat(g, self.offsets)
        s1 = np.add.reduceat(gf, self.offsets)
        np.multiply(gf, self.f, out=gf)
        s2 = np.add.reduceat(gf, self.offsets)
        deposits = [d / total for d in _run_deposits(self.run_positive, self.run_cell, s0, s1, s2, self.n_cells, self.want_curve)]
        return _GridData.of_deposits(deposits, self.n_cells, total, (self.z, self.y, g), want_curve=self.want_curve)


class _CellBootstrap:
    """The Poisson bootstrap from per-(label, cell) sums (SPEC 8), one replicate at a time.

    In replicate ``r`` a cell's resampled count is ``K ~ Poisson(count)`` (exact; cells independent);
    given K, its resampled weight is K times the cell's mean weight (unit or equal weights) or a gamma
    draw with the exact conditional mean ``K mean(w)`` and variance ``K var(w)``; the resampled
    ``sum g f`` is normal with mean ``(resampled weight) x (the cell's weighted mean of f)`` and variance
    ``K mean(w^2) var(f)`` (for unit weights exactly ``K var(f)``), clipped to ``[0, resampled weight]``;
    ``sum g f^2`` keeps the cell's spread of f. Draws come from ``Philox(key=(seed, r))``.
    """

    method = CI_METHOD_CELLS

    def __init__(self, sums: CellSums, *, want_curve: bool, seed: int):
        self.n_cells = sums.n_cells
        self.want_curve = want_curve
        self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        label, self.cell = np.divmod(sums.key, sums.n_cells)
        self.positive = label == 1
        self.count = sums.count
        n = sums.count.astype(np.float64)
        w = sums.field("w")
        with np.errstate(divide="ignore", invalid="ignore"):
            self.mean_w = w / n
            var_w = np.maximum(sums.field("ww") / n - self.mean_w**2, 0.0)
            self.mean_ww = sums.field("ww") / n
            self.mean_f = np.where(w > 0, sums.wf / w, 0.0)
            self.var_f = np.where(w > 0, np.maximum(sums.wf2 / w - self.mean_f**2, 0.0), 0.0)
        # Cells whose weights differ: gamma draws (unit weights: var_w is exactly 0, none of these).
        self.varying = np.flatnonzero(var_w > 1e-12 * self.mean_w**2)
        self.gamma_scale = var_w[self.varying] / self.mean_w[self.varying]
        self.gamma_shape = self.mean_w[self.varying] ** 2 / var_w[self.varying]

    def resample(self, r: int) -> _GridData | None:
        rng = np.random.Generator(np.random.Philox(key=np.array([self.seed, r], dtype=np.uint64)))
        k = rng.poisson(self.count).astype(np.float64)
        s0 = k * self.mean_w
        if len(self.varying):
            s0[self.varying] = rng.gamma(k[self.varying] * self.gamma_shape, self.gamma_scale)
        s1 = s0 * self.mean_f + np.sqrt(k * self.mean_ww * self.var_f) * rng.standard_normal(len(k))
        np.clip(s1, 0.0, s0, out=s1)
        with np.errstate(divide="ignore", invalid="ignore"):
            s2 = np.where(s0 > 0, s1 * s1 / s0 + s0 * self.var_f, 0.0)
        np.minimum(s2, s1, out=s2)  # f <= 1: sum g f^2 <= sum g f
        total = float(s0.sum())
        if not total > 0:
            return None
        deposits = [d / total for d in _run_deposits(self.positive, self.cell, s0, s1, s2, self.n_cells, self.want_curve)]
        return _GridData.of_deposits(deposits, self.n_cells, total, None, want_curve=self.want_curve)


def _bootstrap_values(boot, *, sigma, sigma_full, n_boot, curve_t=None, progress=None):
    """smECE of each replicate (and its kernel regression on ``curve_t`` when given).

    Replicates use the bootstrap's grid (BOOT_CELLS_PER_SIGMA cells per bandwidth); with the fixed
    point, each replicate's own s* is solved starting from the full-data one (a replicate with rows
    and a much smaller s* gets a finer grid).
    """
    values = np.full(n_boot, np.nan)
    curves = None if curve_t is None else np.full((n_boot, len(curve_t)), np.nan)
    for b in range(n_boot):
        cancel.check()  # a signal stops the bootstrap here (this loop may run in a diagram's worker thread)
        data = boot.resample(b)
        if data is not None:  # None: the resample drew only rows of weight 0 (its value stays NaN)
            if sigma is None:
                s, values[b], _, cells, _ = _solve_fixed_point(
                    data, start_cells=boot.n_cells, cells_per_sigma=BOOT_CELLS_PER_SIGMA, guess=sigma_full
                )
            else:
                s, cells = sigma, boot.n_cells
                values[b] = data.smece(s, cells)
            if curves is not None:
                curves[b] = _curve_on(data, s, cells, curve_t)[0]
        if progress is not None:
            progress()
    return values, curves


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
    check_option(
        sigma is not None and np.isfinite(sigma) and sigma > 0,
        f"sigma is {sigma!r}: expected a positive bandwidth (or none, to solve for the fixed point)",
    )
    return float(sigma)


def _check_bootstrap(n_boot, alpha):
    check_option(int(n_boot) == n_boot and n_boot >= 0, f"n_boot is {n_boot!r}: expected an integer >= 0")
    check_option(0 < alpha < 1, f"alpha is {alpha!r}: expected a level in (0, 1), e.g. 0.05")


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
    :meth:`calibcli.accumulators.smooth.SmoothAccumulator.result` and the library functions call.
    """
    _check_bootstrap(n_boot, alpha)
    n_boot = int(n_boot)
    if curve_points is not None:
        check_option(int(curve_points) == curve_points and curve_points >= 2,
                     f"n_points is {curve_points!r}: expected an integer >= 2")
    want_curve = curve_points is not None
    data = _GridData(sums, None if rows is None else rows[1:], want_curve=want_curve)
    check_option(data.weight_total > 0, "the rows' total weight is 0: SmoothECE needs rows of positive weight")
    fixed = sigma is None
    if fixed:
        s, value, gap, n_cells, exact = _solve_fixed_point(data)
    else:
        s = _check_sigma(sigma)
        n_cells = min(_grid_level(s), data.max_cells)
        value, gap, exact = data.smece(s, n_cells), None, False
    needs_finer = not exact and s * n_cells < MIN_CELLS_PER_SIGMA and n_cells < MAX_GRID
    finer_grid = max(_grid_level(s), 2 * n_cells) if needs_finer else None

    replicates = ci_low = ci_high = ci_method = curves = None
    if n_boot > 0:
        if rows is not None:
            bandwidth = s if not fixed else s / 1.2
            boot_cells = _grid_level(bandwidth, BOOT_CELLS_PER_SIGMA) if bandwidth > 0 else n_cells
            boot = _RowBootstrap(*rows, n_cells=boot_cells, want_curve=want_curve, seed=seed)
        else:
            # Replicates cannot be summed on a finer grid than the sums': leave room for their s* to be
            # half the full-data one.
            bandwidth = s if not fixed else s / 2.0
            boot_cells = _grid_level(bandwidth, BOOT_CELLS_PER_SIGMA) if bandwidth > 0 else n_cells
            boot = _CellBootstrap(sums.coarsen(min(boot_cells, sums.n_cells)), want_curve=want_curve, seed=seed)
        t = np.linspace(0.0, 1.0, int(curve_points)) if want_curve else None
        replicates, curves = _bootstrap_values(boot, sigma=None if fixed else s, sigma_full=s, n_boot=n_boot,
                                               curve_t=t, progress=progress)
        ci_low, ci_high = (float(v) for v in _percentiles(replicates, alpha))
        ci_method = boot.method.format(n_boot=n_boot)

    curve = None
    if want_curve:
        t = np.linspace(0.0, 1.0, int(curve_points))
        yhat, density = _curve_on(data, s, n_cells, t)
        band_low = band_high = None
        if curves is not None:
            band_low, band_high = _percentiles(curves, alpha, axis=0)
        curve = SmoothCurve(
            t=t, yhat=yhat, density=density, sigma=float(s), smece=float(value), sigma_is_fixed_point=fixed,
            band_low=band_low, band_high=band_high, ci_low=ci_low, ci_high=ci_high, n_boot=n_boot,
            alpha=float(alpha), n=int(n), weight_total=data.weight_total, ci_method=ci_method,
            needs_finer_grid=needs_finer,
        )
    return SmoothECEResult(
        smece=float(value),
        sigma=float(s),
        sigma_is_fixed_point=fixed,
        n=int(n),
        weight_total=data.weight_total,
        fixed_point_gap=None if gap is None else float(gap),
        ci_low=ci_low,
        ci_high=ci_high,
        n_boot=n_boot,
        alpha=float(alpha),
        grid_size=int(n_cells),
        replicates=replicates,
        ci_method=ci_method,
        needs_finer_grid=needs_finer,
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
    if (isinstance(seed_seq, np.random.SeedSequence) and isinstance(seed_seq.entropy, int)
            and not seed_seq.spawn_key and 0 <= seed_seq.entropy < 2**64
            and type(bit_generator)(np.random.SeedSequence(seed_seq.entropy)).state == bit_generator.state):
        return int(seed_seq.entropy)
    return int(rng.integers(0, 2**63))


def _one_batch(y_true, y_prob, sample_weight, **options) -> SmoothECEResult:
    """The one-batch case of :class:`calibcli.accumulators.smooth.SmoothAccumulator` (rows 0..n-1, default
    limits), including its second pass on a finer grid when the first grid cannot resolve s*."""
    y, z, w = _check(y_true, y_prob, sample_weight)
    n = len(z)
    rows = (np.arange(n, dtype=np.int64), z, y, w) if n <= ROW_LIMIT else None
    grid = STATS_GRID
    while True:
        result = finish(CellSums.of_rows(z, y, w, grid), rows, n=n, **options)
        if not result.needs_finer_grid:
            return result
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
    :class:`calibcli.accumulators.smooth.SmoothAccumulator` fed the rows as one batch. ``progress``
    is called after each resample.
    """
    return _one_batch(y_true, y_prob, sample_weight, sigma=sigma, n_boot=n_boot, alpha=alpha,
                      seed=seed_of(rng), progress=progress)


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
    check_option(int(n_points) == n_points and n_points >= 2, f"n_points is {n_points!r}: expected an integer >= 2")
    return _one_batch(y_true, y_prob, sample_weight, sigma=sigma, n_boot=n_boot, alpha=alpha,
                      seed=seed_of(rng), curve_points=int(n_points), progress=progress).curve
