"""``python -m evalcore coverage``: the Method check for a design, no store needed
(``evalcore.stats.coverage.method_check``)."""

from __future__ import annotations

import argparse
import math

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _confidence, _number, _out, _positive_float,
                                       _positive_int, _unit_float, dump_json, json_epilog,
                                       render)

COVERAGE_FORMATS = ("text", "json", "csv", "markdown")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("coverage", epilog=json_epilog("coverage"),
                       help="method check: coverage and width of every interval method",
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
                        "docs/cli.md; csv/markdown give one row per design and method")
    p.set_defaults(func=run)
    return p


def _coverage_reports(args) -> list:
    """One report per combination of the values given (a grid when several are given)."""
    from itertools import product

    from evalcore.stats.coverage import method_check
    axes = {"n": args.n, "p": args.p, "sd": args.sd, "discordance": args.discordance,
            "clusters": args.clusters, "icc": args.icc}
    names = [k for k, v in axes.items() if v is not None]
    return [method_check(**dict(zip(names, combo)), difference=args.difference,
                         confidence=args.confidence, seed=args.seed, replicates=args.replicates)
            for combo in product(*(axes[k] for k in names))]


def _coverage_rows(reports: list) -> pd.DataFrame:
    rows = []
    for rep in reports:
        for m in rep.methods:
            rows.append({"setting": rep.setting, "n": rep.n, **rep.params, "method": m.method,
                         "default": m.is_default, "coverage": m.coverage,
                         "mc_se": m.coverage_se, "lowest": m.min_coverage,
                         "lowest_mc_se": m.min_coverage_se,
                         "mean_width": m.mean_width, "verdict": m.verdict,
                         "averaged_over": ("" if rep.window is None else
                                           f"{rep.window[0]} in [{rep.window[1]:.4g}, "
                                           f"{rep.window[2]:.4g}]")})
    return pd.DataFrame(rows)


def run(args) -> int:
    from evalcore.stats.coverage import coverage_sentence, describe
    reports = _coverage_reports(args)
    if args.format == "json":
        _out(dump_json({"confidence": args.confidence,
                        "reports": [rep.to_dict() for rep in reports]}))
        return EXIT_OK
    if args.format != "text":
        _out(render(_coverage_rows(reports), args.format))
        return EXIT_OK
    blocks = []
    for rep in reports:
        how = ("exact (binomial sums)" if rep.exact else
               f"{rep.replicates:,} simulated samples, seed {rep.seed}")
        lines = [f"Method check, {rep.nominal:.0%} intervals: {describe(rep)}",
                 f"  Default {coverage_sentence(rep)}",
                 f"  {how}; {rep.criterion}", f"  {rep.min_criterion}"]
        table = pd.DataFrame([{
            "method": ("* " if m.is_default else "  ") + m.label,
            ("average coverage" if rep.window is not None else "coverage"):
                f"{100 * m.coverage:.1f}%" + (f" ± {100 * m.coverage_se:.1f}"
                                              if m.coverage_se else ""),
            "lowest": "" if math.isnan(m.min_coverage) else f"{100 * m.min_coverage:.1f}%" + (
                f" ± {100 * m.min_coverage_se:.1f}" if m.min_coverage_se else ""),
            "mean width": f"{100 * m.mean_width:.2f} pts",
            "verdict": m.verdict} for m in rep.methods])
        if table["lowest"].eq("").all():
            table = table.drop(columns="lowest")
        lines.append(table.to_string(index=False))
        blocks.append("\n".join(lines))
    blocks.append("* = the product's default. Coverage in percent (± Monte Carlo SE), averaged "
                  "over the range named above; lowest = the lowest coverage within that range "
                  "(pointwise when exact, the lowest of 10 slices when simulated); width in "
                  "points of the score (0-100 scale).")
    _out("\n\n".join(blocks))
    return EXIT_OK
