"""The regression metrics on array-likes (NumPy, pandas, polars, pyarrow), as :mod:`calibcli.metrics` exports
them: :func:`regression_metrics` gives every metric of ``calibcli regression`` for one set of predictions,
the same numbers (it runs the same accumulator on the rows as one batch)."""

from __future__ import annotations

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


def prediction_matrix(
    *,
    mean=None,
    std=None,
    var=None,
    quantiles=None,
    quantile_levels=None,
    lower=None,
    upper=None,
    level=None,
    samples=None,
) -> tuple[str, np.ndarray, tuple[float, ...]]:
    """The kind, the ``(n, m)`` prediction matrix and the kind's levels of one call's keywords (one kind)."""
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


def regression_metrics(
    y_true,
    *,
    mean=None,
    std=None,
    var=None,
    quantiles=None,
    quantile_levels=None,
    lower=None,
    upper=None,
    level=None,
    samples=None,
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
    kind, preds, levels = prediction_matrix(
        mean=mean,
        std=std,
        var=var,
        quantiles=quantiles,
        quantile_levels=quantile_levels,
        lower=lower,
        upper=upper,
        level=level,
        samples=samples,
    )
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
