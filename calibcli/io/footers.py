"""What an engine reads of a dataset's files before their rows: their row groups' sizes or row counts (the
Parquet footer), read for many files at once (:meth:`calibcli.io.sources.Stream.fragments`)."""

from __future__ import annotations

from calibcli.core.errors import CalibcliError
from calibcli.io import formats


def _guarded(path: str, fmt: str, read, *args):
    """``read(*args)``, with pyarrow's errors turned into one-line messages naming the file."""
    try:
        return read(*args)
    except CalibcliError:
        raise
    except Exception as exc:
        raise formats.unreadable(path, fmt, exc, args[0] if args and isinstance(args[0], str) else None) from None


def file_sizes(path: str, location: str, fmt: str):
    """What :meth:`Stream.fragments` needs of one file: its row groups' sizes (Parquet, from the footer) or its
    number of rows (other formats), or the :class:`~calibcli.core.errors.CalibcliError` saying why it cannot be read
    (returned, not raised: it is raised in file order)."""
    try:
        if fmt == "parquet":
            return _guarded(path, fmt, formats.parquet_row_groups, location)
        return _guarded(path, fmt, formats.count_rows, location, fmt)
    except CalibcliError as exc:
        return exc


#: Threads reading footers at once (each is a small read, mostly waiting on storage).
FOOTER_THREADS = 16


def map_in_threads(function, files: list[tuple]) -> list:
    """``function(*file)`` for every file, in a pool of up to :data:`FOOTER_THREADS` threads (pyarrow releases the
    GIL while it reads), in order; one file alone is read in this thread."""
    if len(files) <= 1:
        return [function(*f) for f in files]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, len(files)), thread_name_prefix="calibcli-footer") as pool:
        return list(pool.map(lambda f: function(*f), files))


#: (defined beside the reader, which ends a whole file's batches where these runs end)
_row_group_runs = formats.row_group_runs
