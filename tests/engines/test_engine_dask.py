"""`--engine dask` (SPEC 8 "Engines"): the same report as the local engine, on a real Dask cluster.

No mocks: a ``LocalCluster`` of 2 worker processes (shared by most tests), the CLI's own local
cluster (``--workers 2``), and a scheduler and workers started as separate processes with the ``dask``
command, as the README shows. Reports are compared with the local engine's to 1e-12 (bootstrap
intervals included): only ``parameters.engine`` and ``parameters.workers`` may differ.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed")

from _cli import MULTI, run  # noqa: E402

N = 200_000  # more than the 2^17 rows kept per problem: sufficient-statistics bootstrap, quantile second pass
ROW_GROUP = 10_000
BATCH = "16384"  # fragments: one row group each (20); the local engine reads other batches
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
QUIET = {"CALIBCLI_DEBUG": ""}


def _console_script() -> str:
    import shutil

    return shutil.which("calibcli", path=os.path.dirname(sys.executable)) or "calibcli"


def _write_shards(root: Path, n: int, shards: int, row_group: int, seed: int = 11) -> Path:
    rng = np.random.default_rng(seed)
    z = rng.beta(2, 3, n)
    y = (rng.random(n) < z**1.2).astype(np.int64)
    w = rng.integers(1, 4, n).astype(np.float64)
    model = np.where(rng.random(n) < 0.7, "a", "b")  # group a: 140,000 rows (> 2^17), b: 60,000
    table = pa.table({"prob": z, "label": y, "w": w, "model": model})
    root.mkdir(parents=True)
    for k, part in enumerate(np.array_split(np.arange(n), shards)):
        pq.write_table(table.take(part), root / f"part-{k:02d}.parquet", row_group_size=row_group)
    return root


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    return _write_shards(tmp_path_factory.mktemp("dask") / "shards", N, 5, ROW_GROUP)


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes, one thread each, on 127.0.0.1 (workers' logs off stderr)."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                      silence_logs=logging.CRITICAL) as c:
        yield c.scheduler_address


def _json(*args) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def assert_same_report(dask_doc: dict, local_doc: dict, *, rel: float = 1e-12) -> None:
    """Equal documents, numbers to ``rel``, except the engine and the workers in the parameters."""
    assert dask_doc["parameters"].pop("engine") == "dask" and local_doc["parameters"].pop("engine") == "local"
    assert dask_doc["parameters"].pop("workers") >= 1 and local_doc["parameters"].pop("workers") is None
    _compare(dask_doc, local_doc, rel, "$")


def _compare(a, b, rel, where):
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), where
        for k in b:
            _compare(a[k], b[k], rel, f"{where}.{k}")
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, rel, f"{where}[{i}]")
    elif isinstance(b, float) and not isinstance(a, bool):
        assert math.isclose(a, b, rel_tol=rel, abs_tol=1e-300), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


ECE_CASES = {
    "groups-weights-quantile": ["--group-by", "model", "--weight-col", "w", "--strategy", "quantile", "--n-boot", "100"],
    "pooled-uniform": ["--n-boot", "100", "--seed", "5"],
}


@pytest.mark.parametrize("options", ECE_CASES.values(), ids=ECE_CASES.keys())
def test_ece_equals_the_local_engine(shards, cluster, options):
    local = _json("ece", shards, *options, "--batch-rows", BATCH)
    remote = _json("ece", shards, *options, "--batch-rows", BATCH, "--engine", "dask", "--scheduler", cluster)
    if "--group-by" in options:
        assert [f["group"] for f in local["files"]] == [{"model": "a"}, {"model": "b"}]
        assert "quantile edges from" in " ".join(local["files"][0].get("notes", []))  # the second pass ran
    assert_same_report(remote, local)


def test_multiclass_marginal_file_equals_the_local_engine(cluster):
    options = ["--mode", "marginal", "--n-boot", "50", "--class-weights", "prior"]
    assert_same_report(_json("ece", MULTI, *options, "--engine", "dask", "--scheduler", cluster), _json("ece", MULTI, *options))


SMECE_CASES = {
    "groups-weights": ["--group-by", "model", "--weight-col", "w", "--n-boot", "20"],
    # a sigma below what the first pass's grid resolves (2^-14): a second pass on a finer grid
    "second-pass": ["--sigma", "0.00002", "--n-boot", "0"],
}


@pytest.mark.parametrize("options", SMECE_CASES.values(), ids=SMECE_CASES.keys())
def test_smece_equals_the_local_engine(shards, cluster, options):
    local = _json("smece", shards, *options, "--batch-rows", BATCH)
    remote = _json("smece", shards, *options, "--batch-rows", BATCH, "--engine", "dask", "--scheduler", cluster)
    assert_same_report(remote, local)


@pytest.fixture(scope="module")
def deep_shards(tmp_path_factory) -> Path:
    """300,000 rows in 3 files of 100 row groups of 1,000 rows: with ``--batch-rows 1000`` and a task per fragment,
    300 tasks, so the merge tree has blocks of 16 and two levels of 16-ary merges above them (19 -> 2 -> 1)."""
    return _write_shards(tmp_path_factory.mktemp("dask_deep") / "shards", 300_000, 3, 1000, seed=12)


DEEP_CASES = {
    "ece-bootstrap": ["ece", "--n-boot", "200"],
    "ece-weights-bootstrap": ["ece", "--n-boot", "200", "--weight-col", "w", "--seed", "4"],
    "smece": ["smece", "--n-boot", "10", "--weight-col", "w"],
    "ece-groups-quantile": ["ece", "--group-by", "model", "--strategy", "quantile", "--n-boot", "100"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", DEEP_CASES.values(), ids=DEEP_CASES.keys())
def test_a_tree_of_depth_two_equals_the_local_engine_to_1e_12(deep_shards, cluster, monkeypatch, command):
    # beyond the 2^17 rows kept, so every binned number (bootstrap intervals included) comes from the cells' sums,
    # whose order of addition the tree changes: each within 1e-12 of the local engine's, residuals included
    from calibcli.io.columns import ColumnSpec

    (dataset,) = resolve_datasets_of(deep_shards)
    assert len(dataset.open(ColumnSpec(), batch_rows=1000).fragments()) == 300 > 16**2  # depth >= 2 above blocks
    name, *options = command
    local = _json(name, deep_shards, *options, "--batch-rows", "1000")
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "1")
    remote = _json(name, deep_shards, *options, "--batch-rows", "1000", "--engine", "dask", "--scheduler", cluster)
    if "--group-by" in options:
        assert [f["group"] for f in local["files"]] == [{"model": "a"}, {"model": "b"}]
    assert all(f["input"]["rows_used"] > 2**17 for f in local["files"][:1])
    assert_same_report(remote, local)


def test_a_local_cluster_of_workers_runs_and_is_shut_down(shards):
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    options = ["--group-by", "model", "--n-boot", "30", "--batch-rows", BATCH]
    r = run("ece", shards, *options, "--engine", "dask", "--workers", "2", "--json")
    assert r.exit_code == 0, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("Dask: a local cluster of 2 worker processes; dashboard http://127.0.0.1:")
    doc = json.loads(r.stdout)
    assert doc["parameters"]["workers"] == 2
    assert_same_report(doc, _json("ece", shards, *options))
    _wait_for(lambda: {p.pid for p in psutil.Process().children(recursive=True)} <= before, 60,
              "the workers to be gone")


def _binned(stream):
    from calibcli.ece_family import options as ece_options
    from calibcli.ece_family.accumulator import InputAccumulator

    return InputAccumulator(mode="binary", n_classes=2, class_names=stream.class_names,
                            options=ece_options.Options.library(strategy="quantile", n_boot=20))


def test_fragments_merged_in_this_process_equal_the_local_stream(shards):
    # the engine-independent half: fragments' parts merged in fragment order
    from calibcli.engines.fragments import reduce_in_process, run_fragments, run_local
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    (dataset,) = resolve_datasets([str(shards)])
    stream = dataset.open(ColumnSpec(weight_col="w"), batch_rows=16384, group_by=("model",))
    entries, counts = run_fragments(stream, lambda: _binned(stream), reduce_in_process)
    local = run_local(stream, lambda: _binned(stream))
    assert stream.describe(counts) == stream.describe()
    assert [g for g, _ in entries] == [g for g, _ in local] == [{"model": "a"}, {"model": "b"}]
    for (_, acc), (_, ref) in zip(entries, local):
        _compare(json.loads(json.dumps(acc.result().to_dict())), json.loads(json.dumps(ref.result().to_dict())), 1e-12, "$")


def test_fragments_are_packed_into_tasks_of_consecutive_rows():
    from types import SimpleNamespace

    from calibcli.engines.fragments import MAX_TASK_ROWS, pack_fragments, task_rows, TASKS_PER_WORKER

    frags = [SimpleNamespace(name=k, n_rows=n) for k, n in enumerate([3, 4, 10, 2, 2, None, 1, 0, 0])]
    names = [[f.name for f in task] for task in pack_fragments(frags, 7)]
    # runs of at most 7 rows; 10 rows alone; a fragment of unknown size counts as a full task; empty ones join
    assert names == [[0, 1], [2], [3, 4], [5], [6, 7, 8]]
    assert [[f.name for f in t] for t in pack_fragments(frags, 1)] == [[0], [1], [2], [3], [4], [5], [6, 7, 8]]
    assert pack_fragments([], 5) == []
    # about TASKS_PER_WORKER tasks per worker, at most MAX_TASK_ROWS rows each
    many = [SimpleNamespace(n_rows=500_000)] * 200
    assert task_rows(many, 2) == -(-100_000_000 // (2 * TASKS_PER_WORKER))
    assert len(pack_fragments(many, task_rows(many, 2))) == 2 * TASKS_PER_WORKER + 1  # 4,166,667: 8 fragments a task
    assert task_rows(many, 1) == 8_333_334 and task_rows(many * 2, 1) == MAX_TASK_ROWS == 2**23
    assert task_rows([SimpleNamespace(n_rows=0)], 4) == 1
    # 1e10 rows: at most 1,024 tasks (12,000 on 1,000 workers would keep the scheduler busier than the workers),
    # one per worker beyond
    huge = [SimpleNamespace(n_rows=5 * 10**6)] * 2000
    assert task_rows(huge, 1000) == task_rows(huge, 100) == 9_765_625 and task_rows(huge, 2000) == 5 * 10**6


@pytest.mark.parametrize("rows", [1, 35_000, 10**9])
def test_packed_tasks_merged_in_this_process_equal_the_local_stream(shards, rows):
    # a task of one fragment, of 3 (30,000 rows), of all 20: the same entries as the local stream
    from calibcli.engines.fragments import merge_parts, pack_fragments, run_fragment, run_fragments, run_local
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    def packed(fragments, *, first=None, second=None):
        tasks = pack_fragments(fragments, rows)
        assert len(tasks) == {1: 20, 35_000: 7, 10**9: 1}[rows]
        return merge_parts([run_fragment(task, first, second) for task in tasks])

    (dataset,) = resolve_datasets([str(shards)])
    stream = dataset.open(ColumnSpec(weight_col="w"), batch_rows=16384, group_by=("model",))
    entries, counts = run_fragments(stream, lambda: _binned(stream), packed)
    local = run_local(stream, lambda: _binned(stream))
    assert stream.describe(counts) == stream.describe()
    for (g, acc), (h, ref) in zip(entries, local, strict=True):
        assert g == h
        _compare(json.loads(json.dumps(acc.result().to_dict())), json.loads(json.dumps(ref.result().to_dict())), 1e-12, "$")


def test_task_rows_from_the_environment(shards, cluster, monkeypatch):
    # CALIBCLI_TASK_ROWS packs the 20 fragments of 10,000 rows into 4 tasks: the same report
    local = _json("ece", shards, "--n-boot", "30", "--batch-rows", BATCH)
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "50000")
    assert_same_report(_json("ece", shards, "--n-boot", "30", "--batch-rows", BATCH, "--engine", "dask", "--scheduler", cluster),
                       local)
    monkeypatch.setenv("CALIBCLI_TASK_ROWS", "many")
    r = run("ece", shards, "--engine", "dask", "--scheduler", cluster)
    assert r.exit_code == 2
    assert r.stderr == "Error: CALIBCLI_TASK_ROWS is 'many': expected a whole number of rows, at least 1 (or unset it)\n"


def test_progress_counts_fragments_done(shards, cluster):
    from contextlib import contextmanager

    from distributed import Client

    from calibcli.engines.dask import DaskEngine
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    bars = []

    @contextmanager
    def progress(total, description):
        bar = {"total": total, "description": description, "done": 0}
        bars.append(bar)
        yield lambda steps=1: bar.__setitem__("done", bar["done"] + steps)

    (dataset,) = resolve_datasets([str(shards)])
    stream = dataset.open(ColumnSpec(), batch_rows=16384)
    with Client(cluster) as client:
        entries, described = DaskEngine(client, workers=2, progress=progress).run(stream, lambda: _binned(stream))
    assert described["rows_used"] == N
    # two passes (quantile edges over more rows than are kept), 20 fragments each
    assert bars == [{"total": 20, "description": f"{shards}: fragments", "done": 20}] * 2


# ---------------------------------------------------------------------------------------------
# Errors: the local engine's message, exit code 2, nothing written


def _bad_dataset(root: Path, what: str) -> Path:
    data = _write_shards(root, 5000, 5, 400, seed=3)
    victim = data / "part-02.parquet"
    if what == "truncated":
        size = victim.stat().st_size
        with open(victim, "r+b") as fh:
            fh.truncate(size // 2)
    else:
        table = pq.read_table(victim)
        z = table["prob"].to_numpy().copy()
        z[777] = 1.25  # row 778 of the file, in its second row group
        pq.write_table(table.set_column(0, "prob", pa.array(z)), victim, row_group_size=400)
    return data


@pytest.mark.parametrize("what", ["truncated", "bad-row"])
def test_a_bad_shard_gives_the_local_error_and_no_output(tmp_path, cluster, what):
    data = _bad_dataset(tmp_path / "data", what)
    out = tmp_path / "report.json"
    local = run("ece", data, "-o", out)
    remote = run("ece", data, "-o", out, "--engine", "dask", "--scheduler", cluster)
    assert local.exit_code == remote.exit_code == 2
    (error,) = [line for line in remote.stderr.splitlines() if line.startswith("Error:")]
    assert error + "\n" == local.stderr
    assert error.startswith(f"Error: {data / 'part-02.parquet'}: ")
    if what == "bad-row":
        assert "row 778" in error and "probability is 1.25" in error
    assert not out.exists()


def test_an_unreadable_file_after_a_bad_row_is_reported_as_locally(tmp_path, cluster):
    # part-02 has a bad row, part-04's footer is gone: the local engine meets part-02 first
    data = _bad_dataset(tmp_path / "data", "bad-row")
    with open(data / "part-04.parquet", "r+b") as fh:
        fh.truncate(100)
    local = run("ece", data)
    remote = run("ece", data, "--engine", "dask", "--scheduler", cluster)
    assert remote.exit_code == 2 and remote.stderr.splitlines()[-1] + "\n" == local.stderr
    assert "part-02.parquet: row 778" in local.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "Error: --scheduler is for --engine dask: add --engine dask, or drop it"),
        (["--workers", "2"], "Error: --workers is for --engine dask: add --engine dask, or drop it"),
        (["--engine", "spark"], "Error: --engine is 'spark': expected one of local, dask"),
        (["--engine", "dask", "--workers", "0"], "Error: --workers is 0: expected at least 1 worker process"),
        (["--engine", "dask", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"],
         "Error: --scheduler and --workers both say where to run: --scheduler uses a running cluster, --workers starts "
         "a local one; give one of them"),
    ],
)
def test_engine_options_are_checked_before_any_work(args, message):
    r = run("ece", MULTI, *args)
    assert r.exit_code == 2 and r.stderr == message + "\n"


def test_errors_travel_back_from_workers_with_their_message():
    import pickle

    from calibcli.engines.dask import portable_error
    from calibcli.core.errors import CalibcliError, OptionError

    plain = CalibcliError("shard.parquet: row 3, column prob: probability is 2, outside [0, 1]; or pass {opt:drop_invalid}")
    assert portable_error(plain) is plain
    assert pickle.loads(pickle.dumps(plain)).for_cli() == plain.for_cli()
    option = OptionError("n_bins", "{name} is 0: expected at least 1")  # does not unpickle by itself
    sent = pickle.loads(pickle.dumps(portable_error(option)))
    assert sent.for_cli() == "--n-bins is 0: expected at least 1" and str(sent) == str(option)


PROBE = """
import importlib.abc, json, sys
class NoDask(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"No module named {name!r}")
        return None
