"""Mergeable accumulators: one per metric family, with one contract (SPEC 8).

Each accumulator reduces the rows of one binary problem (or one multiclass input) to a small state:

- ``update(row_index, z, y, w)`` adds a batch (global row indices, predictions, labels, weights or None);
- ``merge(other)`` adds another accumulator's state of disjoint rows (associative and commutative);
- ``to_dict()`` / ``from_dict(d)`` give a versioned JSON-able state, derived once for every accumulator in
  :class:`~calibcli.accumulators.base.Accumulator` from its attributes (:mod:`calibcli.arraystate`: arrays exact,
  their bytes in base64), so partial results can be saved, shipped to another process and merged later;
  pickling (what a Dask task sends) packs the same arrays (occupied cells only, smallest integer types);
- ``result(...)`` finishes: the estimates and their bootstrap intervals;
- ``needs_second_pass()`` / ``for_second_pass()``: whether the engine reads the rows again, and the empty
  state that second pass starts from (quantile edges, a finer smoothing grid); optionally
  ``after_second_pass(second)``, what the first-pass state makes of the second pass's state
  (:class:`~calibcli.accumulators.composite.Composite`: several families in one pass).

Results do not depend on batch size, file order or which worker saw which rows: float sums differ only
by rounding (far below 1e-12 relative), and every random draw is keyed by ``(seed, global row index)``
(:mod:`calibcli.resampling`).
"""

from calibcli.modes import default_mode


def per_input(accumulator_class, mode: str | None, options):
    """How a family makes the input accumulator of a stream: ``accumulator_class`` in ``mode`` (default:
    binary for one or two probability columns, top-label for K > 2) with the stream's classes."""

    def new(stream):
        return accumulator_class(
            mode=mode or default_mode(stream.n_classes),
            n_classes=stream.n_classes,
            class_names=stream.class_names,
            options=options,
        )

    return new
