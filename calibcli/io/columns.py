"""Which columns hold what (flags or the common layouts), and their conversion to NumPy arrays."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from calibcli.core.errors import CalibcliError, shown, shown_names
from calibcli.core.modes import sigmoid, softmax
from calibcli.io.arrow_values import (
    _NUMBER_RE,
    _bools,
    _cast,
    _floats,
    _is_text,
    _numbers_to_numpy,
    _plain_text,
    _text_numbers,
    _text_values,
    _typed_text,
    _values,
    null_mask,
)
from calibcli.io.checks import check_rows

LABEL_NAMES = ("label", "labels", "y", "y_true", "target", "true_label", "class")
SINGLE_PROB_NAMES = (
    "prob",
    "probability",
    "proba",
    "score",
    "confidence",
    "y_prob",
    "y_score",
    "p",
    "pred",
    "prediction",
)
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

    @classmethod
    def of(cls, prob_col, prob_cols, label_col, weight_col, logits) -> ColumnSpec:
        """The column options as the command line and the library give them (``prob_cols`` a list, or empty)."""
        return cls(prob_col, tuple(prob_cols) if prob_cols else None, label_col, weight_col, logits)


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
        return [n for _, n in sorted(zip((int(s) for s in suffixes), names, strict=True))]
    return names


def expand_columns(items, names, *, missing, exclude=(), named=None, order=natural_suffix_order) -> list[str]:
    """The columns ``items`` name, in order: a glob pattern (``p_*``, with ``*?[``) the columns of ``names`` it
    matches that are not in ``exclude``, ordered by ``order`` (the numeric suffix); a pattern that matches none
    is refused with the message ``missing(pattern)``. A plain name is ``named(name)`` (a check that finds it,
    default: as it is)."""
    out: list[str] = []
    for item in items:
        if any(ch in item for ch in "*?["):
            matched = [n for n in names if fnmatch.fnmatchcase(n, item) and n not in exclude]
            if not matched:
                raise CalibcliError(missing(item))
            out.extend(order(matched))
        else:
            out.append(item if named is None else named(item))
    return out


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
                f"{where}: column {shown(col)} is used both as a probability column and as the {role} column: "
                f"name each column once"
            )
    return resolved


def _resolve_columns(names: list[str], types: dict, spec: ColumnSpec, where: str) -> _Resolved:
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CalibcliError(
            f"{where}: column name {shown(duplicated[0])} appears more than once in the header: "
            f"expected unique column names; rename the duplicates"
        )
    lower = {n.lower(): n for n in names}
    chosen = "flags" if (spec.prob_col or spec.prob_cols or spec.label_col) else "auto"

    def need(col: str, flag: str) -> str:
        if col not in names:
            raise CalibcliError(
                f"{where}: no column {shown(col)} (given by {flag}); the file has columns {shown_names(names)}"
            )
        return col

    # labels
    if spec.label_col:
        label = need(spec.label_col, "{opt:label_col}")
    else:
        found = [lower[n] for n in LABEL_NAMES if n in lower]
        if not found:
            spaced = [n for n in names if n != n.strip()]
            hint = (
                f" (names with surrounding spaces: {shown_names(spaced)}; remove the spaces after the commas)"
                if spaced
                else ""
            )
            raise CalibcliError(
                f"{where}: no label column recognised among {shown_names(names)}{hint}: expected one named "
                f"{'/'.join(LABEL_NAMES[:5])}; pass {{opt:label_col}} NAME"
            )
        label = found[0]

    weight = need(spec.weight_col, "{opt:weight_col}") if spec.weight_col else None

    if spec.prob_col and spec.prob_cols:
        raise CalibcliError(
            "pass either {opt:prob_col} (one binary column) or {opt:prob_cols} (one column per class), not both"
        )
    if spec.prob_col:
        col = need(spec.prob_col, "{opt:prob_col}")
        vector = types.get(col) is not None and _is_list_type(types[col])
        return _Resolved((col,), vector, label, weight, chosen, None)
    if spec.prob_cols:
        cols = expand_columns(
            _split_list(spec.prob_cols),
            names,
            exclude=(label, weight),
            missing=lambda item: (
                f"{where}: {{opt:prob_cols}} pattern {shown(item)} matches no column; the file "
                f"has columns {shown_names(names)}"
            ),
            named=lambda item: need(item, "{opt:prob_cols}"),
        )
        if len(cols) == 1:
            vector = types.get(cols[0]) is not None and _is_list_type(types[cols[0]])
            if not vector:
                raise CalibcliError(
                    f"{where}: {{opt:prob_cols}} names one column ({shown(cols[0])}): for a binary problem use "
                    f"{{opt:prob_col}}, for K classes name K columns"
                )
            return _Resolved(tuple(cols), True, label, weight, chosen, None)
        return _Resolved(tuple(cols), False, label, weight, chosen, tuple(_suffix(c) for c in cols))

    candidates = _candidates(names, types, label, weight)
    if not candidates:
        raise CalibcliError(
            f"{where}: no probability column recognised among {shown_names(names)}: expected a column named "
            f"prob/score/confidence, columns p_0..p_K-1, or a list column; pass {{opt:prob_col}} or {{opt:prob_cols}}"
        )
    if len(candidates) > 1:
        described = "; ".join(", ".join(c) for _, c in candidates)
        raise CalibcliError(
            f"{where}: the probability columns are ambiguous (candidates: {described}): "
            f"pass {{opt:prob_col}} NAME for one binary column or {{opt:prob_cols}} for one column per class"
        )
    kind, cols = candidates[0]
    if kind == "multi":
        return _Resolved(tuple(cols), False, label, weight, "auto", tuple(_suffix(c) for c in cols))
    return _Resolved(tuple(cols), kind == "vector", label, weight, "auto", None)


def _candidates(names: list[str], types: dict, label: str | None, weight: str | None) -> list[tuple[str, list[str]]]:
    """The probability columns the common layouts recognise (automatic recognition): a single column, a
    ``p_0..p_K-1`` group, a list column; each a candidate ``(kind, columns)``."""
    lower = {n.lower(): n for n in names}
    # the Venn-Abers interval columns that `recalibrate apply` writes beside a probability column X
    # (X_p0, X_p1) are not candidates themselves, so its output reads back without naming the columns
    companions = {f"{n}_{s}" for n in names for s in ("p0", "p1")}
    others = [n for n in names if n not in (label, weight) and n not in companions]
    groups: dict[str, list[str]] = {}
    for n in others:
        m = _MULTI_PROB_RE.match(n)
        if m:
            groups.setdefault(m.group(1).lower(), []).append(n)
    groups = {k: v for k, v in groups.items() if len(v) >= 2}
    vectors = [n for n in others if types.get(n) is not None and _is_list_type(types[n])]
    singles = [lower[n] for n in SINGLE_PROB_NAMES if n in lower and lower[n] in others and lower[n] not in vectors]
    candidates: list[tuple[str, list[str]]] = []
    if singles:
        candidates.append(("single", [singles[0]]))
    for cols in groups.values():
        candidates.append(("multi", natural_suffix_order(cols)))
    for v in vectors:
        candidates.append(("vector", [v]))
    return candidates


def recognises_probabilities(names: list[str], types: dict, spec: ColumnSpec) -> bool:
    """Whether :func:`resolve_columns` takes some of these columns for probabilities: a probability column
    option is given, or automatic recognition finds a candidate (the label column, given or recognised, and
    the weight column excluded). False is exactly where it reports "no probability column recognised"."""
    if spec.prob_col or spec.prob_cols:
        return True
    lower = {n.lower(): n for n in names}
    if spec.label_col:
        label: str | None = spec.label_col
    else:
        label = next((lower[n] for n in LABEL_NAMES if n in lower), None)
    return bool(_candidates(names, types, label, spec.weight_col))


# ---------------------------------------------------------------------------------------------
# What every file of a dataset is read for (fixed once, from the first file)


@dataclass(frozen=True, kw_only=True)
class DatasetPlan:
    """What every plan of a dataset (:class:`ReadPlan`, :class:`calibcli.io.regression.RegressionPlan`) holds,
    decided from its first file (picklable), and what it reads from each file.

    ``group_by`` are the columns whose values split the rows into report entries (``--group-by``);
    ``segment_by`` the audit's segment columns, read beside every row with empty values allowed (a segment of
    their own) and splitting nothing. A run has one or the other, never both: :attr:`carried` is the one it has.
    ``group_kinds`` says what each of those columns' values are: ``int``, ``float``, ``bool`` or ``str`` (the
    first file's type; every other file is converted to it). ``partition_keys`` are the ones that come from
    ``key=value`` directories rather than from the files' data. A plan also holds ``columns`` (their
    ``prob_columns``, ``label_column``, ``weight_column``) and names its predictions and label
    (``predictions_role``, ``label_role``) for the message of a file that lacks one.
    """

    first_file: str
    batch_rows: int
    drop_invalid: bool = False
    group_by: tuple[str, ...] = ()
    segment_by: tuple[str, ...] = ()
    group_kinds: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    #: The exact power of two every weight is multiplied by as it is read (1.0 but for extreme weights: chosen from
    #: the first rows of the first file, one scale for the whole input, so batches, fragments and workers agree;
    #: calibcli.core.validation.weight_scale).
    weight_scale: int = 0  # (an exponent: the weights are multiplied by 2**weight_scale)
    columns: ClassVar[Any]  # (each plan's own field or property)
    predictions_role = "a probability column"
    label_role = "the label column"

    @property
    def carried(self) -> tuple[str, ...]:
        """The columns read beside every row as each batch's ``groups``: the group-by or the segment columns."""
        return self.segment_by or self.group_by

    @property
    def data_columns(self) -> list[str]:
        """The columns read from each file, each once: the prediction columns, the label (or target) and weight
        columns, then the :attr:`carried` columns but the ``partition_keys`` (those come from ``key=value``
        directories, not the files)."""
        columns = self.columns
        groups = [g for g in self.carried if g not in self.partition_keys]
        weight = [columns.weight_column] if columns.weight_column else []
        return list(dict.fromkeys([*columns.prob_columns, columns.label_column, *weight, *groups]))

    def role_of(self, column: str) -> str:
        """What ``column`` of :attr:`data_columns` is: a prediction column, the label, the weight column, else a
        group-by or segment column."""
        columns = self.columns
        if column in columns.prob_columns:
            return self.predictions_role
        if column == columns.label_column:
            return self.label_role
        if column == columns.weight_column:
            return "the weight column"
        return "a segment column" if self.segment_by else "a group-by column"


