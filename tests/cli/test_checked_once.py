"""Each option is checked once, where its options object is made (issue 32: "validated once").

The command's wrapper (:func:`calibcli.cli.options.command`) makes the family's options object from the parsed
values before any work and hands it to the command; the generic guard of every numeric option leaves that
object's fields to it, and what the families derive from it (a point estimate's no-resample copy, compare's
reseeded copies, the report's sections) is made with ``from_checked``/``but``, not checked again.

The count is that of the rule of ``n_boot`` (:data:`calibcli.core.validation._RULES`) applied to the user's
value, observed by wrapping the rule itself: every check of a number, wherever it is made, goes through it.
"""

from __future__ import annotations

import dataclasses

import pytest

from calibcli.core import validation
from calibcli.core.family import Bootstrap
from calibcli.ece_family.options import Options as EceOptions
from _cli import BINARY, SAMPLE, run  # (tests/ is on sys.path)

#: An unusual resample count, so that no default or derived value is counted.
N_BOOT = 37

SEGMENTS = str(SAMPLE / "ads_segments.csv")

#: Each command that takes its options object from the wrapper, as a user runs it, with ``--n-boot N_BOOT``.
COMMANDS = {
    "ece": ["ece", BINARY],
    "ece --group-by": ["ece", SEGMENTS, "--group-by", "country"],
    "smece": ["smece", BINARY],
    "tcal": ["tcal", BINARY],
    "compare": ["compare", BINARY, BINARY],
    "selective": ["selective", BINARY],
    "regression": ["regression", str(SAMPLE / "regression" / "diabetes_gp.csv")],
    "monitor": ["monitor", str(SAMPLE / "monitor" / "scores.parquet"), "--time-col", "ts", "--every", "7D"],
    "lm-eval selective": ["selective", str(SAMPLE / "llm" / "lm_eval")],
    # (its options are the library function's keywords, checked by it: the test's options object, or the
    # regression methods' bootstrap)
    "recalibrate evaluate": ["recalibrate", "evaluate", BINARY, "--method", "platt", "--holdout", "0.5"],
    "recalibrate evaluate (regression)": [
        "recalibrate",
        "evaluate",
        str(SAMPLE / "regression" / "diabetes_gp.csv"),
        "--method",
        "std-scaling",
        "--holdout",
        "0.5",
    ],
}


@pytest.fixture
def n_boot_checks(monkeypatch):
    """The values of n_boot that its rule checked during the test, in order."""
    seen: list = []
    test, expected = validation._RULES["n_boot"]

    def counted(value):
        seen.append(value)
        return test(value)

    monkeypatch.setitem(validation._RULES, "n_boot", (counted, expected))
    return seen


@pytest.mark.parametrize("name", COMMANDS)
def test_n_boot_is_checked_once_per_command(name, n_boot_checks):
    r = run(*COMMANDS[name], "--n-boot", N_BOOT, "--json")
    assert r.exit_code == 0, r.stderr
    assert n_boot_checks.count(N_BOOT) == 1, n_boot_checks


def test_the_diagram_checks_n_boot_once(tmp_path, n_boot_checks):
    r = run("diagram", BINARY, "-o", tmp_path / "d.png", "--n-boot", N_BOOT)
    assert r.exit_code == 0, r.stderr
    assert n_boot_checks.count(N_BOOT) == 1, n_boot_checks


def test_the_report_checks_n_boot_once_for_its_page(tmp_path, n_boot_checks):
    """The page's options once, and its sections' options derived from them unchecked; the held-out
    recalibration comparison is a library call of ``recalibrate evaluate`` (calibcli.recalibrate.evaluation),
    which checks its own keywords as every library call does: once more per input."""
    r = run("report", BINARY, "-o", tmp_path / "r.html", "--n-boot", N_BOOT)
    assert r.exit_code == 0, r.stderr
    assert n_boot_checks.count(N_BOOT) == 2, n_boot_checks


def test_a_bad_n_boot_still_fails_before_any_reading(tmp_path):
    """The options object is made before the inputs are resolved: a bad value is named, not the missing file."""
    r = run("ece", tmp_path / "missing.csv", "--n-boot", "-1")
    assert r.exit_code == 2
    assert r.stderr.strip() == "Error: --n-boot is -1: expected 0 (no intervals) or a positive count"
    r = run("report", BINARY, "-o", tmp_path / "r.html", "--n-boot", "0")  # (the page's own rule, as before)
    assert r.exit_code == 2
    assert "--n-boot is 0: the report's T-Cal test draws its null distribution from resamples" in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_derived_options_copy_the_checked_fields_and_check_nothing_again(n_boot_checks):
    chosen = EceOptions(n_boot=N_BOOT, alpha=0.1, seed=7, n_bins=20)
    assert n_boot_checks.count(N_BOOT) == 1
    point = chosen.but(n_boot=0)
    assert (point.n_boot, point.alpha, point.seed, point.n_bins) == (0, 0.1, 7, 20)
    assert (chosen.n_boot, type(point)) == (N_BOOT, EceOptions)
    boot = Bootstrap.from_checked(chosen, "alpha", "seed", n_boot=5)
    assert dataclasses.asdict(boot) == {"n_boot": 5, "alpha": 0.1, "seed": 7}
    default = EceOptions.from_checked(chosen, "seed")
    assert (default.seed, default.n_boot, default.n_bins) == (7, EceOptions().n_boot, EceOptions().n_bins)
    assert n_boot_checks.count(N_BOOT) == 1  # (none of the copies checked it again)
    with pytest.raises(TypeError, match="has no field bandwidth"):
        chosen.but(bandwidth=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.n_boot = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["--n-boot", "-1"], "Error: --n-boot is -1: expected 0 (no intervals) or a positive count"),
        (["--n-boot", "0"], "Error: --n-boot is 0: expected at least 1 resample for the y-bootstrap null"),
        (["--alpha", "2"], "Error: --alpha is 2.0: expected a number strictly between 0 and 1"),
        (["--seed", "-1"], "Error: --seed is -1: expected a non-negative integer below 2^64"),
        (["--max-rows", "1"], "Error: --max-rows is 1: expected at least 2 rows to fit on"),
    ],
)
def test_recalibrate_evaluate_names_a_bad_option_it_checks_itself(given, expected, tmp_path):
    """The options ``recalibrate evaluate`` leaves to its library function are still refused before any
    reading (a missing file is not what the line names), each by its rule."""
    r = run("recalibrate", "evaluate", tmp_path / "missing.csv", "--method", "platt", "--holdout", "0.5", *given)
    assert r.exit_code == 2
    assert r.stderr.strip() == expected
