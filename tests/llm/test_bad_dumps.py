"""Bad input: every malformed dump is one ``Error:`` line naming the file (and line), exit 2, nothing written."""

from __future__ import annotations

import glob
import json
import shutil

import pytest

from tests._cli import SAMPLE, run

LLM = SAMPLE / "llm"
(MC,) = glob.glob(str(LLM / "lm_eval" / "samples_calib_mc_2*.jsonl"))
ANSWERS = str(LLM / "openai" / "answers.csv")


def _records():
    with open(MC) as fh:
        return [json.loads(line) for line in fh]


def _write(tmp_path, records, name="samples_broken_2026-01-01T00-00-00.000000.jsonl", tail=""):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return str(path)


def _error(r, *parts):
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def test_a_truncated_last_line_names_the_file_and_line(tmp_path):
    records = _records()[:3]
    path = _write(tmp_path, records, tail=json.dumps(_records()[3])[:50])
    out = tmp_path / "out.json"
    line = _error(run("ece", path, "--output", out), path, "line 4 is not valid JSON", "truncated?")
    assert "expected one JSON object per line" in line
    assert not out.exists()


def test_fewer_log_likelihoods_than_choices(tmp_path):
    records = _records()[:2]
    records[1]["filtered_resps"] = records[1]["filtered_resps"][:3]
    _error(run("selective", _write(tmp_path, records)), "line 2: 3 log-likelihoods for 8 requests")


def test_a_target_out_of_range(tmp_path):
    records = _records()[:2]
    records[0]["target"] = "7"
    _error(run("ece", _write(tmp_path, records)), "line 1: 'target' is 7, out of range for 4 choices")


def test_missing_fields(tmp_path):
    records = _records()[:2]
    del records[1]["filtered_resps"], records[1]["resps"]
    _error(run("ece", "--from", "lm-eval", _write(tmp_path, records)), "line 2: is not an lm-evaluation-harness")
    records = _records()[:1]
    del records[0]["target"]
    _error(run("ece", _write(tmp_path, records)), "line 1: no field 'target'")


def test_a_log_likelihood_that_is_not_a_number(tmp_path):
    records = _records()[:1]
    records[0]["filtered_resps"][2][0] = "-abc"
    _error(run("ece", _write(tmp_path, records)), "line 1: the log-likelihood of choice 2 is '-abc'")


def test_generated_text_has_no_probabilities(tmp_path):
    records = _records()[:1]
    records[0]["filtered_resps"] = ["the answer is B"]
    records[0].pop("arguments")
    _error(run("ece", _write(tmp_path, records)), "generate_until task has no per-choice probabilities")


@pytest.mark.parametrize(
    "args,found",
    [
        (["--from", "csv"], "--from is 'csv': expected one of lm-eval, helm, openai, inspect, confidence"),
        (["--confidence", "entropy"], "--confidence is 'entropy': expected one of softmax"),
        (["--confidence", "letters"], "--confidence letters does not apply to lm-eval dumps"),
    ],
)
def test_unknown_or_wrong_options(args, found):
    _error(run("ece", MC, *args), found)


def test_mutual_info_needs_the_unconditional_entries():
    (varied,) = glob.glob(str(LLM / "lm_eval" / "samples_calib_mc_varied_*.jsonl"))
    _error(run("ece", varied, "--confidence", "mutual-info"), "line 1: --confidence mutual-info needs 2K")


def test_wrong_from_for_the_file():
    _error(run("ece", "--from", "helm", MC), "is not a HELM run directory")
    _error(run("ece", "--from", "lm-eval", str(SAMPLE / "breast_cancer_nb.csv")), "line 1 is not valid JSON")
    _error(run("ece", "--from", "inspect", MC), "is not an Inspect eval log")


def test_openai_needs_its_answers_and_valid_letters(tmp_path):
    batch = str(LLM / "openai" / "batch_output.jsonl")
    _error(run("ece", batch), "pass --answers FILE")
    bad = tmp_path / "answers.csv"
    bad.write_text(open(ANSWERS).read().replace("request-3,B", "request-3,Z").replace("request-3,A", "request-3,Z"))
    text = open(bad).read()
    if "request-3,Z" in text:
        _error(run("ece", batch, "--answers", bad), "'Z' for 'request-3' is not one of the letters ABCD")


def test_a_stated_confidence_above_100(tmp_path):
    path = tmp_path / "judged.csv"
    path.write_text("id,confidence,correct\na,80,1\nb,101,0\n")
    _error(run("ece", "--from", "confidence", path, "--confidence-scale", "percent"), "row 2: 'confidence' is 101")
    _error(run("ece", "--from", "confidence", path), "row 1: 'confidence' is 80", "--confidence-scale percent")
    _error(run("ece", "--from", "confidence", path, "--confidence-scale", "tenths"), "--confidence-scale is 'tenths'")
    path.write_text("id,confidence,correct\na,0.8,maybe\n")
    _error(run("ece", "--from", "confidence", path), "row 1: 'correct' is 'maybe'")


def test_an_inspect_log_without_logprobs(tmp_path):
    import gzip

    doc = json.load(gzip.open(LLM / "inspect" / "calib_mc_inspect.json.gz"))
    for sample in doc["samples"]:
        sample["output"]["choices"][0]["logprobs"] = None
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    _error(run("selective", path), "samples[0]: the model output has no logprobs")


def test_compressed_dumps_are_read(tmp_path):
    import gzip

    import zstandard

    gz = tmp_path / "samples_calib_mc_2026-12-02T00-00-00.000000.jsonl.gz"
    gz.write_bytes(gzip.compress(open(MC, "rb").read()))
    zst = tmp_path / "samples_calib_mc_2026-12-02T00-00-00.000000.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(open(MC, "rb").read()))
    shutil.copy(glob.glob(str(LLM / "lm_eval" / "results_*.json"))[0], tmp_path)
    for path in (gz, zst):
        r = run("ece", path, "--n-boot", "0", "--json")
        assert r.exit_code == 0, r.stderr
        assert json.loads(r.stdout)["files"][0]["input"]["llm"]["agrees_with_lm_eval"] is True


def test_damaged_compressed_dumps(tmp_path):
    damaged = {".jsonl.gz": b"\x1f\x8b\x08\x00garbage" * 10, ".jsonl.zst": b"\x28\xb5\x2f\xfdgarbage" * 10}
    for suffix, data in damaged.items():
        path = tmp_path / f"samples_x_2026-01-01T00-00-00.000000{suffix}"
        path.write_bytes(data)
        _error(run("ece", "--from", "lm-eval", path), str(path), "cannot be read as UTF-8 JSON Lines")
