"""Datasets and their streams of validated batches (SPEC 8): files, directories, globs, URIs, stdin.

One command-line argument is one :class:`Dataset` (all of them with ``pool=True``): a file; ``-``
(standard input); a directory (every file of a known format below it, hidden and ``_``-prefixed
names skipped, ``key=value`` directories read as hive partitions); a glob pattern, quoted so that
we expand it (``'shards/*.parquet'``, ``**`` for any depth); or a URI (``s3://``, ``gs://``,
``file://``, ...), a file or a prefix of files, read through ``pyarrow.fs`` or fsspec.

**Row identity.** The files of a dataset are ordered by their sorted paths (relative to the
directory for a directory, whatever order they were given in when pooled), each file's rows in
order; a row's global index is its position in that order. Invalid rows dropped with
``drop_invalid`` keep their index. A :class:`Fragment` (a file, or a run of a Parquet file's row
groups) knows its first row's global index from the files' metadata where the format has it.

:meth:`Dataset.open` fixes, from the first file, which columns hold what and the classes
(:class:`calibcli.io.columns.ReadPlan`); :meth:`Stream.batches` then reads every file in bounded
memory, as often as asked (standard input and pipes are copied to a temporary file first, in chunks,
and the copy removed when the dataset is no longer used or at exit).
"""

from __future__ import annotations

import os
import sys
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

from calibcli.core.errors import CalibcliError, shown, shown_names
from calibcli.core.validation import weight_scale
from calibcli.io import formats
from calibcli.io.checks import REASONS
from calibcli.io.columns import (
    ColumnSpec,
    ReadPlan,
    group_kind,
    resolve_columns,
    vector_column,
)
from calibcli.io.footers import _guarded, _row_group_runs, file_sizes, map_in_threads
from calibcli.io.fragments import Batch, Fragment, RowCounts, _guarded_iter

#: Rows per batch by default: 2^20 rows of K probabilities take 8K MiB.
DEFAULT_BATCH_ROWS = 1 << 17  # 1 MiB of predictions: memory stays near its floor, throughput near the bare read

#: How standard input is named in reports and messages.
STDIN = "<stdin>"

_SPOOL_CHUNK = 1 << 20
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


# ---------------------------------------------------------------------------------------------
# Streams


@dataclass(frozen=True)
class _Source:
    """One file of a dataset."""

    path: str  # as reported
    location: str  # where the bytes are: the path, a URI, or "-" for standard input
    partition: tuple[tuple[str, str | None], ...] = ()  # key=value directories above it (raw text)
    single_pass: bool = False  # standard input or a pipe: copied to a temporary file before reading


