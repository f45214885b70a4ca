"""Model against baseline: every metric of two inputs and their difference with a bootstrap interval.

:func:`compare_streams` runs a baseline and a candidate through the binned family's pipeline
(:class:`calibcli.ece_family.accumulator.InputAccumulator`, and
:class:`~calibcli.smooth.inputs.SmoothInputAccumulator` with ``smooth=True``): the two entries are those
``calibcli ece`` (``smece``) makes. For each headline metric it reports ``candidate - baseline`` with a
percentile interval of the replicated differences.

Pairing (when both score the same examples, the bootstrap must resample *examples*, giving one example
the same multiplicity in both inputs; SPEC 8 keys multiplicities by ``(seed, global row index)``):

- ``id``: rows matched by an ID column present in both. The candidate is read into memory (at most
  :data:`ID_PAIRING_LIMIT` rows), and streamed in the baseline's row order, each row carrying the
  baseline's global row index of its ID: its multiplicities are those of the baseline's row.
- ``order``: the same number of rows and equal labels row by row (checked while streaming): row ``i``
  of both is the same example, and one seed gives both the same multiplicities.
- otherwise unpaired: the candidate is resampled with an independent seed (:func:`derived_seed`).

Which bootstrap gives the paired replicates:

- while each problem keeps its rows (``ROW_LIMIT`` = 2^17 rows), the entries' own per-row Poisson
  bootstraps: the same seed and row indices give both inputs exactly the same multiplicities, so the
  replicated difference is exact (identical inputs give a difference of 0 with the interval [0, 0]);
- beyond, the entries' per-bin bootstraps draw each input's cells independently, which would not be
  paired. :class:`~calibcli.compare.paired_bootstrap.JointCells` keeps, per pair ``(baseline cell, candidate
  cell)`` (a cell is a bin and a label, SPEC 8), the row count and the sums and cross-products of both
  inputs' per-row values, so the draw is made jointly: a joint cell's resampled count is Poisson(count)
  (independent across joint cells, so each input's cell count is Poisson too, as in its own per-bin
  bootstrap), and given it the sums of both inputs' values are drawn from their joint normal law (mean and
  covariance per row). The correlation of the two models on the same examples is kept; aggregated to one
  input's cells this is the per-bin bootstrap of :mod:`calibcli.binned.accumulator`. Those marginals are each
  input's own cells (exact sums, as its own are): rows that pair (with unit weights) give both inputs' binned
  accumulators their cells from the joint cells, so each row's values are summed once for the three. SmoothECE
  beyond the row limit has no joint draw here: its difference interval is then unpaired (the candidate's
  SmoothECE is resampled with the derived seed, ``seeds["candidate_smece"]``), and the report says so.

On a cluster (``engine`` with ``reduce_tasks``: ``calibcli compare --engine dask``) both inputs are read in
ranges of global rows (:func:`pair_tasks`), each task reading the same range of both, side by side
(:func:`run_pair_task`): its :class:`PairPart` (both inputs' accumulators, the joint state, the first rows that
are not the same example) merges with its neighbours' exactly, so pairing by row order and every number are the
local engine's. Pairing by ID holds the candidate in memory here: it runs on the local engine only.

The paired bootstrap for the difference of two models' metrics on one test set is the standard
construction (Efron & Tibshirani 1993, ch. 10; the bootstrap comparison of classifiers in Bouthillier et
al. 2021 and in ``scikit-learn``'s model-comparison examples resamples rows jointly as well).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibcli.binned.estimators import summarise_replicates
from calibcli.compare.paired_bootstrap import (
    JointState,
    difference,
    headline_replicates,
    scores_replicates,
    smooth_replicates,
)
from calibcli.compare.paired_bootstrap import worse_by as worse_by  # (the compare command's gate reads it here)
from calibcli.core.errors import CalibcliError, shown
from calibcli.core.resampling import row_hash
from calibcli.ece_family.accumulator import InputAccumulator
from calibcli.engines.fragments import Beside, pack_fragments, prefetched, task_rows
from calibcli.io.fragments import RowCounts
from calibcli.smooth.inputs import SmoothInputAccumulator

#: Rows of the candidate held in memory to pair by an ID column.
ID_PAIRING_LIMIT = 1 << 24
#: Pairing by an ID column holds the candidate in memory in this process: not on a cluster (``{engine}``: its name).
ID_ON_LOCAL_ONLY = (
    "{{opt:id_col}} pairs the rows on the local engine only (the candidate is held in memory, indexed "
    "by ID): drop {{opt:engine}} {engine}, or pair by row order (no {{opt:id_col}})"
)
#: The ways two inputs can be paired (``auto``: by ID when an ID column is given, else by row order when the
#: labels agree, else unpaired).
PAIRINGS = ("auto", "order", "none")


def derived_seed(seed: int) -> int:
    """The candidate's seed when the inputs are unpaired: an independent stream derived from ``seed``."""
    return int(row_hash(int(seed), np.array([0x636F6D70]))[0] >> np.uint64(1))  # "comp"


