"""Input formats: which format a path holds, and reading it with pyarrow in bounded batches.

CSV and TSV (also ``.gz``), Parquet, Arrow IPC / Feather (file and stream), JSON Lines (also ``.gz``).
Every reader yields pyarrow tables of at most ``batch_rows`` rows holding only the columns asked for,
so memory stays flat in the number of rows: Parquet through ``ParquetFile.iter_batches``, Arrow IPC
record batch by record batch (memory-mapped when local), CSV/TSV through ``pyarrow.csv.open_csv``.
JSON Lines files are the exception: each file is parsed whole, then cut into batches.

A *location* is a local path or a URI (:mod:`calibcli.io.filesystems`); ``.gz`` at its end means gzip.
pyarrow is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator

from calibcli.core.errors import CalibcliError, shown
from calibcli.io.filesystems import first_line, open_input_stream, open_random_access

FORMATS = ("csv", "tsv", "parquet", "feather", "jsonl")

EXTENSIONS = {
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
FORMAT_NAMES = {"csv": "CSV", "tsv": "TSV", "parquet": "Parquet", "feather": "Arrow IPC/Feather", "jsonl": "JSON Lines"}

CSV_NULL_VALUES = ("", "NA", "N/A", "n/a", "NULL", "null", "#N/A")


def detect_format(path: str, input_format: str | None) -> str:
    """The format named by ``{opt:input_format}``, else by the file's extension (``.gz`` looked through)."""
    if input_format is not None:
        fmt = input_format.lower()
        if fmt in ("arrow", "ipc"):
            fmt = "feather"
        if fmt in ("json", "ndjson"):
            fmt = "jsonl"
        if fmt not in FORMATS:
            raise CalibcliError(f"{{opt:input_format}} is {input_format!r}: expected one of {', '.join(FORMATS)}")
        return fmt
    if path == "-":
        return "csv"
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext not in EXTENSIONS:
        found = f"from the extension {ext!r}" if ext else "the file name has no extension"
        raise CalibcliError(
            f"{path}: cannot tell the format{' ' if ext else ': '}{found}: expected one of "
            f"{', '.join(sorted(EXTENSIONS))} (optionally .gz for text formats), or pass {{opt:input_format}}"
        )
    return EXTENSIONS[ext]


def sniff_format(location: str) -> str:
    """The format of standard input's bytes (spooled to ``location``) by their first bytes: Parquet
    (``PAR1``), Arrow IPC file (``ARROW1``), IPC stream (a continuation marker ``FF FF FF FF``) or
    Feather v1 (``FEA1``), JSON Lines (a first ``{``), TSV (a first line with tabs and no commas), else
    CSV. So ``calibcli recalibrate apply ... --output-format parquet | calibcli ece -`` needs no flag."""
    if is_gzip(location):  # a text format, compressed: look at its first decompressed bytes
        import gzip

        with gzip.open(location, "rb") as fh:
            head = fh.read(1 << 16)
        return "jsonl" if head.lstrip()[:1] == b"{" else "tsv" if _tabbed(head) else "csv"
    with open(location, "rb") as fh:
        head = fh.read(1 << 16)
    if head[:4] == b"PAR1":
        return "parquet"
    if head[:6] == b"ARROW1" or head[:4] in (b"\xff\xff\xff\xff", b"FEA1"):
        return "feather"
    if head.lstrip()[:1] == b"{":
        return "jsonl"
    return "tsv" if _tabbed(head) else "csv"


def _tabbed(head: bytes) -> bool:
    """A first line with tabs and no commas: TSV."""
    first = head.split(b"\n", 1)[0]
    return b"\t" in first and b"," not in first


#: Text formats: their cells are read as text and typed batch by batch (:mod:`calibcli.io.columns`).
TEXT_FORMATS = ("csv", "tsv")

#: Block size of the CSV/TSV reader (a row must fit in one block). pyarrow's streaming CSV reader reads
#: about 40 blocks ahead, so a CSV stream holds about 40 MiB whatever the file's length.
CSV_BLOCK_BYTES = 1 << 20


