"""The binned pipeline of mergeable accumulators (SPEC 8): batch size, order, splits and states do not
change the numbers; groups equal their rows run alone; the per-bin bootstrap tracks the per-row one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibcli.binned.accumulator import BinnedAccumulator
from calibcli.core.rows import RowSample
from calibcli.binned.estimators import binned_calibration
from calibcli.core.groups import Grouped
from calibcli.ece_family import options as ece_options
from calibcli.ece_family.accumulator import evaluate_binned, InputAccumulator
from calibcli.core.resampling import Multiplicities, poisson_multiplicities, row_hash

RNG = np.random.default_rng(20261123)
N = 6000
Z = RNG.beta(2, 3, N)
Y = (RNG.random(N) < Z**1.3).astype(np.int64)
W = RNG.integers(1, 4, N).astype(np.float64)
ROWS = np.arange(N)


def _stream(acc, order, batch, weights=None):
    for start in range(0, N, batch):
        sel = order[start: start + batch]
        acc.update(ROWS[sel], Z[sel], Y[sel], None if weights is None else weights[sel])
    return acc


def _close(a, b, rel=1e-12):
    for name, m in a.metrics.items():
        other = b.metrics[name]
        # brier_within_bin is by definition a small difference of sums (brier - reliability + resolution
        # - uncertainty): its rounding is relative to the Brier score it completes, not to itself.
        scale = a.metrics["brier_score"].estimate if name == "brier_within_bin" else 0.0
        for field in ("estimate", "ci_low", "ci_high", "upper_bound"):
            x, y = getattr(m, field), getattr(other, field)
            if x is None:
                assert y is None, (name, field)
            else:
                assert y == pytest.approx(x, rel=rel, abs=max(1e-15, rel * scale)), (name, field)


@pytest.mark.parametrize("row_limit", [N, 500], ids=["rows kept", "per-bin statistics"])
@pytest.mark.parametrize("weighted", [False, True])
def test_batch_size_order_split_and_state_round_trip_give_the_same_numbers(row_limit, weighted):
    w = W if weighted else None
    kwargs = dict(n_bins=12, row_limit=row_limit)
    one = _stream(BinnedAccumulator(**kwargs), ROWS, N, w).result(n_boot=60, seed=5)
    small = _stream(BinnedAccumulator(**kwargs), ROWS, 1000, w).result(n_boot=60, seed=5)
    shuffled = _stream(BinnedAccumulator(**kwargs), RNG.permutation(N), 777, w)
    parts = np.array_split(RNG.permutation(N), 3)
    split = []
    for part in parts:
        acc = BinnedAccumulator(**kwargs)
        acc.update(ROWS[part], Z[part], Y[part], None if w is None else w[part])
        split.append(BinnedAccumulator.from_dict(json.loads(json.dumps(acc.to_dict()))))
    merged = split[2].merge(split[0]).merge(split[1])
    for other in (small, shuffled.result(n_boot=60, seed=5), merged.result(n_boot=60, seed=5)):
        _close(one, other)
    expected = "over rows" if row_limit == N else "per-bin sufficient statistics"
    assert expected in one.metrics["ece_l1_plugin"].ci_method


def test_kept_rows_give_exactly_the_library_function():
    acc = _stream(BinnedAccumulator(n_bins=10, strategy="quantile", row_limit=N), ROWS, 999)
    ref = binned_calibration(Y, Z, n_bins=10, strategy="quantile", n_boot=40, seed=2)
    assert acc.result(n_boot=40, seed=2).metrics == ref.metrics


def test_per_bin_point_estimates_equal_the_row_estimates():
    rows = _stream(BinnedAccumulator(row_limit=N), ROWS, N).result()
    cells = _stream(BinnedAccumulator(row_limit=10), ROWS, N).result()
    for name, m in rows.metrics.items():
        assert cells.metrics[name].estimate == pytest.approx(m.estimate, rel=1e-10, abs=1e-14), name


def test_per_bin_bootstrap_interval_tracks_the_per_row_interval():
    rows = _stream(BinnedAccumulator(row_limit=N), ROWS, N).result(n_boot=400, seed=1)
    cells = _stream(BinnedAccumulator(row_limit=10), ROWS, N).result(n_boot=400, seed=1)
    for name in ("ece_l1_plugin", "ece_l2_plugin", "brier_score", "log_loss", "dce"):
        a, b = rows.metrics[name], cells.metrics[name]
        width = a.ci_high - a.ci_low
        assert abs((b.ci_high - b.ci_low) - width) < 0.25 * width, name
        assert abs(b.ci_low - a.ci_low) < 0.3 * width and abs(b.ci_high - a.ci_high) < 0.3 * width, name


def test_quantile_bins_beyond_the_row_limit_take_their_edges_from_a_first_pass():
    first = _stream(BinnedAccumulator(n_bins=8, strategy="quantile", row_limit=100), ROWS, 1000)
    assert first.needs_edges
    edges, how = first.fitted_edges()
    assert how == "exact quantiles of all predictions"
    second = _stream(BinnedAccumulator(n_bins=8, strategy="quantile", row_limit=100, edges=edges), ROWS, 1000)
    ref = binned_calibration(Y, Z, n_bins=8, strategy="quantile")
    got = second.result()
    np.testing.assert_allclose(got.bin_bounds, ref.bin_bounds)
    assert got.metrics["ece_l1_plugin"].estimate == pytest.approx(ref.metrics["ece_l1_plugin"].estimate, rel=1e-12)


def test_poisson_multiplicities_depend_on_seed_replicate_and_row_only():
    rows = np.arange(200_000)
    full = poisson_multiplicities(3, 7, rows)
    part = RNG.permutation(rows)[:5000]
    np.testing.assert_array_equal(poisson_multiplicities(3, 7, part), full[part])
    assert not np.array_equal(poisson_multiplicities(4, 7, rows), full)
    assert not np.array_equal(Multiplicities(3, rows).replicate(8), full)
    assert abs(full.mean() - 1) < 0.01 and abs(full.var() - 1) < 0.02  # Poisson(1)


def test_bottom_k_sample_is_the_same_however_the_rows_arrive():
    a = RowSample(300, seed=9)
    _stream(a, ROWS, 1000)
    b, c = RowSample(300, seed=9), RowSample(300, seed=9)
    order = RNG.permutation(N)
    b.update(ROWS[order[:2500]], Z[order[:2500]], Y[order[:2500]])
    c.update(ROWS[order[2500:]], Z[order[2500:]], Y[order[2500:]])
    merged = RowSample.from_dict(json.loads(json.dumps(c.merge(b).to_dict())))
    np.testing.assert_array_equal(a.arrays()[0], merged.arrays()[0])
    expected = np.sort(ROWS[np.argsort(row_hash(9, ROWS))[:300]])
    np.testing.assert_array_equal(a.arrays()[0], expected)
    assert not a.complete and a.n_seen == N


def test_groups_equal_each_group_run_alone_and_merge_across_parts():
    P = np.column_stack([1 - Z, Z])
    g = np.where(RNG.random(N) < 0.3, "a", "b").astype(object)
    options = ece_options.Options.library(n_boot=30, seed=4, row_limit=N)

    def new():
        return InputAccumulator(mode="binary", n_classes=2, class_names=("0", "1"), options=options)

    grouped = Grouped(new)
    halves = np.array_split(ROWS, 2)
    other = Grouped(new)
    grouped.update((g[halves[0]],), halves[0], P[halves[0]], Y[halves[0]])
    other.update((g[halves[1]],), halves[1], P[halves[1]], Y[halves[1]])
    grouped.merge(other)
    assert sorted(grouped.groups) == [("a",), ("b",)]
    for key, acc in grouped.groups.items():
        sel = g == key[0]
        alone = new().update(ROWS[sel], P[sel], Y[sel])
        assert acc.result().headline() == alone.result().headline()
        assert acc.n_rows == int(sel.sum())


def test_too_many_groups_is_an_error_that_says_how_many():
    from calibcli.core.errors import CalibcliError

    grouped = Grouped(lambda: BinnedAccumulator(), max_groups=3)
    with pytest.raises(CalibcliError, match="more than 3 distinct groups"):
        grouped.update((np.arange(4),), np.arange(4), np.full(4, 0.5), np.array([0, 1, 0, 1]))


def test_marginal_state_round_trip_and_joint_aggregate():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(4), 900)
    c = np.array([rng.choice(4, p=p) for p in P])
    ref = evaluate_binned(c, P, mode="marginal", n_boot=25, seed=3, class_weights="prior")
    options = ece_options.Options.library(n_boot=25, seed=3, class_weights="prior", row_limit=900)
    parts = []
    for sel in np.array_split(rng.permutation(900), 4):
        acc = InputAccumulator(mode="marginal", n_classes=4, class_names=tuple("0123"), options=options)
        acc.update(sel, P[sel], c[sel])
        parts.append(InputAccumulator.from_dict(json.loads(json.dumps(acc.to_dict()))))
    merged = parts[3].merge(parts[1]).merge(parts[0]).merge(parts[2]).result()
    for name, m in ref.aggregate.items():
        assert merged.aggregate[name].estimate == pytest.approx(m.estimate, rel=1e-12)
        if m.ci_low is None:  # the ICI family has no interval (calibcli.clinical.accumulator)
            assert merged.aggregate[name].ci_low is None
        else:
            assert merged.aggregate[name].ci_low == pytest.approx(m.ci_low, rel=1e-12)
    assert "jointly" in ref.aggregate["ece_l1_plugin"].ci_method
    for name, m in ref.multiclass_scores.items():
        assert merged.multiclass_scores[name].ci_high == pytest.approx(m.ci_high, rel=1e-12)


class _Recorder:
    """A group's accumulator that keeps what it was fed: its rows' indices, labels and weights, in order, and how
    many updates brought them."""

    def __init__(self):
        self.rows, self.labels, self.weights, self.updates = [], [], [], 0

    def update(self, row_index, probs, labels, w=None):
        self.rows += row_index.tolist()
        self.labels += labels.tolist()
        self.weights += [] if w is None else w.tolist()
        self.updates += 1
        return self


@pytest.mark.parametrize("weighted", [False, True])
def test_a_grouped_pass_feeds_each_group_its_rows_in_order_whatever_batches_it_holds(monkeypatch, weighted):
    """A grouped pass splits several batches at once into their groups (fragments.GROUPED_BYTES of them): every
    group still gets all its rows, in row order, with their weights; batches of other column kinds (another
    file's integer groups after text ones) are split apart rather than concatenated."""
    from calibcli.engines import fragments
    from calibcli.io.fragments import Batch

    codes = RNG.integers(0, 7, N)
    text = np.array([f"g{c}" for c in codes], dtype=object)
    weights = W if weighted else None

    def batches(size):
        for start in range(0, N, size):
            sel = slice(start, start + size)
            as_text = start < N // 2  # the first half's groups are text, the second's integers (another file)
            yield Batch(
                probs=Z[sel],
                labels=Y[sel],
                sample_weight=None if weights is None else weights[sel],
                row_index=ROWS[sel],
                groups=(text[sel] if as_text else codes[sel],),
                source="a.csv" if as_text else "b.csv",
            )

    def run(size, held):
        monkeypatch.setattr(fragments, "GROUPED_BYTES", held)
        return fragments._stream_into(batches(size), ("g",), {}, lambda key: _Recorder())

    one_by_one = run(250, 1)  # (each batch split alone, as before)
    for held in (40_000, 1 << 20):  # a few batches at a time; every batch of a file at once
        state = run(250, held)
        assert state.keys() == one_by_one.keys()
        assert len(state) == 14  # g0..g6 and 0..6: the two files' kinds of value kept apart
        for key, acc in state.items():
            alone = one_by_one[key]
            assert (acc.rows, acc.labels, acc.weights) == (alone.rows, alone.labels, alone.weights)
            assert acc.rows == sorted(acc.rows)
            assert acc.updates < alone.updates
            if held == 1 << 20:  # (a group is in one file: its rows in one update)
                assert acc.updates == 1
