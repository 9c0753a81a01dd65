"""Leaderboard tiers (runs indistinguishable from the best) and rank intervals.

Both work on each task's items x runs matrix of per-item means (``Store.item_matrices``:
integer item keys, one query for every task asked), in numpy: the tiers from paired
sufficient statistics (``stats.paired_moments``: for 0/1 scores three matrix products give
every run's McNemar b, c against the best run), the rank intervals from a paired bootstrap
(``stats.paired_bootstrap_ranks``), computed only for the tasks asked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore import metrics as mx
from evalcore import stats as st
from evalcore.analysis.groups import average_weights
from evalcore.analysis._plumbing import one_version
from evalcore.analysis._common import (
    AVERAGE_TASK,
    RANK_COLUMNS,
    TIER_COLUMNS,
    check_confidence,
    empty_frame,
    holm,
    resolve_runs,
)

# task -> (run ids with item scores, items x runs matrix with their columns, NaN = missing);
# in the board's order for rank intervals, any order for tiers (runs looked up by id)
Matrices = dict[str, tuple[list[int], np.ndarray]]


def _item_runs_by_task(cells: pd.DataFrame) -> dict[str, list[int]]:
    """Run ids with item-level data per task, in the cells' order (best score first)."""
    itemcells = cells[cells["has_items"].astype(bool)]
    out: dict[str, list[int]] = {}
    for t, r in zip(itemcells["task"].tolist(), itemcells["run_id"].tolist()):
        out.setdefault(str(t), []).append(int(r))
    return out


def compared_runs(cells: pd.DataFrame, metrics_by_task: dict[str, str],
                   tasks=None) -> dict[str, list[int]]:
    """Tasks with 2+ item-level runs (optionally only ``tasks``) -> their run ids."""
    return {t: r for t, r in _item_runs_by_task(cells).items()
            if t in metrics_by_task and len(r) >= 2 and (tasks is None or t in tasks)}


def _store_matrices(store, task_metrics: list[tuple[str, str]],
                    run_ids: list[int]) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """(task, metric) -> (run ids ascending, items x runs matrix of per-item means) from
    ``store.item_matrices`` (one query for all cells; items in the store's key order)."""
    return run_matrices(store.item_matrices(task_metrics, run_ids=run_ids))


def run_matrices(got: dict) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """(task, metric) -> (run ids ascending, items x runs matrix) of a
    ``store.item_matrices`` answer ((task, metric) -> ItemMatrix)."""
    return {(str(t), str(m)): (np.asarray(im.run_ids, dtype=np.int64), im.scores)
            for (t, m), im in got.items()}


class PulledMatrices(dict):
    """task -> (run ids ascending, items x runs matrix), as ``pull_matrices`` reads them,
    with ``codes``: task -> (run ids ascending, cluster codes, labelled) for the tasks whose
    items carry a cluster key, the same rows and columns as the matrix (read together with
    it), for the tiers' cluster-robust test."""

    codes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]

    def __init__(self, *args, codes=None, **kw) -> None:
        super().__init__(*args, **kw)
        self.codes = dict(codes or {})


def pull_matrices(store, runs_of: dict[str, list[int]], metrics_by_task: dict[str, str]
                   ) -> PulledMatrices:
    """task -> (run ids ascending, items x runs matrix) of the metric shown for the tasks
    of ``runs_of`` (task -> run ids): the tasks whose items carry a cluster key
    (``_cluster_keyed``) with their codes from ``store.item_code_matrices``, the others
    from one ``store.item_matrices`` query."""
    if not runs_of:
        return PulledMatrices()
    all_runs = sorted({r for rids in runs_of.values() for r in rids})
    keyed = _cluster_keyed(store, metrics_by_task, runs_of) \
        if hasattr(store, "item_code_matrices") else []
    got: dict = {}
    codes = {}
    if keyed:
        coded = store.item_code_matrices([(t, metrics_by_task[t]) for t in keyed],
                                         run_ids=all_runs)
        got.update(run_matrices({tm: im for tm, (im, _, _) in coded.items()}))
        codes = {str(t): (np.asarray(im.run_ids, dtype=np.int64), np.asarray(code),
                          np.asarray(has)) for (t, _), (im, code, has) in coded.items()}
    rest = [(t, metrics_by_task[t]) for t in runs_of if t not in keyed]
    if rest:
        got.update(_store_matrices(store, rest, all_runs))
    return PulledMatrices(select_matrices(got, runs_of, metrics_by_task), codes=codes)


