"""Reducing multiclass predictions to the binary problems a metric needs (SPEC section 1).

- ``binary``: one probability column ``z`` against labels in {0, 1}.
- ``top-label``: ``z = max_k P_k`` against ``1[argmax_k P_k == label]`` (ties: lowest index).
- ``marginal``: K problems ``(P_k, 1[label == k])``; lp errors aggregate as
  ``(sum_k v_k CE_k^p)^(1/p)`` with ``v_k = 1/K`` (``uniform``) or the class frequency (``prior``).

K = 2 given as two columns is ``binary`` on the positive class (column 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError

MODES = ("binary", "top-label", "marginal")
CLASS_WEIGHTS = ("uniform", "prior")


@dataclass(frozen=True)
class BinaryProblem:
    """One binary calibration problem: its name in reports, labels, predictions, weights."""

    name: str
    y: np.ndarray
    z: np.ndarray
    sample_weight: np.ndarray | None
    class_index: int | None = None


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, shifted by the row maximum so that it never overflows."""
    a = np.asarray(logits, dtype=np.float64)
    a = a - a.max(axis=1, keepdims=True)
    np.exp(a, out=a)
    a /= a.sum(axis=1, keepdims=True)
    return a


def default_mode(n_classes: int) -> str:
    """``binary`` for one or two probability columns, ``top-label`` for K > 2 (SPEC 1)."""
    return "binary" if n_classes <= 2 else "top-label"


def binary_problems(
    labels: np.ndarray,
    probs: np.ndarray,
    *,
    mode: str,
    sample_weight: np.ndarray | None = None,
    class_names: list[str] | None = None,
) -> list[BinaryProblem]:
    """The binary problems of ``mode`` for validated labels and probabilities.

    ``probs`` is 1-D (binary) or (n, K). Returns one problem for ``binary``/``top-label`` and K
    problems (one per class, named by ``class_names``) for ``marginal``.
    """
    if mode not in MODES:
        raise CalibcliError(f"unknown {{opt:mode}} {mode!r}: expected one of {', '.join(MODES)}")
    if probs.ndim == 1:
        if mode != "binary":
            raise CalibcliError(
                f"{{opt:mode}} {mode} needs one probability column per class, but the input has a single "
                f"probability column: use {{opt:mode}} binary, or pass {{opt:prob_cols}} for every class"
            )
        return [BinaryProblem("binary", labels, probs, sample_weight)]
    K = probs.shape[1]
    names = class_names or [str(k) for k in range(K)]
    if mode == "binary":
        if K != 2:
            raise CalibcliError(
                f"{{opt:mode}} binary needs one probability column or two classes, but the input has {K} "
                f"classes: use {{opt:mode}} top-label or {{opt:mode}} marginal"
            )
        return [BinaryProblem("binary", (labels == 1).astype(np.int64), probs[:, 1], sample_weight)]
    if mode == "top-label":
        pred = np.argmax(probs, axis=1)
        z = probs[np.arange(len(probs)), pred]
        return [BinaryProblem("top-label", (pred == labels).astype(np.int64), z, sample_weight)]
    return [
        BinaryProblem(
            f"class {names[k]}", (labels == k).astype(np.int64), np.ascontiguousarray(probs[:, k]), sample_weight, k
        )
        for k in range(K)
    ]


def class_weights(labels: np.ndarray, n_classes: int, *, scheme: str, sample_weight=None) -> np.ndarray:
    """The ``v_k`` of the marginal aggregate: ``1/K`` (uniform) or the class frequency (prior, seed 001)."""
    if scheme not in CLASS_WEIGHTS:
        raise CalibcliError(f"unknown {{opt:class_weights}} {scheme!r}: expected one of {', '.join(CLASS_WEIGHTS)}")
    if scheme == "uniform":
        return np.full(n_classes, 1.0 / n_classes)
    freq = np.bincount(labels, weights=sample_weight, minlength=n_classes)
    return freq / freq.sum()


def aggregate_lp(values: np.ndarray, weights: np.ndarray, p: float) -> float:
    """``(sum_k v_k CE_k^p)^(1/p)``; ``p = inf`` gives the maximum, ``p = 1`` the weighted mean."""
    values = np.asarray(values, dtype=np.float64)
    if np.isinf(p):
        return float(values.max())
    return float(np.sum(weights * values**p) ** (1.0 / p))


def class_weight_values(scheme: str, class_totals: np.ndarray) -> np.ndarray:
    """The ``v_k`` of the marginal aggregate: ``1/K`` (uniform) or the class frequency (prior, seed 001)."""
    if scheme == "uniform":
        return np.full(len(class_totals), 1.0 / len(class_totals))
    return class_totals / class_totals.sum()
