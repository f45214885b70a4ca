"""The segment audit beyond the rows it holds (SPEC 9, "Streams"): two passes over the input, mergeable sums.

First pass (:class:`ColumnStats`, one per segment column): what the columns' codings need, as mergeable
statistics: each value's rows (text, booleans, and numbers while they have few distinct values), the missing
cells, and for numbers a quantile sketch (:class:`calibcli.binned.accumulator.QuantileSketch`: exact values up
to its limit, then Apache DataSketches' KLL, whose rank error the report states). The codings are then those of
the exact audit (:func:`calibcli.audit.segments.code_values`): the ``max_values`` most frequent values with the rest
``other``; ``segment_bins`` quantile bins of a numeric column (from the sketch's quantiles beyond its limit).

Second pass (:class:`SegmentGrid`): every row coded, and per partition, per (segment, score cell) on a grid of
:data:`GRID_CELLS` uniform cells over [0, 1], the sums of ``w``, ``w y``, ``w s``, ``w^2 s (1 - s)``, ``w |y - s|``
and the rows, kept for the occupied pairs only (sparse, at most one per row); and per (segment, l1-ECE bin) the
sums of ``w``, ``w y``, ``w s`` (dense: few bins). :func:`calibcli.cumulative.ecce.ecce_from_cell_entries` gives each
segment's ECCE from its cells: ``C`` at cell ends, exact between cells, and within a cell off by at most the
cell's normalised ``sum w |y - s|``, the segment's ``ecce_bound`` (the exact ECCE-R lies in ``[ecce_r,
ecce_r + 2 ecce_bound]``). Sums of disjoint parts add, so batches, files and workers merge in any order.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from calibcli.audit.options import Options
from calibcli.audit.segment_tests import SegmentSums
from calibcli.audit.segments import ColumnCoding, Partition, categorical_coding, partitions
from calibcli.binned.accumulator import QuantileSketch
from calibcli.core.errors import CalibcliError
from calibcli.cumulative.ecce import STATISTICS, EcceResult, ecce_from_cell_entries
from calibcli.io.columns import CodedText

#: Score cells of the grid (uniform over [0, 1]).
GRID_CELLS = 1 << 16
#: Occupied (segment, cell) entries kept before they are added up by key.
COMPACT_ENTRIES = 1 << 22
_SUMS = ("w", "wy", "ws", "w2v", "wabs", "rows")


def _numbers(values) -> tuple[np.ndarray, bool] | None:
    """A column's values as float64 (NaN missing) and whether they are integers, or None for text/booleans."""
    if isinstance(values, CodedText):
        return None
    values = np.asarray(values)
    if values.dtype.kind in "iuf":
        return values.astype(np.float64), values.dtype.kind in "iu"
    if values.dtype == object:
        import pandas as pd

        kind = pd.api.types.infer_dtype(values, skipna=True)
        if kind in ("integer", "floating", "mixed-integer-float"):
            return np.asarray(pd.to_numeric(values, errors="coerce"), dtype=np.float64), kind == "integer"
    return None


