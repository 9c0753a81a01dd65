"""Two runs on the same items: pairing, the paired comparison, verdicts, discordant items.

The rows themselves (interval, p-value, MDE, verdict) are ``analysis.compare_rows``; the
verdict sentence is ``analysis.verdicts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis._plumbing import submit
from evalcore.analysis.compare_rows import (PairedData, SharedItems, adjust_family,
                                            family_note, headline, overall_row, p_values_of,
                                            paired_data, paired_row, unpaired_row)
from evalcore.analysis.groups import task_groups
from evalcore.analysis.board_info import declared_groups, metric_infos, protocols_of
from evalcore.analysis.verdicts import verdict_text  # noqa: F401  (public name)
from evalcore.analysis._plumbing import one_version
from evalcore.analysis._common import (
    BENIGN_PROTOCOL_CATEGORIES,
    PER_TASK_COLUMNS,
    PROTOCOL_COLUMNS,
    _check_confidence,
    _empty,
    _fnum,
    natural_key,
    resolve_runs,
    _short,
    sorted_items,
)
from evalcore.analysis.metric_choice import task_metrics

# ---------------------------------------------------------------------------------------
# two runs: pairing, compare, discordant items
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pairing:
    """Integrity of the pairing of two runs on one task/metric."""

    task: str
    metric: str
    n_shared: int
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    hash_mismatch: tuple[str, ...]   # shared item ids whose prompt/item hash differs


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of run B against run A (difference = B - A).

    per_task columns: task, metric, n, score_a, score_b, diff, se, low, high, se_unpaired,
        correlation, b, c, both, neither (NaN unless 0/1), p_exact, p_midp, p_value,
        p_interval, test, p_adjusted, adjustment, mde, verdict, different, better, kind,
        points_scale, sd_diff, se_iid, se_clustered, n_clusters, interval_method,
        method_reason, widened, low_simultaneous, high_simultaneous, mde_basis,
        items_needed (``PER_TASK_COLUMNS``):

        - low, high: the row's interval (unadjusted, at ``confidence``): the routed interval
          (``interval_method``: "tango", "wald", "t", "normal", "bound", "clustered-t";
          ``method_reason`` says which and why), widened to include 0 when the exact
          McNemar test does not reject no difference (``widened``);
        - p_value: the row's p, from the same procedure: the p of the test the routed
          interval inverts (``p_interval``: Tango -> score test, Wald -> Wald z, t -> t,
          clustered -> cluster-robust t with G - 1 df, below 30 clusters together with the
          iid test), and for 0/1 scores the larger of it and the exact McNemar p
          (``p_exact``); ``test`` names the test(s) in words. Without an adjustment,
          [low, high] excludes 0 iff p_value < 1 - confidence;
        - p_adjusted: p_value adjusted across the compared tasks (``adjustment``: "holm" or
          "bh" when several tasks, else "none" and p_adjusted = p_value);
        - verdict (str) starts with "different" iff p_adjusted < 1 - confidence
          (``different``, bool); ``better`` is "A" or "B", the run it calls better, or ""
          (no difference, or a metric without a direction);
        - low_simultaneous, high_simultaneous: with several tasks, each row's interval at
          1 - alpha/k (Bonferroni; jointly at ``confidence``), else NaN. A Holm-adjusted
          p < alpha does not imply that this interval excludes 0;
        - p_exact: exact McNemar p for 0/1 scores; for other scores the row's p_value.
          p_midp: McNemar mid-p (NaN unless 0/1);
        - mde (metric units at alpha, power 0.8), mde_basis (what it was planned from),
          items_needed (items for an MDE of the adequate threshold, 5 points on a [0, 1]
          scale); kind ("paired", "paired, clustered SE" or "unpaired from reported
          stderr"); points_scale (100 when scores lie in [0, 1], else 1: multiply diff/mde
          by it to get "points"); sd_diff (sd of the per-item differences, ddof=1; NaN when
          unpaired); se_iid (sd(d, ddof=1)/sqrt(n), 0 for identical runs); se_clustered (CR1
          clustered SE of d; NaN without a cluster key); n_clusters (G or NaN).

        ``se`` is the SE behind the routed interval: the paired SE, the clustered SE (or
        the larger of the two below 30 clusters), or, when the runs never differ, the bound
        (1 + |diff|) sqrt(U/n) from the discordance upper bound U.
    protocol_diff columns: scope ("run" or task name), setting, value_a, value_b
    pairing: one Pairing per task
    overall: the same fields as a per_task row for the macro average over tasks (or None),
        in which a task group counts once (``groups``; as in the leaderboard's average);
        its normal interval and p come from one SE and it is not adjusted
    verdict: one sentence for the headline ("different: B is better than A by ...", "no
        difference detected, and this design could have detected X points", "underpowered:
        the MDE here is Y points", "too few items to tell: ... about N items are needed to
        detect 5 points", "no difference detected after Holm adjustment (...)")
    warnings: protocol/pairing problems, meant to be shown BEFORE the numbers.
    family_note: with several tasks, one line saying that the verdicts follow the adjusted
        p, the intervals are unadjusted, and what the simultaneous intervals are ("" else).

    ``mde`` is in the metric's units (0.05 = 5 points on a [0, 1] scale).
    """

    run_a: str
    run_b: str
    confidence: float
    per_task: pd.DataFrame
    protocol_diff: pd.DataFrame
    pairing: tuple[Pairing, ...]
    overall: dict | None
    verdict: str
    warnings: tuple[str, ...] = ()
    groups: dict[str, list[str]] = field(default_factory=dict)   # group -> its compared tasks
    family_note: str = ""


