"""How an LLM's log-likelihoods and token log-probabilities become probabilities (``--confidence``, SPEC 11).

Each rule is stated in every report with its source:

- ``softmax``: ``p_k = softmax(ll)_k`` over the K choices' log-likelihoods: what lm-evaluation-harness's
  ``brier_score`` uses (``prob_norm = utils.softmax(lls)`` in ``lm_eval/api/task.py``, ``process_results``).
- ``length-normalized``: softmax of ``ll_k / len_k``, ``len_k`` the choice's length in characters without the
  target delimiter: the scores whose argmax is lm-eval's ``acc_norm`` (``lls / completion_len``).
- ``mutual-info``: softmax of ``ll_k - ll_uncond_k``, the unconditional log-likelihoods being the last K of
  2K entries (empty context): the scores whose argmax is lm-eval's ``acc_mutual_info``.
- ``letters``: for a generated answer, the ``top_logprobs`` of the answer token, kept for the option letters
  and renormalised over them (the letter's probability among the options).
- ``sequence``: for a generated answer, the probability of the answer's tokens, ``exp(sum of their
  logprobs)``: a confidence that the answer given is right (as HELM's calibration metrics read
  ``completion.logprob``).
- ``stated``: a confidence the model or a judge stated (HLE, SimpleQA-style), on 0-1 or 0-100.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibcli.core.errors import CalibcliError


@dataclass(frozen=True)
class Rule:
    name: str
    formula: str
    source: str


RULES = {
    "softmax": Rule(
        "softmax",
        "p_k = softmax(ll)_k over the choices' log-likelihoods",
        "lm-evaluation-harness brier_score (prob_norm = softmax(lls), lm_eval/api/task.py process_results)",
    ),
    "length-normalized": Rule(
        "length-normalized",
        "p_k = softmax(ll_k / len_k), len_k the choice's length in characters without the target delimiter",
        "lm-evaluation-harness acc_norm (argmax of lls / completion_len)",
    ),
    "mutual-info": Rule(
        "mutual-info",
        "p_k = softmax(ll_k - ll_uncond_k), the unconditional log-likelihoods the last K of 2K entries",
        "lm-evaluation-harness acc_mutual_info (argmax of ll_c - ll_u)",
    ),
    "letters": Rule(
        "letters",
        "p_k = the answer token's top_logprobs for the option letters, exp and renormalised over the letters",
        "the top_logprobs of OpenAI chat completions / Inspect model outputs at the answer letter",
    ),
    "sequence": Rule(
        "sequence",
        "confidence = exp(sum of the answer tokens' logprobs), the probability of the answer given",
        "the completion's log-probability (HELM completion.logprob; OpenAI/Inspect logprobs.content)",
    ),
    "stated": Rule(
        "stated",
        "confidence = the stated value (divided by 100 on the 0-100 scale)",
        "a confidence stated by the model or a judge (HLE, SimpleQA-style)",
    ),
}

#: The rules each dump format can apply; the first is its default.
FORMAT_RULES = {
    "lm-eval": ("softmax", "length-normalized", "mutual-info"),
    "openai": ("letters", "sequence"),
    "inspect": ("letters", "sequence"),
    "helm": ("sequence",),
    "confidence": ("stated",),
}


def rule_for(fmt: str, name: str | None) -> Rule:
    """The rule ``name`` (default: the format's first), refused when the format cannot apply it."""
    allowed = FORMAT_RULES[fmt]
    chosen = name or allowed[0]
    if chosen not in RULES:
        raise CalibcliError(
            f"{{opt:confidence}} is {chosen!r}: expected one of {', '.join(RULES)} (for {fmt}: {', '.join(allowed)})"
        )
    if chosen not in allowed:
        raise CalibcliError(
            f"{{opt:confidence}} {chosen} does not apply to {fmt} dumps: expected one of {', '.join(allowed)}"
        )
    return RULES[chosen]


def softmax(scores: np.ndarray) -> np.ndarray:
    """A numerically stable softmax of one vector (float64)."""
    z = np.asarray(scores, dtype=np.float64)
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def choice_probabilities(rule: str, lls: np.ndarray, lengths: np.ndarray | None, unconditional: np.ndarray | None):
    """Probabilities over the choices by ``rule`` (``softmax``, ``length-normalized``, ``mutual-info``)."""
    if rule == "softmax":
        return softmax(lls)
    if rule == "length-normalized":
        assert lengths is not None  # (the reader checks that the choices' texts are logged)
        return softmax(lls / lengths)
    assert unconditional is not None  # (the reader checks for the 2K entries)
    return softmax(lls - unconditional)


def letter_probabilities(top: list[tuple[str, float]], letters: tuple[str, ...]) -> np.ndarray | None:
    """The letters' probabilities from ``(token, logprob)`` pairs: tokens equal to a letter once stripped of
    spaces (``" B"``, ``"B"``) add their probability to it; renormalised over the letters. None when no
    token is a letter."""
    mass = np.zeros(len(letters))
    index = {letter: k for k, letter in enumerate(letters)}
    for token, logprob in top:
        k = index.get(token.strip())
        if k is not None:
            mass[k] += math.exp(logprob)
    total = mass.sum()
    return None if total <= 0 else mass / total