@dataclass(frozen=True)
class ReadPlan(DatasetPlan):
    """How the files of one dataset of probabilities are read and converted (:class:`DatasetPlan`)."""

    columns: _Resolved  # type: ignore[misc]  # (a field here, a property of RegressionPlan)
    class_names: tuple[str, ...]
    n_classes: int
    vector_length: int | None  # entries per row of the vector column; None without one
    logits: bool

    def __post_init__(self) -> None:
        assert not (self.group_by and self.segment_by), "a run splits by groups or reads segments, not both"

    def read(self, table, where: str, first_row: int, partition, *, whole_file: bool, text_of):
        """A batch as arrays, the rows passing the checks, the drops by reason (io.regression's plan: its own)."""
        conv = convert_batch(table, self, where, first_row, partition)
        return conv, *check_rows(conv, self, where, first_row, whole_file=whole_file, text_of=text_of)


@dataclass
class Converted:
    """One batch's columns as arrays, before the row checks (:mod:`calibcli.io.checks`)."""

    probs: np.ndarray
    labels: np.ndarray  # class indices; -1 where the label is not a class
    weights: np.ndarray | None
    raw_labels: np.ndarray  # as in the file, for messages
    raw_logits: np.ndarray | None  # the file's values when they are logits
    prob_empty: dict  # probability column -> mask of its empty cells
    not_numbers: dict  # text probability column -> mask of its cells that are not numbers
    label_empty: np.ndarray | None
    weight_empty: np.ndarray | None
    groups: tuple[np.ndarray | CodedText, ...] | None


