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

import re
from typing import Any

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.analysis._common import fnum, proportion_bounds
from evalcore.analysis.metric_choice import task_metrics
from evalcore.stats import _interval_arrays as ia

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


def cell_scores(store, run_ids: list[int], confidence: float) -> pd.DataFrame:
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
    low, high = ia.clt_bounds(score, se, z, bounded=False)
    if binary.any():
        low[binary], high[binary] = proportion_bounds("wilson", np.round(total[binary]),
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
        if key in have or bool(r.is_group) or not np.isfinite(fnum(r.value)):
            continue
        v, se = fnum(r.value), fnum(r.stderr)
        n = fnum(r.n)
        low_v, high_v = ia.clt_bounds(v, se, z, bounded=False)
        out.append((*key, int(n) if np.isfinite(n) else None, v, se, low_v, high_v, False, False))
    return pd.DataFrame(out, columns=["run_id", "task", "metric", "n", "score", "se", "low", "high",
                                      "binary", "has_items"])


def metric_family(metric: str) -> str:
    """``acc`` for acc/acc_norm, ``exact_match`` for exact_match,<any filter>: the metric name
    before lm_eval's ``,filter`` with a trailing ``_norm`` removed."""
    base = str(metric).split(",", 1)[0]
    return base[:-5] if base.endswith("_norm") else base


def default_metrics(store, cells: pd.DataFrame) -> dict[str, str]:
    """task -> the metric the leaderboard shows it on (``metric_choice.task_metrics``)."""
    chosen = task_metrics(store, sorted({int(r) for r in cells["run_id"]}),
                          sorted({str(t) for t in cells["task"]}), need="any")
    return {t: str(c.metric) for t, c in chosen.items()}


def points_scale(*values: float) -> float:
    """x100 when every value lies in [0, 1] (percentage points), else 1."""
    return 100.0 if all(0.0 <= v <= 1.0 for v in values if np.isfinite(v)) else 1.0


def fmt(x: float, scale: float) -> str:
    return f"{x * scale:.1f}" if scale == 100.0 else f"{x:.3g}"


def unit(scale: float) -> str:
    return "points" if scale == 100.0 else "units"