class FileProblem(Exception):
    """Something wrong with a file's bytes, found before pyarrow parses them; the caller words it as
    ``{path}: {message}`` (a format function knows where the bytes are, not how the file is reported)."""


#: Deepest nesting of a JSON document handed to pyarrow. Its parser recurses once per level and
#: crashes the process (SIGSEGV) somewhere beyond 10,000 levels; prediction files need 2 or 3.
MAX_JSON_DEPTH = 512

_JSON_CHUNK = 1 << 23


def json_depth_bound(chunk: bytes, depth: int) -> tuple[int, int]:
    """The deepest bracket nesting reached in ``chunk`` starting at ``depth`` (brackets inside strings
    counted too: an upper bound), and the depth at its end. One NumPy pass, no loop over bytes."""
    import numpy as np

    arr = np.frombuffer(chunk, dtype=np.uint8)
    step = ((arr == 0x5B) | (arr == 0x7B)).astype(np.int64) - ((arr == 0x5D) | (arr == 0x7D))
    if not len(step):
        return depth, depth
    level = np.cumsum(step) + depth
    return int(level.max()), int(level[-1])


def json_too_deep(data: bytes, limit: int) -> tuple[int, int] | None:
    """``(line, byte offset)`` where nesting first exceeds ``limit`` in JSON text, strings skipped
    exactly; None when it never does. A loop over bytes: run only where the bound says it may."""
    depth, in_string, escaped, line = 0, False, False, 1
    for offset, byte in enumerate(data):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return line, offset
        elif byte in (0x5D, 0x7D):
            depth -= 1
        if byte == 0x0A:
            line += 1
    return None


def check_json_depth(data: bytes | None = None, location: str | None = None, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`FileProblem` when JSON text (``data``, or the file at ``location``) nests deeper
    than ``limit``: pyarrow's parser would crash the process (a recursion in C++, not an exception)."""
    import pyarrow as pa

    def deep(chunk: bytes, line: int, offset: int) -> None:
        found = json_too_deep(chunk, limit)
        if found is not None:
            raise FileProblem(
                f"a JSON document nests deeper than {limit} levels (line {line + found[0] - 1}, byte "
                f"{offset + found[1]}): expected one flat record per line (a probability vector nests 2 levels); "
                "check the file"
            )

    if data is not None:
        if json_depth_bound(data, 0)[0] > limit:
            deep(data, 1, 0)
        return
    assert location is not None, "check_json_depth reads data or the file at location"
    source = open_input_stream(location, gzip=is_gzip(location))
    with pa.input_stream(source) if isinstance(source, str) else source as stream:
        depth, line, offset, previous = 0, 1, 0, b""
        while chunk := stream.read(_JSON_CHUNK):
            most, end = json_depth_bound(chunk, depth)
            if most > limit:  # scan exactly from the start of the previous chunk's last line
                cut = previous.rfind(b"\n") + 1
                start = previous[cut:]
                deep(start + chunk, line + previous.count(b"\n", 0, cut), offset - len(start))
            line += chunk.count(b"\n")
            offset += len(chunk)
            depth, previous = end, chunk


def _read_json(location: str):
    """A JSON Lines file as a pyarrow table, its nesting checked first (:func:`check_json_depth`)."""
    import pyarrow.json as pjson

    check_json_depth(location=location)
    return pjson.read_json(open_input_stream(location, gzip=is_gzip(location)))


def _header_names(head: bytes, fmt: str) -> tuple[list[str], int] | None:
    """When a CSV/TSV header is not UTF-8 text: its names with the bad bytes written as escapes
    (``caf\\xe9``) and how many lines the header takes; None for a UTF-8 header (read by pyarrow as usual).

    pyarrow rejects the whole file for one such byte in any column name; with the names given, the
    reader converts only the columns a command uses, so a bad byte in another column's name is harmless.
    """
    import csv
    import io

    first = head.split(b"\n", 1)[0]
    try:
        first.decode("utf-8")
        return None
    except UnicodeDecodeError:
        pass
    records = csv.reader(io.StringIO(head.decode("latin-1"), newline=""), delimiter="\t" if fmt == "tsv" else ",")
    record = next(records, None)
    if record is None:
        return None
    return [field.encode("latin-1").decode("utf-8", "backslashreplace") for field in record], records.line_num


def _csv_read_options(location: str, fmt: str, head: bytes | None = None):
    """The reader's options: the block size, and the column names when the header is not UTF-8."""
    import pyarrow.csv as pcsv

    named = _header_names(_head(location) if head is None else head, fmt)
    if named is None:
        return pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES)
    names, lines = named
    return pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES, column_names=names, skip_rows=lines)


