"""Each model's pick and the gold option of every item of a task (the input of the suspect-label
rule and of re-scoring), and the columns and notes the item-quality reports share.

Where each pick comes from: the package docstring (``evalcore.analysis.items``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.analysis._common import natural_key, resolve_run
from evalcore.analysis._plumbing import one_version
from evalcore.analysis.metric_choice import task_metric
from evalcore.errors import AnalysisError
from evalcore.store.keys import groups   # np.unique(..., return_inverse=True), by a flag table when dense

_ANSWER = re.compile(r"ANSWER\s*:\s*\(?([A-Za-z])\b")
_LETTER = re.compile(r"^\(?([A-Za-z])\)?[.:]?$")

BIAS_NOTE = ("Excluding or relabelling items chosen from the models' own answers is not "
             "neutral: the suspects are items the strongest models got 'wrong', so dropping "
             "them or crediting their consensus raises exactly those models' scores and widens "
             "their lead over weaker models. Treat the 'after' columns as one end of a "
             "sensitivity range, not as the corrected truth, and prefer labels fixed by a human "
             "reading the item.")
NOT_CAUSAL_NOTE = ("The clean items are not a random subset: items that overlap a corpus differ "
                   "in topic, length, source and difficulty from those that do not. A gap "
                   "between clean and overlapping items is suggestive of contamination, not a "
                   "measurement of its effect.")
SUSPECT_COLUMNS = ("task", "item_id", "prompt", "gold", "consensus", "n_agree", "n_strong",
                   "share_correct", "n_models")
BOARD_COLUMNS = ("run_id", "run", "variant", "n", "score", "low", "high", "method")
COMPARE_COLUMNS = ("run_id", "run", "ref_run", "variant", "n", "diff", "low", "high", "method")
OVERLAP_COLUMNS = ("run_id", "run", "n_clean", "n_overlap", "score_clean", "score_overlap",
                   "diff", "low", "high", "method")
ITEM_OVERLAP_COLUMNS = ("item_id", "words", "ngrams", "hits", "share", "overlapping", "example")
VARIANTS = ("before", "after", "drop suspects", "suspects correct for all")


def _norm_pick(response, target) -> str | None:
    """A model's pick as comparable text (None when there is none)."""
    if response is None or (isinstance(response, float) and np.isnan(response)):
        return None
    text = str(response).strip()
    t = "" if target is None or (isinstance(target, float) and np.isnan(target)) else str(target).strip()
    if len(t) == 1 and t.isalpha():
        m = _ANSWER.search(text) or _LETTER.match(text)
        if m:
            return m.group(1).upper()
    return text


def norm_gold(target) -> str | None:
    if target is None or (isinstance(target, float) and np.isnan(target)):
        return None
    t = str(target).strip()
    return t.upper() if len(t) == 1 and t.isalpha() else t


def task_runs(store, task: str, runs: list | None) -> tuple[list[int], dict[int, str], pd.DataFrame]:
    """Runs with item scores on ``task`` (all, or the named ones), their names, their cells."""
    cells = store.tasks()
    cells = cells[(cells["task"] == task) & cells["has_items"]]
    if cells.empty:
        raise AnalysisError(f"no run has item-level scores for task {task!r}")
    if runs:
        ids = [resolve_run(store, r) for r in runs]
        cells = cells[cells["run_id"].isin(ids)]
        if cells.empty:
            raise AnalysisError(f"none of the chosen runs has item scores for task {task!r}")
    ids = sorted(int(r) for r in cells["run_id"].unique())
    info = store.runs()
    name_of = dict(zip(info["run_id"].astype(int).tolist(), info["name"].tolist()))
    names = {r: str(name_of[r]) for r in ids}
    return ids, names, cells


def one_run_per_model(store, ids: list[int], cells: pd.DataFrame) -> tuple[list[int], list[int]]:
    """(the run with the most items of each model among ``ids``, the other runs); a run
    without a model name is a model of its own."""
    runs = store.runs()
    model_of = dict(zip(runs["run_id"].astype(int).tolist(), runs["model"].tolist()))
    name_of = dict(zip(runs["run_id"].astype(int).tolist(), runs["name"].tolist()))
    most = cells.groupby("run_id")["n_items"].max()
    n_items = dict(zip(most.index.astype(int).tolist(), most.tolist()))
    chosen: dict[str, int] = {}
    for r in ids:
        model = model_of[r]
        key = str(model) if isinstance(model, str) and model else f"run:{name_of[r]}"
        best = chosen.get(key)
        if best is None or n_items.get(r, 0) > n_items.get(best, 0):
            chosen[key] = r
    kept = sorted(chosen.values())
    return kept, [r for r in ids if r not in kept]


