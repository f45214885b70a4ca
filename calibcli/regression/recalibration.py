"""``recalibrate fit``, ``apply`` and ``evaluate`` for regression predictions (SPEC 10 "Recalibration";
docs/commands/regression.md): fit a :mod:`calibcli.regression.recalibrators` map on a regression dump and save it as
a versioned JSON document, and write a dump's recalibrated columns back out.

- ``std-scaling`` (a Gaussian prediction): the std column is written multiplied by the factor (a variance column
  by its square);
- ``isotonic-pit`` (a Gaussian, quantiles or samples): the map of the PIT (Kuleshov et al. 2018). A Gaussian's
  mean and std are replaced by the recalibrated quantiles ``q0.05 ... q0.95`` (:data:`QUANTILE_LEVELS`), the
  model's quantiles at the levels the map gives; quantiles keep their values, re-labelled with the levels they hold
  under the recalibrated CDF (``q0.1`` becomes ``q0.0733333``); an ensemble's sorted members, its quantiles at
  ``j / (M + 1)``, are written as quantiles re-labelled the same way. (An interval has no PIT: refused.)
- ``conformal`` (an interval, quantiles with a symmetric pair of levels, or a Gaussian): the interval at the
  calibrator's level is widened by the split-conformal margin; a Gaussian's mean and std are replaced by the
  interval's ``lower_L``, ``upper_L`` columns, quantiles keep their columns with the pair's values moved.

Every other column is kept as it was, so the output reads back into ``calibcli regression``.
:func:`recalibrated` is what ``apply`` writes, as arrays (``recalibrate evaluate`` measures it without a file).
A map applies to predictions of the kind it was fitted on (its document's ``fitted_on.columns.kind``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "isotonic-pit": ("gaussian", "quantiles", "samples"),
    "conformal": ("gaussian", "intervals", "quantiles"),
}


@dataclass(frozen=True)
class Rows:
    """A regression dump's rows in memory: what its columns are, the prediction matrix, the targets, the weights
    and each row's global index (the key of the seeded draws)."""

    target: Target
    preds: np.ndarray
    y: np.ndarray
    w: np.ndarray | None
    row_index: np.ndarray
    described: dict

    def take(self, keep: np.ndarray) -> Rows:
        w = None if self.w is None else self.w[keep]
        return Rows(self.target, self.preds[keep], self.y[keep], w, self.row_index[keep], self.described)


def read_rows(path: str, *, input_format=None, drop_invalid: bool = False, batch_rows: int = 65536) -> Rows:
    """Every row of the regression dump ``path`` (its columns recognised by name)."""
    sources = RegressionSources(
        (path,), RegressionSpec(), input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows
    )
    (stream,) = list(sources.open())
    batches = list(stream.batches())
    if not batches:
        raise CalibcliError(f"{path}: no rows: expected a regression dump with at least 2 rows")
    preds = np.concatenate([b.probs for b in batches])
    y = np.concatenate([b.labels for b in batches])
    w = None if stream.weight_column is None else np.concatenate([b.sample_weight for b in batches])
    row_index = np.concatenate([b.row_index for b in batches])
    return Rows(stream.plan.target, preds, y, w, row_index, stream.describe())


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


def check_kind(method: str, kind: str, where: str) -> None:
    """``method`` fits (and applies to) predictions of ``kind``, else the Error line."""
    if kind not in _KINDS[method]:
        other = {
            "intervals": "an interval has no PIT nor std: use conformal",
            "quantiles": "use isotonic-pit or conformal for quantiles",
            "samples": "use isotonic-pit for samples",
            "gaussian": "use std-scaling, isotonic-pit or conformal",
        }[kind]
        raise CalibcliError(
            f"{where}: --method {method} needs {' or '.join(_KINDS[method])} predictions, but the file holds "
            f"{kind}: {other}"
        )


def pit(target: Target, preds: np.ndarray, y: np.ndarray, row_index: np.ndarray, seed: int) -> np.ndarray:
    """The PIT of each row as ``calibcli regression`` computes it (SPEC 10: the quantiles' and samples'
    randomised by ``V`` keyed by ``(seed, global row index)``)."""
    if target.kind == "gaussian":
        return scores.gaussian_pit(y, preds[:, 0], preds[:, 1])
    v = scores.uniforms(seed, row_index)
    if target.kind == "quantiles":
        q, _ = scores.sorted_quantiles(preds)
        return scores.quantile_pit(y, q, np.asarray(target.levels), v)
    return scores.sample_pit(y, preds, v)


