"""Checkpoint series: learning curves, signal-to-noise ratio and decision accuracy (Heineman et al. 2025).

Groups and cell scores: ``evalcore.analysis.noise.groups`` (its docstring has the rules)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import check_confidence, empty_frame
from evalcore.analysis.noise.groups import (CURVE_COLUMNS, DECISION_COLUMNS, DEFAULT_LAST_N,
                                            SNR_COLUMNS, cell_scores, default_metrics,
                                            run_groups)
from evalcore.errors import AnalysisError


@dataclass(frozen=True)
class CheckpointReport:
    """curve: every checkpoint's score with its interval (CURVE_COLUMNS); snr: signal,
    noise and SNR per task (SNR_COLUMNS); decisions: decision accuracy per task and early
    step (DECISION_COLUMNS)."""

    curve: pd.DataFrame
    snr: pd.DataFrame
    decisions: pd.DataFrame
    confidence: float
    last_n: int | None
    how_to: str = ("Upload runs of intermediate checkpoints of one training run (model "
                   "revision step1000, a model name ending in -step1000, or tag them "
                   "step=1000), two or more series for the signal and decision accuracy.")


def _default_last_n(n_checkpoints: int) -> int:
    """min(5, ceil(n/2)), at least 2: the late half of a short series, where the curve has
    flattened (Heineman et al. use the last 5 of long series)."""
    return max(2, min(DEFAULT_LAST_N, math.ceil(n_checkpoints / 2)))


def checkpoint_report(store, *, task: str | None = None, confidence: float = 0.95,
                      last_n: int | None = None) -> CheckpointReport:
    """Learning curves, signal-to-noise ratio and decision accuracy (Heineman et al. 2025).

    Per task (default metric): a series is the runs of one (series, seed) ordered by step;
    the last ``last_n`` checkpoints of each (default ``_default_last_n`` of the shortest
    series) enter the noise. With >= 2 series, the reference script of Heineman et al.
    (``stats.series_signal_to_noise``): signal = relative dispersion of each series' mean
    over its last checkpoints, noise = relative SD of those checkpoints of all series
    pooled. With one series: noise = its relative SD over its last checkpoints, signal =
    relative dispersion of its final checkpoint and every other model's score on the task
    (one per model identity, mean over its runs). ``signal_basis`` says which. Decision
    accuracy at step s: over the series having step s, the share of pairs ordered as at
    their final checkpoints.
    """
    check_confidence(confidence)
    if last_n is not None and int(last_n) < 2:
        raise AnalysisError("last_n must be at least 2")
    rg = run_groups(store)
    stepped = rg[rg["step"].notna()]
    empty = CheckpointReport(empty_frame(CURVE_COLUMNS), empty_frame(SNR_COLUMNS), empty_frame(DECISION_COLUMNS),
                             confidence, last_n)
    if stepped.empty:
        return empty
    all_cells = cell_scores(store, rg["run_id"].tolist(), confidence)
    if task is not None:
        all_cells = all_cells[all_cells["task"] == task]
    if all_cells.empty:
        return empty
    dm = default_metrics(store, all_cells)
    on_default = all_cells[[dm[t] == m for t, m in zip(all_cells["task"], all_cells["metric"])]]
    cells = on_default.merge(stepped, on="run_id")
    cells["seed_key"] = cells["seed"].fillna(-1).astype(int)     # -1: no seed
    curve, snr_rows, dec_rows = [], [], []
    for t in sorted(cells["task"].unique()):
        series = _series(cells[cells["task"] == t], t, dm[t], curve)
        usable = {k: g for k, g in series.items() if len(g) >= 2}
        if not usable:
            snr_rows.append((t, dm[t], len(series), *[float("nan")] * 3, 0, 0, None,
                             "every series has a single checkpoint: no step-to-step noise"))
            continue
        snr_rows.append(_snr_row(t, dm[t], usable, last_n, stepped, on_default, rg))
        if len(usable) >= 2:
            dec_rows += _decisions(t, dm[t], usable)
    mk = lambda rows, cols: pd.DataFrame(rows, columns=list(cols)) if rows else empty_frame(cols)  # noqa: E731
    return CheckpointReport(mk(curve, CURVE_COLUMNS), mk(snr_rows, SNR_COLUMNS),
                            mk(dec_rows, DECISION_COLUMNS), confidence, last_n)


def _series(ct: pd.DataFrame, t: str, metric: str, curve: list) -> dict[str, pd.DataFrame]:
    """The checkpoint series of one task, {name: rows ordered by step (one per step)}; each
    checkpoint's CURVE_COLUMNS row is appended to ``curve``."""
    series: dict[str, pd.DataFrame] = {}
    for (cfg, sd), g in ct.groupby(["config", "seed_key"], sort=True):
        sd = None if int(sd) < 0 else int(sd)
        name = cfg if sd is None else f"{cfg} seed {sd}"
        g = g.sort_values(["step", "run_id"]).drop_duplicates("step", keep="last")
        series[name] = g
        for r in g.itertuples(index=False):
            curve.append((name, sd, t, metric, int(r.step), int(r.run_id), str(r.run), r.n,
                          float(r.score), float(r.se), float(r.low), float(r.high)))
    return series


