"""The calibrator document: the versioned JSON file ``calibcli recalibrate fit`` writes and ``apply`` reads
(SPEC 5), never a pickle; :class:`calibcli.sklearn.Recalibrator` saves and loads the same document.

- :func:`calibrator_document` / :func:`calibrator_json`: a fitted calibrator and where it came from, as
  a document and as text (the header indented for people, the parameters on one line).
- :func:`load_calibrator` / :func:`check_document`: read and validate one; every problem is a
  :class:`~calibcli.core.errors.CalibcliError` naming the file and the field.
- :func:`fit_arrays`: fit a method on validated arrays in a mode (binary, or one of the multiclass wraps).
- :func:`invalid_probability_rows`: the rows a calibrator cannot be applied to.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from calibcli._version import __version__
from calibcli.calibrators import calibrator_from_dict, fit_calibrator, fit_multiclass
from calibcli.calibrators._common import Fields
from calibcli.calibrators.files import HINT, read_calibrator_document
from calibcli.core.documents import jsonable
from calibcli.core.errors import CalibcliError, warn
from calibcli.core.modes import default_mode
from calibcli.core.validation import ROW_SUM_TOLERANCE

#: Version of the calibrator document; ``apply`` refuses any other.
CALIBRATOR_SCHEMA_VERSION = 1
CALIBRATOR_KIND = "calibcli calibrator"

METHOD_NAMES = ("platt", "temperature", "histogram", "isotonic", "scaling-binning", "polynomial", "beta", "venn-abers")


def fit_arrays(
    method: str,
    labels: np.ndarray,
    probs: np.ndarray,
    sample_weight,
    *,
    mode: str | None,
    options: dict[str, Any],
    seed: int,
):
    """Fit ``method`` on validated arrays in ``mode``; returns ``(calibrator, effective mode)``."""
    rng = np.random.default_rng(seed)
    if probs.ndim == 1:
        if mode not in (None, "binary"):
            raise CalibcliError(
                f"--mode {mode} needs one probability column per class, but the input has a single probability "
                f"column: use --mode binary, or pass --prob-cols for every class"
            )
        return fit_calibrator(method, labels, probs, sample_weight=sample_weight, rng=rng, **options), "binary"
    file_mode = mode or default_mode(probs.shape[1])
    cal = fit_multiclass(method, labels, probs, mode=file_mode, sample_weight=sample_weight, rng=rng, **options)
    return cal, ("multiclass" if method == "temperature" else file_mode)


def _layout(loaded) -> str:
    if loaded.probs.ndim == 1:
        return "single"
    return "vector" if len(loaded.prob_columns) == 1 else "columns"


def calibrator_document(cal, loaded, *, method: str, mode: str, options: dict, seed: int) -> dict:
    """The versioned calibrator file: what ``apply`` needs, and where it came from."""
    return {
        "kind": CALIBRATOR_KIND,
        "schema_version": CALIBRATOR_SCHEMA_VERSION,
        "tool": "calibcli",
        "version": __version__,
        "method": method,
        "mode": mode,
        "n_classes": loaded.n_classes,
        "class_names": list(loaded.class_names),
        "columns": {
            "probabilities": list(loaded.prob_columns),
            "layout": _layout(loaded),
            "logits": bool(loaded.logits),
            "label": loaded.label_column,
            "weight": loaded.weight_column,
        },
        "fitted_on": {"path": loaded.path, "rows_used": loaded.n_rows, "rows_dropped": loaded.n_rows_dropped},
        "n": loaded.n_rows,
        "options": options,
        "seed": seed,
        "calibrator": cal.to_dict(),
        **_llm_facts(loaded.described),
    }


def _llm_facts(described: dict) -> dict:
    """An LLM dump's facts the map depends on (``--from``, the ``--confidence`` rule, the task): ``apply``
    refuses a dump read with another rule. Nothing for a table of predictions."""
    llm = described.get("llm")
    if not llm:
        return {}
    return {"llm": {k: llm[k] for k in ("from", "confidence", "rule", "task") if k in llm}}


def calibrator_json(doc: dict) -> str:
    """The calibrator document as text: the header indented for people, the parameters on one line."""
    head = jsonable(dict(doc))
    body = head.pop("calibrator")
    text = json.dumps(head, indent=1, allow_nan=False)
    return text[: -len("\n}")] + ',\n "calibrator": ' + json.dumps(body, allow_nan=False) + "\n}"


def load_calibrator(path: str):
    """Read and validate a calibrator file; returns ``(document, calibrator)``.

    Every problem (missing file, not JSON, truncated, another kind of JSON, an unsupported schema version,
    a malformed field) is a :class:`CalibcliError` naming the file.
    """
    doc = read_calibrator_document(path)
    hint = HINT
    if not isinstance(doc, dict) or doc.get("kind") != CALIBRATOR_KIND:
        raise CalibcliError(f'{path}: not a calibrator: the JSON has no "kind": "{CALIBRATOR_KIND}": {hint}')
    version = doc.get("schema_version")
    if version != CALIBRATOR_SCHEMA_VERSION:
        raise CalibcliError(
            f"{path}: calibrator schema version {version!r} is not supported by calibcli {__version__} "
            f"(it reads version {CALIBRATOR_SCHEMA_VERSION}): refit it with this version, or use the "
            f"calibcli version that wrote it ({doc.get('version', 'unknown')})"
        )
    try:
        cal = calibrator_from_dict(doc.get("calibrator"))
        check_document(doc, cal)
    except CalibcliError as exc:
        raise CalibcliError(f"{path}: {exc.template}") from None
    _warn_if_newer(path, doc.get("version"))
    return doc, cal


def check_document(doc: dict, cal) -> None:
    f = Fields(doc, "")
    method = f.choice("method", METHOD_NAMES)
    if cal.method != method:
        raise CalibcliError(f"calibrator: field 'method' is {method!r} but the parameters are those of {cal.method!r}")
    f.choice("mode", ("binary", "multiclass", "top-label", "marginal"))
    K = f.integer("n_classes", low=2)
    names = f.get("class_names")
    if not isinstance(names, list) or len(names) != K or not all(isinstance(x, str) for x in names):
        raise CalibcliError(f"calibrator: field 'class_names' must list {K} class names")
    cols = f.sub("columns")
    layout = cols.choice("layout", ("single", "columns", "vector"))
    probs = cols.get("probabilities")
    if not isinstance(probs, list) or not probs or not all(isinstance(x, str) for x in probs):
        raise CalibcliError("calibrator: field 'columns.probabilities' must be a list of column names")
    expected = K if layout == "columns" else 1
    if len(probs) != expected:
        raise CalibcliError(f"calibrator: field 'columns.probabilities' has {len(probs)} names: expected {expected}")
    cols.boolean("logits")
    n_cal = getattr(cal, "n_classes", 2)
    if n_cal != K:
        raise CalibcliError(f"calibrator: n_classes is {K} but the parameters are for {n_cal} classes")
    # checked by load_calibrator, read by apply, or facts about the fit: every other field is unknown, and refused
    f.read.update(
        ("kind", "schema_version", "tool", "version", "calibrator", "fitted_on", "n", "options", "seed", "llm")
    )
    cols.read.update(("label", "weight"))
    f.check_all_read()


def _warn_if_newer(path: str, written_by) -> None:
    """A calibrator of this schema written by a newer calibcli is read (its fields are all known), with a
    warning that names both versions."""

    def parts(text):
        try:
            return tuple(int(p) for p in str(text).split("+")[0].split("."))
        except ValueError:
            return None

    theirs, ours = parts(written_by), parts(__version__)
    if theirs is None or ours is None or theirs > ours:
        warn(
            f"{path} was written by calibcli {str(written_by)[:40]}, newer than this calibcli {__version__} "
            f"(or not a version it knows); its schema version {CALIBRATOR_SCHEMA_VERSION} is one this version "
            f"reads, and every field was recognised"
        )


def invalid_probability_rows(probs: np.ndarray) -> np.ndarray:
    """Rows that are not probabilities: non-finite, outside [0, 1], or (K columns) not summing to 1."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(probs) | (probs < 0) | (probs > 1)
        if probs.ndim == 1:
            return bad
        return bad.any(axis=1) | (np.abs(probs.sum(axis=1) - 1.0) > ROW_SUM_TOLERANCE)
