"""``--engine dask`` (calibcli.engines): end to end on a local cluster the command starts, against the local engine,
and the per-task overhead.

Ported from ``bench_dask.py`` (its throughput part: ``ece DIR --n-boot 1000`` on the 1e7-row shards with the local
engine, ``--workers 1`` and ``--workers 2``, packed tasks and a task per fragment; its per-task overhead on 200 empty
shards) and ``bench_compare_dask.py`` (``compare`` on both engines; the two engines' agreement is
``studies/same_numbers.py``). Dropped from ``bench_dask.py``: the fitted scaling model and its predictions (an
analysis of these measurements, written up in docs/dask_benchmark.md), the external-scheduler variants (the same
engine; ``studies/same_numbers.py`` runs one) and the workers' memory (the scheduler's view of it, not a user's
figure). ``python benchmarks/tools/dask_timeline.py`` prints where one run's time goes. Skipped where
``distributed`` is not installed (asv.conf.json installs calibcli's ``dask`` extra).
"""

from __future__ import annotations

import os

from .. import _common

EMPTY_SHARDS = 200


def _need_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError("distributed is not installed (pip install 'calibcli[dask]')") from exc


def empty_shards():
    """``dask_one/``: one shard of 1,000 rows; ``dask_empty/``: it and 200 empty shards (schema only)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = _common.cache_dir() / f"dask_empty_v{_common.DATA_VERSION}"
    one, empty = root / "one", root / "empty"
    if root.is_dir():
        return one, empty
    tmp = root.with_name(f".{root.name}.{os.getpid()}.tmp")
    for d in (tmp / "one", tmp / "empty"):
        d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    z = rng.random(1000)
    table = pa.table({"prob": z, "label": (rng.random(1000) < z).astype(np.int64)})
    for d in ("one", "empty"):
        pq.write_table(table, tmp / d / "part-00000.parquet")
    for k in range(1, EMPTY_SHARDS + 1):
        pq.write_table(table.slice(0, 0), tmp / "empty" / f"part-{k:05d}.parquet")
    os.replace(tmp, root)
    return one, empty


class Engines:
    """``calibcli ece DIR --n-boot 1000`` on 1e7 rows in 10 shards, a fresh process that starts and stops its own
    local cluster (end to end, as a user runs it), against the local engine."""

    number = 1
    repeat = (1, 2, 120.0)
    warmup_time = 0
    timeout = 900
    params = (["local", "dask --workers 1", "dask --workers 2", "dask --workers 2, a task per fragment"],)
    param_names = ["engine"]

    def setup(self, engine):
        if engine != "local":
            _need_distributed()
        self.path = str(_common.shards("1e7"))

    def time_ece(self, engine):
        extra = [] if engine == "local" else ["--engine", "dask", "--workers", engine.split()[2].rstrip(",")]
        env = {"CALIBCLI_TASK_ROWS": "1"} if engine.endswith("fragment") else {}
        _common.run("ece", self.path, "--n-boot", "1000", *extra, env=env)


class Compare:
    """``calibcli compare A B`` on the 1e6 rows, the local engine against ``--engine dask --workers 2``."""

    number = 1
    repeat = (1, 2, 120.0)
    warmup_time = 0
    timeout = 900
    params = (["local", "dask --workers 2"],)
    param_names = ["engine"]

    def setup(self, engine):
        if engine != "local":
            _need_distributed()
        self.a, self.b = str(_common.rows(1e6)), str(_common.candidate(1e6))

    def time_compare(self, engine):
        extra = [] if engine == "local" else ["--engine", "dask", "--workers", "2"]
        _common.run("compare", self.a, self.b, *extra)


class TaskOverhead:
    """The cost of a task: ``ece --n-boot 0 --engine dask --workers 1`` on 200 empty shards and one real one, a task
    per shard (``CALIBCLI_TASK_ROWS=1``), against the real shard alone, in one run: the difference / 200."""

    timeout = 900

    def setup_cache(self):
        _need_distributed()
        one, empty = empty_shards()
        env = {"CALIBCLI_TASK_ROWS": "1"}
        args = ["--n-boot", "0", "--engine", "dask", "--workers", "1"]
        alone = _common.run("ece", str(one), *args, env=env)
        many = _common.run("ece", str(empty), *args, env=env)
        packed = _common.run("ece", str(empty), *args)
        return {"alone": alone.wall, "many": many.wall, "packed": packed.wall}

    def track_seconds_per_task(self, m):
        """Wall seconds added by each of 200 empty tasks."""
        return (m["many"] - m["alone"]) / EMPTY_SHARDS

    track_seconds_per_task.unit = "seconds per task"  # type: ignore[attr-defined]

    def track_packed_over_alone(self, m):
        """The 201 shards packed into few tasks (the default) / the one real shard alone."""
        return m["packed"] / m["alone"]

    track_packed_over_alone.unit = "x one shard"  # type: ignore[attr-defined]
