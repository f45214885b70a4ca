"""Inspect eval logs: the ``.eval`` format (a zip: ``header.json`` and ``samples/<id>_epoch_<n>.json``) and the
``.json`` format (one document with ``eval``, ``results`` and ``samples``), as Inspect writes them
(``inspect_ai/log/_log.py``'s ``EvalLog`` and ``EvalSample``; checked on logs Inspect wrote,
``scripts/llm/make_inspect_log.py``).

A sample has ``id``, ``epoch``, ``choices`` (a multiple-choice task's options, letters A, B, ... in order),
``target`` (the right letter, or text), ``output.choices[0].logprobs.content[]`` (when the model was asked
for logprobs) and ``scores`` (scorer -> ``{"value": "C" | "I" | 1 | 0, "answer": ...}``). The ``letters``
rule needs the logprobs; ``sequence`` takes correctness from the first scorer (``C``/``I``, 1/0, true/false).
``metadata`` fields become ``metadata.NAME`` columns for ``--group-by``.
"""

from __future__ import annotations

import json
import zipfile

from calibcli.core.errors import CalibcliError
from calibcli.llm.confidence import rule_for
from calibcli.llm.generated import Token, letter_vector, sequence_probability
from calibcli.llm.items import Items, add_row_columns, flat_fields
from calibcli.llm.texts import bare_name, json_document

_VALUES = {"C": 1, "I": 0, "CORRECT": 1, "INCORRECT": 0, True: 1, False: 0}  # (1 and 0 equal True and False)


def is_eval_zip(path: str) -> bool:
    if not bare_name(path).endswith(".eval") or not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return any(n.startswith("samples/") for n in z.namelist()) or "header.json" in z.namelist()


def looks_like(document: object) -> bool:
    return isinstance(document, dict) and "eval" in document and "samples" in document


#: The zip compression method of Zstandard (APPNOTE 4.4.5), which Inspect's ``.eval`` logs use and Python's
#: zipfile reads only from 3.14.
ZIP_ZSTD = 93


def _member(z: zipfile.ZipFile, fh, name: str, path: str) -> bytes:
    """One member's bytes; Zstandard members decompressed with the zstandard package (Inspect's own dependency)."""
    info = z.getinfo(name)
    if info.compress_type != ZIP_ZSTD:
        return z.read(name)
    try:
        import zstandard
    except ImportError:
        raise CalibcliError(
            f"{path}: the log's members are Zstandard-compressed and the zstandard package is not installed: "
            f"pip install 'calibcli[zstd]' (Inspect installs it too)"
        ) from None
    fh.seek(info.header_offset)
    local = fh.read(30)
    if local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header of {name}")
    skip = int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    fh.seek(info.header_offset + 30 + skip)
    return zstandard.ZstdDecompressor().decompress(fh.read(info.compress_size), max_output_size=info.file_size)


def _samples(path: str) -> tuple[dict, list[tuple[str, dict]]]:
    if zipfile.is_zipfile(path):
        try:
            with open(path, "rb") as fh, zipfile.ZipFile(fh) as z:
                members = z.namelist()
                names = sorted(n for n in members if n.startswith("samples/") and n.endswith(".json"))
                header = json.loads(_member(z, fh, "header.json", path)) if "header.json" in members else {}
                return header, [(f"{path}: {n}", json.loads(_member(z, fh, n, path))) for n in names]
        except (zipfile.BadZipFile, json.JSONDecodeError, KeyError, OSError, ValueError) as exc:
            raise CalibcliError(
                f"{path}: is not a readable Inspect .eval log ({exc}): check that it is complete"
            ) from None
    try:
        document = json_document(path)
    except CalibcliError as exc:
        raise CalibcliError(
            f"{path}: is not an Inspect eval log ({exc.template.split(': ', 1)[-1]}): expected an .eval zip or one "
            f"JSON document with eval and samples (inspect eval --log-format json)"
        ) from None
    if not looks_like(document):
        raise CalibcliError(f"{path}: is not an Inspect eval log: expected a JSON document with eval and samples")
    assert isinstance(document, dict)
    samples = document.get("samples") or []
    return document, [(f"{path}: samples[{i}]", s) for i, s in enumerate(samples)]


