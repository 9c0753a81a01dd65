"""Analysis layer: joins store queries to stats for the pages and the CLI.

CONTRACT (stub written by the lead; the analysis owner fills in the bodies and may add
fields/functions, but must not rename or remove what is here without telling the page owner).
Every function takes a ``Store`` and plain values, returns a frozen dataclass whose tables are
pandas DataFrames with the documented columns, and raises ``AnalysisError``/``StoreError``
with a human message for impossible requests (no shared items, unknown run, ...).
Runs may be given by name or id (``store.resolve_run``).

This module only wires store queries to ``evalcore.stats``: every standard error, interval,
test and planning quantity comes from ``evalcore.stats``. The store is used duck-typed (any
object with the ``Store`` reading methods works), so tests can use hand-built stores.

Conventions used throughout
---------------------------
* Scores are per-item means over answers (``store.item_means`` / ``store.cell_stats``), so an
  item with K answers counts once; "binary" means every item mean is exactly 0 or 1.
* Differences are always B - A. "Points" are percentage points when every score lies in
  [0, 1] (difference x 100), otherwise raw metric units.
* Default metric per task (when none is asked for): ``acc`` if present, else
  ``exact_match,strict-match``, else the first metric alphabetically (``default_metric``).
* Verdict rule (``compare``): with ``alpha = 1 - confidence`` and power 0.8,
  - "different" when the CI of the paired difference excludes 0;
  - otherwise "underpowered" when the minimum detectable effect (MDE) exceeds
    ``mde_threshold`` (default 5 points for scores in [0, 1]; for other scales 5 % of the
    larger absolute mean of the two runs);
  - otherwise "no difference detected, and this design could have detected X points".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.errors import AnalysisError, StoreError

METHODS = ("wilson", "clopper-pearson", "bayes", "clt", "bootstrap", "clustered")
METHOD_LABELS = {
    "wilson": "Wilson score",
    "clopper-pearson": "Clopper-Pearson (exact)",
    "bayes": "Bayesian (Beta(1,1) posterior, equal-tailed)",
    "clt": "CLT (normal approximation, sd ddof=1)",
    "bootstrap": "Bootstrap percentile over items",
    "clustered": "CLT with cluster-robust SE",
    "reported": "Harness-reported stderr (no item-level data)",
}
BINARY_ONLY_METHODS = ("wilson", "clopper-pearson", "bayes")
ITEM_LEVEL_METHODS = ("bootstrap", "clustered")
PREFERRED_METRICS = ("acc", "exact_match,strict-match")
AVERAGE_TASK = "__average__"
DEFAULT_POWER = 0.8

CELL_COLUMNS = ("run_id", "run", "task", "metric", "n", "score", "se", "low", "high", "method",
                "binary", "chance", "contains_chance", "reported", "reported_stderr",
                "audit_flag", "has_items")
AVERAGE_COLUMNS = ("run_id", "run", "n_tasks", "score", "se", "low", "high", "kind", "tasks")
TIER_COLUMNS = ("run_id", "run", "task", "best_run", "diff_vs_best", "p_raw", "p_holm",
                "indistinguishable_from_best", "n_shared")
RANK_COLUMNS = ("run_id", "run", "task", "rank", "rank_low", "rank_high")
PER_TASK_COLUMNS = ("task", "metric", "n", "score_a", "score_b", "diff", "se", "low", "high",
                    "se_unpaired", "correlation", "b", "c", "both", "neither", "p_exact", "p_midp", "p_adjusted",
                    "adjustment", "mde", "verdict", "kind", "points_scale", "sd_diff")
PROTOCOL_COLUMNS = ("scope", "setting", "value_a", "value_b")
# protocol_diff categories (store) that differ between any two models and are listed in
# ``Comparison.protocol_diff`` but not raised as warnings: the model itself, batch size,
# tokenizer details and the like.
BENIGN_PROTOCOL_CATEGORIES = ("model", "other")


# ---------------------------------------------------------------------------------------
# small shared helpers (no statistics here)
# ---------------------------------------------------------------------------------------

def default_metric(metrics) -> str:
    """The metric shown when none is asked for.

    ``acc`` if present, else ``exact_match,strict-match``, else the first metric in
    alphabetical order. Raises ``AnalysisError`` for an empty collection.
    """
    ms = sorted({str(m) for m in metrics if m is not None})
    if not ms:
        raise AnalysisError("no metric available")
    for pref in PREFERRED_METRICS:
        if pref in ms:
            return pref
    return ms[0]


def _check_confidence(confidence: float) -> None:
    if not (0.0 < float(confidence) < 1.0):
        raise AnalysisError(f"confidence must be strictly between 0 and 1, got {confidence}")


def resolve_run(store, ref) -> int:
    """Run id from a name or id (``store.resolve_run``); an unknown run becomes an
    AnalysisError naming the known runs, while "store busy" stays a StoreError so callers
    (the CLI's exit code 4) can tell the two apart."""
    try:
        return int(store.resolve_run(ref))
    except StoreError as exc:
        if is_store_busy(exc):
            raise
        raise AnalysisError(str(exc)) from exc


_resolve = resolve_run


def is_store_busy(exc: BaseException) -> bool:
    """True when a StoreError means "another process holds the store" (the store sets
    ``exc.busy``; the message is checked as a fallback)."""
    if getattr(exc, "busy", False):
        return True
    text = str(exc).lower()
    return "busy" in text or "locked" in text


def _run_names(store) -> dict[int, str]:
    runs = store.runs()
    return {int(r): str(n) for r, n in zip(runs["run_id"], runs["name"])}


def _fnum(x) -> float:
    """A Python float (NaN for None/NA)."""
    try:
        if x is None or pd.isna(x):
            return float("nan")
    except (TypeError, ValueError):
        pass
    return float(x)


def _is_binary(values: np.ndarray) -> bool:
    v = np.asarray(values, dtype=float)
    return bool(v.size) and bool(np.all((v == 0.0) | (v == 1.0)))


def _unit_scale(*arrays) -> bool:
    """True when every value lies in [0, 1] (differences are then shown in points x 100)."""
    for a in arrays:
        a = np.asarray(a, dtype=float)
        a = a[np.isfinite(a)]
        if a.size and (a.min() < 0.0 or a.max() > 1.0):
            return False
    return True


def _empty(columns) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


def _short(names, limit: int = 8) -> str:
    """A readable list: the first ``limit`` names and how many more."""
    names = list(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(map(str, names[:limit])) + more


def _natural_key(item_id: str):
    s = str(item_id)
    return (0, int(s), s) if s.lstrip("-").isdigit() else (1, 0, s)


def _sorted_items(ids) -> list[str]:
    return sorted((str(i) for i in ids), key=_natural_key)


def _holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values (``stats.adjust_pvalues``; NaNs stay NaN and do not count)."""
    return _adjust(pvalues, "holm")


def _adjust(pvalues, method: str) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return p
    return np.asarray(st.adjust_pvalues(p, method=method), dtype=float)


# ---------------------------------------------------------------------------------------
# thin adapters to evalcore.stats (one place to follow its signatures)
# ---------------------------------------------------------------------------------------

def _proportion(method: str, successes: int, n: int, confidence: float):
    """(low, high) of a 0/1 score by a closed-form method (``stats.proportion_interval``)."""
    r = st.proportion_interval(int(successes), int(n), method, confidence)
    return float(r.low), float(r.high)


def _mde(n: int, sd_diff: float, alpha: float, power: float = DEFAULT_POWER) -> float:
    if not (np.isfinite(sd_diff) and n >= 1):
        return float("nan")
    if sd_diff <= 0:
        return 0.0
    return float(st.minimum_detectable_effect(int(n), sd_diff=float(sd_diff), alpha=alpha,
                                              power=power))


def _chance(n_choices) -> float:
    k = _fnum(n_choices)
    if not np.isfinite(k) or k < 2:
        return float("nan")
    return float(st.chance_level(int(k)))


def _contains_chance(low: float, high: float, chance: float) -> bool:
    if not (np.isfinite(chance) and np.isfinite(low) and np.isfinite(high)):
        return False
    return bool(st.contains_chance(_Bounds(low, high), chance=chance))


@dataclass(frozen=True)
class _Bounds:
    """The part of ``stats.Interval`` that ``stats.contains_chance`` reads."""

    low: float
    high: float

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


# ---------------------------------------------------------------------------------------
# leaderboard
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Leaderboard:
    """Runs x tasks with score, interval and method.

    cells columns: run_id, run, task, metric, n, score, se, low, high, method,
        binary (all scores 0/1), chance (float|NaN), contains_chance (bool),
        reported (harness value|NaN), reported_stderr (NaN if none), audit_flag (str|None),
        has_items (bool; False = summary-only run, interval from reported stderr if any)
    averages columns: run_id, run, n_tasks, score, se, low, high, kind ("macro"),
        tasks (comma list of the tasks averaged)
    tiers columns: run_id, run, task ("__average__" for the macro average), best_run,
        diff_vs_best, p_raw, p_holm, indistinguishable_from_best (bool), n_shared
    ranks columns: run_id, run, task, rank, rank_low, rank_high  (paired bootstrap over
        shared items; same resampled items for every run)
    notes: human-readable caveats (e.g. "task X: 2 runs have no item-level data")
    metrics_by_task: the metric shown for each task.

    ``se`` is the CLT standard error (sd ddof=1 / sqrt(n), the harness convention) for the
    closed-form methods, the cluster-robust SE for "clustered", the bootstrap standard
    deviation for "bootstrap" and the reported stderr for summary-only cells. ``method`` is
    the method actually used for the cell (a binary-only method asked for a continuous score
    falls back to "clt", said in ``notes``).
    """

    method: str
    confidence: float
    metric: str | None
    cells: pd.DataFrame
    averages: pd.DataFrame
    tiers: pd.DataFrame
    ranks: pd.DataFrame
    notes: tuple[str, ...] = ()
    metrics_by_task: dict = field(default_factory=dict)


def leaderboard(store, *, task: str | None = None, metric: str | None = None,
                method: str = "wilson", confidence: float = 0.95,
                runs: list[str | int] | None = None, n_resamples: int = 2000,
                seed: int = 0, include_tiers: bool = True,
                include_ranks: bool = True, include_audit: bool = True,
                rank_tasks: list[str] | None = None) -> Leaderboard:
    """Scores with intervals for every run x task.

    Parameters
    ----------
    task, metric : restrict to one task / force one metric (default metric per task:
        ``default_metric`` over the metrics the runs have for it).
    method : one of ``METHODS``. Closed-form methods (wilson, clopper-pearson, bayes, clt)
        use ``store.cell_stats`` only (n, sum, sum of squares per cell, computed in SQL);
        bootstrap and clustered pull item means. Binary-only methods on continuous scores
        fall back to CLT; "clustered" without a cluster key falls back to CLT (both noted).
    include_tiers, include_ranks : compute the paired tiers / rank intervals (these need
        item-level data; pages may ask for them lazily). Tiers come from one SQL aggregate
        (no item pull). Rank intervals bootstrap every task's items x runs matrix (~0.15-0.3 s
        per task of 50 runs x 2,000 items): ``rank_tasks`` limits them to the tasks named
        (None: every task; names not on the board are ignored).
    include_audit : fill ``audit_flag`` from ``store.audit`` (False leaves it None).

    Summary-only runs (results JSON without items) are shown from the reported value with
    interval value +- z * reported stderr (NaN when no stderr) and ``has_items=False``.
    The macro average per run is mean_t(score_t) with SE = sqrt(sum_t SE_t^2) / k over the
    k tasks the run has (``stats.aggregate_tasks`` convention, METHODS.md).
    """
    if method not in METHODS:
        raise AnalysisError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    _check_confidence(confidence)
    notes: list[str] = []
    run_table = store.runs()
    names = {int(r): str(n) for r, n in zip(run_table["run_id"], run_table["name"])}
    if runs is not None:
        ids = list(dict.fromkeys(_resolve(store, r) for r in runs))
    else:
        ids = [int(r) for r in run_table["run_id"]]
    if not ids:
        return Leaderboard(method, confidence, metric, _empty(CELL_COLUMNS),
                           _empty(AVERAGE_COLUMNS), _empty(TIER_COLUMNS), _empty(RANK_COLUMNS),
                           ("The store is empty: ingest some results first.",), {})

    tasks_df = store.tasks(ids)
    summ = store.summaries(ids)
    if len(summ):
        summ = summ[~summ["is_group"].fillna(False).astype(bool)]
    if task is not None:
        tasks_df = tasks_df[tasks_df["task"] == task]
        summ = summ[summ["task"] == task]
        if tasks_df.empty and summ.empty:
            raise AnalysisError(f"no run has task {task!r}")

    # metric per task --------------------------------------------------------------
    item_rows = tasks_df[tasks_df["has_items"].fillna(True).astype(bool)] if len(tasks_df) else tasks_df
    avail: dict[str, set[str]] = {}
    for t, m in zip(item_rows["task"], item_rows["metric"]):
        avail.setdefault(str(t), set()).add(str(m))
    for t, m in zip(summ["task"], summ["metric"]):
        avail.setdefault(str(t), set()).add(str(m))
    metrics_by_task: dict[str, str] = {}
    for t in sorted(avail):
        if metric is not None:
            if metric in avail[t]:
                metrics_by_task[t] = metric
            elif task is not None:
                raise AnalysisError(f"task {t!r} has no metric {metric!r}; it has: "
                                    f"{', '.join(sorted(avail[t]))}")
        else:
            metrics_by_task[t] = default_metric(avail[t])
            if len(avail[t]) > 1:
                others = sorted(avail[t] - {metrics_by_task[t]})
                notes.append(f"{t}: showing metric {metrics_by_task[t]!r} (default); "
                             f"also available: {', '.join(others)}")
    if metric is not None and not metrics_by_task:
        raise AnalysisError(f"no task has metric {metric!r}")
    if metric is not None:
        skipped = sorted(set(avail) - set(metrics_by_task))
        if skipped:
            notes.append(f"tasks without metric {metric!r} are not shown: {', '.join(skipped)}")
    chosen = pd.DataFrame({"task": list(metrics_by_task), "metric": list(metrics_by_task.values())})

    # item-level cells from SQL sufficient statistics --------------------------------
    cs = store.cell_stats(ids, task=task, metric=metric)
    cs = cs.merge(chosen, on=["task", "metric"], how="inner")
    cs = cs[cs["n"].astype(float) > 0].copy()
    cs["run_id"] = cs["run_id"].astype(int)
    n = cs["n"].to_numpy(dtype=float)
    ssum = cs["sum"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = ssum / n
    se = st.mean_se_from_moments(n, ssum, cs["sumsq"].to_numpy(dtype=float))
    # 0/1 per-item scores: raw scores 0/1 and every item mean 0 or 1 (with K answers per
    # item the means can be fractions); for scores in [0, 1], sum m_i^2 = sum m_i exactly
    # when every m_i is 0 or 1.
    binary = (cs["binary"].fillna(False).astype(bool).to_numpy()
              & np.isclose(cs["sumsq"].to_numpy(dtype=float), ssum, rtol=0, atol=1e-9))
    z = st.z_value(confidence)
    low = np.full(len(cs), np.nan)
    high = np.full(len(cs), np.nan)
    used = np.array([method] * len(cs), dtype=object)

    # number of choices per task (the largest any run recorded) for the chance level
    n_choices: dict[str, float] = {}
    for t, k in zip(tasks_df["task"].tolist(), tasks_df["n_choices"].tolist()):
        k = _fnum(k)
        if np.isfinite(k):
            n_choices[str(t)] = max(n_choices.get(str(t), 0.0), k)

    if method in BINARY_ONLY_METHODS or method == "clt":
        cont = ~binary
        if cont.any() and method != "clt":
            bad = sorted(set(cs.loc[cont, "task"]))
            notes.append(f"{METHOD_LABELS[method]} needs 0/1 scores; CLT used for the "
                         f"continuous scores of: {', '.join(bad)}")
        for i in np.flatnonzero(binary):
            low[i], high[i] = _proportion(method, int(round(ssum[i])), int(n[i]), confidence)
        used[cont] = "clt"
        low[cont] = score[cont] - z * se[cont]
        high[cont] = score[cont] + z * se[cont]
    else:  # bootstrap / clustered: item-level pull, one query per task
        for t, m in metrics_by_task.items():
            rows = np.flatnonzero((cs["task"] == t).to_numpy())
            if rows.size == 0:
                continue
            run_here = [int(cs["run_id"].iloc[i]) for i in rows]
            im = store.item_means(run_here, task=t, metric=m)
            groups = {int(k): g for k, g in im.groupby("run_id")}
            for i in rows:
                rid = int(cs["run_id"].iloc[i])
                g = groups.get(rid)
                if g is None or g.empty:
                    continue
                x = g["score"].to_numpy(dtype=float)
                if method == "bootstrap":
                    r = st.score_interval(x, "bootstrap", confidence=confidence,
                                          seed=seed, n_resamples=n_resamples)
                else:
                    cl = g["cluster"]
                    if cl.isna().all():
                        used[i] = "clt"
                        low[i], high[i] = score[i] - z * se[i], score[i] + z * se[i]
                        continue
                    cl = cl.astype(object).where(cl.notna(), "__item__" + g["item_id"].astype(str))
                    r = st.score_interval(x, "clustered", confidence=confidence,
                                          clusters=cl.astype(str).to_numpy())
                low[i], high[i] = float(r.low), float(r.high)
                if np.isfinite(_fnum(r.se)):
                    se[i] = float(r.se)
        if method == "clustered":
            nocl = sorted({cs["task"].iloc[i] for i in range(len(cs)) if used[i] == "clt"})
            if nocl:
                notes.append("no cluster key, CLT used for: " + ", ".join(nocl))
        else:
            notes.append(f"bootstrap: {n_resamples} resamples of items, seed {seed}")

    cells = pd.DataFrame({
        "run_id": cs["run_id"].to_numpy(dtype=int),
        "run": [names.get(int(r), str(r)) for r in cs["run_id"]],
        "task": cs["task"].astype(str).to_numpy(),
        "metric": cs["metric"].astype(str).to_numpy(),
        "n": n.astype(int),
        "score": score, "se": se, "low": low, "high": high,
        "method": used, "binary": binary, "has_items": True,
    })

    # reported numbers, summary-only cells ------------------------------------------------
    rep = summ.merge(chosen, on=["task", "metric"], how="inner")[
        ["run_id", "task", "metric", "value", "stderr", "n"]].copy()
    rep["run_id"] = rep["run_id"].astype(int)
    rep = rep.drop_duplicates(["run_id", "task", "metric"])
    rep = rep.rename(columns={"value": "reported", "stderr": "reported_stderr",
                              "n": "n_reported"})
    cells = cells.merge(rep, on=["run_id", "task", "metric"], how="left")
    have = set(zip(cells["run_id"], cells["task"], cells["metric"]))
    so = rep[[(r, t, m) not in have for r, t, m in
              zip(rep["run_id"], rep["task"], rep["metric"])]]
    if len(so):
        val = so["reported"].to_numpy(dtype=float)
        rse = so["reported_stderr"].to_numpy(dtype=float)
        extra = pd.DataFrame({
            "run_id": so["run_id"].to_numpy(dtype=int),
            "run": [names.get(int(r), str(r)) for r in so["run_id"]],
            "task": so["task"].astype(str).to_numpy(),
            "metric": so["metric"].astype(str).to_numpy(),
            "n": pd.array(so["n_reported"], dtype="Int64"),
            "score": val, "se": rse, "low": val - z * rse, "high": val + z * rse,
            "method": "reported", "binary": False, "has_items": False,
            "reported": val, "reported_stderr": rse,
        })
        cells = pd.concat([cells if len(cells) else None, extra], ignore_index=True)
        for t in sorted(set(extra["task"])):
            k = int((extra["task"] == t).sum())
            notes.append(f"{t}: {k} run(s) have no item-level data; shown from the "
                         f"harness-reported value and stderr")
        if np.isnan(rse).any():
            notes.append("summary-only cells without a reported stderr have no interval")
    cells = cells.drop(columns=["n_reported"], errors="ignore")
    cells["n"] = pd.array(cells["n"], dtype="Int64")

    # audit flags -----------------------------------------------------------------------
    cells["audit_flag"] = None
    aud = store.audit(ids) if include_audit else None
    if aud is not None and len(aud):
        a = aud[["run_id", "task", "metric", "flag"]].copy()
        a["run_id"] = a["run_id"].astype(int)
        a = a[a["flag"].notna()].groupby(["run_id", "task", "metric"], as_index=False)[
            "flag"].agg(lambda s: "; ".join(sorted(set(map(str, s)))))
        cells = cells.merge(a, on=["run_id", "task", "metric"], how="left")
        cells["audit_flag"] = cells["flag"].astype(object).where(cells["flag"].notna(), None)
        cells = cells.drop(columns=["flag"])

    # chance ------------------------------------------------------------------------------
    chance = np.array([_chance(n_choices.get(t)) if _chance_applies(m, b) else np.nan
                       for t, m, b in zip(cells["task"], cells["metric"], cells["binary"])],
                      dtype=float)
    cells["chance"] = chance
    cells["contains_chance"] = [_contains_chance(lo, hi, c) for lo, hi, c in
                                zip(cells["low"], cells["high"], chance)]
    for t in sorted(set(cells.loc[cells["contains_chance"], "task"])):
        notes.append(f"{t}: some intervals contain the chance level; those scores cannot "
                     f"rank anything")

    cells = cells[list(CELL_COLUMNS)].sort_values(["task", "score"], ascending=[True, False],
                                                 kind="stable").reset_index(drop=True)
    averages = _macro_averages(cells, confidence, notes)
    tiers = _empty(TIER_COLUMNS)
    ranks = _empty(RANK_COLUMNS)
    # rank intervals need the items x runs matrices of their tasks; the tiers of those
    # tasks reuse them, the other tasks' tiers come from one SQL aggregate
    mats = {}
    if include_ranks:
        mats = _item_matrices(store, cells, metrics_by_task,
                              None if rank_tasks is None else {str(t) for t in rank_tasks})
        ranks = _ranks(mats, names, confidence, n_resamples, seed, notes)
    if include_tiers:
        tiers = _tiers(store, cells, averages, metrics_by_task, names, confidence, mats)
    return Leaderboard(method, confidence, metric, cells, averages, tiers, ranks,
                       tuple(notes), metrics_by_task)


def _chance_applies(metric: str, binary: bool) -> bool:
    """Chance is a baseline for accuracies of a multiple-choice task."""
    base = str(metric).split(",")[0].lower()
    return bool(binary) or base.startswith("acc") or base in ("exact_match", "accuracy")


def _macro_averages(cells: pd.DataFrame, confidence: float,
                    notes: list[str]) -> pd.DataFrame:
    rows = []
    usable = cells[np.isfinite(cells["score"].to_numpy(dtype=float))
                   & np.isfinite(cells["se"].to_numpy(dtype=float))]
    all_tasks = sorted(set(cells["task"]))
    if len(all_tasks) < 2:
        return _empty(AVERAGE_COLUMNS)
    sets = set()
    for rid, g in usable.groupby("run_id", sort=False):
        g = g.sort_values("task")
        agg = st.aggregate_tasks(g["score"].to_numpy(dtype=float), g["se"].to_numpy(dtype=float),
                                 kind="macro", confidence=confidence)
        tasks = ",".join(g["task"])
        sets.add(tasks)
        rows.append({"run_id": int(rid), "run": str(g["run"].iloc[0]), "n_tasks": len(g),
                     "score": float(agg.estimate), "se": float(agg.se), "low": float(agg.low),
                     "high": float(agg.high),
                     "kind": "macro", "tasks": tasks})
    if len(sets) > 1:
        notes.append("macro averages are over different task sets (see the tasks column); "
                     "compare averages only between runs with the same tasks")
    if not rows:
        return _empty(AVERAGE_COLUMNS)
    return pd.DataFrame(rows, columns=list(AVERAGE_COLUMNS)).sort_values(
        "score", ascending=False, kind="stable").reset_index(drop=True)


def _item_runs_by_task(cells: pd.DataFrame) -> dict[str, list[int]]:
    """Run ids with item-level data per task, in the cells' order (best score first)."""
    itemcells = cells[cells["has_items"].astype(bool)]
    out: dict[str, list[int]] = {}
    for t, r in zip(itemcells["task"].tolist(), itemcells["run_id"].tolist()):
        out.setdefault(str(t), []).append(int(r))
    return out


def _compared_runs(cells: pd.DataFrame, metrics_by_task: dict[str, str],
                   tasks=None) -> dict[str, list[int]]:
    """Tasks with 2+ item-level runs (optionally only ``tasks``) -> their run ids."""
    return {t: r for t, r in _item_runs_by_task(cells).items()
            if t in metrics_by_task and len(r) >= 2 and (tasks is None or t in tasks)}


def _tiers(store, cells: pd.DataFrame, averages: pd.DataFrame,
           metrics_by_task: dict[str, str], names, confidence: float,
           mats: dict[str, tuple[list[int], np.ndarray]] | None = None) -> pd.DataFrame:
    """Runs indistinguishable from the best, per task and for the macro average.

    Per task: the best run is the highest score; every other run is tested against it on
    the items both have (exact McNemar for 0/1, else paired z), p-values Holm-adjusted over
    the runs compared (``stats.adjust_pvalues``); indistinguishable when the adjusted p is
    not below alpha = 1 - confidence (an undefined p cannot separate runs, as in
    ``stats.indistinguishable_from_best``). Macro average: the run with the best average
    is the reference among the runs averaged over the same task set (the most common set of
    2+ tasks); per run, the mean over tasks of the per-task paired differences with
    SE = sqrt(sum_t SE_t^2)/k (``stats.aggregate_tasks``) and a z-test, Holm-adjusted.

    No item is pulled: ``store.reference_moments`` returns, per (task, reference, run), the
    shared-item sums n, sum d, sum d^2, b, c in one SQL aggregate, from which
    diff = sum d / n, SE = ``stats.mean_se_from_moments(n, sum d, sum d^2)`` (= sd(d)/sqrt(n))
    and the McNemar / z p-values follow; runs sharing no item with the reference get n = 0
    and NaN statistics. Tasks whose items x runs matrix was already pulled for the rank
    intervals (``mats``: task -> (run ids, matrix)) use ``stats.paired_columns`` on it
    instead (the same numbers; one pull serves both when a page shows one task).
    """
    alpha = 1.0 - confidence
    item_cells = cells[cells["has_items"].astype(bool)]
    runs_of = _compared_runs(cells, metrics_by_task)
    if not runs_of:
        return _empty(TIER_COLUMNS)
    mats = {t: (cols, x) for t, (cols, x) in (mats or {}).items()
            if t in runs_of and sorted(cols) == sorted(runs_of[t])}
    score_of = {(int(r), str(t)): float(v) for r, t, v in
                zip(item_cells["run_id"].tolist(), item_cells["task"].tolist(),
                    item_cells["score"].tolist())}
    binary_of = item_cells.groupby("task")["binary"].agg(lambda b: bool(np.all(b)))
    best_of = {}
    for t, rids in runs_of.items():
        sc = np.array([score_of.get((r, t), -np.inf) for r in rids])
        best_of[t] = rids[int(np.argmax(sc))]
    best_avg = None
    group: set[int] = set()
    if len(averages):
        # the average tier compares runs averaged over the same task set: the most common
        # set (of 2+ tasks) among runs with item-level data; its best-scoring run is the
        # reference
        ok = averages[averages["run_id"].isin(item_cells["run_id"]) & (averages["n_tasks"] >= 2)]
        if len(ok):
            common = ok["tasks"].value_counts().index[0]
            same = ok[ok["tasks"] == common]
            if len(same) >= 2:
                group = set(int(r) for r in same["run_id"])
                best_avg = int(same.iloc[0]["run_id"])
    sql_tasks = [t for t in runs_of if t not in mats]
    comparisons = [(t, metrics_by_task[t], best_of[t]) for t in sql_tasks]
    if best_avg is not None:
        comparisons += [(t, metrics_by_task[t], best_avg) for t in sql_tasks
                        if best_avg in runs_of[t] and best_avg != best_of[t]]
    all_runs = sorted({r for t in sql_tasks for r in runs_of[t]})
    mom = store.reference_moments(comparisons, run_ids=all_runs) if comparisons else None
    mom = mom if mom is not None else pd.DataFrame(
        columns=["task", "ref_run_id", "run_id", "n", "sum_d", "sum_d2", "b", "c"])
    by_key = {(str(t), int(ref), int(r)): (int(n), float(sd), float(sd2), int(b), int(c))
              for t, ref, r, n, sd, sd2, b, c in zip(
                  mom["task"].tolist(), mom["ref_run_id"].tolist(), mom["run_id"].tolist(),
                  mom["n"].tolist(), mom["sum_d"].tolist(), mom["sum_d2"].tolist(),
                  mom["b"].tolist(), mom["c"].tolist())}

    def against(t: str, ref: int) -> tuple[np.ndarray, ...]:
        """diff, se, n_shared and the test's p of every run of task t against run ref
        (arrays over ``runs_of[t]``; p is NaN below 2 shared items)."""
        binary = bool(binary_of.get(t, False))
        if t in mats:
            cols, x = mats[t]
            order = [cols.index(r) for r in runs_of[t]]
            pc = st.paired_columns(x[:, order], runs_of[t].index(ref), binary=binary)
            return pc.diff, pc.se, np.asarray(pc.n_shared, dtype=int), pc.p_value
        v = np.array([by_key.get((t, ref, r), (0, np.nan, np.nan, 0, 0)) for r in runs_of[t]],
                     dtype=float)
        n = v[:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.where(n >= 1, v[:, 1] / n, np.nan)
        se = st.mean_se_from_moments(n, v[:, 1], v[:, 2])
        p = st.mcnemar_exact_p(v[:, 3], v[:, 4]) if binary else st.normal_p_value(diff, se)
        return diff, se, n.astype(int), np.where(n >= 2, p, np.nan)

    rows = []
    per_run: dict[int, list[tuple[float, float, int]]] = {}
    for t, rids in runs_of.items():
        best = best_of[t]
        bc = rids.index(best)
        diff, se, nsh, p = against(t, best)
        p = np.array(p, dtype=float)
        p[bc] = np.nan
        padj = _holm(p)
        for j, rid in enumerate(rids):
            is_best = j == bc
            rows.append({"run_id": rid, "run": names.get(rid, str(rid)), "task": t,
                         "best_run": names.get(best, str(best)),
                         "diff_vs_best": 0.0 if is_best else float(diff[j]),
                         "p_raw": np.nan if is_best else float(p[j]),
                         "p_holm": np.nan if is_best else float(padj[j]),
                         "indistinguishable_from_best": bool(is_best or not padj[j] < alpha),
                         "n_shared": int(nsh[j])})
        if best_avg is not None and best_avg in rids:
            d2, se2, n2, _ = (diff, se, nsh, p) if best_avg == best else \
                against(t, best_avg)
            for j, rid in enumerate(rids):
                if rid != best_avg and rid in group and np.isfinite(d2[j]) and np.isfinite(se2[j]):
                    per_run.setdefault(rid, []).append((float(d2[j]), float(se2[j]), int(n2[j])))
    if best_avg is not None and per_run:
        rids = sorted(per_run)
        dd, ses, nn = [], [], []
        for rid in rids:
            v = per_run[rid]
            agg = st.aggregate_tasks(np.array([a for a, _, _ in v]),
                                     np.array([e for _, e, _ in v]))
            dd.append(float(agg.estimate))
            ses.append(float(agg.se))
            nn.append(sum(k for _, _, k in v))
        pp = st.normal_p_value(dd, ses)
        padj = _holm(pp)
        bname = names.get(best_avg, str(best_avg))
        rows.append({"run_id": best_avg, "run": bname, "task": AVERAGE_TASK, "best_run": bname,
                     "diff_vs_best": 0.0, "p_raw": np.nan, "p_holm": np.nan,
                     "indistinguishable_from_best": True, "n_shared": 0})
        for i, rid in enumerate(rids):
            rows.append({"run_id": rid, "run": names.get(rid, str(rid)), "task": AVERAGE_TASK,
                         "best_run": bname, "diff_vs_best": dd[i], "p_raw": float(pp[i]),
                         "p_holm": float(padj[i]),
                         "indistinguishable_from_best": bool(not padj[i] < alpha),
                         "n_shared": nn[i]})
    if not rows:
        return _empty(TIER_COLUMNS)
    return pd.DataFrame(rows, columns=list(TIER_COLUMNS))


def _item_matrices(store, cells: pd.DataFrame, metrics_by_task: dict[str, str],
                   tasks) -> dict[str, tuple[list[int], np.ndarray]]:
    """task -> (run ids, items x runs matrix of item means, NaN where a run lacks an item)
    for the tasks in ``tasks`` (None: all) with 2+ item-level runs: one query for all of
    them (``store.item_mean_rows``), pivoted in numpy (runs in the cells' order, items in
    store order)."""
    runs_of = _compared_runs(cells, metrics_by_task, tasks)
    if not runs_of:
        return {}
    all_runs = sorted({r for rids in runs_of.values() for r in rids})
    im = store.item_mean_rows([(t, metrics_by_task[t]) for t in runs_of], run_ids=all_runs)
    out = {}
    for (t, m), g in im.groupby(["task", "metric"], sort=False):
        t = str(t)
        if t not in runs_of or metrics_by_task[t] != str(m):
            continue
        rids = runs_of[t]
        cols = pd.Index(rids).get_indexer(g["run_id"].to_numpy(dtype=np.int64))
        keep = cols >= 0
        item_codes, items = pd.factorize(g["item_id"].to_numpy()[keep])
        x = np.full((len(items), len(rids)), np.nan)
        x[item_codes, cols[keep]] = g["score"].to_numpy(dtype=float)[keep]
        present = ~np.all(np.isnan(x), axis=0)
        out[t] = ([r for r, ok in zip(rids, present) if ok], x[:, present])
    return out


def _ranks(mats: dict[str, tuple[list[int], np.ndarray]], names, confidence: float,
           n_resamples: int, seed: int, notes: list[str]) -> pd.DataFrame:
    """Paired-bootstrap rank intervals per task (``stats.paired_bootstrap_ranks``) over the
    items every run of the task has."""
    rows = []
    for t, (run_cols, x) in mats.items():
        complete = np.all(np.isfinite(x), axis=1)
        if len(run_cols) < 2 or complete.sum() < 2:
            notes.append(f"{t}: fewer than 2 items shared by all runs; no rank intervals")
            continue
        if (~complete).any():
            notes.append(f"{t}: rank intervals use the {int(complete.sum())} items all "
                         f"runs share")
        r = st.paired_bootstrap_ranks(x[complete], n_resamples=n_resamples, seed=seed,
                                      confidence=confidence)
        for j, rid in enumerate(run_cols):
            rows.append({"run_id": rid, "run": names.get(rid, str(rid)), "task": t,
                         "rank": int(r.rank[j]), "rank_low": int(r.rank_low[j]),
                         "rank_high": int(r.rank_high[j])})
    if not rows:
        return _empty(RANK_COLUMNS)
    return pd.DataFrame(rows, columns=list(RANK_COLUMNS))


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
        correlation, b, c (NaN unless 0/1), p_exact, p_midp, p_adjusted, adjustment
        ("holm" when several tasks), mde (points at alpha, power 0.8), verdict (str),
        kind ("paired", "paired, clustered SE" or "unpaired from reported stderr"),
        points_scale (100 when scores lie in [0, 1], else 1: multiply diff/mde by it to
        get "points"), sd_diff (sd of the per-item differences, ddof=1; NaN when unpaired)
    protocol_diff columns: scope ("run" or task name), setting, value_a, value_b
    pairing: one Pairing per task
    overall: the same fields as a per_task row for the macro average over tasks (or None)
    verdict: one sentence for the headline ("B is better by ...", "no difference detected,
        and this design could have detected X points", "underpowered: MDE here is Y points")
    warnings: protocol/pairing problems, meant to be shown BEFORE the numbers.

    ``mde`` is in the metric's units (0.05 = 5 points on a [0, 1] scale); ``p_exact`` is the
    exact McNemar p for 0/1 scores and the normal-approximation paired p otherwise.
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


def _fmt_points(value: float, scale: float) -> str:
    if scale == 100.0:
        return f"{abs(value) * 100:.1f} points"
    return f"{abs(value):.3g} units"


def verdict_text(diff: float, low: float, high: float, mde: float, *, scale: float,
                 threshold: float, name_a: str = "A", name_b: str = "B") -> str:
    """The verdict rule (see the module docstring): different / no difference detected /
    underpowered. ``threshold`` is the largest MDE (metric units) still called adequate."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "not enough data for an interval"
    if low > 0 or high < 0:
        # state the gap and its CI as positive numbers in favour of the better run
        better, worse = (name_b, name_a) if diff > 0 else (name_a, name_b)
        lo, hi = (low, high) if diff > 0 else (-high, -low)
        return (f"different: {better} is better than {worse} by {_fmt_points(diff, scale)} "
                f"(CI {_plain(lo, scale)} to {_plain(hi, scale)})")
    if not np.isfinite(mde) or mde > threshold:
        return f"underpowered: the MDE here is {_fmt_points(mde, scale)}" if np.isfinite(mde) \
            else "underpowered: the MDE cannot be estimated"
    return (f"no difference detected, and this design could have detected "
            f"{_fmt_points(mde, scale)}")


def _plain(v: float, scale: float) -> str:
    return f"{v * scale:.1f}" if scale == 100.0 else f"{v:.3g}"


def _threshold(mde_threshold: float | None, unit: bool, score_a: float, score_b: float) -> float:
    if mde_threshold is not None:
        return float(mde_threshold)
    if unit:
        return 0.05
    return 0.05 * max(abs(_fnum(score_a)), abs(_fnum(score_b)), 1e-12)


def _paired_frames(store, a: int, b: int, task_metrics: list[tuple[str, str]]
                   ) -> dict[tuple[str, str], tuple[pd.DataFrame, Pairing]]:
    """Shared items (item_id, x_a, x_b, cluster) and the pairing report (shared, only in A,
    only in B, hash mismatches) of two runs for several (task, metric) cells, from one store
    query (``store.paired_item_means_tasks``) instead of two per task."""
    if not task_metrics:
        return {}
    pm = store.paired_item_means_tasks(a, b, task_metrics)
    groups = {(str(t), str(m)): g for (t, m), g in pm.groupby(["task", "metric"], sort=False)}
    out = {}
    for t, m in task_metrics:
        g = groups.get((t, m), pm.iloc[0:0])
        ids = g["item_id"].astype(str).to_numpy(dtype=object)
        in_a = g["score_a"].notna().to_numpy()
        in_b = g["score_b"].notna().to_numpy()
        both = in_a & in_b
        shared = g[both]
        frame = pd.DataFrame({"item_id": ids[both],
                              "x_a": shared["score_a"].to_numpy(dtype=float),
                              "x_b": shared["score_b"].to_numpy(dtype=float),
                              "cluster": shared["cluster"].to_numpy(dtype=object)})
        mismatch = both & ~g["hash_match"].fillna(True).to_numpy(dtype=bool)
        out[(t, m)] = (frame, Pairing(task=t, metric=m, n_shared=int(both.sum()),
                                      only_a=tuple(_sorted_items(ids[in_a & ~in_b])),
                                      only_b=tuple(_sorted_items(ids[in_b & ~in_a])),
                                      hash_mismatch=tuple(_sorted_items(ids[mismatch]))))
    return out


def _paired_frame(store, a: int, b: int, task: str, metric_a: str,
                  metric_b: str | None = None) -> pd.DataFrame:
    """Shared items of (a, metric_a) and (b, metric_b): item_id, x_a, x_b, cluster."""
    metric_b = metric_b or metric_a
    if hasattr(store, "paired_item_means"):
        pm = store.paired_item_means(a, b, task, metric_a, metric_b)
        m = pd.DataFrame({"item_id": pm["item_id"].astype(str),
                          "x_a": pm["score_a"].to_numpy(float),
                          "x_b": pm["score_b"].to_numpy(float), "cluster": pm["cluster"]})
        return m.sort_values("item_id", key=lambda s: s.map(_natural_key)).reset_index(drop=True)
    if a == b:
        im = store.item_means([a], task=task, metric=None)
        ia = im[im["metric"] == metric_a]
        ib = im[im["metric"] == metric_b]
    else:
        ia = store.item_means([a], task=task, metric=metric_a)
        ib = store.item_means([b], task=task, metric=metric_b)
    ia = ia[["item_id", "score", "cluster"]].rename(columns={"score": "x_a", "cluster": "cl_a"})
    ib = ib[["item_id", "score", "cluster"]].rename(columns={"score": "x_b", "cluster": "cl_b"})
    m = ia.merge(ib, on="item_id", how="inner")
    m["cluster"] = m["cl_a"].where(m["cl_a"].notna(), m["cl_b"])
    m = m.drop(columns=["cl_a", "cl_b"])
    m["item_id"] = m["item_id"].astype(str)
    return m.sort_values("item_id", key=lambda s: s.map(_natural_key)).reset_index(drop=True)


def _paired_row(frame: pd.DataFrame, task: str, metric: str, confidence: float,
                mde_threshold: float | None, name_a: str, name_b: str) -> dict:
    """One per_task row from the shared items of two runs (or two metrics)."""
    xa = frame["x_a"].to_numpy(dtype=float)
    xb = frame["x_b"].to_numpy(dtype=float)
    n = xa.size
    alpha = 1.0 - confidence
    unit = _unit_scale(xa, xb)
    scale = 100.0 if unit else 1.0
    clusters = None
    kind = "paired"
    if frame["cluster"].notna().any():
        cl = frame["cluster"].astype(object).where(frame["cluster"].notna(),
                                                   "__item__" + frame["item_id"])
        if cl.nunique() >= 2:
            clusters = cl.astype(str).to_numpy()
            kind = "paired, clustered SE"
    if n < 2:
        raise AnalysisError(f"{task}: only {n} shared item(s); a paired comparison needs at "
                            f"least 2")
    r = st.paired_difference(xa, xb, confidence=confidence, clusters=clusters)
    sd_diff = float(np.std(xb - xa, ddof=1))   # per-item sd of d (the MDE's input)
    binary = _is_binary(xa) and _is_binary(xb)
    bcount = ccount = both = neither = float("nan")
    p_exact = p_midp = float("nan")
    if binary:
        # the 2x2 table: b = only B right, c = only A right, and the two concordant cells
        bcount, ccount = float(r.b), float(r.c)
        both = float(np.sum((xa == 1) & (xb == 1)))
        neither = float(np.sum((xa == 0) & (xb == 0)))
        p_exact, p_midp = float(r.mcnemar.p_exact), float(r.mcnemar.p_midp)
    else:
        p_exact = _fnum(r.p_value)
    if clusters is not None:
        # the clustered paired SE is the inferential SE; the MDE follows it
        mde = _mde(n, float(r.se) * math.sqrt(n), alpha)
    else:
        mde = _mde(n, sd_diff, alpha)
    score_a, score_b = float(np.mean(xa)), float(np.mean(xb))
    thr = _threshold(mde_threshold, unit, score_a, score_b)
    return {"task": task, "metric": metric, "n": int(n), "score_a": score_a, "score_b": score_b,
            "diff": float(r.diff), "se": float(r.se), "low": float(r.low), "high": float(r.high),
            "se_unpaired": _fnum(r.se_unpaired), "correlation": _fnum(r.correlation),
            "b": bcount, "c": ccount, "both": both, "neither": neither, "p_exact": p_exact, "p_midp": p_midp,
            "p_adjusted": p_exact, "adjustment": "none", "mde": mde,
            "verdict": verdict_text(float(r.diff), float(r.low), float(r.high), mde,
                                    scale=scale, threshold=thr, name_a=name_a, name_b=name_b),
            "kind": kind, "points_scale": scale, "sd_diff": sd_diff}


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
                  mde_threshold: float | None, name_a: str, name_b: str) -> dict | None:
    """Fallback when a run has no item-level data: unpaired difference from the reported
    stderrs, SE = sqrt(SE_A^2 + SE_B^2) (METHODS.md); None when a side has no stderr."""
    va, ea, na = _side_numbers(store, a, task, metric)
    vb, eb, nb = _side_numbers(store, b, task, metric)
    if not all(np.isfinite([va, vb, ea, eb])):
        return None
    z = st.z_value(confidence)
    diff = vb - va
    se = math.hypot(ea, eb)
    n = int(min(na, nb)) if np.isfinite(na) and np.isfinite(nb) else 0
    # MDE of a difference whose SE is se: (z_{1-a/2} + z_power) * se (n = 1, sd = se)
    mde = _mde(1, se, 1.0 - confidence)
    unit = 0 <= va <= 1 and 0 <= vb <= 1
    scale = 100.0 if unit else 1.0
    p = float(st.normal_p_value(diff, se)[0])
    return {"task": task, "metric": metric, "n": n, "score_a": va, "score_b": vb, "diff": diff,
            "se": se, "low": diff - z * se, "high": diff + z * se, "se_unpaired": se,
            "correlation": float("nan"), "b": float("nan"), "c": float("nan"), "both": float("nan"), "neither": float("nan"),
            "p_exact": p, "p_midp": float("nan"), "p_adjusted": p, "adjustment": "none",
            "mde": mde,
            "verdict": "unpaired (reported stderr, no item-level data): " + verdict_text(
                diff, diff - z * se, diff + z * se, mde, scale=scale,
                threshold=_threshold(mde_threshold, unit, va, vb), name_a=name_a,
                name_b=name_b),
            "kind": "unpaired from reported stderr", "points_scale": scale,
            "sd_diff": float("nan")}


def _item_metrics(store, rid: int) -> dict[str, set[str]]:
    t = store.tasks([rid])
    if len(t) and "has_items" in t:
        t = t[t["has_items"].fillna(True).astype(bool)]
    out: dict[str, set[str]] = {}
    for task, m in zip(t["task"], t["metric"]):
        out.setdefault(str(task), set()).add(str(m))
    return out


def _summary_metrics(store, rid: int) -> dict[str, set[str]]:
    s = store.summaries([rid])
    if len(s):
        s = s[~s["is_group"].fillna(False).astype(bool)]
    out: dict[str, set[str]] = {}
    for task, m in zip(s["task"], s["metric"]):
        out.setdefault(str(task), set()).add(str(m))
    return out


def compare(store, run_a: str | int, run_b: str | int, *, task: str | None = None,
            metric: str | None = None, confidence: float = 0.95,
            adjust: str = "holm", mde_threshold: float | None = None) -> Comparison:
    """Paired difference on shared items, task by task, with McNemar for 0/1 scores.

    For each task both runs have (or ``task``): items are paired on item id (per-item means
    over answers), ``stats.paired_difference`` gives diff = mean(x_B - x_A), its paired SE
    (cluster-robust when a cluster key exists), CI, unpaired SE, correlation and, for 0/1
    scores, b, c and the exact McNemar test. p-values are adjusted across tasks (``adjust``:
    "holm" or "bh") when several tasks are compared. MDE at alpha = 1 - confidence, power
    0.8, from the observed sd of the differences. ``overall`` is the macro average of the
    per-task differences with SE = sqrt(sum SE_t^2)/k. Verdict rule: module docstring.

    When one of the runs has no item-level data for a task, an unpaired comparison from the
    harness-reported stderrs is used (labelled in ``kind`` and the verdict) if both have one.

    Raises AnalysisError: unknown run, same run twice, no common task, no shared items.
    """
    _check_confidence(confidence)
    if adjust not in ("holm", "bh"):
        raise AnalysisError(f"unknown adjustment {adjust!r}; use 'holm' or 'bh'")
    a, b = _resolve(store, run_a), _resolve(store, run_b)
    names = _run_names(store)
    name_a, name_b = names.get(a, str(a)), names.get(b, str(b))
    if a == b:
        raise AnalysisError(f"both runs are {name_a!r}; choose two different runs "
                            f"(for two metrics of one run use metric_variants)")
    ia, ib = _item_metrics(store, a), _item_metrics(store, b)
    sa, sb = _summary_metrics(store, a), _summary_metrics(store, b)
    tasks_a = set(ia) | set(sa)
    tasks_b = set(ib) | set(sb)
    common = sorted(tasks_a & tasks_b)
    if task is not None:
        if task not in tasks_a or task not in tasks_b:
            missing = [n for n, ts in ((name_a, tasks_a), (name_b, tasks_b)) if task not in ts]
            raise AnalysisError(f"task {task!r} is not in run(s) {', '.join(missing)}; "
                                f"tasks both runs have: {', '.join(common) or 'none'}")
        common = [task]
    if not common:
        raise AnalysisError(f"runs {name_a!r} and {name_b!r} have no task in common")

    rows: list[dict] = []
    pairings: list[Pairing] = []
    warnings: list[str] = []
    skipped: list[str] = []
    unpaired: list[str] = []
    no_stderr: list[str] = []
    plan: list[tuple[str, str, bool]] = []  # (task, metric, item-level in both runs)
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
            if not both_any:
                skipped.append(t)
                continue
            m = default_metric(both_items or both_any)
        plan.append((t, m, m in both_items))
    # item-level tasks: every shared-item frame and pairing report from one store query
    frames = _paired_frames(store, a, b, [(t, m) for t, m, paired in plan if paired])
    for t, m, paired in plan:
        if paired:
            frame, pairing = frames[(t, m)]
            pairings.append(pairing)
            if len(frame) < 2:
                warnings.append(f"{t}: {len(frame)} shared item(s); not compared")
                continue
            rows.append(_paired_row(frame, t, m, confidence, mde_threshold, name_a, name_b))
        else:
            row = _unpaired_row(store, a, b, t, m, confidence, mde_threshold, name_a, name_b)
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
    pdiff = _protocol_diff(store, a, b, [r["task"] for r in rows])
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
    per_task = pd.DataFrame(rows)
    if len(per_task) > 1:
        per_task["p_adjusted"] = _adjust(per_task["p_exact"].to_numpy(dtype=float), adjust)
        per_task["adjustment"] = adjust
    overall = None
    if len(per_task) > 1:
        overall = _overall(per_task, confidence, mde_threshold, name_a, name_b)
        verdict = f"macro average over {len(per_task)} tasks: {overall['verdict']}"
    else:
        verdict = str(per_task["verdict"].iloc[0])
    per_task = per_task[list(PER_TASK_COLUMNS)]
    return Comparison(run_a=name_a, run_b=name_b, confidence=confidence, per_task=per_task,
                      protocol_diff=pdiff, pairing=tuple(pairings), overall=overall,
                      verdict=verdict, warnings=tuple(warnings))


def _overall(per_task: pd.DataFrame, confidence: float, mde_threshold, name_a, name_b) -> dict:
    """Macro average of per-task differences: mean_t diff_t, SE = sqrt(sum SE_t^2)/k."""
    z = st.z_value(confidence)
    agg = st.aggregate_tasks(per_task["diff"].to_numpy(dtype=float),
                             per_task["se"].to_numpy(dtype=float))
    diff = float(agg.estimate)
    se = float(agg.se)  # bounds below are not agg.low/high: a difference is not clipped
    # MDE of an estimate whose SE is se: (z_{1-a/2} + z_power) * se, i.e. the paired MDE
    # formula with n = 1 and sd = se
    mde = _mde(1, se, 1.0 - confidence)
    unit = bool((per_task["points_scale"] == 100.0).all())
    scale = 100.0 if unit else 1.0
    sa = float(per_task["score_a"].mean())
    sb = float(per_task["score_b"].mean())
    low, high = diff - z * se, diff + z * se
    p = float(st.normal_p_value(diff, se)[0])
    return {"task": AVERAGE_TASK, "metric": ",".join(dict.fromkeys(per_task["metric"])),
            "n": int(per_task["n"].sum()), "score_a": sa, "score_b": sb, "diff": diff,
            "se": se, "low": low, "high": high,
            "se_unpaired": float(np.sqrt(np.sum(per_task["se_unpaired"].to_numpy(float) ** 2))
                                 / len(per_task)),
            "correlation": float("nan"), "b": float("nan"), "c": float("nan"), "both": float("nan"), "neither": float("nan"),
            "p_exact": p, "p_midp": float("nan"), "p_adjusted": p, "adjustment": "none",
            "mde": mde,
            "verdict": verdict_text(diff, low, high, mde, scale=scale,
                                    threshold=_threshold(mde_threshold, unit, sa, sb),
                                    name_a=name_a, name_b=name_b),
            "kind": "macro average of per-task differences", "points_scale": scale,
            "sd_diff": float("nan")}


def _protocol_diff(store, a: int, b: int, tasks: list[str]) -> pd.DataFrame:
    """Settings that differ: run scope plus the compared tasks (``store.protocol_diff``).
    Extra store columns (e.g. ``category``) are kept after the documented ones."""
    pdf = store.protocol_diff(a, b, tasks[0] if len(tasks) == 1 else None)
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
    columns: item_id, score_a, score_b, prompt, target, response_a, response_b
    With several answers per item a cell uses the per-item means (b: x_B > x_A, c: x_A > x_B,
    both: both = 1, neither: both = 0) and the texts of answer 0.
    """
    cells = ("b", "c", "both", "neither")
    if cell not in cells:
        raise AnalysisError(f"unknown cell {cell!r}; use one of {', '.join(cells)}")
    a, b = _resolve(store, run_a), _resolve(store, run_b)
    frame = _paired_frame(store, a, b, task, metric)
    xa, xb = frame["x_a"], frame["x_b"]
    mask = {"b": xb > xa, "c": xa > xb, "both": (xa == 1) & (xb == 1),
            "neither": (xa == 0) & (xb == 0)}[cell]
    sel = frame[mask.to_numpy()]
    ids = sel["item_id"].tolist()
    out = pd.DataFrame({"item_id": ids, "score_a": sel["x_a"].to_numpy(float),
                        "score_b": sel["x_b"].to_numpy(float)})
    ta = _first_texts(store, a, task, ids)
    tb = _first_texts(store, b, task, ids)
    out["prompt"] = [ta.get(i, {}).get("prompt") or tb.get(i, {}).get("prompt") for i in ids]
    out["target"] = [ta.get(i, {}).get("target") or tb.get(i, {}).get("target") for i in ids]
    out["response_a"] = [ta.get(i, {}).get("response") for i in ids]
    out["response_b"] = [tb.get(i, {}).get("response") for i in ids]
    return out


def _first_texts(store, rid: int, task: str, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    t = store.texts(rid, task, ids)
    if t is None or t.empty:
        return {}
    t = t.sort_values("answer_idx").drop_duplicates("item_id")
    return {str(r.item_id): {"prompt": r.prompt, "target": r.target, "response": r.response}
            for r in t.itertuples(index=False)}


# ---------------------------------------------------------------------------------------
# one run: repeats, reruns, clusters, metric variants
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RepeatsReport:
    """Several answers per item for one run/task/metric.

    curve columns: k, se, low_floor (between-item floor SE), measured (bool: the K observed)
    pass_at_k columns: k, estimate, se, low, high, n_items, method
    """

    run: str
    task: str
    metric: str
    n_items: int
    k_observed: int
    between: float
    within: float
    se_observed: float
    k_sufficient: int
    curve: pd.DataFrame
    pass_at_k: pd.DataFrame


def _one_metric(store, rid: int, task: str, metric: str | None) -> str:
    t = store.tasks([rid])
    t = t[t["task"] == task]
    if "has_items" in t:
        t = t[t["has_items"].fillna(True).astype(bool)]
    if t.empty:
        raise AnalysisError(f"run {_run_names(store).get(rid, rid)!r} has no item-level data "
                            f"for task {task!r}")
    ms = set(map(str, t["metric"]))
    if metric is None:
        return default_metric(ms)
    if metric not in ms:
        raise AnalysisError(f"task {task!r} has no metric {metric!r}; it has "
                            f"{', '.join(sorted(ms))}")
    return metric


def repeats(store, run: str | int, task: str, metric: str | None = None,
            k_max: int = 50, confidence: float = 0.95) -> RepeatsReport:
    """Variance components and the SE-vs-answers curve for a run with K answers per item.

    ``stats.variance_components`` on the items x answers matrix (NaN where an item has fewer
    answers): s_w^2 = mean_i v_i, s_b^2 = var(m_i) - s_w^2/K, SE(k) = sqrt((s_b^2 + s_w^2/k)/n)
    (METHODS.md). ``low_floor`` = sqrt(s_b^2 / n), the SE no number of answers gets below.
    pass@k (unbiased, ``stats.pass_at_k_summary``) for k = 1..K when scores are 0/1.
    Raises AnalysisError when the run has one answer per item.
    """
    rid = _resolve(store, run)
    m = _one_metric(store, rid, task, metric)
    sc = store.scores([rid], task=task, metric=m)
    if sc.empty:
        raise AnalysisError(f"no item scores for {task!r} / {m!r}")
    wide = sc.pivot_table(index="item_id", columns="answer_idx", values="score", aggfunc="first")
    x = wide.to_numpy(dtype=float)
    k_obs = int(np.max(np.sum(np.isfinite(x), axis=1)))
    if k_obs < 2:
        raise AnalysisError(f"{task!r}: one answer per item; repeats need several answers "
                            f"per item (epochs, repeats)")
    vc = st.variance_components(x)
    n_items = int(vc.n_items)
    between, within = float(vc.between), float(vc.within)
    ks = np.arange(1, max(int(k_max), k_obs) + 1)
    ses = np.array([float(vc.se(int(k))) for k in ks])
    floor = math.sqrt(max(between, 0.0) / n_items) if n_items else float("nan")
    curve = pd.DataFrame({"k": ks, "se": ses, "low_floor": floor, "measured": ks == k_obs})
    pak = _empty(("k", "estimate", "se", "low", "high", "n_items"))
    if _is_binary(x[np.isfinite(x)]):
        num = np.sum(np.isfinite(x), axis=1).astype(int)
        cor = np.nansum(x, axis=1).astype(int)
        rows = []
        for k in range(1, int(num.min()) + 1):
            r = st.pass_at_k_summary(num, cor, k, confidence=confidence)
            rows.append({"k": k, "estimate": float(r.estimate), "se": float(r.se),
                         "low": float(r.low), "high": float(r.high),
                         "n_items": int(r.n_items), "method": r.method})
        pak = pd.DataFrame(rows)
    return RepeatsReport(run=_run_names(store).get(rid, str(rid)), task=task, metric=m,
                         n_items=n_items, k_observed=k_obs, between=between, within=within,
                         se_observed=float(vc.se(k_obs)),
                         k_sufficient=int(vc.k_sufficient()), curve=curve, pass_at_k=pak)


@dataclass(frozen=True)
class RerunReport:
    """Two passes (two runs) of the same model/protocol on the same items."""

    run_a: str
    run_b: str
    task: str
    metric: str
    n: int
    flip_rate: float
    variance_term: float        # f / (2n)
    share_of_paired_se2: float | None  # share of a paired comparison's squared SE


def rerun_noise(store, run_a: str | int, run_b: str | int, task: str,
                metric: str | None = None, against: str | int | None = None) -> RerunReport:
    """Rerun noise from two passes of one run (``stats.rerun_noise``).

    f = share of shared items whose score flipped between the passes; its variance term in
    a mean is f/(2n). With ``against`` (a third run), ``share_of_paired_se2`` is the share of
    the squared paired SE of (run_a vs against) that rerun noise explains, (f + f)/(2n) /
    SE_paired^2 -- assuming the other run reruns as noisily; else None.
    """
    a, b = _resolve(store, run_a), _resolve(store, run_b)
    names = _run_names(store)
    m = _one_metric(store, a, task, metric)
    frame = _paired_frame(store, a, b, task, m)
    if len(frame) == 0:
        raise AnalysisError(f"the two passes share no items on {task!r}")
    paired_se = None
    if against is not None:
        c = _resolve(store, against)
        fc = _paired_frame(store, a, c, task, m)
        if len(fc) >= 2:
            paired_se = float(st.paired_difference(fc["x_a"].to_numpy(float),
                                                   fc["x_b"].to_numpy(float)).se)
    r = st.rerun_noise(frame["x_a"].to_numpy(float), frame["x_b"].to_numpy(float), paired_se)
    return RerunReport(run_a=names.get(a, str(a)), run_b=names.get(b, str(b)), task=task,
                       metric=m, n=int(len(frame)), flip_rate=float(r.flip_rate),
                       variance_term=float(r.variance_term),
                       share_of_paired_se2=(None if paired_se is None else
                                            _fnum(r.share_of_paired_se2)))


@dataclass(frozen=True)
class ClusterReport:
    """Clustered vs iid SE for one run/task/metric (cluster key from ingest)."""

    run: str
    task: str
    metric: str
    n: int
    n_clusters: int
    score: float
    se_iid: float
    se_clustered: float
    design_effect: float
    icc: float
    low: float
    high: float


def clusters(store, run: str | int, task: str, metric: str | None = None,
             confidence: float = 0.95) -> ClusterReport:
    """Clustered vs iid SE (``stats.clustered_se``) over per-item means; CI = score +- z*SE_c.

    Items without a cluster key count as clusters of their own. Raises AnalysisError when
    the task has no cluster key or fewer than 2 clusters.
    """
    _check_confidence(confidence)
    rid = _resolve(store, run)
    m = _one_metric(store, rid, task, metric)
    im = store.item_means([rid], task=task, metric=m)
    if im.empty or im["cluster"].isna().all():
        raise AnalysisError(f"{task!r} has no cluster key in this run")
    cl = im["cluster"].astype(object).where(im["cluster"].notna(),
                                            "__item__" + im["item_id"].astype(str))
    r = st.clustered_se(im["score"].to_numpy(float), cl.astype(str).to_numpy())
    if not np.isfinite(r.se):
        raise AnalysisError(f"{task!r}: {r.reason or 'clustered SE undefined'}")
    z = st.z_value(confidence)
    score = float(r.mean)
    return ClusterReport(run=_run_names(store).get(rid, str(rid)), task=task, metric=m,
                         n=int(len(im)), n_clusters=int(r.n_clusters), score=score,
                         se_iid=float(r.se_iid), se_clustered=float(r.se),
                         design_effect=float(r.design_effect), icc=float(r.icc),
                         low=score - z * float(r.se), high=score + z * float(r.se))


def metric_variants(store, run: str | int, task: str, metric_a: str, metric_b: str,
                    confidence: float = 0.95, mde_threshold: float | None = None) -> Comparison:
    """Two metric variants of one run compared as a paired difference (B - A).

    E.g. strict-match vs flexible-extract: diff > 0 is the share of items the looser grader
    rescued, with its paired interval. ``run_a``/``run_b`` of the result read
    "<run> [<metric>]".
    """
    _check_confidence(confidence)
    rid = _resolve(store, run)
    name = _run_names(store).get(rid, str(rid))
    for mm in (metric_a, metric_b):
        _one_metric(store, rid, task, mm)
    if metric_a == metric_b:
        raise AnalysisError("choose two different metrics")
    frame = _paired_frame(store, rid, rid, task, metric_a, metric_b)
    if len(frame) < 2:
        raise AnalysisError(f"{task!r}: metrics {metric_a!r} and {metric_b!r} share "
                            f"{len(frame)} item(s); need at least 2")
    la, lb = f"{name} [{metric_a}]", f"{name} [{metric_b}]"
    row = _paired_row(frame, task, f"{metric_b} - {metric_a}", confidence, mde_threshold,
                      metric_a, metric_b)
    per_task = pd.DataFrame([row])[list(PER_TASK_COLUMNS)]
    n_a = len(store.item_means([rid], task=task, metric=metric_a))
    n_b = len(store.item_means([rid], task=task, metric=metric_b))
    warnings = []
    if n_a != len(frame) or n_b != len(frame):
        warnings.append(f"{metric_a}: {n_a} items, {metric_b}: {n_b} items; compared on "
                        f"{len(frame)} shared items")
    pairing = Pairing(task=task, metric=f"{metric_a} vs {metric_b}", n_shared=len(frame),
                      only_a=(), only_b=(), hash_mismatch=())
    return Comparison(run_a=la, run_b=lb, confidence=confidence, per_task=per_task,
                      protocol_diff=_empty(PROTOCOL_COLUMNS), pairing=(pairing,),
                      overall=None, verdict=str(row["verdict"]), warnings=tuple(warnings))


# ---------------------------------------------------------------------------------------
# planning from a pilot pair, overview
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlanFromPair:
    """Planning inputs estimated from two runs already in the store."""

    run_a: str
    run_b: str
    task: str
    metric: str
    n: int
    sd_diff: float
    disagreement: float
    diff: float
    design_effect: float | None


def plan_from_pair(store, run_a: str | int, run_b: str | int, task: str,
                   metric: str | None = None) -> PlanFromPair:
    """sd of the paired differences, disagreement rate and observed diff on shared items.

    sd_diff = sd(x_B - x_A, ddof=1) (``stats.paired_difference``: paired SE * sqrt(n));
    disagreement = share of items whose per-item scores differ; design_effect of the
    differences when a cluster key exists (``stats.clustered_se`` on d_i), else None.
    Feed these to ``stats.minimum_detectable_effect`` / ``stats.required_items``.
    """
    a, b = _resolve(store, run_a), _resolve(store, run_b)
    names = _run_names(store)
    ms_a = _one_metric(store, a, task, metric)
    m = metric or ms_a
    _one_metric(store, b, task, m)
    frame = _paired_frame(store, a, b, task, m)
    if len(frame) < 2:
        raise AnalysisError(f"{task!r}: the runs share {len(frame)} item(s); a pilot needs "
                            f"at least 2 shared items")
    xa, xb = frame["x_a"].to_numpy(float), frame["x_b"].to_numpy(float)
    r = st.paired_difference(xa, xb)
    n = len(frame)
    sd_diff = float(np.std(xb - xa, ddof=1))
    deff = None
    if frame["cluster"].notna().any():
        cl = frame["cluster"].astype(object).where(frame["cluster"].notna(),
                                                   "__item__" + frame["item_id"])
        if cl.nunique() >= 2:
            c = st.clustered_se(xb - xa, cl.astype(str).to_numpy())
            deff = _fnum(c.design_effect)
            deff = deff if np.isfinite(deff) else None
    return PlanFromPair(run_a=names.get(a, str(a)), run_b=names.get(b, str(b)), task=task,
                        metric=m, n=n, sd_diff=sd_diff,
                        disagreement=float(np.mean(xa != xb)), diff=float(r.diff),
                        design_effect=deff)


@dataclass(frozen=True)
class Overview:
    """What the store holds, for the upload page and empty-state messages.

    runs columns: run_id, name, model, source_format, harness, harness_version, tags,
        created_at, n_tasks, n_scores, has_items
    tasks columns: run_id, run, task, metric, n_items, k_max, has_cluster, n_choices
    audit: store.audit() (run_id, task, metric, reported, reported_stderr, stderr_raw,
        n_reported, recomputed_stderr, n_items, flag) plus the run name in ``run``
    """

    runs: pd.DataFrame
    tasks: pd.DataFrame
    audit: pd.DataFrame
    notes: tuple[str, ...] = field(default_factory=tuple)


OVERVIEW_RUN_COLUMNS = ("run_id", "name", "model", "source_format", "harness",
                        "harness_version", "tags", "created_at", "n_tasks", "n_scores",
                        "has_items")
OVERVIEW_TASK_COLUMNS = ("run_id", "run", "task", "metric", "n_items", "k_max", "has_cluster",
                         "n_choices")


def overview(store) -> Overview:
    """Runs, tasks and audit rows of the whole store, with empty-state notes."""
    runs = store.runs()
    if runs.empty:
        return Overview(_empty(OVERVIEW_RUN_COLUMNS), _empty(OVERVIEW_TASK_COLUMNS),
                        _empty(("run_id", "run", "task", "metric", "flag")),
                        ("The store is empty: upload results (lm_eval, inspect, HELM or a tidy "
                         "table) to begin.",))
    names = {int(r): str(n) for r, n in zip(runs["run_id"], runs["name"])}
    runs = runs[[c for c in OVERVIEW_RUN_COLUMNS if c in runs.columns]].reset_index(drop=True)
    tasks = store.tasks()
    tasks = tasks.assign(run=[names.get(int(r), str(r)) for r in tasks["run_id"]])
    tasks = tasks[[c for c in OVERVIEW_TASK_COLUMNS if c in tasks.columns] +
                  [c for c in ("has_items", "binary") if c in tasks.columns]]
    audit = store.audit()
    if len(audit):
        audit = audit.assign(run=[names.get(int(r), str(r)) for r in audit["run_id"]])
    notes = []
    if len(runs) == 1:
        notes.append("Only one run in the store: upload another to compare.")
    summary_only = [str(n) for n, h in zip(runs["name"], runs["has_items"]) if not bool(h)]
    if summary_only:
        notes.append("No item-level data (results only; intervals come from the reported "
                      "stderr and paired comparisons are impossible): " + ", ".join(summary_only))
    if len(audit) and "flag" in audit:
        k = int(audit["flag"].notna().sum())
        if k:
            notes.append(f"{k} reported stderr(s) flagged by the audit")
    return Overview(runs=runs, tasks=tasks.reset_index(drop=True), audit=audit,
                    notes=tuple(notes))
