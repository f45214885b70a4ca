"""The grouped per-row bootstrap's kernels: the Poisson draws equal SplitMix64's finaliser inverted, the compiled
run sums equal the sums of those draws taken one row after another (within the tolerance rule, 1e-12 relative,
SPEC 8.1), so do the sums of every (group, bin) run, and the blocks of groups give the same numbers on one thread
or two; a signal stops the threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from _tolerance import assert_within_rule

import calibcli.core.resampling as rs
from calibcli.core import cancel
from calibcli.binned.stats import _N_STATS
from calibcli.binned.bootstrap import SortedGroups
from calibcli.core.binning import fit_binning


def _reference_draws(seed: int, rows: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """Row i, replicate r: the whole SplitMix64 finaliser of ``key(seed, r) + (i + 1) gamma``, its high 32 bits
    searched among the thresholds (no table)."""
    with np.errstate(over="ignore"):
        x = np.add.outer((rows.astype(np.uint64) + np.uint64(1)) * rs._GAMMA, rs._stream_keys(seed, reps))
        u = (rs._mix(x) >> np.uint64(32)).astype(np.uint32)
    return np.searchsorted(rs._THRESHOLDS, u, side="right").astype(np.float64)


@pytest.mark.parametrize("seed", [0, 5, 2**40 + 3])
def test_draws_equal_the_whole_finaliser_inverted(seed):
    """Including the values whose table cell a threshold splits (12 of 4096 cells: ~1,700 of these 600,000)."""
    rows = np.random.default_rng(seed % 1000).integers(0, 2**45, 6000)
    reps = np.arange(3, 103)
    got = rs.Multiplicities(seed, rows).columns(reps)
    want = _reference_draws(seed, rows, reps)
    np.testing.assert_array_equal(got, want)
    with np.errstate(over="ignore"):
        x = np.add.outer((rows.astype(np.uint64) + np.uint64(1)) * rs._GAMMA, rs._stream_keys(seed, reps))
        top = rs._mix(x.copy()) >> np.uint64(64 - rs._TABLE_BITS)
    assert rs._TABLE_SPLIT[top.astype(np.int64)].sum() > 500  # the split cells were exercised
    scratch = rs.Scratch()
    out = np.empty((len(rows), 40))
    for first in (0, 40):  # reused memory gives the same numbers
        block = rs.Multiplicities(seed, rows).columns(reps[first : first + 40], out=out, scratch=scratch)
        np.testing.assert_array_equal(block, want[:, first : first + 40])


@pytest.mark.parametrize("self_pairs", [3, 0])
def test_compiled_run_sums_equal_the_draws_summed_row_after_row(self_pairs):
    """``Multiplicities.run_sums`` (one compiled loop, the draws never stored) against the whole finaliser's draws
    (``_reference_draws``) summed one row after another from zero: within the rule, with cells in any order (not
    sorted, some never touched), zero and negative values, multiplicities of 4 and more (counted past the four
    thresholds the loop compares at once), sums added onto what ``out`` already holds, and no self-pair values."""
    rng = np.random.default_rng(11)
    n, R, C, K = 3000, 130, 23, 4
    rows = rng.integers(0, 2**40, n)
    reps = np.arange(17, 17 + R)
    cell = rng.integers(0, C - 3, n)
    X = rng.normal(size=(n, K))
    X[rng.random((n, K)) < 0.3] = 0.0
    X_self = rng.random((n, self_pairs))
    M = _reference_draws(5, rows, reps)
    assert (M >= 4).sum() > 1000 and M.max() >= 7
    start = rng.random((C, K, R))
    want, want_self = start.copy(), np.zeros((C, self_pairs, R))
    for i in range(n):
        want[cell[i]] += X[i][:, None] * M[i][None, :]
        want_self[cell[i]] += X_self[i][:, None] * (M[i] * (M[i] - 1.0))[None, :]
    out, out_self = start.copy(), np.zeros((C, self_pairs, R))
    rs.Multiplicities(5, rows).run_sums(reps, cell, X, X_self, out, out_self)
    assert_within_rule(out, want)
    assert_within_rule(out_self, want_self)
    with pytest.raises(ValueError):
        rs.Multiplicities(5, rows).run_sums(reps, np.full(n, C), X, X_self, out, out_self)


@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_quantile_sums_take_the_bins_of_the_numpy_path(weighted):
    """``Multiplicities.quantile_sums`` (each resample's quantile bins and sums in one compiled loop) against
    ``_SortedProblem._quantile_sums`` on NumPy's draws: the same bins (the counts, integers, equal), the sums within
    a few units in the last place (BLAS adds them in another order), over ties, zero predictions, groups of one and
    two rows, and more bins than distinct values."""
    from calibcli.binned.bootstrap import _SortedProblem

    rng = np.random.default_rng(3 + weighted)
    worst = 0.0
    for trial in range(14):
        n = [1, 2, 5, 40, 300, 1000, 2500][trial % 7]
        B = [15, 3, 10, 40][trial % 4]
        z = np.round(rng.beta(2.0, 5.0, n), [2, 3, 6][trial % 3])
        z[: n // 7] = 0.0
        y = (rng.random(n) < z).astype(np.int64)
        w = rng.random(n) * 2.0 if weighted else np.ones(n)
        problem = _SortedProblem(y, z, w, fit_binning(z, n_bins=B, strategy="quantile"), B)
        rows = rs.Multiplicities(5, rng.integers(0, 2**40, n)[problem.order])
        R = 64
        M = np.ascontiguousarray(rows.columns(np.arange(R)).T)
        sums, dup = problem._quantile_sums(M, (M - 1.0) * M)
        out, out_self = np.zeros((_N_STATS + 1, R, B)), np.zeros((3, R, B))
        rows.quantile_sums(np.arange(R), problem.z, problem.X, problem.X_self, out, out_self)
        want, want_self = np.moveaxis(sums, -1, 0), np.moveaxis(dup, -1, 0)
        np.testing.assert_array_equal(out[0], want[0])
        for got, ref in ((out, want), (out_self, want_self)):
            np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)
            worst = max(worst, float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300))))
    assert worst < 1e-14


def _groups(weighted: bool, n_groups: int = 7, seed: int = 4) -> list:
    rng = np.random.default_rng(seed)
    out, first = [], 0
    for g in range(n_groups):
        n = [1, 40, 300, 1700, 2600, 90, 1200][g % 7]  # blocks of one group, of several, and one larger than a block
        z = np.round(rng.beta(2.0, 5.0, n), 3)  # ties
        z[: n // 10] = 0.0  # zero predictions: zero entries in the sums
        y = (rng.random(n) < z).astype(np.int64)
        w = rng.random(n) * 2.0 if weighted else np.ones(n)
        out.append((y, z, w, first + np.arange(n) * 3))
        first += 3 * n + 11
    return out


def _sequential_sums(groups: list, n_bins: int, seed: int, n_boot: int) -> tuple[np.ndarray, np.ndarray]:
    """Every group's equal-width bins' sums ``(6, G, R, bins)`` and self-pair sums ``(3, G, R, bins)``, taken one
    row after another (a cumulative sum's last value) over the rows sorted by z."""
    from calibcli.binned.stats import _W, _WU2, _WY, _row_stats
    from calibcli.core.binning import uniform_bin_index

    G = len(groups)
    sums, dup = np.zeros((_N_STATS + 1, G, n_boot, n_bins)), np.zeros((3, G, n_boot, n_bins))
    for g, (y, z, w, rows) in enumerate(groups):
        order = np.argsort(z, kind="stable")
        zs, ys, ws = z[order], y[order].astype(np.float64), w[order]
        stats = _row_stats(ys, zs, ws)
        X = np.vstack([np.ones(len(zs)), stats])
        X_self = np.vstack([ws * ws, ws * stats[_WY], ws * stats[_WU2]])
        M = rs.Multiplicities(seed, rows[order]).columns(np.arange(n_boot))
        pairs = (M - 1.0) * M
        cell = uniform_bin_index(zs, n_bins)
        for b in range(n_bins):
            run = cell == b
            if run.any():
                sums[:, g, :, b] = np.cumsum(X[:, run, None] * M[None, run], axis=1)[:, -1]
                dup[:, g, :, b] = np.cumsum(X_self[:, run, None] * pairs[None, run], axis=1)[:, -1]
        if np.all(w == 1.0):
            assert np.array_equal(sums[0, g], sums[1 + _W, g])
    return sums, dup


@pytest.fixture(params=["compiled", "products"])
def path(request, monkeypatch):
    """Either way of taking the equal-width sums: the compiled loop (from the first draw on) or, below its
    threshold of draws, NumPy's draws times sparse matrices."""
    import calibcli.binned.bootstrap as bb

    monkeypatch.setattr(bb, "_COMPILED_DRAWS", 0 if request.param == "compiled" else 1 << 62)
    return request.param


@pytest.mark.parametrize("weighted", [False, True])
def test_run_sums_equal_the_sums_taken_row_after_row(weighted, path):
    """Within the rule, either way: the compiled loop and the sparse products add each run's terms in the order of
    its rows, starting from zero (the zero terms the products leave out change nothing); the counts exactly."""
    groups = _groups(weighted)
    binning = fit_binning(np.empty(0), n_bins=6, strategy="uniform")
    problems = SortedGroups(groups, [binning] * len(groups), 6)
    main, uniform = problems.resampled(0, len(groups), 9, 45)
    assert uniform is None
    sums, dup = _sequential_sums(groups, 6, 9, 45)
    np.testing.assert_array_equal(main.count, sums[0])  # integers
    for got, want in zip((main.weight, main.sum_z, main.sum_y, main.sum_u2, main.sum_log_loss), sums[1:], strict=True):
        assert_within_rule(got, want)
    assert_within_rule(main.self_weight, main.weight + dup[0])
    assert_within_rule(main.self_y, main.sum_y + dup[1])
    assert_within_rule(main.self_u2, main.sum_u2 + dup[2])


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_one_thread_or_two_give_the_same_numbers(monkeypatch, strategy, weighted, path):
    groups = _groups(weighted, n_groups=9)
    binnings = [fit_binning(g[1], n_bins=5, strategy=strategy) for g in groups]
    problems = SortedGroups(groups, binnings, 4 if strategy == "uniform" else 5)
    got = {}
    for threads in (1, 2):
        monkeypatch.setattr(rs, "THREADS", threads)
        got[threads] = [problems.resampled(g0, g1, 2, 70) for g0, g1 in problems.chunks(4)]
    for (m1, u1), (m2, u2) in zip(got[1], got[2], strict=True):
        for s1, s2 in ((m1, m2), (u1, u2)):
            for a, b in zip(s1._arrays(), s2._arrays(), strict=True):
                np.testing.assert_array_equal(a, b)


def test_a_signal_stops_the_threads(monkeypatch):
    """A stop requested while the jobs run: the running ones stop at their next check, the queued ones never
    start, and the interrupt reaches the caller."""
    monkeypatch.setattr(rs, "THREADS", 2)
    started, release = [], threading.Event()

    def job(k: int) -> int:
        started.append(k)
        if k == 0:
            cancel.request()
            release.set()
        release.wait(5)
        cancel.check()
        return k

    cancel.reset()
    try:
        with pytest.raises(cancel.Interrupted):
            rs.in_threads(job, [(k,) for k in range(50)])
    finally:
        cancel.reset()
    assert len(started) <= 2


def test_a_signal_stops_the_compiled_loops_between_slices():
    """The compiled loops cannot look at the stop flag; their front doors check it before every slice of about 2^21
    draws, so a stop requested before a call (or between two slices) raises there, and nothing is added."""
    rows = rs.Multiplicities(0, np.arange(4000))
    X, X_self = np.ones((4000, 2)), np.ones((4000, 1))
    out, out_self = np.zeros((3, 2, 600)), np.zeros((3, 1, 600))
    cancel.reset()
    cancel.request()
    try:
        with pytest.raises(cancel.Interrupted):
            rows.run_sums(np.arange(600), np.zeros(4000, dtype=np.int64), X, X_self, out, out_self)
        with pytest.raises(cancel.Interrupted):
            rows.quantile_sums(
                np.arange(600),
                np.linspace(0, 1, 4000),
                X,
                X_self,
                out[:2].transpose(1, 2, 0),
                out_self[:1].transpose(1, 2, 0),
            )
    finally:
        cancel.reset()
    assert not out.any() and not out_self.any()


def test_dense_sums_of_a_few_rows_hold_only_their_cells_with_the_same_sums():
    """DenseSums keeps the cells a group's rows touch until they are a sixteenth of the grid, then the whole
    grid; either way every cell's sum is its batches' bincounts added in turn from zero (what the dense arrays
    alone gave), through unweighted then weighted batches and a batch larger than the grid's sixteenth."""
    from calibcli.smooth.grid import DenseSums

    n_cells = 4096
    rng = np.random.default_rng(3)
    sums = DenseSums(n_cells)
    size = 2 * n_cells
    want = {name: np.zeros(size) for name in ("count", "w", "wf", "wf2", "wf3", "ww")}
    weighted = False
    held = []
    for rows, with_w in ((30, False), (200, False), (25, True), (120, True), (600, True), (40, True)):
        z = rng.beta(2.0, 5.0, rows)
        y = (rng.random(rows) < z).astype(np.int64)
        w = rng.random(rows) * 3.0 if with_w else None
        if with_w and not weighted:
            want["w"], want["ww"], weighted = want["count"].copy(), want["count"].copy(), True
        sums.add_rows(z, y, w)
        held.append(None if sums.cells is None else len(sums.cells))
        x = z * n_cells
        j = np.minimum(np.floor(x).astype(np.int64), n_cells - 1)
        f = x - j
        key = y * n_cells + j
        ww = np.ones(rows) if w is None else w
        want["count"] += np.bincount(key, minlength=size)
        if weighted:
            want["w"] += np.bincount(key, weights=ww, minlength=size)
            want["ww"] += np.bincount(key, weights=ww * ww, minlength=size)
        wf = ww * f if weighted else f
        want["wf"] += np.bincount(key, weights=wf, minlength=size)
        want["wf2"] += np.bincount(key, weights=wf * f, minlength=size)
        want["wf3"] += np.bincount(key, weights=wf * f * f, minlength=size)
    assert held[0] is not None and held[0] <= 30 and held[-1] is None  # sparse first, the whole grid at the end
    got = sums.take()
    where = np.flatnonzero(want["count"])
    np.testing.assert_array_equal(got.key, where)
    np.testing.assert_array_equal(got.count, want["count"][where])
    for name in ("w", "wf", "wf2", "wf3", "ww"):
        np.testing.assert_array_equal(getattr(got, name), want[name][where], err_msg=name)
    assert sums.rows == 0 and sums.cells is not None and len(sums.count) == 0  # empty again, and small


def test_alongside_runs_the_side_task_in_its_own_thread_while_the_main_one_keeps_its_pool(monkeypatch):
    """The side task runs while the main one does (each waits for the other's event: one after the other, they
    would never both be set), in another thread; the main task stays in the calling thread, so its bootstrap
    still gets a pool (in_threads runs jobs in their own threads only from the main thread)."""
    monkeypatch.setattr(rs, "THREADS", 2)
    side_started, main_started = threading.Event(), threading.Event()
    seen = {}

    def side():
        side_started.set()
        seen["side"] = (threading.current_thread() is threading.main_thread(), main_started.wait(60))
        return "side"

    def main():
        main_started.set()
        seen["main"] = (threading.current_thread() is threading.main_thread(), side_started.wait(60))
        seen["pool"] = rs.in_threads(lambda k: threading.current_thread().name, [(1,), (2,)])
        return "main"

    assert rs.alongside(side, main) == ("side", "main")
    assert seen["side"] == (False, True) and seen["main"] == (True, True)
    assert all(name.startswith("calibcli-boot") for name in seen["pool"])  # the main task's jobs in a pool


def test_alongside_raises_the_first_error_once_the_side_task_has_stopped(monkeypatch):
    monkeypatch.setattr(rs, "THREADS", 2)
    finished = threading.Event()

    def side():
        finished.set()
        return 1

    def failing_main():
        raise ValueError("main failed")

    with pytest.raises(ValueError, match="main failed"):
        rs.alongside(side, failing_main)
    assert finished.is_set()

    def failing_side():
        raise TypeError("side failed")

    with pytest.raises(TypeError, match="side failed"):
        rs.alongside(failing_side, lambda: 2)
