"""`calibcli compare --engine dask`: both inputs read in ranges of rows on a cluster, the same report as the local
engine (SPEC 8 "Engines"; the paired bootstrap keyed by (seed, replicate, global row)).

The baseline and the candidate are laid out differently on purpose (shards of 5,000-row row groups against one
file of 7,000-row row groups), so that a task's range of rows cuts through the other input's fragments. Most
cases run on a real ``LocalCluster`` of 2 worker processes; the ranges and the merge of their parts are also
run in this process, through the graph the cluster runs (Dask's synchronous scheduler), for the cases that
decide pairing at a range's boundary.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed")

from _cli import run  # noqa: E402
from test_engine_dask import _json, assert_same_report  # noqa: E402

N = 30_000


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes, one thread each, on 127.0.0.1 (as tests/engines/test_engine_dask.py's)."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL) as c:
        yield c.scheduler_address


def _models(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    z = rng.beta(2, 3, n)
    y = (rng.random(n) < z**1.2).astype(np.int64)
    w = rng.integers(1, 4, n).astype(np.float64)
    candidate = np.clip(z**1.2 + rng.normal(0, 0.02, n), 0.001, 0.999)
    return z, candidate, y, w


def _shards(root: Path, z, y, w, shards: int, row_group: int) -> Path:
    root.mkdir(parents=True)
    table = pa.table({"prob": z, "label": y, "w": w})
    for k, part in enumerate(np.array_split(np.arange(len(y)), shards)):
        pq.write_table(table.take(part), root / f"part-{k:02d}.parquet", row_group_size=row_group)
    return root


def _one_file(path: Path, z, y, w, row_group: int) -> Path:
    pq.write_table(pa.table({"prob": z, "label": y, "w": w}), path, row_group_size=row_group)
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask_compare")
    z, cand, y, w = _models(N)
    base = _shards(root / "base", z, y, w, 3, 5_000)
    same = _one_file(root / "cand.parquet", cand, y, w, 7_000)
    y2 = y.copy()
    y2[17_500] = 1 - y2[17_500]  # inside a range (the baseline's row groups, 5,000 rows, are the ranges)
    flipped = _one_file(root / "flipped.parquet", cand, y2, w, 7_000)
    short = _one_file(root / "short.parquet", cand[:22_500], y[:22_500], w[:22_500], 7_000)  # ends inside a range
    holed = cand.copy()
    holed[15_000] = np.nan  # dropped as invalid at the start of a range: rows no longer beside their example
    dropped = _one_file(root / "dropped.parquet", holed, y, w, 7_000)
    return {"base": base, "cand": same, "flipped": flipped, "short": short, "dropped": dropped}


COMMON = ("--prob-col", "prob", "--label-col", "label", "--batch-rows", "4096")
CASES = {
    "paired-smece-quantile": ("--n-boot", "100", "--smece", "--strategy", "quantile"),
    "paired-weights-gates": ("--n-boot", "100", "--weight-col", "w", "--fail-if-worse-by", "ece_l1_plugin=1"),
    "pairing-none": ("--n-boot", "50", "--pairing", "none", "--seed", "9"),
}


@pytest.mark.parametrize("options", CASES.values(), ids=CASES.keys())
def test_compare_on_a_cluster_equals_the_local_engine(inputs, cluster, monkeypatch, options):
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "7500")  # a range per 5,000-row row group, across the candidate's
    local = _json("compare", inputs["base"], inputs["cand"], *COMMON, *options)
    remote = _json("compare", inputs["base"], inputs["cand"], *COMMON, *options, "--engine", "dask",
                   "--scheduler", cluster)
    assert remote["files"][0]["input"]["rows_used"] == N
    assert_same_report(remote, local)


@pytest.mark.parametrize("other", ["flipped", "short", "dropped"])
def test_unpaired_on_a_cluster_for_the_local_engine_s_reason(inputs, cluster, monkeypatch, other):
    """Rows that are not the same examples: found in one range (a label), at a range's end (a shorter
    candidate), or shifted by a dropped row; the reason and the report are the local engine's."""
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "7500")
    args = ("compare", inputs["base"], inputs[other], *COMMON, "--n-boot", "50", "--drop-invalid")
    local = _json(*args)
    remote = _json(*args, "--engine", "dask", "--scheduler", cluster)
    assert not local["parameters"]["pairing"]["paired"]
    expected = {"flipped": "the labels differ first at row 17501 ",
                "short": f"{inputs['base']} has 30000 rows and {inputs['short']} has 22500",
                "dropped": "different rows were dropped as invalid: row 15001 of "}[other]
    assert local["parameters"]["pairing"]["reason"].startswith(expected)
    assert_same_report(remote, local)


def test_pairing_by_order_fails_on_a_cluster_as_locally(inputs, cluster, monkeypatch):
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "7500")
    args = ("compare", inputs["base"], inputs["flipped"], *COMMON, "--pairing", "order")
    local = run(*args)
    remote = run(*args, "--engine", "dask", "--scheduler", cluster)
    assert local.exit_code == remote.exit_code == 2
    assert local.stderr.startswith(f"Error: {inputs['base']} and {inputs['flipped']} cannot be paired by row order: "
                                   f"the labels differ first at row 17501 ")
    assert remote.stderr.splitlines()[-1] == local.stderr.splitlines()[-1]


