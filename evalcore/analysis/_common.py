"""Shared constants and small helpers of the analysis layer (no statistics here).

Conventions used throughout
---------------------------
* Scores are per-item means over answers (``store.item_means`` / ``store.cell_stats``), so an
  item with K answers counts once; "binary" means every item mean is exactly 0 or 1.
* Differences are always B - A. "Points" are percentage points when every score lies in
  [0, 1] (difference x 100), otherwise raw metric units.
* Default metric per task (when none is asked for): one decision for every surface,
  ``metric_choice.task_metrics`` / ``task_metric``: the harness's primary metric (lm_eval's
  first ``metric_list`` entry, HELM's schema main metric, the Open LLM Leaderboard's ranked
  metric) as the protocols of every run of the store name it; when the runs asked about lack
  it, ``acc`` if present, else ``exact_match,strict-match``, else the first metric
  alphabetically, with the reason in the answer (``MetricChoice.reason``).
* Verdict rule (``compare``, ``analysis.verdicts``): with ``alpha = 1 - confidence`` and
  power 0.8, each row's interval and p-value come from one procedure (the p of the test the
  interval inverts; for 0/1 scores the larger of it and the exact McNemar p, the interval
  widened to 0 when the exact test does not reject), and
  - "different" iff the p-value the row calls adjusted (Holm or BH across tasks when
    several are compared; else the row's own p) is below alpha;
  - otherwise "underpowered" when the minimum detectable effect (MDE) exceeds
    ``mde_threshold`` (default 5 points for scores in [0, 1]; for other scales 5 % of the
    larger absolute mean of the two runs);
  - otherwise "no difference detected, and this design could have detected X points".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore import stats as st
from evalcore.stats import _interval_arrays as ia
from evalcore.errors import AnalysisError, StoreError
from evalcore.metrics import PREFERRED_METRICS, default_rule_metric, task_primary_metric

METHODS = ("wilson", "clopper-pearson", "bayes", "clt", "bootstrap", "clustered")
METHOD_LABELS = {
    "wilson": "Wilson score",
    "clopper-pearson": "Clopper-Pearson (exact)",
    "bayes": "Bayesian (Beta(1,1) posterior, equal-tailed)",
    "clt": "CLT (normal approximation, sd ddof=1)",
    "bootstrap": "Bootstrap percentile over items",
    "clustered": "Cluster-robust (Korn-Graubard for 0/1 scores, else t with G-1 df)",
    "reported": "Harness-reported stderr (no item-level data)",
}
BINARY_ONLY_METHODS = ("wilson", "clopper-pearson", "bayes")
ITEM_LEVEL_METHODS = ("bootstrap", "clustered")
AVERAGE_TASK = "__average__"
DEFAULT_POWER = 0.8

CELL_COLUMNS = ("run_id", "run", "task", "metric", "n", "score", "se", "low", "high", "method",
                "binary", "chance", "contains_chance", "reported", "reported_stderr",
                "audit_flag", "has_items", "direction")
AVERAGE_COLUMNS = ("run_id", "run", "n_tasks", "n_units", "score", "se", "low", "high", "kind",
                   "tasks", "left_out")
GROUP_COLUMNS = ("run_id", "run", "group", "parent", "depth", "metric", "n_tasks",
                 "n_tasks_group", "n", "score", "se", "low", "high", "source", "reported",
                 "reported_stderr", "recomputed", "recomputed_se", "weighting",
                 "weighting_note", "missing", "note")
TASK_NOTE_COLUMNS = ("task", "kind", "note")
TIER_COLUMNS = ("run_id", "run", "task", "best_run", "diff_vs_best", "p_raw", "p_holm",
                "indistinguishable_from_best", "n_shared")
RANK_COLUMNS = ("run_id", "run", "task", "rank", "rank_low", "rank_high")
PER_TASK_COLUMNS = ("task", "metric", "n", "score_a", "score_b", "diff", "se", "low", "high",
                    "se_unpaired", "correlation", "b", "c", "both", "neither", "p_exact", "p_midp",
                    "p_value", "p_interval", "test", "p_adjusted",
                    "adjustment", "mde", "verdict", "different", "better", "kind",
                    "points_scale", "sd_diff",
                    "se_iid", "se_clustered", "n_clusters", "interval_method", "method_reason",
                    "widened", "low_simultaneous", "high_simultaneous",
                    "mde_basis", "items_needed")
PROTOCOL_COLUMNS = ("scope", "setting", "value_a", "value_b")
# protocol_diff categories (store) that differ between any two models and are listed in
# ``Comparison.protocol_diff`` but not raised as warnings: the model itself, batch size,
# tokenizer details and the like.
BENIGN_PROTOCOL_CATEGORIES = ("model", "other")


# ---------------------------------------------------------------------------------------
# small shared helpers (no statistics here)
# ---------------------------------------------------------------------------------------

def default_metric(metrics, protocols=()) -> str:
    """The metric rule of ``evalcore.metrics`` over one collection of metrics, without a store.

    The harness's primary metric when one of ``protocols`` (task protocols, dicts) names one
    among ``metrics`` (``evalcore.metrics.task_primary_metric``), else the default rule:
    ``acc``, else ``exact_match,strict-match``, else the first in alphabetical order. The
    surfaces (leaderboard, compare, noise, items, repeats) decide through
    ``analysis.metric_choice.task_metrics``, which applies this rule to the protocols and
    metrics of every run of the store that has the task. Raises ``AnalysisError`` for an
    empty collection.
    """
    ms = sorted({str(m) for m in metrics if m is not None})
    if not ms:
        raise AnalysisError("no metric available")
    primary, _ = task_primary_metric(protocols or (), ms)
    return primary if primary is not None else str(default_rule_metric(ms))


def check_confidence(confidence: float) -> None:
    if not (0.0 < float(confidence) < 1.0):
        raise AnalysisError(f"confidence must be strictly between 0 and 1, got {confidence}")


def resolve_run(store, ref) -> int:
    """Run id from a name or id (``store.resolve_run``); an unknown run becomes an
    AnalysisError naming the known runs, while "store busy" stays a StoreError so callers
    (the CLI's exit code 4) can tell the two apart."""
    try:
        return int(store.resolve_run(ref))
    except StoreError as exc:
        if is_store_busy(exc):
            raise
        raise AnalysisError(str(exc)) from exc



def resolve_runs(store, refs, run_table: pd.DataFrame) -> list[int]:
    """``resolve_run`` of each ref, without a store query for the run ids and plain names
    in ``run_table`` (``store.runs()``, ordered by run id): an int that is a run id is that
    run; a text that is exactly one run's name and cannot mean an id (not digits, no ``#``/``id:``/``name:`` prefix, no
    surrounding spaces) resolves to that run, as ``store.resolve_run`` resolves it; every
    other ref goes to ``resolve_run``."""
    first: dict[str, int] = {}
    for rid, name in zip(run_table["run_id"].tolist(), run_table["name"].tolist()):
        first.setdefault(str(name), int(rid))
    ids = set(first.values())
    out = []
    for ref in refs:
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool) and int(ref) in ids:
            out.append(int(ref))
        elif isinstance(ref, str) and ref in first and ref == ref.strip() \
                and not (ref.isascii() and ref.isdigit()) \
                and not ref.startswith("#") and ref[:3].lower() != "id:" \
                and ref[:5].lower() != "name:":
            out.append(first[ref])
        else:
            out.append(resolve_run(store, ref))
    return out


