"""``python -m evalcore migrate OLD.duckdb [--store NEW]``: copy an old single-file store into
the DuckLake layout (a folder with catalog.sqlite + data/, or a ducklake: URL)."""

from __future__ import annotations

import argparse

from evalcore.commands._shared import EXIT_OK, _actor, _open_store, _out, dump_json
from evalcore.redact import mask_location


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "migrate", help="copy an old single-file .duckdb store into the new store layout",
        description="Copy an old single-file store (OLD.duckdb, written by evalbars before "
                    "DuckLake; it can still be read but no longer written) into a new, empty "
                    "store: --store (a folder, created if missing, or a ducklake: URL with "
                    "--data-path), default $EVALBARS_STORE, else ./.evalbars. Everything is "
                    "copied in one transaction; the old file is only read. Today's cluster-key "
                    "policy is applied on the way: a cluster key an older release applied "
                    "automatically is only offered when it gives fewer than 20 clusters (as a "
                    "fresh ingest does), and each such change is listed.")
    p.add_argument("old", metavar="OLD.duckdb", help="the old single-file store")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from evalcore import access
    from evalcore.store import migrate
    access.check(_actor(args), "ingest")      # read-only: refused before the store is made
    target = _open_store(args, create=True)
    report = migrate(args.old, target, actor=_actor(args))
    shown = mask_location(report.target)
    changes = [str(c) for c in report.cluster_changes]
    if getattr(args, "format", "table") == "json":
        _out(dump_json({"source": report.source, "store": shown,
                        "runs": report.n_runs, "scores": report.n_scores,
                        "cluster_changes": changes}))
    else:
        _out(f"migrated {report.n_runs} run(s), {report.n_scores} score row(s) from "
             f"{report.source} into {shown}")
        if changes:
            _out(f"cluster keys now offered, not applied ({len(changes)}; today's policy, as a "
                 "fresh ingest): " + "; ".join(changes))
    return EXIT_OK