def group_kind(arrow_type) -> str:
    """What a group column's values are, from its pyarrow type: int, float, bool or str."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return group_kind(arrow_type.value_type)
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_floating(arrow_type):
        return "float"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    return "str"


def convert_batch(table, plan: ReadPlan, where: str, first_row: int, partition: dict | None = None) -> Converted:
    """Convert one batch (a pyarrow table of ``plan.data_columns``) to arrays.

    ``first_row`` is the batch's first row within its file (0-based), for messages. Text columns (CSV)
    are typed here, batch by batch, value by value where it matters, so that the result never depends
    on how the file was cut into batches. Raises :class:`CalibcliError` for problems of a whole column
    (a type that cannot hold probabilities, text labels without class names, ragged vectors).
    """
    import pyarrow as pa

    res = plan.columns
    not_numbers: dict[str, np.ndarray] = {}
    prob_empty: dict[str, np.ndarray] = {}
    if res.vector_column:
        probs = vector_column(table, res.prob_columns[0], where, first_row=first_row, length=plan.vector_length)
    else:
        cols = []
        for c in res.prob_columns:
            col = table.column(c)
            if (empty := null_mask(col)) is not None:
                prob_empty[c] = empty
            if _is_text(col.type):
                values, bad = _text_numbers(col)
                if bad.any():
                    not_numbers[c] = bad
                cols.append(values)
                continue
            if not (pa.types.is_floating(col.type) or pa.types.is_integer(col.type) or pa.types.is_null(col.type)):
                raise CalibcliError(
                    f"{where}: probability column {shown(c)} holds {_type_words(col.type)}: expected numbers; "
                    f"check the column or pass {{opt:prob_col}}/{{opt:prob_cols}}"
                )
            cols.append(_floats(col))
        probs = cols[0] if len(cols) == 1 else np.column_stack(cols)
    if probs.ndim == 2 and probs.shape[1] == 1:
        probs = probs[:, 0]
    raw_logits = None
    if plan.logits:
        raw_logits = probs
        with np.errstate(invalid="ignore", over="ignore"):
            probs = sigmoid(probs) if probs.ndim == 1 else softmax(probs)

    label_col = table.column(res.label_column)
    if _is_list_type(label_col.type) or pa.types.is_struct(label_col.type) or pa.types.is_map(label_col.type):
        raise CalibcliError(
            f"{where}: label column {shown(res.label_column)} holds {_type_words(label_col.type)}: expected one "
            f"label per row (an integer, a boolean or a class name); check the column or pass {{opt:label_col}}"
        )
    if _is_text(label_col.type):
        label_col = _typed_text(label_col)
    raw_labels = _values(label_col)
    labels = _labels_to_index(
        raw_labels, None if probs.ndim == 1 else plan.class_names, plan.n_classes, res.label_column, where
    )

    weights = weight_empty = None
    if res.weight_column:
        col = table.column(res.weight_column)
        if _is_text(col.type):
            col = _typed_text(col)
        if not (pa.types.is_floating(col.type) or pa.types.is_integer(col.type) or pa.types.is_boolean(col.type)):
            raise CalibcliError(
                f"{where}: weight column {shown(res.weight_column)} has type {str(col.type)[:80]}: expected numbers"
            )
        weights = _floats(col)
        weight_empty = null_mask(col)

    groups = None
    if plan.carried:
        n = table.num_rows
        values_of = segment_values if plan.segment_by else group_values
        groups = tuple(
            _constant((partition or {})[g], kind, n)
            if g in plan.partition_keys
            else values_of(table.column(g), kind, g, where, first_row)
            for g, kind in zip(plan.carried, plan.group_kinds, strict=True)
        )
    return Converted(
        probs,
        labels,
        weights,
        raw_labels,
        raw_logits,
        prob_empty,
        not_numbers,
        null_mask(table.column(res.label_column)),
        weight_empty,
        groups,
    )


# ---------------------------------------------------------------------------------------------
# Conversion to arrays. Everything is read from the Arrow buffers: pyarrow's own ``to_numpy`` and
# any pyarrow scalar made from a Python value import pandas (about 0.2 s of every run).


def vector_column(table, name: str, where: str, *, first_row: int = 0, length: int | None = None) -> np.ndarray:
    """A list column as an (n, K) float64 array (NaN for empty entries); every row must hold ``length``
    entries (by default as many as the first row). ``first_row`` numbers the rows in messages."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name)
    col = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    _check_list_of_numbers(col.type, name, where)
    if (empty := null_mask(col)) is not None:
        row = int(np.flatnonzero(empty)[0])
        raise CalibcliError(
            f"{where}: column {shown(name)} is empty at row {first_row + row + 1}: expected a probability vector "
            "on every row"
        )
    if len(col) == 0:
        return np.empty((0, 2 if length is None else length))
    lengths = _numbers_to_numpy(pc.list_value_length(col))
    expected = int(lengths[0]) if length is None else length
    if np.any(lengths != expected):
        row = int(np.flatnonzero(lengths != expected)[0])
        raise CalibcliError(
            f"{where}: column {shown(name)} holds vectors of length {expected} and {lengths[row]} (row "
            f"{first_row + row + 1}): expected one probability per class on every row"
        )
    return _floats(pc.list_flatten(col).cast(pa.float64())).reshape(len(col), expected)


