from calibcli.cli.entry import main

main()