def _shared(p) -> SharedItems:
    """``SharedItems`` of a ``PairedItems`` (``store.paired_items``)."""
    both = p.shared
    items = np.asarray(p.items, dtype=np.int64)[both]
    cl = np.asarray(p.cluster, dtype=np.int64)[both]
    clusters = np.where(cl >= 0, cl, -1 - items) if bool((cl >= 0).any()) else None
    return SharedItems(items, np.asarray(p.score_a, dtype=float)[both],
                       np.asarray(p.score_b, dtype=float)[both], clusters)


def _pairing(store, p) -> Pairing:
    """The pairing report of a ``PairedItems``: shared count, items only in A / only in B
    and shared items whose hashes differ, by item id in natural order (the ids are read
    only for those items)."""
    in_a, in_b = ~np.isnan(p.score_a), ~np.isnan(p.score_b)
    both = in_a & in_b
    mismatch = both & ~np.asarray(p.hash_match, dtype=bool)
    lists = [in_a & ~in_b, in_b & ~in_a, mismatch]
    named = np.logical_or.reduce(lists)
    ids: dict[int, str] = {}
    if named.any():
        keys = np.asarray(p.items, dtype=np.int64)[named]
        ids = dict(zip(keys.tolist(), store.item_labels(p.task, keys)))

    def listed(mask: np.ndarray) -> tuple[str, ...]:
        return tuple(sorted_items(ids[int(k)] for k in np.asarray(p.items)[mask]))

    return Pairing(task=p.task, metric=p.metric_a, n_shared=int(both.sum()),
                   only_a=listed(lists[0]), only_b=listed(lists[1]),
                   hash_mismatch=listed(lists[2]))


def _paired_reads(store, a: int, b: int, task_metrics: list[tuple[str, str]]) -> list:
    """``store.paired_items`` of two runs on several (task, metric) cells: one store query
    on integer item keys (a ``PairedItems`` per cell, in order)."""
    return store.paired_items(a, b, [(t, m, m) for t, m in task_metrics])


def _paired_cells(store, task_metrics: list[tuple[str, str]], got: list
                  ) -> dict[tuple[str, str], tuple[SharedItems, Pairing]]:
    """Shared items and the pairing report (shared, only in A, only in B, hash mismatches)
    of each (task, metric) cell from its ``PairedItems`` (``_paired_reads``)."""
    return {(t, m): (_shared(p), _pairing(store, p)) for (t, m), p in zip(task_metrics, got)}


