"""How a run ends, in one place: every exception that ends a command, the parser or the run turned into
its one ``Error: ...`` line on stderr and its exit code (as huggingface_hub's ``hf`` CLI maps exception
types to messages in one table). :func:`calibcli.cli.options.command` (inside a command),
:func:`calibcli.cli.app.main` (the parser, and around every command) and :func:`calibcli.cli.entry.main`
(an interrupt while the CLI is imported) only catch and hand the exception here.

Exit codes: 2 bad input (and an internal error), 1 a failed gate, 130 / 143 interrupted (SIGINT / SIGTERM),
141 stdout closed by its reader. A traceback only with ``CALIBCLI_DEBUG=1``.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable

from calibcli.core import cancel, environment
from calibcli.core.errors import PIPE_CLOSED, CalibcliError, GateFailed, flag_of, quiet_stdout
from calibcli.core.safe_text import for_terminal


def debugging() -> bool:
    return environment.debugging()


#: Errors only a write gives (ENOSPC, EDQUOT, EFBIG): an error line, not an "internal error".
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def command_failure(exc: BaseException, memory_message: Callable[[], str]) -> int | None:
    """The exit code of an exception that ended a command's body (its line written on stderr), or None
    when it is not turned into one here (``CALIBCLI_DEBUG=1``, a plain ``SystemExit``): the caller re-raises.
    ``memory_message``: the out-of-memory line, which names the command's option that planned the largest
    allocation (:func:`calibcli.cli.options.out_of_memory_message`)."""
    if isinstance(exc, CalibcliError):
        if debugging():
            return None
        sys.stderr.write(f"Error: {for_terminal(exc.for_cli(flag_of))}\n")  # one line whatever a name holds
        return 2
    if isinstance(exc, GateFailed):
        sys.stderr.write(f"{for_terminal(exc)}\n")
        return 1
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C or SIGTERM (calibcli.core.cancel): temporary files are gone by now
        cancel.request(getattr(exc, "signum", 2))  # worker threads still running stop at their next check
        cancel.report()
        return cancel.exit_code(exc)
    if isinstance(exc, BrokenPipeError):  # the reader of stdout went away (`| head`): end quietly
        return pipe_closed()
    if isinstance(exc, SystemExit):  # rich's console exits 1 on a broken pipe (Console.on_broken_pipe)
        return pipe_closed() if isinstance(exc.__context__, BrokenPipeError) else None
    if isinstance(exc, OSError):  # a full disk or quota while writing stdout or a temporary file
        if exc.errno not in WRITE_ERRNOS or debugging():
            return None
        where = f" ({exc.filename})" if exc.filename else ""
        sys.stderr.write(f"Error: {for_terminal(f'cannot write{where}: {exc.strerror}')}\n")
        return 2
    if isinstance(exc, MemoryError):
        sys.stderr.write(f"Error: {for_terminal(memory_message())}\n")
        return 2
    if isinstance(exc, Exception):  # a bug: say so in one line; CALIBCLI_DEBUG=1 shows the traceback
        if debugging():
            return None
        sys.stderr.write(
            f"Error: internal error ({type(exc).__name__}: {for_terminal(exc)}); rerun with CALIBCLI_DEBUG=1 "
            f"for the traceback and report it\n"
        )
        return 2
    return None


def parser_failure(exc: Exception) -> int | None:
    """The exit code of an option the parser rejected (a missing value, a word where a number belongs): one
    ``Error:`` line rather than a usage box; None for any other exception (the caller re-raises)."""
    if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):  # not a parser error
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":  # Rich printed the help; Click's plain one is the message
        sys.stdout.write(exc.format_message() + ("\n" if exc.format_message() else ""))
        return exc.exit_code
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    sys.stderr.write(f"Error: {for_terminal(exc.format_message())}{hint}\n")
    return exc.exit_code


def closed_stdout(exc: SystemExit) -> bool:
    """Whether a ``SystemExit`` is Typer's or rich's answer to a closed stdout (not a gate, not --help)."""
    closed = exc.__context__
    return isinstance(closed, OSError) and closed.errno == errno.EPIPE


def pipe_closed() -> int:
    """stdout's reader went away: nothing more is written there, and the run ends with exit 141."""
    quiet_stdout()
    return PIPE_CLOSED
