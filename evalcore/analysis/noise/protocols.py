"""Protocol sensitivity: the spread of one model's score over the protocols it was measured with, beside the gaps between models.

Groups and cell scores: ``evalcore.analysis.noise.groups`` (its docstring has the rules)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import check_confidence, empty_frame
from evalcore.analysis.noise.groups import (PROTOCOL_CELL_COLUMNS, PROTOCOL_GROUP_COLUMNS,
                                            TASK_BAND_COLUMNS, cell_scores, default_metrics, fmt,
                                            metric_family, points_scale, run_groups, unit)
from evalcore.errors import AnalysisError


@dataclass(frozen=True)
class ProtocolReport:
    """groups: one row per protocol group (PROTOCOL_GROUP_COLUMNS); cells: each protocol's
    score with its interval (PROTOCOL_CELL_COLUMNS); task_bands: per task the largest
    protocol range known (TASK_BAND_COLUMNS), for a leaderboard band; how_to: what to upload
    or tag when there is no group."""

    groups: pd.DataFrame
    cells: pd.DataFrame
    task_bands: pd.DataFrame
    confidence: float
    how_to: str = ("Upload runs of one model scored with different prompt templates, few-shot "
                   "counts, chat template on/off or answer filters (or tag them "
                   "model=NAME so they group); a run with acc and acc_norm, or strict and "
                   "flexible extraction, forms a group by itself.")


def _differs(store, ref: int, rid: int, task: str) -> str:
    if ref == rid:
        return ""
    diff = store.protocol_diff(ref, rid, task)
    diff = diff[~diff["category"].isin(("model",))]
    diff = diff[~diff["setting"].isin(("metrics",))]
    parts = [f"{s}: {a} -> {b}" for s, a, b in zip(diff["setting"], diff["value_a"], diff["value_b"])]
    return "; ".join(parts[:6]) + (f"; and {len(parts) - 6} more" if len(parts) > 6 else "")


def protocol_sensitivity(store, *, task: str | None = None,
                         confidence: float = 0.95) -> ProtocolReport:
    """Protocol groups with their spread beside the gaps between models (module docstring).

    The gap to another model is the difference of the two models' mean scores on the
    task's default metric (each averaged over its runs with that metric); the nearest model
    is the one with the smallest gap. ``spread_exceeds_gap``: range > |nearest gap|.
    """
    check_confidence(confidence)
    rg = run_groups(store)
    empty = ProtocolReport(empty_frame(PROTOCOL_GROUP_COLUMNS), empty_frame(PROTOCOL_CELL_COLUMNS),
                           empty_frame(TASK_BAND_COLUMNS), confidence)
    if rg.empty:
        return empty
    cells = cell_scores(store, rg["run_id"].tolist(), confidence)
    if task is not None:
        cells = cells[cells["task"] == task]
        if cells.empty:
            raise AnalysisError(f"no run has task {task!r}")
    if cells.empty:
        return empty
    dm = default_metrics(store, cells)
    cells = cells.merge(rg, on="run_id")
    cells["family"] = cells["metric"].map(metric_family)
    cells["key"] = list(zip(cells["identity"], cells["seed"].astype(object), cells["step"].astype(object)))
    groups, gcells = [], []
    # tasks with a group: a key with two or more cells of the task's default metric family
    # (counted in one pass; the loop below skips the other tasks, which form no group)
    fam_of = {t: metric_family(m) for t, m in dm.items()}
    n_cells = Counter((t, k) for t, f, k in zip(cells["task"], cells["family"], cells["key"])
                      if f == fam_of.get(t))
    grouped = {t for (t, _), c in n_cells.items() if c >= 2}
    for t in sorted(cells["task"].unique()):
        if t not in grouped:
            continue
        ct = cells[cells["task"] == t]
        fam = metric_family(dm[t])
        ct = ct[ct["family"] == fam]
        on_default = ct[ct["metric"] == dm[t]]
        means = on_default.groupby("identity")["score"].mean()
        # only keys with two or more cells form a group (most keys of a big store have one:
        # dropping them first spares a pandas group per cell)
        ct = ct[ct["key"].map(ct["key"].value_counts()) >= 2]
        for key, g in ct.groupby("key", sort=True):
            row, rows = _group(store, len(groups) + 1, t, fam, key, g, means)
            groups.append(row)
            gcells += rows
    gdf = pd.DataFrame(groups, columns=list(PROTOCOL_GROUP_COLUMNS)) if groups else empty_frame(PROTOCOL_GROUP_COLUMNS)
    cdf = pd.DataFrame(gcells, columns=list(PROTOCOL_CELL_COLUMNS)) if gcells else empty_frame(PROTOCOL_CELL_COLUMNS)
    bands = []
    for (t, fam), g in gdf.groupby(["task", "metric_family"]) if len(gdf) else []:
        bands.append((t, fam, len(g), float(g["range"].max()), float(g["range_points"].max())))
    bdf = pd.DataFrame(bands, columns=list(TASK_BAND_COLUMNS)) if bands else empty_frame(TASK_BAND_COLUMNS)
    return ProtocolReport(gdf, cdf, bdf, confidence)


def _group(store, gid: int, t: str, fam: str, key: tuple, g: pd.DataFrame,
           means: pd.Series) -> tuple[tuple, list[tuple]]:
    """One protocol group of task ``t``: its PROTOCOL_GROUP_COLUMNS row (spread, nearest
    model, sentence) and its cells' PROTOCOL_CELL_COLUMNS rows."""
    g = g.sort_values(["run_id", "metric"], key=lambda s: s.map(str))
    ref = int(g["run_id"].iloc[0])
    multi_run = g["run_id"].nunique() > 1
    labels = [f"{r} [{m}]" if multi_run else m for r, m in zip(g["run"], g["metric"])]
    sp = st.protocol_spread(g["score"].to_numpy(float), labels, g["se"].to_numpy(float))
    identity = key[0]
    model_label = identity + (f" seed {key[1]}" if key[1] is not None and not pd.isna(key[1]) else "") \
        + (f" step {key[2]}" if key[2] is not None and not pd.isna(key[2]) else "")
    scale = points_scale(*g["score"])
    mine = float(means.get(identity, np.nan))
    others = means.drop(index=identity, errors="ignore")
    if np.isfinite(mine) and len(others):
        gaps = (others - mine)
        near = str(gaps.abs().idxmin())
        gap = float(gaps[near])
    else:
        near, gap = None, float("nan")
    exceeds = bool(np.isfinite(gap) and sp.exceeds(gap))
    sentence = (f"The protocol spread for {model_label} on {t} is {fmt(sp.range, scale)} "
                f"{unit(scale)} over {sp.n_protocols} protocols")
    if near is not None:
        sentence += (f", {'larger' if exceeds else 'smaller'} than the "
                     f"{fmt(abs(gap), scale)}-{unit(scale)[:-1]} gap to {near}.")
    else:
        sentence += "; no other model has this task, so there is no gap to compare with."
    row = (gid, model_label, t, fam, sp.n_protocols, sp.mean, sp.range, sp.sd, sp.item_se,
           sp.range * scale if scale == 100.0 else float("nan"), near, gap,
           gap * scale if scale == 100.0 else float("nan"), exceeds, sentence)
    cells = [(gid, int(r.run_id), str(r.run), str(r.metric), lab,
              _differs(store, ref, int(r.run_id), t), r.n, float(r.score), float(r.se),
              float(r.low), float(r.high)) for r, lab in zip(g.itertuples(index=False), labels)]
    return row, cells
