"""CLI subcommands that live in their own modules (``add_parser(subparsers)`` + ``run(args)``)."""
