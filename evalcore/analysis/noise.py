"""Noise beyond the items: protocol spread, training seeds, checkpoint series, item splits.

Groups come from what the store already holds (no new schema):

* **model identity** of a run: the tag ``model=NAME`` if set, else the run's model string.
* **seed**: the tag ``seed=N``, else a ``seed`` key in the model arguments
  (``model_args``), else a ``seed<N>`` token in the model name (``org/model-seed2``).
  lm_eval's own ``random_seed``/``numpy_seed``/``fewshot_seed`` are *evaluation* seeds
  (they pick few-shot examples), not training seeds, and are never read as one.
* **step**: the tag ``step=N``, else a ``step``/``checkpoint`` key in the model arguments,
  else a ``step<N>``/``global_step<N>``/``checkpoint-<N>``/``ckpt<N>``/``iter<N>`` token in
  the model revision (``model_args.revision``, e.g. Pythia's ``step143000`` or OLMo's
  ``stage1-step140000-tokens587B``) or in the model name.
* **configuration** of a seed group / **series** of a checkpoint run: the tag
  ``config=NAME`` if set, else the model identity with its seed and step tokens removed.

Then:

1. *protocol groups* (``protocol_sensitivity``): cells (run, metric) of one task whose runs
   share model identity, seed and step, in the metric family of the task's default metric
   (``acc`` with ``acc_norm``; ``exact_match,strict-match`` with
   ``exact_match,flexible-extract``), two or more of them. Each cell is one protocol.
2. *seed groups* (``seed_report``): runs with a seed, by (configuration, step, task), on
   the task's default metric; two or more seeds.
3. *checkpoint series* (``checkpoint_report``): runs with a step, by (series, seed, task).
4. *split consistency* (``split_report``): one run's item scores on one task.

Each score's interval: Wilson for 0/1 item scores, CLT (sd ddof=1) for continuous ones,
value -+ z * reported stderr for summary-only runs. "Points" are x100 for scores in [0, 1].
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import (_check_confidence, _empty, _fnum, _natural_key,
                                       _proportion_bounds, _resolve)
from evalcore.analysis.metric_choice import task_metric, task_metrics
from evalcore.errors import AnalysisError

SEED_TOKEN = re.compile(r"(?:^|(?<=[-_/.]))seed[-_=]?(\d+)(?=$|[-_/.])", re.IGNORECASE)
STEP_TOKEN = re.compile(r"(?:^|(?<=[-_/.]))(?:global[-_]?)?(?:step|ckpt|checkpoint|iter)[-_=]?(\d+)"
                        r"(?=$|[-_/.])", re.IGNORECASE)
DEFAULT_LAST_N = 5

RUN_GROUP_COLUMNS = ("run_id", "run", "model", "identity", "seed", "step", "config",
                     "seed_source", "step_source")
PROTOCOL_GROUP_COLUMNS = ("group", "model", "task", "metric_family", "n_protocols", "mean",
                          "range", "sd", "item_se", "range_points", "nearest_model",
                          "nearest_gap", "nearest_gap_points", "spread_exceeds_gap", "sentence")
PROTOCOL_CELL_COLUMNS = ("group", "run_id", "run", "metric", "protocol", "differs", "n",
                         "score", "se", "low", "high")
TASK_BAND_COLUMNS = ("task", "metric_family", "n_groups", "max_range", "max_range_points")
SEED_GROUP_COLUMNS = ("config", "step", "task", "metric", "k", "mean", "sd_observed",
                      "between_sd", "item_se", "seed_to_item_ratio", "between_var", "runs",
                      "sentence")
SEED_RUN_COLUMNS = ("config", "task", "metric", "seed", "run_id", "run", "n", "score", "se",
                    "low", "high")
SEED_COMPARISON_COLUMNS = ("task", "metric", "config_a", "config_b", "k_a", "k_b", "diff", "se",
                           "df", "low", "high", "p_value", "floored", "seeds_needed",
                           "seeds_needed_normal", "gap", "sentence")
CURVE_COLUMNS = ("series", "seed", "task", "metric", "step", "run_id", "run", "n", "score", "se",
                 "low", "high")
SNR_COLUMNS = ("task", "metric", "n_series", "signal", "noise", "snr", "n_models", "last_n",
               "signal_basis", "note")
DECISION_COLUMNS = ("task", "metric", "step", "n_series", "accuracy", "n_pairs", "agree", "ties")


def _tag_value(tags, key: str) -> str | None:
    for t in tags or []:
        t = str(t)
        if t.lower().startswith(key + "="):
            v = t.split("=", 1)[1].strip()
            if v:
                return v
    return None


def _int_or_none(text: Any) -> int | None:
    try:
        s = str(text).strip()
        return int(s) if re.fullmatch(r"[+-]?\d+", s) else None
    except (TypeError, ValueError):
        return None


def _model_args(protocol: dict) -> dict:
    ma = protocol.get("model_args") if isinstance(protocol, dict) else None
    if isinstance(ma, dict):
        return ma
    out: dict[str, str] = {}
    if isinstance(ma, str):  # "pretrained=x,revision=step1000"
        for part in ma.split(","):
            k, _, v = part.partition("=")
            if k.strip() and v.strip():
                out[k.strip()] = v.strip()
    return out


def _run_protocols(store, run_ids: list[int]) -> dict[int, dict]:
    """run_id -> run protocol (dict); ``store.run_protocols`` when the store has it (one
    query), else ``store.run_info`` per run."""
    if hasattr(store, "run_protocols"):
        df = store.run_protocols(run_ids)
        return {int(r): (p if isinstance(p, dict) else {}) for r, p in zip(df["run_id"], df["protocol"])}
    out = {}
    for rid in run_ids:
        info = store.run_info(rid) if hasattr(store, "run_info") else {}
        out[rid] = info.get("protocol") or {}
    return out


def run_groups(store) -> pd.DataFrame:
    """One row per run: identity, seed, step, configuration (module docstring).

    Columns: run_id, run, model, identity, seed (Int64), step (Int64), config,
    seed_source / step_source ("tag", "model_args", "revision", "model name" or None).
    """
    runs = store.runs()
    protocols = _run_protocols(store, [int(r) for r in runs["run_id"]])
    rows = []
    for r in runs.itertuples(index=False):
        rid = int(r.run_id)
        tags = list(r.tags) if r.tags is not None else []
        model = str(r.model) if r.model is not None and not pd.isna(r.model) else str(r.name)
        identity = _tag_value(tags, "model") or model
        protocol = protocols.get(rid) or {}
        margs = _model_args(protocol)
        seed, seed_src = _int_or_none(_tag_value(tags, "seed")), "tag"
        if seed is None:
            seed, seed_src = _int_or_none(margs.get("seed")), "model_args"
        if seed is None:
            m = SEED_TOKEN.search(identity)
            seed, seed_src = (int(m.group(1)), "model name") if m else (None, None)
        step, step_src = _int_or_none(_tag_value(tags, "step")), "tag"
        for key in ("step", "checkpoint"):
            if step is None:
                step, step_src = _int_or_none(margs.get(key)), "model_args"
        if step is None:
            rev = margs.get("revision") or protocol.get("model_revision")
            m = STEP_TOKEN.search(str(rev)) if rev else None
            step, step_src = (int(m.group(1)), "revision") if m else (None, None)
        if step is None:
            m = STEP_TOKEN.search(identity)
            step, step_src = (int(m.group(1)), "model name") if m else (None, None)
        base = STEP_TOKEN.sub("", SEED_TOKEN.sub("", identity)).strip("-_./ ") or identity
        base = re.sub(r"[-_.]{2,}", lambda mm: mm.group(0)[0], base)
        config = _tag_value(tags, "config") or base
        rows.append((rid, str(r.name), model, identity, seed, step, config,
                     seed_src if seed is not None else None, step_src if step is not None else None))
    df = pd.DataFrame(rows, columns=list(RUN_GROUP_COLUMNS))
    df["seed"] = df["seed"].astype("Int64")
    df["step"] = df["step"].astype("Int64")
    return df


# ---------------------------------------------------------------------------------------
# scores with intervals of every (run, task, metric) cell
# ---------------------------------------------------------------------------------------

def _all_cells(store, run_ids: list[int], confidence: float) -> pd.DataFrame:
    """run_id, task, metric, n, score, se, low, high, binary, has_items for every cell."""
    z = st.z_value(confidence)
    cs = store.cell_stats(run_ids)
    # every cell at once, the same arithmetic as one cell at a time: score = sum / n, SE from
    # the moments, Wilson (edge-modified) for 0/1 cells, score +- z SE otherwise
    n_all = np.asarray(cs["n"].to_numpy(dtype=float), dtype=float)
    keep = n_all >= 1
    n = n_all[keep].astype(np.int64)
    total = cs["sum"].to_numpy(dtype=float)[keep]
    sq = cs["sumsq"].to_numpy(dtype=float)[keep]
    score = total / n
    se = np.asarray(st.mean_se_from_moments(n, total, sq), dtype=float)
    binary = cs["binary"].to_numpy(dtype=bool)[keep] & (np.abs(sq - total) < 1e-9)
    low, high = score - z * se, score + z * se
    if binary.any():
        low[binary], high[binary] = _proportion_bounds("wilson", np.round(total[binary]),
                                                       n[binary], confidence)
    out = list(zip(cs["run_id"].to_numpy()[keep].astype(int).tolist(),
                   [str(t) for t in cs["task"].to_numpy()[keep].tolist()],
                   [str(m) for m in cs["metric"].to_numpy()[keep].tolist()],
                   n.tolist(), score.tolist(), se.tolist(), low.tolist(), high.tolist(),
                   binary.tolist(), [True] * int(keep.sum())))
    have = {(a, b, c) for a, b, c, *_ in out}
    summ = store.summaries(run_ids)
    for r in summ.itertuples(index=False):
        key = (int(r.run_id), str(r.task), str(r.metric))
        if key in have or bool(r.is_group) or not np.isfinite(_fnum(r.value)):
            continue
        v, se = _fnum(r.value), _fnum(r.stderr)
        n = _fnum(r.n)
        out.append((*key, int(n) if np.isfinite(n) else None, v, se, v - z * se, v + z * se,
                    False, False))
    return pd.DataFrame(out, columns=["run_id", "task", "metric", "n", "score", "se", "low", "high",
                                      "binary", "has_items"])


def metric_family(metric: str) -> str:
    """``acc`` for acc/acc_norm, ``exact_match`` for exact_match,<any filter>: the metric name
    before lm_eval's ``,filter`` with a trailing ``_norm`` removed."""
    base = str(metric).split(",", 1)[0]
    return base[:-5] if base.endswith("_norm") else base


