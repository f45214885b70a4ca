"""``calibcli report --segment-cols``: the segment audit on the report's page, end to end.

The audit section holds ``calibcli audit``'s own numbers for the same options (the options come from the audit's
declared group, so both commands take the same flags with the same rules), the page shows the worst ``--top``
segments and the binned diagrams of the worst segments beside the whole population's, and a browser shows it
(headless Chromium, as tests/report/test_report_html.py; skipped with the reason when it is missing).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import _browser
import pytest
from _cli import SAMPLE, run

from calibcli.core.documents import fmt_number

ADS = str(SAMPLE / "ads_segments.csv")
COLS = "country,device,age"
OPTIONS = ("--depth", "2", "--min-segment", "150", "--adjust", "bh", "--top", "4")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report_audit")
    page, data = tmp / "report.html", tmp / "report.json"
    r = run(
        "report",
        ADS,
        "-o",
        page,
        "--json-output",
        data,
        "--n-boot",
        "50",
        "--method",
        "platt",
        "--segment-cols",
        COLS,
        *OPTIONS,
    )
    assert r.exit_code == 0, r.stderr
    return page, json.loads(data.read_text()), r.stderr


def test_the_audit_section_is_the_audit_commands_document(audited):
    _, doc, _ = audited
    theirs = json.loads(run("audit", ADS, "--segment-cols", COLS, *OPTIONS, "--json").stdout)
    section = doc["audit"]
    (entry,) = section["files"]
    assert {k: v for k, v in entry.items() if k != "figure"} == theirs["files"][0]
    assert {k: v for k, v in section["parameters"].items() if k != "diagrams"} == theirs["parameters"]
    assert section["parameters"]["top"] == 4 and section["parameters"]["adjust"] == "bh"
    assert section["parameters"]["min_segment"] == 150
    # the planted interaction is the worst segment, as docs/commands/audit.md says
    assert entry["segments"][0]["definition"] == {"country": "BR", "device": "android"}


def test_the_figure_draws_the_whole_population_beside_the_worst_tested_segments(audited):
    _, doc, _ = audited
    (entry,) = doc["audit"]["files"]
    worst = [s for s in entry["segments"] if s["definition"] and s["tested"]][:3]
    expected = ["(all rows)"] + [", ".join(f"{k}={v}" for k, v in s["definition"].items()) for s in worst]
    assert entry["figure"]["panels"] == expected
    svg = entry["figure"]["svg"]
    assert svg.startswith("<svg") and 'id="a0-' in svg  # ids prefixed: one page's id space
    assert len(re.findall(r'<g id="a0-axes_\d+"', svg)) == 8  # 4 panels, each a diagram and its histogram


def test_page_shows_the_worst_segments_and_the_figure(audited):
    from calibcli.report.html import SVG_IN_PAGE, render_page

    page, doc, stderr = audited
    html = page.read_text()
    assert render_page(doc) == html
    body = re.search(r'<section class="audit card" id="audit-1">(.*?)</section>', html, re.S).group(1)
    rows = re.findall(r'<tr data-segment="(\d+)"', body)
    assert rows == ["1", "2", "3", "4"]  # --top 4, the whole population left out
    assert "country=BR, device=android" in body and 'data-kind="segments"><svg' in body
    embedded = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert embedded["audit"]["files"][0]["figure"]["svg"] == SVG_IN_PAGE  # the SVG is in the page once
    (entry,) = doc["audit"]["files"]
    assert (
        f"  audit of {ADS}: MCE {entry['mce_sigma']:.3g} sigma (p {entry['mce_pvalue']:.3g}, "
        f"{entry['n_segments_tested']} segments tested), worst segment country=BR, device=android"
    ) in stderr


def test_the_verdict_says_a_segment_is_off_when_the_whole_population_looks_calibrated(audited):
    from calibcli.report.html.verdict import AUDIT_RULE, RULE

    _, doc, stderr = audited
    (entry,) = doc["audit"]["files"]
    v = doc["files"][0]["verdict"]
    # the whole population alone would be "calibrated" (SmoothECE very small, T-Cal does not reject) ...
    assert v["size"] == "very small" and v["numbers"]["reject"] is False
    # ... but a planted segment is off by 7 sigma: the verdict says so, and where
    assert v["status"] == "miscalibrated"
    assert v["headline"].startswith(
        f"Miscalibrated in segments: country=BR, device=android is off by {entry['segments'][0]['ecce_r_sigma']:.3g} "
        "sigma, though the whole population's calibration error is very small"
    )
    assert v["numbers"]["audit"] == {
        "mce_sigma": entry["mce_sigma"],
        "mce_pvalue": entry["mce_pvalue"],
        "reject": True,
        "n_segments_tested": entry["n_segments_tested"],
        "worst_segment": {"country": "BR", "device": "android"},
    }
    assert v["sentences"][-1].startswith("Where: the segment audit rejects calibration within segments (MCE 7.3 sigma")
    assert v["sentences"][-1].endswith("the worst is country=BR, device=android, observed/expected 1.33.")
    assert doc["parameters"]["verdict_rule"] == RULE + AUDIT_RULE
    assert f"  {ADS}: {v['headline']}" in stderr


def test_a_calibrated_model_keeps_its_verdict_and_is_told_no_segment_departs(tmp_path):
    import numpy as np

    rng = np.random.default_rng(3)
    n = 20_000
    prob = rng.beta(2.0, 5.0, n)
    label = (rng.random(n) < prob).astype(int)
    country = rng.choice(["FR", "DE", "BR"], n)
    csv = tmp_path / "calibrated.csv"
    csv.write_text(
        "prob,label,country\n" + "".join(f"{p!r},{y},{c}\n" for p, y, c in zip(prob.tolist(), label, country))
    )
    data = tmp_path / "r.json"
    r = run(
        "report",
        csv,
        "-o",
        tmp_path / "r.html",
        "--json-output",
        data,
        "--n-boot",
        "600",
        "--method",
        "platt",
        "--segment-cols",
        "country",
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(data.read_text())
    v, (entry,) = doc["files"][0]["verdict"], doc["audit"]["files"]
    assert entry["mce_pvalue"] > 0.05  # seeded data: no segment departs
    assert v["status"] == "calibrated" and v["headline"].startswith("Calibrated")
    assert v["numbers"]["audit"]["reject"] is False
    assert v["sentences"][-1] == (
        f"Where: no segment departs from calibration beyond chance (MCE {entry['mce_sigma']:.3g} sigma, p-value "
        f"{fmt_number(entry['mce_pvalue'])} > alpha 0.05, {entry['n_segments_tested']} segments tested)."
    )


def test_the_audit_turns_an_uncertain_verdict_but_leaves_a_grouped_entry_alone():
    from calibcli.report.html.verdict import add_audit

    audit = {
        "input": {"path": "a.csv"},
        "mce_sigma": 4.0,
        "mce_pvalue": 0.001,
        "n_segments_tested": 3,
        "segments": [
            {"definition": {}, "tested": True, "ecce_r_sigma": 1.0, "o_e": 1.0},
            {"definition": {"site": "b"}, "tested": True, "ecce_r_sigma": 4.0, "o_e": None},
        ],
    }
    uncertain = {
        "status": "uncertain",
        "headline": "Possibly miscalibrated",
        "size": "moderate",
        "sentences": [],
        "numbers": {},
    }
    doc = {
        "parameters": {"alpha": 0.05},
        "audit": {"files": [audit]},
        "files": [
            {"input": {"path": "a.csv"}, "group": None, "verdict": uncertain},
            {"input": {"path": "a.csv"}, "group": {"g": 1}, "verdict": uncertain},
        ],
    }
    add_audit(doc)
    whole, grouped = (e["verdict"] for e in doc["files"])
    assert whole["status"] == "miscalibrated"
    assert whole["headline"] == (
        "Miscalibrated in segments: site=b is off by 4 sigma, though the whole population's calibration error is "
        "moderate"
    )
    assert whole["sentences"] == [
        "Where: the segment audit rejects calibration within segments (MCE 4 sigma, p-value 0.001 <= alpha 0.05, "
        "3 segments tested); the worst is site=b."
    ]
    assert grouped is uncertain  # the audit is of the whole input, not of the group


def test_without_segment_columns_there_is_no_audit(tmp_path):
    page, data = tmp_path / "r.html", tmp_path / "r.json"
    r = run("report", ADS, "-o", page, "--json-output", data, "--n-boot", "20", "--method", "platt")
    assert r.exit_code == 0, r.stderr
    assert "audit" not in json.loads(data.read_text()) and 'class="audit card"' not in page.read_text()
    assert "audit of" not in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--segment-cols", "country", "--adjust", "sidak"),
            "Error: --adjust is 'sidak': expected one of holm, bh, by, bonferroni, none\n",
        ),
        (("--segment-cols", "country", "--depth", "0"), None),
        (("--segment-cols", "nosuch"), None),
    ],
)
def test_bad_audit_options_are_one_error_line_and_no_page(tmp_path, args, message):
    page = tmp_path / "r.html"
    r = run("report", ADS, "-o", page, "--n-boot", "20", "--method", "platt", *args)
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    if message:
        assert r.stderr == message
    audit = run("audit", ADS, *args)  # the same words as the audit command's
    assert audit.exit_code == 2 and audit.stderr == r.stderr
    assert not page.exists()


@pytest.fixture(scope="module")
def browser():
    why = _browser.missing()
    if why:
        pytest.skip(f"browser test skipped: {why}")
    driver = _browser.chromium()
    yield driver
    driver.quit()


def test_in_chromium(browser, audited, tmp_path):
    from selenium.webdriver.common.by import By

    page, doc, _ = audited
    browser.set_window_size(1200, 900)
    _browser.load(browser, page.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    section = browser.find_element(By.ID, "audit-1")
    assert section.is_displayed()
    (entry,) = doc["audit"]["files"]
    verdict = browser.find_element(By.CSS_SELECTOR, "#entry-1 .verdict")
    assert "miscalibrated" in verdict.get_attribute("class").split()
    assert verdict.find_element(By.CSS_SELECTOR, "[data-field=headline]").text == doc["files"][0]["verdict"]["headline"]
    shown = verdict.find_element(By.CSS_SELECTOR, "[data-field=mce_sigma]")
    assert float(shown.get_attribute("data-value")) == entry["mce_sigma"] and shown.text == "7.3 sigma"
    mce = section.find_element(By.CSS_SELECTOR, "[data-field=mce_sigma]")
    assert float(mce.get_attribute("data-value")) == entry["mce_sigma"]
    cells = section.find_elements(By.CSS_SELECTOR, "table.segments tbody tr td[data-field=ecce_r_sigma]")
    shown = [float(c.get_attribute("data-value")) for c in cells]
    assert shown == [s["ecce_r_sigma"] for s in entry["segments"] if s["definition"]][:4]
    assert section.find_element(By.CSS_SELECTOR, "table.segments tbody tr td").text == "country=BR, device=android"
    figure = section.find_element(By.CSS_SELECTOR, "figure[data-kind=segments] svg")
    size = figure.size
    assert size["width"] > 500 and size["height"] > 100  # drawn, at the section's width
    browser.execute_script("arguments[0].scrollIntoView()", section)
    shot = Path(tmp_path) / "audit.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
