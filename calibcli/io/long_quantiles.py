"""Quantiles in long form (SPEC 10 "Kinds"): one row per (id, level), pivoted by id into the wide rows of
:mod:`calibcli.io.regression`.

A long-form dump has the columns ``quantile_level`` and ``value`` beside an id column (``--id-col``, by
default ``id``) and the target (``--target``, or ``y`` / ``target`` / ``y_true``), repeated on every row of
its id; a weight column (``--weight-col``) is repeated the same way. Its rows, in any order and across any
number of batches and files, give exactly the wide rows ``q_tau1 ... q_taum, y`` of each id (so the same
numbers as the equivalent wide file: an integer id is the wide row's index, :func:`row_keys`).

The pivot streams: each batch's rows join the rows of ids not yet complete, and every id that has all its
levels is handed on as a wide row and forgotten. Memory holds the rows of the incomplete ids only: a file
grouped (or sorted) by id keeps at most one batch of them; a file in random order may keep up to all its rows
(the pivot of a long file in random order needs them). The levels are those of the first batch of the first
file (every id must have them); an id with another level, the same level twice, two targets (or weights), or
that misses a level when the input ends is an error naming the file and row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError, shown
from calibcli.io import formats
from calibcli.io.arrow_values import _floats, _is_text, _text_numbers, null_mask
from calibcli.io.fragments import Batch, RowCounts, _guarded_iter

LEVEL_COLUMN = "quantile_level"
VALUE_COLUMN = "value"
DEFAULT_ID = "id"


@dataclass(frozen=True)
class LongForm:
    """The columns of a long-form dump: the id, the level and the value."""

    id: str
    level: str = LEVEL_COLUMN
    value: str = VALUE_COLUMN


def detect_long(names: list[str], id_col: str | None, where: str) -> LongForm | None:
    """The long form's columns when the file has ``quantile_level`` and ``value`` (None otherwise)."""
    lower = {n.lower(): n for n in names}
    if LEVEL_COLUMN not in lower or VALUE_COLUMN not in lower:
        if id_col is not None:
            raise CalibcliError(
                f"{where}: {{opt:id_col}} is for quantiles in long form, but the file has no columns "
                f"{LEVEL_COLUMN} and {VALUE_COLUMN}: drop {{opt:id_col}} or name the columns so"
            )
        return None
    if id_col is None:
        if DEFAULT_ID not in lower:
            raise CalibcliError(
                f"{where}: quantiles in long form ({LEVEL_COLUMN}, {VALUE_COLUMN}) need an id column: expected one "
                f"named {DEFAULT_ID}; pass {{opt:id_col}} NAME"
            )
        id_col = lower[DEFAULT_ID]
    elif id_col not in names:
        raise CalibcliError(f"{where}: no column {shown(id_col)} (given by {{opt:id_col}})")
    return LongForm(id_col, lower[LEVEL_COLUMN], lower[VALUE_COLUMN])


def first_levels(location: str, fmt: str, path: str, long: LongForm, batch_rows: int) -> tuple[float, ...]:
    """The distinct levels of the first batch of the first file: the levels every id must have."""
    tables = formats.iter_tables(location, fmt, [long.level], batch_rows)
    for table in _guarded_iter(path, fmt, tables):
        levels = _cells(table.column(long.level), long.level, path, 0, "level")
        found = tuple(float(v) for v in np.unique(levels))
        for value in found:
            if not 0.0 < value < 1.0:
                row = int(np.flatnonzero(levels == value)[0]) + 1
                raise CalibcliError(
                    f"{path}: row {row}, column {long.level}: the level {value:g} is outside (0, 1): expected a "
                    "level such as 0.9"
                )
        if len(found) < 2:
            raise CalibcliError(
                f"{path}: the first {table.num_rows} rows have {len(found)} quantile level: expected at least 2 levels"
            )
        return found
    raise formats.no_rows(path)


def _cells(col, name: str, where: str, first_row: int, role: str) -> np.ndarray:
    """A column's numbers; an empty or non-numeric cell is an error naming its row."""
    if _is_text(col.type):
        values, bad = _text_numbers(col)
    else:
        values, bad = _floats(col), np.zeros(len(col), dtype=bool)
    empty = null_mask(col)
    bad = bad | ~np.isfinite(values) | (empty if empty is not None else False)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise CalibcliError(
            f"{where}: row {first_row + r + 1}, column {shown(name, quote=False)}: the {role} is "
            f"{shown(col[r].as_py())}: expected a finite number (long-form quantiles have no {{opt:drop_invalid}})"
        )
    return values


