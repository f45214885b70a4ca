"""Benchmark of ``--engine dask`` (SPEC 8 "Engines"): scaling with workers, per-task overhead, worker
memory, and a scaling model fitted on the measurements.

Data: the Parquet shards of ``bench_stream.py`` under ``benchmarks/out/`` (git-ignored; written block
by block on the first run and reused): ``stream_1e8/`` is 100,000,000 rows in 20 shards of 10 row groups
of 500,000 rows, so with the default ``--batch-rows`` (2^17, smaller than a row group) a dataset has 200
fragments of 500,000 rows (one row group each), which the Dask engine packs into tasks of consecutive
fragments (about 12 per worker, at most 2^23 rows: 24 tasks of 4.2 million rows on 2 workers, 12 of 8.3
million on 1); ``stream_1e7/`` and ``stream_1e6/`` the same rows, fewer. Plus ``dask_empty/``: one
1,000-row shard and 200 empty ones (schema only), and ``dask_one/``: that one shard alone.

Every ``calibcli`` run is a fresh subprocess (wall time from start to exit). Parts:

0. The machine now, before and after part 1: a CPU-bound loop alone and two copies at once (others'
   load on a shared machine shows here, and caps what any engine can gain from a second worker).

1. Throughput at 1e8 rows, ``calibcli ece DIR --n-boot 1000 --json``: the local engine, ``--engine dask
   --workers 1`` and ``--workers 2`` (each starts and stops its own local cluster: end to end, as a user
   runs it), and the same two with a task per fragment (``CALIBCLI_TASK_ROWS=1``, the engine before tasks
   were packed), interleaved, ``--repeats`` times each; then steady state, with ``--scheduler`` on a
   cluster of 1 and of 2 workers started beforehand. Bars: workers 2 / workers 1 throughput >= 1.6x; the
   Dask engine with 2 workers no slower than the local engine. Every Dask report is compared with the
   local one (largest relative difference of any number; SPEC 8 says 1e-12). Each run's CPU seconds are
   printed too (the load of others shows in wall times, less in CPU); and, for context only, the local
   engine with the malloc settings calibcli gives its workers (``calibcli.engines.dask.WORKER_MALLOC``).
2. Per-task overhead: ``dask_empty/`` minus ``dask_one/`` over the 200 empty shards with a task per shard
   (``CALIBCLI_TASK_ROWS=1``; by default they are packed into one task, also printed), on a running
   cluster of 1 and of 2 workers (the client's and scheduler's share per task, and the workers').
   Bar: < 50 ms per task.
3. Worker memory: a fresh cluster of 2 workers per size (1e6, 1e7, 1e8 rows); each worker's peak
   resident set (``ru_maxrss`` inside the worker) after one ``ece --n-boot 1000`` run. A task streams its
   fragments' batches through one set of accumulators, so a worker's peak depends on the batch size, not
   on the rows: bar peak(1e8) / peak(1e7) <= 1.25 (10x the rows, tasks of 4.2 million rows instead of
   0.5); 1e6 for context (its tasks are 500,000-row files).
4. Scaling model (see :func:`part_model`): tasks of r rows, T of them on W workers; time = start + files x
   footer + max(ceil(T / W) x (r x per_row + task_worker), T x (task_serial + merge)) + finish, from the
   measured parts: start = a run on a tiny shard (part 2), the serial share of a task = client and
   scheduler CPU per task (part 2), per-row cost from the scheduler's task stream (part 1), merge time
   and state size from the library in this process, the bootstrap finish on the client; checked against
   part 1's steady-state runs, then used to predict 1e10 rows (in 2,000 files) on 100 workers; and for
   smece, whose per-task state (the smoothing grid's sums) is megabytes, from its own task, state and merge.

5. The client's CPU over many tasks (issue #25): an external ``dask scheduler`` and ``dask worker --nworkers 2``
   on 127.0.0.1 per version, ``smece`` and ``ece --n-boot 1000`` on ``dask_rg1000/`` (2e6 rows in 1,000-row row
   groups, ``--batch-rows 1000``) with ``CALIBCLI_TASK_ROWS`` 1000 (2,000 tasks) and 100000 (20 tasks); the
   calibcli process alone timed (its own rusage, ``os.wait4``). Bar: CPU(2,000 tasks) / CPU(20 tasks) <= 1.5.
   ``--before DIR`` (a checkout of the previous version) runs it side by side, interleaved, on its own cluster.
6. The scaling model of the reduction on the workers (:func:`predict`): constants measured in this process
   (per row, per batch, per task, state sizes, merge cost per state, the finish), the scheduler's CPU per task
   and the client's per task submitted (from the runs); checked against runs on 1, 2 and 4 worker processes
   with 20, 200 and 2,000 tasks; predictions for 1e10 rows on 100 and 1,000 workers, and what bounds them.
   Also the bar on state sizes: a 1e6-row task's packed state (``ece`` <= 50 kB, ``smece`` <= 1 MB).

Run: ``python benchmarks/bench_dask.py`` (about 4 minutes after the data exist; the first run writes
1 GB of shards), ``--quick`` (1e7 rows instead of 1e8 for part 1 and the model; no 1e8 memory run).
Exit status 0 whatever the bars; the report says which were met. Needs ``pip install -e ".[dask]"``. Parts 5
and 6 alone: ``PYTHONPATH=. python benchmarks/bench_dask.py --parts 56 --before /tmp/before-dask`` (about 15
minutes).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import pickle
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")
PY = sys.executable
CALIBCLI = shutil.which("calibcli", path=os.path.dirname(PY)) or shutil.which("calibcli") or "calibcli"
EMPTY_SHARDS = 200
TIMEOUT = 900


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Data (bench_stream.py's shards)


def ensure_data(name: str) -> str:
    sys.path.insert(0, HERE)
    import bench_stream

    return bench_stream.ensure_dir(OUT, name)


def ensure_empty() -> tuple[str, str]:
    """``dask_one/``: one shard of 1,000 rows; ``dask_empty/``: it and 200 empty shards."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    one, empty = os.path.join(OUT, "dask_one"), os.path.join(OUT, "dask_empty")
    if os.path.isdir(empty) and len(os.listdir(empty)) == EMPTY_SHARDS + 1 and os.path.isdir(one):
        return one, empty
    for d in (one, empty):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    rng = np.random.default_rng(1)
    z = rng.random(1000)
    table = pa.table({"prob": z, "label": (rng.random(1000) < z).astype(np.int64)})
    for d in (one, empty):
        pq.write_table(table, os.path.join(d, "part-00000.parquet"))
    nothing = table.slice(0, 0)
    for k in range(1, EMPTY_SHARDS + 1):
        pq.write_table(nothing, os.path.join(empty, f"part-{k:05d}.parquet"))
    return one, empty


