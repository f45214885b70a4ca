"""The Dask engine: fragments -> tasks -> parts -> merged in a tree on the workers (SPEC 8 "Engines").

A dataset's fragments (files, or runs of a large Parquet file's row groups; see
:meth:`calibcli.io.Stream.fragments`) are packed into tasks of consecutive fragments, about
``TASKS_PER_WORKER`` per worker and at most ``MAX_TASK_ROWS`` rows each
(:func:`calibcli.engines.fragments.pack_fragments`; ``CALIBCLI_TASK_ROWS`` sets the rows, 1 makes every
fragment a task). A task gets only paths and options, reads its fragments on the worker, and returns a
:class:`~calibcli.engines.fragments.Part`: its accumulators (whose arrays travel packed:
:mod:`calibcli.core.arraystate`) and row counts. Parts are merged on the workers, in a tree of merge tasks
(:func:`reduction_graph`, as ``dask.bag``'s ``reduction(split_every=...)``), so the client receives one
state per pass of a dataset, however many tasks there are, and finishes it exactly as the local engine
does (:func:`calibcli.engines.fragments.run_fragments`). Merging is exact and associative, and rows are
numbered by their global index, so bootstrap draws do not depend on which worker saw them and the report
equals the local engine's to 1e-12.

Where the work runs: an existing cluster (``--scheduler ADDRESS`` or a scheduler file, or Dask's own
``DASK_SCHEDULER_ADDRESS``), else a ``distributed.LocalCluster`` of ``--workers`` processes (one
thread each) started for the run and closed afterwards, also on an error or Ctrl-C. Tasks are pure, so
a task lost with its worker is run again by Dask elsewhere and the result does not change. A fragment
that cannot be read raises the same :class:`~calibcli.core.errors.CalibcliError` as locally: the first bad
fragment in row order is reported and the other tasks are cancelled.

``distributed`` is an optional dependency (``pip install "calibcli[dask]"``), imported only here.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pickle
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from calibcli.core import cancel, environment
from calibcli.core.errors import CalibcliError
from calibcli.core.malloc import SETTINGS as MALLOC_SETTINGS
from calibcli.engines.base import register
from calibcli.engines.fragments import Part, merge_parts, pack_fragments, run_fragment, run_fragments, task_rows
from calibcli.io.footers import map_in_threads

INSTALL_HINT = 'pip install "calibcli[dask]"'


def require_distributed() -> None:
    """Fail with the install command when ``distributed`` is missing (exit 2 from the CLI)."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise CalibcliError(
            f"{{opt:engine}} dask needs the package distributed, which is not installed: {INSTALL_HINT}"
        ) from None


