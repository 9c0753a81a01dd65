"""The leaderboard's cells that need item-level data: the bootstrap and clustered interval
methods over every cell of a board at once (``leaderboard`` calls them; the closed-form
methods need only the cells' sufficient statistics and stay in ``leaderboard``)."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._plumbing import submit, submit_half
from evalcore.analysis.tiers import run_matrices, select_matrices

def continuous_runs(cs: pd.DataFrame, binary: np.ndarray) -> dict[str, list[int]]:
    """task -> the run ids of its continuous (not 0/1) cells in ``cs``."""
    out: dict[str, list[int]] = {}
    for t, r in zip(cs["task"].to_numpy()[~binary].tolist(),
                    cs["run_id"].to_numpy(dtype=int)[~binary].tolist()):
        out.setdefault(str(t), []).append(int(r))
    return out


def pull_matrices_and_items(store, runs_of: dict[str, list[int]],
                             metrics_by_task: dict[str, str]) -> tuple[dict, dict]:
    """(``pull_matrices(store, runs_of, metrics_by_task)``, the ``ItemMatrix`` of every
    (task, metric) read): the same read, its item keys kept for the bootstrap board."""
    if not runs_of:
        return {}, {}
    all_runs = sorted({r for rids in runs_of.values() for r in rids})
    got = store.item_matrices([(t, metrics_by_task[t]) for t in runs_of], run_ids=all_runs)
    return select_matrices(run_matrices(got), runs_of, metrics_by_task), got


def bootstrap_cells(store, cs: pd.DataFrame, metrics_by_task: dict[str, str],
                     binary: np.ndarray, se: np.ndarray, low: np.ndarray, high: np.ndarray,
                     confidence: float, n_resamples: int, seed: int,
                     pulling=None) -> None:
    """Percentile bootstrap of every cell's mean over items, filling se/low/high in place.

    0/1 cells need no item: their resampled means are Binomial(n, k/n)/n draws
    (``stats.bootstrap_proportions``, from the cell's n and sum). Continuous cells take
    their task's items x runs matrix (``store.item_matrices``: the tiers' read ``pulling``
    (``pull_matrices_and_items``) when it covers them, else one read for all such tasks;
    in a worker thread while the 0/1 cells are drawn, beside the item id order), each
    run's item means in item id order (the order of ``store.item_means``, which the
    resampled positions follow), and bootstrap all runs with one shared set of resample
    weights per item count (``stats.bootstrap_means_shared``). Both give, cell by cell, the
    numbers ``stats.score_interval(x, "bootstrap", seed=seed)`` gives for that cell's item
    means (continuous: up to floating-point summation order), clipped to [0, 1] as it
    clips."""
    n = cs["n"].to_numpy(dtype=float)
    k = np.round(cs["sum"].to_numpy(dtype=float))
    tasks = cs["task"].to_numpy()
    run_ids = cs["run_id"].to_numpy(dtype=int)
    # the continuous cells' item means are read in a worker thread while this one draws
    # the 0/1 cells
    cont = {t: np.flatnonzero((tasks == t) & ~binary) for t in metrics_by_task}
    cont = {t: rows for t, rows in cont.items() if rows.size}
    runs_of = {t: [int(run_ids[i]) for i in rows] for t, rows in cont.items()}
    jobs = None
    if cont:    # the matrices (unless ``pulling`` reads them) and the item id order
        all_runs = sorted({r for rids in runs_of.values() for r in rids})
        jobs = (None if pulling is not None else
                submit(store, store.item_matrices,
                        [(t, metrics_by_task[t]) for t in cont], run_ids=all_runs),
                submit(store, store.item_id_order, list(cont))
                if hasattr(store, "item_id_order") else None)
    rows = np.flatnonzero(binary)
    if rows.size:
        r = st.bootstrap_proportions(k[rows], n[rows], confidence=confidence,
                                     n_resamples=n_resamples, seed=seed)
        low[rows], high[rows], se[rows] = r.low, r.high, r.se
    means = {} if jobs is None else _item_means_by_run(
        store, metrics_by_task, runs_of, jobs[0].result() if pulling is None else
        pulling.result()[1], None if jobs[1] is None else jobs[1].result())
    for t, rows in cont.items():
        by_run = means.get(t, {})
        by_size: dict[int, list[int]] = {}
        for i in rows:
            x = by_run.get(int(run_ids[i]))
            if x is not None and x.size:
                by_size.setdefault(x.size, []).append(i)
        for idx in by_size.values():
            x = np.column_stack([by_run[int(run_ids[i])] for i in idx])
            r = st.bootstrap_means_shared(x, confidence=confidence, n_resamples=n_resamples,
                                          seed=seed)
            unit = np.all((x >= 0.0) & (x <= 1.0), axis=0)
            lo = np.where(unit, np.clip(r.low, 0.0, 1.0), r.low)
            hi = np.where(unit, np.clip(r.high, 0.0, 1.0), r.high)
            low[idx], high[idx], se[idx] = lo, hi, r.se


def _item_means_by_run(store, metrics_by_task: dict[str, str], runs_of: dict[str, list[int]],
                       mats: dict, id_order: dict[str, np.ndarray] | None
                       ) -> dict[str, dict[int, np.ndarray]]:
    """task -> run id -> its item means of (task, metric shown) in item id order (the order
    of ``store.item_means``) for the tasks of ``runs_of`` (task -> run ids), from the tasks'
    items x runs matrices ``mats`` (``store.item_matrices``: the vector rows, no score rows)
    and each task's item keys in item id order ``id_order`` (``store.item_id_order``; None:
    ``store.item_labels`` of the matrix's keys, sorted); a run without the cell is absent."""
    out: dict[str, dict[int, np.ndarray]] = {}
    for t, rids in runs_of.items():
        im = mats.get((t, metrics_by_task[t]))
        if im is None or im.scores.size == 0:
            continue
        if id_order is not None:
            keys = id_order.get(t, np.empty(0, dtype=np.int64))
            keys = keys[np.isin(keys, im.items)]
            order = np.searchsorted(im.items, keys)
        else:
            ids = store.item_labels(t, im.items)
            order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.intp)
        scores = im.scores[order]
        wanted = set(rids)
        by_run = out.setdefault(t, {})
        for j, rid in enumerate(np.asarray(im.run_ids).tolist()):
            if int(rid) in wanted:
                col = scores[:, j]
                by_run[int(rid)] = col[~np.isnan(col)]
    return out


