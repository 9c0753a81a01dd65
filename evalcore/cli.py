"""Command line interface: ``python -m evalcore <command> ...``.

A peer of the dashboard pages over the same ``evalcore.analysis`` calls, so every number the
CLI prints is the one the pages show.

Commands
--------
ingest PATH...        read files, folders and zips into the store (progress bar on a terminal)
runs                  list the runs in the store
leaderboard           scores with intervals per run x task, macro average, tiers, rank intervals
compare RUN_A RUN_B   paired difference B - A on shared items, McNemar, pairing, protocol diff
plan                  minimum detectable effect / required items (typed or from a pilot pair)
audit                 harness-reported stderrs against the ones recomputed from item scores
coverage              method check: simulated/exact coverage and width of every interval method
rename, tag, delete   manage runs
migrate OLD.duckdb    copy an old single-file store into the new layout
maintain              compact files, free the space of deleted runs, remove orphan files
report [RUN...]       one self-contained HTML report (--out FILE.html), and a PDF (--pdf)

Runs are addressed by name or id: ``#3`` or ``id:3`` is always the run with id 3, ``name:3``
the run named "3"; a bare ``3`` that is both a run's name and another run's id is refused
as ambiguous. Every command takes ``--store LOCATION`` (a store folder, a
``ducklake:postgres:...`` URL with ``--data-path DIR``, or an old ``.duckdb`` file, read-only;
default: $EVALBARS_STORE, else ./.evalbars) and ``--lock-timeout SECONDS``, before or after the
command name (``ingest results/ --store ./mystore``).

Exit codes
----------
0 ok; 1 unexpected internal error (one line, no traceback); 2 usage error (argparse, or
options that do not fit together, e.g. ``plan`` without assumptions); 3 bad input
(unreadable file, unknown or ambiguous run, analysis impossible, no store; for ``ingest``: any
bad file in the batch, the good runs being stored all the same unless ``--strict``, or
nothing in the batch had scores); 4 the store is busy (another process kept it locked past
--lock-timeout; retry when it is done) or unavailable (its catalog database cannot be reached
or the connection to it broke); 5 no space left on device (the store was not changed).

Every line written to the terminal has its control characters escaped
(``evalcore.termsafe``): names from files cannot send escape sequences.

JSON output (``--format json``)
-------------------------------
Keys are stable; numbers are plain JSON numbers, missing values are ``null``. Scores,
differences, SEs and MDEs are in the metric's own units (0.05 = 5 points for 0/1 scores).

``ingest``: ``{"store": str, "already_present": bool, "warnings": [str], "runs": [{"run_id",
"name", "model", "source_format", "tasks", "metrics", "n_items", "n_scores", "k_max",
"status", "warnings"}], "not_stored": [{"file", "where", "kind", "reason"}]}``
(``status``: "added", "already present" or "merged"; ``kind``: "bad input", "no scores" or
"rejected by the store"). Exit code 3 when a file was bad or nothing in the batch had
scores (files without scores alone do not make it 3 when other runs were stored).

``runs``: ``{"runs": [{"run_id", "name", "model", "source_format", "harness",
"harness_version", "tags", "created_at", "n_tasks", "n_scores", "has_items"}]}``.

``leaderboard``: ``{"method", "method_label", "confidence", "metric", "metrics_by_task":
{task: metric}, "metric_choices": {task: {"metric", "primary", "source", "fallback_from",
"missing": [run], "reason"}}, "notes": [str], "cells": [{"run_id", "run", "task", "metric",
"n", "score", "se", "low", "high", "method", "binary", "chance", "contains_chance",
"reported", "reported_stderr", "audit_flag", "has_items", "direction"}], "averages":
[{"run_id", "run", "n_tasks", "n_units", "score", "se", "low", "high", "kind", "tasks",
"left_out"}], "tiers": [{"run_id", "run",
"task", "best_run", "diff_vs_best", "p_raw", "p_holm", "indistinguishable_from_best",
"n_shared"}], "ranks": [{"run_id", "run", "task", "rank", "rank_low", "rank_high"}],
"task_notes": [{"task", "kind", "note"}], "metric_info": {task: {"metric", "direction",
"low", "high", "ideal", "source"}}, "groups": {group: [task]}, "group_tree": {group:
[subtask or subgroup]}, "group_cells": [{"run_id", "run", "group", "parent", "depth",
"metric", "n_tasks", "n_tasks_group", "n", "score", "se", "low", "high", "source",
"reported", "reported_stderr", "recomputed", "recomputed_se", "weighting",
"weighting_note", "missing", "note"}]}``. ``task`` is "__average__" for rows about the
macro average; ``direction`` is "higher", "lower", "target" or "unknown"
(``evalcore.metrics``); ``--task`` may name a harness group (``mmlu_humanities``): its
subtasks, with the group and its nested groups in ``group_cells``.

``compare``: ``{"run_a", "run_b", "confidence", "verdict", "family_note", "warnings": [str],
"per_task": [{"task", "metric", "n", "score_a", "score_b", "diff", "se", "low", "high",
"se_unpaired", "correlation", "b", "c", "both", "neither", "p_exact", "p_midp", "p_value",
"p_interval", "test", "p_adjusted", "adjustment", "mde", "verdict", "different", "better",
"kind", "points_scale", "sd_diff", "se_iid", "se_clustered", "n_clusters", "interval_method",
"method_reason", "widened", "low_simultaneous", "high_simultaneous", "mde_basis",
"items_needed"}], "overall": {same keys as a per_task row} | null, "pairing":
[{"task", "metric", "n_shared", "only_a": [item_id], "only_b": [item_id], "hash_mismatch":
[item_id]}], "protocol_diff": [{"scope", "setting", "value_a", "value_b"}]}``. Per row,
``verdict`` starts with "different" iff ``p_adjusted`` < 1 - confidence; ``p_value`` comes
from the procedure behind ``[low, high]`` (for 0/1 scores the larger of that interval's own
test and the exact McNemar p, the interval widened to 0 where the exact test does not
reject: ``widened``), so with ``adjustment`` "none" the interval excludes 0 iff the verdict
is "different"; with several tasks ``low``/``high`` stay unadjusted and
``low_simultaneous``/``high_simultaneous`` are Bonferroni intervals (docs/methods.md,
"Verdicts").

``plan``: ``{"alpha", "power", "sd_diff", "disagreement", "design_effect", "n", "mde",
"delta", "required_items", "pilot": {"run_a", "run_b", "task", "metric", "n", "sd_diff",
"disagreement", "diff", "design_effect"} | null}`` (``mde`` null without ``--n``,
``required_items`` null without ``--delta``).

``coverage``: ``{"confidence", "reports": [{"setting", "n", "nominal", "parameters": {name:
value}, "exact", "replicates", "seed", "criterion", "min_criterion", "window", "notes": [str],
"methods": [{"method", "label", "is_default", "nominal", "coverage", "coverage_se",
"min_coverage", "min_coverage_se", "mean_width", "verdict", ...}]}]}`` (one report per
combination of the values given; no store needed; ``coverage`` is averaged over ``window`` =
[parameter, low, high], null when pointwise).

``audit``: ``{"audit": [{"run_id", "run", "task", "metric", "reported", "reported_stderr",
"stderr_raw", "n_reported", "recomputed_stderr", "n_items", "flag", "note"}]}`` (``note``:
null, or how many of the reported value's items the item scores cover, e.g. "trimmed
upstream: the item scores cover 1 of the 79 items of the reported value").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

import pandas as pd

from evalcore import __version__
from evalcore.errors import (
    AnalysisError,
    DiskFullError,
    EvalbarsError,
    IngestError,
    StoreBusyError,
    StoreError,
    StoreInternalError,
    StoreUnavailableError,
)
from evalcore.termsafe import SafeStream, escape
from evalcore.threads import pin_blas_threads

from evalcore.commands._shared import (  # noqa: F401  (re-exported: commands and tests use them)
    DEFAULT_LOCK_TIMEOUT, EXIT_BAD_INPUT, EXIT_BUSY, EXIT_DISK_FULL, EXIT_INTERNAL, EXIT_OK,
    EXIT_USAGE, FORMATS, _add_format, _add_store_options, _BadInput, _cell_text, _confidence,
    _cut, _err, _interval, _non_negative_float, _number, _open_store, _out, _positive_float,
    _positive_int, _short_list, _store_label, _store_path, _unit_float, _Usage, dump_json,
    latex_escape, records, render, to_latex, to_markdown, to_table)
from evalcore.commands.boards import cmd_compare, cmd_leaderboard  # noqa: F401
from evalcore.commands.planning import COVERAGE_FORMATS, cmd_coverage, cmd_plan  # noqa: F401

# = evalcore.analysis.METHODS (a test checks they agree); repeated here so that building
# the parser (--help, usage errors) does not import scipy through the analysis layer.
REPORT_SECTIONS = ("leaderboard", "comparisons", "repeats", "planner", "methods", "provenance")
LEADERBOARD_METHODS = ("wilson", "clopper-pearson", "bayes", "clt", "bootstrap", "clustered")


# ---------------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------------

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


def cmd_ingest(args) -> int:
    """Read the paths as a batch, store every good run (one transaction), list every file
    that was not stored. Exit 3 when a file was bad, or when nothing in the batch had data;
    ``--strict``: all or nothing (the first problem is the error, nothing is written)."""
    from evalcore.ingest import problem_row, read_paths
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
        report = store.ingest(batch.runs, skip_invalid=not args.strict)
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


RUN_TABLE_COLUMNS = ["run_id", "name", "model", "source_format", "harness", "harness_version",
                     "tags", "created_at", "n_tasks", "n_scores", "has_items"]


def cmd_runs(args) -> int:
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


def cmd_audit(args) -> int:
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


def cmd_rename(args) -> int:
    from evalcore.analysis import resolve_run
    store = _open_store(args)
    rid = resolve_run(store, args.run)
    store.rename_run(rid, args.new_name)
    _out(f"run {rid} renamed to {args.new_name!r}")
    return EXIT_OK


def cmd_tag(args) -> int:
    from evalcore.analysis import resolve_run
    store = _open_store(args)
    rid = resolve_run(store, args.run)
    store.set_tags(rid, list(args.tags))
    _out(f"run {rid} tags: {', '.join(args.tags) or '(none)'}")
    return EXIT_OK


def cmd_delete(args) -> int:
    from evalcore.analysis import resolve_run
    store = _open_store(args)
    rid = resolve_run(store, args.run)
    if not args.yes:
        if not sys.stdin.isatty():
            raise _BadInput("refusing to delete without confirmation: add --yes")
        answer = input(f"Delete run {args.run!r} (id {rid}) and all its scores? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            _out("not deleted")
            return EXIT_OK
    store.delete_run(rid)
    _out(f"run {rid} deleted")
    return EXIT_OK


def cmd_report(args) -> int:
    from evalcore.report import ReportSpec, build_report
    from evalcore.report.html import write_html
    from evalcore.report.pdf import PdfUnavailable, write_pdf
    store = _open_store(args)
    out = Path(args.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise _BadInput(f"--out {args.out}: expected a file name ending in .html")
    spec = ReportSpec(runs=tuple(args.runs) or None, tasks=tuple(args.task or ()) or None,
                      comparisons=tuple((a, b) for a, b in (args.compare or ())),
                      method=args.method, confidence=args.confidence, adjust=args.adjust,
                      n_resamples=args.resamples, seed=args.seed, title=args.title,
                      gap=args.gap,
                      **({"sections": tuple(args.sections)} if args.sections else {}))
    report = build_report(store, spec)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_html(report, out)
    _out(f"report written: {out} ({out.stat().st_size:,} bytes)")
    if args.latex:
        from evalcore.report.latex import latex_document, report_tables
        tex = Path(args.latex)
        tex.parent.mkdir(parents=True, exist_ok=True)
        tex.write_text(latex_document(report_tables(report, style=args.latex_style)),
                       encoding="utf-8")
        _out(f"LaTeX tables written: {tex}")
    if args.pdf:
        try:
            pdf = write_pdf(out, out.with_suffix(".pdf"))
        except PdfUnavailable as exc:
            raise _BadInput(f"--pdf: {exc}") from exc
        _out(f"PDF written: {pdf} ({pdf.stat().st_size:,} bytes)")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evalcore",
        description="evalbars: error bars, paired comparisons and planning for LLM eval "
                    "results (lm-evaluation-harness, inspect_ai, HELM, tidy tables).",
        epilog="Exit codes: 0 ok, 1 internal error, 2 usage error, 3 bad input (unreadable "
               "file, unknown or ambiguous run, impossible analysis), 4 store busy (another "
               "process kept the store locked) or unavailable (catalog unreachable), 5 no "
               "space left on device (store unchanged). "
               "Runs: a name, an id, or #ID / id:ID / name:NAME to be explicit. "
               "Run 'python -m evalcore COMMAND --help' for a command.")
    _add_store_options(parser)
    parser.set_defaults(store=None, data_path=None, lock_timeout=DEFAULT_LOCK_TIMEOUT)
    parser.add_argument("--version", action="version", version=f"evalbars {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("ingest", help="read result files, folders or zips into the store",
                       description="Read lm-evaluation-harness results/sample logs, lighteval "
                                   "and Open LLM Leaderboard results files, inspect_ai "
                                   "logs (.eval/.json), HELM run folders/zips and tidy tables "
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
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("runs", help="list the runs in the store",
                       description="List the runs in the store: id, name, model, format, "
                                   "harness version, tags, number of tasks and scores, and "
                                   "whether item-level data exists.")
    _add_format(p)
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("leaderboard", help="scores with intervals per run x task",
                       description="Score and interval for every run x task (default metric "
                                   "per task: the harness's primary metric (lm_eval's first "
                                   "metric_list entry, HELM's main metric, the Open LLM "
                                   "Leaderboard's ranked metric) when a run shown has it, else "
                                   "acc, else exact_match,strict-match, else the first "
                                   "alphabetically; compare uses the same one; runs lacking it "
                                   "are named), harness-reported stderr next to "
                                   "ours with audit flags, chance level for multiple-choice "
                                   "tasks, the macro average per run (over tasks with a "
                                   "higher-is-better metric on [0, 1]; the others are named), "
                                   "task groups with nested ones (reported and recomputed "
                                   "values), which runs are indistinguishable from the "
                                   "best (paired tests, Holm; lowest is best when lower is "
                                   "better) and paired-bootstrap rank intervals.")
    p.add_argument("--task", help="only this task, or the subtasks of this harness group "
                                  "(e.g. mmlu_humanities) with the group's rows")
    p.add_argument("--metric", help="this metric instead of the default per task")
    p.add_argument("--method", choices=LEADERBOARD_METHODS, default="wilson",
                   help="interval method (default wilson). wilson/clopper-pearson/bayes need "
                        "0/1 scores (CLT is used for continuous scores, with a note); "
                        "clustered needs a cluster key")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="only these runs (names or ids)")
    p.add_argument("--resamples", type=_positive_int, default=2000,
                   help="bootstrap resamples for --method bootstrap and rank intervals "
                        "(default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--no-tiers", action="store_true", help="skip the paired tier tests")
    p.add_argument("--no-ranks", action="store_true", help="skip the rank intervals")
    _add_format(p)
    p.set_defaults(func=cmd_leaderboard)

    p = sub.add_parser("compare", help="paired comparison of two runs (B - A)",
                       description="Paired difference B - A on the items both runs share: "
                                   "difference with CI (method routed by the data and named "
                                   "with its reason: a score interval such as Tango's for two "
                                   "0/1 runs unless n and the discordant count are large; t "
                                   "quantiles for continuous scores below n = 30; t with G - 1 "
                                   "df for clustered SEs), se_iid and se_clustered, paired "
                                   "and unpaired SE, correlation, "
                                   "exact McNemar for 0/1 scores, Holm-adjusted p across tasks, "
                                   "minimum detectable effect, pairing integrity (shared, "
                                   "missing, prompt-hash mismatches), protocol diff and a "
                                   "verdict. Warnings about protocol or prompt differences, "
                                   "and a task compared on another metric than the "
                                   "leaderboard's (when the two runs lack it, with the "
                                   "reason), are printed before the numbers.")
    p.add_argument("run_a", metavar="RUN_A", help="baseline run (name or id)")
    p.add_argument("run_b", metavar="RUN_B", help="run compared against it (name or id)")
    p.add_argument("--task", help="only this task (default: every task both runs have)")
    p.add_argument("--metric", help="this metric instead of the default per task (the "
                                    "leaderboard's)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level (default 0.95); alpha = 1 - confidence")
    p.add_argument("--adjust", choices=("holm", "bh"), default="holm",
                   help="p-value adjustment across tasks (default holm)")
    _add_format(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("plan", help="minimum detectable effect / required number of items",
                       description="Paired planning: MDE = (z_{1-alpha/2} + z_power) * sd_diff "
                                   "* sqrt(design_effect / n); required n = ceil((z_{1-alpha/2} "
                                   "+ z_power)^2 * sd_diff^2 * design_effect / delta^2). "
                                   "sd_diff from --sd-diff, from a disagreement rate "
                                   "(sd_diff^2 = disagreement, the conservative bound) or "
                                   "estimated from a pilot pair of runs in the store.")
    p.add_argument("--n", type=_positive_int, help="number of items (gives the MDE)")
    p.add_argument("--delta", type=_positive_float,
                   help="gap to detect, in metric units (0.02 = 2 points; gives required items)")
    p.add_argument("--sd-diff", type=_positive_float, dest="sd_diff",
                   help="sd of per-item differences d_i = x_B - x_A")
    p.add_argument("--disagreement", type=_confidence,
                   help="share of items on which the two runs disagree (0/1 scores)")
    p.add_argument("--alpha", type=_confidence, default=0.05,
                   help="two-sided significance level (default 0.05)")
    p.add_argument("--power", type=_confidence, default=0.8, help="power (default 0.8)")
    p.add_argument("--design-effect", type=_positive_float, dest="design_effect",
                   help="design effect of clustered items (default 1, or the pilot's "
                        "when above 1)")
    p.add_argument("--pilot", nargs=2, metavar=("RUN_A", "RUN_B"),
                   help="estimate sd_diff (and the design effect) from two runs in the "
                        "store; when they never differ, the exact 95%% upper bound of their "
                        "disagreement rate is used")
    p.add_argument("--task", help="task of the pilot pair (with --pilot)")
    p.add_argument("--metric", help="metric of the pilot pair (default per task)")
    _add_format(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("audit", help="check harness-reported stderrs against item scores",
                       description="For every reported metric: the harness's value and stderr, "
                                   "the stderr recomputed from item scores where both exist, "
                                   "and flags (stderr mismatch, zero stderr with 0<p<1, N/A "
                                   "stderr, n mismatch); a note where the item scores cover "
                                   "fewer items than the reported value (a log trimmed "
                                   "upstream).")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="only these runs")
    p.add_argument("--flagged", action="store_true", help="only rows with a flag")
    _add_format(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("coverage", help="method check: coverage and width of every interval method",
                       description="For your design, how often each interval method offered "
                                   "covers the true value and how wide it is: one 0/1 score "
                                   "(--n, --p; exact binomial sums), a continuous score (--n, "
                                   "--p, --sd), a paired difference of two 0/1 runs (--n, "
                                   "--discordance, optional --difference and --p = run A's "
                                   "accuracy) or clustered items (--n, --clusters, --icc, "
                                   "optional --p). Coverage is averaged over the parameter +- "
                                   "20% (pointwise coverage of a count oscillates), and the "
                                   "lowest coverage within that range is shown beside it "
                                   "(pointwise when exact, the lowest of 10 slices when "
                                   "simulated); verdict: "
                                   "within 1.5 points of nominal, undercovers or overcovers. "
                                   "Several values per option give a grid. No store needed.")
    p.add_argument("--n", type=_positive_int, nargs="+", required=True, help="number of items")
    p.add_argument("--p", type=_confidence, nargs="+",
                   help="expected score (the mean for --sd; run A's accuracy for "
                        "--discordance, default 0.5; the mean score for --clusters, default 0.5)")
    p.add_argument("--sd", type=_positive_float, nargs="+",
                   help="sd of continuous per-item scores in [0, 1] (simulates t and z intervals)")
    p.add_argument("--discordance", type=_confidence, nargs="+",
                   help="share of items on which two runs disagree (paired comparison)")
    p.add_argument("--difference", type=_number, default=0.0,
                   help="true difference B - A for --discordance (default 0; |difference| <= "
                        "discordance)")
    p.add_argument("--clusters", type=_positive_int, nargs="+", help="number of clusters G")
    p.add_argument("--icc", type=_unit_float, nargs="+", help="intra-cluster correlation in [0, 1)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    p.add_argument("--replicates", type=_positive_int, default=20_000,
                   help="simulated samples per design (default 20000; fewer for large designs, "
                        "to stay near a second; the Monte Carlo SE is printed)")
    p.add_argument("--format", choices=COVERAGE_FORMATS, default="text",
                   help="output format (default: text). json keys are stable and documented in "
                        "the README; csv/markdown give one row per design and method")
    p.set_defaults(func=cmd_coverage)

    p = sub.add_parser("rename", help="rename a run",
                       description="Give a run a new display name (names are unique).")
    p.add_argument("run", metavar="RUN", help="run name or id")
    p.add_argument("new_name", metavar="NEW_NAME")
    p.set_defaults(func=cmd_rename)

    p = sub.add_parser("tag", help="set the tags of a run",
                       description="Replace a run's tags (no TAG clears them).")
    p.add_argument("run", metavar="RUN", help="run name or id")
    p.add_argument("tags", nargs="*", metavar="TAG")
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("delete", help="delete a run and its scores",
                       description="Delete a run with all its scores, summaries and texts. "
                                   "Asks for confirmation on a terminal; --yes skips it.")
    p.add_argument("run", metavar="RUN", help="run name or id")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("report", help="one self-contained HTML report (and --pdf)",
                       description="Write one self-contained HTML file (Plotly inlined once, "
                                   "no network request when opened). Page 1: key findings "
                                   "(each comparison's verdict with its interval, the "
                                   "leaderboard's top group, the items needed for --gap); then "
                                   "the leaderboard with intervals and forest plot (runs "
                                   "without item scores named in one line per series), the "
                                   "pairwise comparisons asked for (verdict, paired CI, "
                                   "McNemar, 2x2 table, a few example disagreements), repeats "
                                   "and clusters where the data has them, planner numbers, a "
                                   "methods section written from what was computed, and an "
                                   "appendix (summary-only runs, provenance: files, SHA-256, "
                                   "upload times). --pdf prints the same HTML with headless "
                                   "Chromium.")
    p.add_argument("runs", nargs="*", metavar="RUN", help="runs to include (default: all)")
    p.add_argument("--task", action="append", metavar="TASK",
                   help="only this task (repeat for several; default: every task)")
    p.add_argument("--compare", nargs=2, action="append", metavar=("RUN_A", "RUN_B"),
                   help="a pairwise comparison B - A to include (repeat for several)")
    p.add_argument("--out", required=True, metavar="FILE.html", help="the HTML file to write")
    p.add_argument("--pdf", action="store_true",
                   help="also print the HTML to FILE.pdf with headless Chromium (exit code 3 "
                        "and a message when no Chromium is found)")
    p.add_argument("--sections", nargs="+", choices=REPORT_SECTIONS, metavar="SECTION",
                   help=f"sections to include (default: all of {', '.join(REPORT_SECTIONS)}; "
                        f"a section without data is left out)")
    p.add_argument("--method", choices=LEADERBOARD_METHODS, default="wilson",
                   help="leaderboard interval method (default wilson)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level (default 0.95)")
    p.add_argument("--adjust", choices=("holm", "bh"), default="holm",
                   help="p-value adjustment across tasks in a comparison (default holm)")
    p.add_argument("--resamples", type=_positive_int, default=2000,
                   help="bootstrap resamples for rank intervals and --method bootstrap "
                        "(default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--title", default="Evaluation report", help="the report's title")
    p.add_argument("--gap", type=_positive_float, default=0.02,
                   help="the gap of interest in metric units (default 0.02 = 2 points): the "
                        "key findings give the items needed to detect it")
    p.add_argument("--latex", metavar="FILE.tex",
                   help="also write the leaderboard and comparison tables as a LaTeX document "
                        "(booktabs, captions naming the method)")
    p.add_argument("--latex-style", choices=("brackets", "pm"), default="brackets",
                   dest="latex_style",
                   help="intervals in LaTeX cells: '71.9 [68.1, 75.5]' (brackets, default) or "
                        "'71.9 $\\pm$ 3.8' (pm; asymmetric intervals as +up/-down)")
    p.set_defaults(func=cmd_report)

    from evalcore.commands import items as items_command   # issue 13: its own module
    items_command.add_parser(sub)
    from evalcore.commands import maintain, migrate   # store housekeeping (own modules)
    migrate.add_parser(sub)
    maintain.add_parser(sub)
    from evalcore.commands import noise as noise_command
    noise_command.add_parser(sub, confidence_type=_confidence, positive_float=_positive_float,
                             positive_int=_positive_int, add_format=_add_format).set_defaults(
        func=lambda a: noise_command.run(a, open_store=_open_store, out=_out, render=render,
                                         dump_json=dump_json, records=records, usage_error=_Usage))

    for command in sub.choices.values():  # every command, also ones added above later
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
