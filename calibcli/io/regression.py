"""The second kind of target: a real value with a predictive distribution (SPEC 10 "Kinds").

A regression dump holds a target column (``--target``, or ``y`` / ``target`` / ``y_true``) and one of four
kinds of prediction:

- ``gaussian``: a mean and a standard deviation (``--mean COL --std COL``, or ``--var COL``; columns named
  mean/mu/pred_mean and std/sigma/stddev, or var/variance, are recognised);
- ``quantiles``: one column per level (``--quantile-cols``; columns named ``q0.05``, ``q_0.05``,
  ``quantile_0.05`` or ``q05`` / ``p05`` (percent) are recognised, their levels read from the names);
- ``intervals``: central intervals (``--lower COL --upper COL --level 0.9``, several of each allowed;
  columns ``lower_0.9`` / ``upper_0.9`` are recognised with their levels);
- ``samples``: draws from the predictive distribution (``--sample-cols``; columns ``s0 ... sN`` or
  ``sample_0 ...`` are recognised).

Files are read as for the classifier commands (files, directories, globs, hive partitions, URIs, stdin, the
Dask engine): :func:`regression_sources` gives the :class:`~calibcli.io.streams.Sources` of a run, whose
streams yield :class:`~calibcli.io.fragments.Batch` es with ``probs`` the ``(n, m)`` prediction matrix in
the kind's column order (a variance already made a standard deviation), ``labels`` the float64 targets.
Quantile columns are handed over as the file has them (crossed values are the accumulator's to count and
sort, SPEC 10); every other row check is here: an empty or non-finite target or prediction, a standard
deviation (variance) that is not positive, a lower end above the upper end, a bad weight.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from calibcli.core.errors import CalibcliError, shown, shown_names
from calibcli.core.validation import check_options
from calibcli.io.arrow_values import _floats, _is_text, _text_numbers, null_mask
from calibcli.io.columns import (
    DatasetPlan,
    _is_list_type,
    _split_list,
    _type_words,
    expand_columns,
    group_kind,
    group_values,
    natural_suffix_order,
)
from calibcli.io.long_quantiles import LongForm, detect_long, first_levels, long_batches
from calibcli.io.resolve import resolve_datasets
from calibcli.io.sources import DEFAULT_BATCH_ROWS, Dataset, Stream
from calibcli.io.streams import Sources

KINDS = ("gaussian", "quantiles", "intervals", "samples")
TARGET_NAMES = ("y", "target", "y_true")
MEAN_NAMES = ("mean", "mu", "pred_mean", "y_pred", "prediction")
STD_NAMES = ("std", "sigma", "stddev", "pred_std", "y_std")
VAR_NAMES = ("var", "variance", "pred_var")
_QUANTILE_RE = re.compile(r"^(?:q|quantile)_?(0?\.\d+)$", re.IGNORECASE)
_PERCENT_RE = re.compile(r"^(?:q|p|quantile)_?(\d{1,2})$", re.IGNORECASE)
_SAMPLE_RE = re.compile(r"^(?:s|sample)_?(\d+)$", re.IGNORECASE)
_BOUND_RE = re.compile(r"^(lower|upper|lo|hi)_(0?\.\d+)$", re.IGNORECASE)

#: Why a row is invalid, in the order the checks run and reports list them.
REASONS = (
    "empty target",
    "target not a finite number",
    "empty prediction cell",
    "prediction not a finite number",
    "std not positive",
    "lower above upper",
    "invalid sample weight",
)


@dataclass(frozen=True)
class RegressionSpec:
    """Which columns hold the target and the prediction, as given on the command line (None: recognise)."""

    target: str | None = None
    mean: str | None = None
    std: str | None = None
    var: str | None = None
    quantile_cols: tuple[str, ...] = ()
    quantile_levels: tuple[float, ...] = ()
    lower: tuple[str, ...] = ()
    upper: tuple[str, ...] = ()
    level: tuple[float, ...] = ()
    sample_cols: tuple[str, ...] = ()
    weight_col: str | None = None
    id_col: str | None = None  # quantiles in long form: the id beside quantile_level, value

    def __post_init__(self) -> None:
        for what, levels in (("{opt:level}", self.level), ("{opt:quantile_levels}", self.quantile_levels)):
            for value in levels:
                check_level(value, what)


def check_level(value: float, what: str) -> float:
    """A level must lie strictly between 0 and 1."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 < value < 1.0):
        raise CalibcliError(f"{what} {value:g} is outside (0, 1): expected a level such as 0.9 (a 90% interval)")
    return float(value)