# ---------------------------------------------------------------------------------------------
# Runs


LAST_CPU = {}
# the environment of every calibcli run: this process's as it started (a nanny of the clusters started here
# copies its workers' malloc settings into this process's environment before spawning them; the runs that
# follow must not inherit them)
CLEAN_ENV = dict(os.environ)


def run_cli(args: list[str], env: dict | None = None) -> tuple[float, dict | None, str]:
    """Wall time, the JSON report (or None) and the last stderr line of ``calibcli ARGS --json``.

    ``LAST_CPU`` gets the run's CPU seconds: ``client`` (the calibcli process) and ``here`` (this
    process: the scheduler and the nannies of a cluster started by the benchmark)."""
    import resource

    r0, p0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
    t0 = time.perf_counter()
    proc = subprocess.run([CALIBCLI, *args, "--json"], capture_output=True, text=True, timeout=TIMEOUT,
                          env={**CLEAN_ENV, "CALIBCLI_DEBUG": "", **(env or {})})
    wall = time.perf_counter() - t0
    r1, p1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.process_time()
    LAST_CPU.update(client=(r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime), here=p1 - p0)
    doc = json.loads(proc.stdout) if proc.returncode == 0 else None
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    if doc is None:
        log(f"  FAILED ({proc.returncode}): {last}")
    return wall, doc, last


def max_rel_diff(a, b, where="$") -> float:
    """Largest relative difference between two reports' numbers (inf when their shapes differ)."""
    if isinstance(b, dict):
        if not isinstance(a, dict) or set(a) != set(b):
            return math.inf
        return max([0.0] + [max_rel_diff(a[k], b[k]) for k in b if k not in ("engine", "workers")])
    if isinstance(b, list):
        if not isinstance(a, list) or len(a) != len(b):
            return math.inf
        return max([0.0] + [max_rel_diff(x, y) for x, y in zip(a, b)])
    if isinstance(b, float) and isinstance(a, (int, float)):
        return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b else math.inf


class Cluster:
    """A LocalCluster of ``n`` worker processes (one thread each) in this process, on 127.0.0.1, its workers
    started with the environment calibcli gives its own (:func:`calibcli.engines.dask.worker_environ`)."""

    def __init__(self, n: int):
        from distributed import Client, LocalCluster

        import dask

        from calibcli.engines.dask import worker_environ

        t0 = time.perf_counter()
        # the workers' environment of `--workers N` (calibcli's malloc settings), so that the steady-state
        # and memory figures are those of the workers calibcli starts itself
        with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                        dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
        self.client = Client(self.cluster)
        self.client.get_task_stream()  # installs the scheduler's task-stream recorder
        self.start_time = time.perf_counter() - t0
        self.address = self.cluster.scheduler_address

    def peak_rss_mb(self) -> list[float]:
        def peak(dask_worker=None):
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

        return sorted(self.client.run(peak).values())

    def fragment_times(self, since: float) -> tuple[list[float], float]:
        """Compute time of every calibcli fragment task that started after ``since`` (the scheduler's task
        stream), and the span from the first one's start to the last one's end (the compute phase)."""
        times, starts, stops = [], [], []
        for record in self.client.get_task_stream(start=since):
            key = record["key"] if isinstance(record["key"], str) else str(record["key"])
            if "calibcli-fragment" in key:
                for s in record["startstops"]:
                    if s["action"] == "compute":
                        times.append(s["stop"] - s["start"])
                        starts.append(s["start"])
                        stops.append(s["stop"])
        return times, (max(stops) - min(starts)) if times else float("nan")

    def close(self):
        self.client.close()
        self.cluster.close()


def median(values):
    return statistics.median(values) if values else float("nan")


# ---------------------------------------------------------------------------------------------
# Parts

SPIN = r"""
import sys, time
import numpy as np
x = np.random.default_rng(0).integers(0, 15, 4_000_000)
t0 = time.perf_counter()
for _ in range(int(sys.argv[1])):
    np.bincount(x, minlength=15)
print(time.perf_counter() - t0)
"""


def part_machine() -> list[str]:
    """What two processes get from this machine right now: the same CPU-bound loop (np.bincount) run
    alone, then twice at once. Other users' load shows here; the scaling bars are read against it."""
    loops = 150

    def spin(n: int) -> list[float]:
        procs = [subprocess.Popen([PY, "-c", SPIN, str(loops)], stdout=subprocess.PIPE, text=True) for _ in range(n)]
        return [float(p.communicate()[0]) for p in procs]

    alone = median([spin(1)[0] for _ in range(2)])
    together = median([max(spin(2)) for _ in range(2)])
    ratio = 2 * alone / together
    return ["== 0. The machine now: a CPU-bound loop alone, then two copies at once ==",
            f"one process {alone:.2f} s; two at once {together:.2f} s each -> two processes get {ratio:.2f}x the throughput "
            f"of one (2.00x on two idle cores); load average {os.getloadavg()[0]:.2f}"]


