"""OpenAI chat completion and batch output files, joined to a file of the correct answers (SPEC 11).

- A chat completion (``"object": "chat.completion"``), one per line of a JSON Lines file (or one JSON
  document): ``choices[0].message.content`` is the answer, ``choices[0].logprobs.content[]`` its tokens with
  ``token``, ``logprob`` and ``top_logprobs[]`` (asked with ``logprobs=true, top_logprobs=N``); keyed by ``id``.
- A batch output file (``/v1/batches``): one line per request, ``{"id", "custom_id", "response":
  {"status_code", "request_id", "body": <chat completion>}, "error"}``; keyed by ``custom_id``. A request that
  failed (``error`` set, or a status other than 200) has no answer: it is counted in the report, not read.

Schemas as OpenAI's API reference documents them (the ``ChatCompletion`` and batch output objects; the
``openai`` Python package's types). ``--answers FILE`` (CSV, TSV, JSON Lines or Parquet) has a key column
(``custom_id`` or ``id``) and ``answer`` (the right option letter); optional ``choices`` (the item's letters,
such as ``ABCD``; default ``ABCD``) and any other column (a subject) for ``--group-by``.
"""

from __future__ import annotations

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.llm.confidence import rule_for
from calibcli.llm.generated import Token, answer_letter, letter_vector, sequence_probability
from calibcli.llm.items import Items, add_row_columns
from calibcli.llm.texts import json_document, json_lines, need, read_rows

DEFAULT_LETTERS = ("A", "B", "C", "D")


def looks_like(record: dict) -> bool:
    return ("custom_id" in record and "response" in record) or record.get("object") == "chat.completion"


def _records(path: str):
    if path.lower().endswith((".json", ".json.gz", ".json.zst")):
        document = json_document(path)
        records = document if isinstance(document, list) else [document]
        for i, record in enumerate(records, 1):
            if not isinstance(record, dict):
                raise CalibcliError(f"{path}: entry {i} is not a JSON object: expected chat completion objects")
            yield f"{path}: entry {i}", record
        return
    for line, record in json_lines(path):
        yield f"{path}: line {line}", record


def _tokens(completion: dict, where: str) -> tuple[str, list[Token]]:
    choices = need(completion, "choices", where, "the completion's choices")
    if not isinstance(choices, list) or not choices:
        raise CalibcliError(f"{where}: 'choices' is empty: expected the completion's answer")
    choice = choices[0]
    message = choice.get("message") or {}
    text = message.get("content") or ""
    logprobs = choice.get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        raise CalibcliError(
            f"{where}: the answer has no logprobs (choices[0].logprobs.content is empty): request the completion "
            f"with logprobs=true and top_logprobs=5 to read its confidence"
        )
    tokens: list[Token] = []
    for t in content:
        top = [(str(x.get("token", "")), float(x.get("logprob", -np.inf))) for x in t.get("top_logprobs") or []]
        tokens.append((str(t.get("token", "")), float(need(t, "logprob", where, "a token's logprob")), top))
    return str(text), tokens


def read_answers(path: str) -> dict[str, dict]:
    """The answers file: key -> its row (``answer``, optional ``choices``, other columns)."""
    rows = read_rows(path)
    if not rows:
        raise CalibcliError(f"{path}: the answers file has no rows: expected custom_id,answer per item")
    key = "custom_id" if "custom_id" in rows[0] else "id" if "id" in rows[0] else None
    if key is None or "answer" not in rows[0]:
        raise CalibcliError(
            f"{path}: the answers file has columns {', '.join(rows[0])}: expected a key column custom_id (or id) "
            f"and answer (the right option letter)"
        )
    out: dict[str, dict] = {}
    for i, row in enumerate(rows, 1):
        k = str(row[key])
        if k in out:
            raise CalibcliError(f"{path}: row {i}: the key {k!r} appears twice: expected one answer per request")
        out[k] = {**row, "_key": key}
    return out


def read(path: str, confidence: str | None = None, *, answers: str | None = None) -> Items:
    rule = rule_for("openai", confidence)
    if answers is None:
        raise CalibcliError(
            f"{path}: an OpenAI output file holds the answers, not whether they are right: pass {{opt:answers}} FILE "
            f"with columns custom_id (or id) and answer"
        )
    truth = read_answers(answers)
    items = Items(path, "openai", rule, keys=[])
    if rule.name == "letters":
        items.probs, items.targets = [], []
    else:
        items.confidence, items.correct = [], []
    failed = 0
    seen: set[str] = set()
    for where, record in _records(path):
        if "custom_id" in record:
            key = str(record["custom_id"])
            response = record.get("response") or {}
            if record.get("error") or response.get("status_code", 200) != 200:
                failed += 1
                continue
            completion = need(response, "body", where, "the chat completion")
        elif record.get("object") == "chat.completion":
            key, completion = str(need(record, "id", where, "the completion's id")), record
        else:
            raise CalibcliError(
                f"{where}: is neither a batch output line (custom_id, response) nor a chat completion "
                f"(object: chat.completion): check {{opt:from_format}}"
            )
        if key not in truth:
            raise CalibcliError(f"{where}: no answer for {key!r} in {answers}: expected one row per request")
        seen.add(key)
        row = truth[key]
        letters = tuple(str(row["choices"])) if row.get("choices") else DEFAULT_LETTERS
        right = str(row["answer"]).strip()
        if right not in letters:
            raise CalibcliError(
                f"{answers}: the answer {right!r} for {key!r} is not one of the letters {''.join(letters)}: "
                f"expected a letter (or give the item's letters in a choices column)"
            )
        text, tokens = _tokens(completion, where)
        if isinstance(items.probs, list) and isinstance(items.targets, list):
            items.probs.append(letter_vector(tokens, letters, where))
            items.targets.append(letters.index(right))
        elif items.confidence is not None and items.correct is not None:
            items.confidence.append(sequence_probability(tokens))
            items.correct.append(int(answer_letter(text, letters) == right))
        extra = {k: v for k, v in row.items() if k not in ("answer", "choices", "_key", row["_key"])}
        add_row_columns(items.columns, extra, len(items.keys))
        items.keys.append(key)
    items.facts = {
        "answers_file": answers,
        "failed_requests_skipped": failed,
        "answers_without_output": len(set(truth) - seen),
        "item_key": "custom_id (batch output) or id (chat completion)",
    }
    return items