@dataclass(frozen=True)
class Target:
    """What a regression dataset's columns are: the kind, the prediction columns in order, the levels (the
    quantiles' levels, or the intervals' levels, one per lower/upper pair), the target and weight columns."""

    kind: str
    columns: tuple[str, ...]
    target: str
    weight: str | None = None
    levels: tuple[float, ...] = ()
    variance: bool = False  # gaussian: the second column holds variances
    chosen: str = "auto"
    long: LongForm | None = None  # quantiles in long form (id, quantile_level, value): pivoted by id

    @property
    def names(self) -> dict:
        """The report's ``columns`` section: which column plays which part."""
        if self.long is not None:
            lf = self.long
            parts: dict = {"form": "long", "id": lf.id, "quantile_level": lf.level, "value": lf.value}
            parts["levels"] = list(self.levels)
            return {"kind": self.kind, **parts, "target": self.target, "weight": self.weight, "chosen_by": self.chosen}
        return self._wide_names()

    def _wide_names(self) -> dict:

        c = self.columns
        if self.kind == "gaussian":
            parts: dict = {"mean": c[0], ("var" if self.variance else "std"): c[1]}
        elif self.kind == "intervals":
            parts = {"lower": list(c[0::2]), "upper": list(c[1::2]), "levels": list(self.levels)}
        elif self.kind == "quantiles":
            parts = {"quantiles": list(c), "levels": list(self.levels)}
        else:
            parts = {"samples": list(c)}
        return {"kind": self.kind, **parts, "target": self.target, "weight": self.weight, "chosen_by": self.chosen}


# ---------------------------------------------------------------------------------------------
# Which columns hold what


def _expand(items, names: list[str], flag: str, where: str, taken: set[str]) -> list[str]:
    """Columns named by a list option: names, comma-separated lists or patterns (``s*``)."""
    return expand_columns(
        _split_list(items),
        names,
        exclude=taken,
        missing=lambda part: (
            f"{where}: {flag} pattern {shown(part)} matches no column; the file has columns {shown_names(names)}"
        ),
        named=lambda part: _need(part, flag, names, where),
        order=_by_number,
    )


def _by_number(names: list[str]) -> list[str]:
    ordered = natural_suffix_order(names)
    if ordered is not names:
        return ordered
    numbers = [_SAMPLE_RE.match(n) for n in names]
    if all(numbers):
        return [n for _, n in sorted((int(m.group(1)), n) for m, n in zip(numbers, names, strict=True) if m)]
    return names


def _need(col: str, flag: str, names: list[str], where: str) -> str:
    if col not in names:
        raise CalibcliError(
            f"{where}: no column {shown(col)} (given by {flag}); the file has columns {shown_names(names)}"
        )
    return col


def level_of_name(name: str) -> float | None:
    """The level a quantile column's name states (``q0.05``, ``quantile_0.05``: 0.05; ``q05``, ``p90``: percent)."""
    m = _QUANTILE_RE.match(name)
    if m:
        return float(m.group(1))
    m = _PERCENT_RE.match(name)
    if m and 0 < int(m.group(1)) < 100:
        return int(m.group(1)) / 100.0
    return None


