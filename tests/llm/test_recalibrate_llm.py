"""``recalibrate`` on an LLM dump: the fitted map's JSON carries the dump's facts (reader, --confidence rule, task),
``apply`` reports them, and a dump read with another --confidence rule is refused with one Error line."""

from __future__ import annotations

import glob
import json

from tests._cli import SAMPLE, run

(MC,) = glob.glob(str(SAMPLE / "llm" / "lm_eval" / "samples_calib_mc_2*.jsonl"))


def test_the_map_carries_the_llm_facts_and_another_rule_is_refused(tmp_path):
    fitted = tmp_path / "map.json"
    r = run("recalibrate", "fit", "--method", "platt", MC, "-o", fitted, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(fitted.read_text())
    assert doc["llm"] == {
        "from": "lm-eval",
        "confidence": "softmax",
        "rule": "p_k = softmax(ll)_k over the choices' log-likelihoods",
        "task": "calib_mc",
    }
    assert json.loads(r.stdout)["files"][0]["input"]["llm"]["confidence"] == "softmax"
    out = tmp_path / "out.csv"
    r = run("recalibrate", "apply", fitted, MC, "--output", out, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["llm"]["confidence"] == "softmax"
    other = tmp_path / "other.csv"
    r = run("recalibrate", "apply", fitted, MC, "--confidence", "length-normalized", "--output", other)
    assert r.exit_code == 2 and not other.exists()
    assert r.stderr == (
        f"Error: {MC}: read with --confidence length-normalized, but {fitted} was fitted on probabilities from "
        "--confidence softmax: pass --confidence softmax, or fit a map on this rule\n"
    )


def test_a_map_of_a_plain_table_has_no_llm_facts(tmp_path):
    fitted = tmp_path / "map.json"
    r = run("recalibrate", "fit", "--method", "platt", str(SAMPLE / "breast_cancer_nb.csv"), "-o", fitted)
    assert r.exit_code == 0, r.stderr
    assert "llm" not in json.loads(fitted.read_text())