def part_throughput(data: str, rows: int, repeats: int, results: dict) -> list[str]:
    lines = [f"== 1. Throughput: calibcli ece DIR --n-boot 1000 at {rows:,} rows ({data}) =="]
    base = ["ece", data, "--n-boot", "1000"]
    from calibcli.engines.dask import WORKER_MALLOC

    variants = {
        "local engine": (base, None),
        "dask --workers 1": (base + ["--engine", "dask", "--workers", "1"], None),
        "dask --workers 2": (base + ["--engine", "dask", "--workers", "2"], None),
        # before tasks were packed: a task per fragment (200 at 1e8 rows), as the engine did until fd43920
        "dask --workers 2, a task per fragment": (base + ["--engine", "dask", "--workers", "2"], {"CALIBCLI_TASK_ROWS": "1"}),
        "dask --workers 1, a task per fragment": (base + ["--engine", "dask", "--workers", "1"], {"CALIBCLI_TASK_ROWS": "1"}),
        # context, not a bar: the local engine's process with the malloc settings calibcli gives its workers
        "local engine, workers' malloc env": (base, WORKER_MALLOC),
    }
    walls = {k: [] for k in variants}
    cpus = {k: [] for k in variants}
    docs = {}
    for rep in range(repeats):
        for name, (args, env) in variants.items():
            log(f"  [{rep + 1}/{repeats}] {name}")
            wall, doc, _ = run_cli(args, env)
            if doc is not None:
                walls[name].append(wall)
                cpus[name].append(LAST_CPU["client"])
                docs.setdefault(name, doc)
    steady = {}
    stream_times, spans = {}, {}
    for n in (1, 2):
        log(f"  steady state: a running cluster of {n} worker(s)")
        c = Cluster(n)
        try:
            run_cli(base + ["--engine", "dask", "--scheduler", c.address])  # warm-up: workers import calibcli
            walls[f"dask --scheduler ({n} running)"] = []
            for rep in range(repeats):
                since = time.time()
                wall, doc, _ = run_cli(base + ["--engine", "dask", "--scheduler", c.address])
                if doc is not None:
                    walls[f"dask --scheduler ({n} running)"].append(wall)
                    cpus.setdefault(f"dask --scheduler ({n} running)", []).append(LAST_CPU["client"] + LAST_CPU["here"])
                    docs.setdefault(f"dask --scheduler ({n} running)", doc)
                    times, span = c.fragment_times(since)
                    stream_times.setdefault(n, []).append(times)
                    spans.setdefault(n, []).append(span)
            steady[n] = c.start_time
        finally:
            c.close()
    ref = docs.get("local engine")
    lines.append(f"{'run':34} {'median':>8} {'min':>8} {'Mrows/s':>8} {'CPU s':>6}  {'runs':>4}  max rel. diff vs local")
    for name, w in walls.items():
        diff = max_rel_diff(docs[name], ref) if ref is not None and name in docs else float("nan")
        lines.append(f"{name:34} {median(w):7.2f}s {min(w) if w else float('nan'):7.2f}s {rows / 1e6 / median(w):8.1f} "
                     f"{median(cpus.get(name, [])):6.1f}  {len(w):>4}  {diff:.1e}")
    lines.append("(CPU s: the calibcli process and the workers it started; with --scheduler the calibcli process and "
                 "the scheduler and nannies, which run in this process, but not the running workers)")
    for n, runs in stream_times.items():
        times = [t for run in runs for t in run]
        lines.append(f"tasks on {n} running worker(s): {len(runs[0])} tasks a run, compute median {median(times) * 1e3:.0f} ms, "
                     f"{median([sum(run) for run in runs]):.2f} s in all a run; compute phase (first task start to last task "
                     f"end) median {median(spans[n]):.2f} s = {rows / 1e6 / median(spans[n]):.1f} Mrows/s")
    e2e = median(walls["dask --workers 1"]) / median(walls["dask --workers 2"])
    st = median(walls["dask --scheduler (1 running)"]) / median(walls["dask --scheduler (2 running)"])
    phase = median(spans[1]) / median(spans[2])
    vs_local = median(walls["local engine"]) / median(walls["dask --workers 2"])
    unpacked = median(walls["dask --workers 1, a task per fragment"]) / median(walls["dask --workers 2, a task per fragment"])
    lines.append(f"context, a task per fragment (the engine before packing): workers 2 / workers 1 end to end {unpacked:.2f}x; "
                 f"packed tasks are {median(walls['dask --workers 2, a task per fragment']) / median(walls['dask --workers 2']):.2f}x "
                 f"(2 workers) and {median(walls['dask --workers 1, a task per fragment']) / median(walls['dask --workers 1']):.2f}x "
                 f"(1 worker) as fast")
    lines.append(f"throughput workers 2 / workers 1, compute phase: {phase:.2f}x   (bar >= 1.6x: {'met' if phase >= 1.6 else 'MISSED'})")
    lines.append(f"throughput workers 2 / workers 1, end to end: {e2e:.2f}x   (bar >= 1.6x: {'met' if e2e >= 1.6 else 'MISSED'})")
    lines.append(f"throughput workers 2 / workers 1, steady state: {st:.2f}x   (bar >= 1.6x: {'met' if st >= 1.6 else 'MISSED'})")
    lines.append(f"dask --workers 2 vs local engine: {vs_local:.2f}x the local throughput   "
                 f"(bar: no slower, >= 1.0x: {'met' if vs_local >= 1.0 else 'MISSED'})")
    lines.append(f"local cluster start (in this process): {statistics.mean(steady.values()):.2f} s")
    results.update(walls=walls, stream_times=stream_times, cluster_start=statistics.mean(steady.values()))
    return lines


def part_overhead(results: dict) -> list[str]:
    one, empty = ensure_empty()
    lines = [f"== 2. Per-task overhead: {EMPTY_SHARDS} empty shards (dask_empty/ minus dask_one/, --n-boot 0), "
             f"a task per shard (CALIBCLI_TASK_ROWS=1) =="]
    per_task, serial, fixed = {}, {}, {}
    one_task = {"CALIBCLI_TASK_ROWS": "1"}  # by default the empty shards would be packed into one task
    for n in (1, 2):
        c = Cluster(n)
        try:
            run_cli(["ece", one, "--n-boot", "0", "--engine", "dask", "--scheduler", c.address])  # warm-up
            t_one, t_empty, cpu_one, cpu_empty, t_packed = [], [], [], [], []
            for _ in range(3):
                t_one.append(run_cli(["ece", one, "--n-boot", "0", "--engine", "dask", "--scheduler", c.address], one_task)[0])
                cpu_one.append(LAST_CPU["client"] + LAST_CPU["here"])
                t_empty.append(run_cli(["ece", empty, "--n-boot", "0", "--engine", "dask", "--scheduler", c.address], one_task)[0])
                cpu_empty.append(LAST_CPU["client"] + LAST_CPU["here"])
                t_packed.append(run_cli(["ece", empty, "--n-boot", "0", "--engine", "dask", "--scheduler", c.address])[0])
            per_task[n] = (median(t_empty) - median(t_one)) / EMPTY_SHARDS
            serial[n] = (median(cpu_empty) - median(cpu_one)) / EMPTY_SHARDS
            fixed[n] = median(t_one)
            lines.append(f"{n} running worker(s): dask_one {median(t_one):.2f} s, dask_empty {median(t_empty):.2f} s -> "
                         f"{per_task[n] * 1e3:.1f} ms per task, of which {serial[n] * 1e3:.1f} ms CPU in the client and "
                         f"the scheduler; with tasks packed (the default) dask_empty takes {median(t_packed):.2f} s, "
                         f"{(median(t_packed) - median(t_one)) / EMPTY_SHARDS * 1e3:.1f} ms per empty shard")
        finally:
            c.close()
    local_one = median([run_cli(["ece", one, "--n-boot", "0"])[0] for _ in range(3)])
    local_empty = median([run_cli(["ece", empty, "--n-boot", "0"])[0] for _ in range(3)])
    lines.append(f"local engine, for context: {(local_empty - local_one) / EMPTY_SHARDS * 1e3:.1f} ms per empty file; "
                 f"a run on one tiny shard {local_one:.2f} s (dask, running cluster: {fixed[1]:.2f} s)")
    worst = max(per_task.values())
    lines.append(f"per-task overhead: {worst * 1e3:.1f} ms   (bar < 50 ms: {'met' if worst < 0.05 else 'MISSED'})")
    task_serial = serial[1]
    task_worker = max(0.0, per_task[1] - task_serial)
    lines.append(f"model split: serial (client + scheduler CPU) {task_serial * 1e3:.1f} ms per task; the rest, "
                 f"{task_worker * 1e3:.1f} ms (round trips, the worker's share), overlaps across workers")
    results.update(per_task=per_task, task_serial=task_serial, task_worker=task_worker, fixed=fixed[1])
    return lines


