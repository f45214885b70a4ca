"""Parametric recalibration maps: Platt scaling, beta calibration, temperature scaling, polynomial (SPEC 5).

- ``platt`` (Platt 1999; seed 001 "scaling methods", seed 002 "logistic"): ``g(z) = sigmoid(a logit(z) + b)``,
  ``(a, b)`` minimising the (weighted) log-loss, by Newton's method (IRLS) with step halving.
- ``beta`` (Kull, Silva Filho & Flach 2017, "Beta calibration"): logistic regression on
  ``(ln z, -ln(1 - z))``: ``g(z) = sigmoid(a ln z - b ln(1 - z) + c)``. With ``monotone=True`` it follows the
  authors' ``betacal`` package: a negative ``a`` (or ``b``) is fixed at 0 and the other two refitted, so g is
  non-decreasing.
- ``temperature`` (Guo et al. 2017): ``softmax(L / T)`` with ``L = log P`` (or the logits), ``T > 0``
  minimising the log-loss. Binary predictions use the two-class form ``P = (1 - z, z)``, which is
  ``sigmoid(logit(z) / T)``, i.e. Platt scaling with ``b = 0``.
- ``polynomial`` (seed 004's experiments): least-squares polynomial of degree d of y on z, clipped to [0, 1].

Predictions are clipped to ``[clip, 1 - clip]`` before logits or logs are taken; how many were clipped at
fit time is recorded in ``info['n_clipped']``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from calibcli.calibrators._common import (
    DEFAULT_CLIP,
    BinaryCalibrator,
    Fields,
    check_clip,
    check_predict_input,
    check_predicted,
    clip_probabilities,
    float_list,
    logit,
    shown_number,
    sigmoid,
)
from calibcli.core.documents import jsonable
from calibcli.core.errors import CalibcliError
from calibcli.core.validation import check_binary, check_multiclass, check_options

# --------------------------------------------------------------------------- logistic regression


@dataclass(frozen=True)
class LogisticFit:
    """An unpenalised logistic regression: ``coef`` (the last entry multiplies the constant column)."""

    coef: np.ndarray
    log_loss: float
    n_iter: int
    converged: bool


def _mean_log_loss(X: np.ndarray, y: np.ndarray, w: np.ndarray, wsum: float, coef: np.ndarray, offset=0.0) -> float:
    eta = X @ coef + offset
    return float(np.dot(w, np.logaddexp(0.0, eta) - y * eta) / wsum)


#: Mean log-loss below which the data count as separated and Newton's method stops (no minimiser exists).
_SEPARATED_LOSS = 1e-9


def fit_logistic(
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    init: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-12,
    offset: np.ndarray | float = 0.0,
) -> LogisticFit:
    """Weighted, unpenalised logistic regression of ``y`` on the columns of ``X`` by Newton / IRLS.

    Each Newton step solves ``H step = g`` (gradient and Hessian of the mean weighted log-loss; a
    least-squares solve when ``H`` is singular, e.g. for a constant feature) and is halved until the loss
    does not increase. Stops when the step is below ``tol`` relative to the coefficients. On separable
    data (e.g. a single class) the minimiser does not exist: the iterations stop once the mean loss is
    below 1e-9, or at ``max_iter``, with ``converged`` False. ``offset`` is added to the linear predictor
    with its coefficient fixed at 1 (the calibration-in-the-large fit of :mod:`calibcli.clinical.classical_tests`).
    """
    yf = y.astype(np.float64)
    wsum = float(w.sum())
    coef = np.asarray(init, dtype=np.float64).copy()
    loss = _mean_log_loss(X, yf, w, wsum, coef, offset)
    for it in range(1, max_iter + 1):
        mu = sigmoid(X @ coef + offset)
        grad = X.T @ (w * (mu - yf)) / wsum
        hess = (X * (w * mu * (1.0 - mu))[:, None]).T @ X / wsum
        try:
            step = np.linalg.solve(hess, grad)
            if not np.all(np.isfinite(step)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        t = 1.0
        while True:
            trial = coef - t * step
            trial_loss = _mean_log_loss(X, yf, w, wsum, trial, offset)
            if trial_loss <= loss + 1e-14 * max(1.0, abs(loss)) or t < 1e-12:
                break
            t *= 0.5
        moved = float(np.max(np.abs(t * step)))
        coef, loss = trial, trial_loss
        if moved <= tol * max(1.0, float(np.max(np.abs(coef)))):
            return LogisticFit(coef, loss, it, True)
        if loss < _SEPARATED_LOSS:  # the classes are separated: the coefficients would grow for ever
            return LogisticFit(coef, loss, it, False)
    return LogisticFit(coef, loss, max_iter, False)


# --------------------------------------------------------------------------- what a saved calibrator may hold

#: Largest coefficient a saved logistic map (Platt, beta, the scaler of scaling-binning) may have. Fitting stops
#: long before (separated data stop the iterations at a mean log-loss of 1e-9, coefficients in the tens); the
#: bound keeps every linear predictor finite (|log z| <= 745 for any z > 0), so applying the map cannot give NaN.
MAX_COEFFICIENT = 1e12
_COEF_WHY = "fitting gives coefficients far within that range"
_CLIP_WHY = "the clip fitting takes is in (0, 0.5)"

#: Largest absolute coefficient of a saved polynomial: a least-squares fit of degree <= 20 on [0, 1] stays far
#: below it, and 21 terms of at most this size cannot overflow, so the map is never NaN.
MAX_POLYNOMIAL_COEFFICIENT = 1e100


# --------------------------------------------------------------------------- platt


@dataclass(frozen=True, eq=False)
class PlattCalibrator(BinaryCalibrator):
    """``g(z) = sigmoid(a logit(z) + b)`` with z clipped to ``[clip, 1 - clip]`` (Platt 1999)."""

    method: ClassVar[str] = "platt"
    a: float
    b: float
    clip: float = DEFAULT_CLIP

    def _predict(self, z: np.ndarray) -> np.ndarray:
        zc, _ = clip_probabilities(z, self.clip)
        return sigmoid(self.a * logit(zc) + self.b)

    def params(self) -> dict[str, Any]:
        return {"a": float(self.a), "b": float(self.b)}

    def options(self) -> dict[str, Any]:
        return {"clip": float(self.clip)}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> PlattCalibrator:
        return cls(
            params.number("a", magnitude=MAX_COEFFICIENT, why=_COEF_WHY),
            params.number("b", magnitude=MAX_COEFFICIENT, why=_COEF_WHY),
            options.number("clip", low=0.0, high=0.49, open_low=True, why=_CLIP_WHY),
            info=info,
        )


def _fit_info(y: np.ndarray, n_clipped: int, fit) -> dict:
    """The fit's record in a logistic map's ``info``: rows, rows clipped, and the optimiser's outcome."""
    return {
        "n": int(len(y)),
        "n_clipped": n_clipped,
        "log_loss": fit.log_loss,
        "n_iter": fit.n_iter,
        "converged": fit.converged,
    }