@register
class DaskEngine:
    """Runs a stream's fragments as tasks on a connected ``distributed.Client``.

    ``workers`` is the number of worker processes when the run starts (the report's ``workers``);
    ``progress(total, description)`` is a context manager yielding an ``advance()`` callable (a bar of
    fragments done), or None.
    """

    name = "dask"
    where = "a Dask cluster: --scheduler, or a local one of --workers processes"

    def __init__(
        self, client, *, workers: int, progress=None, task_rows: int | None = None, split_every: int | None = None
    ):
        self.client = client
        self.split_every = split_every or SPLIT_EVERY
        self.workers = workers
        self.progress = progress
        self.task_rows = task_rows  # None: from the dataset's rows and the workers
        self._run = uuid.uuid4().hex[:8]  # task keys unique to this run on a shared cluster
        self._passes = 0

    @classmethod
    def check(cls, scheduler: str | None, workers: int | None) -> None:
        """``--scheduler`` or ``--workers`` (not both), and ``distributed`` installed."""
        if scheduler is not None and workers is not None:
            raise CalibcliError(
                "--scheduler and --workers both say where to run: --scheduler uses a running cluster, "
                "--workers starts a local one; give one of them"
            )
        if workers is not None and workers < 1:
            raise CalibcliError(f"--workers is {workers}: expected at least 1 worker process")
        require_distributed()

    @classmethod
    def open(cls, *, scheduler: str | None = None, workers: int | None = None, progress=None):
        """A cluster for the run (:func:`dask_engine`)."""
        return dask_engine(scheduler=scheduler, workers=workers, progress=progress)

    def run(self, stream, new) -> tuple[list[tuple[dict | None, object]], dict]:
        """The stream's entries ``(group values or None, accumulator)`` and its report input section."""
        entries, counts = run_fragments(
            stream,
            new,
            lambda fragments, **templates: self.reduce(fragments, description=f"{stream.name}: fragments", **templates),
            map_files=self.map_files,
        )
        return entries, stream.describe(counts)

    def map_files(self, function, files: list[tuple]) -> list:
        """``function(path, location, format)`` of every file, in order (:meth:`calibcli.io.Stream.fragments`:
        the footers). Files in an object store (a URI such as ``s3://``, ``gs://``, ``abfs://``) are read by
        tasks on the cluster, where the storage is near and the round trips overlap across workers (the
        client lists nothing serially); local files in a pool of threads here (the workers may not see this
        machine's files by the same paths, and a local footer is a fraction of a millisecond)."""
        if not any(_in_object_store(location) for _, location, _ in files):
            return map_in_threads(function, files)
        paths, locations, formats = (list(column) for column in zip(*files, strict=True))
        futures = self.client.map(
            functools.partial(_portable_call, function),
            paths,
            locations,
            formats,
            pure=False,
            key=[f"calibcli-footer-{self._run}-{i:07d}" for i in range(len(files))],
        )
        try:
            return self.client.gather(futures)
        except CalibcliError:
            raise
        except Exception as exc:  # a worker that cannot import calibcli or reach the storage
            raise _remote_error(exc, None, "reading the files' footers") from None

    def reduce(self, fragments, *, first=None, second: dict | None = None, description: str = "fragments") -> Part:
        """The :class:`~calibcli.engines.fragments.Part` of all ``fragments``, reduced on the cluster.

        The fragments are packed into tasks (:func:`calibcli.engines.fragments.pack_fragments`); tasks
        in blocks of ``SPLIT_EVERY`` consecutive ones each feed a block task, which merges their parts and
        raises the first bad fragment's error among them in row order; the blocks' parts are merged in a
        tree of ``SPLIT_EVERY``-ary merge tasks, on the workers, into one. The client submits the graph
        once and holds only the blocks (for the progress bar and errors, whose parts stay on the workers)
        and the root, whose part is the only state it receives."""
        if not fragments:
            return Part()
        tasks = pack_fragments(fragments, self.task_rows or task_rows(fragments, self.workers))
        return self.reduce_tasks(
            tasks,
            first if second is None else second,
            second=second is not None,
            description=description,
            n_fragments=len(fragments),
        )

    def reduce_tasks(
        self,
        tasks: list,
        template,
        *,
        second: bool = False,
        description: str = "fragments",
        n_fragments: int | None = None,
        leaf=None,
        merge=None,
    ):
        """The merged part of ``tasks`` (each a tuple whose items have a ``path``, the first one naming the task
        in messages; the progress bar counts the items), reduced on the cluster as :meth:`reduce` says.

        ``leaf(task, template, second)`` makes a task's part (default :func:`run_fragment`'s, through
        :func:`_fragment_leaf`) and ``merge(parts, own=False)`` merges consecutive parts (default
        :func:`merge_parts`); both are module-level functions (they travel to the workers by name) and a part
        has an ``error``: the first bad row's :class:`CalibcliError` in row order."""
        from distributed import as_completed

        self._passes += 1
        tag = f"{self._run}-{self._passes}"
        graph, blocks, root = reduction_graph(
            tasks,
            template,
            tag,
            self.split_every,
            second=second,
            leaf=leaf or _fragment_leaf,
            merge=merge or merge_parts,
        )
        client = self.client
        block_of = {key: b for b, (key, _) in enumerate(blocks)}
        leaf_of = {f"calibcli-fragment-{tag}-{i:07d}": i for i in range(len(tasks))}
        futures = client.get(graph, [key for key, _ in blocks] + ([root] if len(blocks) > 1 else []), sync=False)
        root_future = futures[-1]
        futures = futures[: len(blocks)]
        done: dict[int, BaseException | None] = {}  # block -> None (its part is ready), or the error to raise
        first_error: int | None = None
        next_block = 0
        total = n_fragments if n_fragments is not None else sum(len(task) for task in tasks)
        progress = self.progress(total, description) if self.progress else _no_progress()
        try:
            with progress as advance:
                for batch in as_completed(futures).batches():
                    for future in batch:
                        b = block_of[future.key]
                        if future.status == "cancelled" and first_error is not None and b > first_error:
                            continue  # cancelled here: a fragment before it failed
                        first_task, last_task = blocks[b][1]
                        advance(sum(len(tasks[i]) for i in range(first_task, last_task)))
                        if future.status == "cancelled":
                            done[b] = CalibcliError(
                                f"{tasks[first_task][0].path}: its task was cancelled on the Dask "
                                f"cluster (scheduler restarted, or cancelled by hand): run the "
                                f"command again"
                            )
                        elif future.status == "error":
                            exc = future.exception()
                            if first_error is None or b < first_error:
                                first_error = b
                                later = [
                                    f for f in [*futures[b + 1 :], root_future] if f is not None and f is not future
                                ]
                                if later:
                                    client.cancel(later)
                            task = leaf_of.get(_key_of(getattr(exc, "task", None)) or "", first_task)
                            done[b] = _remote_error(exc, tasks[task][0])
                        else:
                            done[b] = None
                    while next_block in done and done[next_block] is None:
                        futures[next_block] = None  # its part stays on the workers for the merge tree
                        del done[next_block]
                        next_block += 1
                    if next_block in done:
                        error = done.pop(next_block)
                        assert error is not None
                        raise error
            if next_block != len(blocks):
                raise RuntimeError(f"{len(blocks) - next_block} of {len(blocks)} blocks of tasks returned no result")
            try:
                return root_future.result()
            except CalibcliError:
                raise
            except Exception as exc:  # a merge's worker kept dying, or calibcli missing on a worker
                raise _remote_error(exc, None, "merging the tasks' states") from None
        finally:
            remaining = [f for f in [*futures, root_future] if f is not None and not f.done()]
            if remaining:
                client.cancel(remaining)