def part_memory(sizes: list[str]) -> list[str]:
    lines = ["== 3. Worker peak memory (ru_maxrss in each worker; a fresh cluster of 2 per size; ece --n-boot 1000) =="]
    peaks = {}
    for name in sizes:
        data = ensure_data(name)
        c = Cluster(2)
        try:
            before = c.peak_rss_mb()
            wall, doc, _ = run_cli(["ece", data, "--n-boot", "1000", "--engine", "dask", "--scheduler", c.address])
            peaks[name] = c.peak_rss_mb()
            lines.append(f"{name:>4} rows: workers' peak RSS {', '.join(f'{p:.0f}' for p in peaks[name])} MB "
                         f"(idle {', '.join(f'{p:.0f}' for p in before)} MB); run {wall:.1f} s")
        finally:
            c.close()
    if "1e8" in peaks and "1e7" in peaks:
        ratio = max(peaks["1e8"]) / max(peaks["1e7"])
        lines.append(f"largest worker peak 1e8 / 1e7 (10x the rows; tasks of 4.2 million rows instead of 0.5): {ratio:.2f}   "
                     f"(bar <= 1.25: {'met' if ratio <= 1.25 else 'MISSED'})")
    if "1e6" in peaks and "1e7" in peaks:
        lines.append(f"context: 1e7 / 1e6: {max(peaks['1e7']) / max(peaks['1e6']):.2f} (1e6's tasks are its two "
                     f"500,000-row files)")
    return lines


def part_model(data: str, rows: int, results: dict) -> list[str]:
    """Fit the scaling model's constants and check it against part 1, then predict 1e10 rows on 100 workers.

    The model, for R rows in F files on W workers (one core each, the client on a core of its own):
    tasks of r = min(MAX_TASK_ROWS, R / (TASKS_PER_WORKER W)) rows, T = R / r of them;
    time = start + F x footer + max(workers, client) + finish, where workers = ceil(T / W) x (r x per_row +
    task_worker) and client = T x (task_serial + merge): the client merges each state as it arrives, while
    the workers compute, so the slower of the two sets the pace. On this machine the client shares the two
    cores with the workers: the check below adds the client's CPU, spread over the workers, to theirs."""
    from calibcli.ece_family import options as ece_options
    from calibcli.ece_family.accumulator import InputAccumulator
    from calibcli.engines.fragments import MAX_TASK_ROWS, merge_parts, pack_fragments, run_fragment, task_rows, TASKS_PER_WORKER
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.sources import resolve_datasets

    (dataset,) = resolve_datasets([data])
    stream = dataset.open(ColumnSpec())
    t0 = time.perf_counter()
    fragments = stream.fragments()
    listing = time.perf_counter() - t0
    files = len(stream.files)
    options = ece_options.Options.library(n_boot=1000)
    template = InputAccumulator(mode="binary", n_classes=2, class_names=stream.class_names, options=options)
    task = pack_fragments(fragments, task_rows(fragments, 2))[0]  # a task as the engine makes it for 2 workers
    doc = run_fragment(task, template)  # (a Part, since #25: it travels pickled, packed)
    blob = pickle.dumps(doc)
    copies = 300
    t0 = time.perf_counter()
    state = merge_parts([pickle.loads(blob) for _ in range(copies)]).groups
    merge = (time.perf_counter() - t0) / copies
    acc = state[None]
    t0 = time.perf_counter()
    acc.result()
    finish = time.perf_counter() - t0

    runs = results["stream_times"].get(1) or [[float("nan")]]
    per_row = median([sum(run) for run in runs]) / rows  # task compute on 1 running worker, per row
    serial, worker = results["task_serial"], results["task_worker"]

    def model(n_rows, n_workers, n_files, start, footer=listing / files, shared_cores=False):
        r = min(MAX_TASK_ROWS, math.ceil(n_rows / (TASKS_PER_WORKER * n_workers)))
        T = math.ceil(n_rows / r)
        on_workers = math.ceil(T / n_workers) * (r * per_row + worker)
        on_client = T * (serial + merge)
        if shared_cores:  # the client's CPU taken from the workers' cores
            on_workers += on_client / n_workers
        parts = {
            "start": start,  # a run on a tiny shard: interpreter, imports, connect, one task
            "listing": n_files * footer,
            "tasks on the workers": on_workers,
            "client (overlaps them)": on_client,
            "finish (bootstrap)": finish,
        }
        return start + parts["listing"] + max(on_workers, on_client) + finish, parts, T, r

    lines = ["== 4. Scaling model =="]
    lines.append(f"{len(fragments)} fragments from {files} files; footers listed in {listing * 1e3:.0f} ms "
                 f"({listing / files * 1e3:.1f} ms per file, on the client); tasks of at most {MAX_TASK_ROWS:,} rows, "
                 f"about {TASKS_PER_WORKER} per worker")
    lines.append(f"task compute on 1 running worker: {median([sum(run) for run in runs]):.2f} s for {rows:,} rows -> "
                 f"{per_row * 1e9:.1f} ns per row")
    lines.append(f"fixed cost of a run (part 2's tiny shard on a running cluster): {results['fixed']:.2f} s; task overhead: "
                 f"serial {serial * 1e3:.1f} ms + {worker * 1e3:.1f} ms spread over the workers (part 2)")
    lines.append(f"state of one task: {len(blob):,} bytes pickled; "
                 f"merge (unpickle + from_dict + merge) {merge * 1e3:.2f} ms per state")
    lines.append(f"finish on the client (1000 bootstrap resamples from the merged state): {finish:.2f} s")
    walls = results["walls"]
    for n in (1, 2):
        measured = median(walls.get(f"dask --scheduler ({n} running)", []))
        predicted, _, T, r = model(rows, n, files, start=results["fixed"], shared_cores=True)
        lines.append(f"check at {rows:,} rows on {n} running worker(s) ({T} tasks of {r:,} rows): predicted {predicted:.1f} s, "
                     f"measured {measured:.1f} s")
    n_rows, n_workers, n_files = 10**10, 100, 2000

    def say(total, parts, T, r, label):
        workers, client = parts["tasks on the workers"], parts["client (overlaps them)"]
        return (f"prediction, 1e10 rows in {n_files:,} files on {n_workers} workers ({T:,} tasks of {r:,} rows), {label}: "
                f"{total:.0f} s = start {parts['start']:.1f} + listing {parts['listing']:.1f} + max(workers {workers:.1f}, "
                f"client {client:.1f}) + finish {parts['finish (bootstrap)']:.1f}"
                + (" (the client's merging sets the pace)" if client > workers else ""))

    for label, footer in (("local disk", listing / files), ("object store, 30 ms per footer (assumed)", 0.030)):
        total, parts, T, r = model(n_rows, n_workers, n_files, start=results["fixed"], footer=footer)
        lines.append(say(total, parts, T, r, label))
    lines.append(f"client traffic at 1e10 rows: {T:,} states x {len(blob):,} bytes = {T * len(blob) / 1e6:.0f} MB")
    big = MAX_TASK_ROWS * 4  # CALIBCLI_TASK_ROWS=33554432: a quarter of the tasks, and of the client's merging
    r_big = min(big, math.ceil(n_rows / n_workers))
    T_big = math.ceil(n_rows / r_big)
    workers_big = math.ceil(T_big / n_workers) * (r_big * per_row + worker)
    client_big = T_big * (serial + merge)
    total_big = results["fixed"] + n_files * listing / files + max(workers_big, client_big) + finish
    lines.append(say(total_big, {"start": results["fixed"], "listing": n_files * listing / files,
                                 "tasks on the workers": workers_big, "client (overlaps them)": client_big,
                                 "finish (bootstrap)": finish}, T_big, r_big, f"local disk, CALIBCLI_TASK_ROWS={big}"))
    # smece: the same model with its own per-row time, state and merge (measured here in this process)
    from calibcli.smooth import options as smece_options
    from calibcli.smooth.inputs import SmoothInputAccumulator

    smooth = SmoothInputAccumulator(mode="binary", n_classes=2, class_names=stream.class_names,
                                    options=smece_options.Options.library(n_boot=1000))
    t0 = time.perf_counter()
    sdoc = run_fragment(task, smooth)
    s_per_row = (time.perf_counter() - t0) / sum(f.n_rows for f in task)
    sblob = pickle.dumps(sdoc)
    t0 = time.perf_counter()
    merge_parts([pickle.loads(sblob) for _ in range(20)])
    s_merge = (time.perf_counter() - t0) / 20
    r = min(MAX_TASK_ROWS, math.ceil(n_rows / (TASKS_PER_WORKER * n_workers)))
    T = math.ceil(n_rows / r)
    s_workers = math.ceil(T / n_workers) * (r * s_per_row + worker)
    s_client = T * (serial + s_merge)
    s_total = results["fixed"] + max(s_workers, s_client)
    lines.append(f"smece: {s_per_row * 1e9:.0f} ns per row in this process, a task's state {len(sblob) / 1e6:.1f} MB pickled, "
                 f"merge {s_merge * 1e3:.0f} ms per state on the client: 1e10 rows on {n_workers} workers ~ {s_total:.0f} s "
                 f"(workers {s_workers:.0f} s, client merging {T * len(sblob) / 1e9:.1f} GB {s_client:.0f} s; the client is "
                 f"the bottleneck beyond {max(1, round(n_workers * s_workers / s_client))} workers)")
    lines.append("assumptions: one core per worker and one for the client, no other load; storage bandwidth grows with "
                 "the workers (no shared-disk or network bottleneck); per-row cost as on this machine; the scheduler "
                 "keeps up (its share is in the serial per-task time); footers listed serially by the client")
    return lines


