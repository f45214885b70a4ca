"""The ICI, E50, E90 and Emax of one binary problem or of many groups at once
(:mod:`calibcli.clinical.classical_tests` describes
them: Austin & Steyerberg 2019, on the SmoothECE kernel regression at the fixed-point bandwidth).

Each group's rows stand at their cells' mean predictions (:class:`UniformCells`, the non-empty cells of the
groups' :class:`calibcli.clinical.classical_tests.GridSums`, laid end to end). :func:`ici_groups` solves every
group's SmoothECE
fixed point in lockstep (:func:`calibcli.smooth.bootstrap._fixed_points`, the steps
:func:`calibcli.smooth.grid._solve_fixed_point` takes for one problem), reads each group's kernel regression at its
cells' means, and takes the weighted mean, quantiles and maximum of ``|f(p) - p|`` of all groups with a fixed
number of array operations: each group's numbers are those of its cells alone, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core import cancel
from calibcli.core.compensated import bincount_exact
from calibcli.core.errors import CalibcliError
from calibcli.smooth.bootstrap import _fixed_points, smoothed_rows, spectra
from calibcli.smooth.grid import (
    CELLS_PER_SIGMA,
    FIXED_POINT_TOL,
    MAX_GRID,
    MIN_CELLS_PER_SIGMA,
    MIN_GRID,
    CellSums,
    segment_sums,
)

#: Grid of the ICI's and Cox's per-(label, cell) sums (cells of 6.1e-5; a power of two, as the smooth
#: family's grids are). Small enough for a batch's bincounts to stay in the CPU cache, which keeps ``ece``
#: within its throughput bar; the SmoothECE fixed point is resolved down to s* = 8 / 2^14 = 4.9e-4.
ICI_GRID = 2**14


@dataclass(frozen=True)
class SmoothCalibrationIndex:
    """Austin & Steyerberg's (2019) ICI, E50, E90 and Emax on the SmoothECE curve at bandwidth ``sigma``.

    ``grid_cells``: the grid of the sums (predictions at their cell's centre); ``curve_cells``: the grid
    the kernel regression was evaluated on (``sigma`` resolved by at least 8 of its cells unless
    ``under_resolved``).
    """

    ici: float
    e50: float
    e90: float
    emax: float
    sigma: float
    grid_cells: int
    curve_cells: int
    n: int
    weight_total: float
    under_resolved: bool = False
    method: str = (
        "|f(p) - p| over the predictions, f the SmoothECE kernel regression (reflected Gaussian kernel) "
        "at the fixed-point bandwidth s*; Austin & Steyerberg (2019) use loess"
    )


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """R's default quantile (type 7: ``x[h]`` interpolated at ``h = (n - 1) q``) with frequency weights:
    the same as expanding each value into ``weight`` copies (for integer weights; ``numpy.quantile``'s
    "linear" method for unit weights), extended to real weights by the cumulative weight. The one-group case
    of :func:`weighted_quantiles`."""
    return float(weighted_quantiles(values, weights, np.array([len(values)]), (q,))[0, 0])


#: Values per padded array of :func:`weighted_quantiles` (32 MB).
_QUANTILE_VALUES = 1 << 22


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, sizes: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """:func:`weighted_quantile` at each of ``qs`` (rows of the result) of each group of ``values`` laid end to end
    (``sizes[g]`` values each, at least one; the columns): the groups as rows of a padded array, sorted (stably)
    once and their weights summed cumulatively along the rows, so each group's ranks and sums are those of its
    values alone."""
    G = len(sizes)
    out = np.empty((len(qs), G))
    first = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    width = int(sizes.max()) if G else 0
    per_block = max(1, _QUANTILE_VALUES // max(width, 1))
    for b0 in range(0, G, per_block):
        n = sizes[b0 : b0 + per_block]
        rows = np.repeat(np.arange(len(n)), n)
        cols = np.arange(first[b0 + len(n)] - first[b0]) - np.repeat(first[b0 : b0 + len(n)] - first[b0], n)
        v = np.full((len(n), int(n.max())), np.inf)  # (padding sorts last and weighs nothing)
        c = np.zeros((len(n), int(n.max())))
        v[rows, cols] = values[first[b0] : first[b0 + len(n)]]
        c[rows, cols] = weights[first[b0] : first[b0 + len(n)]]
        order = np.argsort(v, axis=1, kind="stable")
        v = np.take_along_axis(v, order, axis=1)
        c = np.cumsum(np.take_along_axis(c, order, axis=1), axis=1)
        r = np.arange(len(n))
        total = c[r, n - 1]
        for k, q in enumerate(qs):
            h = np.where(total >= 1.0, (total - 1.0) * q, 0.0)
            floor = np.floor(h)
            lo = np.minimum((c <= floor[:, None]).sum(axis=1), n - 1)  # the value at 0-based rank floor(h)
            hi = np.minimum((c <= floor[:, None] + 1).sum(axis=1), n - 1)
            out[k, b0 : b0 + len(n)] = v[r, lo] + (h - floor) * (v[r, hi] - v[r, lo])
    return out


@dataclass(frozen=True)
class UniformCells:
    """The non-empty (label, cell)s of the uniform grid of many groups' ``GridSums``, laid end to end: group
    g's ``sizes[g]`` cells in increasing key order, each with its rows' count, weight (None: unit weights),
    weight of positive ``mass`` and mean prediction ``mean_z``; ``n[g]`` the rows of group g."""

    n_cells: int
    sizes: np.ndarray
    key: np.ndarray
    count: np.ndarray
    weight: np.ndarray | None
    mass: np.ndarray
    mean_z: np.ndarray
    n: np.ndarray

    @classmethod
    def of_grids(cls, grids: list) -> UniformCells:
        """:meth:`calibcli.clinical.classical_tests.GridSums.uniform_cells` of each grid."""
        cells = [g.uniform_cells() for g in grids]
        weighted = any(c[2] is not None for c in cells)
        return cls(
            n_cells=grids[0].n_cells if grids else ICI_GRID,
            sizes=np.array([len(c[0]) for c in cells], dtype=np.intp),
            key=np.concatenate([c[0] for c in cells]).astype(np.int64),
            count=np.concatenate([c[1] for c in cells]).astype(np.int64),
            weight=np.concatenate([c[3] if c[2] is None else c[2] for c in cells]) if weighted else None,
            mass=np.concatenate([c[3] for c in cells]),
            mean_z=np.concatenate([c[4] for c in cells]),
            n=np.array([g.n for g in grids], dtype=np.int64),
        )

    @classmethod
    def of_rows(cls, rows: list[tuple], n_cells: int = ICI_GRID) -> UniformCells:
        """What :meth:`of_grids` gives for ``clinical.GridSums(n_cells).add_rows(z, y, w)`` of each group's rows
        ``(z, y, w)`` (``w`` None: unit weights), in one pass over every group's rows: each cell's sums exact
        (:func:`calibcli.core.compensated.bincount_exact`, as the grid's), so they are the same floats whatever
        the order of the rows."""
        sizes = np.array([len(r[0]) for r in rows], dtype=np.intp)
        z = np.concatenate([np.asarray(r[0], dtype=np.float64) for r in rows])
        y = np.concatenate([np.asarray(r[1], dtype=np.int64) for r in rows])
        weighted = any(r[2] is not None for r in rows)
        w = np.concatenate([np.ones(len(r[0])) if r[2] is None else r[2] for r in rows]) if weighted else None
        cell = (z * n_cells).astype(np.int64)  # z >= 0: truncation is the floor (GridSums.add_rows)
        np.minimum(cell, n_cells - 1, out=cell)
        cell += y * n_cells
        cell += np.repeat(np.arange(len(rows), dtype=np.int64) * (2 * n_cells), sizes)  # each group's own keys
        keys, inverse = np.unique(cell, return_inverse=True)
        count = np.bincount(inverse, minlength=len(keys))
        weight = None if w is None else bincount_exact(inverse, w, count)[0]
        value = bincount_exact(inverse, z if w is None else w * z, count)[0]
        mass = count.astype(np.float64) if weight is None else weight
        keep = mass > 0
        group, key = np.divmod(keys[keep], 2 * n_cells)
        mass = mass[keep]
        return cls(
            n_cells,
            np.bincount(group, minlength=len(rows)).astype(np.intp),
            key,
            count[keep].astype(np.int64),
            None if weight is None else mass,
            mass,
            value[keep] / mass,
            sizes.astype(np.int64),
        )


#: Groups whose ICI grids are solved together hold at most this many grid values per array (2 MB arrays, which
#: stay in the caches: 1,000 groups took 0.8 s of CPU in chunks of 2^18 values, 1.5 s in chunks of 2^20 and 1.8 s
#: one group at a time). Fixes speed, never the numbers.
ICI_CHUNK_VALUES = 1 << 18


def ici_groups(cells: UniformCells) -> list[SmoothCalibrationIndex | CalibcliError]:
    """ICI, E50, E90 and Emax of many groups at once (a group without rows of positive weight gets its
    :class:`CalibcliError`).

    Each cell's rows stand at their mean prediction. Each group's SmoothECE fixed point ``s*`` is solved as
    :func:`calibcli.smooth.estimator.finish` solves one problem's, all groups in lockstep
    (:func:`calibcli.smooth.bootstrap._fixed_points`: the same bracket, grids and Brent steps per group); the
    kernel regression ``f = K(w y) / K(w)`` is evaluated on the grid of its solution (a piecewise-linear reading
    between its nodes, as ``numpy.interp`` reads it) at each cell's mean. Groups are taken in chunks of at most
    :data:`ICI_CHUNK_VALUES` grid values.
    """
    G = len(cells.sizes)
    out: list[SmoothCalibrationIndex | CalibcliError] = [
        CalibcliError("the ICI needs rows of positive weight") for _ in range(G)
    ]
    first = np.concatenate([[0], np.cumsum(cells.sizes)])
    per_chunk = max(1, ICI_CHUNK_VALUES // (min(MIN_GRID, cells.n_cells) + 1))
    live = np.flatnonzero(cells.sizes > 0)
    for c0 in range(0, len(live), per_chunk):
        cancel.check()  # (a signal stops the run between chunks)
        chunk = live[c0 : c0 + per_chunk]
        at = np.concatenate([np.arange(first[g], first[g + 1]) for g in chunk])
        for g, result in zip(chunk, _ici_chunk(cells, chunk, at), strict=True):
            out[g] = result
    return out


def _ici_chunk(cells: UniformCells, chunk: np.ndarray, at: np.ndarray) -> list[SmoothCalibrationIndex]:
    """:func:`ici_groups` of the groups ``chunk`` (each with cells), whose cells are ``at``."""
    n_cells = cells.n_cells
    sizes = cells.sizes[chunk]
    G = len(chunk)
    starts = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.intp)
    group = np.repeat(np.arange(G, dtype=np.int64), sizes)
    key, mass, mean_z = cells.key[at], cells.mass[at], cells.mean_z[at]
    cell = key % n_cells
    f = np.clip(mean_z * n_cells - cell, 0.0, 1.0)  # the mean's place in its cell
    wf = mass * f
    weight = None if cells.weight is None else cells.weight[at]
    sums = CellSums(n_cells, group * (2 * n_cells) + key, cells.count[at], weight, wf, wf * f, wf * f * f, None)
    W, mean_residual, mean_abs_residual = sums.stacked_totals(starts)

    def deposits(which: np.ndarray, m: int, parts: int) -> tuple[tuple, tuple]:
        """Linear and moment-keeping deposits at ``m`` cells of groups ``which``, each divided by its weight."""
        picked = sums
        if len(which) < G:
            chosen = np.zeros(G, dtype=bool)
            chosen[which] = True
            rows = chosen[group]
            renumber = np.cumsum(chosen) - 1
            picked = CellSums(
                n_cells,
                renumber[group[rows]] * (2 * n_cells) + key[rows],
                sums.count[rows],
                None if weight is None else weight[rows],
                sums.wf[rows],
                sums.wf2[rows],
                sums.wf3[rows],
                None,
            )
        linear, correction = picked.coarsen(m).deposits(parts, True, problems=len(which))
        total = W[which][:, None]
        linear = tuple(a / total for a in linear)
        return linear, tuple(a + c / total for a, c in zip(linear, correction, strict=True))

    # smooth_grid._solve_fixed_point for each group: the trivial cases, then the bracketed search
    lo, hi = np.abs(mean_residual), mean_abs_residual
    start = min(MIN_GRID, n_cells)
    everyone = np.arange(G)
    linear, kept = deposits(everyone, start, 1)
    variation = np.abs(linear[0]).sum(axis=1)
    trivial = variation <= 1e-12 * hi  # the residuals cancel wherever predictions coincide: s* = 0
    flat = ~trivial & (hi - lo <= 0.5 * FIXED_POINT_TOL)  # residuals of one sign: smECE_s = lo = hi for every s
    s = np.where(trivial, 0.0, 0.5 * (lo + hi))
    grid = np.full(G, start)
    solve = np.flatnonzero(~(trivial | flat))
    if len(solve):

        def refine(rows: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
            linear, kept = deposits(solve[rows], m, 1)
            return linear[0], kept[0]

        s[solve], _, grid[solve] = _fixed_points(
            (linear[0][solve], kept[0][solve]),
            lo[solve],
            np.full(len(solve), np.nan),
            start,
            n_cells,
            refine,
            hi=hi[solve],
            cells_per_sigma=CELLS_PER_SIGMA,
            min_cells=MIN_GRID,
        )
    exact = trivial | flat
    # the kernel regression on each group's grid, read at each cell's mean
    fitted = np.empty(len(key))
    for m in np.unique(grid):
        which = np.flatnonzero(grid == m)
        linear, kept = deposits(which, int(m), 3)
        resolved = (s[which] * m >= 2.0)[:, None]  # (smooth_grid._resolved: the moment-keeping deposit)
        smooth_y = smoothed_rows(spectra(np.where(resolved, kept[1], linear[1])), s[which])
        density = smoothed_rows(spectra(np.where(resolved, kept[2], linear[2])), s[which])
        mine = np.flatnonzero(np.isin(group, which))
        row = np.searchsorted(which, group[mine])
        x = mean_z[mine]
        num, den = _interp_rows(x, int(m), smooth_y, row), _interp_rows(x, int(m), density, row)
        fitted[mine] = np.clip(num / np.maximum(den, np.finfo(float).tiny), 0.0, 1.0)
    gap = np.abs(fitted - mean_z)
    total = segment_sums(mass, starts)
    ici = segment_sums(gap * mass, starts) / total
    e50, e90 = weighted_quantiles(gap, mass, sizes, (0.5, 0.9))
    emax = np.maximum.reduceat(gap, starts)
    under = ~exact & (s * grid < MIN_CELLS_PER_SIGMA) & (grid < MAX_GRID)
    return [
        SmoothCalibrationIndex(
            ici=float(ici[j]),
            e50=float(e50[j]),
            e90=float(e90[j]),
            emax=float(emax[j]),
            sigma=float(s[j]),
            grid_cells=n_cells,
            curve_cells=int(grid[j]),
            n=int(cells.n[g]),
            weight_total=float(total[j]),
            under_resolved=bool(under[j]),
        )
        for j, g in enumerate(chunk)
    ]


def _interp_rows(x: np.ndarray, m: int, fp: np.ndarray, row: np.ndarray) -> np.ndarray:
    """``numpy.interp(x[i], linspace(0, 1, m + 1), fp[row[i]])`` for every i, with numpy's arithmetic: at a node
    (or at 1) its value, else ``slope (x - x_j) + fp_j`` with ``slope = (fp_{j+1} - fp_j) / (x_{j+1} - x_j)``."""
    nodes = np.linspace(0.0, 1.0, m + 1)
    if m & (m - 1) == 0:  # m a power of two (a grid): node k is k / m exactly, and x m is exact
        j = np.minimum(np.floor(x * m).astype(np.intp), m)
    else:
        j = np.searchsorted(nodes, x, side="right") - 1  # nodes[j] <= x < nodes[j + 1] (x in [0, 1])
    up = np.minimum(j + 1, m)
    y0, y1 = fp[row, j], fp[row, up]
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (y1 - y0) / (nodes[up] - nodes[j])
        value = slope * (x - nodes[j]) + y0
    return np.where((j == m) | (nodes[j] == x), y0, value)
