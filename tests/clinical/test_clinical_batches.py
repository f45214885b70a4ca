"""The clinical statistics (Cox calibration, ICI, E50, E90, Emax and what they were made of) agree within the
tolerance rule (SPEC 8.1) whatever the batch size, the split into merged states and the order of the rows: the
cells' sums are exact, so a maximum read where the kernel regression's density is thin (Emax) or a p-value far
in the tail (Cox's intercept) does not amplify a last-bit difference of a sum (they moved by 4e-12 relative)."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.clinical.accumulator import ClinicalAccumulator
from calibcli.clinical.ici import UniformCells

from _tolerance import assert_within_rule


def _feed(acc, p, y, w, batch):
    for start in range(0, len(p), batch):
        sl = slice(start, start + batch)
        acc.update(np.arange(start, min(start + batch, len(p))), p[sl], y[sl], None if w is None else w[sl])
    return acc


def _numbers(result) -> dict:
    """Every number of a clinical result: the metrics' estimates and intervals, the details' floats."""
    metrics, details = result
    out = {f"{name}.{k}": getattr(m, k) for name, m in metrics.items() for k in ("estimate", "ci_low", "ci_high")}

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        elif isinstance(value, float | int) and not isinstance(value, bool):
            out[prefix] = value

    walk("details", details)
    return out


def _assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key in want:
        assert_within_rule(np.asarray(got[key], dtype=float), np.asarray(want[key], dtype=float), key)


def _rows(n, weighted, seed=37):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 5, n)  # continuous: every score distinct
    y = (rng.random(n) < p**1.1).astype(np.int64)
    w = rng.integers(1, 4, n).astype(np.float64) if weighted else None
    return p, y, w, rng


@pytest.mark.parametrize("weighted", [False, True])
def test_beyond_the_kept_rows_batch_size_split_and_order_do_not_move_the_clinical_numbers(weighted):
    p, y, w, rng = _rows(300_000, weighted)
    whole = _numbers(_feed(ClinicalAccumulator(), p, y, w, len(p)).result())
    assert {"emax.estimate", "details.cox.intercept.p_value"} <= whole.keys()
    _assert_same(_numbers(_feed(ClinicalAccumulator(), p, y, w, 1000).result()), whole)
    a = _feed(ClinicalAccumulator(), p[:100_000], y[:100_000], None if w is None else w[:100_000], 30_000)
    b = _feed(ClinicalAccumulator(), p[100_000:], y[100_000:], None if w is None else w[100_000:], 7_000)
    _assert_same(_numbers(ClinicalAccumulator.from_dict(b.to_dict()).merge(a).result()), whole)
    perm = rng.permutation(len(p))
    shuffled = _feed(ClinicalAccumulator(), p[perm], y[perm], None if w is None else w[perm], 7_000)
    _assert_same(_numbers(shuffled.result()), whole)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_kept_rows_cells_do_not_depend_on_the_order_of_the_rows(weighted):
    # up to the kept rows the ICI's cells are summed from the rows themselves (UniformCells.of_rows)
    p, y, w, rng = _rows(100_000, weighted, seed=5)
    perm = rng.permutation(len(p))
    cells = [UniformCells.of_rows([(p, y, w)]), UniformCells.of_rows([(p[perm], y[perm], None if w is None else w[perm])])]
    for name in ("key", "count", "mass", "mean_z"):
        np.testing.assert_array_equal(getattr(cells[0], name), getattr(cells[1], name), err_msg=name)
    accs = [_feed(ClinicalAccumulator(), p, y, w, len(p)) for _ in range(2)]
    results = [
        _numbers(acc.result(rows=(np.arange(len(p)), p[o], y[o], None if w is None else w[o])))
        for acc, o in zip(accs, (np.arange(len(p)), perm), strict=True)
    ]
    _assert_same(results[1], results[0])