def fit_platt(y_true, y_prob, *, sample_weight=None, clip: float = DEFAULT_CLIP) -> PlattCalibrator:
    """Platt scaling: the log-loss minimising ``(a, b)`` of ``sigmoid(a logit(z) + b)`` (SPEC 5, `platt`)."""
    clip = check_clip(clip)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    zc, n_clipped = clip_probabilities(z, clip)
    X = np.column_stack([logit(zc), np.ones_like(zc)])
    fit = fit_logistic(X, y, w, init=np.array([1.0, 0.0]))
    return PlattCalibrator(float(fit.coef[0]), float(fit.coef[1]), clip, info=_fit_info(y, n_clipped, fit))


# --------------------------------------------------------------------------- beta


@dataclass(frozen=True, eq=False)
class BetaCalibrator(BinaryCalibrator):
    """``g(z) = sigmoid(a ln z - b ln(1 - z) + c)`` with z clipped (Kull, Silva Filho & Flach 2017)."""

    method: ClassVar[str] = "beta"
    a: float
    b: float
    c: float
    clip: float = DEFAULT_CLIP
    monotone: bool = False

    def _predict(self, z: np.ndarray) -> np.ndarray:
        zc, _ = clip_probabilities(z, self.clip)
        return sigmoid(self.a * np.log(zc) - self.b * np.log1p(-zc) + self.c)

    def params(self) -> dict[str, Any]:
        return {"a": float(self.a), "b": float(self.b), "c": float(self.c)}

    def options(self) -> dict[str, Any]:
        return {"clip": float(self.clip), "monotone": bool(self.monotone)}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> BetaCalibrator:
        a, b, c = (params.number(k, magnitude=MAX_COEFFICIENT, why=_COEF_WHY) for k in ("a", "b", "c"))
        clip = options.number("clip", low=0.0, high=0.49, open_low=True, why=_CLIP_WHY)
        monotone = options.boolean("monotone")
        if monotone:  # fitting fixes a negative a or b at 0, so that the map is non-decreasing
            for key, v in (("a", a), ("b", b)):
                if v < 0:
                    raise CalibcliError(
                        f"calibrator: field '{params.where}.{key}' is {shown_number(params.d[key])} with "
                        f"'{options.where}.monotone' true: a monotone beta map has a >= 0 and b >= 0"
                    )
        return cls(a, b, c, clip, monotone, info=info)


