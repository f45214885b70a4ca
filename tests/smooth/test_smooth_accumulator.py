"""SmoothAccumulator (SPEC 3 and 8): exact merging, JSON round trips, the library as its one-batch
case, the per-row Poisson bootstrap against explicit resampling, the sufficient-statistics bootstrap
against the per-row one, and the second pass on a finer grid."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibcli.smooth.accumulator import SmoothAccumulator
from calibcli.core.errors import CalibcliError
from calibcli.core.resampling import Multiplicities
from calibcli.smooth.grid import CI_METHOD_CELLS, CI_METHOD_ROWS, MIN_CELLS_PER_SIGMA, ROW_LIMIT, STATS_GRID, CellSums
from calibcli.smooth.estimator import smece_at_sigma, smooth_curve, smooth_ece

REL = 1e-12  # SPEC 8: any split equals the one-pass result to 1e-12 relative


def _data(n: int, seed: int = 0, weighted: bool = False):
    rng = np.random.default_rng(seed)
    z = rng.beta(2, 5, n)
    z[: n // 50] = np.round(z[: n // 50], 2)  # repeated values too
    z[:3] = (0.0, 1.0, 0.5)
    y = (rng.random(n) < np.clip(z + 0.05 * np.sin(12 * z), 0.0, 1.0)).astype(np.int64)
    w = rng.exponential(1.0, n) if weighted else None
    return z, y, w


def _feed(acc: SmoothAccumulator, rows: np.ndarray, z, y, w, batch: int) -> SmoothAccumulator:
    for start in range(0, len(rows), batch):
        b = rows[start:start + batch]
        acc.update(b, z[b], y[b], None if w is None else w[b])
    return acc


def _numbers(result) -> np.ndarray:
    return np.array([result.smece, result.sigma, result.ci_low, result.ci_high])


def _assert_same(a, b, rel=REL):
    np.testing.assert_allclose(_numbers(a), _numbers(b), rtol=rel, atol=0)
    assert (a.ci_method, a.needs_finer_grid, a.grid_size, a.n, a.n_boot) == (
        b.ci_method, b.needs_finer_grid, b.grid_size, b.n, b.n_boot)


# The per-row path (all rows kept) and the sufficient-statistics path (a small row limit).
PATHS = [
    pytest.param(ROW_LIMIT, 30_000, 12, CI_METHOD_ROWS, id="rows"),
    pytest.param(500, 100_000, 40, CI_METHOD_CELLS, id="cells"),
]


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize("row_limit, n, n_boot, method", PATHS)
def test_batch_sizes_do_not_change_the_result(row_limit, n, n_boot, method, weighted):
    z, y, w = _data(n, seed=1, weighted=weighted)
    rows = np.arange(n)
    results = [
        _feed(SmoothAccumulator(row_limit=row_limit, seed=3), rows, z, y, w, batch).result(n_boot=n_boot)
        for batch in (1000, 65536, n)
    ]
    assert results[0].ci_method == method.format(n_boot=n_boot)
    assert results[0].ci_low < results[0].smece < results[0].ci_high
    for other in results[1:]:
        _assert_same(results[0], other)


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize("row_limit, n, n_boot, method", PATHS)
def test_shuffled_parts_merged_in_any_order_give_the_same_result(row_limit, n, n_boot, method, weighted):
    z, y, w = _data(n, seed=2, weighted=weighted)
    rng = np.random.default_rng(9)
    part_of = rng.integers(0, 3, n)
    order = rng.permutation(n)  # each part sees its rows in a shuffled order, in batches

    def part(k: int) -> SmoothAccumulator:
        return _feed(SmoothAccumulator(row_limit=row_limit, seed=3), order[part_of[order] == k], z, y, w, 7000)

    one_pass = _feed(SmoothAccumulator(row_limit=row_limit, seed=3), np.arange(n), z, y, w, n).result(n_boot=n_boot)
    for a, b, c in ((0, 1, 2), (2, 1, 0), (1, 2, 0)):
        merged = part(a).merge(part(b).merge(part(c)))
        _assert_same(merged.result(n_boot=n_boot), one_pass)
    assert one_pass.ci_method == method.format(n_boot=n_boot)


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize("row_limit, n, n_boot, method", PATHS)
def test_json_round_trip_gives_identical_results(row_limit, n, n_boot, method, weighted):
    z, y, w = _data(n, seed=3, weighted=weighted)
    acc = _feed(SmoothAccumulator(row_limit=row_limit, seed=5, want_curve=True), np.arange(n), z, y, w, 20_000)
    doc = acc.to_dict()
    assert doc["kind"] == "smooth" and doc["version"] == 1
    back = SmoothAccumulator.from_dict(json.loads(json.dumps(doc)))
    assert back.to_dict() == doc
    # the sums come back as they were: integer keys and counts, and no redundant sums for unit weights
    assert back.sums.key.dtype == acc.sums.key.dtype == np.int64 and np.array_equal(back.sums.count, acc.sums.count)
    assert back.sums.count.dtype.kind == "i"
    assert (back.sums.w is None) == (acc.sums.w is None) == (not weighted)
    a, b = acc.result(n_boot=n_boot), back.result(n_boot=n_boot)
    assert _numbers(a).tolist() == _numbers(b).tolist()
    assert np.array_equal(a.replicates, b.replicates, equal_nan=True)
    assert np.array_equal(a.curve.yhat, b.curve.yhat, equal_nan=True)
    assert np.array_equal(a.curve.band_low, b.curve.band_low, equal_nan=True)
    # A state read back still merges with others.
    other = SmoothAccumulator(row_limit=row_limit, seed=5).update(np.array([n]), np.array([0.25]), np.array([1]),
                                                                  None if w is None else np.array([2.0]))
    assert back.merge(other).n_rows == n + 1


@pytest.mark.parametrize("n", [3000, ROW_LIMIT + 20_000], ids=["rows", "cells"])
def test_library_functions_are_the_one_batch_accumulator(n):
    z, y, w = _data(n, seed=4, weighted=True)
    acc = SmoothAccumulator(seed=11).update(np.arange(n), z, y, w)
    library = smooth_ece(y, z, sample_weight=w, n_boot=15, rng=np.random.default_rng(11))
    assert _numbers(library).tolist() == _numbers(acc.result(n_boot=15)).tolist()
    assert smooth_ece(y, z, sample_weight=w, n_boot=15, rng=11).ci_low == library.ci_low
    assert smece_at_sigma(y, z, sigma=0.02, sample_weight=w) == acc.result(sigma=0.02).smece
    curve = smooth_curve(y, z, sample_weight=w, n_points=41, n_boot=10, rng=np.random.default_rng(11))
    expected = acc.result(n_boot=10, curve_points=41).curve
    assert np.array_equal(curve.yhat, expected.yhat, equal_nan=True)
    assert np.array_equal(curve.band_high, expected.band_high, equal_nan=True)
    assert (curve.ci_low, curve.ci_high, curve.ci_method) == (expected.ci_low, expected.ci_high, expected.ci_method)


def test_per_row_bootstrap_is_explicit_poisson_resampling():
    # Replicate r weighs row i by m_ir from Multiplicities(seed, i): the same as evaluating the rows
    # repeated m_ir times (up to the replicates' coarser grid, ~1e-4 relative).
    n, seed, sigma = 4000, 21, 0.03
    z, y, _ = _data(n, seed=6)
    result = SmoothAccumulator(seed=seed).update(np.arange(n), z, y).result(sigma=sigma, n_boot=6)
    fixed_point = SmoothAccumulator(seed=seed).update(np.arange(n), z, y).result(n_boot=6)
    multiplicities = Multiplicities(seed, np.arange(n))
    for r in range(6):
        m = multiplicities.replicate(r).astype(int)
        zr, yr = np.repeat(z, m), np.repeat(y, m)
        assert result.replicates[r] == pytest.approx(smece_at_sigma(yr, zr, sigma=sigma), rel=3e-4)
        assert fixed_point.replicates[r] == pytest.approx(smooth_ece(yr, zr).smece, rel=3e-4)
    # Multiplicities depend on the global row index only: rows 0..n-1 fed as the tail of a larger
    # index range resample differently, and the interval with them.
    shifted = SmoothAccumulator(seed=seed).update(np.arange(n) + 10**9, z, y).result(sigma=sigma, n_boot=6)
    assert shifted.smece == result.smece and not np.array_equal(shifted.replicates, result.replicates)


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
def test_sufficient_statistics_interval_matches_the_per_row_interval(weighted):
    # Same 2e5 rows, both bootstraps with 250 replicates. Monte Carlo error of each replicate standard
    # deviation ~4.5% (1 / sqrt(2 R)), of a 95% percentile interval's width ~7%; measured over
    # seeds 100..102 with 400 replicates, the ratios were 0.92..1.05 (widths) and 0.94..1.02 (sds).
    n, n_boot = 200_000, 250
    z, y, w = _data(n, seed=100, weighted=weighted)
    per_row = SmoothAccumulator(row_limit=n, seed=1).update(np.arange(n), z, y, w).result(n_boot=n_boot)
    cells = SmoothAccumulator(row_limit=1000, seed=1).update(np.arange(n), z, y, w).result(n_boot=n_boot)
    assert per_row.ci_method.startswith("Poisson bootstrap over rows")
    assert cells.ci_method.startswith("Poisson bootstrap from per-cell sufficient statistics")
    assert per_row.smece == pytest.approx(cells.smece, rel=1e-12)
    width_ratio = (cells.ci_high - cells.ci_low) / (per_row.ci_high - per_row.ci_low)
    sd_ratio = np.std(cells.replicates) / np.std(per_row.replicates)
    assert abs(width_ratio - 1) < 0.1 and abs(sd_ratio - 1) < 0.1, (width_ratio, sd_ratio)
    assert abs(np.mean(cells.replicates) - np.mean(per_row.replicates)) < 0.2 * np.std(per_row.replicates)


def test_a_fixed_point_below_the_grid_asks_for_a_second_pass(monkeypatch):
    # Residuals of +-0.5 in the pattern + - - + every 1.28e-5 in z: they cancel once the kernel is
    # wider than that, so s* = 3.2e-4, below 8 cells of a 2^12-cell first-pass grid. (The same pattern
    # every 5e-7 over a 25.6 times narrower range has s* = 3.9e-5, below 8 cells of the default
    # 2^17-cell grid, which serves sigma >= 2^-14; the 2^20-cell grid it then needs costs seconds.)
    n, period, width = 3200, 1.28e-5, 5.12e-4
    z = 0.5 - width / 2 + (np.arange(n) + 0.5) * width / n
    y = np.isin(np.floor((z - 0.5 + width / 2) / period).astype(int) % 4, (0, 3)).astype(np.int64)
    first = SmoothAccumulator(row_limit=100, seed=2, n_cells=2**12).update(np.arange(n), z, y)
    r1 = first.result(n_boot=5)
    assert r1.needs_finer_grid and r1.sigma * 2**12 < MIN_CELLS_PER_SIGMA and r1.finer_grid > 2**12
    assert r1.ci_method.startswith("Poisson bootstrap from per-cell")
    second = first.for_grid(r1.finer_grid).update(np.arange(n), z, y)
    r2 = second.result(n_boot=5)
    assert not r2.needs_finer_grid and r2.sigma * second.n_cells >= MIN_CELLS_PER_SIGMA
    # With the rows kept no second pass is needed (grids up to 2^22 come from the rows).
    kept = SmoothAccumulator(seed=2, n_cells=2**12).update(np.arange(n), z, y).result()
    assert not kept.needs_finer_grid and 2e-4 < kept.sigma < 5e-4
    assert r2.smece == pytest.approx(kept.smece, abs=1e-8)
    assert abs(r1.smece - kept.smece) > 10 * abs(r2.smece - kept.smece)
    # The library makes both passes itself when the rows are more than it keeps.
    monkeypatch.setattr("calibcli.smooth.estimator.STATS_GRID", 2**12)
    monkeypatch.setattr("calibcli.smooth.estimator.ROW_LIMIT", 100)
    library = smooth_ece(y, z, n_boot=5, rng=2)
    assert (library.smece, library.ci_low, library.ci_high) == (r2.smece, r2.ci_low, r2.ci_high)


def test_a_given_sigma_below_the_grid_asks_for_a_second_pass_too():
    z, y, _ = _data(2000, seed=12)
    acc = SmoothAccumulator(row_limit=100).update(np.arange(2000), z, y)
    assert not acc.result(sigma=2.0**-14).needs_finer_grid
    small = acc.result(sigma=2.0**-15)
    assert small.needs_finer_grid and small.finer_grid > STATS_GRID


def test_state_size_does_not_grow_with_n():
    sizes = []
    for n in (300_000, 900_000):
        z, y, _ = _data(n, seed=13)
        acc = SmoothAccumulator().update(np.arange(n), z, y)
        assert not acc.rows_kept and acc.rows.dropped and acc.rows._held == 0  # no rows held
        sizes.append(acc.nbytes)
    assert sizes[1] <= 2 * STATS_GRID * 40 and sizes[1] < 1.5 * sizes[0]


def test_cell_sums_coarsen_exactly():
    z, y, w = _data(5000, seed=14, weighted=True)
    fine = CellSums.of_rows(z, y, w, 2**16)
    coarse = CellSums.of_rows(z, y, w, 2**12)
    via = fine.coarsen(2**12)
    assert np.array_equal(via.key, coarse.key) and np.array_equal(via.count, coarse.count)
    for name in ("w", "wf", "wf2", "wf3", "ww"):
        np.testing.assert_allclose(getattr(via, name), getattr(coarse, name), rtol=1e-12, atol=1e-12)


def test_bad_input_and_incompatible_states_are_rejected():
    acc = SmoothAccumulator()
    with pytest.raises(CalibcliError, match="outside"):
        acc.update(np.arange(2), np.array([0.2, 1.5]), np.array([0, 1]))
    with pytest.raises(CalibcliError, match="label"):
        acc.update(np.arange(2), np.array([0.2, 0.5]), np.array([0, 2]))
    with pytest.raises(CalibcliError, match="weight"):
        acc.update(np.arange(2), np.array([0.2, 0.5]), np.array([0, 1]), np.array([1.0, -1.0]))
    with pytest.raises(CalibcliError, match="no rows"):
        acc.result()
    assert acc.update(np.arange(0), np.empty(0), np.empty(0, dtype=int)).n_rows == 0
    with pytest.raises(ValueError, match="cannot be merged"):
        acc.merge(SmoothAccumulator(n_cells=2**16))
    with pytest.raises(ValueError, match="power of two"):
        SmoothAccumulator(n_cells=3000)
    with pytest.raises(ValueError, match="not a smooth accumulator"):
        SmoothAccumulator.from_dict({"kind": "binned", "version": 1})
