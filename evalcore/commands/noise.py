"""``python -m evalcore noise``: noise beyond the items (protocols, seeds, checkpoints, splits).

Wires ``evalcore.analysis.noise`` to the CLI's renderers. JSON keys (``--format json``):
``protocols`` {groups, cells, task_bands}, ``seeds`` {groups, runs, comparisons},
``checkpoints`` {curve, snr, decisions}, ``splits`` (with ``--run`` and ``--task``: run,
task, metric, the ``stats.SplitConsistency`` fields and a sentence), ``runs`` (how each run
was grouped: identity, seed, step, config and where they were read from), and ``how_to``
per section (what to upload or tag when a section is empty). Table formats print the main
table of each section asked for.
"""

from __future__ import annotations

import argparse
import dataclasses

from evalcore.commands._shared import (EXIT_OK, _add_format, _confidence, _open_store, _out,
                                       _positive_float, _positive_int, _Usage, dump_json,
                                       json_epilog, records, render)

SECTIONS = ("protocols", "seeds", "checkpoints", "splits")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "noise", epilog=json_epilog("noise"), help="noise beyond the items: protocols, training seeds, checkpoints, splits",
        description="Noise beyond the items. protocols: one model's score across prompt/few-shot/"
                    "chat-template settings and metric variants (acc/acc_norm, strict/flexible), "
                    "beside the gap to the nearest other model. seeds: between-seed SD against "
                    "the item SE, and configurations compared with the seed as a random effect "
                    "(Welch-Satterthwaite df) with the seeds needed for a gap (Madaan et al. "
                    "2024). checkpoints: learning curves, signal-to-noise ratio and decision "
                    "accuracy (Heineman et al. 2025). splits: SD of k disjoint item splits "
                    "against s/sqrt(m) (needs --run and --task). Groups come from tags "
                    "(seed=N, step=N, config=NAME, model=NAME), model args, revisions "
                    "(step1000) and model names (-seed2, -step1000).")
    p.add_argument("--section", choices=SECTIONS + ("all",), default="all",
                   help="which section (default all; splits only with --run)")
    p.add_argument("--task", help="only this task (and the task of --run's splits)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="confidence level of the intervals (default 0.95)")
    p.add_argument("--gap", type=_positive_float,
                   help="gap to plan the number of seeds for, in metric units (0.02 = 2 "
                        "points; default: each comparison's observed difference)")
    p.add_argument("--last-n", type=_positive_int, dest="last_n",
                   help="checkpoints per series in the noise (default min(5, half the series))")
    p.add_argument("--run", help="run for the split consistency (name or id)")
    p.add_argument("--splits", type=_positive_int, default=10, dest="k",
                   help="number of disjoint splits k (default 10; fewer for small tasks)")
    p.add_argument("--repetitions", type=_positive_int, default=200,
                   help="random partitions drawn (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random partitions (default 0)")
    _add_format(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from evalcore import analysis as an

    if args.section == "splits" and (args.run is None or args.task is None):
        raise _Usage("--section splits needs --run and --task")
    if args.run is not None and args.task is None:
        raise _Usage("--run (split consistency) needs --task")
    if args.last_n is not None and args.last_n < 2:
        raise _Usage("--last-n must be at least 2")
    store = _open_store(args)
    want = SECTIONS if args.section == "all" else (args.section,)
    doc: dict = {}
    tables: list[tuple[str, object, str]] = []
    if "protocols" in want:
        r = an.protocol_sensitivity(store, task=args.task, confidence=args.confidence)
        doc["protocols"] = {"groups": records(r.groups), "cells": records(r.cells),
                            "task_bands": records(r.task_bands), "how_to": r.how_to}
        tables.append(("Protocol spread", r.groups.drop(columns=["sentence"]), r.how_to))
        tables.append(("Protocols", r.cells, ""))
    if "seeds" in want:
        r = an.seed_report(store, task=args.task, confidence=args.confidence, gap=args.gap)
        doc["seeds"] = {"groups": records(r.groups), "runs": records(r.runs),
                        "comparisons": records(r.comparisons), "how_to": r.how_to}
        tables.append(("Seed groups", r.groups.drop(columns=["sentence", "runs"]), r.how_to))
        tables.append(("Seed comparisons", r.comparisons.drop(columns=["sentence"]), ""))
    if "checkpoints" in want:
        r = an.checkpoint_report(store, task=args.task, confidence=args.confidence,
                                 last_n=args.last_n)
        doc["checkpoints"] = {"curve": records(r.curve), "snr": records(r.snr),
                              "decisions": records(r.decisions), "how_to": r.how_to}
        tables.append(("Signal and noise", r.snr, r.how_to))
        tables.append(("Decision accuracy", r.decisions, ""))
    if "splits" in want and args.run is not None:
        r = an.split_report(store, args.run, args.task, k=args.k, repetitions=args.repetitions,
                            seed=args.seed)
        doc["splits"] = {"run_id": r.run_id, "run": r.run, "task": r.task, "metric": r.metric,
                         **dataclasses.asdict(r.result), "exchangeable": r.result.exchangeable,
                         "sentence": r.sentence}
    if args.format == "json":
        doc["runs"] = records(an.run_groups(store))
        _out(dump_json(doc))
        return EXIT_OK
    import pandas as pd
    chunks = []
    for title, df, how in tables:
        if args.format == "table":
            body = render(df, "table") if len(df) else f"(none) {how}".rstrip()
            chunks.append(f"{title}\n{body}")
        else:
            chunks.append(render(df, args.format))
    if "splits" in doc:
        s = doc["splits"]
        row = pd.DataFrame([{k: s[k] for k in ("run", "task", "metric", "k", "m", "reference_sd",
                                                "random_ratio", "ordered_ratio", "ordered_p",
                                                "cluster_ratio", "cluster_p", "exchangeable")}])
        chunks.append(("Split consistency\n" if args.format == "table" else "")
                      + render(row, args.format)
                      + (f"\n{s['sentence']}" if args.format == "table" else ""))
    _out("\n\n".join(chunks))
    return EXIT_OK
