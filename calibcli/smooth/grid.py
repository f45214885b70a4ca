"""SmoothECE on a grid: the reflected kernel's spectra, per-(label, cell) sums, and the fixed point (SPEC 3, 8).

The computation that :mod:`calibcli.smooth.estimator` describes (its docstring gives the method and the
accuracy), split from it so that the bootstrap (:mod:`calibcli.smooth.bootstrap`) and the finishing of a
state (:mod:`calibcli.smooth.estimator`) both build on it: the grid deposits and their DCT-I spectra, the
smoothed residual and the integral of its absolute value, :class:`CellSums` and :class:`DenseSums`
(the state that streams and merges), :class:`_GridData` (one problem's grid measures, cached), Brent's
method and the fixed point ``s* = smECE_{s*}``. Every public name is importable from
:mod:`calibcli.smooth.estimator` as well.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibcli.core.arraystate import ArrayState

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
#: Coarsest grid of bootstrap resamples: their grids are sized to the bandwidth (BOOT_CELLS_PER_SIGMA cells per
#: sigma) without MIN_GRID's floor, so a small group's wide kernel is solved on a few hundred cells, not 4,096
#: (the same bound on the error per replicate; issue 37).
BOOT_MIN_GRID = 2**8
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


# ----------------------------------------------------------------------------------------------
# Grid spectra and the smoothed residual on a grid
# ----------------------------------------------------------------------------------------------


def _grid_level(sigma: float, cells_per_sigma: float = CELLS_PER_SIGMA, min_grid: int = MIN_GRID) -> int:
    """Number of cells (power of two, from ``min_grid`` to ``MAX_GRID``) giving at least ``cells_per_sigma``
    cells per ``sigma``."""
    if not sigma > 0:
        return MAX_GRID
    want = cells_per_sigma / sigma
    if want >= MAX_GRID:
        return MAX_GRID
    if want <= min_grid:  # a wide kernel (sigma beyond cells_per_sigma / min_grid, up to any finite value)
        return min_grid
    return int(min(MAX_GRID, max(min_grid, 1 << int(np.ceil(np.log2(want))))))


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


def segment_sums(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``x[starts[g]:starts[g + 1]].sum()`` for every (non-empty) segment g, bit for bit, in one call.

    ``np.add.reduceat`` starts each segment's sum from its first element and adds the rest pairwise, where
    ``sum`` adds all of them pairwise from 0: with a 0 put before each segment the two are the same.
    """
    starts = np.asarray(starts, dtype=np.intp)
    return np.add.reduceat(np.insert(x, starts, 0.0), starts + np.arange(len(starts)))


# ----------------------------------------------------------------------------------------------
# Per-(label, cell) sums: the state that streams, merges and coarsens
# ----------------------------------------------------------------------------------------------

_FIELDS = ("w", "wf", "wf2", "wf3", "ww")


