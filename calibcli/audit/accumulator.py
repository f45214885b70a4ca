"""The segment audit's state for one input (SPEC 9): every row's score, label, weight and segment values.

ECCE needs every row of a segment (SPEC 9: "all rows of a segment matter", so no bottom-k sample), and the
segment columns' codings (most frequent values, quantile edges) need every row too; the state therefore
holds the rows of the binary problem (binary, or top-label for K > 2) and the segment columns' values, up
to ``row_limit`` rows, and the audit is computed exactly from them (:func:`calibcli.audit.segment_tests.audit_arrays`).
Beyond the limit the rows are dropped for the columns' mergeable statistics, and a second pass sums every
segment on a fine score grid, with each segment's error bound stated (:mod:`calibcli.audit.grid`).

Merging concatenates (in any order: the result sorts by the global row index first, so it does not depend on
how the rows were split among batches, files or workers).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from calibcli.audit.grid import GRID_CELLS, ColumnStats, SegmentGrid
from calibcli.audit.options import Options
from calibcli.audit.segment_tests import AuditResult, audit_arrays, finish
from calibcli.audit.segments import check_segments, code_values, partitions
from calibcli.binned.estimators import binned_calibration
from calibcli.core.errors import CalibcliError
from calibcli.core.modes import binary_problems
from calibcli.diagram.data import BinnedDiagramData, binned_data_from_result
from calibcli.io.columns import CodedText

STATE_VERSION = 2  # 2: the options are the family's Options (the segment columns among them)


@dataclass(frozen=True)
class SegmentDiagram:
    """A segment's binned reliability diagram: its ``definition`` (``{}``: the whole population) and its data."""

    definition: dict
    data: BinnedDiagramData


#: Rows an audit holds at most (about 40 bytes each, plus the segment columns' values).
ROW_LIMIT = 50_000_000


@dataclass(frozen=True)
class AuditReport:
    """One input's audit: what :func:`calibcli.engines.pipeline.add_entries` puts in the report entry. ``diagrams``: the
    binned reliability diagrams of the whole population and of the worst tested segments, when asked for
    (``calibcli report --segment-cols`` draws them; not in the JSON)."""

    mode: str
    columns: list[dict]
    result: AuditResult
    diagrams: tuple[SegmentDiagram, ...] = ()
    grid: dict | None = None  # beyond the rows held: the score grid and its bound

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "segment_columns": self.columns,
            **self.result.to_dict(),
            **({"grid": self.grid} if self.grid else {}),
        }

    def headline(self) -> dict:
        return {}


