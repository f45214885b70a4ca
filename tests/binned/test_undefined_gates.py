"""A gate on a metric that is undefined for the input (issue 33): one Error line saying why, exit 2."""

from __future__ import annotations

import numpy as np

from tests._cli import run, write_csv


def _one_class(tmp_path):
    z = np.linspace(0.1, 0.9, 200)
    return write_csv(tmp_path, "one_class.csv", z, np.ones(200, dtype=int))


def test_fail_above_on_an_undefined_metric_is_an_error(tmp_path):
    path = _one_class(tmp_path)
    r = run("ece", path, "--metric", "brier_skill_score", "--fail-above", "0.1", "--n-boot", "0")
    assert r.exit_code == 2
    assert r.stderr == (
        f"Error: --fail-above gates on brier_skill_score, which is undefined for {path} (null in the report: every "
        "label is of one class, so the base rate's Brier score, its denominator, is 0), so the gate can neither "
        "pass nor fail: gate on another --metric\n"
    )
    assert r.stdout == ""


def test_fail_above_upper_on_an_undefined_metric_is_an_error(tmp_path):
    path = _one_class(tmp_path)
    r = run("ece", path, "--metric", "brier_skill_score", "--fail-above-upper", "0.1", "--n-boot", "20")
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: --fail-above")
    assert "undefined" in r.stderr and r.stderr.count("\n") == 1


def test_a_defined_metric_on_the_same_input_still_gates(tmp_path):
    path = _one_class(tmp_path)
    r = run("ece", path, "--metric", "brier_score", "--fail-above", "0.01", "--n-boot", "0")
    assert r.exit_code == 1
