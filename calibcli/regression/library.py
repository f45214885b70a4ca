"""The regression metrics on array-likes (NumPy, pandas, polars, pyarrow), as :mod:`calibcli.metrics` exports
them: :func:`regression_metrics` gives every metric of ``calibcli regression`` for one set of predictions,
the same numbers (it runs the same accumulator on the rows as one batch)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.core.results import MetricResult
from calibcli.io.arrays import as_numpy
from calibcli.regression.accumulator import RegressionAccumulator
from calibcli.regression.kinds import Prediction, RegressionOptions


def _column(x, name: str) -> np.ndarray:
    values, _ = as_numpy(x, name=name)
    return np.asarray(values, dtype=np.float64)


def _matrix(x, name: str) -> np.ndarray:
    values, _ = as_numpy(x, name=name)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] < 2:
        raise CalibcliError(f"{name} has shape {values.shape}: expected one row per target and at least 2 columns")
    return values


@dataclass(frozen=True)
class Predicted:
    """One call's prediction as its keywords, declared once: a Gaussian (``mean`` with ``std`` or ``var``),
    ``quantiles`` at ``quantile_levels``, central intervals (``lower``, ``upper`` at ``level``), or ``samples``.
    :func:`takes_prediction` makes them keyword-only parameters of a library function, in this order."""

    mean: Any = None
    std: Any = None
    var: Any = None
    quantiles: Any = None
    quantile_levels: Any = None
    lower: Any = None
    upper: Any = None
    level: Any = None
    samples: Any = None

    def matrix(self) -> tuple[str, np.ndarray, tuple[float, ...]]:
        """The kind, the ``(n, m)`` prediction matrix and the kind's levels (exactly one kind given)."""
        return _prediction_matrix(self)


#: The keywords of :class:`Predicted`, in order.
PREDICTION_KEYWORDS = tuple(f.name for f in dataclasses.fields(Predicted))


def takes_prediction(func):
    """Decorator of a function whose keyword ``prediction`` is a :class:`Predicted`: its signature lists the
    prediction's keywords instead (keyword-only, default None, right after the positional parameters), and a
    call passes them in one :class:`Predicted`; a keyword the function does not take is refused as Python
    refuses one."""
    signature = inspect.signature(func)
    params = [p for p in signature.parameters.values() if p.name != "prediction"]
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keywords = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    declared = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None) for n in PREDICTION_KEYWORDS]
    known = {p.name for p in params}

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        for name in kwargs:
            if name not in known and name not in PREDICTION_KEYWORDS:
                raise TypeError(f"{func.__name__}() got an unexpected keyword argument {name!r}")
        given = {n: kwargs.pop(n) for n in PREDICTION_KEYWORDS if n in kwargs}
        return func(*args, prediction=Predicted(**given), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*positional, *declared, *keywords])  # type: ignore[attr-defined]
    return wrapper


@takes_prediction
def prediction_matrix(*, prediction: Predicted) -> tuple[str, np.ndarray, tuple[float, ...]]:
    """The kind, the ``(n, m)`` prediction matrix and the kind's levels of one call's keywords (one kind)."""
    return prediction.matrix()


