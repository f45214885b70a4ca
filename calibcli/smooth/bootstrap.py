"""SmoothECE's bootstrap, every replicate of a block at once (SPEC 2.4, 3 and 8; issue "replicates as an axis").

The resamples are the Poisson bootstrap of :mod:`calibcli.smooth.estimator` (its docstring gives the laws): over
rows while they are at hand (:class:`RowBootstrap`), from the per-(label, cell) sums beyond
(:class:`CellBootstrap`). A block of resamples is a ``(R, M + 1)`` array of grid deposits; every
bandwidth evaluation is one batched DCT of all the rows still being solved, and each resample's own
fixed point ``s*`` is found by Brent's method run on all of them in lockstep (:func:`brent_rows`): the
same steps, in the same order, as the one-replicate solver of :mod:`calibcli.smooth.grid` takes for each
(so the same numbers), without a Python loop over replicates. A replicate whose ``s*`` needs a finer grid
than the block's (rows only) is solved again on that grid with the others that need it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibcli.core import cancel, resampling
from calibcli.core.resampling import Multiplicities
from calibcli.smooth import kernels
from calibcli.smooth.grid import (
    _CUTOFF,
    BOOT_CELLS_PER_SIGMA,
    BOOT_MIN_GRID,
    CI_METHOD_CELLS,
    CI_METHOD_ROWS,
    DENSITY_FLOOR,
    FIXED_POINT_TOL,
    MAX_GRID,
    CellSums,
    _grid_level,
    _multiplier,
)

#: Rows' multiplicities held at once (replicates x rows) by the row bootstrap's NumPy form (2 MB arrays).
_BLOCK_ROWS = 1 << 18
#: Grid values per array of a block (replicates x grid nodes): 2 MB arrays, which stay in the caches; a block
#: eight times larger ran twice slower than one replicate at a time (smece at 1e6 rows). Fixes speed and
#: memory, never the numbers.
_BLOCK_VALUES = 1 << 18


# ----------------------------------------------------------------------------------------------
# Grid operations on rows of deposits (the same arithmetic as smooth_grid's one-row versions)
# ----------------------------------------------------------------------------------------------


def _dct1_rows(x: np.ndarray) -> np.ndarray:
    """DCT-I of every row (see :func:`calibcli.smooth.grid._dct1`)."""
    return np.fft.rfft(np.concatenate([x, x[:, -2:0:-1]], axis=1), axis=1).real


def spectra(deposits: np.ndarray) -> np.ndarray:
    """DCT-I of each row's grid measure (end values doubled): :func:`calibcli.smooth.grid._spectrum` per row."""
    x = deposits.copy()
    x[:, 0] *= 2.0
    x[:, -1] *= 2.0
    return _dct1_rows(x)


def _sinc2(n_cells: int, width: int) -> np.ndarray:
    """``np.sinc(k / (2 n_cells)) ** 2`` for ``k < width`` (the kernel multiplier's correction), computed once per
    grid at its largest width so far and sliced (each value is the same elementwise arithmetic on the same k)."""
    have = _SINC2.get(n_cells)
    if have is None or len(have) < width:
        k = np.arange(max(width, 256 if have is None else 2 * len(have)), dtype=np.float64)
        have = _SINC2[n_cells] = np.sinc(k / (2 * n_cells)) ** 2
    return have[:width]


#: :func:`_sinc2` by grid (a few grids per run; read by several threads, replaced whole, never changed in place).
_SINC2: dict[int, np.ndarray] = {}


