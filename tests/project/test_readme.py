"""README.md and the documentation stay true: every console example of the README and of every page of
``docs/`` is run for real and must print what the page shows, and every command of ``calibcli --help`` has
its README section (sqlite-utils' tests/project/test_docs.py does the same for its docs).

The examples run as ``scripts/update_readme.py`` runs them (its docstring says how: one ``bash`` per block,
in a scratch directory per document, fixed ``COLUMNS``); only the tool version, absolute paths, a figure's
size in bytes, trailing spaces and trailing blank lines are normalised. When an output changes on purpose,
refresh the documents with ``python scripts/update_readme.py`` and review the diff.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _load_script():
    spec = importlib.util.spec_from_file_location("update_readme", ROOT / "scripts" / "update_readme.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["update_readme"] = module
    spec.loader.exec_module(module)
    return module


ur = _load_script()


# --------------------------------------------------------------------------- the parser and the runner


SAMPLE_README = """# x

```
$ printf 'a\\nb\\n'
a
b
$ (exit 3)
$ echo $?
3

$ echo "  spaced   "
  spaced
```

```console not-run
$ calibcli ece shards/ --engine dask
Dask: a local cluster
```

```bash
$ this is a script, not an example
```

```console
$ printf 'x\\n'
y
```
"""


def test_parse_finds_the_examples_and_the_blocks_marked_not_run():
    blocks, skipped = ur.parse(SAMPLE_README)
    assert [[c.command for c in b.commands] for b in blocks] == [
        ["printf 'a\\nb\\n'", "(exit 3)", "echo $?", 'echo "  spaced   "'], ["printf 'x\\n'"]]
    first = blocks[0].commands
    assert [c.expected for c in first] == [["a", "b"], [], ["3"], ["  spaced"]]
    assert [c.trailing_blank for c in first] == [0, 0, 1, 0]
    assert first[0].line == 4
    assert skipped == [15]


def test_the_runner_compares_and_rewrites(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(SAMPLE_README)
    assert ur.main(["--check", "--readme", str(readme)]) == 1  # 'y' is not what printf prints
    assert ur.main(["--readme", str(readme)]) == 0
    fixed = readme.read_text()
    assert fixed == SAMPLE_README.replace("$ printf 'x\\n'\ny", "$ printf 'x\\n'\nx")
    assert ur.main(["--check", "--readme", str(readme)]) == 0


def test_normalise_touches_only_version_paths_and_trailing_spaces():
    lines = [f"{ur.ROOT}/sample_data/a.csv: 3 rows   ", 'calibcli 9.8.7 "version": "9.8.7"', "0.0602 ", "", ""]
    assert ur.normalise(lines) == ["sample_data/a.csv: 3 rows", 'calibcli <version> "version": "<version>"', "0.0602"]
    assert ur.normalise(["0.0602"]) != ur.normalise(["0.0603"])
    assert ur.normalise(["wrote a.png (PNG, 1950x1125 px, 203,601 bytes)"]) == ["wrote a.png (PNG, 1950x1125 px, <size> bytes)"]
    assert ur.normalise(["(PNG, 1950x1125 px, 1 bytes)"]) != ur.normalise(["(PNG, 1500x832 px, 1 bytes)"])


def test_numbers_agree_to_the_digits_shown_and_nothing_else_moves():
    agree = ur.lines_agree
    # another build's last bits of a full-precision float (Platt's a on two machines)
    assert agree('"params": {"a": 0.1547454065078526, "b": -0.04}', '"params": {"a": 0.15474540650785265, "b": -0.04}')
    # noise around an exact zero, whatever its sign and digits
    assert agree("Wald test of slope = 1: z 5.166e-15, p 1", "Wald test of slope = 1: z -4.278e-15, p 1")
    # one unit in the last printed digit (a value on a rounding boundary), and a wider column
    assert agree("│ ece_l1_plugin │ 0.06027 │", "│ ece_l1_plugin │ 0.06028 │")
    assert agree("│ x │ 9.312e-16 │", "│ x │ -1e-15    │")
    assert agree("│ ab     │ 1 │\n", "│ ab │ 1 │\n") is True
    assert agree("─────┼──", "──────┼──")
    # but a real change does not pass
    assert not agree("│ ece_l1_plugin │ 0.06027 │", "│ ece_l1_plugin │ 0.06029 │")
    assert not agree("p 2.497e-11", "p 2.6e-11")
    assert not agree("569 rows", "568 rows")  # integers exactly
    assert not agree("exit 1", "exit 2")
    assert not agree("ece_l1_plugin 0.06", "ece_l2_plugin 0.06")  # the text exactly
    assert not agree("a 0.1 b", "a 0.1")
    assert not agree("p_0 0.5", "p_1 0.5")  # digits inside names are text
    assert not ur.outputs_agree(["a", "b"], ["a"])
    assert ur.outputs_agree(["x 0.1547454065078526"], ["x 0.15474540650785265"])


def test_refreshing_keeps_outputs_that_agree_within_the_tolerance(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("```\n$ printf '0.15474540650785265 a\\n'\n0.1547454065078526 a\n$ printf 'x\\n'\ny\n```\n")
    assert ur.main(["--check", "--readme", str(readme)]) == 1  # 'y' is stale, the float is not
    assert ur.main(["--readme", str(readme)]) == 0
    assert readme.read_text() == "```\n$ printf '0.15474540650785265 a\\n'\n0.1547454065078526 a\n$ printf 'x\\n'\nx\n```\n"


def test_a_document_without_examples_runs_nothing_and_a_page_is_named_in_its_messages(tmp_path):
    assert ur.run_readme("# no examples\n\n```python\nprint(1)\n```\n") == []
    page = tmp_path / "page.md"
    page.write_text("```console\n$ printf 'x\\n'\ny\n```\n")
    (diff,) = ur.differences(ur.run_readme(page.read_text()), "docs/page.md")
    assert diff.startswith("docs/page.md line 2: $ printf 'x\\n'")


def test_the_documents_are_the_readme_and_every_docs_page():
    docs = ur.documents()
    assert docs[0] == README
    assert {p.relative_to(ROOT).as_posix() for p in docs[1:]} == {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")}


# --------------------------------------------------------------------------- the README and the docs pages


def _documents_with_examples() -> list[Path]:
    return [p for p in ur.documents() if ur.parse(p.read_text())[0]]


@pytest.mark.slow
@pytest.mark.parametrize("path", _documents_with_examples(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_example_prints_what_its_page_shows(path):
    name = path.relative_to(ROOT).as_posix()
    results = ur.run_readme(path.read_text())
    assert results, f"{name}: no examples found"
    diffs = ur.differences(results, name)
    assert not diffs, (f"{name} is stale; refresh it with `python scripts/update_readme.py {name}`:\n\n"
                       + "\n\n".join(diffs))


def test_the_examples_cover_the_documentation():
    """The README and the pages together run many examples, and every command page runs its command."""
    n = sum(len(b.commands) for p in ur.documents() for b in ur.parse(p.read_text())[0])
    assert n >= 60
    for page in sorted((ROOT / "docs" / "commands").glob("*.md")):
        blocks, _ = ur.parse(page.read_text())
        run = {c.command.split()[1] for b in blocks for c in b.commands if c.command.startswith("calibcli ")}
        assert page.stem in run, f"{page.relative_to(ROOT)} runs no `calibcli {page.stem}` example"


def root_help_commands() -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "calibcli", "--help"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    listed = proc.stdout.split("Commands:", 1)[1]
    return re.findall(r"^  (\S+)  ", listed, flags=re.MULTILINE)


def test_every_command_in_help_has_a_readme_section():
    commands = root_help_commands()
    assert {"ece", "smece", "tcal", "recalibrate", "diagram"} <= set(commands)
    text = README.read_text()
    sections = set(re.findall(r"^## .*?`calibcli ([^`\s]+)`", text, flags=re.MULTILINE))
    table = set(re.findall(r"^\| `calibcli (\S+)` \|", text, flags=re.MULTILINE))
    missing = [c for c in commands if c not in sections]
    assert not missing, f"commands of `calibcli --help` without a README section (a '## ' heading naming `calibcli NAME`): {missing}"
    unlisted = [c for c in commands if c not in table]
    assert not unlisted, f"commands missing from README.md's Commands table: {unlisted}"
    extra = sorted((sections | table) - set(commands))
    assert not extra, f"README.md describes commands that `calibcli --help` does not list: {extra}"


def test_the_readme_runs_every_subcommand_it_documents():
    blocks, _ = ur.parse(README.read_text())
    run = {c.command.split()[1] for b in blocks for c in b.commands if c.command.startswith("calibcli ")}
    documented = set(re.findall(r"^## .*?`calibcli ([^`\s]+)`", README.read_text(), flags=re.MULTILINE))
    assert {"ece", "smece", "tcal", "recalibrate", "diagram"} <= run
    assert documented <= run, f"README sections without a console example that runs: {sorted(documented - run)}"
