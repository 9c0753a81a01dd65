"""``python -m evalcore restore RUN``: bring back a deleted run exactly as it was, from the
snapshot before its deletion (``evalcore.store.history``)."""

from __future__ import annotations

import argparse

from evalcore import access
from evalcore.commands._shared import EXIT_OK, _actor, _open_store, _out, dump_json, json_epilog


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "restore", epilog=json_epilog("restore"),
        help="bring back a deleted run exactly as it was",
        description="Restore a deleted run (same id, name, tags, scores, summaries, texts "
                    "and files, so every number shown for it is the one shown before) from "
                    "the store's snapshot before the delete. Possible while maintain has not "
                    "expired that snapshot (--keep-days, 30 by default); 'history' lists the "
                    "deletes. Refused, the store unchanged, when another run has taken its "
                    "name or its files since.")
    p.add_argument("run", metavar="RUN", help="the deleted run's id (3, #3) or name")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    actor = _actor(args)
    access.check(actor, "restore")
    store = _open_store(args)
    r = store.restore_run(args.run, actor=actor)
    if args.format == "json":
        _out(dump_json({"run_id": r.run_id, "name": r.name, "deleted_by": r.deleted.author,
                        "deleted_at": r.deleted.time.isoformat(),
                        "snapshot": r.deleted.snapshot}))
    else:
        _out(f"run {r.run_id} ({r.name!r}) restored; it was deleted by "
             f"{r.deleted.author or 'unknown'} at {r.deleted.time:%Y-%m-%d %H:%M:%S} UTC")
    return EXIT_OK