if sys.argv[1] == "block":
    sys.meta_path.insert(0, NoDask())
out, args = sys.argv[2], sys.argv[3:]
sys.argv = ["calibcli", *args]
from calibcli.cli.app import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
with open(out, "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""


def _probe(tmp_path, mode: str, *args) -> tuple[dict, str]:
    out = tmp_path / "probe.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, mode, str(out), *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    return json.loads(out.read_text()), proc.stderr


def test_without_distributed_the_error_says_how_to_install_it(tmp_path):
    doc, stderr = _probe(tmp_path, "block", "ece", MULTI, "--engine", "dask")
    assert doc["code"] == 2
    assert stderr == 'Error: --engine dask needs the package distributed, which is not installed: pip install "calibcli[dask]"\n'


def test_plain_runs_import_neither_dask_nor_distributed(tmp_path):
    doc, _ = _probe(tmp_path, "plain", "ece", MULTI, "--n-boot", "10", "--json")
    assert doc["code"] == 0
    assert [m for m in doc["modules"] if m.split(".")[0] in ("dask", "distributed")] == []


# ---------------------------------------------------------------------------------------------
# A cluster started with the dask command: scheduler and workers as separate processes


def _start(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen(list(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, **kw)


def _stop(proc: subprocess.Popen) -> None:
    """SIGKILL the process and every process it started (a worker's nanny and the worker itself)."""
    import psutil

    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)
    psutil.wait_procs(family, timeout=30)


def _wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_scheduler_and_workers_started_with_the_dask_command(tmp_path, shards):
    from distributed import Client

    dask_cli = os.path.join(os.path.dirname(sys.executable), "dask")
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = _start(dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                       "--scheduler-file", str(scheduler_file))
    worker_cmd = [dask_cli, "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1", "--nthreads", "1",
                  "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]
    workers = []
    try:
        _wait_for(scheduler_file.exists, 60, "the scheduler file")
        address = json.loads(_wait_for(lambda: scheduler_file.read_text() or None, 10, "the address"))["address"]
        workers.append(_start(*worker_cmd))
        with Client(address, timeout=30) as client:
            client.wait_for_workers(1, timeout=60)

            # 1. the same report as the local engine, through --scheduler ADDRESS
            options = ["--group-by", "model", "--weight-col", "w", "--n-boot", "40", "--batch-rows", BATCH]
            assert_same_report(_json("ece", shards, *options, "--engine", "dask", "--scheduler", address),
                               _json("ece", shards, *options))

            # ... and through the scheduler file
            options = ["--mode", "marginal", "--n-boot", "20"]
            assert_same_report(_json("ece", MULTI, *options, "--engine", "dask", "--scheduler", scheduler_file),
                               _json("ece", MULTI, *options))

            # 2. the worker is killed mid-run and another one joins: the run ends with the same numbers
            many = _write_shards(tmp_path / "many", 1_000_000, 4, 5000, seed=5)  # 200 fragments of 5,000 rows
            options = ["--n-boot", "50", "--batch-rows", "5000", "--json"]
            reference = _json("ece", many, *options[:-1])
            def executed():
                return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())

            baseline = executed()
            run_env = {**os.environ, **QUIET, "DASK_SCHEDULER_ADDRESS": address,  # Dask's own variable
                       "CALIBCLI_TASK_ROWS": "5000"}  # a task per fragment
            cli = subprocess.Popen([_console_script(), "ece", str(many), *options, "--engine", "dask"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run_env)
            done_before = _wait_for(lambda: executed() - baseline >= 20 and executed() - baseline, 60, "20 tasks done")
            assert cli.poll() is None, "the run ended before the worker could be killed"
            _stop(workers.pop())
            workers.append(_start(*worker_cmd))
            stdout, stderr = cli.communicate(timeout=120)
            assert cli.returncode == 0, stderr
            assert done_before < 200 and executed() > 0  # the first worker did not finish; the new one ran the rest
            assert "(1 workers)" in stderr
            assert_same_report(json.loads(stdout), reference)
    finally:
        for proc in workers + [scheduler]:
            _stop(proc)


def test_ctrl_c_stops_the_run_and_the_local_cluster(tmp_path):
    import psutil

    # 4 million rows: a run of several seconds of the worker's CPU (the workers merge the tasks' states
    # among themselves now, so the client no longer slows the run down)
    many = _write_shards(tmp_path / "many", 4_000_000, 8, 5000, seed=6)
    cli = subprocess.Popen([_console_script(), "ece", str(many), "--batch-rows", "5000", "--engine", "dask", "--workers", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **QUIET})
    try:
        first = cli.stderr.readline()
        assert first.startswith("Dask: a local cluster of 1 worker processes"), first
        children = psutil.Process(cli.pid).children(recursive=True)
        assert children
        # the signal comes once the worker is at work (its CPU time), not after a fixed sleep
        def cpu() -> float:
            total = 0.0
            for c in children:
                try:
                    total += c.cpu_times().user
                except psutil.Error:
                    pass
            return total

        _wait_for(lambda: cpu() > 1.0 or cli.poll() is not None, 120, "the worker to start computing")
        cli.send_signal(signal.SIGINT)
        _, stderr = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130
    assert stderr.splitlines()[-1] == "Error: interrupted"
    _wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in children), 30,
              "the cluster's processes to end")


# ---------------------------------------------------------------------------------------------
# Reduction on the workers: a tree of merge tasks, one state to the client


def test_the_reduction_graph_is_a_tree_of_blocks_and_merges():
    from calibcli.engines.dask import reduction_graph

    tasks = [(k,) for k in range(2000)]
    graph, blocks, root = reduction_graph(tasks, None, "t", 16)
    leaves = [k for k in graph if k.startswith("calibcli-fragment-")]
    merges = sorted(k for k in graph if k.startswith("calibcli-merge-"))
    assert len(leaves) == 2000 and len(blocks) == 125  # 16 tasks a block
    assert blocks[0] == ("calibcli-block-t-0000000", (0, 16)) and blocks[-1][1] == (1984, 2000)
    assert len(merges) == 8 + 1 and root == "calibcli-merge-t-2-0000000"  # 125 -> 8 -> 1: depth 3 with the blocks
    assert graph[blocks[1][0]][2:] == tuple(leaves[16:32])  # a block's inputs: consecutive tasks, in row order
    # one task: the block is the root
    graph, blocks, root = reduction_graph([(0,)], None, "u", 16)
    assert root == blocks[0][0] and len(graph) == 3


def test_a_block_reports_its_first_bad_task_in_row_order():
    from calibcli.engines.fragments import Part, merge_parts
    from calibcli.engines.dask import _block, _Box
    from calibcli.core.errors import CalibcliError

    first, second = CalibcliError("part-01: bad row"), CalibcliError("part-02: bad row")
    with pytest.raises(CalibcliError, match="part-01"):
        _block(_Box(merge_parts), Part(), Part(error=first), Part(error=second))  # whichever failed first in time


@pytest.mark.parametrize("split_every", [2, 16])
def test_the_tree_in_this_process_equals_the_local_stream(shards, split_every):
    # the graph the cluster runs, run by Dask's synchronous scheduler here: the same entries as the local engine,
    # however deep the tree (a task per fragment: 20 tasks, a tree of depth 5 with split_every 2)
    import dask

    from calibcli.engines import dask as engine
    from calibcli.engines.fragments import merge_parts, pack_fragments, run_fragments, run_local

    def reduce(fragments, *, first=None, second=None):
        tasks = pack_fragments(fragments, 1)
        graph, blocks, root = engine.reduction_graph(tasks, first if second is None else second, "x", split_every,
                                                     second=second is not None)
        part = dask.get(graph, root)
        template = first if second is None else second
        reference = merge_parts([engine._task(engine._Box(engine._fragment_leaf), engine._Box(t), template,
                                              second is not None) for t in tasks])
        assert part.counts == reference.counts
        return part

    (dataset,) = resolve_datasets_of(shards)
    stream = dataset.open(_columns(), batch_rows=16384, group_by=("model",))
    entries, counts = run_fragments(stream, lambda: _binned(stream), reduce)
    local = run_local(stream, lambda: _binned(stream))
    assert stream.describe(counts) == stream.describe()
    for (g, acc), (h, ref) in zip(entries, local, strict=True):
        assert g == h
        _compare_tree(acc.result().to_dict(), ref.result().to_dict())


def resolve_datasets_of(path):
    from calibcli.io.resolve import resolve_datasets

    return resolve_datasets([str(path)])


def _columns():
    from calibcli.io.columns import ColumnSpec

    return ColumnSpec(weight_col="w")


def test_a_deep_tree_on_the_cluster_sends_the_client_one_state(shards, cluster):
    # 20 tasks merged in pairs on the workers (blocks of 2, then 5 -> 3 -> 2 -> 1): the local engine's entries;
    # the client's futures are the blocks and the root only, never a task's state
    from distributed import Client

    from calibcli.engines.dask import DaskEngine
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    (dataset,) = resolve_datasets([str(shards)])
    stream = dataset.open(ColumnSpec(weight_col="w"), batch_rows=16384, group_by=("model",))
    local = run_local_entries(stream)
    with Client(cluster) as client:
        engine = DaskEngine(client, workers=2, task_rows=1, split_every=2)
        asked = []
        get = client.get

        def recorded(graph, keys, **kwargs):
            asked.append(list(keys))
            return get(graph, keys, **kwargs)

        client.get = recorded
        try:
            entries, described = engine.run(stream, lambda: _binned(stream))
        finally:
            client.get = get
    assert described == stream.describe()
    # two passes (quantile edges); each asks for the 10 blocks (their parts stay on the workers) and the root
    assert [[key.split("-")[1] for key in keys] for keys in asked] == [["block"] * 10 + ["merge"]] * 2
    for (g, acc), (h, ref) in zip(entries, local, strict=True):
        assert g == h
        _compare_tree(acc.result().to_dict(), ref.result().to_dict())


def run_local_entries(stream):
    from calibcli.engines.fragments import run_local

    return run_local(stream, lambda: _binned(stream))


def _compare_tree(a: dict, b: dict) -> None:
    """The tree's entries against the local engine's: every number to 1e-12, the within-bin Brier term too (a
    residual, brier - (reliability - resolution + uncertainty), of about 3e-4 from four terms of about 0.1,
    whose relative rounding error is about 1,000x theirs). A tree adds the tasks' sums in another order than one
    stream does; the cells' sums are exact pairs (calibcli.core.compensated), so the order does not show."""
    _compare(json.loads(json.dumps(a)), json.loads(json.dumps(b)), 1e-12, "$")


# ---------------------------------------------------------------------------------------------
# Footers off the client: a pool of threads here, tasks on the cluster for object stores


def test_footers_are_read_in_threads_in_file_order(tmp_path, monkeypatch):
    import threading

    from calibcli.io import sources

    data = _write_shards(tmp_path / "d", 6000, 6, 500, seed=8)
    seen = set()
    sizes_of = sources.file_sizes

    def recorded(*file):
        seen.add(threading.current_thread().name)
        return sizes_of(*file)

    (dataset,) = resolve_datasets_of(data)
    stream = dataset.open(_columns(), batch_rows=500)
    serial = stream.fragments(map_files=lambda f, files: [f(*file) for file in files])
    monkeypatch.setattr(sources, "file_sizes", recorded)
    threaded = stream.fragments()
    assert threaded == serial and len(threaded) == 6 * 2  # 6 files of two 500-row groups, a run each
    assert all(name.startswith("calibcli-footer") for name in seen)
    # the first unreadable file in order is the one reported, whichever thread met it first
    (data / "part-04.parquet").write_bytes(b"not parquet")
    (data / "part-01.parquet").write_bytes(b"nor this")
    fragments, error = resolve_datasets_of(data)[0].open(_columns(), batch_rows=500).readable_fragments()
    assert [f.path.rsplit("/", 1)[-1] for f in fragments] == ["part-00.parquet"] * 2
    assert "part-01.parquet" in str(error)


def test_footers_of_an_object_store_are_read_by_tasks_on_the_cluster(shards, cluster, monkeypatch):
    # the shards stand for an object store's files (the workers see the same paths here): their footers are
    # read by tasks on the cluster, and the report is the local engine's
    from distributed import Client

    from calibcli.engines import dask as engine
    from calibcli.engines.dask import DaskEngine
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.resolve import resolve_datasets

    monkeypatch.setattr(engine, "_in_object_store", lambda location: True)
    (dataset,) = resolve_datasets([str(shards)])
    stream = dataset.open(ColumnSpec(weight_col="w"), batch_rows=16384, group_by=("model",))
    local = run_local_entries(stream)
    with Client(cluster) as client:
        dask_engine = DaskEngine(client, workers=2)
        mapped = []
        map_tasks = client.map

        def recorded(function, *iterables, key, **kwargs):
            mapped.extend(key)
            return map_tasks(function, *iterables, key=key, **kwargs)

        client.map = recorded
        try:
            assert stream.fragments(map_files=dask_engine.map_files) == stream.fragments()
            entries, described = dask_engine.run(stream, lambda: _binned(stream))
        finally:
            client.map = map_tasks
    assert len(mapped) == 2 * 5 and all(key.startswith("calibcli-footer-") for key in mapped)  # 5 files, twice
    assert described == stream.describe()
    for (g, acc), (h, ref) in zip(entries, local, strict=True):
        assert g == h
        _compare_tree(acc.result().to_dict(), ref.result().to_dict())


def test_a_merge_whose_workers_keep_dying_says_so():
    from distributed.scheduler import KilledWorker

    from calibcli.engines.dask import _remote_error

    error = _remote_error(KilledWorker("calibcli-merge-x-1-0000000", "tcp://127.0.0.1:1", 3), None,
                          "merging the tasks' states")
    assert str(error) == "the Dask workers merging the tasks' states died repeatedly (out of memory?): see the workers' logs"
