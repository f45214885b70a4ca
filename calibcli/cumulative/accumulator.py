"""ECCE-MAD and ECCE-R of one binary problem on a stream (SPEC 9, "Streams").

The statistics need the rows in score order. :class:`EcceAccumulator` keeps every row while at most
``row_limit`` were seen (a :class:`~calibcli.core.rows.RowSample` that drops itself, never thins:
all rows of a population matter) and then computes :func:`calibcli.cumulative.ecce.ecce` on them, exactly. Beside
the rows it always adds, per cell of a uniform grid of ``n_cells`` score cells (2^16 by default), the sums of
``w``, ``w y``, ``w s``, ``w^2 s (1 - s)`` and ``w |y - s|`` (as :func:`calibcli.cumulative.ecce.cell_sums` adds them,
five or six bincounts per batch). Beyond the row limit the statistics come from those sums
(:func:`calibcli.cumulative.ecce.ecce_from_cells`): ``C`` is then known at cell ends only, and the largest cell's
normalised ``sum w |y - s|`` bounds the error (the exact ECCE-MAD lies in ``[grid, grid + bound]``, the exact
ECCE-R in ``[grid, grid + 2 bound]``); :meth:`EcceAccumulator.result` states which form was used and the bound.

With ``row_limit=None`` it holds no rows (only the sums): for a family that keeps the rows already (the binned
family's :class:`~calibcli.binned.accumulator.BinnedAccumulator`), which passes them to :meth:`result`.

Merging adds the sums and merges the row samples (a merge that passes the limit drops the rows), so the result
does not depend on batch sizes, file order or which worker saw which rows (beyond float rounding).
The state's ``to_dict`` stores the occupied cells only. The grid is allocated once more than
:data:`PENDING_ROWS` rows were seen (before, their scores, labels and weights wait beside it): a thousand
groups of a thousand rows each hold their rows, not a thousand grids of 2^16 cells.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.accumulator import Accumulator
from calibcli.core.results import Metric
from calibcli.core.rows import RowSample
from calibcli.cumulative.ecce import CellSums, EcceResult, ecce_from_cells, ecce_populations, uniform_cells

#: Score cells of the grid form (beyond the row limit).
N_CELLS = 1 << 16

_SUMS = ("w", "wy", "ws", "w2v", "wabs")
#: Rows whose grid sums wait, as rows, until more are seen (then the grid is allocated and they are added).
PENDING_ROWS = 1 << 13


def _grid_sum(name: str) -> property:
    """A sum of the grid, allocated (and the waiting rows added) when first read or set."""

    def put(self, value) -> None:
        self._grid()[name] = value

    return property(lambda self: self._grid()[name], put, doc=f"per-cell sums of {name} (allocated when first read)")


class EcceAccumulator(Accumulator):
    """Rows (up to ``row_limit``) and per-cell sums of one binary problem, for ECCE (module docstring)."""

    kind = "ecce"
    state_name = "ECCE state"
    same, same_message = ("row_limit", "n_cells"), "ECCE states with different row limits or grids cannot be merged"
    merge_rules = {"rows": "merge", **{name: "sum" for name in _SUMS}, "count": "sum", "n_seen": "sum"}

    def __init__(self, row_limit: int | None, n_cells: int = N_CELLS):
        self.row_limit, self.n_cells = None if row_limit is None else int(row_limit), int(n_cells)
        self.rows = None if row_limit is None else RowSample(int(row_limit), 0, keep_when_full=False)
        self.n_seen = 0
        self._sums: dict | None = None  # the grid's sums, allocated past PENDING_ROWS rows
        self._pending: list[tuple] = []  # until then, the rows' (z, y, w)
        self._n_pending = 0

    w, wy, ws, w2v, wabs = (_grid_sum(name) for name in _SUMS)
    count = _grid_sum("count")

    #: 2: the grid's sums travel packed (:mod:`calibcli.core.arraystate` packs a dict of named arrays); version 1
    #: pickled the dict of dense arrays as it was, 3.1 MB for a 1e6-row task instead of 1.4 MB.
    version = 2

    def _grid(self) -> dict:
        if self._sums is None:
            self._sums = self._summed()
            self._pending, self._n_pending = [], 0
        return self._sums

    def _summed(self) -> dict:
        """The grid's sums of the waiting rows, in new arrays."""
        sums = {name: np.zeros(self.n_cells) for name in _SUMS}
        sums["count"] = np.zeros(self.n_cells, dtype=np.int64)
        for z, y, w in self._pending:
            self._add(z, y, w, sums)
        return sums

    def update(self, row_index, z, y, w=None) -> EcceAccumulator:
        z = np.asarray(z, dtype=np.float64)
        self.n_seen += len(z)
        if self.rows is not None:
            self.rows.update(row_index, z, y, w)
        y = np.asarray(y, dtype=np.float64)
        w = None if w is None else np.asarray(w, dtype=np.float64)
        if self._sums is None and self._n_pending + len(z) <= PENDING_ROWS:
            self._pending.append((z.copy(), y.copy(), None if w is None else w.copy()))
            self._n_pending += len(z)
        else:
            self._add(z, y, w, self._grid())
        return self

    def _add(self, z, y, w, sums: dict) -> None:
        """The sums of :func:`calibcli.cumulative.ecce.cell_sums` into ``sums``, on rows the binary problem has
        already validated."""
        cells = uniform_cells(z, self.n_cells)
        m = self.n_cells
        count = np.bincount(cells, minlength=m)
        sums["count"] += count
        u = y - z
        if w is None:
            sums["w"] += count
            sums["wy"] += np.bincount(cells, weights=y, minlength=m)
            sums["ws"] += np.bincount(cells, weights=z, minlength=m)
            sums["w2v"] += np.bincount(cells, weights=z * (1.0 - z), minlength=m)
            sums["wabs"] += np.bincount(cells, weights=np.abs(u), minlength=m)
        else:
            sums["w"] += np.bincount(cells, weights=w, minlength=m)
            sums["wy"] += np.bincount(cells, weights=w * y, minlength=m)
            sums["ws"] += np.bincount(cells, weights=w * z, minlength=m)
            sums["w2v"] += np.bincount(cells, weights=w * w * z * (1.0 - z), minlength=m)
            sums["wabs"] += np.bincount(cells, weights=w * np.abs(u), minlength=m)

    @property
    def n(self) -> int:
        return int(self.n_seen)

    @property
    def exact(self) -> bool:
        """Every row is held: the statistics are computed from the rows."""
        return self.rows is not None and self.rows.complete and not self.rows.dropped

    def result(self, rows=None, row_limit: int | None = None) -> tuple[EcceResult, dict]:
        """``(statistics, how)``: :class:`~calibcli.cumulative.ecce.EcceResult` (floats) and a description of the
        form used (``method`` ``"exact"`` or ``"grid"``, ``n``, ``row_limit``, ``n_cells``, ``error_bound``,
        ``description``). ``rows``: ``(row_index, z, y, w)`` of every row, when another accumulator holds them
        (``row_limit=None`` here; ``row_limit`` then says how many it holds at most)."""
        return self.results([self], [rows], row_limit)[0]

    @staticmethod
    def results(accs: list[EcceAccumulator], rows: list, row_limit: int | None = None) -> list[tuple[EcceResult, dict]]:
        """:meth:`result` of many accumulators (a report's groups; ``rows[g]`` as ``rows`` there): the exact
        ones' statistics and p-values in one pass (:func:`~calibcli.cumulative.ecce.ecce_populations`)."""
        exact = {}
        for g, (acc, r) in enumerate(zip(accs, rows, strict=True)):
            if r is None and acc.exact:
                assert acc.rows is not None  # (exact: every row is held)
                r = acc.rows.arrays()
            if r is not None:
                exact[g] = r
        found = dict(zip(exact, ecce_populations([(y, z, w) for _, z, y, w in exact.values()]), strict=True))
        return [
            acc._exact_result(found[g], row_limit) if g in found else acc._grid_result(row_limit)
            for g, acc in enumerate(accs)
        ]

    def _exact_result(self, res: EcceResult, row_limit: int | None) -> tuple[EcceResult, dict]:
        limit = self.row_limit if row_limit is None else row_limit
        return res, {
            "n": self.n,
            "row_limit": limit,
            "method": "exact",
            "n_cells": None,
            "error_bound": 0.0,
            "description": f"exact on all {self.n} rows (at most {limit} are held)",
        }

    def _grid_result(self, row_limit: int | None) -> tuple[EcceResult, dict]:
        limit = self.row_limit if row_limit is None else row_limit
        how = {"n": self.n, "row_limit": limit}
        res = ecce_from_cells(CellSums(w=self.w, wy=self.wy, ws=self.ws, w2v=self.w2v, wabs=self.wabs, rows=self.count))
        bound = float(res.error_bound)
        return res, {
            **how,
            "method": "grid",
            "n_cells": self.n_cells,
            "error_bound": bound,
            "description": f"{self.n} rows, beyond the {limit} held: from sums over {self.n_cells} "
            f"uniform score cells; exact ECCE-MAD within [value, value + {bound:.3g}], "
            f"exact ECCE-R within [value, value + {2 * bound:.3g}]",
        }


