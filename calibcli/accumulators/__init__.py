"""Mergeable accumulators: one per metric family, with one contract (SPEC 8).

Each accumulator reduces the rows of one binary problem (or one multiclass input) to a small state:

- ``update(row_index, z, y, w)`` adds a batch (global row indices, predictions, labels, weights or None);
- ``merge(other)`` adds another accumulator's state of disjoint rows (associative and commutative);
- ``to_dict()`` / ``from_dict(d)`` give a versioned JSON-able state (integers as integers, floats that
  round-trip), so partial results can be saved, shipped to another process and merged later;
- ``result(...)`` finishes: the estimates and their bootstrap intervals.

Results do not depend on batch size, file order or which worker saw which rows: float sums differ only
by rounding (far below 1e-12 relative), and every random draw is keyed by ``(seed, global row index)``
(:mod:`calibcli.resampling`).
"""
