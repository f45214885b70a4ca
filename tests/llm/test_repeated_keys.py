"""Repeated doc_hash keys (two equal documents in one task) are numbered in doc_id order, not reading order: a
shuffled samples file gives every document the key the ordered file gives it, by the columnar reader and the
line reader alike, so two models' answers pair by the same items whichever order either file's rows come in."""

from __future__ import annotations

import glob
import json

import numpy as np
import pytest

from calibcli.llm import lm_eval
from calibcli.llm.items import unique_keys
from tests._cli import SAMPLE, run_json

(MC,) = glob.glob(str(SAMPLE / "llm" / "lm_eval" / "samples_calib_mc_2*.jsonl"))


def _with_repeats(tmp_path, name: str, shuffle_seed: int | None):
    """The sample file plus copies of its first three documents (the same doc and doc_hash, new doc_ids, other
    log-likelihoods), its lines shuffled when ``shuffle_seed`` is given."""
    lines = [json.loads(line) for line in open(MC)]
    n = len(lines)
    extra = []
    for copy in range(2):
        for record in lines[:3]:
            twin = json.loads(json.dumps(record))
            twin["doc_id"] = n + 3 * copy + record["doc_id"]
            twin["filtered_resps"] = [[str(float(v) - 0.7 * (k + 1) * (copy + 1)), g] for k, (v, g) in
                                      enumerate(record["filtered_resps"])]
            twin["resps"] = [[pair] for pair in twin["filtered_resps"]]
            extra.append(twin)
    records = lines + extra
    if shuffle_seed is not None:
        records = [records[i] for i in np.random.default_rng(shuffle_seed).permutation(len(records))]
    path = tmp_path / name / "samples_calib_mc_2026-12-02T00-00-00.000000.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _by_key(items):
    table = items.table()
    keys = table["item"].to_pylist()
    doc_ids = table["doc_id"].to_pylist()
    probs = np.column_stack([table[c].to_numpy() for c in table.column_names if c.startswith("p_")])
    return {k: (d, tuple(p)) for k, d, p in zip(keys, doc_ids, probs, strict=True)}


@pytest.mark.parametrize("reader", ["columns", "lines"])
def test_a_shuffled_file_numbers_its_repeats_as_the_ordered_one(tmp_path, reader):
    def read(path):
        if reader == "lines":
            return lm_eval._read_lines(path, lm_eval.rule_for("lm-eval", None), "calib_mc", " ")
        items = lm_eval.read(path)
        assert not isinstance(items.keys, list)  # (the columnar reader)
        return items

    ordered = _by_key(read(_with_repeats(tmp_path, "ordered", None)))
    assert sum("#" in k for k in ordered) == 6  # three documents logged three times each
    for seed in (1, 2, 3):
        assert _by_key(read(_with_repeats(tmp_path, f"shuffled{seed}", seed))) == ordered
    # the numbers follow doc_id: the smallest doc_id keeps the bare key
    for key, (doc_id, _) in ordered.items():
        if "#" in key:
            assert ordered[key.split("#")[0]][0] < doc_id


def test_numbering_follows_order_by_and_reading_order_among_equals():
    assert unique_keys(["a", "b", "a", "a"], [5, 1, 2, 9]) == ["a#2", "b", "a", "a#3"]
    assert unique_keys(["a", "a", "a"], [3, 3, None]) == ["a", "a#2", "a#3"]
    assert unique_keys(["a", "a"]) == ["a", "a#2"]


def test_selective_against_a_shuffled_copy_pairs_every_item_with_itself(tmp_path):
    ordered = _with_repeats(tmp_path, "ordered", None)
    shuffled = _with_repeats(tmp_path, "shuffled", 4)
    doc = run_json("selective", shuffled, "--against", ordered, "--n-boot", "30")
    diff = doc["files"][0]["problems"][1]["metrics"]
    assert all(m["estimate"] == 0 and m["ci_low"] == 0 and m["ci_high"] == 0 for m in diff.values()
               if m["estimate"] is not None)