def _quantile_target(cols: list[str], levels: tuple[float, ...], where: str, flag: str) -> tuple:
    if levels:
        if len(levels) != len(cols):
            raise CalibcliError(
                f"{where}: {{opt:quantile_levels}} gives {len(levels)} levels for {len(cols)} quantile columns: "
                "give one level per column"
            )
        found = list(levels)
    else:
        named = [level_of_name(c) for c in cols]
        if None in named:
            bad = cols[named.index(None)]
            raise CalibcliError(
                f"{where}: the level of quantile column {shown(bad)} cannot be read from its name: name the columns "
                "q0.05 ... or quantile_0.05 ..., or pass {opt:quantile_levels} with one level per column"
            )
        found = [float(v) for v in named if v is not None]
    for value in found:
        check_level(value, f"the quantile level of {flag}")
    if len(cols) < 2:
        raise CalibcliError(f"{where}: {flag} names {len(cols)} quantile column: expected at least 2 levels")
    order = np.argsort(found, kind="stable")
    levels_sorted = [float(found[i]) for i in order]
    if len(set(levels_sorted)) < len(levels_sorted):
        raise CalibcliError(f"{where}: two quantile columns have the same level: expected one column per level")
    return tuple(cols[i] for i in order), tuple(levels_sorted)


def _given_kinds(spec: RegressionSpec) -> list[str]:
    given = []
    if spec.mean or spec.std or spec.var:
        given.append("gaussian")
    if spec.quantile_cols:
        given.append("quantiles")
    if spec.lower or spec.upper:
        given.append("intervals")
    if spec.sample_cols:
        given.append("samples")
    return given


def resolve_target(names: list[str], types: dict, spec: RegressionSpec, where: str) -> Target:
    """The :class:`Target` of a file with these columns: the flags first, then the common names."""
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise CalibcliError(f"{where}: column name {shown(duplicated[0])} appears more than once in the header")
    lower = {n.lower(): n for n in names}
    if spec.target:
        target = _need(spec.target, "{opt:target}", names, where)
    else:
        found = [lower[n] for n in TARGET_NAMES if n in lower]
        if not found:
            raise CalibcliError(
                f"{where}: no target column recognised among {shown_names(names)}: expected one named "
                f"{'/'.join(TARGET_NAMES)}; pass {{opt:target}} NAME"
            )
        target = found[0]
    weight = _need(spec.weight_col, "{opt:weight_col}", names, where) if spec.weight_col else None
    taken = {target, *([weight] if weight else [])}
    given = _given_kinds(spec)
    if len(given) > 1:
        raise CalibcliError(
            f"the prediction is given as {' and as '.join(given)}: pass the options of one kind only "
            "({opt:mean}/{opt:std}, {opt:quantile_cols}, {opt:lower}/{opt:upper} or {opt:sample_cols})"
        )
    chosen = "flags" if given or spec.target else "auto"
    long = detect_long(names, spec.id_col, where)
    if long is not None:
        if given:
            raise CalibcliError(
                f"{where}: the file holds quantiles in long form ({long.level}, {long.value}) but the prediction is "
                f"also given as {given[0]}: drop those options"
            )
        for c in (long.id, long.level, long.value):
            if c in taken:
                raise CalibcliError(
                    f"{where}: column {shown(c)} is used both in the long form and as the target or weight"
                )
        return Target("quantiles", (), target, weight, (), False, chosen, long)
    if given:
        out = _flagged(given[0], names, spec, where, taken)
    else:
        out = _detected(names, lower, spec, where, taken)
    kind, cols, levels, variance = out
    for c in cols:
        if c in taken:
            raise CalibcliError(f"{where}: column {shown(c)} is used both as a prediction and as the target or weight")
        t = types.get(c)
        if t is not None and (_is_list_type(t) or not _numeric_or_text(t)):
            raise CalibcliError(
                f"{where}: prediction column {shown(c)} holds {_type_words(t)}: expected numbers; check the column"
            )
    return Target(kind, tuple(cols), target, weight, tuple(levels), variance, chosen)


