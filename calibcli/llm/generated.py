"""Generated answers with token log-probabilities (OpenAI chat completions, Inspect model outputs): the
``letters`` and ``sequence`` rules of :mod:`calibcli.llm.confidence` on one answer.

A token list is ``[(token, logprob, [(top token, top logprob), ...]), ...]``; the answer letter is the last
token that is an option letter once stripped of spaces (``"ANSWER: B"`` ends in ``" B"``)."""

from __future__ import annotations

import math
import re

import numpy as np

from calibcli.core.errors import CalibcliError
from calibcli.llm.confidence import letter_probabilities

Token = tuple[str, float, list[tuple[str, float]]]


def answer_letter(text: str, letters: tuple[str, ...]) -> str | None:
    """The letter an answer gives: ``B``, ``B.``, ``(B)``, ``ANSWER: B``, ``The answer is B``."""
    found = re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", text)
    found = [f for f in found if f in letters]
    return found[-1] if found else None


def letter_vector(tokens: list[Token], letters: tuple[str, ...], where: str) -> np.ndarray:
    """The letters' renormalised probabilities at the answer token."""
    for token, logprob, top in reversed(tokens):
        if token.strip() in letters:
            probs = letter_probabilities(top or [(token, logprob)], letters)
            if probs is not None:
                return probs
    raise CalibcliError(
        f"{where}: no answer token among the logprobs is an option letter ({', '.join(letters)}): expected the "
        f"answer letter with its top_logprobs (request logprobs=true, top_logprobs >= {len(letters)}), or use "
        f"{{opt:confidence}} sequence"
    )


def sequence_probability(tokens: list[Token]) -> float:
    """``exp(sum of the tokens' logprobs)``."""
    return math.exp(sum(lp for _, lp, _ in tokens))