def _snr_row(t: str, metric: str, usable: dict[str, pd.DataFrame], last_n: int | None,
             stepped: pd.DataFrame, on_default: pd.DataFrame, rg: pd.DataFrame) -> tuple:
    """Signal, noise and SNR of one task's series with two or more checkpoints (SNR_COLUMNS;
    ``checkpoint_report`` says which signal)."""
    n_used = int(last_n) if last_n is not None else _default_last_n(min(len(g) for g in usable.values()))
    scores = [g["score"].to_numpy(float) for g in usable.values()]
    finals = [float(g["score"].iloc[-1]) for g in usable.values()]
    basis = ("mean of each series' last checkpoints; noise pooled over the series "
             "(Heineman et al. reference script)")
    if len(finals) < 2:
        stepped_ids = set(stepped["identity"])
        others = on_default[on_default["task"] == t].merge(rg, on="run_id")
        others = others[~others["identity"].isin(stepped_ids)]
        finals += [float(v) for v in others.groupby("identity")["score"].mean()]
        basis = "final checkpoint and the other models on the task"
    try:
        res = (st.series_signal_to_noise(scores, last_n=n_used) if len(usable) >= 2 else
               st.signal_to_noise(finals, scores, last_n=n_used))
        return (t, metric, len(usable), res.signal, res.noise, res.snr, res.n_models,
                res.last_n, basis, "")
    except st.StatsInputError as exc:
        return (t, metric, len(usable), float("nan"), float("nan"), float("nan"),
                len(finals), n_used, basis, str(exc))


def _decisions(t: str, metric: str, usable: dict[str, pd.DataFrame]) -> list[tuple]:
    """Decision accuracy at each step two or more series share before their last
    (DECISION_COLUMNS rows): the share of pairs ordered as at their final checkpoints."""
    rows = []
    final_by = {k: float(g["score"].iloc[-1]) for k, g in usable.items()}
    last_step = {k: int(g["step"].iloc[-1]) for k, g in usable.items()}
    steps = sorted({int(s) for g in usable.values() for s in g["step"]})
    for s in steps:
        have = [k for k, g in usable.items() if s in set(g["step"].astype(int)) and s < last_step[k]]
        if len(have) < 2:
            continue
        early = [float(usable[k].loc[usable[k]["step"].astype(int) == s, "score"].iloc[0]) for k in have]
        da = st.decision_accuracy(early, [final_by[k] for k in have])
        rows.append((t, metric, s, len(have), da.accuracy, da.n_pairs, da.agree, da.ties))
    return rows
