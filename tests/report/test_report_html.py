"""``calibcli report``: one self-contained HTML page rendered from the report's JSON document.

The browser test loads the page in headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium; skipped with the reason when they are missing), checks the console, the verdict and
numbers through the DOM against the embedded JSON, the sortable summary, the phone layout and dark mode,
and takes screenshots at desktop and phone widths. The other tests need no browser.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _cli import BINARY, SAMPLE, run
import _browser

N_BOOT = "100"


def _calibrated(path: Path, n: int, seed: int, shift: float = 0.0, values=None) -> str:
    """Predictions z ~ U(0, 1) (or drawn from ``values``) and labels y ~ Bernoulli(z + shift): calibrated when
    shift is 0."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(0.0, 1.0, n) if values is None else rng.choice(values, n)
    y = (rng.uniform(size=n) < np.clip(z + shift, 0.0, 1.0)).astype(int)
    pd.DataFrame({"prob": z, "label": y}).to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """A report of three files (the sample, a calibrated and a miscalibrated model) and its JSON."""
    tmp = tmp_path_factory.mktemp("report")
    files = [
        BINARY,
        _calibrated(tmp / "calibrated.csv", 3000, 1),
        _calibrated(tmp / "shifted.csv", 600, 2, 0.2, [0.1, 0.3, 0.5, 0.7]),
    ]
    page, data = tmp / "report.html", tmp / "report.json"
    r = run(
        "report",
        *files,
        "-o",
        page,
        "--json-output",
        data,
        "--n-boot",
        N_BOOT,
        "--method",
        "platt",
        "--method",
        "isotonic",
        "--method",
        "temperature",
    )
    assert r.exit_code == 0, r.stderr
    return files, page, json.loads(data.read_text())


def _embedded(html: str) -> dict:
    body = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(body)


def test_page_is_rendered_from_the_json_document(multi):
    from calibcli.report.html import SVG_IN_PAGE, render_page

    _, page, doc = multi
    html = page.read_text()
    assert render_page(doc) == html  # the page is a function of the JSON document alone
    embedded = _embedded(html)
    assert embedded["files"][0]["verdict"] == doc["files"][0]["verdict"]
    assert embedded["files"][0]["diagrams"]["binned"] == SVG_IN_PAGE  # the SVG is in the page once
    assert doc["files"][0]["diagrams"]["binned"].startswith("<svg")


