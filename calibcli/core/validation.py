"""Validation where data enters (SPEC section 7).

Every check raises :class:`calibcli.core.errors.CalibcliError` with a message that says what was
found, what was expected and how to fix it. The library functions call
:func:`check_binary` / :func:`check_multiclass` on their inputs; the file readers call the same
checks with ``where=`` naming the file, so messages point at a row or a column.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibcli.core.errors import CalibcliError, OptionError, OptionTypeError, shown

#: Rows of class probabilities must sum to 1 within this absolute tolerance.
ROW_SUM_TOLERANCE = 1e-4


def _prefix(where: str | None) -> str:
    return f"{where}: " if where else ""


def _first_bad(mask: np.ndarray | np.bool_) -> int:
    return int(np.flatnonzero(mask)[0])


def check_finite(values: np.ndarray, *, name: str, where: str | None = None) -> None:
    """Reject NaN and +-inf, naming the first offending row (0-based data row)."""
    bad = ~np.isfinite(values)
    if bad.any():
        row = _first_bad(bad.reshape(len(values), -1).any(axis=1)) if values.ndim > 1 else _first_bad(bad)
        found = values.reshape(len(values), -1)[row] if values.ndim > 1 else values[row]
        raise CalibcliError(
            f"{_prefix(where)}{name} has a non-finite value ({_fmt(found)}) at row {row}: "
            f"expected finite numbers; remove the row or pass {{opt:drop_invalid}}"
        )


def check_consistent_length(*arrays: np.ndarray | None, names: tuple[str, ...], where: str | None = None) -> int:
    """All given arrays have the same first dimension; return it."""
    lengths = {name: len(a) for a, name in zip(arrays, names, strict=True) if a is not None}
    if len(set(lengths.values())) > 1:
        found = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise CalibcliError(f"{_prefix(where)}inputs have different lengths ({found}): expected one value per row")
    n = next(iter(lengths.values()))
    if n == 0:
        raise CalibcliError(f"{_prefix(where)}no rows to evaluate: expected at least one prediction")
    return n


def check_probabilities(y_prob: np.ndarray, *, name: str = "probabilities", where: str | None = None) -> np.ndarray:
    """Probabilities are finite and within [0, 1]; for a 2-D array, rows sum to 1."""
    y_prob = np.asarray(y_prob, dtype=np.float64)
    check_finite(y_prob, name=name, where=where)
    outside = (y_prob < 0.0) | (y_prob > 1.0)
    if outside.any():
        rows = outside if y_prob.ndim == 1 else outside.any(axis=1)
        row = _first_bad(rows)
        raise CalibcliError(
            f"{_prefix(where)}{name} at row {row} is {_fmt(y_prob[row])}, outside [0, 1]: "
            f"if the columns hold logits pass {{opt:logits}}, otherwise pass {{opt:drop_invalid}} to drop such rows"
        )
    if y_prob.ndim == 2:
        sums = y_prob.sum(axis=1)
        off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
        if off.any():
            row = _first_bad(off)
            raise CalibcliError(
                f"{_prefix(where)}{name} at row {row} sum to {sums[row]:.6g}, expected 1 "
                f"(tolerance {ROW_SUM_TOLERANCE:g}): pass every class's column to {{opt:prob_cols}}, "
                f"{{opt:logits}} if they are logits, or {{opt:drop_invalid}}"
            )
    return y_prob


def check_labels(y_true: np.ndarray, *, n_classes: int, where: str | None = None) -> np.ndarray:
    """Labels are integers in ``0..n_classes-1``; returns them as int64."""
    y = np.asarray(y_true)
    if y.dtype == bool:
        y = y.astype(np.int64)
    if y.dtype.kind == "f":
        check_finite(y, name="labels", where=where)
        if np.any(y != np.round(y)):
            row = _first_bad(y != np.round(y))
            raise CalibcliError(
                f"{_prefix(where)}label at row {row} is {shown(y[row])}: expected an integer class index "
                f"in 0..{n_classes - 1}"
            )
        y = y.astype(np.int64)
    if y.dtype.kind not in "iu":
        raise CalibcliError(
            f"{_prefix(where)}labels have type {y.dtype}: expected integers 0..{n_classes - 1}, booleans, "
            f"or class names matching the probability columns"
        )
    bad = (y < 0) | (y >= n_classes)
    if bad.any():
        row = _first_bad(bad)
        found = sorted(set(np.unique(y).tolist()))[:10]
        raise CalibcliError(
            f"{_prefix(where)}label at row {row} is {int(y[row])} but there are {n_classes} classes "
            f"(labels found: {found}): expected labels in 0..{n_classes - 1}; pass {{opt:prob_cols}} for every class"
        )
    return y.astype(np.int64, copy=False)


#: Weights beyond 2^500 (their squares overflow past 1e154) or below 2^-500 (their products with a probability
#: and their squares underflow to subnormals and zero) are rescaled by an exact power of two first.
EXTREME_WEIGHT_EXPONENT = 500


def weight_scale(w: np.ndarray) -> int:
    """The exponent of the exact power of two that brings the largest of weights ``w`` into [1, 2) when they are
    extreme (beyond 2^500, or a positive one below 2^-500: 1e200 squared overflows, 5e-324 times 0.3 underflows); 0
    otherwise, so
    that ordinary weights and the totals reports show stay as given. Every calibration number is scale-free in the
    weights, and a power of two scales every weight exactly, so the scaled weights give the unit-scale numbers."""
    positive = w[w > 0] if len(w) else w
    if not len(positive):
        return 0
    top, low = float(positive.max()), float(positive.min())
    if not np.isfinite(top):
        return 0
    if math.frexp(top)[1] <= EXTREME_WEIGHT_EXPONENT and math.frexp(low)[1] >= -EXTREME_WEIGHT_EXPONENT:
        return 0
    return 1 - math.frexp(top)[1]


def scaled_weights(w: np.ndarray, exponent: int, *, where: str | None = None) -> np.ndarray:
    """``w`` times ``2**exponent`` (:func:`weight_scale`; ``np.ldexp``, exact even from subnormals, whose scale
    2^1074 is itself beyond the float range), refused when a weight or their total leaves the float range (a
    dynamic range beyond 1e308 cannot be represented whatever the scale)."""
    if exponent == 0:
        out = w
    else:
        with np.errstate(over="ignore", under="ignore"):
            out = np.ldexp(w, exponent)
    with np.errstate(over="ignore"):
        total = float(out.sum())
    if not (np.isfinite(out).all() and np.isfinite(total)):
        raise CalibcliError(
            f"{_prefix(where)}sample weights up to {float(w.max()):.3g} leave the float range (about 1.8e308) once "
            f"rescaled with the others: their range is wider than a float holds, so give the negligible ones a weight "
            f"of 0"
        )
    return out


def check_sample_weight(sample_weight: np.ndarray | None, n: int, *, where: str | None = None) -> np.ndarray:
    """Weights are finite, non-negative and not all zero; ``None`` means unit weights. Extreme weights come back
    rescaled by an exact power of two (:func:`weight_scale`), so that none of their sums over- or underflows."""
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise CalibcliError(f"{_prefix(where)}sample weights have shape {w.shape}: expected ({n},)")
    check_finite(w, name="sample weight", where=where)
    if (w < 0).any():
        row = _first_bad(w < 0)
        raise CalibcliError(f"{_prefix(where)}sample weight at row {row} is {w[row]:g}: expected weights >= 0")
    w = scaled_weights(w, weight_scale(w), where=where)
    if w.sum() <= 0:
        raise CalibcliError(f"{_prefix(where)}sample weights sum to 0: expected a positive total weight")
    return w


def check_binary(y_true, y_prob, sample_weight=None, *, where: str | None = None):
    """Validate a binary problem; return ``(y int64 in {0,1}, z float64 in [0,1], w float64)``."""
    z = np.asarray(y_prob, dtype=np.float64)
    if z.ndim != 1:
        raise CalibcliError(f"{_prefix(where)}binary predictions must be 1-D, got shape {z.shape}")
    y = np.asarray(y_true)
    n = check_consistent_length(y, z, sample_weight, names=("labels", "predictions", "sample_weight"), where=where)
    z = check_probabilities(z, name="prediction", where=where)
    y = check_labels(y, n_classes=2, where=where)
    w = check_sample_weight(sample_weight, n, where=where)
    return y, z, w


def check_multiclass(y_true, y_prob, sample_weight=None, *, where: str | None = None):
    """Validate a K-class problem; return ``(c int64 in 0..K-1, P float64 (n, K), w float64)``."""
    P = np.asarray(y_prob, dtype=np.float64)
    if P.ndim != 2 or P.shape[1] < 2:
        raise CalibcliError(
            f"{_prefix(where)}class probabilities must be an (n, K) array with K >= 2, got shape {P.shape}"
        )
    c = np.asarray(y_true)
    n = check_consistent_length(c, P, sample_weight, names=("labels", "probabilities", "sample_weight"), where=where)
    P = check_probabilities(P, name="class probabilities", where=where)
    c = check_labels(c, n_classes=P.shape[1], where=where)
    w = check_sample_weight(sample_weight, n, where=where)
    return c, P, w


#: Integers the options may hold: what NumPy's int64 indices and counts can represent.
INT64_MAX = 2**63 - 1

#: Option rules by parameter name: (test, what is expected). One place for every range check: the CLI runs
#: every numeric option of every command through it (:func:`check_command_options`), and a test checks that
#: each int and float option of each command has a rule here or is a size option (:data:`_SIZES`).
_RULES = {
    "n_bins": (lambda v: v >= 1, "expected a positive number of bins"),
    "ece_n_bins": (lambda v: v >= 1, "expected a positive number of bins"),
    "n_boot": (lambda v: v >= 0, "expected 0 (no intervals) or a positive count"),
    "alpha": (lambda v: 0.0 < v < 1.0, "expected a number strictly between 0 and 1"),
    "batch_rows": (lambda v: v >= 1, "expected a positive number of rows per batch"),
    "max_groups": (lambda v: v >= 1, "expected a positive number of groups"),
    "max_overlays": (lambda v: v >= 1, "expected a positive number of groups to draw"),
    "max_classes": (lambda v: v >= 1, "expected at least 1"),
    "workers": (lambda v: v >= 1, "expected at least 1 worker process"),
    "degree": (lambda v: 0 <= v <= 20, "expected an integer in 0..20"),
    "seed": (lambda v: 0 <= v < 2**64, "expected a non-negative integer below 2^64"),
    "sigma": (lambda v: v > 0, "expected a positive bandwidth, or no {name} for the fixed point"),
    "smoothness": (lambda v: v > 0, "expected a positive Holder exponent"),
    "holdout": (lambda v: 0.0 < v < 1.0, "expected the fraction of rows to fit on, in (0, 1)"),
    "clip": (lambda v: 0.0 < v < 0.5, "expected a number in (0, 0.5), e.g. 1e-12"),
    "eps": (lambda v: 0.0 < v < 0.5, "expected a number in (0, 0.5), e.g. 1e-12"),
    "dpi": (lambda v: 10.0 <= v <= 1200.0, "expected a resolution between 10 and 1200"),
    "font_size": (lambda v: 1.0 <= v <= 100.0, "expected a text size between 1 and 100 points"),
    "min_count": (lambda v: v >= 0, "expected 0 (every bin joined) or a positive number of rows"),
    "fail_above": (lambda v: True, ""),
    "fail_above_upper": (lambda v: True, ""),
    "fail_below": (lambda v: True, ""),
    "depth": (lambda v: 1 <= v <= 8, "expected 1 (each column alone) to 8 (intersections of that many columns)"),
    "max_values": (lambda v: 1 <= v <= 10_000, "expected 1 to 10000 values kept per segment column"),
    "segment_bins": (lambda v: 2 <= v <= 1_000, "expected 2 to 1000 quantile bins per numeric segment column"),
    "min_segment": (lambda v: v >= 1, "expected a positive number of rows"),
    "max_segments": (lambda v: v >= 1, "expected a positive number of segments"),
    "power": (lambda v: 0.0 < v < 1.0, "expected a number strictly between 0 and 1"),
    "top": (lambda v: v >= 1, "expected a positive number of segments to show"),
    "fail_above_sigma": (lambda v: v > 0, "expected a positive multiple of sigma, e.g. 4"),
    "delta": (lambda v: 0.0 < v < 1.0, "expected a number in (0, 1)"),
    "n_points": (lambda v: v >= 2, "expected an integer >= 2"),
    "curve_points": (lambda v: v >= 2, "expected an integer >= 2"),
    "n_levels": (lambda v: v >= 2, "expected at least 2"),
    "pit_bins": (lambda v: v >= 1, "expected at least 1"),
    "chunk_rows": (lambda v: v >= 1, "expected a positive number of rows per window"),
    "reference_windows": (lambda v: v >= 1, "expected at least 1 window"),
    "n_null": (lambda v: v >= 20, "expected at least 20 resamples"),
    "reference_rows": (lambda v: v >= 100, "expected at least 100 rows"),
    "min_rows": (lambda v: v >= 1, "expected a positive number of rows"),
}


# ---------------------------------------------------------------------------------------------
# Limits: a size option is checked against the memory it will allocate, before anything is allocated

#: Fraction of the machine's memory (physical RAM, or the cgroup's limit when lower) one run may plan to use.
MEMORY_FRACTION = 0.5

#: Bytes per bin of one binary problem: two grids (the bins, and the equal-width bins of the dCE) of
#: 2 labels x 15 sums (480 B), the per-bin statistics the estimators build, and the temporaries of a
#: per-row bootstrap resample (measured: about 160 B per bin without a bootstrap and 820 B with one, at
#: 10^6 bins on 569 rows).
BYTES_PER_BIN = 1024
#: Bytes per bootstrap resample of one problem: about 20 metric values kept as Python floats for the
#: percentile intervals (list, float objects and the final array).
BYTES_PER_RESAMPLE = 1024
#: Bytes per (resample, bin cell) of the bootstrap from per-bin statistics (SPEC 8): the Poisson counts,
#: three normal draws and sums per cell, their clipped copies, the log-loss draw, and the per-bin
#: statistics of every replicate.
BYTES_PER_RESAMPLE_CELL = 192
#: Bytes per sampled row (bottom-k samples of tcal and recalibrate): global index, hash, probability,
#: label, weight, and the copy a merge makes (a K-class row holds K probabilities: more).
BYTES_PER_SAMPLED_ROW = 128
#: Bytes per row of a batch: the Arrow columns as read, the float64 arrays made from them, and the batch
#: read ahead in the background (two in memory).
BYTES_PER_BATCH_ROW = 256
#: Bytes per Dask worker process started for a local cluster (the interpreter, NumPy, pandas, pyarrow).
BYTES_PER_WORKER = 256 * 2**20
#: Bytes per panel (class drawn) of a diagram at the largest resolution: the figure's RGBA buffer.
BYTES_PER_PANEL = 4 * 2000 * 1600

#: Size options: parameter name -> (bytes per unit, what they are for). ``batch_rows`` is one only on the
#: command line (:data:`COMMAND_SIZES`): for the library it is a cap on the rows of a batch (``1 << 62`` reads
#: a file as one batch), while ``--batch-rows`` is what the user plans to hold in memory.
_SIZES = {
    "n_bins": (BYTES_PER_BIN, "the bin arrays"),
    "ece_n_bins": (BYTES_PER_BIN, "the bin arrays"),
    "n_boot": (BYTES_PER_RESAMPLE, "the bootstrap replicates"),
    "max_rows": (BYTES_PER_SAMPLED_ROW, "the sampled rows"),
    "workers": (BYTES_PER_WORKER, "the worker processes"),
    "max_classes": (BYTES_PER_PANEL, "the figure's panels"),
    "max_overlays": (BYTES_PER_PANEL // 8, "the curves drawn"),
    "max_groups": (BYTES_PER_BIN * 15 + BYTES_PER_RESAMPLE * 1000, "the groups' accumulators"),
}


COMMAND_SIZES = {"batch_rows": (BYTES_PER_BATCH_ROW, "the batches of rows")}


def _memory_of_machine() -> int | None:
    """Physical RAM (``os.sysconf``), or the cgroup's memory limit when that is lower; None if unknown."""
    import os

    sizes = []
    try:
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < 2**60:
            sizes.append(int(text))
    sizes = [v for v in sizes if v > 0]
    return min(sizes) if sizes else None


