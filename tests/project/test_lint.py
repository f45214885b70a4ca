"""The guard rails of a maintained package: Ruff's linter and formatter and mypy pass over ``calibcli/`` with the
configuration in ``pyproject.toml`` (``[tool.ruff]``, ``[tool.mypy]``). A failure shows the tool's own findings.

The tools run from this interpreter's environment (the test extra pins their minor releases), without caches, so
the checkout is left as it was."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    # the test extra installs ruff and mypy: a missing one is a broken install, not a skip
    if importlib.util.find_spec(tool) is None:
        pytest.fail(f"{tool} is not installed: pip install '.[test]' installs it")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _findings(proc: subprocess.CompletedProcess) -> str:
    return (proc.stdout[-6000:] + proc.stderr[-2000:]).strip()


def test_ruff_check_passes():
    proc = _run("ruff", "check", "--no-cache", "calibcli")
    assert proc.returncode == 0, _findings(proc)


def test_ruff_format_leaves_the_code_as_it_is():
    proc = _run("ruff", "format", "--check", "--no-cache", "calibcli")
    assert proc.returncode == 0, _findings(proc) + "\n(run `ruff format calibcli` and review the diff)"


def test_mypy_passes():
    # files = ["calibcli"] in [tool.mypy]; /dev/null as the cache directory writes no cache
    proc = _run("mypy", "--cache-dir", "/dev/null")
    assert proc.returncode == 0, _findings(proc)
    assert proc.stdout.startswith("Success: no issues found"), _findings(proc)


def test_the_tools_find_a_planted_fault(tmp_path):
    """The configuration is read and checks something: an unused import and a wrong argument type fail."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename", "calibcli/_probe.py", "-"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        input="import os\n",
        timeout=120,
    )
    assert proc.returncode == 1 and "F401" in proc.stdout, _findings(proc)
    probe = tmp_path / "probe.py"
    probe.write_text("def f(x: int) -> int:\n    return x\n\n\nf('a')\n")
    proc = _run("mypy", "--cache-dir", "/dev/null", str(probe))
    assert proc.returncode == 1 and "[arg-type]" in proc.stdout, _findings(proc)
