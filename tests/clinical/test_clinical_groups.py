"""Cox calibration and the ICI of many groups at once (issue "every group at once"): each group's numbers are
those of its rows alone, bit for bit, and the solvers run a fixed number of times whatever the number of groups."""

from __future__ import annotations

import numpy as np
import pytest

import calibcli.clinical.cox as cox
import calibcli.clinical.ici as ici_module
import calibcli.smooth.bootstrap as sb
from calibcli.clinical.accumulator import ClinicalAccumulator
from calibcli.clinical.classical_tests import GridSums, ici_from_grid
from calibcli.clinical.cox import cox_from_rows
from calibcli.clinical.cox import cox_groups
from calibcli.core.errors import CalibcliError
from calibcli.clinical.ici import UniformCells, _interp_rows, ici_groups, weighted_quantile, weighted_quantiles
from calibcli.smooth.estimator import finish
from calibcli.smooth.grid import CellSums, segment_sums


def _problem(rng, n, power=1.1, weighted=False, round_to=None):
    z = rng.beta(2.0, 5.0, n)
    if round_to is not None:
        z = np.round(z, round_to)
    y = (rng.random(n) < z**power).astype(np.int64)
    w = rng.random(n) * 2.0 if weighted else None
    return z, y, w


def test_segment_sums_are_each_segments_own_sum_bit_for_bit():
    rng = np.random.default_rng(0)
    lengths = np.concatenate([np.arange(1, 40), [127, 128, 129, 1000, 5000, 8192, 8193, 40000]])
    x = (rng.random(lengths.sum()) - 0.3) * rng.choice([1e-3, 1.0, 1e3], lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    got = segment_sums(x, starts)
    assert [float(v) for v in got] == [float(x[s : s + n].sum()) for s, n in zip(starts, lengths, strict=True)]


@pytest.mark.parametrize("m", [64, 4096, 100])
def test_interp_rows_is_numpy_interp_bit_for_bit(m):
    rng = np.random.default_rng(1)
    fp = rng.normal(size=(5, m + 1))
    nodes = np.linspace(0.0, 1.0, m + 1)
    x = np.concatenate([rng.random(300), nodes, [0.0, 1.0, np.nextafter(1.0, 0.0)]])
    row = rng.integers(0, 5, len(x))
    got = _interp_rows(x, m, fp, row)
    want = np.array([np.interp(x[i], nodes, fp[row[i]]) for i in range(len(x))])
    np.testing.assert_array_equal(got, want)


def test_weighted_quantiles_of_groups_are_each_groups_own():
    rng = np.random.default_rng(2)
    sizes = np.array([1, 2, 7, 300, 40, 1])
    values = rng.random(sizes.sum())
    values[10:20] = 0.5  # ties keep their order (a stable sort)
    weights = rng.random(sizes.sum()) * 3
    first = np.concatenate([[0], np.cumsum(sizes)])
    qs = (0.0, 0.1, 0.5, 0.9, 1.0)
    for q, got in zip(qs, weighted_quantiles(values, weights, sizes, qs), strict=True):
        for g in range(len(sizes)):
            v, w = values[first[g] : first[g + 1]], weights[first[g] : first[g + 1]]
            order = np.argsort(v, kind="stable")  # the one-group definition, written out
            c = np.cumsum(w[order])
            h = (c[-1] - 1.0) * q if c[-1] >= 1.0 else 0.0
            lo = min(int(np.searchsorted(c, np.floor(h), side="right")), len(v) - 1)
            hi = min(int(np.searchsorted(c, np.floor(h) + 1, side="right")), len(v) - 1)
            want = v[order][lo] + (h - np.floor(h)) * (v[order][hi] - v[order][lo])
            assert got[g] == want == weighted_quantile(v, w, q)


def test_stacked_deposits_and_totals_are_each_problems_own():
    rng = np.random.default_rng(3)
    parts = [CellSums.of_rows(*_problem(rng, n, weighted=k % 2 == 1), 1024) for k, n in enumerate((50, 400, 3000))]
    stacked = CellSums(
        1024,
        np.concatenate([p.key + g * 2048 for g, p in enumerate(parts)]),
        np.concatenate([p.count for p in parts]),
        np.concatenate([p.field("w") for p in parts]),
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("wf", "wf2", "wf3")),
        None,
    )
    starts = np.concatenate([[0], np.cumsum([len(p) for p in parts])[:-1]])
    totals = stacked.stacked_totals(starts)
    for m in (1024, 256):
        linear, correction = stacked.coarsen(m).deposits(3, True, problems=3)
        for g, p in enumerate(parts):
            alone_linear, alone_correction = p.coarsen(m).deposits(3, True)
            for a, b in zip(linear, alone_linear, strict=True):
                np.testing.assert_array_equal(a[g], b)
            for a, b in zip(correction, alone_correction, strict=True):
                np.testing.assert_array_equal(a[g], b)
    for g, p in enumerate(parts):
        assert tuple(float(t[g]) for t in totals) == p.totals()


