"""The ``plan`` and ``coverage`` commands (no store needed except for a pilot pair)."""

from __future__ import annotations

import math

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _cell_text, _open_store, _out, _Usage, dump_json,
                                       render)


def cmd_plan(args) -> int:
    """Items needed for a gap (``--delta``) and the smallest gap detectable with ``--n`` items,
    from typed assumptions or a pilot pair; the text output is the Planner page's sentences
    (``analysis.PairedPlan``)."""
    from evalcore import analysis as an
    pilot = None
    if args.pilot:
        if not args.task:
            raise _Usage("--pilot needs --task T (the task to estimate sd_diff on)")
        store = _open_store(args)
        pilot = an.plan_from_pair(store, args.pilot[0], args.pilot[1], args.task,
                                  metric=args.metric)
    if pilot is None and args.sd_diff is None and args.disagreement is None:
        raise _Usage("give --sd-diff, --disagreement or --pilot RUN_A RUN_B --task T")
    if args.sd_diff is not None and args.disagreement is not None:
        raise _Usage("give only one of --sd-diff and --disagreement")
    if args.n is None and args.delta is None:
        raise _Usage("give --n (for the minimum detectable effect) and/or --delta (for "
                     "the required number of items)")
    plan = an.paired_plan(gap=args.delta, alpha=args.alpha, power=args.power,
                          sd_diff=args.sd_diff, disagreement=args.disagreement,
                          design_effect=args.design_effect, pilot=pilot)
    n = args.n if args.n is not None else (pilot.n if pilot is not None and args.delta is None
                                           else None)
    mde = float(plan.mde_at(n)) if n is not None else None
    spread = plan.spread_kwargs()
    result = {"alpha": args.alpha, "power": args.power, "sd_diff": spread.get("sd_diff"),
              "disagreement": spread.get("disagreement"), "design_effect": plan.design_effect,
              "n": n, "mde": mde, "delta": args.delta, "required_items": plan.required_n,
              "pilot": None if pilot is None else dict(pilot.__dict__)}
    if args.format == "json":
        _out(dump_json(result))
        return EXIT_OK
    if args.format != "table":
        rows = [{"quantity": k, "value": v} for k, v in result.items() if k != "pilot"]
        if pilot is not None:
            rows += [{"quantity": f"pilot.{k}", "value": v} for k, v in pilot.__dict__.items()]
        df = pd.DataFrame(rows)
        df["value"] = [_cell_text(v, 6) if not isinstance(v, str) else v for v in df["value"]]
        _out(render(df, args.format))
        return EXIT_OK
    lines = []
    if pilot is not None:
        lines.append(an.pilot_sentence(pilot))
        if pilot.note:
            lines.append(f"Note: {pilot.note}.")
    if plan.required_n is not None:
        lines.append(plan.items_sentence())
    if n is not None:
        lines.append(plan.mde_sentence(n, with_assumptions=plan.required_n is None))
    _out("\n".join(lines))
    return EXIT_OK


COVERAGE_FORMATS = ("text", "json", "csv", "markdown")


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


def cmd_coverage(args) -> int:
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
