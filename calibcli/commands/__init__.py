"""One module per subcommand; :mod:`calibcli.cli` registers them on the app."""
