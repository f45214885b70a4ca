"""States as arrays, packed for the wire without losing a bit (SPEC 8 "Engines").

A mergeable state (an accumulator, a grid of per-cell sums) is NumPy arrays sized by bins x classes x
groups. Sent to another process (pickling: a Dask task's result, a merge's input) as it is held, a grid
of 2^16 or 2^18 cells would travel dense, zeros included, and a count that fits a byte as eight.
:class:`ArrayState` gives a class the pickling that packs its arrays first (:func:`pack`) and unpacks
them into fresh, writable arrays on arrival (:func:`unpack`):

- 1-D numeric arrays of the same length (a grid's count and sums) share one support: the cells where
  any of them has a nonzero bit pattern (``-0.0`` and NaN count as nonzero). Unless the empty cells are
  too few to be worth it, only the occupied ones are sent, the support as a bitmap or as gaps between
  cells (whichever is smaller);
- integers go in the smallest integer type that holds their range (nondecreasing ones, row indices, as
  their steps); a float array whose values are all
  whole numbers below 2^53 (a count kept as float, the label sums of unit-weight rows) goes as integers
  too, and one equal to an array sent before it in the same group (``sum w`` equal to the count) as a
  reference to it;
- arrays inside lists and tuples (a row sample's parts) are packed the same way, each alone; a dict of named
  arrays (a lazily allocated grid's sums) is packed as an object's attributes are, its arrays sharing supports;
- everything else (small arrays, floats with fractions, nested states, options) as pickle sends it.

Every value comes back with its dtype and bit pattern, so a merge after a round trip equals a merge
without one. The same state as JSON (``to_dict`` / ``from_dict``, derived here for every ArrayState class, and
with a versioned head for every accumulator in :class:`calibcli.core.accumulator.Accumulator`): :func:`to_json`
writes the packed state with arrays as their bytes in base64, :func:`from_json` reads it back bit for bit and
rebuilds only calibcli's own state classes and option dataclasses. (The sparse layout is that of a coordinate
list, SciPy's ``coo_array``; the bitmap is :func:`numpy.packbits`.)
"""

from __future__ import annotations

import base64
import copy
import dataclasses

import numpy as np

#: Arrays shorter than this travel as they are (packing would save less than it costs).
PACK_MIN = 1024
#: Tag of a packed group of arrays inside a pickled state (checked on unpacking).
_TAG = "calibcli.core.arraystate/1"