def paired_cell(store, a: int, b: int, task: str, metric_a: str,
                 metric_b: str | None = None) -> SharedItems:
    """Shared items of (a, metric_a) and (b, metric_b) (``store.paired_items``)."""
    return _shared(store.paired_items(a, b, [(task, metric_a, metric_b or metric_a)])[0])


def paired_items_row(shared: SharedItems, task: str, metric: str, confidence: float,
                mde_threshold: float | None, name_a: str, name_b: str,
                direction: str = "higher") -> dict:
    """One per_task row from the shared items of two runs (or two metrics), with no
    adjustment (``compare_rows.paired_row`` of ``compare_rows.paired_data``)."""
    return paired_row(paired_data(shared, task), task, metric, confidence, mde_threshold,
                      name_a, name_b, direction)


def _side_numbers(store, rid: int, task: str, metric: str) -> tuple[float, float, float]:
    """(value, stderr, n) of one run for an unpaired comparison: the harness-reported numbers,
    else (a run with items but no summary) the mean of its item means with ``stats.mean_se``."""
    s = store.summaries([rid])
    r = s[(s["task"] == task) & (s["metric"] == metric)]
    if len(r) and np.isfinite(_fnum(r["value"].iloc[0])) and np.isfinite(_fnum(r["stderr"].iloc[0])):
        return _fnum(r["value"].iloc[0]), _fnum(r["stderr"].iloc[0]), _fnum(r["n"].iloc[0])
    im = store.item_means([rid], task=task, metric=metric)
    if len(im) >= 2:
        x = im["score"].to_numpy(dtype=float)
        return float(x.mean()), float(st.mean_se(x)), float(len(x))
    return float("nan"), float("nan"), float("nan")


def _unpaired_row(store, a: int, b: int, task: str, metric: str, confidence: float,
                  mde_threshold: float | None, name_a: str, name_b: str,
                  direction: str = "higher") -> dict | None:
    """Fallback when a run has no item-level data: the unpaired row of
    ``compare_rows.unpaired_row`` from the reported stderrs; None when a side has none."""
    sides = (_side_numbers(store, a, task, metric), _side_numbers(store, b, task, metric))
    if not all(np.isfinite([sides[0][0], sides[1][0], sides[0][1], sides[1][1]])):
        return None
    return unpaired_row(task, metric, sides, confidence, mde_threshold, name_a, name_b,
                        direction)


def _item_metrics(tasks: pd.DataFrame, rid: int) -> dict[str, set[str]]:
    """task -> metrics with item scores of run ``rid`` (rows of ``store.tasks``)."""
    t = tasks[tasks["run_id"].astype(int) == rid]
    if len(t) and "has_items" in t:
        t = t[t["has_items"].fillna(True).astype(bool)]
    out: dict[str, set[str]] = {}
    for task, m in zip(t["task"], t["metric"]):
        out.setdefault(str(task), set()).add(str(m))
    return out


def _summary_metrics(tasks: pd.DataFrame, rid: int) -> dict[str, set[str]]:
    """task -> reported metrics (not groups) of run ``rid`` without item scores (rows of
    ``store.tasks``; a reported metric with item scores is among ``_item_metrics``)."""
    t = tasks[tasks["run_id"].astype(int) == rid]
    if len(t) and "has_items" in t:
        t = t[~t["has_items"].fillna(True).astype(bool)]
    if len(t) and "is_group" in t:
        t = t[~t["is_group"].fillna(False).astype(bool)]
    out: dict[str, set[str]] = {}
    for task, m in zip(t["task"], t["metric"]):
        out.setdefault(str(task), set()).add(str(m))
    return out


