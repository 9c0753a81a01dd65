"""Analysis layer: joins store queries to stats for the pages and the CLI.

CONTRACT (stub written by the lead; the analysis owner fills in the bodies and may add
fields/functions, but must not rename or remove what is here without telling the page owner).
Every function takes a ``Store`` and plain values, returns a frozen dataclass whose tables are
pandas DataFrames with the documented columns, and raises ``AnalysisError``/``StoreError``
with a human message for impossible requests (no shared items, unknown run, ...).
Runs may be given by name or id (``store.resolve_run``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

METHODS = ("wilson", "clopper-pearson", "bayes", "clt", "bootstrap", "clustered")
METHOD_LABELS = {
    "wilson": "Wilson score",
    "clopper-pearson": "Clopper-Pearson (exact)",
    "bayes": "Bayesian (Beta(1,1) posterior, equal-tailed)",
    "clt": "CLT (normal approximation, sd ddof=1)",
    "bootstrap": "Bootstrap percentile over items",
    "clustered": "CLT with cluster-robust SE",
}


@dataclass(frozen=True)
class Leaderboard:
    """Runs x tasks with score, interval and method.

    cells columns: run_id, run, task, metric, n, score, se, low, high, method,
        binary (all scores 0/1), chance (float|NaN), contains_chance (bool),
        reported (harness value|NaN), reported_stderr (NaN if none), audit_flag (str|None),
        has_items (bool; False = summary-only run, interval from reported stderr if any)
    averages columns: run_id, run, n_tasks, score, se, low, high, kind ("macro")
    tiers columns: run_id, run, task ("__average__" for the macro average), best_run,
        diff_vs_best, p_raw, p_holm, indistinguishable_from_best (bool), n_shared
    ranks columns: run_id, run, task, rank, rank_low, rank_high  (paired bootstrap over
        shared items; same resampled items for every run)
    notes: human-readable caveats (e.g. "task X: 2 runs have no item-level data")
    """

    method: str
    confidence: float
    metric: str | None
    cells: pd.DataFrame
    averages: pd.DataFrame
    tiers: pd.DataFrame
    ranks: pd.DataFrame
    notes: tuple[str, ...] = ()


def leaderboard(store, *, task: str | None = None, metric: str | None = None,
                method: str = "wilson", confidence: float = 0.95,
                runs: list[str | int] | None = None, n_resamples: int = 2000,
                seed: int = 0) -> Leaderboard:
    """Scores with intervals for every run x task (default metric per task: the task's
    primary metric, acc for lm_eval MC, the first scorer for inspect)."""
    raise NotImplementedError


@dataclass(frozen=True)
class Pairing:
    """Integrity of the pairing of two runs on one task/metric."""

    task: str
    metric: str
    n_shared: int
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    hash_mismatch: tuple[str, ...]   # shared item ids whose prompt/item hash differs


@dataclass(frozen=True)
class Comparison:
    """Paired comparison of run B against run A (difference = B - A).

    per_task columns: task, metric, n, score_a, score_b, diff, se, low, high, se_unpaired,
        correlation, b, c (NaN unless 0/1), p_exact, p_midp, p_adjusted, adjustment
        ("holm" when several tasks), mde (points at alpha, power 0.8), verdict (str)
    protocol_diff columns: scope ("run" or task name), setting, value_a, value_b
    pairing: one Pairing per task
    overall: the same fields as a per_task row for the macro average over tasks (or None)
    verdict: one sentence for the headline ("B is better by ...", "no difference detected,
        and this design could have detected X points", "underpowered: MDE here is Y points")
    """

    run_a: str
    run_b: str
    confidence: float
    per_task: pd.DataFrame
    protocol_diff: pd.DataFrame
    pairing: tuple[Pairing, ...]
    overall: dict | None
    verdict: str
    warnings: tuple[str, ...] = ()


def compare(store, run_a: str | int, run_b: str | int, *, task: str | None = None,
            metric: str | None = None, confidence: float = 0.95,
            adjust: str = "holm") -> Comparison:
    """Paired difference on shared items, task by task, with McNemar for 0/1 scores."""
    raise NotImplementedError


def discordant_items(store, run_a: str | int, run_b: str | int, task: str, metric: str,
                     cell: str = "b") -> pd.DataFrame:
    """Items in one cell of the 2x2 table, with texts.

    cell: "b" (only B right), "c" (only A right), "both" (both right), "neither".
    columns: item_id, score_a, score_b, prompt, target, response_a, response_b
    """
    raise NotImplementedError


@dataclass(frozen=True)
class RepeatsReport:
    """Several answers per item for one run/task/metric.

    curve columns: k, se, low_floor (between-item floor SE), measured (bool: the K observed)
    pass_at_k columns: k, estimate, se, low, high, n_items
    """

    run: str
    task: str
    metric: str
    n_items: int
    k_observed: int
    between: float
    within: float
    se_observed: float
    k_sufficient: int
    curve: pd.DataFrame
    pass_at_k: pd.DataFrame


def repeats(store, run: str | int, task: str, metric: str | None = None,
            k_max: int = 50) -> RepeatsReport:
    raise NotImplementedError


@dataclass(frozen=True)
class RerunReport:
    """Two passes (two runs) of the same model/protocol on the same items."""

    run_a: str
    run_b: str
    task: str
    metric: str
    n: int
    flip_rate: float
    variance_term: float        # f / (2n)
    share_of_paired_se2: float | None  # share of a paired comparison's squared SE


def rerun_noise(store, run_a: str | int, run_b: str | int, task: str,
                metric: str | None = None) -> RerunReport:
    raise NotImplementedError


@dataclass(frozen=True)
class ClusterReport:
    """Clustered vs iid SE for one run/task/metric (cluster key from ingest)."""

    run: str
    task: str
    metric: str
    n: int
    n_clusters: int
    score: float
    se_iid: float
    se_clustered: float
    design_effect: float
    icc: float
    low: float
    high: float


def clusters(store, run: str | int, task: str, metric: str | None = None,
             confidence: float = 0.95) -> ClusterReport:
    raise NotImplementedError


def metric_variants(store, run: str | int, task: str, metric_a: str, metric_b: str,
                    confidence: float = 0.95) -> Comparison:
    """Two metric variants of one run compared as a paired difference (B - A)."""
    raise NotImplementedError


@dataclass(frozen=True)
class PlanFromPair:
    """Planning inputs estimated from two runs already in the store."""

    run_a: str
    run_b: str
    task: str
    metric: str
    n: int
    sd_diff: float
    disagreement: float
    diff: float
    design_effect: float | None


def plan_from_pair(store, run_a: str | int, run_b: str | int, task: str,
                   metric: str | None = None) -> PlanFromPair:
    raise NotImplementedError


@dataclass(frozen=True)
class Overview:
    """What the store holds, for the upload page and empty-state messages.

    runs columns: run_id, name, model, source_format, harness, harness_version, tags,
        created_at, n_tasks, n_scores, has_items
    tasks columns: run_id, run, task, metric, n_items, k_max, has_cluster, n_choices
    """

    runs: pd.DataFrame
    tasks: pd.DataFrame
    audit: pd.DataFrame
    notes: tuple[str, ...] = field(default_factory=tuple)


def overview(store) -> Overview:
    raise NotImplementedError