def test_the_templates_compiled_code_is_kept_and_the_page_is_the_same(multi, tmp_path, monkeypatch):
    # the compiled template is kept beside the package's bytecode (BYTECODE_DIR) and loaded by the next run instead
    # of compiled (a tenth of a second of a small report): the same page; not written without bytecode
    # (PYTHONDONTWRITEBYTECODE), not needed when the folder cannot be written, compiled again from a file cut short
    import jinja2

    from calibcli.report import html as report_html

    _, page, doc = multi
    html = page.read_text()
    cache = tmp_path / "cache"
    monkeypatch.setattr(report_html, "BYTECODE_DIR", str(cache))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert report_html.render_page(doc) == html
    assert not cache.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert report_html.render_page(doc) == html
    (kept,) = cache.iterdir()
    compile_ = jinja2.Environment.compile

    def not_compiled(self, *args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", not_compiled)
    assert report_html.render_page(doc) == html  # loaded, not compiled
    monkeypatch.setattr(jinja2.Environment, "compile", compile_)
    kept.write_bytes(kept.read_bytes()[:40])  # cut short: compiled again, and written whole
    assert report_html.render_page(doc) == html
    assert len(kept.read_bytes()) > 1000
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setattr(report_html, "BYTECODE_DIR", str(blocked / "cache"))
    assert report_html.render_page(doc) == html  # the folder cannot be made: compiled, the page the same


def test_numbers_are_the_commands_numbers(multi):
    """Each entry holds the ece, smece and tcal commands' own results for the same options."""
    files, _, doc = multi
    r = run("ece", *files, "--n-boot", N_BOOT, "--json")
    ece = json.loads(r.stdout)
    for mine, theirs in zip(doc["files"], ece["files"]):
        assert mine["ece"] == theirs
        m = theirs["problems"][0]["metrics"]["ece_l1_plugin"]
        assert mine["verdict"]["numbers"]["ece_l1_plugin"] == {k: m[k] for k in ("estimate", "ci_low", "ci_high")}
    tcal = json.loads(run("tcal", files[2], "--n-boot", N_BOOT, "--json").stdout)
    assert doc["files"][2]["tcal"]["result"]["p_value"] == tcal["files"][0]["result"]["p_value"]


def test_verdicts_and_recalibration(multi):
    from calibcli.core.documents import fmt_number

    _, _, doc = multi
    calibrated, shifted = doc["files"][1], doc["files"][2]
    assert calibrated["verdict"]["status"] == "calibrated"
    assert calibrated["verdict"]["headline"].startswith("Calibrated")
    assert shifted["verdict"]["status"] == "miscalibrated"
    assert shifted["verdict"]["numbers"]["reject"] is True
    assert shifted["tcal"]["test"] == "binomial"  # 4 distinct values: the exact test, whatever --n-boot
    assert "the exact binomial test per predicted value rejects" in shifted["verdict"]["sentences"][1]
    rec = shifted["recalibration"]
    smeces = [r["smece"] for r in rec["rows"]]
    assert smeces == sorted(smeces) and rec["best"] == rec["rows"][0]
    assert {r["method"] for r in rec["rows"]} == {"uncalibrated", "platt", "isotonic", "temperature"}
    assert rec["best"]["method"] != "uncalibrated"  # shifting by 0.2 is fixable
    assert shifted["verdict"]["sentences"][-1] == (
        f"Recalibration: on the {rec['split']['n_test']:,} held-out rows, {rec['best']['method']} lowers SmoothECE from "
        f"{fmt_number(rec['uncalibrated']['smece'])} (uncalibrated, the same rows) to {fmt_number(rec['best']['smece'])}."
    )


def test_page_is_self_contained(multi):
    _, page, doc = multi
    html = page.read_text()
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", html, re.I)
    assert "<link" not in html and "@import" not in html and "<?xml" not in html
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert "prefers-color-scheme: dark" in html and "@media print" in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))  # figures' ids are prefixed: no clashes between inline SVGs
    # the summary links to every entry's section
    for entry in doc["files"]:
        assert f'<a href="#{entry["id"]}">' in html and f'id="{entry["id"]}"' in html
    assert doc["command_line"].startswith("calibcli report ") and doc["command_line"] in html
    assert doc["versions"]["calibcli"] and doc["parameters"]["n_boot"] == int(N_BOOT)


def test_one_file_has_no_summary(tmp_path):
    page = tmp_path / "one.html"
    r = run("report", BINARY, "-o", page, "--n-boot", "100", "--method", "platt")
    assert r.exit_code == 0, r.stderr
    html = page.read_text()
    assert 'id="summary-table"' not in html and 'id="entry-1"' in html
    assert r.stdout == ""  # stdout carries data only; the page went to its file


