"""``calibcli report`` on regression dumps: the regression page (verdict, curve and PIT histogram, every metric,
the held-out recalibration comparison), its JSON equal to ``calibcli regression --json``'s numbers, the fitted
maps checked against the recalibrators fitted here on the same split, every kind, the page in headless
Chromium, and the error paths (one ``Error:`` line, exit 2, nothing written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import _browser
from _cli import run, run_json

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data" / "regression"
FOREST = str(SAMPLES / "diabetes_forest.csv")
GP = str(SAMPLES / "diabetes_gp.csv")
N_BOOT = ("--n-boot", "100")


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-12, atol=1e-15)


def _report(tmp_path, *args) -> tuple[Path, dict]:
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    page, data = folder / "page.html", folder / "page.json"
    r = run("report", *args, *N_BOOT, "-o", page, "--json-output", data)
    assert r.exit_code == 0, r.stderr
    return page, json.loads(data.read_text())


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """The report of the overconfident forest and the Gaussian process."""
    return _report(tmp_path_factory.mktemp("regression"), FOREST, GP)


def test_the_json_is_calibcli_regressions_numbers(two):
    _, doc = two
    reg = run_json("regression", FOREST, GP, *N_BOOT)
    assert doc["kind"] == "regression" and doc["regression"]["command"] == "regression"
    for mine, theirs in zip(doc["regression"]["files"], reg["files"], strict=True):
        a, b = mine["problems"][0], theirs["problems"][0]
        assert a["metrics"].keys() == b["metrics"].keys()
        for name, m in b["metrics"].items():
            for k in ("estimate", "ci_low", "ci_high"):
                if m[k] is None:
                    assert a["metrics"][name][k] is None
                else:
                    close(a["metrics"][name][k], m[k])
        close(a["calibration_curve"]["observed"], b["calibration_curve"]["observed"])
        close(a["calibration_curve"]["band"]["low"], b["calibration_curve"]["band"]["low"])
        close(a["pit_histogram"]["density"], b["pit_histogram"]["density"])
    for entry, e in zip(doc["files"], doc["regression"]["files"], strict=True):
        assert entry["problem"] == e["problems"][0]  # the page reads the regression document's numbers
    p = doc["parameters"]
    assert (p["n_boot"], p["seed"], p["holdout"], p["alpha"]) == (100, 0, 0.5, 0.05)


def test_the_verdicts(two):
    _, doc = two
    forest, gp = doc["files"]
    v = forest["verdict"]
    assert v["status"] == "miscalibrated" and v["numbers"]["reject"] and v["numbers"]["p_value"] < 0.05
    assert v["headline"] == "Miscalibrated: the calibration error is large and statistically real"
    assert any("90% interval holds 74.7% of the targets" in s and "too narrow (overconfident)" in s for s in v["sentences"])
    assert gp["verdict"]["status"] == "calibrated" and not gp["verdict"]["numbers"]["reject"]
    assert gp["verdict"]["numbers"]["mace"]["estimate"] == gp["problem"]["metrics"]["mace"]["estimate"]


def test_std_scaling_is_fitted_on_the_split_and_widens_the_forests_intervals(two):
    from calibcli.core.resampling import row_hash
    from calibcli.regression import recalibrators

    _, doc = two
    rec = doc["files"][0]["recalibration"]
    frame = pd.read_csv(FOREST)
    n = len(frame)
    order = np.argsort(row_hash(0, np.arange(n)), kind="stable")
    fit = np.sort(order[: round(0.5 * n)])
    assert rec["split"] == {"holdout": 0.5, "seed": 0, "rows_fit": len(fit), "rows_test": n - len(fit)}
    expected = recalibrators.StdScaling.fit(frame.y.to_numpy()[fit], frame["mean"].to_numpy()[fit], frame["std"].to_numpy()[fit])
    rows = {r["method"]: r for r in rec["rows"]}
    assert rows["std-scaling"]["fitted"]["factor"] == expected.factor > 1  # the forest's std is too small
    assert set(rows) == {"uncalibrated", "std-scaling", "isotonic-pit", "conformal"}
    before, after = rows["uncalibrated"]["metrics"], rows["std-scaling"]["metrics"]
    assert abs(after["picp_0.9"]["estimate"] - 0.9) < abs(before["picp_0.9"]["estimate"] - 0.9)
    assert after["mace"]["estimate"] < before["mace"]["estimate"]
    assert rec["best"]["method"] != "uncalibrated" and rec["ranked"][0] == rec["best"]["method"]
    gaps = [abs(rows[m]["metrics"]["picp_0.9"]["estimate"] - 0.9) for m in rec["ranked"]]  # the ranking's rule
    assert gaps == sorted(gaps)
    assert rows["conformal"]["kind"] == "intervals" and rows["isotonic-pit"]["kind"] == "quantiles"
    assert "Recalibration: " in doc["files"][0]["verdict"]["sentences"][-1]


@pytest.mark.parametrize(
    "name, fitted, not_fitted",
    [
        ("diabetes_quantiles.csv", {"conformal"}, {"std-scaling", "isotonic-pit"}),
        ("diabetes_conformal.csv", {"conformal"}, {"std-scaling", "isotonic-pit"}),
        ("diabetes_ensemble.csv", set(), {"std-scaling", "isotonic-pit", "conformal"}),
    ],
)
def test_every_kind_gets_its_page(tmp_path, name, fitted, not_fitted):
    methods = ("--method", "std-scaling", "--method", "isotonic-pit", "--method", "conformal")
    page, doc = _report(tmp_path, str(SAMPLES / name), *methods)
    (entry,) = doc["files"]
    rec = entry["recalibration"]
    assert {r["method"] for r in rec["rows"]} == {"uncalibrated", *fitted}
    assert {r["method"] for r in rec["not_fitted"]} == not_fitted
    assert entry["verdict"]["status"] in ("calibrated", "miscalibrated", "uncertain")
    html = page.read_text()
    assert html.count("<svg") == 1 and entry["verdict"]["headline"] in html
    if name == "diabetes_conformal.csv":  # no PIT: the coverage's binomial test decides
        assert entry["verdict"]["numbers"]["test"] == "binomial coverage"
        assert entry["figure"]["panels"] == ["calibration curve"]


def test_the_default_methods_are_the_regression_ones(tmp_path):
    _, doc = _report(tmp_path, GP)
    assert doc["parameters"]["methods"] == ["std-scaling", "isotonic-pit", "conformal"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("--segment-cols", "y"), "--segment-cols audits a classifier's segments"),
        (("--method", "platt"), "--method platt is a classifier's"),
        (("--level", "1.5"), "--level 1.5 is outside (0, 1)"),
        (("--n-bins", "20"), "--n-bins 20 was given with a regression dump, but --n-bins applies to classifier pages"),
        (("--mode", "top-label"), "--mode top-label was given with a regression dump"),
        (("--strategy", "quantile"), "--strategy quantile was given with a regression dump"),
        (("--class-weights", "prior"), "--class-weights prior was given with a regression dump"),
    ],
)
def test_bad_options_are_one_error_line_and_nothing_is_written(tmp_path, args, message):
    out = tmp_path / "out"
    out.mkdir()
    r = run("report", GP, *args, "-o", out / "page.html", "--json-output", out / "page.json")
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], r.stderr
    assert list(out.iterdir()) == []


def test_bad_rows_are_one_error_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("mean,std,y\n1,0.5,1\n2,0,2\n" * 10)
    out = tmp_path / "out"
    out.mkdir()
    r = run("report", bad, "-o", out / "page.html")
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and "std not positive" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and list(out.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# In a real browser


@pytest.fixture(scope="module")
def browser():
    why = _browser.missing()
    if why:
        pytest.skip(f"browser test skipped: {why}")
    driver = _browser.chromium()
    yield driver
    driver.quit()


def test_in_chromium(browser, two):
    from selenium.webdriver.common.by import By

    from calibcli.core.documents import fmt_number

    page, doc = two
    _browser.load(browser, page.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    data = browser.execute_script("return JSON.parse(document.getElementById('report-data').textContent)")
    assert data["regression"]["files"][0]["problems"][0]["metrics"] == doc["regression"]["files"][0]["problems"][0]["metrics"]
    for entry in doc["files"]:
        section = browser.find_element(By.ID, entry["id"])
        v = entry["verdict"]
        assert section.find_element(By.CSS_SELECTOR, "[data-field=headline]").text == v["headline"]
        assert [li.text for li in section.find_elements(By.CSS_SELECTOR, "[data-field=sentence]")] == v["sentences"]
        cell = section.find_element(By.CSS_SELECTOR, ".verdict [data-field=mace]")
        assert float(cell.get_attribute("data-value")) == v["numbers"]["mace"]["estimate"]
        assert cell.text == fmt_number(v["numbers"]["mace"]["estimate"])
        figure = section.find_element(By.CSS_SELECTOR, "figure.diagram[data-kind=regression] svg")
        assert figure.size["width"] > 300
        methods = [r.get_attribute("data-method") for r in section.find_elements(By.CSS_SELECTOR, "table.recalibration tbody tr")]
        assert methods == entry["recalibration"]["ranked"]
        row = section.find_element(By.CSS_SELECTOR, "table.metrics tr[data-metric=crps]")
        assert row.find_element(By.CSS_SELECTOR, "td.n").text == fmt_number(entry["problem"]["metrics"]["crps"]["estimate"])
    # the summary sorts by MACE on a header click
    header = browser.find_element(By.XPATH, "//table[@id='summary-table']//th[normalize-space()='MACE']")
    header.click()
    order = browser.execute_script(
        "return Array.from(document.querySelectorAll('#summary-table tbody tr')).map(r => r.dataset.entry)"
    )
    assert order == [e["id"] for e in sorted(doc["files"], key=lambda e: e["verdict"]["numbers"]["mace"]["estimate"])]
    # the embedded JSON has no SVG text (it is in the page once)
    html = page.read_text()
    body = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S).group(1)
    assert "<svg" not in body


@pytest.mark.parametrize(
    "header, message",
    [
        # neither reader recognises the columns: the classifier reader's error, as before
        ("alpha,beta,y", "no probability column recognised"),
        # a probability column beside mean/std: the classifier's file, whose labels 0.5 are no class
        ("prob,mean,std,y", "is not one of the 2 classes"),
    ],
)
def test_a_file_that_is_no_regression_dump_gets_the_classifier_readers_error(tmp_path, header, message):
    path = tmp_path / "d.csv"
    path.write_text(header + "\n" + ",".join(["0.2"] * (len(header.split(",")) - 1) + ["0.5"]) + "\n")
    folder = tmp_path / "out"
    folder.mkdir()
    r = run("report", path, *N_BOOT, "-o", folder / "page.html")
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], r.stderr
    assert list(folder.iterdir()) == []
