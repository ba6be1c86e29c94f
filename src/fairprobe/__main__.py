from fairprobe.cli.main import main

main()