def ecce_metrics(stats: EcceResult, how: dict) -> dict[str, Metric]:
    """The registry metrics ``ecce_mad`` and ``ecce_r`` of one binary problem, each with its sigma scale and
    p-value beside the estimate (``ecce_mad_sigma``, ``ecce_mad_pvalue``, ``ecce_r_sigma``, ``ecce_r_pvalue``,
    and ``sigma``); in the grid form the upper bound of the exact value (SPEC 9, "Streams")."""
    out = {}
    for name, factor in (("ecce_mad", 1), ("ecce_r", 2)):
        value, scaled, p = (float(getattr(stats, name + suffix)) for suffix in ("", "_sigma", "_pvalue"))
        extra = {f"{name}_sigma": scaled, f"{name}_pvalue": p, "sigma": float(stats.sigma)}
        note = f"{scaled:.4g} sigma, p {p:.4g}"  # short: the table's note column keeps its width
        if how["method"] == "exact":
            out[name] = Metric(name, value, note=note + "; exact", extra=extra)
        else:
            bound = factor * how["error_bound"]
            out[name] = Metric(
                name,
                value,
                upper_bound=value + bound,
                upper_bound_method=f"{how['n_cells']}-cell score grid beyond {how['row_limit']} rows: "
                f"the exact value is within [estimate, estimate + {bound:.3g}]",
                note=note + f"; grid, error <= {bound:.3g}",
                extra=extra,
            )
    return out
