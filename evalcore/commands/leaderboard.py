"""``python -m evalcore leaderboard``: scores with intervals per run x task, the macro
average, task groups, tiers and rank intervals (``evalcore.analysis.leaderboard``)."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
import pandas as pd

from evalcore import words
from evalcore.metrics import percent_scale
from evalcore.commands._shared import (EXIT_OK, _add_format, _confidence, _cut, _open_store,
                                       _out, _positive_int, _short_list, dump_json, json_epilog,
                                       records, render, to_table)
from evalcore.words import label

# the interval methods (= evalcore.analysis.METHODS, a test checks they agree), read from the
# method names in evalcore.words so that building the parser (--help, usage errors) does not
# import scipy through the analysis layer
LEADERBOARD_METHODS = tuple(m for m in words.SCORE_INTERVALS if m != "reported")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("leaderboard", epilog=json_epilog("leaderboard"),
                       help="scores with intervals per run x task",
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
    p.set_defaults(func=run)
    return p


def _leaderboard_table(lb, judged=frozenset()) -> pd.DataFrame:
    """The cells with tier and rank interval columns, for human formats; ``judged``: the
    (run, task) cells scored by an LLM judge (``analysis.judged_cells``), flagged."""
    cells = lb.cells.copy()
    tiers = lb.tiers
    if len(tiers):
        t = tiers[tiers["task"] != "__average__"][["run_id", "task", "best_run",
                                                   "indistinguishable_from_best", "p_holm"]]
        cells = cells.merge(t, on=["run_id", "task"], how="left")
        cells["tier"] = [("best" if r == b else "~best" if ind is True else "below best"
                          if ind is False else "")
                         for r, b, ind in zip(cells["run"], cells["best_run"],
                                              cells["indistinguishable_from_best"])]
    else:
        cells["tier"] = ""
    if len(lb.ranks):
        cells = cells.merge(lb.ranks[["run_id", "task", "rank", "rank_low", "rank_high"]],
                            on=["run_id", "task"], how="left")
        cells["rank"] = [("" if pd.isna(r) else f"{int(r)} [{int(lo)}-{int(hi)}]")
                         for r, lo, hi in zip(cells["rank"], cells["rank_low"],
                                              cells["rank_high"])]
    else:
        cells["rank"] = ""
    flags = []
    for r in cells.itertuples(index=False):
        f = []
        if not r.has_items:
            f.append("summary only")
        if r.contains_chance:
            f.append("contains chance")
        if isinstance(r.audit_flag, str) and r.audit_flag:
            f.append(r.audit_flag)
        if (str(r.run), str(r.task)) in judged:
            f.append("LLM judge")
        flags.append("; ".join(f))
    cells["flags"] = flags
    out = pd.DataFrame({
        "task": cells["task"], "run": cells["run"], "metric": cells["metric"],
        "n": ["unknown" if pd.isna(v) else int(v) for v in cells["n"]],
        "score": cells["score"], "low": cells["low"], "high": cells["high"],
        "method": cells["method"], "tier": cells["tier"], "rank": cells["rank"],
        "chance": cells["chance"], "reported": cells["reported"],
        "reported_stderr": cells["reported_stderr"], "our_se": cells["se"],
        "flags": flags})
    return out


def _average_table(lb) -> pd.DataFrame:
    """The macro averages with their tier, for the text output."""
    av = lb.averages.copy()
    if len(lb.tiers):
        ta = lb.tiers[lb.tiers["task"] == "__average__"][
            ["run_id", "indistinguishable_from_best", "p_holm"]]
        av = av.merge(ta, on="run_id", how="left")
    av = av[av["n_tasks"] >= 2]
    av["tasks"] = [_short_list(t) for t in av["tasks"]]
    av["left_out"] = [_cut(t or "", 40) for t in av["left_out"]]
    cols = [c for c in ("run", "n_tasks", "n_units", "score", "se", "low", "high",
                        "indistinguishable_from_best", "p_holm", "tasks", "left_out")
            if c in av and (c != "left_out" or av[c].astype(bool).any())]
    return av[cols]


TIER_WORDS = {"best": "best", "~best": "tied with best", "below best": "below best"}
MISSING = "–"


def _is_proportion(values: pd.Series) -> bool:
    """True when every score is in [0, 1]: shown in % (SEs in pp), as the pages show it."""
    v = pd.to_numeric(values, errors="coerce").dropna()
    return bool(len(v)) and bool(((v >= 0) & (v <= 1)).all())


def _num(v: Any, scale: float, digits: int = 1) -> str:
    """A number for reading: x ``scale`` with ``digits`` decimals (4 significant digits for
    raw units); "–" for a missing one."""
    if v is None or v is pd.NA or (isinstance(v, float) and not math.isfinite(v)):
        return MISSING
    try:
        x = float(v)
    except (TypeError, ValueError):
        return MISSING
    if not math.isfinite(x):
        return MISSING
    return f"{x * scale:.{digits}f}" if scale == 100.0 else f"{x:.4g}"


def _readable_task_table(g: pd.DataFrame, pct: int, info=None) -> pd.DataFrame:
    """One task's rows of ``_leaderboard_table`` for reading: units in the headers (% and
    pp for proportions), the interval as one text, methods, tiers and flags in words."""
    scale = percent_scale(g["score"], info)
    u, pp = (" (%)", " (pp)") if scale == 100.0 else ("", "")
    return pd.DataFrame({
        "run": g["run"], "n": g["n"],
        f"score{u}": [_num(v, scale) for v in g["score"]],
        f"{pct}% interval{u}": [f"[{_num(lo, scale)}, {_num(hi, scale)}]"
                                for lo, hi in zip(g["low"], g["high"])],
        "method": [label("score_short", m) for m in g["method"]],
        "tier": [TIER_WORDS.get(t, t) for t in g["tier"]],
        f"rank [{pct}% interval]": g["rank"],
        f"chance{u}": [_num(v, scale) for v in g["chance"]],
        f"harness value{u}": [_num(v, scale) for v in g["reported"]],
        f"harness SE{pp}": [_num(v, scale, 2) for v in g["reported_stderr"]],
        f"our SE{pp}": [_num(v, scale, 2) for v in g["our_se"]],
        "flags": g["flags"]})


def _readable_average_table(av: pd.DataFrame, pct: int) -> pd.DataFrame:
    """``_average_table`` for reading (the macro average is over [0, 1] metrics: in %)."""
    out = {"run": av["run"], "tasks": av["n_tasks"]}
    if "n_units" in av:
        out["units"] = av["n_units"]
    out.update({"score (%)": [_num(v, 100.0) for v in av["score"]],
                f"{pct}% interval (%)": [f"[{_num(lo, 100.0)}, {_num(hi, 100.0)}]"
                                         for lo, hi in zip(av["low"], av["high"])],
                "SE (pp)": [_num(v, 100.0, 2) for v in av["se"]]})
    if "indistinguishable_from_best" in av:
        out["tied with best"] = [MISSING if not isinstance(v, (bool, np.bool_)) else
                                 "yes" if v else "no" for v in av["indistinguishable_from_best"]]
        out["p (Holm)"] = [MISSING if pd.isna(p) else "<0.0001" if p < 1e-4 else f"{p:.4f}"
                           for p in av["p_holm"]]
    out["tasks averaged"] = av["tasks"]
    if "left_out" in av:
        out["left out"] = av["left_out"]
    return pd.DataFrame(out)


def _readable_group_table(lb) -> pd.DataFrame:
    """One line per run and group (nested groups indented under theirs), a group's values
    in % when its scores are in [0, 1]."""
    gc = lb.group_cells
    scale = {g: (100.0 if _is_proportion(part["score"]) else 1.0)
             for g, part in gc.groupby("group", sort=False)}
    k = [scale.get(g, 1.0) for g in gc["group"]]
    unit = ["%" if x == 100.0 else "metric units" for x in k]
    return pd.DataFrame({
        "group": ["  " * int(d) + str(g) for g, d in zip(gc["group"], gc["depth"])],
        "run": gc["run"], "metric": gc["metric"],
        "tasks": [f"{a}/{b}" for a, b in zip(gc["n_tasks"], gc["n_tasks_group"])],
        "score": [_num(v, x) for v, x in zip(gc["score"], k)],
        "interval": [f"[{_num(lo, x)}, {_num(hi, x)}]"
                     for lo, hi, x in zip(gc["low"], gc["high"], k)],
        "unit": unit, "source": gc["source"],
        "harness value": [_num(v, x) for v, x in zip(gc["reported"], k)],
        "recomputed": [_num(v, x) for v, x in zip(gc["recomputed"], k)],
        "weighting": [MISSING if w is None or (isinstance(w, float) and math.isnan(w)) else w
                      for w in gc["weighting"]],
        "missing / note": [_cut("; ".join(x for x in (f"missing: {m}" if m else "", n) if x), 60)
                           for m, n in zip(gc["missing"].fillna(""), gc["note"].fillna(""))]})


GROUP_LEGEND = ("task groups (nested groups indented; source: recomputed = from the "
                "subtasks' item scores, harness = the group value the harness reported, "
                "recomputed from reported = from the subtasks' reported values when the "
                "harness reported none; weighting: size = item-weighted with the harness's "
                "pooled stderr, equal = mean of the subtasks, SE = sqrt(sum SE_t^2)/k)")


def _json(lb) -> dict:
    """The ``--format json`` document (keys: docs/cli.md, "JSON keys")."""
    from evalcore import analysis as an
    return {"method": lb.method, "method_label": an.METHOD_LABELS.get(lb.method),
            "confidence": lb.confidence, "metric": lb.metric,
            "metrics_by_task": lb.metrics_by_task, "notes": list(lb.notes),
            "metric_choices": {t: {"metric": c.metric, "primary": c.primary,
                                   "source": c.source,
                                   "fallback_from": c.fallback_from,
                                   "missing": list(c.missing), "reason": c.reason}
                               for t, c in lb.metric_choices.items()},
            "cells": records(lb.cells), "averages": records(lb.averages),
            "tiers": records(lb.tiers), "ranks": records(lb.ranks),
            "task_notes": records(lb.task_notes),
            "metric_info": {t: {"metric": i.metric, "direction": i.direction,
                                "low": i.low, "high": i.high, "ideal": i.ideal,
                                "source": i.source}
                            for t, i in lb.metric_info.items()},
            "groups": lb.groups, "group_tree": lb.group_tree,
            "group_cells": records(lb.group_cells)}


def run(args) -> int:
    from evalcore import analysis as an
    store = _open_store(args)
    lb = an.leaderboard(store, task=args.task, metric=args.metric, method=args.method,
                        confidence=args.confidence, runs=args.runs or None,
                        n_resamples=args.resamples, seed=args.seed,
                        include_tiers=not args.no_tiers, include_ranks=not args.no_ranks)
    if args.format == "json":
        _out(dump_json(_json(lb)))
        return EXIT_OK
    if len(lb.cells) == 0 and len(lb.group_cells) == 0:
        _out("\n".join(lb.notes) or "Nothing to show.")
        return EXIT_OK
    judged = an.judged_cells(store, sorted({int(r) for r in lb.cells["run_id"]})) \
        if len(lb.cells) else {}
    table = _leaderboard_table(lb, set(judged))
    if args.format != "table":
        _out(render(table, args.format))
        return EXIT_OK
    pct = int(round(lb.confidence * 100))
    name = label("score", lb.method)
    heading = (f"{name.removesuffix(' interval')} {pct}% intervals"
               if name.endswith(" interval") else f"{pct}% intervals: {name}")
    parts = [f"Leaderboard: {heading} (the method column names the interval each cell "
             f"used; scores and intervals in % for proportions, SEs in percentage points)"]
    tnotes = lb.task_notes
    for t, g in table.groupby("task", sort=True):
        info = lb.metric_info.get(t)
        what = f"{g['metric'].iloc[0]}; {info.label}" if info is not None else g['metric'].iloc[0]
        parts.append(f"\n== {t} ({what}) ==")
        parts.append(to_table(_readable_task_table(g, pct, info)))
        parts += [f"  note ({k}): {n}" for k, n in
                  zip(tnotes.loc[tnotes["task"] == t, "kind"], tnotes.loc[tnotes["task"] == t, "note"])]
    if len(lb.averages):
        av = _average_table(lb)
        if len(av):
            grouped = any("each task group counts once" in n for n in lb.notes)
            parts.append("\n== macro average over tasks (" + (
                "a task group counts once: SE = sqrt(sum w_t^2 SE_t^2)/sum w_t, n_units = "
                "units averaged" if grouped else "SE = sqrt(sum SE_t^2)/k") + ") ==")
            parts.append(to_table(_readable_average_table(av, pct)))
    if len(lb.group_cells):
        parts.append(f"\n== {GROUP_LEGEND} ==")
        parts.append(to_table(_readable_group_table(lb)))
    if lb.notes or len(tnotes):
        parts.append("\nNotes:")
        parts += [f"- {n}" for n in lb.notes]
    if len(tnotes):
        counts = tnotes["kind"].value_counts()
        parts.append("- task notes (listed under each task above): "
                     + ", ".join(f"{k} {int(v)}" for k, v in counts.items()))
    if len(lb.tiers):
        parts.append("- tier: 'best' = highest score (lowest when lower is better); 'tied "
                     "with best' = not distinguishable from it (paired test on shared items, "
                     "Holm-adjusted); rank = paired-bootstrap rank interval. Tasks whose "
                     "metric has no direction are not tiered or ranked.")
    parts.append("- flags: 'summary only' = no item-level data (interval from the harness's "
                 "stderr); 'contains chance' = the interval contains the chance level."
                 + (" 'LLM judge' = scored by an LLM judge: the interval shows the judge's "
                    "noise, not its bias (python -m evalcore judge corrects it with human "
                    "labels)." if judged else ""))
    _out("\n".join(parts))
    return EXIT_OK