def _clustered_cells(store, cs: pd.DataFrame, metrics_by_task: dict[str, str],
                     score: np.ndarray, se: np.ndarray, low: np.ndarray, high: np.ndarray,
                     used: np.ndarray, q_clt: np.ndarray, confidence: float,
                     wanted: dict[str, list[int]] | None = None,
                     pulled: dict | None = None, on_read=None) -> list[str]:
    """Cluster-robust intervals of every cell, filling se/low/high/used in place; returns the
    tasks where some cell had no cluster key (CLT used there, score -+ ``q_clt`` * se with
    each cell's CLT quantile, ``stats.mean_quantiles``). With ``wanted`` (task -> run
    ids whose items x runs matrices the tiers need), the same read also gives those
    matrices, put in ``pulled`` as ``pull_matrices`` would return them; ``on_read`` (if
    given) is called with ``pulled`` once they are there, before the intervals.

    One read for all tasks gives each task's items x runs matrix with integer cluster codes
    (``store.item_code_matrices``; an item without a label is its own cluster), and every
    run of every task is computed in one pass over the matrices
    (``stats.clustered_intervals_of_matrices``): the same numbers as
    ``stats.score_interval(x, "clustered", clusters=labels)`` per cell, without a per-cell
    sort of text labels. A store without that read gives the codes as rows
    (``store.item_cluster_codes``, ``stats.grouped_clustered_intervals``: the same numbers).
    """
    tms = list(metrics_by_task.items())
    task_col = cs["task"].to_numpy(dtype=object)      # one conversion, not one per task
    rows_of = {t: np.flatnonzero(task_col == t) for t, _ in tms}
    tms = [(t, m) for t, m in tms if rows_of[t].size]
    run_ids = cs["run_id"].to_numpy(dtype=int)
    if not tms:
        return []
    all_runs = sorted({int(run_ids[i]) for t, _ in tms for i in rows_of[t]})
    if hasattr(store, "item_code_matrices"):
        got = store.item_code_matrices(tms, run_ids=all_runs)
        if wanted:
            mats = run_matrices({tm: im for tm, (im, _, _) in got.items()})
            pulled.update(select_matrices(mats, wanted, metrics_by_task))
        if on_read is not None:
            on_read(pulled)
        res, owner, labelled = _clustered_of_matrices(got, tms, rows_of, run_ids, len(cs),
                                                      confidence)
    else:
        res, owner, labelled = _clustered_of_rows(store, tms, rows_of, run_ids, all_runs,
                                                  len(cs), confidence, wanted, pulled,
                                                  metrics_by_task)
        if on_read is not None:
            on_read(pulled)
    nocl: set[str] = set()
    # the results by row of ``cs`` (``owner``: the row of each result)
    n_of = np.zeros(len(cs), dtype=np.int64)
    low_of, high_of, se_of = (np.full(len(cs), np.nan) for _ in range(3))
    if res is not None:
        n_of[owner], low_of[owner], high_of[owner], se_of[owner] = \
            res.n, res.low, res.high, res.se
    for t, _ in tms:
        for i in rows_of[t]:
            if n_of[i] == 0:
                continue                # no item means for this cell: no interval
            if not labelled[i]:         # no cluster label at all: CLT
                used[i] = "clt"
                nocl.add(str(t))
                low[i], high[i] = score[i] - q_clt[i] * se[i], score[i] + q_clt[i] * se[i]
                continue
            low[i], high[i] = float(low_of[i]), float(high_of[i])
            if np.isfinite(se_of[i]):
                se[i] = float(se_of[i])
    return sorted(nocl)


