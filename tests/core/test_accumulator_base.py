"""The accumulator base (calibcli.core.accumulator): declared states merged by their rules, one state check."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibcli.core.accumulator import Accumulator
from calibcli.recalibrate.evaluate import SplitCounter
from calibcli.ece_family import options as ece_options
from calibcli.ece_family.accumulator import InputAccumulator


class _Part(Accumulator):
    kind = "part"
    merge_rules = {"total": "sum"}

    def __init__(self, total=0):
        self.total = total


class _Toy(Accumulator):
    kind = "toy"
    state_name = "toy state"
    merge_rules = {"n": "sum", "counts": "sum", "flag": "max", "binary": "first", "parts": "concat",
                   "child": "merge", "children": "merge", "missing": "merge"}
    same, same_message = ("option",), "toys with different options cannot be merged"

    def __init__(self, n, counts, flag, binary, parts, child, children, option="a"):
        self.n, self.counts, self.flag, self.binary, self.parts = n, np.asarray(counts), flag, binary, list(parts)
        self.child, self.children, self.missing, self.option = child, children, None, option
        self.merged = 0

    def _after_merge(self) -> None:
        self.merged += 1


def test_each_rule_merges_as_declared():
    a = _Toy(2, [1, 2], False, None, ["x"], _Part(1), [_Part(1), _Part(2)])
    counts = a.counts
    b = _Toy(3, [10, 20], True, True, ["y"], _Part(5), [_Part(10), _Part(20)])
    assert a.merge(b) is a
    assert a.n == 5 and a.counts.tolist() == [11, 22] and a.counts is counts  # arrays added in place
    assert a.flag is True and a.binary is True and a.parts == ["x", "y"]
    assert a.child.total == 6 and [c.total for c in a.children] == [11, 22] and a.missing is None
    assert a.merged == 1
    c = _Toy(1, [0, 0], False, False, [], _Part(0), [_Part(0), _Part(0)])
    assert c.merge(a).binary is False  # the first side's fact stands


def test_options_must_agree():
    a = _Toy(0, [0], False, None, [], _Part(), [], option="a")
    b = _Toy(0, [0], False, None, [], _Part(), [], option="b")
    with pytest.raises(ValueError, match="toys with different options cannot be merged"):
        a.merge(b)


def test_state_check_names_what_it_found():
    assert _Toy(0, [0], False, None, [], _Part(), []).state_head() == {"kind": "toy", "version": 1}
    with pytest.raises(ValueError, match=r"not a toy state of version 1: 'other' 3"):
        _Toy.check_state({"kind": "other", "version": 3})
    with pytest.raises(ValueError, match="not a holdout split counter of version 1"):
        SplitCounter.from_dict({**SplitCounter(seed=1).to_dict(), "version": 2})


def test_declared_merges_equal_one_pass_over_all_rows():
    rng = np.random.default_rng(3)
    z = rng.random(400)
    y = (rng.random(400) < z).astype(np.int64)
    rows = np.arange(400)
    options = ece_options.Options.library(n_bins=10, n_boot=20, seed=4)

    def new():
        return InputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=options)

    whole = new().update(rows, z, y)
    parts = [new().update(rows[s], z[s], y[s]) for s in (slice(0, 150), slice(150, 400))]
    shipped = [InputAccumulator.from_dict(json.loads(json.dumps(p.to_dict()))) for p in parts]
    merged = shipped[0].merge(shipped[1])
    a, b = merged.result().to_dict(), whole.result().to_dict()
    assert json.dumps(a, sort_keys=True, default=str).count(":") == json.dumps(b, sort_keys=True, default=str).count(":")
    flat_a, flat_b = _numbers(a), _numbers(b)
    assert flat_a.keys() == flat_b.keys()
    for key in flat_a:  # merges are exact up to float rounding (SPEC 8: 1e-12)
        assert flat_a[key] == pytest.approx(flat_b[key], rel=1e-12, abs=1e-12), key


def _numbers(d, prefix=""):
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_numbers(v, f"{prefix}/{k}"))
    elif isinstance(d, (list, tuple)):
        for i, v in enumerate(d):
            out.update(_numbers(v, f"{prefix}[{i}]"))
    elif isinstance(d, (int, float)) and not isinstance(d, bool) and d is not None:
        out[prefix] = float(d)
    return out
