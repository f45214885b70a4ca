"""The JSON shapes every report shares: the document's head, plain JSON values, a metric's entry (SPEC 7).

Pure functions with no output of their own (:mod:`calibcli.report` prints and writes), so that the
accumulators, the library and the writers make their JSON the one way without reaching up to the report.
"""

from __future__ import annotations

import json
import math

import numpy as np

from calibcli._version import __version__

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


def jsonable(value):
    """Plain JSON types; non-finite floats become null (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def metric_json(m) -> dict:
    """A :class:`calibcli.estimators.Metric` (or any object with its fields) as a report entry."""
    out = {"estimate": m.estimate, "ci_low": m.ci_low, "ci_high": m.ci_high, "ci_method": m.ci_method}
    if getattr(m, "upper_bound", None) is not None:
        out["upper_bound"] = m.upper_bound
        out["upper_bound_method"] = m.upper_bound_method
    if getattr(m, "note", None):
        out["note"] = m.note
    return out


def to_json(doc: dict) -> str:
    return json.dumps(jsonable(doc), indent=2, allow_nan=False)
