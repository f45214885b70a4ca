"""Replicates as a leading axis: the batched statistical core gives, for every replicate, what the
per-replicate computation gives, and the estimators run a fixed number of times whatever ``n_boot``."""

from __future__ import annotations

import numpy as np
import pytest

import calibcli.binned.estimators as est
from calibcli.binned.accumulator import BinnedAccumulator
from calibcli.core.binning import fit_binning, quantile_edges_sorted, quantile_starts_batched
from calibcli.binned.stats import BinStats
from calibcli.binned.estimators import _point_metrics, binned_calibration, ece_l2_sq_sun_estimate
from calibcli.binned.bootstrap import _SortedProblem
from calibcli.core.resampling import Multiplicities


def _data(n, seed=1, ties=True):
    rng = np.random.default_rng(seed)
    z = rng.random(n)
    if ties:
        z = np.round(z, 2)
    y = (rng.random(n) < z**1.2).astype(int)
    return y, z, rng.random(n) * 2.0


def test_multiplicity_blocks_equal_one_replicate_at_a_time():
    rows = Multiplicities(7, np.arange(5000) * 3 + 11)
    block = rows.block(np.array([4, 0, 9]))
    for j, r in enumerate((4, 0, 9)):
        np.testing.assert_array_equal(block[j], rows.replicate(r))


def test_batched_quantile_starts_equal_the_edges_of_each_resample():
    y, z, _ = _data(300)
    zs = np.sort(z)
    rng = np.random.default_rng(2)
    counts = rng.poisson(1.0, size=(40, len(zs))).astype(float)
    counts[3] = 0.0  # a resample with no rows: one bin
    counts[5, :] = 0.0
    counts[5, 17] = 4.0  # every copy of one value: one bin
    starts = quantile_starts_batched(zs, 9, counts)
    for r in range(len(counts)):
        edges = quantile_edges_sorted(zs, 9, counts=counts[r])
        want = np.concatenate([[0], np.searchsorted(zs, edges, side="left")])
        np.testing.assert_array_equal(starts[r, : len(want)], want)
        assert (starts[r, len(want) :] == len(zs)).all()


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_batched_estimators_equal_each_replicate_alone(strategy, weighted):
    """Every estimator on (R, bins) sums equals the estimator on each replicate's (bins,) sums."""
    y, z, w = _data(400)
    w = w if weighted else np.ones(len(z))
    problem = _SortedProblem(y, z, w, fit_binning(z, n_bins=8, strategy=strategy), 8)
    M = Multiplicities(3, np.arange(len(z))).block(np.arange(25))[:, problem.order]
    main, uniform = problem.resampled(M)
    assert main.weight.shape == (25, 8)
    batched = _point_metrics(main, uniform)
    batched["sun"] = ece_l2_sq_sun_estimate(main)
    for r in range(25):
        one_main, one_uniform = problem.resampled(M[r])
        alone = _point_metrics(one_main, one_uniform)
        alone["sun"] = ece_l2_sq_sun_estimate(one_main)
        for k, v in alone.items():
            assert batched[k][r] == pytest.approx(v, rel=1e-12, abs=1e-15, nan_ok=True), (k, r)


def test_bin_stats_stack_and_concat_keep_the_self_pairs():
    a = BinStats(
        np.array([2, 0]),
        np.array([2.0, 0.0]),
        np.array([1.0, 0.0]),
        np.array([1.0, 0.0]),
        np.array([0.5, 0.0]),
        np.array([0.3, 0.0]),
        self_weight=np.array([4.0, 0.0]),
    )
    both = BinStats.stack([a, a])
    assert both.weight.shape == (2, 2) and both.diag_weight.tolist() == [[4.0, 0.0], [4.0, 0.0]]
    assert BinStats.concat([both, both]).count.shape == (4, 2)


