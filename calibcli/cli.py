"""The ``calibcli`` command line: a thin layer that parses options, loads files, calls the core
and renders (STYLE: the core is pure, the CLI is thin). Each subcommand lives in
:mod:`calibcli.commands`; errors become exit codes in :func:`calibcli.cli_common.command`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from calibcli._version import __version__
from calibcli.cli_common import command
from calibcli.commands.ece import ece

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


app.command("ece")(command(ece))


def main() -> None:
    app()