def clustered_columns(store, cs: pd.DataFrame, metrics_by_task: dict[str, str],
                       score: np.ndarray, se: np.ndarray, q_clt: np.ndarray,
                       confidence: float, wanted: dict[str, list[int]] | None = None,
                       read: Future | None = None):
    """``_clustered_cells`` on arrays of its own, for a worker thread: ((se, low, high,
    method) of the rows of ``cs``, the tasks without a cluster key, the matrices the tiers
    need as ``pull_matrices`` gives them). ``se``: the CLT standard errors (kept where a
    cell falls back to CLT; this function owns the array).

    ``read`` (a pending ``Future``): given those matrices (a dict of its own) as soon as
    they are read, before the intervals, so that the caller can compute the metric info,
    the cells' order and the rank intervals while this job computes the intervals; an
    exception before that point is set on it too (the caller waiting on it sees the job's
    error, never waits forever)."""
    low = np.full(len(cs), np.nan)
    high = np.full(len(cs), np.nan)
    used = np.array(["clustered"] * len(cs), dtype=object)
    pulled: dict = {}

    def hand_over(got: dict) -> None:
        if read is not None and not read.done():
            read.set_result(dict(got))
    try:
        nocl = _clustered_cells(store, cs, metrics_by_task, score, se, low, high, used, q_clt,
                                confidence, wanted, pulled, hand_over)
    except BaseException as exc:
        if read is not None and not read.done():
            read.set_exception(exc)
        raise
    hand_over(pulled)               # (no cell to compute: nothing was read)
    return (se, low, high, used), nocl, pulled