class Stream:
    """An opened dataset: its columns and classes fixed from the first file, its rows read on demand."""

    def __init__(self, dataset: Dataset, plan: ReadPlan, files: list[tuple[_Source, str, str, dict]]):
        self.dataset = dataset  # keeps the temporary copy of stdin alive while the stream is used
        self.plan = plan
        self._files = files  # (source, location, format, group-by partition values)
        self._counts: RowCounts | None = None
        self.name = dataset.name
        self.format = ", ".join(dict.fromkeys(fmt for _, _, fmt, _ in files))
        self.prob_columns = plan.columns.prob_columns
        self.label_column = plan.columns.label_column
        self.weight_column = plan.columns.weight_column
        self.columns_chosen = plan.columns.chosen
        self.class_names = plan.class_names
        self.n_classes = plan.n_classes
        self.logits = plan.logits
        self.group_by = plan.group_by
        self.segment_columns = plan.segment_by

    @property
    def files(self) -> list[str]:
        return [source.path for source, _, _, _ in self._files]

    def _fragment(
        self, i: int, row_offset: int, n_rows: int | None = None, row_groups=None, first_file_row: int = 0
    ) -> Fragment:
        source, location, fmt, partition = self._files[i]
        return Fragment(
            source.path,
            row_offset,
            n_rows,
            row_groups,
            fmt,
            location,
            self.plan,
            tuple(partition.items()),
            first_file_row,
        )

    def batches(self) -> Iterator[Batch]:
        """Every file's validated batches in row-identity order; can be iterated again (same batches).

        After the last batch the dataset as a whole is checked (:meth:`check_counts`), and
        :meth:`describe` can report it.
        """
        counts = RowCounts()
        offset = 0
        for i in range(len(self._files)):
            before = counts.rows_read
            yield from self._fragment(i, offset).batches(counts)
            offset += counts.rows_read - before
        self.check_counts(counts)
        self._counts = counts

    def fragments(self, *, split_row_groups: bool = True, map_files=None) -> list[Fragment]:
        """Independent pieces of the stream in row-identity order, each with its global row offset.

        A Parquet file with several row groups is split into runs of consecutive row groups of at most
        ``batch_rows`` rows (a larger row group is a run of its own) when ``split_row_groups``. Offsets
        come from the footers of Parquet files and Arrow IPC files; other formats are read to count
        their rows.

        The files' sizes are read by ``map_files(file_sizes, [(path, location, format)])``, which returns
        :func:`file_sizes` of each file in order (an error as the value): by default in a pool of threads
        here (:func:`map_in_threads`: a footer is a round trip to storage); a distributed engine may read
        them in tasks on its cluster. The first file that cannot be read, in order, raises its error.
        """
        out, error = self.readable_fragments(split_row_groups=split_row_groups, map_files=map_files)
        if error is not None:
            raise error
        return out

    def readable_fragments(
        self, *, split_row_groups: bool = True, map_files=None
    ) -> tuple[list[Fragment], BaseException | None]:
        """:meth:`fragments` up to the first file that cannot be read, and that file's error (None when every
        file can be read): an engine reads those files' rows first, as the local engine does, and raises the
        error at its turn."""
        files = [(source.path, location, fmt) for source, location, fmt, _ in self._files]
        listed = (map_files or map_in_threads)(file_sizes, files)
        out: list[Fragment] = []
        offset = 0
        for i, ((_, _, fmt), sizes) in enumerate(zip(files, listed, strict=True)):
            if isinstance(sizes, BaseException):
                return out, sizes
            if fmt == "parquet":
                runs = _row_group_runs(sizes, self.plan.batch_rows) if split_row_groups else [tuple(range(len(sizes)))]
                file_row = 0
                for run in runs:
                    n = sum(sizes[g] for g in run)
                    out.append(self._fragment(i, offset, n, run if len(runs) > 1 else None, file_row))
                    offset += n
                    file_row += n
            else:
                out.append(self._fragment(i, offset, sizes))
                offset += sizes
        return out, None

    def check_counts(self, counts: RowCounts) -> None:
        """The checks of the dataset as a whole, once every row has been read (by the stream, or by
        fragments whose counts were merged): some rows, some valid rows, a positive total weight."""
        if counts.rows_read == 0:
            if len(self._files) == 1:
                raise formats.no_rows(self.name)
            raise CalibcliError(
                f"{self.name}: none of its {len(self._files)} files has data rows: expected at least one prediction"
            )
        if counts.rows_used == 0:
            raise CalibcliError(
                f"{self.name}: every row was invalid and dropped ({_ordered(counts.dropped)}): nothing left to evaluate"
            )
        if self.weight_column is not None and not counts.weight_total > 0:
            raise CalibcliError(f"{self.name}: sample weights sum to 0: expected a positive total weight")

    def describe(self, counts: RowCounts | None = None) -> dict:
        """The input section of a report (SPEC 7), after a full pass of :meth:`batches`, or from the merged
        ``counts`` of every fragment."""
        counts = counts if counts is not None else self._counts
        if counts is None:
            raise RuntimeError(
                "Stream.describe() needs a full pass over batches() first, or the merged counts of every fragment"
            )
        return {
            **input_description(
                self,
                path=self.name,
                rows_read=counts.rows_read,
                rows_used=counts.rows_used,
                dropped=_ordered(counts.dropped),
            ),
            "files": len(self._files),
            "group_by": list(self.group_by),
            **self.dataset.described,
            **({"segment_columns": list(self.segment_columns)} if self.segment_columns else {}),
        }