def _count_estimator_calls(monkeypatch) -> dict:
    calls = {"n": 0}
    for name in (
        "ece_l1_plugin",
        "ece_l2_plugin",
        "ece_max_plugin",
        "ece_l2_sq_debiased_kumar",
        "ece_l2_sq_debiased_dpe",
        "brier_decomposition",
        "log_loss",
        "dce_estimate",
        "ece_l2_sq_sun_estimate",
    ):
        original = getattr(est, name)

        def counted(*args, _original=original, **kwargs):
            calls["n"] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(est, name, counted)
    return calls


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_estimator_calls_do_not_grow_with_n_boot(monkeypatch, strategy):
    """The per-replicate loop is gone: 10 or 300 resamples (several blocks of rows) make the same calls."""
    y, z, _ = _data(20000, ties=False)
    calls = _count_estimator_calls(monkeypatch)
    counts = []
    for n_boot in (10, 300):
        calls["n"] = 0
        binned_calibration(y, z, n_bins=10, strategy=strategy, n_boot=n_boot, seed=1)
        counts.append(calls["n"])
    assert counts[0] == counts[1] > 0


@pytest.mark.parametrize("weighted", [False, True])
def test_estimator_calls_do_not_grow_with_n_boot_from_cells(monkeypatch, weighted):
    y, z, w = _data(3000, ties=False)
    calls = _count_estimator_calls(monkeypatch)
    counts = []
    for n_boot in (10, 400):
        acc = BinnedAccumulator(n_bins=10, row_limit=100)
        acc.update(np.arange(len(z)), z, y, w if weighted else None)
        calls["n"] = 0
        r = acc.result(n_boot=n_boot, seed=4, keep_replicates=True)
        counts.append(calls["n"])
        assert len(r.replicates["ece_l1_plugin"]) == n_boot
    assert counts[0] == counts[1] > 0


def test_lockstep_brent_takes_the_one_root_steps():
    """brent_rows finds every root as the one-root solver does, bit for bit, with one call per iteration."""
    from calibcli.smooth.bootstrap import brent_rows
    from calibcli.smooth.grid import _brent_root

    c = np.linspace(0.05, 0.95, 40)

    def f_one(x, ci):
        return np.exp(-3.0 * x) - ci + 0.1 * np.sin(7.0 * x)

    calls = {"n": 0}

    def f_rows(rows, x):
        calls["n"] += 1
        return f_one(x, c[rows])

    a, b = np.zeros(40), np.full(40, 2.0)
    keep = (f_one(a, c) > 0) & (f_one(b, c) < 0)
    a, b, c = a[keep], b[keep], c[keep]
    roots = brent_rows(f_rows, a, b, f_one(a, c), f_one(b, c), xtol=1e-13, rtol=4 * np.finfo(float).eps)
    for j in range(len(c)):
        assert roots[j] == _brent_root(
            lambda x: float(f_one(x, c[j])), a[j], b[j], xtol=1e-13, rtol=4 * np.finfo(float).eps
        )
    assert calls["n"] < 60


def test_smooth_bootstrap_evaluations_do_not_grow_with_n_boot(monkeypatch):
    """Every replicate's fixed point is solved in lockstep: the batched bandwidth evaluations of a block stay
    a few dozen whether it holds 10 resamples or 400 (the one-replicate loop made about 8 per resample).
    (Blocks are sized for the caches; here one block holds them all.)"""
    import calibcli.smooth.bootstrap as sb
    from calibcli.smooth.estimator import smooth_ece

    monkeypatch.setattr(sb, "_BLOCK_VALUES", 1 << 24)

    rng = np.random.default_rng(3)
    z = rng.random(2000)
    y = (rng.random(2000) < z**1.3).astype(int)
    calls = {"n": 0}
    original = sb.smece_rows

    def counted(*args):
        calls["n"] += 1
        return original(*args)

    monkeypatch.setattr(sb, "smece_rows", counted)
    counts = []
    for n_boot in (10, 400):
        calls["n"] = 0
        result = smooth_ece(y, z, n_boot=n_boot, rng=1)
        assert np.isfinite(result.replicates).all()
        counts.append(calls["n"])
    assert counts[1] <= counts[0] + 10 and counts[1] < 60


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