def _products(spec: np.ndarray, rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The mirrored sequences (``2 n_cells`` wide) whose real FFTs are the DCT-Is of rows ``rows`` of the spectra
    ``spec`` times the kernel's multiplier at their own bandwidths ``sigma`` (non-zero below each one's cutoff
    only): written straight into the mirrored sequence (:func:`_dct1_rows` of the zero-padded product: the same
    input to the same transform, without the padded copy), reading only the live part of each row of ``spec``.

    NumPy rather than a compiled loop: ``ece``'s ICI solves its fixed point here too, and a plain ``ece`` does not
    load Numba (tests/cli/test_startup_imports.py)."""
    R = len(rows)
    n_cells = spec.shape[1] - 1
    product = np.zeros((R, 2 * n_cells))
    resolved = sigma * n_cells >= 2.0
    live_rows = np.flatnonzero(resolved)
    if len(live_rows):
        s = sigma[live_rows]
        n_live = np.minimum(n_cells + 1, np.ceil(_CUTOFF / s).astype(np.int64) + 1)
        width = int(n_live.max())
        k = np.arange(width, dtype=np.float64)
        with np.errstate(over="ignore"):  # a huge sigma: exp(-inf) = 0 is right
            mult = np.exp(-0.5 * ((np.pi * k)[None, :] * s[:, None]) ** 2) / _sinc2(n_cells, width)
        live = k[None, :] < n_live[:, None]
        _mirrored(product, live_rows, np.where(live, spec[rows[live_rows], :width] * mult, 0.0), n_cells)
    for i in np.flatnonzero(~resolved):  # a bandwidth below two cells: the sampled kernel (rare)
        mult = _multiplier(n_cells, float(sigma[i]))
        _mirrored(product, np.array([i]), spec[rows[i] : rows[i] + 1, : len(mult)] * mult, n_cells)
    return product


def _mirrored(out: np.ndarray, rows: np.ndarray, values: np.ndarray, n_cells: int) -> None:
    """Rows ``rows`` of ``out`` (zeros, ``2 n_cells`` wide) become ``[x, x[-2:0:-1]]`` of ``x`` = ``values`` padded
    with zeros to ``n_cells + 1`` (what :func:`_dct1_rows` transforms)."""
    width = values.shape[1]
    out[rows, :width] = values
    if width > 1:  # x[n_cells - 1], ..., x[1]: the non-zero ones are x[width - 1 or n_cells - 1], ..., x[1]
        top = min(width, n_cells)
        out[rows, 2 * n_cells - top + 1 :] = values[:, top - 1 : 0 : -1]


def smoothed_rows(spec: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``K_sigma`` applied to each row's grid measure at its own bandwidth ``sigma[r]`` (grid nodes)."""
    return 0.5 * np.fft.rfft(_products(spec, np.arange(len(spec)), sigma), axis=1).real