def input_description(source, *, path: str, rows_read: int, rows_used: int, dropped: dict[str, int]) -> dict:
    """The input section of a report (SPEC 7) for a stream or a loaded input (``source`` gives the format,
    the columns and the classes)."""
    return {
        "path": path,
        "format": source.format,
        "rows_read": rows_read,
        "rows_used": rows_used,
        "rows_dropped": sum(dropped.values()),
        "dropped_reasons": dict(dropped),
        "columns": {
            "probabilities": list(source.prob_columns),
            "label": source.label_column,
            "weight": source.weight_column,
            "chosen_by": source.columns_chosen,
            "logits": source.logits,
        },
        "n_classes": source.n_classes,
        "class_names": list(source.class_names),
    }


def _ordered(dropped: dict[str, int]) -> dict[str, int]:
    """Drop counts in the order of the checks, whatever order the batches met them in."""
    return {reason: dropped[reason] for reason in REASONS if reason in dropped}


# ---------------------------------------------------------------------------------------------
# Datasets


class Dataset:
    """The files of one command-line argument (or of all of them, pooled), in row-identity order."""

    def __init__(
        self,
        name: str,
        sources: list[_Source],
        kind: str,
        *,
        formats_unknown: bool = False,
        fixed_format: str | None = None,
        described: dict | None = None,
    ):
        self.name = name  # as reported: the argument, "<stdin>", or the pooled arguments joined
        self.kind = kind  # "file", "stdin", "directory", "glob" or "pool"
        self._sources = sources
        # A directory whose files have no known extension (part-00000, ...): read only with {opt:input_format}.
        self.formats_unknown = formats_unknown
        self._spools: dict[str, str] = {}
        self.partition_kinds = _partition_kinds(sources)
        # A converted input (calibcli.io.converted): its files' format, and facts for the input section.
        self.fixed_format = fixed_format
        self.described = described or {}

    @property
    def files(self) -> list[str]:
        return [s.path for s in self._sources]

    def __repr__(self) -> str:
        return f"Dataset({self.name!r}, {len(self._sources)} file(s))"

    def open(
        self,
        spec: ColumnSpec = ColumnSpec(),
        *,
        input_format: str | None = None,
        drop_invalid: bool = False,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        group_by: tuple[str, ...] = (),
        segment_by: tuple[str, ...] = (),
    ) -> Stream:
        """Fix the columns and classes from the first file and return the dataset's :class:`Stream`.

        ``group_by`` names data columns or partition keys; a group value that is empty is an error
        (every row must belong to a group), as is a column that no file has. ``segment_by`` (the audit's
        segment columns, instead of ``group_by``) are read beside every row as each batch's ``groups``,
        empty values allowed, without splitting the rows.
        """
        from calibcli.core.validation import check_options

        check_options(batch_rows=batch_rows)
        segments = bool(segment_by)
        carried = tuple(segment_by or group_by)  # the columns read beside every row (one kind or the other)
        option = "{opt:segment_cols}" if segments else "{opt:group_by}"
        first, names, types, located, fmts = self.first_schema(input_format)
        resolved = resolve_columns(names, types, spec, first.path)
        kinds = tuple(self._group_kind(g, names, types, first.path, option) for g in carried)
        if len(set(carried)) < len(carried):
            twice = next(g for g in carried if carried.count(g) > 1)
            raise CalibcliError(
                f"the {'segment' if segments else 'group-by'} columns name {shown(twice)} twice: name each column once"
            )
        partition_keys = tuple(g for g in carried if g in self.partition_kinds)
        partitions = [self._group_partition(s, partition_keys, kinds, carried) for s in self._sources]

        vector_length = None
        if resolved.vector_column:
            vector_length = self._vector_length(located, fmts, resolved.prob_columns[0])
        if resolved.vector_column and vector_length not in (None, 1):
            class_names = tuple(str(k) for k in range(vector_length))
            if vector_length < 2:
                raise CalibcliError(f"{first.path}: expected at least 2 classes, found {vector_length}")
        elif not resolved.vector_column and len(resolved.prob_columns) > 1:
            assert resolved.class_names is not None, "probability columns name their classes"
            class_names = resolved.class_names
        else:
            class_names = ("0", "1")
        scale = self._weight_scale(located, fmts, resolved.weight_column) if resolved.weight_column else 0
        plan = ReadPlan(
            weight_scale=scale,
            columns=resolved,
            class_names=class_names,
            n_classes=len(class_names),
            vector_length=vector_length,
            logits=spec.logits,
            first_file=first.path,
            batch_rows=batch_rows,
            drop_invalid=drop_invalid,
            group_by=() if segments else carried,
            segment_by=carried if segments else (),
            group_kinds=kinds,
            partition_keys=partition_keys,
        )
        return Stream(self, plan, list(zip(self._sources, located, fmts, partitions, strict=True)))

    def first_schema(self, input_format: str | None):
        """``(first source, its column names, their types, every file's location, every file's format)``: what
        a stream's plan is fixed from, the first file's schema (a bad ``input_format`` fails before stdin is
        read)."""
        if input_format is not None:
            formats.detect_format("-", input_format)
        fmts = self.file_formats(input_format)
        located = self.locations()
        first = self._sources[0]
        schema = _guarded(first.path, fmts[0], formats.read_schema, located[0], fmts[0])
        return first, list(schema.names), {f.name: f.type for f in schema}, located, fmts

    def file_formats(self, input_format: str | None = None) -> list[str]:
        """Each file's format: ``input_format``, else its extension, else (standard input, a pipe such as
        ``<(cmd)``) its first bytes, read from the temporary copy."""
        if self.fixed_format is not None:
            return [self.fixed_format] * len(self._sources)
        if self.formats_unknown and input_format is None:
            _no_files(
                self.name,
                [os.path.relpath(f, self.name) if self.kind == "directory" else f for f in self.files],
                input_format=True,
            )
        fmts = [formats.detect_format("-" if _by_content(s) else s.path, input_format) for s in self._sources]
        if input_format is None and any(_by_content(s) for s in self._sources):
            fmts = [
                formats.sniff_format(loc) if _by_content(s) else f
                for s, loc, f in zip(self._sources, self.locations(), fmts, strict=True)
            ]
        return fmts

    def locations(self) -> list[str]:
        """Where each file's bytes are; standard input and pipes copied to temporary files first."""
        out = []
        for source in self._sources:
            if source.single_pass:
                if source.location not in self._spools:
                    path = _spool(source)
                    self._spools[source.location] = path
                    weakref.finalize(self, _remove, path)
                out.append(self._spools[source.location])
            else:
                out.append(source.location)
        return out

    def _group_kind(
        self, column: str, names: list[str], types: dict, first: str, option: str = "{opt:group_by}"
    ) -> str:
        if column in self.partition_kinds:
            if column in names:
                raise CalibcliError(
                    f"{first}: {shown(column)} is both a column of the file and a partition key of its directories "
                    f"({column}=...): rename one of them"
                )
            return self.partition_kinds[column]
        if column not in names:
            keys = f" and the partition keys {list(self.partition_kinds)}" if self.partition_kinds else ""
            raise CalibcliError(
                f"{first}: no column {shown(column)} (given by {option}); the file has columns "
                f"{shown_names(names)}{keys}"
            )
        if _nested_or_binary(types[column]):
            what = "segment" if option == "{opt:segment_cols}" else "group"
            raise CalibcliError(
                f"{first}: column {shown(column)} (given by {option}) holds {shown(str(types[column]), quote=False)} "
                f"values, which cannot {what} rows: name a column of text, numbers, booleans or dates "
                f"(flatten or convert this one first)"
            )
        return group_kind(types[column])

    def _group_partition(self, source: _Source, keys: tuple[str, ...], kinds: tuple[str, ...], group_by) -> dict:
        """The typed values of the group-by partition keys for one file."""
        raw = dict(source.partition)
        values = {}
        for key in keys:
            value = raw.get(key)
            if value is None:
                found = "is empty (" + _HIVE_NULL + ")" if key in raw else "is missing"
                raise CalibcliError(
                    f"{source.path}: the partition key {shown(key)} {found} in the file's path: expected a {key}=value "
                    f"directory above every file to group by it"
                )
            values[key] = _typed(value, kinds[group_by.index(key)])
        return values

    def _weight_scale(self, located: list[str], fmts: list[str], column: str) -> int:
        """The power of two the weights are read with (:func:`calibcli.core.validation.weight_scale`), from the
        first rows of the first file that has rows (0 unless they are extreme)."""
        for source, location, fmt in zip(self._sources, located, fmts, strict=True):
            try:
                tables = formats.iter_tables(location, fmt, [column], 65536)
                try:
                    first = next(_guarded_iter(source.path, fmt, tables, location=location), None)
                finally:
                    tables.close()
            except Exception:  # noqa: BLE001 - a damaged file: the read proper reports it, with its own words
                return 0
            if first is not None and first.num_rows:
                import pyarrow.compute as pc

                try:
                    column_values = pc.fill_null(pc.cast(first.column(column), "float64", safe=False), -1.0)
                    values = column_values.to_numpy(zero_copy_only=False)
                except Exception:  # noqa: BLE001 - text in the column: the batch's own checks name the row
                    return 0
                return weight_scale(values[(values >= 0) & (values < float("inf"))])  # (NaN compares False)
        return 0

    def _vector_length(self, located: list[str], fmts: list[str], column: str) -> int | None:
        """Entries per row of the probability vectors, from the first row of the first file that has rows."""
        for source, location, fmt in zip(self._sources, located, fmts, strict=True):
            tables = formats.iter_tables(location, fmt, [column], 1024)
            try:
                first = next(_guarded_iter(source.path, fmt, tables, location=location), None)
            finally:
                tables.close()
            if first is not None:
                return vector_column(first, column, source.path).shape[1]
        return None