def compare(store, run_a: str | int, run_b: str | int, *, task: str | None = None,
            metric: str | None = None, confidence: float = 0.95,
            adjust: str = "holm", mde_threshold: float | None = None,
            tasks: list[str] | tuple[str, ...] | None = None) -> Comparison:
    """Paired difference on shared items, task by task, with McNemar for 0/1 scores.

    For each task both runs have (or ``task``, or those of ``tasks``): items are paired on
    item id (per-item means over answers), ``stats.paired_difference`` gives
    diff = mean(x_B - x_A), its paired SE (cluster-robust when a cluster key exists),
    unpaired SE, correlation and, for 0/1 scores, b, c and the exact McNemar test; each row's
    interval and p-value come from one procedure (``compare_rows.headline``). With several
    tasks the p-values are adjusted across them (``adjust``: "holm" or "bh"), the verdicts
    follow the adjusted p, and each row also gets its Bonferroni simultaneous interval
    (``Comparison.family_note``). MDE at alpha = 1 - confidence, power 0.8, from the
    observed sd of the differences. ``overall`` is the macro average of the per-task
    differences with SE = sqrt(sum SE_t^2)/k. Verdict rule: ``analysis.verdicts``.

    When one of the runs has no item-level data for a task, an unpaired comparison from the
    harness-reported stderrs is used (labelled in ``kind`` and the verdict) if both have one.

    Raises AnalysisError: unknown run, same run twice, no common task (or a task of
    ``tasks`` not in both runs), no shared items, both ``task`` and ``tasks`` given.
    """
    _check_confidence(confidence)
    if adjust not in ("holm", "bh"):
        raise AnalysisError(f"unknown adjustment {adjust!r}; use 'holm' or 'bh'")
    if task is not None and tasks is not None:
        raise AnalysisError("give either task or tasks, not both")
    wanted = None if tasks is None else [str(t) for t in dict.fromkeys(tasks)]
    with one_version(store):
        return _compare(store, run_a, run_b, task, metric, confidence, adjust, mde_threshold,
                        wanted)