def _grouped_ece(path, n_boot: int, strategy: str = "uniform") -> dict:
    from tests._cli import run_json

    return run_json(
        "ece", path, "--group-by", "g", "--n-boot", n_boot, "--seed", 3, "--n-bins", 10, "--strategy", strategy
    )


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_estimator_calls_do_not_grow_with_the_number_of_groups(monkeypatch, tmp_path, strategy):
    """The per-group loop is gone: 3 or 60 groups of the same rows make the same estimator calls (the groups are
    an axis of the (G, R, bins) statistics), and each group's numbers are those of its rows alone."""
    calls = _count_estimator_calls(monkeypatch)
    counts = []
    for n_groups in (3, 60):
        path, y, z, g = _grouped_file(tmp_path, n_groups)
        calls["n"] = 0
        doc = _grouped_ece(path, 40, strategy)
        counts.append(calls["n"])
        assert len(doc["files"]) == n_groups
    assert counts[0] == counts[1] > 0
    for entry in doc["files"][:5]:  # the last run's groups, each against its rows alone (global row index kept)
        rows = np.flatnonzero(g == entry["group"]["g"])
        alone = binned_calibration(y[rows], z[rows], n_bins=10, strategy=strategy, n_boot=40, seed=3, row_index=rows)
        for name in ("ece_l1_plugin", "ece_l2_sq_debiased_kumar", "brier_score", "dce"):
            got = entry["problems"][0]["metrics"][name]
            want = alone.metrics[name]
            assert got["estimate"] == pytest.approx(want.estimate, rel=1e-12, abs=1e-15)
            assert got["ci_low"] == pytest.approx(want.ci_low, rel=1e-12, abs=1e-15)
            assert got["ci_high"] == pytest.approx(want.ci_high, rel=1e-12, abs=1e-15)


def test_groups_beyond_the_memory_budget_are_taken_in_chunks_with_the_same_numbers(monkeypatch, tmp_path):
    """When (G, R, bins) passes the budget the groups are taken in chunks (each chunk one call of every
    estimator), with every number as in one chunk."""
    path, *_ = _grouped_file(tmp_path, 40)
    whole = _grouped_ece(path, 50)
    chunks = []
    real = est.binned_calibration_groups

    def told(*args, **kwargs):
        kwargs["on_chunks"] = lambda n, per: chunks.append((n, per))
        return real(*args, **kwargs)

    monkeypatch.setattr("calibcli.binned.accumulator.binned_calibration_groups", told)
    monkeypatch.setattr(est, "GROUP_CHUNK_BYTES", 50 * 10 * est.BYTES_PER_GROUP_REPLICATE_BIN * 7)
    chunked = _grouped_ece(path, 50)
    assert chunks == [(6, 7)]
    monkeypatch.undo()
    monkeypatch.setenv("CALIBCLI_MEMORY_BUDGET", str(2 * 50 * 10 * est.BYTES_PER_GROUP_REPLICATE_BIN * 3))
    assert est.group_chunk(50, 10) == 3  # half the memory budget, when that is the lower bound
    for a, b in zip(whole["files"], chunked["files"], strict=True):
        assert a["group"] == b["group"]
        for name, m in a["problems"][0]["metrics"].items():
            other = b["problems"][0]["metrics"][name]
            for key in ("estimate", "ci_low", "ci_high"):
                if isinstance(m[key], float):
                    assert other[key] == pytest.approx(m[key], rel=1e-12, abs=1e-15, nan_ok=True), (name, key)


