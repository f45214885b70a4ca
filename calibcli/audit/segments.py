"""Segments of a population for the multicalibration audit (SPEC 9): segment columns coded, intersections.

A *segment column* is coded once, from a first look at its values:

- **categorical** (strings, booleans, and numbers with at most ``segment_bins`` distinct values): a code per
  value, the ``max_values`` most frequent kept (ties: the smaller value first) and the rest pooled as
  ``other``; missing values (null, NaN) are a value of their own, ``missing``;
- **numeric** (numbers with more distinct values): ``segment_bins`` equal-mass bins with SPEC 2.1's quantile
  edges (an edge is the midpoint of two neighbouring sorted values; ties merge bins; a value equal to an edge
  goes to the bin above), labelled ``[lo, hi)``; NaN is ``missing``.

A *partition* is a combination of up to ``depth`` segment columns; its segments are the combinations of their
codes (mixed radix: the first column's code varies slowest), so every row is in exactly one segment of each
partition. The partition of no columns is the whole population. MCGrad's ``MulticalibrationError`` (Guy,
Haimovich, Linder, Okati, Perini, Tax, Tygert, "Measuring multi-calibration", arXiv:2506.11251, 2025) forms
the same segments from categorical and numerical feature columns; here they are codes and partitions, so a
stream keeps per-segment sums instead of a segments-by-rows matrix.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from calibcli.core.binning import quantile_edges_sorted
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import budget_text, format_bytes, memory_budget
from calibcli.io.columns import CodedText

KINDS = ("categorical", "numeric")
OTHER = "other"
MISSING = "missing"


def _plain(value):
    """A value as JSON and messages show it: Python scalars, not NumPy's (``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _number(x: float) -> str:
    return "-inf" if x == -math.inf else "inf" if x == math.inf else f"{x:.6g}"


def _label(value) -> str:
    """A kept categorical value as a label: infinities spelled (``inf``, ``-inf``), as JSON cannot hold them."""
    value = _plain(value)
    return _number(value) if isinstance(value, float) and math.isinf(value) else str(value)


def _bin_label(lo: float, hi: float) -> str:
    """A numeric bin ``[lo, hi)``; the bin above an edge at +inf holds +inf alone: ``inf``."""
    return "inf" if lo == hi == math.inf else f"[{_number(lo)}, {_number(hi)})"


