"""The documentation site builds and covers the tool: ``mkdocs build --strict`` passes (a broken link, an
anchor that is gone, a page missing from the navigation or an API name that no longer resolves fails it),
every command of ``calibcli --help`` has its page, and the generated references hold what the code declares.

The console examples of the pages run in tests/project/test_readme.py, by the README's mechanism."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _load("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
doctests = _load("griffe_doctests", ROOT / "scripts" / "griffe_doctests.py")


def root_commands() -> list[str]:
    return hooks.subcommands(hooks._help([]))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once with ``--strict`` into a temporary directory."""
    # the test extra installs the docs extra's packages: a missing mkdocs is a broken install, not a skip
    assert importlib.util.find_spec("mkdocs"), "mkdocs is not installed: pip install '.[test]' (or '.[docs]')"
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_the_site_builds_strictly(site):
    assert (site / "index.html").is_file()
    assert (site / "computed" / "index.html").is_file()


def test_every_command_has_a_page_in_the_navigation():
    commands = root_commands()
    assert {"ece", "smece", "tcal", "recalibrate", "diagram", "report", "compare"} <= set(commands)
    nav = (ROOT / "mkdocs.yml").read_text()
    for command in commands:
        page = DOCS / "commands" / f"{command}.md"
        assert page.is_file(), f"`calibcli {command}` has no page docs/commands/{command}.md"
        assert f"commands/{command}.md" in nav, f"docs/commands/{command}.md is not in mkdocs.yml's nav"
        assert re.match(rf"# `calibcli {command}`", page.read_text()), f"{page.name}: the title names the command"


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")]
    missing = [p for p in pages if f" {p}" not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_the_cli_reference_is_every_help_screen(site):
    html = (site / "reference" / "cli" / "index.html").read_text()
    for command in root_commands():
        assert f'id="calibcli-{command}"' in html
    for sub in ("fit", "apply", "evaluate"):
        assert f'id="calibcli-recalibrate-{sub}"' in html
    # an option the code declares appears as the help prints it
    assert "--fail-above-upper" in html and "--group-by" in html


def test_subcommands_are_read_from_both_help_layouts():
    plain = "Usage: x\n\nCommands:\n  ece          Binned errors,\n               with intervals.\n  tcal         Test.\n"
    boxed = ("╭─ Commands ──╮\n│ fit       Fit a map and save  │\n│           it as a    │\n"
             "│ apply     Apply it.  │\n╰──────╯\n")
    assert hooks.subcommands(plain) == ["ece", "tcal"]
    assert hooks.subcommands(boxed) == ["fit", "apply"]
    assert hooks.subcommands("Usage: x\n\nOptions:\n  --help  Show this.\n") == []


def test_the_api_pages_cover_every_package_level_name(site):
    import calibcli

    api = (site / "reference" / "api" / "index.html").read_text()
    package = (site / "reference" / "api-package" / "index.html").read_text()
    for name, module in calibcli._LAZY.items():
        page = api if module in hooks.OWN_PAGE_MODULES else package
        assert f'id="{module}.{name}"' in page, f"{module}.{name} is not documented"


def test_bare_doctests_are_fenced_and_fences_left_alone():
    text = "Intro.\n\n>>> x = {'a': [1]}\n>>> x['a'][0]\n1\n\nAfter.\n\n```python\n>>> kept\n```\n"
    assert doctests.fence_doctests(text) == (
        "Intro.\n\n```pycon\n>>> x = {'a': [1]}\n>>> x['a'][0]\n1\n```\n\nAfter.\n\n```python\n>>> kept\n```\n")
    assert doctests.fence_doctests("    >>> 1 + 1\n    2") == "```pycon\n    >>> 1 + 1\n    2\n```"


def test_the_mathematics_has_a_section_for_every_estimator_family():
    text = (DOCS / "computed.md").read_text()
    for anchor in ["spec-1", "spec-2-1", "spec-2-2", "spec-2-3", "spec-2-4", "spec-3", "spec-4-1", "spec-4-2",
                   "spec-4-3", "spec-4-4", "spec-5", "spec-6", "spec-7", "spec-8", "spec-9"]:
        assert "{#" + anchor + "}" in text, anchor
    from calibcli.metrics import REGISTRY

    named = set(re.findall(r"`([a-z0-9_]+)`", text))
    missing = [name for name in REGISTRY if name not in named]
    assert len(REGISTRY) >= 30
    assert not missing, f"How it is computed does not name these metrics of the registry: {missing}"


def test_the_readme_stays_short_and_points_into_the_site():
    """The README is the front door (issue 26: at most ~200 lines); the long material lives on the site."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    for target in ["docs/index.md", "docs/getting-started.md", "docs/computed.md", "docs/guides/ci.md",
                   "docs/guides/python.md", "CHANGELOG.md"]:
        assert f"]({target})" in text, f"README.md does not link {target}"
    for link in re.findall(r"\]\(((?:docs/|CHANGELOG)[^)#]*)", text):
        assert (ROOT / link).exists(), f"README.md links {link}, which does not exist"