def memory_budget() -> int:
    """Bytes one run may plan to allocate: ``CALIBCLI_MEMORY_BUDGET`` (bytes; a K, M, G or T suffix is
    allowed), else :data:`MEMORY_FRACTION` of the machine's memory (8 GiB when that is unknown)."""
    import os

    text = os.environ.get("CALIBCLI_MEMORY_BUDGET", "").strip()
    if text:
        units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
        scale = units.get(text[-1:].upper(), 1)
        digits = text[:-1] if scale != 1 else text
        try:
            value = float(digits) * scale
        except ValueError:
            value = float("nan")
        if not (np.isfinite(value) and value > 0):
            raise CalibcliError(
                f"CALIBCLI_MEMORY_BUDGET is {text[:40]!r}: expected a positive number of bytes "
                f"(a K, M, G or T suffix is allowed), e.g. 4G"
            )
        return int(value)
    machine = _memory_of_machine()
    return int(MEMORY_FRACTION * machine) if machine else 8 * 2**30


def format_bytes(n: float) -> str:
    """``8.0 GB``: bytes in the largest unit (powers of 1024) that keeps the number at least 1."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} PB" if n < 1e4 else f"{n:.2g} PB"


def budget_text() -> str:
    """Where the memory budget comes from, as a message names it."""
    import os

    if os.environ.get("CALIBCLI_MEMORY_BUDGET", "").strip():
        return "CALIBCLI_MEMORY_BUDGET"
    return f"{MEMORY_FRACTION:g} of this machine's memory"


def check_allocation(name: str, value, nbytes: float, what: str, *, most: int | None = None, hint: str = "") -> None:
    """Refuse ``value`` of option ``name`` when it would need ``nbytes`` for ``what`` beyond the budget.

    ``most`` is the largest value that fits (default: by proportion). The message names the parameter
    (the CLI shows the flag) and the limit it was held to.
    """
    budget = memory_budget()
    if nbytes <= budget:
        return
    if most is None:
        most = int(value * (budget / nbytes)) if nbytes > 0 else 0
    if most < 1:  # even the smallest value would not fit: advising "use at most 0" (or 1) would fail again
        _too_small_budget(f"{{opt:{name}}} 1", nbytes / value if value else nbytes, hint)
    raise OptionError(
        name,
        f"{{name}} {value} would need {format_bytes(nbytes)} for {what}; use at most {most} "
        f"(the memory budget is {format_bytes(budget)}, {budget_text()}){hint}",
    )


def planned_bytes(name: str, value, sizes: dict | None = None) -> tuple[float, str] | None:
    """What size option ``name`` at ``value`` will allocate, at least: ``(bytes, what for)``; None if it
    is not a size option (of ``sizes``, default :data:`_SIZES` and :data:`COMMAND_SIZES`)."""
    sizes = {**_SIZES, **COMMAND_SIZES} if sizes is None else sizes
    if name not in sizes or isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    per_unit, what = sizes[name]
    return float(value) * per_unit, what


def check_size(name: str, value, sizes: dict = _SIZES) -> None:
    planned = planned_bytes(name, value, sizes)
    if planned is None:
        return
    nbytes, what = planned
    check_allocation(name, value, nbytes, what, most=memory_budget() // sizes[name][0])


def memory_culprit(values: dict) -> str:
    """For an out-of-memory failure: the option whose value plans the largest allocation, as
    ``{opt:name} value (about X for what)``; empty when none plans at least 10% of the memory budget (an
    option at 0, unset or small is never blamed)."""
    best = None
    least = memory_budget() / 10
    for name, value in values.items():
        planned = planned_bytes(name, value)
        if planned is None or not value or planned[0] < least:
            continue
        if best is None or planned[0] > best[0]:
            best = (planned[0], name, value, planned[1])
    if best is None:
        return ""
    nbytes, name, value, what = best
    return f"{{opt:{name}}} {value} (about {format_bytes(nbytes)} for {what})"


def check_options(choices: dict[str, tuple[str, ...]] | None = None, **values) -> None:
    """Check option values by parameter name: finite numbers within range and within the memory budget,
    choices among the allowed.

    Every float must be finite; every int must fit an int64 (64-bit counts and indices); a name in
    :data:`_RULES` must pass its rule, and a size option (:data:`_SIZES`) must not plan an allocation
    beyond :func:`memory_budget`. Raises :class:`calibcli.core.errors.OptionError`, whose message names the
    parameter (the CLI shows the flag instead). ``None`` means "not given" and is always accepted.
    """
    for name, value in values.items():
        if value is None:
            continue
        if choices and name in choices:
            if value not in choices[name]:
                raise (OptionError if isinstance(value, str) else OptionTypeError)(
                    name, f"{{name}} is {short_value(value)}: expected one of {', '.join(choices[name])}"
                )
            continue
        if name in INTEGER_OPTIONS:
            _check_integer(name, value)
        elif name in _RULES and (
            isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating))
        ):
            raise OptionTypeError(
                name,
                f"{{name}} is {short_value(value)}: {_expected(name, 'expected a number')} (a number, "
                f"not {_type_name(value)})",
            )
        if isinstance(value, bool):
            continue
        if isinstance(value, (float, np.floating)) and not np.isfinite(value):
            raise OptionError(name, f"{{name}} is {value}: expected a finite number")
        if isinstance(value, (int, np.integer)) and name != "seed" and not -INT64_MAX - 1 <= value <= INT64_MAX:
            if name in _SIZES:  # say what it would need, and the largest that fits
                check_size(name, value)
            raise OptionError(name, f"{{name}} is {short_value(value)}: expected an integer of at most {INT64_MAX}")
        if name in _RULES:
            test, expected = _RULES[name]
            if not test(value):
                raise OptionError(name, f"{{name}} is {short_value(value)}: {expected}")
        elif not isinstance(value, (int, float, np.integer, np.floating)):
            raise KeyError(name)
        check_size(name, value)
    _check_replicate_bins(values.get("n_boot"), values.get("n_bins", values.get("ece_n_bins")))


#: Bytes per (replicate, bin) of the per-row bootstrap of the binned estimators: the statistics of every resample
#: of a group (9 arrays) and the estimators' temporaries over them. One group's ``(R, bins)`` is the least any
#: bootstrap of the binned family holds at once (more groups are taken in chunks of groups), so it is checked up
#: front, against half the budget (the rows and the groups' other arrays take the rest).
BYTES_PER_REPLICATE_BIN = 512


def _check_replicate_bins(n_boot, n_bins) -> None:
    """``n_boot`` resamples of ``n_bins`` bins (one group's bootstrap statistics) within half the memory budget,
    refused before any work naming both options and a value of each that fits (issue 33: ``--n-boot 100000
    --n-bins 100`` was an out-of-memory failure that blamed the input)."""
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (n_boot, n_bins)):
        return
    if n_boot <= 0 or n_bins <= 0:
        return
    room = memory_budget() // 2
    nbytes = float(n_boot) * float(n_bins) * BYTES_PER_REPLICATE_BIN
    if nbytes <= room:
        return
    most_boot = room // (int(n_bins) * BYTES_PER_REPLICATE_BIN)
    most_bins = room // (int(n_boot) * BYTES_PER_REPLICATE_BIN)
    advice = [f"{{opt:n_boot}} {most_boot} or less at {{opt:n_bins}} {n_bins}"] if most_boot >= 1 else []
    advice += [f"{{opt:n_bins}} {most_bins} or less at {{opt:n_boot}} {n_boot}"] if most_bins >= 1 else []
    if not advice:
        _too_small_budget("{opt:n_boot} 1", BYTES_PER_REPLICATE_BIN * int(n_bins) * 2)
    raise OptionError(
        "n_boot",
        f"{{name}} {n_boot} with {{opt:n_bins}} {n_bins} would need {format_bytes(nbytes)} for one group's bootstrap "
        f"statistics (every resample of every bin at once), beyond half the memory budget ({format_bytes(2 * room)}, "
        f"{budget_text()}): use " + ", or ".join(advice),
    )


#: The least budget an error advises: what a run with the default options plans (batches of rows, resamples).
MIN_ADVISED_BUDGET = 64 * 2**20


def _too_small_budget(what: str, needs: float, hint: str = "") -> None:
    """Refuse a memory budget too small for even the smallest value of an option (no advice that fails again)."""
    raise CalibcliError(
        f"the memory budget ({format_bytes(memory_budget())}, {budget_text()}) is too small for even {what} "
        f"(about {format_bytes(needs)}): set CALIBCLI_MEMORY_BUDGET to at least "
        f"{_rounded_up_bytes(max(needs, MIN_ADVISED_BUDGET))}{hint}"
    )


def _rounded_up_bytes(n: float) -> str:
    """A byte count rounded up to a whole K, M, G or T, as ``CALIBCLI_MEMORY_BUDGET`` takes it (``64M``)."""
    for unit, scale in (("K", 2**10), ("M", 2**20), ("G", 2**30), ("T", 2**40)):
        if n <= 1024 * scale or unit == "T":
            return f"{max(math.ceil(n / scale), 1)}{unit}"
    return f"{math.ceil(n / 2**40)}T"


def check_alpha(alpha) -> float:
    """The one check of a level ``alpha`` (an interval's ``1 - confidence``, a test's level), with the one
    wording of :data:`_RULES`, for every family and library function; returns it as a float."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise OptionTypeError("alpha", f"{{name}} is {short_value(alpha)}: {_RULES['alpha'][1]}")
    check_options(alpha=alpha)
    return float(alpha)


#: Options that count something (bins, resamples, rows, groups, workers...): an integer, never a bool or a
#: float (the library's ``ece(y, p, n_bins=True)`` ran with one bin; ``n_bins=15.0`` was numpy's UFuncTypeError).
INTEGER_OPTIONS = frozenset(
    (
        "n_bins ece_n_bins n_boot batch_rows max_groups max_overlays max_classes workers degree seed depth max_values "
        "segment_bins min_segment max_segments top max_rows n_points curve_points n_levels pit_bins"
    ).split()
)


def _expected(name: str, otherwise: str) -> str:
    """What option ``name`` expects, as its rule words it (:data:`_RULES`), else ``otherwise``."""
    return _RULES[name][1] if name in _RULES and _RULES[name][1] else otherwise


def _check_integer(name: str, value) -> None:
    """``value`` of a counting option is an int (Python's or NumPy's): a bool, a float or text is refused
    (:class:`~calibcli.core.errors.OptionTypeError`) with the option's own rule, as the command line words it; a
    whole float too large for the memory budget gets the budget's message first (``n_bins=1e20``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return
    expected = _expected(name, "expected an integer")
    if isinstance(value, (bool, np.bool_)):
        raise OptionTypeError(name, f"{{name}} is {value}: {expected} (an integer, not {value})")
    if isinstance(value, (float, np.floating)):
        if np.isfinite(value) and float(value).is_integer() and value >= 1 and name in _SIZES:
            per_unit, what = _SIZES[name]
            check_allocation(
                name, float(value), float(value) * per_unit, what, most=max(memory_budget() // per_unit, 1)
            )
        raise OptionTypeError(
            name,
            f"{{name}} is {short_value(float(value))}: {expected} (an integer: "
            f"{{name}}={int(value) if np.isfinite(value) and float(value).is_integer() else 'N'})",
        )
    raise OptionTypeError(name, f"{{name}} is {short_value(value)}: {expected} (an integer, not {_type_name(value)})")


def _type_name(value) -> str:
    return "text" if isinstance(value, str) else type(value).__name__


def check_type(name: str, value, annotation) -> None:
    """``value`` of option ``name`` has the type its declaration states (``int``, ``float``, ``str``, ``bool``,
    each ``| None`` where None is allowed): else :class:`~calibcli.core.errors.OptionTypeError`, worded with
    the option's rule (``alpha=None``: "alpha is None: expected a number strictly between 0 and 1"). Other
    annotations (lists, tuples) are not checked here."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else ()
    kinds = set(args) if args else {annotation}
    optional = type(None) in kinds
    kinds.discard(type(None))
    if len(kinds) != 1 or not kinds <= {int, float, str, bool}:
        return
    (kind,) = kinds
    if value is None:
        if optional:
            return
        wanted = {int: "an integer", float: "a number", str: "text", bool: "True or False"}[kind]
        raise OptionTypeError(name, f"{{name}} is None: {_expected(name, 'expected ' + wanted)}")
    if kind is int:
        _check_integer(name, value)
    elif kind is float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise OptionTypeError(
                name,
                f"{{name}} is {short_value(value)}: {_expected(name, 'expected a number')} (a number, "
                f"not {_type_name(value)})",
            )
    elif kind is bool:
        if not isinstance(value, (bool, np.bool_)):
            raise OptionTypeError(name, f"{{name}} is {short_value(value)}: expected True or False")
    elif not isinstance(value, str):
        raise OptionTypeError(name, f"{{name}} is {short_value(value)}: expected text")


FIELD_TYPES: dict[type, dict[str, Any]] = {}


def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields (``from __future__ import annotations`` leaves text)."""
    if cls not in FIELD_TYPES:
        FIELD_TYPES[cls] = typing.get_type_hints(cls)
    return FIELD_TYPES[cls]


def check_types(options) -> None:
    """Every field of the options dataclass ``options`` of the type its annotation states (:func:`check_type`)."""
    hints = field_types(type(options))
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        param = f.metadata.get("param")
        if param is not None and param.choices is not None and value is not None:
            continue  # a declared choice: any other value, of any type, is worded by its choices (check_options)
        if f.name in hints:
            check_type(f.name, value, hints[f.name])


def short_value(value, limit: int = 60) -> str:
    """A value as a message shows it: strings quoted, numbers as Python prints them, at most ``limit`` characters."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_option(condition: bool, message: str) -> None:
    """Raise a usage error (exit 2) when an option value is out of range."""
    if not condition:
        raise CalibcliError(message)


def _fmt(value) -> str:
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    body = ", ".join(f"{v:.6g}" for v in arr[:6])
    return body if arr.size == 1 else f"[{body}{', ...' if arr.size > 6 else ''}]"


# ---------------------------------------------------------------------------------------------
# Options declared once: a family's options are a frozen dataclass whose fields carry their constraints


@dataclass(frozen=True)
class Param:
    """What an option field declares besides its type and default (scikit-learn's ``_parameter_constraints``,
    kept on the field): its command-line flags and help (``calibcli.cli.options`` builds the Typer option from
    them), its choices (a constraint, checked with the rules of :data:`_RULES` by parameter name), whether it
    counts something written as ``1e6`` (``count``), and how the report's ``parameters`` block shows its value
    (``shown``; default: as it is)."""

    flags: tuple[str, ...]
    help: str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    count: bool = False
    show_default: bool = True
    shown: Callable[[Any], Any] | None = None

    def narrowed(self, choices: tuple[str, ...], help: str | None = None) -> Param:
        """The same option taking fewer of its choices (``audit --mode``: binary or top-label), its help
        reworded where given."""
        if self.choices is not None and not set(choices) <= set(self.choices):
            raise ValueError(f"{choices} narrows {self.choices} to choices it does not have")
        return dataclasses.replace(self, choices=tuple(choices), help=self.help if help is None else help)


def option(
    default: Any,
    *flags: str,
    help: str,
    choices: tuple[str, ...] | None = None,
    metavar: str | None = None,
    count: bool = False,
    show_default: bool = True,
    shown: Callable[[Any], Any] | None = None,
    library: Any = dataclasses.MISSING,
) -> Any:
    """A declared option field: ``n_bins: int = option(15, "--n-bins", help="Number of bins.", count=True)``;
    ``library``: the library's default where it differs from the command line's (``n_boot``: 0, no intervals
    unless asked for, as scikit-learn's metrics; the command line's 1000)."""
    declared = Param(
        tuple(flags), help, None if choices is None else tuple(choices), metavar, count, show_default, shown
    )
    return _field(default, declared, library)


def declared(default: Any, param: Param, *, library: Any = dataclasses.MISSING) -> Any:
    """A field with an existing declaration (a shared option, or one :meth:`Param.narrowed`)."""
    return _field(default, param, library)


def _field(default: Any, param: Param, library: Any) -> Any:
    metadata = {"param": param} if library is dataclasses.MISSING else {"param": param, "library": library}
    return dataclasses.field(default=default, metadata=metadata)


def library_defaults(cls) -> dict[str, Any]:
    """The library's default of every declared option of ``cls``: the field's ``library`` default where it has
    one, else the command line's (:func:`option`)."""
    return {f.name: f.metadata.get("library", f.default) for f in dataclasses.fields(cls) if "param" in f.metadata}


def params_of(cls_or_obj: Any) -> dict[str, tuple[Param, Any]]:
    """The declared option fields of an options dataclass, in field order: name -> (declaration, default)."""
    return {f.name: (f.metadata["param"], f.default) for f in dataclasses.fields(cls_or_obj) if "param" in f.metadata}


class Declared:
    """Base of the options dataclasses (``@dataclass(frozen=True)``): checked once, when made, by their
    declarations (:func:`check_declared`); ``shown(*names)`` is their part of the report's ``parameters``."""

    def __post_init__(self) -> None:
        check_declared(self)

    @classmethod
    def library(cls, **given):
        """The options of a library call: ``given`` by keyword, the rest at their library defaults
        (:func:`library_defaults`); checked once, as every options object is, when made."""
        return cls(**{**library_defaults(cls), **given})

    @classmethod
    def of(cls, values: dict):
        """The options from a command's (or a library call's) values: the fields it declares, the rest ignored."""
        return cls(**{name: values[name] for name in params_of(cls) if name in values})

    @classmethod
    def from_checked(cls, checked: Declared, *names: str, **values):
        """Options of this class from ``checked``'s, checked when it was made: its fields ``names``, ``values`` the
        tool derives (a point estimate's 0 resamples), the rest at their defaults; not checked again."""
        given, made = {name: getattr(checked, name) for name in names} | values, object.__new__(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            value = given.pop(f.name, f.default if f.default_factory is dataclasses.MISSING else f.default_factory())
            if value is dataclasses.MISSING:
                raise TypeError(f"{cls.__name__} needs its field {f.name}")
            object.__setattr__(made, f.name, value)  # (frozen: each field set once, on the new object)
        if given:
            raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(given))}")
        return made

    def but(self, **values):
        """A copy with ``values`` the tool chose (two LLM dumps paired by item key); the rest is not checked again."""
        return type(self).from_checked(self, *(f.name for f in dataclasses.fields(self)), **values)  # type: ignore[arg-type]

    def shown(self, *names: str) -> dict:
        """These options as the report's ``parameters`` block shows them (each field's ``shown`` rule)."""
        params = params_of(self)
        out = {}
        for name in names:
            value = getattr(self, name)
            rule = params[name][0].shown if name in params else None
            out[name] = rule(value) if rule is not None else value
        return out


