"""The leaderboard's intervals stage: every cell's score and interval by the method asked.

Item-level cells come from the SQL sufficient statistics (``store.cell_stats``: n, sum and
sum of squares per cell). The closed-form methods (wilson, clopper-pearson, bayes) take
the 0/1 cells' counts (``_common.proportion_bounds``); continuous cells and "clt" take
score +- q * se with the quantile ``stats.mean_quantiles`` gives (Student's t with n - 1
df below 30 items, else z); "bootstrap" and "clustered" need the items
(``board_cells``). Summary-only cells are the harness's value +- z * reported stderr.
The items x runs matrices that the tiers and rank intervals need are read meanwhile in a
worker thread (``PendingMatrices``).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.stats import _interval_arrays as ia
from evalcore.analysis._common import (BINARY_ONLY_METHODS, METHOD_LABELS, chance_of, fnum,
                                       proportion_bounds, short_list)
from evalcore.analysis._plumbing import submit
from evalcore.analysis.board_cells import (bootstrap_cells, clustered_columns, continuous_runs,
                                           pull_matrices_and_items)
from evalcore.analysis.board_info import chance_applies
from evalcore.analysis.board_read import shown
from evalcore.analysis.tiers import compared_runs, pull_matrices


@dataclass
class PendingMatrices:
    """The items x runs matrices of the tasks the tiers and rank intervals compare, being
    read in a worker thread: ``pulling`` (``tiers.pull_matrices``, or
    ``board_cells.pull_matrices_and_items`` when the bootstrap cells take their items from
    the same read), or handed over by the clustered job (``handed``). ``result()`` waits for
    them (task -> (run ids ascending, items x runs matrix)); {} when nothing is read."""

    pulling: Future | None = None
    with_items: bool = False
    handed: Future | None = None

    def result(self) -> dict:
        if self.pulling is not None:
            return self.pulling.result()[0] if self.with_items else self.pulling.result()
        if self.handed is not None:
            return self.handed.result()
        return {}


@dataclass
class ItemCells:
    """The item-level cells (one row per (run, task) with items; ``cells`` of
    ``Leaderboard`` without the columns filled later), their ``cell_stats`` rows ``stats``
    in the same order, the matrices being read, and for "clustered" the job computing the
    intervals (se, low, high and method are filled in by ``finish_clustered``) with the
    place in the board's notes where its note goes."""

    cells: pd.DataFrame
    stats: pd.DataFrame
    matrices: PendingMatrices = field(default_factory=PendingMatrices)
    clustered: Future | None = None
    clustered_note_at: int = 0


def shown_cell_stats(cs: pd.DataFrame, metrics_by_task: dict[str, str]) -> pd.DataFrame:
    """The ``store.cell_stats`` rows of the metric shown for their task, with items."""
    cs = cs[shown(cs, metrics_by_task) & (cs["n"].to_numpy(dtype=float) > 0)].reset_index(
        drop=True)
    cs["run_id"] = cs["run_id"].astype(int)
    return cs


def runs_to_pull(cs: pd.DataFrame, metrics_by_task: dict[str, str], include_tiers: bool,
                 include_ranks: bool, rank_tasks: list[str] | None) -> dict[str, list[int]]:
    """task -> the run ids whose items x runs matrix the tiers (every task compared) or the
    rank intervals (the tasks of ``rank_tasks``) need: the item-level cells' runs (the
    board's cells are these rows, in this order, plus summary-only ones)."""
    item_cells = pd.DataFrame({"task": cs["task"].astype(str).to_numpy(),
                               "run_id": cs["run_id"].to_numpy(dtype=int), "has_items": True})
    if include_tiers:
        return compared_runs(item_cells, metrics_by_task)
    if include_ranks:
        return compared_runs(item_cells, metrics_by_task, None if rank_tasks is None
                             else {str(t) for t in rank_tasks})
    return {}