def _compare(store, run_a: str | int, run_b: str | int, task: str | None, metric: str | None,
             confidence: float, adjust: str, mde_threshold: float | None,
             wanted: list[str] | None = None) -> Comparison:
    """``compare`` against one store version (its per-snapshot reads checked once)."""
    run_table = store.runs()
    a, b = resolve_runs(store, [run_a, run_b], run_table)
    names = dict(zip(run_table["run_id"].astype(int).tolist(),
                     run_table["name"].astype(str).tolist()))
    name_a, name_b = names.get(a, str(a)), names.get(b, str(b))
    if a == b:
        raise AnalysisError(f"both runs are {name_a!r}; choose two different runs "
                            f"(for two metrics of one run use metric_variants)")
    tdf = store.tasks([a, b])
    ia, ib = _item_metrics(tdf, a), _item_metrics(tdf, b)
    sa, sb = _summary_metrics(tdf, a), _summary_metrics(tdf, b)
    tasks_a = set(ia) | set(sa)
    tasks_b = set(ib) | set(sb)
    common = sorted(tasks_a & tasks_b)
    if task is not None:
        if task not in tasks_a or task not in tasks_b:
            missing = [n for n, ts in ((name_a, tasks_a), (name_b, tasks_b)) if task not in ts]
            raise AnalysisError(f"task {task!r} is not in run(s) {', '.join(missing)}; "
                                f"tasks both runs have: {', '.join(common) or 'none'}")
        common = [task]
    if wanted is not None:
        common = _chosen_tasks(wanted, common, name_a, name_b)
    if not common:
        raise AnalysisError(f"runs {name_a!r} and {name_b!r} have no task in common")

    rows: list[dict] = []
    pairings: list[Pairing] = []
    warnings: list[str] = []
    skipped: list[str] = []
    unpaired: list[str] = []
    no_stderr: list[str] = []
    plan: list[tuple[str, str, bool]] = []  # (task, metric, item-level in both runs)
    # the metric of each task: the one decision every surface uses (``metric_choice``)
    chosen = {} if metric is not None else \
        task_metrics(store, [a, b], common, need="all", names=names)
    for t in common:
        both_items = set(ia.get(t, ())) & set(ib.get(t, ()))
        both_any = (set(ia.get(t, ())) | set(sa.get(t, ()))) & \
            (set(ib.get(t, ())) | set(sb.get(t, ())))
        if metric is not None:
            if metric not in both_any:
                if task is not None:
                    raise AnalysisError(f"task {t!r}: metric {metric!r} is not in both runs; "
                                        f"common metrics: {', '.join(sorted(both_any)) or 'none'}")
                skipped.append(t)
                continue
            m = metric
        else:
            c = chosen.get(t)
            if not both_any or c is None or c.metric is None:
                skipped.append(t)
                continue
            m = str(c.metric)
            if c.fallback_from is not None:
                warnings.append(f"{t}: compared on {c.reason}")
        plan.append((t, m, m in both_items))
    # item-level tasks: every shared item from one store query, read in a worker thread
    # while this one reads the protocols (the store's reads release the GIL)
    paired_cells = [(t, m) for t, m, paired in plan if paired]
    read = submit(store, _paired_reads, store, a, b, paired_cells) if paired_cells else None
    try:
        # the protocol diff of the tasks planned (filtered to the compared ones below)
        planned = [t for t, _, _ in plan]
        pdf = store.protocol_diff(a, b, planned[0] if len(planned) == 1 else None)
        # direction and scale of each metric (evalcore.metrics): verdicts and macro average
        info = metric_infos(store, [a, b], [(t, m) for t, m, _ in plan])
    finally:
        got = read.result() if read is not None else []   # never leave the read running
    frames = _paired_cells(store, paired_cells, got)
    # what each paired row is computed from, and all their p-values in one call
    datas = {t: paired_data(frames[(t, m)][0], t) for t, m, paired in plan
             if paired and len(frames[(t, m)][0]) >= 2}
    pv = p_values_of(list(datas.values())) if datas else None
    at = {t: k for k, t in enumerate(datas)}
    for t, m, paired in plan:
        d = info[t].direction
        if paired:
            frame, pairing = frames[(t, m)]
            pairings.append(pairing)
            if len(frame) < 2:
                warnings.append(f"{t}: {len(frame)} shared item(s); not compared")
                continue
            rows.append(paired_row(datas[t], t, m, confidence, mde_threshold, name_a, name_b,
                                   d, pv, at[t]))
        else:
            row = _unpaired_row(store, a, b, t, m, confidence, mde_threshold, name_a, name_b,
                                d)
            if row is None:
                no_stderr.append(t)
                continue
            unpaired.append(t)
            rows.append(row)
    if unpaired:
        warnings.append(f"no item-level data in one or both runs for {len(unpaired)} task(s) "
                        f"({_short(unpaired)}): UNPAIRED comparison from the harness-reported "
                        f"stderrs (wider; ignores that both runs saw the same items)")
    if no_stderr:
        warnings.append(f"not compared (no item-level data and no reported stderr on both "
                        f"sides): {_short(no_stderr)}")
    if skipped:
        warnings.append(f"not compared (metric not in both runs): {_short(skipped)}")
    if not rows:
        if pairings and all(p.n_shared == 0 for p in pairings):
            raise AnalysisError(f"runs {name_a!r} and {name_b!r} share no items on "
                                f"{', '.join(p.task for p in pairings)}: nothing to pair")
        raise AnalysisError(f"runs {name_a!r} and {name_b!r}: nothing could be compared "
                            f"({'; '.join(warnings) or 'no data'})")

    # pairing integrity and protocol diff, surfaced before the numbers ------------------
    for p in pairings:
        if p.hash_mismatch:
            warnings.insert(0, f"{p.task}: {len(p.hash_mismatch)} shared item(s) have a "
                               f"different prompt/item hash: the runs were not measured with "
                               f"the same instrument")
        if p.only_a or p.only_b:
            warnings.append(f"{p.task}: {len(p.only_a)} item(s) only in {name_a}, "
                            f"{len(p.only_b)} only in {name_b}; compared on "
                            f"{p.n_shared} shared items")
    compared = [r["task"] for r in rows]
    if (len(compared) == 1) != (len(planned) == 1):
        # one task left of several planned: the store's diff of that task alone
        pdf = store.protocol_diff(a, b, compared[0] if len(compared) == 1 else None)
    pdiff = _protocol_diff(pdf, compared)
    if len(pdiff):
        if "category" in pdiff.columns:
            instrument = pdiff[~pdiff["category"].isin(BENIGN_PROTOCOL_CATEGORIES)]
        else:
            instrument = pdiff
        if len(instrument):
            settings = ", ".join(dict.fromkeys(
                s if sc == "run" else f"{sc}:{s}" for sc, s in
                zip(instrument["scope"], instrument["setting"])))
            warnings.insert(0, f"protocols differ ({settings}): the runs were not measured "
                               f"the same way, so a difference may come from the protocol "
                               f"rather than the model")
    note = ""
    if len(rows) > 1:
        rows = _as_family(rows, datas, pv, at, adjust, confidence, mde_threshold, name_a,
                          name_b, [info[r["task"]].direction for r in rows])
        note = family_note(adjust, len(rows), confidence)
    per_task = pd.DataFrame(rows)
    overall = None
    # the macro average combines only metrics on one [0, 1] higher-is-better scale
    averaged = per_task[[info[t].averageable for t in per_task["task"]]]
    if len(per_task) > 1 and len(averaged) < len(per_task):
        out = [f"{t} ({info[t].why_not_averaged()})" for t in per_task["task"]
               if not info[t].averageable]
        warnings.append(f"left out of the macro average (not a higher-is-better metric on "
                        f"[0, 1]): {_short(out)}")
    groups = task_groups([str(t) for t in per_task["task"]],
                         declared_groups(protocols_of(store, [a, b])))
    if len(averaged) > 1:
        overall = overall_row(averaged, confidence, mde_threshold, name_a, name_b, groups)
        verdict = f"macro average over {len(averaged)} tasks: {overall['verdict']}"
    elif len(per_task) > 1:
        verdict = "no macro average (fewer than 2 tasks with a higher-is-better metric on " \
                  "[0, 1]); see the per-task verdicts"
    else:
        verdict = str(per_task["verdict"].iloc[0])
    per_task = per_task[list(PER_TASK_COLUMNS)]
    return Comparison(run_a=name_a, run_b=name_b, confidence=confidence, per_task=per_task,
                      protocol_diff=pdiff, pairing=tuple(pairings), overall=overall,
                      verdict=verdict, warnings=tuple(warnings), groups=groups,
                      family_note=note)


