"""The local engine: open every dataset named on the command line as a stream of validated batches."""

from __future__ import annotations

from typing import Iterator


def open_streams(files: list[str], spec, *, input_format: str | None, drop_invalid: bool, pool: bool,
                 batch_rows: int, group_by: tuple[str, ...]) -> Iterator:
    """One stream per dataset (a file, a directory, a glob, stdin; all of them with ``pool``), in argument order.

    Every dataset is resolved before the first is read, so a missing path fails before any work.
    """
    from calibcli.io import resolve_datasets

    datasets = resolve_datasets(list(files), pool=pool)
    for dataset in datasets:
        yield dataset.open(spec, input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows,
                           group_by=tuple(group_by))


class LocalEngine:
    """Streams each dataset's batches through the accumulators in this process."""

    name = "local"
    workers = None

    def run(self, stream, new) -> tuple[list[tuple[dict | None, object]], dict]:
        """The stream's entries ``(group values or None, accumulator)`` and its report input section."""
        from calibcli.evaluation import run_local

        entries = run_local(stream, new)
        return entries, stream.describe()
