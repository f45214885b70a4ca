"""Input formats: which format a path holds, and reading it with pyarrow.

CSV and TSV (also ``.gz``), Parquet, Arrow IPC / Feather (file and stream), JSON Lines (also ``.gz``).
"""

from __future__ import annotations

import os
import sys

from calibcli.errors import CalibcliError

FORMATS = ("csv", "tsv", "parquet", "feather", "jsonl")

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".feather": "feather",
    ".arrow": "feather",
    ".ipc": "feather",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
_FORMAT_NAMES = {"csv": "CSV", "tsv": "TSV", "parquet": "Parquet", "feather": "Arrow IPC/Feather", "jsonl": "JSON Lines"}

CSV_NULL_VALUES = ("", "NA", "N/A", "n/a", "NULL", "null", "#N/A")


def detect_format(path: str, input_format: str | None) -> str:
    """The format named by ``--input-format``, else by the file's extension (``.gz`` looked through)."""
    if input_format is not None:
        fmt = input_format.lower()
        if fmt in ("arrow", "ipc"):
            fmt = "feather"
        if fmt in ("json", "ndjson"):
            fmt = "jsonl"
        if fmt not in FORMATS:
            raise CalibcliError(f"--input-format is {input_format!r}: expected one of {', '.join(FORMATS)}")
        return fmt
    if path == "-":
        return "csv"
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext not in _EXTENSIONS:
        found = f"from the extension {ext!r}" if ext else "the file name has no extension"
        raise CalibcliError(
            f"{path}: cannot tell the format{' ' if ext else ': '}{found}: expected one of "
            f"{', '.join(sorted(_EXTENSIONS))} (optionally .gz for text formats), or pass --input-format"
        )
    return _EXTENSIONS[ext]


def _source(path: str):
    """A path, or a buffer holding standard input."""
    if path == "-":
        import pyarrow as pa

        return pa.BufferReader(sys.stdin.buffer.read())
    if not os.path.exists(path):
        raise CalibcliError(f"{path}: no such file: check the path")
    if os.path.isdir(path):
        raise CalibcliError(f"{path}: is a directory: expected a file of predictions")
    return path


def read_schema_names(path_or_buf, fmt: str):
    """Column names and pyarrow types without reading the data (Parquet, Arrow); None otherwise."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path_or_buf)
    if fmt == "feather" and isinstance(path_or_buf, str):
        import pyarrow.ipc as ipc

        try:
            with ipc.open_file(path_or_buf) as reader:
                return reader.schema
        except Exception:
            with open(path_or_buf, "rb") as fh, ipc.open_stream(fh) as reader:
                return reader.schema
    return None


def read_table(path_or_buf, fmt: str, columns: list[str] | None = None):
    """Read a pyarrow Table of ``columns`` (all when None)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # ParquetFile rather than pq.read_table: the latter goes through pyarrow.dataset, whose
        # import (it pulls in pandas) costs about 0.25 s of every run.
        with pq.ParquetFile(path_or_buf) as parquet:
            return parquet.read(columns=columns)
    if fmt == "feather":
        import pyarrow as pa
        import pyarrow.feather as feather
        import pyarrow.ipc as ipc

        try:
            return feather.read_table(path_or_buf, columns=columns)
        except pa.ArrowInvalid:  # not the IPC file format: the IPC stream format (what a pipe carries)
            if not isinstance(path_or_buf, str):
                path_or_buf.seek(0)
            with ipc.open_stream(pa.OSFile(path_or_buf) if isinstance(path_or_buf, str) else path_or_buf) as reader:
                table = reader.read_all()
            return table.select(columns) if columns else table
    if fmt in ("csv", "tsv"):
        import pyarrow.csv as pcsv

        parse = pcsv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",")
        # An empty cell is null ("empty" in messages); the text "nan" stays a NaN number.
        convert = pcsv.ConvertOptions(
            include_columns=columns or [], null_values=list(CSV_NULL_VALUES), strings_can_be_null=True
        )
        src = path_or_buf
        if isinstance(src, str) and src.lower().endswith(".gz"):
            import pyarrow as pa

            src = pa.input_stream(src, compression="gzip")
        elif not isinstance(src, str) and _is_gzip(src):
            import pyarrow as pa

            src = pa.input_stream(src, compression="gzip")
        return pcsv.read_csv(src, parse_options=parse, convert_options=convert)
    import pyarrow.json as pjson

    src = path_or_buf
    if (isinstance(src, str) and src.lower().endswith(".gz")) or (not isinstance(src, str) and _is_gzip(src)):
        import pyarrow as pa

        src = pa.input_stream(src, compression="gzip")
    table = pjson.read_json(src)
    return table.select(columns) if columns else table


def _is_gzip(buf) -> bool:
    head = buf.read(2)
    buf.seek(0)
    return head == b"\x1f\x8b"


def _no_rows(display: str) -> CalibcliError:
    return CalibcliError(f"{display}: the file has no data rows: expected at least one prediction")


def _unreadable(display: str, fmt: str, exc: Exception) -> CalibcliError:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return CalibcliError(
        f"{display}: cannot read as {_FORMAT_NAMES[fmt]} ({message}): check that the file is complete and "
        f"in that format, or pass --input-format"
    )

