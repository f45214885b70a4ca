"""T-Cal's y-bootstrap sweep as one compiled loop (calibcli.tcal.kernels) gives the statistics of NumPy's passes,
its reference, within the tolerance rule (1e-12 relative, SPEC 8.1: the loop sums in its own plain order), and a
small test does not load Numba."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _tolerance import assert_within_rule

from calibcli.tcal import scalar as scalar_module
from calibcli.tcal.scalar import SortedScalarEngine, sweep

ROOT = Path(__file__).resolve().parents[2]


def _levels(n: int) -> list[int]:
    top = int(np.ceil(2 * np.log2(n / np.sqrt(np.log(n)))))
    return [2**b for b in range(1, top + 1)]


def _both(engines, chunks):
    out = {}
    for compiled in (True, False):
        for e in engines:
            e.compiled = compiled
        out[compiled] = sweep(engines, [(np.random.default_rng(s), rows) for s, rows in chunks])
    return out[True], out[False]


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize("kind", ["continuous", "ties", "edges"])
def test_the_compiled_sweep_equals_numpys_within_the_rule(weighted, kind):
    rng = np.random.default_rng(11)
    n = 100_003  # four blocks of 2^15 points: carries and the prefix sums kept across blocks
    z = rng.beta(2, 5, n)
    if kind == "ties":
        z = np.round(z * 40) / 40  # discrete predictions: many equal values, bins that never split
    elif kind == "edges":
        z[: n // 10] = 0.0
        z[n // 10 : n // 5] = 1.0  # points on the bin edges and at the ends of [0, 1]
    y = (rng.random(n) < z**1.2).astype(np.int64)
    w = rng.random(n) * 2 + 0.1 if weighted else None
    engine = SortedScalarEngine(z, y, w, _levels(n))
    got, expected = _both([engine], [(1, 3), (2, 2), (3, 1)])
    assert got[0].shape == (6, engine.n_parts)
    assert_within_rule(got[0], expected[0])
    # the observed statistic (NumPy's passes) and a resample at the true labels agree with it
    assert np.isfinite(engine.observed()).all()


def test_shared_draws_give_each_engine_its_numpy_statistics():
    rng = np.random.default_rng(12)
    n = 70_000
    z = rng.random(n)
    y = (rng.random(n) < z).astype(np.int64)
    engines = [SortedScalarEngine(z, y, None, _levels(n)), SortedScalarEngine(np.sqrt(z), y, None, _levels(n))]
    got, expected = _both(engines, [(5, 2), (6, 2)])
    for a, b in zip(got, expected, strict=True):
        assert_within_rule(a, b)


def test_a_small_tcal_does_not_load_numba(tmp_path):
    out = tmp_path / "modules.json"
    probe = (
        "import json, sys\n"
        "target = sys.argv[1]\n"
        "sys.argv = ['calibcli', 'tcal', sys.argv[2], '--json']\n"
        "from calibcli.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "json.dump(sorted(sys.modules), open(target, 'w'))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe, str(out), str(ROOT / "sample_data" / "breast_cancer_nb.csv")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["command"] == "tcal"
    assert not [m for m in json.loads(out.read_text()) if m == "numba" or m.startswith("numba.")]


@pytest.mark.parametrize("kind", ["continuous", "ties", "single level"])
def test_the_compiled_pass_finds_numpys_nested_bins(kind):
    # the stack pass (calibcli.tcal.kernels.nested_bins) finds the same distinct bins, with the same partitions, as
    # NumPy's pass per partition, in increasing order of their ends; and the stream layout's stack slots are never
    # reused while a bin starting in them is open
    rng = np.random.default_rng(13)
    n = 20_000
    z = rng.beta(2, 5, n)
    if kind == "ties":
        z = np.round(z * 40) / 40
    engine = SortedScalarEngine(z, np.zeros(n), None, [13] if kind == "single level" else _levels(n))
    P = engine.n_parts
    numpy_bins = scalar_module._nested_bins(engine._gap_part, P, n)
    compiled_bins = scalar_module.compiled_nested_bins(engine._gap_part, P, n)
    assert sorted(zip(*(a.tolist() for a in numpy_bins))) == sorted(zip(*(a.tolist() for a in compiled_bins)))
    assert np.all(np.diff(compiled_bins[1]) >= 0)
    start, end = compiled_bins[0], compiled_bins[1]
    layout = scalar_module.stream_layout(start, end, n)
    slot = layout.slot[np.argsort(layout.by_end)]  # each bin's slot, in the bins' order
    assert np.array_equal(slot, layout.push_slot[start])
    held: dict[int, tuple[int, int]] = {}  # slot -> (start, the end of the largest bin from it)
    for s, e, k in sorted(zip(start.tolist(), end.tolist(), slot.tolist())):
        if k in held and held[k][0] != s:
            assert held[k][1] <= s  # the slot's previous start is done with before this one is kept there
        held[k] = (s, max(e, held[k][1]) if k in held and held[k][0] == s else e)
