"""``python -m evalcore report [RUN...]``: one self-contained HTML report (``--out``), and
a PDF (``--pdf``) and LaTeX tables (``--latex``) of the same content."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalcore.commands._shared import (EXIT_OK, _BadInput, _confidence, _open_store, _out,
                                       _positive_float, _positive_int)
from evalcore.commands.leaderboard import LEADERBOARD_METHODS

# = evalcore.report.build.SECTIONS (a test checks they agree); repeated here so that building
# the parser (--help, usage errors) does not import the analysis layer and scipy.
REPORT_SECTIONS = ("leaderboard", "comparisons", "repeats", "planner", "methods", "provenance")


def add_parser(sub) -> argparse.ArgumentParser:
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
    p.set_defaults(func=run)
    return p


def run(args) -> int:
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
