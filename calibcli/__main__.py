from calibcli.entry import main

main()
