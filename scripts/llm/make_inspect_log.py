"""Regenerate sample_data/llm/inspect/: a real Inspect eval log, offline, from Inspect's mockllm model.

Runs in a separate environment (not calibcli's): ``pip install inspect-ai``. The task is 24 multiple-choice
questions (``multiple_choice()`` solver, ``choice()`` scorer); mockllm answers with seeded custom outputs
that carry token log-probabilities (``logprobs`` with ``top_logprobs`` on the answer letter), as a model
asked with ``GenerateConfig(logprobs=True, top_logprobs=4)`` returns them. The log is written by Inspect
itself in both of its formats (``.eval``, a zip, and ``.json``).
Usage: python scripts/llm/make_inspect_log.py OUT_DIR (default sample_data/llm/inspect).
"""

from __future__ import annotations

import math
import os
import random
import shutil
import sys
import tempfile

LETTERS = "ABCD"
SUBJECTS = ("algebra", "biology", "history", "geography")


def main(out: str) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import Logprob, Logprobs, ModelOutput, TopLogprob, get_model
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    # Inspect estimates token counts with tiktoken's o200k_base encoding, which it downloads on first use:
    # offline, count words instead (the estimate only sizes context compaction; no number in the log uses it).
    import inspect_ai.model._model as inspect_model

    inspect_model.count_text_tokens = lambda text: max(1, len(text.split()))  # type: ignore[attr-defined]

    rng = random.Random(7)
    samples, outputs = [], []
    for i in range(24):
        target = rng.randrange(4)
        samples.append(
            Sample(
                input=f"Question {i}: which option is right?",
                choices=[f"option {c}" for c in LETTERS],
                target=LETTERS[target],
                id=f"q{i:03d}",
                metadata={"subject": SUBJECTS[i % 4]},
            )
        )
        # a model that is right about 60% of the time, more sure when right
        logits = [rng.gauss(0, 1) for _ in LETTERS]
        logits[target] += 1.2
        top = max(logits)
        norm = math.log(sum(math.exp(v - top) for v in logits)) + top
        lps = [v - norm for v in logits]
        answer = max(range(4), key=lambda k: lps[k])
        tops = [TopLogprob(token=LETTERS[k], logprob=lps[k]) for k in sorted(range(4), key=lambda k: -lps[k])]
        output = ModelOutput.from_content(model="mockllm/model", content=f"ANSWER: {LETTERS[answer]}")
        output.choices[0].logprobs = Logprobs(
            content=[
                Logprob(token="ANSWER", logprob=-0.01, top_logprobs=[TopLogprob(token="ANSWER", logprob=-0.01)]),
                Logprob(token=":", logprob=-0.001, top_logprobs=[TopLogprob(token=":", logprob=-0.001)]),
                Logprob(token=" " + LETTERS[answer], logprob=lps[answer], top_logprobs=tops),
            ]
        )
        outputs.append(output)
    task = Task(dataset=samples, solver=multiple_choice(), scorer=choice(), name="calib_mc_inspect")
    os.makedirs(out, exist_ok=True)
    for fmt in ("eval", "json"):
        model = get_model("mockllm/model", custom_outputs=list(outputs), memoize=False)
        logs = tempfile.mkdtemp(prefix="calibcli-inspect-")
        eval(task, model=model, log_dir=logs, log_format=fmt, logprobs=True, top_logprobs=4)
        (name,) = os.listdir(logs)
        shutil.copy(os.path.join(logs, name), os.path.join(out, f"calib_mc_inspect.{fmt}"))
        shutil.rmtree(logs)
    print(f"wrote {sorted(os.listdir(out))}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample_data/llm/inspect")
