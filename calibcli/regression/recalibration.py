"""``recalibrate fit`` and ``apply`` for regression predictions (SPEC 10 "Recalibration"; docs/commands/regression.md):
fit a :mod:`calibcli.regression.recalibrators` map on a regression dump and save it as a versioned JSON document,
and write a dump's recalibrated columns back out.

- ``std-scaling`` (a Gaussian prediction): the std column is written multiplied by the factor (a variance column
  by its square);
- ``isotonic-pit`` (a Gaussian prediction): the mean and std are replaced by the recalibrated quantiles
  ``q0.05 ... q0.95`` (:data:`QUANTILE_LEVELS`), the model's quantiles at the levels the PIT map gives;
- ``conformal`` (an interval, quantiles with a symmetric pair of levels, or a Gaussian): the interval at the
  calibrator's level is widened by the split-conformal margin; a Gaussian's mean and std are replaced by the
  interval's ``lower_L``, ``upper_L`` columns, quantiles keep their columns with the pair's values moved.

Every other column is kept as it was, so the output reads back into ``calibcli regression``.
"""

from __future__ import annotations

import numpy as np

from calibcli._version import __version__
from calibcli.core.errors import CalibcliError
from calibcli.io.loaded import read_whole_table
from calibcli.io.regression import RegressionPlan, RegressionSources, RegressionSpec, Target, resolve_target
from calibcli.io.writers import output_format, write_table_output
from calibcli.regression import recalibrators, scores
from calibcli.regression.kinds import level_name

REGRESSION_METHODS = ("std-scaling", "isotonic-pit", "conformal")
QUANTILE_LEVELS = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
_KINDS = {
    "std-scaling": ("gaussian",),
    "isotonic-pit": ("gaussian",),
    "conformal": ("gaussian", "intervals", "quantiles"),
}


def _rows(
    train: str, *, input_format, drop_invalid: bool, batch_rows: int
) -> tuple[Target, np.ndarray, np.ndarray, np.ndarray | None]:
    sources = RegressionSources(
        (train,), RegressionSpec(), input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows
    )
    (stream,) = list(sources.open())
    batches = list(stream.batches())
    preds = np.concatenate([b.probs for b in batches])
    y = np.concatenate([b.labels for b in batches])
    w = None if stream.weight_column is None else np.concatenate([b.sample_weight for b in batches])
    return stream.plan.target, preds, y, w


