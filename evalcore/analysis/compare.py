"""Two runs on the same items: pairing, the paired comparison, verdicts, discordant items.

The rows themselves (interval, p-value, MDE, verdict) are ``analysis.compare_rows``; the
verdict sentence is ``analysis.verdicts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.metrics import range_allows_percent
from evalcore.stats import _interval_arrays as ia
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
    check_confidence,
    empty_frame,
    fnum,
    resolve_runs,
    short_list,
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
    if len(r) and np.isfinite(fnum(r["value"].iloc[0])) and np.isfinite(fnum(r["stderr"].iloc[0])):
        return fnum(r["value"].iloc[0]), fnum(r["stderr"].iloc[0]), fnum(r["n"].iloc[0])
    im = store.item_means([rid], task=task, metric=metric)
    if len(im) >= 2:
        x = im["score"].to_numpy(dtype=float)
        return float(x.mean()), float(st.mean_se(x)), float(len(x))
    return float("nan"), float("nan"), float("nan")


def _unpaired_row(store, a: int, b: int, task: str, metric: str, confidence: float,
                  mde_threshold: float | None, name_a: str, name_b: str,
                  direction: str = "higher", unit_range: bool = True) -> dict | None:
    """Fallback when a run has no item-level data: the unpaired row of
    ``compare_rows.unpaired_row`` from the reported stderrs; None when a side has none."""
    sides = (_side_numbers(store, a, task, metric), _side_numbers(store, b, task, metric))
    if not all(np.isfinite([sides[0][0], sides[1][0], sides[0][1], sides[1][1]])):
        return None
    return unpaired_row(task, metric, sides, confidence, mde_threshold, name_a, name_b,
                        direction, unit_range)


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
    check_confidence(confidence)
    if adjust not in ("holm", "bh"):
        raise AnalysisError(f"unknown adjustment {adjust!r}; use 'holm' or 'bh'")
    if task is not None and tasks is not None:
        raise AnalysisError("give either task or tasks, not both")
    wanted = None if tasks is None else [str(t) for t in dict.fromkeys(tasks)]
    with one_version(store):
        return _compare(store, run_a, run_b, task, metric, confidence, adjust, mde_threshold,
                        wanted)


@dataclass(frozen=True)
class _Pair:
    """The two runs compared: ids and names (``names``: every run's, by id)."""

    a: int
    b: int
    name_a: str
    name_b: str
    names: dict[int, str]


@dataclass
class _Rows:
    """The per-task rows and what they were computed from: the pairing report of every
    item-level task, each paired row's ``PairedData`` (``datas``) with their p-values in
    one call (``pv``, row ``at[task]``), and the tasks left out, by reason."""

    rows: list[dict] = field(default_factory=list)
    pairings: list[Pairing] = field(default_factory=list)
    datas: dict[str, PairedData] = field(default_factory=dict)
    pv: object = None
    at: dict[str, int] = field(default_factory=dict)
    unpaired: list[str] = field(default_factory=list)
    no_stderr: list[str] = field(default_factory=list)


def _compare(store, run_a: str | int, run_b: str | int, task: str | None, metric: str | None,
             confidence: float, adjust: str, mde_threshold: float | None,
             wanted: list[str] | None = None) -> Comparison:
    """``compare``'s stages, against one store version (its per-snapshot reads checked
    once): the two runs -> the tasks and metrics compared -> the shared items, protocols and
    metric infos -> per-task rows -> warnings -> family adjustment -> macro average and
    verdict."""
    pair = _resolve_pair(store, run_a, run_b)
    tdf = store.tasks([pair.a, pair.b])
    metrics_of = {"ia": _item_metrics(tdf, pair.a), "ib": _item_metrics(tdf, pair.b),
                  "sa": _summary_metrics(tdf, pair.a), "sb": _summary_metrics(tdf, pair.b)}
    common = _compared_tasks(pair, metrics_of, task, wanted)
    warnings: list[str] = []
    skipped: list[str] = []
    plan = _plan(store, pair, metrics_of, common, task, metric, warnings, skipped)
    got, pdf, info = _read_pairs(store, pair, plan)
    planned = [t for t, _, _ in plan]
    res = _task_rows(store, pair, plan, got, info, confidence, mde_threshold, warnings)
    _not_compared(pair, res, skipped, warnings)
    _pairing_warnings(pair, res.pairings, warnings)
    compared = [r["task"] for r in res.rows]
    if (len(compared) == 1) != (len(planned) == 1):
        # one task left of several planned: the store's diff of that task alone
        pdf = store.protocol_diff(pair.a, pair.b, compared[0] if len(compared) == 1 else None)
    pdiff = _protocol_diff(pdf, compared)
    _protocol_warning(pdiff, warnings)
    rows, note = res.rows, ""
    if len(rows) > 1:
        rows = _as_family(rows, res.datas, res.pv, res.at, adjust, confidence, mde_threshold,
                          pair.name_a, pair.name_b, [info[r["task"]].direction for r in rows])
        note = family_note(adjust, len(rows), confidence)
    per_task = pd.DataFrame(rows)
    groups = task_groups([str(t) for t in per_task["task"]],
                         declared_groups(protocols_of(store, [pair.a, pair.b])))
    overall, verdict = _overall_and_verdict(per_task, info, groups, confidence, mde_threshold,
                                            pair, warnings)
    per_task = per_task[list(PER_TASK_COLUMNS)]
    return Comparison(run_a=pair.name_a, run_b=pair.name_b, confidence=confidence,
                      per_task=per_task, protocol_diff=pdiff, pairing=tuple(res.pairings),
                      overall=overall, verdict=verdict, warnings=tuple(warnings),
                      groups=groups, family_note=note)


def _resolve_pair(store, run_a: str | int, run_b: str | int) -> _Pair:
    """The two runs' ids and names; AnalysisError for the same run twice."""
    run_table = store.runs()
    a, b = resolve_runs(store, [run_a, run_b], run_table)
    names = dict(zip(run_table["run_id"].astype(int).tolist(),
                     run_table["name"].astype(str).tolist()))
    name_a, name_b = names.get(a, str(a)), names.get(b, str(b))
    if a == b:
        raise AnalysisError(f"both runs are {name_a!r}; choose two different runs "
                            f"(for two metrics of one run use metric_variants)")
    return _Pair(a, b, name_a, name_b, names)


def _compared_tasks(pair: _Pair, metrics_of: dict[str, dict[str, set[str]]],
                    task: str | None, wanted: list[str] | None) -> list[str]:
    """The tasks both runs have (with item scores or reported), or ``task``, or those of
    ``wanted``; AnalysisError naming what is missing."""
    tasks_a = set(metrics_of["ia"]) | set(metrics_of["sa"])
    tasks_b = set(metrics_of["ib"]) | set(metrics_of["sb"])
    common = sorted(tasks_a & tasks_b)
    if task is not None:
        if task not in tasks_a or task not in tasks_b:
            missing = [n for n, ts in ((pair.name_a, tasks_a), (pair.name_b, tasks_b))
                       if task not in ts]
            raise AnalysisError(f"task {task!r} is not in run(s) {', '.join(missing)}; "
                                f"tasks both runs have: {', '.join(common) or 'none'}")
        common = [task]
    if wanted is not None:
        common = _chosen_tasks(wanted, common, pair.name_a, pair.name_b)
    if not common:
        raise AnalysisError(f"runs {pair.name_a!r} and {pair.name_b!r} have no task in common")
    return common


def _plan(store, pair: _Pair, metrics_of: dict[str, dict[str, set[str]]], common: list[str],
          task: str | None, metric: str | None, warnings: list[str],
          skipped: list[str]) -> list[tuple[str, str, bool]]:
    """(task, metric, item-level in both runs) of each task compared: ``metric``, or the
    one decision every surface uses (``metric_choice``, need "all"); tasks without a metric
    in both runs go to ``skipped``, a fallback choice is said in ``warnings``."""
    ia, ib, sa, sb = (metrics_of[k] for k in ("ia", "ib", "sa", "sb"))
    plan: list[tuple[str, str, bool]] = []
    chosen = {} if metric is not None else \
        task_metrics(store, [pair.a, pair.b], common, need="all", names=pair.names)
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
    return plan


def _read_pairs(store, pair: _Pair, plan: list[tuple[str, str, bool]]
                ) -> tuple[list, pd.DataFrame | None, dict]:
    """(the ``PairedItems`` of every item-level task, from one store query read in a worker
    thread while this one reads the protocol diff of the tasks planned and the metric infos
    (direction and scale: verdicts and macro average); the store's reads release the GIL)."""
    paired_cells = [(t, m) for t, m, paired in plan if paired]
    read = submit(store, _paired_reads, store, pair.a, pair.b, paired_cells) \
        if paired_cells else None
    try:
        planned = [t for t, _, _ in plan]
        pdf = store.protocol_diff(pair.a, pair.b, planned[0] if len(planned) == 1 else None)
        info = metric_infos(store, [pair.a, pair.b], [(t, m) for t, m, _ in plan])
    finally:
        got = read.result() if read is not None else []   # never leave the read running
    return got, pdf, info


def _task_rows(store, pair: _Pair, plan: list[tuple[str, str, bool]], got: list, info: dict,
               confidence: float, mde_threshold: float | None, warnings: list[str]) -> _Rows:
    """One row per task compared: paired from the shared items (fewer than 2: a warning,
    no row), else unpaired from the reported stderrs (none on a side: no row)."""
    paired_cells = [(t, m) for t, m, paired in plan if paired]
    frames = _paired_cells(store, paired_cells, got)
    out = _Rows()
    # what each paired row is computed from, and all their p-values in one call
    out.datas = {t: paired_data(frames[(t, m)][0], t) for t, m, paired in plan
                 if paired and len(frames[(t, m)][0]) >= 2}
    out.pv = p_values_of(list(out.datas.values())) if out.datas else None
    out.at = {t: k for k, t in enumerate(out.datas)}
    for t, m, paired in plan:
        d = info[t].direction
        unit_range = range_allows_percent(info[t])   # the leaderboard's percent rule
        if paired:
            frame, pairing = frames[(t, m)]
            out.pairings.append(pairing)
            if len(frame) < 2:
                warnings.append(f"{t}: {len(frame)} shared item(s); not compared")
                continue
            out.rows.append(paired_row(out.datas[t], t, m, confidence, mde_threshold,
                                       pair.name_a, pair.name_b, d, out.pv, out.at[t],
                                       unit_range=unit_range))
        else:
            row = _unpaired_row(store, pair.a, pair.b, t, m, confidence, mde_threshold,
                                pair.name_a, pair.name_b, d, unit_range)
            if row is None:
                out.no_stderr.append(t)
                continue
            out.unpaired.append(t)
            out.rows.append(row)
    return out


def _not_compared(pair: _Pair, res: _Rows, skipped: list[str], warnings: list[str]) -> None:
    """Warnings naming the unpaired tasks and those not compared; AnalysisError when no
    task could be compared."""
    if res.unpaired:
        warnings.append(f"no item-level data in one or both runs for {len(res.unpaired)} "
                        f"task(s) ({short_list(res.unpaired)}): UNPAIRED comparison from the "
                        f"harness-reported stderrs (wider; ignores that both runs saw the "
                        f"same items)")
    if res.no_stderr:
        warnings.append(f"not compared (no item-level data and no reported stderr on both "
                        f"sides): {short_list(res.no_stderr)}")
    if skipped:
        warnings.append(f"not compared (metric not in both runs): {short_list(skipped)}")
    if not res.rows:
        if res.pairings and all(p.n_shared == 0 for p in res.pairings):
            raise AnalysisError(f"runs {pair.name_a!r} and {pair.name_b!r} share no items on "
                                f"{', '.join(p.task for p in res.pairings)}: nothing to pair")
        raise AnalysisError(f"runs {pair.name_a!r} and {pair.name_b!r}: nothing could be "
                            f"compared ({'; '.join(warnings) or 'no data'})")


def _pairing_warnings(pair: _Pair, pairings: list[Pairing], warnings: list[str]) -> None:
    """Pairing integrity, surfaced before the numbers: hash mismatches first, then items
    only in one run."""
    for p in pairings:
        if p.hash_mismatch:
            warnings.insert(0, f"{p.task}: {len(p.hash_mismatch)} shared item(s) have a "
                               f"different prompt/item hash: the runs were not measured with "
                               f"the same instrument")
        if p.only_a or p.only_b:
            warnings.append(f"{p.task}: {len(p.only_a)} item(s) only in {pair.name_a}, "
                            f"{len(p.only_b)} only in {pair.name_b}; compared on "
                            f"{p.n_shared} shared items")


def _protocol_warning(pdiff: pd.DataFrame, warnings: list[str]) -> None:
    """The first warning when the protocols differ in a setting that changes the instrument
    (``BENIGN_PROTOCOL_CATEGORIES`` are listed in the diff, not warned about)."""
    if not len(pdiff):
        return
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


def _overall_and_verdict(per_task: pd.DataFrame, info: dict, groups: dict[str, list[str]],
                         confidence: float, mde_threshold: float | None, pair: _Pair,
                         warnings: list[str]) -> tuple[dict | None, str]:
    """(the macro average row over the tasks whose metric is higher-is-better on [0, 1]
    (``compare_rows.overall_row``; None with fewer than 2), the headline verdict); the tasks
    left out of the average are named in ``warnings``."""
    averaged = per_task[[info[t].averageable for t in per_task["task"]]]
    if len(per_task) > 1 and len(averaged) < len(per_task):
        out = [f"{t} ({info[t].why_not_averaged()})" for t in per_task["task"]
               if not info[t].averageable]
        warnings.append(f"left out of the macro average (not a higher-is-better metric on "
                        f"[0, 1]): {short_list(out)}")
    if len(averaged) > 1:
        overall = overall_row(averaged, confidence, mde_threshold, pair.name_a, pair.name_b,
                              groups)
        return overall, f"macro average over {len(averaged)} tasks: {overall['verdict']}"
    if len(per_task) > 1:
        return None, ("no macro average (fewer than 2 tasks with a higher-is-better metric "
                      "on [0, 1]); see the per-task verdicts")
    return None, str(per_task["verdict"].iloc[0])


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
            bounds.append(ia.clt_bounds(r["diff"], r["se"], z, bounded=False))
    return adjust_family(rows, adjust, confidence, bounds, mde_threshold, name_a, name_b,
                         directions)


def _protocol_diff(pdf: pd.DataFrame | None, tasks: list[str]) -> pd.DataFrame:
    """Settings that differ: run scope plus the compared tasks, from ``store.protocol_diff``
    of the two runs (for the one task when one is compared, else for all tasks). Extra store
    columns (e.g. ``category``) are kept after the documented ones."""
    if pdf is None or len(pdf) == 0:
        return empty_frame(PROTOCOL_COLUMNS)
    pdf = pdf[pdf["scope"].isin(["run", *tasks])]
    cols = list(PROTOCOL_COLUMNS) + [c for c in pdf.columns if c not in PROTOCOL_COLUMNS]
    out = pdf[cols].copy()
    for c in ("value_a", "value_b"):
        out[c] = out[c].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return out.reset_index(drop=True)
