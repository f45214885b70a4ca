"""Where the time of one ``calibcli ... --engine dask`` run goes: a timeline printed on stderr.

Run it as calibcli itself: ``python benchmarks/tools/dask_timeline.py ece ~/.cache/calibcli-bench/stream_1e8_v1 --n-boot 1000
--json --engine dask --workers 2 > report.json``. It runs the command in this process, with the Dask engine's
steps wrapped (no change to what they do): seconds since the process was created (psutil) and this
process's CPU seconds at each step (imports, the local cluster's start, the client, the tasks submitted,
the first and last result, the client's time merging states, the bootstrap finish, the cluster's close);
then, from the scheduler's task stream, each worker's tasks: the first one's start and length (the imports
of calibcli and pyarrow on the worker), the second's, the last end and the time busy. The figures of
``docs/dask_benchmark.md`` come from it.
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    import atexit
    import pickle
    import resource
    from contextlib import contextmanager

    import psutil

    t0 = psutil.Process().create_time()
    events: list[tuple[float, float, str]] = []
    state: dict = {}

    def event(name: str) -> None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        events.append((time.time() - t0, r.ru_utime + r.ru_stime, name))

    event("this script runs")
    from calibcli.cli import app as cli

    event("calibcli.cli.app imported")
    import distributed.deploy.local as local

    import calibcli.engines.dask as engine

    event("distributed imported")
    cluster_init = local.LocalCluster.__init__

    def timed_init(self, *args, **kwargs):
        event("LocalCluster() begins")
        cluster_init(self, *args, **kwargs)
        event("LocalCluster() ready (workers registered)")

    local.LocalCluster.__init__ = timed_init
    dask_engine, engine_map = engine.dask_engine, engine.DaskEngine.map

    @contextmanager
    def timed_engine(**kwargs):
        event("dask_engine entered (first dataset open)")
        with dask_engine(**kwargs) as runner:
            event("client ready")
            try:
                yield runner
            finally:
                event("results finished (bootstrap done); leaving the cluster")
                try:
                    state["stream"] = runner.client.get_task_stream(start=0) if state.get("recording") else []
                except Exception:
                    state["stream"] = []
        event("cluster closed")

    def timed_map(self, fragments, kind, **kwargs):
        if not state.get("recording"):
            self.client.get_task_stream()  # installs the scheduler's task-stream recorder
            state["recording"] = True
        from calibcli.engines.fragments import pack_fragments, task_rows

        tasks = pack_fragments(fragments, self.task_rows or task_rows(fragments, self.workers))
        event(f"{len(fragments)} fragments submitted as {len(tasks)} tasks")
        consumer, sizes, first = 0.0, [], True
        for document in engine_map(self, fragments, kind, **kwargs):
            if first:
                event("first result at the client")
                first = False
            sizes.append(len(pickle.dumps(document)))
            t = time.perf_counter()
            yield document
            consumer += time.perf_counter() - t
        sizes.sort()
        event(f"last result at the client (merging states took {consumer:.2f} s here; a state "
              f"{sizes[len(sizes) // 2] if sizes else 0:,} bytes pickled)")

    engine.dask_engine = timed_engine
    engine.DaskEngine.map = timed_map

    def report() -> None:
        event("process exits")
        for at, cpu, name in events:
            print(f"{at:7.3f} s  cpu {cpu:5.2f} s  {name}", file=sys.stderr)
        per_worker: dict = {}
        for record in state.get("stream", []):
            for s in record["startstops"]:
                if s["action"] == "compute":
                    per_worker.setdefault(record.get("worker"), []).append((s["start"] - t0, s["stop"] - t0))
        for worker, spans in per_worker.items():
            spans.sort()
            second = spans[1][1] - spans[1][0] if len(spans) > 1 else 0.0
            print(f"worker {worker}: {len(spans)} tasks (one worker's first is the template); first starts {spans[0][0]:.3f} s, "
                  f"second takes {second * 1e3:.0f} ms; last ends {spans[-1][1]:.3f} s; busy "
                  f"{sum(b - a for a, b in spans):.2f} s", file=sys.stderr)

    atexit.register(report)
    sys.argv = ["calibcli", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":  # (the workers' processes are spawned: they import this file without running it)
    main()
