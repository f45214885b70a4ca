"""The Dask engine: fragments -> tasks -> accumulator states -> merged here (SPEC 8 "Engines").

A dataset's fragments (files, or runs of a large Parquet file's row groups; see
:meth:`calibcli.io.Stream.fragments`) are packed into tasks of consecutive fragments, about
``TASKS_PER_WORKER`` per worker and at most ``MAX_TASK_ROWS`` rows each (:func:`calibcli.engines._fragments.\npack_fragments`; ``CALIBCLI_TASK_ROWS`` sets the rows, 1 makes every fragment a task). A task gets only
paths and options, reads its fragments on the worker, and returns its accumulators' ``to_dict()`` state
and its row counts (:func:`calibcli.engines._fragments.run_fragment`); the client merges the states in row order and
finishes there, exactly as the local engine does (:func:`calibcli.engines._fragments.run_fragments`). Rows
are numbered by their global index, so bootstrap draws do not depend on which worker saw them and the
report equals the local engine's to 1e-12.

Where the work runs: an existing cluster (``--scheduler ADDRESS`` or a scheduler file, or Dask's own
``DASK_SCHEDULER_ADDRESS``), else a ``distributed.LocalCluster`` of ``--workers`` processes (one
thread each) started for the run and closed afterwards, also on an error or Ctrl-C. Tasks are pure, so
a task lost with its worker is run again by Dask elsewhere and the result does not change. A fragment
that cannot be read raises the same :class:`~calibcli.errors.CalibcliError` as locally: the first bad
fragment in row order is reported and the other tasks are cancelled.

``distributed`` is an optional dependency (``pip install "calibcli[dask]"``), imported only here.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import uuid
from contextlib import ExitStack, contextmanager
from typing import Callable, Iterator

from calibcli import cancel
from calibcli._malloc import SETTINGS as MALLOC_SETTINGS
from calibcli.engines._fragments import pack_fragments, run_fragment, run_fragments, task_rows
from calibcli.engines.base import register
from calibcli.errors import CalibcliError

INSTALL_HINT = 'pip install "calibcli[dask]"'


def require_distributed() -> None:
    """Fail with the install command when ``distributed`` is missing (exit 2 from the CLI)."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise CalibcliError(f"{{opt:engine}} dask needs the package distributed, which is not installed: {INSTALL_HINT}") from None