def is_store_busy(exc: BaseException) -> bool:
    """True when a StoreError means "another process holds the store" (the store sets
    ``exc.busy``; the message is checked as a fallback)."""
    if getattr(exc, "busy", False):
        return True
    text = str(exc).lower()
    return "busy" in text or "locked" in text


def run_names(store) -> dict[int, str]:
    runs = store.runs()
    return {int(r): str(n) for r, n in zip(runs["run_id"], runs["name"])}


def fnum(x) -> float:
    """A Python float (NaN for None/NA)."""
    try:
        if x is None or pd.isna(x):
            return float("nan")
    except (TypeError, ValueError):
        pass
    return float(x)


def is_binary(values: np.ndarray) -> bool:
    v = np.asarray(values, dtype=float)
    return bool(v.size) and bool(np.all((v == 0.0) | (v == 1.0)))


def unit_scale(*arrays) -> bool:
    """True when every value lies in [0, 1] (differences are then shown in points x 100)."""
    for a in arrays:
        a = np.asarray(a, dtype=float)
        a = a[np.isfinite(a)]
        if a.size and (a.min() < 0.0 or a.max() > 1.0):
            return False
    return True


def group_rows(df: pd.DataFrame) -> np.ndarray:
    """Which rows of ``store.tasks()`` / ``store.summaries()`` are harness group rows
    (``is_group``; all False when the frame has no such column)."""
    if "is_group" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return df["is_group"].fillna(False).astype(bool).to_numpy()