class ColumnStats:
    """First-pass statistics of one segment column (see the module docstring); :meth:`merge` adds another's."""

    def __init__(self, segment_bins: int):
        self.segment_bins = segment_bins
        self.counts: dict | None = {}  # value -> rows; None once a numeric column has too many values to list
        self.n_missing = 0
        self.numeric: bool | None = None  # None until a batch with values says
        self.integral = True
        self.sketch = QuantileSketch()

    def update(self, values) -> None:
        numbers = _numbers(values)
        if numbers is None:
            self.numeric = False if self.numeric is None else self.numeric
            if isinstance(values, CodedText):
                present = values.codes >= 0
                counts = np.bincount(values.codes[present], minlength=len(values.values))
                self.n_missing += int(len(values.codes) - present.sum())
                pairs = [(v, int(c)) for v, c in zip(values.values, counts, strict=True) if c]
            else:
                import pandas as pd

                inverse, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
                missing = inverse < 0
                self.n_missing += int(missing.sum())
                counts = np.bincount(inverse[~missing], minlength=len(uniques))
                pairs = [
                    (u.item() if isinstance(u, np.generic) else u, int(c)) for u, c in zip(uniques, counts, strict=True)
                ]
            self._add(pairs)
            return
        x, integral = numbers
        self.numeric = True if self.numeric is None else self.numeric
        self.integral &= integral
        missing = np.isnan(x)
        self.n_missing += int(missing.sum())
        present = x[~missing]
        self.sketch.update(present)
        if self.counts is not None:
            distinct, counts = np.unique(present, return_counts=True)
            self._add([(float(v), int(c)) for v, c in zip(distinct, counts, strict=True)])

    def _add(self, pairs) -> None:
        if self.counts is None:
            return
        for v, c in pairs:
            self.counts[v] = self.counts.get(v, 0) + c
        if self.numeric and len(self.counts) > self.segment_bins:
            self.counts = None  # quantile bins: the sketch decides

    def merge(self, other: ColumnStats) -> None:
        if other.numeric is not None and self.numeric is not None and other.numeric != self.numeric:
            raise CalibcliError("a segment column holds numbers in some rows and text in others: make it one type")
        self.numeric = other.numeric if self.numeric is None else self.numeric
        self.integral &= other.integral
        self.n_missing += other.n_missing
        self.sketch.merge(other.sketch)
        if other.counts is None:
            self.counts = None
        else:
            self._add(list(other.counts.items()))

    def coding(self, column: str, *, max_values: int) -> tuple[ColumnCoding, str | None]:
        """The column's coding, and how its quantile edges were found (None for a categorical column)."""
        if self.numeric and self.counts is None:
            edges = self.sketch.binning(self.segment_bins).edges
            how = (
                "exact"
                if self.sketch.exact
                else f"KLL sketch of {self.sketch.n:,} values, normalised rank error {self.sketch.rank_error():.2g}"
            )
            return ColumnCoding(
                column, "numeric", edges=tuple(float(e) for e in edges), missing=self.n_missing > 0
            ), how
        counts = self.counts or {}
        if self.numeric:
            counts = {(int(v) if self.integral else float(v)): c for v, c in counts.items()}
        return categorical_coding(column, counts, self.n_missing, max_values=max_values), None

    def to_dict(self) -> dict:
        return {
            "segment_bins": self.segment_bins,
            "n_missing": self.n_missing,
            "numeric": self.numeric,
            "integral": self.integral,
            "sketch": self.sketch.to_dict(),
            "counts": None if self.counts is None else [[v, c] for v, c in self.counts.items()],
        }

    @classmethod
    def from_dict(cls, d: dict) -> ColumnStats:
        out = cls(d["segment_bins"])
        out.n_missing, out.numeric, out.integral = d["n_missing"], d["numeric"], d["integral"]
        out.sketch = QuantileSketch.from_dict(d["sketch"])
        out.counts = None if d["counts"] is None else {v: c for v, c in d["counts"]}
        return out


def encode(coding: ColumnCoding, values) -> np.ndarray:
    """Each row's code under ``coding`` (text codes mapped through their values; arrays by the coding)."""
    if isinstance(values, CodedText):
        place = {v: j for j, v in enumerate(coding.values)}
        other = len(coding.values) if coding.other else -1
        remap = np.array([place.get(v, other) for v in values.values] + [coding.n_codes - 1], dtype=np.int64)
        codes = remap[values.codes]
        if (codes < 0).any():
            raise CalibcliError(
                f"segment column {coding.column!r} has a value its coding did not see: code the "
                "column from all the rows it is applied to"
            )
        return codes
    numbers = _numbers(values)
    return coding.encode(numbers[0] if numbers is not None and coding.kind == "numeric" else values)