def test_installed_command_in_a_subprocess(tmp_path):
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "calibcli", "report", BINARY, "-o", "page.html", "--n-boot", "50", "--method", "platt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines[-2] == "wrote page.html: 1 entry" and lines[-1].startswith(f"  {BINARY}: ")
    assert all(line.startswith("Warning: ") for line in lines[:-2])  # --n-boot 50 is too few for the test
    assert (tmp_path / "page.html").read_text().startswith("<!doctype html>")
    proc = subprocess.run(
        [sys.executable, "-m", "calibcli", "report", BINARY, "-o", "bad.html", "--alpha", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "Error: --alpha is 2.0: expected a number strictly between 0 and 1\n"
    assert not (tmp_path / "bad.html").exists()


def test_diagrams_are_capped(tmp_path, monkeypatch):
    """Past MAX_DIAGRAMS entries the page says the diagrams were not drawn (the page stays small)."""
    from calibcli.report import document as report

    monkeypatch.setattr(report, "MAX_DIAGRAMS", 1)
    files = [_calibrated(tmp_path / f"m{k}.csv", 300, k) for k in range(2)]
    page, data = tmp_path / "c.html", tmp_path / "c.json"
    r = run("report", *files, "-o", page, "--json-output", data, "--n-boot", "20", "--method", "platt")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(data.read_text())
    assert doc["files"][0]["diagrams"] is not None and doc["files"][1]["diagrams"] is None
    assert doc["parameters"]["max_diagrams"] == 1
    assert page.read_text().count("Diagrams are drawn for the first 1 entries only") == 1


def test_page_on_stdout(tmp_path):
    r = run("report", BINARY, "-o", "-", "--n-boot", "50", "--method", "platt")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("<!doctype html>") and r.stdout.rstrip().endswith("</html>")
    assert "wrote -: 1 entry" in r.stderr or "wrote stdout: 1 entry" in r.stderr


def test_groups(tmp_path):
    page, data = tmp_path / "g.html", tmp_path / "g.json"
    r = run(
        "report",
        str(SAMPLE / "eval_shards"),
        "--group-by",
        "model",
        "-o",
        page,
        "--json-output",
        data,
        "--n-boot",
        "100",
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(data.read_text())
    assert [e["group"] for e in doc["files"]] == [{"model": "logreg"}, {"model": "nb"}]
    assert all(e["recalibration"] is None for e in doc["files"])
    assert "recalibration is compared per input, not per group" in page.read_text()


@pytest.mark.slow
def test_marginal(tmp_path):
    """Ten classes: the marginal aggregate is the headline, one diagram panel per class."""
    page, data = tmp_path / "m.html", tmp_path / "m.json"
    r = run(
        "report",
        str(SAMPLE / "digits_nb.parquet"),
        "--mode",
        "marginal",
        "-o",
        page,
        "--json-output",
        data,
        "--n-boot",
        "100",
        "--method",
        "temperature",
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(data.read_text())
    entry = doc["files"][0]
    assert entry["mode"] == "marginal" and doc["parameters"]["tcal_mode"] == "auto"
    assert (
        entry["verdict"]["numbers"]["smece"]["estimate"] == entry["smece"]["aggregate"]["metrics"]["smece"]["estimate"]
    )
    assert entry["diagrams"]["classes_total"] == 10 and len(entry["diagrams"]["panels"]) == 10


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.csv"], "Error: missing.csv: no such file"),  # the reader's message, as ece says it
        ([BINARY, "--n-bins", "0"], "Error: --n-bins is 0: expected a positive number of bins\n"),
        ([BINARY, "--method", "magic"], None),
        ([BINARY, "--holdout", "1.5"], "Error: --holdout is 1.5: expected the fraction of rows to fit on, in (0, 1)\n"),
        ([BINARY, "--label-col", "nope"], None),
        (
            ["-"],
            "Error: the report reads every input more than once (the recalibration comparison's fit and test "
            "parts), and standard input ('-') can be read once: save it to a file first\n",
        ),
    ],
)
def test_bad_input_is_one_error_line_and_no_file(tmp_path, args, message):
    page = tmp_path / "out.html"
    r = run("report", *args, "-o", page, "--n-boot", "20")
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in r.stderr
    if message is not None:  # a whole line, or the start of one
        assert r.stderr == message if message.endswith("\n") else r.stderr.startswith(message)
    assert not page.exists() and list(tmp_path.iterdir()) == []


def test_bad_output_folder(tmp_path):
    r = run("report", BINARY, "-o", tmp_path / "no" / "r.html")
    assert r.exit_code == 2 and r.stderr.startswith("Error: --output ") and "does not exist" in r.stderr
    r = run("report", BINARY, "-o", tmp_path / "r.html", "--json-output", tmp_path / "no" / "r.json")
    assert r.exit_code == 2 and r.stderr.startswith("Error: --json-output ")
    assert list(tmp_path.iterdir()) == []


def test_without_jinja2_the_error_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 now raises ModuleNotFoundError
    r = run("report", BINARY, "-o", tmp_path / "r.html")
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: the HTML report needs Jinja2, which is not installed: pip install 'calibcli[report]' "
        "(or pip install jinja2)\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_page_size_is_flat_in_n(tmp_path):
    """A 1e6-row input gives a page of about the same size as a 1e4-row one (figures are fixed-size)."""
    sizes = {}
    for n in (10_000, 1_000_000):
        rng = np.random.default_rng(n)
        z = rng.beta(2, 5, n)
        pd.DataFrame({"prob": z, "label": (rng.uniform(size=n) < z**1.2).astype(int)}).to_parquet(
            tmp_path / f"{n}.parquet"
        )
        page = tmp_path / f"{n}.html"
        r = run("report", tmp_path / f"{n}.parquet", "-o", page, "--n-boot", "100", "--method", "platt")
        assert r.exit_code == 0, r.stderr
        sizes[n] = page.stat().st_size
    assert sizes[1_000_000] < 1.5e6
    assert sizes[1_000_000] < 1.3 * sizes[10_000]


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


#: For each input's name on the page (the summary's cells, then the sections' headings): its text, the lines the
#: browser laid it out on (a line ends where the next character's box starts lower: Range.getClientRects), the
#: width it may take (the content box of its cell or heading), and the one-line width of each part up to a '/'.
NAME_LINES_JS = """
const out = [];
const names = [...document.querySelectorAll('#summary-table tbody td:first-child a')].map(a => [a, a.closest('td')])
  .concat([...document.querySelectorAll('section.entry > h2')].map(h => [h, h]));
for (const [el, box] of names) {
  const text = el.textContent, tops = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    for (let i = 0; i < node.data.length; i++) {
      const r = document.createRange();
      r.setStart(node, i);
      r.setEnd(node, i + 1);
      tops.push(r.getClientRects()[0].top);
    }
  }
  const lines = [''];
  for (let i = 0; i < text.length; i++) {
    if (i > 0 && tops[i] > tops[i - 1] + 2) lines.push('');
    lines[lines.length - 1] += text[i];
  }
  const style = getComputedStyle(box);
  const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const widths = {};
  for (const part of text.match(/[^/]*\\/|[^/]+$/g)) {
    const probe = document.createElement('span');
    probe.style.whiteSpace = 'nowrap';
    probe.textContent = part;
    el.appendChild(probe);
    widths[part] = probe.getBoundingClientRect().width;
    probe.remove();
  }
  out.push({text, lines, room, widths});
}
return out;
"""


def _bad_breaks(name: dict) -> list[str]:
    """The lines of a name that end inside a word: neither after a '/' nor after a '_' or '-' of a part (up to
    its '/') that is too wide for the room on a line of its own."""
    text, bad, end = name["text"], [], 0
    for line in name["lines"][:-1]:
        end += len(line)
        if line.endswith("/"):
            continue
        stop = text.find("/", end)
        part = text[text.rfind("/", 0, end) + 1 : stop + 1 if stop >= 0 else None]
        if not (line.endswith(("_", "-")) and name["widths"][part] > name["room"]):
            bad.append(line)
    return bad


def test_in_chromium(browser, multi, tmp_path):
    from calibcli.core.documents import fmt_number
    from selenium.webdriver.common.by import By

    _, page, doc = multi
    _browser.load(browser, page.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []

    data = browser.execute_script("return JSON.parse(document.getElementById('report-data').textContent)")
    assert data["files"][0]["verdict"] == doc["files"][0]["verdict"]
    for entry in data["files"]:
        section = browser.find_element(By.ID, entry["id"])
        v = entry["verdict"]
        assert section.find_element(By.CSS_SELECTOR, "[data-field=headline]").text == v["headline"]
        shown = [li.text for li in section.find_elements(By.CSS_SELECTOR, "[data-field=sentence]")]
        assert shown == v["sentences"]
        for field, value in (
            ("smece", v["numbers"]["smece"]["estimate"]),
            ("ece_l1_plugin", v["numbers"]["ece_l1_plugin"]["estimate"]),
            ("p_value", v["numbers"]["p_value"]),
        ):
            cell = section.find_element(By.CSS_SELECTOR, f".verdict [data-field={field}]")
            assert float(cell.get_attribute("data-value")) == value
            assert cell.text == fmt_number(value)
        assert len(section.find_elements(By.CSS_SELECTOR, "figure.diagram svg")) == 2
        row = section.find_element(By.CSS_SELECTOR, "table.metrics tr[data-metric=ece_l1_plugin]")
        assert row.find_element(By.CSS_SELECTOR, "td.n").text == fmt_number(
            entry["ece"]["problems"][0]["metrics"]["ece_l1_plugin"]["estimate"]
        )

    # the summary sorts on a header click (ascending, then descending) and links to the sections
    def order():
        return browser.execute_script(
            "return Array.from(document.querySelectorAll('#summary-table tbody tr')).map(r => r.dataset.entry)"
        )

    by_smece = sorted(data["files"], key=lambda e: e["verdict"]["numbers"]["smece"]["estimate"])
    header = browser.find_element(By.XPATH, "//table[@id='summary-table']//th[normalize-space()='SmoothECE']")
    header.click()
    assert order() == [e["id"] for e in by_smece]
    header.click()
    assert order() == [e["id"] for e in reversed(by_smece)]
    browser.find_element(By.CSS_SELECTOR, f"#summary-table a[href='#{by_smece[0]['id']}']").click()
    assert browser.execute_script("return location.hash") == f"#{by_smece[0]['id']}"

    # screenshots: desktop and phone; nothing wider than a phone's screen
    desktop, phone = tmp_path / "desktop.png", tmp_path / "phone.png"
    _browser.screenshot(browser, desktop, 1280, 900, full_page=False)
    _browser.screenshot(browser, phone, 390, 844, full_page=False)
    for path, width in ((desktop, 1280), (phone, 390)):
        png = path.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == width
    browser.set_window_size(390, 844)
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
        # the inputs' names (summary cells, section headings) break after a '/', never inside a word
        names = browser.execute_script(NAME_LINES_JS)
        labels = [e["label"] for e in data["files"]]  # the text is the name unchanged
        assert (sorted(n["text"] for n in names[: len(labels)]), [n["text"] for n in names[len(labels) :]]) == (
            sorted(labels),
            labels,
        )
        assert any(len(n["lines"]) > 1 for n in names)  # the names are long enough to break at 390 px
        wrong = {n["text"]: n["lines"] for n in names if _bad_breaks(n)}
        assert wrong == {}
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    # dark mode follows the system's preference
    def background():
        return browser.execute_script("return getComputedStyle(document.body).backgroundColor")

    light = background()
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    try:
        assert background() != light
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


# ---------------------------------------------------------------------------------------------
# One pass over each input


def _grouped_parquet(path: Path) -> str:
    """140,000 rows: group a 135,000 (beyond the 2^17 rows the binned accumulators keep, so quantile bins take
    a second pass over them), group b 5,000."""
    rng = np.random.default_rng(5)
    n = 140_000
    z = rng.beta(2, 5, n)
    y = (rng.uniform(size=n) < z**1.2).astype(int)
    model = np.where(np.arange(n) < 135_000, "a", "b")
    pd.DataFrame({"prob": z, "label": y, "model": model}).to_parquet(path, row_group_size=20_000)
    return str(path)


@pytest.fixture()
def reads(monkeypatch):
    """How many times each file's rows were read (every read of a file's rows goes through iter_tables)."""
    from collections import Counter

    from calibcli.io import formats

    counter: Counter = Counter()
    original = formats.iter_tables

    def counting(location, fmt, columns, batch_rows, *args, **kwargs):
        counter[Path(str(location)).name] += 1
        return original(location, fmt, columns, batch_rows, *args, **kwargs)

    monkeypatch.setattr(formats, "iter_tables", counting)
    return counter


@pytest.mark.parametrize("strategy, passes", [("uniform", 1), ("quantile", 2)])
def test_report_reads_each_input_once(tmp_path, reads, strategy, passes):
    """ece, smece, tcal and the diagrams share one pass over each input (a second one only for what asks for
    it: quantile edges over more rows than are kept); each command alone reads the input once too."""
    data = _grouped_parquet(tmp_path / "g.parquet")
    page, out = tmp_path / "g.html", tmp_path / "g.json"
    options = ("--group-by", "model", "--n-boot", "20", "--strategy", strategy)
    r = run("report", data, *options, "-o", page, "--json-output", out)
    assert r.exit_code == 0, r.stderr
    assert reads == {"g.parquet": passes}
    doc = json.loads(out.read_text())
    # every family's numbers are its command's, for the same options
    for command, extra in (("ece", ("--strategy", strategy)), ("smece", ()), ("tcal", ())):
        reads.clear()
        theirs = json.loads(run(command, data, "--group-by", "model", "--n-boot", "20", *extra, "--json").stdout)
        assert reads == {"g.parquet": passes if command == "ece" else 1}
        assert [e[command] for e in doc["files"]] == theirs["files"]
        assert doc["documents"][command]["groups"] == theirs["groups"]
        assert doc["documents"][command]["parameters"] == theirs["parameters"]
    assert [e["group"] for e in doc["files"]] == [{"model": "a"}, {"model": "b"}]
    assert all(e["diagrams"]["binned"].startswith("<svg") for e in doc["files"])


def test_report_reads_an_input_as_often_as_the_recalibration_alone(tmp_path, reads):
    """Without groups, the report reads an input as often as ``recalibrate evaluate`` alone does (3 times: the
    rows counted, the fit part, the test part): ece, smece, tcal and the diagrams share the counting pass.
    The comparison's numbers are the command's."""
    data = _calibrated(tmp_path / "c.csv", 2000, 3, 0.1)
    page, out = tmp_path / "c.html", tmp_path / "c.json"
    r = run("report", data, "-o", page, "--json-output", out, "--n-boot", "20", "--method", "platt")
    assert r.exit_code == 0, r.stderr
    report_reads = reads["c.csv"]
    doc = json.loads(out.read_text())
    reads.clear()
    ev = json.loads(
        run("recalibrate", "evaluate", data, "--method", "platt", "--holdout", "0.5", "--n-boot", "20", "--json").stdout
    )
    assert report_reads == reads["c.csv"] == 3
    from calibcli.report.html.verdict import recalibration_summary

    assert doc["files"][0]["recalibration"] == recalibration_summary(ev)


def test_the_page_options_are_the_reports_and_the_bootstraps_declarations():
    # one object from the command's parsed options (the report's own and the bootstrap's fields, and --group-by),
    # checked by their declarations: each value of the repeated --method among its choices
    from calibcli.core.errors import OptionError, OptionTypeError
    from calibcli.recalibrate.family import DEFAULT_METHODS
    from calibcli.report.document import PageOptions

    parsed = {"output": "p.html", "method": ["platt", "isotonic", "platt"], "n_boot": 10, "seed": 3, "group_by": "g"}
    o = PageOptions.of({**parsed, "engine": "local", "mode": "marginal"})
    assert (o.methods, o.n_boot, o.alpha, o.seed, o.group_by) == (("platt", "isotonic"), 10, 0.05, 3, "g")
    assert o.bootstrap == {"n_boot": 10, "alpha": 0.05, "seed": 3}
    assert o.mode == "marginal" and o.tcal_mode is None  # T-Cal has no marginal mode: its default
    assert PageOptions(output="p.html").methods == DEFAULT_METHODS
    with pytest.raises(OptionError, match="bogus"):
        PageOptions(output="p.html", method=["platt", "bogus"])
    with pytest.raises(OptionTypeError):
        PageOptions(output="p.html", mode=["binary"])  # a single option given a list is still refused