def fit_beta(
    y_true, y_prob, *, sample_weight=None, clip: float = DEFAULT_CLIP, monotone: bool = False
) -> BetaCalibrator:
    """Beta calibration: logistic regression on ``(ln z, -ln(1 - z))`` (SPEC 5, `beta`).

    ``monotone=True``: if the fitted ``a`` (``b``) is negative, fix it at 0 and refit the rest, as the
    authors' ``betacal`` package does, so that the map is non-decreasing.
    """
    clip = check_clip(clip)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    zc, n_clipped = clip_probabilities(z, clip)
    X = np.column_stack([np.log(zc), -np.log1p(-zc), np.ones_like(zc)])
    fit = fit_logistic(X, y, w, init=np.array([1.0, 1.0, 0.0]))
    coef = fit.coef
    dropped = None
    if monotone and (coef[0] < 0 or coef[1] < 0):
        dropped = 0 if coef[0] < 0 else 1
        keep = [1 - dropped, 2]
        fit = fit_logistic(X[:, keep], y, w, init=np.array([1.0, 0.0]))
        coef = np.zeros(3)
        coef[keep] = fit.coef
    info = {**_fit_info(y, n_clipped, fit), "fixed_at_zero": None if dropped is None else "ab"[dropped]}
    return BetaCalibrator(float(coef[0]), float(coef[1]), float(coef[2]), clip, bool(monotone), info=info)


# --------------------------------------------------------------------------- polynomial


@dataclass(frozen=True, eq=False)
class PolynomialCalibrator(BinaryCalibrator):
    """``g(z) = clip(sum_j coef[j] z^j, 0, 1)``: least-squares polynomial of y on z (seed 004)."""

    method: ClassVar[str] = "polynomial"
    coef: np.ndarray  # increasing powers, length degree + 1

    def _predict(self, z: np.ndarray) -> np.ndarray:
        from numpy.polynomial import polynomial as npoly

        return np.clip(npoly.polyval(z, self.coef), 0.0, 1.0)

    @property
    def degree(self) -> int:
        return len(self.coef) - 1

    def params(self) -> dict[str, Any]:
        return {"coef": float_list(self.coef)}

    def options(self) -> dict[str, Any]:
        return {"degree": self.degree}

    @classmethod
    def from_fields(cls, params: Fields, options: Fields, info: dict) -> PolynomialCalibrator:
        degree = options.integer(
            "degree", low=0, high=MAX_POLYNOMIAL_DEGREE, why=f"fitting takes degrees 0..{MAX_POLYNOMIAL_DEGREE}"
        )
        return cls(
            params.array(
                "coef",
                length=degree + 1,
                magnitude=MAX_POLYNOMIAL_COEFFICIENT,
                why="far beyond any least-squares fit on [0, 1]",
            ),
            info=info,
        )


MAX_POLYNOMIAL_DEGREE = 20


def fit_polynomial(y_true, y_prob, *, sample_weight=None, degree: int = 3) -> PolynomialCalibrator:
    """Weighted least-squares polynomial of degree ``degree`` of y on z, output clipped to [0, 1] (SPEC 5)."""
    check_options(degree=degree)  # an integer in 0..MAX_POLYNOMIAL_DEGREE (validation._RULES)
    y, z, w = check_binary(y_true, y_prob, sample_weight)
    sw = np.sqrt(w)
    V = np.vander(z, int(degree) + 1, increasing=True)
    coef, *_ = np.linalg.lstsq(V * sw[:, None], y * sw, rcond=None)
    fitted = V @ coef
    info = {
        "n": int(len(y)),
        "n_distinct": int(len(np.unique(z))),
        "mse": float(np.dot(w, (fitted - y) ** 2) / w.sum()),
        "fraction_clipped": float(np.dot(w, (fitted < 0) | (fitted > 1)) / w.sum()),
    }
    return PolynomialCalibrator(coef, info=info)


# --------------------------------------------------------------------------- temperature


