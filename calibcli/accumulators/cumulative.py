"""ECCE-MAD and ECCE-R of one binary problem on a stream (SPEC 9, "Streams").

The statistics need the rows in score order. :class:`EcceAccumulator` keeps every row while at most
``row_limit`` were seen (a :class:`~calibcli.accumulators.rows.RowSample` that drops itself, never thins:
all rows of a population matter) and then computes :func:`calibcli.cumulative.ecce` on them, exactly. Beside
the rows it always adds, per cell of a uniform grid of ``n_cells`` score cells (2^16 by default), the sums of
``w``, ``w y``, ``w s``, ``w^2 s (1 - s)`` and ``w |y - s|`` (:func:`calibcli.cumulative.cell_sums`, six
bincounts per batch). Beyond the row limit the statistics come from those sums
(:func:`calibcli.cumulative.ecce_from_cells`): ``C`` is then known at cell ends only, and the largest cell's
normalised ``sum w |y - s|`` bounds the error (the exact ECCE-MAD lies in ``[grid, grid + bound]``, the exact
ECCE-R in ``[grid, grid + 2 bound]``); :meth:`EcceAccumulator.result` states which form was used and the bound.

Merging adds the sums and merges the row samples (a merge that passes the limit drops the rows), so the result
does not depend on batch sizes, file order or which worker saw which rows (beyond float rounding).
The state's ``to_dict`` stores the occupied cells only.
"""

from __future__ import annotations

import numpy as np

from calibcli.accumulators.base import Accumulator
from calibcli.accumulators.rows import RowSample
from calibcli.cumulative import cell_sums, CellSums, ecce, ecce_from_cells, EcceResult, uniform_cells

#: Score cells of the grid form (beyond the row limit).
N_CELLS = 1 << 16

_SUMS = ("w", "wy", "ws", "w2v", "wabs")


class EcceAccumulator(Accumulator):
    """Rows (up to ``row_limit``) and per-cell sums of one binary problem, for ECCE (module docstring)."""

    kind = "ecce"
    state_name = "ECCE state"
    same, same_message = ("row_limit", "n_cells"), "ECCE states with different row limits or grids cannot be merged"
    merge_rules = {"rows": "merge", **{name: "sum" for name in _SUMS}, "count": "sum"}

    def __init__(self, row_limit: int, n_cells: int = N_CELLS):
        self.row_limit, self.n_cells = int(row_limit), int(n_cells)
        self.rows = RowSample(self.row_limit, 0, keep_when_full=False)
        for name in _SUMS:
            setattr(self, name, np.zeros(self.n_cells))
        self.count = np.zeros(self.n_cells, dtype=np.int64)

    def update(self, row_index, z, y, w=None) -> "EcceAccumulator":
        z = np.asarray(z, dtype=np.float64)
        self.rows.update(row_index, z, y, w)
        sums = cell_sums(y, z, uniform_cells(z, self.n_cells), n_cells=self.n_cells, sample_weight=w)
        for name in _SUMS:
            getattr(self, name).__iadd__(getattr(sums, name))
        self.count += sums.rows
        return self

    @property
    def n(self) -> int:
        return int(self.rows.n_seen)

    @property
    def exact(self) -> bool:
        """Every row is held: the statistics are computed from the rows."""
        return self.rows.complete and not self.rows.dropped

    def result(self) -> tuple[EcceResult, dict]:
        """``(statistics, how)``: :class:`~calibcli.cumulative.EcceResult` (floats) and a description of the
        form used (``method`` ``"exact"`` or ``"grid"``, ``n``, ``row_limit``, ``n_cells``, ``error_bound``,
        ``description``)."""
        how = {"n": self.n, "row_limit": self.row_limit}
        if self.exact:
            _, z, y, w = self.rows.arrays()
            res = ecce(y, z, sample_weight=w)
            return res, {**how, "method": "exact", "n_cells": None, "error_bound": 0.0,
                         "description": f"exact on all {self.n} rows (at most {self.row_limit} are held)"}
        res = ecce_from_cells(CellSums(w=self.w, wy=self.wy, ws=self.ws, w2v=self.w2v, wabs=self.wabs, rows=self.count))
        bound = float(res.error_bound)
        return res, {**how, "method": "grid", "n_cells": self.n_cells, "error_bound": bound,
                     "description": f"{self.n} rows, beyond the {self.row_limit} held: from sums over {self.n_cells} "
                                    f"uniform score cells; exact ECCE-MAD within [value, value + {bound:.3g}], "
                                    f"exact ECCE-R within [value, value + {2 * bound:.3g}]"}

    def to_dict(self) -> dict:
        occupied = np.flatnonzero(self.count)
        return {**self.state_head(), "row_limit": self.row_limit, "n_cells": self.n_cells, "rows": self.rows.to_dict(),
                "cells": occupied.tolist(), "count": self.count[occupied].tolist(),
                **{name: getattr(self, name)[occupied].tolist() for name in _SUMS}}

    @classmethod
    def from_dict(cls, d: dict) -> "EcceAccumulator":
        cls.check_state(d)
        out = cls(d["row_limit"], d["n_cells"])
        out.rows = RowSample.from_dict(d["rows"])
        cells = np.asarray(d["cells"], dtype=np.int64)
        out.count[cells] = np.asarray(d["count"], dtype=np.int64)
        for name in _SUMS:
            getattr(out, name)[cells] = np.asarray(d[name], dtype=np.float64)
        return out
