"""The ``calibcli`` command line: a thin layer that parses options, loads files, calls the core
and renders (STYLE: the core is pure, the CLI is thin). Each subcommand lives in
:mod:`calibcli.commands`; errors become exit codes in :func:`calibcli.cli_common.command`.
"""

from __future__ import annotations

from typing import Annotated

import typer

import importlib
import sys

from calibcli._version import __version__

app = typer.Typer(
    name="calibcli",
    help="Measure, test and fix the calibration of probabilistic classifiers.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"calibcli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Measure, test and fix the calibration of probabilistic classifiers."""


#: Subcommand modules in :mod:`calibcli.commands`, in the order ``--help`` lists them. Each module
#: has ``register(app)``; command bodies are wrapped in :func:`calibcli.cli_common.command`.
COMMANDS = ("ece", "smece", "tcal", "recalibrate", "diagram", "report", "compare")

for _name in COMMANDS:
    try:
        _module = importlib.import_module(f"calibcli.commands.{_name}")
    except ModuleNotFoundError as exc:  # a command still being built in this checkout
        if exc.name != f"calibcli.commands.{_name}":
            raise
        continue
    _module.register(app)


def main() -> None:
    """Entry point: the app without Typer's standalone handling, so that an option the parser rejects
    (a missing value, a word where a number belongs) is one ``Error:`` line on stderr with exit 2,
    like every other bad input, rather than a usage box.

    SIGINT and SIGTERM stop the run (:mod:`calibcli.cancel`): ``Error: interrupted``, exit 130 or 143.
    A reader of stdout that goes away (``| head``) ends the run quietly with exit 141."""
    from calibcli import cancel
    from calibcli.cli_common import PIPE_CLOSED, quiet_stdout

    try:
        with cancel.handling_signals():
            try:
                code = app(standalone_mode=False)
                sys.stdout.flush()  # a closed pipe shows here rather than at exit
            except Exception as exc:
                if type(exc).__name__ == "Abort" and isinstance(exc.__context__, KeyboardInterrupt):
                    raise exc.__context__ from None  # interrupted outside a command (Click's wrapping)
                if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):  # not a parser error
                    raise
                if type(exc).__name__ == "NoArgsIsHelpError":  # the help is already printed
                    sys.exit(exc.exit_code)
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                sys.stderr.write(f"Error: {exc.format_message()}{hint}\n")
                sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        sys.stderr.write("Error: interrupted\n")
        sys.exit(cancel.exit_code(exc))
    except BrokenPipeError:
        quiet_stdout()
        sys.exit(PIPE_CLOSED)
    sys.exit(code if isinstance(code, int) else 0)
