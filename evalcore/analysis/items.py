"""Item quality: suspect labels, re-scoring with corrected labels, contamination overlap.

Wires store queries to ``evalcore.stats.label_consensus`` (the rule and its chance
expectation), ``evalcore.stats.two_sample`` (clean vs overlapping items), the paired and
one-score intervals, and ``evalcore.items.ngram_index`` (the corpus index).

Where each model's pick comes from (``store.item_texts``): the stored ``response`` of an item's
first answer. For lm-evaluation-harness multiple-choice tasks that is the text of the option
with the highest log-likelihood (what ``acc`` scores; ``acc_norm`` may pick another option);
for inspect_ai multiple-choice logs the completion, read as its letter when it follows
inspect's ``ANSWER: X`` template and the target is a letter. The gold is the stored
``target`` (lm_eval: the gold option's text). Tidy tables carry no texts (their ``answer``
column numbers repeats), so they cannot feed the rule. One run per model takes part (the run
with the most items on the task; a rerun of the same model would otherwise vote twice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore import stats as st
from evalcore.analysis._common import natural_key, resolve_run
from evalcore.analysis._plumbing import one_version
from evalcore.analysis.metric_choice import task_metric
from evalcore.errors import AnalysisError
from evalcore.items.ngram_index import IndexInfo, item_overlap, word_counts
from evalcore.store.keys import groups   # np.unique(..., return_inverse=True), by a flag table when dense
from evalcore.stats.label_consensus import (CHANCE_MODEL, DEFAULT_M, ConsensusExpectation,
                                            consensus_suspects, default_strong_size,
                                            expected_suspects, expected_suspects_given_errors,
                                            strongest)
from evalcore.stats.two_sample import two_sample_difference

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


def _norm_gold(target) -> str | None:
    if target is None or (isinstance(target, float) and np.isnan(target)):
        return None
    t = str(target).strip()
    return t.upper() if len(t) == 1 and t.isalpha() else t


def _task_runs(store, task: str, runs: list | None) -> tuple[list[int], dict[int, str], pd.DataFrame]:
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


def _one_run_per_model(store, ids: list[int], cells: pd.DataFrame) -> tuple[list[int], list[int]]:
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
    gold = [_norm_gold(t) for t in firsts["target"].tolist()]
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


@dataclass(frozen=True)
class SuspectReport:
    """Suspect labels of one task: the list, the rule, the chance expectation, the models.

    suspects : SUSPECT_COLUMNS plus one column per model (its pick), one row per flagged item.
    models : run_id, run, accuracy (of its picks against the gold), strong (bool), items.
    expectation : expected count if every label were correct (``CHANCE_MODEL``: per-model
    accuracy, independent errors). given_errors : the same given each item's number of strong
    models that missed the gold (``CONDITIONAL_MODEL``: item difficulty taken as observed).
    """

    task: str
    m: int
    n_strong: int
    n_options: int
    n_items: int
    suspects: pd.DataFrame
    models: pd.DataFrame
    expectation: ConsensusExpectation
    given_errors: ConsensusExpectation
    left_out: list[str]
    notes: list[str] = field(default_factory=list)
    chance_model: str = CHANCE_MODEL

    def export_csv(self) -> str:
        """The list for a relabelling pass: fill ``new_gold`` (empty rows keep their gold)."""
        out = self.suspects.copy()
        out.insert(2, "new_gold", "")
        return out.to_csv(index=False)


def suspect_labels(store, task: str, runs: list | None = None, m: int = DEFAULT_M,
                   n_strong: int | None = None) -> SuspectReport:
    """Items where at least m of the n_strong most accurate models agree on a non-gold option.

    Defaults: m = 3; n_strong = the better half of the models, at least m
    (``default_strong_size``). K (options per item) is the task's number of choices as
    stored (the most common one; items with other K are counted with it).
    """
    ids, names, cells = _task_runs(store, task, runs)
    kept, dropped = _one_run_per_model(store, ids, cells)
    k_opts = cells["n_choices"].dropna()
    if k_opts.empty or int(k_opts.max()) < 2:
        raise AnalysisError(f"task {task!r} is not multiple choice (no number of options "
                            "stored), so 'the same option' is undefined; the rule needs "
                            "multiple-choice picks")
    n_options = int(k_opts.max())
    pm = pick_matrix(store, task, kept)
    if int(m) > len(kept):
        raise AnalysisError(f"m = {m} models must agree but only {len(kept)} model(s) have "
                            f"answers on {task!r}; lower m")
    answered = pm.codes >= 0
    right = (pm.codes == pm.gold_codes[None, :]) & answered & (pm.gold_codes >= 0)[None, :]
    n_ans = answered.sum(axis=1)
    acc = np.where(n_ans > 0, right.sum(axis=1) / np.maximum(n_ans, 1), 0.0)
    size = default_strong_size(len(kept), m) if n_strong is None else int(n_strong)
    if not int(m) <= size <= len(kept):
        raise AnalysisError(f"the number of strong models must lie between m = {m} and "
                            f"{len(kept)} (the models with answers), got {size}")
    strong = strongest(acc, size)
    res = consensus_suspects(pm.codes, pm.gold_codes, strong, m)
    share = np.where(answered.sum(axis=0) > 0, right.sum(axis=0) / np.maximum(answered.sum(axis=0), 1),
                     np.nan)
    exp = expected_suspects(acc[list(strong)], np.full(len(pm.item_ids), n_options), m,
                            observed=res.n_flagged)
    has_gold = pm.gold_codes >= 0
    missed = (answered & ~right)[list(strong)].sum(axis=0)[has_gold]
    given = expected_suspects_given_errors(missed, n_options, m, observed=res.n_flagged)
    rows = []
    for j in np.nonzero(res.flagged)[0]:
        row = {"task": task, "item_id": pm.item_ids[j], "prompt": pm.prompts[j], "gold": pm.gold[j],
               "consensus": pm.options[j][res.option[j]], "n_agree": int(res.count[j]),
               "n_strong": int(res.answered[j]), "share_correct": float(share[j]),
               "n_models": int(answered[:, j].sum())}
        for r in kept:
            row[names[r]] = pm.picks.at[pm.item_ids[j], r]
        rows.append(row)
    cols = list(SUSPECT_COLUMNS) + [names[r] for r in kept]
    suspects = pd.DataFrame(rows, columns=cols)
    models = pd.DataFrame({"run_id": kept, "run": [names[r] for r in kept], "accuracy": acc,
                           "strong": [i in strong for i in range(len(kept))],
                           "items": n_ans}).sort_values("accuracy", ascending=False)
    notes = [f"picks: each model's stored answer on its first try; K = {n_options} options"]
    if dropped:
        notes.append("one run per model: left out " + ", ".join(names[r] for r in dropped))
    return SuspectReport(task, int(m), size, n_options, len(pm.item_ids), suspects,
                         models.reset_index(drop=True), exp, given, [names[r] for r in dropped],
                         notes)


# ------------------------------------------------------------------------------------------
# Re-scoring with corrected labels
# ------------------------------------------------------------------------------------------

def read_relabels(text: str, source: str = "relabel CSV") -> pd.DataFrame:
    """task, item_id, new_gold from a CSV (extra columns ignored; empty new_gold rows dropped)."""
    import io
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{source}: not a CSV with columns task, item_id, new_gold ({exc})") from None
    missing = [c for c in ("task", "item_id", "new_gold") if c not in df.columns]
    if missing:
        raise AnalysisError(f"{source}: expected columns task, item_id, new_gold; missing "
                            f"{', '.join(missing)}")
    df = df[["task", "item_id", "new_gold"]].copy()
    df["new_gold"] = [_norm_gold(v) if v.strip() else None for v in df["new_gold"]]
    df = df[df["new_gold"].notna()]
    dup = df.duplicated(["task", "item_id"], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        raise AnalysisError(f"{source}: item {first['task']}/{first['item_id']} is relabelled twice")
    return df.reset_index(drop=True)


@dataclass(frozen=True)
class RescoreReport:
    """Scores before and after relabelling/exclusion, and the sensitivity range.

    board : BOARD_COLUMNS, one row per run and variant (VARIANTS: before; after the
    relabels and exclusions; suspects dropped; suspects counted correct for every run).
    comparisons : COMPARE_COLUMNS, each run minus the reference run per variant (paired).
    """

    task: str
    metric: str
    board: pd.DataFrame
    comparisons: pd.DataFrame
    ref_run: str
    n_relabelled: int
    n_excluded: int
    n_suspects: int
    consistency: pd.DataFrame     # run, share of items where score == (pick == gold)
    notes: list[str]
    bias_note: str = BIAS_NOTE


def _interval(x: np.ndarray, conf: float):
    binary = bool(np.all((x == 0) | (x == 1)))
    return st.score_interval(x, "wilson" if binary else "clt", conf)


def _paired(a: np.ndarray, b: np.ndarray, conf: float) -> tuple[float, float, float, str]:
    if np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)):
        both = int(((a == 1) & (b == 1)).sum())
        only_b = int(((a == 0) & (b == 1)).sum())
        only_a = int(((a == 1) & (b == 0)).sum())
        neither = int(a.size - both - only_a - only_b)
        method, _ = st.choose_paired_binary_method(int(a.size), only_a + only_b)
        iv = st.paired_proportion_interval(both, only_b, only_a, neither, conf, method)
        return iv.estimate, iv.low, iv.high, iv.label
    pdiff = st.paired_difference(a, b, conf)
    return pdiff.diff, pdiff.low, pdiff.high, "paired CLT interval"


def rescore(store, task: str, metric: str | None = None, runs: list | None = None,
            relabels: pd.DataFrame | None = None, exclude: list[str] | None = None,
            suspects: list[str] | None = None, ref: str | int | None = None,
            confidence: float = 0.95) -> RescoreReport:
    """Every run's score on ``task`` before and after, with intervals, and the range.

    After = relabelled items scored 1 when the run's pick equals the new gold (0 otherwise;
    a run without a pick on a relabelled item loses that item), excluded items removed.
    Sensitivity range over ``suspects``: dropped, or scored 1 for every run. Only items every
    run has take part (so the variants are paired item by item). The metric must be 0/1
    for relabelling; exclusions work with any metric.
    """
    ids, names, cells = _task_runs(store, task, runs)
    if metric is None:
        metric = str(task_metric(store, ids, task, need="any", items_only=True).metric)
    # items x runs matrix of item means (integer item keys), labelled with the item ids and
    # in item_id order, as a pivot of store.item_means would give it
    mat = store.item_matrices([(task, metric)], run_ids=ids).get((task, metric))
    if mat is None or mat.scores.size == 0:
        raise AnalysisError(f"task {task!r} has no item scores for metric {metric!r}")
    wide = pd.DataFrame(mat.scores, columns=[int(r) for r in mat.run_ids],
                        index=pd.Index(store.item_labels(task, mat.items), name="item_id")
                        ).sort_index()
    ids = [r for r in ids if r in wide.columns]
    wide = wide[ids].dropna()
    if wide.empty:
        raise AnalysisError(f"task {task!r}: no item is scored in every chosen run")
    items = list(wide.index)
    relabels = relabels if relabels is not None else pd.DataFrame(columns=["task", "item_id", "new_gold"])
    rel = relabels[relabels["task"] == task]
    rel_map = {str(i): g for i, g in zip(rel["item_id"], rel["new_gold"])}
    unknown = sorted(set(rel_map) - set(items))
    excl = {str(i) for i in (exclude or [])}
    sus = [str(i) for i in (suspects or []) if str(i) in set(items)]
    notes: list[str] = []
    if unknown:
        notes.append(f"{len(unknown)} relabelled item(s) not scored in every run were ignored: "
                     + ", ".join(unknown[:5]))
    binary = bool(np.isin(wide.to_numpy(), (0.0, 1.0)).all())
    if rel_map and not binary:
        raise AnalysisError(f"metric {metric!r} is not 0/1 on {task!r}: relabelling needs "
                            "right/wrong scores (exclusions still work)")
    picks = pick_matrix(store, task, ids) if rel_map else None
    consistency = []
    if picks is not None:
        for i, r in enumerate(ids):
            p = picks.picks[r].reindex(items)
            g = pd.Series(picks.gold, index=picks.item_ids).reindex(items)
            has = p.notna() & g.notna()
            agree = ((p[has] == g[has]).astype(float) == wide.loc[has[has].index, r]).mean() \
                if has.any() else float("nan")
            consistency.append({"run": names[r], "agreement": float(agree), "items": int(has.sum())})
            if has.any() and agree < 0.99:
                notes.append(f"{names[r]}: {metric} agrees with the stored pick on only "
                             f"{agree:.0%} of items (the pick is the raw log-likelihood choice, "
                             "acc's; acc_norm may choose another option): relabelled items are "
                             "scored from the pick")
    after = wide.copy()
    lost: dict[int, set[str]] = {r: set() for r in ids}
    for item, new in rel_map.items():
        if item not in after.index:
            continue
        for r in ids:
            p = picks.picks.at[item, r] if item in picks.picks.index else None
            if p is None:
                lost[r].add(item)
            else:
                after.at[item, r] = 1.0 if p == new else 0.0
    lost_any = set().union(*lost.values())
    keep_after = [i for i in items if i not in excl and i not in lost_any]
    if any(lost.values()):
        notes.append("items relabelled but without a stored pick in some run were left out "
                     "of 'after' for every run (to keep the runs paired)")
    variants = {"before": wide, "after": after.loc[keep_after]}
    if sus:
        variants["drop suspects"] = wide.drop(index=sus)
        if binary:
            allc = wide.copy()
            allc.loc[sus, :] = 1.0
            variants["suspects correct for all"] = allc
        else:
            notes.append(f"metric {metric!r} is not 0/1: 'suspects correct for all' is not "
                         "defined, so the range is 'before' to 'drop suspects'")
    board_rows, cmp_rows = [], []
    before_means = wide.mean()
    ref_id = resolve_run(store, ref) if ref is not None else int(before_means.idxmax())
    if ref_id not in ids:
        raise AnalysisError("the reference run has no scores on this task")
    for variant, frame in variants.items():
        if frame.empty:
            notes.append(f"'{variant}': no item left")
            continue
        # each run's column as a contiguous row (the arrays frame[r].to_numpy() gives)
        by_run = np.ascontiguousarray(frame[ids].to_numpy(dtype="float64").T)
        ref_x = by_run[ids.index(ref_id)]
        for r, x in zip(ids, by_run):
            iv = _interval(x, confidence)
            board_rows.append({"run_id": r, "run": names[r], "variant": variant, "n": int(x.size),
                               "score": iv.estimate, "low": iv.low, "high": iv.high,
                               "method": iv.method})
            if r != ref_id:
                d, lo, hi, meth = _paired(ref_x, x, confidence)
                cmp_rows.append({"run_id": r, "run": names[r], "ref_run": names[ref_id],
                                 "variant": variant, "n": int(x.size), "diff": d, "low": lo,
                                 "high": hi, "method": meth})
    return RescoreReport(task, metric, pd.DataFrame(board_rows, columns=list(BOARD_COLUMNS)),
                         pd.DataFrame(cmp_rows, columns=list(COMPARE_COLUMNS)), names[ref_id],
                         len([i for i in rel_map if i in set(items)]), len(excl & set(items)),
                         len(sus), pd.DataFrame(consistency, columns=["run", "agreement", "items"]),
                         notes)


# ------------------------------------------------------------------------------------------
# Contamination
# ------------------------------------------------------------------------------------------

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
    ids, names, cells = _task_runs(store, task, runs)
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