@dataclass(frozen=True)
class PickMatrix:
    """Every model's pick per item, as text and as option codes (gold included)."""

    run_ids: list[int]
    item_ids: list[str]
    prompts: list[str | None]
    gold: list[str | None]
    picks: pd.DataFrame          # index item_id, one column per run id, pick text or None
    codes: np.ndarray            # runs x items, -1 = no pick
    gold_codes: np.ndarray       # items, -1 = no gold
    options: list[list[str]]     # per item: the texts of its codes


def pick_matrix(store, task: str, run_ids: list[int]) -> PickMatrix:
    """Picks and gold of ``task`` for the runs, from the stored texts of each item's first
    answer (``store.answer_texts``). The gold of an item is its first stored target in run-id
    order, its prompt the first stored prompt; items in natural item-id order, runs in the
    given order (a run without answers is a column without picks)."""
    answers, firsts = store.answer_texts(run_ids, task)
    response = answers.column("response")
    if answers.num_rows == 0 or response.null_count == answers.num_rows or firsts.empty:
        raise AnalysisError(f"task {task!r}: no stored answers (texts) for these runs, so the "
                            "models' picks are unknown (lm_eval sample logs and inspect logs "
                            "carry them; summary files and tidy tables do not)")
    ids = [str(x) for x in firsts["item_id"].tolist()]
    order = sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))
    firsts = firsts.iloc[order]
    items = [ids[i] for i in order]
    gold = [norm_gold(t) for t in firsts["target"].tolist()]
    prompts = [None if _missing(p) else p for p in firsts["prompt"].tolist()]
    # rows -> (item row, run column); rows of items or runs not asked are dropped
    keys = firsts["item"].to_numpy(dtype=np.int64)
    by_key = np.argsort(keys, kind="stable")
    item = np.asarray(answers.column("item").to_numpy(), dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys[by_key], item), len(keys) - 1)
    ok = keys[by_key][pos] == item
    row = by_key[pos]
    col = _positions(np.asarray(answers.column("run_id").to_numpy(), dtype=np.int64),
                     [int(r) for r in run_ids])
    ok &= col >= 0
    # normalise each distinct (response, target) pair once; pick texts as integer codes
    pick_code, texts = _pick_codes(answers.column("response"), answers.column("target"))
    n_items, n_runs = len(items), len(run_ids)
    codes_txt = np.full((n_items, n_runs + 1), -1, dtype=np.int64)
    text_id = {t: i for i, t in enumerate(texts)}
    for t in gold:
        if t is not None and t not in text_id:
            text_id[t] = len(texts)
            texts.append(t)
    codes_txt[:, 0] = [-1 if t is None else text_id[t] for t in gold]
    codes_txt[row[ok], 1 + col[ok]] = pick_code[ok]
    codes, gold_codes, options = _codes_from_text_ids(codes_txt, texts)
    lookup = np.array(texts + [None], dtype=object)
    wide = pd.DataFrame(lookup[codes_txt[:, 1:]], dtype=object,
                        index=pd.Index(items, name="item_id"),
                        columns=pd.Index(list(run_ids), name="run_id"))
    return PickMatrix(list(run_ids), items, prompts, gold, wide, codes, gold_codes, options)


