"""Mergeable accumulators: one per metric family, with one contract (SPEC 8).

Each accumulator reduces the rows of one binary problem (or one multiclass input) to a small state:

- ``update(row_index, z, y, w)`` adds a batch (global row indices, predictions, labels, weights or None);
- ``merge(other)`` adds another accumulator's state of disjoint rows (associative and commutative);
- ``to_dict()`` / ``from_dict(d)`` give a versioned JSON-able state, derived once for every accumulator in
  :class:`~calibcli.core.accumulator.Accumulator` from its attributes (:mod:`calibcli.core.arraystate`: arrays exact,
  their bytes in base64), so partial results can be saved, shipped to another process and merged later;
  pickling (what a Dask task sends) packs the same arrays (occupied cells only, smallest integer types);
- ``result(...)`` finishes: the estimates and their bootstrap intervals;
- ``needs_second_pass()`` / ``for_second_pass()``: whether the engine reads the rows again, and the empty
  state that second pass starts from (quantile edges, a finer smoothing grid); optionally
  ``after_second_pass(second)``, what the first-pass state makes of the second pass's state
  (:class:`~calibcli.core.composite.Composite`: several families in one pass).

Results do not depend on batch size, file order or which worker saw which rows: float sums differ only
by rounding (far below 1e-12 relative), and every random draw is keyed by ``(seed, global row index)``
(:mod:`calibcli.core.resampling`).

What every accumulator shares, written once (SPEC 8): its versioned state's head and check, and a merge
made from declared states, each with its rule.

As torchmetrics' ``Metric`` declares ``add_state(name, default, dist_reduce_fx="sum")`` and merges every
state by its rule, an accumulator here declares ``merge_rules = {"n": "sum", "rows": "merge", ...}``:

- ``sum``: counts and per-bin or per-cell sums (arrays added in place);
- ``exact``: float sums whose rounding would show (a residual of large sums, a variance by cancellation): a
  pair of arrays ``name`` and ``name_lo`` added by :func:`calibcli.core.compensated.add_exact`, so that ``name`` is
  the same float whatever order the batches' sums were added in (one stream, or a cluster's tree of merges);
- ``max``: flags that stay set once set (``weighted``);
- ``first``: a fact the first rows fix (whether the input has one probability column);
- ``concat``: lists of parts;
- ``merge``: nested accumulators, merged by their own rules (a list, tuple or dict of them element by
  element; None stays None).

``same`` names what both sides must share (options, mode) for a merge to mean anything; ``_after_merge``
drops what the merge made stale (a cached result). ``to_dict`` starts from :meth:`Accumulator.state_head`
and ``from_dict`` from :meth:`Accumulator.check_state`, so the kind and version are checked one way.

Pickling (what a Dask task sends: a state to merge on another worker) is written here too: every
accumulator is a :class:`calibcli.core.arraystate.ArrayState`, so its arrays travel packed (a grid's occupied
cells only, counts in the smallest integer type) and arrive writable, bit for bit as they left.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from calibcli.core.arraystate import ArrayState
from calibcli.core.compensated import add_exact
from calibcli.core.modes import default_mode


def _sum(a, b):
    if isinstance(a, np.ndarray):
        a += b
        return a
    return a + b


def _merge(a, b):
    if a is None:
        return a
    if isinstance(a, dict):
        for key, acc in a.items():
            _merge(acc, b[key])
        return a
    if isinstance(a, (list, tuple)):
        for mine, theirs in zip(a, b or (), strict=False):  # (None on the other side: nothing to add)
            _merge(mine, theirs)
        return a
    a.merge(b)
    return a


def _concat(a, b):
    a.extend(b)
    return a


#: How two partial states of disjoint rows combine, by rule name.
RULES = {
    "sum": _sum,
    "max": lambda a, b: max(a, b),
    "first": lambda a, b: b if a is None else a,
    "concat": _concat,
    "merge": _merge,
}


class Accumulator(ArrayState):
    """The base of calibcli's accumulators: ``update`` / ``merge`` / ``to_dict`` / ``from_dict`` / ``result``
    (:mod:`calibcli.core.accumulator`), with the merge and the state check written here."""

    #: The state's ``kind`` in ``to_dict`` and what error messages call it.
    kind: ClassVar[str] = ""
    state_name: ClassVar[str] = "accumulator state"
    #: The version of ``to_dict``'s layout; ``from_dict`` reads this one only.
    version: ClassVar[int] = 1
    #: State attribute -> merge rule (:data:`RULES`), in merge order.
    merge_rules: ClassVar[dict[str, str]] = {}
    #: Attributes that must be equal on both sides of a merge, and the error when they are not.
    same: ClassVar[tuple[str, ...]] = ()
    same_message: ClassVar[str] = ""

    def merge(self, other):
        """Add the state of an accumulator of disjoint rows (associative and commutative)."""
        if self.same and tuple(getattr(other, n) for n in self.same) != tuple(getattr(self, n) for n in self.same):
            raise ValueError(self.same_message)
        for name, rule in self.merge_rules.items():
            mine = getattr(self, name)
            if rule == "exact":  # (a pair of arrays: the sum and its low part)
                add_exact(mine, getattr(self, name + "_lo"), getattr(other, name), getattr(other, name + "_lo"))
                continue
            merged = RULES[rule](mine, getattr(other, name))
            if merged is not mine:  # (states merged in place, arrays and nested accumulators, stay as they are)
                setattr(self, name, merged)
        self._after_merge()
        return self

    def _after_merge(self) -> None:
        """What a merge makes stale (a cached result), dropped."""

    def to_dict(self) -> dict:
        """The versioned state (:meth:`state_head`, then every attribute: arrays exact, in base64; derived by
        :meth:`calibcli.core.arraystate.ArrayState.to_dict`), JSON-able, for another process or a file."""
        return {**self.state_head(), "state": super().to_dict()}

    @classmethod
    def from_dict(cls, d: dict):
        """The accumulator :meth:`to_dict` described; a state of another kind or version is refused."""
        cls.check_state(d)
        return super().from_dict(d["state"])

    def state_head(self) -> dict:
        """The head of ``to_dict()``: the kind and the version of the state."""
        return {"kind": self.kind, "version": self.version}

    @classmethod
    def check_state(cls, d: dict) -> None:
        """Refuse a state of another kind or version (before ``from_dict`` reads it)."""
        if d.get("kind") != cls.kind or d.get("version") != cls.version:
            raise ValueError(f"not a {cls.state_name} of version {cls.version}: {d.get('kind')!r} {d.get('version')!r}")


class OnePass(Accumulator):
    """An accumulator complete after one pass over its rows that resamples nothing: no second pass (this state
    is what a second pass would start from), no problem for a progress bar, and its own state as its result."""

    def needs_second_pass(self) -> bool:
        return False

    def for_second_pass(self):
        return self

    @property
    def problems(self) -> list:
        return []

    def result(self, progress=None):
        return self


class InputState(Accumulator):
    """The base of a family's input accumulator (one input, or one group of it): the binary problems of ``mode``
    over ``n_classes`` classes named ``class_names``, measured with the family's frozen ``options``; these four
    are set here, once for every family (a subclass takes its own keywords and passes these on)."""

    def __init__(self, *, mode: str, n_classes: int, class_names: tuple[str, ...], options: Any) -> None:
        self.mode, self.n_classes, self.class_names, self.options = mode, int(n_classes), tuple(class_names), options

    def head(self) -> dict[str, Any]:
        """The four keywords of this input, to make another state of it (an empty one for a second pass)."""
        return {
            "mode": self.mode,
            "n_classes": self.n_classes,
            "class_names": self.class_names,
            "options": self.options,
        }


def per_input(accumulator_class, mode: str | None, options, **more):
    """How a family makes the input accumulator of a stream: ``accumulator_class`` in ``mode`` (default:
    binary for one or two probability columns, top-label for K > 2) with the stream's classes, the family's
    ``options`` and any ``more`` keywords of its own (the audit's diagrams)."""

    def new(stream):
        return accumulator_class(
            mode=mode or default_mode(stream.n_classes),
            n_classes=stream.n_classes,
            class_names=stream.class_names,
            options=options,
            **more,
        )

    return new