def empty_frame(columns) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


def short_list(names, limit: int = 8) -> str:
    """A readable list: the first ``limit`` names and how many more."""
    names = list(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(map(str, names[:limit])) + more


def natural_key(item_id: str):
    """Sort key of an item id in natural order: numeric ids by value (2 before 10), before
    the others in text order."""
    s = str(item_id)
    return (0, int(s), s) if s.lstrip("-").isdigit() else (1, 0, s)


def sorted_items(ids) -> list[str]:
    """Item ids as text, in natural order (``natural_key``)."""
    return sorted((str(i) for i in ids), key=natural_key)


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values (``stats.adjust_pvalues``; NaNs stay NaN and do not count)."""
    return adjust_p_values(pvalues, "holm")


def adjust_p_values(pvalues, method: str) -> np.ndarray:
    """p-values adjusted across a family (``stats.adjust_pvalues``: "holm" or "bh"; NaNs stay
    NaN and do not count); an empty family stays empty."""
    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return p
    return np.asarray(st.adjust_pvalues(p, method=method), dtype=float)


# ---------------------------------------------------------------------------------------
# thin adapters to evalcore.stats (one place to follow its signatures)
# ---------------------------------------------------------------------------------------

def _proportion(method: str, successes: int, n: int, confidence: float):
    """(low, high) of a 0/1 score by a closed-form method (``stats.proportion_interval``)."""
    r = st.proportion_interval(int(successes), int(n), method, confidence)
    return float(r.low), float(r.high)


def proportion_bounds(method: str, successes: np.ndarray, n: np.ndarray,
                       confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """``_proportion``'s bounds for many cells at once: Wilson (modified), Clopper-Pearson
    and Bayes through ``stats._interval_arrays`` (bit-identical to the scalar functions;
    the modified Wilson array takes one n, so cells are grouped by n), others cell by cell."""
    k = np.asarray(successes, dtype=float)
    nn = np.asarray(n, dtype=float)
    low, high = np.full(k.size, np.nan), np.full(k.size, np.nan)
    if not k.size:
        return low, high
    if method in ("wilson", "clopper-pearson", "bayes"):
        if np.any(nn < 1) or np.any(k < 0) or np.any(k > nn) or np.any(k != np.round(k)) \
                or np.any(nn != np.round(nn)):
            raise AnalysisError("proportion intervals need whole counts 0 <= k <= n, n >= 1")
        alpha = 1.0 - confidence
        if method == "clopper-pearson":
            return ia.clopper_pearson_bounds(k, nn, alpha)
        if method == "bayes":
            return ia.bayes_bounds(k, nn, alpha)
        z = st.z_value(confidence)
        for m in np.unique(nn):
            at = nn == m
            low[at], high[at] = ia.modified_wilson_bounds(k[at], int(m), z, alpha)
        return low, high
    for i in range(k.size):
        low[i], high[i] = _proportion(method, int(k[i]), int(nn[i]), confidence)
    return low, high


def mde_of(n: int, sd_diff: float, alpha: float, power: float = DEFAULT_POWER) -> float:
    if not (np.isfinite(sd_diff) and n >= 1):
        return float("nan")
    if sd_diff <= 0:
        return 0.0
    return float(st.minimum_detectable_effect(int(n), sd_diff=float(sd_diff), alpha=alpha,
                                              power=power))


def chance_of(n_choices) -> float:
    k = fnum(n_choices)
    if not np.isfinite(k) or k < 2:
        return float("nan")
    return float(st.chance_level(int(k)))