@dataclass(frozen=True, eq=False)
class TemperatureCalibrator:
    """``softmax(L / T)`` with ``L = log(max(P, eps))`` or given logits (Guo et al. 2017).

    ``n_classes == 2`` with ``mode == "binary"``: ``predict`` takes and returns 1-D probabilities of the
    positive class (the two-class form, ``sigmoid((ln z - ln(1 - z)) / T)`` with clipping at ``eps``).
    Otherwise it takes and returns ``(n, K)`` arrays.
    """

    method: ClassVar[str] = "temperature"
    temperature: float
    n_classes: int
    mode: str = "multiclass"  # "binary" or "multiclass"
    eps: float = DEFAULT_CLIP
    logits: bool = False
    info: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    def _scores(self, y_prob) -> np.ndarray:
        """Per-class scores L of an input (log of clipped probabilities, or the logits themselves)."""
        if self.mode == "binary":
            if self.logits:
                s = np.asarray(y_prob, dtype=np.float64)
                _check_finite_1d(s)
                return np.column_stack([np.zeros_like(s), s])
            z = check_predict_input(y_prob, ndim=1)
            return np.log(np.clip(np.column_stack([1.0 - z, z]), self.eps, None))
        if self.logits:
            L = np.asarray(y_prob, dtype=np.float64)
            if L.ndim != 2 or not np.all(np.isfinite(L)):
                raise CalibcliError(f"predict got logits of shape {L.shape}: expected a finite (n, K) array")
        else:
            L = np.log(np.clip(check_predict_input(y_prob, ndim=2), self.eps, None))
        if L.shape[1] != self.n_classes:
            raise CalibcliError(
                f"predict got {L.shape[1]} class columns: the calibrator was fitted on {self.n_classes} classes"
            )
        return L

    def predict(self, y_prob) -> np.ndarray:
        """Recalibrated probabilities: 1-D for a binary calibrator, ``(n, K)`` rows summing to 1 otherwise;
        never a non-finite value (:func:`check_predicted`)."""
        L = self._scores(y_prob)
        with np.errstate(over="ignore", invalid="ignore"):
            A = L / self.temperature
        if not np.isfinite(A).all():  # huge logits over a small T: the same softmax, from each row's maximum
            with np.errstate(over="ignore"):
                A = (L - L.max(axis=1, keepdims=True)) / self.temperature
        P = _softmax(A)
        return check_predicted(P[:, 1] if self.mode == "binary" else P, None, self.method)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "mode": self.mode,
            "n_classes": int(self.n_classes),
            "params": {"temperature": float(self.temperature)},
            "options": {"eps": float(self.eps), "logits": bool(self.logits)},
            "info": jsonable(dict(self.info), finite=False),
        }

    @classmethod
    def from_fields(cls, d: Fields, params: Fields, options: Fields, info: dict) -> TemperatureCalibrator:
        mode = d.choice("mode", ("binary", "multiclass"))
        n_classes = d.integer("n_classes", low=2, high=2**31 - 1)
        if mode == "binary" and n_classes != 2:
            raise CalibcliError(f"calibrator: a binary temperature calibrator has n_classes {n_classes}: expected 2")
        temperature = params.number(
            "temperature",
            low=MIN_TEMPERATURE,
            high=MAX_TEMPERATURE,
            why="what fitting can give: 1 / T is searched up to 1e8",
        )
        return cls(
            temperature,
            n_classes,
            mode,
            options.number("eps", low=0.0, high=0.49, open_low=True, why=_CLIP_WHY),
            options.boolean("logits"),
            info=info,
        )


def _check_finite_1d(s: np.ndarray) -> None:
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise CalibcliError(f"got logits of shape {s.shape}: expected a finite 1-D array")


def _softmax(A: np.ndarray) -> np.ndarray:
    A = A - A.max(axis=1, keepdims=True)
    np.exp(A, out=A)
    A /= A.sum(axis=1, keepdims=True)
    return A


def _temperature_derivatives(L: np.ndarray, Lc: np.ndarray, w: np.ndarray, beta: float):
    """Weighted log-loss of ``softmax(beta L)`` and its first two derivatives in ``beta`` (L's row max is 0).

    ``d/dbeta = sum_i w_i (E_i[L] - L_ic)`` and ``d2/dbeta2 = sum_i w_i Var_i[L] >= 0`` (moments under row
    i's softmax), so the loss is convex in beta.
    """
    ones = np.ones(L.shape[1])
    E = np.exp(beta * L)
    S = E @ ones  # row sums (a matrix-vector product is much faster than sum(axis=1) for small K)
    E *= L
    m1 = (E @ ones) / S
    E *= L
    m2 = (E @ ones) / S
    f = float(np.dot(w, np.log(S) - beta * Lc))
    return f, float(np.dot(w, m1 - Lc)), float(np.dot(w, m2 - m1 * m1))


#: Largest inverse temperature searched; beyond it the loss is taken to decrease for ever (T -> 0).
_MAX_INVERSE_TEMPERATURE = 1e8