def _chosen_tasks(wanted: list[str], common: list[str], name_a: str, name_b: str) -> list[str]:
    """The tasks of ``wanted`` among the ``common`` ones (in ``common``'s order); raises
    AnalysisError naming those not in both runs."""
    missing = [t for t in wanted if t not in common]
    if missing:
        raise AnalysisError(f"task(s) {', '.join(missing)} not in both {name_a!r} and "
                            f"{name_b!r}; tasks both runs have: {', '.join(common) or 'none'}")
    return [t for t in common if t in set(wanted)]


def _as_family(rows: list[dict], datas: dict[str, PairedData], pv, at: dict[str, int],
               adjust: str, confidence: float, mde_threshold: float | None, name_a: str,
               name_b: str, directions: list[str]) -> list[dict]:
    """Several tasks' rows as one family (``compare_rows.adjust_family``): adjusted p,
    verdicts on it, and each row's interval at 1 - alpha/k (Bonferroni): the paired rows'
    own procedure at that level (``compare_rows.headline``), the unpaired rows' normal
    interval with z_{1 - alpha/(2k)}."""
    level = 1.0 - (1.0 - confidence) / len(rows)
    z = st.z_value(level)
    bounds = []
    for r in rows:
        data = datas.get(r["task"]) if not str(r["kind"]).startswith("unpaired") else None
        if data is not None:
            h = headline(data, level, pv, at[r["task"]])
            bounds.append((h.low, h.high))
        else:
            bounds.append((r["diff"] - z * r["se"], r["diff"] + z * r["se"]))
    return adjust_family(rows, adjust, confidence, bounds, mde_threshold, name_a, name_b,
                         directions)