@dataclass(frozen=True)
class Pairing:
    """How the two inputs were matched: ``how`` is ``id``, ``order`` or ``none``; ``reason`` says why."""

    how: str
    reason: str
    id_column: str | None = None

    @property
    def paired(self) -> bool:
        return self.how != "none"

    def to_dict(self) -> dict:
        return {"paired": self.paired, "by": self.how, "id_column": self.id_column, "reason": self.reason}


# ---------------------------------------------------------------------------------------------
# Streaming two inputs


@dataclass(frozen=True)
class _Rows:
    """Validated rows (a slice of one or more batches), with the fields of :class:`calibcli.io.Batch`."""

    probs: np.ndarray
    labels: np.ndarray
    sample_weight: np.ndarray | None
    row_index: np.ndarray
    ids: np.ndarray | None
    source: str

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, sel) -> _Rows:
        return _Rows(
            self.probs[sel],
            self.labels[sel],
            None if self.sample_weight is None else self.sample_weight[sel],
            self.row_index[sel],
            None if self.ids is None else self.ids[sel],
            self.source,
        )


def _rows(batch) -> _Rows:
    return _Rows(
        batch.probs,
        batch.labels,
        batch.sample_weight,
        batch.row_index,
        None if batch.groups is None else np.asarray(batch.groups[0]),
        batch.source,
    )


def _empty(rows: _Rows | None) -> bool:
    return rows is None or len(rows) == 0


def _lockstep(batches_a, batches_b):
    """Both inputs' rows in equal-length chunks (row ``i`` of the one beside row ``i`` of the other); at the end
    of the shorter, the rest of the longer with None beside it."""
    its = [prefetched(batches_a), prefetched(batches_b)]
    try:
        yield from _chunks(its)
    finally:  # stopped early (rows that cannot be paired by order): the readers stop now
        for it in its:
            it.close()


def _chunks(its):
    held: list[_Rows | None] = [None, None]
    done = [False, False]
    while True:
        for k in (0, 1):
            while not done[k] and _empty(held[k]):
                batch = next(its[k], None)
                if batch is None:
                    done[k] = True
                else:
                    held[k] = _rows(batch)
        have = [not _empty(held[k]) for k in (0, 1)]
        if not any(have):
            return
        if not all(have):
            k = 0 if have[0] else 1
            out: list[_Rows | None] = [None, None]
            out[k] = held[k]
            held[k] = None
            yield out[0], out[1]
            continue
        first, second = held
        assert first is not None and second is not None  # (both have rows)
        n = min(len(first), len(second))
        parts = first.take(slice(0, n)), second.take(slice(0, n))
        held = [first.take(slice(n, None)), second.take(slice(n, None))]
        yield parts[0], parts[1]


#: A row of one input as the pairing check reports it: (global row index, label index, source).
RowMark = tuple[int, int, str]


def _mark(rows: _Rows, j: int) -> RowMark:
    return int(rows.row_index[j]), int(rows.labels[j]), rows.source


@dataclass
class PairPart:
    """What a range of rows of both inputs reduces to, side by side (the whole of them on the local engine; a
    task's range on a cluster): both inputs' accumulators (None: not in this pass), the joint state while the
    rows pair, the valid rows of each, their first rows (``head_a``/``head_b``), the first rows beside each
    other that are not the same example (``diff``; a side None: that input had no more rows in the range), each
    input's row counts, or the first error in row order (``error``; then nothing else counts).

    Parts of consecutive ranges merge exactly (:func:`merge_pair_parts`): the first difference of the whole is
    the first range's, its missing side the next rows of the other input, so pairing by order is decided
    as if the rows were read in one stream."""

    accs_a: list = field(default_factory=list)
    accs_b: list = field(default_factory=list)
    joint: JointState | None = None
    n_a: int = 0
    n_b: int = 0
    head_a: RowMark | None = None
    head_b: RowMark | None = None
    diff: tuple[RowMark | None, RowMark | None] | None = None
    counts_a: RowCounts = field(default_factory=RowCounts)
    counts_b: RowCounts = field(default_factory=RowCounts)
    error: CalibcliError | None = None


