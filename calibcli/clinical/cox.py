"""Cox calibration of one binary problem or of many groups at once (:mod:`calibcli.clinical.classical_tests`
describes it).

D. R. Cox, "Two further applications of a model for binary regression", Biometrika 45 (1958): the logistic
regression ``logit P(y = 1) = a + b logit(p)`` (slope ``b`` and intercept ``a`` fitted together), and the
intercept ``a'`` of ``logit P(y = 1) = a' + logit(p)`` with the slope fixed at 1 (calibration-in-the-large),
with Wald intervals and tests from the observed Fisher information.

Both fits are the Newton / IRLS iterations of :func:`calibcli.calibrators.parametric.fit_logistic` (the same
start, step halving, stopping rule and separation rule), run for every group at once
(:func:`_newton_groups`): the groups' rows are concatenated, each iteration's gradients, Hessians and losses
are per-group sums over them (:func:`calibcli.smooth.grid.segment_sums`) and the 2 x 2 (or 1 x 1) systems are
solved as one stack. A group leaves the iterations when its own stopping rule says so; the others go on,
on their rows only. So ``ece --group-by`` with 1,000 groups makes one fit of a stack, not 2,000 fits, and each
group's numbers are those of its rows alone (:func:`cox_from_rows` is the one-group case).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibcli.calibrators._common import DEFAULT_CLIP, logit
from calibcli.core import cancel
from calibcli.core.errors import CalibcliError
from calibcli.smooth.grid import segment_sums


def _normal_quantile(q: float) -> float:
    from statistics import NormalDist  # (the standard library: no scipy import on every ece run)

    return float(NormalDist().inv_cdf(q))


def _two_sided_p(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


#: How many double roundings (relative to the coefficient's scale, at least 1) a fitted coefficient may differ from
#: its null and still equal it (:meth:`WaldEstimate.of`).
NOISE_ULPS = 64


@dataclass(frozen=True)
class WaldEstimate:
    """A coefficient with its Wald standard error, interval at level ``1 - alpha``, and the Wald test of
    ``estimate = null`` (statistic ``(estimate - null) / se``, two-sided p-value)."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    null: float
    z: float
    p_value: float

    @classmethod
    def of(cls, estimate: float, se: float, *, null: float, alpha: float) -> WaldEstimate:
        """A coefficient within :data:`NOISE_ULPS` roundings of its null is its null: what is left is the fit's
        floating-point noise (a Platt-recalibrated model's Cox slope is 1 exactly, its fit 1 + 4e-16), so the
        report prints ``z 0, p 1`` rather than digits of noise that another machine's BLAS changes."""
        if abs(estimate - null) <= NOISE_ULPS * sys.float_info.epsilon * max(1.0, abs(estimate), abs(null)):
            estimate = null
        half = -_normal_quantile(alpha / 2.0) * se  # the upper quantile by symmetry (1 - 1e-17 rounds to 1)
        z = (estimate - null) / se if se > 0 else math.inf
        return cls(
            float(estimate),
            float(se),
            float(estimate - half),
            float(estimate + half),
            float(null),
            float(z),
            _two_sided_p(z),
        )


@dataclass(frozen=True)
class CoxCalibration:
    """Cox (1958) calibration of one binary problem (see :mod:`calibcli.clinical.classical_tests`).

    ``slope`` and ``intercept`` are the joint fit of ``logit P(y=1) = a + b logit(p)`` (tests: ``b = 1``,
    ``a = 0``), ``calibration_in_the_large`` the intercept with the slope fixed at 1 (test: ``= 0``).
    ``n`` rows of total weight ``weight_total``; ``n_clipped`` predictions moved by the clip.
    """

    slope: WaldEstimate
    intercept: WaldEstimate
    calibration_in_the_large: WaldEstimate
    cov_intercept_slope: float
    n: int
    weight_total: float
    n_clipped: int
    clip: float
    alpha: float
    method: str = "Wald, observed Fisher information"