@register
class DaskEngine:
    """Runs a stream's fragments as tasks on a connected ``distributed.Client``.

    ``workers`` is the number of worker processes when the run starts (the report's ``workers``);
    ``progress(total, description)`` is a context manager yielding an ``advance()`` callable (a bar of
    fragments done), or None.
    """

    name = "dask"
    where = "a Dask cluster: --scheduler, or a local one of --workers processes"

    def __init__(self, client, *, workers: int, progress=None, task_rows: int | None = None):
        self.client = client
        self.workers = workers
        self.progress = progress
        self.task_rows = task_rows  # None: from the dataset's rows and the workers
        self._run = uuid.uuid4().hex[:8]  # task keys unique to this run on a shared cluster
        self._passes = 0

    @classmethod
    def check(cls, scheduler: str | None, workers: int | None) -> None:
        """``--scheduler`` or ``--workers`` (not both), and ``distributed`` installed."""
        if scheduler is not None and workers is not None:
            raise CalibcliError("--scheduler and --workers both say where to run: --scheduler uses a running cluster, "
                                "--workers starts a local one; give one of them")
        if workers is not None and workers < 1:
            raise CalibcliError(f"--workers is {workers}: expected at least 1 worker process")
        require_distributed()

    @classmethod
    def open(cls, *, scheduler: str | None = None, workers: int | None = None, progress=None):
        """A cluster for the run (:func:`dask_engine`)."""
        return dask_engine(scheduler=scheduler, workers=workers, progress=progress)

    def run(self, stream, new) -> tuple[list[tuple[dict | None, object]], dict]:
        """The stream's entries ``(group values or None, accumulator)`` and its report input section."""
        entries, counts = run_fragments(stream, new, lambda fragments, kind, **templates: self.map(
            fragments, kind, description=f"{stream.name}: fragments", **templates))
        return entries, stream.describe(counts)

    def map(self, fragments, kind, *, first: dict | None = None, second: dict | None = None,
            description: str = "fragments") -> Iterator[dict]:
        """Run :func:`calibcli.engines._fragments.run_fragment` on the fragments, packed into tasks; yield the
        tasks' documents in row order (each as soon as it and those before it are done)."""
        from distributed import as_completed

        if not fragments:
            return
        tasks = pack_fragments(fragments, self.task_rows or task_rows(fragments, self.workers))
        client = self.client
        # The template travels once, as a task of its own that the others depend on (not scattered: a
        # scattered value lost with its worker could not be made again, and its dependents would fail).
        template = client.submit(_template, first if second is None else second,
                                 key=f"calibcli-template-{self._run}-{self._passes + 1}", pure=False)
        tag = f"{self._run}-{self._passes + 1}"
        self._passes += 1
        # one submission for every task (keys zero-padded: Dask runs equal-priority tasks in key order)
        futures = client.map(_task, tasks, kind=kind, first=template if second is None else None,
                             second=template if second is not None else None,
                             key=[f"calibcli-fragment-{tag}-{i:07d}" for i in range(len(tasks))], pure=False)
        index = {future.key: i for i, future in enumerate(futures)}
        done: dict[int, object] = {}  # index -> finished future, or the error to raise at its turn
        first_error: int | None = None
        next_index = 0
        progress = self.progress(len(fragments), description) if self.progress else _no_progress()
        try:
            with progress as advance:
                for batch in as_completed(futures).batches():
                    for future in batch:
                        i = index[future.key]
                        if future.status == "cancelled" and first_error is not None and i > first_error:
                            continue  # cancelled here: a fragment before it failed
                        advance(len(tasks[i]))
                        if future.status == "cancelled":
                            done[i] = CalibcliError(f"{tasks[i][0].path}: its task was cancelled on the Dask cluster "
                                                    f"(scheduler restarted, or cancelled by hand): run the command again")
                        elif future.status == "error":
                            if first_error is None or i < first_error:
                                first_error = i
                                later = [f for f in futures[i + 1:] if f is not None]
                                if later:
                                    client.cancel(later)
                            done[i] = _remote_error(future.exception(), tasks[i][0])
                        else:
                            done[i] = future
                    # the documents now ready in fragment order, fetched together (a result lost with its
                    # worker meanwhile is computed again: gather waits for it)
                    ready = []
                    while next_index + len(ready) in done and not isinstance(done[next_index + len(ready)], BaseException):
                        ready.append(done.pop(next_index + len(ready)))
                    if ready:
                        for document in client.gather(ready):
                            futures[next_index] = None  # released on the workers
                            next_index += 1
                            yield document
                    if next_index in done:
                        raise done.pop(next_index)
            if next_index != len(tasks):
                raise RuntimeError(f"{len(tasks) - next_index} of {len(tasks)} tasks returned no result")
        finally:
            remaining = [f for f in futures if f is not None and not f.done()]
            if remaining:
                client.cancel(remaining)
            del template


def _template(document: dict) -> dict:
    return document


def _task(fragments, kind, first, second) -> dict:
    """The task: a run of fragments into accumulator states, with an error that travels back intact."""
    try:
        return run_fragment(fragments, kind, first, second)
    except CalibcliError as exc:
        raise portable_error(exc) from None


def portable_error(exc: CalibcliError) -> CalibcliError:
    """``exc`` if it survives pickling with its message (so the client re-raises it as it is), else a
    plain :class:`CalibcliError` with the same message (its ``{opt:...}`` template, so the command line
    still shows flags)."""
    template = getattr(exc, "template", str(exc))
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and getattr(back, "template", str(back)) == template:
            return exc
    except Exception:
        pass
    return CalibcliError(template)


def _remote_error(exc: BaseException, fragment) -> BaseException:
    """What the client raises for a failed task: a CalibcliError as it is; a worker that kept dying or
    could not load calibcli as a CalibcliError that says so."""
    if isinstance(exc, CalibcliError):
        return exc
    name = type(exc).__name__
    if name == "KilledWorker":
        return CalibcliError(
            f"{fragment.path}: the workers reading it died repeatedly (out of memory?): see the workers' logs; "
            f"smaller fragments come with a smaller {{opt:batch_rows}}"
        )
    if isinstance(exc, ImportError):
        return CalibcliError(
            f"the Dask workers cannot run calibcli's tasks ({name}: {exc}): install the same calibcli on every "
            f"worker ({INSTALL_HINT})"
        )
    return exc


def _debugging() -> bool:
    return os.environ.get("CALIBCLI_DEBUG", "") not in ("", "0")


@contextmanager
def _no_progress():
    yield lambda: None


# ---------------------------------------------------------------------------------------------
# Where the tasks run