def _pair_pass(
    batches_a, batches_b, now_a: list, now_b: list, joint: JointState | None, *, paired: bool, stop: bool
) -> PairPart:
    """Both inputs' batches, side by side, into the accumulators ``now_a``/``now_b`` (None entries: not this
    pass) and, while the rows are the same examples, the joint state. ``paired``: check that they are (the
    same row indices and labels row by row); ``stop``: stop reading at the first rows that are not (the
    comparison is then an error)."""
    part = PairPart(now_a, now_b, joint if paired else None)
    # rows that pair give both binned accumulators (now_a[0], now_b[0]) their cells from the joint cells, whose
    # marginals they are: the same exact sums, made once for both (JointCells.update); the columns they sum
    both = now_a[0] is not None and now_b[0] is not None
    columns = now_a[0].problems[0].row_columns(False) if both else ()

    def feed(a, b, given) -> None:
        """A chunk of both inputs into their accumulators, with their cells from its joint update (if any)."""
        for accs, rows, cells in ((now_a, a, given[0]), (now_b, b, given[1])):
            if rows is None:
                continue
            for acc in accs:
                if isinstance(acc, InputAccumulator):
                    acc.update(rows.row_index, rows.probs, rows.labels, rows.sample_weight, cells)
                elif acc is not None:
                    acc.update(rows.row_index, rows.probs, rows.labels, rows.sample_weight)
        if a is not None:
            part.n_a += len(a)
            part.head_a = part.head_a or _mark(a, 0)
        if b is not None:
            part.n_b += len(b)
            part.head_b = part.head_b or _mark(b, 0)

    # a chunk's joint cells are summed in a thread while the chunk before it is fed (NumPy lets go of the GIL: the
    # second core does the work of the pair); one joint update at a time, in row order, so every sum is the same
    pending: tuple | None = None  # the chunk before: (a, b), its joint update (if any) running beside in `update`
    update = None
    try:
        for a, b in _lockstep(batches_a, batches_b):
            pairs = False
            if paired and part.diff is None:
                if a is None or b is None:
                    part.diff = (None if a is None else _mark(a, 0), None if b is None else _mark(b, 0))
                else:
                    differ = np.flatnonzero((a.labels != b.labels) | (a.row_index != b.row_index))
                    if len(differ):
                        part.diff = (_mark(a, int(differ[0])), _mark(b, int(differ[0])))
                    pairs = not len(differ) and part.joint is not None
                if part.diff is not None:
                    part.joint = None
            # the joint state's previous update is done (its error raised here) before the next one starts
            given = update.result() if update is not None else (None, None)
            update = Beside(part.joint.update, a, b, columns) if pairs and part.joint is not None else None
            if pending is not None:
                feed(pending[0], pending[1], given)
            pending = (a, b)
            if stop and part.diff is not None and a is not None and b is not None:
                break
        if pending is not None:
            feed(pending[0], pending[1], update.result() if update is not None else (None, None))
    finally:  # (an error or a signal: the thread's chunk ends before the pass does)
        if update is not None:
            update.wait()
    return part


def merge_pair_parts(parts, *, own: bool = True) -> PairPart:
    """The part of consecutive ranges ``parts`` (in row order): the first error among them, else the
    accumulators, joint states, rows and counts added, and the first difference of the whole
    (:class:`PairPart`). ``own=False``: the parts belong to someone else (a Dask worker's results of other
    tasks): the merge goes into copies."""
    out: PairPart | None = None
    for part in parts:
        if part.error is not None:
            return part
        if out is None:
            out = part if own else copy.deepcopy(part)
            continue
        out.accs_a = [
            mine if mine is None else mine.merge(more) for mine, more in zip(out.accs_a, part.accs_a, strict=True)
        ]
        out.accs_b = [
            mine if mine is None else mine.merge(more) for mine, more in zip(out.accs_b, part.accs_b, strict=True)
        ]
        if out.diff is None and part.diff is None and out.joint is not None and part.joint is not None:
            out.joint.merge(part.joint)
        else:
            out.joint = None
        if out.diff is not None:  # a side that ran out in an earlier range: the next rows of that input
            out.diff = (out.diff[0] or part.head_a, out.diff[1] or part.head_b)
        else:
            out.diff = part.diff
        out.n_a, out.n_b = out.n_a + part.n_a, out.n_b + part.n_b
        out.head_a, out.head_b = out.head_a or part.head_a, out.head_b or part.head_b
        out.counts_a, out.counts_b = out.counts_a.merge(part.counts_a), out.counts_b.merge(part.counts_b)
    return out if out is not None else PairPart()


