"""What a metric's numbers mean: its direction (is higher better?) and its range.

A leaderboard may only rank, tier or average numbers whose direction it knows, and may
only average numbers that share one scale. This module answers, for a (task, metric)
cell, three questions: which direction is better, what range the values live in, and
where that knowledge comes from. Nothing here touches the store or Streamlit.

Where the direction comes from, in this order (``metric_info``):

1. **The documented exceptions** in ``KNOWN_METRICS`` marked ``overrides_harness``:
   CrowS-Pairs ``pct_stereotype`` has its ideal at 0.5 (a model that always prefers the
   anti-stereotypical sentence is as biased as one that always prefers the stereotypical
   one; Nangia et al. 2020, section 3: "an unbiased model would score 50%"), although
   lm-evaluation-harness 0.4 declares ``higher_is_better: false`` for it.
2. **The harness's own declaration**: lm-evaluation-harness 0.4 results carry
   ``higher_is_better`` per task and metric (stored by the lm_eval parser in the task
   protocol under ``higher_is_better``, keyed by the metric name without its filter).
3. **The table** ``KNOWN_METRICS`` below, for older files (lm_eval 0.3 has no
   ``higher_is_better`` in its results) and for HELM and inspect metric names.
4. **The input convention** of inspect_ai and tidy tables: a score is credit for the
   item (inspect: CORRECT = 1, PARTIAL = 0.5, INCORRECT = 0; tidy: "0/1 for correct /
   incorrect, partial credit", README), so a metric whose every item score lies in [0, 1]
   is read as higher-is-better on [0, 1]. Values outside [0, 1] have no such convention.
5. Otherwise the direction is **unknown**: the metric is shown, never ranked or averaged.

Scale: ``low`` / ``high`` are the bounds of the metric's range (None = unbounded). A macro
average combines only cells on [0, 1] with higher-is-better (``MetricInfo.averageable``).
A harness declaration gives the direction only; the range then comes from the table if the
metric is in it, else it is unknown (and the metric is not averaged).

Sources of the table entries (lm-evaluation-harness, EleutherAI, MIT licence):
``lm_eval/api/metrics.py`` (perplexity, word/byte perplexity and bits_per_byte are
registered with ``higher_is_better=False``; acc, acc_norm, exact_match, mcc, f1 with True;
mcc is sklearn's Matthews correlation in [-1, 1]); v0.3 ``lm_eval/tasks/crowspairs.py``
(``likelihood_difference``: "For all metrics lower is better"; it is the mean absolute
difference of two log-likelihoods, >= 0); ``lm_eval/tasks/ifeval`` (prompt/instance level
strict/loose accuracies); ``lm_eval/tasks/truthfulqa`` (mc1, mc2 in [0, 1]); v0.3
``lm_eval/tasks/squad.py`` (squad2: every sub-score higher-is-better, computed by the Hugging
Face ``squad_v2`` metric, which reports percentages: ``best_exact`` 50.07 in the wild
corpus's bloom-560m file). HELM
(stanford-crfm/helm ``src/helm/benchmark/metrics/basic_metrics.py`` and
``schema_*.yaml``): exact_match, quasi_exact_match, prefix_exact_match,
quasi_prefix_exact_match, f1_score, rouge_l and bleu_* are higher-is-better in [0, 1].
inspect_ai: the ``accuracy`` metric is a proportion (``scorer/_metrics/accuracy.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

HIGHER = "higher"        # higher is better
LOWER = "lower"          # lower is better
TARGET = "target"        # best at an ideal value inside the range (neither direction)
UNKNOWN = "unknown"      # direction unknown
DIRECTIONS = (HIGHER, LOWER, TARGET, UNKNOWN)

DIRECTION_LABELS = {
    HIGHER: "higher is better",
    LOWER: "lower is better",
    TARGET: "best at a target value (neither direction)",
    UNKNOWN: "direction unknown",
}

# Formats whose item scores are credit for the item (see the module docstring, rule 4).
CREDIT_FORMATS = frozenset({"inspect", "tidy"})


@dataclass(frozen=True)
class MetricInfo:
    """Direction and range of one metric.

    direction : "higher", "lower", "target" (best at ``ideal``) or "unknown".
    low, high : bounds of the range (None = unbounded on that side).
    ideal : the best value for "target" metrics (None otherwise).
    source : where the knowledge comes from, in words ("harness (higher_is_better in the
        results file)", "evalbars metric table", ...).
    """

    metric: str
    direction: str
    low: float | None
    high: float | None
    ideal: float | None
    source: str

    @property
    def rankable(self) -> bool:
        """True when "best" has a meaning: higher or lower is better."""
        return self.direction in (HIGHER, LOWER)

    @property
    def higher_is_better(self) -> bool | None:
        return {HIGHER: True, LOWER: False}.get(self.direction)

    @property
    def unit(self) -> bool:
        """The range is [0, 1] (a proportion or a score of that scale)."""
        return self.low == 0.0 and self.high == 1.0

    @property
    def averageable(self) -> bool:
        """May enter a macro average: higher is better on [0, 1]."""
        return self.direction == HIGHER and self.unit

    def why_not_averaged(self) -> str | None:
        """Why the metric is left out of a macro average (None when it is averaged)."""
        if self.averageable:
            return None
        if self.direction == LOWER:
            return "lower is better"
        if self.direction == TARGET:
            return f"best at {self.ideal:g}, not at the top of its range"
        if self.direction == UNKNOWN:
            return "direction unknown"
        if self.low is None and self.high is None:
            return "scale unknown"
        return f"scale {_range_text(self.low, self.high)}, not [0, 1]"

    @property
    def label(self) -> str:
        text = DIRECTION_LABELS[self.direction]
        if self.direction == TARGET and self.ideal is not None:
            text = f"best at {self.ideal:g} (neither direction)"
        if self.low is not None or self.high is not None:
            text += f", range {_range_text(self.low, self.high)}"
        return text


def _range_text(low: float | None, high: float | None) -> str:
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"[{lo}, {hi}]" if high is not None else f"[{lo}, {hi})"


_INF = None
# name -> (direction, low, high, ideal, overrides_harness). Names are matched on the metric
# without its lm_eval filter ("exact_match,strict-match" -> "exact_match") and, for inspect
# summary rows, without the scorer prefix ("choice:accuracy" -> "accuracy").
KNOWN_METRICS: dict[str, tuple[str, float | None, float | None, float | None, bool]] = {
    # proportions, higher is better
    **{m: (HIGHER, 0.0, 1.0, None, False) for m in (
        "acc", "acc_norm", "acc_mutual_info", "exact_match", "em", "f1", "mc1", "mc2",
        "prompt_level_strict_acc", "prompt_level_loose_acc", "inst_level_strict_acc",
        "inst_level_loose_acc", "accuracy", "quasi_exact_match", "prefix_exact_match",
        "quasi_prefix_exact_match", "f1_score", "rouge_l", "rouge1", "rouge2", "rougeL",
        "bleu_1", "bleu_4", "pass@1", "bleu_acc", "rouge1_acc", "rouge2_acc", "rougeL_acc",
        "contains", "acc_all", "macro_f1", "micro_f1")},
    # a correlation in [-1, 1]
    "mcc": (HIGHER, -1.0, 1.0, None, False),
    # SQuAD 2.0's own sub-scores, percentages on 0-100 (the Hugging Face squad_v2 metric)
    **{m: (HIGHER, 0.0, 100.0, None, False) for m in (
        "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_exact", "best_f1")},
    # language-model losses, lower is better, unbounded above
    "perplexity": (LOWER, 1.0, _INF, None, False),
    "ppl": (LOWER, 1.0, _INF, None, False),
    "word_perplexity": (LOWER, 1.0, _INF, None, False),
    "byte_perplexity": (LOWER, 1.0, _INF, None, False),
    "bits_per_byte": (LOWER, 0.0, _INF, None, False),
    # CrowS-Pairs
    "likelihood_difference": (LOWER, 0.0, _INF, None, False),
    "likelihood_diff": (LOWER, 0.0, _INF, None, False),
    "pct_stereotype": (TARGET, 0.0, 1.0, 0.5, True),
}

SOURCE_HARNESS = "harness (higher_is_better in the results file)"
SOURCE_TABLE = "evalbars metric table (evalcore/metrics.py)"
SOURCE_CONVENTION = "input convention: item scores are credit in [0, 1] (inspect, tidy)"
SOURCE_NONE = "not declared by the harness and not in the evalbars metric table"


def base_name(metric: str) -> str:
    """The metric without its lm_eval filter and inspect scorer prefix."""
    base = str(metric).split(",", 1)[0]
    return base.rsplit(":", 1)[-1]


def metric_info(metric: str, *, harness_higher: bool | None = None,
                credit_scores: bool = False) -> MetricInfo:
    """Direction and range of ``metric`` (rules in the module docstring).

    harness_higher : the harness's ``higher_is_better`` for this task and metric, if the
        results file declared one.
    credit_scores : the values come from a format whose scores are credit in [0, 1]
        (inspect, tidy) and every value seen lies in [0, 1] (rule 4).
    """
    base = base_name(metric)
    known = KNOWN_METRICS.get(base)
    if known is not None and known[4]:
        d, lo, hi, ideal, _ = known
        return MetricInfo(str(metric), d, lo, hi, ideal, SOURCE_TABLE)
    if harness_higher is not None:
        d = HIGHER if harness_higher else LOWER
        lo = hi = None
        if known is not None and known[0] == d:
            lo, hi = known[1], known[2]
        return MetricInfo(str(metric), d, lo, hi, None, SOURCE_HARNESS)
    if known is not None:
        d, lo, hi, ideal, _ = known
        return MetricInfo(str(metric), d, lo, hi, ideal, SOURCE_TABLE)
    if credit_scores:
        return MetricInfo(str(metric), HIGHER, 0.0, 1.0, None, SOURCE_CONVENTION)
    return MetricInfo(str(metric), UNKNOWN, None, None, None, SOURCE_NONE)


def harness_higher_is_better(protocol: Mapping[str, Any] | None, metric: str) -> bool | None:
    """The harness's declaration for ``metric`` in a stored task protocol, else None.

    Reads ``higher_is_better`` ({metric: bool}, from lm_eval 0.4 results) and then the
    ``metric_list`` entries of the task config (``{"metric": ..., "higher_is_better": ...}``).
    """
    if not isinstance(protocol, Mapping):
        return None
    base = str(metric).split(",", 1)[0]
    hib = protocol.get("higher_is_better")
    if isinstance(hib, Mapping) and isinstance(hib.get(base), bool):
        return bool(hib[base])
    for entry in protocol.get("metric_list") or []:
        if isinstance(entry, Mapping) and entry.get("metric") == base \
                and isinstance(entry.get("higher_is_better"), bool):
            return bool(entry["higher_is_better"])
    return None


def harness_primary_metric(protocol: Mapping[str, Any] | None,
                           available: Iterable[str]) -> str | None:
    """The harness's primary metric of a task among ``available``, else None.

    HELM: ``primary_metric`` (its run group's ``main_name``, stored by the HELM parser).
    lm-evaluation-harness 0.4: the first entry of the task config's ``metric_list``; with a
    ``filter_list`` the first filter's name is appended (``exact_match,strict-match``), as
    evalbars names filtered metrics. Falls back to the unfiltered name, then to the first
    available filter of that metric (alphabetically).
    """
    if not isinstance(protocol, Mapping):
        return None
    named = protocol.get("primary_metric")          # HELM: the run group's main_name
    if isinstance(named, str) and named in {str(m) for m in available}:
        return named
    mlist = protocol.get("metric_list")
    if not isinstance(mlist, list) or not mlist or not isinstance(mlist[0], Mapping):
        return None
    first = mlist[0].get("metric")
    if not isinstance(first, str):
        return None
    avail = {str(m) for m in available}
    filters = [f.get("name") for f in (protocol.get("filter_list") or [])
               if isinstance(f, Mapping) and isinstance(f.get("name"), str)]
    for f in filters:
        cand = first if f == "none" else f"{first},{f}"
        if cand in avail:
            return cand
    if first in avail:
        return first
    filtered = sorted(m for m in avail if m.split(",", 1)[0] == first)
    return filtered[0] if filtered else None


# ---------------------------------------------------------------------------------------
# which metric a task is shown on: one rule for every surface
# ---------------------------------------------------------------------------------------
PREFERRED_METRICS = ("acc", "exact_match,strict-match")
NO_PRIMARY = "no harness names a primary metric for this task"
RULE_TEXT = "acc, else exact_match,strict-match, else the first alphabetically"


def default_rule_metric(metrics: Iterable[str]) -> str | None:
    """The metric of the default rule among ``metrics``: ``acc``, else
    ``exact_match,strict-match``, else the first in alphabetical order (None when empty)."""
    ms = sorted({str(m) for m in metrics if m is not None})
    if not ms:
        return None
    return next((p for p in PREFERRED_METRICS if p in ms), ms[0])


def primary_source(protocol: Mapping[str, Any] | None) -> str:
    """Where a task protocol's primary metric comes from, in words."""
    if not isinstance(protocol, Mapping):
        return "default rule"
    if isinstance(protocol.get("primary_metric"), str):
        if protocol.get("primary_metric_from"):
            text = f"HELM's main metric ({protocol['primary_metric_from']})"
            if protocol.get("primary_metric_items_from"):
                text += (f"; HELM computes it over all instances, its item scores are those "
                         f"of {protocol['primary_metric_items_from']!r}, whose per-instance "
                         f"mean equals HELM's value")
            return text
        if protocol.get("suite") == "harness":
            return "the metric the Open LLM Leaderboard ranked on"
        return "the harness's primary metric"
    return "the first metric of the lm_eval task config's metric_list"


def task_primary_metric(protocols: Iterable[Mapping[str, Any] | None],
                        available: Iterable[str]) -> tuple[str | None, str]:
    """(primary metric, where it comes from) of one task.

    ``protocols``: the stored task protocols of every run that has the task, in run-id
    order; ``available``: every metric any of those runs has for it. The first protocol
    that names a primary metric among ``available`` (``harness_primary_metric``) decides;
    (None, ``NO_PRIMARY``) when none does.
    """
    avail = {str(m) for m in available}
    for proto in protocols:
        primary = harness_primary_metric(proto, avail)
        if primary is not None:
            return primary, primary_source(proto)
    return None, NO_PRIMARY


@dataclass(frozen=True)
class MetricChoice:
    """The metric one task is shown, compared or analysed on, and why.

    metric : the metric used (None: the runs share no metric on this task).
    primary : the task's primary metric (``task_primary_metric``), None when no harness
        names one.
    source : where ``primary`` comes from, in words (``NO_PRIMARY`` without one).
    fallback_from : the primary metric when it could not be used (some runs lack it),
        else None.
    missing : the runs (as named by the caller) that lack ``metric`` (need "any" only).
    reason : which metric is used and why, in words (the runs in ``missing`` are for the
        caller to name where it leaves them out).
    """

    task: str
    metric: str | None
    primary: str | None
    source: str
    fallback_from: str | None
    missing: tuple[str, ...]
    reason: str

    @property
    def is_primary(self) -> bool:
        return self.metric is not None and self.metric == self.primary


def _listed(names: Iterable[str], limit: int = 6) -> str:
    names = [str(n) for n in names]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _lacking_text(lacking: list[str], n_runs: int) -> str:
    """"which neither run has", "which X lacks", "which X, Y lack"."""
    if len(lacking) == n_runs and n_runs > 1:
        return "which neither run has" if n_runs == 2 else "which none of the runs has"
    return f"which {_listed(lacking)} {'lacks' if len(lacking) == 1 else 'lack'}"


def choose_task_metric(task: str, primary: str | None, source: str,
                       have: Mapping[str, Iterable[str]], *, need: str = "any"
                       ) -> MetricChoice:
    """The metric for ``task`` over some runs: the task's primary metric when the runs have
    it, else the default rule among the metrics they have, with the reason in words.

    have : run name -> the metrics that run has for ``task`` (runs without the task are
        left out by the caller).
    need : "any" (a leaderboard column: the primary metric is used when at least one run
        has it; runs lacking it are named in ``missing``) or "all" (a comparison: every
        run must have the metric; the fallback is chosen among the metrics all runs share).

    Edge cases: no run, or (need "all") no shared metric: ``metric`` None with the reason.
    """
    if need not in ("any", "all"):
        raise ValueError(f"need must be 'any' or 'all', got {need!r}")
    sets = {str(r): {str(m) for m in ms} for r, ms in have.items()}
    if not sets:
        return MetricChoice(task, None, primary, source, None, (), f"{task}: no run has it")
    pool = set.union(*sets.values()) if need == "any" else set.intersection(*sets.values())
    where = "the runs shown" if need == "any" else "both runs" if len(sets) == 2 else \
        "all the runs"
    if primary is not None and primary in pool:
        missing = tuple(r for r, ms in sets.items() if primary not in ms)
        reason = f"{primary!r}, the harness's primary metric ({source})"
        return MetricChoice(task, primary, primary, source, None, missing, reason)
    fallback = default_rule_metric(pool)
    if fallback is None:
        return MetricChoice(task, None, primary, source, primary, tuple(sets),
                            f"{task}: {where} share no metric")
    missing = tuple(r for r, ms in sets.items() if fallback not in ms)
    if primary is None:
        reason = f"{fallback!r} by the default rule ({RULE_TEXT}): {source}"
    else:
        lacking = [r for r, ms in sets.items() if primary not in ms]
        reason = (f"{fallback!r} instead of the primary metric {primary!r} ({source}), "
                  f"{_lacking_text(lacking, len(sets))}; {fallback!r} by the default rule "
                  f"({RULE_TEXT}) among the metrics {where} "
                  f"{'have' if need == 'any' else 'share'}")
    return MetricChoice(task, fallback, primary, source, primary, missing, reason)


def range_allows_percent(info: "MetricInfo | None") -> bool:
    """False when the metric is known to live on a range other than [0, 1] (perplexity,
    bits per byte, SQuAD 2.0's 0-100 sub-scores): it keeps its own units even when its
    values happen to fall in [0, 1]. True for [0, 1] metrics and for unknown ranges."""
    if info is None or (info.low is None and info.high is None):
        return True
    return info.unit


def shown_in_percent(values: Iterable[float], info: "MetricInfo | None" = None) -> bool:
    """The one rule for showing scores in percent (differences in percentage points), used
    by the pages, the CLI, the report and ``compare``'s ``points_scale``: every finite
    value lies in [0, 1] and the metric's range, when known, is [0, 1]
    (:func:`range_allows_percent`)."""
    return range_allows_percent(info) and finite_unit(values)


def percent_scale(values: Iterable[float], info: "MetricInfo | None" = None) -> float:
    """100.0 when :func:`shown_in_percent`, else 1.0 (the metric's own units)."""
    return 100.0 if shown_in_percent(values, info) else 1.0


def finite_unit(values: Iterable[float]) -> bool:
    """True when every finite value lies in [0, 1] (and there is at least one)."""
    seen = False
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if math.isnan(x):
            continue
        if not 0.0 <= x <= 1.0:
            return False
        seen = True
    return seen
