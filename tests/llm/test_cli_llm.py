"""``--from`` on every command, told from the content, groups by doc fields, compare paired by item, and every
other reader on its bundled sample."""

from __future__ import annotations

import glob
import json

import pytest

from tests._cli import SAMPLE, run, run_json

LLM = SAMPLE / "llm"
LM_EVAL = str(LLM / "lm_eval")
(MC,) = glob.glob(str(LLM / "lm_eval" / "samples_calib_mc_2*.jsonl"))
BATCH = str(LLM / "openai" / "batch_output.jsonl")
CHAT = str(LLM / "openai" / "chat_completions.jsonl")
ANSWERS = str(LLM / "openai" / "answers.csv")
INSPECT = str(LLM / "inspect" / "calib_mc_inspect.eval")
INSPECT_JSON = str(LLM / "inspect" / "calib_mc_inspect.json.gz")
HELM = str(LLM / "helm")
STATED = str(LLM / "confidence" / "simpleqa_judged.csv")


def test_a_directory_of_samples_is_one_input_per_task_told_from_the_content():
    doc = run_json("ece", LM_EVAL, "--n-boot", "0")
    assert [f["input"]["llm"]["task"] for f in doc["files"]] == ["calib_mc", "calib_mc_varied"]
    first = doc["files"][0]
    assert first["input"]["llm"]["agrees_with_lm_eval"] is True
    assert first["input"]["llm"]["source"].startswith("lm-evaluation-harness brier_score")
    assert first["multiclass_scores"]["brier_score_multiclass"]["estimate"] == pytest.approx(
        first["input"]["llm"]["lm_eval_results"]["brier_score,none"], rel=1e-12
    )


@pytest.mark.parametrize("command", ["ece", "smece", "tcal", "selective"])
def test_every_command_reads_a_dump_with_from(command):
    doc = run_json(command, "--from", "lm-eval", MC, "--n-boot", "0" if command != "tcal" else "20")
    assert doc["files"][0]["input"]["llm"]["from"] == "lm-eval"


