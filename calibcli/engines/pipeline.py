"""The one driver: sources -> engine -> accumulators -> the report's entries (SPEC 8).

:func:`run` is what every streaming command and the library's batch functions call: it opens the sources
(:class:`calibcli.io.Sources`), starts the engine (:data:`calibcli.engines.ENGINES`, by ``--engine``),
runs each stream through the family's input accumulators (made by the family's ``new(stream)``) and
finishes them into entries of the family's document (input, group, results, per-entry gate; with
groups, the worst group and the spread of every headline metric).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from calibcli.core.documents import entry_label, group_summary
from calibcli.core.errors import CalibcliError, check_choice
from calibcli.core.family import Plan
from calibcli.core.gates import check_gate
from calibcli.core.outputs import stderr_console
from calibcli.engines.base import ENGINES, Engine, EngineChoice
from calibcli.io.streams import Sources

#: The default engine: this process.
LOCAL = EngineChoice()


def run(family, sources: Sources, options, engine: EngineChoice = LOCAL) -> dict:
    """Run ``family`` (a :class:`calibcli.core.family.Family`) with ``options`` (its options dataclass, checked when
    made) over ``sources`` on ``engine``: the family's plan, one entry per input (or group), then the family's
    ``finish`` (tests' warnings, gates). Returns the document."""
    plan = family.plan(options, sources, engine.name)
    run_plan(plan, sources, engine)
    if family.finish is not None:
        family.finish(plan.doc, options)
    return plan.doc


def run_plan(plan: Plan, sources: Sources, engine: EngineChoice = LOCAL) -> dict:
    """Run a family's :class:`~calibcli.core.family.Plan` over ``sources`` on ``engine``; returns the plan's document
    with one entry per input (or group)."""
    evaluate_streams(
        plan.doc,
        sources.open(),
        plan.new,
        gate=plan.gate,
        resamples=plan.resamples,
        engine=engine.name,
        scheduler=engine.scheduler,
        workers=engine.workers,
    )
    return plan.doc


def evaluate_streams(
    doc: dict,
    streams,
    new_accumulator,
    *,
    gate,
    resamples: int,
    engine: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
) -> None:
    """Run every stream through accumulators made by ``new_accumulator(stream)`` and add one report
    entry per input (or group) to ``doc``: input, group, results (``to_dict``), per-entry gate; with
    groups, ``doc["groups"]`` gets the worst group and the spread of every headline metric.

    ``engine`` runs the accumulators: ``local`` in this process, ``dask`` on a Dask cluster
    (``scheduler``, else a local cluster of ``workers`` processes), with the same report; it and the
    number of workers go into ``doc["parameters"]``. Options are checked before any work, and a cluster
    is started only once the first dataset has been opened (so a bad path fails at once).
    """
    check_engine(engine, scheduler, workers)

    streams = iter(streams)
    first = next(streams, None)  # every dataset resolved, the first opened, before a cluster starts
    headlines: dict = {}
    with engine_runner(engine, scheduler, workers) as runner:
        doc["parameters"]["engine"] = engine
        doc["parameters"]["workers"] = runner.workers
        for stream in _chain(first, streams):
            accumulators, described = runner.run(stream, lambda stream=stream: new_accumulator(stream))
            add_entries(doc, described, accumulators, gate=gate, resamples=resamples, headlines=headlines)
    summarise_groups(doc, headlines)


def add_entries(doc: dict, described: dict, accumulators, *, gate, resamples: int, headlines: dict) -> None:
    """Finish one stream's accumulators (``(group values or None, accumulator)`` pairs from an engine's
    ``run``; ``described`` its input section) into report entries of ``doc``: input, group, results
    (``to_dict``), per-entry gate; ``headlines`` gets every entry's headline metrics by label (for
    :func:`summarise_groups`). ``calibcli report`` finishes each family of its one pass with this too."""
    pairs = list(accumulators)
    entries = []
    for group, acc in pairs:
        entry = {"input": described}
        if group is not None:
            entry["group"] = group
            entry["rows_in_group"] = acc.n_rows
        entries.append(entry)
    for entry, report in zip(entries, finish(pairs, [entry_label(e) for e in entries], resamples), strict=True):
        label = entry_label(entry)
        entry.update(report.to_dict())
        headline = {k: m.to_dict() for k, m in report.headline().items()}
        headlines[label] = headline
        if "problems" not in entry:  # a test's report: its headline numbers are its metrics
            entry["headline"] = headline
        if gate.active:
            entry["gate"] = check_gate(gate, label, headline.get(gate.metric))
        doc["files"].append(entry)


def finish(pairs: list, labels: list[str], resamples: int) -> list:
    """The reports of one stream's accumulators (its groups), in order. A family whose accumulator class has
    ``results(accs, progress=, on_chunks=)`` finishes all its groups at once (the groups an array axis of the
    statistics; in chunks of groups beyond the memory budget, which the progress bar says); any other
    accumulator finishes alone. A failure names its input (the group, if any)."""
    accs = [acc for _, acc in pairs]
    if not accs:
        return []
    kind = type(accs[0])
    batched = getattr(kind, "results", None)
    total = resamples * sum(len(acc.problems) for acc in accs)  # (the progress bar's steps)
    title = f"bootstrap {labels[0]}" if len(accs) == 1 else f"bootstrap {len(accs)} groups"
    with progress_bar(total, title) as advance:
        if batched is not None and all(type(acc) is kind for acc in accs):

            def on_chunks(n_chunks: int, per_chunk: int) -> None:
                advance.describe(f"{title} (in {n_chunks} chunks of {per_chunk} groups: the memory budget)")

            try:
                return batched(accs, progress=advance, on_chunks=on_chunks)
            except CalibcliError as exc:  # what these rows cannot give (too few of them, ...): name the input
                if len(accs) == 1:
                    raise exc.about(labels[0]) from None
                failed = exc
            for acc, label in zip(accs, labels, strict=True):  # which group: the first that fails alone
                try:
                    acc.result()
                except CalibcliError as exc:
                    raise exc.about(label) from None
            raise failed
        out = []
        for acc, label in zip(accs, labels, strict=True):
            try:
                out.append(acc.result(progress=advance))
            except CalibcliError as exc:  # what these rows cannot give (too few of them, ...): name the input
                raise exc.about(label) from None
        return out


def summarise_groups(doc: dict, headlines: dict) -> None:
    """With groups, ``doc["groups"]``: the worst group and the spread of every headline metric."""
    if any("group" in entry for entry in doc["files"]):
        by = doc["parameters"].get("group_by") or []
        doc["groups"] = {"by": by, "n_groups": len(doc["files"]), "metrics": group_summary(doc["files"], headlines)}


def _chain(first, rest):
    if first is not None:
        yield first
    yield from rest


def check_engine(engine: str, scheduler: str | None, workers: int | None) -> None:
    """``--engine`` and its options, before any work (each engine checks its own: Dask says here when it
    is not installed)."""
    check_choice(engine, tuple(ENGINES), "--engine")
    engine_class: type[Engine] = ENGINES[engine]
    engine_class.check(scheduler, workers)


@contextmanager
def engine_runner(engine: str, scheduler: str | None, workers: int | None):
    """The engine of ``--engine``, for as long as the context lasts (a cluster is closed on leaving).
    ``runner.run(stream, new_accumulator)`` gives ``([(group, accumulator)], input description)``."""
    engine_class: type[Engine] = ENGINES[engine]
    with engine_class.open(scheduler=scheduler, workers=workers, progress=progress_bar) as runner:
        yield runner


@contextmanager
def progress_bar(total: int, description: str):
    """Yield an ``advance(steps=1)`` callable (its ``describe(text)`` changes the bar's description); draws a
    rich bar on stderr only when stderr is a terminal."""
    if total <= 0 or not sys.stderr.isatty():

        def advance(steps=1):
            return None

        advance.describe = lambda text: None  # type: ignore[attr-defined]  # (the bar's relabel hook)
        yield advance
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn  # only on a terminal

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr_console(),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)

        def advance(steps=1):
            bar.advance(task, steps)

        advance.describe = lambda text: bar.update(task, description=text)  # type: ignore[attr-defined]  # (as above)
        yield advance
