"""Reading prediction/label files into validated arrays (used by every command).

Formats (by extension, or ``--input-format``): CSV and TSV (also ``.gz``), Parquet, Arrow IPC /
Feather, JSON Lines (also ``.gz``); ``-`` reads standard input (CSV unless ``--input-format`` says
otherwise). Parquet and Arrow files are read column-pruned with pyarrow, straight into NumPy.

Columns are chosen by flags (:class:`ColumnSpec`) or recognised from the common layouts; the choice
is recorded in :class:`LoadedInput` so that every report echoes it. Row numbers in messages are
1-based data rows (the header is not counted).

Large files: the readers return pyarrow tables of only the needed columns, and the estimators work on
per-bin sufficient statistics that merge across chunks (:meth:`calibcli.estimators.BinStats.merge`), so
a chunked path can read ``pyarrow.parquet.ParquetFile.iter_batches`` with the same column resolution.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np

from calibcli.errors import CalibcliError
from calibcli.validation import ROW_SUM_TOLERANCE

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

LABEL_NAMES = ("label", "labels", "y", "y_true", "target", "true_label", "class")
SINGLE_PROB_NAMES = ("prob", "probability", "proba", "score", "confidence", "y_prob", "y_score", "p", "pred", "prediction")
VECTOR_PROB_NAMES = ("probs", "probabilities", "proba", "prob", "p", "scores", "logits", "y_prob")
_MULTI_PROB_RE = re.compile(r"^(p|prob|probs|proba|probability|score|logit|logits)_(.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class ColumnSpec:
    """Which columns hold what, as given on the command line (``None``: recognise automatically)."""

    prob_col: str | None = None
    prob_cols: tuple[str, ...] | None = None
    label_col: str | None = None
    weight_col: str | None = None
    logits: bool = False


@dataclass(frozen=True)
class LoadedInput:
    """One input file, read, mapped to columns, validated."""

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
        return {
            "path": self.path,
            "format": self.format,
            "rows_read": self.n_rows_read,
            "rows_used": self.n_rows,
            "rows_dropped": self.n_rows_dropped,
            "dropped_reasons": dict(self.dropped),
            "columns": {
                "probabilities": list(self.prob_columns),
                "label": self.label_column,
                "weight": self.weight_column,
                "chosen_by": self.columns_chosen,
                "logits": self.logits,
            },
            "n_classes": self.n_classes,
            "class_names": list(self.class_names),
        }


# ---------------------------------------------------------------------------------------------
# Formats


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


# ---------------------------------------------------------------------------------------------
# Column resolution


def _split_list(items) -> list[str]:
    out: list[str] = []
    for item in items or ():
        out.extend(part.strip() for part in item.split(",") if part.strip())
    return out


def natural_suffix_order(names: list[str]) -> list[str]:
    """Columns ordered by their numeric suffix when every suffix is an integer (p_2 before p_10)."""
    suffixes = [_suffix(n) for n in names]
    if all(re.fullmatch(r"-?\d+", s) for s in suffixes):
        return [n for _, n in sorted(zip((int(s) for s in suffixes), names))]
    return names


def _suffix(name: str) -> str:
    m = _MULTI_PROB_RE.match(name)
    if m:
        return m.group(2)
    return name.rsplit("_", 1)[-1] if "_" in name else name


def _is_list_type(t) -> bool:
    import pyarrow as pa

    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


@dataclass(frozen=True)
class _Resolved:
    prob_columns: tuple[str, ...]
    vector_column: bool  # probabilities are one list column
    label_column: str
    weight_column: str | None
    chosen: str
    class_names: tuple[str, ...] | None


def resolve_columns(names: list[str], types: dict, spec: ColumnSpec, where: str) -> _Resolved:
    """Map the file's columns to probabilities, labels and weights (flags first, then common layouts)."""
    resolved = _resolve_columns(names, types, spec, where)
    for role, col in (("label", resolved.label_column), ("weight", resolved.weight_column)):
        if col is not None and col in resolved.prob_columns:
            raise CalibcliError(
                f"{where}: column {col!r} is used both as a probability column and as the {role} column: "
                f"name each column once"
            )
    return resolved