def _type_words(arrow_type) -> str:
    """What a column's values are, in words (for messages): numbers, strings, lists of strings, ..."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return _type_words(arrow_type.value_type)
    if _is_list_type(arrow_type):
        return f"lists of {_type_words(arrow_type.value_type)}"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "numbers"
    if _is_text(arrow_type):
        return "strings"
    if pa.types.is_boolean(arrow_type):
        return "booleans"
    if pa.types.is_null(arrow_type):
        return "empty values"
    if pa.types.is_struct(arrow_type) or pa.types.is_map(arrow_type):
        return "records"
    if (
        pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
        or pa.types.is_fixed_size_binary(arrow_type)
    ):
        return "bytes"
    return f"values of type {str(arrow_type)[:60]}"


def _check_list_of_numbers(arrow_type, name: str, where: str) -> None:
    """A probability vector column must hold lists of numbers (a list of strings or of lists does not
    convert: say so, naming the file and the column)."""
    import pyarrow as pa

    value = arrow_type.value_type
    if pa.types.is_integer(value) or pa.types.is_floating(value) or pa.types.is_null(value):
        return
    raise CalibcliError(
        f"{where}: column {shown(name)} holds {_type_words(arrow_type)}; expected numbers (one probability per row) "
        f"or lists of numbers (one probability per class); check the column or pass {{opt:prob_col}}/{{opt:prob_cols}}"
    )


def _labels_to_index(raw: np.ndarray, class_names: tuple[str, ...] | None, n_classes: int, label_col: str, where: str):
    """Labels as class indices; unmappable ones become -1 (reported by validation).

    Text labels are read one by one: a class name (matching the probability columns' suffixes), else
    true/false, else a number (as an integer label would be); any other text is -1 (a bad row), and an
    error when no label of the batch reads as a class and there are no class names to match.
    """
    if raw.dtype == bool:
        return raw.astype(np.int64)
    if raw.dtype.kind in "iu":
        return _remap_int_labels(raw.astype(np.int64), class_names)
    if raw.dtype.kind == "f":
        bad = ~np.isfinite(raw) | (raw != np.round(raw))
        vals = _remap_int_labels(np.where(bad, -1, raw).astype(np.int64), class_names)
        vals[bad] = -1
        return vals
    present = np.array([v is not None for v in raw], dtype=bool)
    distinct, inverse = np.unique(np.array([str(v).strip() for v in raw[present]], dtype=object), return_inverse=True)
    index = {name: k for k, name in enumerate(class_names or ())}
    mapped = np.full(len(distinct), -1, dtype=np.int64)
    unknown = []
    for i, text in enumerate(distinct):
        lowered = text.lower()
        if text in index:
            mapped[i] = index[text]
        elif lowered in ("true", "false"):
            mapped[i] = int(lowered == "true")
        elif re.fullmatch(_NUMBER_RE, text):
            mapped[i] = _labels_to_index(np.array([float(text)]), class_names, n_classes, label_col, where)[0]
        else:
            unknown.append(lowered)
    if class_names is None and unknown and len(unknown) == len(distinct):  # no label is a number: the column is wrong
        # (a few text labels among numbers are bad rows, reported or dropped one by one)
        sample = sorted({t.lower() for t in distinct})[:5]
        raise CalibcliError(
            f"{where}: labels in column {shown(label_col)} are text ({shown_names(sample)}) but the probabilities "
            f"have no class names to match: expected integer labels 0..{n_classes - 1}, booleans, or p_<class> columns"
        )
    out = np.full(len(raw), -1, dtype=np.int64)
    out[present] = mapped[inverse.reshape(-1)]
    return out


def _remap_int_labels(vals: np.ndarray, class_names: tuple[str, ...] | None) -> np.ndarray:
    """Integer labels index the classes; with integer suffixes that are not 0..K-1, map by suffix."""
    if class_names is None or not all(re.fullmatch(r"-?\d+", c) for c in class_names):
        return vals
    suffix = np.array([int(c) for c in class_names])
    if np.array_equal(suffix, np.arange(len(suffix))):
        return vals
    order = np.argsort(suffix)
    at = np.clip(np.searchsorted(suffix[order], vals), 0, len(suffix) - 1)
    return np.where(suffix[order][at] == vals, order[at], -1).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Group columns


_KIND_NAMES = {"int": "integers", "float": "numbers", "bool": "booleans", "str": "text"}


def group_values(col, kind: str, name: str, where: str, first_row: int) -> np.ndarray:
    """A group column as NumPy: int64, float64 or bool, or str objects for ``kind == "str"``.

    An empty cell is an error (a row must belong to a group); so is a value that does not convert to
    the dataset's kind (the first file's type of the column).
    """
    import pyarrow as pa

    if (empty := null_mask(col)) is not None:
        row = int(np.flatnonzero(empty)[0])
        raise CalibcliError(
            f"{where}: row {first_row + row + 1}, column {name}: the group-by value is empty: expected a value on "
            f"every row (fill it in, or leave this column out of {{opt:group_by}})"
        )
    if kind == "str":
        return _text_values(col if _is_text(col.type) else col.cast(pa.string()))
    target = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}[kind]
    typed = _cast(col, target)
    if typed is None:
        row = _first_failing_row(col, target)
        raise CalibcliError(
            f"{where}: row {first_row + row + 1}, column {shown(name, quote=False)}: the group-by value is "
            f"{shown(col[row].as_py())}, but the column holds {_KIND_NAMES[kind]} (as in the dataset's first file): "
            "make the column one type"
        )
    return _bools(typed) if kind == "bool" else _numbers_to_numpy(typed)


@dataclass(frozen=True)
class CodedText:
    """A text column as codes into its distinct values (Arrow's dictionary encoding, kept): ``codes`` (int32, -1
    for an empty cell) and ``values`` (the distinct strings, by code). What the audit reads for a text segment
    column: 4 bytes a row instead of a Python object, and its coding needs no hashing of strings again.
    Indexing (a mask, a slice) gives the rows' codes with the same values."""

    codes: np.ndarray
    values: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index) -> CodedText:
        return CodedText(self.codes[index], self.values)

    def decode(self) -> np.ndarray:
        """The values as an object array of str, None for an empty cell."""
        return np.array([*self.values, None], dtype=object)[self.codes]  # -1: the None at the end


