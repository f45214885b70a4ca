"""Per-row validation of converted arrays: which rows are invalid, why, and the message for each."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibcli.core.errors import CalibcliError, shown
from calibcli.core.validation import ROW_SUM_TOLERANCE

#: Why a row is invalid, in the order the checks run (a row counts under the first that fails) and
#: the order reports list the dropped rows in.
REASONS = (
    "empty probability cell",
    "probability not a number",
    "non-finite probability",
    "probability outside [0, 1]",
    "probabilities not summing to 1",
    "label outside the classes",
    "invalid sample weight",
)


def check_rows(
    conv, plan, where: str, first_row: int, *, whole_file: bool, text_of
) -> tuple[np.ndarray, dict[str, int]]:
    """The rows of one converted batch that pass every check, and how many were dropped per reason.

    Without ``plan.drop_invalid`` the first check that fails raises, naming its first row (1-based,
    within the file) and how many rows fail it: in the file when the batch is the whole file, else in
    the batch's rows. ``text_of(column, row)`` is a cell's text as the file has it.
    """
    res = plan.columns
    if _all_valid(conv, plan.n_classes):  # the usual batch: one pass per column, no per-reason masks
        return np.ones(len(conv.labels), dtype=bool), {}
    keep = np.ones(len(conv.labels), dtype=bool)
    dropped: dict[str, int] = {}
    checks = _invalid_rows(
        conv.probs,
        conv.labels,
        conv.weights,
        plan.n_classes,
        res.label_column,
        res.weight_column,
        logits=conv.raw_logits,
        empty=conv.prob_empty,
        not_numbers=conv.not_numbers,
        text_of=text_of,
        empty_other={res.weight_column: conv.weight_empty} if res.weight_column else {},
    )
    if not plan.drop_invalid:  # report the first bad row in file order (under the first check it fails)
        failing = [(int(np.flatnonzero(mask)[0]), k) for k, (_, mask, _) in enumerate(checks) if mask.any()]
        if failing:
            checks = [checks[min(failing)[1]]]
    for reason, mask, describe in checks:
        mask = mask & keep
        if not mask.any():
            continue
        if not plan.drop_invalid:
            row = int(np.flatnonzero(mask)[0])
            col = (
                res.label_column
                if reason.startswith("label")
                else (res.weight_column if reason.startswith("invalid sample") else ", ".join(res.prob_columns))
            )
            extra = ""
            if reason.startswith("label"):
                empty = conv.label_empty is not None and conv.label_empty[row]
                extra = (
                    f" (found {'empty' if empty else _show(conv.raw_labels[row])}; classes: {list(plan.class_names)})"
                )
            scope = "" if whole_file else f" in rows {first_row + 1}-{first_row + len(keep)}"
            raise CalibcliError(
                f"{where}: row {first_row + row + 1}, column {shown(col, quote=False)}: {describe(row)}{extra}; "
                f"{int(mask.sum())} such row(s)"
                f"{scope}: fix the file or pass {{opt:drop_invalid}} to drop them"
            )
        dropped[reason] = dropped.get(reason, 0) + int(mask.sum())
        keep &= ~mask
    return keep, dropped


def _all_valid(conv, n_classes: int) -> bool:
    """Every row passes every check (a quick test; when it fails, :func:`_invalid_rows` says why).

    ``0 <= p <= 1`` is False for NaN, so one comparison per value covers finiteness and range.
    """
    if conv.raw_logits is not None or conv.prob_empty or conv.not_numbers or conv.probs.ndim != 1:
        return False
    labels = conv.labels
    with np.errstate(invalid="ignore"):
        if not (np.all(conv.probs >= 0.0) and np.all(conv.probs <= 1.0)):
            return False
    if len(labels) and (labels.min() < 0 or labels.max() >= n_classes):
        return False
    w = conv.weights
    if w is not None:
        with np.errstate(invalid="ignore"):
            if not np.all(w >= 0.0) or not np.all(np.isfinite(w)):
                return False
    return True


def _invalid_rows(
    probs,
    labels,
    weights,
    n_classes: int,
    label_col: str,
    weight_col: str | None,
    logits=None,
    empty: dict | None = None,
    not_numbers: dict | None = None,
    text_of=None,
    empty_other: dict | None = None,
):
    """Masks of invalid rows, in the order they are reported, each with a message maker.

    ``logits`` are the file's values when ``--logits`` was given: a non-finite value is reported as
    the file has it, not as its softmax. ``empty`` maps probability columns to their empty cells,
    ``not_numbers`` text columns to their cells that are not numbers (``text_of(col, row)`` gives the text).
    """
    checks: list[tuple[str, np.ndarray, Callable[[int], str]]] = []
    many = probs.ndim == 2
    prob_desc = "class probabilities are" if many else "probability is"

    def empty_cell(c: str) -> Callable[[int], str]:
        return lambda r: f"the cell in column {shown(c)} is empty" if many else "probability is empty"

    def not_a_number(c: str) -> Callable[[int], str]:
        return lambda r: f"column {shown(c)} holds {shown(text_of(c, r))}, not a number"

    for col, mask in (empty or {}).items():
        checks.append(("empty probability cell", mask, empty_cell(col)))
    for col, mask in (not_numbers or {}).items():
        checks.append(("probability not a number", mask, not_a_number(col)))
    source = probs if logits is None else logits
    finite = np.isfinite(source) if source.ndim == 1 else np.isfinite(source).all(axis=1)
    source_desc = prob_desc if logits is None else ("logits are" if many else "logit is")
    checks.append(
        (
            "non-finite probability",
            ~finite,
            lambda r: (
                f"{source_desc} {_fmt(source[r])} (not {'all ' if many else 'a '}finite number{'s' if many else ''})"
            ),
        )
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
            lambda r: f"{prob_desc} {_fmt(probs[r])}, outside [0, 1] (pass {{opt:logits}} if the columns hold logits)",
        )
    )
    if probs.ndim == 2:
        sums = probs.sum(axis=1)
        off = finite & ~outside & (np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)
        checks.append(
            (
                "probabilities not summing to 1",
                off,
                lambda r: (
                    f"class probabilities sum to {sums[r]:.6g}, expected 1 within {ROW_SUM_TOLERANCE:g} "
                    f"(pass every class's column to {{opt:prob_cols}}, or {{opt:logits}})"
                ),
            )
        )
    bad_label = (labels < 0) | (labels >= n_classes)
    checks.append(
        (
            "label outside the classes",
            bad_label,
            lambda r: f"label in column {shown(label_col)} is not one of the {n_classes} classes",
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
                lambda r: (
                    f"weight in column {shown(weight_col)} is "
                    f"{'empty' if weight_empty is not None and weight_empty[r] else _fmt(weights[r])}, "
                    "expected a finite number >= 0"
                ),
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
    return shown(value) if isinstance(value, str) else shown(value, quote=False)


def _fmt(v) -> str:
    arr = np.atleast_1d(np.asarray(v, dtype=np.float64))
    body = ", ".join(f"{x:.6g}" for x in arr[:6])
    return body if arr.size == 1 else f"[{body}{', ...' if arr.size > 6 else ''}]"
