"""Regenerate sample_data/llm/lm_eval/: real lm-evaluation-harness ``--log_samples`` output, offline.

Runs in a separate environment (not calibcli's): ``pip install torch==2.13.0 lm_eval transformers``.
A tiny GPT-2 is randomly initialised (seeded) and saved to a local directory with a byte-level BPE
tokenizer trained on the questions themselves, so nothing is downloaded; the tasks are custom task YAMLs
over local JSON Lines datasets written here:

- ``calib_mc``: 4 choices, metrics acc, acc_norm, brier_score and acc_mutual_info (so each sample logs
  2K log-likelihoods, the last K unconditional);
- ``calib_mc_varied``: 2 to 5 choices per question (top-label), acc and acc_norm.

Then ``lm_eval run --model hf --model_args pretrained=DIR --tasks ... --log_samples --output_path OUT``.
Usage: python scripts/llm/make_lm_eval_samples.py OUT_DIR SEED (default sample_data/llm/lm_eval 0; the second model,
sample_data/llm/lm_eval_model2, is seed 1: two models on the same items, for ``selective --against``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

SUBJECTS = ("algebra", "biology", "history", "geography")
WORDS = (
    "river mountain cell planet number king treaty ocean atom war empire rain prime root gene desert city "
    "island equation bridge star forest element graph"
).split()


def questions(seed: int, n: int, varied: bool) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(2, 5) if varied else 4
        choices = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(k)]
        while len(set(choices)) < k:  # distinct choices (a target given as text must name one)
            choices[rng.randrange(k)] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        subject = SUBJECTS[i % len(SUBJECTS)]
        out.append(
            {
                "id": f"q{i:03d}",
                "subject": subject,
                "question": f"In {subject}, which {rng.choice(WORDS)} comes after the {rng.choice(WORDS)}?",
                "choices": choices,
                "answer": rng.randrange(k),
            }
        )
    return out


TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: answer
metric_list:
{metrics}
"""


def main(out: str, seed: int = 0) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    work = tempfile.mkdtemp(prefix="calibcli-lm-eval-")
    tasks = {"calib_mc": (questions(1, 48, False), True), "calib_mc_varied": (questions(2, 40, True), False)}
    texts = []
    for name, (docs, mutual) in tasks.items():
        data = os.path.join(work, f"{name}.jsonl")
        with open(data, "w") as fh:
            for d in docs:
                fh.write(json.dumps(d) + "\n")
                texts += [d["question"], *d["choices"]]
        metrics = ["acc", "acc_norm"] + (["brier_score", "acc_mutual_info"] if mutual else [])
        lines = "\n".join(f"  - metric: {m}" for m in metrics)
        with open(os.path.join(work, f"{name}.yaml"), "w") as fh:
            fh.write(TASK.format(name=name, data=data, metrics=lines))

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(texts * 4, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<|endoftext|>"]))
    from tokenizers import decoders

    tok.decoder = decoders.ByteLevel()
    model_dir = os.path.join(work, "tiny-gpt2")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", unk_token="<unk>")
    fast.save_pretrained(model_dir)
    torch.manual_seed(seed)  # the model's weights (the questions are the same for every seed)
    config = GPT2Config(vocab_size=len(fast), n_positions=128, n_embd=32, n_layer=2, n_head=2)
    config.eos_token_id = config.bos_token_id = fast.convert_tokens_to_ids("<|endoftext|>")
    GPT2LMHeadModel(config).save_pretrained(model_dir)

    results = os.path.join(work, "out")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [
        os.path.join(os.path.dirname(sys.executable), "lm_eval"),
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model_dir},dtype=float32",
        "--tasks",
        ",".join(tasks),
        "--include_path",
        work,
        "--device",
        "cpu",
        "--batch_size",
        "8",
        "--log_samples",
        "--output_path",
        results,
    ]
    subprocess.run(cmd, check=True, env=env)
    # lm_eval writes OUT/<model name>/results_<date>.json and samples_<task>_<date>.jsonl
    (model_out,) = [os.path.join(results, d) for d in os.listdir(results)]
    os.makedirs(out, exist_ok=True)
    for f in sorted(os.listdir(model_out)):
        target = f
        for stamp_start in ("results_", "samples_"):
            if f.startswith(stamp_start):
                # a fixed date stamp, so that regenerating replaces the files instead of adding new ones
                base, ext = f.rsplit("_", 1)[0], os.path.splitext(f)[1]
                target = f"{base}_2026-12-02T00-00-00.000000{ext}"
        shutil.copy(os.path.join(model_out, f), os.path.join(out, target))
    shutil.rmtree(work)
    print(f"wrote {sorted(os.listdir(out))} to {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample_data/llm/lm_eval", int(sys.argv[2]) if len(sys.argv) > 2 else 0)
