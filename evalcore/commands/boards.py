"""The ``leaderboard`` and ``compare`` commands."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _cell_text, _cut, _interval, _open_store, _out,
                                       _short_list, dump_json, records, render, to_table)
from evalcore.words import label


def _leaderboard_table(lb) -> pd.DataFrame:
    """The cells with tier and rank interval columns, for human formats."""
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


def _readable_task_table(g: pd.DataFrame, pct: int) -> pd.DataFrame:
    """One task's rows of ``_leaderboard_table`` for reading: units in the headers (% and
    pp for proportions), the interval as one text, methods, tiers and flags in words."""
    scale = 100.0 if _is_proportion(g["score"]) else 1.0
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


def cmd_leaderboard(args) -> int:
    from evalcore import analysis as an
    store = _open_store(args)
    lb = an.leaderboard(store, task=args.task, metric=args.metric, method=args.method,
                        confidence=args.confidence, runs=args.runs or None,
                        n_resamples=args.resamples, seed=args.seed,
                        include_tiers=not args.no_tiers, include_ranks=not args.no_ranks)
    if args.format == "json":
        _out(dump_json({"method": lb.method, "method_label": an.METHOD_LABELS.get(lb.method),
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
                        "group_cells": records(lb.group_cells)}))
        return EXIT_OK
    if len(lb.cells) == 0 and len(lb.group_cells) == 0:
        _out("\n".join(lb.notes) or "Nothing to show.")
        return EXIT_OK
    table = _leaderboard_table(lb)
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
        parts.append(to_table(_readable_task_table(g, pct)))
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
                 "stderr); 'contains chance' = the interval contains the chance level.")
    _out("\n".join(parts))
    return EXIT_OK


# the protocol diff's columns as the text output heads them (JSON keeps the keys)
PROTOCOL_HEADERS = {"scope": "scope", "setting": "setting", "value_a": "value in A",
                    "value_b": "value in B", "category": "kind"}


def _se_words(r: dict, s: float) -> str:
    """The standard errors of a paired row by their readable names (``evalcore.words``)."""
    from evalcore import words
    clusters = r.get("n_clusters")
    clustered = (f"{r['se_clustered'] * s:.2f}"
                 + (f" ({int(clusters)} clusters)" if clusters is not None
                    and np.isfinite(clusters) else "")
                 if np.isfinite(r["se_clustered"]) else "n/a (no cluster key)")
    return (f"{words.label('se', 'se_iid')} {r['se_iid'] * s:.2f}, "
            f"{words.label('se', 'se_clustered')} {clustered}")


def _compare_row_lines(r: dict, confidence: float, k: int) -> list[str]:
    """One comparison row as text: the difference, its interval and method, the SEs, the
    McNemar counts, the p-values, the MDE and the verdict."""
    from evalcore import words
    s = float(r["points_scale"])
    unit = "points" if s == 100.0 else "units"
    n_text = "unknown" if r["n"] is None or pd.isna(r["n"]) else int(r["n"])
    adjusted = r["adjustment"] != "none"
    out = [f"\n== {r['task']} ({r['metric']}), n = {n_text} [{words.label('kind', r['kind'])}] ==",
           f"  score A {r['score_a']:.4f}   score B {r['score_b']:.4f}",
           f"  difference B - A: {r['diff'] * s:+.2f} {unit}, {confidence:.0%} CI"
           f"{' (unadjusted)' if adjusted else ''} {_interval(r['low'], r['high'], s, 2)}"]
    if adjusted and np.isfinite(r["low_simultaneous"]):
        out.append(f"  simultaneous CI (Bonferroni over {k} tasks) "
                   f"{_interval(r['low_simultaneous'], r['high_simultaneous'], s, 2)}")
    out.append(f"  method: {r['method_reason']}")
    if str(r["kind"]).startswith("unpaired"):
        out.append(f"  {words.label('se', 'se_unpaired')} {r['se'] * s:.2f} (from the reported "
                   f"stderrs; no paired SE or correlation without item-level data)")
    else:
        out.append(f"  {_se_words(r, s)}, {words.label('se', 'se')} {r['se'] * s:.2f}, "
                   f"{words.label('se', 'se_unpaired')} {r['se_unpaired'] * s:.2f}, "
                   f"correlation of A and B {_cell_text(r['correlation'], 3) or 'n/a'}")
    if np.isfinite(r["b"]):
        out.append(f"  McNemar: b = {int(r['b'])} (only B right), c = {int(r['c'])} "
                   f"(only A right), exact p = {r['p_exact']:.4g}, mid-p = {r['p_midp']:.4g}")
    out.append(f"  p = {r['p_value']:.4g} ({r['test']})")
    if adjusted:
        out.append(f"  p adjusted ({words.label('adjust', r['adjustment'])}, across {k} "
                   f"tasks) = {r['p_adjusted']:.4g}")
    out += [f"  MDE, the minimum detectable effect (alpha {1 - confidence:.2g}, power 0.8): "
            f"{r['mde'] * s:.2f} {unit} (from the {r['mde_basis']})",
            f"  verdict: {r['verdict']}"]
    return out


def _compare_average_lines(o: dict, confidence: float, k: int) -> list[str]:
    """The macro average over the compared tasks as text."""
    s = float(o["points_scale"])
    unit = "points" if s == 100.0 else "units"
    return [f"\n== macro average over {k} tasks ==",
            f"  difference {o['diff'] * s:+.2f} {unit}, {confidence:.0%} CI "
            f"{_interval(o['low'], o['high'], s, 2)}, SE behind the interval {o['se'] * s:.2f}, "
            f"p = {o['p_exact']:.4g}",
            f"  {_se_words(o, s)}; method: {o['method_reason']}"]


def cmd_compare(args) -> int:
    from evalcore import analysis as an
    store = _open_store(args)
    cmp = an.compare(store, args.run_a, args.run_b, task=args.task, metric=args.metric,
                     confidence=args.confidence, adjust=args.adjust)
    pairing = [{"task": p.task, "metric": p.metric, "n_shared": p.n_shared,
                "only_a": list(p.only_a), "only_b": list(p.only_b),
                "hash_mismatch": list(p.hash_mismatch)} for p in cmp.pairing]
    if args.format == "json":
        _out(dump_json({"run_a": cmp.run_a, "run_b": cmp.run_b, "confidence": cmp.confidence,
                        "verdict": cmp.verdict, "family_note": cmp.family_note,
                        "warnings": list(cmp.warnings),
                        "per_task": records(cmp.per_task), "overall": cmp.overall,
                        "pairing": pairing, "protocol_diff": records(cmp.protocol_diff)}))
        return EXIT_OK
    if args.format != "table":
        df = cmp.per_task
        if cmp.overall is not None:
            df = pd.concat([df, pd.DataFrame([{k: cmp.overall.get(k) for k in df.columns}])],
                           ignore_index=True)
        _out(render(df, args.format))
        return EXIT_OK
    lines = [f"Compare B = {cmp.run_b} against A = {cmp.run_a} (difference B - A, "
             f"{cmp.confidence:.0%} CI)"]
    for w in cmp.warnings:
        lines.append(f"WARNING: {w}")
    if len(cmp.protocol_diff):
        lines.append("\nProtocol differences: (long values cut; --format json has them whole)")
        lines.append(to_table(cmp.protocol_diff.map(_cut).rename(columns=PROTOCOL_HEADERS)))
    lines.append("\nPairing:")
    pt = pd.DataFrame([{"task": p["task"], "metric": p["metric"], "shared": p["n_shared"],
                        "only in A": len(p["only_a"]), "only in B": len(p["only_b"]),
                        "prompt hash mismatch": len(p["hash_mismatch"])} for p in pairing])
    lines.append(to_table(pt) if len(pt) else "(no item-level pairing)")
    for r in cmp.per_task.to_dict("records"):
        lines += _compare_row_lines(r, cmp.confidence, len(cmp.per_task))
    if cmp.overall is not None:
        lines += _compare_average_lines(cmp.overall, cmp.confidence, len(cmp.per_task))
    if cmp.family_note:
        lines.append(f"\nNote: {cmp.family_note}")
    lines.append(f"\nVerdict: {cmp.verdict}")
    _out("\n".join(lines))
    return EXIT_OK
