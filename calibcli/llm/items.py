"""What every reader returns: :class:`Items`, one row per evaluated item, and its table.

An item is either a multiple-choice answer (probabilities over its K choices and the target's index: a
multiclass problem over the choices) or a generated answer judged right or wrong with a confidence (a binary
problem: the confidence that the answer is right). With one K for every item the table has the columns
``p_0..p_{K-1}`` and ``label``; with per-item choice counts it is top-label (``confidence`` = the largest
probability, ``label`` = 1 when its choice is the target), as SPEC 1's top-label reduction would give.
The column ``item`` holds each item's key (``compare`` pairs two models' answers by it); the other columns
(``task``, ``doc.subject``, ``metadata.subject``, ...) are there for ``--group-by`` and ``audit``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.llm.confidence import Rule

#: The item key column of a converted dump.
ITEM_KEY = "item"

#: Columns the table writes itself; a reader's extra columns of these names are refused.
RESERVED = ("label", "confidence", ITEM_KEY)


@dataclass
class Items:
    """The items of one dump (one task): ``keys``; either ``probs`` (one vector per item) and ``targets``, or
    ``confidence`` and ``correct``; ``columns`` (name -> one value per item) for groups and segments; ``rule``
    how the probabilities were made; ``facts`` what the report states about the dump (format, task, counts,
    the tool's own reported numbers)."""

    path: str
    fmt: str
    rule: Rule
    keys: list[str] | Any  # (or a pyarrow string array, from the columnar reader)
    probs: list[np.ndarray] | np.ndarray | None = None  # one vector per item, or an (n, K) matrix
    targets: list[int] | np.ndarray | None = None
    confidence: list[float] | None = None
    correct: list[int] | None = None
    columns: dict[str, list] = field(default_factory=dict)
    facts: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.keys)

    def scores(self) -> dict:
        """Accuracy and, for choices, the option-level Brier score (SPEC 11: ``mean_i sum_k (p_ik - 1{k =
        target_i})^2``, lm-eval's ``brier_score``), with the item and choice counts."""
        if self.probs is None:
            correct = np.asarray(self.correct, dtype=np.float64)
            conf = np.asarray(self.confidence, dtype=np.float64)
            return {
                "items": self.n,
                "accuracy": float(correct.mean()),
                "brier_score": float(np.mean((conf - correct) ** 2)),
                "brier_score_note": "binary: mean (confidence - correct)^2",
            }
        targets = np.asarray(self.targets)
        if isinstance(self.probs, np.ndarray):
            matrix = self.probs
            hit = (np.argmax(matrix, axis=1) == targets).astype(np.float64)
            onehot = np.zeros_like(matrix)
            onehot[np.arange(len(targets)), targets] = 1.0
            return {
                "items": self.n,
                "choices": matrix.shape[1],
                "accuracy": float(hit.mean()),
                "brier_score": float(((matrix - onehot) ** 2).sum(axis=1).mean()),
                "brier_score_note": "option-level: mean over items of sum over choices (p_k - 1{k = target})^2",
            }
        hits = np.array([int(np.argmax(p)) == t for p, t in zip(self.probs, targets, strict=True)], dtype=np.float64)
        brier = np.array(
            [((p - np.eye(len(p))[t]) ** 2).sum() for p, t in zip(self.probs, targets, strict=True)], dtype=np.float64
        )
        sizes = sorted({len(p) for p in self.probs})
        return {
            "items": self.n,
            "choices": sizes[0] if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]} (per item: top-label)",
            "accuracy": float(hits.mean()),
            "brier_score": float(brier.mean()),
            "brier_score_note": "option-level: mean over items of sum over choices (p_k - 1{k = target})^2",
        }

    def table(self):
        """The items as a pyarrow table (the layout of the module docstring), in the items' order."""
        import pyarrow as pa

        if self.n == 0:
            raise CalibcliError(f"{self.path}: holds no items: expected at least one evaluated sample")
        arrays: dict[str, object] = {}
        if self.probs is not None:
            sizes = {self.probs.shape[1]} if isinstance(self.probs, np.ndarray) else {len(p) for p in self.probs}
            if len(sizes) == 1:
                matrix = self.probs if isinstance(self.probs, np.ndarray) else np.vstack(self.probs)
                for k in range(matrix.shape[1]):
                    arrays[f"p_{k}"] = pa.array(matrix[:, k])
                arrays["label"] = pa.array(np.asarray(self.targets, dtype=np.int64))
            else:
                assert self.targets is not None  # (probs come with targets)
                arrays["confidence"] = pa.array(np.array([p.max() for p in self.probs]))
                hits = [int(np.argmax(p)) == t for p, t in zip(self.probs, self.targets, strict=True)]
                arrays["label"] = pa.array(np.array(hits, dtype=np.int64))
        else:
            arrays["confidence"] = pa.array(np.asarray(self.confidence, dtype=np.float64))
            arrays["label"] = pa.array(np.asarray(self.correct, dtype=np.int64))
        order_by = next((self.columns[c] for c in REPEAT_ORDER if c in self.columns), None)
        arrays[ITEM_KEY] = key_array(self.keys, order_by)
        for name, values in self.columns.items():
            if name in arrays:
                continue
            arrays[name] = column_array(values)
        return pa.table(arrays)

    def layout(self) -> str:
        if self.probs is None:
            return "binary: confidence that the answer is right, label = 1 when it is"
        k = {self.probs.shape[1]} if isinstance(self.probs, np.ndarray) else {len(p) for p in self.probs}
        if len(k) == 1:
            (size,) = k
            return f"multiclass over the {size} choices: p_0..p_{size - 1}, label"
        return "top-label (choice counts differ per item): confidence = max_k p_k, label = 1 when argmax = target"