@pytest.mark.parametrize("weighted", [False, True])
def test_the_ici_fixed_point_is_the_smooth_solvers(weighted):
    """Every group's s*, grid and resolution flag are those smooth.finish solves for its cells alone (including
    s* that need finer grids, and the exact cases: one-signed residuals, residuals that cancel)."""
    rng = np.random.default_rng(4)
    grids = []
    for k, n in enumerate((40, 300, 2000, 20000, 200000)):
        z, y, w = _problem(rng, n, power=1.0 if k >= 3 else 1.3, weighted=weighted)
        grids.append(GridSums().add_rows(z, y, w))
    grids.append(GridSums().add_rows(np.full(50, 0.3), np.ones(50, dtype=np.int64), None))  # one sign
    grids.append(GridSums().add_rows(np.full(4, 0.5), np.array([0, 1, 0, 1]), None))  # residuals cancel
    together = ici_groups(UniformCells.of_grids(grids))
    assert len({r.curve_cells for r in together}) > 1  # (some groups refined their grid)
    for grid, r in zip(grids, together, strict=True):
        key, count, weight, mass, mean_z = grid.uniform_cells()
        f = np.clip(mean_z * grid.n_cells - key % grid.n_cells, 0.0, 1.0)
        wf = mass * f
        alone = finish(CellSums(grid.n_cells, key, count, weight, wf, wf * f, wf * f * f, None), None, n=grid.n)
        assert (r.sigma, r.curve_cells, r.under_resolved) == (alone.sigma, alone.grid_size, alone.needs_finer_grid)
        assert r == ici_from_grid(grid)


def test_cox_and_ici_of_groups_are_each_groups_alone_bit_for_bit():
    rng = np.random.default_rng(5)
    problems = [
        _problem(rng, n, weighted=k % 3 == 0, round_to=2 if k == 4 else None)
        for k, n in enumerate((30, 200, 1000, 5000, 800, 60))
    ]
    accs = [ClinicalAccumulator().update(None, z, y, w) for z, y, w in problems]
    rows = [(None, z, y, w) for z, y, w in problems]
    together = ClinicalAccumulator.results(accs, alpha=0.1, rows=rows)
    cells = ClinicalAccumulator.results(accs, alpha=0.1, rows=[None] * len(accs))
    for acc, r, kept, c in zip(accs, rows, together, cells, strict=True):
        assert kept == acc.result(alpha=0.1, rows=r)
        assert c == acc.result(alpha=0.1)
    for (z, y, w), (metrics, _) in zip(problems, together, strict=True):
        alone = cox_from_rows(y, z, np.ones(len(z)) if w is None else w, alpha=0.1)
        assert metrics["cox_slope"].estimate == alone.slope.estimate
        assert metrics["calibration_in_the_large"].ci_high == alone.calibration_in_the_large.ci_high
        assert metrics["ici"].estimate == ici_from_grid(GridSums().add_rows(z, y, w)).ici


