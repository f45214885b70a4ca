"""Isotonic regression and inductive Venn-Abers predictors (SPEC 5).

- ``isotonic`` (Zadrozny & Elkan 2002; seed 002 "isotonic regression"): the non-decreasing step function
  minimising the weighted squared error on (z, y), by pool-adjacent-violators (PAVA). Equal z are pooled
  first (their weighted mean label, their summed weight), as scikit-learn's ``IsotonicRegression`` does.
  New z are mapped by the fitted step function (``interpolation="step"``: the value at the largest
  calibration score <= z, the first value below the range) or, with ``interpolation="linear"``, by linear
  interpolation between the calibration scores (scikit-learn's ``predict`` with ``out_of_bounds="clip"``).
- ``venn-abers`` (Vovk & Petej 2014; seed 002 Algorithm 12.11): for a new z, isotonic fits on the
  calibration set plus ``(z, 0)`` and plus ``(z, 1)`` give ``p0 <= p1`` at z; the output is
  ``p = p1 / (1 - p0 + p1)`` with the interval ``[p0, p1]``. Computed in ``O(n log n + m log n)`` with the
  cumulative-sum-diagram idea of Vovk, Petej & Fedorova (2015), "Large-scale probabilistic predictors with
  and without guarantees of validity": all the values a test point can take are precomputed once
  (:func:`_label_one_values`), then each test point is a binary search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from calibcli.calibrators._common import (
    BinaryCalibrator,
    Fields,
    check_predict_input,
    check_predicted,
    float_list,
    shown_number,
)
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_binary, check_option

INTERPOLATIONS = ("step", "linear")


def _pool_ties(y: np.ndarray, z: np.ndarray, w: np.ndarray):
    """Distinct sorted scores with their summed weight and weighted label sum."""
    order = np.argsort(z)
    zs = z[order]
    starts = np.flatnonzero(np.concatenate([[True], zs[1:] != zs[:-1]]))
    ws = w[order]
    weight = np.add.reduceat(ws, starts)
    label_sum = np.add.reduceat(ws * y[order], starts)
    return zs[starts], weight, label_sum


#: Most points :func:`pava` fits in Python: below it the loop (about 10 ms at most) is cheaper than importing
#: scipy.optimize (0.25 s, a tenth of a small report), above it scipy's compiled loop is faster.
PAVA_PYTHON_MAX = 20_000


def pava(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted pool-adjacent-violators: the non-decreasing fit of ``values`` (weights > 0).

    Busing's O(n) algorithm (2022, "Monotone Regression: A Simple and Fast O(n) PAVA Implementation", Journal of
    Statistical Software 102, code snippet 1), which scipy's ``isotonic_regression`` compiles: up to
    :data:`PAVA_PYTHON_MAX` points in Python (:func:`_pava_loop`, the same operations in the same order, so the
    same doubles), beyond it scipy's."""
    if len(values) <= PAVA_PYTHON_MAX:
        return _pava_loop(values, weights)
    from scipy.optimize import isotonic_regression

    return np.asarray(isotonic_regression(values, weights=weights, increasing=True).x, dtype=np.float64)


