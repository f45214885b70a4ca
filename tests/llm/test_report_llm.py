"""``calibcli report`` on the random GPT-2's lm-eval directory: the default methods' temperature scaling has no
fit on the varied-choices task (its top-label layout: confidences near 0.72 for an accuracy of 0.3, so on the
20 fit rows scaling towards 1/2 only ever helps), so the page says it was not fitted and ranks the others; a
method asked for by ``recalibrate evaluate`` still fails with its Error line naming what to use."""

from __future__ import annotations

import glob
import json

from tests._cli import SAMPLE, run

LLM = SAMPLE / "llm"
(VARIED,) = glob.glob(str(LLM / "lm_eval" / "samples_calib_mc_varied_*.jsonl"))


def test_the_report_on_the_random_gpt2_directory_runs_with_the_default_methods(tmp_path):
    page, data = tmp_path / "r.html", tmp_path / "r.json"
    r = run("report", str(LLM / "lm_eval"), "-o", page, "--json-output", data, "--n-boot", "50")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(data.read_text())
    varied = next(e for e in doc["files"] if e["input"]["path"] == VARIED)
    recal = varied["recalibration"]
    assert [s["method"] for s in recal["not_fitted"]] == ["temperature"]
    assert "T grows" in recal["not_fitted"][0]["reason"]
    assert {row["method"] for row in recal["rows"]} == {"uncalibrated", "platt", "isotonic", "histogram", "beta"}
    assert 'class="note not-fitted" data-method="temperature"' in page.read_text()
    assert "Warning: temperature: not fitted" in r.stderr
    other = next(e for e in doc["files"] if e["input"]["path"] != VARIED)
    assert other["recalibration"]["not_fitted"] == []


def test_temperature_asked_for_alone_is_one_error_line_naming_what_to_use():
    r = run("recalibrate", "evaluate", VARIED, "--holdout", "0.5", "--method", "temperature", "--n-boot", "10")
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error: temperature scaling has no minimiser")
    assert r.stderr.rstrip().endswith("use --method platt, isotonic or histogram")
    r = run("report", VARIED, "-o", "unused.html", "--method", "temperature", "--n-boot", "10")
    assert r.exit_code == 2 and r.stderr.splitlines()[-1].startswith("Error: no recalibration method could be fitted")
