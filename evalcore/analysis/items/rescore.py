"""Re-scoring with corrected labels: every run before and after relabelling or excluding items,
and the sensitivity range over the suspects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import resolve_run
from evalcore.analysis.items.picks import (BIAS_NOTE, BOARD_COLUMNS, COMPARE_COLUMNS, norm_gold,
                                           pick_matrix, task_runs)
from evalcore.analysis.metric_choice import task_metric
from evalcore.errors import AnalysisError



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
    df["new_gold"] = [norm_gold(v) if v.strip() else None for v in df["new_gold"]]
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
    ids, names, cells = task_runs(store, task, runs)
    if metric is None:
        metric = str(task_metric(store, ids, task, need="any", items_only=True).metric)
    wide = _item_matrix(store, task, metric, ids)
    ids = [r for r in ids if r in wide.columns]
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
    consistency = (_pick_consistency(picks, ids, names, items, wide, metric, notes)
                   if picks is not None else [])
    after, lost_any = _relabelled(wide, rel_map, picks, ids)
    keep_after = [i for i in items if i not in excl and i not in lost_any]
    if lost_any:
        notes.append("items relabelled but without a stored pick in some run were left out "
                     "of 'after' for every run (to keep the runs paired)")
    variants = _variants(wide, after.loc[keep_after], sus, binary, metric, notes)
    ref_id = resolve_run(store, ref) if ref is not None else int(wide.mean().idxmax())
    if ref_id not in ids:
        raise AnalysisError("the reference run has no scores on this task")
    board_rows, cmp_rows = _variant_rows(variants, ids, names, ref_id, confidence, notes)
    return RescoreReport(task, metric, pd.DataFrame(board_rows, columns=list(BOARD_COLUMNS)),
                         pd.DataFrame(cmp_rows, columns=list(COMPARE_COLUMNS)), names[ref_id],
                         len([i for i in rel_map if i in set(items)]), len(excl & set(items)),
                         len(sus), pd.DataFrame(consistency, columns=["run", "agreement", "items"]),
                         notes)


def _item_matrix(store, task: str, metric: str, ids: list[int]) -> pd.DataFrame:
    """Items x runs of item means, indexed by item id in item-id order (a pivot of
    ``store.item_means`` read from integer item keys); only items every run has."""
    mat = store.item_matrices([(task, metric)], run_ids=ids).get((task, metric))
    if mat is None or mat.scores.size == 0:
        raise AnalysisError(f"task {task!r} has no item scores for metric {metric!r}")
    wide = pd.DataFrame(mat.scores, columns=[int(r) for r in mat.run_ids],
                        index=pd.Index(store.item_labels(task, mat.items), name="item_id")
                        ).sort_index()
    wide = wide[[r for r in ids if r in wide.columns]].dropna()
    if wide.empty:
        raise AnalysisError(f"task {task!r}: no item is scored in every chosen run")
    return wide


def _pick_consistency(picks, ids: list[int], names: dict[int, str], items: list[str],
                      wide: pd.DataFrame, metric: str, notes: list[str]) -> list[dict]:
    """Per run, the share of items whose score equals (pick == gold); a note for a run
    below 99% (its relabelled items are scored from the pick all the same)."""
    consistency = []
    for r in ids:
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
    return consistency


def _relabelled(wide: pd.DataFrame, rel_map: dict[str, str], picks, ids: list[int]
                ) -> tuple[pd.DataFrame, set[str]]:
    """The matrix with each relabelled item scored 1 where the run's pick is the new gold,
    and the relabelled items some run has no pick for (left out of 'after')."""
    after = wide.copy()
    lost: set[str] = set()
    for item, new in rel_map.items():
        if item not in after.index:
            continue
        for r in ids:
            p = picks.picks.at[item, r] if item in picks.picks.index else None
            if p is None:
                lost.add(item)
            else:
                after.at[item, r] = 1.0 if p == new else 0.0
    return after, lost


def _variants(wide: pd.DataFrame, after: pd.DataFrame, sus: list[str], binary: bool,
              metric: str, notes: list[str]) -> dict[str, pd.DataFrame]:
    """The VARIANTS that apply: before, after, and with suspects the two ends of the range."""
    variants = {"before": wide, "after": after}
    if sus:
        variants["drop suspects"] = wide.drop(index=sus)
        if binary:
            allc = wide.copy()
            allc.loc[sus, :] = 1.0
            variants["suspects correct for all"] = allc
        else:
            notes.append(f"metric {metric!r} is not 0/1: 'suspects correct for all' is not "
                         "defined, so the range is 'before' to 'drop suspects'")
    return variants


def _variant_rows(variants: dict[str, pd.DataFrame], ids: list[int], names: dict[int, str],
                  ref_id: int, confidence: float, notes: list[str]) -> tuple[list, list]:
    """BOARD_COLUMNS rows (each run's score per variant) and COMPARE_COLUMNS rows (each run
    minus the reference run, paired)."""
    board_rows, cmp_rows = [], []
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
    return board_rows, cmp_rows