def test_groups_that_cannot_be_fitted_get_their_own_error_and_leave_the_others():
    rng = np.random.default_rng(6)
    good = _problem(rng, 500)
    cases = {
        "one label": (np.array([0.2, 0.5, 0.9]), np.array([1, 1, 1]), np.ones(3)),
        "one prediction": (np.full(4, 0.3), np.array([0, 1, 0, 1]), np.ones(4)),
        "separated": (np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1]), np.ones(4)),
        "no weight": (np.array([0.1, 0.8]), np.array([0, 1]), np.zeros(2)),
    }
    problems = [(good[1], good[0], np.ones(500), None)]
    problems += [(y, z, w, None) for z, y, w in cases.values()]
    problems.append((good[1], good[0], np.ones(500), None))
    out = cox_groups(problems)
    assert out[0] == out[-1] == cox_from_rows(good[1], good[0], np.ones(500))
    for (name, (z, y, w)), got in zip(cases.items(), out[1:-1], strict=True):
        assert isinstance(got, CalibcliError), name
        with pytest.raises(CalibcliError) as alone:
            cox_from_rows(y, z, w)
        assert str(got) == str(alone.value)
    assert "every label is 1" in str(out[1]) and "every prediction is 0.3" in str(out[2])
    assert "separated" in str(out[3]) and "positive weight" in str(out[4])
    empty = ici_groups(UniformCells.of_rows([(good[0], good[1], None), (np.array([0.5]), np.array([1]), np.zeros(1))]))
    assert isinstance(empty[1], CalibcliError)
    assert empty[0] == ici_from_grid(GridSums().add_rows(good[0], good[1], None))


def _grouped_file(tmp_path, n_groups: int, rows: int = 6000, seed: int = 5):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    z = rng.beta(2.0, 5.0, rows)
    y = (rng.random(rows) < z**1.1).astype(np.int64)
    g = rng.integers(0, n_groups, rows)
    path = tmp_path / f"groups_{n_groups}.parquet"
    pq.write_table(pa.table({"prob": z, "label": y, "g": g}), path)
    return path, y, z, g


def test_cox_and_ici_solver_calls_do_not_grow_with_the_number_of_groups(monkeypatch, tmp_path):
    """The per-group fits are gone: 3 or 60 groups make the same Newton and fixed-point calls (each one stack of
    groups), about as many bandwidth evaluations (the lockstep search runs until its slowest group is done), and
    each group's Cox and ICI are those of its rows alone."""
    from tests._cli import run_json

    calls = {"newton": 0, "fixed_point": 0, "bandwidths": 0}

    def counted(module, name, key):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    counted(cox, "_newton_groups", "newton")
    counted(ici_module, "_fixed_points", "fixed_point")
    counted(sb, "smece_rows", "bandwidths")
    counts = []
    for n_groups in (3, 60):
        path, y, z, g = _grouped_file(tmp_path, n_groups)
        for key in calls:
            calls[key] = 0
        doc = run_json("ece", path, "--group-by", "g", "--n-boot", 20, "--seed", 3)
        assert len(doc["files"]) == n_groups
        counts.append(dict(calls))
    assert counts[0]["newton"] == counts[1]["newton"] == 2  # the joint fit and the one with the slope fixed at 1
    assert counts[0]["fixed_point"] == counts[1]["fixed_point"] == 1
    assert counts[1]["bandwidths"] <= counts[0]["bandwidths"] + 10 and counts[1]["bandwidths"] < 60
    for entry in doc["files"][:8]:
        rows = np.flatnonzero(g == entry["group"]["g"])
        metrics = entry["problems"][0]["metrics"]
        alone = cox_from_rows(y[rows], z[rows], np.ones(len(rows)))
        assert metrics["cox_slope"]["estimate"] == alone.slope.estimate
        assert metrics["cox_intercept"]["ci_low"] == alone.intercept.ci_low
        ici = ici_from_grid(GridSums().add_rows(z[rows], y[rows], None))
        assert (metrics["ici"]["estimate"], metrics["e90"]["estimate"]) == (ici.ici, ici.e90)
