"""``python -m evalcore audit``: the harness's reported stderrs against the ones recomputed
from item scores, with flags and a note where the item scores cover fewer items."""

from __future__ import annotations

import argparse

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _add_format, _open_store, _out, dump_json,
                                       json_epilog, records, render)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("audit", epilog=json_epilog("audit"),
                       help="check harness-reported stderrs against item scores",
                       description="For every reported metric: the harness's value and stderr, "
                                   "the stderr recomputed from item scores where both exist, "
                                   "and flags (stderr mismatch, zero stderr with 0<p<1, N/A "
                                   "stderr, n mismatch); a note where the item scores cover "
                                   "fewer items than the reported value (a log trimmed "
                                   "upstream).")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="only these runs")
    p.add_argument("--flagged", action="store_true", help="only rows with a flag")
    _add_format(p)
    p.set_defaults(func=run)
    return p


AUDIT_COLUMNS = ["run_id", "run", "task", "metric", "reported", "reported_stderr", "stderr_raw",
                 "n_reported", "recomputed_stderr", "n_items", "flag", "note"]


def _audit_notes(store, aud: pd.DataFrame) -> list[str | None]:
    """Per audit row: None, or how many of the reported value's items the item scores cover
    when they cover fewer ("trimmed upstream: " when ingest found the log cut after it was
    written, ``protocol["trimmed_upstream"]``)."""
    if aud.empty:
        return []
    ids = sorted({int(r) for r in aud["run_id"]})
    prot = store.run_protocols(ids)
    trimmed = {int(r) for r, p in zip(prot["run_id"], prot["protocol"])
               if isinstance(p, dict) and p.get("trimmed_upstream")}
    notes: list[str | None] = []
    for r, n_rep, n_it in zip(aud["run_id"], aud["n_reported"], aud["n_items"]):
        if pd.isna(n_rep) or pd.isna(n_it) or int(n_it) >= int(n_rep):
            notes.append(None)
            continue
        why = "trimmed upstream: " if int(r) in trimmed else ""
        notes.append(f"{why}the item scores cover {int(n_it):,} of the {int(n_rep):,} items of "
                     f"the reported value")
    return notes


def run(args) -> int:
    store = _open_store(args)
    ids = None
    if args.runs:
        from evalcore.analysis import resolve_run
        ids = [resolve_run(store, r) for r in args.runs]
    aud = store.audit(ids)
    names = {int(r): str(n) for r, n in zip(store.runs()["run_id"], store.runs()["name"])}
    aud = aud.assign(run=[names.get(int(r), str(r)) for r in aud["run_id"]])
    aud = aud.assign(note=pd.Series(_audit_notes(store, aud), index=aud.index, dtype=object))
    aud = aud[[c for c in AUDIT_COLUMNS if c in aud.columns]]
    if args.flagged:
        aud = aud[aud["flag"].notna()]
    if args.format == "json":
        _out(dump_json({"audit": records(aud)}))
        return EXIT_OK
    _out(render(aud, args.format))
    return EXIT_OK