@dataclass
class _Pending:
    """The long rows of the ids not yet complete, as parallel arrays."""

    ids: np.ndarray
    level: np.ndarray  # index into the levels
    value: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    file: np.ndarray  # index of the file, for messages
    row: np.ndarray  # 1-based row within its file


def _empty(id_dtype) -> _Pending:
    return _Pending(
        np.empty(0, dtype=id_dtype),
        np.empty(0, np.int64),
        np.empty(0),
        np.empty(0),
        np.empty(0),
        np.empty(0, np.int64),
        np.empty(0, np.int64),
    )


def _ids(col, name: str, where: str, first_row: int) -> np.ndarray:
    """The ids of a batch: integers as int64 (a text cell that is an integer written plainly, as the text formats
    give them, too), any other ids as str objects."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = null_mask(col)
    if empty is not None and empty.any():
        r = int(np.flatnonzero(empty)[0])
        raise CalibcliError(f"{where}: row {first_row + r + 1}, column {shown(name, quote=False)}: the id is empty")
    if _is_text(col.type):
        try:
            ints = pc.cast(col, pa.int64())
        except pa.ArrowException:  # not integers written plainly (ArrowInvalid), or no such cast for this type
            ints = None
        if ints is not None and pc.all(pc.equal(pc.cast(ints, col.type), col)).as_py():
            col = ints
    values = col.to_numpy()
    return values.astype(np.int64) if values.dtype.kind in "iu" else values.astype(str).astype(object)


def long_batches(stream, long: LongForm, levels: tuple[float, ...]) -> Iterator[Batch]:
    """The wide rows of a long-form stream, each id once it has all its levels (see the module's text)."""
    plan = stream.plan
    t = plan.target
    m = len(levels)
    level_array = np.asarray(levels)
    columns = list(dict.fromkeys([long.id, long.level, long.value, t.target, *([t.weight] if t.weight else [])]))
    counts = RowCounts()
    paths = [source.path for source, _, _, _ in stream._files]
    pending: _Pending | None = None
    for i, (source, location, fmt, _) in enumerate(stream._files):
        tables = formats.iter_tables(location, fmt, columns, plan.batch_rows)
        file_row = 0
        for table in _guarded_iter(source.path, fmt, tables, plan, location):
            n = table.num_rows
            where = source.path
            ids = _ids(table.column(long.id), long.id, where, file_row)
            lv = _cells(table.column(long.level), long.level, where, file_row, "level")
            at = np.searchsorted(level_array, lv).clip(0, m - 1)
            stray = level_array[at] != lv
            if stray.any():
                r = int(np.flatnonzero(stray)[0])
                raise CalibcliError(
                    f"{where}: row {file_row + r + 1}: id {shown(ids[r])} has the level {lv[r]:g}, not among the "
                    f"levels {list(levels)} of the first rows: every id must have the same levels"
                )
            batch = _Pending(
                ids,
                at.astype(np.int64),
                _cells(table.column(long.value), long.value, where, file_row, "value"),
                _cells(table.column(t.target), t.target, where, file_row, "target"),
                _cells(table.column(t.weight), t.weight, where, file_row, "weight") if t.weight else np.ones(n),
                np.full(n, i, np.int64),
                np.arange(file_row + 1, file_row + n + 1, dtype=np.int64),
            )
            if t.weight and (batch.weight < 0).any():
                r = int(np.flatnonzero(batch.weight < 0)[0])
                raise CalibcliError(
                    f"{where}: row {file_row + r + 1}: the weight is {batch.weight[r]:g}, expected a number >= 0"
                )
            counts.rows_read += n
            file_row += n
            del table
            pending = batch if pending is None else _join(pending, batch)
            out, pending = _complete(pending, m, paths)
            if out is not None:
                probs, y, w, done_ids = out
                rows = row_keys(done_ids)
                counts.rows_used += len(y)
                weights = w if t.weight else None
                if weights is not None:
                    counts.weight_total += float(weights.sum())
                yield Batch(probs, y, weights, rows, None, where)
    if pending is not None and len(pending.ids):
        first = int(np.argmin(pending.file * (1 << 40) + pending.row))
        ident = pending.ids[first]
        has = sorted(levels[k] for k in pending.level[pending.ids == ident])
        missing = [v for v in levels if v not in has]
        raise CalibcliError(
            f"{paths[pending.file[first]]}: row {pending.row[first]}: id {shown(ident)} has the levels {has} but not "
            f"{missing} when the input ends: expected every id to have the levels {list(levels)}"
        )
    stream.check_counts(counts)
    stream._counts = counts


def row_keys(ids: np.ndarray) -> np.ndarray:
    """The global row index of each id's wide row: an integer id itself, any other id a 63-bit BLAKE2b hash of
    its text. The seeded draws (the randomised PIT, the Poisson bootstrap) are functions of it, so the numbers do
    not depend on the order of the long rows; ids 0..n-1 give the wide file's numbers to the last bit."""
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64)
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(str(v).encode(), digest_size=8).digest(), "little") >> 1 for v in ids),
        dtype=np.int64,
        count=len(ids),
    )