@dataclass(frozen=True)
class ColumnCoding:
    """How one segment column's values become codes ``0..n_codes-1`` (see the module docstring)."""

    column: str
    kind: str  # "categorical" or "numeric"
    values: tuple = ()  # categorical: the kept values, by code
    edges: tuple[float, ...] = ()  # numeric: interior edges, increasing
    other: bool = False  # categorical: a code for the values not kept
    missing: bool = False  # a code for missing values

    @property
    def labels(self) -> tuple[str, ...]:
        """Each code's label, as tables show it. The pooled values and the missing ones are ``other`` and
        ``missing``, unless a kept value is spelled so: then ``(other)`` (``((other))``, ...), so that no two
        segments of a column share a name in a table, the JSON or a gate's message."""
        if self.kind == "categorical":
            kept = tuple(_label(v) for v in self.values)
        else:
            bounds = (-math.inf, *self.edges, math.inf)
            kept = tuple(_bin_label(lo, hi) for lo, hi in itertools.pairwise(bounds))
        taken = set(kept)
        extra = []
        for wanted, present in ((OTHER, self.other), (MISSING, self.missing)):
            if present:
                name = wanted
                while name in taken:
                    name = f"({name})"
                taken.add(name)
                extra.append(name)
        return kept + tuple(extra)

    @property
    def n_codes(self) -> int:
        return len(self.labels)

    def definition(self, code: int):
        """What code ``code`` stands for in a report's segment ``definition``: the value itself (categorical),
        the bin's label (numeric), or ``other`` / ``missing``."""
        kept = len(self.values) if self.kind == "categorical" else len(self.edges) + 1
        if code < kept and self.kind == "categorical":
            value = _plain(self.values[code])
            return _label(value) if isinstance(value, float) and math.isinf(value) else value
        return self.labels[code]

    def encode(self, values) -> np.ndarray:
        """Each row's code (int64) for an array of this column's values (NumPy, or pyarrow with nulls)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(values))
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        missing = np.asarray(arr.is_null(nan_is_null=True).to_numpy(zero_copy_only=False), dtype=bool)
        if self.kind == "numeric":
            x = np.asarray(
                pc.fill_null(pc.cast(arr, pa.float64()), 0.0).to_numpy(zero_copy_only=False), dtype=np.float64
            )
            codes = np.searchsorted(np.asarray(self.edges, dtype=np.float64), x, side="right").astype(np.int64)
        else:
            kept = pa.array(list(self.values)) if self.values else pa.array([], type=arr.type)
            if kept.type != arr.type:  # int32 batches against int64 values, large_string against string, ...
                try:
                    kept = kept.cast(arr.type)
                except pa.ArrowException:  # no cast between the two types
                    arr = arr.cast(kept.type)
            index = pc.index_in(arr, value_set=kept)
            codes = np.asarray(pc.fill_null(index, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
            if (codes[~missing] < 0).any():
                if not self.other:  # only possible for values never seen when the coding was made
                    raise CalibcliError(
                        f"segment column {self.column!r} has a value its coding did not see: "
                        "code the column from all the rows it is applied to"
                    )
                codes[(codes < 0) & ~missing] = len(self.values)
        if missing.any():
            if not self.missing:
                raise CalibcliError(
                    f"segment column {self.column!r} has missing values its coding did not see: "
                    "code the column from all the rows it is applied to"
                )
            codes[missing] = self.n_codes - 1
        return codes


def categorical_coding(column: str, counts: dict, n_missing: int, *, max_values: int) -> ColumnCoding:
    """The coding of a categorical column from its values' counts (``value -> rows``) and its missing count:
    the ``max_values`` most frequent values kept (ties: the smaller value first), the rest ``other``."""
    if max_values < 1:
        raise CalibcliError(f"{{opt:max_values}} is {max_values}: expected at least 1 value per column")
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], _sort_key(kv[0])))
    kept = tuple(sorted((v for v, _ in ranked[:max_values]), key=_sort_key))
    return ColumnCoding(column, "categorical", values=kept, other=len(ranked) > max_values, missing=n_missing > 0)


def _sort_key(value):
    """Values of one column sort among themselves; a column mixing types sorts by type name first."""
    return (type(value).__name__, value)


def numeric_coding(column: str, sorted_values: np.ndarray, n_missing: int, *, segment_bins: int) -> ColumnCoding:
    """The coding of a numeric column from its sorted non-missing values: SPEC 2.1's quantile edges."""
    if segment_bins < 2:
        raise CalibcliError(f"{{opt:segment_bins}} is {segment_bins}: expected at least 2 bins per numeric column")
    edges = quantile_edges_sorted(np.asarray(sorted_values, dtype=np.float64), segment_bins)
    return ColumnCoding(column, "numeric", edges=tuple(float(e) for e in edges), missing=n_missing > 0)


def is_numeric_type(arrow_type) -> bool:
    import pyarrow.types as pt

    return (pt.is_integer(arrow_type) or pt.is_floating(arrow_type)) and not pt.is_boolean(arrow_type)


