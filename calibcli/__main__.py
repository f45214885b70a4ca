from calibcli.cli import main

main()