def test_audit_and_groups_by_doc_fields():
    doc = run_json("ece", MC, "--group-by", "doc.subject", "--n-boot", "0")
    assert sorted(f["group"]["doc.subject"] for f in doc["files"]) == ["algebra", "biology", "geography", "history"]
    r = run("audit", MC, "--segment-cols", "doc.subject", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["files"][0]["input"]["llm"]["task"] == "calib_mc"


def test_diagram_and_report(tmp_path):
    out = tmp_path / "d.png"
    r = run("diagram", MC, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert out.stat().st_size > 0
    page = tmp_path / "r.html"
    r = run("report", MC, "-o", page, "--n-boot", "50")
    assert r.exit_code == 0, r.stderr
    assert "calib_mc" in page.read_text()


def test_compare_pairs_two_runs_by_item_key():
    r = run("compare", MC, MC, "--n-boot", "50", "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    pairing = doc["parameters"]["pairing"]
    assert pairing["paired"] and pairing["by"] == "id" and pairing["id_column"] == "item"


def test_openai_batch_and_chat_completions():
    doc = run_json("selective", BATCH, "--answers", ANSWERS, "--n-boot", "0")
    llm = doc["files"][0]["input"]["llm"]
    assert llm["from"] == "openai" and llm["confidence"] == "letters"
    assert llm["failed_requests_skipped"] == 1 and llm["items"] == 39
    doc = run_json("ece", CHAT, "--answers", ANSWERS, "--confidence", "sequence", "--n-boot", "0")
    assert doc["files"][0]["input"]["llm"]["items"] == 20


def test_inspect_logs_in_both_formats_agree():
    a = run_json("selective", INSPECT, "--n-boot", "0")
    b = run_json("selective", INSPECT_JSON, "--n-boot", "0")
    ma, mb = (d["files"][0]["problems"][0]["metrics"] for d in (a, b))
    assert ma == mb
    llm = a["files"][0]["input"]["llm"]
    assert llm["accuracy"] == llm["inspect_results"]["choice.accuracy"]  # Inspect's own accuracy


def test_helm_run_directory_ties_are_one_block():
    doc = run_json("selective", HELM, "--n-boot", "0")
    entry = doc["files"][0]
    assert entry["input"]["llm"]["from"] == "helm"
    assert entry["ties"]["tie_blocks"] == 1 and entry["ties"]["rows_in_ties"] == entry["n"]


def test_stated_confidences_in_percent():
    doc = run_json("selective", "--from", "confidence", STATED, "--confidence-scale", "percent", "--n-boot", "0")
    assert doc["files"][0]["input"]["llm"]["scale"] == "percent (0-100)"


def test_selective_is_invariant_to_batches_and_seeded(tmp_path):
    a = run_json("selective", MC, "--n-boot", "100", "--seed", "3")
    b = run_json("selective", MC, "--n-boot", "100", "--seed", "3", "--batch-rows", "7")
    ma, mb = (d["files"][0]["problems"][0]["metrics"] for d in (a, b))
    for name, m in ma.items():
        for key in ("estimate", "ci_low", "ci_high"):
            if m[key] is not None:
                assert mb[name][key] == pytest.approx(m[key], rel=1e-12, abs=1e-15), (name, key)


def test_selective_gates_and_diagram(tmp_path):
    r = run("selective", MC, "--n-boot", "0", "--fail-above", "0.1")
    assert r.exit_code == 1
    assert "aurc" in r.stderr
    r = run("selective", MC, "--n-boot", "0", "--metric", "accuracy", "--fail-below", "0.2")
    assert r.exit_code == 0, r.stderr
    out = tmp_path / "rc.png"
    r = run("selective", MC, INSPECT, "--n-boot", "0", "--diagram", out, "--format", "csv")
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert r.stdout.startswith("file,group,problem,metric")


def test_selective_on_a_classifier_table():
    doc = run_json("selective", str(SAMPLE / "digits_nb.csv"), "--n-boot", "0")
    metrics = doc["files"][0]["problems"][0]["metrics"]
    assert 0 < metrics["aurc"]["estimate"] < 1 and doc["files"][0]["mode"] == "top-label"


def test_the_report_page_says_what_a_threshold_buys(tmp_path):
    page, data = tmp_path / "r.html", tmp_path / "r.json"
    r = run("report", INSPECT, "-o", page, "--json-output", data, "--n-boot", "200")
    assert r.exit_code == 0, r.stderr
    html = page.read_text()
    assert "What a confidence threshold buys" in html and "coverage at risk 0.1" in html
    doc = json.loads(data.read_text())
    assert doc["selective"]["files"][0]["problems"][0]["metrics"]["coverage_at_risk_0.1"]["estimate"] > 0
    r = run("report", str(SAMPLE / "breast_cancer_nb.csv"), "-o", tmp_path / "plain.html", "--n-boot", "200")
    assert r.exit_code == 0 and "What a confidence threshold buys" not in (tmp_path / "plain.html").read_text()


MODEL2 = glob.glob(str(LLM / "lm_eval_model2" / "samples_calib_mc_2*.jsonl"))[0]


def test_selective_against_a_baseline_pairs_items_by_key():
    doc = run_json("selective", MODEL2, "--against", MC, "--n-boot", "100")
    entry = doc["files"][0]
    own, diff = (p["metrics"] for p in entry["problems"])
    base = run_json("selective", MC, "--n-boot", "0")["files"][0]["problems"][0]["metrics"]
    for name in ("accuracy", "aurc", "e_aurc", "augrc", "auroc", "coverage_at_risk_0.2"):
        assert diff[name]["estimate"] == pytest.approx(own[name]["estimate"] - base[name]["estimate"], abs=1e-12)
        assert diff[name]["ci_low"] <= diff[name]["estimate"] <= diff[name]["ci_high"]
    # the same model against itself: every difference 0, every replicate too
    same = run_json("selective", MC, "--against", MC, "--n-boot", "50")["files"][0]["problems"][1]["metrics"]
    assert all(
        m["estimate"] == 0 and m["ci_low"] == 0 and m["ci_high"] == 0
        for m in same.values()
        if m["estimate"] is not None
    )


def test_against_needs_the_same_items():
    (varied,) = glob.glob(str(LLM / "lm_eval" / "samples_calib_mc_varied_*.jsonl"))
    r = run("selective", MODEL2, "--against", varied, "--n-boot", "0")
    assert r.exit_code == 2
    assert "the items differ from" in r.stderr and r.stderr.count("\n") == 1


def test_the_dask_engine_gives_the_local_numbers():
    local = run_json("selective", MC, "--n-boot", "50")
    dask = run_json("selective", MC, "--n-boot", "50", "--engine", "dask", "--workers", "1")
    ml, md = (d["files"][0]["problems"][0]["metrics"] for d in (local, dask))
    for name, m in ml.items():
        for key in ("estimate", "ci_low", "ci_high"):
            if m[key] is not None:
                assert md[name][key] == pytest.approx(m[key], rel=1e-12, abs=1e-15), (name, key)
