"""The local cluster of ``--engine dask --workers N`` (SPEC 8 "Engines"): what its worker processes
get, and that none of them outlives the run.

Real processes only: the console script as a subprocess, its descendants seen with psutil.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

QUIET = {"CALIBCLI_DEBUG": ""}


def _env() -> dict:
    """A user's shell: this process's environment without the malloc variables that the nannies of
    clusters started in it by other tests copied there (a nanny sets them in its own process before it
    spawns a worker)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | QUIET


def _console_script() -> str:
    return shutil.which("calibcli", path=os.path.dirname(sys.executable)) or "calibcli"


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dask_shutdown") / "shards"
    root.mkdir()
    rng = np.random.default_rng(5)
    n = 400_000
    z = rng.beta(2, 3, n)
    y = (rng.random(n) < z).astype(np.int64)
    table = pa.table({"prob": z, "label": y})
    for k, part in enumerate(np.array_split(np.arange(n), 4)):
        pq.write_table(table.take(part), root / f"part-{k}.parquet", row_group_size=25_000)
    return root


def _alive(processes) -> list:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _worker_processes(parent: psutil.Process, n: int, timeout: float = 30) -> tuple[list, list]:
    """The run's worker processes (spawned by the nannies; not multiprocessing's resource tracker), once
    ``n`` of them exist, and every descendant of the calibcli process then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            everything = parent.children(recursive=True)
            found = [p for p in everything if "spawn_main" in " ".join(p.cmdline())]
        except psutil.NoSuchProcess:
            break
        if len(found) >= n:
            return found, everything
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} worker processes appeared under the calibcli process")


def test_a_workers_2_run_leaves_no_process_behind_and_its_workers_get_the_malloc_settings(shards, tmp_path):
    from calibcli.engines.dask import WORKER_MALLOC

    out = tmp_path / "report.json"
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    cli = subprocess.Popen([_console_script(), "ece", str(shards), "--n-boot", "300", "--batch-rows", "25000",
                            "--engine", "dask", "--workers", "2", "--json", "-o", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        first = cli.stderr.readline()
        assert first.startswith("Dask: a local cluster of 2 worker processes"), first
        parent = psutil.Process(cli.pid)
        workers, descendants = _worker_processes(parent, 2)
        environs = []
        for w in workers:
            try:
                environs.append(w.environ())
            except psutil.NoSuchProcess:  # the run ended meanwhile: nothing more to read
                pass
        _, stderr = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, stderr
    assert stderr == ""  # the dashboard line only: killing the workers at the end logs nothing
    assert json.loads(out.read_text())["parameters"]["workers"] == 2
    assert environs, "the workers ended before their environment could be read"
    for env in environs:
        for name, value in WORKER_MALLOC.items():
            assert env.get(name) == value
    # the calibcli process has exited: none of its worker processes may still run (not even reparented);
    # multiprocessing's resource tracker ends by itself once its pipe from calibcli closes
    assert _alive(workers) == []
    psutil.wait_procs(_alive(descendants), timeout=60)  # a hang's bound, not a speed claim: a loaded machine reaps slowly
    assert _alive(descendants) == []
    assert {p.pid for p in _alive(psutil.Process().children(recursive=True))} <= before


def test_the_user_s_own_malloc_settings_win(monkeypatch):
    import dask

    from calibcli.engines.dask import WORKER_MALLOC, worker_environ

    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    env = worker_environ()
    assert {k: env[k] for k in WORKER_MALLOC} == WORKER_MALLOC
    assert env["OMP_NUM_THREADS"] in (1, "1")  # Dask's other settings are kept
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")  # the user's own: the workers inherit it
    assert "MALLOC_MMAP_THRESHOLD_" not in worker_environ()
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")  # the nanny gives it precedence: ours would be half applied
    assert "MALLOC_MMAP_THRESHOLD_" not in worker_environ()
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 0}):
        assert worker_environ()["MALLOC_TRIM_THRESHOLD_"] == 0
        assert "MALLOC_MMAP_THRESHOLD_" not in worker_environ()


def test_a_failing_workers_2_run_ends_its_workers_too(shards, tmp_path):
    """A bad row in the middle of the dataset while the other fragments run: the local engine's Error line,
    exit 2, no report, and the workers (killed with tasks still queued) do not outlive the run."""
    data = tmp_path / "bad"
    shutil.copytree(shards, data)
    victim = data / "part-2.parquet"
    table = pq.read_table(victim)
    z = table["prob"].to_numpy().copy()
    z[30_000] = 1.25  # row 30,001 of the file, in its second row group
    pq.write_table(table.set_column(0, "prob", pa.array(z)), victim, row_group_size=25_000)
    out = tmp_path / "report.json"
    local = subprocess.run([_console_script(), "ece", str(data), "--batch-rows", "25000", "-o", str(out)],
                           capture_output=True, text=True,
                           env=_env())
    cli = subprocess.Popen([_console_script(), "ece", str(data), "--batch-rows", "25000", "--engine", "dask",
                            "--workers", "2", "-o", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        first = cli.stderr.readline()
        assert first.startswith("Dask: a local cluster of 2 worker processes"), first
        workers, descendants = _worker_processes(psutil.Process(cli.pid), 2)
        _, stderr = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert local.returncode == cli.returncode == 2
    assert stderr.splitlines() == local.stderr.splitlines()
    assert "row 30001" in stderr and "1.25" in stderr
    assert not out.exists()
    assert _alive(workers) == []
    psutil.wait_procs(_alive(descendants), timeout=60)  # a hang's bound, not a speed claim: a loaded machine reaps slowly
    assert _alive(descendants) == []
