"""Regenerate sample_data/llm/openai/ and sample_data/llm/confidence/: files WRITTEN FROM THE PUBLISHED SCHEMA, not by
the service (no API can be reached from where these were made), from a seeded simulation of a model that is right
about 65% of the time and more sure when right.

- openai/chat_completions.jsonl: chat completion objects (``"object": "chat.completion"``), one per line, with
  ``choices[0].logprobs.content[].top_logprobs`` as returned for ``logprobs=true, top_logprobs=4``;
- openai/batch_output.jsonl: the batch API's output file (``custom_id``, ``response.status_code``,
  ``response.body`` = a chat completion, ``error``), one request failed (status 500, as the API reports it);
- openai/answers.csv: ``custom_id``, ``answer`` (the right letter), ``choices``, ``subject``;
- confidence/simpleqa_judged.csv: SimpleQA-style judged answers with a stated confidence in percent.

When the ``openai`` package is installed, every completion is validated against its ``ChatCompletion`` type
(the schema the API documents). Usage: python scripts/llm/make_written_samples.py [sample_data/llm]
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
import sys

LETTERS = "ABCD"
SUBJECTS = ("algebra", "biology", "history", "geography")


def completion(i: int, rng: random.Random, target: int) -> dict:
    logits = [rng.gauss(0, 1) for _ in LETTERS]
    logits[target] += 1.4
    top = max(logits)
    norm = math.log(sum(math.exp(v - top) for v in logits)) + top
    lps = [v - norm for v in logits]
    answer = max(range(4), key=lambda k: lps[k])
    ranked = sorted(range(4), key=lambda k: -lps[k])
    letter = LETTERS[answer]
    return {
        "id": f"chatcmpl-calibcli{i:04d}",
        "object": "chat.completion",
        "created": 1796169600 + i,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": letter, "refusal": None, "annotations": []},
                "logprobs": {
                    "content": [
                        {
                            "token": letter,
                            "logprob": lps[answer],
                            "bytes": list(letter.encode()),
                            "top_logprobs": [
                                {"token": LETTERS[k], "logprob": lps[k], "bytes": list(LETTERS[k].encode())}
                                for k in ranked
                            ],
                        }
                    ],
                    "refusal": None,
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 61, "completion_tokens": 1, "total_tokens": 62},
        "service_tier": "default",
        "system_fingerprint": "fp_calibcli",
    }


def main(out: str) -> None:
    rng = random.Random(11)
    os.makedirs(os.path.join(out, "openai"), exist_ok=True)
    os.makedirs(os.path.join(out, "confidence"), exist_ok=True)
    rows, completions = [], []
    for i in range(40):
        target = rng.randrange(4)
        rows.append({"custom_id": f"request-{i}", "answer": LETTERS[target], "choices": LETTERS,
                     "subject": SUBJECTS[i % 4]})
        completions.append(completion(i, rng, target))
    try:
        from openai.types.chat import ChatCompletion
    except ImportError:
        ChatCompletion = None
    if ChatCompletion is not None:
        for c in completions:
            ChatCompletion.model_validate(c)
    with open(os.path.join(out, "openai", "answers.csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(out, "openai", "chat_completions.jsonl"), "w") as fh:
        for i, c in enumerate(completions[:20]):
            c = dict(c, id=f"request-{i}")  # keyed by id: the answers file names them so
            fh.write(json.dumps(c) + "\n")
    with open(os.path.join(out, "openai", "batch_output.jsonl"), "w") as fh:
        for i, c in enumerate(completions):
            if i == 7:
                line = {"id": f"batch_req_{i:04d}", "custom_id": f"request-{i}",
                        "response": {"status_code": 500, "request_id": f"req_{i:04d}", "body": {
                            "error": {"message": "The server had an error.", "type": "server_error"}}},
                        "error": None}
            else:
                line = {"id": f"batch_req_{i:04d}", "custom_id": f"request-{i}",
                        "response": {"status_code": 200, "request_id": f"req_{i:04d}", "body": c}, "error": None}
            fh.write(json.dumps(line) + "\n")
    with open(os.path.join(out, "confidence", "simpleqa_judged.csv"), "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "topic", "confidence", "correct"])
        for i in range(60):
            stated = rng.choice([50, 60, 70, 80, 90, 95, 99, 100])
            right = rng.random() < 0.75 * stated / 100  # overconfident, as stated confidences tend to be
            writer.writerow([f"q{i:03d}", rng.choice(["science", "art", "sports", "politics"]), stated, int(right)])
    print(f"wrote {out}/openai and {out}/confidence")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample_data/llm")
