"""Accumulators keyed by the values of the ``--group-by`` columns: each group is its own input (SPEC 8 "Groups")."""

from __future__ import annotations

import numpy as np

from calibcli.core.accumulator import Accumulator
from calibcli.core.errors import CalibcliError

STATE_VERSION = 1
#: More distinct groups than this is an error (SPEC 8).
MAX_GROUPS = 10_000


def _group_codes(columns: tuple[np.ndarray, ...]) -> tuple[np.ndarray, list[tuple]]:
    """Row codes ``0..G-1`` of the distinct value combinations, and those combinations."""
    if len(columns) == 1:  # (the codes of one column are its values' ranks already: no second np.unique)
        levels, inverse = np.unique(np.asarray(columns[0]), return_inverse=True)
        return inverse.reshape(-1), [(v.item() if hasattr(v, "item") else v,) for v in levels]
    codes = np.zeros(len(columns[0]), dtype=np.int64)
    levels_per_column = []
    for col in columns:
        levels, inverse = np.unique(np.asarray(col), return_inverse=True)
        codes = codes * len(levels) + inverse
        levels_per_column.append(levels)
    distinct, inverse = np.unique(codes, return_inverse=True)
    keys = []
    for code in distinct:
        key = []
        for levels in reversed(levels_per_column):
            code, j = divmod(int(code), len(levels))
            key.append(levels[j].item() if hasattr(levels[j], "item") else levels[j])
        keys.append(tuple(reversed(key)))
    return inverse.reshape(-1), keys


class Grouped(Accumulator):
    """Accumulators keyed by the values of the group columns; each group is its own input (SPEC 8).

    ``factory()`` makes a new group's accumulator (``factory(key)`` with ``keyed=True``: a second pass
    starts each group from its own template). Keys are tuples of plain values (int, float, str, bool).
    """

    kind = "grouped"
    state_name = "grouped state"

    def __init__(self, factory, *, max_groups: int = MAX_GROUPS, keyed: bool = False):
        self.factory = factory
        self.max_groups = max_groups
        self.keyed = keyed
        self.groups: dict[tuple | None, Accumulator] = {}

    def update(self, groups: tuple[np.ndarray, ...], row_index, probs, labels, w=None) -> Grouped:
        codes, keys = _group_codes(groups)
        if len(keys) == 1:
            self._get(keys[0]).update(row_index, probs, labels, w)
            return self
        # (small integers: NumPy's stable sort is then a radix sort, the same order a dozen times faster)
        small = np.int16 if len(keys) < 2**15 else np.int32 if len(keys) < 2**31 else np.int64
        order = np.argsort(codes.astype(small), kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
        for j, key in enumerate(keys):
            sel = order[bounds[j] : bounds[j + 1]]
            self._get(key).update(row_index[sel], probs[sel], labels[sel], None if w is None else w[sel])
        return self

    def _get(self, key: tuple | None):
        if key not in self.groups:
            if len(self.groups) >= self.max_groups:
                raise CalibcliError(
                    f"more than {self.max_groups} distinct groups (at most {self.max_groups} are reported, "
                    "docs: How it is computed §8): "
                    f"group by fewer or coarser columns"
                )
            self.groups[key] = self.factory(key) if self.keyed else self.factory()
        return self.groups[key]

    def merge(self, other: Grouped) -> Grouped:
        for key, acc in other.groups.items():
            if key in self.groups:
                self.groups[key].merge(acc)
            elif len(self.groups) >= self.max_groups:
                self._get(key)  # raises: too many groups
            else:
                self.groups[key] = acc
        return self

    def to_dict(self) -> dict:
        """Every group's state, in order of first appearance: ``{"groups": [[key, state], ...]}`` (a key is
        the list of the group's values; None for the whole input of an ungrouped run)."""
        return {
            **self.state_head(),
            "max_groups": self.max_groups,
            "groups": [[None if key is None else list(key), acc.to_dict()] for key, acc in self.groups.items()],
        }

    @classmethod
    def from_dict(  # type: ignore[override]  # (its groups' states are read by the loader the caller names)
        cls, d: dict, load, factory=None, *, keyed: bool = False
    ) -> Grouped:
        """The groups of :meth:`to_dict`, each state read back with ``load`` (an accumulator class's
        ``from_dict``)."""
        cls.check_state(d)
        out = cls(factory, max_groups=d["max_groups"], keyed=keyed)
        out.groups = {None if key is None else tuple(key): load(state) for key, state in d["groups"]}
        return out