def test_smooth_bootstrap_of_many_groups_equals_each_group_alone():
    """SmoothECE's groups finished together (one lockstep Brent over groups x replicates) give each group's
    numbers alone, bit for bit."""
    from calibcli.core.family import Bootstrap
    from calibcli.smooth.accumulator import SmoothAccumulator

    rng = np.random.default_rng(8)
    accs = []
    for g in range(6):
        n = 150 + 40 * g
        z = rng.beta(2.0, 3.0, n)
        y = (rng.random(n) < z**1.3).astype(int)
        accs.append(SmoothAccumulator(seed=2).update(np.arange(n) * 7 + g, z, y))
    together = SmoothAccumulator.results(accs, Bootstrap(n_boot=30, alpha=0.1, seed=2))
    for acc, r in zip(accs, together, strict=True):
        alone = acc.result(n_boot=30, alpha=0.1)
        assert r.smece == alone.smece and r.sigma == alone.sigma
        np.testing.assert_array_equal(r.replicates, alone.replicates)
        assert (r.ci_low, r.ci_high) == (alone.ci_low, alone.ci_high)


def test_ecce_grid_waits_for_rows_and_gives_the_same_sums():
    """A group of few rows holds its rows, not a 2^16-cell grid; past PENDING_ROWS (or when read) the grid holds
    the same sums as one filled from the first row, batch by batch."""
    import calibcli.cumulative.accumulator as cu

    rng = np.random.default_rng(4)
    z = rng.random(20000)
    y = (rng.random(20000) < z).astype(int)
    w = rng.random(20000)
    small = cu.EcceAccumulator(None).update(np.arange(100), z[:100], y[:100], w[:100])
    assert small._sums is None
    big = cu.EcceAccumulator(None)
    for a in range(0, 20000, 3000):
        big.update(np.arange(a, a + 3000), z[a : a + 3000], y[a : a + 3000], w[a : a + 3000])
    assert big._sums is not None and big._n_pending == 0
    direct = {name: np.zeros(cu.N_CELLS) for name in cu._SUMS}
    direct["count"] = np.zeros(cu.N_CELLS, dtype=np.int64)
    for a in range(0, 20000, 3000):
        big._add(z[a : a + 3000], y[a : a + 3000].astype(float), w[a : a + 3000], direct)
    for name in (*cu._SUMS, "count"):
        np.testing.assert_allclose(getattr(big, name), direct[name], rtol=1e-13, atol=1e-12)
    again = cu.EcceAccumulator.from_dict(small.to_dict())
    assert again.to_dict() == small.to_dict()


def test_the_ecce_grid_travels_packed():
    """A task's ECCE grid goes to the cluster as the state's own packed arrays (occupied cells only, counts as
    small integers), not as the dense arrays of a dict: the Dask engine pickles and merges it, and a 1e6-row
    task's state was 3.1 MB of it instead of 1.4 MB."""
    import pickle

    import calibcli.cumulative.accumulator as cu

    rng = np.random.default_rng(5)
    z = rng.beta(2, 5, 100_000)
    y = (rng.random(len(z)) < z).astype(int)
    acc = cu.EcceAccumulator(None).update(np.arange(len(z)), z, y)
    dense = sum(a.nbytes for a in acc._sums.values())
    occupied = int(np.count_nonzero(acc._sums["count"]))
    assert 0.3 * cu.N_CELLS < occupied < cu.N_CELLS  # most cells hold rows: packing gains by the types too
    blob = pickle.dumps(acc, protocol=5)
    # three float sums per occupied cell, the counts and w (a reference to them) and wy (small integers) besides
    assert len(blob) < 3 * 8 * occupied + 0.1 * dense < 0.6 * dense
    for again in (pickle.loads(blob), cu.EcceAccumulator.from_dict(acc.to_dict())):
        assert again._sums.keys() == acc._sums.keys()
        for name, value in acc._sums.items():
            assert again._sums[name].dtype == value.dtype and np.array_equal(again._sums[name], value)
        assert again.result()[0] == acc.result()[0]
        again.merge(acc)  # the arrays arrive writable
        assert np.array_equal(again.count, 2 * acc.count)
