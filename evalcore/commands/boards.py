"""The ``leaderboard`` and ``compare`` commands."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.commands._shared import (EXIT_OK, _cell_text, _cut, _interval, _open_store, _out,
                                       _short_list, dump_json, records, render, to_table)


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
            f.append("no items")
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


def _group_table(lb) -> pd.DataFrame:
    """One line per run and group (nested groups indented under theirs)."""
    gc = lb.group_cells
    return pd.DataFrame({
        "group": ["  " * int(d) + str(g) for g, d in zip(gc["group"], gc["depth"])],
        "run": gc["run"], "metric": gc["metric"],
        "tasks": [f"{k}/{K}" for k, K in zip(gc["n_tasks"], gc["n_tasks_group"])],
        "score": gc["score"], "low": gc["low"], "high": gc["high"], "source": gc["source"],
        "reported": gc["reported"], "reported_stderr": gc["reported_stderr"],
        "recomputed": gc["recomputed"], "recomputed_se": gc["recomputed_se"],
        "weighting": gc["weighting"],
        "missing / note": [_cut("; ".join(x for x in (f"missing: {m}" if m else "", n) if x), 60)
                           for m, n in zip(gc["missing"], gc["note"])]})


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
    parts = [f"Leaderboard: {an.METHOD_LABELS[lb.method]} {pct}% intervals "
             f"(method column: what each cell used)"]
    tnotes = lb.task_notes
    for t, g in table.groupby("task", sort=True):
        info = lb.metric_info.get(t)
        what = f"{g['metric'].iloc[0]}; {info.label}" if info is not None else g['metric'].iloc[0]
        parts.append(f"\n== {t} ({what}) ==")
        parts.append(to_table(g.drop(columns=["task", "metric"])))
        parts += [f"  note ({k}): {n}" for k, n in
                  zip(tnotes.loc[tnotes["task"] == t, "kind"], tnotes.loc[tnotes["task"] == t, "note"])]
    if len(lb.averages):
        av = _average_table(lb)
        if len(av):
            grouped = any("each task group counts once" in n for n in lb.notes)
            parts.append("\n== macro average over tasks (" + (
                "a task group counts once: SE = sqrt(sum w_t^2 SE_t^2)/sum w_t, n_units = "
                "units averaged" if grouped else "SE = sqrt(sum SE_t^2)/k") + ") ==")
            parts.append(to_table(av))
    if len(lb.group_cells):
        parts.append(f"\n== {GROUP_LEGEND} ==")
        parts.append(to_table(_group_table(lb)))
    if lb.notes or len(tnotes):
        parts.append("\nNotes:")
        parts += [f"- {n}" for n in lb.notes]
    if len(tnotes):
        counts = tnotes["kind"].value_counts()
        parts.append("- task notes (listed under each task above): "
                     + ", ".join(f"{k} {int(v)}" for k, v in counts.items()))
    if len(lb.tiers):
        parts.append("- tier: 'best' = highest score (lowest when lower is better); '~best' = "
                     "not distinguishable from it (paired test on shared items, "
                     "Holm-adjusted); rank = paired-bootstrap rank interval. Tasks whose "
                     "metric has no direction are not tiered or ranked.")
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