def _join(a: _Pending, b: _Pending) -> _Pending:
    if a.ids.dtype == b.ids.dtype:
        ids = np.concatenate([a.ids, b.ids])
    else:  # integer ids in some batches, text in others: all as text ("7" is the id 7)
        ids = np.concatenate([a.ids.astype(str).astype(object), b.ids.astype(str).astype(object)])
    return _Pending(
        ids,
        *(
            np.concatenate([getattr(a, f), getattr(b, f)])
            for f in ("level", "value", "target", "weight", "file", "row")
        ),
    )


def _complete(p: _Pending, m: int, paths: list[str]) -> tuple[tuple | None, _Pending]:
    """The wide rows of the ids that have all ``m`` levels (in order of their first row), and the rest."""
    uniq, first, inverse, count = np.unique(p.ids, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if (count > m).any():
        _duplicate(p, inverse, int(np.flatnonzero(count > m)[0]), paths)
    done = count[inverse] == m
    if not done.any():
        return None, p
    # the complete ids in the order of their first row, each id's rows by level
    rank = np.empty(len(uniq), np.int64)
    order_of_ids = np.argsort(first, kind="stable")
    rank[order_of_ids] = np.arange(len(uniq))
    sel = np.flatnonzero(done)
    key = rank[inverse[sel]] * m + p.level[sel]
    order = sel[np.argsort(key, kind="stable")]
    lv = p.level[order].reshape(-1, m)
    if (lv != np.arange(m)).any():
        bad = int(np.flatnonzero((lv != np.arange(m)).any(axis=1))[0])
        _duplicate(p, inverse, int(inverse[order[bad * m]]), paths)
    probs = p.value[order].reshape(-1, m)
    for name, values in (("target", p.target), ("weight", p.weight)):
        block = values[order].reshape(-1, m)
        differ = (block != block[:, :1]).any(axis=1)
        if differ.any():
            b = int(np.flatnonzero(differ)[0])
            rows = order[b * m : (b + 1) * m]
            k = int(np.flatnonzero(block[b] != block[b, 0])[0])
            raise CalibcliError(
                f"{paths[p.file[rows[k]]]}: row {p.row[rows[k]]}: id {shown(p.ids[rows[0]])} has the {name} "
                f"{block[b, k]:g} but {block[b, 0]:g} in row {p.row[rows[0]]}: expected one {name} per id"
            )
    y, w = p.target[order[::m]], p.weight[order[::m]]
    keep = ~done
    rest = _Pending(*(getattr(p, f)[keep] for f in ("ids", "level", "value", "target", "weight", "file", "row")))
    return (probs, y, w, p.ids[order[::m]]), rest


def _duplicate(p: _Pending, inverse: np.ndarray, group: int, paths: list[str]) -> None:
    rows = np.flatnonzero(inverse == group)
    rows = rows[np.lexsort((p.row[rows], p.file[rows]))]
    seen: set[int] = set()
    for r in rows:
        if int(p.level[r]) in seen:
            raise CalibcliError(
                f"{paths[p.file[r]]}: row {p.row[r]}: id {shown(p.ids[r])} has a second row at the same quantile "
                "level: expected one row per id and level"
            )
        seen.add(int(p.level[r]))
    raise AssertionError("no repeated level found")  # (count > m implies a repeated level)