def _resolve_columns(names: list[str], types: dict, spec: ColumnSpec, where: str) -> _Resolved:
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CalibcliError(
            f"{where}: column name {duplicated[0]!r} appears more than once in the header: "
            f"expected unique column names; rename the duplicates"
        )
    lower = {n.lower(): n for n in names}
    chosen = "flags" if (spec.prob_col or spec.prob_cols or spec.label_col) else "auto"

    def need(col: str, flag: str) -> str:
        if col not in names:
            raise CalibcliError(f"{where}: no column {col!r} (given by {flag}); the file has columns {names}")
        return col

    # labels
    if spec.label_col:
        label = need(spec.label_col, "--label-col")
    else:
        found = [lower[n] for n in LABEL_NAMES if n in lower]
        if not found:
            spaced = [n for n in names if n != n.strip()]
            hint = f" (names with surrounding spaces: {spaced}; remove the spaces after the commas)" if spaced else ""
            raise CalibcliError(
                f"{where}: no label column recognised among {names}{hint}: expected one named "
                f"{'/'.join(LABEL_NAMES[:5])}; pass --label-col NAME"
            )
        label = found[0]

    weight = need(spec.weight_col, "--weight-col") if spec.weight_col else None

    if spec.prob_col and spec.prob_cols:
        raise CalibcliError("pass either --prob-col (one binary column) or --prob-cols (one column per class), not both")
    if spec.prob_col:
        col = need(spec.prob_col, "--prob-col")
        vector = types.get(col) is not None and _is_list_type(types[col])
        return _Resolved((col,), vector, label, weight, chosen, None)
    if spec.prob_cols:
        cols: list[str] = []
        for item in _split_list(spec.prob_cols):
            if any(ch in item for ch in "*?["):
                matched = [n for n in names if fnmatch.fnmatchcase(n, item) and n not in (label, weight)]
                if not matched:
                    raise CalibcliError(f"{where}: --prob-cols pattern {item!r} matches no column; the file has columns {names}")
                cols.extend(natural_suffix_order(matched))
            else:
                cols.append(need(item, "--prob-cols"))
        if len(cols) == 1:
            vector = types.get(cols[0]) is not None and _is_list_type(types[cols[0]])
            if not vector:
                raise CalibcliError(
                    f"{where}: --prob-cols names one column ({cols[0]!r}): for a binary problem use "
                    f"--prob-col, for K classes name K columns"
                )
            return _Resolved(tuple(cols), True, label, weight, chosen, None)
        return _Resolved(tuple(cols), False, label, weight, chosen, tuple(_suffix(c) for c in cols))

    # automatic recognition of the common layouts
    others = [n for n in names if n not in (label, weight)]
    groups: dict[str, list[str]] = {}
    for n in others:
        m = _MULTI_PROB_RE.match(n)
        if m:
            groups.setdefault(m.group(1).lower(), []).append(n)
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    vectors = [n for n in others if types.get(n) is not None and _is_list_type(types[n])]
    singles = [lower[n] for n in SINGLE_PROB_NAMES if n in lower and lower[n] in others and lower[n] not in vectors]
    candidates = []
    if singles:
        candidates.append(("single", [singles[0]]))
    for prefix, cols in groups.items():
        candidates.append(("multi", natural_suffix_order(cols)))
    for v in vectors:
        candidates.append(("vector", [v]))
    if not candidates:
        raise CalibcliError(
            f"{where}: no probability column recognised among {names}: expected a column named "
            f"prob/score/confidence, columns p_0..p_K-1, or a list column; pass --prob-col or --prob-cols"
        )
    if len(candidates) > 1:
        described = "; ".join(", ".join(c) for _, c in candidates)
        raise CalibcliError(
            f"{where}: the probability columns are ambiguous (candidates: {described}): "
            f"pass --prob-col NAME for one binary column or --prob-cols for one column per class"
        )
    kind, cols = candidates[0]
    if kind == "multi":
        return _Resolved(tuple(cols), False, label, weight, "auto", tuple(_suffix(c) for c in cols))
    return _Resolved(tuple(cols), kind == "vector", label, weight, "auto", None)


