"""The ``calibcli`` console script (``pyproject.toml``, ``[project.scripts]``) and ``python -m calibcli``.

Signal handlers come first (:func:`calibcli.cancel.install_handlers`), before the CLI and its libraries are
imported: a Ctrl-C or SIGTERM in the first tenths of a second is then ``Error: interrupted`` with exit 130 or
143, like one during the run, rather than Python's ``KeyboardInterrupt`` traceback. Only the interpreter's
own start (before this module runs) is left to Python.
"""

from __future__ import annotations

from calibcli import cancel


def main() -> None:
    """Install the signal handlers, then run :func:`calibcli.cli.main`; an interrupt that arrives while it is
    being imported (or after it has put its own handling away) ends the run as any interrupt does."""
    try:
        cancel.install_handlers()  # (inside: a signal just after SIGINT's handler is in place raises here)
        from calibcli.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt as exc:
        cancel.report()
        cancel.exit_now(cancel.exit_code(exc))
