"""The ``calibcli`` console script (``pyproject.toml``, ``[project.scripts]``) and ``python -m calibcli``.

Signal handlers come first (:func:`calibcli.core.cancel.install_handlers`), before the CLI and its libraries are
imported: a Ctrl-C or SIGTERM in the first tenths of a second is then ``Error: interrupted`` with exit 130 or
143, like one during the run, rather than Python's ``KeyboardInterrupt`` traceback. Only the interpreter's
own start (before this module runs) is left to Python.
"""

from __future__ import annotations

import atexit
import os
import sys

from calibcli.core import cancel


def main() -> None:
    """Install the signal handlers, then run :func:`calibcli.cli.app.main`; an interrupt that arrives while it is
    being imported (or after it has put its own handling away) ends the run as any interrupt does."""
    atexit.register(_end_without_teardown)
    try:
        cancel.install_handlers()  # (inside: a signal just after SIGINT's handler is in place raises here)
        from calibcli.cli.app import main as cli_main

        cli_main()
    except KeyboardInterrupt as exc:
        cancel.end(exc)
    except SystemExit as exc:
        _ended.append(exc.code if isinstance(exc.code, int) else int(exc.code is not None))
        raise


#: The exit status of the run once it has ended (:func:`_end_without_teardown` reads it).
_ended: list[int] = []


def _end_without_teardown() -> None:
    """The last ``atexit`` handler (registered first): once the run has ended and every other handler has run
    (temporary files removed, a cluster shut down), flush stdout and stderr and leave with the run's status,
    without the rest of the interpreter's teardown. Arrow's C++ thread pools can abort the process there now
    and then ("terminate called without an active exception", exit -6 after a correct run and its output:
    apache/arrow#34314), which turned a right exit code into a crash under load. An interrupted run leaves
    through :func:`calibcli.core.cancel.exit_now`, which records no status here."""
    if not _ended:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_ended[-1])
