"""The JSON shapes every report shares: the document's head, plain JSON values, a metric's entry (SPEC 7).

Pure functions with no output of their own (:mod:`calibcli.report.emit` prints and writes), so that the
accumulators, the library and the writers make their JSON the one way without reaching up to the report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import numpy as np

from calibcli._version import __version__
from calibcli.core.registry import REGISTRY, worse

SCHEMA_VERSION = 1


def new_document(command: str, parameters: dict) -> dict:
    """The common head of every report: tool, version, schema version, command, parameters."""
    return {
        "tool": "calibcli",
        "version": __version__,
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "parameters": parameters,
        "files": [],
    }


def jsonable(value, *, finite: bool = True):
    """Plain JSON types (NumPy scalars and arrays inside ``value`` become Python numbers and lists); with
    ``finite``, non-finite floats become null (JSON has no NaN), else they are kept (a calibrator's ``info``)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, finite=finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, finite=finite) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v, finite=finite) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if not finite or math.isfinite(value) else None
    if isinstance(value, np.generic):
        return value.item()
    return value


def metric_json(m) -> dict:
    """A :class:`calibcli.binned.estimators.Metric` (or any object with its fields) as a report entry."""
    out = {"estimate": m.estimate, "ci_low": m.ci_low, "ci_high": m.ci_high, "ci_method": m.ci_method}
    if getattr(m, "upper_bound", None) is not None:
        out["upper_bound"] = m.upper_bound
        out["upper_bound_method"] = m.upper_bound_method
    if getattr(m, "note", None):
        out["note"] = m.note
    return out


def to_json(doc: dict) -> str:
    """``json.dumps(jsonable(doc), indent=2, allow_nan=False)``, byte for byte, in one pass over the document.

    The standard library's encoder runs in Python whenever ``indent`` is set (its C encoder knows no indent), and
    ``jsonable`` is a second pass before it: together about 1 s for a 1,000-group report (15 MB). Here each
    container is written once, its scalars inline: the same text in about a third of the time (a test compares
    the two on every kind of value, and the README's examples compare whole documents).
    """
    out: list[str] = []
    _write(doc, out.append, "\n")
    return "".join(out)


_escape = json.encoder.encode_basestring_ascii  # (json's own string encoder: C, ensure_ascii)
_float_repr = float.__repr__
_int_repr = int.__repr__


def _scalar(value) -> str | None:
    """The JSON text of a scalar as :func:`jsonable` then ``json.dumps`` write it; None for a container."""
    kind = type(value)
    if kind is float:
        return _float_repr(value) if value - value == 0.0 else "null"  # (inf - inf and nan - nan are nan)
    if kind is str:
        return _escape(value)
    if kind is int:
        return _int_repr(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple, np.ndarray)):
        return None
    if isinstance(value, np.bool_):
        return "true" if value else "false"
    if isinstance(value, np.integer):
        return _int_repr(int(value))
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return _float_repr(number) if math.isfinite(number) else "null"
    if isinstance(value, str):
        return _escape(value)
    if isinstance(value, int):
        return _int_repr(value)
    raise TypeError(f"Object of type {kind.__name__} is not JSON serializable")


def _write(value, emit, newline: str) -> None:
    """Write a container (or a scalar) at the indentation ``newline`` ends with (two spaces a level)."""
    text: str | None
    if isinstance(value, dict):
        if not value:
            emit("{}")
            return
        if not all(type(k) is str for k in value):
            value = {str(k): v for k, v in value.items()}  # (as jsonable: a later equal key keeps the first's place)
        inner = newline + "  "
        sep = "{" + inner
        for k, v in value.items():
            kind = type(v)  # (the common scalars inline: a call per value is a third of the time)
            if kind is float:
                text = _float_repr(v) if v - v == 0.0 else "null"
            elif kind is str:
                text = _escape(v)
            else:
                text = _scalar(v)
            if text is None:
                emit(sep + _escape(k) + ": ")
                _write(v, emit, inner)
            else:
                emit(sep + _escape(k) + ": " + text)
            sep = "," + inner
        emit(newline + "}")
        return
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if not value:
            emit("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for v in value:
            text = (_float_repr(v) if v - v == 0.0 else "null") if type(v) is float else _scalar(v)
            if text is None:
                emit(sep)
                _write(v, emit, inner)
            else:
                emit(sep + text)
            sep = "," + inner
        emit(newline + "]")
        return
    text = _scalar(value)
    assert text is not None  # (every container is handled above)
    emit(text)


def group_summary(entries: list[dict], headline: dict[str, dict]) -> dict:
    """Per metric, the worst group and the spread across groups (subgroup calibration).

    ``headline`` maps each entry's label to its headline metrics (JSON metric dicts); "worst" follows
    the metric's direction in :data:`calibcli.metrics.REGISTRY`.
    """
    names = [n for n in next(iter(headline.values())) if REGISTRY.get(n) is None or REGISTRY[n].better != "none"]
    out = {}
    for name in names:
        values = [
            (label, m[name]["estimate"]) for label, m in headline.items() if m.get(name, {}).get("estimate") is not None
        ]
        if not values:
            continue
        worst_label, worst_value = values[0]
        for label, value in values[1:]:
            if worse(name, value, worst_value):
                worst_label, worst_value = label, value
        estimates = [v for _, v in values]
        best = max(estimates) if name in REGISTRY and REGISTRY[name].better == "higher" else min(estimates)
        out[name] = {
            "worst_group": worst_label,
            "worst": worst_value,
            "best": best,
            "spread": max(estimates) - min(estimates),
        }
    return out


def segment_text(definition: dict) -> str:
    """An audit segment as one line: ``country=BR, device=android``; the whole population ``(all rows)``."""
    return ", ".join(f"{k}={v}" for k, v in definition.items()) or "(all rows)"


def group_text(entry: dict) -> str:
    group = entry.get("group")
    return ", ".join(f"{k}={v}" for k, v in group.items()) if group else ""


def entry_label(entry: dict) -> str:
    """How an entry is named in messages: the input's path, and its group values when grouped."""
    path = entry["input"]["path"]
    group = group_text(entry)
    return f"{path} [{group}]" if group else path


def fmt_number(value, digits: int = 4) -> str:
    """Numbers in tables: 4 significant digits, '-' for missing."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    if value == 0:
        return "0"
    if abs(value) < 1e-3 or abs(value) >= 1e5:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def fmt_interval(low, high) -> str:
    if low is None or high is None:
        return "-"
    return f"[{fmt_number(low)}, {fmt_number(high)}]"