def _default_metrics(store, cells: pd.DataFrame) -> dict[str, str]:
    """task -> the metric the leaderboard shows it on (``metric_choice.task_metrics``)."""
    chosen = task_metrics(store, sorted({int(r) for r in cells["run_id"]}),
                          sorted({str(t) for t in cells["task"]}), need="any")
    return {t: str(c.metric) for t, c in chosen.items()}


def _points(*values: float) -> float:
    """x100 when every value lies in [0, 1] (percentage points), else 1."""
    return 100.0 if all(0.0 <= v <= 1.0 for v in values if np.isfinite(v)) else 1.0


def _fmt(x: float, scale: float) -> str:
    return f"{x * scale:.1f}" if scale == 100.0 else f"{x:.3g}"


def _unit(scale: float) -> str:
    return "points" if scale == 100.0 else "units"


# ---------------------------------------------------------------------------------------
# 1. protocol sensitivity
# ---------------------------------------------------------------------------------------

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
    _check_confidence(confidence)
    rg = run_groups(store)
    empty = ProtocolReport(_empty(PROTOCOL_GROUP_COLUMNS), _empty(PROTOCOL_CELL_COLUMNS),
                           _empty(TASK_BAND_COLUMNS), confidence)
    if rg.empty:
        return empty
    cells = _all_cells(store, rg["run_id"].tolist(), confidence)
    if task is not None:
        cells = cells[cells["task"] == task]
        if cells.empty:
            raise AnalysisError(f"no run has task {task!r}")
    if cells.empty:
        return empty
    dm = _default_metrics(store, cells)
    cells = cells.merge(rg, on="run_id")
    cells["family"] = cells["metric"].map(metric_family)
    cells["key"] = list(zip(cells["identity"], cells["seed"].astype(object), cells["step"].astype(object)))
    groups, gcells = [], []
    gid = 0
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
            gid += 1
            g = g.sort_values(["run_id", "metric"], key=lambda s: s.map(str))
            ref = int(g["run_id"].iloc[0])
            multi_run = g["run_id"].nunique() > 1
            labels = [f"{r} [{m}]" if multi_run else m for r, m in zip(g["run"], g["metric"])]
            sp = st.protocol_spread(g["score"].to_numpy(float), labels, g["se"].to_numpy(float))
            identity = key[0]
            model_label = identity + (f" seed {key[1]}" if key[1] is not None and not pd.isna(key[1]) else "") \
                + (f" step {key[2]}" if key[2] is not None and not pd.isna(key[2]) else "")
            scale = _points(*g["score"])
            mine = float(means.get(identity, np.nan))
            others = means.drop(index=identity, errors="ignore")
            if np.isfinite(mine) and len(others):
                gaps = (others - mine)
                near = str(gaps.abs().idxmin())
                gap = float(gaps[near])
            else:
                near, gap = None, float("nan")
            exceeds = bool(np.isfinite(gap) and sp.exceeds(gap))
            sentence = (f"The protocol spread for {model_label} on {t} is {_fmt(sp.range, scale)} "
                        f"{_unit(scale)} over {sp.n_protocols} protocols")
            if near is not None:
                sentence += (f", {'larger' if exceeds else 'smaller'} than the "
                             f"{_fmt(abs(gap), scale)}-{_unit(scale)[:-1]} gap to {near}.")
            else:
                sentence += "; no other model has this task, so there is no gap to compare with."
            groups.append((gid, model_label, t, fam, sp.n_protocols, sp.mean, sp.range, sp.sd,
                           sp.item_se, sp.range * scale if scale == 100.0 else float("nan"), near,
                           gap, gap * scale if scale == 100.0 else float("nan"), exceeds, sentence))
            for r, lab in zip(g.itertuples(index=False), labels):
                gcells.append((gid, int(r.run_id), str(r.run), str(r.metric), lab,
                               _differs(store, ref, int(r.run_id), t), r.n, float(r.score),
                               float(r.se), float(r.low), float(r.high)))
    gdf = pd.DataFrame(groups, columns=list(PROTOCOL_GROUP_COLUMNS)) if groups else _empty(PROTOCOL_GROUP_COLUMNS)
    cdf = pd.DataFrame(gcells, columns=list(PROTOCOL_CELL_COLUMNS)) if gcells else _empty(PROTOCOL_CELL_COLUMNS)
    bands = []
    for (t, fam), g in gdf.groupby(["task", "metric_family"]) if len(gdf) else []:
        bands.append((t, fam, len(g), float(g["range"].max()), float(g["range_points"].max())))
    bdf = pd.DataFrame(bands, columns=list(TASK_BAND_COLUMNS)) if bands else _empty(TASK_BAND_COLUMNS)
    return ProtocolReport(gdf, cdf, bdf, confidence)