def _numeric_or_text(t) -> bool:
    import pyarrow as pa

    return pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_null(t) or _is_text(t)


def _flagged(kind: str, names: list[str], spec: RegressionSpec, where: str, taken: set[str]) -> tuple:
    if kind == "gaussian":
        if not spec.mean:
            raise CalibcliError("{opt:std} and {opt:var} need {opt:mean} COL: name the predicted mean's column")
        if bool(spec.std) == bool(spec.var):
            raise CalibcliError(
                "{opt:mean} needs one of {opt:std} COL or {opt:var} COL: name the column of the predicted spread"
            )
        spread = spec.std or spec.var
        assert spread is not None  # (one of them, checked above)
        return (
            "gaussian",
            [
                _need(spec.mean, "{opt:mean}", names, where),
                _need(spread, "{opt:std}" if spec.std else "{opt:var}", names, where),
            ],
            (),
            bool(spec.var),
        )
    if kind == "quantiles":
        cols = _expand(spec.quantile_cols, names, "{opt:quantile_cols}", where, taken)
        cols_sorted, levels = _quantile_target(cols, spec.quantile_levels, where, "{opt:quantile_cols}")
        return "quantiles", list(cols_sorted), levels, False
    if kind == "intervals":
        lows = _expand(spec.lower, names, "{opt:lower}", where, taken)
        highs = _expand(spec.upper, names, "{opt:upper}", where, taken)
        if len(lows) != len(highs):
            raise CalibcliError(
                f"{{opt:lower}} names {len(lows)} column(s) and {{opt:upper}} {len(highs)}: give one upper column per "
                "lower column"
            )
        levels = spec.level
        if len(levels) != len(lows):
            raise CalibcliError(
                f"{len(lows)} interval(s) ({{opt:lower}}/{{opt:upper}}) but {len(levels)} {{opt:level}} value(s): "
                "give the nominal level of each interval, e.g. --level 0.9"
            )
        return "intervals", _pairs(lows, highs), tuple(float(v) for v in levels), False
    cols = _expand(spec.sample_cols, names, "{opt:sample_cols}", where, taken)
    if len(cols) < 2:
        raise CalibcliError(f"{where}: {{opt:sample_cols}} names {len(cols)} column: expected at least 2 samples")
    return "samples", cols, (), False


def _pairs(lows: list[str], highs: list[str]) -> list[str]:
    out = []
    for lo, hi in zip(lows, highs, strict=True):
        out += [lo, hi]
    return out