def item_level_cells(store, cs: pd.DataFrame, names: dict[int, str],
                     metrics_by_task: dict[str, str], method: str, confidence: float,
                     n_resamples: int, seed: int, wanted: dict[str, list[int]],
                     notes: list[str]) -> ItemCells:
    """Score, SE and interval of every item-level cell (``cs``: ``shown_cell_stats``) by
    ``method``, with the matrices of ``wanted`` (``runs_to_pull``) read meanwhile.

    score = sum / n; se = ``stats.mean_se_from_moments`` (sd ddof=1 / sqrt(n)); "binary"
    when the raw scores are 0/1 and every item mean is 0 or 1 (for scores in [0, 1],
    sum m_i^2 = sum m_i exactly when every m_i is 0 or 1). A binary-only method on a
    continuous cell falls back to CLT, said in ``notes``."""
    n = cs["n"].to_numpy(dtype=float)
    ssum = cs["sum"].to_numpy(dtype=float)
    binary = (cs["binary"].fillna(False).astype(bool).to_numpy()
              & np.isclose(cs["sumsq"].to_numpy(dtype=float), ssum, rtol=0, atol=1e-9))
    # clustered: one read serves the cluster codes and the matrices (``clustered_columns``)
    shared = method == "clustered" and (hasattr(store, "item_code_matrices")
                                        or hasattr(store, "item_matrices_and_codes"))
    # bootstrap: the continuous cells' matrices come with the tiers' read when it covers them
    boot_runs = continuous_runs(cs, binary) if method == "bootstrap" else {}
    with_items = bool(boot_runs) and all(set(r) <= set(wanted.get(t, ())) for t, r in
                                         boot_runs.items())
    out = ItemCells(pd.DataFrame(), cs)
    if wanted and not shared:
        out.matrices = PendingMatrices(
            submit(store, pull_matrices_and_items if with_items else pull_matrices,
                   store, wanted, metrics_by_task), with_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = ssum / n
    se = st.mean_se_from_moments(n, ssum, cs["sumsq"].to_numpy(dtype=float))
    low = np.full(len(cs), np.nan)
    high = np.full(len(cs), np.nan)
    used = np.array([method] * len(cs), dtype=object)
    if method in BINARY_ONLY_METHODS or method == "clt":
        _closed_form(cs, method, binary, n, ssum, score, se, low, high, used, confidence,
                     notes)
    elif method == "bootstrap":
        bootstrap_cells(store, cs, metrics_by_task, binary, se, low, high, confidence,
                        n_resamples, seed, out.matrices.pulling if with_items else None)
        notes.append(f"bootstrap: {n_resamples} resamples of items, seed {seed}")
    else:
        _start_clustered(store, out, metrics_by_task, score, se, n, binary, confidence,
                         wanted if shared else None, shared, len(notes))
    out.cells = pd.DataFrame({
        "run_id": cs["run_id"].to_numpy(dtype=int),
        "run": [names.get(int(r), str(r)) for r in cs["run_id"].tolist()],
        "task": cs["task"].astype(str).to_numpy(),
        "metric": cs["metric"].astype(str).to_numpy(),
        "n": n.astype(int),
        "score": score, "se": se, "low": low, "high": high,
        "method": used, "binary": binary, "has_items": True,
    })
    return out


def _closed_form(cs: pd.DataFrame, method: str, binary: np.ndarray, n: np.ndarray,
                 ssum: np.ndarray, score: np.ndarray, se: np.ndarray, low: np.ndarray,
                 high: np.ndarray, used: np.ndarray, confidence: float,
                 notes: list[str]) -> None:
    """The closed-form intervals, in place: the 0/1 cells' by ``method`` from their counts
    ("clt" too: ``stats.proportion_interval``), the continuous cells' CLT interval with the
    quantile ``stats.score_interval("clt")`` uses (t_{n-1} below 30 items, else z)."""
    cont = ~binary
    if cont.any() and method != "clt":
        bad = sorted(set(cs.loc[cont, "task"]))
        notes.append(f"{METHOD_LABELS[method]} needs 0/1 scores; CLT used for the "
                     f"continuous scores of: {short_list(bad)}")
    rows = np.flatnonzero(binary)
    low[rows], high[rows] = proportion_bounds(method, np.round(ssum[rows]), n[rows],
                                               confidence)
    used[cont] = "clt"
    q = st.mean_quantiles(confidence, n[cont], np.zeros(int(cont.sum()), dtype=bool))
    low[cont], high[cont] = ia.clt_bounds(score[cont], se[cont], q, bounded=False)
    small = sorted(set(cs.loc[cont & (n < st.SMALL_N) & (n >= 2), "task"]))
    if small:
        notes.append(f"CLT intervals of continuous scores with fewer than {st.SMALL_N} "
                     f"items use Student's t with n - 1 df: {short_list(small)}")


def _start_clustered(store, out: ItemCells, metrics_by_task: dict[str, str],
                     score: np.ndarray, se: np.ndarray, n: np.ndarray, binary: np.ndarray,
                     confidence: float, wanted: dict[str, list[int]] | None, shared: bool,
                     note_at: int) -> None:
    """The clustered cells (their read, codes and intervals) in a worker thread while this
    one builds the frame and merges the reported values and audit flags. The job hands the
    matrices over (``PendingMatrices.handed``) as soon as they are read, so this thread
    computes the metric info, order and rank intervals while the job computes the intervals
    (not the tiers: they need the macro averages, i.e. the clustered SEs); its columns are
    filled in by ``finish_clustered`` before anything reads them."""
    read: Future = Future()
    out.clustered = submit(store, clustered_columns, store, out.stats, metrics_by_task, score,
                           se.copy(), st.mean_quantiles(confidence, n, binary), confidence,
                           wanted, read)
    out.clustered_note_at = note_at
    if shared:
        out.matrices.handed = read


def finish_clustered(cells: pd.DataFrame, items: ItemCells, before_sort: np.ndarray,
                     notes: list[str]) -> None:
    """The clustered cells' se, low, high (and method where a cell fell back to CLT), in
    place: the rows that were ``items.stats``' cells (the first len(stats) rows before the
    sort: the merges keep the left frame's order, summary-only cells come after them), at
    their sorted positions; the note naming the tasks without a cluster key goes where the
    intervals' notes are."""
    (se_c, low_c, high_c, used_c), nocl, _ = items.clustered.result()
    at = np.flatnonzero(before_sort < len(items.stats))
    src = before_sort[at]
    for name, values in (("se", se_c), ("low", low_c), ("high", high_c)):
        cells.iloc[at, cells.columns.get_loc(name)] = values[src]
    fell_back = used_c[src] != "clustered"             # CLT: no cluster key
    cells.iloc[at[fell_back], cells.columns.get_loc("method")] = used_c[src][fell_back]
    if nocl:
        notes.insert(items.clustered_note_at, "no cluster key, CLT used for: " + short_list(nocl))


# ---------------------------------------------------------------------------------------
# summary-only cells, audit flags, chance
# ---------------------------------------------------------------------------------------

def _reported(summ: pd.DataFrame, metrics_by_task: dict[str, str]) -> pd.DataFrame:
    """The summary rows of the metric shown, one per (run, task, metric)."""
    rep = summ[shown(summ, metrics_by_task)][
        ["run_id", "task", "metric", "value", "stderr", "n"]].reset_index(drop=True)
    rep["run_id"] = rep["run_id"].astype(int)
    rep = rep.drop_duplicates(["run_id", "task", "metric"])
    return rep.rename(columns={"value": "reported", "stderr": "reported_stderr",
                               "n": "n_reported"})


def with_reported(cells: pd.DataFrame, summ: pd.DataFrame, names: dict[int, str],
                  metrics_by_task: dict[str, str], confidence: float, notes: list[str],
                  tnotes: list[tuple[str, str, str]]) -> pd.DataFrame:
    """The cells with each one's reported value and stderr (a left join on run, task and
    metric), followed by the summary-only cells: the reported value with interval
    value +- z * reported stderr (NaN without a stderr), ``has_items`` False."""
    rep = _reported(summ, metrics_by_task)
    keys = list(zip(cells["run_id"].tolist(), cells["task"].tolist(), cells["metric"].tolist()))
    rep_keys = list(zip(rep["run_id"].tolist(), rep["task"].tolist(), rep["metric"].tolist()))
    at = {k: i for i, k in enumerate(rep_keys)}
    where = np.array([at.get(k, -1) for k in keys], dtype=np.int64)
    for col in ("reported", "reported_stderr"):
        vals = rep[col].to_numpy(dtype=float)
        cells[col] = np.where(where >= 0, vals[np.maximum(where, 0)] if len(vals) else np.nan,
                              np.nan)
    have = set(keys)
    so = rep[[k not in have for k in rep_keys]]
    if len(so):
        cells = _with_summary_only(cells, so, names, confidence, notes, tnotes)
    cells["n"] = pd.array(cells["n"], dtype="Int64")
    return cells


def _with_summary_only(cells: pd.DataFrame, so: pd.DataFrame, names: dict[int, str],
                       confidence: float, notes: list[str],
                       tnotes: list[tuple[str, str, str]]) -> pd.DataFrame:
    """``cells`` followed by the summary-only cells ``so`` (``_reported`` rows without an
    item-level cell), with the notes saying where they are."""
    val = so["reported"].to_numpy(dtype=float)
    rse = so["reported_stderr"].to_numpy(dtype=float)
    low, high = ia.clt_bounds(val, rse, st.z_value(confidence), bounded=False)
    method = np.full(len(so), "reported", dtype=object)
    edge_notes: list[str] = []
    _edge_cells(so, val, rse, low, high, method, confidence, edge_notes)
    extra = pd.DataFrame({
        "run_id": so["run_id"].to_numpy(dtype=int),
        "run": [names.get(int(r), str(r)) for r in so["run_id"]],
        "task": so["task"].astype(str).to_numpy(),
        "metric": so["metric"].astype(str).to_numpy(),
        "n": pd.array(so["n_reported"], dtype="Int64"),
        "score": val, "se": rse, "low": low, "high": high,
        "method": method, "binary": False, "has_items": False,
        "reported": val, "reported_stderr": rse,
    })
    item_level = len(cells)
    cells = pd.concat([cells if len(cells) else None, extra], ignore_index=True)
    if not item_level:
        # nothing on the board has items: one note, not one per task
        notes.append("no run shown has item-level data: every cell is the harness-reported "
                     "value with interval value +- z * reported stderr (no paired tiers or "
                     "rank intervals)" + (", except as the next note says" if edge_notes
                                          else ""))
    else:
        for t in sorted(set(extra["task"])):
            k = int((extra["task"] == t).sum())
            tnotes.append((t, "reported", f"{k} run(s) have no item-level data; shown "
                           f"from the harness-reported value and stderr"))
    notes.extend(edge_notes)
    if np.isnan(rse).any():
        notes.append("summary-only cells without a reported stderr have no interval")
    return cells


def _edge_cells(so: pd.DataFrame, val: np.ndarray, rse: np.ndarray, low: np.ndarray,
                high: np.ndarray, method: np.ndarray, confidence: float,
                notes: list[str]) -> None:
    """Summary-only cells at a score of 0 or 1 with a reported stderr of 0 (every item right
    or every item wrong: the harness's sample SE is 0) would get a zero-width interval, which
    no finite sample supports. With n reported they get the Wilson interval of 0 or n
    successes out of n (``stats.wilson_interval``, the default for 0/1 scores; 100% of 3,168
    gives [99.88, 100]); without n, no interval. In place; the notes say so."""
    n = pd.to_numeric(so["n_reported"], errors="coerce").to_numpy(dtype=float)
    edge = (rse == 0) & np.isin(val, (0.0, 1.0))
    if not edge.any():
        return
    known = edge & np.isfinite(n) & (n >= 1)
    for i in np.flatnonzero(known):
        k = int(round(val[i] * n[i]))
        ci = st.wilson_interval(k, int(n[i]), confidence)
        low[i], high[i], method[i] = ci.low, ci.high, "wilson"
    low[edge & ~known] = np.nan
    high[edge & ~known] = np.nan
    notes.append("summary-only cells at a score of 0 or 1 with a reported stderr of 0: "
                 + ("the Wilson interval of 0 or n out of n (n as reported)" if known.any()
                    else "")
                 + ("; " if known.any() and (edge & ~known).any() else "")
                 + ("no interval where n is not reported" if (edge & ~known).any() else "")
                 + ", not a zero-width one")


def with_audit_flags(cells: pd.DataFrame, audit_job: Future | None) -> pd.DataFrame:
    """``audit_flag`` of each cell: the distinct flags of its summary rows
    (``store.audit``), sorted, joined with "; " (None without a flag or an audit read)."""
    aud = audit_job.result() if audit_job is not None else None
    flags: dict[tuple[int, str, str], set[str]] = {}
    if aud is not None and len(aud):
        flagged = aud[aud["flag"].notna().to_numpy()]
        for r, t, m, f in zip(flagged["run_id"].astype(int).tolist(), flagged["task"].tolist(),
                              flagged["metric"].tolist(), flagged["flag"].tolist()):
            flags.setdefault((r, t, m), set()).add(str(f))
    cells["audit_flag"] = pd.Series(
        [("; ".join(sorted(flags[k])) if k in flags else None) for k in
         zip(cells["run_id"].tolist(), cells["task"].tolist(), cells["metric"].tolist())],
        index=cells.index, dtype=object) if flags else None
    return cells


def with_chance(cells: pd.DataFrame, tasks_df: pd.DataFrame,
                tnotes: list[tuple[str, str, str]]) -> None:
    """``chance`` (the chance level of a multiple-choice accuracy, from the largest number
    of choices any run recorded for the task) and ``contains_chance`` of each cell, in
    place, with a task note where some interval contains it."""
    n_choices: dict[str, float] = {}
    for t, k in zip(tasks_df["task"].tolist(), tasks_df["n_choices"].tolist()):
        k = fnum(k)
        if np.isfinite(k):
            n_choices[str(t)] = max(n_choices.get(str(t), 0.0), k)
    # one level per distinct (task, metric, binary): thousands of runs share a few keys
    keys = list(zip(cells["task"].tolist(), cells["metric"].tolist(),
                    cells["binary"].tolist()))
    level = {k: chance_of(n_choices.get(k[0])) if chance_applies(k[1], k[2]) else np.nan
             for k in dict.fromkeys(keys)}
    chance = np.array([level[k] for k in keys], dtype=float)
    cells["chance"] = chance
    lo, hi = cells["low"].to_numpy(dtype=float), cells["high"].to_numpy(dtype=float)
    # stats.contains_chance on each cell; a NaN bound or level makes no claim (False)
    finite = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(chance)
    cells["contains_chance"] = finite & (lo <= chance) & (chance <= hi)
    for t in sorted(set(cells.loc[cells["contains_chance"], "task"])):
        tnotes.append((t, "chance", "some intervals contain the chance level; those scores "
                       "cannot rank anything"))
