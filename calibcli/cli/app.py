"""The ``calibcli`` command line: a thin layer that parses options, loads files, calls the core
and renders (STYLE: the core is pure, the CLI is thin). Each subcommand lives in
:mod:`calibcli.cli.commands`; exceptions become their ``Error:`` line and exit code in :mod:`calibcli.cli.exits`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from calibcli._version import __version__
from calibcli.cli.exits import closed_stdout, parser_failure, pipe_closed
from calibcli.core import cancel

app = typer.Typer(
    name="calibcli",
    help="Measure, test and fix the calibration of probabilistic classifiers.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # the root help in Click's plain layout: Rich's help renderer imports markdown-it and more (about
    # 0.1 s), which a command's own --help pays (its options in panels) but `calibcli --help` need not
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"calibcli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.", metavar=""),
    ] = False,
) -> None:
    """Measure, test and fix the calibration of probabilistic classifiers."""


#: Subcommand modules in :mod:`calibcli.cli.commands`, in the order ``--help`` lists them. Each module
#: has ``register(app)``; command bodies are wrapped in :func:`calibcli.cli.options.command`.
COMMANDS = (
    "ece",
    "smece",
    "tcal",
    "audit",
    "recalibrate",
    "diagram",
    "report",
    "compare",
    "regression",
    "selective",
    "monitor",
)

#: The line ``calibcli --help`` shows for each command (its ``short_help``), so that listing the
#: commands imports none of them (numpy, pyarrow, ...): ``calibcli --help`` stays fast. A command's own
#: ``--help`` shows its full text.
SUMMARIES = {
    "ece": "Binned calibration errors (l1, l2, max), Brier and log-loss, with bootstrap intervals.",
    "smece": "SmoothECE (no bins, no bandwidth to choose), with a bootstrap interval.",
    "tcal": "Test perfect calibration: T-Cal, or exact binomial tests for discrete predictors.",
    "audit": "Where is it miscalibrated? Every segment and intersection, with tests adjusted for their number.",
    "recalibrate": "Fit, save, apply and evaluate recalibration maps (docs: How it is computed §5).",
    "diagram": "Draw binned and smooth reliability diagrams, with intervals and the metric in the legend.",
    "report": "One self-contained HTML page: verdict, diagrams, metrics, test and recalibration.",
    "compare": "A candidate model against a baseline: every metric and their difference, paired when possible.",
    "regression": "Calibration of regression predictions: Gaussian, quantiles, intervals or samples (PIT, coverage).",
    "selective": "When can I trust the answer? Risk-coverage, AURC, AUGRC, risk at coverage, for LLMs and classifiers.",
    "monitor": "Is it drifting? Calibration per time window against a reference, with alerts of known error rate.",
}


def load_command(name: str):
    """The Click command of ``calibcli NAME``, its module imported now; None for a command still being
    built in this checkout (its module absent)."""
    import typer.main

    try:
        module = importlib.import_module(f"calibcli.cli.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"calibcli.cli.commands.{name}":
            raise
        return None
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="rich")
    module.register(holder)
    command = typer.main.get_group(holder).commands[name]
    command.short_help = SUMMARIES.get(name, command.short_help)
    _help_is_a_flag(command)
    return command


def _help_is_a_flag(command) -> None:
    """``--help`` shows no ``<bool>`` value in a command's help, like every other flag
    (:func:`calibcli.cli.options.pure_flags`)."""
    for sub in getattr(command, "commands", {}).values():
        _help_is_a_flag(sub)
    option = command.get_help_option(command.context_class(command))
    if option is not None:
        option.metavar = ""


class _LazyGroup(typer.core.TyperGroup):
    """The root command: a subcommand's module is imported when it runs (or shows its help), not when
    ``calibcli --help`` lists the commands, which uses :data:`SUMMARIES`."""

    _listing = False

    def list_commands(self, ctx) -> list[str]:
        return [n for n in COMMANDS if self.get_command(ctx, n) is not None]

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            if self._listing and cmd_name in SUMMARIES and _exists(cmd_name):
                return typer.core.TyperCommand(cmd_name, short_help=SUMMARIES[cmd_name], help=SUMMARIES[cmd_name])
            command = load_command(cmd_name)
            if command is None:
                return None
            self.commands[cmd_name] = command
        return self.commands.get(cmd_name)

    def format_help(self, ctx, formatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _exists(name: str) -> bool:
    from importlib.util import find_spec

    return find_spec(f"calibcli.cli.commands.{name}") is not None


app.info.cls = _LazyGroup


def main() -> None:
    """Entry point: the app without Typer's standalone handling, so that an option the parser rejects
    (a missing value, a word where a number belongs) is one ``Error:`` line on stderr with exit 2,
    like every other bad input, rather than a usage box.

    SIGINT and SIGTERM stop the run (:mod:`calibcli.core.cancel`): ``Error: interrupted``, exit 130 or 143 (the
    console script, :mod:`calibcli.cli.entry`, installs the handlers before this module is imported).
    A reader of stdout that goes away (``| head``) ends the run quietly with exit 141."""
    try:
        with cancel.handling_signals():
            try:
                code = app(standalone_mode=False)
                sys.stdout.flush()  # a closed pipe shows here rather than at exit
            except Exception as exc:
                if type(exc).__name__ == "Abort" and isinstance(exc.__context__, KeyboardInterrupt):
                    raise exc.__context__ from None  # interrupted outside a command (Click's wrapping)
                parsed = parser_failure(exc)
                if parsed is None:
                    raise
                sys.exit(parsed)
    except KeyboardInterrupt as exc:
        cancel.end(exc)
    except BrokenPipeError:
        sys.exit(pipe_closed())
    except SystemExit as exc:  # Typer (printing --help, --version) and rich exit 1 on a closed stdout: not a gate
        if not closed_stdout(exc):
            raise
        sys.exit(pipe_closed())
    if cancel.requested():  # interrupted, in the command or around it (Typer turns that into exit 130 silently):
        cancel.report()  # say so, and end now, without a slow interpreter teardown
        cancel.exit_now(128 + cancel.signal_number())
    sys.exit(code if isinstance(code, int) else 0)