def _detected(names: list[str], lower: dict, spec: RegressionSpec, where: str, taken: set[str]) -> tuple:
    others = [n for n in names if n not in taken]
    candidates: list[tuple] = []
    means = [lower[n] for n in MEAN_NAMES if n in lower and lower[n] in others]
    stds = [lower[n] for n in STD_NAMES if n in lower and lower[n] in others]
    variances = [lower[n] for n in VAR_NAMES if n in lower and lower[n] in others]
    if means and (stds or variances):
        candidates.append(("gaussian", [means[0], (stds or variances)[0]], (), not stds))
    quantiles = [n for n in others if level_of_name(n) is not None]
    if len(quantiles) >= 2:
        cols, levels = _quantile_target(quantiles, (), where, "the quantile columns")
        candidates.append(("quantiles", list(cols), levels, False))
    bounds: dict[float, dict[str, str]] = {}
    for n in others:
        m = _BOUND_RE.match(n)
        if m:
            side = "lower" if m.group(1).lower() in ("lower", "lo") else "upper"
            bounds.setdefault(float(m.group(2)), {})[side] = n
    pairs = {lv: b for lv, b in sorted(bounds.items()) if len(b) == 2}
    if pairs:
        cols = _pairs([b["lower"] for b in pairs.values()], [b["upper"] for b in pairs.values()])
        candidates.append(("intervals", cols, tuple(pairs), False))
    elif "lower" in lower and "upper" in lower:
        if not spec.level:
            raise CalibcliError(
                f"{where}: columns {shown(lower['lower'])} and {shown(lower['upper'])} hold an interval of unknown "
                "level: pass {opt:level} (e.g. --level 0.9 for a 90% interval)"
            )
        candidates.append(("intervals", [lower["lower"], lower["upper"]], tuple(spec.level[:1]), False))
    samples = [n for n in others if _SAMPLE_RE.match(n)]
    if len(samples) >= 2:
        candidates.append(("samples", _by_number(samples), (), False))
    if not candidates:
        raise CalibcliError(
            f"{where}: no prediction columns recognised among {shown_names(names)}: expected mean and std (or var), "
            "quantile columns q0.05 ... q0.95, interval columns lower/upper, or sample columns s0 ... sN; pass "
            "{opt:mean}/{opt:std}, {opt:quantile_cols}, {opt:lower}/{opt:upper} or {opt:sample_cols}"
        )
    if len(candidates) > 1:
        described = "; ".join(f"{k} ({', '.join(c[:4])}{', ...' if len(c) > 4 else ''})" for k, c, _, _ in candidates)
        raise CalibcliError(
            f"{where}: the prediction columns are ambiguous (candidates: {described}): pass the options of one kind"
        )
    if candidates[0][0] == "intervals" and spec.level and candidates[0][2] != tuple(spec.level):
        raise CalibcliError(
            f"{where}: the interval columns state levels {list(candidates[0][2])} but {{opt:level}} gives "
            f"{list(spec.level)}: drop {{opt:level}} or name the columns with {{opt:lower}}/{{opt:upper}}"
        )
    return candidates[0]


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class _Columns:
    """What :class:`~calibcli.io.sources.Stream` reads of a plan's columns."""

    prob_columns: tuple[str, ...]
    label_column: str
    weight_column: str | None
    chosen: str


@dataclass
class Converted:
    """One batch's columns as arrays, before the row checks."""

    probs: np.ndarray  # (n, m)
    labels: np.ndarray  # (n,) float64 targets
    weights: np.ndarray | None
    groups: tuple | None
    empty: dict = field(default_factory=dict)  # column -> mask of empty cells
    not_numbers: dict = field(default_factory=dict)  # text column -> mask of cells that are not numbers
    raw: dict = field(default_factory=dict)  # the variance column before its root, for messages


@dataclass(frozen=True)
class RegressionPlan(DatasetPlan):
    """How the files of a regression dataset are read (:class:`~calibcli.io.columns.DatasetPlan`; no audit of
    regression dumps: ``segment_by`` is empty): what :class:`~calibcli.io.fragments.Fragment` and
    :class:`~calibcli.io.sources.Stream` read of a plan, with this kind's conversion and row checks."""

    target: Target
    class_names: tuple[str, ...] = ()
    n_classes: int = 0
    logits: bool = False
    predictions_role = "a prediction column"
    label_role = "the target column"

    @property
    def columns(self) -> _Columns:
        t = self.target
        return _Columns(t.columns, t.target, t.weight, t.chosen)

    def read(self, table, where: str, first_row: int, partition, *, whole_file: bool, text_of):
        """One batch (a pyarrow table of :attr:`data_columns`) as arrays, the rows that pass every check and the
        drops by reason (or the error of the first bad row)."""
        conv = convert_regression(table, self, where, first_row, partition)
        return conv, *check_regression_rows(conv, self, where, first_row, whole_file=whole_file, text_of=text_of)


def _numbers(col, name: str, where: str, conv: Converted, role: str) -> np.ndarray:
    import pyarrow as pa

    if (empty := null_mask(col)) is not None:
        conv.empty[name] = empty
    if _is_text(col.type):
        values, bad = _text_numbers(col)
        if bad.any():
            conv.not_numbers[name] = bad
        return values
    if not (pa.types.is_floating(col.type) or pa.types.is_integer(col.type) or pa.types.is_null(col.type)):
        raise CalibcliError(f"{where}: {role} column {shown(name)} holds {_type_words(col.type)}: expected numbers")
    return _floats(col)


