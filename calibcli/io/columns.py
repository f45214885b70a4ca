"""Which columns hold what (flags or the common layouts), and their conversion to NumPy arrays."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import numpy as np

from calibcli.errors import CalibcliError

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