def _nested_or_binary(arrow_type) -> bool:
    """Lists, structs, maps, unions and bytes (a dictionary of them too): values that do not name a group."""
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return (
        pt.is_nested(arrow_type)
        or pt.is_binary(arrow_type)
        or pt.is_large_binary(arrow_type)
        or pt.is_fixed_size_binary(arrow_type)
        or (hasattr(pt, "is_binary_view") and pt.is_binary_view(arrow_type))
    )


def _by_content(source: _Source) -> bool:
    """The format of a stream (stdin, a pipe) without a known extension comes from its first bytes."""
    return source.location == "-" or (source.single_pass and not _known(os.path.basename(source.path)))


def _known(name: str) -> bool:
    """A file name with an extension of a known format (``.gz`` looked through)."""
    name = name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1] in formats.EXTENSIONS


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _no_files(arg: str, others: list[str], input_format: bool = False) -> None:
    if not others:
        raise CalibcliError(f"{arg}: is a directory: expected a file of predictions")
    hint = f", or pass {{opt:input_format}} to read all {len(others)} file(s) in that format" if input_format else ""
    raise CalibcliError(
        f"{arg}: is a directory without prediction files ({len(others)} other file(s), such as {shown(others[0])}): "
        f"expected files ending in {', '.join(sorted(formats.EXTENSIONS))} (optionally .gz for text formats){hint}"
    )


