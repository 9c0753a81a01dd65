"""``python -m evalcore compare RUN_A RUN_B``: the paired difference B - A on shared items
with its interval, p-values, MDE, pairing, protocol diff and verdict
(``evalcore.analysis.compare``)."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalcore import words
from evalcore.commands._shared import (EXIT_OK, _add_format, _cell_text, _confidence, _cut,
                                       _interval, _open_store, _out, dump_json, json_epilog,
                                       records, render, to_table)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("compare", epilog=json_epilog("compare"),
                       help="paired comparison of two runs (B - A)",
                       description="Paired difference B - A on the items both runs share: "
                                   "difference with CI (method routed by the data and named "
                                   "with its reason: a score interval such as Tango's for two "
                                   "0/1 runs unless n and the discordant count are large; t "
                                   "quantiles for continuous scores below n = 30; t with G - 1 "
                                   "df for clustered SEs), se_iid and se_clustered, paired "
                                   "and unpaired SE, correlation, "
                                   "exact McNemar for 0/1 scores, Holm-adjusted p across tasks, "
                                   "minimum detectable effect, pairing integrity (shared, "
                                   "missing, prompt-hash mismatches), protocol diff and a "
                                   "verdict. Warnings about protocol or prompt differences, "
                                   "and a task compared on another metric than the "
                                   "leaderboard's (when the two runs lack it, with the "
                                   "reason), are printed before the numbers.")
    p.add_argument("run_a", metavar="RUN_A", help="baseline run (name or id)")
    p.add_argument("run_b", metavar="RUN_B", help="run compared against it (name or id)")
    p.add_argument("--task", help="only this task (default: every task both runs have)")
    p.add_argument("--metric", help="this metric instead of the default per task (the "
                                    "leaderboard's)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level (default 0.95); alpha = 1 - confidence")
    p.add_argument("--adjust", choices=("holm", "bh"), default="holm",
                   help="p-value adjustment across tasks (default holm)")
    _add_format(p)
    p.set_defaults(func=run)
    return p


# the protocol diff's columns as the text output heads them (JSON keeps the keys)
PROTOCOL_HEADERS = {"scope": "scope", "setting": "setting", "value_a": "value in A",
                    "value_b": "value in B", "category": "kind"}


def _se_words(r: dict, s: float) -> str:
    """The standard errors of a paired row by their readable names (``evalcore.words``)."""
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


def run(args) -> int:
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
