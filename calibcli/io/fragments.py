"""What a stream yields (:class:`Batch`), its row accounting (:class:`RowCounts`), and a :class:`Fragment`: a file
of a dataset, or a run of a Parquet file's row groups, with the global index of its first row, read on its own
(by the stream in turn, or by an engine's task on a worker), whole or only the rows of a range of global
indices (``calibcli compare`` on a cluster reads the same range of both inputs). SPEC 8.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from calibcli.core.errors import CalibcliError, shown, shown_names
from calibcli.core.validation import scaled_weights
from calibcli.io import formats
from calibcli.io.columns import CodedText, ReadPlan
from calibcli.io.windows import chunk_keys


@dataclass(frozen=True)
class Batch:
    """Validated rows of one file, at most ``batch_rows`` of them."""

    probs: np.ndarray  # (n,) float64 for one probability column, else (n, K); --logits already applied
    labels: np.ndarray  # (n,) int64 class indices 0..K-1
    sample_weight: np.ndarray | None  # (n,) float64, None without a weight column
    row_index: np.ndarray  # (n,) int64 global row index within the dataset
    # one per group-by column: numbers as numbers, text as str objects (a segment column's text coded, CodedText)
    groups: tuple[np.ndarray | CodedText, ...] | None
    source: str  # the file these rows came from, as reported

    def __len__(self) -> int:
        return len(self.labels)


@dataclass
class RowCounts:
    """Rows read, used and dropped (by reason), and the total weight used: what :meth:`Stream.describe`
    reports. Counts of fragments add up (:meth:`merge`) to the counts of the whole stream."""

    rows_read: int = 0
    rows_used: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    weight_total: float = 0.0

    @property
    def rows_dropped(self) -> int:
        return sum(self.dropped.values())

    def merge(self, other: RowCounts) -> RowCounts:
        dropped = dict(self.dropped)
        for reason, n in other.dropped.items():
            dropped[reason] = dropped.get(reason, 0) + n
        return RowCounts(
            self.rows_read + other.rows_read,
            self.rows_used + other.rows_used,
            dropped,
            self.weight_total + other.weight_total,
        )

    def to_dict(self) -> dict:
        return {
            "rows_read": self.rows_read,
            "rows_used": self.rows_used,
            "dropped": dict(self.dropped),
            "weight_total": self.weight_total,
        }

    @classmethod
    def from_dict(cls, doc: dict) -> RowCounts:
        return cls(
            int(doc["rows_read"]),
            int(doc["rows_used"]),
            {k: int(v) for k, v in doc["dropped"].items()},
            float(doc["weight_total"]),
        )


# ---------------------------------------------------------------------------------------------
# Fragments: independent pieces of a stream


@dataclass(frozen=True)
class Fragment:
    """A file of a stream, or a run of a Parquet file's row groups, with the global index of its first row.

    Holds only paths and options (no open file), so it pickles: a worker reads it with :meth:`batches`
    and gets the same rows, row indices and messages as the stream. A fragment of standard input
    points at the stream's temporary copy, which lives as long as the dataset.
    """

    path: str  # the file, as reported
    row_offset: int  # global index of the fragment's first row
    n_rows: int | None  # rows in the fragment (before validation); None when not counted
    row_groups: tuple[int, ...] | None  # Parquet row groups; None for the whole file
    format: str
    location: str  # where the bytes are: the path, a URI, or the temporary copy of stdin
    plan: ReadPlan
    partition: tuple[tuple[str, object], ...] = ()  # values of the group-by partition keys
    first_file_row: int = 0  # the fragment's first row within its file

    def batches(self, counts: RowCounts | None = None, within: tuple[int, int] | None = None) -> Iterator[Batch]:
        """The fragment's validated batches; ``counts`` (when given) accumulates its row accounting.

        ``within=(lo, hi)``: only the rows of global index ``lo <= i < hi`` are read, checked and counted
        (a task reading a range of rows of two datasets side by side: ``calibcli compare`` on a cluster)."""
        return _read_fragment(self, RowCounts() if counts is None else counts, within)


def _read_fragment(frag: Fragment, counts: RowCounts, within: tuple[int, int] | None = None) -> Iterator[Batch]:
    plan = frag.plan
    partition = dict(frag.partition)
    tables = formats.iter_tables(frag.location, frag.format, plan.data_columns, plan.batch_rows, frag.row_groups)
    file_row, index = frag.first_file_row, frag.row_offset
    for table, last in _with_last(_guarded_iter(frag.path, frag.format, tables, plan, frag.location)):
        whole, skipped_after = True, 0
        if within is not None:  # the part of this table inside the range, if any
            lo, hi = within
            if index >= hi:
                return
            start, stop = min(max(lo - index, 0), table.num_rows), min(max(hi - index, 0), table.num_rows)
            whole = start == 0 and stop == table.num_rows
            if start == stop:
                file_row += table.num_rows
                index += table.num_rows
                continue
            skipped_after = table.num_rows - stop
            table = table.slice(start, stop - start)
            file_row += start
            index += start
        n = table.num_rows
        whole_file = frag.row_groups is None and file_row == 0 and last and whole
        # (the plan's kind of target converts and checks: io.columns' ReadPlan, io.regression's RegressionPlan)
        conv, keep, dropped = plan.read(
            table,
            frag.path,
            file_row,
            partition,
            whole_file=whole_file,
            text_of=lambda c, r, t=table: t.column(c)[r].as_py(),
        )
        counts.rows_read += n
        for reason, k in dropped.items():
            counts.dropped[reason] = counts.dropped.get(reason, 0) + k
        rows = np.arange(index, index + n, dtype=np.int64)
        probs, labels, weights, groups = conv.probs, conv.labels, conv.weights, windowed(conv.groups, plan, rows)
        if not keep.all():
            probs, labels, rows = probs[keep], labels[keep], rows[keep]
            weights = None if weights is None else weights[keep]
            groups = None if groups is None else tuple(g[keep] for g in groups)
        counts.rows_used += len(labels)
        if weights is not None:
            weights = scaled_weights(weights, plan.weight_scale, where=frag.path)  # (0: as read)
            counts.weight_total += float(weights.sum())
        file_row += n
        index += n
        file_row += skipped_after
        index += skipped_after
        if len(labels):
            yield Batch(probs, labels, weights, rows, groups, frag.path)
        # Let go of this batch's arrays before the next table is read: memory holds one batch, not two.
        del table, conv, keep, probs, labels, weights, rows, groups


def windowed(groups, plan, rows: np.ndarray):
    """The batch's group columns with row-count windows (``--chunk-rows``) set from the rows' global indices."""
    windows = getattr(plan, "windows", None)  # (a regression plan has no windows)
    if groups is None or windows is None or windows.chunk_rows is None:
        return groups
    at = plan.carried.index(windows.key)
    return tuple(chunk_keys(rows, windows.chunk_rows) if i == at else g for i, g in enumerate(groups))


T = TypeVar("T")


def _with_last(items: Iterable[T]) -> Iterator[tuple[T, bool]]:
    """Each item with whether it is the last (one item of look-ahead)."""
    it = iter(items)
    try:
        item = next(it)
    except StopIteration:
        return
    for following in it:  # read before the item is handed on, as before
        yield item, False
        item = following
    yield item, True


def _guarded_iter(
    path: str, fmt: str, tables: Iterator, plan: ReadPlan | None = None, location: str | None = None
) -> Iterator:
    """The tables of one file, with pyarrow's errors turned into one-line messages naming the file."""
    while True:
        try:
            table = next(tables)
        except StopIteration:
            return
        except formats.MissingColumns as exc:
            missing = exc.missing[0]
            role = "" if plan is None else f", {plan.role_of(missing)} of the dataset (as in {plan.first_file})"
            raise CalibcliError(
                f"{path}: no column {shown(missing)}{role}; the file has columns {shown_names(exc.names)}"
            ) from None
        except CalibcliError:
            raise
        except Exception as exc:  # pyarrow raises many types for unreadable or truncated files
            raise formats.unreadable(path, fmt, exc, location) from None
        yield table