def _protocol_diff(pdf: pd.DataFrame | None, tasks: list[str]) -> pd.DataFrame:
    """Settings that differ: run scope plus the compared tasks, from ``store.protocol_diff``
    of the two runs (for the one task when one is compared, else for all tasks). Extra store
    columns (e.g. ``category``) are kept after the documented ones."""
    if pdf is None or len(pdf) == 0:
        return _empty(PROTOCOL_COLUMNS)
    pdf = pdf[pdf["scope"].isin(["run", *tasks])]
    cols = list(PROTOCOL_COLUMNS) + [c for c in pdf.columns if c not in PROTOCOL_COLUMNS]
    out = pdf[cols].copy()
    for c in ("value_a", "value_b"):
        out[c] = out[c].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return out.reset_index(drop=True)


def discordant_items(store, run_a: str | int, run_b: str | int, task: str, metric: str,
                     cell: str = "b") -> pd.DataFrame:
    """Items in one cell of the 2x2 table, with texts.

    cell: "b" (only B right), "c" (only A right), "both" (both right), "neither".
    columns: item_id, score_a, score_b, prompt, target, response_a, response_b, in natural
    order of item_id (2 before 10). With several answers per item a cell uses the per-item
    means (b: x_B > x_A, c: x_A > x_B, both: both = 1, neither: both = 0) and the texts of
    each run's first answer (the prompt and target of run A, else run B's). Item ids and
    texts are read for the cell's items only.
    """
    cells = ("b", "c", "both", "neither")
    if cell not in cells:
        raise AnalysisError(f"unknown cell {cell!r}; use one of {', '.join(cells)}")
    with one_version(store):
        a, b = resolve_runs(store, [run_a, run_b], store.runs())
        sh = paired_cell(store, a, b, task, metric)
        xa, xb = sh.x_a, sh.x_b
        mask = {"b": xb > xa, "c": xa > xb, "both": (xa == 1) & (xb == 1),
                "neither": (xa == 0) & (xb == 0)}[cell]
        keys = sh.items[mask]
        label, texts = _first_texts(store, [a, b], task, keys)
    order = sorted(range(keys.size), key=lambda i: natural_key(label[int(keys[i])]))
    ks = keys[order].tolist()
    ta, tb = texts.get(a, {}), texts.get(b, {})
    out = pd.DataFrame({"item_id": [label[k] for k in ks], "score_a": xa[mask][order],
                        "score_b": xb[mask][order]})
    out["prompt"] = [ta.get(k, {}).get("prompt") or tb.get(k, {}).get("prompt") for k in ks]
    out["target"] = [ta.get(k, {}).get("target") or tb.get(k, {}).get("target") for k in ks]
    out["response_a"] = [ta.get(k, {}).get("response") for k in ks]
    out["response_b"] = [tb.get(k, {}).get("response") for k in ks]
    return out


def _first_texts(store, run_ids: list[int], task: str, keys: np.ndarray
                 ) -> tuple[dict[int, str], dict[int, dict[int, dict]]]:
    """(item key -> item id, run id -> item key -> prompt/target/response of its first
    answer) of some items (``store.first_texts``)."""
    if not keys.size:
        return {}, {}
    t = store.first_texts(run_ids, task, keys)
    label = dict(zip(t["item"].astype(int).tolist(), t["item_id"].astype(str).tolist()))
    out: dict[int, dict[int, dict]] = {}
    for r in t.itertuples(index=False):
        if int(r.run_id) >= 0:
            out.setdefault(int(r.run_id), {})[int(r.item)] = {
                "prompt": r.prompt, "target": r.target, "response": r.response}
    return label, out