def _clustered_of_matrices(got: dict, tms: list[tuple[str, str]],
                           rows_of: dict[str, np.ndarray], run_ids: np.ndarray, n_rows: int,
                           confidence: float):
    """``_clustered_cells``' intervals from ``store.item_code_matrices``: (result, the row
    of ``cs`` of each result entry, whether each row of ``cs`` has a labelled item)."""
    blocks, owners = [], []
    labelled = np.zeros(n_rows, dtype=bool)
    for t, m in tms:
        if (t, m) not in got:
            continue
        im, code, has = got[(t, m)]
        rows = rows_of[t]
        col = pd.Index(run_ids[rows]).get_indexer(np.asarray(im.run_ids))
        keep = col >= 0
        if not keep.any():
            continue
        # codes repeating one column (every run the same labels, ``_cell_code_matrix``):
        # their column answers for every run, and selecting runs keeps the view
        one = code.shape[1] > 0 and code.strides[1] == 0 and has.strides[1] == 0
        if keep.all():
            blocks.append((im.scores, code))
        elif one:
            blocks.append((im.scores[:, keep], np.broadcast_to(code[:, :1], (code.shape[0],
                                                                             int(keep.sum())))))
        else:
            blocks.append((im.scores[:, keep], code[:, keep]))
        owner = rows[col[keep]]
        owners.append(owner)
        labelled[owner] = bool(has[:, 0].any()) if one else has[:, keep].any(axis=0)
    if not blocks:
        return None, np.empty(0, dtype=np.int64), labelled
    # the blocks in two halves, one in a worker thread (numpy releases the GIL), with one
    # cluster-sum width: the numbers of one call
    width = max(int((c[:, :1] if c.shape[1] and c.strides[1] == 0 else c).max(initial=-1)) + 1
                for _, c in blocks)
    sizes = np.cumsum([x.size for x, _ in blocks])
    half = int(np.searchsorted(sizes, sizes[-1] / 2)) + 1
    if len(blocks) < 4 or half >= len(blocks):
        res = st.clustered_intervals_of_matrices(blocks, confidence, n_codes=width)
    else:
        job = submit_half(st.clustered_intervals_of_matrices, blocks[half:], confidence,
                             n_codes=width)
        first = st.clustered_intervals_of_matrices(blocks[:half], confidence, n_codes=width)
        second = job.result()
        res = st.GroupedClusteredIntervals(
            *(np.concatenate([getattr(first, f), getattr(second, f)])
              for f in ("estimate", "low", "high", "se", "se_iid", "n", "n_clusters")),
            confidence=first.confidence)
    return res, np.concatenate(owners), labelled


def _clustered_of_rows(store, tms: list[tuple[str, str]], rows_of: dict[str, np.ndarray],
                       run_ids: np.ndarray, all_runs: list[int], n_rows: int,
                       confidence: float, wanted: dict[str, list[int]] | None,
                       pulled: dict | None, metrics_by_task: dict[str, str]):
    """``_clustered_cells``' intervals from ``store.item_cluster_codes`` (rows per item and
    run; with ``wanted``, ``store.item_matrices_and_codes`` where the store has it): the
    same triple as ``_clustered_of_matrices``."""
    if wanted and hasattr(store, "item_matrices_and_codes"):
        mats, codes = store.item_matrices_and_codes(tms, run_ids=all_runs)
        pulled.update(select_matrices(run_matrices(mats), wanted, metrics_by_task))
    else:
        codes = store.item_cluster_codes(tms, run_ids=all_runs)
    kk = codes["k"].to_numpy(dtype=np.int64)
    # the store returns the cells in order; sort only if it did not
    order = slice(None) if bool(np.all(kk[1:] >= kk[:-1])) else np.argsort(kk, kind="stable")
    bounds = np.searchsorted(kk[order], np.arange(len(tms) + 1))
    rid_all = codes["run_id"].to_numpy(dtype=np.int64)[order]
    x_all = codes["score"].to_numpy(dtype=float)[order]
    c_all = codes["code"].to_numpy(dtype=np.int64)[order]
    h_all = codes["has_cluster"].to_numpy(dtype=bool)[order]
    # one pass over every cell of every task: the group of an item mean is its cell's
    # row in ``cs`` (codes need only be distinct within a cell)
    parts = []
    for j, (t, _) in enumerate(tms):
        sl = slice(bounds[j], bounds[j + 1])
        rows = rows_of[t]
        col = pd.Index(run_ids[rows]).get_indexer(rid_all[sl])
        keep = col >= 0
        parts.append((rows[col[keep]], x_all[sl][keep], c_all[sl][keep], h_all[sl][keep]))
    cell, x, c, h = (np.concatenate([p[k] for p in parts]) for k in range(4))
    labelled = np.bincount(cell, weights=h.astype(float), minlength=n_rows) > 0
    if not cell.size:
        return None, np.empty(0, dtype=np.int64), labelled
    res = st.grouped_clustered_intervals(x, c, cell, confidence)
    return res, np.arange(res.n.size), labelled