def first_non_utf8(location: str) -> tuple[int, int, int] | None:
    """``(byte offset, line, byte)`` of the first byte of a text file that is not UTF-8; None when all are."""
    import pyarrow as pa

    source = open_input_stream(location, gzip=is_gzip(location))
    with pa.input_stream(source) if isinstance(source, str) else source as stream:
        offset, line, carry = 0, 1, b""  # carry: an unfinished character at the end of the last chunk
        while True:
            chunk = stream.read(CSV_BLOCK_BYTES)
            data = carry + chunk
            try:
                data.decode("utf-8")
                carry = b""
            except UnicodeDecodeError as exc:
                if not (chunk and exc.end == len(data) and exc.reason == "unexpected end of data"):
                    return offset + exc.start, line + data.count(b"\n", 0, exc.start), data[exc.start]
                carry = data[exc.start :]
            if not chunk:
                return None
            used = len(data) - len(carry)
            line += data.count(b"\n", 0, used)
            offset += used


class MissingColumns(Exception):
    """The file lacks some of the columns asked for (the caller words the message)."""

    def __init__(self, missing: list[str], names: list[str]):
        super().__init__(", ".join(missing))
        self.missing = missing
        self.names = names


def is_gzip(location: str) -> bool:
    return location.lower().endswith(".gz")


