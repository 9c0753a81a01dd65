"""``python -m evalcore export --format eee --out DIR [RUN ...]``: stored runs as Every Eval
Ever files (aggregate JSON + instance-level JSONL in the datastore's folder layout), with the
leaderboard's intervals in the uncertainty fields (``evalcore.export.eee``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalcore.commands._shared import (EXIT_OK, _BadInput, _confidence, _open_store, _out,
                                       _positive_int, dump_json, json_epilog)
from evalcore.commands.leaderboard import LEADERBOARD_METHODS

EXPORT_FORMATS = ("eee",)


def add_parser(sub) -> argparse.ArgumentParser:
    epilog = json_epilog("export").replace("--format json", "--json")
    p = sub.add_parser("export", epilog=epilog,
                       help="write runs as Every Eval Ever files (--format eee)",
                       description="Write each run as an Every Eval Ever aggregate JSON and, "
                                   "where it has item scores, its instance-level JSONL, under "
                                   "OUT/data/<benchmark>/<developer>/<model>/<uuid>.json (the "
                                   "datastore's layout; schema 0.3.0). The uncertainty fields "
                                   "hold the leaderboard's interval for each task and metric "
                                   "(method, confidence, standard error, n). The file name is "
                                   "derived from the run's content: exporting a run again "
                                   "overwrites its files.")
    p.add_argument("runs", nargs="*", metavar="RUN", help="runs to export (default: all)")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="eee", dest="export_format",
                   help="file format (default eee: Every Eval Ever)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write into")
    p.add_argument("--method", choices=LEADERBOARD_METHODS, default="wilson",
                   help="leaderboard interval method whose cells fill the uncertainty "
                        "fields (default wilson)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--benchmark", metavar="NAME",
                   help="the datastore's benchmark folder (default: the run's only task, "
                        "else 'evalbars')")
    p.add_argument("--organization", default="unknown", metavar="NAME",
                   help="source_metadata.source_organization_name for runs not read from "
                        "an Every Eval Ever file (default 'unknown')")
    p.add_argument("--resamples", type=_positive_int, default=2000,
                   help="bootstrap resamples for --method bootstrap (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--json", action="store_true",
                   help="print what was written as JSON (keys in docs/cli.md)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from evalcore.export import export_eee, write_eee
    store = _open_store(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _BadInput(f"--out {args.out}: expected a folder, found a file")
    export = export_eee(store, list(args.runs) or None, method=args.method,
                        confidence=args.confidence, benchmark=args.benchmark,
                        organization=args.organization, n_resamples=args.resamples,
                        seed=args.seed)
    write_eee(export, out)
    if args.json:
        _out(dump_json({
            "format": args.export_format, "out": str(out), "method": export.method,
            "confidence": export.confidence,
            "runs": [{"run_id": r.run_id, "run": r.run, "uuid": r.uuid,
                      "aggregate": r.aggregate, "samples": r.samples,
                      "n_results": r.n_results, "n_samples": r.n_samples}
                     for r in export.runs],
            "notes": list(export.notes)}))
        return EXIT_OK
    for r in export.runs:
        extra = f" + {r.n_samples:,} instance lines" if r.samples else " (no item scores)"
        _out(f"{r.run}: {out / r.aggregate}{extra}")
    _out(f"{len(export.runs)} run(s) written under {out} "
         f"(intervals: {export.method}, {export.confidence:g})")
    for note in export.notes:
        _out(f"note: {note}")
    return EXIT_OK
