"""The report's verdict when its test cannot decide (issue 33): "unknown", never "possibly miscalibrated"."""

from __future__ import annotations

import json

from calibcli.report.html.verdict import verdict
from tests._cli import BINARY, run


def test_a_test_that_cannot_reject_gives_an_unknown_verdict(tmp_path):
    page, data = tmp_path / "r.html", tmp_path / "r.json"
    r = run("report", BINARY, "-o", page, "--json-output", data, "--alpha", "1e-17", "--n-boot", "50")
    assert r.exit_code == 0, r.stderr
    v = json.loads(data.read_text())["files"][0]["verdict"]
    assert v["status"] == "unknown"
    assert v["headline"].startswith("Verdict unknown: the calibration error looks ")
    assert v["headline"].endswith("could not decide (it cannot reject at alpha 1e-17)")
    assert "Possibly miscalibrated" not in page.read_text()
    assert any(s.startswith("Is it real: unknown;") for s in v["sentences"])


def _entry(reject: bool, can_reject: bool | None, p) -> dict:
    metric = {"estimate": 0.1, "ci_low": None, "ci_high": None}
    result = {"reject": reject, "p_value": p, "warnings": []}
    if can_reject is not None:
        result["can_reject"] = can_reject
    return {
        "mode": "binary",
        "ece": {"mode": "binary", "problems": [{"name": "binary", "metrics": {"ece_l1_plugin": metric}}]},
        "smece": {"mode": "binary", "problems": [{"name": "binary", "metrics": {"smece": metric}}]},
        "tcal": {"mode": "binary", "test": "tcal", "result": result},
    }


def test_the_verdict_rule_unknown_uncertain_miscalibrated():
    assert verdict(_entry(False, False, 1.0), alpha=0.05)["status"] == "unknown"
    assert verdict(_entry(False, None, None), alpha=0.05)["status"] == "unknown"  # an undefined p-value
    assert verdict(_entry(False, True, 0.5), alpha=0.05)["status"] == "uncertain"  # large error, test decided
    assert verdict(_entry(True, True, 0.001), alpha=0.05)["status"] == "miscalibrated"
