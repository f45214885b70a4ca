"""States as packed arrays (calibcli.core.arraystate): what a Dask task sends comes back bit for bit, writable, and
sized by the occupied cells, not by the grid or the rows."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.core.arraystate import ArrayState, pack, unpack


class _State(ArrayState):
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def _same(a, b) -> None:
    """Equal bit for bit: arrays by dtype, shape and bytes; lists and tuples item by item, type kept."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        assert b.flags.writeable
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert a == b or (a != a and b != b)


def _round_trip(state: _State) -> _State:
    back = pickle.loads(pickle.dumps(state, protocol=5))
    for name, value in vars(state).items():
        _same(value, getattr(back, name))
    return back


@settings(max_examples=150, deadline=None)
@given(size=st.sampled_from([3, 1023, 1024, 5000, 70_000]), density=st.floats(0, 1), seed=st.integers(0, 2**32 - 1),
       specials=st.booleans())
def test_every_array_comes_back_bit_for_bit(size, density, seed, specials):
    rng = np.random.default_rng(seed)
    occupied = rng.random(size) < density
    count = np.where(occupied, rng.integers(1, 300, size), 0)
    value = np.where(occupied, rng.standard_normal(size) * 1e3, 0.0)
    if specials and size > 4:  # the bit patterns a nonzero test on values would lose
        value[:4] = [-0.0, np.nan, np.inf, -np.inf]
    state = _State(count=count, w=count.astype(np.float64), whole=np.where(occupied, rng.integers(-9, 9, size), 0) * 1.0,
                   value=value, small=np.int32(7), f32=value.astype(np.float32), u64=count.astype(np.uint64) << 40,
                   rows=[(np.arange(11, 11 + size), value.copy(), count.astype(np.int8)), (np.arange(3) * -1,)],
                   grid=np.zeros((3, 4)), name="x", nothing=None)
    _round_trip(state)


def test_a_mostly_empty_grid_travels_as_its_occupied_cells():
    # 2^18 cells, 1,000 occupied: the support and the values, not the zeros; counts in one byte each
    rng = np.random.default_rng(1)
    cells = np.sort(rng.choice(2**18, 1000, replace=False))
    count = np.zeros(2**18, dtype=np.int64)
    count[cells] = rng.integers(1, 200, 1000)
    wf = np.zeros(2**18)
    wf[cells] = rng.random(1000)
    state = _State(count=count, wf=wf, wf2=wf**2, w=count.astype(np.float64))
    blob = pickle.dumps(state, protocol=5)
    assert len(blob) < 1000 * (1 + 8 + 8) + 2 * 1000 + 1000  # 1 byte a count, 8 a float (two of them), gaps, head
    assert count.nbytes * 4 > 100 * len(blob)
    _round_trip(state)
    packed = pack(vars(state))
    (size, support, encoded), = packed["calibcli.core.arraystate/1"]
    assert size == 2**18 and support[0] == "gaps"
    assert {name: how[0] for name, _, how in encoded} == {"count": "int", "wf": "raw", "wf2": "raw", "w": "same"}


def test_a_dict_of_named_arrays_travels_packed_like_attributes():
    """A lazily allocated grid held as a dict of its sums by name (the ECCE grid) packs as an object's attributes
    do: the arrays share one support, and come back bit for bit through pickling and JSON."""
    import json

    from calibcli.core.arraystate import from_json, to_json

    rng = np.random.default_rng(2)
    cells = rng.choice(1 << 16, 300, replace=False)
    count = np.zeros(1 << 16, dtype=np.int64)
    count[cells] = rng.integers(1, 5, len(cells))
    sums = {"count": count, "w": count.astype(np.float64), "ws": np.where(count > 0, rng.random(1 << 16), 0.0)}
    state = _State(sums=sums, small={"a": 1, "b": np.arange(3)})
    blob = pickle.dumps(state, protocol=5)
    assert len(blob) < 300 * (8 + 1) + 2_000  # the occupied cells: one float sum each, counts in a byte
    for back in (pickle.loads(blob), _State.from_dict(json.loads(json.dumps(to_json(state.__getstate__()))))):
        assert back.sums.keys() == sums.keys()
        for name, value in sums.items():
            _same(value, back.sums[name])
        assert back.small["a"] == 1 and np.array_equal(back.small["b"], np.arange(3))
    assert from_json(to_json({"x": 1})) == {"x": 1}


def test_a_full_grid_travels_dense_and_row_indices_as_steps():
    rng = np.random.default_rng(2)
    state = _State(count=rng.integers(1, 5, 4096), value=rng.random(4096), rows=[(np.arange(10**6, 10**6 + 5000),)])
    packed = pack(vars(state))
    (_, support, encoded), = packed["calibcli.core.arraystate/1"]
    assert support is None  # every cell occupied: no support to send
    (rows,) = packed["rows"].items[0].items
    assert rows.encoding[0] == "rise" and rows.encoding[2].dtype == np.uint8  # 5,000 steps of 1, a byte each
    _round_trip(state)


def test_arrays_received_read_only_are_made_writable():
    # a Dask worker may hand over arrays that are views of the message's bytes
    frozen = np.arange(10.0)
    frozen.flags.writeable = False
    big = np.zeros(5000)
    big[7] = 1.0
    big.flags.writeable = False
    out = unpack(pack({"small": frozen, "big": big, "parts": [frozen]}))
    for name in ("small", "big"):
        out[name] += 1  # a merge adds in place
    assert out["small"][0] == 1 and out["big"][7] == 2 and out["parts"][0].flags.writeable


