"""Several accumulator families over the same rows: one read of an input feeds them all (SPEC 8).

:class:`Composite` holds named member accumulators of one input (or one group of it) and passes every
batch to each; it follows the contract of :mod:`calibcli.core.accumulator`, so an engine runs it as it runs
one family (``cc.engine_runner(...).run(stream, new)``, the local engine or Dask alike). A second pass
runs when any member asks for one, and then feeds only the members that asked (in some group of the
input: :meth:`second_pass_of`): :meth:`for_second_pass` holds those alone, and :meth:`after_second_pass`
puts them back beside the members finished by the first pass. Each member is finished by its own family's code
(``calibcli report``).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from calibcli.core.accumulator import Accumulator

STATE_VERSION = 1


class Member(Protocol):
    """What a composite asks of its members: the contract of :mod:`calibcli.core.accumulator`."""

    @property
    def n_rows(self) -> int: ...

    @property
    def problems(self) -> list: ...

    def update(self, row_index: Any, probs: Any, labels: Any, w: Any = None, /) -> Any: ...

    def merge(self, other: Any, /) -> Any: ...

    def needs_second_pass(self) -> bool: ...

    def for_second_pass(self) -> Any: ...

    def to_dict(self) -> dict: ...


class Composite(Accumulator):
    """Named member accumulators of the same rows (see the module docstring)."""

    kind = "composite"
    state_name = "composite state"
    merge_rules = {"members": "merge"}

    def __init__(self, members: dict[str, Member]):
        self.members = dict(members)

    def update(self, row_index, probs, labels, w=None) -> Composite:
        for acc in self.members.values():
            acc.update(row_index, probs, labels, w)
        return self

    def merge(self, other: Composite) -> Composite:
        if list(other.members) != list(self.members):
            raise ValueError(
                f"composite states of different members cannot be merged: {list(self.members)} and "
                f"{list(other.members)}"
            )
        return super().merge(other)

    def __getitem__(self, name: str):
        return self.members[name]

    @property
    def n_rows(self) -> int:
        return next(iter(self.members.values())).n_rows if self.members else 0

    @property
    def problems(self) -> list:
        return [p for acc in self.members.values() for p in acc.problems]

    def needs_second_pass(self) -> bool:
        return any(acc.needs_second_pass() for acc in self.members.values())

    def _asking(self) -> set[str]:
        return {name for name, acc in self.members.items() if acc.needs_second_pass()}

    def for_second_pass(self, names=None) -> Composite:
        """The second pass's members alone: those named (default: those that ask for one); the others are
        finished already."""
        names = self._asking() if names is None else set(names)
        return Composite({name: acc.for_second_pass() for name, acc in self.members.items() if name in names})

    @classmethod
    def second_pass_of(cls, state: dict) -> dict:
        """Every group's second-pass state (group key -> composite): the members that ask for a second pass
        in some group, in every group, as each member's own command runs all its groups through a second
        pass once one group asks (:func:`calibcli.engines.fragments.for_second_pass`)."""
        names = set().union(*(acc._asking() for acc in state.values()))
        return {key: acc.for_second_pass(names) for key, acc in state.items()}

    def after_second_pass(self, second: Composite) -> Composite:
        """Every member: from ``second`` when it had a second pass, else this (first-pass) one."""
        return Composite({name: second.members.get(name, acc) for name, acc in self.members.items()})

    def result(self, progress=None) -> Composite:
        """The composite itself: each member is finished by its own family."""
        return self


def _class_name(acc) -> str:
    kind = type(acc)
    return f"{kind.__module__}:{kind.__qualname__}"


def _load_class(where: str):
    """A member's accumulator class from ``module:qualname``; calibcli's own classes only."""
    module, _, name = where.partition(":")
    if module != "calibcli" and not module.startswith("calibcli."):
        raise ValueError(f"not a calibcli accumulator: {where!r}")
    return getattr(importlib.import_module(module), name)