@dataclass(frozen=True)
class PairTask:
    """A task of :func:`compare_streams` on a cluster: the rows of global index ``within`` of both inputs, read
    from their fragments that hold them (only paths and options travel). Its items are the fragments (the
    engine's progress counts them; the first names the task in messages)."""

    fragments_a: tuple
    fragments_b: tuple
    within: tuple[int, int]

    def __len__(self) -> int:
        return len(self.fragments_a) + len(self.fragments_b)

    def __getitem__(self, i: int):
        return (self.fragments_a + self.fragments_b)[i]


def run_pair_task(task: PairTask, template: tuple, second: bool) -> PairPart:
    """A task on a worker: its range of both inputs through copies of the template's accumulators and joint
    state (``template``: ``(accs_a, accs_b, joint, paired, stop)``)."""
    now_a, now_b, joint, paired, stop = copy.deepcopy(template)
    counts_a, counts_b = RowCounts(), RowCounts()
    batches_a = (batch for f in task.fragments_a for batch in f.batches(counts_a, task.within))
    batches_b = (batch for f in task.fragments_b for batch in f.batches(counts_b, task.within))
    part = _pair_pass(batches_a, batches_b, now_a, now_b, joint, paired=paired, stop=stop)
    part.counts_a, part.counts_b = counts_a, counts_b
    return part


def pair_tasks(fragments_a: list, fragments_b: list, rows: int) -> list[PairTask]:
    """Ranges of global rows over both inputs: the runs of consecutive fragments of the input with more rows
    (:func:`calibcli.engines.fragments.pack_fragments`), the last one open-ended; each with the fragments of
    both inputs that hold some of its rows (a fragment across a boundary is read by both tasks, each its rows)."""
    import bisect

    def total(fragments):
        return sum(f.n_rows or 0 for f in fragments)

    leader = fragments_a if total(fragments_a) >= total(fragments_b) else fragments_b
    runs = pack_fragments(leader, rows)
    starts = [run[0].row_offset for run in runs] + [1 << 62]
    starts[0] = 0
    bounds = [
        ([f.row_offset + (f.n_rows or 0) for f in fragments], [f.row_offset for f in fragments])
        for fragments in (fragments_a, fragments_b)
    ]
    out = []
    for lo, hi in zip(starts[:-1], starts[1:], strict=True):
        sides = []
        for fragments, (ends, offsets) in zip((fragments_a, fragments_b), bounds, strict=True):
            first = bisect.bisect_right(ends, lo)  # the first fragment ending after lo
            last = bisect.bisect_left(offsets, hi)  # past the last starting before hi
            sides.append(tuple(fragments[first:last]))
        if sides[0] or sides[1]:
            out.append(PairTask(sides[0], sides[1], (lo, hi)))
    return out