def _positions(values: np.ndarray, keys: list[int]) -> np.ndarray:
    """For each value, the index of its key in ``keys`` (distinct integers), -1 for a value
    that is no key: a lookup table over the values' range when that range is not much larger
    than the values (run ids: store-allocated, dense), else one sort of the values."""
    if not values.size:
        return np.empty(0, dtype=np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 4 * values.size + 1024:
        table = np.full(hi - lo + 1, -1, dtype=np.int64)
        for j, k in enumerate(keys):
            if lo <= k <= hi:
                table[k - lo] = j
        return table[values - lo]
    found, index = np.unique(values, return_inverse=True)
    col_of = {k: j for j, k in enumerate(keys)}
    return np.array([col_of.get(int(v), -1) for v in found], dtype=np.int64)[index.ravel()]


def item_choices(store, task: str, metric: str | None, run_id: int) -> list[str]:
    """The item ids of one run's (task, metric) scores in natural order (the Items page's
    exclusion choices): ``store.scored_item_ids`` (the run's integer item keys and the
    task's ids read at once), else ids read for the keys of ``store.answer_matrix``
    (``store.item_labels``); under one store version (``one_version``: the memo checks ask
    the catalog once, not per read). ``metric`` None: the task's metric for that run
    (``metric_choice.task_metric``). Empty when the run has no such scores."""
    with one_version(store):
        if metric is None:
            metric = str(task_metric(store, [int(run_id)], task, items_only=True).metric)
        if hasattr(store, "scored_item_ids"):
            ids = store.scored_item_ids(int(run_id), str(task), str(metric))
        else:
            items, _, _ = store.answer_matrix(int(run_id), str(task), str(metric))
            ids = store.item_labels(task, items) if items.size else []
        return sorted(ids, key=natural_key)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _pick_codes(response: pa.ChunkedArray, target: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Per row, the code of its normalised pick (``_norm_pick``; -1 = none) and the pick
    texts of the codes. Responses and targets repeat (a few options per task): each distinct
    (response, target) pair is normalised once."""
    def encoded(col: pa.ChunkedArray) -> tuple[np.ndarray, list]:
        enc = col.combine_chunks().dictionary_encode()
        idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        return idx, enc.dictionary.to_pylist()
    r_idx, r_vals = encoded(response)
    t_idx, t_vals = encoded(target)
    pair, inverse = groups((r_idx + 1) * (len(t_vals) + 1) + (t_idx + 1),
                           (len(r_vals) + 1) * (len(t_vals) + 1))
    texts: list[str] = []
    text_id: dict[str, int] = {}
    pair_code = np.empty(pair.size, dtype=np.int64)
    for k, key in enumerate(pair.tolist()):
        ri, ti = divmod(key, len(t_vals) + 1)
        pick = _norm_pick(r_vals[ri - 1] if ri else None, t_vals[ti - 1] if ti else None)
        if pick is None:
            pair_code[k] = -1
            continue
        if pick not in text_id:
            text_id[pick] = len(texts)
            texts.append(pick)
        pair_code[k] = text_id[pick]
    return pair_code[inverse.ravel()], texts


def _option_codes(gold: list, picks: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """Per item, a code for each distinct text among its gold and its picks (``picks``: items
    x runs, text or missing), numbered in order of first appearance: the gold first, then the
    runs in column order. Returns (codes runs x items with -1 = no pick, gold codes with -1 =
    no gold, per item the texts of its codes).

    One factorisation for all items: the (item, text) pairs listed item by item, gold first,
    get global codes in order of first appearance, so each item's codes are a consecutive
    range; subtracting the item's first code numbers them from 0."""
    n_items, n_runs = picks.shape
    texts = np.empty((n_items, n_runs + 1), dtype=object)
    texts[:, 0] = gold
    texts[:, 1:] = picks
    flat = texts.ravel()
    ok = np.array([isinstance(v, str) for v in flat], dtype=bool)
    ids = np.full(flat.size, -1, dtype=np.int64)
    tcode, tuniq = pd.factorize(flat[ok])
    ids[ok] = tcode
    return _codes_from_text_ids(ids.reshape(n_items, n_runs + 1), [str(t) for t in tuniq])


def _codes_from_text_ids(ids: np.ndarray, texts: list[str]
                         ) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    """``_option_codes`` on integer text ids: ``ids`` items x (gold, runs...), the index of
    each cell's text in ``texts`` or -1 (none). The numbering does not depend on how the
    text ids were chosen, only on which cells share a text."""
    n_items, width_cols = ids.shape
    flat = ids.ravel()
    ok = flat >= 0
    item = np.repeat(np.arange(n_items, dtype=np.int64), width_cols)[ok]
    tcode = flat[ok]
    width = max(len(texts), 1)
    pair, keys = pd.factorize(item * width + tcode)
    first = np.flatnonzero(np.r_[True, item[1:] != item[:-1]]) if item.size else item
    start = np.zeros(n_items, dtype=np.int64)
    start[item[first]] = pair[first]
    codes = np.full(flat.size, -1, dtype=np.int64)
    codes[ok] = pair - start[item]
    codes = codes.reshape(n_items, width_cols)
    # the pairs are numbered item by item: split the texts of the pairs at the item bounds
    owner = keys // width
    bounds = np.searchsorted(owner, np.arange(n_items + 1)).tolist()
    named = np.array(texts + [""], dtype=object)[keys % width].tolist()
    options = [named[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return codes[:, 1:].T.copy(), codes[:, 0].copy(), options