# ---------------------------------------------------------------------------------------
# 2. training seeds
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SeedReport:
    """groups: between-seed variance per (configuration, step, task) (SEED_GROUP_COLUMNS);
    runs: each seed's score with its interval (SEED_RUN_COLUMNS); comparisons: every pair
    of configurations on a task, the seed as a random effect (SEED_COMPARISON_COLUMNS);
    ``gap``: the gap (in score units) the seeds-needed column plans for, None = the observed
    difference of each pair."""

    groups: pd.DataFrame
    runs: pd.DataFrame
    comparisons: pd.DataFrame
    confidence: float
    gap: float | None
    how_to: str = ("Upload two or more runs of one configuration trained with different seeds, "
                   "or tag them seed=1, seed=2 (and config=NAME when the model names differ "
                   "by more than the seed); a model name ending in -seed2 is read as seed 2.")


def seed_report(store, *, task: str | None = None, confidence: float = 0.95,
                gap: float | None = None, alpha: float = 0.05, power: float = 0.8) -> SeedReport:
    """Seed groups, their between-seed SD against the item SE, and pairwise comparisons.

    Per group: ``stats.seed_variance`` of the seed scores with their item SEs. Per pair of
    configurations with >= 2 seeds each on a task: ``stats.seed_comparison`` (B - A, B the
    later configuration in name order) and ``stats.seeds_needed`` for ``gap`` (score units;
    default: the observed |diff|) with the pooled run variance of the two groups.
    """
    _check_confidence(confidence)
    if gap is not None and not (np.isfinite(gap) and gap > 0):
        raise AnalysisError(f"gap must be a positive number, got {gap!r}")
    rg = run_groups(store)
    seeded = rg[rg["seed"].notna()]
    empty = SeedReport(_empty(SEED_GROUP_COLUMNS), _empty(SEED_RUN_COLUMNS),
                       _empty(SEED_COMPARISON_COLUMNS), confidence, gap)
    if seeded.empty:
        return empty
    cells = _all_cells(store, seeded["run_id"].tolist(), confidence)
    if task is not None:
        cells = cells[cells["task"] == task]
    if cells.empty:
        return empty
    dm = _default_metrics(store, cells)
    cells = cells[[dm[t] == m for t, m in zip(cells["task"], cells["metric"])]].merge(seeded, on="run_id")
    cells["step_key"] = cells["step"].fillna(-1).astype(int)     # -1: no step
    groups, runs, fits = [], [], {}
    for (cfg, stp, t), g in cells.groupby(["config", "step_key", "task"], sort=True):
        stp = None if int(stp) < 0 else int(stp)
        g = g.sort_values("seed")
        for r in g.itertuples(index=False):
            runs.append((cfg, t, str(r.metric), int(r.seed), int(r.run_id), str(r.run), r.n,
                         float(r.score), float(r.se), float(r.low), float(r.high)))
        if g["seed"].nunique() < 2:
            continue
        sv = st.seed_variance(g["score"].to_numpy(float), g["se"].to_numpy(float))
        fits[(cfg, stp, t)] = (g, sv)
        scale = _points(*g["score"])
        step_txt = "" if stp is None else f" at step {stp}"
        if np.isfinite(sv.seed_to_item_ratio) and sv.between_var <= 0:
            sentence = (f"Across {sv.k} seeds, {cfg}{step_txt} on {t} spreads no more than item "
                        f"noise alone would make it (SD of the seed scores "
                        f"{_fmt(sv.sd_observed, scale)}, item SE of one run "
                        f"{_fmt(sv.item_se, scale)} {_unit(scale)}): no seed effect is visible "
                        f"with {sv.k} seeds.")
        elif np.isfinite(sv.seed_to_item_ratio):
            cmp_txt = ("larger than" if sv.between_sd > sv.item_se else "smaller than")
            sentence = (f"Across {sv.k} seeds, {cfg}{step_txt} on {t} moves by an SD of "
                        f"{_fmt(sv.between_sd, scale)} {_unit(scale)} beyond item noise, "
                        f"{cmp_txt} the item SE of one run ({_fmt(sv.item_se, scale)}).")
        else:
            sentence = (f"Across {sv.k} seeds, {cfg}{step_txt} on {t} has an SD of "
                        f"{_fmt(sv.sd_observed, scale)} {_unit(scale)} (no item SE known, so "
                        "seed and item noise cannot be told apart).")
        groups.append((cfg, stp, t, dm[t], sv.k,
                       sv.mean, sv.sd_observed, sv.between_sd, sv.item_se, sv.seed_to_item_ratio,
                       sv.between_var, ", ".join(g["run"].astype(str)), sentence))
    comps = []
    keys = sorted(fits, key=lambda k: (k[2], str(k[1]), k[0]))
    for i, ka in enumerate(keys):
        for kb in keys[i + 1:]:
            if ka[2] != kb[2] or ka[1] != kb[1]:
                continue
            (ga, va), (gb, vb) = fits[ka], fits[kb]
            c = st.seed_comparison(ga["score"].to_numpy(float), gb["score"].to_numpy(float),
                                   ga["se"].to_numpy(float), gb["se"].to_numpy(float), confidence)
            want = gap if gap is not None else abs(c.diff)
            between = 0.5 * (max(va.between_var, 0.0) + max(vb.between_var, 0.0))
            item = 0.5 * ((va.item_var if np.isfinite(va.item_var) else 0.0)
                          + (vb.item_var if np.isfinite(vb.item_var) else 0.0))
            need = (st.seeds_needed(want, between, item, alpha, power)
                    if want > 0 and np.isfinite(c.low) else None)
            scale = _points(*ga["score"], *gb["score"])
            verdict = ("excludes 0" if c.low > 0 or c.high < 0 else "includes 0"
                       if np.isfinite(c.low) else "cannot be computed (no spread between seeds and "
                       "no item SE: the noise is unknown, not zero)")
            need_txt = ("" if need is None else
                        f" To detect a {_fmt(want, scale)}-{_unit(scale)[:-1]} gap with "
                        f"{power:.0%} power, train "
                        + (f"{need.seeds} seeds per configuration." if need.seeds is not None
                           else f"more than {st.seeds.MAX_SEEDS} seeds per configuration."))
            ci_txt = (f", {c.confidence:.0%} CI [{_fmt(c.low, scale)}, {_fmt(c.high, scale)}] "
                      f"(df {c.df:.1f}); the interval {verdict}." if np.isfinite(c.low)
                      else f"; the interval {verdict}.")
            sentence = (f"{kb[0]} - {ka[0]} on {ka[2]}: {_fmt(c.diff, scale)} {_unit(scale)}"
                        f"{ci_txt}{need_txt}")
            comps.append((ka[2], dm[ka[2]], ka[0], kb[0], va.k, vb.k, c.diff, c.se, c.df, c.low,
                          c.high, c.p_value, ", ".join(n for n, f in zip((ka[0], kb[0]), c.floored) if f),
                          None if need is None else need.seeds,
                          None if need is None else need.seeds_normal, want, sentence))
    mk = lambda rows, cols: pd.DataFrame(rows, columns=list(cols)) if rows else _empty(cols)  # noqa: E731
    return SeedReport(mk(groups, SEED_GROUP_COLUMNS), mk(runs, SEED_RUN_COLUMNS),
                      mk(comps, SEED_COMPARISON_COLUMNS), confidence, gap)