def _cluster_keyed(store, metrics_by_task: dict[str, str], runs_of: dict[str, list[int]]
                   ) -> list[str]:
    """The tasks of ``runs_of`` whose metric's items carry a cluster key in some of their
    runs (``store.tasks``' has_cluster)."""
    if not runs_of:
        return []
    td = store.tasks(sorted({r for rids in runs_of.values() for r in rids}))
    if "has_cluster" not in td or not len(td):
        return []
    td = td[td["has_cluster"].fillna(False).astype(bool)]
    flagged = set(zip(td["task"].astype(str).tolist(), td["metric"].astype(str).tolist()))
    return [t for t in runs_of if (t, metrics_by_task[t]) in flagged]


def select_matrices(got: dict, runs_of: dict[str, list[int]], metrics_by_task: dict[str, str]
                     ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``pull_matrices``' selection: task -> (run ids, matrix) of the tasks of ``runs_of``
    from ``got`` ((task, metric) -> (run ids ascending, matrix)), columns of those runs."""
    out = {}
    for t, rids in runs_of.items():
        m = got.get((t, metrics_by_task[t]))
        if m is not None:
            keep = np.isin(m[0], np.asarray(rids, dtype=np.int64))
            out[t] = m if keep.all() else (m[0][keep], m[1][:, keep])
    return out


def in_board_order(pulled: dict[str, tuple[np.ndarray, np.ndarray]],
                    runs_of: dict[str, list[int]]) -> Matrices:
    """The pulled matrices with their columns in the board's order (``runs_of``: task -> run
    ids); runs without any item score for the task are left out."""
    out: Matrices = {}
    for t, (have, x) in pulled.items():
        if t not in runs_of:
            continue
        pos = pd.Index(have).get_indexer(np.asarray(runs_of[t], dtype=np.int64))
        keep = [(r, p) for r, p in zip(runs_of[t], pos.tolist()) if p >= 0]
        out[t] = ([r for r, _ in keep], x[:, [p for _, p in keep]])
    return out


def _item_matrices(store, metrics_by_task: dict[str, str],
                   runs_of: dict[str, list[int]]) -> Matrices:
    """task -> (run ids, items x runs matrix) for the tasks of ``runs_of`` (task -> run ids
    in the board's order), columns in that order: ``pull_matrices`` + ``in_board_order``."""
    return in_board_order(pull_matrices(store, runs_of, metrics_by_task), runs_of)


def item_mean_bounds(run_ids: np.ndarray, x: np.ndarray) -> dict:
    """``Store.item_mean_bounds`` of a pulled matrix: {"n", "min", "max"} of its item means."""
    v = x[~np.isnan(x)]
    if not v.size:
        return {"n": 0, "min": None, "max": None}
    return {"n": int(v.size), "min": float(v.min()), "max": float(v.max())}


def _against(cols: list[int], x: np.ndarray, rids: list[int], refs: list[int],
             binary: bool) -> dict[int, tuple[np.ndarray, ...]]:
    """ref -> (diff, se, n_shared, b, c) of every run in ``rids`` against run ``ref`` on the
    items both have (arrays over ``rids``; runs absent from the matrix get n = 0 and NaN).

    diff = sum d / n, SE = ``stats.mean_se_from_moments(n, sum d, sum d^2)`` (= sd(d)/sqrt(n)),
    b, c the discordant counts for 0/1 scores (``_p_values`` makes the p-values of many
    tasks in one call, by the rule of a ``compare`` row)."""
    pos = {r: j for j, r in enumerate(cols)}
    mom = st.paired_moments(x, [pos[r] for r in refs], binary=binary)
    take = np.array([pos.get(r, -1) for r in rids])
    out = {}
    for k, ref in enumerate(refs):
        def pick(a: np.ndarray, fill: float) -> np.ndarray:
            return np.where(take >= 0, a[k][np.maximum(take, 0)], fill).astype(float)
        n, sd, sd2 = pick(mom.n, 0.0), pick(mom.sum_d, np.nan), pick(mom.sum_d2, np.nan)
        b, c = pick(mom.b, 0.0), pick(mom.c, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.where(n >= 1, sd / n, np.nan)
        se = st.mean_se_from_moments(n, sd, sd2)
        out[ref] = (diff, se, n.astype(int), b, c)
    return out


def _p_values(tests: list[tuple]) -> list[np.ndarray]:
    """The p-values of several tasks' comparisons (``tests``: per task (binary, diff, se,
    n_shared, b, c, unit, se_clustered, n_clusters) arrays over its runs, ``_against``,
    ``_unit_pairs`` and ``_clustered_against``), in one call for all of them:
    ``stats.paired_p_values``, the rule of a ``compare`` row (0/1 scores: the larger of the
    routed interval's own test, Tango's score test or the Wald z test, and the exact
    McNemar test; other scores: t with n - 1 df below 30 items, else z, and the
    discordance-bound p when the differences do not vary; with a cluster key the
    cluster-robust t test on G - 1 df, below 30 clusters with the iid test). NaN below 2
    shared items."""
    if not tests:
        return []
    cat = [np.concatenate([np.asarray(t[i], dtype=float) for t in tests]) for i in range(1, 9)]
    binary = np.concatenate([np.full(t[1].size, bool(t[0])) for t in tests])
    diff, se, n, b, c, unit, se_cl, g = cat
    p = st.paired_p_values(n, diff, se, b=np.where(binary, b, np.nan),
                           c=np.where(binary, c, np.nan), unit=unit.astype(bool),
                           se_clustered=se_cl, n_clusters=g).p_value
    ends = np.cumsum([t[1].size for t in tests])
    return [np.where(t[3] >= 2, part, np.nan)
            for t, part in zip(tests, np.split(p, ends[:-1]))]


def _clustered_against(cols: list[int], x: np.ndarray,
                       codes: tuple[np.ndarray, np.ndarray, np.ndarray], rids: list[int],
                       ref: int) -> tuple[np.ndarray, np.ndarray]:
    """(CR1 clustered SE of d, G) of every run in ``rids`` against run ``ref``
    (``stats.paired_clustered_se``), with ``compare``'s cluster of an item: the reference's
    label where it has one, else the other run's (an unlabelled item is a cluster of its
    own); NaN where the shared items carry no label (``compare`` then ignores clusters).
    ``codes``: (run ids, codes, labelled) of the read that gave ``x`` (same rows; columns
    looked up by run id)."""
    pos = {r: j for j, r in enumerate(cols)}
    nan = np.full(len(rids), np.nan)
    if ref not in pos:
        return nan, nan
    at = pd.Index(codes[0]).get_indexer(np.asarray(cols, dtype=np.int64))
    if (at < 0).any() or codes[1].shape[0] != x.shape[0]:
        return nan, nan
    j = pos[ref]
    shared = ~np.isnan(x) & ~np.isnan(x[:, [j]])
    if codes[1].ndim == 2 and codes[1].shape[1] and codes[1].strides[1] == 0 \
            and codes[2].strides[1] == 0:
        # every run the same labels (the store's one repeated column): one code per item
        se, g = st.paired_clustered_se(x, codes[1][:, 0], j)
        labelled = (shared & codes[2][:, :1]).any(axis=0)
    else:
        code, has = codes[1][:, at], codes[2][:, at]
        se, g = st.paired_clustered_se(x, np.where(has[:, [j]], code[:, [j]], code), j)
        labelled = (shared & (has | has[:, [j]])).any(axis=0)
    se = np.where(labelled, se, np.nan)
    g = np.where(labelled, g, np.nan)
    take = np.array([pos.get(r, -1) for r in rids])
    return (np.where(take >= 0, se[np.maximum(take, 0)], np.nan),
            np.where(take >= 0, g[np.maximum(take, 0)], np.nan))


def _unit_pairs(cols: list[int], x: np.ndarray, rids: list[int], ref: int) -> np.ndarray:
    """Per run of ``rids``: True when every score of it and of run ``ref`` on the items both
    have lies in [0, 1] (``compare``'s rule for a bounded difference; runs absent from the
    matrix get True)."""
    pos = {r: j for j, r in enumerate(cols)}
    if ref not in pos:
        return np.ones(len(rids), dtype=bool)
    shared = ~np.isnan(x) & ~np.isnan(x[:, [pos[ref]]])
    out_col = (shared & ((x < 0.0) | (x > 1.0))).any(axis=0)
    out_ref = (shared & ((x[:, [pos[ref]]] < 0.0) | (x[:, [pos[ref]]] > 1.0))).any(axis=0)
    ok = ~(out_col | out_ref)
    return np.array([bool(ok[pos[r]]) if r in pos else True for r in rids])


def _clustered_by_pairs(store, task: str, metric: str, rids: list[int], ref: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(CR1 clustered SE of d, G) of every run in ``rids`` against run ``ref`` from each
    pair's shared items (``store.paired_items``, the read ``compare`` makes: an item's
    cluster is the reference's label, else the other run's, else its own), with
    ``stats.paired_difference``; NaN where fewer than 2 clusters or no label. For stores
    without ``item_code_matrices``: one read per run."""
    se = np.full(len(rids), np.nan)
    g = np.full(len(rids), np.nan)
    for k, rid in enumerate(rids):
        if rid == ref:
            continue
        p = store.paired_items(ref, rid, [(task, metric, metric)])[0]
        both = np.asarray(p.shared, dtype=bool)
        items = np.asarray(p.items, dtype=np.int64)[both]
        cl = np.asarray(p.cluster, dtype=np.int64)[both]
        if items.size < 2 or not (cl >= 0).any():
            continue
        cl = np.where(cl >= 0, cl, -1 - items)
        if not (cl != cl[0]).any():
            continue
        r = st.paired_difference(np.asarray(p.score_a, dtype=float)[both],
                                 np.asarray(p.score_b, dtype=float)[both], clusters=cl)
        se[k], g[k] = r.se_clustered, r.n_clusters
    return se, g


def tier_table(store, cells: pd.DataFrame, averages: pd.DataFrame,
           metrics_by_task: dict[str, str], names, confidence: float,
           mats: Matrices | None = None,
           info: dict[str, mx.MetricInfo] | None = None,
           groups: dict[str, list[str]] | None = None,
           codes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
           ) -> pd.DataFrame:
    """Runs indistinguishable from the best, per task and for the macro average.

    Per task: the best run is the highest score (the lowest when the metric is
    lower-is-better; tasks whose metric has no direction get no tier); every other run is
    tested against it on the items both have with the p-value a ``compare`` row of the two
    runs shows (``stats.paired_p_values``: for 0/1 scores the larger of the routed
    interval's own test and the exact McNemar test; else t below 30 items, z above; with a
    cluster key the cluster-robust t test on G - 1 df, ``stats.paired_clustered_se``, read
    with the codes by ``store.item_code_matrices``), p-values Holm-adjusted over the runs
    compared (``stats.adjust_pvalues``); indistinguishable when
    the adjusted p is not below alpha = 1 - confidence (an undefined p cannot separate runs,
    as in ``stats.indistinguishable_from_best``). Macro average: the run with the best
    average is the reference among the runs averaged over the same task set (the most common
    set of 2+ tasks); per run, the mean over tasks of the per-task paired differences with
    SE = sqrt(sum_t SE_t^2)/k (``stats.aggregate_tasks``) and a z-test, Holm-adjusted; with
    the macro average's weights, so that a task group (``groups``) counts once there too
    (``groups.average_weights``).

    Every task's items x runs matrix comes from one ``store.item_matrices`` query (tasks in
    ``mats``, already pulled for the rank intervals, are reused); per task and reference,
    ``stats.paired_moments`` gives n, sum d, sum d^2, b, c, from which diff = sum d / n,
    SE = ``stats.mean_se_from_moments`` and the p-values follow; runs sharing no
    item with the reference get n = 0 and NaN statistics.
    """
    alpha = 1.0 - confidence
    info = info or {}
    runs_of = {t: r for t, r in compared_runs(cells, metrics_by_task).items()
               if t not in info or info[t].rankable}
    if not runs_of:
        return empty_frame(TIER_COLUMNS)
    keyed = set(_cluster_keyed(store, metrics_by_task, runs_of))
    mats, codes = _with_missing_matrices(store, runs_of, metrics_by_task, keyed,
                                         dict(mats or {}), dict(codes or {}))
    item_cells = cells[cells["has_items"].astype(bool)]
    best_of = _best_runs(item_cells, runs_of, info)
    best_avg, group, averaged = _average_reference(cells, item_cells, averages, info)
    tests, per_run = _task_tests(store, item_cells, runs_of, best_of, mats, codes, keyed,
                                 metrics_by_task, best_avg, group, averaged)
    cols_of: dict[str, list] = {c: [] for c in TIER_COLUMNS}
    _task_rows(cols_of, runs_of, tests, best_of, names, alpha)
    if best_avg is not None and per_run:
        _average_rows(cols_of, per_run, best_avg, groups or {}, names, alpha)
    if not cols_of["run"]:
        return empty_frame(TIER_COLUMNS)
    return pd.DataFrame({c: (v if c in ("run", "task", "best_run") else np.concatenate(v))
                         for c, v in cols_of.items()}, columns=list(TIER_COLUMNS))


def _with_missing_matrices(store, runs_of: dict[str, list[int]],
                           metrics_by_task: dict[str, str], keyed: set[str], mats: Matrices,
                           codes: dict) -> tuple[Matrices, dict]:
    """``mats`` and ``codes`` completed: tasks with a cluster key whose codes are not at hand
    are read again with them (compare uses the cluster-robust test there), then the tasks
    without any matrix."""
    with_codes = hasattr(store, "item_code_matrices")
    again = {t: r for t, r in runs_of.items()
             if t not in mats or (with_codes and t in keyed and t not in codes)}
    if again:
        pulled = pull_matrices(store, again, metrics_by_task)
        codes.update(pulled.codes)
        mats.update(in_board_order(pulled, again))
    return mats, codes


def _best_runs(item_cells: pd.DataFrame, runs_of: dict[str, list[int]],
               info: dict[str, mx.MetricInfo]) -> dict[str, int]:
    """task -> its best run: the highest score (the lowest when lower is better). Each run's
    score on the task is its last cell row's; -inf for a run without one, so it cannot be
    best; a NaN score stays NaN (argmax picks it)."""
    cell_task = item_cells["task"].astype(str).to_numpy()
    cell_run = item_cells["run_id"].to_numpy(dtype=np.int64)
    cell_score = item_cells["score"].to_numpy(dtype=float)
    best_of = {}
    for t, rids in runs_of.items():
        sign = -1.0 if t in info and info[t].direction == mx.LOWER else 1.0
        here = cell_task == t
        runs_t = pd.Index(cell_run[here][::-1])
        first = ~runs_t.duplicated(keep="first")
        lookup = pd.Index(runs_t[first])
        vals = cell_score[here][::-1][first]
        pos = lookup.get_indexer(np.asarray(rids, dtype=np.int64))
        sc = np.where(pos >= 0, sign * vals[np.maximum(pos, 0)], -np.inf)
        best_of[t] = rids[int(np.argmax(sc))]
    return best_of


def _average_reference(cells: pd.DataFrame, item_cells: pd.DataFrame, averages: pd.DataFrame,
                       info: dict[str, mx.MetricInfo]) -> tuple[int | None, set[int], set[str]]:
    """(the reference run of the average tier, the runs compared with it, the tasks the
    average is over). The average tier compares runs averaged over the same task set: the
    most common set (of 2+ tasks) among runs with item-level data; its best-scoring run is
    the reference (None: fewer than 2 such runs)."""
    best_avg = None
    group: set[int] = set()
    averaged: set[str] = set()
    if not len(averages):
        return best_avg, group, averaged
    ok = averages[averages["run_id"].isin(item_cells["run_id"]) & (averages["n_tasks"] >= 2)]
    if len(ok):
        common = ok["tasks"].value_counts().index[0]
        # the tasks the average is over (task names may hold commas: HELM)
        averaged = {str(t) for t in set(cells["task"].tolist()) if str(t) not in info
                    or info[str(t)].averageable}
        same = ok[ok["tasks"] == common]
        if len(same) >= 2:
            group = set(int(r) for r in same["run_id"])
            best_avg = int(same.iloc[0]["run_id"])
    return best_avg, group, averaged


def _task_tests(store, item_cells: pd.DataFrame, runs_of: dict[str, list[int]],
                best_of: dict[str, int], mats: Matrices, codes: dict, keyed: set[str],
                metrics_by_task: dict[str, str], best_avg: int | None, group: set[int],
                averaged: set[str]) -> tuple[list[tuple], dict[int, list[tuple]]]:
    """(per task: (binary, diff, se, n_shared, b, c, unit, se_clustered, G) arrays over its
    runs against its best run; run -> [(task, diff, se, n_shared)] against the average's
    reference, for the average tier)."""
    cell_task = item_cells["task"].astype(str).to_numpy()
    # tasks where some item-level cell is not 0/1 (the others' tests are McNemar's)
    not_binary = set(cell_task[~item_cells["binary"].to_numpy(dtype=bool)].tolist())
    no_items = (np.zeros(0, dtype=int), np.full((0, 0), np.nan))
    per_run: dict[int, list[tuple[str, float, float, int]]] = {}
    tests = []
    for t, rids in runs_of.items():
        best = best_of[t]
        refs = [best]
        with_avg = best_avg is not None and best_avg in rids and t in averaged
        if with_avg and best_avg != best:
            refs.append(best_avg)
        cols, x = mats.get(t, no_items)
        binary = t not in not_binary
        if x.shape[0] == 0 or any(r not in cols for r in refs):
            # a reference without item scores: every comparison is undefined
            nan = np.full(len(rids), np.nan)
            res = {r: (nan, nan, np.zeros(len(rids), dtype=int), nan, nan) for r in refs}
            binary = False
        else:
            res = _against(cols, x, rids, refs, binary)
        unit = (np.ones(len(rids), dtype=bool) if binary or x.shape[0] == 0
                else _unit_pairs(cols, x, rids, best))
        clustered = (np.full(len(rids), np.nan), np.full(len(rids), np.nan))
        if t in keyed and t in codes and x.shape[0]:
            clustered = _clustered_against(cols, x, codes[t], rids, best)
        elif t in keyed and x.shape[0]:
            # a store without the code matrices: each pair's items as compare reads them
            clustered = _clustered_by_pairs(store, t, metrics_by_task[t], rids, best)
        tests.append((binary,) + res[best] + (unit,) + clustered)
        if with_avg:
            d2, se2, n2, _, _ = res[best_avg]
            ok = (np.isfinite(d2) & np.isfinite(se2)).tolist()
            for rid, good, d, e, k in zip(rids, ok, d2.tolist(), se2.tolist(), n2.tolist()):
                if good and rid != best_avg and rid in group:
                    per_run.setdefault(rid, []).append((t, float(d), float(e), int(k)))
    return tests, per_run


def _task_rows(cols_of: dict[str, list], runs_of: dict[str, list[int]], tests: list[tuple],
               best_of: dict[str, int], names, alpha: float) -> None:
    """Each task's tier rows appended to ``cols_of`` (whole columns): the p-values of every
    task in one call (``_p_values``), Holm-adjusted within the task; an undefined adjusted p
    cannot separate runs (indistinguishable)."""
    for (t, rids), test, p in zip(runs_of.items(), tests, _p_values(tests)):
        diff, nsh = test[1], test[3]
        best = best_of[t]
        bc = rids.index(best)
        p = np.array(p, dtype=float)
        p[bc] = np.nan
        padj = np.asarray(holm(p), dtype=float)
        is_best = np.arange(len(rids)) == bc
        cols_of["run_id"].append(np.asarray(rids, dtype=np.int64))
        cols_of["run"].extend(names.get(rid, str(rid)) for rid in rids)
        cols_of["task"].extend([t] * len(rids))
        cols_of["best_run"].extend([names.get(best, str(best))] * len(rids))
        cols_of["diff_vs_best"].append(np.where(is_best, 0.0, np.asarray(diff, dtype=float)))
        cols_of["p_raw"].append(np.where(is_best, np.nan, p))
        cols_of["p_holm"].append(np.where(is_best, np.nan, padj))
        cols_of["indistinguishable_from_best"].append(is_best | ~(padj < alpha))
        cols_of["n_shared"].append(np.asarray(nsh, dtype=np.int64))


def _average_rows(cols_of: dict[str, list], per_run: dict[int, list[tuple]], best_avg: int,
                  groups: dict[str, list[str]], names, alpha: float) -> None:
    """The average tier's rows appended to ``cols_of``: per run, the weighted mean over
    tasks of its paired differences against the reference with SE = sqrt(sum w_t^2 SE_t^2)
    / sum w_t (``stats.aggregate_tasks``, the macro average's weights), a z-test, Holm."""
    rids = sorted(per_run)
    dd, ses, nn = [], [], []
    weights_of: dict[tuple[str, ...], list[float]] = {}    # runs share task sets
    for rid in rids:
        v = per_run[rid]
        tasks = tuple(t for t, _, _, _ in v)
        if tasks not in weights_of:
            weights_of[tasks] = average_weights(tasks, groups)
        agg = st.aggregate_tasks(np.array([a for _, a, _, _ in v]),
                                 np.array([e for _, _, e, _ in v]),
                                 weights=weights_of[tasks])
        dd.append(float(agg.estimate))
        ses.append(float(agg.se))
        nn.append(sum(k for _, _, _, k in v))
    pp = st.normal_p_value(dd, ses)
    padj = holm(pp)
    bname = names.get(best_avg, str(best_avg))
    k = len(rids) + 1
    cols_of["run_id"].append(np.asarray([best_avg] + rids, dtype=np.int64))
    cols_of["run"].extend([bname] + [names.get(rid, str(rid)) for rid in rids])
    cols_of["task"].extend([AVERAGE_TASK] * k)
    cols_of["best_run"].extend([bname] * k)
    cols_of["diff_vs_best"].append(np.asarray([0.0] + dd, dtype=float))
    cols_of["p_raw"].append(np.concatenate([[np.nan], np.asarray(pp, dtype=float)]))
    cols_of["p_holm"].append(np.concatenate([[np.nan], np.asarray(padj, dtype=float)]))
    cols_of["indistinguishable_from_best"].append(
        np.concatenate([[True], ~(np.asarray(padj, dtype=float) < alpha)]))
    cols_of["n_shared"].append(np.asarray([0] + nn, dtype=np.int64))


def rank_intervals(store, task: str, metric: str, runs: list[str | int] | tuple, *,
                   lower_is_better: bool = False, confidence: float = 0.95,
                   n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Paired-bootstrap rank intervals of ``runs`` on one task's metric (columns
    ``RANK_COLUMNS``), the numbers ``leaderboard(..., rank_tasks=[task])`` puts in ``ranks``.

    For a page that already holds the board: it names the metric shown, the runs with item
    scores (best first) and the direction from ``Leaderboard.metric_info``, so only the
    task's items x runs matrix is pulled (one query) and bootstrapped
    (``stats.paired_bootstrap_ranks`` over the items every run has); the board itself is not
    recomputed. Runs without items for the task are left out; fewer than 2 runs or shared
    items give an empty table.
    """
    check_confidence(confidence)
    with one_version(store):
        rt = store.runs()
        ids = list(dict.fromkeys(resolve_runs(store, runs, rt)))
        if len(ids) < 2:
            return empty_frame(RANK_COLUMNS)
        names = {int(r): str(n) for r, n in zip(rt["run_id"], rt["name"])}
        mats = _item_matrices(store, {str(task): str(metric)}, {str(task): ids})
    return rank_table(mats, names, confidence, n_resamples, seed, [],
                  lower={str(task)} if lower_is_better else set())


def rank_table(mats: Matrices, names, confidence: float, n_resamples: int, seed: int,
           tnotes: list[tuple[str, str, str]], lower: set[str],
           skip: frozenset[str] | set[str] = frozenset()) -> pd.DataFrame:
    """Paired-bootstrap rank intervals per task (``stats.paired_bootstrap_ranks``) over the
    items every run of the task has; rank 1 is the lowest score for the tasks in ``lower``
    (lower is better); no ranks for the tasks in ``skip`` (a metric without a direction).
    Items are resampled in the store's item-key order (``Store.item_matrices``)."""
    rows = []
    for t, (run_cols, x) in mats.items():
        if t in skip:
            continue
        complete = np.all(np.isfinite(x), axis=1)
        if len(run_cols) < 2 or complete.sum() < 2:
            tnotes.append((t, "ranks", "fewer than 2 items shared by all runs; no rank "
                           "intervals"))
            continue
        if (~complete).any():
            tnotes.append((t, "ranks", f"rank intervals use the {int(complete.sum())} items "
                           f"all runs share"))
        higher = t not in lower
        r = st.paired_bootstrap_ranks(x[complete], n_resamples=n_resamples, seed=seed,
                                      confidence=confidence, higher_is_better=higher)
        for j, rid in enumerate(run_cols):
            rows.append({"run_id": rid, "run": names.get(rid, str(rid)), "task": t,
                         "rank": int(r.rank[j]), "rank_low": int(r.rank_low[j]),
                         "rank_high": int(r.rank_high[j])})
    if not rows:
        return empty_frame(RANK_COLUMNS)
    return pd.DataFrame(rows, columns=list(RANK_COLUMNS))