def convert_regression(table, plan: RegressionPlan, where: str, first_row: int, partition: dict | None) -> Converted:
    """A batch's prediction matrix, targets, weights and group values (a variance column made a std)."""
    t = plan.target
    conv = Converted(np.empty((0, 0)), np.empty(0), None, None)
    cols = [_numbers(table.column(c), c, where, conv, "prediction") for c in t.columns]
    if t.variance:
        conv.raw[t.columns[1]] = cols[1]
        with np.errstate(invalid="ignore"):
            cols[1] = np.sqrt(np.where(cols[1] > 0, cols[1], np.nan))
    conv.probs = np.column_stack(cols) if cols else np.empty((table.num_rows, 0))
    conv.labels = _numbers(table.column(t.target), t.target, where, conv, "target")
    if t.weight:
        conv.weights = _numbers(table.column(t.weight), t.weight, where, conv, "weight")
    if plan.group_by:
        n = table.num_rows
        groups = []
        for g, kind in zip(plan.group_by, plan.group_kinds, strict=True):
            if g in plan.partition_keys:
                values = np.empty(n, dtype={"int": np.int64, "float": np.float64, "bool": bool, "str": object}[kind])
                values[:] = (partition or {})[g]
            else:
                values = group_values(table.column(g), kind, g, where, first_row)
            groups.append(values)
        conv.groups = tuple(groups)
    return conv


def _fmt(value) -> str:
    return f"{float(value):.6g}"


def _cell_message(column: str, text: np.ndarray, values: np.ndarray, text_of) -> Callable[[int], str]:
    def message(r: int) -> str:
        if text[r]:
            return f"the cell holds {shown(text_of(column, r))}, not a number"
        return f"the cell holds {_fmt(values[r])}, not a finite number"

    return message


def _crossed_message(lows: np.ndarray, highs: np.ndarray, upper: str) -> Callable[[int], str]:
    def message(r: int) -> str:
        return (
            f"the lower end {_fmt(lows[r])} is above the upper end {_fmt(highs[r])} (column {shown(upper)}): "
            "expected lower <= upper"
        )

    return message


def _row_checks(conv: Converted, t: Target, text_of) -> list[tuple[str, np.ndarray, str, Callable[[int], str]]]:
    """Masks of invalid rows in report order: (reason, mask, column, message maker)."""
    y = conv.labels
    n = len(y)
    checks: list[tuple[str, np.ndarray, str, Callable[[int], str]]] = []
    none = np.zeros(n, dtype=bool)
    empty_y = conv.empty.get(t.target, none)
    checks.append(("empty target", empty_y, t.target, lambda r: "the target is empty"))
    text_y = conv.not_numbers.get(t.target, none)
    checks.append(
        (
            "target not a finite number",
            text_y | (~np.isfinite(y) & ~empty_y),
            t.target,
            lambda r: (
                f"the target is {shown(text_of(t.target, r))}, not a number"
                if text_y[r]
                else f"the target is {_fmt(y[r])}, not a finite number"
            ),
        )
    )
    for j, c in enumerate(t.columns):
        empty = conv.empty.get(c, none)
        text = conv.not_numbers.get(c, none)
        values = conv.raw.get(c, conv.probs[:, j])
        checks.append(("empty prediction cell", empty, c, lambda r: "the cell is empty"))
        checks.append(
            (
                "prediction not a finite number",
                text | (~np.isfinite(values) & ~empty & ~text),
                c,
                _cell_message(c, text, values, text_of),
            )
        )
    if t.kind == "gaussian":
        spread = conv.raw.get(t.columns[1], conv.probs[:, 1])
        word = "variance" if t.variance else "std"
        with np.errstate(invalid="ignore"):
            bad = np.isfinite(spread) & (spread <= 0)
        checks.append(
            (
                "std not positive",
                bad,
                t.columns[1],
                lambda r: f"the {word} is {_fmt(spread[r])}: expected a positive number",
            )
        )
    if t.kind == "intervals":
        lows, highs = conv.probs[:, 0::2], conv.probs[:, 1::2]
        with np.errstate(invalid="ignore"):
            above = lows > highs
        for k in range(lows.shape[1]):
            lo_name, hi_name = t.columns[2 * k], t.columns[2 * k + 1]
            checks.append(
                (
                    "lower above upper",
                    above[:, k],
                    lo_name,
                    _crossed_message(lows[:, k], highs[:, k], hi_name),
                )
            )
    if conv.weights is not None and t.weight is not None:
        w = conv.weights
        with np.errstate(invalid="ignore"):
            bad_w = ~np.isfinite(w) | (w < 0)
        checks.append(
            (
                "invalid sample weight",
                bad_w,
                t.weight,
                lambda r: f"the weight is {_fmt(w[r])}, expected a finite number >= 0",
            )
        )
    return checks


