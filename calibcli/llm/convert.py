"""LLM dumps as inputs of every command: each dump read by its reader and written to a temporary Arrow IPC
file, registered under the command-line argument (:mod:`calibcli.io.converted`), so that resolving the argument
gives one dataset per task, named by its file, with the dump's facts in every report's input section."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from calibcli.core.resampling import planning_rows
from calibcli.core.rows import ROW_LIMIT
from calibcli.io import converted
from calibcli.llm.items import ITEM_KEY, Items
from calibcli.llm.readers import Request, read

#: Agreement asked of the scores against the tool's own reported aggregates (SPEC 11's bar).
AGREEMENT = 1e-9


def described(items: Items) -> dict:
    """The ``llm`` block of an input section: the format, the confidence rule and its source, the layout, the
    scores, and the tool's own numbers beside them."""
    scores = items.scores()
    out = {
        "from": items.fmt,
        "confidence": items.rule.name,
        "rule": items.rule.formula,
        "source": items.rule.source,
        "layout": items.layout(),
        **scores,
        **items.facts,
    }
    reported = items.facts.get("lm_eval_results")
    if reported:
        checks = {}
        if "acc,none" in reported:
            checks["accuracy"] = abs(scores["accuracy"] - reported["acc,none"])
        if "brier_score,none" in reported and items.rule.name == "softmax":
            checks["brier_score"] = abs(scores["brier_score"] - reported["brier_score,none"])
        out["difference_from_lm_eval"] = checks
        out["agrees_with_lm_eval"] = bool(checks) and all(v <= AGREEMENT for v in checks.values())
    return {"llm": out}


@contextlib.contextmanager
def converted_inputs(args: list[str], request: Request) -> Iterator[bool]:
    """For as long as the context lasts, every argument of ``args`` that is an LLM dump resolves to its converted
    tasks; yields whether any was. The temporary files are removed on leaving."""
    request.check()
    work: str | None = None
    registered = False
    rows = 0  # the rows of the dumps' per-row bootstraps (each task's up to ROW_LIMIT)
    try:
        for arg in dict.fromkeys(args):
            found = read(arg, request)
            if found is None:
                continue
            if work is None:
                work = tempfile.mkdtemp(prefix="calibcli-llm-")
            entries = []
            for i, items in enumerate(found):
                location = os.path.join(work, f"{len(os.listdir(work))}-{i}.arrow")
                _write(items.table(), location)
                entries.append(converted.Converted(items.path, location, described(items)))
            converted.register(arg, entries)
            for entry in entries:  # a task of a directory, named again by its own path (report's later passes)
                if converted.lookup(entry.name) is None:
                    converted.register(entry.name, [entry])
            registered = True
            rows += sum(min(items.n, ROW_LIMIT) for items in found)
        with planning_rows(rows):  # the tasks' bootstraps together: one choice of backend for the run
            yield registered
    finally:
        converted.clear()
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _write(table, location: str) -> None:
    import pyarrow.feather as feather

    feather.write_feather(table, location, compression="uncompressed")


__all__ = ["ITEM_KEY", "Request", "converted_inputs", "described"]