def _pava_loop(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """:func:`pava` as a Python loop over Python floats (IEEE doubles, as scipy's C++): the blocks are kept as
    their value and weight in ``x[:b + 1]``, ``w[:b + 1]`` and the index where each ends in ``ends``; a block that
    is not above the one before it (``>=``, so equal values share a block) merges with its neighbours until the
    sequence of blocks increases again."""
    x = [float(v) for v in values]
    w = [float(v) for v in weights]
    n = len(x)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    ends = [0] * n
    ends[0] = 1
    b = 0  # the last block's index
    prev_x, prev_w = x[0], w[0]
    i = 1
    while i < n:
        b += 1
        xb, wb = x[i], w[i]
        if prev_x >= xb:  # pooled with the block before
            b -= 1
            sb = prev_w * prev_x + wb * xb
            wb += prev_w
            xb = sb / wb
            while i < n - 1 and xb >= x[i + 1]:  # and with the next points while they are not above
                i += 1
                sb += w[i] * x[i]
                wb += w[i]
                xb = sb / wb
            while b > 0 and x[b - 1] >= xb:  # and with the blocks before while they are not below
                b -= 1
                sb += w[b] * x[b]
                wb += w[b]
                xb = sb / wb
        x[b] = prev_x = xb
        w[b] = prev_w = wb
        ends[b] = i + 1
        i += 1
    starts = [0, *ends[:b]]
    return np.repeat(np.asarray(x[: b + 1], dtype=np.float64), np.diff([*starts, ends[b]]))


@dataclass(frozen=True, eq=False)
class IsotonicCalibrator(BinaryCalibrator):
    """A fitted isotonic step function: ``x_thresholds`` (increasing) with values ``y_thresholds``.

    Only the first and last calibration score of every constant piece is kept; neither prediction rule
    depends on the others.
    """

    method: ClassVar[str] = "isotonic"
    x_thresholds: np.ndarray
    y_thresholds: np.ndarray
    interpolation: str = "step"

    def _predict(self, z: np.ndarray) -> np.ndarray:
        if self.interpolation == "linear":
            return np.interp(z, self.x_thresholds, self.y_thresholds)
        idx = np.searchsorted(self.x_thresholds, z, side="right") - 1
        return self.y_thresholds[np.maximum(idx, 0)]

    def params(self) -> dict[str, Any]:
        return {"x_thresholds": float_list(self.x_thresholds), "y_thresholds": float_list(self.y_thresholds)}

    def options(self) -> dict[str, Any]:
        return {"interpolation": self.interpolation}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> IsotonicCalibrator:
        x = params.array("x_thresholds", min_length=1, low=0.0, high=1.0, increasing=True, strictly=True)
        yv = params.array("y_thresholds", length=len(x), low=0.0, high=1.0, increasing=True)
        return cls(x, yv, options.choice("interpolation", INTERPOLATIONS), info=info)


def fit_isotonic(y_true, y_prob, *, sample_weight=None, interpolation: str = "step") -> IsotonicCalibrator:
    """Isotonic recalibration by weighted PAVA with ties pooled (SPEC 5, `isotonic`)."""
    check_option(
        interpolation in INTERPOLATIONS,
        f"interpolation is {interpolation!r}: expected one of {', '.join(INTERPOLATIONS)}",
    )
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    keep = w > 0
    if not keep.all():
        y, z, w = y[keep], z[keep], w[keep]
    x, weight, label_sum = _pool_ties(y.astype(np.float64), z, w)
    fitted = pava(label_sum / weight, weight)
    # drop the interior points of every constant piece
    keep = np.ones(len(x), dtype=bool)
    if len(x) > 2:
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    info = {
        "n": int(len(y)),
        "n_distinct": int(len(x)),
        "n_pieces": int(1 + np.count_nonzero(fitted[1:] != fitted[:-1])),
    }
    return IsotonicCalibrator(x[keep], fitted[keep], interpolation, info=info)


# --------------------------------------------------------------------------- Venn-Abers


def _label_one_values(weight: np.ndarray, label_sum: np.ndarray) -> np.ndarray:
    """``F1[i]``, i = 0..k: the isotonic fit at a test point with label 1 placed just before group i.

    Groups ``0..k-1`` are the distinct calibration scores in increasing order; ``i = k`` is after the last.
    Cumulative sum diagram: ``P_j = (sum of weights, sum of labels)`` of groups ``< j``, j = 0..k, and
    ``e = (1, 1)`` the test point's step. With the test point before group i, the diagram shifted by ``-e``
    is ``P_0 - e, ..., P_i - e, P_i, ..., P_k`` and the fit at the test point is the slope of its greatest
    convex minorant (GCM) over the step ``[P_i - e, P_i]``.

    Going from i to i + 1 replaces the single point ``P_i`` by ``P_{i+1} - e``. The new point lies below the
    chord ``[P_i - e, P_{i+1}]`` and ``P_i`` above it, so ``P_i`` is never a vertex of the GCM (it lies on
    it at most when group i is all ones) and the GCM of step i + 1 is the GCM of step i with one point
    added. We keep only the part of the GCM from the vertex at or left of the step onward, as a stack whose
    top is the leftmost vertex: if the new point is not below the top segment nothing changes (the step
    still lies within that segment); otherwise it becomes the leftmost vertex, and vertices to its right
    that are no longer convex are popped. Each point is pushed and popped at most once, so the scan is
    O(k). It is sequential by nature (a convex-hull scan), so it runs as a Python loop over the k distinct
    calibration scores; with integer counts and 0/1 labels every coordinate is an exact integer.
    """
    k = len(weight)
    px = [0.0] + np.cumsum(weight).tolist()
    py = [0.0] + np.cumsum(label_sum).tolist()
    # GCM of P_0 - e, P_0, ..., P_k, as a stack of (x, y) with the rightmost vertex on top
    hull = [(-1.0, -1.0)]
    for j in range(k + 1):
        cx, cy = px[j], py[j]
        while len(hull) >= 2:
            (ax, ay), (bx, by) = hull[-2], hull[-1]
            if (bx - ax) * (cy - by) - (by - ay) * (cx - bx) <= 0:  # no strict left turn at b
                hull.pop()
            else:
                break
        hull.append((cx, cy))
    stack = hull[::-1]  # leftmost vertex on top
    out = np.empty(k + 1)
    for i in range(k + 1):
        (ax, ay), (bx, by) = stack[-1], stack[-2]
        out[i] = (by - ay) / (bx - ax)
        if i == k:
            break
        qx, qy = px[i + 1] - 1.0, py[i + 1] - 1.0
        if (bx - ax) * (qy - ay) - (by - ay) * (qx - ax) >= 0:  # q on or above the top segment's line
            continue
        stack.pop()
        while len(stack) >= 2:
            (bx, by), (cx, cy) = stack[-1], stack[-2]
            if (bx - qx) * (cy - by) - (by - qy) * (cx - bx) <= 0:  # q, b, c: no strict left turn at b
                stack.pop()
            else:
                break
        stack.append((qx, qy))
    return out


@dataclass(frozen=True, eq=False)
class VennAbersCalibrator(BinaryCalibrator):
    """Inductive Venn-Abers predictor: distinct calibration ``scores`` and the precomputed ``p0``, ``p1`` tables.

    For a test score z: ``p0 = p0_table[#(scores <= z)]`` (label 0 tied with a calibration score pools with
    it, which is the same as placing it just after it) and ``p1 = p1_table[#(scores < z)]`` (label 1: just
    before the next calibration score at or above z).
    """

    method: ClassVar[str] = "venn-abers"
    scores: np.ndarray
    p0_table: np.ndarray  # length k + 1
    p1_table: np.ndarray  # length k + 1

    def predict_interval(self, y_prob) -> tuple[np.ndarray, np.ndarray]:
        """``(p0, p1)`` for every prediction: the two isotonic fits at z with the test label 0 and 1."""
        z = check_predict_input(y_prob)
        p0, p1 = self._interval(z)
        return check_predicted(p0, z, self.method, "p0"), check_predicted(p1, z, self.method, "p1")

    def _interval(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p0 = self.p0_table[np.searchsorted(self.scores, z, side="right")]
        p1 = self.p1_table[np.searchsorted(self.scores, z, side="left")]
        return p0, p1

    def _predict(self, z: np.ndarray) -> np.ndarray:
        p0, p1 = self._interval(z)
        return p1 / (1.0 - p0 + p1)

    def params(self) -> dict[str, Any]:
        return {"scores": float_list(self.scores), "p0": float_list(self.p0_table), "p1": float_list(self.p1_table)}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> VennAbersCalibrator:
        scores = params.array("scores", min_length=1, low=0.0, high=1.0, increasing=True, strictly=True)
        k1 = len(scores) + 1
        p0 = params.array("p0", length=k1, low=0.0, high=1.0, increasing=True)
        p1 = params.array("p1", length=k1, low=0.0, high=1.0, increasing=True)
        _check_interval_tables(p0, p1, params)
        return cls(scores, p0, p1, info=info)


#: Rounding allowed when checking ``p0 <= p1`` in a saved calibrator: the tables are slopes computed in floating
#: point, equal in exact arithmetic where the interval closes.
_INTERVAL_ROUNDING = 1e-12


def _check_interval_tables(p0: np.ndarray, p1: np.ndarray, params: Fields) -> None:
    """``p0 <= p1`` at every test score, as fitting guarantees (Vovk & Petej 2014): between calibration
    scores the interval is ``[p0[i], p1[i]]``; at the i-th score itself it is ``[p0[i + 1], p1[i]]``. Swapped
    tables (p0 > p1) would give inverted intervals and a wrong probability."""
    bad_between = p0 > p1 + _INTERVAL_ROUNDING
    bad_at = p0[1:] > p1[:-1] + _INTERVAL_ROUNDING
    if bad_between.any() or bad_at.any():
        i = int(np.flatnonzero(bad_between)[0]) if bad_between.any() else None
        j, k = (i, i) if i is not None else (int(np.flatnonzero(bad_at)[0]) + 1, int(np.flatnonzero(bad_at)[0]))
        raise CalibcliError(
            f"calibrator: fields '{params.where}.p0' and '{params.where}.p1' give an inverted interval: p0[{j}] is "
            f"{shown_number(params.d['p0'][j])} but p1[{k}] is {shown_number(params.d['p1'][k])}: Venn-Abers has "
            f"p0 <= p1 at every score (swapped tables?); refit the calibrator"
        )


def fit_venn_abers(y_true, y_prob) -> VennAbersCalibrator:
    """Inductive Venn-Abers calibration (seed 002 Algorithm 12.11; SPEC 5, `venn-abers`).

    Every calibration row counts once (the validity guarantee needs exchangeable rows, so there are no
    sample weights). ``p1`` values come from :func:`_label_one_values`; ``p0`` values from the same scan on
    the mirrored problem (scores reversed, labels flipped), since ``p0(z; y) = 1 - p1(-z; 1 - y)``.
    """
    y, z, _ = check_binary(y_true, y_prob)
    scores, count, label_sum = _pool_ties(y.astype(np.float64), z, np.ones(len(z)))
    p1 = _label_one_values(count, label_sum)
    mirrored = _label_one_values(count[::-1], (count - label_sum)[::-1])
    p0 = 1.0 - mirrored[::-1]
    # p0 <= p1 and both non-decreasing hold mathematically; clamp the last ulp of rounding
    p0 = np.clip(p0, 0.0, 1.0)
    p1 = np.clip(p1, 0.0, 1.0)
    info = {"n": int(len(y)), "n_distinct": int(len(scores))}
    return VennAbersCalibrator(scores, p0, p1, info=info)