# ---------------------------------------------------------------------------------------
# 3. checkpoint series
# ---------------------------------------------------------------------------------------

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
    _check_confidence(confidence)
    if last_n is not None and int(last_n) < 2:
        raise AnalysisError("last_n must be at least 2")
    rg = run_groups(store)
    stepped = rg[rg["step"].notna()]
    empty = CheckpointReport(_empty(CURVE_COLUMNS), _empty(SNR_COLUMNS), _empty(DECISION_COLUMNS),
                             confidence, last_n)
    if stepped.empty:
        return empty
    all_cells = _all_cells(store, rg["run_id"].tolist(), confidence)
    if task is not None:
        all_cells = all_cells[all_cells["task"] == task]
    if all_cells.empty:
        return empty
    dm = _default_metrics(store, all_cells)
    on_default = all_cells[[dm[t] == m for t, m in zip(all_cells["task"], all_cells["metric"])]]
    cells = on_default.merge(stepped, on="run_id")
    cells["seed_key"] = cells["seed"].fillna(-1).astype(int)     # -1: no seed
    curve, snr_rows, dec_rows = [], [], []
    for t in sorted(cells["task"].unique()):
        ct = cells[cells["task"] == t]
        series: dict[str, pd.DataFrame] = {}
        for (cfg, sd), g in ct.groupby(["config", "seed_key"], sort=True):
            sd = None if int(sd) < 0 else int(sd)
            name = cfg if sd is None else f"{cfg} seed {sd}"
            g = g.sort_values(["step", "run_id"]).drop_duplicates("step", keep="last")
            series[name] = g
            for r in g.itertuples(index=False):
                curve.append((name, sd, t, dm[t],
                              int(r.step), int(r.run_id), str(r.run), r.n, float(r.score),
                              float(r.se), float(r.low), float(r.high)))
        usable = {k: g for k, g in series.items() if len(g) >= 2}
        if not usable:
            snr_rows.append((t, dm[t], len(series), *[float("nan")] * 3, 0, 0, None,
                             "every series has a single checkpoint: no step-to-step noise"))
            continue
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
        note = ""
        try:
            res = (st.series_signal_to_noise(scores, last_n=n_used) if len(usable) >= 2 else
                   st.signal_to_noise(finals, scores, last_n=n_used))
            snr_rows.append((t, dm[t], len(usable), res.signal, res.noise, res.snr, res.n_models,
                             res.last_n, basis, note))
        except st.StatsInputError as exc:
            snr_rows.append((t, dm[t], len(usable), float("nan"), float("nan"), float("nan"),
                             len(finals), n_used, basis, str(exc)))
        if len(usable) >= 2:
            final_by = {k: float(g["score"].iloc[-1]) for k, g in usable.items()}
            last_step = {k: int(g["step"].iloc[-1]) for k, g in usable.items()}
            steps = sorted({int(s) for g in usable.values() for s in g["step"]})
            for s in steps:
                have = [k for k, g in usable.items() if s in set(g["step"].astype(int)) and s < last_step[k]]
                if len(have) < 2:
                    continue
                early = [float(usable[k].loc[usable[k]["step"].astype(int) == s, "score"].iloc[0]) for k in have]
                da = st.decision_accuracy(early, [final_by[k] for k in have])
                dec_rows.append((t, dm[t], s, len(have), da.accuracy, da.n_pairs, da.agree, da.ties))
    mk = lambda rows, cols: pd.DataFrame(rows, columns=list(cols)) if rows else _empty(cols)  # noqa: E731
    return CheckpointReport(mk(curve, CURVE_COLUMNS), mk(snr_rows, SNR_COLUMNS),
                            mk(dec_rows, DECISION_COLUMNS), confidence, last_n)


