"""``python -m evalcore history``: who changed the store, when, and what (runs added,
renamed, tagged, deleted, restored), from the authors and messages each write records in
its DuckLake snapshot (``evalcore.store.history``)."""

from __future__ import annotations

import argparse

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _open_store, _out, _Usage, dump_json,
                                       json_epilog, render)


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "history", epilog=json_epilog("history"),
        help="list the store's changes: when, who, what",
        description="The store's writes, newest first: when (UTC), who (the author: the "
                    "signed-in user in the dashboard, --author or the OS user on the CLI), "
                    "what (runs added, merged, renamed, tagged, deleted, restored). A deleted "
                    "run can be brought back with 'restore' while its history is kept "
                    "(maintain --keep-days, 30 by default).")
    p.add_argument("--limit", type=int, default=50, metavar="N",
                   help="show the N newest changes (default 50; 0: all that are kept)")
    p.add_argument("--run", metavar="RUN_ID", type=int, default=None,
                   help="only the changes of the run with this id")
    p.add_argument("--all", action="store_true", dest="include_system",
                   help="also evalbars' own writes (table creation, merges of small files)")
    p.add_argument("--format", choices=("table", "csv", "markdown", "json"), default="table")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    if args.limit < 0:
        raise _Usage("--limit must be 0 or more")
    store = _open_store(args)
    entries = store.history(limit=args.limit or None, include_system=args.include_system,
                            run_id=args.run)
    if args.format == "json":
        _out(dump_json({"changes": [e.as_dict() for e in entries]}))
        return EXIT_OK
    if not entries:
        _out("no changes recorded")
        return EXIT_OK
    table = pd.DataFrame({
        "when (UTC)": [e.time.strftime("%Y-%m-%d %H:%M:%S") for e in entries],
        "who": [e.author for e in entries],
        "what": [e.op for e in entries],
        "runs": [", ".join(f"#{i}" for i, _ in e.runs) for e in entries],
        "message": [e.message for e in entries],
        "snapshot": [e.snapshot for e in entries]})
    _out(render(table, args.format))
    return EXIT_OK
