"""The ``plan`` and ``coverage`` commands (no store needed except for a pilot pair)."""

from __future__ import annotations

import math

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _cell_text, _open_store, _out, _Usage, dump_json,
                                       render)


def cmd_plan(args) -> int:
    from evalcore import stats as st
    pilot = None
    sd_diff, disagreement = args.sd_diff, args.disagreement
    if args.pilot:
        if not args.task:
            raise _Usage("--pilot needs --task T (the task to estimate sd_diff on)")
        from evalcore import analysis as an
        store = _open_store(args)
        pilot = an.plan_from_pair(store, args.pilot[0], args.pilot[1], args.task,
                                  metric=args.metric)
        if sd_diff is None and disagreement is None:
            if pilot.sd_diff > 0:
                sd_diff = pilot.sd_diff
            else:   # the runs never differ: plan with the upper bound of the rate, not 0
                disagreement = pilot.disagreement_upper
    if sd_diff is None and disagreement is None:
        raise _Usage("give --sd-diff, --disagreement or --pilot RUN_A RUN_B --task T")
    if sd_diff is not None and disagreement is not None:
        raise _Usage("give only one of --sd-diff and --disagreement")
    if args.n is None and args.delta is None:
        raise _Usage("give --n (for the minimum detectable effect) and/or --delta (for "
                        "the required number of items)")
    deff = args.design_effect
    if deff is None and pilot is not None and pilot.design_effect is not None and \
            pilot.design_effect > 0:
        deff = pilot.design_effect
    deff = 1.0 if deff is None else deff
    kw = dict(sd_diff=sd_diff, disagreement=disagreement, alpha=args.alpha, power=args.power,
              design_effect=deff)
    n = args.n if args.n is not None else (pilot.n if pilot is not None and args.delta is None
                                           else None)
    mde = float(st.minimum_detectable_effect(n, **kw)) if n is not None else None
    req = int(st.required_items(args.delta, **kw)) if args.delta is not None else None
    result = {"alpha": args.alpha, "power": args.power, "sd_diff": sd_diff,
              "disagreement": disagreement, "design_effect": deff, "n": n, "mde": mde,
              "delta": args.delta, "required_items": req,
              "pilot": None if pilot is None else dict(pilot.__dict__)}
    if args.format == "json":
        _out(dump_json(result))
        return EXIT_OK
    rows = [{"quantity": k, "value": v} for k, v in result.items() if k != "pilot"]
    if pilot is not None:
        rows += [{"quantity": f"pilot.{k}", "value": v} for k, v in pilot.__dict__.items()]
    df = pd.DataFrame(rows)
    df["value"] = [_cell_text(v, 6) if not isinstance(v, str) else v for v in df["value"]]
    if args.format != "table":
        _out(render(df, args.format))
        return EXIT_OK
    lines = []
    if pilot is not None:
        lines.append(f"Pilot: {pilot.run_b} - {pilot.run_a} on {pilot.task} ({pilot.metric}), "
                     f"n = {pilot.n}: sd_diff = {pilot.sd_diff:.4f}, disagreement = "
                     f"{pilot.disagreement:.4f}, observed diff = {pilot.diff:+.4f}"
                     + (f", design effect = {pilot.design_effect:.3f}"
                        if pilot.design_effect is not None else ""))
        if pilot.note:
            lines.append(f"Note: {pilot.note}")
    spread = (f"sd_diff = {sd_diff:.4g}" if sd_diff is not None else
              f"disagreement = {disagreement:.4g} (sd_diff^2 <= disagreement, conservative)")
    lines.append(f"Assumptions: {spread}, alpha = {args.alpha:g} (two-sided), power = "
                 f"{args.power:g}, design effect = {deff:.4g}")
    if mde is not None:
        lines.append(f"Minimum detectable effect with n = {n}: {mde:.4f} "
                     f"({mde * 100:.2f} points on a 0-1 scale)")
    if req is not None:
        lines.append(f"Items needed to detect a gap of {args.delta:g}: {req}")
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