# ---------------------------------------------------------------------------------------------
# Conversion to arrays


def column_to_numpy(table, name: str) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        import pyarrow.compute as pc
        import pyarrow as pa

        if pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
            return pc.fill_null(col.cast(pa.float64()), float("nan")).to_numpy()
        return np.asarray(col.to_pylist(), dtype=object)
    return _numbers_to_numpy(col)


#: NumPy dtypes of Arrow's fixed-width number types, by the type's name.
_NUMBER_DTYPES = {"double": np.float64, "float": np.float32, "halffloat": np.float16,
                  **{f"{sign}int{bits}": np.dtype(f"{sign}int{bits}") for sign in ("", "u") for bits in (8, 16, 32, 64)}}


def _numbers_to_numpy(col) -> np.ndarray:
    """A null-free column as a NumPy array. Fixed-width numbers are read straight from the Arrow
    buffers: pyarrow's own ``to_numpy`` imports pandas (about 0.2 s of every run) to check for
    pandas-specific types, which number columns never are."""
    dtype = _NUMBER_DTYPES.get(str(col.type))
    if dtype is None:
        return col.to_numpy()
    parts = [np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * np.dtype(dtype).itemsize)
             for chunk in col.chunks if len(chunk)]
    if not parts:
        return np.empty(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _null_rows(table, name: str) -> np.ndarray | None:
    """Rows where the column's cell is empty (None when it has none)."""
    col = table.column(name)
    if not col.null_count:
        return None
    return col.is_null().to_numpy(zero_copy_only=False)


def _parse_text_numbers(table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A text column read as numbers: the values (NaN where not a number) and the mask of such cells."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name).cast(pa.string())
    numeric = pc.match_substring_regex(
        pc.utf8_trim_whitespace(col), r"^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|Infinity|nan|NaN)$"
    )
    numeric = pc.fill_null(numeric, False).to_numpy(zero_copy_only=False)
    values = np.full(len(col), np.nan)
    if numeric.any():
        good = pc.filter(col, pa.array(numeric))
        values[numeric] = pc.cast(pc.utf8_trim_whitespace(good), pa.float64()).to_numpy(zero_copy_only=False)
    nulls = col.is_null().to_numpy(zero_copy_only=False)
    return values, ~numeric & ~nulls


def vector_column(table, name: str, where: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name).combine_chunks()
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise CalibcliError(f"{where}: column {name!r} is empty at row {row + 1}: expected a probability vector on every row")
    lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
    if len(lengths) == 0:
        return np.empty((0, 2))
    if np.any(lengths != lengths[0]):
        row = int(np.flatnonzero(lengths != lengths[0])[0])
        raise CalibcliError(
            f"{where}: column {name!r} holds vectors of length {lengths[0]} and {lengths[row]} (row {row + 1}): "
            f"expected one probability per class on every row"
        )
    values = pc.list_flatten(col).cast(pa.float64())
    values = pc.fill_null(values, float("nan")).to_numpy()
    return values.reshape(len(col), int(lengths[0]))


def _labels_to_index(raw: np.ndarray, class_names: tuple[str, ...] | None, n_classes: int, label_col: str, where: str):
    """Labels as class indices; unmappable ones become -1 (reported by validation)."""
    if raw.dtype == bool:
        return raw.astype(np.int64), None
    if raw.dtype.kind in "iu":
        vals = raw.astype(np.int64)
        return _remap_int_labels(vals, class_names), None
    if raw.dtype.kind == "f":
        bad = ~np.isfinite(raw) | (raw != np.round(raw))
        vals = np.where(bad, -1, raw).astype(np.int64)
        vals = _remap_int_labels(vals, class_names)
        vals[bad] = -1
        return vals, ("non-integer" if bad.any() else None)
    # strings: class names matching the probability columns' suffixes, or true/false
    text = np.array([None if v is None else str(v) for v in raw], dtype=object)
    lowered = {str(v).strip().lower() for v in text if v is not None}
    if class_names is None and lowered <= {"true", "false", "0", "1"}:
        out = np.array([-1 if v is None else int(str(v).strip().lower() in ("true", "1")) for v in text], dtype=np.int64)
        return out, None
    if class_names is None:
        sample = sorted(lowered)[:5]
        raise CalibcliError(
            f"{where}: labels in column {label_col!r} are text ({sample}) but the probabilities have no class "
            f"names to match: expected integer labels 0..{n_classes - 1}, booleans, or p_<class> columns"
        )
    index = {name: k for k, name in enumerate(class_names)}
    return np.array([index.get(None if v is None else str(v).strip(), -1) for v in text], dtype=np.int64), None


def _remap_int_labels(vals: np.ndarray, class_names: tuple[str, ...] | None) -> np.ndarray:
    """Integer labels index the classes; with integer suffixes that are not 0..K-1, map by suffix."""
    if class_names is None or not all(re.fullmatch(r"-?\d+", c) for c in class_names):
        return vals
    suffix = np.array([int(c) for c in class_names])
    if np.array_equal(suffix, np.arange(len(suffix))):
        return vals
    lookup = {int(s): k for k, s in enumerate(suffix)}
    return np.array([lookup.get(int(v), -1) for v in vals], dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Validation of a whole table, row by row


def _invalid_rows(
    probs, labels, weights, n_classes: int, label_col: str, weight_col: str | None, logits=None,
    empty: dict | None = None, not_numbers: dict | None = None, text_of=None, empty_other: dict | None = None,
):
    """Masks of invalid rows, in the order they are reported, each with a message maker.

    ``logits`` are the file's values when ``--logits`` was given: a non-finite value is reported as
    the file has it, not as its softmax. ``empty`` maps probability columns to their empty cells,
    ``not_numbers`` text columns to their cells that are not numbers (``text_of(col, row)`` gives the text).
    """
    checks = []
    many = probs.ndim == 2
    prob_desc = "class probabilities are" if many else "probability is"
    for col, mask in (empty or {}).items():
        checks.append(("empty probability cell", mask, lambda r, c=col: f"the cell in column {c!r} is empty" if many else "probability is empty"))
    for col, mask in (not_numbers or {}).items():
        checks.append(("probability not a number", mask, lambda r, c=col: f"column {c!r} holds {text_of(c, r)!r}, not a number"))
    source = probs if logits is None else logits
    finite = np.isfinite(source) if source.ndim == 1 else np.isfinite(source).all(axis=1)
    source_desc = prob_desc if logits is None else ("logits are" if many else "logit is")
    checks.append(
        ("non-finite probability", ~finite, lambda r: f"{source_desc} {_fmt(source[r])} (not {'all ' if many else 'a '}finite number{'s' if many else ''})")
    )
    finite = finite & (np.isfinite(probs) if probs.ndim == 1 else np.isfinite(probs).all(axis=1))
    with np.errstate(invalid="ignore"):
        outside = (probs < 0) | (probs > 1)
        outside = outside if probs.ndim == 1 else outside.any(axis=1)
    outside &= finite
    checks.append(
        (
            "probability outside [0, 1]",
            outside,
            lambda r: f"{prob_desc} {_fmt(probs[r])}, outside [0, 1] (pass --logits if the columns hold logits)",
        )
    )
    if probs.ndim == 2:
        sums = probs.sum(axis=1)
        off = finite & ~outside & (np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)
        checks.append(
            (
                "probabilities not summing to 1",
                off,
                lambda r: f"class probabilities sum to {sums[r]:.6g}, expected 1 within {ROW_SUM_TOLERANCE:g} "
                f"(pass every class's column to --prob-cols, or --logits)",
            )
        )
    bad_label = (labels < 0) | (labels >= n_classes)
    checks.append(
        (
            "label outside the classes",
            bad_label,
            lambda r: f"label in column {label_col!r} is not one of the {n_classes} classes",
        )
    )
    if weights is not None:
        weight_empty = (empty_other or {}).get(weight_col)
        with np.errstate(invalid="ignore"):
            bad_w = ~np.isfinite(weights) | (weights < 0)
        checks.append(
            (
                "invalid sample weight",
                bad_w,
                lambda r: f"weight in column {weight_col!r} is {'empty' if weight_empty is not None and weight_empty[r] else _fmt(weights[r])}, "
                f"expected a finite number >= 0",
            )
        )
    return checks


def _show(value) -> str:
    """A value from the file as the user wrote it: numbers plain (2, 0.5), text quoted ('cow')."""
    if value is None:
        return "empty"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, str) else str(value)


def _fmt(v) -> str:
    arr = np.atleast_1d(np.asarray(v, dtype=np.float64))
    body = ", ".join(f"{x:.6g}" for x in arr[:6])
    return body if arr.size == 1 else f"[{body}{', ...' if arr.size > 6 else ''}]"


def read_whole_table(path: str, input_format: str | None = None):
    """Every column of one input (``-`` for standard input): ``(pyarrow table, format, display name)``.

    For commands that carry the whole table through (``recalibrate apply`` writes it back with the
    recalibrated columns); unreadable or empty inputs raise :class:`CalibcliError` as in :func:`read_input`.
    """
    display = "<stdin>" if path == "-" else path
    fmt = detect_format(path, input_format)
    src = _source(path)
    try:
        table = read_table(src, fmt)
    except Exception as exc:  # pyarrow raises many types for unreadable or truncated files
        raise _unreadable(display, fmt, exc) from None
    if table.num_rows == 0:
        raise _no_rows(display)
    return table, fmt, display


def _no_rows(display: str) -> CalibcliError:
    return CalibcliError(f"{display}: the file has no data rows: expected at least one prediction")


def _unreadable(display: str, fmt: str, exc: Exception) -> CalibcliError:
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return CalibcliError(
        f"{display}: cannot read as {_FORMAT_NAMES[fmt]} ({message}): check that the file is complete and "
        f"in that format, or pass --input-format"
    )


def read_input(
    path: str,
    spec: ColumnSpec = ColumnSpec(),
    *,
    input_format: str | None = None,
    drop_invalid: bool = False,
) -> LoadedInput:
    """Read, map and validate one input file (``-`` for standard input).

    Raises :class:`CalibcliError` naming the file, the row or column, what was found and what to do;
    with ``drop_invalid`` invalid rows are dropped instead and counted by reason.
    """
    display = "<stdin>" if path == "-" else path
    fmt = detect_format(path, input_format)
    src = _source(path)
    try:
        schema = read_schema_names(src, fmt)
        if schema is not None:
            names, types = list(schema.names), {f.name: f.type for f in schema}
            table = None
        else:
            table = read_table(src, fmt)
            names, types = list(table.column_names), {f.name: f.type for f in table.schema}
        resolved = resolve_columns(names, types, spec, display)
        needed = list(dict.fromkeys([*resolved.prob_columns, resolved.label_column] + ([resolved.weight_column] if resolved.weight_column else [])))
        if table is None:
            table = read_table(src, fmt, needed)
    except CalibcliError:
        raise
    except Exception as exc:  # pyarrow raises many types for unreadable or truncated files
        raise _unreadable(display, fmt, exc) from None

    n_read = table.num_rows
    if n_read == 0:
        raise _no_rows(display)

    import pyarrow as pa

    where = display
    not_numbers: dict[str, np.ndarray] = {}
    if resolved.vector_column:
        probs = vector_column(table, resolved.prob_columns[0], where)
        class_names = tuple(str(k) for k in range(probs.shape[1]))
    else:
        cols = []
        for c in resolved.prob_columns:
            t = table.column(c).type
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                values, bad = _parse_text_numbers(table, c)
                if bad.any():
                    not_numbers[c] = bad
                cols.append(values)
                continue
            if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t)):
                raise CalibcliError(
                    f"{where}: probability column {c!r} has type {t}: expected numbers; check the column or pass --prob-col/--prob-cols"
                )
            cols.append(column_to_numpy(table, c).astype(np.float64, copy=False))
        probs = cols[0] if len(cols) == 1 else np.column_stack(cols)
        class_names = resolved.class_names or ("0", "1")
    if probs.ndim == 2 and probs.shape[1] == 1:
        probs = probs[:, 0]
        class_names = ("0", "1")
    raw_logits = None
    if spec.logits:
        from calibcli.modes import sigmoid, softmax

        raw_logits = probs
        with np.errstate(invalid="ignore", over="ignore"):
            probs = sigmoid(probs) if probs.ndim == 1 else softmax(probs)
    n_classes = 2 if probs.ndim == 1 else probs.shape[1]
    if probs.ndim == 2 and n_classes < 2:
        raise CalibcliError(f"{where}: expected at least 2 classes, found {n_classes}")

    raw_labels = column_to_numpy(table, resolved.label_column)
    labels, _ = _labels_to_index(raw_labels, None if probs.ndim == 1 else class_names, n_classes, resolved.label_column, where)
    weights = None
    if resolved.weight_column:
        weight_type = table.column(resolved.weight_column).type
        if not (pa.types.is_floating(weight_type) or pa.types.is_integer(weight_type) or pa.types.is_boolean(weight_type)):
            raise CalibcliError(f"{where}: weight column {resolved.weight_column!r} has type {weight_type}: expected numbers")
        weights = column_to_numpy(table, resolved.weight_column)
        weights = weights.astype(np.float64, copy=False)

    dropped: dict[str, int] = {}
    keep = np.ones(n_read, dtype=bool)
    prob_empty = {} if resolved.vector_column else {
        c: m for c in resolved.prob_columns if (m := _null_rows(table, c)) is not None
    }
    label_empty = _null_rows(table, resolved.label_column)
    other_empty = {resolved.weight_column: _null_rows(table, resolved.weight_column)} if resolved.weight_column else {}
    for reason, mask, describe in _invalid_rows(
        probs, labels, weights, n_classes, resolved.label_column, resolved.weight_column, logits=raw_logits,
        empty=prob_empty, not_numbers=not_numbers, text_of=lambda c, r: table.column(c)[r].as_py(),
        empty_other=other_empty,
    ):
        mask = mask & keep
        if not mask.any():
            continue
        if not drop_invalid:
            row = int(np.flatnonzero(mask)[0])
            col = resolved.label_column if reason.startswith("label") else (
                resolved.weight_column if reason.startswith("invalid sample") else ", ".join(resolved.prob_columns)
            )
            extra = ""
            if reason.startswith("label"):
                found = "empty" if label_empty is not None and label_empty[row] else _show(raw_labels[row])
                extra = f" (found {found}; classes: {list(class_names)})"
            raise CalibcliError(
                f"{where}: row {row + 1}, column {col}: {describe(row)}{extra}; {int(mask.sum())} such row(s): "
                f"fix the file or pass --drop-invalid to drop them"
            )
        dropped[reason] = int(mask.sum())
        keep &= ~mask
    if not keep.all():
        probs, labels = probs[keep], labels[keep]
        weights = None if weights is None else weights[keep]
    if len(labels) == 0:
        raise CalibcliError(f"{where}: every row was invalid and dropped ({dropped}): nothing left to evaluate")
    if weights is not None and weights.sum() <= 0:
        raise CalibcliError(f"{where}: sample weights sum to 0: expected a positive total weight")
    return LoadedInput(
        path=display,
        format=fmt,
        n_rows_read=n_read,
        dropped=dropped,
        prob_columns=resolved.prob_columns,
        label_column=resolved.label_column,
        weight_column=resolved.weight_column,
        columns_chosen=resolved.chosen,
        class_names=class_names,
        probs=probs,
        labels=labels,
        sample_weight=weights,
        logits=spec.logits,
    )