def _csv_options(fmt: str, columns: list[str] | None = None):
    """Parse and convert options of the CSV/TSV reader: an empty cell (and NA, NULL, ...) is null, reported
    as "empty"; the text "nan" stays a NaN number. ``columns`` are read as text (typed later, batch by batch:
    a streaming reader can type a column only from its first block)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    parse = pcsv.ParseOptions(delimiter="\t" if fmt == "tsv" else ",")
    convert = pcsv.ConvertOptions(
        include_columns=columns or [],
        column_types={c: pa.string() for c in columns or ()},
        null_values=list(CSV_NULL_VALUES),
        strings_can_be_null=True,
    )
    return parse, convert


def _open_csv(location: str, fmt: str, columns: list[str] | None = None):
    import pyarrow.csv as pcsv

    parse, convert = _csv_options(fmt, columns)
    read = _csv_read_options(
        location, fmt
    )  # reads the head: before the stream is opened (a URI's stream may be shared)
    return pcsv.open_csv(
        open_input_stream(location, gzip=is_gzip(location)),
        parse_options=parse,
        convert_options=convert,
        read_options=read,
    )


def _is_feather_v1(location: str) -> bool:
    if os.path.exists(location):
        with open(location, "rb") as fh:
            return fh.read(4) == b"FEA1"
    return False


def _ipc_source(location: str):
    """An Arrow IPC file to read: memory-mapped when local (record batches are then read without copying)."""
    import pyarrow as pa

    return pa.memory_map(location) if os.path.exists(location) else open_random_access(location)


def read_schema(location: str, fmt: str):
    """The file's columns as a pyarrow schema, reading as little as the format allows: the footer of a
    Parquet file, the schema message of an Arrow file, the first lines (about a megabyte) of a CSV or
    JSON Lines file, whose types are then those pyarrow infers from these lines. A name given to two
    columns is a :class:`FileProblem` (pyarrow cannot select either of them)."""
    schema = _read_schema(location, fmt)
    names = list(schema.names)
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise FileProblem(
            f"column name {shown(twice)} appears more than once in the header: expected unique column "
            f"names; rename the duplicates"
        )
    return schema


def _read_schema(location: str, fmt: str):
    import pyarrow as pa

    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(open_random_access(location))
    if fmt == "feather":
        import pyarrow.feather as feather
        import pyarrow.ipc as ipc

        if _is_feather_v1(location):
            return feather.read_table(location).schema
        try:
            with ipc.open_file(open_random_access(location)) as reader:
                return reader.schema
        except pa.ArrowInvalid:  # not the IPC file format: the IPC stream format (what a pipe carries)
            with ipc.open_stream(open_random_access(location)) as reader:
                return reader.schema
    if fmt in TEXT_FORMATS:
        import pyarrow.csv as pcsv

        parse, convert = _csv_options(fmt)
        head = _head(location)
        return pcsv.read_csv(
            pa.BufferReader(head),
            parse_options=parse,
            convert_options=convert,
            read_options=_csv_read_options(location, fmt, head),
        ).schema
    import pyarrow.json as pjson

    head = _head(location)
    check_json_depth(head)
    return pjson.read_json(pa.BufferReader(head)).schema


def _head(location: str) -> bytes:
    """The first lines of a text file, decompressed (about a block's worth, whole lines; all of a short
    file): enough to learn its columns without starting a streaming reader, which reads blocks ahead."""
    import pyarrow as pa

    source = open_input_stream(location, gzip=is_gzip(location))
    with pa.input_stream(source) if isinstance(source, str) else source as stream:
        head = chunk = stream.read(CSV_BLOCK_BYTES)
        while len(chunk) == CSV_BLOCK_BYTES and b"\n" not in head:
            chunk = stream.read(CSV_BLOCK_BYTES)
            head += chunk
        if len(chunk) < CSV_BLOCK_BYTES:  # the whole file
            return head
    return head[: head.rindex(b"\n") + 1] if b"\n" in head else head


def _check_columns(schema, columns: list[str]) -> None:
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise MissingColumns(missing, list(schema.names))


def iter_tables(
    location: str, fmt: str, columns: list[str], batch_rows: int, row_groups: tuple[int, ...] | None = None
) -> Generator:
    """The rows of ``columns`` as pyarrow tables of exactly ``batch_rows`` rows (the last one fewer).

    ``row_groups`` restricts a Parquet file to those row groups. A whole Parquet file is read run by run of its
    row groups (:func:`row_group_runs`, the runs a stream's fragments are made of), a batch ending where a run
    ends: so a file's batches are those of its fragments read one after the other, and an engine that reads
    fragments as tasks adds up the same batches as one stream (SPEC 8: the same numbers to the last bit). Columns
    of the text formats come as text. Raises :class:`MissingColumns` before the first table when the file lacks
    a column.
    """
    return _rechunk(_record_batches(location, fmt, columns, batch_rows, row_groups, runs=True), batch_rows)


def row_group_runs(sizes: list[int], target: int) -> list[tuple[int, ...]]:
    """Consecutive row groups in runs of at most ``target`` rows (a larger row group alone)."""
    runs: list[tuple[int, ...]] = []
    current: list[int] = []
    rows = 0
    for g, size in enumerate(sizes):
        if current and rows + size > target:
            runs.append(tuple(current))
            current, rows = [], 0
        current.append(g)
        rows += size
    runs.append(tuple(current))
    return runs


def _record_batches(
    location: str, fmt: str, columns: list[str], batch_rows: int, row_groups, runs: bool = False
) -> Iterator:
    """The file's record batches; with ``runs``, a whole Parquet file's have ``None`` after each run of row groups
    (:func:`row_group_runs`), where :func:`_rechunk` ends a table."""
    import pyarrow as pa

    if fmt == "parquet":
        import pyarrow.parquet as pq

        with pq.ParquetFile(open_random_access(location), pre_buffer=False) as parquet:
            _check_columns(parquet.schema_arrow, columns)
            ends: set[int] = set()
            if runs and row_groups is None:
                sizes = [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)]
                ends = {run[-1] for run in row_group_runs(sizes, batch_rows)}
            # One row group at a time, without pre-buffering: pyarrow otherwise reads ahead across a large
            # file's row groups, and memory grows with the file (not with the batch) on big shards.
            for group in range(parquet.num_row_groups) if row_groups is None else row_groups:
                rows = parquet.metadata.row_group(group).num_rows
                if rows:
                    yield from parquet.iter_batches(
                        batch_size=max(1, min(batch_rows, rows)), columns=columns, row_groups=[group]
                    )
                if group in ends:
                    yield None
        return
    if fmt == "feather":
        import pyarrow.feather as feather
        import pyarrow.ipc as ipc

        if _is_feather_v1(location):  # the legacy Feather format has no batches: read it whole
            table = feather.read_table(location)
            _check_columns(table.schema, columns)
            yield from table.select(columns).to_batches()
            return
        try:
            reader = ipc.open_file(_ipc_source(location))
        except pa.ArrowInvalid:  # not the IPC file format: the IPC stream format (what a pipe carries)
            reader = ipc.open_stream(_ipc_source(location))
        with reader:
            _check_columns(reader.schema, columns)
            if isinstance(reader, ipc.RecordBatchFileReader):
                for i in range(reader.num_record_batches):
                    yield reader.get_batch(i).select(columns)
            else:
                for batch in reader:
                    yield batch.select(columns)
        return
    if fmt in TEXT_FORMATS:
        _check_columns(read_schema(location, fmt), columns)
        with _open_csv(location, fmt, columns) as reader:
            yield from reader
        return
    table = _read_json(location)
    _check_columns(table.schema, columns)
    yield from table.select(columns).to_batches(max_chunksize=batch_rows)


def _rechunk(batches: Iterable, batch_rows: int) -> Generator:
    """Record batches regrouped into tables of exactly ``batch_rows`` rows (the last one fewer, and the last one
    before a ``None``: the end of a run of row groups), without copying: a table may hold several record
    batches, and a record batch may be sliced across tables."""
    import pyarrow as pa

    pending: list = []
    count = 0
    for batch in batches:
        if batch is None:  # the end of a run of row groups (_record_batches): the table ends here
            if count:
                yield pa.Table.from_batches(pending)
            pending, count = [], 0
            continue
        while batch.num_rows:
            take = min(batch_rows - count, batch.num_rows)
            pending.append(batch.slice(0, take))
            count += take
            batch = batch.slice(take)
            if count == batch_rows:
                yield pa.Table.from_batches(pending)
                pending, count = [], 0
    if count:
        yield pa.Table.from_batches(pending)


def count_rows(location: str, fmt: str) -> int:
    """The file's number of data rows: from the metadata of Parquet and Arrow IPC files, by reading otherwise."""
    import pyarrow as pa

    if fmt == "parquet":
        import pyarrow.parquet as pq

        with pq.ParquetFile(open_random_access(location)) as parquet:
            return parquet.metadata.num_rows
    if fmt == "feather" and not _is_feather_v1(location):
        import pyarrow.ipc as ipc

        try:
            with ipc.open_file(open_random_access(location)) as reader:
                return reader.count_rows()
        except pa.ArrowInvalid:
            pass
    first = read_schema(location, fmt).names[:1]
    return sum(t.num_rows for t in _record_batches(location, fmt, first, 1 << 20, None))


def parquet_row_groups(location: str) -> list[int]:
    """The number of rows of each row group of a Parquet file (from its footer)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(open_random_access(location)) as parquet:
        meta = parquet.metadata
        return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def read_table(location: str, fmt: str):
    """Every column of one file as a pyarrow Table (CSV columns typed by pyarrow's inference over the file),
    for commands that write the table back (``recalibrate apply``)."""
    import pyarrow as pa

    if fmt in TEXT_FORMATS:
        import pyarrow.csv as pcsv

        parse, convert = _csv_options(fmt)
        read = _csv_read_options(location, fmt)
        return pcsv.read_csv(
            open_input_stream(location, gzip=is_gzip(location)),
            parse_options=parse,
            convert_options=convert,
            read_options=read,
        )
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # ParquetFile rather than pq.read_table: the latter goes through pyarrow.dataset, whose
        # import (it pulls in pandas) costs about 0.25 s of every run.
        with pq.ParquetFile(open_random_access(location)) as parquet:
            return parquet.read()
    if fmt == "feather":
        import pyarrow.feather as feather
        import pyarrow.ipc as ipc

        try:
            return feather.read_table(open_random_access(location))
        except pa.ArrowInvalid:  # the IPC stream format
            with ipc.open_stream(open_random_access(location)) as reader:
                return reader.read_all()
    return _read_json(location)


def iter_full_tables(location: str, fmt: str, batch_rows: int, column_types: dict | None = None) -> Iterator:
    """Every column of one file as pyarrow tables of ``batch_rows`` rows (the last one fewer), for a
    command that writes the rows back (``recalibrate apply``): memory stays that of a batch.

    CSV/TSV columns get ``column_types`` (pyarrow types by name; typically :func:`read_schema`'s, from the
    first lines), else pyarrow's inference on the first block; a later cell that does not fit its column's
    type is a read error. JSON Lines is parsed whole.
    """
    if fmt in TEXT_FORMATS:
        import pyarrow.csv as pcsv

        parse, convert = _csv_options(fmt)
        convert.column_types = dict(column_types or {})
        read = _csv_read_options(location, fmt)
        reader = pcsv.open_csv(
            open_input_stream(location, gzip=is_gzip(location)),
            parse_options=parse,
            convert_options=convert,
            read_options=read,
        )
        return _rechunk(_closing(reader), batch_rows)
    if fmt == "parquet" or fmt == "feather":
        return _rechunk(
            _record_batches(location, fmt, list(read_schema(location, fmt).names), batch_rows, None), batch_rows
        )
    table = _read_json(location)
    return _rechunk(iter(table.to_batches(max_chunksize=batch_rows)), batch_rows)


def _closing(reader) -> Iterator:
    with reader:
        yield from reader


def no_rows(display: str) -> CalibcliError:
    return CalibcliError(f"{display}: the file has no data rows: expected at least one prediction")


def _encoding_error(exc: Exception) -> bool:
    text = str(exc)
    return isinstance(exc, UnicodeDecodeError) or "UTF8" in text or "UTF-8" in text or "encoding" in text.lower()


def unreadable(display: str, fmt: str, exc: Exception, location: str | None = None) -> CalibcliError:
    """The message for a file pyarrow could not read: what :class:`FileProblem` says, where a text file
    stops being UTF-8 (found by reading it again), or pyarrow's own first line."""
    if isinstance(exc, FileProblem):
        return CalibcliError(f"{display}: {exc}")
    if location is not None and fmt in (*TEXT_FORMATS, "jsonl") and _encoding_error(exc):
        try:
            found = first_non_utf8(location)
        except Exception:  # the file went away or cannot be read again: keep pyarrow's message
            found = None
        if found is not None:
            offset, line, byte = found
            return CalibcliError(
                f"{display}: byte 0x{byte:02x} on line {line} (byte offset {offset}) is not UTF-8 text: the file is in "
                f"another encoding (such as Latin-1 or Windows-1252); convert it to UTF-8, for example "
                f"iconv -f latin1 -t utf-8 FILE > FILE.utf8.csv, and read the converted file"
            )
    return CalibcliError(
        f"{display}: cannot read as {FORMAT_NAMES[fmt]} ({first_line(exc)}): check that the file is complete and "
        f"in that format, or pass {{opt:input_format}}"
    )
