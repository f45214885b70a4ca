"""The segment audit of every window (``calibcli monitor --segment-cols``; SPEC 9, 12): ``calibcli audit``'s own
accumulator (:class:`calibcli.audit.accumulator.SegmentAuditAccumulator`, made by the audit family's ``plan``)
per window, so a window's segments, their tests and adjusted p-values are those ``calibcli audit`` gives on that
window's rows alone.

The rows are read with the window key first among the segment columns (:func:`calibcli.io.windows.windowed`);
:class:`WindowedAudit` splits each batch by it and hands every window's rows, with the other segment columns, to
that window's audit. The windows' audits merge key by key, and each takes its own second pass beyond its row
limit.
"""

from __future__ import annotations

import numpy as np

from calibcli.audit.accumulator import SegmentAuditAccumulator
from calibcli.audit.family import plan as audit_plan
from calibcli.audit.options import Options as AuditOptions

#: An audit finds where a model is miscalibrated; a window is alerted on its MCE: the worst tested segment's
#: ECCE-R/sigma, whose p-value the audit gives by its --mce-method over the segments tested.
SEGMENT_RULE = (
    "per window, calibcli audit on the window's rows alone (its segments, ECCE-R/sigma per segment, p-values "
    "adjusted over the window's segments by {adjust}); the window's test is the audit's MCE p-value ({mce} over "
    "the segments tested), adjusted with the window's other tests over the series"
)


class WindowedAudit:
    """One :class:`~calibcli.audit.accumulator.SegmentAuditAccumulator` per window key, fed from the batches'
    segment columns (the window key first)."""

    kind = "monitor_windowed_audit"
    #: The engines pass each batch's segment columns to :meth:`update` (``columns=``).
    takes_columns = True

    def __init__(self, new, *, second: bool = False):
        self.new = new  # () -> an empty audit accumulator of the stream
        self.second = second  # a second pass: only the windows that asked for one are fed
        self.windows: dict[int, SegmentAuditAccumulator] = {}
        self.problems = [None]

    def update(self, row_index, probs, labels, w=None, columns=None) -> WindowedAudit:
        if columns is None:
            raise RuntimeError("the windows' audits need the segment columns of every batch")
        keys, rest = np.asarray(columns[0]), columns[1:]
        order = np.argsort(keys, kind="stable")
        bounds = np.flatnonzero(np.diff(keys[order])) + 1
        for part in np.split(order, bounds):
            key = int(keys[part[0]]) if len(part) else None
            if key is None or (self.second and key not in self.windows):
                continue
            if key not in self.windows:
                self.windows[key] = self.new()
            self.windows[key].update(
                np.asarray(row_index)[part],
                np.asarray(probs)[part],
                np.asarray(labels)[part],
                None if w is None else np.asarray(w)[part],
                columns=tuple(c[part] for c in rest),
            )
        return self

    def merge(self, other: WindowedAudit) -> WindowedAudit:
        for key, acc in other.windows.items():
            if key in self.windows:
                self.windows[key].merge(acc)
            else:
                self.windows[key] = acc
        return self

    def needs_second_pass(self) -> bool:
        return any(acc.needs_second_pass() for acc in self.windows.values())

    def for_second_pass(self) -> WindowedAudit:
        """Every window that asked for a second pass gets its own; the others keep their first pass's state."""
        out = WindowedAudit(self.new, second=True)
        out.windows = {key: acc.for_second_pass() for key, acc in self.windows.items() if acc.needs_second_pass()}
        return out

    def after_second_pass(self, second: WindowedAudit) -> WindowedAudit:
        out = WindowedAudit(self.new)
        out.windows = {**self.windows, **second.windows}
        return out

    def result(self, progress=None) -> WindowedAudit:
        return self

    def audits(self) -> dict[int, dict]:
        """Each window's audit as ``calibcli audit --json`` has its entry (without ``input`` and ``headline``)."""
        return {key: acc.result().to_dict() for key, acc in self.windows.items()}


def new_windowed_audit(options: AuditOptions, sources, engine: str):
    """``new(stream)`` for the windows' audits of a stream read with the segment columns."""
    made = audit_plan(options, sources, engine)
    return made.doc["parameters"], lambda stream: WindowedAudit(lambda: made.new(stream))
