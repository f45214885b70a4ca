"""Recalibrating K-class probability vectors with a binary method (SPEC 5, "Multiclass"; SPEC 1 modes).

- ``marginal`` (one-vs-rest; Zadrozny & Elkan 2002, seed 001 "marginal calibration"): class k gets its own
  binary calibrator ``g_k``, fitted on ``(P_k, 1[c == k])``. A new row becomes ``g_k(P_k)`` divided by the
  row's sum, so rows sum to 1 again (the renormalisation is part of the method and every report says so).
  A row whose recalibrated values are all 0 keeps its input probabilities.
- ``top-label`` (seed 001 "top-label calibration"): one binary calibrator g fitted on the confidence
  ``max_k P_k`` against ``1[argmax_k P_k == c]`` (ties: lowest index, as ``numpy.argmax``). A new row gets
  ``c' = g(max_k P_k)`` for its top class; the other classes share ``1 - c'`` in proportion to their input
  probabilities (equally, if they are all 0). Rows sum to 1 and the non-top classes keep their ratios; if
  ``c'`` falls below some other class's new value the argmax changes, which the recalibrated confidence
  then says is the better bet.
- ``binary`` (K = 2 given as two columns): the binary calibrator on column 1, returned as ``(1 - g, g)``.

``temperature`` recalibrates the whole vector natively and is not wrapped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.calibrators._common import BinaryCalibrator, check_predict_input, check_predicted
from calibcli.core.errors import CalibcliError

WRAP_MODES = ("top-label", "marginal", "binary")


def top_label_problem(y_true: np.ndarray, y_prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(1[argmax P == c], max P)``: the binary problem of the top-label confidence."""
    top = np.argmax(y_prob, axis=1)
    return (top == y_true).astype(np.int64), y_prob[np.arange(len(top)), top]


def apply_top_label(y_prob: np.ndarray, confidence: np.ndarray) -> np.ndarray:
    """Set each row's top class to ``confidence`` and rescale the others to fill ``1 - confidence``."""
    n, K = y_prob.shape
    rows = np.arange(n)
    top = np.argmax(y_prob, axis=1)
    rest = 1.0 - y_prob[rows, top]
    out = y_prob.copy()
    out[rows, top] = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = (1.0 - confidence) / rest
    degenerate = ~(rest > 0)
    out *= np.where(degenerate, 0.0, scale)[:, None]
    if degenerate.any():
        out[degenerate] = ((1.0 - confidence[degenerate]) / (K - 1))[:, None]
    out[rows, top] = confidence
    return out


def renormalise_rows(values: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Rows divided by their sums; a row summing to 0 takes the row of ``fallback``."""
    sums = values.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = values / sums
    zero = sums[:, 0] <= 0
    if zero.any():
        out[zero] = fallback[zero]
    return out


@dataclass(frozen=True, eq=False)
class MulticlassCalibrator:
    """Binary calibrators applied to K-class probabilities in ``mode`` (``marginal``, ``top-label``, ``binary``)."""

    mode: str
    n_classes: int
    calibrators: tuple[BinaryCalibrator, ...]  # K for marginal, 1 otherwise

    @property
    def method(self) -> str:
        return self.calibrators[0].method

    def predict(self, y_prob) -> np.ndarray:
        """Recalibrated ``(n, K)`` probabilities; every row sums to 1; never a non-finite value or one outside
        [0, 1] (each binary map's output is checked before it is combined, :func:`check_predicted`)."""
        P = check_predict_input(y_prob, ndim=2)
        if P.shape[1] != self.n_classes:
            raise CalibcliError(
                f"predict got {P.shape[1]} class columns: the calibrator was fitted on {self.n_classes} classes"
            )
        if self.mode == "binary":
            g = check_predicted(self.calibrators[0]._predict(P[:, 1]), P[:, 1], self.method)
            return np.column_stack([1.0 - g, g])
        if self.mode == "top-label":
            _, conf = top_label_problem(np.zeros(len(P), dtype=np.int64), P)
            g = check_predicted(self.calibrators[0]._predict(conf), conf, self.method)
            return check_predicted(apply_top_label(P, g), None, self.method)
        G = np.column_stack(
            [check_predicted(cal._predict(P[:, k]), P[:, k], self.method) for k, cal in enumerate(self.calibrators)]
        )
        return check_predicted(renormalise_rows(G, P), None, self.method)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "mode": self.mode,
            "n_classes": int(self.n_classes),
            "renormalised": self.mode == "marginal",
            "calibrators": [cal.to_dict() for cal in self.calibrators],
        }