# ---------------------------------------------------------------------------------------------
# Partition keys


def _partition_kinds(sources: list[_Source]) -> dict[str, str]:
    """Each partition key's kind over every file: int when every value is an integer, float when every
    value is a number, str otherwise."""
    values: dict[str, list[str]] = {}
    for source in sources:
        for key, value in source.partition:
            values.setdefault(key, [])
            if value is not None:
                values[key].append(value)
    return {key: _text_kind(vals) for key, vals in values.items()}


def _text_kind(values: list[str]) -> str:
    def all_are(convert) -> bool:
        try:
            for v in values:
                convert(v)
        except ValueError:
            return False
        return bool(values)

    if all_are(int):
        return "int"
    if all_are(float):
        return "float"
    return "str"


def _typed(value: str, kind: str):
    return {"int": int, "float": float}.get(kind, str)(value)


# ---------------------------------------------------------------------------------------------
# Standard input and pipes


def _spool(source: _Source) -> str:
    """Copy standard input (or a pipe) to a temporary file, in chunks; the file's name ends in .gz when
    the bytes are gzip, so the text readers decompress them."""
    if source.location == "-":
        stream = getattr(sys.stdin, "buffer", sys.stdin)
        return _copy(stream)
    with open(source.location, "rb") as stream:
        return _copy(stream)


def _copy(stream) -> str:
    def read() -> bytes:
        chunk = stream.read(_SPOOL_CHUNK)
        return chunk.encode() if isinstance(chunk, str) else chunk

    chunk = read()
    fd, path = tempfile.mkstemp(prefix="calibcli-stdin-", suffix=".gz" if chunk[:2] == b"\x1f\x8b" else "")
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk:
                out.write(chunk)
                chunk = read()
    except BaseException:
        _remove(path)
        raise
    return path


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
