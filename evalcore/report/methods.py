"""The methods paragraph of a report, written from what was actually computed.

``methods_paragraphs(report)`` reads the results a ``Report`` holds (the interval method
each cell used and the analysis layer's reason when a method was re-routed, the confidence
level, n per task, cluster keys and cluster counts, the p-value adjustment, bootstrap
resamples and seeds, harness names and versions, protocol differences, the evalbars
version) and returns plain-text paragraphs in the register of a paper's methods section.
Nothing here is fixed text about a method that was not used: every sentence is conditional
on the result objects, and every number in it comes from them.

The text is plain (user strings such as run and task names appear as they are); the HTML
renderer escapes it.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from evalcore import words

# Why each interval method is the right one where it was used (METHODS.md).
METHOD_REASONS = {
    "wilson": "the scores are 0/1, and the Wilson score interval is never zero-width and "
              "keeps close to its nominal coverage at small n (with Brown, Cai and "
              "DasGupta's Poisson bound for 1 to 3 successes or failures, where the textbook "
              "Wilson interval undercovers)",
    "clopper-pearson": "the scores are 0/1, and the exact Clopper-Pearson interval "
                       "guarantees at least nominal coverage (conservative)",
    "bayes": "the scores are 0/1; the equal-tailed interval of the Beta(1 + k, 1 + n - k) "
             "posterior",
    "clt": "mean +/- z SD/sqrt(n), the SD with n - 1 in its denominator, the "
           "lm-evaluation-harness stderr convention",
    "bootstrap": "percentile interval over resampled items",
    "clustered": "cluster-robust SE, because items that share a cluster are not independent "
                 "(for 0/1 scores the Korn-Graubard interval: Clopper-Pearson on the "
                 "design-effect-adjusted n with G - 1 degrees of freedom)",
    "reported": "no item-level data, so the value +/- z times the harness-reported stderr",
}
MAX_LISTED = 12     # tasks named one by one in a sentence; more are counted
REASON_COLUMNS = ("method_reason", "reason", "interval_reason", "routing_reason")
# The test each comparison interval inverts (``interval_method`` of a compare row).
VERDICT_TESTS = {
    "tango": "Tango's score interval with the score test, i.e. McNemar's z without "
             "continuity correction",
    "wald": "the Wald interval with the Wald z test",
    "t": "the paired t interval with the t test on n - 1 degrees of freedom",
    "normal": "the normal interval with the z test of the same SE",
    "bound": "the discordance-bound interval, for runs whose per-item differences do not "
             "vary, with its p = (1 + |diff|)^-n",
    "clustered-t": "the cluster-robust interval with the t test on G - 1 degrees of freedom, "
                   "and below 30 clusters also the iid test, because the interval is then "
                   "the union of both",
}


def _pct(confidence: float) -> str:
    return f"{confidence:.0%}".replace(".0%", "%")


def _n_range(values) -> str:
    v = sorted({int(x) for x in values if x is not None and not pd.isna(x)})
    if not v:
        return "n unknown"
    return f"n = {v[0]:,}" if len(v) == 1 else f"n = {v[0]:,} to {v[-1]:,}"


def _items(values) -> str:
    """"n = 200 items", "n = 40 to 1,000 items", "n = 1 item" or "n unknown"."""
    text = _n_range(values)
    if text == "n unknown":
        return text
    return text + (" item" if text == "n = 1" else " items")


def _list(words: list[str]) -> str:
    words = [w for w in words if w]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _plural(k: int, word: str) -> str:
    return f"{k:,} {word}" + ("" if k == 1 else "s")


def _reason_column(frame: pd.DataFrame) -> str | None:
    return next((c for c in REASON_COLUMNS if c in frame.columns), None)


def data_paragraph(report) -> str:
    """Runs, harnesses with versions, tasks with metric and n."""
    prov = report.provenance
    harness = Counter()
    for p in prov:
        name = p.harness or p.source_format
        harness[f"{name} {p.harness_version}" if p.harness_version else f"{name} (no version recorded)"] += 1
    parts = [f"{k} from {h}" for h, k in sorted(harness.items())]
    text = (f"We evaluated {_plural(len(prov), 'run')}" +
            (f" ({_list(parts)})" if parts else "") + ".")
    board = report.leaderboard
    if board is not None and len(board.cells):
        tasks: list[str] = []
        by_metric: dict[str, tuple[int, list]] = {}
        for t, g in board.cells.groupby("task", sort=True):
            metric = str(board.metrics_by_task.get(t, g["metric"].iloc[0]))
            tasks.append(f"{t} ({metric}, {_items(g['n'])})")
            k, ns = by_metric.get(metric, (0, []))
            by_metric[metric] = (k + 1, ns + g["n"].tolist())
        if len(tasks) <= MAX_LISTED:
            text += f" Scores are reported on {_plural(len(tasks), 'task')}: {_list(tasks)}."
        else:
            # a long list of tasks says less than a count per metric (the report's tables
            # name each task)
            per = [f"{_plural(k, 'task')} on {m} ({_items(ns)})"
                   for m, (k, ns) in sorted(by_metric.items())]
            text += (f" Scores are reported on {_plural(len(tasks), 'task')}: "
                     f"{_list(per)}.")
        text += (" An item's score is the mean over its answers, so an item with several "
                 "answers counts once.")
    return text


def _reported_reason(cells: pd.DataFrame) -> str:
    """Why summary-only cells have the interval they have: the harness's stderr where it
    reported one, none where it did not (HELM reports no stderr)."""
    se = pd.to_numeric(cells.get("reported_stderr", pd.Series(dtype=float)), errors="coerce")
    with_se = int(se.notna().sum())
    without = len(cells) - with_se
    parts = []
    if with_se:
        parts.append(METHOD_REASONS["reported"] if not without else
                     f"{METHOD_REASONS['reported']} ({_plural(with_se, 'cell')})")
    if without:
        tasks = sorted(set(map(str, cells.loc[se.isna().to_numpy(), "task"])))
        parts.append(f"no item-level data and no stderr reported by the harness for "
                     f"{_plural(without, 'cell')} ({_list(tasks)}): the reported value is "
                     f"shown without an interval")
    return "; ".join(parts)


def interval_paragraph(report) -> str:
    """Which interval method each cell used and why, the average, tiers and ranks."""
    board = report.leaderboard
    if board is None or not len(board.cells):
        return ""
    level = _pct(board.confidence)
    cells = board.cells
    rcol = _reason_column(cells)
    sentences = []
    for method, g in cells.groupby("method", sort=False):
        label = words.label("score", method)
        if str(method) == "reported" and pd.to_numeric(
                g.get("reported_stderr", pd.Series(dtype=float)), errors="coerce").isna().all():
            label = "harness's reported value"       # no stderr reported: no interval at all
        if rcol is not None and g[rcol].notna().any():
            why = "; ".join(dict.fromkeys(str(r) for r in g[rcol].dropna()))
        elif str(method) == "reported":
            why = _reported_reason(g)
        else:
            why = METHOD_REASONS.get(str(method), "")
            if str(method) == "clt" and str(board.method) != "clt":
                why = "the scores are not 0/1 (means over several answers or partial " \
                      "credit), so " + why
        tasks = sorted(set(map(str, g["task"])))
        where = _list(tasks) if len(tasks) <= MAX_LISTED else _plural(len(tasks), "task")
        sentences.append(f"the {label} for {_plural(len(g), 'run x task cell')} on "
                         f"{where}" + (f": {why}" if why else ""))
    text = f"Each score is given with a {level} interval. " + ". ".join(
        x[0].upper() + x[1:] for x in sentences) + "."
    asked = str(board.method)
    if any(str(m) != asked for m in cells["method"]):
        rerouted = [n for n in board.notes if "used" in n or "needs" in n or "harness-reported" in n]
        text += (f" The interval method requested was the {words.label('score', asked)}; "
                 f"where it did not apply another was used" +
                 (f" ({'; '.join(rerouted)})" if rerouted else "") + ".")
    if board.method == "bootstrap":
        boot = [n for n in board.notes if n.startswith("bootstrap")]
        if boot:
            text += f" Bootstrap settings: {boot[0].removeprefix('bootstrap: ')}."
    if len(board.averages):
        avg_notes = [n for n in board.notes if "macro average" in n]
        if any("each task group counts once" in n for n in avg_notes):
            text += (" The macro average of a run is the weighted mean of its task scores "
                     "in which a task group counts once (w_t = 1 / the tasks of its group, "
                     "1 for an ungrouped task), with SE = sqrt(sum of w_t^2 SE_t^2)/sum of "
                     "w_t (tasks treated as independent item sets) and a normal interval")
        else:
            text += (" The macro average of a run is the mean of its task scores with "
                     "SE = sqrt(sum of SE_t^2)/k over its k tasks (tasks treated as "
                     "independent item sets), with a normal interval")
        text += (" (" + "; ".join(avg_notes) + ")." if avg_notes else ".")
    tiers = board.tiers
    if len(tiers):
        text += (" Runs indistinguishable from the best on a task were found with paired "
                 "tests on the items both runs share, with Holm's adjustment across the runs "
                 "compared with the best.")
    if len(board.ranks):
        text += (f" Rank intervals come from a paired bootstrap that resamples the same items "
                 f"for every run ({report.spec.n_resamples:,} resamples, seed "
                 f"{report.spec.seed}, {level}).")
    return text


def comparison_paragraph(report) -> str:
    """Paired differences, SE kind, McNemar, adjustment, MDE and verdict rule, per pair."""
    if not report.comparisons:
        return ""
    level = _pct(report.spec.confidence)
    alpha = 1.0 - report.spec.confidence
    sentences = []
    for sec in report.comparisons:
        c = sec.comparison
        pt = c.per_task
        kinds = Counter(map(str, pt["kind"]))
        rcol = _reason_column(pt)
        kind_text = _list([f"{k} on {_plural(v, 'task')}" for k, v in kinds.items()])
        ns = _list([f"{r.task} n = {int(r.n):,}" for r in pt.itertuples(index=False)])
        s = (f"{c.run_b} was compared with {c.run_a} on the items both runs answered "
             f"({ns}); difference B - A, {kind_text}")
        if rcol is not None and pt[rcol].notna().any():
            s += "; interval: " + "; ".join(dict.fromkeys(map(str, pt[rcol].dropna())))
        if "n_clusters" in pt.columns:
            g = [f"{r.task} G = {int(r.n_clusters):,}" for r in pt.itertuples(index=False)
                 if not pd.isna(r.n_clusters) and r.n_clusters]
            if g:
                s += f"; clusters of the shared items: {_list(g)}"
        if "mde_basis" in pt.columns and pt["mde_basis"].notna().any():
            s += "; MDE from the " + "; ".join(dict.fromkeys(map(str, pt["mde_basis"].dropna())))
        binary = pt["b"].notna()
        if binary.any():
            s += (f"; the exact two-sided McNemar test on the discordant items for the "
                  f"{_plural(int(binary.sum()), 'task')} with 0/1 scores")
        adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
        if len(pt) > 1:
            name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
            s += (f"; p-values adjusted across the {len(pt)} tasks with "
                  f"{_list([name.get(a, a) for a in adj]) or 'no adjustment'}, and the "
                  f"macro average of the per-task differences with SE = sqrt(sum SE_t^2)/k")
        sentences.append(s + ".")
    text = (f"Pairwise comparisons pair items by task and item id; d_i = x_B,i - x_A,i, the "
            f"difference is mean(d_i) with a {level} interval by the method named for each "
            f"task. " + " ".join(sentences))
    text += (f" The minimum detectable effect (MDE) is (z_(1-alpha/2) + z_power) sd(d)/sqrt(n) "
             f"at alpha = {alpha:.2g} and power 0.8. ") + verdict_rule_text(report)
    return text


def verdict_rule_text(report) -> str:
    """The verdict rule, in the terms of what the comparisons computed: one procedure per
    row (the p-value of the test the interval inverts; for 0/1 scores also the exact
    McNemar test, the interval widened to 0 where it does not reject), the adjustment the
    verdicts follow, and the simultaneous intervals shown beside the unadjusted ones."""
    alpha = 1.0 - report.spec.confidence
    frames = [sec.comparison.per_task for sec in report.comparisons]
    if not frames:
        return ""
    pt = pd.concat(frames, ignore_index=True)
    used = [VERDICT_TESTS[m] for m in dict.fromkeys(map(str, pt["interval_method"]))
            if m in VERDICT_TESTS]
    out = ["Each row's p-value comes from the same procedure as its interval: the test the "
           "interval inverts (" + "; ".join(used) + ")."] if used else []
    binary = pt["b"].notna() if "b" in pt else pd.Series(False, index=pt.index)
    if binary.any():
        out.append("For 0/1 scores the exact McNemar test must agree too: the row's p is the "
                   "larger of the two p-values (an intersection-union test, valid because "
                   "it rejects only when both valid tests do), and where the exact test does "
                   "not reject no difference the interval is widened to include 0, so a "
                   "handful of discordant items is never called a difference the exact test "
                   "would not call; widening can only raise coverage.")
        widened = [f"{r.task}" for r in pt.itertuples(index=False)
                   if bool(getattr(r, "widened", False))]
        if widened:
            out.append(f"Intervals widened to 0 this way: {_list(sorted(set(widened)))}.")
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    names = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
    if adj:
        how = _list([names.get(a, a) for a in adj])
        out.append(f"With several tasks the verdicts follow the {how}-adjusted p-values; the "
                   f"intervals in the tables are unadjusted, and the simultaneous intervals "
                   f"beside them are Bonferroni intervals at 1 - alpha/k (an adjusted p below "
                   f"alpha does not imply that the simultaneous interval excludes 0).")
    out.append(f"A comparison is called different when that p-value (adjusted, where an "
               f"adjustment applies) is below alpha = {alpha:.2g}; otherwise too few items to "
               f"tell below 10 items or when the MDE exceeds 20 points, underpowered when "
               f"the MDE exceeds 5 points (5% of the larger mean for scores outside [0, 1]), "
               f"and otherwise no difference detected.")
    return " ".join(out)


def cluster_repeat_paragraph(report) -> str:
    """Cluster keys and G, design effects; answers per item and variance components."""
    out = []
    keys: dict[str, set[str]] = {}
    for p in report.provenance:
        for t, k in p.cluster_keys.items():
            keys.setdefault(t, set()).add(k)
    if report.clusters:
        rows = []
        for c in report.clusters:
            key = "/".join(sorted(keys.get(c.task, ()))) or "recorded cluster"
            rows.append(f"{c.run} on {c.task} (key {key}, G = {c.n_clusters:,} clusters of "
                        f"n = {c.n:,} items, design effect {c.design_effect:.2f}, "
                        f"ICC {c.icc:.3f})")
        out.append("Items that share a cluster are not independent: the cluster-robust SE "
                   "SE_c^2 = G/(G-1) n^-2 sum_g (sum_(i in g) (x_i - mean))^2 was computed for "
                   + _list(rows) + ".")
    elif keys:
        out.append("Cluster keys recorded at ingest: " + _list(
            [f"{t} ({', '.join(sorted(k))})" for t, k in sorted(keys.items())]) + ".")
    clustered_cmp = [f"{sec.comparison.run_b} vs {sec.comparison.run_a} on {r.task}"
                     for sec in report.comparisons
                     for r in sec.comparison.per_task.itertuples(index=False)
                     if "cluster" in str(r.kind)]
    if clustered_cmp:
        out.append("Paired differences use the cluster-robust SE of d_i where a cluster key "
                   "exists (" + _list(clustered_cmp) + ").")
    if report.repeats:
        rows = [f"{r.run} on {r.task} (K = {r.k_observed} answers for {r.n_items:,} items; "
                f"s_b^2 = {r.between:.4g}, s_w^2 = {r.within:.4g})" for r in report.repeats]
        out.append("Where runs gave several answers per item, between- and within-item "
                   "variance components give SE(K) = sqrt((s_b^2 + s_w^2/K)/n): " +
                   _list(rows) + ".")
    return " ".join(out)


def planning_paragraph(report) -> str:
    if not report.plans:
        return ""
    p0 = report.plans[0]
    sources = sorted({p.source for p in report.plans})
    text = (f"Sample sizes for future comparisons follow n = (z_(1-alpha/2) + z_power)^2 "
            f"sd(d)^2 deff / delta^2 at alpha = {p0.alpha:.2g} and power {p0.power:g}, with "
            f"sd(d) estimated from pilot pairs ({_list(sources)}).")
    if any(p.design_effect > 1 for p in report.plans):
        text += " Clustered pilots multiply by their design effect."
    return text


def protocol_paragraph(report) -> str:
    if not report.comparisons:
        return ""
    out = []
    for sec in report.comparisons:
        c = sec.comparison
        pdf = c.protocol_diff
        if "category" in pdf.columns:
            pdf = pdf[~pdf["category"].isin(("model", "other"))]
        if len(pdf):
            settings = _list([str(s) if sc == "run" else f"{sc}:{s}"
                              for sc, s in zip(pdf["scope"], pdf["setting"])][:8])
            more = f" and {len(pdf) - 8} more" if len(pdf) > 8 else ""
            out.append(f"{c.run_a} and {c.run_b} differ in their recorded protocol "
                       f"({settings}{more}), so their difference may come from the protocol "
                       f"rather than the model.")
        mism = [f"{p.task} ({len(p.hash_mismatch)} items)" for p in c.pairing if p.hash_mismatch]
        if mism:
            out.append(f"Prompt hashes of shared items differ between {c.run_a} and "
                       f"{c.run_b} on {_list(mism)}.")
    if not out:
        return ("No protocol difference beyond the model itself was recorded between the "
                "compared runs, and the prompt hashes of their shared items agree.")
    return " ".join(out)


def software_sentence(report) -> str:
    where = (" the source files of every run are listed with their SHA-256 hashes in the "
             "appendix (Provenance)." if "provenance" in report.spec.sections else "")
    return (f"All statistics were computed with evalbars {report.version} "
            f"(report generated {report.created_at})" + (f";{where}" if where else "."))


def methods_paragraphs(report) -> list[tuple[str, str]]:
    """(heading, text) pairs of the methods section, skipping empty ones."""
    parts = [("Data", data_paragraph(report)),
             ("Intervals", interval_paragraph(report)),
             ("Comparisons", comparison_paragraph(report)),
             ("Clusters and repeats", cluster_repeat_paragraph(report)),
             ("Planning", planning_paragraph(report)),
             ("Protocol", protocol_paragraph(report)),
             ("Software", software_sentence(report))]
    return [(h, t) for h, t in parts if t]


def methods_text(report) -> str:
    """The methods section as plain text, one paragraph per topic (ready to paste)."""
    return "\n\n".join(f"{h}. {t}" for h, t in methods_paragraphs(report))