def scheduler_address(scheduler: str | None) -> str | None:
    """The scheduler to connect to: ``--scheduler``, else Dask's ``scheduler-address`` setting (the
    ``DASK_SCHEDULER_ADDRESS`` environment variable or Dask's configuration files), else None."""
    if scheduler:
        return scheduler
    import dask

    return dask.config.get("scheduler-address", None) or None


@contextmanager
def dask_engine(*, scheduler: str | None = None, workers: int | None = None, progress=None,
                announce: Callable[[str], None] | None = None) -> Iterator[DaskEngine]:
    """A :class:`DaskEngine` on an existing cluster (``scheduler``: an address such as
    ``tcp://10.0.0.5:8786``, or the path of a scheduler file), or on a ``LocalCluster`` of ``workers``
    processes (default: one per CPU) started now and closed on leaving, whatever happens.

    ``announce`` gets one line for stderr: the cluster and its dashboard.
    """
    require_distributed()
    rows = task_rows_setting()
    from distributed import Client

    announce = announce or (lambda line: sys.stderr.write(line + "\n"))
    quiet = not _debugging()
    with ExitStack() as stack:
        if quiet:
            stack.enter_context(_quiet_logs())
        address = None if workers is not None else scheduler_address(scheduler)
        if address is not None:
            client = stack.enter_context(_connect(Client, address))
            n_workers = len(client.nthreads())
            announce(f"Dask: connected to {client.scheduler.address} ({n_workers} workers); dashboard {client.dashboard_link}")
        else:
            import dask
            from dask.system import CPU_COUNT
            from distributed import LocalCluster

            n_workers = CPU_COUNT if workers is None else workers
            try:
                with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
                    cluster = stack.enter_context(LocalCluster(
                        n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL if quiet else logging.WARNING,
                    ))
            except KeyboardInterrupt:  # a signal while the cluster starts: no cluster to close, only processes
                _abandon_starting_cluster()
                raise
            stack.callback(_stop_workers, cluster)  # runs before the cluster's own close
            client = stack.enter_context(Client(cluster))
            announce(f"Dask: a local cluster of {n_workers} worker processes; dashboard {_dashboard(cluster.dashboard_link)}")
        yield DaskEngine(client, workers=n_workers, progress=progress, task_rows=rows)


def task_rows_setting() -> int | None:
    """``CALIBCLI_TASK_ROWS``: the rows of a task (consecutive fragments packed up to it; 1: a task per
    fragment), or None for the default (:func:`calibcli.engines._fragments.task_rows`)."""
    value = os.environ.get("CALIBCLI_TASK_ROWS", "").strip()
    if not value:
        return None
    try:
        rows = int(value)
    except ValueError:
        rows = 0
    if rows < 1:
        raise CalibcliError(f"CALIBCLI_TASK_ROWS is {value!r}: expected a whole number of rows, at least 1 (or unset it)")
    return rows


# glibc's allocator in the local cluster's workers (read at process start, so set before the nanny spawns
# them): a fragment's arrays (4 MB each at 500,000 rows) come from the heap and are reused by the next
# fragment, instead of a fresh mmap per array whose pages are faulted in again every time. Dask's default
# (MALLOC_TRIM_THRESHOLD_=65536) also switches off glibc's adaptive mmap threshold, so every array above
# 128 kB was mmapped: measured on 500,000-row ece fragments, 57 ms each (29 ms of it in the kernel,
# 10,700 page faults) against 26 ms (4.5 ms, 680 faults) with these two. Memory stays bounded by one
# fragment's working set (arrays above 32 MB are mmapped as before), plus up to 128 MB of free heap kept.
WORKER_MALLOC = {name: str(value) for name, value in MALLOC_SETTINGS.items()}  # as the CLI's own process


def worker_environ() -> dict:
    """Dask's ``distributed.nanny.pre-spawn-environ`` with :data:`WORKER_MALLOC`, unless the user chose:
    either variable in the environment (a nanny gives the environment's value precedence over that
    setting, and a worker inherits the rest), or an mmap threshold, or a trim threshold other than Dask's
    default, in that setting."""
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", None) or {})
    if any(name in os.environ for name in WORKER_MALLOC) or "MALLOC_MMAP_THRESHOLD_" in environ:
        return environ
    if str(environ.get("MALLOC_TRIM_THRESHOLD_", "65536")) != "65536":
        return environ
    return {**environ, **WORKER_MALLOC}


