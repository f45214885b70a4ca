"""The families: each metric family of calibcli set up for a run, apart from any command (SPEC 2, 3, 4, 8).

One module per family (:mod:`~calibcli.families.binned`, :mod:`~calibcli.families.smooth`,
:mod:`~calibcli.families.tcal`). A family's ``plan`` takes its options (already checked) and returns its
report document (the ``parameters`` block: every effective option echoed) and ``new(stream)``, the input
accumulator of a stream; :func:`calibcli.pipeline.run` (or ``calibcli report``'s one pass over an input,
every family a member of one :class:`~calibcli.accumulators.composite.Composite`) fills in the entries.
A command (``calibcli ece``, ...) parses its options, calls its family's plan, runs the pipeline and
renders. :mod:`calibcli.families.registry` names the families ``calibcli report`` composes.

A new family is one module here with a ``plan`` and one entry in :data:`calibcli.families.registry.FAMILIES`.
This package imports none of them, so a command loads only its own family.
"""

from __future__ import annotations


def sources_parameters(*, weighted: bool, group_by: tuple[str, ...], pool: bool, batch_rows: int, engine: str) -> dict:
    """The part of every streaming family's parameter block that echoes the sources and engine options (the
    weights, groups, pooling, batch size and engine), in report order."""
    return {"weights": "frequency weights" if weighted else None, "group_by": list(group_by) or None, "pool": pool,
            "batch_rows": batch_rows, "engine": engine}