def fit_rows(rows: Rows, method: str, *, level: float, seed: int, where: str):
    """The ``method`` map fitted on ``rows``."""
    target, preds, y, w = rows.target, rows.preds, rows.y, rows.w
    check_kind(method, target.kind, where)
    if method == "std-scaling":
        return recalibrators.StdScaling.fit(y, preds[:, 0], preds[:, 1], w)
    if method == "isotonic-pit":
        return recalibrators.IsotonicPIT.fit(pit(target, preds, y, rows.row_index, seed), w)
    lower, upper, at = _interval(target, preds, level)
    return recalibrators.Conformal.fit(y, lower, upper, at)


def fit_regression(
    train: str,
    method: str,
    *,
    level: float,
    seed: int = 0,
    input_format=None,
    drop_invalid: bool = False,
    batch_rows: int = 65536,
) -> dict:
    """The calibrator document of ``method`` fitted on the regression dump ``train``."""
    rows = read_rows(train, input_format=input_format, drop_invalid=drop_invalid, batch_rows=batch_rows)
    return document(fit_rows(rows, method, level=level, seed=seed, where=train), rows, train, seed)


def document(fitted, rows: Rows, path: str, seed: int) -> dict:
    """The calibrator document of a map fitted on ``rows`` (read from ``path``): what ``recalibrate fit`` writes."""
    return {
        **fitted.to_dict(),
        "tool": "calibcli",
        "tool_version": __version__,
        "fitted_on": {"path": path, "rows": int(len(rows.y)), "columns": rows.target.names, "seed": seed},
    }


@dataclass(frozen=True)
class Recalibrated:
    """What ``apply`` writes for a map and a dump's predictions: the columns written (by name) and dropped, the
    prediction a reader of the output gets (its kind, levels and matrix, as :mod:`calibcli.io.regression` reads
    them back), and the summary's sentence."""

    kind: str
    levels: tuple[float, ...]
    preds: np.ndarray
    columns: dict[str, np.ndarray]
    dropped: tuple[str, ...]
    what: str


def recalibrated(doc: dict, target: Target, preds: np.ndarray, where: str) -> Recalibrated:
    """The map ``doc`` applied to the predictions ``preds`` (``target``'s columns)."""
    calibrator = recalibrators.from_dict(doc)
    method = doc["method"]
    fitted_kind = (doc.get("fitted_on") or {}).get("columns", {}).get("kind")
    if fitted_kind is not None and fitted_kind != target.kind:
        raise CalibcliError(
            f"{where}: the {method} calibrator was fitted on {fitted_kind} predictions, and the file holds "
            f"{target.kind}: fit it on {target.kind} predictions of the same model"
        )
    check_kind(method, target.kind, where)
    if isinstance(calibrator, recalibrators.StdScaling):
        spread = target.columns[1]
        std = calibrator.std(preds[:, 1])
        written = calibrator.factor**2 * preds[:, 1] ** 2 if target.variance else std
        back = np.sqrt(written) if target.variance else std
        return Recalibrated(
            "gaussian",
            (),
            np.column_stack([preds[:, 0], back]),
            {spread: written},
            (),
            f"{spread} scaled by {calibrator.factor:.6g}",
        )
    if isinstance(calibrator, recalibrators.IsotonicPIT):
        return _isotonic(calibrator, target, preds)
    assert isinstance(calibrator, recalibrators.Conformal)
    lower, upper, at = _interval(target, preds, calibrator.level)
    if abs(at - calibrator.level) > 1e-9:
        raise CalibcliError(
            f"{where}: the conformal calibrator adjusts intervals at level {calibrator.level:g}, but the file's "
            f"interval is at {at:g}: fit it on predictions at the same level"
        )
    lo, hi = calibrator.interval(lower, upper)
    s = level_name(calibrator.level)
    what = f"the {s} interval widened by {calibrator.margin:.6g} on each side"
    if target.kind == "gaussian":
        return Recalibrated(
            "intervals",
            (float(s),),
            np.column_stack([lo, hi]),
            {f"lower_{s}": lo, f"upper_{s}": hi},
            tuple(target.columns),
            what,
        )
    if target.kind == "intervals":
        i, j = 0, 1
    else:
        levels = np.asarray(target.levels)
        i = int(np.argmin(np.abs(levels - (1 - calibrator.level) / 2)))
        j = int(np.argmin(np.abs(levels - (1 + calibrator.level) / 2)))
    out = np.array(preds, dtype=np.float64, copy=True)
    out[:, i], out[:, j] = lo, hi
    columns = {target.columns[i]: lo, target.columns[j]: hi}
    return Recalibrated(target.kind, tuple(target.levels), out, columns, (), what)


