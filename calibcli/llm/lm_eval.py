"""lm-evaluation-harness ``--log_samples`` files (``samples_<task>_<date>.jsonl``; SPEC 11).

One line per document: ``doc_id``, ``doc``, ``target``, ``arguments`` (the requests: context and
continuation, the continuation being the target delimiter and the choice), ``filtered_resps`` (for a
multiple-choice task one ``[loglik, is_greedy]`` pair per request, values possibly strings), ``doc_hash``.
A task with ``acc_mutual_info`` logs 2K requests, the last K with an empty context (the unconditional
log-likelihoods). The target is the index of the right choice (an integer, possibly written as text) or the
choice's text. Read from lm-eval 0.4's ``lm_eval/evaluator.py`` (the logged sample) and
``lm_eval/api/task.py`` (``construct_requests``, ``process_results``); checked on files lm-eval wrote
(``scripts/llm/make_lm_eval_samples.py``).

The ``results_<date>.json`` beside the samples (when present) gives each task's target delimiter and lm-eval's
own aggregates (``acc,none``, ``brier_score,none``, ...), which the report puts beside calibcli's.
"""

from __future__ import annotations

import glob
import os
import re

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.llm.confidence import choice_probabilities, rule_for
from calibcli.llm.items import Items, add_row_columns, flat_fields
from calibcli.llm.lm_eval_columns import read_columns
from calibcli.llm.texts import bare_name, first_record, json_document, json_lines, need, number

_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$", re.IGNORECASE)

#: lm-eval's default target delimiter (``TaskConfig.target_delimiter``).
DEFAULT_DELIMITER = " "


