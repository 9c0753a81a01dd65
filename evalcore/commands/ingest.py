"""``python -m evalcore ingest PATH...``: read files, folders and zips into the store as one
batch (one transaction), list every file that was not stored and why."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from evalcore.commands._shared import (EXIT_BAD_INPUT, EXIT_OK, _actor, _add_format, _BadInput,
                                       _cell_text, _err, _open_store, _out, _store_label,
                                       dump_json, json_epilog, records, render)
from evalcore.errors import StoreError
from evalcore.termsafe import escape


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("ingest", epilog=json_epilog("ingest"),
                       help="read result files, folders or zips into the store",
                       description="Read lm-evaluation-harness results/sample logs, lighteval "
                                   "and Open LLM Leaderboard results files, inspect_ai "
                                   "logs (.eval/.json), HELM run folders/zips, Every Eval Ever "
                                   "aggregate files (with their _samples.jsonl) and tidy tables "
                                   "(CSV/JSONL/Parquet) into the store, in one transaction. "
                                   "Files of one run (a results JSON and its sample logs) "
                                   "become one run; every model of a tidy table its own run; "
                                   "ingesting the same files again changes nothing. Prints "
                                   "what was detected per run, then every file that was not "
                                   "stored with its place and reason (bad input, a Git LFS "
                                   "pointer, no scores). One bad file does not block the "
                                   "others: exit code 3 if any file was bad or nothing had "
                                   "scores, 0 otherwise; --strict stores nothing unless "
                                   "every file can be stored.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, folders (recursive) or zips")
    p.add_argument("--strict", action="store_true",
                   help="all or nothing (for CI): any bad file, or a file without scores, "
                        "stops the batch with exit code 3 and nothing is written. Default: "
                        "every good run is stored and every bad file listed (exit code 3 if "
                        "any file was bad)")
    p.add_argument("--cluster-key", metavar="KEY", default=None,
                   help="cluster items by this field: inspect sample metadata key or lm_eval "
                        "doc field (e.g. passage_id, subject); default: an obvious grouping "
                        "key is applied automatically when it gives at least 20 clusters "
                        "with more than one item each on average, otherwise offered (reported, "
                        "not applied); '' for no clusters")
    p.add_argument("--columns", metavar="NAME=COLUMN,...", type=_column_map, default=None,
                   help="which columns of a tidy table (CSV/JSONL/Parquet) are model, run, "
                        "task, item_id, score, metric, answer, cluster, when the file names "
                        "them otherwise, e.g. model=llm,task=qset,item_id=question_id,"
                        "score=correct; a JSONL path into nested objects is dotted "
                        "(score=evaluation.score); names not given keep their default")
    _add_format(p)
    p.set_defaults(func=run)
    return p


class _Progress:
    """A one-line progress bar on stderr (only used when stderr is a terminal)."""

    def __init__(self, stream):
        self.stream = stream
        self.last = -1

    def __call__(self, done: int, total: int, current: str) -> None:
        frac = (done / total) if total else 1.0
        pct = int(frac * 100)
        if pct == self.last:
            return
        self.last = pct
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        name = escape(os.path.basename(str(current)))[-40:]
        write = getattr(self.stream, "write_raw", self.stream.write)
        write(f"\r[{bar}] {pct:3d}% {name:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self.last >= 0:
            self.stream.write("\n")
            self.stream.flush()


def _column_map(text: str) -> dict[str, str]:
    """``--columns`` as a tidy column map; a malformed one is a usage error (exit 2)."""
    from evalcore.ingest.tidy import parse_columns
    try:
        return parse_columns(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None



def run(args) -> int:
    """Read the paths as a batch, store every good run (one transaction), list every file
    that was not stored. Exit 3 when a file was bad, or when nothing in the batch had data;
    ``--strict``: all or nothing (the first problem is the error, nothing is written)."""
    from evalcore import access
    from evalcore.ingest import problem_row, read_paths
    access.check(_actor(args), "ingest")       # read-only: refused before reading anything
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise _BadInput(f"no such file or folder: {', '.join(missing)}")
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    try:
        batch = read_paths([Path(p) for p in args.paths], progress=progress,
                           cluster_key=args.cluster_key, strict=args.strict,
                           columns=args.columns)
    finally:
        if progress is not None:
            progress.close()
    if not batch.runs and not batch.problems:
        skipped = (f"; skipped: {'; '.join(batch.skipped[:5])}"
                   f"{' ...' if len(batch.skipped) > 5 else ''}" if batch.skipped else "")
        raise _BadInput(f"no evaluation results found in {', '.join(args.paths)}{skipped}")
    problems = [problem_row(e) for e in batch.problems]
    report = None
    if batch.runs:
        store = _open_store(args, create=True)
        report = store.ingest(batch.runs, skip_invalid=not args.strict, actor=_actor(args))
        problems += [problem_row(StoreError(m)) for m in report.rejected]
    runs = report.runs if report is not None else pd.DataFrame()
    warnings = list(report.warnings) if report is not None else []
    n_bad = sum(p["kind"] != "no scores" for p in problems)
    stored_any = len(runs) > 0
    code = EXIT_BAD_INPUT if (n_bad or not stored_any) else EXIT_OK
    if args.format == "json":
        _out(dump_json({"store": _store_label(args), "already_present":
                        bool(report is not None and report.already_present),
                        "warnings": warnings, "runs": records(runs), "not_stored": problems}))
    elif args.format != "table":
        if stored_any:
            _out(render(runs, args.format))
    else:
        _out(_ingest_text(args, report, runs, warnings, problems))
    if code != EXIT_OK:
        names = [str(p["file"]) for p in problems if p["file"]]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        if args.format in ("table", "json"):
            _err(f"error: {len(problems)} file(s) not stored (listed above): {shown}")
        else:   # stdout holds only the runs table: the list goes to stderr
            _err(f"error: {len(problems)} file(s) not stored: {shown}\n"
                 + "\n".join(_problem_line(p) for p in problems))
    return code


def _problem_line(p: dict) -> str:
    place = f" at {p['where']}" if p["where"] else ""
    return f"- {p['file'] or '(run)'}{place}: {p['reason']}"


def _ingest_text(args, report, runs: pd.DataFrame, warnings: list[str],
                 problems: list[dict]) -> str:
    lines = []
    if report is not None and report.already_present:
        lines.append("Already present: every file was in the store already; nothing changed."
                     if not problems else "Already present: every run that could be read was "
                     "in the store already; nothing changed.")
    if report is not None:
        lines.append(f"Store: {_store_label(args)}")
    for r in runs.itertuples(index=False):
        d = r._asdict()
        lines.append(f"- {d.get('name')} (id {d.get('run_id')}) [{d.get('status')}]: "
                     f"format {d.get('source_format')}, model {d.get('model') or '?'}")
        lines.append(f"    tasks: {d.get('tasks') or '-'}")
        lines.append(f"    metrics: {d.get('metrics') or '-'}")
        lines.append(f"    items: {_cell_text(d.get('n_items'))}, scores: "
                     f"{_cell_text(d.get('n_scores'))}, answers per item (max): "
                     f"{_cell_text(d.get('k_max'))}")
        w = d.get("warnings")
        if w:
            lines.append(f"    warnings: {w}")
    for w in warnings:
        lines.append(f"warning: {w}")
    if problems:
        lines.append(f"Not stored: {len(problems)} file(s) "
                     f"({'the runs listed above were stored' if len(runs) else 'nothing was written'}):")
        lines += [_problem_line(p) for p in problems]
    return "\n".join(lines)
