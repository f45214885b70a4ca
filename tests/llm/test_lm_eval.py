"""lm-evaluation-harness's own files (sample_data/llm/lm_eval, written by lm_eval --log_samples): accuracy and the
option-level Brier score equal lm-eval's reported aggregates, every probability is the softmax of the logged
log-likelihoods, and the argmax of each rule is lm-eval's per-sample acc, acc_norm and acc_mutual_info."""

from __future__ import annotations

import glob
import json

import numpy as np
import pytest

from calibcli.llm import lm_eval
from calibcli.llm.confidence import softmax
from tests._cli import SAMPLE

LM_EVAL = SAMPLE / "llm" / "lm_eval"
(MC,) = glob.glob(str(LM_EVAL / "samples_calib_mc_2*.jsonl"))
(VARIED,) = glob.glob(str(LM_EVAL / "samples_calib_mc_varied_*.jsonl"))
(RESULTS,) = glob.glob(str(LM_EVAL / "results_*.json"))


def _lines(path):
    with open(path) as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.parametrize("path,task", [(MC, "calib_mc"), (VARIED, "calib_mc_varied")])
def test_accuracy_and_brier_equal_lm_evals_reported_numbers(path, task):
    reported = json.load(open(RESULTS))["results"][task]
    items = lm_eval.read(path)
    scores = items.scores()
    assert items.facts["task"] == task
    assert abs(scores["accuracy"] - reported["acc,none"]) <= 1e-9
    if "brier_score,none" in reported:
        assert abs(scores["brier_score"] - reported["brier_score,none"]) <= 1e-9
    assert items.facts["lm_eval_results"]["acc,none"] == reported["acc,none"]


def test_every_probability_is_the_softmax_of_the_logged_log_likelihoods():
    items = lm_eval.read(MC)
    for record, p, target in zip(_lines(MC), items.probs, items.targets, strict=True):
        lls = np.array([float(ll) for ll, _ in record["filtered_resps"]])
        k = len(record["doc"]["choices"])
        assert len(lls) == 2 * k  # acc_mutual_info: the last K unconditional
        np.testing.assert_allclose(p, softmax(lls[:k]), rtol=1e-15, atol=1e-16)
        assert target == int(record["target"])


@pytest.mark.parametrize(
    "rule,metric,path",
    [
        ("softmax", "acc", MC),
        ("length-normalized", "acc_norm", MC),
        ("mutual-info", "acc_mutual_info", MC),
        ("softmax", "acc", VARIED),
        ("length-normalized", "acc_norm", VARIED),
    ],
)
def test_each_rules_argmax_is_lm_evals_per_sample_metric(rule, metric, path):
    items = lm_eval.read(path, rule)
    logged = [r[metric] for r in _lines(path)]
    hits = [float(int(np.argmax(p)) == t) for p, t in zip(items.probs, items.targets, strict=True)]
    assert hits == logged
    assert items.rule.name == rule


def test_doc_fields_are_columns_and_doc_hash_the_key():
    items = lm_eval.read(MC)
    records = _lines(MC)
    assert list(items.table()["item"].to_pylist()) == [r["doc_hash"] for r in records]
    assert items.table()["doc.subject"].to_pylist() == [r["doc"]["subject"] for r in records]
    assert "doc.choices" not in items.columns  # lists are left out
    table = items.table()
    assert table.column_names[:5] == ["p_0", "p_1", "p_2", "p_3", "label"]
    varied = lm_eval.read(VARIED).table()
    assert varied.column_names[:2] == ["confidence", "label"]  # per-item choice counts: top-label


@pytest.mark.parametrize("path", [MC, VARIED])
@pytest.mark.parametrize("rule", ["softmax", "length-normalized", "mutual-info"])
def test_the_columnar_and_the_line_readers_agree(path, rule):
    from calibcli.llm.confidence import rule_for
    from calibcli.llm.lm_eval_columns import read_columns
    from calibcli.llm.texts import first_record

    first = first_record(path)
    mutual = len(first["filtered_resps"]) == 2 * len(first["doc"]["choices"])
    if rule == "mutual-info" and not mutual:
        return
    fast = read_columns(path, first, rule=rule_for("lm-eval", rule), task="t", delimiter=" ", mutual=mutual)
    slow = lm_eval._read_lines(path, rule_for("lm-eval", rule), "t", " ")
    if path == VARIED:
        assert fast is None  # per-document choice counts: the line reader
        return
    assert fast is not None
    np.testing.assert_allclose(fast.probs, np.vstack(slow.probs), rtol=1e-14, atol=1e-16)
    assert list(fast.targets) == slow.targets
    assert fast.keys.to_pylist() == slow.keys
    assert fast.columns["doc.subject"].to_pylist() == slow.columns["doc.subject"]
    assert fast.table().column_names[:6] == slow.table().column_names[:6]


def test_only_the_rules_that_use_the_choices_texts_read_them():
    """The requests' texts (``arguments``) are read only for the length-normalized and mutual-information rules:
    softmax needs none of them, and parsing them into columns was a fifth of a file's read."""
    from calibcli.llm.lm_eval_columns import _schema
    from calibcli.llm.texts import first_record

    first = first_record(MC)
    assert "arguments" in _schema(first).names
    assert "arguments" not in _schema(first, requests=False).names
    assert _schema(first, requests=False).names == [n for n in _schema(first).names if n != "arguments"]
