"""Arrow columns as NumPy arrays: numbers, booleans, text and text that spells numbers, with their nulls (the
conversions :mod:`calibcli.io.columns` applies to every column it reads)."""

from __future__ import annotations

import numpy as np


def column_to_numpy(table, name: str) -> np.ndarray:
    """A column as NumPy: numbers as numbers (NaN where empty), anything else as objects (None where empty)."""
    return _values(table.column(name))


#: NumPy dtypes of Arrow's fixed-width number types, by the type's name.
_NUMBER_DTYPES: dict[str, np.dtype] = {
    "double": np.dtype(np.float64),
    "float": np.dtype(np.float32),
    "halffloat": np.dtype(np.float16),
    **{f"{sign}int{bits}": np.dtype(f"{sign}int{bits}") for sign in ("", "u") for bits in (8, 16, 32, 64)},
}


def _chunks(col) -> list:
    return list(col.chunks) if hasattr(col, "chunks") else [col]


def _numbers_to_numpy(col) -> np.ndarray:
    """A column of fixed-width numbers as a NumPy array, straight from the Arrow buffers (the values
    under empty cells are whatever the buffer holds: see :func:`null_mask`)."""
    dtype = np.dtype(_NUMBER_DTYPES[str(col.type)])
    parts = []
    for chunk in _chunks(col):
        data = chunk.buffers()[1]
        if not len(chunk):
            continue
        if data is None:
            parts.append(np.zeros(len(chunk), dtype=dtype))
        else:
            parts.append(np.frombuffer(data, dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize))
    if not parts:
        return np.empty(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def null_mask(col) -> np.ndarray | None:
    """Rows where the column's cell is empty (None when it has none), from the validity bitmaps."""
    if not col.null_count:
        return None
    parts = []
    for chunk in _chunks(col):
        n = len(chunk)
        if chunk.null_count == 0:
            parts.append(np.zeros(n, dtype=bool))
        elif chunk.null_count == n:
            parts.append(np.ones(n, dtype=bool))
        else:
            bits = np.unpackbits(np.frombuffer(chunk.buffers()[0], dtype=np.uint8), bitorder="little")
            parts.append(bits[chunk.offset : chunk.offset + n] == 0)
    return np.concatenate(parts)


def _floats(col) -> np.ndarray:
    """Numbers (or booleans) as float64, NaN where empty."""
    import pyarrow as pa

    if pa.types.is_boolean(col.type) or pa.types.is_null(col.type) or str(col.type) not in _NUMBER_DTYPES:
        col = col.cast(pa.float64())
    values = _numbers_to_numpy(col).astype(np.float64, copy=False)
    empty = null_mask(col)
    if empty is not None:
        values = values.copy()
        values[empty] = np.nan
    return values


def _bools(col) -> np.ndarray:
    import pyarrow as pa

    return _numbers_to_numpy(col.cast(pa.uint8())).astype(bool)


def _is_text(arrow_type) -> bool:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return _is_text(arrow_type.value_type)
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _plain_text(col):
    """A text column as plain ``string`` (dictionary-encoded and large strings decoded)."""
    import pyarrow as pa

    return col if col.type == pa.string() else col.cast(pa.string())


def _text_values(col) -> np.ndarray:
    """A text column as an object array of str (None where empty), through its dictionary of distinct values."""
    import pyarrow as pa

    encoded = _plain_text(col)
    encoded = (encoded.combine_chunks() if hasattr(encoded, "combine_chunks") else encoded).dictionary_encode()
    distinct = np.array([*encoded.dictionary.to_pylist(), None], dtype=object)
    index = _numbers_to_numpy(encoded.indices.cast(pa.int64())).copy()
    empty = null_mask(encoded.indices)
    if empty is not None:
        index[empty] = len(distinct) - 1
    return distinct[index]


def _values(col) -> np.ndarray:
    """A column as NumPy: numbers as numbers (float64 with NaN when some are empty), booleans as bool,
    text as str objects, anything else (and booleans with empty cells) as Python objects."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_dictionary(t):
        col, t = col.cast(t.value_type), t.value_type
    if pa.types.is_floating(t) or pa.types.is_integer(t):
        return _floats(col) if col.null_count else _numbers_to_numpy(col)
    if pa.types.is_boolean(t) and not col.null_count:
        return _bools(col)
    if _is_text(t):
        return _text_values(col)
    return np.asarray(col.to_pylist(), dtype=object)


_NUMBER_RE = r"^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|Infinity|nan|NaN)$"


def _cast(col, arrow_type, *, trim: bool = True):
    """``col`` cast to ``arrow_type`` (surrounding spaces ignored for text, as pyarrow's CSV reader does
    for numbers); None when some value does not convert."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(col, arrow_type)
    except pa.ArrowException:  # no such value, or no such conversion
        pass
    if trim and _is_text(col.type):
        try:
            return pc.cast(pc.utf8_trim_whitespace(_plain_text(col)), arrow_type)
        except pa.ArrowException:  # no such value, or no such conversion
            pass
    return None


def _text_numbers(col) -> tuple[np.ndarray, np.ndarray]:
    """A text column read as numbers: the values (NaN where not a number) and the mask of such cells.

    When every cell converts, this is what a numeric column would give (pyarrow's own number parser);
    otherwise each cell is checked on its own, so one bad cell does not change how the others read.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    numbers = _cast(col, pa.float64())
    if numbers is not None:
        return _floats(numbers), np.zeros(len(col), dtype=bool)
    trimmed = pc.utf8_trim_whitespace(_plain_text(col))
    numeric = pc.match_substring_regex(trimmed, _NUMBER_RE)
    is_number = _bools(numeric)
    if (empty := null_mask(numeric)) is not None:
        is_number &= ~empty
    values = np.full(len(col), np.nan)
    if is_number.any():
        values[is_number] = _floats(pc.cast(pc.filter(trimmed, numeric), pa.float64()))
    empty = null_mask(col)
    return values, ~is_number if empty is None else ~is_number & ~empty


def _typed_text(col):
    """A text column typed as pyarrow's CSV reader would have typed it: integers, else numbers, else
    booleans, else text (then each label is read on its own: :func:`_labels_to_index`)."""
    import pyarrow as pa

    for arrow_type in (pa.int64(), pa.float64()):
        if (typed := _cast(col, arrow_type)) is not None:
            return typed
    typed = _cast(col, pa.bool_(), trim=False)
    return col if typed is None else typed