class SegmentGrid:
    """Second-pass sums of every partition's segments on the score grid (see the module docstring)."""

    def __init__(self, codings: list[ColumnCoding], partitions: list[Partition], n_bins: int):
        self.codings, self.partitions, self.n_bins = codings, partitions, n_bins
        self.entries: list[dict[str, list[np.ndarray]]] = [{k: [] for k in ("key", *_SUMS)} for _ in partitions]
        self.bins = [np.zeros((3, p.n_segments * n_bins)) for p in partitions]  # w, wy, ws per (segment, bin)

    def update(self, y: np.ndarray, s: np.ndarray, w: np.ndarray, columns) -> None:
        codes = [encode(c, v) for c, v in zip(self.codings, columns, strict=True)]
        cell = np.minimum((s * GRID_CELLS).astype(np.int64), GRID_CELLS - 1)
        ece_bin = np.minimum((s * self.n_bins).astype(np.int64), self.n_bins - 1)
        sums = {
            "w": w,
            "wy": w * y,
            "ws": w * s,
            "w2v": w * w * s * (1.0 - s),
            "wabs": w * np.abs(y - s),
            "rows": np.ones(len(s)),
        }
        for p, part in enumerate(self.partitions):
            ids = part.segment_ids(codes, len(s)).astype(np.int64)
            key, inverse = np.unique(ids * GRID_CELLS + cell, return_inverse=True)
            kept = self.entries[p]
            kept["key"].append(key)
            for name in _SUMS:
                kept[name].append(np.bincount(inverse, weights=sums[name], minlength=len(key)))
            bin_key = ids * self.n_bins + ece_bin
            size = part.n_segments * self.n_bins
            for j, name in enumerate(("w", "wy", "ws")):
                self.bins[p][j] += np.bincount(bin_key, weights=sums[name], minlength=size)
            if sum(len(k) for k in kept["key"]) > COMPACT_ENTRIES:
                self._compact(p)

    def _compact(self, p: int) -> None:
        kept = self.entries[p]
        if len(kept["key"]) < 2:
            return
        key, inverse = np.unique(np.concatenate(kept["key"]), return_inverse=True)
        for name in _SUMS:
            kept[name] = [np.bincount(inverse, weights=np.concatenate(kept[name]), minlength=len(key))]
        kept["key"] = [key]

    def merge(self, other: SegmentGrid) -> None:
        for p in range(len(self.partitions)):
            for name, parts in other.entries[p].items():
                self.entries[p][name].extend(parts)
            self.bins[p] += other.bins[p]
            if sum(len(k) for k in self.entries[p]["key"]) > COMPACT_ENTRIES:
                self._compact(p)

    def result(self) -> tuple[SegmentSums, EcceResult]:
        """Every segment's sums and ECCE statistics (partitions one after another), with the grid's bounds."""
        parts: list[EcceResult] = []
        sums: dict[str, list[np.ndarray]] = {k: [] for k in ("wy", "ws", "ece_l1")}
        for p, part in enumerate(self.partitions):
            self._compact(p)
            kept = self.entries[p]
            key = kept["key"][0] if kept["key"] else np.zeros(0, dtype=np.int64)
            values = {name: (kept[name][0] if kept[name] else np.zeros(0)) for name in _SUMS}
            parts.append(
                ecce_from_cell_entries(
                    key // GRID_CELLS,
                    key % GRID_CELLS,
                    values["w"],
                    values["wy"],
                    values["ws"],
                    values["w2v"],
                    values["wabs"],
                    np.rint(values["rows"]).astype(np.int64),
                    n_segments=part.n_segments,
                )
            )
            bw, bwy, bws = (a.reshape(part.n_segments, self.n_bins) for a in self.bins[p])
            total = bw.sum(axis=1)
            sums["wy"].append(bwy.sum(axis=1))
            sums["ws"].append(bws.sum(axis=1))
            with np.errstate(divide="ignore", invalid="ignore"):
                sums["ece_l1"].append(np.where(total > 0, np.abs(bwy - bws).sum(axis=1) / total, np.nan))
        ecce = EcceResult(**{f: np.concatenate([np.atleast_1d(getattr(e, f)) for e in parts]) for f in STATISTICS})
        weight = np.asarray(ecce.weight, dtype=np.float64)
        return SegmentSums(
            rows=np.asarray(ecce.rows, dtype=np.int64),
            w=weight,
            w2v=np.nan_to_num(np.asarray(ecce.sigma) * weight) ** 2,
            **{k: np.concatenate(v) for k, v in sums.items()},
        ), ecce

    def to_dict(self) -> dict:
        for p in range(len(self.partitions)):
            self._compact(p)
        return {
            "codings": [asdict(c) for c in self.codings],
            "n_bins": self.n_bins,
            "entries": [{k: (v[0].tolist() if v else []) for k, v in e.items()} for e in self.entries],
            "bins": [b.tolist() for b in self.bins],
        }

    @classmethod
    def from_dict(cls, d: dict, options: Options) -> SegmentGrid:
        codings = [
            ColumnCoding(
                c["column"],
                c["kind"],
                values=tuple(c["values"]),
                edges=tuple(c["edges"]),
                other=c["other"],
                missing=c["missing"],
            )
            for c in d["codings"]
        ]
        out = cls(codings, partitions(codings, options.depth), d["n_bins"])
        for p, e in enumerate(d["entries"]):
            out.entries[p] = {
                k: ([np.asarray(v, dtype=np.int64 if k == "key" else np.float64)] if v else []) for k, v in e.items()
            }
        out.bins = [np.asarray(b, dtype=np.float64) for b in d["bins"]]
        return out
