"""CLI subcommands that live in their own modules (``add_parser(subparsers)`` + ``run(args)``),
registered in ``evalcore.cli.build_parser``."""