def check_regression_rows(
    conv: Converted, plan: RegressionPlan, where: str, first_row: int, *, whole_file: bool, text_of
) -> tuple[np.ndarray, dict[str, int]]:
    """The rows of one converted batch that pass every check, and how many were dropped per reason.

    Without ``plan.drop_invalid`` the first bad row in file order raises, under the first check it fails."""
    n = len(conv.labels)
    keep = np.ones(n, dtype=bool)
    if _all_valid(conv, plan.target):
        return keep, {}
    checks = _row_checks(conv, plan.target, text_of)
    dropped: dict[str, int] = {}
    if not plan.drop_invalid:
        failing = [(int(np.flatnonzero(mask)[0]), k) for k, (_, mask, _, _) in enumerate(checks) if mask.any()]
        if failing:
            row, k = min(failing)
            reason, mask, column, describe = checks[k]
            count = int(np.logical_or.reduce([m for r, m, _, _ in checks if r == reason]).sum())
            scope = "" if whole_file else f" in rows {first_row + 1}-{first_row + n}"
            raise CalibcliError(
                f"{where}: row {first_row + row + 1}, column {shown(column, quote=False)}: {describe(row)}; "
                f"{count} such row(s){scope} ({reason}): fix the file or pass {{opt:drop_invalid}} to drop them"
            )
    for reason, mask, _, _ in checks:
        mask = mask & keep
        if mask.any():
            dropped[reason] = dropped.get(reason, 0) + int(mask.sum())
            keep &= ~mask
    return keep, dropped


def _all_valid(conv: Converted, t: Target) -> bool:
    if conv.empty or conv.not_numbers:
        return False
    if not (np.isfinite(conv.labels).all() and np.isfinite(conv.probs).all()):
        return False
    if t.kind == "gaussian" and not np.all(conv.probs[:, 1] > 0):
        return False
    if t.kind == "intervals" and np.any(conv.probs[:, 0::2] > conv.probs[:, 1::2]):
        return False
    w = conv.weights
    return w is None or bool(np.all(np.isfinite(w)) and np.all(w >= 0))


def _ordered(dropped: dict[str, int]) -> dict[str, int]:
    return {reason: dropped[reason] for reason in REASONS if reason in dropped}


class RegressionStream(Stream):
    """A regression dataset opened: its columns fixed from the first file, its rows read on demand."""

    plan: RegressionPlan  # type: ignore[assignment]

    def batches(self):
        long = self.plan.target.long
        if long is None:
            return super().batches()
        return long_batches(self, long, self.plan.target.levels)

    def readable_fragments(self, *, split_row_groups: bool = True, map_files=None):
        if self.plan.target.long is not None:
            raise CalibcliError(
                f"{self.name}: quantiles in long form are pivoted by id in one process: use {{opt:engine}} local, "
                "or pivot the file to wide columns (q0.05 ...)"
            )
        return super().readable_fragments(split_row_groups=split_row_groups, map_files=map_files)

    def check_counts(self, counts) -> None:
        if counts.rows_read and counts.rows_used == 0:
            raise CalibcliError(
                f"{self.name}: every row was invalid and dropped ({_ordered(counts.dropped)}): nothing left to evaluate"
            )
        super().check_counts(counts)

    def describe(self, counts=None) -> dict:
        out = super().describe(counts)
        counts = counts if counts is not None else self._counts
        out["dropped_reasons"] = _ordered(counts.dropped)
        out["rows_dropped"] = counts.rows_dropped
        out["columns"] = self.plan.target.names
        del out["n_classes"], out["class_names"]
        return out


