"""The command line's own words: help text cites the documentation pages by title, never the internal SPEC."""

from __future__ import annotations

import re

import pytest

from tests._cli import BINARY, run

COMMANDS = [
    ("ece",),
    ("smece",),
    ("tcal",),
    ("audit",),
    ("recalibrate",),
    ("recalibrate", "fit"),
    ("recalibrate", "apply"),
    ("recalibrate", "evaluate"),
    ("diagram",),
    ("report",),
    ("compare",),
]

SPEC = re.compile(r"SPEC\s*\d")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_cites_docs_pages_not_the_spec(command):
    r = run(*command, "--help")
    assert r.exit_code == 0
    assert not SPEC.search(r.stdout), SPEC.findall(r.stdout)


def test_top_level_help_cites_docs_pages_not_the_spec():
    r = run("--help")
    assert r.exit_code == 0
    assert not SPEC.search(r.stdout)
    assert "How it is computed" in " ".join(r.stdout.split())  # recalibrate's line points to the page instead


@pytest.mark.parametrize(
    "args",
    [
        ("ece", BINARY, "--n-boot", "0"),
        ("tcal", BINARY, "--test", "hosmer-lemeshow"),
        ("tcal", BINARY, "--test", "ecce"),
        ("smece", BINARY, "--n-boot", "0"),
    ],
    ids=lambda a: a[0] + "-" + a[-1],
)
def test_json_reports_cite_docs_pages_not_the_spec(args):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    assert not SPEC.search(r.stdout), SPEC.findall(r.stdout)