def task_of(path: str) -> str:
    """The task named in a samples file's name (``samples_<task>_<date>.jsonl``), else the name itself."""
    name = os.path.basename(path)
    for suffix in (".gz", ".zst"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    found = _SAMPLES.match(name)
    return found["task"] if found else name.rsplit(".", 1)[0]


def is_samples_name(path: str) -> bool:
    return bare_name(path).startswith("samples_") and bare_name(path).endswith(".jsonl")


def samples_files(directory: str) -> list[str]:
    """The samples files under an lm-eval output directory (any depth), sorted."""
    found = [
        p
        for p in glob.glob(os.path.join(directory, "**", "samples_*"), recursive=True)
        if os.path.isfile(p) and is_samples_name(p)
    ]
    return sorted(found)


def looks_like(record: dict) -> bool:
    return {"doc_id", "doc", "filtered_resps"} <= set(record) or {"doc_id", "doc", "resps", "target"} <= set(record)


def results_for(path: str, task: str) -> dict | None:
    """The newest ``results_*.json`` beside ``path`` that reports ``task``: its config and aggregates."""
    candidates = sorted(glob.glob(os.path.join(os.path.dirname(path) or ".", "results_*.json")), reverse=True)
    for candidate in candidates:
        try:
            document = json_document(candidate)
        except CalibcliError:
            continue
        if isinstance(document, dict) and task in document.get("results", {}):
            config = document.get("configs", {}).get(task, {})
            return {"file": candidate, "results": document["results"][task], "config": config}
    return None


def _requests(record: dict, where: str) -> list[tuple[str, str]] | None:
    """The (context, continuation) of each request: lm-eval 0.4.x logs ``arguments`` as
    ``{"gen_args_0": {"arg_0": ctx, "arg_1": cont}, ...}``, older releases as ``[[ctx, cont], ...]``."""
    args = record.get("arguments")
    if args is None:
        return None
    if isinstance(args, dict):
        args = [args[k] for k in sorted(args, key=lambda k: int(re.sub(r"\D", "", k) or 0))]
    out = []
    for a in args:
        if isinstance(a, dict):
            a = [a.get("arg_0"), a.get("arg_1")]
        if not isinstance(a, (list, tuple)) or len(a) < 2 or not isinstance(a[1], str):
            raise CalibcliError(
                f"{where}: the field 'arguments' holds {str(a)[:60]!r}: expected (context, continuation) pairs "
                f"of a multiple-choice task"
            )
        out.append((str(a[0] or ""), a[1]))
    return out


def _lls(record: dict, where: str) -> list[float]:
    resps = record["filtered_resps"] if "filtered_resps" in record else need(record, "resps", where, "responses")
    if not isinstance(resps, list) or not resps:
        raise CalibcliError(f"{where}: 'filtered_resps' is {str(resps)[:40]!r}: expected one entry per choice")
    out = []
    for k, entry in enumerate(resps):
        while isinstance(entry, list) and len(entry) == 1 and isinstance(entry[0], list):
            entry = entry[0]  # ``resps`` nests each request's answer once more
        if isinstance(entry, list) and len(entry) == 2:
            out.append(number(entry[0], where, f"the log-likelihood of choice {k}"))
        elif isinstance(entry, str) and not _is_number(entry):
            raise CalibcliError(
                f"{where}: 'filtered_resps' holds generated text ({entry[:30]!r}), not log-likelihoods: a "
                f"generate_until task has no per-choice probabilities; read its answers with {{opt:from_format}} "
                f"confidence and a stated or judged confidence"
            )
        else:
            raise CalibcliError(
                f"{where}: 'filtered_resps' entry {k} is {str(entry)[:40]!r}: expected a [loglik, is_greedy] pair"
            )
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _target(record: dict, choices: list[str] | None, k: int, where: str) -> int:
    target = need(record, "target", where, "the right choice: its index or its text")
    if isinstance(target, list):
        raise CalibcliError(
            f"{where}: 'target' is a list {str(target)[:40]}: a task with several right choices is not a "
            f"multiclass problem; calibcli reads one target per document"
        )
    if isinstance(target, bool):
        raise CalibcliError(f"{where}: 'target' is {target!r}: expected a choice index or a choice's text")
    index: int | None = None
    if isinstance(target, int):
        index = target
    elif isinstance(target, float) and target.is_integer():
        index = int(target)
    elif isinstance(target, str):
        text = target.strip()
        if re.fullmatch(r"-?\d+", text):
            index = int(text)
        elif choices is not None and target in choices:
            index = choices.index(target)
        elif choices is not None and text in [c.strip() for c in choices]:
            index = [c.strip() for c in choices].index(text)
        else:
            raise CalibcliError(
                f"{where}: 'target' is {target[:40]!r}, neither a choice index nor one of the choices: expected "
                f"the index or text of the right choice"
            )
    if index is None:
        raise CalibcliError(f"{where}: 'target' is {str(target)[:40]!r}: expected a choice index or a choice's text")
    if not 0 <= index < k:
        raise CalibcliError(
            f"{where}: 'target' is {index}, out of range for {k} choices: expected 0..{k - 1} (lm-eval logs -100 "
            f"or an index past the choices when the target is not among them)"
        )
    return index


def read(path: str, confidence: str | None = None, *, task: str | None = None) -> Items:
    """The items of one samples file, their probabilities by the ``--confidence`` rule."""
    rule = rule_for("lm-eval", confidence)
    task = task or task_of(path)
    reported = results_for(path, task)
    delimiter = DEFAULT_DELIMITER
    if reported is not None and isinstance(reported["config"].get("target_delimiter"), str):
        delimiter = reported["config"]["target_delimiter"]
    facts: dict = {
        "task": task,
        "target_delimiter": delimiter,
        "item_key": "doc_hash (lm-eval's hash of the document; repeats get #2, #3 in doc_id order)",
    }
    if reported is not None:
        facts["lm_eval_results"] = {
            "file": reported["file"],
            **{k: v for k, v in reported["results"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
        }
    first = first_record(path)
    mutual = None
    if first is not None and looks_like(first):
        try:
            mutual = _mutual_layout(_requests(first, path), _lls(first, path), rule.name)
        except CalibcliError:
            mutual = None  # the line reader names the problem and its line
        if mutual is not None and (mutual or rule.name != "mutual-info"):
            fast = read_columns(path, first, rule=rule, task=task, delimiter=delimiter, mutual=mutual)
            if fast is not None:
                fast.facts = {**facts, "requests_per_document": ["2K (mutual information)" if mutual else "K"]}
                return fast
    items = _read_lines(path, rule, task, delimiter)
    items.facts = {**facts, "requests_per_document": items.facts["requests_per_document"]}
    return items


def _read_lines(path: str, rule, task: str, delimiter: str) -> Items:
    """The items line by line (any layout lm-eval has written; every problem named by its line)."""
    items = Items(path, "lm-eval", rule, keys=[], probs=[], targets=[])
    assert isinstance(items.probs, list) and isinstance(items.targets, list)
    layouts: set[str] = set()
    for line, record in json_lines(path):
        where = f"{path}: line {line}"
        if not looks_like(record):
            raise CalibcliError(
                f"{where}: is not an lm-evaluation-harness sample (fields {', '.join(sorted(record)[:8])}): "
                f"expected doc_id, doc, target and filtered_resps (lm_eval --log_samples)"
            )
        lls = _lls(record, where)
        requests = _requests(record, where)
        k, unconditional = len(lls), None
        if requests is not None and len(requests) != len(lls):
            raise CalibcliError(
                f"{where}: {len(lls)} log-likelihoods for {len(requests)} requests in 'arguments': expected one "
                f"per request; the line is incomplete"
            )
        mutual = _mutual_layout(requests, lls, rule.name)
        if mutual:
            k = len(lls) // 2
            unconditional = np.array(lls[k:])
        elif rule.name == "mutual-info":
            raise CalibcliError(
                f"{where}: {{opt:confidence}} mutual-info needs 2K log-likelihoods (the last K unconditional, as a "
                f"task with the acc_mutual_info metric logs them); this document has {len(lls)} and no "
                f"unconditional requests"
            )
        if k < 2:
            raise CalibcliError(
                f"{where}: {k} log-likelihood(s): a multiple-choice document needs at least 2 choices (a "
                f"loglikelihood task scores one continuation and has nothing to compare)"
            )
        layouts.add("2K (mutual information)" if mutual else "K")
        choices = None
        if requests is not None:
            choices = [cont[len(delimiter) :] if cont.startswith(delimiter) else cont for _, cont in requests[:k]]
        lengths = None
        if rule.name == "length-normalized":
            if choices is None:
                raise CalibcliError(
                    f"{where}: {{opt:confidence}} length-normalized needs the choices' texts, logged in "
                    f"'arguments': the line has none"
                )
            lengths = np.array([max(len(c), 1) for c in choices], dtype=np.float64)
        target = _target(record, choices, k, where)
        items.probs.append(choice_probabilities(rule.name, np.array(lls[:k]), lengths, unconditional))
        items.targets.append(target)
        key = record.get("doc_hash") or f"doc_id={record.get('doc_id')}"
        fields: dict = {"task": task, "doc_id": record.get("doc_id")}
        doc = record.get("doc")
        if isinstance(doc, dict):
            flat_fields(doc, "doc", fields)
        add_row_columns(items.columns, fields, len(items.keys))
        items.keys.append(str(key))
    items.facts = {"requests_per_document": sorted(layouts)}
    return items


def _mutual_layout(requests, lls: list[float], rule: str) -> bool:
    """Whether the 2K requests are K conditional then the same K continuations with an empty context."""
    if len(lls) % 2 or len(lls) < 4:
        return False
    k = len(lls) // 2
    if requests is None:
        return rule == "mutual-info"
    first, second = requests[:k], requests[k:]
    return all(ctx == "" for ctx, _ in second) and [c for _, c in first] == [c for _, c in second]