def open_regression(
    dataset: Dataset,
    spec: RegressionSpec,
    *,
    input_format: str | None = None,
    drop_invalid: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    group_by: tuple[str, ...] = (),
) -> RegressionStream:
    """Fix the target's kind and columns from the dataset's first file and return its stream."""
    check_options(batch_rows=batch_rows)
    first, names, types, located, fmts = dataset.first_schema(input_format)
    target = resolve_target(names, types, spec, first.path)
    if len(set(group_by)) < len(group_by):
        twice = next(g for g in group_by if group_by.count(g) > 1)
        raise CalibcliError(f"the group-by columns name {shown(twice)} twice: name each column once")
    kinds = tuple(
        dataset.partition_kinds[g]
        if g in dataset.partition_kinds
        else _group_kind(g, names, types, first.path, dataset)
        for g in group_by
    )
    partition_keys = tuple(g for g in group_by if g in dataset.partition_kinds)
    partitions = [dataset._group_partition(s, partition_keys, kinds, group_by) for s in dataset._sources]
    if target.long is not None:
        target = _long_target(target, group_by, drop_invalid, located[0], fmts[0], first.path, batch_rows)
    plan = RegressionPlan(
        target=target,
        weight_scale=dataset._weight_scale(located, fmts, target.weight) if target.weight else 0,
        first_file=first.path,
        batch_rows=batch_rows,
        drop_invalid=drop_invalid,
        group_by=tuple(group_by),
        group_kinds=kinds,
        partition_keys=partition_keys,
    )
    return RegressionStream(dataset, plan, list(zip(dataset._sources, located, fmts, partitions, strict=True)))  # type: ignore[arg-type]


def _long_target(target: Target, group_by, drop_invalid: bool, location, fmt, path, batch_rows) -> Target:
    """A long-form target with its levels, those of the first batch (:mod:`calibcli.io.long_quantiles`)."""
    assert target.long is not None
    if group_by or drop_invalid:
        flag = "{opt:group_by}" if group_by else "{opt:drop_invalid}"
        raise CalibcliError(
            f"{path}: quantiles in long form are read without {flag}: pivot the file to wide columns "
            "(q0.05 ...) to use it"
        )
    levels = first_levels(location, fmt, path, target.long, batch_rows)
    return replace(target, levels=levels)


def _group_kind(column: str, names: list[str], types: dict, first: str, dataset: Dataset) -> str:
    if column not in names:
        keys = f" and the partition keys {list(dataset.partition_kinds)}" if dataset.partition_kinds else ""
        raise CalibcliError(
            f"{first}: no column {shown(column)} (given by {{opt:group_by}}); the file has columns "
            f"{shown_names(names)}{keys}"
        )
    return group_kind(types[column])


@dataclass(frozen=True)
class RegressionSources(Sources):
    """The sources of a regression run: the datasets of ``files``, read as regression dumps (``spec``)."""

    spec: RegressionSpec  # type: ignore[assignment]

    def open(self) -> Iterator[RegressionStream]:
        for dataset in resolve_datasets(list(self.files), pool=self.pool):
            yield open_regression(
                dataset,
                self.spec,
                input_format=self.input_format,
                drop_invalid=self.drop_invalid,
                batch_rows=self.batch_rows,
                group_by=tuple(self.group_by),
            )
