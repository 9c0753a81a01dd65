"""``python -m evalcore judge``: an LLM-judged task's score corrected with human labels
(PPI++, ``evalcore.analysis.judge_report``). The labels file is read per call; nothing is
stored."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _add_format, _confidence, _open_store, _out,
                                       _Usage, dump_json, json_epilog, render)
from evalcore.errors import IngestError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "judge", epilog=json_epilog("judge"),
        help="LLM-judged task: judge-only, human-only and PPI++ scores with human labels",
        description="Corrects a judge-scored task with human labels on a random sample of its "
                    "items (prediction-powered inference, PPI++ with power tuning: "
                    "Angelopoulos et al. 2023; Angelopoulos, Duchi & Zrnic 2023). Prints the "
                    "judge's own mean and interval, the human labels alone (Wilson for 0/1, t "
                    "otherwise), the PPI++ estimate with its interval and lambda, and the "
                    "judge-human agreement (confusion table, Cohen's kappa, the judge's bias). "
                    "LABELS.csv has columns item_id,human (0/1, or a number on the judge's "
                    "scale) for at least 10 of the run's items, which must be a random sample "
                    "of the task's items. With --vs RUN_B --human-b LABELS_B.csv: the paired "
                    "difference B - A of two runs graded by the same judge, judge-only (the "
                    "Compare page's interval), human-only and PPI++ on the per-item "
                    "differences, paired on the items labelled in both files. The labels are "
                    "not stored.")
    p.add_argument("--run", required=True, help="the judged run (name or id)")
    p.add_argument("--task", required=True, help="the judged task")
    p.add_argument("--human", required=True, metavar="LABELS.csv",
                   help="CSV with columns item_id,human")
    p.add_argument("--vs", metavar="RUN_B",
                   help="a second run of the task graded by the same judge: compare B - A")
    p.add_argument("--human-b", dest="human_b", metavar="LABELS_B.csv",
                   help="human labels of --vs's answers (columns item_id,human)")
    p.add_argument("--metric", help="the judge's metric (default: the task's default metric)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level of the intervals (default 0.95)")
    _add_format(p)
    p.set_defaults(func=run)
    return p


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise IngestError(path, None, "a labels CSV file", "no such file") from None
    except IsADirectoryError:
        raise IngestError(path, None, "a labels CSV file", "it is a folder") from None
    except OSError as exc:
        raise IngestError(path, None, "a readable labels CSV file", exc.strerror) from None


def run(args) -> int:
    """Reads the labels (exit 3 on a bad file), then prints the three answers."""
    from evalcore import analysis as an
    if (args.vs is None) != (args.human_b is None):
        raise _Usage("--vs RUN_B and --human-b LABELS_B.csv go together")
    data = _read(args.human)
    if args.vs is not None:
        return _compare(args, data, _read(args.human_b))
    store = _open_store(args)
    report = an.judge_report(store, args.run, args.task, data, args.human,
                             metric=args.metric, confidence=args.confidence)
    if args.format == "json":
        _out(dump_json(report.to_dict()))
        return EXIT_OK
    table = pd.DataFrame(an.estimate_rows(report))
    if args.format != "table":
        _out(render(table, args.format))
        return EXIT_OK
    lines = [f"{report.run} on {report.task} ({report.metric}): {report.n_labelled} items "
             f"labelled by people, {report.n_unlabelled} judged only; "
             f"{100 * report.confidence:g}% intervals.", render(table, "table")]
    lines += an.agreement_sentences(report)
    lines.append(f"Assumption: {report.sampling_note}")
    lines += [f"Warning: {w}" for w in report.warnings]
    _out("\n".join(lines))
    return EXIT_OK


def _compare(args, data_a: bytes, data_b: bytes) -> int:
    """``--vs``: the paired difference B - A, judge-only, human-only and PPI++."""
    from evalcore import analysis as an
    store = _open_store(args)
    cmp = an.judge_compare(store, args.run, args.vs, args.task, data_a, args.human, data_b,
                           args.human_b, metric=args.metric, confidence=args.confidence)
    if args.format == "json":
        _out(dump_json(cmp.to_dict()))
        return EXIT_OK
    table = pd.DataFrame(an.comparison_rows(cmp))
    if args.format != "table":
        _out(render(table, args.format))
        return EXIT_OK
    lines = [f"B = {cmp.run_b} minus A = {cmp.run_a} on {cmp.task} ({cmp.metric}): "
             f"{cmp.n_shared} shared items, {cmp.n_labelled} labelled in both runs; "
             f"{100 * cmp.confidence:g}% intervals.", render(table, "table"),
             f"PPI++ lambda = {cmp.ppi.lam:.3f}.", f"Assumption: {cmp.sampling_note}"]
    lines += [f"Warning: {w}" for w in cmp.warnings]
    _out("\n".join(lines))
    return EXIT_OK
