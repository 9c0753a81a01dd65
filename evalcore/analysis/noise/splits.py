"""Split consistency: are one run's items exchangeable (random, ordered and cluster-preserving splits)?

Groups and cell scores: ``evalcore.analysis.noise.groups`` (its docstring has the rules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalcore import stats as st
from evalcore.analysis._common import natural_key, resolve_run
from evalcore.analysis.metric_choice import task_metric
from evalcore.errors import AnalysisError


@dataclass(frozen=True)
class SplitReport:
    """One run x task x metric: ``result`` (``stats.SplitConsistency``) and a sentence."""

    run_id: int
    run: str
    task: str
    metric: str
    result: Any
    sentence: str
    how_to: str = ("Upload a run with item-level scores (lm_eval --log_samples, an inspect "
                   "log, a tidy table with item ids).")


def _item_scores(store, rid: int, task: str, metric: str, one_answer: bool
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """One run's per-item means on (task, metric) in natural item-id order, and the items'
    cluster labels (None when no item has one). A cell with one answer per item is read on
    integer keys (``paired_items`` of the run with itself; the ids and cluster texts of its
    keys only); with repeats, ``item_means`` (DuckDB's mean over answers, the smallest
    label text of an item)."""
    if one_answer:
        p = store.paired_items(rid, rid, [(task, metric, metric)])[0]
        ids = store.item_labels(task, p.items)
        order = sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))
        cluster = np.asarray(p.cluster)[order]
        clusters = (np.array(store.label_texts(task, cluster), dtype=object)
                    if bool((cluster >= 0).any()) else None)
        return np.asarray(p.score_a, dtype=float)[order], clusters
    im = store.item_means([rid], task=task)
    g = im[im["metric"] == metric].copy()
    item_ids = g["item_id"].tolist()
    g = g.iloc[sorted(range(len(g)), key=lambda i: natural_key(item_ids[i]))]
    clusters = g["cluster"].to_numpy(object) if g["cluster"].notna().any() else None
    return g["score"].to_numpy(float), clusters


def split_report(store, run, task: str, metric: str | None = None, *, k: int = 10,
                 repetitions: int = 200, seed: int = 0) -> SplitReport:
    """``stats.split_consistency`` of one run's item scores on one task (items in natural
    item-id order, the run's clusters when it has them). k is lowered to n // 10 (at least
    2) when the task has fewer than 10 k items."""
    rid = resolve_run(store, run)
    name = str(store.runs().set_index("run_id").loc[rid, "name"])
    cells = store.tasks([rid])
    cells = cells[(cells["task"] == task) & cells["has_items"].fillna(False).astype(bool)]
    metrics = sorted(cells["metric"].unique())
    if not metrics:
        raise AnalysisError(f"run {name!r} has no item-level scores for task {task!r}")
    if metric is None:
        metric = str(task_metric(store, [rid], task, items_only=True).metric)
    elif metric not in metrics:
        raise AnalysisError(f"run {name!r} has no metric {metric!r} on {task!r}; it has "
                            f"{', '.join(metrics)}")
    one = bool((cells.loc[cells["metric"] == metric, "k_max"].fillna(2).astype(int) <= 1).all())
    x, clusters = _item_scores(store, rid, task, metric, one)
    kk = int(k) if x.size >= 10 * int(k) else max(2, x.size // 10)
    res = st.split_consistency(x, k=kk, repetitions=repetitions, seed=seed, clusters=clusters)
    found = []
    if np.isfinite(res.ordered_ratio):
        found.append(f"contiguous blocks in item order spread {res.ordered_ratio:.2f} times the "
                     f"sampling reference (p = {res.ordered_p:.3f})")
    if np.isfinite(res.cluster_ratio):
        found.append(f"splits that keep clusters together {res.cluster_ratio:.2f} times "
                     f"(p = {res.cluster_p:.3f})")
    n_tests = int(np.isfinite(res.ordered_p)) + int(np.isfinite(res.cluster_p))
    level = st.splits.ALPHA / max(n_tests, 1)
    why = []
    if np.isfinite(res.ordered_p) and res.ordered_p < level:
        why.append("difficulty drifts along the item order")
    if np.isfinite(res.cluster_p) and res.cluster_p < level:
        why.append("items of one cluster move together")
    verdict = (f"the items are not exchangeable ({' and '.join(why)}), so an iid interval is "
               "too narrow" if why else "no sign that the items are not exchangeable")
    sentence = (f"{kk} splits of {res.m} items: random splits spread {res.random_ratio:.2f} "
                f"times the reference s/sqrt(m) (1 by construction); " + "; ".join(found)
                + f". Verdict (each test at {level:.3g}): {verdict}.")
    return SplitReport(rid, name, task, metric, res, sentence)