def _abandon_starting_cluster() -> None:
    """A signal came while a ``LocalCluster`` was starting: end the worker processes it has spawned, and
    take the half-made cluster off Dask's list of clusters to close at exit (closing it there would fail
    on workers that never started, with a traceback)."""
    import multiprocessing

    # the half-started workers' start-up tasks fail once their processes are gone; asyncio would log each
    # failure ("Task exception was never retrieved") with a traceback while the process exits
    logging.getLogger("asyncio").setLevel(logging.CRITICAL + 1)
    for process in multiprocessing.active_children():
        try:
            process.terminate()
        except OSError:
            pass
    try:
        from distributed.deploy.spec import SpecCluster

        SpecCluster._instances.clear()
    except (ImportError, AttributeError):
        pass


def _stop_workers(cluster) -> None:
    """End the local cluster's worker processes at once when the run leaves the cluster: every result
    has been merged by then (or the run failed or was interrupted), so the workers' graceful close (a
    stop message, the worker closing its comms and executor, the nanny joining it: 0.3 s measured for 2
    workers) is of no use. Each nanny is marked as closing first, so it closes itself when its worker
    exits instead of starting a new one; the cluster's close then finds them closed (0.02 s), and the
    nannies still join their worker processes, so none is left behind."""
    if cancel.requested():
        _stop_on_interrupt(cluster)
        return
    import signal

    from distributed.core import Status

    async def stop() -> None:
        for nanny in list(getattr(cluster, "workers", {}).values()):
            pid = getattr(getattr(nanny, "process", None), "pid", None)
            if pid and nanny.status == Status.running:
                nanny.status = Status.closing_gracefully  # the nanny closes when its worker exits
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:  # already gone
                    pass

    try:
        cluster.sync(stop, callback_timeout=5)
    except Exception:  # the loop is gone or stuck: the cluster's own close ends the workers, slower
        logging.getLogger(__name__).debug("could not stop the workers at once", exc_info=True)


def _stop_on_interrupt(cluster) -> None:
    """After a signal (:mod:`calibcli.cancel`), end the local cluster's worker processes at once: a graceful
    close waits for their running tasks (seconds), and the run is being abandoned anyway."""
    import signal

    if not cancel.requested():
        return
    for worker in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(worker, "process", None), "pid", None)
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:  # already gone
                pass


#: Seconds to wait for a scheduler to answer (distributed's own default is 30 s: a wrong port or a refused
#: connection kept the user waiting that long before one line said so).
CONNECT_TIMEOUT = 5

_HINT = "check the address (tcp://HOST:PORT) or scheduler file, or start one with `dask scheduler`"


def _scheduler_file_address(path: str) -> str:
    """The address a scheduler file (``dask scheduler --scheduler-file``) names; one error for anything else."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1 << 20)
        info = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise CalibcliError(f"cannot read the Dask scheduler file {path} ({exc.strerror or exc}): {_HINT}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise CalibcliError(f"{path} is not a Dask scheduler file (not JSON): expected the file written by "
                            f"`dask scheduler --scheduler-file`, or an address tcp://HOST:PORT") from None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str) or not address:
        raise CalibcliError(f"{path} is not a Dask scheduler file (no \"address\"): expected the file written by "
                            f"`dask scheduler --scheduler-file`, or an address tcp://HOST:PORT")
    return address


def _check_address(address: str) -> None:
    """Refuse at once an address no scheduler can have: a port outside 1..65535."""
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if sep and host and port.isdigit() and not 0 < int(port) < 65536:
        raise CalibcliError(f"cannot connect to a Dask scheduler at {address}: port {port} is not a TCP port "
                            f"(1 to 65535): {_HINT}")


@contextmanager
def _connect(Client, address: str):
    if os.path.isfile(address):
        target, where = _scheduler_file_address(address), f"{address} (a scheduler file naming {{}})"
    else:
        target, where = address, "{}"
    _check_address(target)
    try:
        client = Client(target, timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # an unreachable, refused or malformed address, a protocol not installed (ucx://)
        if cancel.requested():
            raise
        detail = str(exc).strip() or "no detail"
        raise CalibcliError(
            f"cannot connect to a Dask scheduler at {where.format(target)} ({type(exc).__name__}: {detail}): {_HINT}"
        ) from None
    with client:
        yield client


def _dashboard(link: str | None) -> str:
    import importlib.util

    if not link:
        return "not available"
    if importlib.util.find_spec("bokeh") is None:
        return f"{link} (needs bokeh: pip install bokeh)"
    return link


@contextmanager
def _quiet_logs():
    """Dask's own log lines (workers started and stopped, results computed again after a lost worker)
    stay off stderr during the run; ``CALIBCLI_DEBUG=1`` shows them."""
    names = ["distributed", *(name for name in logging.root.manager.loggerDict if name.startswith("distributed."))]
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