def _isotonic(calibrator: recalibrators.IsotonicPIT, target: Target, preds: np.ndarray) -> Recalibrated:
    """isotonic-pit's output: a Gaussian's quantiles at the recalibrated levels' inverse images, or quantiles
    (an ensemble's sorted members) re-labelled with the levels they hold under the recalibrated CDF."""
    if target.kind == "gaussian":
        q = calibrator.gaussian_quantiles(preds[:, 0], preds[:, 1], np.asarray(QUANTILE_LEVELS))
        columns = {f"q{tau:g}": q[:, k] for k, tau in enumerate(QUANTILE_LEVELS)}
        what = f"{', '.join(target.columns)} replaced by the recalibrated quantiles {', '.join(columns)}"
        return Recalibrated("quantiles", QUANTILE_LEVELS, q, columns, tuple(target.columns), what)
    if target.kind == "quantiles":
        q, _ = scores.sorted_quantiles(np.asarray(preds, dtype=np.float64))
        nominal = np.asarray(target.levels)
    else:
        q = np.sort(np.asarray(preds, dtype=np.float64), axis=1)
        nominal = recalibrators.member_levels(q.shape[1])
    levels = calibrator.relabelled_levels(nominal)
    names = [f"q{recalibrators.level_text(v)}" for v in levels]
    columns = {name: q[:, k] for k, name in enumerate(names)}
    shown = f"{names[0]} ... {names[-1]}" if len(names) > 4 else ", ".join(names)
    what = (
        f"quantiles at {nominal[0]:g} ... {nominal[-1]:g} re-labelled with their recalibrated levels ({shown})"
        if target.kind == "quantiles"
        else f"the {q.shape[1]} sorted samples written as quantiles at their recalibrated levels ({shown})"
    )
    return Recalibrated("quantiles", levels, q, columns, tuple(target.columns), what)


def apply_regression(doc: dict, file: str, *, output: str, fmt: str | None = None, input_format=None) -> dict:
    """Write ``file`` with its recalibrated columns to ``output``; returns what was written (for the summary)."""
    import pyarrow as pa

    recalibrators.from_dict(doc)  # (a document of another kind is refused before the file is read)
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
    done = recalibrated(doc, target, conv.probs, display)
    columns, dropped, what, method = done.columns, list(done.dropped), done.what, doc["method"]
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


#: What a prediction matrix holds per kind, column by column (the library's recalibrators read it).
ARRAY_KINDS = {
    "gaussian": "mean, std",
    "quantiles": "one column per level of quantile_levels, in their order",
    "intervals": "lower, upper of the central interval at level",
    "samples": "one column per member of the ensemble",
}


def array_target(kind: str, X: np.ndarray, *, quantile_levels=None, level: float = 0.9) -> Target:
    """The :class:`~calibcli.io.regression.Target` of a prediction matrix ``X`` of ``kind`` (:data:`ARRAY_KINDS`),
    its values checked as the input layer checks a file's (the columns named as a file's would be)."""
    if kind not in ARRAY_KINDS:
        raise CalibcliError(f"kind is {kind!r}: expected one of {', '.join(ARRAY_KINDS)}")
    m = X.shape[1]
    levels: tuple[float, ...] = ()
    if kind == "quantiles":
        levels = tuple(float(v) for v in np.atleast_1d(quantile_levels if quantile_levels is not None else []))
        if len(levels) != m or not all(0 < v < 1 for v in levels) or list(levels) != sorted(set(levels)):
            raise CalibcliError(
                f"quantile_levels is {list(levels)}: expected {m} increasing levels in (0, 1), one per column of X"
            )
    elif kind == "intervals":
        if not 0 < level < 1:
            raise CalibcliError(f"level is {level!r}: expected a level in (0, 1)")
        levels = (float(level),)
    if kind in ("gaussian", "intervals") and m != 2:
        raise CalibcliError(f"X has {m} columns: a {kind} prediction has 2 ({ARRAY_KINDS[kind]})")
    if not np.isfinite(X).all():
        raise CalibcliError("X holds NaN or infinite values: expected finite predictions")
    if kind == "gaussian" and not np.all(X[:, 1] > 0):
        raise CalibcliError("X's std column holds values <= 0: expected positive standard deviations")
    if kind == "intervals" and np.any(X[:, 0] > X[:, 1]):
        raise CalibcliError("X's lower column is above its upper column on some rows: expected lower <= upper")
    if kind == "gaussian":
        columns: tuple[str, ...] = ("mean", "std")
    elif kind == "intervals":
        columns = (f"lower_{level_name(level)}", f"upper_{level_name(level)}")
    elif kind == "quantiles":
        columns = tuple(f"q{level_name(v)}" for v in levels)
    else:
        columns = tuple(f"s{j}" for j in range(m))
    return Target(kind=kind, columns=columns, target="y", levels=levels)
