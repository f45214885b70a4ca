"""Validation where data enters (SPEC section 7).

Every check raises :class:`calibcli.errors.CalibcliError` with a message that says what was
found, what was expected and how to fix it. The library functions call
:func:`check_binary` / :func:`check_multiclass` on their inputs; the file readers call the same
checks with ``where=`` naming the file, so messages point at a row or a column.
"""

from __future__ import annotations

import numpy as np

from calibcli.errors import CalibcliError

#: Rows of class probabilities must sum to 1 within this absolute tolerance.
ROW_SUM_TOLERANCE = 1e-4


def _prefix(where: str | None) -> str:
    return f"{where}: " if where else ""


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def check_finite(values: np.ndarray, *, name: str, where: str | None = None) -> None:
    """Reject NaN and +-inf, naming the first offending row (0-based data row)."""
    bad = ~np.isfinite(values)
    if bad.any():
        row = _first_bad(bad.reshape(len(values), -1).any(axis=1)) if values.ndim > 1 else _first_bad(bad)
        found = values.reshape(len(values), -1)[row] if values.ndim > 1 else values[row]
        raise CalibcliError(
            f"{_prefix(where)}{name} has a non-finite value ({_fmt(found)}) at row {row}: "
            f"expected finite numbers; remove the row or pass {{opt:drop_invalid}}"
        )


def check_consistent_length(*arrays: np.ndarray | None, names: tuple[str, ...], where: str | None = None) -> int:
    """All given arrays have the same first dimension; return it."""
    lengths = {name: len(a) for a, name in zip(arrays, names) if a is not None}
    if len(set(lengths.values())) > 1:
        found = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise CalibcliError(f"{_prefix(where)}inputs have different lengths ({found}): expected one value per row")
    n = next(iter(lengths.values()))
    if n == 0:
        raise CalibcliError(f"{_prefix(where)}no rows to evaluate: expected at least one prediction")
    return n


def check_probabilities(y_prob: np.ndarray, *, name: str = "probabilities", where: str | None = None) -> np.ndarray:
    """Probabilities are finite and within [0, 1]; for a 2-D array, rows sum to 1."""
    y_prob = np.asarray(y_prob, dtype=np.float64)
    check_finite(y_prob, name=name, where=where)
    outside = (y_prob < 0.0) | (y_prob > 1.0)
    if outside.any():
        rows = outside if y_prob.ndim == 1 else outside.any(axis=1)
        row = _first_bad(rows)
        raise CalibcliError(
            f"{_prefix(where)}{name} at row {row} is {_fmt(y_prob[row])}, outside [0, 1]: "
            f"if the columns hold logits pass {{opt:logits}}, otherwise pass {{opt:drop_invalid}} to drop such rows"
        )
    if y_prob.ndim == 2:
        sums = y_prob.sum(axis=1)
        off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
        if off.any():
            row = _first_bad(off)
            raise CalibcliError(
                f"{_prefix(where)}{name} at row {row} sum to {sums[row]:.6g}, expected 1 "
                f"(tolerance {ROW_SUM_TOLERANCE:g}): pass every class's column to {{opt:prob_cols}}, "
                f"{{opt:logits}} if they are logits, or {{opt:drop_invalid}}"
            )
    return y_prob


def check_labels(y_true: np.ndarray, *, n_classes: int, where: str | None = None) -> np.ndarray:
    """Labels are integers in ``0..n_classes-1``; returns them as int64."""
    y = np.asarray(y_true)
    if y.dtype == bool:
        y = y.astype(np.int64)
    if y.dtype.kind == "f":
        check_finite(y, name="labels", where=where)
        if np.any(y != np.round(y)):
            row = _first_bad(y != np.round(y))
            raise CalibcliError(
                f"{_prefix(where)}label at row {row} is {y[row]!r}: expected an integer class index "
                f"in 0..{n_classes - 1}"
            )
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu":
        raise CalibcliError(
            f"{_prefix(where)}labels have type {y.dtype}: expected integers 0..{n_classes - 1}, booleans, "
            f"or class names matching the probability columns"
        )
    bad = (y < 0) | (y >= n_classes)
    if bad.any():
        row = _first_bad(bad)
        found = sorted(set(np.unique(y).tolist()))[:10]
        raise CalibcliError(
            f"{_prefix(where)}label at row {row} is {int(y[row])} but there are {n_classes} classes "
            f"(labels found: {found}): expected labels in 0..{n_classes - 1}; pass {{opt:prob_cols}} for every class"
        )
    return y.astype(np.int64, copy=False)


