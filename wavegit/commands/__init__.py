"""One module per subcommand; each has ``add_arguments(parser)`` and ``run(args) -> int``."""