def test_id_col_is_for_the_local_engine(inputs):
    r = run("compare", inputs["base"], inputs["cand"], *COMMON, "--id-col", "w", "--engine", "dask", "--workers", "1")
    assert r.exit_code == 2
    assert r.stderr == ("Error: --id-col pairs the rows on the local engine only (the candidate is held in memory, "
                        "indexed by ID): drop --engine dask, or pair by row order (no --id-col)\n")


def test_a_dead_scheduler_fails_compare_in_one_line(inputs):
    r = run("compare", inputs["base"], inputs["cand"], *COMMON, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert r.exit_code == 2 and r.stderr.startswith("Error: cannot connect to a Dask scheduler at tcp://127.0.0.1:9")
    assert len(r.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# The ranges and their merge, in this process


class _InProcess:
    """An engine with ``reduce_tasks`` that runs the cluster's graph with Dask's synchronous scheduler."""

    name = "dask"
    workers = 1

    def __init__(self, task_rows: int, split_every: int):
        self.task_rows, self.split_every, self.ranges = task_rows, split_every, []

    def map_files(self, function, files):
        return [function(*f) for f in files]

    def reduce_tasks(self, tasks, template, *, second=False, description="", leaf=None, merge=None, n_fragments=None):
        import dask

        from calibcli.engines import dask as engine

        self.ranges.append([t.within for t in tasks])
        graph, _, root = engine.reduction_graph(tasks, template, "t", self.split_every, second=second, leaf=leaf,
                                                merge=merge)
        return dask.get(graph, root)


def _streams(*paths, weights: bool = False):
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    spec = ColumnSpec(prob_col="prob", label_col="label", weight_col="w" if weights else None)
    return [resolve_datasets([str(p)])[0].open(spec, batch_rows=3000, drop_invalid=True) for p in paths]


@pytest.mark.parametrize("task_rows,split_every", [(1, 2), (2_000, 2), (7_500, 16), (40_000, 16)])
@pytest.mark.parametrize("other", ["cand", "flipped", "short", "dropped"])
def test_ranges_merged_in_a_tree_equal_one_stream(inputs, task_rows, split_every, other):
    """Any ranges (one a fragment of the leader, 2,000 rows, 7,500, all rows in one) merged in a tree of any
    shape: the pairing, its reason and every number as the local stream's."""
    from calibcli.ece_family import options as ece_options

    from calibcli.compare.run import compare_streams

    options = ece_options.Options.library(n_bins=10, strategy="quantile", n_boot=30, alpha=0.1, seed=4, class_weights="uniform")
    local = compare_streams(*_streams(inputs["base"], inputs[other]), options, mode_a="binary")
    engine = _InProcess(task_rows, split_every)
    remote = compare_streams(*_streams(inputs["base"], inputs[other]), options, mode_a="binary", engine=engine)
    assert len(engine.ranges) == 1 and (len(engine.ranges[0]) > 1 or task_rows == 40_000)  # rows kept: one pass
    assert remote.pairing == local.pairing and remote.seeds == local.seeds
    assert_same_report({"parameters": {"engine": "dask", "workers": 1}, "files": remote.entries,
                        "comparison": remote.comparison},
                       {"parameters": {"engine": "local", "workers": None}, "files": local.entries,
                        "comparison": local.comparison})


def test_pair_tasks_cover_every_row_once(inputs):
    """Ranges over both inputs: consecutive, from row 0, the last open-ended; each with the fragments holding its
    rows, and every fragment read by the ranges it overlaps."""
    from calibcli.compare.run import pair_tasks

    base, cand = _streams(inputs["base"], inputs["short"])
    fa, fb = base.fragments(), cand.fragments()
    tasks = pair_tasks(fa, fb, 10_000)
    assert [t.within[0] for t in tasks] == [0, 10_000, 20_000]  # the leader's (the baseline's) pairs of row groups
    assert [t.within[1] for t in tasks][:-1] == [10_000, 20_000] and tasks[-1].within[1] >= 1 << 62
    for t in tasks:
        lo, hi = t.within
        for fragments, side in ((fa, t.fragments_a), (fb, t.fragments_b)):
            assert list(side) == [f for f in fragments if f.row_offset < hi and f.row_offset + f.n_rows > lo]


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """200,000 rows: beyond the 2^17 rows kept, so the paired bootstrap draws from the joint cells of both inputs,
    and quantile edges take a second pass."""
    root = tmp_path_factory.mktemp("dask_compare_large")
    z, cand, y, w = _models(200_000, seed=8)
    return _shards(root / "base", z, y, w, 4, 10_000), _one_file(root / "cand.parquet", cand, y, w, 16_000)


@pytest.mark.parametrize("options", [("--strategy", "quantile", "--weight-col", "w"), ("--seed", "3",)],
                         ids=["quantile-weights", "uniform"])
def test_compare_beyond_the_rows_kept_on_a_cluster_equals_the_local_engine(large, cluster, options):
    base, cand = large
    args = ("compare", base, cand, *COMMON, "--n-boot", "200", *options)
    local = _json(*args)
    remote = _json(*args, "--engine", "dask", "--scheduler", cluster)
    assert local["parameters"]["pairing"]["paired"]
    assert local["comparison"]["ece_l1_plugin"]["ci_method"].startswith("paired Poisson bootstrap from joint per-bin")
    # the paired intervals beyond the rows kept are drawn from a square root of each joint cell's covariance, which
    # a change in the last bit of its sums can turn (an eigenbasis of near-equal eigenvalues): the sums are exact
    # pairs (calibcli.core.compensated) over the same batches on both engines, so the draws, the within-bin Brier
    # residual and the differences of near-equal metrics are the local engine's to 1e-12 like every other number
    assert_same_report(remote, local)