def _prediction_matrix(p: Predicted) -> tuple[str, np.ndarray, tuple[float, ...]]:
    mean, std, var, quantiles, quantile_levels = p.mean, p.std, p.var, p.quantiles, p.quantile_levels
    lower, upper, level, samples = p.lower, p.upper, p.level, p.samples
    given = [
        k
        for k, v in (("gaussian", mean), ("quantiles", quantiles), ("intervals", lower), ("samples", samples))
        if v is not None
    ]
    if len(given) != 1:
        raise CalibcliError(
            "give one kind of prediction: mean= with std= (or var=), quantiles= with quantile_levels=, lower= and "
            f"upper= with level=, or samples= (given: {', '.join(given) or 'none'})"
        )
    kind = given[0]
    if kind == "gaussian":
        if (std is None) == (var is None):
            raise CalibcliError("mean= needs one of std= or var=")
        spread = _column(std if std is not None else var, "std" if std is not None else "var")
        if not np.all(spread > 0):
            raise CalibcliError(
                f"{'std' if std is not None else 'var'} holds values <= 0 (or NaN): expected positive numbers"
            )
        return kind, np.column_stack([_column(mean, "mean"), spread if std is not None else np.sqrt(spread)]), ()
    if kind == "quantiles":
        q = _matrix(quantiles, "quantiles")
        levels = tuple(float(v) for v in np.atleast_1d(quantile_levels if quantile_levels is not None else []))
        if len(levels) != q.shape[1] or not all(0 < v < 1 for v in levels) or list(levels) != sorted(set(levels)):
            raise CalibcliError(
                f"quantile_levels={list(levels)}: expected {q.shape[1]} increasing levels in (0, 1), one per column"
            )
        return kind, q, levels
    if kind == "intervals":
        if upper is None or level is None:
            raise CalibcliError("lower= needs upper= and level=")
        lo, hi = np.atleast_2d(_column(lower, "lower").T).T, np.atleast_2d(_column(upper, "upper").T).T
        levels = tuple(float(v) for v in np.atleast_1d(level))
        if lo.shape != hi.shape or lo.shape[1] != len(levels) or not all(0 < v < 1 for v in levels):
            raise CalibcliError("lower=, upper= and level= must give one column and one level in (0, 1) per interval")
        if np.any(lo > hi):
            raise CalibcliError("lower is above upper on some rows: expected lower <= upper")
        out = np.empty((len(lo), 2 * lo.shape[1]))
        out[:, 0::2], out[:, 1::2] = lo, hi
        return kind, out, levels
    return kind, _matrix(samples, "samples"), ()


@takes_prediction
def regression_metrics(
    y_true,
    *,
    prediction: Predicted,
    sample_weight=None,
    interval_levels=(),
    curve_form: str | None = None,
    n_bins: int = 10,
    binning: str = "equal-mass",
    crps_estimator: str = "nrg",
    n_boot: int = 0,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, MetricResult]:
    """Every regression metric of one set of predictions (``calibcli regression``'s numbers), by name.

    >>> import numpy as np
    >>> r = regression_metrics(np.array([0.1, -0.4, 1.2]), mean=np.zeros(3), std=np.ones(3))
    >>> round(r["crps"].estimate, 6)
    0.427461
    """
    kind, preds, levels = prediction.matrix()
    y = _column(y_true, "y_true")
    if len(y) != len(preds):
        raise CalibcliError(
            f"y_true has {len(y)} rows but the prediction {len(preds)}: expected one prediction per target"
        )
    if not (np.isfinite(y).all() and np.isfinite(preds).all()):
        raise CalibcliError("y_true or the prediction holds NaN or infinite values: expected finite numbers")
    w = None if sample_weight is None else _column(sample_weight, "sample_weight")
    options = RegressionOptions(
        curve_form=curve_form,
        levels=tuple(float(v) for v in interval_levels),
        crps_estimator=crps_estimator,
        n_bins=n_bins,
        binning=binning,
        n_boot=n_boot,
        alpha=alpha,
        seed=seed,
    )
    acc = RegressionAccumulator(Prediction(kind, levels, options)).update(np.arange(len(y)), preds, y, w)
    report = acc.result()
    params = {"kind": kind, "curve_form": report.problem["calibration_curve"]["form"], "n_boot": n_boot, "seed": seed}
    return {
        name: MetricResult(
            name,
            m.estimate,
            m.ci_low,
            m.ci_high,
            m.ci_method,
            note=m.note,
            n=len(y),
            mode="regression",
            params=params,
            details={"calibration_curve": report.problem["calibration_curve"]},
            report=report,
        )
        for name, m in report.metrics.items()
    }
