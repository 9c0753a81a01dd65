"""The CLI's commands, one module each with ``add_parser(subparsers)`` and ``run(args)``
(``runs_admin`` holds ``rename``, ``tag`` and ``delete``); ``evalcore.cli`` registers them and
maps exceptions to exit codes; ``_shared`` holds what they share (output, store, arguments)."""