def code_column(column: str, values, *, max_values: int, segment_bins: int) -> ColumnCoding:
    """The coding of one segment column from all its values at once (in memory; a stream builds the same
    coding from mergeable counts and a quantile sketch): numeric when the values are numbers with more than
    ``segment_bins`` distinct values, else categorical."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(values))
    missing = pc.is_null(arr, nan_is_null=True)
    n_missing = int(pc.sum(missing).as_py() or 0)
    present = pc.filter(arr, pc.invert(missing))
    counts = pc.value_counts(present)
    if is_numeric_type(arr.type) and len(counts) > segment_bins:
        x = np.sort(np.asarray(present.to_numpy(zero_copy_only=False), dtype=np.float64))
        return numeric_coding(column, x, n_missing, segment_bins=segment_bins)
    table = {v.as_py(): c.as_py() for v, c in zip(counts.field("values"), counts.field("counts"), strict=True)}
    return categorical_coding(column, table, n_missing, max_values=max_values)


def code_values(
    column: str, values: np.ndarray, *, max_values: int, segment_bins: int
) -> tuple[ColumnCoding, np.ndarray]:
    """The coding of one segment column and every row's code at once, from its values as the reader gives them
    (float64 with NaN for missing, or objects: str, int, bool, None for missing); the same coding as
    :func:`code_column`, without converting the values to Arrow and encoding them a second time: numbers are
    coded through one sort, other values through one hash pass (``pandas.factorize``)."""
    import pandas as pd

    if isinstance(values, CodedText):
        return _code_text(column, values, max_values=max_values)
    values = np.asarray(values)
    first = next((v for v in values[:4096] if v is not None), None) if values.dtype == object else None
    if values.dtype == object and len(values) and not isinstance(first, (str, bool)):  # a reader's column has one type
        kind = pd.api.types.infer_dtype(values, skipna=True)
        if kind in ("integer", "floating", "mixed-integer-float"):
            integral = kind == "integer"
            as_float = np.asarray(pd.to_numeric(values, errors="coerce"), dtype=np.float64)
            return _code_numbers(column, as_float, integral, max_values=max_values, segment_bins=segment_bins)
    elif values.dtype.kind in "iuf":
        return _code_numbers(
            column,
            values.astype(np.float64),
            values.dtype.kind in "iu",
            max_values=max_values,
            segment_bins=segment_bins,
        )
    inverse, uniques = pd.factorize(values, use_na_sentinel=True)
    inverse = np.asarray(inverse, dtype=np.int64)
    missing = inverse < 0
    counts = np.bincount(inverse[~missing], minlength=len(uniques))
    coding = categorical_coding(
        column,
        {_plain(u): int(c) for u, c in zip(uniques, counts, strict=True)},
        int(missing.sum()),
        max_values=max_values,
    )
    position = {v: j for j, v in enumerate(coding.values)}
    other = len(coding.values)
    remap = np.array([position.get(_plain(u), other) for u in uniques], dtype=np.int64)
    codes = remap[np.where(missing, 0, inverse)] if len(uniques) else np.zeros(len(values), dtype=np.int64)
    codes[missing] = coding.n_codes - 1
    return coding, codes


def _code_text(column: str, text: CodedText, *, max_values: int) -> tuple[ColumnCoding, np.ndarray]:
    """:func:`code_values` for text already coded by the reader: counts by ``bincount``, no string hashed again."""
    present = text.codes >= 0
    counts = np.bincount(text.codes[present], minlength=len(text.values))
    n_missing = int(len(text.codes) - present.sum())
    coding = categorical_coding(
        column, {v: int(c) for v, c in zip(text.values, counts, strict=True) if c}, n_missing, max_values=max_values
    )
    position = {v: j for j, v in enumerate(coding.values)}
    # each distinct value's code; the last entry is the empty cells' (-1 indexes it)
    remap = np.array([position.get(v, len(coding.values)) for v in text.values] + [coding.n_codes - 1], dtype=np.int64)
    return coding, remap[text.codes]


#: Rows looked at first to tell a numeric column (more distinct values than bins) without sorting it whole.
_PROBE = 65_536


def quantile_edges_selected(x: np.ndarray, n_bins: int) -> np.ndarray:
    """:func:`calibcli.core.binning.quantile_edges_sorted` of ``x`` (no NaN) without sorting it: the edges need only the
    order statistics at the cut ranks ``r`` and ``r + 1``, which one ``np.partition`` places exactly (O(n))."""
    if n_bins < 2:
        raise CalibcliError(f"{{opt:segment_bins}} is {n_bins}: expected at least 2 bins per numeric column")
    n = len(x)
    ranks = np.round(np.arange(1, n_bins) * n / n_bins).astype(np.int64)
    ranks = ranks[(ranks > 0) & (ranks < n)]
    if not len(ranks):
        return np.zeros(0)
    at = np.unique(np.r_[ranks - 1, ranks])  # 0-based positions of the ranks r and r + 1
    selected = np.partition(x, at)
    return np.unique(0.5 * (selected[ranks - 1] + selected[ranks]))


def _code_numbers(column: str, x: np.ndarray, integral: bool, *, max_values: int, segment_bins: int):
    """:func:`code_values` for numbers (NaN missing): quantile bins when more than ``segment_bins`` distinct values,
    else a category per value (shown as an int when the column holds integers)."""
    missing = np.isnan(x)
    n_missing = int(missing.sum())
    if len(np.unique(x[:_PROBE])) > segment_bins + 1:  # more distinct values than bins (a NaN counts once): numeric
        edges = quantile_edges_selected(x[~missing] if n_missing else x, segment_bins)
        coding = ColumnCoding(column, "numeric", edges=tuple(float(e) for e in edges), missing=n_missing > 0)
        codes = np.searchsorted(edges, np.where(missing, 0.0, x) if n_missing else x, side="right")
        codes = codes.astype(np.int64, copy=False)
        if n_missing:
            codes[missing] = coding.n_codes - 1
        return coding, codes
    present = np.sort(x[~missing])
    starts = np.flatnonzero(np.r_[True, present[1:] != present[:-1]]) if len(present) else np.zeros(0, dtype=np.int64)
    if len(starts) > segment_bins:
        coding = numeric_coding(column, present, n_missing, segment_bins=segment_bins)
        codes = np.searchsorted(np.asarray(coding.edges, dtype=np.float64), np.where(missing, 0.0, x), side="right")
    else:
        distinct = present[starts]
        counts = np.diff(np.r_[starts, len(present)])
        keys = [int(v) if integral else float(v) for v in distinct]
        coding = categorical_coding(
            column, dict(zip(keys, counts.tolist(), strict=True)), n_missing, max_values=max_values
        )
        kept = np.asarray(coding.values, dtype=np.float64)
        found = np.searchsorted(distinct, np.where(missing, distinct[0] if len(distinct) else 0.0, x))
        position = np.full(len(distinct), len(coding.values), dtype=np.int64)
        position[np.searchsorted(distinct, kept)] = np.arange(len(kept))
        codes = position[np.minimum(found, max(len(distinct) - 1, 0))] if len(distinct) else np.zeros(len(x), np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    codes[missing] = coding.n_codes - 1
    return coding, codes


@dataclass(frozen=True)
class Partition:
    """A combination of segment columns (indices into the codings; empty: the whole population)."""

    columns: tuple[int, ...]
    sizes: tuple[int, ...]  # each column's number of codes

    @property
    def n_segments(self) -> int:
        return math.prod(self.sizes)

    def segment_ids(self, codes: list[np.ndarray], n_rows: int) -> np.ndarray:
        """Each row's segment in this partition (mixed radix of its columns' codes), in the smallest unsigned type
        that holds them (the ECCE's per-partition sort is a radix sort for 8- and 16-bit ids)."""
        dtype = next(
            (t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if self.n_segments <= np.iinfo(t).max), None
        )
        if dtype is None:  # (check_segments refuses this many first: a partition's ids past 2^64)
            raise CalibcliError(
                f"a partition of {len(self.columns)} segment columns has {float(self.n_segments):.3g} segments, past "
                "2^64: use a smaller {opt:depth} or {opt:max_values}"
            )
        ids: np.ndarray = np.zeros(n_rows, dtype=dtype)
        for col, size in zip(self.columns, self.sizes, strict=True):
            ids *= dtype(size)
            ids += codes[col].astype(dtype, copy=False)
        return ids

    def codes_of(self, segment: int) -> tuple[int, ...]:
        """The column codes of segment ``segment`` (the inverse of the mixed radix)."""
        out = []
        for size in reversed(self.sizes):
            segment, code = divmod(segment, size)
            out.append(code)
        return tuple(reversed(out))


def partitions(codings: list[ColumnCoding], depth: int) -> list[Partition]:
    """The whole population, then every combination of 1..``depth`` segment columns (in column order)."""
    if depth < 1:
        raise CalibcliError(f"{{opt:depth}} is {depth}: expected 1 (each column alone) or more (intersections)")
    out = [Partition((), ())]
    for d in range(1, min(depth, len(codings)) + 1):
        for combo in itertools.combinations(range(len(codings)), d):
            out.append(Partition(combo, tuple(codings[c].n_codes for c in combo)))
    return out


def definition(codings: list[ColumnCoding], partition: Partition, segment: int) -> dict:
    """A segment as a report names it: ``{column: value or bin label}`` (``{}`` for the whole population)."""
    return {
        codings[c].column: codings[c].definition(code)
        for c, code in zip(partition.columns, partition.codes_of(segment), strict=True)
    }


# ---------------------------------------------------------------------------------------------
# The size of an audit, known before any work: partitions from the number of columns and the depth, segments from
# the columns' numbers of codes (issue 33: 30 two-valued columns at depth 8 are 8.7 million partitions)

#: Bytes per segment of the dense per-segment arrays (the (segment, bin) sums of three statistics, their reshaped
#: temporaries, the ECCE statistics and the result's arrays): ``SEGMENT_BYTES + SEGMENT_BIN_BYTES * n_bins``.
SEGMENT_BYTES = 256
SEGMENT_BIN_BYTES = 48
#: Bytes per reported segment (one with rows): its entry in the result and the JSON report.
REPORTED_SEGMENT_BYTES = 4096


def counts_by_depth(sizes: list[int], depth: int) -> list[tuple[int, int]]:
    """``(partitions, segments)`` of the intersections of exactly ``d`` columns, for ``d = 0..depth``, of columns
    with these numbers of codes: the elementary symmetric polynomials of the sizes (exact Python integers, no
    enumeration of the combinations)."""
    top = min(depth, len(sizes))
    segments, parts = [1] + [0] * top, [1] + [0] * top
    for size in sizes:
        for d in range(top, 0, -1):
            segments[d] += segments[d - 1] * int(size)
            parts[d] += parts[d - 1]
    return list(zip(parts, segments, strict=True))


def planned_bytes(sizes: list[int], depth: int, n_bins: int, n_rows: int) -> int:
    """What an audit of columns with these numbers of codes plans to hold at ``depth``: the dense per-segment
    arrays, a segment id per row and partition, and the report's entries (at most ``n_rows`` per partition)."""
    by_depth = counts_by_depth(sizes, depth)
    n_parts = sum(p for p, _ in by_depth)
    n_segments = sum(s for _, s in by_depth)
    reported = min(n_segments, n_parts * max(n_rows, 1))
    return (
        n_segments * (SEGMENT_BYTES + SEGMENT_BIN_BYTES * n_bins)
        + n_parts * n_rows * 8
        + reported * (REPORTED_SEGMENT_BYTES)
    )


def check_partitions(n_columns: int, depth: int, max_segments: int) -> None:
    """Before any row is read: the intersections of up to ``depth`` of ``n_columns`` columns are at least that many
    segments (one per partition at the least); refuse more than ``max_segments``, naming a depth that fits."""
    by_depth = counts_by_depth([1] * n_columns, depth)
    n_parts = sum(p for p, _ in by_depth)
    if n_parts <= max_segments:
        return
    # the advice assumes two codes per column, the least a column that splits the rows has (the columns are not
    # read yet); with more, the check after coding names the depth that fits the real numbers
    two = counts_by_depth([2] * n_columns, depth)
    fits = [d for d in range(1, depth) if sum(s for _, s in two[: d + 1]) <= max_segments]
    advice = (
        f"use {{opt:depth}} {fits[-1]} or less (at least {sum(s for _, s in two[: fits[-1] + 1]):,} segments with two "
        "values per column)"
        if fits
        else f"use fewer {{opt:segment_cols}} (at most {max(max_segments // 2 - 1, 1):,} at {{opt:depth}} 1)"
    )
    raise CalibcliError(
        f"{{opt:depth}} {depth} over {n_columns} {{opt:segment_cols}} forms {n_parts:,} partitions of the rows, so at "
        f"least as many segments, more than {{opt:max_segments}} {max_segments:,}: {advice}, or fewer "
        f"{{opt:segment_cols}}; or raise {{opt:max_segments}}"
    )


def check_segments(codings: list[ColumnCoding], depth: int, *, max_segments: int, n_bins: int, n_rows: int) -> None:
    """Once the columns are coded, before any segment is summed: the segments of every partition (each a
    combination of codes, with or without rows) against ``max_segments`` and the memory budget
    (:func:`calibcli.core.validation.memory_budget`). The message names what makes them many (the depth, the codes
    per column: ``max_values`` and ``segment_bins``) and a value that fits."""
    sizes = [c.n_codes for c in codings]
    budget = memory_budget()

    def fits(sizes_: list[int], depth_: int) -> bool:
        segments = sum(s for _, s in counts_by_depth(sizes_, depth_))
        return segments <= max_segments and planned_bytes(sizes_, depth_, n_bins, n_rows) <= budget

    if fits(sizes, depth):
        return
    n_segments = sum(s for _, s in counts_by_depth(sizes, depth))
    nbytes = planned_bytes(sizes, depth, n_bins, n_rows)
    limit = (
        f"more than {{opt:max_segments}} {max_segments:,}"
        if n_segments > max_segments
        else f"which would need {format_bytes(nbytes)}, beyond the memory budget ({format_bytes(budget)}, "
        f"{budget_text()})"
    )
    shown_count = f"{n_segments:,}" if n_segments < 10**15 else f"{float(n_segments):.3g}"
    codes = f"{min(sizes)} to {max(sizes)} codes" if min(sizes) != max(sizes) else f"{sizes[0]} codes"
    advice = []
    depth_fits = [d for d in range(1, depth) if fits(sizes, d)]
    if depth_fits:
        d = depth_fits[-1]
        advice.append(f"{{opt:depth}} {d} ({sum(s for _, s in counts_by_depth(sizes, d)):,} segments)")
    kinds = {c.kind for c in codings}
    for option, kind in (("max_values", "categorical"), ("segment_bins", "numeric")):
        if kind not in kinds:
            continue
        low = 1 if kind == "categorical" else 2

        def capped(v: int, kind=kind) -> list[int]:
            """The columns' numbers of codes with ``v`` values kept (categorical) or ``v`` bins (numeric)."""
            out = []
            for c in codings:
                if c.kind != kind:
                    out.append(c.n_codes)
                elif kind == "categorical":
                    out.append(c.n_codes if v >= len(c.values) else v + 1 + int(c.missing))
                else:
                    out.append(min(c.n_codes, v + int(c.missing)))
            return out

        if fits(capped(low), depth):
            lo, hi = low, max(sizes)
            while lo < hi:  # the largest value that fits
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if fits(capped(mid), depth) else (lo, mid - 1)
            advice.append(f"{{opt:{option}}} {lo} at {{opt:depth}} {depth}")
    advice.append("fewer {opt:segment_cols}")
    if n_segments > max_segments:
        advice.append("raise {opt:max_segments}")
    raise CalibcliError(
        f"the audit would form {shown_count} segments ({len(codings)} {{opt:segment_cols}} of {codes} each, with "
        f"their intersections up to {{opt:depth}} {depth}), {limit}: use " + ", or ".join(advice)
    )