def _id_text(value) -> str:
    """An ID as the file has it: ``5``, ``2.5``, ``'id-3'`` (quoted, as messages quote text), never ``np.int64(5)``."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return shown(value) if isinstance(value, str) else str(value)


def _check_ids(rows: _Rows, id_column: str, name: str) -> None:
    """Refuse a NaN ID (a float ID column's missing value): it equals no ID, not even itself."""
    if rows.ids is not None and rows.ids.dtype.kind == "f" and len(rows.ids):
        bad = np.flatnonzero(np.isnan(rows.ids))
        if len(bad):
            raise CalibcliError(
                f"{name}: row {int(rows.row_index[bad[0]]) + 1}, column {shown(id_column, quote=False)}: "
                f"the ID is NaN (missing): every row needs an ID to pair examples by {{opt:id_col}}"
            )


class _Candidate:
    """The candidate in memory, indexed by its IDs, to be streamed in the baseline's order (pairing by ID)."""

    def __init__(self, stream, id_column: str, baseline_name: str):
        parts = [_rows(b) for b in stream.batches()]
        self.name, self.baseline_name, self.id_column = stream.name, baseline_name, id_column
        n = sum(len(p) for p in parts)
        if n > ID_PAIRING_LIMIT:
            raise CalibcliError(
                f"{stream.name} has {n} rows: pairing by {{opt:id_col}} holds the candidate in memory, "
                f"at most {ID_PAIRING_LIMIT} rows; pair by row order (same order, no {{opt:id_col}})"
            )
        for p in parts:
            _check_ids(p, id_column, stream.name)
        cat = (lambda xs: np.concatenate(xs)) if parts else (lambda xs: np.empty(0))
        self.probs = cat([p.probs for p in parts])
        self.labels = cat([p.labels for p in parts])
        self.weights = None if not parts or parts[0].sample_weight is None else cat([p.sample_weight for p in parts])
        self.ids = cat([p.ids for p in parts])
        self.order = np.argsort(self.ids, kind="stable")
        self.sorted_ids = self.ids[self.order]
        same = np.flatnonzero(self.sorted_ids[1:] == self.sorted_ids[:-1])
        if len(same):
            raise CalibcliError(
                f"{stream.name}: the ID {_id_text(self.sorted_ids[same[0]])} of column {id_column!r} appears more "
                f"than once: IDs must be unique to pair examples by {{opt:id_col}}"
            )
        self.restart()

    def restart(self) -> None:
        """Before a pass over the baseline: no ID matched yet."""
        self.matched = np.zeros(len(self.labels), dtype=bool)
        self.missing_here = 0  # baseline IDs that the candidate lacks

    def aligned(self, a: _Rows) -> _Rows | None:
        """The candidate's rows of the baseline rows' IDs, in their order and with their global row indices."""
        _check_ids(a, self.id_column, self.baseline_name)
        assert a.ids is not None  # (rows paired by ID carry their IDs)
        ids = _comparable(a.ids, self.sorted_ids)
        sorted_ids = _comparable(self.sorted_ids, a.ids)
        at = np.searchsorted(sorted_ids, ids)
        found = at < len(sorted_ids)
        found[found] = sorted_ids[at[found]] == ids[found]
        self.missing_here += int((~found).sum())
        rows = self.order[at[found]]
        if self.matched[rows].any() or len(np.unique(rows)) < len(rows):
            if self.matched[rows].any():  # seen in an earlier batch of the baseline
                twice = a.ids[found][np.flatnonzero(self.matched[rows])[0]]
            else:  # twice in this batch: the candidate row matched by two baseline rows
                ordered = np.sort(rows)
                twice = self.ids[ordered[1:][ordered[1:] == ordered[:-1]][0]]
            raise CalibcliError(
                f"{self.baseline_name}: the ID {_id_text(twice)} of column {self.id_column!r} appears more than once: "
                f"IDs must be unique to pair examples by {{opt:id_col}}"
            )
        self.matched[rows] = True
        if not found.all():
            return None
        labels = self.labels[rows]
        if not np.array_equal(labels, a.labels):
            j = int(np.flatnonzero(labels != a.labels)[0])
            raise CalibcliError(
                f"the ID {_id_text(a.ids[j])} has label index {a.labels[j]} in {self.baseline_name} and {labels[j]} in "
                f"{self.name}: rows paired by {{opt:id_col}} must be the same examples with the same labels"
            )
        return _Rows(
            self.probs[rows],
            labels,
            None if self.weights is None else self.weights[rows],
            a.row_index,
            a.ids,
            self.name,
        )

    def check_complete(self) -> None:
        missing_there = int((~self.matched).sum())
        if self.missing_here or missing_there:
            raise CalibcliError(
                f"the IDs of column {self.id_column!r} differ: {self.missing_here} of {self.baseline_name}'s IDs "
                f"are missing from {self.name}, and {missing_there} of {self.name}'s IDs are missing from "
                f"{self.baseline_name}: pairing by {{opt:id_col}} needs the same examples in both"
            )


def _comparable(ids: np.ndarray, other: np.ndarray) -> np.ndarray:
    """IDs as text when the two inputs store them differently (numbers in one, text in the other)."""
    if ids.dtype.kind in "iuf" and other.dtype.kind in "iuf":
        return ids
    if ids.dtype.kind == "O" and other.dtype.kind == "O":
        return ids
    return ids.astype(str).astype(object)


# ---------------------------------------------------------------------------------------------
# The comparison


@dataclass
class ComparisonRun:
    """What :func:`compare_streams` returns: both inputs' entries, the comparison and how inputs were paired."""

    entries: list[dict]  # baseline ece, candidate ece (then smece, smece with smooth=True)
    comparison: dict  # metric -> {baseline, candidate, difference, ci_low, ci_high, ci_method, paired, ...}
    pairing: Pairing
    seeds: dict


def compare_streams(
    stream_a,
    stream_b,
    binned_options,
    *,
    mode_a,
    mode_b=None,
    smooth_options=None,
    id_column=None,
    pairing: str = "auto",
    engine=None,
) -> ComparisonRun:
    """Compare a baseline stream ``stream_a`` with a candidate ``stream_b`` (see the module docstring).

    ``binned_options`` (:class:`calibcli.ece_family.options.Options`) and ``smooth_options``
    (:class:`calibcli.smooth.options.Options`, or None for no SmoothECE) apply to both; ``mode_a`` is the
    mode (both inputs must have the same classes). ``id_column``: pair by that column (the streams must have
    been opened with ``group_by=(id_column,)``). ``pairing``: ``auto``, ``order`` (an error when the rows are
    not the same examples in the same order) or ``none``. ``engine``: an engine that reduces tasks on a cluster
    (:meth:`calibcli.engines.dask.DaskEngine.reduce_tasks`) reads both inputs in ranges of rows there
    (:func:`pair_tasks`; not with ``id_column``); None or the local engine reads them here.
    """
    reduce_tasks = getattr(engine, "reduce_tasks", None)
    if reduce_tasks is not None and id_column is not None:
        raise CalibcliError(ID_ON_LOCAL_ONLY.format(engine=engine.name))
    if pairing not in PAIRINGS:
        raise CalibcliError(f"{{opt:pairing}} is {pairing!r}: expected one of {', '.join(PAIRINGS)}")
    if id_column is not None and pairing == "none":
        raise CalibcliError(
            "{opt:id_col} pairs the inputs by ID, {opt:pairing} none asks for no pairing: give one of them"
        )
    if id_column is not None and pairing == "order":
        raise CalibcliError("{opt:id_col} pairs the inputs by ID, {opt:pairing} order by row order: give one of them")
    if tuple(stream_a.class_names) != tuple(stream_b.class_names):
        raise CalibcliError(
            f"{stream_a.name} has classes {list(stream_a.class_names)} and {stream_b.name} has "
            f"{list(stream_b.class_names)}: a comparison needs the same classes in both"
        )
    seed = binned_options.seed

    def new_accs(options_seed):
        accs: list[InputAccumulator | SmoothInputAccumulator] = [
            InputAccumulator(
                mode=mode_a,
                n_classes=stream_a.n_classes,
                class_names=stream_a.class_names,
                options=binned_options.but(seed=options_seed),
            )
        ]
        if smooth_options is not None:
            accs.append(
                SmoothInputAccumulator(
                    mode=mode_a,
                    n_classes=stream_a.n_classes,
                    class_names=stream_a.class_names,
                    options=smooth_options.but(seed=options_seed),
                )
            )
        return accs

    accs_a, accs_b = new_accs(seed), new_accs(seed)
    candidate = _Candidate(stream_b, id_column, stream_a.name) if id_column is not None else None
    state: dict[str, Any] = {
        "paired": pairing != "none",
        "reason": None if pairing != "none" else "no pairing asked for",
    }

    described: list = [None, None]

    def one_pass(now_a, now_b, joint_now) -> None:
        """Stream both inputs once into the accumulators ``now_a``/``now_b`` (None: not this pass) and the joint
        state."""
        if candidate is not None:

            def feed(accs, rows):
                for acc in accs:
                    if acc is not None:
                        acc.update(rows.row_index, rows.probs, rows.labels, rows.sample_weight)

            candidate.restart()
            for batch in stream_a.batches():
                a = _rows(batch)
                b = candidate.aligned(a)
                feed(now_a, a)
                if b is not None:
                    feed(now_b, b)
                    if joint_now is not None:
                        joint_now.update(a, b)
            candidate.check_complete()
            described[:] = [stream_a.describe(), stream_b.describe()]
            return
        paired, stop = bool(state["paired"]), pairing == "order"
        if reduce_tasks is None:
            part = _pair_pass(stream_a.batches(), stream_b.batches(), now_a, now_b, joint_now, paired=paired, stop=stop)
        else:
            part = _reduce_pairs(engine, stream_a, stream_b, (now_a, now_b, joint_now, paired, stop))
        if paired and part.diff is not None:
            _unpair(state, pairing, part.diff, stream_a.name, stream_b.name, (part.n_a, part.n_b))
        described[:] = (
            [stream_a.describe(), stream_b.describe()]
            if reduce_tasks is None
            else [stream_a.describe(part.counts_a), stream_b.describe(part.counts_b)]
        )
        # the accumulators were fed in place (local) or are the merged ones (cluster)
        now_a[:], now_b[:] = part.accs_a, part.accs_b
        if joint_now is not None and part.joint is not None and part.joint is not joint_now:
            joint_now.problems, joint_now.scores = part.joint.problems, part.joint.scores

    # (the joint cells serve the paired bootstrap beyond the rows kept: none without resamples)
    joint = JointState(accs_a[0], accs_b[0]) if state["paired"] and binned_options.n_boot else None
    one_pass(accs_a, accs_b, joint)
    paired = state["paired"]
    if not paired:  # independent multiplicities for the candidate: its own seed stream
        joint = None
        for acc in accs_b:
            _reseed(acc, derived_seed(seed))
    # a second pass where an accumulator asks for one (quantile edges, a finer smoothing grid: SPEC 8)
    needs = [[acc.needs_second_pass() for acc in accs] for accs in (accs_a, accs_b)]
    if any(needs[0]) or any(needs[1]):
        now_a = [acc.for_second_pass() if need else None for acc, need in zip(accs_a, needs[0], strict=True)]
        now_b = [acc.for_second_pass() if need else None for acc, need in zip(accs_b, needs[1], strict=True)]
        second_joint = (
            JointState(now_a[0], now_b[0]) if paired and needs[0][0] and needs[1][0] and binned_options.n_boot else None
        )
        one_pass(now_a, now_b, second_joint)
        accs_a = [new if new is not None else old for new, old in zip(now_a, accs_a, strict=True)]
        accs_b = [new if new is not None else old for new, old in zip(now_b, accs_b, strict=True)]
        joint = second_joint or joint
    if paired:
        how = "id" if candidate is not None else "order"
        reason = (
            f"matched by the ID column {id_column!r}"
            if how == "id"
            else "the same number of rows and the same labels row by row"
        )
    else:
        how, reason = "none", state["reason"]
    pairing_used = Pairing(how, reason, id_column)
    seeds = {"baseline": seed, "candidate": seed if paired else derived_seed(seed)}
    entries, comparison = _finish(accs_a, accs_b, joint, binned_options, seeds, pairing_used, described)
    return ComparisonRun(entries, comparison, pairing_used, seeds)


def _reduce_pairs(engine, stream_a, stream_b, template: tuple) -> PairPart:
    """One pass over both inputs on a cluster: ranges of rows as tasks (:func:`pair_tasks`), their parts merged
    on the workers (``engine.reduce_tasks``); then each input checked as a whole, as its stream would be."""
    fragments = [stream.fragments(map_files=engine.map_files) for stream in (stream_a, stream_b)]
    leader = max(fragments, key=lambda fs: sum(f.n_rows or 0 for f in fs))
    tasks = pair_tasks(fragments[0], fragments[1], engine.task_rows or task_rows(leader, engine.workers))
    if tasks:
        part = engine.reduce_tasks(
            tasks,
            template,
            description=f"{stream_a.name} and {stream_b.name}: fragments",
            leaf=run_pair_task,
            merge=merge_pair_parts,
        )
    else:
        part = PairPart(template[0], template[1], template[2] if template[3] else None)
    if part.error is not None:
        raise part.error
    stream_a.check_counts(part.counts_a)
    stream_b.check_counts(part.counts_b)
    return part


def _unpair(state: dict, pairing: str, diff: tuple, name_a: str, name_b: str, counts: tuple[int, int]) -> None:
    """The rows are not the same examples in the same order: unpaired, or an error when pairing was asked for.
    ``diff``: the first rows side by side that differ (a side None: that input has no more rows); ``counts``:
    both inputs' rows."""
    a, b = diff
    if a is None or b is None:
        reason = f"{name_a} has {counts[0]} rows and {name_b} has {counts[1]}"
    elif a[0] != b[0]:
        reason = (
            f"different rows were dropped as invalid: row {a[0] + 1} of {name_a} ({a[2]}) is beside "
            f"row {b[0] + 1} of {name_b} ({b[2]})"
        )
    else:
        reason = (
            f"the labels differ first at row {a[0] + 1} (label index {a[1]} in {name_a} ({a[2]}), "
            f"{b[1]} in {name_b} ({b[2]}))"
        )
    if pairing == "order":
        raise CalibcliError(
            f"{name_a} and {name_b} cannot be paired by row order: {reason}; pair them by an ID column "
            f"({{opt:id_col}}) or compare them unpaired"
        )
    state["paired"], state["reason"] = False, reason


def _reseed(acc, seed: int) -> None:
    """Give an input accumulator another bootstrap seed (its state does not depend on the seed)."""
    acc.options = acc.options.but(seed=seed)  # (checked when made: not again)
    if hasattr(acc, "_results"):
        acc._results = None


# ---------------------------------------------------------------------------------------------
# Results: both entries, the replicated differences


def _finish(accs_a, accs_b, joint, options, seeds: dict, pairing: Pairing, described: list):
    """Both inputs' report entries (as ``ece`` / ``smece`` make them) and the comparison of their headline metrics."""
    n_boot, alpha = options.n_boot, options.alpha
    reports = [accs[0].result(keep_replicates=True) for accs in (accs_a, accs_b)]
    rows_kept = all(not p.rows.dropped for accs in (accs_a, accs_b) for p in accs[0].problems)
    headline = [r.headline() for r in reports]
    reps: list[dict] = [{}, {}]
    methods: dict[str, tuple[str, bool]] = {}
    if n_boot:
        if not pairing.paired or rows_kept:
            per_problem = [[p.result.replicates for p in r.problems] for r in reports]
            how = (
                "paired Poisson bootstrap over rows (the same multiplicities for the same example in both inputs)"
                if pairing.paired
                else "unpaired: independent Poisson bootstraps of the two inputs"
            )
        else:
            rng = np.random.Generator(np.random.Philox(key=[int(seeds["baseline"]) & 0xFFFFFFFFFFFFFFFF, 0x636F6D70]))
            per_problem = [[], []]
            names = list(reports[0].problems[0].result.replicates)
            for main, uniform in joint.problems:
                main_a, main_b = main.replicates(n_boot, rng)
                uni_a, uni_b = (main_a, main_b) if uniform is None else uniform.replicates(n_boot, rng)
                for side, (m, u) in enumerate(((main_a, uni_a), (main_b, uni_b))):
                    per_problem[side].append(summarise_replicates((m, u), names, alpha, keep_replicates=True)[1])
            how = (
                "paired Poisson bootstrap from joint per-bin sufficient statistics (the two inputs' cells drawn "
                "jointly, so one example weighs the same in both)"
            )
        for side, report in enumerate(reports):
            reps[side].update(headline_replicates(report, per_problem[side]))
        for name in reps[0]:
            methods[name] = (how, pairing.paired)
        if reports[0].multiclass_scores is not None:
            if pairing.paired and not rows_kept:
                rng = np.random.Generator(
                    np.random.Philox(key=[int(seeds["baseline"]) & 0xFFFFFFFFFFFFFFFF, 0x73636F72])
                )
                scores = joint.scores.replicates(n_boot, rng)
                how_scores = "paired Poisson bootstrap from the joint moments of both inputs' sums (normal)"
            else:
                scores = [
                    scores_replicates(accs[0].scores, n_boot, s)
                    for accs, s in ((accs_a, seeds["baseline"]), (accs_b, seeds["candidate"]))
                ]
                how_scores = how
            for side in (0, 1):
                reps[side].update(scores[side])
            for name in scores[0]:
                methods[name] = (how_scores, pairing.paired)
    entries = []
    for role, described_input, report in (
        ("baseline", described[0], reports[0]),
        ("candidate", described[1], reports[1]),
    ):
        entries.append({"input": dict(described_input), "role": role, "family": "ece", **report.to_dict()})
    if len(accs_a) > 1:
        kept = all(acc.rows_kept for accs in (accs_a, accs_b) for acc in accs[1].problems)
        if pairing.paired and not kept:  # the per-cell SmoothECE bootstrap is not paired: independent seeds then
            _reseed(accs_b[1], derived_seed(seeds["baseline"]))
            seeds["candidate_smece"] = derived_seed(seeds["baseline"])
        smooth = [accs[1].result() for accs in (accs_a, accs_b)]
        for side, report in enumerate(smooth):
            headline[side].update(report.headline())
            if n_boot:
                reps[side].update(smooth_replicates(report, accs_a[1].options))
        smooth_paired = pairing.paired and kept
        for name in smooth[0].headline():
            methods[name] = (
                "paired Poisson bootstrap over rows"
                if smooth_paired
                else "unpaired: independent Poisson bootstraps"
                if not pairing.paired
                else "unpaired: the SmoothECE bootstrap from per-cell sums (beyond the rows kept) is not paired, "
                "so this interval treats the inputs as independent (wider than a paired one)",
                smooth_paired,
            )
        for role, described_input, report in (
            ("baseline", described[0], smooth[0]),
            ("candidate", described[1], smooth[1]),
        ):
            entries.append({"input": dict(described_input), "role": role, "family": "smece", **report.to_dict()})
    comparison = {}
    for name, m_a in headline[0].items():
        m_b = headline[1].get(name)
        if m_b is None:
            continue
        comparison[name] = difference(name, m_a, m_b, reps[0].get(name), reps[1].get(name), methods.get(name), alpha)
    return entries, comparison
