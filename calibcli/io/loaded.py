"""One input read whole into memory (:func:`read_input`): the one-batch case of the stream.

:func:`read_input` resolves the path as a dataset (:mod:`calibcli.io.sources`), reads it in batches
as large as a file, and concatenates them: one reader, whether the rows are streamed or held.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.io import formats
from calibcli.io.columns import ColumnSpec
from calibcli.io.resolve import resolve_datasets
from calibcli.io.sources import Dataset, input_description

#: The batch size that makes every file one batch (messages then count a file's rows over the file).
WHOLE_FILE = 1 << 62


@dataclass(frozen=True)
class LoadedInput:
    """One input (a file, or a dataset of several), read, mapped to columns, validated, in memory."""

    path: str
    format: str
    n_rows_read: int
    dropped: dict[str, int]
    prob_columns: tuple[str, ...]
    label_column: str
    weight_column: str | None
    columns_chosen: str  # "flags" or "auto"
    class_names: tuple[str, ...]
    probs: np.ndarray  # (n,) for one column, (n, K) otherwise
    labels: np.ndarray  # int64 class indices
    sample_weight: np.ndarray | None
    logits: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    row_index: np.ndarray | None = None  # global row index of each row kept (SPEC 8 row identity)

    @property
    def n_rows(self) -> int:
        return len(self.labels)

    @property
    def n_rows_dropped(self) -> int:
        return sum(self.dropped.values())

    @property
    def n_classes(self) -> int:
        return 2 if self.probs.ndim == 1 else self.probs.shape[1]

    def describe(self) -> dict:
        """The input section of a JSON report (SPEC 7)."""
        return input_description(
            self, path=self.path, rows_read=self.n_rows_read, rows_used=self.n_rows, dropped=self.dropped
        )


def read_input(
    path: str,
    spec: ColumnSpec = ColumnSpec(),
    *,
    input_format: str | None = None,
    drop_invalid: bool = False,
) -> LoadedInput:
    """Read, map and validate one input (a file, ``-`` for standard input, a directory, a glob, a URI).

    Raises :class:`CalibcliError` naming the file, the row or column, what was found and what to do;
    with ``drop_invalid`` invalid rows are dropped instead and counted by reason.
    """
    (dataset,) = resolve_datasets([path])
    return read_dataset(dataset, spec, input_format=input_format, drop_invalid=drop_invalid)


def read_dataset(
    dataset: Dataset, spec: ColumnSpec = ColumnSpec(), *, input_format: str | None = None, drop_invalid: bool = False
) -> LoadedInput:
    """Every batch of ``dataset``'s stream, concatenated into one :class:`LoadedInput`."""
    stream = dataset.open(spec, input_format=input_format, drop_invalid=drop_invalid, batch_rows=WHOLE_FILE)
    batches = list(stream.batches())
    info = stream.describe()

    def joined(arrays: list) -> np.ndarray:  # (the weights are arrays when the stream has a weight column)
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

    return LoadedInput(
        path=stream.name,
        format=stream.format,
        n_rows_read=info["rows_read"],
        dropped=info["dropped_reasons"],
        prob_columns=stream.prob_columns,
        label_column=stream.label_column,
        weight_column=stream.weight_column,
        columns_chosen=stream.columns_chosen,
        class_names=stream.class_names,
        probs=joined([b.probs for b in batches]),
        labels=joined([b.labels for b in batches]),
        sample_weight=None if stream.weight_column is None else joined([b.sample_weight for b in batches]),
        logits=spec.logits,
        row_index=joined([b.row_index for b in batches]),
    )


def read_whole_table(path: str, input_format: str | None = None):
    """Every column of one input file (``-`` for standard input): ``(pyarrow table, format, display name)``.

    For commands that carry the whole table through (``recalibrate apply`` writes it back with the
    recalibrated columns); unreadable or empty inputs raise :class:`CalibcliError` as in :func:`read_input`.
    """
    (dataset,) = resolve_datasets([path])
    if dataset.kind == "directory":
        raise CalibcliError(f"{path}: is a directory: expected a file of predictions")
    if len(dataset.files) != 1:
        raise CalibcliError(f"{path}: names {len(dataset.files)} files: expected one file")
    (location,) = dataset.locations()
    display = dataset.files[0]
    (fmt,) = dataset.file_formats(input_format)  # standard input and pipes: by their first bytes
    try:
        table = formats.read_table(location, fmt)
    except CalibcliError:
        raise
    except Exception as exc:  # pyarrow raises many types for unreadable or truncated files
        raise formats.unreadable(display, fmt, exc, location) from None
    if table.num_rows == 0:
        raise formats.no_rows(display)
    return table, fmt, display
