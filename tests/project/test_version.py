"""One version everywhere: ``calibcli --version``, ``calibcli.__version__``, the installed distribution's
metadata and the latest release of CHANGELOG.md (Keep a Changelog) are the same number."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import calibcli

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"

_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2}|Unreleased)$", flags=re.MULTILINE)


def changelog_releases() -> list[tuple[str, str]]:
    """The changelog's ``## [X.Y.Z] - DATE`` headings, newest first, as (version, date or 'Unreleased')."""
    return _RELEASE.findall(CHANGELOG.read_text())


def test_the_changelog_follows_keep_a_changelog():
    text = CHANGELOG.read_text()
    assert text.startswith("# Changelog\n")
    releases = changelog_releases()
    assert len(releases) >= 2
    versions = [tuple(map(int, v.split("."))) for v, _ in releases]
    assert versions == sorted(versions, reverse=True), "releases must be listed newest first"
    dated = [d for _, d in releases if d != "Unreleased"]
    assert dated == sorted(dated, reverse=True)
    # only the newest release may be unreleased; every heading is '## [X.Y.Z] - DATE'
    assert all(d != "Unreleased" for _, d in releases[1:])
    headings = re.findall(r"^## .*$", text, flags=re.MULTILINE)
    assert len(headings) == len(releases), [h for h in headings if not _RELEASE.match(h)]
    for section in re.findall(r"^### (.*)$", text, flags=re.MULTILINE):
        assert section in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, section


def test_version_agrees_with_the_changelog_the_package_and_the_command():
    latest = changelog_releases()[0][0]
    assert calibcli.__version__ == latest
    assert importlib.metadata.version("calibcli") == latest, "the installed metadata is stale: pip install the checkout again"
    proc = subprocess.run([sys.executable, "-m", "calibcli", "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"calibcli {latest}\n"


def test_the_package_is_typed():
    assert (Path(calibcli.__file__).parent / "py.typed").is_file()