#: Parts merged by one merge task: with 2,000 tasks, blocks of 16 and a tree of depth 3 above them
#: (125 -> 8 -> 1). dask.bag's ``reduction(split_every=...)`` defaults to 8; 16 halves the merge tasks and
#: keeps a merge of the largest states (a few MB each) to tens of milliseconds.
SPLIT_EVERY = 16


class _Box:
    """A value carried inside a task graph as it is (Dask does not look inside it for keys or tasks)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __reduce__(self):
        return (_Box, (self.value,))


def reduction_graph(
    tasks: list[tuple],
    template,
    tag: str,
    split_every: int = SPLIT_EVERY,
    *,
    second: bool = False,
    leaf=None,
    merge=None,
):
    """The task graph of one pass: a template task (``template``: an empty accumulator, or with ``second``
    the second pass's templates by group key; it travels once), a task per run of fragments, block tasks over
    ``split_every`` consecutive tasks each, and ``split_every``-ary merge tasks above the blocks up to one
    root. Returns ``(graph, [(block key, (first task, end task))], root key)``; keys are zero-padded, so
    equal-priority tasks run in row order. ``leaf`` and ``merge``: as :meth:`DaskEngine.reduce_tasks` says."""
    leaf, merge = _Box(leaf or _fragment_leaf), _Box(merge or merge_parts)
    template_key = f"calibcli-template-{tag}"
    graph: dict = {template_key: (_unbox, _Box(template))}
    leaves = []
    for i, task in enumerate(tasks):
        key = f"calibcli-fragment-{tag}-{i:07d}"
        graph[key] = (_task, leaf, _Box(task), template_key, second)
        leaves.append(key)
    blocks = []
    level = []
    for b, start in enumerate(range(0, len(leaves), split_every)):
        key = f"calibcli-block-{tag}-{b:07d}"
        graph[key] = (_block, merge, *leaves[start : start + split_every])
        blocks.append((key, (start, min(start + split_every, len(leaves)))))
        level.append(key)
    depth = 0
    while len(level) > 1:
        depth += 1
        above = []
        for m, start in enumerate(range(0, len(level), split_every)):
            key = f"calibcli-merge-{tag}-{depth}-{m:07d}"
            graph[key] = (_merge, merge, *level[start : start + split_every])
            above.append(key)
        level = above
    return graph, blocks, level[0]


def _portable_call(function, *args):
    """``function(*args)`` on a worker, an error returned as the value made portable (:func:`portable_error`)."""
    out = function(*args)
    return portable_error(out) if isinstance(out, CalibcliError) else out


def _in_object_store(location: str) -> bool:
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.lower() not in ("file", "")


def _key_of(key) -> str | None:
    return key if isinstance(key, str) or key is None else str(key)


def _unbox(box: _Box):
    return box.value


def _fragment_leaf(fragments, template, second: bool) -> Part:
    """A run of fragments into a part (:func:`run_fragment`; ``template``: the first pass's empty accumulator, or
    the second pass's templates by group key)."""
    if second:
        return run_fragment(fragments, None, template)
    return run_fragment(fragments, template, None)


def _task(leaf: _Box, task: _Box, template, second: bool):
    """A leaf task: ``leaf(task, template, second)``; a bad row or file is the part's error (so that the block
    reports the first one in row order, whichever task failed first in time). A leaf other than
    :func:`_fragment_leaf` returns its own kind of part, with its error in it."""
    try:
        return leaf.value(task.value, template, second)
    except CalibcliError as exc:
        return Part(error=portable_error(exc))


def _block(merge: _Box, *parts):
    """A block of consecutive tasks' parts merged; the first error among them in row order raised."""
    merged = merge.value(parts, own=False)
    if merged.error is not None:
        raise merged.error
    return merged


def _merge(merge: _Box, *parts):
    """Consecutive blocks' parts merged (a node of the reduction tree)."""
    return merge.value(parts, own=False)


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


def _remote_error(exc: BaseException, fragment, doing: str = "") -> BaseException:
    """What the client raises for a failed task: a CalibcliError as it is; a worker that kept dying or
    could not load calibcli as a CalibcliError that says so. ``fragment``: the fragment the task read, or None
    for a task reading no rows (``doing`` says what it did)."""
    if isinstance(exc, CalibcliError):
        return exc
    name = type(exc).__name__
    if name == "KilledWorker" and fragment is None:
        return CalibcliError(f"the Dask workers {doing} died repeatedly (out of memory?): see the workers' logs")
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
    return environment.debugging()


@contextmanager
def _no_progress():
    yield lambda steps=1: None


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
def dask_engine(
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress=None,
    announce: Callable[[str], None] | None = None,
) -> Iterator[DaskEngine]:
    """A :class:`DaskEngine` on an existing cluster (``scheduler``: an address such as
    ``tcp://10.0.0.5:8786``, or the path of a scheduler file), or on a ``LocalCluster`` of ``workers``
    processes (default: one per CPU) started now and closed on leaving, whatever happens.

    ``announce`` gets one line for stderr: the cluster and its dashboard.
    """
    require_distributed()
    rows = task_rows_setting()
    from distributed import Client

    say: Callable[[str], object] = announce or (lambda line: sys.stderr.write(line + "\n"))
    quiet = not _debugging()
    with ExitStack() as stack:
        if quiet:
            stack.enter_context(_quiet_logs())
        address = None if workers is not None else scheduler_address(scheduler)
        if address is not None:
            client = stack.enter_context(_connect(Client, address))
            n_workers = len(client.nthreads())
            say(
                f"Dask: connected to {client.scheduler.address} ({n_workers} workers); "
                f"dashboard {client.dashboard_link}"
            )
        else:
            import dask
            from dask.system import CPU_COUNT
            from distributed import LocalCluster

            n_workers = CPU_COUNT if workers is None else workers
            try:
                with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()}):
                    cluster = stack.enter_context(
                        LocalCluster(
                            n_workers=n_workers,
                            threads_per_worker=1,
                            processes=True,
                            host="127.0.0.1",
                            dashboard_address="127.0.0.1:0",
                            silence_logs=logging.CRITICAL if quiet else logging.WARNING,
                        )
                    )
            except KeyboardInterrupt:  # a signal while the cluster starts: no cluster to close, only processes
                _abandon_starting_cluster()
                raise
            stack.callback(_stop_workers, cluster)  # runs before the cluster's own close
            client = stack.enter_context(Client(cluster))
            say(
                f"Dask: a local cluster of {n_workers} worker processes; dashboard {_dashboard(cluster.dashboard_link)}"
            )
        yield DaskEngine(client, workers=n_workers, progress=progress, task_rows=rows)


