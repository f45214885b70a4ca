"""Exact (compensated) sums of states (SPEC 8, `calibcli.core.compensated`): the same floats whatever the order the
batches' sums were added in, one stream or a tree of merges, so every engine reports the same numbers."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from calibcli.core.compensated import add_exact


def _tree(parts, merge, k):
    """``parts`` merged as the Dask engine's reduction does: blocks of ``k`` consecutive parts, then ``k``-ary merges
    of those, up to one."""
    level = list(parts)
    while len(level) > 1:
        level = [_merged(level[i : i + k], merge) for i in range(0, len(level), k)]
    return level[0]


def _merged(parts, merge):
    out = copy.deepcopy(parts[0])
    for p in parts[1:]:
        merge(out, p)
    return out


@pytest.mark.parametrize("k", [2, 16])
def test_sums_are_the_correctly_rounded_sum_in_any_order(k):
    rng = np.random.default_rng(3)
    x = rng.random((1500, 40)) * rng.choice([1e-3, 1.0, 1e3], size=(1500, 40))  # one sign per column, as a cell's
    x[:, :20] *= -1.0
    exact = np.array([math.fsum(column) for column in x.T])
    assert not np.array_equal(x.sum(axis=0), exact)  # plain sums round differently

    def one(row):
        hi, lo = np.zeros(40), np.zeros(40)
        add_exact(hi, lo, row)
        return (hi, lo)

    def merge(a, b):
        add_exact(a[0], a[1], b[0], b[1])

    for order in (np.arange(1500), np.arange(1500)[::-1], rng.permutation(1500)):
        hi, lo = np.zeros(40), np.zeros(40)
        for i in order:
            add_exact(hi, lo, x[i])
        assert np.array_equal(hi, exact)
    hi, lo = _tree([one(row) for row in x], merge, k)
    assert np.array_equal(hi, exact)
    assert np.all(np.abs(lo) <= np.spacing(np.abs(hi)) / 2)  # normalised: hi is hi + lo rounded


def test_a_batch_of_few_cells_adds_the_same_floats_as_a_dense_one():
    from calibcli.core.compensated import add_exact_at

    rng = np.random.default_rng(8)
    dense, sparse = (np.zeros(4096), np.zeros(4096)), (np.zeros(4096), np.zeros(4096))
    for k in (10, 3000, 50):  # few cells, most cells (dense), few again
        at = np.sort(rng.choice(4096, k, replace=False))
        x = np.zeros(4096)
        x[at] = rng.random(k)
        add_exact(*dense, x)
        add_exact_at(*sparse, x, at)
        assert all(np.array_equal(a, b) for a, b in zip(dense, sparse, strict=True))


def test_an_overflowed_sum_stays_infinite_and_carries_no_nan():
    hi, lo = np.array([1e308, 1.0]), np.zeros(2)
    with np.errstate(over="ignore"):  # (the plain sum's overflow warning, as `hi += x` gives it)
        add_exact(hi, lo, np.array([1e308, 2.0]))
    add_exact(hi, lo, np.array([1.0, 3.0]))
    assert hi[0] == np.inf and hi[1] == 6.0 and not np.isnan(lo).any()


def _batches(n, size, seed, weighted=False):
    rng = np.random.default_rng(seed)
    z = rng.beta(2, 5, n)
    y = (rng.random(n) < z**1.3).astype(np.int64)
    w = rng.gamma(2.0, 0.5, n) if weighted else None
    return [
        (np.arange(s, min(s + size, n)), z[s : s + size], y[s : s + size], None if w is None else w[s : s + size])
        for s in range(0, n, size)
    ]


@pytest.mark.parametrize("weighted", [False, True])
def test_binned_cells_of_a_stream_and_of_a_tree_of_tasks_are_the_same_floats(weighted):
    # beyond the rows kept (2^17): every number comes from the cells, bootstrap included
    from calibcli.binned.accumulator import BinnedAccumulator

    batches = _batches(150_000, 500, 4, weighted)
    stream = BinnedAccumulator(n_bins=15)
    for batch in batches:
        stream.update(*batch)
    tasks = [BinnedAccumulator(n_bins=15).update(*batch) for batch in batches]
    tree = _tree(tasks, lambda a, b: a.merge(b), 16)
    assert stream.rows.dropped and np.array_equal(stream.cells.sums, tree.cells.sums)
    assert stream.result(n_boot=50).to_dict() == tree.result(n_boot=50).to_dict()


def test_clinical_grid_of_a_stream_and_of_a_tree_of_tasks_is_the_same_floats():
    from calibcli.clinical.classical_tests import GridSums

    batches = _batches(60_000, 300, 5, weighted=True)
    stream = GridSums()
    for _, z, y, w in batches:
        stream.add_rows(z, y, w)
    tasks = [GridSums().add_rows(z, y, w) for _, z, y, w in batches]
    tree = _tree(tasks, lambda a, b: a.merge(b), 16)
    for mine, theirs in ((stream.cells, tree.cells), (stream.tail, tree.tail)):
        assert all(np.array_equal(a, b) for a, b in zip(mine.sparse()[1:], theirs.sparse()[1:], strict=True))


def test_paired_joint_cells_of_a_stream_and_of_a_tree_of_tasks_are_the_same_floats():
    from calibcli.core.binning import uniform_bin_index
    from calibcli.compare.paired_bootstrap import JointCells

    def bins(z):
        return uniform_bin_index(z, 15)

    batches = _batches(40_000, 400, 6)
    rng = np.random.default_rng(7)
    other = [np.clip(z + rng.normal(0, 0.05, len(z)), 0, 1) for _, z, _, _ in batches]

    def new():
        return JointCells(bins, 15, bins, 15)

    stream = new()
    parts = []
    for (_, z, y, _), zb in zip(batches, other, strict=True):
        stream.update(z, y, None, zb, y, None)
        part = new()
        part.update(z, y, None, zb, y, None)
        parts.append(part)
    tree = _tree(parts, lambda a, b: a.merge(b), 16)
    for name in ("keys", "count", "sums", "moments"):
        assert np.array_equal(getattr(stream, name), getattr(tree, name)), name


def test_run_sums_of_columns_made_in_one_scratch_array_are_each_runs_exact_sum():
    """run_sums takes its columns one at a time (the joint cells make each product in one scratch array as it is
    summed): every run's pair is the correctly rounded exact sum (math.fsum) of that column's run, whatever the
    order of the rows within it."""
    from calibcli.core.compensated import run_sums

    rng = np.random.default_rng(11)
    n = 5_000
    starts = np.array([0, 3, 1_000, 1_001, 4_200])
    base = [rng.standard_normal(n) * scale + shift for scale, shift in ((1.0, 0.0), (1e-9, 1.0), (1e3, -1e6))]
    pairs = [(0, 0), (0, 1), (1, 2), (2, 2)]
    scratch = np.empty(n)

    def columns(order):
        cols = [b[order] for b in base]
        for i, j in pairs:
            yield np.multiply(cols[i], cols[j], out=scratch)

    def exact(order):
        bounds = list(starts) + [n]
        products = [base[i][order] * base[j][order] for i, j in pairs]
        return np.array([[math.fsum(p[a:b]) for p in products] for a, b in zip(bounds[:-1], bounds[1:])])

    top = [np.max(np.abs(base[i] * base[j])) for i, j in pairs]
    ident = np.arange(n)
    shuffled = np.concatenate([rng.permutation(np.arange(a, b)) for a, b in zip(starts, list(starts[1:]) + [n])])
    for order in (ident, shuffled):
        hi, lo = run_sums(columns(order), starts, top)
        np.testing.assert_array_equal(hi, exact(ident))
        assert hi.shape == lo.shape == (len(starts), len(pairs))


@pytest.mark.parametrize("spread", [1.0, 1e-9, 1e-30])
def test_bincount_exact_is_the_exact_sum_whatever_the_order_and_the_batches(spread):
    """Per-bin sums of values of very different sizes (a bin of small values beside large ones, bins that cancel):
    the pair's high part is the correctly rounded exact sum (math.fsum), however the values were batched and
    ordered."""
    from calibcli.core.compensated import bincount_exact

    rng = np.random.default_rng(3)
    n, size = 20_000, 40
    key = rng.integers(0, size, n)
    x = rng.standard_normal(n) * np.where(key % 4 == 0, spread, 1.0) + np.where(key % 4 == 1, 1e6, 0.0)
    want = np.array([math.fsum(x[key == b]) for b in range(size)])

    def summed(order, batch):
        hi, lo = np.zeros(size), np.zeros(size)
        for s in range(0, n, batch):
            k, v = key[order[s : s + batch]], x[order[s : s + batch]]
            add_exact(hi, lo, *bincount_exact(k, v, np.bincount(k, minlength=size)))
        return hi

    for order, batch in ((np.arange(n), n), (rng.permutation(n), 777), (rng.permutation(n), 5_000)):
        got = summed(order, batch)
        np.testing.assert_array_equal(got, want)
    plain = np.bincount(key, weights=x, minlength=size)
    assert not np.array_equal(plain, want)  # (plain sums are not exact here)


def test_bincount_exact_rows_is_each_rows_bincount_exact_to_the_bit():
    """The columns summed at once (the binned cells' six or more per batch) are the same pairs as each column
    summed alone: rows that stop splitting at different levels, a row of zeros, a row with an infinity and one with
    a NaN, values spread over 60 binades, a bin that cancels."""
    from calibcli.core.compensated import bincount_exact, bincount_exact_rows

    rng = np.random.default_rng(11)
    n, size = 5_000, 30
    key = rng.integers(0, size, n)
    count = np.bincount(key, minlength=size)
    small = rng.normal(size=n) * 1e-30
    cancel = np.where(key == 3, 1e16, rng.uniform(size=n))
    cancel[np.flatnonzero(key == 3)[::2]] = -1e16
    rows = [
        rng.uniform(size=n),
        rng.normal(size=n) * np.exp2(rng.integers(-30, 30, n)),
        np.zeros(n),
        np.where(np.arange(n) == 17, np.inf, rng.uniform(size=n)),
        np.where(np.arange(n) == 5, np.nan, rng.uniform(size=n)),
        np.where(key < 10, small, rng.uniform(size=n) * 1e10),
        cancel,
        np.full(n, 1e300),
    ]
    x = np.stack(rows)
    with np.errstate(invalid="ignore", over="ignore"):
        hi, lo = bincount_exact_rows(key, x, count)
        for j, row in enumerate(rows):
            one_hi, one_lo = bincount_exact(key, row, count)
            np.testing.assert_array_equal(hi[j], one_hi, err_msg=str(j))
            np.testing.assert_array_equal(lo[j], one_lo, err_msg=str(j))
    empty_hi, empty_lo = bincount_exact_rows(key[:0], x[:, :0], np.zeros(size, dtype=np.int64))
    assert empty_hi.shape == (len(rows), size) and not empty_hi.any() and not empty_lo.any()