def cox_from_rows(
    y: np.ndarray, z: np.ndarray, w: np.ndarray, *, alpha: float = 0.05, n: int | None = None, clip: float | None = None
) -> CoxCalibration:
    """:class:`CoxCalibration` of validated rows (``w`` an array; rows may be weighted stand-ins for many,
    as the per-value sums of :class:`calibcli.recalibrate.fit.FitAccumulator` are). ``n`` is the number of
    rows they stand for (default ``len(y)``). The one-group case of :func:`cox_groups`."""
    (out,) = cox_groups([(y, z, w, n)], alpha=alpha, clip=clip)
    if isinstance(out, CalibcliError):
        raise out
    return out


def cox_groups(
    problems: Sequence[tuple], *, alpha: float = 0.05, clip: float | None = None
) -> list[CoxCalibration | CalibcliError]:
    """:func:`cox_from_rows` of many groups at once: ``problems`` holds ``(y, z, w, n)`` per group (``n`` None:
    ``len(y)``). A group whose Cox calibration cannot be computed gets its :class:`CalibcliError` (one label
    only, one distinct prediction, separated labels, a singular information matrix) in its place."""
    clip = DEFAULT_CLIP if clip is None else clip
    G = len(problems)
    out: list[CoxCalibration | CalibcliError | None] = [None] * G
    if not G:
        return []
    sizes = np.array([len(p[0]) for p in problems], dtype=np.intp)
    y = np.concatenate([np.asarray(p[0], dtype=np.float64) for p in problems])
    z = np.concatenate([np.asarray(p[1], dtype=np.float64) for p in problems])
    w = np.concatenate([np.asarray(p[2], dtype=np.float64) for p in problems])
    group = np.repeat(np.arange(G), sizes)
    keep = w > 0
    if not keep.all():
        y, z, w, group = y[keep], z[keep], w[keep], group[keep]
    size = np.bincount(group, minlength=G)
    W = np.zeros(G)
    positives = np.zeros(G)
    has = np.flatnonzero(size)
    starts = _starts(size[has])
    W[has] = segment_sums(w, starts)
    positives[has] = segment_sums(w * y, starts)
    zc = np.clip(z, clip, 1.0 - clip)
    clipped = np.bincount(group, weights=zc != z, minlength=G)
    eta = logit(zc)
    spread = np.zeros(G)
    spread[has] = np.maximum.reduceat(eta, starts) - np.minimum.reduceat(eta, starts)
    for g in range(G):  # each group's checks, in the order one group alone is checked
        if size[g] == 0 or not W[g] > 0:
            out[g] = CalibcliError("Cox calibration needs rows of positive weight")
        elif positives[g] <= 0 or positives[g] >= W[g]:
            out[g] = CalibcliError(
                f"Cox calibration needs both labels, but every label is {int(positives[g] > 0)}: the logistic "
                f"regression of the label on logit(prediction) has no maximum"
            )
        elif not spread[g] > 0:
            first = zc[np.searchsorted(group, g)]
            out[g] = CalibcliError(
                "Cox calibration needs at least two distinct predictions: every prediction is "
                f"{float(first):.6g}, so the slope on logit(prediction) is not identified"
            )
    ok = np.array([out[g] is None for g in range(G)])
    if ok.any():
        rows = ok[group]
        eta, y, w = eta[rows], y[rows], w[rows]
        fit: list = []
        sizes = size[ok]
        first = np.concatenate([[0], np.cumsum(sizes)])
        for c0, c1 in row_chunks(sizes, COX_CHUNK_ROWS):  # arrays that stay in the caches
            cancel.check()  # (a signal stops the run between chunks)
            at = slice(first[c0], first[c1])
            fit += _fit_groups(eta[at], y[at], w[at], sizes[c0:c1], alpha=alpha)
        for j, k in enumerate(np.flatnonzero(ok).tolist()):
            result = fit[j]
            if isinstance(result, CalibcliError):
                out[k] = result
                continue
            slope, intercept, citl, cov01 = result
            n = problems[k][3]
            out[k] = CoxCalibration(
                slope=slope,
                intercept=intercept,
                calibration_in_the_large=citl,
                cov_intercept_slope=cov01,
                n=int(size[k] if n is None else n),
                weight_total=float(W[k]),
                n_clipped=int(clipped[k]),
                clip=float(clip),
                alpha=float(alpha),
            )
    return out  # type: ignore[return-value]  # (every group is set above)


