"""MkDocs hooks (``hooks:`` in mkdocs.yml): the pages that are generated at build time, never hand-copied.

- ``<!-- calibcli-cli-reference -->`` on a page becomes the ``--help`` of ``calibcli`` and of every command and
  subcommand, as the installed Typer app prints it (found by walking each help's command list), so the CLI
  reference cannot drift from the options the code declares.
- ``<!-- calibcli-api-package -->`` becomes one mkdocstrings block per name that ``calibcli/__init__.py``
  exports (its lazy ``_LAZY`` table: name -> module), grouped by module. When a name moves to another module,
  the page follows; a name that no longer resolves fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

CLI_MARKER = "<!-- calibcli-cli-reference -->"
API_MARKER = "<!-- calibcli-api-package -->"

#: The width the help screens are rendered at (wide enough for the option tables, narrow enough for a page).
HELP_COLUMNS = 110


def _help(command: list[str]) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALIBCLI_")}
    env.update(COLUMNS=str(HELP_COLUMNS), NO_COLOR="1", TERM="dumb", LC_ALL="C.UTF-8")
    proc = subprocess.run([sys.executable, "-m", "calibcli", *command, "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"calibcli {' '.join(command)} --help failed ({proc.returncode}): {proc.stderr}")
    return "\n".join(line.rstrip() for line in proc.stdout.strip("\n").split("\n"))


def subcommands(help_text: str) -> list[str]:
    """The command names of a help screen's "Commands" panel (rich's boxed layout or Click's plain one)."""
    names, inside = [], False
    for line in help_text.split("\n"):
        if re.match(r"^\s*(?:[╭┌+][─-]+ )?Commands\b", line):
            inside = True
            continue
        if inside:
            if re.match(r"^\s*[╰└+]", line) or (not line.strip() and names):
                break
            m = re.match(r"^\s*[│|]?\s{1,3}([a-z][\w-]*)\s{2,}", line)
            if m:
                names.append(m.group(1))
    return names


def cli_reference() -> str:
    """Markdown for every help screen of the CLI, depth first (``calibcli``, ``calibcli ece``, ...)."""
    parts = []
    todo = [[]]
    while todo:
        command = todo.pop(0)
        text = _help(command)
        name = " ".join(["calibcli", *command])
        level = "#" * (2 + min(len(command), 1) + max(len(command) - 1, 0))
        parts.append(f"{level} `{name}`\n\n```text\n$ {name} --help\n{text}\n```\n")
        todo[0:0] = [[*command, sub] for sub in subcommands(text)]
    return "\n".join(parts)


def package_exports() -> dict[str, list[str]]:
    """calibcli's package-level names grouped by the module that defines them (its ``_LAZY`` table)."""
    import calibcli

    grouped: dict[str, list[str]] = {}
    for name, module in calibcli._LAZY.items():
        grouped.setdefault(module, []).append(name)
    return grouped


#: Modules documented on their own page (reference/api.md): their names are linked there, not documented twice.
OWN_PAGE_MODULES = ("calibcli.metrics", "calibcli.sklearn")


def api_package() -> str:
    parts = []
    for module, names in package_exports().items():
        parts.append(f"## `{module}`\n")
        if module in OWN_PAGE_MODULES:
            links = ", ".join(f"[`{name}`][{module}.{name}]" for name in names)
            parts.append(f"Documented with the rest of `{module}` in the [API reference](api.md): {links}.\n")
            continue
        for name in names:
            parts.append(f"::: {module}.{name}\n    options:\n      heading_level: 3\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_package())
    return markdown