def smece_rows(spec: np.ndarray, rows: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``smECE_sigma`` of rows ``rows`` of the spectra ``spec``, row ``rows[i]`` at its own bandwidth ``sigma[i]``:
    :func:`calibcli.smooth.grid._abs_integral` of :func:`smoothed_rows` of those rows (without gathering them)."""
    return abs_integral_rows(0.5 * np.fft.rfft(_products(spec, rows, sigma), axis=1).real)


def abs_integral_rows(r: np.ndarray) -> np.ndarray:
    """:func:`calibcli.smooth.grid._abs_integral` of every row: ``|a| + |b|`` over each cell, replaced by
    ``(a^2 + b^2) / (|a| + |b|)`` on the few cells where the row changes sign."""
    absolute = np.abs(r)
    seg = absolute[:, :-1] + absolute[:, 1:]
    crossing = np.multiply(r[:, :-1], r[:, 1:], out=absolute[:, :-1]) < 0
    rows, cells = np.divmod(np.flatnonzero(crossing), crossing.shape[1])  # (np.nonzero is slower on 2-D arrays)
    if len(rows):
        a, b = r[rows, cells], r[rows, cells + 1]
        seg[rows, cells] = (a**2 + b**2) / seg[rows, cells]
    return seg.sum(axis=1) * 0.5 / (r.shape[1] - 1)


# ----------------------------------------------------------------------------------------------
# Brent's method on many roots at once
# ----------------------------------------------------------------------------------------------


def brent_rows(
    f: Callable[[np.ndarray, np.ndarray], np.ndarray],
    a,
    b,
    fa,
    fb,
    *,
    xtol: float,
    rtol: float,
    maxiter: int = 200,
    values: np.ndarray | None = None,
) -> np.ndarray:
    """Roots of many functions at once: ``f(rows, x)`` evaluates functions ``rows`` at points ``x``.

    Every root follows :func:`calibcli.smooth.grid._brent_root` step for step (Brent 1973, ch. 4), given
    the values ``fa``, ``fb`` at the bracket's ends; each iteration evaluates all the unfinished ones
    in one call. ``values``, if given, receives ``f`` at each root (a point where it was evaluated, so no
    call is spent on it again).
    """
    a, b, fa, fb = (np.array(v, dtype=np.float64) for v in (a, b, fa, fb))
    out = np.full(len(a), np.nan)
    at_root = np.full(len(a), np.nan) if values is None else values
    done = fa == 0.0
    out[done] = a[done]
    at_root[done] = fa[done]
    c, fc = a.copy(), fa.copy()
    step = b - a
    prev = step.copy()
    active = np.flatnonzero(~done)
    for _ in range(maxiter):
        if not len(active):
            return out
        A, B, C, FA, FB, FC, ST, PR = (v[active] for v in (a, b, c, fa, fb, fc, step, prev))
        zero = FB == 0.0
        out[active[zero]] = B[zero]
        at_root[active[zero]] = FB[zero]
        same = (FB > 0) == (FC > 0)  # the root lies between a and b: make a the far end
        C, FC = np.where(same, A, C), np.where(same, FA, FC)
        ST = np.where(same, B - A, ST)
        PR = np.where(same, B - A, PR)
        swap = np.abs(FC) < np.abs(FB)  # b must be the point with the smaller |f|
        A, FA, B, FB, C, FC = (
            np.where(swap, B, A),
            np.where(swap, FB, FA),
            np.where(swap, C, B),
            np.where(swap, FC, FB),
            np.where(swap, B, C),
            np.where(swap, FB, FC),
        )
        tol = 0.5 * (xtol + rtol * np.abs(B))
        half = 0.5 * (C - B)
        converged = ~zero & (np.abs(half) <= tol)
        out[active[converged]] = B[converged]
        at_root[active[converged]] = FB[converged]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            interp = (np.abs(PR) >= tol) & (np.abs(FA) > np.abs(FB))
            ratio = FB / FA
            secant = A == C
            qa, rb = FA / FC, FB / FC
            p = np.where(secant, 2.0 * half * ratio, ratio * (2.0 * half * qa * (qa - rb) - (B - A) * (rb - 1.0)))
            q = np.where(secant, 1.0 - ratio, (qa - 1.0) * (rb - 1.0) * (ratio - 1.0))
            q = np.where(p > 0, -q, q)
            p = np.abs(p)
            accept = interp & (2.0 * p < np.minimum(3.0 * half * q - np.abs(tol * q), np.abs(PR * q)))
            new_step = np.where(accept, p / q, half)
        new_prev = np.where(accept, ST, half)
        B_next = B + np.where(np.abs(new_step) > tol, new_step, np.where(half > 0, tol, -tol))
        go = ~(zero | converged)
        live = active[go]
        a[live], fa[live] = B[go], FB[go]
        c[live], fc[live] = C[go], FC[go]
        step[live], prev[live] = new_step[go], new_prev[go]
        b[live] = B_next[go]
        if len(live):
            fb[live] = f(live, b[live])
        active = live
    if len(active):
        raise RuntimeError(f"Brent's method did not converge in {maxiter} iterations")
    return out


# ----------------------------------------------------------------------------------------------
# Resamples as blocks of deposits
# ----------------------------------------------------------------------------------------------


#: Draws (rows x replicates, over every group) from which the row bootstrap runs its compiled loops
#: (:mod:`calibcli.smooth.kernels`: the draws, run sums and deposits, a third of NumPy's time) rather than NumPy's
#: passes: the first call in a process imports Numba and loads their machine code (0.4 s), which pays off from
#: about 1.5e8 draws on (the threshold of :mod:`calibcli.binned.bootstrap`'s bootstrap over groups). Both make the
#: same draws and formulas, summed in their own orders: they agree within 1e-12 relative (SPEC 8.1;
#: tests/smooth/test_smooth_kernels.py). An ungrouped run holds at most 2^17 rows (``ROW_LIMIT``): with 1000
#: resamples it stays below, and never loads Numba.
_COMPILED_DRAWS = 1 << 27


def _run_deposits(
    positive, cell, s0, s1, s2, total, n_cells: int, want_curve: bool, compiled: bool = False
) -> list[np.ndarray]:
    """Linear deposits ``(R, M + 1)`` from runs of equal ``(label, cell)`` with sums ``s0, s1, s2``
    ``(R, runs)`` of ``g, g f, g f^2``, each replicate's divided by its total weight ``total``.

    ``g (y - z)``, ``g y`` and ``g`` split as ``(1 - f, f)`` between nodes ``cell`` and ``cell + 1``,
    with ``z = (cell + f) / M``: all three follow from the three sums of each run. Each node's lower and upper
    shares are summed in the order of the runs, from zero: one bincount over the block (row r offset by
    ``r (M + 1)``), or ``compiled``, :func:`calibcli.smooth.kernels.run_deposits` (within 1e-12 relative).
    """
    R = s0.shape[0]
    if compiled:
        out = np.empty((3 if want_curve else 1, R, n_cells + 1))
        kernels.run_deposits(
            np.ascontiguousarray(positive, dtype=np.bool_),
            np.ascontiguousarray(cell, dtype=np.int64),
            s0,
            s1,
            s2,
            total,
            n_cells,
            out,
            np.empty(n_cells + 1),
            np.empty(n_cells + 1),
        )
        return list(out)
    size = n_cells + 1
    offset = (np.arange(R) * size)[:, None]
    lower_at, upper_at = (cell + offset).ravel(), (cell + 1 + offset).ravel()

    def deposit(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        return (
            np.bincount(lower_at, weights=lower.ravel(), minlength=R * size)
            + np.bincount(upper_at, weights=upper.ravel(), minlength=R * size)
        ).reshape(R, size)

    w_lower, w_upper = s0 - s1, s1
    y_lower, y_upper = np.where(positive, w_lower, 0.0), np.where(positive, w_upper, 0.0)
    # sum g z (1 - f) and sum g z f, from z = (cell + f) / M
    z_lower = (cell * w_lower + (s1 - s2)) / n_cells
    z_upper = (cell * s1 + s2) / n_cells
    parts = [(y_lower - z_lower, y_upper - z_upper)]
    if want_curve:
        parts += [(y_lower, y_upper), (w_lower, w_upper)]
    with np.errstate(divide="ignore", invalid="ignore"):
        return [deposit(lower, upper) / total[:, None] for lower, upper in parts]


class Block:
    """Resamples ``reps`` of a bootstrap as deposits ``(R, M + 1)`` at ``n_cells`` (each divided by its total
    weight ``total``; parts: residual, and ``w y`` and ``w`` for curves). ``rows`` = ``(z, y, weights)`` when
    the bootstrap has rows, ``weights(reps)`` giving the rows' weights in those resamples, for finer grids."""

    def __init__(self, reps, deposits, total, n_cells: int, rows=None):
        self.reps, self.deposits, self.total, self.n_cells, self.rows = reps, deposits, total, n_cells, rows

    def at(self, n_cells: int, which: np.ndarray, parts: int) -> list[np.ndarray]:
        """Deposits of resamples ``which`` (indices into the block) on a finer grid, summed again from their rows."""
        z, y, weights = self.rows
        g = weights(self.reps[which])
        out = [np.empty((len(which), n_cells + 1)) for _ in range(parts)]
        for j, r in enumerate(which):  # only the resamples whose s* the block's grid cannot resolve
            linear, _ = CellSums.of_rows(z, y, g[j], n_cells).deposits(parts, False)
            for part in range(parts):
                out[part][j] = linear[part] / self.total[r]
        return out


class RowBootstrap:
    """The Poisson bootstrap over rows (SPEC 8), a block of replicates at a time.

    Row ``i`` weighs ``m_ir w_i`` in replicate ``r``, ``m_ir ~ Poisson(1)`` from
    :class:`calibcli.core.resampling.Multiplicities` (a function of ``(seed, r, global row index)``). With
    the rows sorted by ``(y, cell)`` once, every deposit follows from three sums per run of equal
    ``(y, cell)``: ``sum g``, ``sum g f`` and ``sum g f^2``, drawn and summed in one compiled loop
    (:func:`calibcli.smooth.kernels.run_sums`: the draws of :meth:`Multiplicities.block`, the sums in the rows'
    order) or, for few draws, by NumPy's passes (``np.add.reduceat``): one step's two backends.
    """

    method = CI_METHOD_ROWS

    def __init__(self, row_index, z, y, w, *, n_cells: int, want_curve: bool, seed: int):

        self.n = len(z)
        self.n_cells = n_cells
        self.want_curve = want_curve
        x = z * n_cells
        j = np.minimum(np.floor(x).astype(np.intp), n_cells - 1)
        f = x - j
        self.order = np.lexsort((j, y))
        # the rows' multiplicities drawn in this order (each row's draw is keyed by its own index: no gather after)
        self.multiplicities = Multiplicities(seed, np.asarray(row_index)[self.order])
        self.z, self.y = z[self.order], y[self.order]
        self.f = np.ascontiguousarray(f[self.order], dtype=np.float64)
        self.w = None if w is None else np.ascontiguousarray(w[self.order], dtype=np.float64)
        cell = j[self.order]
        self.offsets = np.flatnonzero(np.diff(cell + (n_cells + 1) * self.y, prepend=-1))  # runs of equal (y, cell)
        self.run_cell = cell[self.offsets]
        self.run_positive = self.y[self.offsets] == 1

    def block_size(self) -> int:
        return max(1, _BLOCK_VALUES // (self.n_cells + 1))

    def weights(self, reps: np.ndarray) -> np.ndarray:
        """The sorted rows' weights ``m_ir w_i`` in resamples ``reps``: ``(len(reps), n)``."""
        m = self.multiplicities.block(reps)
        return m if self.w is None else np.multiply(m, self.w, out=m)

    def resample(self, reps: np.ndarray, compiled: bool = False) -> Block:
        """Resamples ``reps``; ``compiled``: drawn, summed and deposited by the compiled loops (within 1e-12
        relative of NumPy's passes)."""
        reps = np.asarray(reps, dtype=np.int64)
        R, runs = len(reps), len(self.offsets)
        if compiled:  # the multiplicities drawn, weighted and summed per run in one loop per replicate
            cancel.check()
            total, s0, s1, s2 = np.empty(R), np.empty((R, runs)), np.empty((R, runs)), np.empty((R, runs))
            kernels.run_sums(
                resampling._stream_keys(self.multiplicities.seed, reps),
                self.multiplicities._positions,
                self.f if self.w is None else self.w,
                self.w is not None,
                self.f,
                self.offsets,
                resampling._CELL_INT8,
                resampling._THRESHOLDS,
                total,
                s0,
                s1,
                s2,
            )
        else:  # the rows' weights a few resamples at a time (arrays that stay in the caches), their run sums for all
            sums = []
            step = max(1, _BLOCK_ROWS // max(self.n, 1))
            for first in range(0, R, step):
                g = self.weights(reps[first : first + step])
                gf = g * self.f
                s0 = np.add.reduceat(g, self.offsets, axis=1)
                s1 = np.add.reduceat(gf, self.offsets, axis=1)
                gf *= self.f
                sums.append((g.sum(axis=1), s0, s1, np.add.reduceat(gf, self.offsets, axis=1)))
            total, s0, s1, s2 = (np.concatenate(part) for part in zip(*sums, strict=True))
        deposits = _run_deposits(
            self.run_positive, self.run_cell, s0, s1, s2, total, self.n_cells, self.want_curve, compiled
        )
        return Block(reps, deposits, total, self.n_cells, (self.z, self.y, self.weights))


class CellBootstrap:
    """The Poisson bootstrap from per-(label, cell) sums (SPEC 8), a block of replicates at a time.

    In replicate ``r`` a cell's resampled count is ``K ~ Poisson(count)`` (exact; cells independent);
    given K, its resampled weight is K times the cell's mean weight (unit or equal weights) or a gamma
    draw with the exact conditional mean ``K mean(w)`` and variance ``K var(w)``; the resampled
    ``sum g f`` is normal with mean ``(resampled weight) x (the cell's weighted mean of f)`` and variance
    ``K mean(w^2) var(f)`` (for unit weights exactly ``K var(f)``), clipped to ``[0, resampled weight]``;
    ``sum g f^2`` keeps the cell's spread of f. Draws come from ``Philox(key=(seed, r))``, one stream per
    replicate (so each replicate's draws are taken from its own generator; everything after is batched).
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

    def block_size(self) -> int:
        return max(1, _BLOCK_VALUES // (self.n_cells + 1))

    def resample(self, reps: np.ndarray, compiled: bool = False) -> Block:
        R, cells = len(reps), len(self.count)
        k, normal = np.empty((R, cells)), np.empty((R, cells))
        gamma = np.empty((R, len(self.varying)))
        for j, r in enumerate(reps):  # the draws of replicate r come from its own stream, in this order
            rng = np.random.Generator(np.random.Philox(key=np.array([self.seed, r], dtype=np.uint64)))
            k[j] = rng.poisson(self.count)
            if len(self.varying):
                gamma[j] = rng.gamma(k[j, self.varying] * self.gamma_shape, self.gamma_scale)
            normal[j] = rng.standard_normal(cells)
        s0 = k * self.mean_w
        if len(self.varying):
            s0[:, self.varying] = gamma
        s1 = s0 * self.mean_f + np.sqrt(k * self.mean_ww * self.var_f) * normal
        np.clip(s1, 0.0, s0, out=s1)
        with np.errstate(divide="ignore", invalid="ignore"):
            s2 = np.where(s0 > 0, s1 * s1 / s0 + s0 * self.var_f, 0.0)
        np.minimum(s2, s1, out=s2)  # f <= 1: sum g f^2 <= sum g f
        total = s0.sum(axis=1)
        deposits = _run_deposits(self.positive, self.cell, s0, s1, s2, total, self.n_cells, self.want_curve, compiled)
        return Block(reps, deposits, total, self.n_cells)


# ----------------------------------------------------------------------------------------------
# Fixed points and values of a block
# ----------------------------------------------------------------------------------------------


def _fixed_points(
    residual,
    lo: np.ndarray,
    guess: np.ndarray,
    n_cells: int,
    max_cells: int,
    refine: Callable[[np.ndarray, int], np.ndarray | tuple[np.ndarray, np.ndarray]],
    *,
    hi: np.ndarray | None = None,
    cells_per_sigma: float = BOOT_CELLS_PER_SIGMA,
    min_cells: int = BOOT_MIN_GRID,
):
    """The fixed points ``s* = smECE_{s*}`` of resamples given by their residual deposits ``(N, n_cells + 1)``:
    for each, the steps of :func:`calibcli.smooth.grid._solve_fixed_point` (bracket ``[lo, hi]``, narrowed
    around ``guess`` where it lies inside; ``s*`` at an end of it or by Brent on ``smECE_s - s``), all at
    once. A resample whose ``s*`` needs a finer grid (``cells_per_sigma`` cells per ``s*``, on a grid of at least
    ``min_cells``, at most 8 times finer per step) is solved again, with the others needing the same grid, on deposits
    ``refine(indices, cells)`` summed from its rows.

    ``hi`` defaults to 1 (a resample's mean absolute residual is at most 1). ``residual`` may be a pair
    ``(linear, moment-keeping)`` of deposits (and ``refine`` return pairs): the second is read at bandwidths
    of at least two cells, as a point estimate's :meth:`calibcli.smooth.grid._GridData.smece` reads it (the ICI
    of many groups at once, :mod:`calibcli.clinical.classical_tests`).

    Returns ``(s*, smECE_{s*}, grid cells)`` per resample."""
    N = len(lo)
    linear, kept = residual if isinstance(residual, tuple) else (residual, None)
    spec = spectra(linear if kept is None else kept)

    def g(local: np.ndarray, s: np.ndarray) -> np.ndarray:
        coarse = np.flatnonzero(s * n_cells < 2.0) if kept is not None else ()
        if len(coarse):  # a bandwidth below two cells: the linear deposit (smooth_grid._resolved)
            rows = spec[local]
            rows[coarse] = spectra(linear[local[coarse]])
            return smece_rows(rows, np.arange(len(local)), s) - s
        return smece_rows(spec, local, s) - s

    hi = np.ones(N) if hi is None else hi
    a, b = lo.copy(), hi.copy()
    # g at a and at b where the narrowing below has evaluated it (the same value as evaluating it again: each
    # replicate's transform is its own, whatever else is in the batch), so no evaluation is repeated
    ga, gb = np.full(N, np.nan), np.full(N, np.nan)
    known_a, known_b = np.zeros(N, dtype=bool), np.zeros(N, dtype=bool)
    h = np.flatnonzero((lo < guess) & (guess < hi))
    if len(h):
        inner_a, inner_b = np.maximum(lo[h], 0.8 * guess[h]), np.minimum(hi[h], 1.25 * guess[h])
        g_inner_a = g(h, inner_a)
        below = g_inner_a <= 0
        b[h[below]], gb[h[below]], known_b[h[below]] = inner_a[below], g_inner_a[below], True
        rest, ia, ib, g_ia = h[~below], inner_a[~below], inner_b[~below], g_inner_a[~below]
        g_ib = g(rest, ib)
        above = g_ib >= 0
        a[rest[above]], ga[rest[above]], known_a[rest[above]] = ib[above], g_ib[above], True
        a[rest[~above]], b[rest[~above]] = ia[~above], ib[~above]
        ga[rest[~above]], gb[rest[~above]] = g_ia[~above], g_ib[~above]
        known_a[rest[~above]] = known_b[rest[~above]] = True
    unknown = np.flatnonzero(~known_a)
    ga[unknown] = g(unknown, a[unknown])
    s = np.where(ga <= 0, a, np.nan)
    value = np.where(ga <= 0, ga, np.nan)  # g at s (smECE_s - s), known wherever s is known
    need_b = np.flatnonzero(~(ga <= 0))
    unknown = need_b[~known_b[need_b]]
    gb[unknown] = g(unknown, b[unknown])
    at_b = need_b[gb[need_b] >= 0]
    s[at_b], value[at_b] = b[at_b], gb[at_b]
    inner = need_b[~(gb[need_b] >= 0)]
    if len(inner):
        at_root = np.empty(len(inner))
        s[inner] = brent_rows(
            lambda local, x: g(inner[local], x),
            a[inner],
            b[inner],
            ga[inner],
            gb[inner],
            xtol=1e-13,
            rtol=4 * np.finfo(float).eps,
            values=at_root,
        )
        value[inner] = at_root
    value += s
    cells = np.full(N, n_cells)
    needed = np.array([min(_grid_level(float(v), cells_per_sigma, min_cells), max_cells) for v in s], dtype=np.int64)
    finer = np.minimum(needed, 8 * n_cells)
    for grid in np.unique(finer[needed > n_cells]):
        pick = np.flatnonzero((needed > n_cells) & (finer == grid))

        def refine_picked(local: np.ndarray, cells_: int, pick: np.ndarray = pick):
            return refine(pick[local], cells_)

        s[pick], value[pick], cells[pick] = _fixed_points(
            refine(pick, int(grid)),
            lo[pick],
            s[pick],
            int(grid),
            max_cells,
            refine_picked,
            hi=hi[pick],
            cells_per_sigma=cells_per_sigma,
            min_cells=min_cells,
        )
    return s, value, cells


def _curves(block: Block, s: np.ndarray, cells: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Kernel regression of y on z of every resample at its bandwidth (NaN where the density is below
    ``DENSITY_FLOOR`` of its maximum), on ``t``: :func:`calibcli.smooth.grid._curve_on` for each."""
    curves = np.full((len(s), len(t)), np.nan)
    for grid in np.unique(cells):
        pick = np.flatnonzero(cells == grid)
        if grid == block.n_cells:
            parts = [block.deposits[1][pick], block.deposits[2][pick]]
        else:
            parts = block.at(int(grid), pick, 3)[1:]
        node = np.linspace(0.0, 1.0, int(grid) + 1)
        smooth_y = smoothed_rows(spectra(parts[0]), s[pick])
        density = smoothed_rows(spectra(parts[1]), s[pick])
        for j, r in enumerate(pick):  # np.interp is one row at a time; 501 points each
            sy, dn = np.interp(t, node, smooth_y[j]), np.interp(t, node, density[j])
            defined = dn > DENSITY_FLOOR * dn.max()
            curves[r, defined] = sy[defined] / dn[defined]
    return curves


def bootstrap_values(boot, *, sigma, sigma_full, n_boot, curve_t=None, progress=None):
    """smECE of each replicate (and its kernel regression on ``curve_t`` when given), a block at a time:
    the one-problem case of :func:`bootstrap_values_groups` (``progress()`` once per replicate)."""
    steps = None if progress is None else lambda n: [progress() for _ in range(n)]
    return bootstrap_values_groups(
        [boot], sigma=sigma, sigma_full=[sigma_full], n_boot=n_boot, curve_t=curve_t, progress=steps
    )[0]


def bootstrap_values_groups(boots: list, *, sigma, sigma_full, n_boot: int, curve_t=None, progress=None) -> list:
    """``(replicates, curves)`` of every problem of ``boots`` (the groups of an input, each its own bootstrap),
    a block of replicates of many groups at a time.

    Replicates use their bootstrap's grid (BOOT_CELLS_PER_SIGMA cells per bandwidth); with the fixed point
    (``sigma`` None), each replicate's own s* is solved starting from its group's full-data one
    (``sigma_full[g]``; a replicate with rows and a much smaller s* gets a finer grid). Groups whose
    bootstraps share a grid are solved together: their replicates' fixed points are one lockstep Brent
    search over the flattened (groups x replicates) axis, each replicate taking the steps it takes alone.
    A replicate that drew no weight stays NaN. ``progress(steps)`` is told the (group, resample) pairs done.
    """
    values = [np.full(n_boot, np.nan) for _ in boots]
    curves = [None if curve_t is None else np.full((n_boot, len(curve_t)), np.nan) for _ in boots]
    buckets: dict = {}
    for g, boot in enumerate(boots):  # groups of one grid (and kind of bootstrap) share blocks
        buckets.setdefault((isinstance(boot, RowBootstrap), boot.n_cells), []).append(g)
    jobs = []
    for (by_rows, n_cells), members in buckets.items():
        max_cells = MAX_GRID if by_rows else n_cells
        size = boots[members[0]].block_size()
        # groups per block: as many as keep its arrays (groups x replicates x grid nodes) as small as one group's
        # full block (its cost is the FFTs, which run fastest in the caches); several when each has few resamples
        per_chunk = max(1, _BLOCK_VALUES // (min(size, n_boot) * (n_cells + 1)))
        for c0 in range(0, len(members), per_chunk):
            for first in range(0, n_boot, size):
                jobs.append(
                    (members[c0 : c0 + per_chunk], np.arange(first, min(first + size, n_boot)), n_cells, max_cells)
                )

    # the compiled loops once the row draws are many enough to pay for loading them (within 1e-12 either way)
    compiled = resampling.compiled_pays(
        sum(boot.n for boot in boots if isinstance(boot, RowBootstrap)), n_boot, _COMPILED_DRAWS
    )

    def solve(chunk: list, reps: np.ndarray, n_cells: int, max_cells: int) -> int:
        """One block (replicates ``reps`` of the groups of ``chunk``): its values and curves into their own slots."""
        blocks = [boots[g].resample(reps, compiled) for g in chunk]
        _solve_block(blocks, chunk, values, curves, sigma, sigma_full, n_cells, max_cells, curve_t)
        return len(reps) * len(chunk)

    # The blocks are independent (each its own groups' replicates): on two threads, NumPy's FFTs and ufuncs
    # releasing the GIL; a signal stops them at the next block (this may also run in a diagram's worker thread,
    # where the blocks run one after another).
    resampling.in_threads(solve, jobs, on_done=progress)
    return list(zip(values, curves, strict=True))


def _solve_block(
    blocks: list, chunk: list, values: list, curves: list, sigma, sigma_full, n_cells: int, max_cells: int, curve_t
) -> None:
    """The smECE (and curves) of one block of replicates of each group of ``chunk``, into ``values``/``curves``."""
    oks = [np.flatnonzero(block.total > 0) for block in blocks]  # the others drew only rows of weight 0
    owner = np.repeat(np.arange(len(blocks)), [len(ok) for ok in oks])  # each row's block
    local = np.concatenate(oks) if oks else np.empty(0, dtype=np.int64)  # its replicate in the block
    residual = np.concatenate([block.deposits[0][ok] for block, ok in zip(blocks, oks, strict=True)])
    cells = np.full(len(owner), n_cells)
    if sigma is None:
        lo = np.abs(residual.sum(axis=1))
        s, value = np.empty(len(owner)), np.empty(len(owner))
        grid_variation = np.abs(residual).sum(axis=1)
        trivial = grid_variation <= 1e-12  # the residuals cancel wherever predictions coincide: s* = 0
        s[trivial], value[trivial] = 0.0, grid_variation[trivial]
        flat = ~trivial & (1.0 - lo <= 0.5 * FIXED_POINT_TOL)  # one sign: smECE_s is constant
        s[flat] = value[flat] = 0.5 * (lo[flat] + 1.0)
        solve = np.flatnonzero(~(trivial | flat))

        def refine(rows: np.ndarray, grid: int) -> np.ndarray:
            """Deposits of replicates ``rows`` (of the solved ones) on a finer grid, each from its group's rows."""
            out = np.empty((len(rows), grid + 1))
            which = solve[rows]
            for b in np.unique(owner[which]):
                pick = np.flatnonzero(owner[which] == b)
                out[pick] = blocks[b].at(grid, local[which[pick]], 1)[0]
            return out

        if len(solve):
            guess = np.array([float(sigma_full[g]) for g in chunk])[owner[solve]]
            s[solve], value[solve], cells[solve] = _fixed_points(
                residual[solve], lo[solve], guess, n_cells, max_cells, refine
            )
    else:
        s = np.full(len(owner), float(sigma))
        value = smece_rows(spectra(residual), np.arange(len(owner)), s)
    for b, (block, ok, g) in enumerate(zip(blocks, oks, chunk, strict=True)):
        mine = np.flatnonzero(owner == b)
        values[g][block.reps[ok]] = value[mine]
        if curves[g] is not None and len(ok):
            sub = Block(block.reps[ok], [d[ok] for d in block.deposits], block.total[ok], block.n_cells, block.rows)
            curves[g][block.reps[ok]] = _curves(sub, s[mine], cells[mine], curve_t)