#: The columns that order a repeated key's items before they are numbered (lm-eval's ``doc_id``: the document's
#: place in its task), so the numbers do not depend on the order the rows come in.
REPEAT_ORDER = ("doc_id",)


def key_array(keys, order_by=None):
    """The item keys as a pyarrow string array, made unique (:func:`unique_keys`, repeats numbered in the order of
    ``order_by``, one value per item) where they repeat."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = keys if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(keys, pa.string())
    if pc.count_distinct(array).as_py() == len(array) and array.null_count == 0:
        return array
    if isinstance(order_by, (pa.Array, pa.ChunkedArray)):
        order_by = order_by.to_pylist()
    return pa.array(unique_keys([str(k) for k in array.to_pylist()], order_by), pa.string())


def _order_value(value) -> tuple:
    """A sort key of one ``order_by`` value: numbers, then texts, then missing values."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, "")
    return (1, 0, str(value)) if value is not None else (2, 0, "")


def unique_keys(keys: list[str], order_by: list | None = None) -> list[str]:
    """Keys made unique by a ``#2``, ``#3``, ... suffix on repeats (two equal documents in one task). Within a
    repeated key the items are numbered in the order of ``order_by`` (lm-eval's ``doc_id``), so the same
    document gets the same key however the rows are ordered; items with equal values keep their reading order."""
    rows: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        rows.setdefault(key, []).append(i)
    out = list(keys)
    for key, where in rows.items():
        if len(where) == 1:
            continue
        if order_by is not None:
            where = sorted(where, key=lambda i: _order_value(order_by[i]))  # (stable: reading order among equals)
        for count, i in enumerate(where[1:], start=2):
            out[i] = f"{key}#{count}"
    return out


def column_array(values: list):
    """One extra column: numbers stay numbers when every value is one (``None`` where missing), else text."""
    import pyarrow as pa

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.array(values, pa.bool_())
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.array(values, pa.int64())
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array([None if v is None else str(v) for v in values], pa.string())


def flat_fields(record: dict, prefix: str, out: dict, depth: int = 0) -> None:
    """The scalar fields of a JSON object as ``prefix.name`` (nested objects as ``prefix.a.b``, two levels);
    lists are left out (choices, messages)."""
    for key, value in record.items():
        name = f"{prefix}.{key}"
        if isinstance(value, dict):
            if depth < 1:
                flat_fields(value, name, out, depth + 1)
        elif value is None or isinstance(value, (str, int, float, bool)):
            out[name] = value


def add_row_columns(columns: dict[str, list], row: dict, n_before: int) -> None:
    """Append one item's extra fields to ``columns`` (a field first seen late is None for earlier items)."""
    for name in row:
        if name not in columns:
            columns[name] = [None] * n_before
    for name, values in columns.items():
        values.append(row.get(name))
