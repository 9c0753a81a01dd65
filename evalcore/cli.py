"""Command line interface: ``python -m evalcore <command> ...``.

A peer of the dashboard pages over the same ``evalcore.analysis`` calls, so every number the
CLI prints is the one the pages show. Each command is a module of ``evalcore.commands`` with
``add_parser(subparsers)`` and ``run(args)``; this module holds the global options, the
registry of commands (``COMMANDS``, in the order ``--help`` lists them) and the mapping of
exceptions to exit codes (0 ok, 1 internal error, 2 usage, 3 bad input, 4 store busy or
unavailable, 5 no space left). The manual, with every command's JSON keys: docs/cli.md.

Every line written to the terminal has its control characters escaped
(``evalcore.termsafe``): names from files cannot send escape sequences.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from evalcore import __version__
from evalcore.commands import (audit, compare, coverage, export, history, ingest, items,
                               judge, leaderboard, maintain, migrate, noise, plan, report,
                               restore, runs, runs_admin)
from evalcore.commands._shared import (  # noqa: F401  (re-exported: tests use them)
    DEFAULT_LOCK_TIMEOUT, EXIT_BAD_INPUT, EXIT_BUSY, EXIT_DISK_FULL, EXIT_INTERNAL, EXIT_OK,
    EXIT_USAGE, _add_store_options, _BadInput, _err, _Usage, dump_json, records, to_latex,
    to_markdown)
from evalcore.commands.ingest import _Progress  # noqa: F401  (re-exported: tests use it)
from evalcore.commands.leaderboard import LEADERBOARD_METHODS  # noqa: F401
from evalcore.errors import (
    AnalysisError,
    DiskFullError,
    EvalbarsError,
    IngestError,
    NotAllowed,
    StoreBusyError,
    StoreError,
    StoreInternalError,
    StoreUnavailableError,
)
from evalcore.termsafe import SafeStream
from evalcore.threads import pin_blas_threads

COMMANDS = (ingest, runs, leaderboard, compare, plan, audit, coverage, runs_admin, report,
            items, migrate, maintain, noise, judge, export, history, restore)


def build_parser() -> argparse.ArgumentParser:
    """The parser: global options, then every command of ``COMMANDS``; ``--store`` and
    ``--lock-timeout`` are accepted before and after the command name."""
    parser = argparse.ArgumentParser(
        prog="python -m evalcore",
        description="evalbars: error bars, paired comparisons and planning for LLM eval "
                    "results (lm-evaluation-harness, inspect_ai, HELM, tidy tables).",
        epilog="Exit codes: 0 ok, 1 internal error, 2 usage error or a write refused (read-only: "
               "EVALBARS_READONLY=1), 3 bad input (unreadable "
               "file, unknown or ambiguous run, impossible analysis), 4 store busy (another "
               "process kept the store locked) or unavailable (catalog unreachable), 5 no "
               "space left on device (store unchanged). "
               "Runs: a name, an id, or #ID / id:ID / name:NAME to be explicit. "
               "Run 'python -m evalcore COMMAND --help' for a command.")
    _add_store_options(parser)
    parser.set_defaults(store=None, data_path=None, lock_timeout=DEFAULT_LOCK_TIMEOUT,
                        author=None)
    parser.add_argument("--version", action="version", version=f"evalbars {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    for command in COMMANDS:
        command.add_parser(sub)
    for command in sub.choices.values():
        _add_store_options(command)
    return parser


def _is_busy(exc: BaseException) -> bool:
    """True when a StoreError means another process holds the store (exit code 4)."""
    from evalcore.analysis import is_store_busy
    return is_store_busy(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (argparse usage errors exit 2 via SystemExit).

    Everything written to stdout/stderr meanwhile (also argparse's messages) goes through
    ``termsafe.SafeStream``: control characters from file content, run names or arguments
    are shown escaped (``\\x1b``), never sent to the terminal raw."""
    pin_blas_threads()  # one BLAS thread (EVALBARS_BLAS_THREADS overrides; evalcore/threads.py)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(out), SafeStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except _Usage as exc:
        _err(f"usage error: {exc} (see python -m evalcore {args.command} --help)")
        return EXIT_USAGE
    except NotAllowed as exc:
        _err(f"error: {exc}")                 # read-only, or a role that may not write
        return EXIT_USAGE
    except (IngestError, AnalysisError, _BadInput) as exc:
        _err(f"error: {exc}")
        return EXIT_BAD_INPUT
    except DiskFullError as exc:
        _err(f"error: {exc}")
        return EXIT_DISK_FULL
    except StoreUnavailableError as exc:
        _err(f"error: {exc}")                 # the message begins "store unavailable:"
        return EXIT_BUSY
    except StoreInternalError as exc:
        _err(f"internal error: {exc}")
        return EXIT_INTERNAL
    except StoreError as exc:
        if isinstance(exc, StoreBusyError) or _is_busy(exc):
            _err(f"store busy: {exc}")
            return EXIT_BUSY
        _err(f"error: {exc}")
        return EXIT_BAD_INPUT
    except EvalbarsError as exc:
        _err(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # never a traceback for the user
        _err(f"internal error ({type(exc).__name__}): {exc}")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
