"""``python -m evalcore maintain``: compact small files, free the space of deleted runs and
remove files a killed writer left behind (see ``evalcore.store.maintain``)."""

from __future__ import annotations

import argparse
from datetime import timedelta

from evalcore import access
from evalcore.errors import StoreError
from evalcore.commands._shared import (EXIT_OK, _actor, _open_store, _out, _Usage, dump_json,
                                       json_epilog)


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of days, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more days, got {text!r}")
    return value


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "maintain", epilog=json_epilog("maintain"), help="compact the store's files and free the space of deleted runs",
        description="Housekeeping of the store, safe while others read and write: each step "
                    "waits for the store's writer lock (one write or step at a time) and no "
                    "step deletes a file or snapshot that a read of the last 10 minutes may "
                    "still use. Every ingest already merges a table's files of one size level "
                    "(under 256 KiB, 2 MiB, 16 MiB, 128 MiB) once 8 have gathered, so file "
                    "counts stay bounded without maintain. maintain: (1) merges all small "
                    "Parquet files of each table into one; (2) expires catalog snapshots "
                    "older than --keep-days that stopped being the latest at least 10 minutes "
                    "ago; this ENDS TIME TRAVEL to them (the current content is never changed) "
                    "and lets (3) delete the files only they referenced, and the files merged "
                    "away, once 10 minutes have passed (on a local store: from the next day "
                    "on, as the SQLite catalog compares those times by the day): this is what "
                    "frees the disk space of deleted runs; (4) deletes orphan files (written "
                    "by an ingest that was killed before it committed) older than "
                    "--orphan-days; younger unreferenced files may belong to an ingest still "
                    "running, so they are kept. DuckLake's cleanup_all is never used.")
    p.add_argument("--keep-days", type=_days, default=None, dest="keep_days",
                   help="keep snapshots (time travel, and restore of deleted runs) of the "
                        "last DAYS days (default: $EVALBARS_KEEP_DAYS, else 30; 0 keeps only "
                        "the current state and what a read of the last 10 minutes may use). "
                        "The deleted runs this makes unrecoverable are listed")
    p.add_argument("--orphan-days", type=_days, default=1.0, dest="orphan_days",
                   help="delete orphan files older than DAYS days (default 1; at least 10 "
                        "minutes)")
    p.add_argument("--no-merge", action="store_false", dest="merge",
                   help="skip merging small files")
    p.add_argument("--dry-run", action="store_true", dest="dry_run",
                   help="only count what would be expired and deleted")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from evalcore.store.maintain import keep_history_default
    actor = _actor(args)
    access.check(actor, "maintain")
    try:
        keep = (timedelta(days=args.keep_days) if args.keep_days is not None
                else keep_history_default())
    except StoreError as exc:
        raise _Usage(str(exc)) from None
    store = _open_store(args)
    r = store.maintain(merge=args.merge, keep_history=keep,
                       orphans_older_than=timedelta(days=args.orphan_days), dry_run=args.dry_run,
                       actor=actor)
    days = keep.total_seconds() / 86400
    if args.format == "json":
        _out(dump_json({"merged": r.merged, "files_merged": r.files_merged,
                        "snapshots_expired": r.snapshots_expired,
                        "files_deleted": r.files_deleted, "orphans_deleted": r.orphans_deleted,
                        "dry_run": r.dry_run, "keep_days": days,
                        "unrecoverable": list(r.unrecoverable)}))
    else:
        verb = "would be" if r.dry_run else "were"
        _out(f"{f'{r.files_merged} small file(s) merged; ' if r.merged else ''}"
             f"{r.snapshots_expired} snapshot(s) older than {days:g} day(s) {verb} "
             f"expired, {r.files_deleted} old file(s) and {r.orphans_deleted} orphan file(s) "
             f"{verb} deleted")
        if r.unrecoverable:
            _out(f"deleted run(s) that {'would' if r.dry_run else 'can'} no longer be restored"
                 f"{' after this' if r.dry_run else ''}: {', '.join(r.unrecoverable)}")
    return EXIT_OK
