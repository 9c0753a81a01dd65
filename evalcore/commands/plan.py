"""``python -m evalcore plan``: minimum detectable effect and items needed, from typed
assumptions or a pilot pair of runs (``evalcore.analysis.paired_plan``)."""

from __future__ import annotations

import argparse

import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _add_format, _cell_text, _confidence,
                                       _open_store, _out, _positive_float, _positive_int, _Usage,
                                       dump_json, json_epilog, render)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("plan", epilog=json_epilog("plan"),
                       help="minimum detectable effect / required number of items",
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
    p.set_defaults(func=run)
    return p


def run(args) -> int:
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
