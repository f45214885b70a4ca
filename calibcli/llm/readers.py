"""Which reader a command-line argument needs: ``--from``, else its content where that is unambiguous.

Told from the content, without ``--from``: a directory with HELM run directories (``scenario_state.json``) is
HELM, one with ``samples_*.jsonl`` files an lm-eval output directory (one input per task file); a JSON Lines
file whose first record has ``doc_id``, ``doc`` and ``filtered_resps`` is lm-eval's, one with ``custom_id`` and
``response`` (or ``"object": "chat.completion"``) OpenAI's; an ``.eval`` zip or a ``.json`` document with
``eval`` and ``samples`` is an Inspect log. Anything else is read as a table of predictions, as before.
A table of stated confidences looks like any table: it needs ``--from confidence``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from calibcli.core.errors import CalibcliError
from calibcli.llm import helm, inspect_log, lm_eval, openai, stated
from calibcli.llm.confidence import RULES
from calibcli.llm.items import Items
from calibcli.llm.texts import bare_name, first_record, json_document

FROM = ("lm-eval", "helm", "openai", "inspect", "confidence")


@dataclass(frozen=True)
class Request:
    """The reading options of an LLM dump: ``--from``, ``--confidence``, ``--answers``, ``--confidence-scale``."""

    from_format: str | None = None
    confidence: str | None = None
    answers: str | None = None
    confidence_scale: str | None = None

    def check(self) -> None:
        if self.from_format is not None and self.from_format not in FROM:
            raise CalibcliError(f"{{opt:from_format}} is {self.from_format!r}: expected one of {', '.join(FROM)}")
        if self.confidence is not None and self.confidence not in RULES:
            raise CalibcliError(f"{{opt:confidence}} is {self.confidence!r}: expected one of {', '.join(RULES)}")
        if self.confidence_scale is not None and self.confidence_scale not in stated.SCALES:
            raise CalibcliError(
                f"{{opt:confidence_scale}} is {self.confidence_scale!r}: expected unit (0-1) or percent (0-100)"
            )

    @property
    def asked(self) -> bool:
        """Whether an option only an LLM dump uses was given (then every input must be one)."""
        return any(v is not None for v in (self.from_format, self.confidence, self.answers, self.confidence_scale))


def detect(arg: str) -> str | None:
    """The dump format of ``arg`` told from its content, or None (a table, or not unambiguous)."""
    if arg == "-" or "://" in arg:
        return None
    if os.path.isdir(arg):
        if helm.run_dirs(arg):
            return "helm"
        if lm_eval.samples_files(arg):
            return "lm-eval"
        return None
    if not os.path.isfile(arg):
        return None
    name = bare_name(arg)
    if name.endswith(".eval") and inspect_log.is_eval_zip(arg):
        return "inspect"
    if name.endswith((".jsonl", ".ndjson")):
        record = first_record(arg)
        if record is not None and lm_eval.looks_like(record):
            return "lm-eval"
        if record is not None and openai.looks_like(record):
            return "openai"
        return None
    if name.endswith(".json"):
        try:
            document = json_document(arg)
        except CalibcliError:
            return None
        if inspect_log.looks_like(document):
            return "inspect"
        if isinstance(document, dict) and openai.looks_like(document):
            return "openai"
    return None


def read(arg: str, request: Request) -> list[Items] | None:
    """The items of ``arg`` (one :class:`Items` per task or run), or None when it is a table to read as usual."""
    fmt = request.from_format or detect(arg)
    if fmt is None:
        if request.asked:
            raise CalibcliError(
                f"{arg}: is not an LLM evaluation dump that calibcli recognises (lm-eval samples, a HELM run, an "
                f"OpenAI output file, an Inspect log): name its format with {{opt:from_format}} "
                f"{'|'.join(FROM)}"
            )
        return None
    if arg == "-":
        raise CalibcliError(f"{{opt:from_format}} {fmt} reads files, not standard input: save the dump to a file first")
    if not os.path.exists(arg):
        raise CalibcliError(f"{arg}: no such file: check the path")
    if fmt == "lm-eval":
        files = lm_eval.samples_files(arg) if os.path.isdir(arg) else [arg]
        if not files:
            raise CalibcliError(
                f"{arg}: is a directory without lm-eval samples files: expected samples_<task>_<date>.jsonl "
                f"(lm_eval ... --log_samples --output_path DIR)"
            )
        return [lm_eval.read(f, request.confidence) for f in files]
    if fmt == "helm":
        runs = helm.run_dirs(arg) if os.path.isdir(arg) else []
        if not runs:
            raise CalibcliError(
                f"{arg}: is not a HELM run directory: expected a directory with {helm.STATE} "
                f"(benchmark_output/runs/...)"
            )
        return [helm.read(r, request.confidence) for r in runs]
    if os.path.isdir(arg):
        raise CalibcliError(f"{arg}: is a directory: {{opt:from_format}} {fmt} reads one file per argument")
    if fmt == "openai":
        return [openai.read(arg, request.confidence, answers=request.answers)]
    if fmt == "inspect":
        return [inspect_log.read(arg, request.confidence)]
    return [stated.read(arg, request.confidence, scale=request.confidence_scale)]
