"""One module per subcommand; :mod:`calibcli.cli.app` registers them on the app."""