def check_params(declarations: dict[str, Param], **values) -> None:
    """Check values (the library's keywords) by the declarations of the options they are: choices among the
    declared ones (``declarations`` by parameter name), numbers by the rules of :data:`_RULES`
    (:func:`check_options`, the same words as the command line's)."""
    check_options({name: p.choices for name, p in declarations.items() if p.choices is not None}, **values)


def _repeated(annotation) -> bool:
    """Whether an option's annotation is a list (``list[str] | None``): the option is given once per value."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return any(typing.get_origin(kind) is list for kind in (typing.get_args(annotation) if union else (annotation,)))


def check_declared(options) -> None:
    """Check every declared field of ``options`` by its declaration: of its annotated type (:func:`check_types`:
    ``None`` only where the annotation allows it), choices among the declared ones, numbers by the rules of
    :data:`_RULES` (finite, in range, within the memory budget); text without declared choices passes."""
    check_types(options)
    hints = field_types(type(options))
    choices, values = {}, {}
    for name, (param, _) in params_of(options).items():
        value = getattr(options, name)
        if param.choices is not None and isinstance(value, list) and _repeated(hints[name]):
            for item in value:  # an option given once per value (``--method`` repeated): each among the choices
                check_options({name: param.choices}, **{name: item})
            continue
        if param.choices is not None:
            choices[name] = param.choices
        elif isinstance(value, str) or not isinstance(value, (int, float, np.integer, np.floating)):
            continue
        values[name] = value
    check_options(choices, **values)
