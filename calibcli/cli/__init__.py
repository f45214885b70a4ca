"""The command line: the entry point, the Typer app, the shared option groups and one thin module per
command (:mod:`calibcli.cli.commands`)."""
