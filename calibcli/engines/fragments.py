"""The passes over a stream that every engine shares: batches into input accumulators, per group.

- :func:`run_local` streams a dataset once (twice when an accumulator asks for a second pass: quantile
  edges, a finer smoothing grid; SPEC 8) in this process, reading the next batch while this one is
  reduced (:func:`prefetched`); :class:`Beside` runs a call in a thread beside the caller's work.
- :func:`run_fragment` is the same over one fragment, or a run of consecutive fragments packed by
  :func:`pack_fragments`: the task a distributed engine runs, whose result is a :class:`Part`;
  :func:`merge_parts` merges parts of consecutive runs (a distributed engine does so in a tree on its
  workers); :func:`run_fragments` asks an engine for the part of the whole stream and checks the dataset
  as a whole (SPEC 8 "Engines").
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.core.groups import MAX_GROUPS, Grouped
from calibcli.io.fragments import Fragment, RowCounts


def run_local(stream, new) -> list[tuple[dict | None, object]]:
    """Stream ``stream`` into input accumulators made by ``new()``: ``(group values or None, accumulator)`` pairs.

    One pass; a second one when an accumulator asks for it (quantile edges or a finer smoothing grid
    fixed by the first pass, SPEC 8). Groups come in sorted order.
    """
    state = _stream_into(stream.batches(), stream.group_by, {}, lambda key: new())
    if any(acc.needs_second_pass() for acc in state.values()):
        second = _stream_into(stream.batches(), stream.group_by, for_second_pass(state), None)
        state = after_second_pass(state, second)
    return _entries(stream.group_by, state)


def for_second_pass(state: dict) -> dict:
    """Every group's second-pass state (group key -> accumulator), once some group asked for a second pass.

    Every group gets one (``for_second_pass()``), as one family's command sums all its groups the same way.
    An accumulator class may decide for all the groups at once (``second_pass_of(state)``): a
    :class:`~calibcli.core.composite.Composite` re-runs, in every group, the members that asked in
    some group, and no other (so each member gets the passes its own command gives it)."""
    accs = list(state.values())
    joint = getattr(type(accs[0]), "second_pass_of", None) if accs else None
    if joint is not None:
        return joint(state)
    return {key: acc.for_second_pass() for key, acc in state.items()}


def after_second_pass(first: dict, second: dict) -> dict:
    """The finished states of a two-pass run: per group, the second pass's state, or what the first-pass
    state makes of it (``after_second_pass(second)``, when it has one: a :class:`~calibcli.core.accumulator.
    composite.Composite` keeps the members that needed no second pass from the first)."""
    out = {}
    for key, acc in second.items():
        join = getattr(first.get(key), "after_second_pass", None)
        out[key] = acc if join is None else join(acc)
    return out


def _entries(group_by: tuple[str, ...], state: dict) -> list[tuple[dict | None, object]]:
    """``(group values or None, accumulator)`` pairs, groups in sorted order (numbers before text)."""
    keys = sorted(state, key=lambda key: () if key is None else tuple((type(v).__name__, v) for v in key))
    return [(None if key is None else dict(zip(group_by, key, strict=True)), state[key]) for key in keys]


class _Failed:
    def __init__(self, exc: BaseException):
        self.exc = exc


def prefetched(batches):
    """``batches``, the next one read in a background thread while this one is reduced (pyarrow releases
    the GIL while it reads and decodes). At most two batches are in memory: the reader starts batch i + 1
    only once batch i has been handed over. Errors are raised here, in order; when the consumer stops
    early, the reader stops before its next batch.

    The reader thread never outlives this generator: it is not a daemon, closing the generator (its
    consumer must close it, :func:`_stream_into` does) waits for it, and it closes the batches' source
    (pyarrow's reader) itself. A daemon thread still inside pyarrow when the interpreter exits is
    stopped by the interpreter mid-call, which aborts the process (SIGABRT) now and then: a consumer
    that raised (a bad option found at its first batch) while the reader was reading ahead did so."""
    import queue
    import threading

    items: queue.Queue = queue.Queue()
    may_read = threading.Semaphore(1)
    stop = threading.Event()
    done = object()

    def read() -> None:
        source = iter(batches)
        try:
            while True:
                while not may_read.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                batch = next(source, done)
                items.put(batch)
                if batch is done:
                    return
                del batch
        except BaseException as exc:  # handed to the consumer, which raises it
            items.put(_Failed(exc))
        finally:  # let go of the file in this thread, whichever way the reading ended
            close = getattr(source, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # the reading already failed or stopped; nothing more to report
                    pass

    reader = threading.Thread(target=read, name="calibcli-reader", daemon=False)
    reader.start()
    try:
        while True:
            item = items.get()
            if item is done:
                return
            if isinstance(item, _Failed):
                raise item.exc
            may_read.release()  # read the next batch while this one is reduced
            yield item
            del item
    finally:
        stop.set()
        reader.join()


class Beside:
    """``call(*args)`` run in a thread beside the caller's own work (NumPy lets go of the GIL, so the two share
    the cores): :meth:`result` waits for it and gives its value, or raises its error in the caller's thread. The
    thread is no daemon, and a caller waits for it (:meth:`wait`) even when it stops early: calls of a few
    milliseconds each (compare's joint cells of one chunk, :mod:`calibcli.compare.run`)."""

    def __init__(self, call, *args):
        import threading

        self._out: tuple = (None, None)
        self._thread = threading.Thread(target=self._run, args=(call, args), name="calibcli-beside", daemon=False)
        self._thread.start()

    def _run(self, call, args) -> None:
        try:
            self._out = (call(*args), None)
        except BaseException as exc:  # raised in the caller's thread, by result()
            self._out = (None, exc)

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self.wait()
        value, error = self._out
        if error is not None:
            raise error
        return value


#: Bytes of batches a grouped pass holds before it splits them into their groups, together: each group's
#: accumulator then takes its rows of several batches in one update (1,000 groups of 1e6 rows: one update each,
#: not one per batch of 131,072 rows), and its sums are the same (they are exact however the rows are split,
#: SPEC 8). ``ece --group-by`` over 1,000 groups, 1e6 rows: 4.6-6.6 -> 3.7-4.4 s wall.
GROUPED_BYTES = 1 << 25


def _batch_bytes(batch) -> int:
    """The bytes of a batch's arrays (its group columns' as their arrays hold them)."""
    arrays = [batch.probs, batch.labels, batch.row_index, batch.sample_weight, *(batch.groups or ())]
    return sum(a.nbytes for a in arrays if isinstance(a, np.ndarray))


def _layout(batch) -> tuple | None:
    """What batches must share to be concatenated: their columns' dtypes and shapes past the rows, the weights'
    presence; None when a group column is not a plain array (coded text: split batch by batch)."""
    if not all(isinstance(g, np.ndarray) for g in batch.groups or ()):
        return None
    columns = (batch.probs, batch.labels, batch.row_index, *(batch.groups or ()))
    return (batch.sample_weight is None, *((a.dtype, a.shape[1:]) for a in columns))


def _update_grouped(grouped: Grouped, pending: list) -> None:
    """Feed ``pending`` batches (in order) to ``grouped`` as one: their rows concatenated in order."""
    if len(pending) == 1:
        b = pending[0]
        grouped.update(b.groups, b.row_index, b.probs, b.labels, b.sample_weight)
        return
    weights = [b.sample_weight for b in pending]
    grouped.update(
        tuple(np.concatenate(columns) for columns in zip(*(b.groups for b in pending), strict=True)),
        np.concatenate([b.row_index for b in pending]),
        np.concatenate([b.probs for b in pending]),
        np.concatenate([b.labels for b in pending]),
        None if weights[0] is None else np.concatenate(weights),
    )


def _stream_into(batches, group_by: tuple[str, ...], state: dict, new) -> dict:
    """One pass over ``batches`` into ``state`` (group key -> accumulator; key None without groups);
    ``new(key)`` makes the accumulator of a key not yet in ``state``. The next batch is read while this
    one is reduced (:func:`prefetched`)."""
    batches = prefetched(batches)
    try:
        if group_by:
            grouped = Grouped(new, keyed=True)
            grouped.groups = state
            pending: list = []  # batches not yet split into their groups, at most GROUPED_BYTES of them
            size = 0
            for batch in batches:
                if pending and _layout(batch) != _layout(pending[0]):  # (another file's kinds of column)
                    _update_grouped(grouped, pending)
                    pending, size = [], 0
                pending.append(batch)
                size += _batch_bytes(batch)
                del batch
                if size >= GROUPED_BYTES or _layout(pending[-1]) is None:
                    _update_grouped(grouped, pending)
                    pending, size = [], 0
            if pending:
                _update_grouped(grouped, pending)
            return grouped.groups
        acc = state.get(None)
        for batch in batches:
            if acc is None:
                acc = new(None)
            if getattr(acc, "takes_columns", False):  # the audit's segment columns, beside every row
                acc.update(batch.row_index, batch.probs, batch.labels, batch.sample_weight, columns=batch.groups)
            else:
                acc.update(batch.row_index, batch.probs, batch.labels, batch.sample_weight)
            del batch  # the reader can free it while it reads the next one
        return {} if acc is None else {None: acc}
    finally:  # an error here stops the reader thread now, not when the traceback is freed (at exit)
        batches.close()


# ---------------------------------------------------------------------------------------------
# Fragments: the pipeline as independent tasks (the Dask engine; SPEC 8 "Engines")


@dataclass
class Part:
    """What a run of consecutive fragments reduces to: its row counts and its accumulators by group key (key
    None without groups), or the first error its rows met, in row order (``error``; then nothing else counts).

    Parts of consecutive runs merge (:func:`merge_parts`) into the part of the whole run: counts add,
    accumulators merge, exactly (SPEC 8), so a tree of merges in any shape gives the stream's state."""

    counts: RowCounts = field(default_factory=RowCounts)
    groups: dict = field(default_factory=dict)
    error: CalibcliError | None = None


def run_fragment(fragments, first=None, second: dict | None = None) -> Part:
    """Read one fragment, or a run of consecutive fragments (:func:`pack_fragments`), into input
    accumulators: the task a distributed engine runs on a worker (only the fragments' paths and options
    travel; the rows are read where the task runs). The fragments' batches go through the same
    accumulators, one after the other, as in the local engine.

    First pass: every group starts from a copy of ``first``, an empty accumulator. Second pass: each group
    starts from a copy of its own template in ``second`` (group key -> ``for_second_pass()`` of the merged
    first pass). Returns the run's :class:`Part` (the groups it has rows of). Pure: the same fragments give
    the same part, so a task lost with its worker can run again anywhere. A bad row or file raises its
    :class:`~calibcli.core.errors.CalibcliError` (as locally).
    """
    if second is not None:

        def new(key):
            return copy.deepcopy(second[key])
    else:

        def new(key):
            return copy.deepcopy(first)

    fragments = (fragments,) if isinstance(fragments, Fragment) else tuple(fragments)
    counts = RowCounts()
    batches = (batch for fragment in fragments for batch in fragment.batches(counts))
    groups = _stream_into(batches, fragments[0].plan.group_by, {}, new)
    return Part(counts, groups)


def merge_parts(parts, *, own: bool = True) -> Part:
    """The part of consecutive runs ``parts`` (in row order): the first error among them, else their counts
    added and their accumulators merged group by group (exact and associative: SPEC 8).

    ``own=False``: the parts belong to someone else (a Dask worker's results of other tasks, which a task
    must not change): the merge goes into copies of their accumulators."""
    out = Part()
    for part in parts:
        if part.error is not None:
            return part
        out.counts = out.counts.merge(part.counts)
        for key, acc in part.groups.items():
            if key in out.groups:
                out.groups[key].merge(acc)
            else:
                if len(out.groups) >= MAX_GROUPS:
                    raise CalibcliError(
                        f"more than {MAX_GROUPS} distinct groups (at most {MAX_GROUPS} are reported, "
                        f"docs: How it is computed §8): group by fewer or coarser columns"
                    )
                out.groups[key] = acc if own else copy.deepcopy(acc)
    return out


#: Rows of a distributed engine's task at most (unless one fragment has more): about half a second of
#: ``ece --n-boot 1000`` on one core, so that per-task costs (the scheduler, a state sent and merged,
#: the read-ahead thread started) stay a few percent.
MAX_TASK_ROWS = 2**23
#: Tasks per worker: enough that a worker slower than the others (a shared machine) leaves little of
#: the run to wait for at the end, few enough that per-task costs do not add up.
TASKS_PER_WORKER = 12


#: Tasks of a pass at most, unless there are more workers (then one each): the scheduler spends about 0.9 ms of
#: CPU on a task and its share of the merges (the earlier ``bench_dask.py`` part 6), so 1,024 tasks are about a
#: second of it; 12 tasks a worker on 1,000 workers would be 11 s, longer than their compute at 1e10 rows.
MAX_TASKS = 1024


def task_rows(fragments, workers: int) -> int:
    """The rows a task gets by default: the dataset's rows over ``TASKS_PER_WORKER`` tasks per worker, at most
    :data:`MAX_TASK_ROWS`; and enough for at most :data:`MAX_TASKS` tasks, or one per worker on a larger
    cluster, so that the scheduler is not what sets the pace."""
    total = sum(f.n_rows or 0 for f in fragments)
    workers = max(1, workers)
    spread = min(MAX_TASK_ROWS, -(-total // (TASKS_PER_WORKER * workers)))
    return max(1, spread, -(-total // max(workers, MAX_TASKS)))


def pack_fragments(fragments, rows: int) -> list[tuple]:
    """Consecutive fragments in runs of at most ``rows`` rows (a larger fragment, or one of unknown
    size, alone): the tasks of a distributed engine. Merging is associative, so the runs change no
    result beyond float rounding (SPEC 8: 1e-12)."""
    tasks: list[tuple] = []
    current: list = []
    held = 0
    for fragment in fragments:
        n = fragment.n_rows if fragment.n_rows is not None else rows
        if current and held + n > rows:
            tasks.append(tuple(current))
            current, held = [], 0
        current.append(fragment)
        held += n
    if current:
        tasks.append(tuple(current))
    return tasks


def run_fragments(stream, new, reduce_fragments, map_files=None) -> tuple[list[tuple[dict | None, object]], object]:
    """The pipeline over ``stream.fragments()``: the same entries as :func:`run_local`, and the merged
    :class:`~calibcli.io.RowCounts` of the first pass (for :meth:`Stream.describe`).

    ``reduce_fragments(fragments, first=..., second=...)`` runs :func:`run_fragment` on every fragment
    (anywhere: in this process, on a cluster) and merges the parts (in a tree, on a cluster) into the
    :class:`Part` of the whole stream, raising the first bad fragment's error in row order (as locally).
    Then the dataset is checked as a whole (:meth:`Stream.check_counts`), and a second pass runs when an
    accumulator asks for it. ``map_files``: how the files' footers are read (:meth:`Stream.fragments`: a
    pool of threads here by default).
    """
    fragments, unreadable = _fragments(stream, map_files)
    part = reduce_fragments(fragments, first=new())
    if part.error is not None:
        raise part.error
    if unreadable is not None:  # the files before it were fine: now it is its turn, as locally
        raise unreadable
    counts, state = part.counts, part.groups
    stream.check_counts(counts)
    if any(acc.needs_second_pass() for acc in state.values()):
        second = reduce_fragments(fragments, second=for_second_pass(state))
        if second.error is not None:
            raise second.error
        state = after_second_pass(state, second.groups)
    return _entries(stream.group_by, state), counts


def _fragments(stream, map_files=None) -> tuple[list, CalibcliError | None]:
    """The stream's fragments; when a file's metadata cannot be read, the fragments of the files before
    it and the error, to raise once those have been read (the local engine reads files in order, so a bad
    row in an earlier file is the error it reports). ``map_files``: how the footers are read
    (:meth:`Stream.fragments`)."""
    return stream.readable_fragments(map_files=map_files)


def reduce_in_process(fragments, *, first=None, second=None) -> Part:
    """:func:`run_fragment` on each fragment in turn, in this process, merged in order (the reference for
    an engine's reduction); stops at the first bad fragment, as the local engine does."""
    out = Part()
    for fragment in fragments:
        try:
            part = run_fragment(fragment, first, second)
        except CalibcliError as exc:
            return Part(error=exc)
        out = merge_parts([out, part])
    return out
