"""A table of stated confidences: ``confidence`` (on 0-1, or 0-100 with ``--confidence-scale percent``) and
``correct`` per answer (verbalized confidence, LLM judges: HLE's and SimpleQA's graders record both). An
``id`` (or ``custom_id``, ``item``) column keys the items; every other column is there for ``--group-by``.
CSV, TSV, JSON Lines or Parquet, read with pyarrow (:mod:`calibcli.io.formats`)."""

from __future__ import annotations

import math

from calibcli.core.errors import CalibcliError
from calibcli.io import formats
from calibcli.llm.confidence import rule_for
from calibcli.llm.items import Items, add_row_columns
from calibcli.llm.texts import read_rows

SCALES = {"unit": 1.0, "percent": 100.0}
_TRUE = {"1", "true", "yes", "correct", "c"}
_FALSE = {"0", "false", "no", "incorrect", "i"}
KEY_COLUMNS = ("id", "custom_id", "item", "question_id")


def _correct(value, where: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return 1
    if text in _FALSE:
        return 0
    raise CalibcliError(f"{where}: 'correct' is {str(value)[:30]!r}: expected 1/0, true/false or yes/no")


def read(path: str, confidence: str | None = None, *, scale: str | None = None) -> Items:
    rule = rule_for("confidence", confidence)
    scale = scale or "unit"
    if scale not in SCALES:
        raise CalibcliError(f"{{opt:confidence_scale}} is {scale!r}: expected unit (0-1) or percent (0-100)")
    top = SCALES[scale]
    rows = read_rows(path)
    if not rows:
        raise formats.no_rows(path)
    missing = [c for c in ("confidence", "correct") if c not in rows[0]]
    if missing:
        raise CalibcliError(
            f"{path}: no column {', '.join(repr(m) for m in missing)}; the file has columns {', '.join(rows[0])}: "
            f"expected confidence (0-1, or 0-100 with {{opt:confidence_scale}} percent) and correct (1/0)"
        )
    key = next((c for c in KEY_COLUMNS if c in rows[0]), None)
    items = Items(path, "confidence", rule, keys=[], confidence=[], correct=[])
    assert items.confidence is not None and items.correct is not None
    for i, row in enumerate(rows, 1):
        where = f"{path}: row {i}"
        value = row["confidence"]
        try:
            c = float(value)
        except (TypeError, ValueError):
            raise CalibcliError(f"{where}: 'confidence' is {str(value)[:30]!r}: expected a number") from None
        if not math.isfinite(c) or c < 0 or c > 100 or (c > top):
            hint = (
                ": the scale is 0-1; if confidences are percentages pass {opt:confidence_scale} percent"
                if top == 1.0 and 1 < c <= 100
                else f": expected 0..{top:g}"
            )
            raise CalibcliError(f"{where}: 'confidence' is {value}, above {top:g} or not a probability{hint}")
        items.confidence.append(c / top)
        items.correct.append(_correct(row["correct"], where))
        extra = {k: v for k, v in row.items() if k not in ("confidence", "correct", key)}
        add_row_columns(items.columns, extra, len(items.keys))
        items.keys.append(str(row[key]) if key else str(i))
    items.facts = {"scale": f"{scale} (0-{top:g})", "item_key": key or "row number"}
    return items
