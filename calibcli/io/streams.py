"""Where a run's rows come from: the datasets named on the command line (or by the library), opened as
streams of validated batches (:class:`~calibcli.io.sources.Stream`), one per dataset, in argument order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from calibcli.io.columns import ColumnSpec
from calibcli.io.resolve import resolve_datasets
from calibcli.io.sources import DEFAULT_BATCH_ROWS
from calibcli.io.windows import Windowing, windowed


@dataclass(frozen=True)
class Sources:
    """The sources of a run and how to read them: the shared options of every streaming command
    (``FILES``, the column options, ``--input-format``, ``--drop-invalid``, ``--pool``, ``--batch-rows``,
    ``--group-by``)."""

    files: tuple[str, ...]
    spec: ColumnSpec
    input_format: str | None = None
    drop_invalid: bool = False
    pool: bool = False
    batch_rows: int = DEFAULT_BATCH_ROWS
    group_by: tuple[str, ...] = ()
    segment_by: tuple[str, ...] = ()  # the audit's segment columns, read beside every row (no split)
    windows: Windowing | None = None  # calibcli monitor's time windows: the first group key (SPEC 12)

    def open(self) -> Iterator:
        """One stream per dataset (a file, a directory, a glob, stdin; all of them with ``pool``), in argument
        order. Every dataset is resolved before the first is read, so a missing path fails before any work."""
        for dataset in resolve_datasets(list(self.files), pool=self.pool):
            stream = dataset.open(
                self.spec,
                input_format=self.input_format,
                drop_invalid=self.drop_invalid,
                batch_rows=self.batch_rows,
                group_by=tuple(self.group_by),
                segment_by=tuple(self.segment_by),
            )
            yield stream if self.windows is None else windowed(stream, self.windows)