# ---------------------------------------------------------------------------------------------
# Part 5: the client's CPU over many tasks, on an external scheduler and workers (issue #25)

SMALL_GROUPS = "dask_rg1000"  # 2e6 rows in 20 files of 100 row groups of 1,000 rows
SMALL_ROWS, SMALL_FILES, SMALL_GROUP = 2_000_000, 20, 1000


def ensure_small_groups() -> str:
    """``dask_rg1000/``: 2,000,000 rows (bench_stream's rows: Beta(2, 5) predictions, labels Bernoulli(p^1.3))
    in 20 files of 100 row groups of 1,000 rows, so that ``--batch-rows 1000`` makes 2,000 fragments."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(OUT, SMALL_GROUPS)
    if os.path.isdir(path) and len(os.listdir(path)) == SMALL_FILES:
        return path
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path + ".tmp", exist_ok=True)
    per = SMALL_ROWS // SMALL_FILES
    for k in range(SMALL_FILES):
        rng = np.random.default_rng([20251123, 25, k])
        z = rng.beta(2, 5, per)
        y = (rng.random(per) < z**1.3).astype(np.int64)
        pq.write_table(pa.table({"prob": z, "label": y}), os.path.join(path + ".tmp", f"part-{k:05d}.parquet"),
                       row_group_size=SMALL_GROUP)
    os.rename(path + ".tmp", path)
    return path


class ExternalCluster:
    """``dask scheduler`` and ``dask worker --nworkers N --nthreads 1`` processes on 127.0.0.1, all running the
    calibcli at ``pythonpath`` (the client must run the same code as its workers)."""

    def __init__(self, n_workers: int, pythonpath: str, tmp: str):
        dask_cli = os.path.join(os.path.dirname(PY), "dask")
        self.env = {**CLEAN_ENV, "PYTHONPATH": pythonpath}
        self.file = os.path.join(tmp, f"scheduler-{os.getpid()}-{time.monotonic_ns()}.json")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.procs = [subprocess.Popen([dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                        "--dashboard-address", "127.0.0.1:0", "--scheduler-file", self.file],
                                       env=self.env, **quiet)]
        deadline = time.monotonic() + 60
        while not (os.path.exists(self.file) and os.path.getsize(self.file)) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(self.file) as f:
            self.address = json.load(f)["address"]
        self.procs.append(subprocess.Popen([dask_cli, "worker", self.address, "--nworkers", str(n_workers), "--nthreads", "1",
                                            "--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"],
                                           env={**self.env, **_worker_malloc()}, **quiet))
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n_workers, timeout=120)

    def close(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def _worker_malloc() -> dict:
    from calibcli.engines.dask import WORKER_MALLOC

    return dict(WORKER_MALLOC)


def run_client(args: list[str], pythonpath: str, env: dict | None = None) -> tuple[float, float, dict | None, str]:
    """Wall time, CPU seconds of the calibcli process alone (its own rusage, from ``os.wait4``), its JSON report
    and last stderr line."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([PY, "-m", "calibcli", *args, "--json"], stdout=out, stderr=err, cwd=pythonpath,
                                env={**CLEAN_ENV, "CALIBCLI_DEBUG": "", "PYTHONPATH": pythonpath, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu = usage.ru_utime + usage.ru_stime
    doc = json.loads(stdout) if proc.returncode == 0 else None
    last = (stderr.strip().splitlines() or [""])[-1]
    if doc is None:
        log(f"  FAILED ({proc.returncode}): {last}")
    return wall, cpu, doc, last


def part_client(before: str | None, repeats: int, n_workers: int, results: dict) -> list[str]:
    """The bar of issue #25: on an external scheduler and workers, the client's CPU time for ``smece`` and ``ece
    --n-boot 1000`` over 2,000 tasks at most 1.5x its CPU over 20 tasks: the same 2e6 rows read in 1,000-row
    batches (``--batch-rows 1000``: 2,000 fragments), ``CALIBCLI_TASK_ROWS`` 1000 (2,000 tasks) vs 100000 (20);
    the previous version (``--before``, a checkout of it) in the same run, interleaved."""
    import tempfile

    data = ensure_small_groups()
    versions = {"now": REPO} if before is None else {"before": before, "now": REPO}
    commands = {"smece": ["smece", data, "--batch-rows", "1000"],
                "ece --n-boot 1000": ["ece", data, "--batch-rows", "1000", "--n-boot", "1000"]}
    lines = [f"== 5. Client CPU over 20 and 2,000 tasks: {SMALL_ROWS:,} rows in 1,000-row row groups ({data}), an external "
             f"`dask scheduler` and `dask worker --nworkers {n_workers}` on 127.0.0.1 per version; the calibcli process "
             f"alone timed (os.wait4) =="]
    tmp = tempfile.mkdtemp(prefix="bench_dask_")
    clusters = {}
    cpu: dict = {}
    wall: dict = {}
    docs: dict = {}
    try:
        for version, path in versions.items():
            clusters[version] = ExternalCluster(n_workers, path, tmp)
        for version, path in versions.items():  # warm-up: the workers import calibcli
            run_client(commands["smece"] + ["--engine", "dask", "--scheduler", clusters[version].address], path,
                       {"CALIBCLI_TASK_ROWS": "100000"})
        for rep in range(repeats):
            for name, args in commands.items():
                for tasks in (20, 2000):
                    for version, path in versions.items():
                        log(f"  [{rep + 1}/{repeats}] {version}: {name}, {tasks} tasks")
                        w, c, doc, _ = run_client(args + ["--engine", "dask", "--scheduler", clusters[version].address],
                                                  path, {"CALIBCLI_TASK_ROWS": str(SMALL_ROWS // tasks)})
                        if doc is not None:
                            cpu.setdefault((version, name, tasks), []).append(c)
                            wall.setdefault((version, name, tasks), []).append(w)
                            docs.setdefault((version, name, tasks), doc)
        for name, args in commands.items():
            docs[("local", name)] = run_client(args, REPO)[2]
    finally:
        for c in clusters.values():
            c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    lines.append(f"{'command':20} {'version':8} {'tasks':>6} {'client CPU s':>13} {'wall s':>8} {'2000/20 CPU':>12}  "
                 f"max rel. diff vs local")
    ratios = {}
    for name in commands:
        for version in versions:
            for tasks in (20, 2000):
                c, w = median(cpu.get((version, name, tasks), [])), median(wall.get((version, name, tasks), []))
                ratio = c / median(cpu.get((version, name, 20), [])) if tasks == 2000 else float("nan")
                if tasks == 2000:
                    ratios[(version, name)] = ratio
                doc, ref = docs.get((version, name, tasks)), docs.get(("local", name))
                diff = max_rel_diff(doc, ref) if doc is not None and ref is not None else float("nan")
                lines.append(f"{name:20} {version:8} {tasks:>6} {c:13.2f} {w:8.2f} "
                             f"{'' if tasks == 20 else f'{ratio:.2f}x':>12}  {diff:.1e}")
    for name in commands:
        r = ratios.get(("now", name), float("nan"))
        was = ratios.get(("before", name))
        lines.append(f"{name}: client CPU over 2,000 tasks / over 20: {r:.2f}x"
                     + (f" (the previous version in this run: {was:.2f}x)" if was is not None else "")
                     + f"   (bar <= 1.5x: {'met' if r <= 1.5 else 'MISSED'})")
    results.update(client_cpu=cpu)
    return lines


# ---------------------------------------------------------------------------------------------
# Part 6: the scaling model of the tree reduction, its constants measured here, checked on 1, 2 and 4 worker
# processes and 20, 200 and 2,000 tasks, and its predictions for 1e10 rows on 100 and 1,000 workers


def _cpu_of(proc) -> float:
    """CPU seconds of a process and its children (a ``dask worker --nworkers N`` and its nannies and workers)."""
    import psutil

    total = 0.0
    for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def model_constants(data: str) -> dict:
    """The per-task constants, measured in this process (with the allocator settings of calibcli and its workers):
    a task's compute per row (a 1e6-row task of bench_stream's data in the default 2^17-row batches, all its
    costs included), per batch and per task (tasks of one and of 100 1,000-row batches of part 5's data); its packed state; the cost of one state in a merge task (unpickled and merged into a
    copy, as on a worker); the finish (bootstrap) of the merged state."""
    from calibcli.core.malloc import tune_allocator
    from calibcli.ece_family import options as ece_options
    from calibcli.ece_family.accumulator import InputAccumulator
    from calibcli.smooth import options as smece_options
    from calibcli.smooth.inputs import SmoothInputAccumulator
    from calibcli.engines.fragments import merge_parts, run_fragment
    from calibcli.io.columns import ColumnSpec
    from calibcli.io.sources import resolve_datasets

    tune_allocator()
    (dataset,) = resolve_datasets([data])
    stream = dataset.open(ColumnSpec(), batch_rows=1000)
    fragments = stream.fragments()
    # per row: bench_stream's 1e6 rows in two files of one 500,000-row row group, read in the default 2^17-row batches
    (large,) = resolve_datasets([ensure_data("1e6")])
    wide = large.open(ColumnSpec()).fragments()
    out = {}

    def timed(function, repeat: int = 1) -> float:
        best = math.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            function()
            best = min(best, time.perf_counter() - t0)
        return best

    for name, template in (
        ("ece --n-boot 1000", InputAccumulator(mode="binary", n_classes=2, class_names=stream.class_names,
                                               options=ece_options.Options.library(n_boot=1000))),
        ("smece", SmoothInputAccumulator(mode="binary", n_classes=2, class_names=stream.class_names,
                                         options=smece_options.Options.library())),
    ):
        run_fragment(fragments[0], template)  # warm-up
        t_one = timed(lambda: [run_fragment(f, template) for f in fragments[:40]]) / 40  # a task of one 1,000-row batch
        t_hundred = timed(lambda: run_fragment(tuple(fragments[:100]), template))  # one task of 100 such batches
        rows_b = sum(f.n_rows for f in wide)
        # a 1e6-row task's time per row, its batches' and its own fixed costs included (a difference of two
        # task sizes drowns in this machine's noise)
        per_row = timed(lambda: run_fragment(tuple(wide), template), 3) / rows_b
        per_batch = max(0.0, (t_hundred - t_one) / 99)  # (1,000 rows each: the row's share is negligible)
        task_fixed = max(0.0, t_one - per_batch - SMALL_GROUP * per_row)
        small = [run_fragment(f, template) for f in fragments[:32]]
        big = run_fragment(tuple(wide), template)
        blobs = [pickle.dumps(p, protocol=5) for p in small]
        t0 = time.perf_counter()
        merge_parts([pickle.loads(b) for b in blobs[:16]], own=False)
        merge_parts([pickle.loads(b) for b in blobs[16:]], own=False)
        merge = (time.perf_counter() - t0) / 32
        big_blob = pickle.dumps(big, protocol=5)
        t0 = time.perf_counter()
        merge_parts([pickle.loads(big_blob) for _ in range(16)], own=False)
        merge_big = (time.perf_counter() - t0) / 16
        whole = merge_parts([run_fragment(tuple(fragments[k:k + 100]), template) for k in range(0, len(fragments), 100)])
        (acc,) = whole.groups.values()
        t0 = time.perf_counter()
        acc.result()
        finish = time.perf_counter() - t0
        out[name] = {"per_row": per_row, "per_batch": per_batch, "task_fixed": task_fixed, "state_small": len(blobs[0]),
                     "state_big": len(big_blob), "big_rows": rows_b, "merge": merge, "merge_big": merge_big,
                     "finish": finish}
    return out


def tree_shape(tasks: int, k: int) -> tuple[int, int]:
    """(merge tasks including the blocks, depth) of the reduction tree of ``tasks`` tasks, ``k`` parts a merge."""
    merges, depth, level = 0, 0, tasks
    while True:
        level = -(-level // k)
        merges += level
        depth += 1
        if level == 1:
            return merges, depth


def predict(c: dict, rows: int, tasks: int, workers: int, *, start: float, sigma: float, client_task: float,
            k: int = 16, cores: float | None = None, batch_rows: int = 2**17) -> dict:
    """The model: wall = start + max(workers' share, scheduler, client's submission) + the tree's last merges +
    finish. Workers' share: ceil(T / W) tasks of r rows (r x per_row + batches x per_batch + task_fixed each),
    plus their merges
    (every state is merged once per level: about T k / (k - 1) states at ``merge`` each, spread over W); the
    tree's tail after the last task: its depth x k states merged one after the other; the scheduler: sigma per
    task (tasks and merges); the client: client_task per task submitted. ``cores``: when client, scheduler and
    workers share this many cores (this machine), the CPU they need together over the cores bounds it too."""
    r = rows / tasks
    merges, depth = tree_shape(tasks, k)
    merge_each = c["merge"] + (c["merge_big"] - c["merge"]) * min(1.0, r / c["big_rows"])
    compute = math.ceil(tasks / workers) * (r * c["per_row"] + math.ceil(r / batch_rows) * c["per_batch"] + c["task_fixed"])
    merging = (tasks + merges) * merge_each / workers
    tail = depth * k * merge_each if tasks > 1 else 0.0
    scheduler = sigma * (tasks + merges)
    client = client_task * tasks
    busy = max(compute + merging, scheduler, client)
    if cores is not None:
        busy = max(busy, (workers * (compute + merging) + scheduler + client) / cores)
    return {"wall": start + busy + tail + c["finish"], "compute": compute, "merging": merging, "tail": tail,
            "scheduler": scheduler, "client": client, "depth": depth, "merges": merges, "rows_per_task": r}


def part_model_tree(results: dict) -> list[str]:
    import tempfile

    data = ensure_small_groups()
    one, _ = ensure_empty()
    lines = ["== 6. Scaling model of the reduction on the workers: constants, checks on 1, 2, 4 workers x 20, 200, 2,000 "
             "tasks, predictions =="]
    constants = model_constants(data)
    for name, c in constants.items():
        lines.append(f"{name}: per row {c['per_row'] * 1e9:.0f} ns; per batch {c['per_batch'] * 1e3:.2f} ms; per task "
                     f"{c['task_fixed'] * 1e3:.1f} ms; state {c['state_small'] / 1e3:.0f} kB (1,000 rows) / "
                     f"{c['state_big'] / 1e3:.0f} kB ({c['big_rows']:,} rows) "
                     f"packed; merge {c['merge'] * 1e3:.2f} / {c['merge_big'] * 1e3:.2f} ms per state (unpickle + merge "
                     f"into a copy); finish {c['finish']:.2f} s")
    commands = {"smece": ["smece", data, "--batch-rows", "1000"],
                "ece --n-boot 1000": ["ece", data, "--batch-rows", "1000", "--n-boot", "1000"]}
    measured = {}
    tmp = tempfile.mkdtemp(prefix="bench_dask_model_")
    try:
        for workers in (1, 2, 4):
            cluster = ExternalCluster(workers, REPO, tmp)
            try:
                scheduler_proc, worker_proc = cluster.procs
                run_client(commands["smece"] + ["--engine", "dask", "--scheduler", cluster.address], REPO,
                           {"CALIBCLI_TASK_ROWS": "100000"})  # warm-up
                w0 = run_client(["ece", one, "--n-boot", "0", "--engine", "dask", "--scheduler", cluster.address], REPO)[0]
                measured[("start", workers)] = w0
                for tasks in (20, 200, 2000):
                    for name, args in commands.items():
                        log(f"  model check: {workers} worker(s), {tasks} tasks, {name}")
                        s0, k0 = _cpu_of(scheduler_proc), _cpu_of(worker_proc)
                        wall, cpu, doc, _ = run_client(args + ["--engine", "dask", "--scheduler", cluster.address], REPO,
                                                       {"CALIBCLI_TASK_ROWS": str(SMALL_ROWS // tasks)})
                        measured[(name, workers, tasks)] = {"wall": wall, "client": cpu,
                                                            "scheduler": _cpu_of(scheduler_proc) - s0,
                                                            "workers": _cpu_of(worker_proc) - k0}
            finally:
                cluster.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # sigma: the scheduler's CPU per task (tasks and merges), from the 2,000-task runs against the 20-task ones
    sigmas, client_tasks = [], []
    for name in commands:
        for workers in (1, 2, 4):
            a, b = measured[(name, workers, 20)], measured[(name, workers, 2000)]
            sigmas.append((b["scheduler"] - a["scheduler"]) / (2000 + tree_shape(2000, 16)[0] - 20 - tree_shape(20, 16)[0]))
            client_tasks.append((b["client"] - a["client"]) / 1980)
    sigma, client_task = median(sigmas), max(0.0, median(client_tasks))
    start = median([measured[("start", w)] for w in (1, 2, 4)])
    lines.append(f"start (a run on one 1,000-row file on a running cluster): {start:.2f} s; scheduler {sigma * 1e3:.2f} ms CPU "
                 f"per task or merge; client {client_task * 1e3:.3f} ms CPU per task submitted")
    lines.append(f"{'command':18} {'workers':>7} {'tasks':>6} {'depth':>5} {'measured s':>10} {'predicted s':>11} "
                 f"{'error':>6}  {'workers CPU':>11} {'predicted':>9}  {'scheduler CPU':>13} {'predicted':>9}")
    for name in commands:
        for workers in (1, 2, 4):
            for tasks in (20, 200, 2000):
                m = measured[(name, workers, tasks)]
                p = predict(constants[name], SMALL_ROWS, tasks, workers, start=start, sigma=sigma, client_task=client_task,
                            cores=os.cpu_count(), batch_rows=SMALL_GROUP)
                lines.append(f"{name:18} {workers:>7} {tasks:>6} {p['depth']:>5} {m['wall']:10.2f} {p['wall']:11.2f} "
                             f"{(p['wall'] - m['wall']) / m['wall']:+6.0%}  {m['workers']:11.2f} "
                             f"{workers * (p['compute'] + p['merging']):9.2f}  {m['scheduler']:13.2f} {p['scheduler']:9.2f}")
    lines.append("(predicted wall on this machine: the CPU of client, scheduler and workers together over its "
                 f"{os.cpu_count()} cores bounds it, beside the slowest of them; other sessions' load is not in the model)")
    from types import SimpleNamespace

    from calibcli.engines.fragments import task_rows

    for name, c in constants.items():
        size_bar = 50e3 if name.startswith("ece") else 1e6
        lines.append(f"{name}: a {c['big_rows']:,}-row task's state is {c['state_big']:,} bytes packed   (bar <= "
                     f"{size_bar / 1e3:,.0f} kB: {'met' if c['state_big'] <= size_bar else 'MISSED'})")
    for name, c in constants.items():
        for n_workers in (100, 1000):
            n_rows = 10**10
            r = task_rows([SimpleNamespace(n_rows=n_rows // 2000)] * 2000, n_workers)  # the engine's default
            tasks = math.ceil(n_rows / r)
            p = predict(c, n_rows, tasks, n_workers, start=start, sigma=sigma, client_task=client_task)
            parts = {"workers": p["compute"] + p["merging"], "scheduler": p["scheduler"], "client": p["client"]}
            bound = max(parts, key=parts.get)
            lines.append(f"prediction {name}, 1e10 rows on {n_workers:,} workers ({tasks:,} tasks of {r:,} rows, tree depth "
                         f"{p['depth']}, {p['merges']:,} merges): {p['wall']:.1f} s = start {start:.1f} + max(workers "
                         f"{p['compute']:.1f} compute + {p['merging']:.2f} merging, scheduler {p['scheduler']:.1f}, client "
                         f"{p['client']:.2f}) + tree tail {p['tail']:.2f} + finish {c['finish']:.2f}: bound by the {bound}")
    results.update(model_tree=measured, constants=constants)
    return lines


def machine() -> list[str]:
    import distributed

    import calibcli

    load = os.getloadavg()
    return [
        f"machine: {os.cpu_count()} CPUs, {platform.platform()}, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at start",
        f"versions: calibcli {calibcli.__version__}, distributed {distributed.__version__}, Python {platform.python_version()}, "
        f"numpy {np.__version__}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1e7 rows for part 1 and the model; memory at 1e6 and 1e7")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each variant in part 1 (medians)")
    parser.add_argument("--parts", default="123456", help="which parts to run (model needs 1 and 2)")
    parser.add_argument("--before", help="a checkout of the previous version, run side by side in part 5 "
                        "(git worktree add /tmp/before-dask main)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of part 5's external cluster")
    args = parser.parse_args()
    big = "1e7" if args.quick else "1e8"
    rows = {"1e7": 10**7, "1e8": 10**8}[big]
    t0 = time.perf_counter()
    lines = ["bench_dask.py", *machine()]
    data = ensure_data(big) if set(args.parts) & set("14") else None
    results: dict = {}
    print("\n".join(lines), flush=True)
    print("\n" + "\n".join(part_machine()), flush=True)
    if "1" in args.parts:
        out = part_throughput(data, rows, args.repeats, results)
        print("\n" + "\n".join(out), flush=True)
        print("\n" + "\n".join(part_machine()), flush=True)
    if "2" in args.parts:
        out = part_overhead(results)
        print("\n" + "\n".join(out), flush=True)
    if "3" in args.parts:
        out = part_memory(["1e6", "1e7"] + ([] if args.quick else ["1e8"]))
        print("\n" + "\n".join(out), flush=True)
    if "4" in args.parts and "walls" in results and "per_task" in results:
        out = part_model(data, rows, results)
        print("\n" + "\n".join(out), flush=True)
    if "5" in args.parts:
        out = part_client(args.before, args.repeats, args.workers, results)
        print("\n" + "\n".join(out), flush=True)
    if "6" in args.parts:
        out = part_model_tree(results)
        print("\n" + "\n".join(out), flush=True)
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; total wall time {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