def _tokens(sample: dict, where: str) -> list[Token]:
    choices = (sample.get("output") or {}).get("choices") or []
    logprobs = (choices[0].get("logprobs") or {}) if choices else {}
    content = logprobs.get("content") or []
    if not content:
        raise CalibcliError(
            f"{where}: the model output has no logprobs: run the eval with --logprobs --top-logprobs 5 (a model "
            f"that returns them), or read a stated confidence with {{opt:from_format}} confidence"
        )
    return [
        (
            str(t.get("token", "")),
            float(t.get("logprob", 0.0)),
            [(str(x.get("token", "")), float(x.get("logprob"))) for x in t.get("top_logprobs") or []],
        )
        for t in content
    ]


def _correct(sample: dict, where: str) -> int:
    scores = sample.get("scores") or {}
    if not scores:
        raise CalibcliError(f"{where}: the sample has no scores: expected a scorer's value (C or I)")
    value = next(iter(scores.values())).get("value")
    if isinstance(value, str):
        value = value.upper()
    if value not in _VALUES:
        raise CalibcliError(f"{where}: the score is {str(value)[:20]!r}: expected C/I, 1/0 or true/false")
    return _VALUES[value]


def read(path: str, confidence: str | None = None) -> Items:
    rule = rule_for("inspect", confidence)
    header, samples = _samples(path)
    if not samples:
        raise CalibcliError(f"{path}: the log holds no samples: expected an eval run with its samples logged")
    task = ((header.get("eval") or {}).get("task")) or bare_name(path).rsplit(".", 1)[0]
    items = Items(path, "inspect", rule, keys=[])
    if rule.name == "letters":
        items.probs, items.targets = [], []
    else:
        items.confidence, items.correct = [], []
    for where, sample in samples:
        tokens = _tokens(sample, where)
        if isinstance(items.probs, list) and isinstance(items.targets, list):
            options = sample.get("choices") or []
            if len(options) < 2:
                raise CalibcliError(
                    f"{where}: the sample has {len(options)} choices: {{opt:confidence}} letters needs a "
                    f"multiple-choice sample; use {{opt:confidence}} sequence for other answers"
                )
            letters = tuple(chr(ord("A") + k) for k in range(len(options)))
            target = sample.get("target")
            target = target[0] if isinstance(target, list) and target else target
            if isinstance(target, str) and target.strip() in letters:
                index = letters.index(target.strip())
            elif isinstance(target, str) and target in options:
                index = options.index(target)
            else:
                raise CalibcliError(
                    f"{where}: the target {str(target)[:30]!r} is not one of the letters {''.join(letters)} or the "
                    f"choices' texts: expected the right option"
                )
            items.probs.append(letter_vector(tokens, letters, where))
            items.targets.append(index)
        elif items.confidence is not None and items.correct is not None:
            items.confidence.append(sequence_probability(tokens))
            items.correct.append(_correct(sample, where))
        fields: dict = {"task": task, "epoch": sample.get("epoch")}
        if isinstance(sample.get("metadata"), dict):
            flat_fields(sample["metadata"], "metadata", fields)
        add_row_columns(items.columns, fields, len(items.keys))
        items.keys.append(f"{sample.get('id')}" + (f"@{sample['epoch']}" if sample.get("epoch", 1) != 1 else ""))
    results = (header.get("results") or {}).get("scores") or []
    reported = {
        f"{s.get('name')}.{m}": v.get("value")
        for s in results
        for m, v in (s.get("metrics") or {}).items()
        if isinstance(v, dict)
    }
    items.facts = {"task": task, "item_key": "sample id (@epoch beyond the first)", "inspect_results": reported}
    return items