def _coded_text(col) -> CodedText:
    import pyarrow as pa

    encoded = _plain_text(col)
    encoded = (encoded.combine_chunks() if hasattr(encoded, "combine_chunks") else encoded).dictionary_encode()
    codes = _numbers_to_numpy(encoded.indices.cast(pa.int32())).copy()
    empty = null_mask(encoded.indices)
    if empty is not None:
        codes[empty] = -1
    return CodedText(codes, tuple(encoded.dictionary.to_pylist()))


def segment_values(col, kind: str, name: str, where: str, first_row: int) -> np.ndarray | CodedText:
    """A segment column: text as :class:`CodedText`; numbers as float64 with NaN for an empty cell
    (``kind == "float"``), int64 (``int``, no empty cell); else objects (ints, booleans, None for an empty cell).
    Values convert to the dataset's kind as group values do."""
    import pyarrow as pa

    if kind == "str":
        return _coded_text(col if _is_text(col.type) else col.cast(pa.string()))
    empty = null_mask(col)
    if empty is None:
        values = group_values(col, kind, name, where, first_row)
        return values if kind in ("float", "int") else values.astype(object)
    if kind == "float":
        typed = _cast(col, pa.float64())
        if typed is not None:
            return _numbers_to_numpy(typed.fill_null(float("nan")))
    full = np.flatnonzero(~empty)
    out = np.full(len(col), np.nan if kind == "float" else None, dtype=np.float64 if kind == "float" else object)
    if len(full):
        out[full] = segment_values(col.take(pa.array(full)), kind, name, where, first_row)
    return out


def _first_failing_row(col, arrow_type) -> int:
    """The first row whose value does not convert (by bisection: a handful of casts, no loop over rows)."""
    lo, hi = 0, len(col)  # the first failing row is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _cast(col.slice(lo, mid - lo), arrow_type) is None:
            hi = mid
        else:
            lo = mid
    return lo


def _constant(value, kind: str, n: int) -> np.ndarray:
    """A partition key's value on every row of a batch."""
    dtype = {"int": np.int64, "float": np.float64, "bool": bool, "str": object}[kind]
    out = np.empty(n, dtype=dtype)
    out[:] = value
    return out
