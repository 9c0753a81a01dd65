"""``python -m evalcore judge``: an LLM-judged task's score corrected with human labels
(PPI++, ``evalcore.analysis.judge_report``). The labels file is read per call; nothing is
stored."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _add_format, _confidence, _open_store, _out,
                                       dump_json, json_epilog, render)
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
                    "of the task's items. The labels are not stored.")
    p.add_argument("--run", required=True, help="the judged run (name or id)")
    p.add_argument("--task", required=True, help="the judged task")
    p.add_argument("--human", required=True, metavar="LABELS.csv",
                   help="CSV with columns item_id,human")
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
    data = _read(args.human)
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