def check_sample_weight(sample_weight: np.ndarray | None, n: int, *, where: str | None = None) -> np.ndarray:
    """Weights are finite, non-negative and not all zero; ``None`` means unit weights."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise CalibcliError(f"{_prefix(where)}sample weights have shape {w.shape}: expected ({n},)")
    check_finite(w, name="sample weight", where=where)
    if (w < 0).any():
        row = _first_bad(w < 0)
        raise CalibcliError(
            f"{_prefix(where)}sample weight at row {row} is {w[row]:g}: expected weights >= 0"
        )
    if w.sum() <= 0:
        raise CalibcliError(f"{_prefix(where)}sample weights sum to 0: expected a positive total weight")
    return w


def check_binary(y_true, y_prob, sample_weight=None, *, where: str | None = None):
    """Validate a binary problem; return ``(y int64 in {0,1}, z float64 in [0,1], w float64)``."""
    z = np.asarray(y_prob, dtype=np.float64)
    if z.ndim != 1:
        raise CalibcliError(f"{_prefix(where)}binary predictions must be 1-D, got shape {z.shape}")
    y = np.asarray(y_true)
    n = check_consistent_length(y, z, sample_weight, names=("labels", "predictions", "sample_weight"), where=where)
    z = check_probabilities(z, name="prediction", where=where)
    y = check_labels(y, n_classes=2, where=where)
    w = check_sample_weight(sample_weight, n, where=where)
    return y, z, w


def check_multiclass(y_true, y_prob, sample_weight=None, *, where: str | None = None):
    """Validate a K-class problem; return ``(c int64 in 0..K-1, P float64 (n, K), w float64)``."""
    P = np.asarray(y_prob, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] < 2:
        raise CalibcliError(f"{_prefix(where)}class probabilities must be an (n, K) array with K >= 2, got shape {P.shape}")
    c = np.asarray(y_true)
    n = check_consistent_length(c, P, sample_weight, names=("labels", "probabilities", "sample_weight"), where=where)
    P = check_probabilities(P, name="class probabilities", where=where)
    c = check_labels(c, n_classes=P.shape[1], where=where)
    w = check_sample_weight(sample_weight, n, where=where)
    return c, P, w


#: Option rules by parameter name: (test, what is expected). One place for every range check.
_RULES = {
    "n_bins": (lambda v: v >= 1, "expected a positive number of bins"),
    "n_boot": (lambda v: v >= 0, "expected 0 (no intervals) or a positive count"),
    "alpha": (lambda v: 0.0 < v < 1.0, "expected a number strictly between 0 and 1"),
    "batch_rows": (lambda v: v >= 1, "expected a positive number of rows per batch"),
    "max_groups": (lambda v: v >= 1, "expected a positive number of groups"),
    "max_overlays": (lambda v: v >= 1, "expected a positive number of groups to draw"),
    "sigma": (lambda v: v > 0, "expected a positive bandwidth, or no {name} for the fixed point"),
    "fail_above": (lambda v: True, ""),
    "fail_above_upper": (lambda v: True, ""),
}


def check_options(choices: dict[str, tuple[str, ...]] | None = None, **values) -> None:
    """Check option values by parameter name: finite numbers within range, choices among the allowed.

    Raises :class:`calibcli.errors.OptionError`, whose message names the parameter (the CLI shows the
    flag instead). ``None`` means "not given" and is always accepted.
    """
    from calibcli.errors import OptionError

    for name, value in values.items():
        if value is None:
            continue
        if choices and name in choices:
            if value not in choices[name]:
                raise OptionError(name, f"{{name}} is {value!r}: expected one of {', '.join(choices[name])}")
            continue
        if isinstance(value, float) and not np.isfinite(value):
            raise OptionError(name, f"{{name}} is {value}: expected a finite number")
        test, expected = _RULES[name]
        if not test(value):
            raise OptionError(name, f"{{name}} is {value}: {expected}")


def check_option(condition: bool, message: str) -> None:
    """Raise a usage error (exit 2) when an option value is out of range."""
    if not condition:
        raise CalibcliError(message)


def _fmt(value) -> str:
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    body = ", ".join(f"{v:.6g}" for v in arr[:6])
    return body if arr.size == 1 else f"[{body}{', ...' if arr.size > 6 else ''}]"