def _interval(target: Target, preds: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The central interval a conformal calibrator adjusts: an interval input's first, the widest symmetric pair
    of quantiles, or a Gaussian's at ``level``."""
    if target.kind == "intervals":
        return preds[:, 0], preds[:, 1], target.levels[0]
    if target.kind == "quantiles":
        q = np.sort(preds, axis=1)
        levels = np.asarray(target.levels)
        for i in range(len(levels) // 2):
            j = np.flatnonzero(np.abs(levels - (1.0 - levels[i])) < 1e-9)
            if len(j):
                return q[:, i], q[:, j[0]], float(f"{1.0 - 2.0 * levels[i]:.12g}")
        raise CalibcliError(
            f"conformal needs a symmetric pair of quantile levels (tau and 1 - tau); the levels are {list(levels)}"
        )
    from scipy.special import ndtri

    half = preds[:, 1] * ndtri(0.5 + level / 2.0)
    return preds[:, 0] - half, preds[:, 0] + half, level


def fit_regression(
    train: str, method: str, *, level: float, input_format=None, drop_invalid: bool = False, batch_rows: int = 65536
) -> dict:
    """The calibrator document of ``method`` fitted on the regression dump ``train``."""
    target, preds, y, w = _rows(train, input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows)
    if target.kind not in _KINDS[method]:
        raise CalibcliError(
            f"{train}: --method {method} needs {' or '.join(_KINDS[method])} predictions, but the file holds "
            f"{target.kind}: use conformal for intervals and quantiles"
        )
    if method == "std-scaling":
        fitted: object = recalibrators.StdScaling.fit(y, preds[:, 0], preds[:, 1], w)
    elif method == "isotonic-pit":
        fitted = recalibrators.IsotonicPIT.fit(scores.gaussian_pit(y, preds[:, 0], preds[:, 1]))
    else:
        lower, upper, at = _interval(target, preds, level)
        fitted = recalibrators.Conformal.fit(y, lower, upper, at)
    return {
        **fitted.to_dict(),  # type: ignore[attr-defined]
        "tool": "calibcli",
        "tool_version": __version__,
        "fitted_on": {"path": train, "rows": int(len(y)), "columns": target.names},
    }


def apply_regression(doc: dict, file: str, *, output: str, fmt: str | None = None, input_format=None) -> dict:
    """Write ``file`` with its recalibrated columns to ``output``; returns what was written (for the summary)."""
    import pyarrow as pa

    calibrator = recalibrators.from_dict(doc)
    table, in_fmt, display = read_whole_table(file, input_format)
    names = list(table.schema.names)
    target = resolve_target(names, {f.name: f.type for f in table.schema}, RegressionSpec(), display)
    if target.long is not None:
        raise CalibcliError(
            f"{display}: recalibrate apply writes wide columns, and this file holds quantiles in long form "
            f"({target.long.level}, {target.long.value}): pivot it to wide columns (q0.05 ...) first"
        )
    plan = RegressionPlan(target=target, first_file=display, batch_rows=max(1, table.num_rows))
    sub = table.select(plan.data_columns)
    conv, _, _ = plan.read(sub, display, 0, None, whole_file=True, text_of=lambda c, r: sub.column(c)[r].as_py())
    preds = conv.probs
    method = doc["method"]
    if target.kind not in _KINDS[method]:
        raise CalibcliError(
            f"{display}: the {method} calibrator applies to {' or '.join(_KINDS[method])} predictions, "
            f"not {target.kind}"
        )
    columns: dict[str, np.ndarray] = {}
    dropped: list[str] = []
    if isinstance(calibrator, recalibrators.StdScaling):
        spread = target.columns[1]
        columns[spread] = calibrator.factor**2 * preds[:, 1] ** 2 if target.variance else calibrator.std(preds[:, 1])
        what = f"{spread} scaled by {calibrator.factor:.6g}"
    elif isinstance(calibrator, recalibrators.IsotonicPIT):
        q = calibrator.gaussian_quantiles(preds[:, 0], preds[:, 1], np.asarray(QUANTILE_LEVELS))
        dropped = list(target.columns)
        columns = {f"q{tau:g}": q[:, k] for k, tau in enumerate(QUANTILE_LEVELS)}
        what = f"{', '.join(dropped)} replaced by the recalibrated quantiles {', '.join(columns)}"
    else:
        assert isinstance(calibrator, recalibrators.Conformal)
        lower, upper, at = _interval(target, preds, calibrator.level)
        if abs(at - calibrator.level) > 1e-9:
            raise CalibcliError(
                f"{display}: the conformal calibrator adjusts intervals at level {calibrator.level:g}, but the file's "
                f"interval is at {at:g}: fit it on predictions at the same level"
            )
        lo, hi = calibrator.interval(lower, upper)
        s = level_name(calibrator.level)
        if target.kind == "gaussian":
            dropped = list(target.columns)
            columns = {f"lower_{s}": lo, f"upper_{s}": hi}
        elif target.kind == "intervals":
            columns = {target.columns[0]: lo, target.columns[1]: hi}
        else:
            levels = np.asarray(target.levels)
            i = int(np.argmin(np.abs(levels - (1 - calibrator.level) / 2)))
            j = int(np.argmin(np.abs(levels - (1 + calibrator.level) / 2)))
            columns = {target.columns[i]: lo, target.columns[j]: hi}
        what = f"the {s} interval widened by {calibrator.margin:.6g} on each side"
    out = table
    for name in dropped:
        out = out.drop_columns([name])
    for name, values in columns.items():
        array = pa.array(np.asarray(values, dtype=np.float64))
        if name in out.schema.names:
            out = out.set_column(out.schema.get_field_index(name), name, array)
        else:
            out = out.append_column(name, array)
    fmt = output_format(output, fmt, in_fmt if output != "-" else "csv")
    rows = write_table_output(output, fmt, [out])
    return {"output": output, "rows": rows, "method": method, "what": what}
