"""``python -m evalcore runs``: list the runs in the store."""

from __future__ import annotations

import argparse

from evalcore.commands._shared import (EXIT_OK, _add_format, _open_store, _out, dump_json,
                                       json_epilog, records, render)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("runs", epilog=json_epilog("runs"),
                       help="list the runs in the store",
                       description="List the runs in the store: id, name, model, format, "
                                   "harness version, tags, number of tasks and scores, and "
                                   "whether item-level data exists.")
    _add_format(p)
    p.set_defaults(func=run)
    return p


RUN_TABLE_COLUMNS = ["run_id", "name", "model", "source_format", "harness", "harness_version",
                     "tags", "created_at", "n_tasks", "n_scores", "has_items"]


def run(args) -> int:
    store = _open_store(args)
    runs = store.runs()
    runs = runs[[c for c in RUN_TABLE_COLUMNS if c in runs.columns]]
    if args.format == "json":
        _out(dump_json({"runs": records(runs)}))
        return EXIT_OK
    if len(runs) == 0 and args.format == "table":
        _out("The store is empty: python -m evalcore ingest PATH")
        return EXIT_OK
    if args.format == "table":
        runs = runs.drop(columns=[c for c in ("model", "harness") if c in runs.columns])
        runs["created_at"] = [str(v)[:16] for v in runs["created_at"]]
    _out(render(runs, args.format))
    return EXIT_OK