def task_rows_setting() -> int | None:
    """``CALIBCLI_TASK_ROWS``: the rows of a task (consecutive fragments packed up to it; 1: a task per
    fragment), or None for the default (:func:`calibcli.engines.fragments.task_rows`)."""
    value = os.environ.get("CALIBCLI_TASK_ROWS", "").strip()
    if not value:
        return None
    try:
        rows = int(value)
    except ValueError:
        rows = 0
    if rows < 1:
        raise CalibcliError(
            f"CALIBCLI_TASK_ROWS is {value!r}: expected a whole number of rows, at least 1 (or unset it)"
        )
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
    """After a signal (:mod:`calibcli.core.cancel`), end the local cluster's worker processes at once: a graceful
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
        raise CalibcliError(
            f"{path} is not a Dask scheduler file (not JSON): expected the file written by "
            f"`dask scheduler --scheduler-file`, or an address tcp://HOST:PORT"
        ) from None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str) or not address:
        raise CalibcliError(
            f'{path} is not a Dask scheduler file (no "address"): expected the file written by '
            f"`dask scheduler --scheduler-file`, or an address tcp://HOST:PORT"
        )
    return address


def _check_address(address: str) -> None:
    """Refuse at once an address no scheduler can have: a port outside 1..65535."""
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if sep and host and port.isdigit() and not 0 < int(port) < 65536:
        raise CalibcliError(
            f"cannot connect to a Dask scheduler at {address}: port {port} is not a TCP port (1 to 65535): {_HINT}"
        )


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
