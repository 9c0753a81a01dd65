"""``python -m evalcore items``: suspect labels, re-scoring, contamination overlap (JSON out).

Three actions over the same ``evalcore.analysis.items`` calls as the Items page:

- ``items suspects --task T``: items where at least m of the strongest models agree on a
  non-gold option, with the expected count if every label were correct; ``--csv FILE`` writes
  the list for a relabelling pass (fill its ``new_gold`` column).
- ``items rescore --task T [--relabel CSV] [--exclude ID ...]``: every run's score before and
  after, the sensitivity range over the rule's suspects, and the paired differences to the
  reference run, all with intervals.
- ``items overlap --task T --corpus PATH ... | --index FILE``: per-item 13-gram overlap with a
  corpus sample and each run's score on clean vs overlapping items.

Output is JSON on stdout (keys documented in docs/cli.md, "JSON keys"). Bad input (an unreadable corpus file,
a relabel CSV without its columns, an unknown task or run) exits with 3.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from evalcore.commands._shared import (EXIT_OK, _BadInput, _open_store, _out, _Usage, dump_json,
                                       json_epilog, records)
from evalcore.errors import AnalysisError

DEFAULT_M = 3     # = evalcore.stats.label_consensus.DEFAULT_M (not imported: --help stays light)
DEFAULT_N = 13    # = evalcore.items.ngram_index.DEFAULT_N


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("items", epilog=json_epilog("items suspects|rescore|overlap"),
                       help="item quality: suspect labels, re-scoring, contamination",
                       description="Item quality tools (JSON output). 'suspects' lists items "
                                   "where the strongest models agree on a non-gold option and "
                                   "the number chance alone would give; 'rescore' shows every "
                                   "run before and after relabelling or excluding items, with "
                                   "intervals and a sensitivity range; 'overlap' measures each "
                                   "item's n-gram overlap with a corpus sample and compares "
                                   "clean and overlapping items per run.")
    acts = p.add_subparsers(dest="action", metavar="ACTION")
    acts.required = True

    s = acts.add_parser("suspects", help="items where the strong models agree on a non-gold option")
    _common(s)
    _rule(s)
    s.add_argument("--csv", metavar="FILE", help="also write the list as CSV for relabelling "
                   "(columns task, item_id, new_gold (empty), prompt, gold, consensus, ...)")

    r = acts.add_parser("rescore", help="scores before/after relabelling or exclusion, with intervals")
    _common(r)
    _rule(r)
    r.add_argument("--metric", help="metric to re-score (default: the task's primary metric)")
    r.add_argument("--relabel", metavar="CSV", help="CSV with columns task, item_id, new_gold "
                   "(the suspects CSV with new_gold filled in works)")
    r.add_argument("--exclude", nargs="+", metavar="ITEM_ID", default=[], help="items to leave out")
    r.add_argument("--ref", metavar="RUN", help="reference run of the paired differences "
                   "(default: the best run before)")
    r.add_argument("--no-sensitivity", action="store_true", dest="no_sensitivity",
                   help="skip the range over the rule's suspects (drop them / all correct)")
    r.add_argument("--confidence", type=float, default=0.95, help="confidence level (default 0.95)")

    o = acts.add_parser("overlap", help="n-gram overlap of items with a corpus sample")
    _common(o)
    o.add_argument("--corpus", nargs="+", metavar="PATH", help="corpus files or folders: text "
                   "files, JSONL with a text field, Parquet (streamed)")
    o.add_argument("--index", metavar="FILE", help="n-gram index file: built here from --corpus "
                   "(replacing FILE), or reused when --corpus is not given")
    o.add_argument("--n", type=int, default=DEFAULT_N,
                   help=f"n-gram length in words when building (default {DEFAULT_N}, Brown et al. 2020)")
    o.add_argument("--text-field", default="text", dest="text_field",
                   help="JSONL field / Parquet column holding the text (default: text)")
    o.add_argument("--min-hits", type=int, default=1, dest="min_hits",
                   help="n-grams an item must share with the corpus to count as overlapping "
                        "(default 1: any, as Brown et al.)")
    o.add_argument("--metric", help="metric (default: the task's primary metric)")
    o.add_argument("--confidence", type=float, default=0.95, help="confidence level (default 0.95)")
    p.set_defaults(func=run)
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, help="task name as stored")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="only these runs (default: all with the task)")


def _rule(p: argparse.ArgumentParser) -> None:
    p.add_argument("--m", type=int, default=DEFAULT_M,
                   help=f"models that must agree on the same non-gold option (default {DEFAULT_M})")
    p.add_argument("--strong", type=int, default=None,
                   help="how many of the most accurate models the rule looks at (default: the "
                        "better half, at least m)")


def _suspects_json(rep) -> dict[str, Any]:
    e = rep.expectation
    return {"task": rep.task, "m": rep.m, "n_strong": rep.n_strong, "n_options": rep.n_options,
            "n_items": rep.n_items, "n_suspects": len(rep.suspects),
            "expected_if_labels_correct": e.expected, "p_value": e.p_value,
            "ratio": e.ratio, "chance_model": e.method,
            "expected_given_item_errors": rep.given_errors.expected,
            "p_value_given_item_errors": rep.given_errors.p_value,
            "conditional_model": rep.given_errors.method, "models": records(rep.models),
            "left_out": rep.left_out, "notes": rep.notes, "suspects": records(rep.suspects)}


def run(args) -> int:
    from evalcore.analysis import items as it

    store = _open_store(args)
    if args.action == "suspects":
        rep = it.suspect_labels(store, args.task, args.runs, m=args.m, n_strong=args.strong)
        if args.csv:
            Path(args.csv).write_text(rep.export_csv(), encoding="utf-8")
        _out(dump_json(_suspects_json(rep)))
        return EXIT_OK
    if args.action == "rescore":
        relabels = None
        if args.relabel:
            path = Path(args.relabel)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise _BadInput(f"{path}: cannot read the relabel CSV ({exc})") from None
            relabels = it.read_relabels(text, path.name)
        suspects = None
        out: dict[str, Any] = {}
        if not args.no_sensitivity:
            try:
                rep = it.suspect_labels(store, args.task, args.runs, m=args.m, n_strong=args.strong)
                suspects = list(rep.suspects["item_id"])
                out["suspects"] = {"n": len(suspects), "m": rep.m, "n_strong": rep.n_strong,
                                   "expected_if_labels_correct": rep.expectation.expected}
            except AnalysisError as exc:
                out["suspects"] = {"n": None, "why_not": str(exc)}
        res = it.rescore(store, args.task, args.metric, args.runs, relabels, args.exclude,
                         suspects, args.ref, args.confidence)
        out.update({"task": res.task, "metric": res.metric, "ref_run": res.ref_run,
                    "n_relabelled": res.n_relabelled, "n_excluded": res.n_excluded,
                    "n_suspects": res.n_suspects, "board": records(res.board),
                    "comparisons": records(res.comparisons),
                    "pick_consistency": records(res.consistency), "notes": res.notes,
                    "bias_note": res.bias_note})
        _out(dump_json(out))
        return EXIT_OK
    # overlap
    from evalcore.items.ngram_index import build_index
    if not args.corpus and not args.index:
        raise _Usage("give --corpus PATH ... (and optionally --index FILE to keep the index) "
                         "or --index FILE of an index built before")
    built = None
    with tempfile.TemporaryDirectory(prefix="evalbars-ngrams-") as tmp:
        index = Path(args.index) if args.index else Path(tmp) / "index.duckdb"
        if args.corpus:
            built = build_index(args.corpus, index, n=args.n, text_field=args.text_field)
        rep = it.contamination(store, args.task, index, args.metric, args.runs,
                               min_hits=args.min_hits, confidence=args.confidence)
    info = rep.index
    out = {"task": rep.task, "metric": rep.metric,
           "index": {"file": str(args.index) if args.index else None, "n": info.n,
                     "documents": info.documents, "ngrams": info.ngrams, "files": list(info.files),
                     "build_seconds": built.seconds if built else None},
           "min_hits": rep.min_hits,
           "n_items": len(rep.items), "n_overlapping": int(rep.items["overlapping"].eq(True).sum()),
           "n_untestable": rep.n_untestable, "runs": records(rep.runs),
           "notes": rep.notes, "causal_note": rep.causal_note,
           "items": records(rep.items[rep.items["hits"] > 0])}
    _out(dump_json(out))
    return EXIT_OK
