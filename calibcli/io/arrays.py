"""Array-likes of the PyData ecosystem as NumPy arrays, without importing their libraries.

The metric functions of :mod:`calibcli.metrics` take labels, probabilities and weights as NumPy arrays,
lists, pandas or polars Series and DataFrames, pyarrow arrays, tables and list columns, or any array
exposing ``__array__`` or the array API's ``__dlpack__`` (torch, JAX, CuPy on the CPU, ...). Which kind
an object is comes from ``type(x).__module__`` and duck typing, never from an import: a user who never
imported pandas, polars, pyarrow or torch does not pay for them here (``tests/api/test_library_metrics.py``
checks it in a fresh interpreter).

- :func:`as_numpy` turns one array-like into ``(array, column names or None)``.
- :func:`select` picks columns of a table by name (``data=`` of the metric functions).
- :func:`prepare` turns ``y_true, y_prob, sample_weight`` into validated arrays, with the class names
  and the label mapping the command line uses for a file with the same columns
  (:mod:`calibcli.io.columns`): probability columns ``p_<class>`` name their classes, and text labels
  are matched to those names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError, shown
from calibcli.core.modes import sigmoid, softmax
from calibcli.core.validation import check_binary, check_multiclass
from calibcli.io.columns import _labels_to_index, _suffix, expand_columns


def _module(x) -> str:
    return type(x).__module__ or ""


def _from(x, *prefixes: str) -> bool:
    module = _module(x)
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def as_numpy(x, *, name: str) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """``x`` as a NumPy array, and its column names when it is a table (DataFrame, Arrow table, mapping).

    Tables give an ``(n, columns)`` array; a column holding a list per row (Arrow list arrays, polars
    list or array columns) gives an ``(n, K)`` array. ``name`` names the argument in error messages.
    """
    if isinstance(x, np.ndarray):
        return x, None
    if _from(x, "pandas"):
        return _pandas(x, name)
    if _from(x, "polars"):
        return _polars(x, name)
    if _from(x, "pyarrow"):
        return _arrow(x, name)
    if isinstance(x, Mapping):
        names = tuple(str(k) for k in x)
        return _stack([as_numpy(v, name=f"{name}[{k!r}]")[0] for k, v in x.items()], name), names
    return _array_api(x, name), None


def _stack(columns: list[np.ndarray], name: str) -> np.ndarray:
    if not columns:
        raise CalibcliError(f"{name} has no columns: expected one probability column, or one per class")
    if any(c.ndim != 1 for c in columns) or len({len(c) for c in columns}) > 1:
        raise CalibcliError(f"{name}: every column must hold one number per row, all of the same length")
    return np.column_stack(columns)


def _pandas(x, name: str):
    if hasattr(x, "columns"):  # DataFrame
        names = tuple(str(c) for c in x.columns)
        return _stack([_pandas(x.iloc[:, j], f"{name}[{names[j]!r}]")[0] for j in range(x.shape[1])], name), names
    return _vectors(np.asarray(x.to_numpy()), name), None  # nullable numbers: missing values as NaN


def _polars(x, name: str):
    if hasattr(x, "collect"):  # LazyFrame
        x = x.collect()
    if hasattr(x, "get_column"):  # DataFrame
        names = tuple(str(c) for c in x.columns)
        return _stack([_polars(x.get_column(c), f"{name}[{c!r}]")[0] for c in x.columns], name), names
    return _vectors(np.asarray(x.to_numpy()), name), None


def _arrow(x, name: str):
    if hasattr(x, "column_names"):  # Table, RecordBatch
        names = tuple(str(c) for c in x.column_names)
        return _stack([_arrow(x.column(j), f"{name}[{names[j]!r}]")[0] for j in range(x.num_columns)], name), names
    return _vectors(np.asarray(x.to_numpy(zero_copy_only=False)), name), None


def _vectors(values: np.ndarray, name: str) -> np.ndarray:
    """A column of per-row vectors (list columns come out as an object array of arrays) as ``(n, K)``."""
    if values.dtype != object or not len(values) or not isinstance(values[0], (list, tuple, np.ndarray)):
        return values
    if any(v is None for v in values) or len({len(v) for v in values}) > 1:
        raise CalibcliError(
            f"{name} holds a vector per row of unequal lengths or empty rows: expected one "
            f"probability per class on every row"
        )
    return np.asarray(values.tolist(), dtype=np.float64)


def _array_api(x, name: str) -> np.ndarray:
    """Anything else: torch and JAX tensors, array-API arrays, lists. ``__dlpack__`` first (no copy on the
    CPU), then ``__array__``, then :func:`numpy.asarray`."""
    if _from(x, "torch"):  # a tensor that requires grad, or lives on a GPU, refuses both protocols
        for step in ("detach", "cpu", "resolve_conj", "resolve_neg"):
            if hasattr(x, step):
                x = getattr(x, step)()
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        try:
            return np.from_dlpack(x)
        except (BufferError, TypeError, ValueError, RuntimeError):
            pass  # another device or dtype: __array__ may still copy it to the host
    try:
        out = np.asarray(x)
    except Exception as exc:  # noqa: BLE001  (whatever the library raises: say what to do instead)
        raise CalibcliError(
            f"{name} of type {_module(x)}.{type(x).__name__} cannot be read as a NumPy array "
            f"({exc}): move it to the CPU first (x.cpu(), x.get()) or pass a NumPy array"
        ) from None
    if out.dtype == object and out.ndim == 0:
        raise CalibcliError(
            f"{name} of type {_module(x)}.{type(x).__name__} is not an array: expected an "
            f"array-like of numbers (NumPy, list, pandas, polars, pyarrow, torch, JAX)"
        )
    return out


def select(data, columns, *, name: str):
    """The column ``columns`` (a name) or columns (a list of names or glob patterns) of the table ``data``.

    ``data`` is a pandas or polars DataFrame, a pyarrow Table or RecordBatch, or a mapping of columns. A
    pattern such as ``"p_*"`` selects the matching columns in the order of their numeric suffixes (p_2
    before p_10), as ``--prob-cols`` does.
    """
    available = _column_names(data)
    if isinstance(columns, str):
        columns = [columns]

    def strings():  # (checked as they come: the first item at fault is the one named)
        for item in columns:
            if not isinstance(item, str):
                raise CalibcliError(f"{name}: with data, name columns by strings, got {item!r}")
            yield item

    def present(item: str) -> str:
        if item not in available:
            raise CalibcliError(f"{name}: data has no column {item!r}; its columns are {list(available)}")
        return item

    chosen = expand_columns(
        strings(),
        available,
        missing=lambda item: f"{name}: pattern {item!r} matches no column of data; its columns are {list(available)}",
        named=present,
    )
    if len(chosen) == 1:
        return _get(data, chosen[0])
    return {c: _get(data, c) for c in chosen}


def _column_names(data) -> tuple[str, ...]:
    if isinstance(data, Mapping):
        return tuple(str(k) for k in data)
    for attr in ("column_names", "columns"):
        names = getattr(data, attr, None)
        if names is not None:
            return tuple(str(c) for c in names)
    raise CalibcliError(
        f"data of type {type(data).__name__} is not a table: expected a pandas or polars DataFrame, "
        f"a pyarrow Table or a mapping of column names to arrays"
    )


def _get(data, column: str):
    if isinstance(data, Mapping):
        return data[column]
    if _from(data, "pyarrow"):
        return data.column(column)
    if _from(data, "pandas"):
        for c in data.columns:  # column labels may be numbers: match them by their text
            if str(c) == column:
                return data[c]
    return data[column]


# ---------------------------------------------------------------------------------------------
# Labels, probabilities and weights of one metric call


@dataclass(frozen=True)
class Prepared:
    """Validated inputs: labels (int64 class indices), probabilities (1-D or ``(n, K)``), weights, classes."""

    labels: np.ndarray
    probs: np.ndarray
    sample_weight: np.ndarray | None
    class_names: tuple[str, ...]

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def n(self) -> int:
        return len(self.labels)


def prepare(y_true, y_prob, sample_weight=None, *, data=None, logits: bool = False) -> Prepared:
    """Labels, probabilities and weights as validated NumPy arrays (SPEC 1 layouts, SPEC 7 checks).

    ``y_prob`` is one probability column (binary) or one column per class (a 2-D array, a DataFrame, or a
    list column); a single column given as a one-column table is binary. With ``data``, ``y_true``,
    ``y_prob`` and ``sample_weight`` may name its columns. ``logits``: the columns hold logits, turned
    into probabilities by a stable sigmoid (one column) or softmax (SPEC 1).
    """
    if data is not None:
        if _from(data, "polars") and hasattr(data, "collect"):  # a LazyFrame: run its query once
            data = data.collect()
        y_true = select(data, y_true, name="y_true") if isinstance(y_true, str) else y_true
        if isinstance(y_prob, str) or (
            isinstance(y_prob, Sequence) and y_prob and all(isinstance(c, str) for c in y_prob)
        ):
            y_prob = select(data, y_prob, name="y_prob")
        sample_weight = (
            select(data, sample_weight, name="sample_weight") if isinstance(sample_weight, str) else sample_weight
        )
    probs, columns = as_numpy(y_prob, name="y_prob")
    if probs.ndim == 2 and probs.shape[1] == 1:
        probs, columns = probs[:, 0], None
    if probs.dtype.kind not in "fiub":
        raise CalibcliError(
            f"y_prob has values of type {probs.dtype}: expected numbers (probabilities, or logits with logits=True)"
        )
    probs = np.asarray(probs, dtype=np.float64)
    if logits:
        if not np.all(np.isfinite(probs)):
            raise CalibcliError("y_prob holds logits with a non-finite value: expected finite numbers")
        probs = sigmoid(probs) if probs.ndim == 1 else softmax(probs)
    if probs.ndim not in (1, 2):
        raise CalibcliError(
            f"y_prob has shape {probs.shape}: expected one probability per row (1-D) or one per class (n, K)"
        )
    raw, _ = as_numpy(y_true, name="y_true")
    raw = raw.reshape(-1) if raw.ndim == 2 and 1 in raw.shape else raw
    class_names = _class_names(columns, probs)
    labels = _labels(raw, None if columns is None else class_names, len(class_names))
    w = None
    if sample_weight is not None:
        w, _ = as_numpy(sample_weight, name="sample_weight")
        w = np.asarray(w, dtype=np.float64).reshape(-1) if w.dtype.kind in "fiub" else w
    if probs.ndim == 1:
        labels, probs, w_checked = check_binary(labels, probs, w)
    else:
        labels, probs, w_checked = check_multiclass(labels, probs, w)
    return Prepared(labels, probs, None if w is None else w_checked, class_names)


def _class_names(columns: tuple[str, ...] | None, probs: np.ndarray) -> tuple[str, ...]:
    """Class names as the command line gives them: the suffixes of ``p_<class>`` columns, else 0..K-1."""
    if probs.ndim == 1:
        return ("0", "1")
    if columns is not None:
        names = tuple(_suffix(c) for c in columns)
        if len(set(names)) == len(names):
            return names
    return tuple(str(k) for k in range(probs.shape[1]))


def _labels(raw: np.ndarray, class_names: tuple[str, ...] | None, n_classes: int) -> np.ndarray:
    """Class indices by the CLI's rule (:func:`calibcli.io.columns._labels_to_index`): integers and booleans as
    they are (remapped by integer class names such as p_1..p_3), text matched to the class names. Anything
    else is left to :func:`calibcli.core.validation.check_labels`, whose messages say what is wrong."""
    if raw.ndim != 1:
        raise CalibcliError(f"y_true has shape {raw.shape}: expected one label per row")
    if raw.dtype.kind in "USO":
        raw = raw.astype(object)
        _check_present(raw)
        numbers = _as_numbers(raw)
        if numbers is None:
            if class_names is None:
                distinct = sorted({str(v) for v in raw[:10_000]})[:5]
                raise CalibcliError(
                    f"y_true holds text labels ({distinct}) but y_prob has no class names to match them: pass integer "
                    f"labels 0..{n_classes - 1} or booleans, or y_prob as a DataFrame whose columns name the classes "
                    f"(p_<class>)"
                )
            labels = _labels_to_index(raw, class_names, n_classes, "y_true", "y_true")
            if (labels < 0).any():
                row = int(np.flatnonzero(labels < 0)[0])
                raise CalibcliError(
                    f"y_true at row {row} is {shown(raw[row])}, which names no class: the classes (from the "
                    f"columns of y_prob) are {list(class_names)}"
                )
            return labels
        raw = numbers
    if raw.dtype.kind == "f" and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw)):
        raw = raw.astype(np.int64)
    if class_names is not None and raw.dtype.kind in "iu":
        return _labels_to_index(raw, class_names, n_classes, "y_true", "y_true")
    return raw


def _missing(value) -> bool:
    """A missing label: None, pandas' ``NA`` (a nullable boolean or integer), NaN or NaT."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, (float, np.floating)) and bool(np.isnan(value))


def _check_present(raw: np.ndarray) -> None:
    """Object labels without a missing one (a pandas nullable boolean with ``NA`` is missing labels, not text)."""
    for row, value in enumerate(raw):
        if _missing(value):
            raise CalibcliError(
                f"y_true at row {row} is missing ({value}): expected a label on every row; drop the rows "
                f"without one (pandas: dropna)"
            )


def _as_numbers(raw: np.ndarray) -> np.ndarray | None:
    """Object labels that are all numbers or booleans (a categorical of integers, say) as a numeric array."""
    if not all(isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)) for v in raw):
        return None
    return raw.astype(np.float64)
