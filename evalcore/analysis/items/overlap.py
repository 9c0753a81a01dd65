"""Contamination: overlap of each item with an indexed corpus, and each run's score on clean vs
overlapping items."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis.items.picks import NOT_CAUSAL_NOTE, OVERLAP_COLUMNS, task_runs
from evalcore.analysis.metric_choice import task_metric
from evalcore.errors import AnalysisError
from evalcore.items.ngram_index import IndexInfo, item_overlap, word_counts
from evalcore.stats.two_sample import two_sample_difference



@dataclass(frozen=True)
class ContaminationReport:
    """Per-item overlap with the indexed corpus and each run's clean vs overlapping score.

    items : ITEM_OVERLAP_COLUMNS (one row per item; ``overlapping`` is None for items with
    fewer words than n, which cannot be tested). runs : OVERLAP_COLUMNS, diff = overlapping
    minus clean with a two-sample interval (the two sides are different items).
    """

    task: str
    metric: str
    index: IndexInfo
    min_hits: int
    items: pd.DataFrame
    runs: pd.DataFrame
    n_untestable: int
    notes: list[str]
    causal_note: str = NOT_CAUSAL_NOTE


def _item_texts_for_overlap(store, task: str, ids: list[int]) -> pd.DataFrame:
    """One text per item: its prompt and target, from the run whose prompt is shortest (a
    zero-shot prompt; few-shot prompts carry other items' text)."""
    tx = store.item_texts(ids, task)
    if tx.empty:
        raise AnalysisError(f"task {task!r}: no stored prompts for these runs, so there is no "
                            "item text to look for in the corpus")
    tx = tx.assign(length=tx["prompt"].fillna("").str.len())
    tx = tx.sort_values(["item_id", "length", "run_id"]).groupby("item_id", sort=False).first()
    text = [" ".join(s for s in (p, t) if isinstance(s, str)) for p, t in zip(tx["prompt"], tx["target"])]
    return pd.DataFrame({"item_id": tx.index.astype(str), "text": text})


def contamination(store, task: str, index_path: str | Path, metric: str | None = None,
                  runs: list | None = None, min_hits: int = 1,
                  confidence: float = 0.95) -> ContaminationReport:
    """Overlap of each item's prompt + target with the corpus index, and per run the score on
    clean vs overlapping items (Brown et al. 2020, appendix C: overlapping = at least
    ``min_hits`` of the item's n-grams occur in the corpus; 1 by default, as there)."""
    if int(min_hits) < 1:
        raise AnalysisError(f"min_hits must be at least 1, got {min_hits}")
    ids, names, cells = task_runs(store, task, runs)
    if metric is None:
        metric = str(task_metric(store, ids, task, need="any", items_only=True).metric)
    texts = _item_texts_for_overlap(store, task, ids)
    info, ov = item_overlap(index_path, list(texts["text"]))
    words = word_counts(list(texts["text"]))
    testable = words >= info.n
    overlapping = [bool(h >= min_hits) if t else None for h, t in zip(ov.hits, testable)]
    items = pd.DataFrame({"item_id": texts["item_id"], "words": words, "ngrams": ov.n_ngrams,
                          "hits": ov.hits,
                          "share": np.where(ov.n_ngrams > 0, ov.hits / np.maximum(ov.n_ngrams, 1), np.nan),
                          "overlapping": overlapping, "example": ov.example})
    flag = dict(zip(items["item_id"], items["overlapping"]))
    scores = store.item_means(ids, task, metric)
    rows = []
    notes = []
    for r in ids:
        s = scores[scores["run_id"] == r]
        fl = s["item_id"].map(flag)
        clean = s["score"][fl.eq(False)].to_numpy(dtype="float64")
        dirty = s["score"][fl.eq(True)].to_numpy(dtype="float64")
        row = {"run_id": r, "run": names[r], "n_clean": int(clean.size), "n_overlap": int(dirty.size),
               "score_clean": float(clean.mean()) if clean.size else np.nan,
               "score_overlap": float(dirty.mean()) if dirty.size else np.nan,
               "diff": np.nan, "low": np.nan, "high": np.nan, "method": ""}
        try:
            d = two_sample_difference(dirty, clean, confidence)
            row.update(diff=d.delta, low=d.low, high=d.high, method=d.method)
        except st.StatsInputError as exc:
            row["method"] = f"no interval: {exc}"
        rows.append(row)
    n_untestable = int((~testable).sum())
    if n_untestable:
        notes.append(f"{n_untestable} item(s) have fewer than {info.n} words and cannot be "
                     "tested; they are in neither group")
    if not any(v is True for v in overlapping):
        notes.append("no item overlaps the corpus: nothing to compare")
    return ContaminationReport(task, metric, info, int(min_hits), items,
                               pd.DataFrame(rows, columns=list(OVERLAP_COLUMNS)), n_untestable, notes)
