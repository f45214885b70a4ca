"""The options of every command that reads inputs, for LLM evaluation dumps (declared once; the CLI adds them
beside the reading options of every command)."""

from __future__ import annotations

from dataclasses import dataclass

from calibcli.core.validation import Declared, option
from calibcli.llm.confidence import RULES
from calibcli.llm.readers import FROM, Request


def _choices(*values: str) -> str:
    return "[" + "|".join(values) + "]"


@dataclass(frozen=True)
class DumpOptions(Declared):
    """How an LLM evaluation dump is read (docs/guides/llm.md)."""

    from_format: str | None = option(
        None,
        "--from",
        help="The inputs are LLM evaluation dumps: lm-eval (--log_samples files or their directory), helm (a run "
        "directory), openai (chat completions or batch output, with --answers), inspect (an eval log) or "
        "confidence (a table of confidence and correct). Default: told from the content where unambiguous. "
        "See docs/guides/llm.md.",
        metavar=_choices(*FROM),
    )
    confidence: str | None = option(
        None,
        "--confidence",
        help="How an LLM's log-probabilities become probabilities: softmax (lm-eval's brier_score; default), "
        "length-normalized (acc_norm), mutual-info (acc_mutual_info), letters (renormalised top_logprobs of "
        "the option letters; default for openai and inspect), sequence (the answer's probability; helm), stated.",
        metavar=_choices(*RULES),
    )
    answers: str | None = option(
        None,
        "--answers",
        help="With --from openai: the correct answers, a table with custom_id (or id) and answer (a letter).",
    )
    confidence_scale: str | None = option(
        None,
        "--confidence-scale",
        help="With --from confidence: the stated confidences are on unit (0-1, default) or percent (0-100).",
        metavar=_choices("unit", "percent"),
    )

    def request(self) -> Request:
        return Request(self.from_format, self.confidence, self.answers, self.confidence_scale)
