"""The ``calibcli`` command line: a thin layer that parses options, loads files, calls the core
and renders (STYLE: the core is pure, the CLI is thin). Each subcommand lives in
:mod:`calibcli.commands`; errors become exit codes in :func:`calibcli.cli_common.command`.
"""

from __future__ import annotations

from typing import Annotated

import typer

import importlib

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
COMMANDS = ("ece", "smece", "tcal", "recalibrate", "diagram")

for _name in COMMANDS:
    try:
        _module = importlib.import_module(f"calibcli.commands.{_name}")
    except ModuleNotFoundError as exc:  # a command still being built in this checkout
        if exc.name != f"calibcli.commands.{_name}":
            raise
        continue
    _module.register(app)


def main() -> None:
    app()