class CellSums(ArrayState):
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
    def empty(cls, n_cells: int) -> CellSums:
        none = np.empty(0)
        return cls(n_cells, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), None, none, none, none, None)

    def __len__(self) -> int:
        return len(self.key)

    @property
    def weighted(self) -> bool:
        return self.w is not None

    @property
    def nbytes(self) -> int:
        return sum(
            a.nbytes for a in (self.key, self.count, self.w, self.wf, self.wf2, self.wf3, self.ww) if a is not None
        )

    def field(self, name: str) -> np.ndarray:
        """One of the sums; ``w`` and ``ww`` as floats even for unit weights."""
        value = getattr(self, name)
        return self.count.astype(np.float64) if value is None else value

    # -- building and adding -----------------------------------------------------------------

    @classmethod
    def of_rows(cls, z: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_cells: int) -> CellSums:
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
    def _of_chunk(cls, z, y, w, n_cells: int) -> CellSums:
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
    def _group(cls, key, count, columns, n_cells: int) -> CellSums:
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
    def combine(cls, parts: list[CellSums], n_cells: int) -> CellSums:
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
        columns: list[np.ndarray | None] = []
        for name in _FIELDS:
            if name in ("w", "ww") and not any(p.weighted for p in parts):
                columns.append(None)
            else:
                columns.append(np.concatenate([p.field(name) for p in parts]))
        return cls._group(key, count, columns, n_cells)

    def coarsen(self, n_cells: int) -> CellSums:
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
        return (label % 2).astype(np.float64), cell  # (stacked problems: key // (2 n_cells) is the problem)

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

    def stacked_totals(self, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`totals` of stacked problems (problem g's keys offset by ``g 2 n_cells``, its cells from
        ``starts[g]``; each problem has a cell of positive weight), as arrays: the same sums, bit for bit."""
        label, cell = self._label_cell()
        w = self.field("w")
        wz = (cell * w + self.wf) / self.n_cells
        total = segment_sums(w, starts)
        signed = segment_sums(label * w - wz, starts)
        absolute = segment_sums(label * (w - wz) + (1.0 - label) * wz, starts)
        return total, signed / total, absolute / total

    def deposits(self, parts: int = 1, corrected: bool = True, problems: int | None = None):
        """Unnormalised grid measures (M + 1 nodes): residual ``w (y - z)``, and for ``parts=3`` also ``w y`` and ``w``.

        Returns ``(linear, correction)``: the linear-interpolation deposits and (``corrected``) the
        stencil that also keeps each cell's second moment (None otherwise); see the module docstring.
        ``problems``: the sums are that many problems' stacked (problem g's keys offset by ``g 2 n_cells``), and
        each measure is a ``(problems, M + 1)`` array, row g what problem g alone gives.
        """
        m = self.n_cells
        rows = 1 if problems is None else problems
        label, cell = self._label_cell()
        node = cell if problems is None else self.key // (2 * m) * m + cell  # (problem, cell) of each sum
        linear, correction = self._deposits(m, rows, label, cell, node, parts, corrected)
        if problems is None:  # one problem: its measures as 1-d arrays
            linear = tuple(a[0] for a in linear)
            correction = None if correction is None else tuple(a[0] for a in correction)
        return linear, correction

    def _deposits(self, m: int, rows: int, label, cell, node, parts: int, corrected: bool):
        w = self.field("w")
        lower = w - self.wf  # sum w (1 - f); the upper node gets sum w f
        z_lower = (cell * lower + self.wf - self.wf2) / m  # sum w z (1 - f), with z = (cell + f) / m
        z_upper = (cell * self.wf + self.wf2) / m  # sum w z f
        pairs = [(label * lower - z_lower, label * self.wf - z_upper)]
        if parts == 3:
            pairs += [(label * lower, label * self.wf), (lower, self.wf)]
        linear = []
        for low, up in pairs:
            out = np.zeros((rows, m + 1))
            out[:, :m] += np.bincount(node, weights=low, minlength=rows * m).reshape(rows, m)
            out[:, 1:] += np.bincount(node, weights=up, minlength=rows * m).reshape(rows, m)
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
            c = np.bincount(node, weights=q, minlength=rows * m).reshape(rows, m)
            ext = np.zeros((rows, m + 3))  # nodes -1 .. m + 1
            ext[:, 0:m] -= c
            ext[:, 1 : m + 1] += c
            ext[:, 2 : m + 2] += c
            ext[:, 3 : m + 3] -= c
            out = ext[:, 1 : m + 2].copy()
            out[:, 1] += ext[:, 0]  # node -1 is the reflection of node 1
            out[:, m - 1] += ext[:, m + 2]  # node m + 1 that of node m - 1
            correction.append(out)
        return tuple(linear), tuple(correction)

    # -- state -----------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------
# A binary problem on grids
# ----------------------------------------------------------------------------------------------


#: Grids up to this many cells sum batches straight into dense per-(label, cell) arrays (a few MB).
DENSE_MAX_CELLS = 1 << 18


class DenseSums(ArrayState):
    """Per-(label, cell) sums of the rows added since the last :meth:`take`, as dense arrays.

    The same sums as :meth:`CellSums.of_rows` (count, ``w``, ``w f``, ``w f^2``, ``w f^3``,
    ``w^2``; ``w`` and ``ww`` only once a weighted batch arrives), added batch by batch with bincount.

    Until the rows have touched a sixteenth of the grid the arrays hold only the cells touched (``cells``,
    sorted): a group of a few thousand rows then holds kilobytes, not the grid's 10 MB (a thousand groups'
    grids were 10 GB). Each cell's sum is the same either way: its batches' sums added in turn, from zero.
    """

    def __init__(self, n_cells: int):
        self.n_cells = n_cells
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.cells: np.ndarray | None = np.empty(0, dtype=np.int64)  # None: dense (every cell of the grid)
        self.count = np.zeros(0, dtype=np.int64)
        self.wf, self.wf2, self.wf3 = np.zeros(0), np.zeros(0), np.zeros(0)
        self.w: np.ndarray | None = None
        self.ww: np.ndarray | None = None

    def _arrays(self) -> list[str]:
        return [name for name in ("count", "w", "wf", "wf2", "wf3", "ww") if getattr(self, name) is not None]

    def _widen(self, cells: np.ndarray | None) -> None:
        """Hold ``cells`` (sorted, a superset of the cells held; None: the whole grid), the sums carried over."""
        size = 2 * self.n_cells if cells is None else len(cells)
        at = slice(None) if self.cells is None else self.cells if cells is None else np.searchsorted(cells, self.cells)
        for name in self._arrays():
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[at] = old
            setattr(self, name, new)
        self.cells = cells

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
        # A chunk far smaller than the grid (a group's share of a batch) is summed over the cells it touches only:
        # each cell's sum takes the same terms in the same order (bincount, from zero), the other cells get
        # nothing instead of + 0, so the same sums without passes over the whole grid.
        touched = None
        if len(z) * 16 < size:
            touched, key = np.unique(key, return_inverse=True)
        if self.cells is not None:  # held sparsely: the cells touched so far
            union = None if touched is None else np.union1d(self.cells, touched)
            if union is None or len(union) * 16 >= size:
                self._widen(None)
            elif len(union) > len(self.cells):
                self._widen(union)
        at = None if touched is None else touched if self.cells is None else np.searchsorted(self.cells, touched)

        def add(target: np.ndarray, weights: np.ndarray | None = None) -> None:
            sums = np.bincount(key, weights=weights, minlength=size if at is None else len(at))
            if at is None:
                target += sums
            else:
                target[at] += sums

        add(self.count)
        if self.w is not None and self.ww is not None:  # (both or neither)
            ww = np.ones(len(z)) if w is None else w
            add(self.w, ww)
            add(self.ww, ww * ww)
            wf = ww * f
        else:
            wf = f
        add(self.wf, wf)
        wf2 = wf * f
        add(self.wf2, wf2)
        wf2 *= f
        add(self.wf3, wf2)
        self.rows += len(z)

    def take(self) -> CellSums:
        """The sums so far as (sparse) cell sums; the arrays start again from zero."""
        where = np.flatnonzero(self.count)

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[where]

        out = CellSums(
            self.n_cells,
            (where if self.cells is None else self.cells[where]).astype(np.int64),
            self.count[where],
            pick(self.w),
            pick(self.wf),
            pick(self.wf2),
            pick(self.wf3),
            pick(self.ww),
        )
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
    def of_deposits(cls, deposits, n_cells: int, total: float, rows=None, *, want_curve: bool) -> _GridData:
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
            self._deposits[key] = tuple(a + c / self.weight_total for a, c in zip(linear, correction, strict=True))
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


def _brent_root(
    f: Callable[[float], float], a: float, b: float, *, xtol: float, rtol: float, maxiter: int = 200
) -> float:
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