# ---------------------------------------------------------------------------------------
# 4. split consistency
# ---------------------------------------------------------------------------------------

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
        order = sorted(range(len(ids)), key=lambda i: _natural_key(ids[i]))
        cluster = np.asarray(p.cluster)[order]
        clusters = (np.array(store.label_texts(task, cluster), dtype=object)
                    if bool((cluster >= 0).any()) else None)
        return np.asarray(p.score_a, dtype=float)[order], clusters
    im = store.item_means([rid], task=task)
    g = im[im["metric"] == metric].copy()
    item_ids = g["item_id"].tolist()
    g = g.iloc[sorted(range(len(g)), key=lambda i: _natural_key(item_ids[i]))]
    clusters = g["cluster"].to_numpy(object) if g["cluster"].notna().any() else None
    return g["score"].to_numpy(float), clusters


def split_report(store, run, task: str, metric: str | None = None, *, k: int = 10,
                 repetitions: int = 200, seed: int = 0) -> SplitReport:
    """``stats.split_consistency`` of one run's item scores on one task (items in natural
    item-id order, the run's clusters when it has them). k is lowered to n // 10 (at least
    2) when the task has fewer than 10 k items."""
    rid = _resolve(store, run)
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


# ---------------------------------------------------------------------------------------
# all four
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NoiseReport:
    """The four sections together (the CLI's ``noise`` command)."""

    protocols: ProtocolReport
    seeds: SeedReport
    checkpoints: CheckpointReport
    splits: SplitReport | None = None
    runs: pd.DataFrame = field(default_factory=lambda: _empty(RUN_GROUP_COLUMNS))


def noise_report(store, *, task: str | None = None, confidence: float = 0.95, gap: float | None = None,
          last_n: int | None = None, split_run=None, split_task: str | None = None,
          k: int = 10, repetitions: int = 200, seed: int = 0) -> NoiseReport:
    """``protocol_sensitivity``, ``seed_report``, ``checkpoint_report`` and (with
    ``split_run``) ``split_report`` (on ``split_task`` or ``task``)."""
    splits = None
    if split_run is not None:
        t = split_task or task
        if t is None:
            raise AnalysisError("split consistency needs a task")
        splits = split_report(store, split_run, t, k=k, repetitions=repetitions, seed=seed)
    return NoiseReport(protocol_sensitivity(store, task=task, confidence=confidence),
                       seed_report(store, task=task, confidence=confidence, gap=gap),
                       checkpoint_report(store, task=task, confidence=confidence, last_n=last_n),
                       splits, run_groups(store))