class SegmentAuditAccumulator:
    """Rows and segment values of one input, for the audit (see the module docstring)."""

    kind = "segment_audit"
    #: The engines pass each batch's segment columns to :meth:`update` (``columns=``).
    takes_columns = True

    def __init__(
        self,
        *,
        mode: str,
        n_classes: int,
        class_names: tuple[str, ...],
        options: Options,
        row_limit: int | None = None,
        diagrams: int = 0,
    ):
        if mode not in ("binary", "top-label"):
            raise CalibcliError(f"{{opt:mode}} is {mode}: the audit measures one binary problem, binary or top-label")
        self.mode, self.n_classes, self.class_names = mode, n_classes, tuple(class_names)
        self.options, self.columns = options, options.columns
        self.row_limit = ROW_LIMIT if row_limit is None else int(row_limit)  # read now: a test may change it
        self.diagrams = int(diagrams)  # the worst tested segments whose binned diagrams the result carries
        self.problems = [None]  # one binary problem (the progress bar counts problems)
        self._rows: list[np.ndarray] = []
        self._s: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._w: list[np.ndarray | None] = []
        self._values: list[tuple[np.ndarray, ...]] = []
        self.n_rows = 0
        self.stats: list[ColumnStats] | None = None  # beyond the row limit: the first pass's column statistics
        self.grid: SegmentGrid | None = None  # the second pass's sums
        self.edges_found: dict[str, str] = {}  # numeric columns of the grid form: how their edges were found

    def update(self, row_index, probs, labels, w=None, columns=None) -> SegmentAuditAccumulator:
        if columns is None:
            raise RuntimeError("the audit's accumulator needs the segment columns of every batch")
        (problem,) = binary_problems(labels, probs, mode=self.mode, sample_weight=w, class_names=list(self.class_names))
        self.n_rows += len(problem.z)
        if self.grid is not None:
            z = np.asarray(problem.z, dtype=np.float64)
            weight = np.ones(len(z)) if problem.sample_weight is None else np.asarray(problem.sample_weight, float)
            self.grid.update(np.asarray(problem.y, dtype=np.float64), z, weight, columns)
            return self
        if self.stats is not None:
            for stats, values in zip(self.stats, columns, strict=True):
                stats.update(values)
            return self
        self._rows.append(np.asarray(row_index, dtype=np.int64))
        self._s.append(np.asarray(problem.z, dtype=np.float64))
        self._y.append(np.asarray(problem.y, dtype=np.int64))
        self._w.append(None if problem.sample_weight is None else np.asarray(problem.sample_weight, dtype=np.float64))
        self._values.append(tuple(columns))
        if self.n_rows > self.row_limit:
            self._to_stats()
        return self

    def _to_stats(self) -> None:
        """Beyond the row limit: the rows held so far become the columns' statistics, and are dropped."""
        if self.stats is None:
            self.stats = [ColumnStats(self.options.segment_bins) for _ in self.columns]
        for batch in self._values:
            for stats, values in zip(self.stats, batch, strict=True):
                stats.update(values)
        self._rows, self._s, self._y, self._w, self._values = [], [], [], [], []

    def merge(self, other: SegmentAuditAccumulator) -> SegmentAuditAccumulator:
        self.n_rows += other.n_rows
        if self.grid is not None or other.grid is not None:  # second pass
            if self.grid is None or other.grid is None:
                raise RuntimeError("a second-pass audit state merges with second-pass states only")
            self.grid.merge(other.grid)
            return self
        for name in ("_rows", "_s", "_y", "_w", "_values"):
            getattr(self, name).extend(getattr(other, name))
        if other.stats is not None or self.stats is not None or self.n_rows > self.row_limit:
            self._to_stats()
            for mine, theirs in zip(self.stats or [], other.stats or [], strict=False):
                mine.merge(theirs)
        return self

    def needs_second_pass(self) -> bool:
        """Beyond the row limit: the segments are summed on the score grid in a second pass."""
        return self.stats is not None

    def for_second_pass(self) -> SegmentAuditAccumulator:
        """An empty state for the second pass, with the columns' codings from this pass's statistics."""
        o = self.options
        if self.stats is None:
            raise RuntimeError("the audit needs a second pass only beyond its row limit")
        found = [
            stats.coding(name, max_values=o.max_values) for name, stats in zip(self.columns, self.stats, strict=True)
        ]
        codings = [c for c, _ in found]
        check_segments(codings, o.depth, max_segments=o.max_segments, n_bins=o.n_bins, n_rows=0)
        out = SegmentAuditAccumulator(
            mode=self.mode,
            n_classes=self.n_classes,
            class_names=self.class_names,
            options=o,
            row_limit=self.row_limit,
            diagrams=self.diagrams,
        )
        out.grid = SegmentGrid(codings, partitions(codings, o.depth), o.n_bins)
        out.edges_found = {c.column: how for c, how in found if how is not None}
        return out

    def _arrays(self):
        """Everything in global row order (the result does not depend on how the rows were split). Batches that
        arrive in order (one process reading an input) are only concatenated; text columns stay codes
        (:class:`calibcli.io.columns.CodedText`, one dictionary for all batches)."""
        # each batch's rows increase (a reader's); in order when each batch starts after the one before ends
        in_order = all(len(r) == 0 or bool(np.all(r[1:] > r[:-1])) for r in self._rows) and all(
            a[-1] < b[0]
            for a, b in zip([r for r in self._rows if len(r)][:-1], [r for r in self._rows if len(r)][1:], strict=True)
        )
        order = slice(None) if in_order else np.argsort(np.concatenate(self._rows), kind="stable")

        def ordered(parts: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
            if not parts:
                return empty
            joined = np.concatenate(parts)
            return joined if in_order else joined[order]

        s = ordered(self._s, np.zeros(0))
        y = ordered(self._y, np.zeros(0, dtype=np.int64))
        weighted = any(w is not None for w in self._w)
        w = (
            ordered([np.ones(len(z)) if v is None else v for z, v in zip(self._s, self._w, strict=True)], np.zeros(0))
            if weighted
            else np.ones(len(s))
        )
        values = []
        for j in range(len(self.columns)):
            column = _joined([batch[j] for batch in self._values]) if self._values else np.zeros(0)
            values.append(column if in_order else column[order])
        return s, y, w, values

    def result(self, progress=None) -> AuditReport:
        o = self.options
        if self.stats is not None:
            raise RuntimeError("the audit's first pass over more rows than it holds is finished by a second pass")
        if self.grid is not None:
            if not self.n_rows:
                raise CalibcliError("no rows to audit")
            sums, ecce = self.grid.result()
            result = finish(sums, ecce, self.grid.codings, self.grid.partitions, o)
            if progress is not None:
                progress()
            described = [{"column": c.column, "kind": c.kind, "labels": list(c.labels)} for c in self.grid.codings]
            grid = {
                "cells": GRID_CELLS,
                "rows": self.n_rows,
                "row_limit": self.row_limit,
                "quantile_edges": self.edges_found or None,
                "bound": "each segment's ecce_bound: the largest score cell's normalised sum w |y - s|; the exact "
                "ECCE-R lies in [ecce_r, ecce_r + 2 ecce_bound], ECCE-MAD in [ecce_mad, ecce_mad + "
                "ecce_bound]",
            }
            return AuditReport(self.mode, described, result, grid=grid)
        s, y, w, values = self._arrays()
        if not len(s):
            raise CalibcliError("no rows to audit")
        coded = [
            code_values(name, v, max_values=o.max_values, segment_bins=o.segment_bins)
            for name, v in zip(self.columns, values, strict=True)
        ]
        codings, codes = [c for c, _ in coded], [k for _, k in coded]
        check_segments(codings, o.depth, max_segments=o.max_segments, n_bins=o.n_bins, n_rows=len(s))
        parts = partitions(codings, o.depth)
        result = audit_arrays(y, s, w, codes, codings, parts, o)
        if progress is not None:
            progress()
        described = [{"column": c.column, "kind": c.kind, "labels": list(c.labels)} for c in codings]
        drawn = _segment_diagrams(result, parts, codes, y, s, w, self.diagrams, o.n_bins) if self.diagrams else ()
        return AuditReport(self.mode, described, result, drawn)

    def to_dict(self) -> dict:
        head = {
            "kind": self.kind,
            "version": STATE_VERSION,
            "mode": self.mode,
            "n_classes": self.n_classes,
            "class_names": list(self.class_names),
            "options": asdict(self.options),
            "row_limit": self.row_limit,
            "diagrams": self.diagrams,
        }
        if self.grid is not None or self.stats is not None:
            return {
                **head,
                "n_rows": self.n_rows,
                "edges_found": self.edges_found,
                "grid": None if self.grid is None else self.grid.to_dict(),
                "stats": None if self.stats is None else [s.to_dict() for s in self.stats],
            }
        s, y, w, values = self._arrays()
        rows = np.sort(np.concatenate(self._rows)) if self._rows else np.zeros(0, dtype=np.int64)
        return {
            **head,
            "rows": rows.tolist(),
            "s": s.tolist(),
            "y": y.tolist(),
            "w": w.tolist(),
            "values": [[_plain(v) for v in (col.decode() if isinstance(col, CodedText) else col)] for col in values],
        }

    @classmethod
    def from_dict(cls, d: dict) -> SegmentAuditAccumulator:
        if d.get("kind") != cls.kind or d.get("version") != STATE_VERSION:
            raise ValueError(f"not a segment audit state of version {STATE_VERSION}")
        out = cls(
            mode=d["mode"],
            n_classes=d["n_classes"],
            class_names=tuple(d["class_names"]),
            options=Options(**d["options"]),
            row_limit=d["row_limit"],
            diagrams=d.get("diagrams", 0),
        )
        if "rows" not in d:  # beyond the row limit: statistics (first pass) or grid sums (second pass)
            out.n_rows, out.edges_found = d["n_rows"], d["edges_found"]
            out.stats = None if d["stats"] is None else [ColumnStats.from_dict(s) for s in d["stats"]]
            out.grid = None if d["grid"] is None else SegmentGrid.from_dict(d["grid"], out.options)
            return out
        if d["rows"]:
            out._rows = [np.asarray(d["rows"], dtype=np.int64)]
            out._s = [np.asarray(d["s"], dtype=np.float64)]
            out._y = [np.asarray(d["y"], dtype=np.int64)]
            out._w = [np.asarray(d["w"], dtype=np.float64)]
            out._values = [tuple(_column(v) for v in d["values"])]
            out.n_rows = len(d["rows"])
        return out


def _segment_diagrams(result: AuditResult, parts, codes, y, s, w, top: int, n_bins: int) -> tuple[SegmentDiagram, ...]:
    """The binned diagrams (``n_bins`` uniform bins, Wilson bands, no bootstrap) of the whole population and of the
    ``top`` worst tested segments, from the rows in memory."""
    weighted = not bool(np.all(w == 1.0))
    chosen: list[tuple[dict, tuple[int, int] | None]] = [({}, None)]
    chosen += [
        (seg["definition"], where)
        for seg, where in zip(result.segments, result.located, strict=True)
        if seg["tested"] and seg["definition"]
    ][:top]
    out = []
    for definition, where in chosen:
        if where is None:
            keep = slice(None)
        else:
            part, segment = where
            keep = parts[part].segment_ids(codes, len(s)) == segment
        calibration = binned_calibration(y[keep], s[keep], sample_weight=w[keep] if weighted else None, n_bins=n_bins)
        out.append(SegmentDiagram(definition, binned_data_from_result(calibration, problem="binary")))
    return tuple(out)


def _joined(parts: list) -> np.ndarray | CodedText:
    """One segment column's batches as one: codes into one dictionary when every batch is text codes (each
    batch's codes mapped through its values' places in the union), else one array (codes decoded)."""
    if parts and all(isinstance(p, CodedText) for p in parts):
        place: dict[str, int] = {}
        for p in parts:
            for v in p.values:
                place.setdefault(v, len(place))
        mapped = []
        for p in parts:
            remap = np.array([place[v] for v in p.values] + [-1], dtype=np.int32)  # -1 (empty) stays -1
            mapped.append(remap[p.codes])
        return CodedText(np.concatenate(mapped), tuple(place))
    return np.concatenate([p.decode() if isinstance(p, CodedText) else p for p in parts])


def _plain(value):
    """A segment value as JSON holds it: NaN (a missing number) as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _column(values: list) -> np.ndarray:
    """A segment column back from JSON: floats (None as NaN) when every value is a number, else objects."""
    if values and all(v is None or (isinstance(v, float)) for v in values) and any(v is not None for v in values):
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