#: The temperatures a saved calibrator may hold: what fitting can give (1 / T at most 1e8), and below 1e300
#: (a T that large makes every prediction uniform; fitting refuses data that would need it). With log-
#: probabilities >= -745, L / T stays finite, so applying the map never gives NaN (a T of 5e-324 did).
MIN_TEMPERATURE = 0.5 / _MAX_INVERSE_TEMPERATURE  # (half: room for Newton's last step)
MAX_TEMPERATURE = 1e300


def fit_temperature(
    y_true, y_prob, *, sample_weight=None, eps: float = DEFAULT_CLIP, logits: bool = False
) -> TemperatureCalibrator:
    """Temperature scaling: ``T > 0`` minimising the log-loss of ``softmax(L / T)`` (SPEC 5, `temperature`).

    ``y_prob`` is an ``(n, K)`` array of class probabilities (``L = log max(P, eps)``) or, with
    ``logits=True``, of logits; a 1-D array is a binary problem in its two-class form. The loss is convex in
    ``beta = 1 / T``; its minimiser is found by Newton's method safeguarded by bisection on a bracket.
    A minimiser with ``T > 0`` must exist: if the loss keeps decreasing as T grows (predictions carry no
    information) or as T shrinks (every top class is right), the fit fails with a clear error.
    """
    eps = check_clip(eps)
    binary = np.asarray(y_prob).ndim == 1
    if logits:
        L = np.asarray(y_prob, dtype=np.float64)
        if binary:
            _check_finite_1d(L)
            y, _, w = check_binary(y_true, np.full(len(L), 0.5), sample_weight)
            c = y
            L = np.column_stack([np.zeros_like(L), L])
        else:
            if L.ndim != 2 or L.shape[1] < 2 or not np.all(np.isfinite(L)):
                raise CalibcliError(f"logits have shape {L.shape}: expected a finite (n, K) array with K >= 2")
            c, _, w = check_multiclass(y_true, np.full(L.shape, 1.0 / L.shape[1]), sample_weight)
        n_clipped = 0
    else:
        if binary:
            c, z, w = check_binary(y_true, y_prob, sample_weight)
            P = np.column_stack([1.0 - z, z])
        else:
            c, P, w = check_multiclass(y_true, y_prob, sample_weight)
        n_clipped = int(np.count_nonzero(P < eps))
        L = np.log(np.maximum(P, eps))
    L = L - L.max(axis=1, keepdims=True)
    Lc = L[np.arange(len(c)), c]
    wsum = float(w.sum())

    _, d0, _ = _temperature_derivatives(L, Lc, w, 0.0)
    if d0 >= 0:
        raise CalibcliError(
            "temperature scaling has no minimiser with T > 0: the log-loss keeps decreasing as T grows "
            "(scaling moves every prediction towards uniform, and uniform fits these labels best: the predictions "
            "carry no information about them, or point the wrong way); use --method platt, isotonic or histogram"
        )
    if np.all(Lc[w > 0] == 0.0):
        raise CalibcliError(
            "temperature scaling has no minimiser with T > 0: the log-loss keeps decreasing as T shrinks "
            "(every prediction's top class is right); use --method platt, isotonic or histogram"
        )
    # safeguarded Newton on beta = 1/T: [lo, hi] brackets the root of the derivative (hi = inf until found)
    lo, hi, beta = 0.0, math.inf, 1.0
    converged = False
    n_iter = 0
    for n_iter in range(1, 200):  # noqa: B007 (read after the loop: the iterations taken, reported in info)
        _, d1, d2 = _temperature_derivatives(L, Lc, w, beta)
        if d1 == 0.0:
            converged = True
            break
        if d1 < 0:
            lo = beta
        else:
            hi = beta
        new = beta - d1 / d2 if d2 > 0 else math.inf
        if abs(new - beta) <= 1e-10 * beta:
            beta = new
            converged = True
            break
        if not (lo < new < hi):
            new = 2.0 * beta if math.isinf(hi) else 0.5 * (lo + hi)
        if new > _MAX_INVERSE_TEMPERATURE:
            raise CalibcliError(
                "temperature scaling has no minimiser with T > 0: the log-loss keeps decreasing as T shrinks "
                "(every prediction's top class is right); use --method platt, isotonic or histogram"
            )
        beta = new
    f, _, _ = _temperature_derivatives(L, Lc, w, beta)
    info = {"n": int(len(c)), "n_clipped": n_clipped, "log_loss": f / wsum, "n_iter": n_iter, "converged": converged}
    return TemperatureCalibrator(
        1.0 / beta, L.shape[1], "binary" if binary else "multiclass", eps, bool(logits), info=info
    )