def _smallest_int(v: np.ndarray) -> np.ndarray:
    """``v`` (integers) in the smallest integer dtype that holds its range."""
    if v.size == 0:
        return v.astype(np.uint8)
    lo, hi = int(v.min()), int(v.max())
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64) if lo >= 0 else (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return v.astype(dtype)
    return v


def _encode(v: np.ndarray, earlier: list[np.ndarray]):
    """One array's values: ``("int", ints)``, ``("rise", first, steps)`` (nondecreasing integers: row indices),
    ``("same", j)``, ``("wholes", ints)`` (whole floats) or ``("raw", v)``."""
    if v.dtype.kind in "iu":
        if v.size > 1 and v.dtype.kind == "i":
            steps = np.diff(v)
            if (steps >= 0).all():
                return ("rise", v[:1].copy(), _smallest_int(steps))
        return ("int", _smallest_int(v))
    if v.dtype == np.float64:
        negative_zero = np.signbit(v) & (v == 0)
        if not negative_zero.any():
            for j, other in enumerate(earlier):
                if other.shape == v.shape and np.array_equal(other, v):
                    return ("same", j)
            with np.errstate(invalid="ignore"):
                whole = (
                    np.isfinite(v).all()
                    and np.array_equal(v, np.trunc(v))
                    and (v.size == 0 or np.abs(v).max() < 2.0**53)
                )
            if whole:
                return ("wholes", _smallest_int(v.astype(np.int64)))
    return ("raw", v)


def _support(nonzero: np.ndarray, size: int) -> tuple[str, np.ndarray]:
    """The occupied cells as a bitmap or as gaps (each cell's distance from the previous occupied one)."""
    cells = np.flatnonzero(nonzero)
    gaps = _smallest_int(np.diff(cells, prepend=-1))
    bitmap_bytes = (size + 7) // 8
    if gaps.nbytes < bitmap_bytes:
        return "gaps", gaps
    return "bitmap", np.packbits(nonzero)


def _decode(encoding, decoded: list[np.ndarray]) -> np.ndarray:
    how, *data = encoding
    if how == "same":
        return decoded[data[0]]
    if how == "rise":
        first, steps = data
        out = np.empty(len(steps) + 1, dtype=np.int64)
        out[:1] = first
        np.cumsum(steps, dtype=np.int64, out=out[1:])
        out[1:] += out[0]
        return out
    return np.asarray(data[0])


class _Packed:
    """A packed part of a state: its fields, named by ``__slots__``, given in that order, and pickled as them."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *fields):
        for name, value in zip(self.__slots__, fields, strict=True):
            setattr(self, name, value)

    def __reduce__(self):
        return (type(self), tuple(getattr(self, name) for name in self.__slots__))


class _Array(_Packed):
    """An array inside a list or tuple of a state, packed alone (no shared support): ``(dtype, encoding)``."""

    __slots__ = ("dtype", "encoding")
    dtype: str
    encoding: tuple


class _Sequence(_Packed):
    """A list or tuple of a state holding arrays (a row sample's parts), its arrays packed: ``(kind, items)``."""

    __slots__ = ("kind", "items")
    kind: str
    items: list


class _Mapping(_Packed):
    """A dict of a state with string keys holding long arrays (a grid's sums by name), packed by :func:`pack`."""

    __slots__ = ("state",)
    state: dict


def _long_array(value) -> bool:
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.size >= PACK_MIN and value.dtype.kind in "iuf"


def _pack_items(value):
    """Arrays inside (nested) lists and tuples, each packed alone, and dicts of named arrays packed together;
    other values as they are."""
    if type(value) is dict and all(isinstance(k, str) for k in value) and any(map(_long_array, value.values())):
        return _Mapping(pack(value))
    if _long_array(value):
        return _Array(value.dtype.str, _encode(np.ascontiguousarray(value), []))
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        items = [_pack_items(v) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            return _Sequence("list" if isinstance(value, list) else "tuple", items)
    return value


def _unpack_items(value):
    if isinstance(value, _Mapping):
        return unpack(value.state)
    if isinstance(value, _Array):
        return np.array(_decode(value.encoding, []), dtype=value.dtype, copy=True)
    if isinstance(value, _Sequence):
        items = [_unpack_items(v) for v in value.items]
        return items if value.kind == "list" else tuple(items)
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    if type(value) in (list, tuple):
        items = [_unpack_items(v) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            return items if isinstance(value, list) else tuple(items)
    return value


def pack(attrs: dict) -> dict:
    """``attrs`` (an object's ``__dict__``) with its long 1-D numeric arrays packed (module docstring)."""
    by_size: dict[int, list[str]] = {}
    out = {}
    for name, value in attrs.items():
        if _long_array(value):
            by_size.setdefault(value.size, []).append(name)
        else:
            out[name] = _pack_items(value)
    groups: list[tuple[int, tuple[str, np.ndarray] | None, list]] = []
    for size, names in by_size.items():
        arrays = [np.ascontiguousarray(attrs[name]) for name in names]
        nonzero = np.zeros(size, dtype=bool)
        for a in arrays:
            nonzero |= a.view(f"u{a.dtype.itemsize}") != 0
        support: tuple[str, np.ndarray] | None = _support(nonzero, size)
        saved = (size - int(np.count_nonzero(nonzero))) * sum(a.dtype.itemsize for a in arrays)
        if support is not None and support[1].nbytes >= saved // 2:
            support = None  # (too few empty cells to be worth leaving out)
        values = [a[nonzero] for a in arrays] if support is not None else arrays
        encoded: list[tuple[str, str, tuple]] = []
        earlier: list[np.ndarray] = []
        for name, a, v in zip(names, arrays, values, strict=True):
            encoded.append((name, a.dtype.str, _encode(v, earlier)))
            earlier.append(v)
        groups.append((size, support, encoded))
    if groups:
        out[_TAG] = groups
    return out


def unpack(state: dict) -> dict:
    """The attributes :func:`pack` packed, as fresh writable arrays; every other array made writable too
    (an array received from another process may be a read-only view of the message's bytes)."""
    state = dict(state)
    groups = state.pop(_TAG, ())
    for name, value in state.items():
        state[name] = _unpack_items(value)
    for size, support, encoded in groups:
        where = None
        if support is not None:
            how, data = support
            if how == "bitmap":
                where = np.unpackbits(np.asarray(data, dtype=np.uint8), count=size).astype(bool)
            else:
                where = np.cumsum(data, dtype=np.int64) - 1  # (gaps from cell -1)
        decoded: list[np.ndarray] = []
        for name, dtype, encoding in encoded:
            values = _decode(encoding, decoded)
            if where is None:
                array = np.array(values, dtype=dtype, copy=True)
            else:
                array = np.zeros(size, dtype=dtype)
                array[where] = values
            decoded.append(values)
            state[name] = array
    return state


class ArrayState:
    """Pickling through :func:`pack` / :func:`unpack`: a state travels as arrays, compactly, and arrives
    writable (a merge adds into it in place); ``copy.deepcopy`` copies the arrays as they are."""

    def __getstate__(self) -> dict:
        return pack(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(unpack(state))

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _CLASSES[_name(cls)] = cls

    def to_dict(self) -> dict:
        """The state as JSON-able data (:func:`to_json` of the packed state): exact, derived from the attributes."""
        return to_json(self.__getstate__())

    @classmethod
    def from_dict(cls, d: dict):
        """The object :meth:`to_dict` described."""
        out = cls.__new__(cls)
        out.__setstate__(from_json(d))
        return out

    def __deepcopy__(self, memo: dict):
        """A copy in this process: the arrays copied as they are (no packing)."""
        out = type(self).__new__(type(self))
        memo[id(self)] = out
        out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return out


# ---------------------------------------------------------------------------------------------
# The same state as JSON: to_dict / from_dict, derived once for every class with an ArrayState


#: Classes whose states :func:`from_json` may rebuild, by ``module.qualname`` (every ArrayState subclass).
_CLASSES: dict[str, type[ArrayState]] = {}


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _known_class(name: str) -> type:
    """A class of calibcli named in a state: an ArrayState subclass, or a dataclass (options, a binning) of an
    already imported calibcli module; anything else is refused."""
    if name in _CLASSES:
        return _CLASSES[name]
    module, _, qualname = name.rpartition(".")
    import sys

    cls = getattr(sys.modules.get(module), qualname, None) if module.startswith("calibcli.") else None
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"a state names the class {name!r}, which is not one of calibcli's states or options")
    return cls


def to_json(value):
    """``value`` (a state: the packed ``__getstate__`` of an ArrayState, and what it holds) as JSON-able data:
    arrays as their dtype, shape and bytes in base64 (exact), tuples, non-text keys, nested states and
    dataclasses tagged; keys starting with ``$`` are the tags."""
    if value is None or isinstance(value, (bool, str)) or type(value) in (int, float):
        return value
    if isinstance(value, np.ndarray | np.generic):
        a = np.ascontiguousarray(value)
        return {"$array": [a.dtype.str, list(a.shape), base64.b64encode(a.tobytes()).decode("ascii")]}
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, ArrayState):
        return {"$state": [_name(type(value)), to_json(value.__getstate__())]}
    if isinstance(value, _Array):
        return {"$packed": [value.dtype, to_json(value.encoding)]}
    if isinstance(value, _Sequence):
        return {"$sequence": [value.kind, to_json(value.items)]}
    if isinstance(value, _Mapping):
        return {"$mapping": to_json(value.state)}
    if isinstance(value, tuple):
        return {"$tuple": [to_json(v) for v in value]}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: to_json(v) for k, v in value.items()}
        return {"$dict": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"$dataclass": [_name(type(value)), fields]}
    raise TypeError(f"a state holds a {type(value).__name__}, which has no JSON form")


def from_json(doc):
    """The value :func:`to_json` wrote, bit for bit."""
    if isinstance(doc, list):
        return [from_json(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    if len(doc) == 1:
        ((tag, body),) = doc.items()
        if tag == "$array":
            dtype, shape, data = body
            return np.frombuffer(base64.b64decode(data), dtype=np.dtype(dtype)).reshape(shape).copy()
        if tag == "$bytes":
            return base64.b64decode(body)
        if tag == "$state":
            name, state = body
            cls = _CLASSES.get(name)
            if cls is None:
                raise ValueError(f"a state names the class {name!r}, which is not one of calibcli's states")
            out = cls.__new__(cls)
            out.__setstate__(from_json(state))
            return out
        if tag == "$packed":
            return _Array(body[0], from_json(body[1]))
        if tag == "$sequence":
            return _Sequence(body[0], from_json(body[1]))
        if tag == "$mapping":
            return _Mapping(from_json(body))
        if tag == "$tuple":
            return tuple(from_json(v) for v in body)
        if tag == "$dict":
            return {_hashable(from_json(k)): from_json(v) for k, v in body}
        if tag == "$dataclass":
            name, fields = body
            return _known_class(name)(**{k: from_json(v) for k, v in fields.items()})
    return {k: from_json(v) for k, v in doc.items()}


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key