def test_deepcopy_copies_the_arrays_without_packing():
    state = _State(count=np.zeros(5000, dtype=np.int64), parts=[np.ones(3)])
    twin = copy.deepcopy(state)
    twin.count[0] = 5
    twin.parts[0][0] = 9
    assert state.count[0] == 0 and state.parts[0][0] == 1


def _rows(n: int, seed: int):
    rng = np.random.default_rng(seed)
    z = rng.beta(2, 5, n)
    return np.arange(n, dtype=np.int64), z, (rng.random(n) < z**1.3).astype(np.int64)


FAMILIES = {
    "ece": lambda: _binned(),
    "smece": lambda: _smooth(),
}


def _binned():
    from calibcli.ece_family import options as ece_options
    from calibcli.ece_family.accumulator import InputAccumulator

    return InputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=ece_options.Options.library(n_boot=30, seed=3))


def _smooth():
    from calibcli.smooth import options as smece_options
    from calibcli.smooth.inputs import SmoothInputAccumulator

    return SmoothInputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=smece_options.Options.library(n_boot=30, seed=3))


@pytest.mark.parametrize("n", [5_000, 300_000])
@pytest.mark.parametrize("family", FAMILIES)
def test_pickled_states_merge_as_the_states_themselves(family, n):
    # both sides of the row limit (rows kept; sums only): a merge of round-tripped states equals the merge of
    # the originals, bit for bit, and the result equals one pass over all rows to 1e-12
    rows, z, y = _rows(n, 4)
    half = n // 2
    parts = [FAMILIES[family]().update(rows[s], z[s], y[s]) for s in (slice(0, half), slice(half, n))]
    shipped = [pickle.loads(pickle.dumps(p, protocol=5)) for p in parts]
    merged = shipped[0].merge(shipped[1]).result().to_dict()
    direct = copy.deepcopy(parts[0]).merge(copy.deepcopy(parts[1])).result().to_dict()
    assert merged == direct
    if n < 2**17:  # every row kept: the merge equals one pass to 1e-12 (beyond, rounding of cancelling sums, whichever
        whole = FAMILIES[family]().update(rows, z, y).result().to_dict()  # way they are added: SPEC 8)
        _close(merged, whole)


def _close(a, b, where="$"):
    if isinstance(b, dict):
        assert list(a) == list(b), where
        for k in b:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15), where
    else:
        assert a == b, where


def test_state_sizes_follow_the_cells_not_the_rows():
    # 1e4 and 1e6 rows beyond the row limit: the smece state is bounded by its grid (occupied cells), and
    # sent packed it is smaller than its JSON-able to_dict()
    sizes = {}
    for n in (400_000, 1_000_000):
        rows, z, y = _rows(n, 5)
        acc = _smooth().update(rows, z, y)
        sizes[n] = len(pickle.dumps(acc, protocol=5))
        assert sizes[n] < len(pickle.dumps(acc.to_dict(), protocol=5))
    assert sizes[1_000_000] < 1.5 * sizes[400_000]  # 2.5x the rows, the grid's cells fill up


def test_to_dict_is_json_and_comes_back_bit_for_bit():
    # the derived JSON form: every array exact (its bytes), tuples and non-text keys kept, nested states rebuilt
    import json

    rng = np.random.default_rng(6)
    inner = _State(count=np.where(rng.random(3000) < 0.1, 3, 0), value=rng.random(3000))
    state = _State(inner=inner, key={(1, "a"): np.arange(3), ("b",): None}, pair=(np.float64(0.1), -0.0),
                   blob=b"\x00\x01", parts=[(np.arange(2000), rng.random(2000))], nan=float("nan"))
    doc = json.loads(json.dumps(state.to_dict()))
    back = _State.from_dict(doc)
    _same(back.inner.count, inner.count)
    _same(back.inner.value, inner.value)
    assert list(back.key) == [(1, "a"), ("b",)] and back.key[("b",)] is None
    _same(back.key[(1, "a")], np.arange(3))
    assert back.pair == (0.1, -0.0) and str(back.pair[1]) == "-0.0" and back.blob == b"\x00\x01"
    _same(back.parts, state.parts)
    assert back.nan != back.nan


@pytest.mark.parametrize("family", FAMILIES)
def test_an_accumulator_read_back_from_json_gives_the_same_result(family):
    import json

    rows, z, y = _rows(300_000, 7)
    acc = FAMILIES[family]().update(rows, z, y)
    doc = json.loads(json.dumps(acc.to_dict()))
    assert doc["kind"] == acc.kind and doc["version"] == acc.version
    back = type(acc).from_dict(doc)
    assert back.to_dict() == doc
    assert back.result().to_dict() == acc.result().to_dict()


def test_from_dict_rebuilds_only_calibcli_classes():
    doc = _State(v=_State(x=1)).to_dict()
    assert _State.from_dict(doc).v.x == 1
    doc["v"]["$state"][0] = "os.system"  # a state naming anything else is refused, not imported or called
    with pytest.raises(ValueError, match="not one of calibcli's states"):
        _State.from_dict(doc)
    with pytest.raises(ValueError, match="not one of calibcli's states or options"):
        _State.from_dict({"v": {"$dataclass": ["subprocess.Popen", {"args": "true"}]}})
