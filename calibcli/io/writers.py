"""Writing tables batch by batch: CSV, TSV, Parquet, Arrow IPC, JSON Lines, to a file or to stdout.

:func:`write_table_output` is the one place a command writes a data table (``recalibrate apply``). It
takes an iterator of pyarrow tables (or record batches) and writes each as it comes, so memory stays
that of one batch whatever the number of rows:

- CSV / TSV through ``pyarrow.csv.CSVWriter`` (the header once), ``.gz`` gzip-compressed;
- Parquet through ``pyarrow.parquet.ParquetWriter`` (one row group per batch);
- Arrow IPC: the *file* format (Feather v2) for a file, the *stream* format on stdout, since a pipe
  cannot be read back to find a file footer (``calibcli ece - --input-format feather`` reads either);
- JSON Lines, one object per row (``.gz`` gzip-compressed).

A file is written atomically (:func:`calibcli.core.outputs.open_output`): into a temporary file beside the
target, renamed over it only once the last batch is written; an error (or Ctrl-C) leaves no file behind.
``-`` writes to standard output as the batches come, and nothing is written before the first batch, so an
input that fails at once leaves stdout empty.

pyarrow is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from calibcli.core.documents import jsonable
from calibcli.core.errors import CalibcliError
from calibcli.core.outputs import is_stream, open_output
from calibcli.io.formats import detect_format

#: The formats a table can be written in (``{opt:output_format}``).
OUTPUT_FORMATS = ("csv", "tsv", "parquet", "feather", "jsonl")

#: Text formats, which can be gzip-compressed (a path ending in ``.gz``).
TEXT_OUTPUT_FORMATS = ("csv", "tsv", "jsonl")


def output_format(path: str, fmt: str | None, default: str) -> str:
    """The format to write ``path`` in: ``fmt`` when given, else the file's extension, else ``default``
    (``-``, stdout: ``default`` too)."""
    if fmt is not None:
        name = fmt.lower()
        name = {"arrow": "feather", "ipc": "feather", "json": "jsonl", "ndjson": "jsonl"}.get(name, name)
        if name not in OUTPUT_FORMATS:
            raise CalibcliError(f"{{opt:output_format}} is {fmt!r}: expected one of {', '.join(OUTPUT_FORMATS)}")
        return name
    if path == "-":
        return default
    try:
        return detect_format(path, None)
    except CalibcliError:
        return default


def _is_list(t) -> bool:
    import pyarrow as pa

    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def check_writable(schema, fmt: str, where: str) -> None:
    """A vector column (a list per row) cannot go into CSV or TSV: say so before anything is written."""
    if fmt in ("csv", "tsv"):
        lists = [f.name for f in schema if _is_list(f.type)]
        if lists:
            instead = (
                "{opt:output_format} parquet, feather or jsonl" if where == "stdout" else ".parquet, .feather or .jsonl"
            )
            raise CalibcliError(
                f"{where}: column {lists[0]!r} holds a vector per row, which {fmt.upper()} cannot "
                f"store: write {instead} instead"
            )


class _BatchWriter:
    """Writes batches of one schema in one format to a binary file object."""

    def __init__(self, sink, fmt: str, schema, *, gzip: bool, stream: bool):
        import pyarrow as pa

        self.fmt = fmt
        self._gzip = None
        if gzip and fmt in TEXT_OUTPUT_FORMATS:
            import gzip as _gzip

            self._gzip = _gzip.GzipFile(fileobj=sink, mode="wb", mtime=0)  # mtime 0: the same bytes every run
            sink = self._gzip
        self._sink = sink
        self._schema = schema
        if fmt in ("csv", "tsv"):
            import pyarrow.csv as pcsv

            delimiter = "\t" if fmt == "tsv" else ","
            plain = not any(ch in name for name in schema.names for ch in (delimiter, '"', "\n", "\r"))
            self._writer = pcsv.CSVWriter(
                sink,
                schema,
                write_options=pcsv.WriteOptions(delimiter=delimiter, quoting_header="none" if plain else "needed"),
            )
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(sink, schema)
        elif fmt == "feather":
            import pyarrow.ipc as ipc

            self._writer = (ipc.new_stream if stream else ipc.new_file)(pa.PythonFile(sink, mode="w"), schema)
        else:
            self._writer = None

    def write(self, table) -> None:
        if self.fmt == "jsonl":
            text = "".join(json.dumps(jsonable(row), allow_nan=False) + "\n" for row in table.to_pylist())
            self._sink.write(text.encode("utf-8"))
        elif self.fmt in ("csv", "tsv"):
            self._writer.write(table)
        else:
            self._writer.write_table(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._gzip is not None:
            self._gzip.close()


def write_table_output(path: str, fmt: str, tables: Iterable, *, schema=None, option: str | None = "output") -> int:
    """Write every table of ``tables`` to ``path`` (``-``: standard output) in ``fmt``; the number of rows.

    ``schema`` is the output's schema (default: the first table's); every table is cast to it. The
    iterator is consumed lazily, one table in memory at a time; an error raised by it stops the writing:
    a file is then not created (an existing one is left as it was), stdout keeps what was written.
    A ``.gz`` path compresses a text format. Where and how the bytes go (stdout, a temporary file renamed
    at the end, a link's target, a device or FIFO written straight, every write checked) is
    :func:`calibcli.core.outputs.open_output`'s; ``option`` names the output in its messages. Arrow IPC goes out
    in the stream format to stdout, a device or a FIFO (nothing to seek back to), else in the file format.
    The tables' own errors pass through unchanged.
    """
    if fmt not in OUTPUT_FORMATS:
        raise CalibcliError(f"{{opt:output_format}} is {fmt!r}: expected one of {', '.join(OUTPUT_FORMATS)}")
    tables = iter(tables)
    first = next(tables, None)
    if first is None:
        raise CalibcliError(f"{'stdout' if path == '-' else path}: nothing to write")
    schema = first.schema if schema is None else schema
    check_writable(schema, fmt, "stdout" if path == "-" else path)
    stream = is_stream(path)
    gz = not stream and path.lower().endswith(".gz")
    with open_output(path, option) as sink:
        return _write_all(sink, fmt, schema, first, tables, gzip=gz, stream=stream)


def _write_all(sink, fmt: str, schema, first, rest, *, gzip: bool, stream: bool) -> int:
    writer = _BatchWriter(sink, fmt, schema, gzip=gzip, stream=stream)
    rows = 0
    try:
        for table in _chain(first, rest):
            table = _as_table(table)
            if table.schema != schema:
                table = table.cast(schema)
            writer.write(table)
            rows += table.num_rows
    finally:
        writer.close()
    sink.flush()
    return rows


def _as_table(batch):
    import pyarrow as pa

    return pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch


def _chain(first, rest):
    yield first
    yield from rest
