"""One input read whole into memory (:func:`read_input`), as every command used it before streams."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibcli.errors import CalibcliError
from calibcli.io.checks import _invalid_rows, _show
from calibcli.io.columns import (
    ColumnSpec,
    _labels_to_index,
    _null_rows,
    _parse_text_numbers,
    column_to_numpy,
    resolve_columns,
    vector_column,
)
from calibcli.io.formats import _no_rows, _source, _unreadable, detect_format, read_schema_names, read_table

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