#: Rows of the groups fitted together (a chunk holds whole groups, at least one): 512 kB arrays, which stay in the
#: caches through the ~40 array operations of a Newton iteration. 1,000 groups of 1,000 rows took 0.6 s in one
#: stack of 10^6 rows, as one group at a time did; fixes speed, never the numbers.
COX_CHUNK_ROWS = 1 << 16


def row_chunks(sizes: np.ndarray, rows: int) -> list[tuple[int, int]]:
    """Consecutive ranges ``[c0, c1)`` of groups of ``sizes`` rows, each at most ``rows`` rows in all or one group."""
    ends = np.cumsum(sizes)
    out, c0 = [], 0
    while c0 < len(sizes):
        base = ends[c0 - 1] if c0 else 0
        c1 = max(c0 + 1, int(np.searchsorted(ends, base + rows, side="right")))
        out.append((c0, c1))
        c0 = c1
    return out


def _starts(sizes: np.ndarray) -> np.ndarray:
    """Where each group's rows begin, for groups of ``sizes`` rows laid end to end."""
    starts = np.zeros(len(sizes), dtype=np.intp)
    np.cumsum(sizes[:-1], out=starts[1:])
    return starts


def _fit_groups(eta: np.ndarray, y: np.ndarray, w: np.ndarray, sizes: np.ndarray, *, alpha: float) -> list:
    """Both Cox fits and their Wald estimates for groups of ``sizes`` rows (each with both labels and two
    distinct predictions): per group ``(slope, intercept, calibration in the large, cov(intercept, slope))``
    or the :class:`CalibcliError` of a fit that has no maximum or no Wald intervals."""
    G = len(sizes)
    starts = _starts(sizes)
    joint = _newton_groups((eta, None), y, w, None, sizes, np.array([1.0, 0.0]))
    offset = _newton_groups((None,), y, w, eta, sizes, np.array([0.0]))
    a, b = joint.coef[:, 0], joint.coef[:, 1]
    mu = _sigmoid(eta * np.repeat(a, sizes) + np.repeat(b, sizes))
    v = w * mu * (1.0 - mu)
    ev = eta * v
    info = np.empty((G, 2, 2))
    info[:, 0, 0] = segment_sums(eta * ev, starts)
    info[:, 0, 1] = info[:, 1, 0] = segment_sums(ev, starts)
    info[:, 1, 1] = segment_sums(v, starts)
    invertible = np.ones(G, dtype=bool)
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:  # one singular matrix fails the whole stack: invert one at a time
        cov = np.full((G, 2, 2), np.nan)
        for g in range(G):
            try:
                cov[g] = np.linalg.inv(info[g])
            except np.linalg.LinAlgError:
                invertible[g] = False
    mu0 = _sigmoid(eta + np.repeat(offset.coef[:, 0], sizes))
    var0 = 1.0 / segment_sums(w * (mu0 * (1.0 - mu0)), starts)
    out: list = []
    for g in range(G):
        if not (joint.converged[g] and offset.converged[g]):
            out.append(
                CalibcliError(
                    "Cox calibration did not converge: the labels are separated by the predictions (a "
                    "threshold on the prediction splits them perfectly), so the slope is unbounded"
                )
            )
        elif not invertible[g]:
            out.append(
                CalibcliError(
                    "Cox calibration's information matrix is singular (the predictions barely vary): no Wald intervals"
                )
            )
        else:
            out.append(
                (
                    WaldEstimate.of(a[g], math.sqrt(cov[g, 0, 0]), null=1.0, alpha=alpha),
                    WaldEstimate.of(b[g], math.sqrt(cov[g, 1, 1]), null=0.0, alpha=alpha),
                    WaldEstimate.of(offset.coef[g, 0], math.sqrt(var0[g]), null=0.0, alpha=alpha),
                    float(cov[g, 0, 1]),
                )
            )
    return out


def _sigmoid(t: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-t))``: within about one rounding of the exact value for every t (its relative error peaks
    near 1.1 ulp; ``exp(-logaddexp(0, -t))``, :func:`calibcli.calibrators._common.sigmoid`, reaches 15 ulp at
    t = -30), in a quarter of the time (NumPy's exp is vectorised, its logaddexp is not). exp(-t) overflows to
    inf below t = -709.8, where the value rounds to 0 anyway."""
    with np.errstate(over="ignore"):
        out = np.exp(-t)
    out += 1.0
    return np.divide(1.0, out, out=out)


@dataclass(frozen=True)
class _Fits:
    """Per group: coefficients ``(G, p)``, whether the iterations converged, their number and the final mean loss."""

    coef: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    log_loss: np.ndarray


#: Mean log-loss below which a group's data count as separated (:func:`calibcli.calibrators.parametric.fit_logistic`).
_SEPARATED_LOSS = 1e-9


def _newton_groups(
    columns: tuple,
    y: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray | None,
    sizes: np.ndarray,
    init: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-12,
) -> _Fits:
    """Weighted logistic regressions of ``y`` on ``columns`` (flat arrays over every group's rows, laid end to end
    in groups of ``sizes``; None for the constant column), plus ``offset``, for every group at once.

    Each group takes the steps :func:`calibcli.calibrators.parametric.fit_logistic` takes on its rows: from
    ``init``, Newton steps ``H step = g`` (mean weighted log-loss; a least-squares solve where ``H`` is
    singular), each halved until the loss does not increase; it stops when its step is below ``tol`` relative to
    its coefficients (converged), or once its mean loss is below 1e-9 (separated), or at ``max_iter``. The
    groups still iterating are one stack: each iteration is a fixed number of array operations whatever their
    number, on the rows of those groups only.
    """
    G, p = len(sizes), len(init)
    coef = np.tile(np.asarray(init, dtype=np.float64), (G, 1))
    converged = np.zeros(G, dtype=bool)
    n_iter = np.full(G, max_iter)
    stack = _Stack(columns, y, w, offset, sizes)
    active = np.arange(G)  # the groups still iterating, in stack order
    loss = stack.loss(coef)
    final_loss = loss.copy()
    for it in range(1, max_iter + 1):
        mu = _sigmoid(stack.linear(coef[active]))
        r = stack.w * (mu - stack.y)
        v = stack.w * mu * (1.0 - mu)
        grad = np.empty((len(active), p))
        hess = np.empty((len(active), p, p))
        for i, ci in enumerate(stack.columns):  # X^T r and X^T diag(v) X, per group (None: the constant column)
            grad[:, i] = stack.sums(r if ci is None else ci * r)
            vi = v if ci is None else ci * v
            for j in range(i, p):
                cj = stack.columns[j]
                hess[:, i, j] = hess[:, j, i] = stack.sums(vi if cj is None else cj * vi)
        grad /= stack.wsum[:, None]
        hess /= stack.wsum[:, None, None]
        step = _solve(hess, grad)
        trial, trial_loss, t = stack.line_search(coef[active], step, loss[active])
        moved = np.max(np.abs(t[:, None] * step), axis=1)
        coef[active], loss[active] = trial, trial_loss
        final_loss[active] = trial_loss
        done = moved <= tol * np.maximum(1.0, np.max(np.abs(trial), axis=1))
        separated = ~done & (trial_loss < _SEPARATED_LOSS)
        converged[active[done]] = True
        stop = done | separated
        n_iter[active[stop]] = it
        if stop.all():
            break
        if stop.any():
            stack = stack.subset(np.flatnonzero(~stop))
            active = active[~stop]
    return _Fits(coef, converged, n_iter, final_loss)


def _solve(hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``H step = g`` for each group (a least-squares solve where ``H`` is singular or the step not finite)."""
    try:
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        bad = np.flatnonzero(~np.isfinite(step).all(axis=1))
    except np.linalg.LinAlgError:  # one singular matrix fails the whole stack: solve one at a time
        step = np.empty_like(grad)
        bad_list = []
        for g in range(len(grad)):
            try:
                step[g] = np.linalg.solve(hess[g], grad[g])
                if not np.all(np.isfinite(step[g])):
                    bad_list.append(g)
            except np.linalg.LinAlgError:
                bad_list.append(g)
        bad = np.array(bad_list, dtype=np.intp)
    for k in bad:
        step[k] = np.linalg.lstsq(hess[k], grad[k], rcond=None)[0]
    return step


class _Stack:
    """The rows of the groups still iterating, laid end to end (``sizes`` rows each), with their sums."""

    def __init__(self, columns: tuple, y: np.ndarray, w: np.ndarray, offset: np.ndarray | None, sizes: np.ndarray):
        self.columns, self.y, self.w, self.offset, self.sizes = columns, y, w, offset, sizes
        self.starts = _starts(sizes)
        self.wsum = self.sums(w)

    def sums(self, x: np.ndarray) -> np.ndarray:
        return segment_sums(x, self.starts)

    def linear(self, coef: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """``X coef + offset`` of every row (of groups ``which`` only, given)."""
        sizes = self.sizes if which is None else self.sizes[which]
        rows = None if which is None else self._rows(which)
        lin: np.ndarray | None = None
        for i, col in enumerate(self.columns):
            c = np.repeat(coef[:, i], sizes)
            term = c if col is None else (col if rows is None else col[rows]) * c
            lin = term if lin is None else lin + term
        assert lin is not None  # (at least one column)
        if self.offset is not None:
            lin = lin + (self.offset if rows is None else self.offset[rows])
        return lin

    def _rows(self, which: np.ndarray) -> np.ndarray:
        """The indices of the rows of groups ``which`` (increasing group order)."""
        sizes = self.sizes[which]
        first = np.repeat(self.starts[which] - _starts(sizes), sizes)
        return first + np.arange(int(sizes.sum()))

    def loss(self, coef: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """Mean weighted log-loss of each group (of ``which``) at its coefficients ``coef``."""
        lin = self.linear(coef, which)
        if which is None:
            y, w, starts, wsum = self.y, self.w, self.starts, self.wsum
        else:
            rows = self._rows(which)
            y, w, starts, wsum = self.y[rows], self.w[rows], _starts(self.sizes[which]), self.wsum[which]
        return segment_sums(w * (np.logaddexp(0.0, lin) - y * lin), starts) / wsum

    def line_search(self, coef: np.ndarray, step: np.ndarray, loss: np.ndarray):
        """Each group's step halved until its loss does not increase (or the step is below 1e-12 of a Newton
        step): ``(new coefficients, their loss, the fraction t of the step taken)``."""
        t = np.ones(len(coef))
        trial = coef - step
        trial_loss = self.loss(trial)
        pending = np.arange(len(coef))
        while True:
            ok = (trial_loss[pending] <= loss[pending] + 1e-14 * np.maximum(1.0, np.abs(loss[pending]))) | (
                t[pending] < 1e-12
            )
            pending = pending[~ok]
            if not len(pending):
                return trial, trial_loss, t
            t[pending] *= 0.5
            trial[pending] = coef[pending] - t[pending, None] * step[pending]
            trial_loss[pending] = self.loss(trial[pending], pending)

    def subset(self, which: np.ndarray) -> _Stack:
        rows = self._rows(which)
        return _Stack(
            tuple(None if c is None else c[rows] for c in self.columns),
            self.y[rows],
            self.w[rows],
            None if self.offset is None else self.offset[rows],
            self.sizes[which],
        )
