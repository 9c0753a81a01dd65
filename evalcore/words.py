"""The names people read, in one place: pages, the CLI's text, the report and slides.

Internal names (``se_iid``, ``clustered-t``, ``tango``) stay in JSON and code; every surface
meant to be read shows the label here, so a method or a standard error has the same name on
the page, in the terminal and in the report. ``label(kind, key)`` falls back to the key itself
for a name not listed, so a new method is never shown blank.
"""

from __future__ import annotations

import math
from typing import Any

# one score's interval (``analysis.METHODS`` plus the harness's own stderr)
SCORE_INTERVALS = {
    "wilson": "Wilson score interval",
    "clopper-pearson": "Clopper-Pearson exact interval",
    "bayes": "Bayesian interval (uniform prior)",
    "clt": "normal-approximation interval",
    "bootstrap": "bootstrap interval over items",
    "clustered": "cluster-robust interval",
    "reported": "interval from the harness's reported SE",
}

# the interval of a paired difference (``Comparison.per_task["interval_method"]``)
PAIRED_INTERVALS = {
    "tango": "Tango score interval",
    "newcombe": "Newcombe hybrid score interval",
    "bonett-price": "Bonett-Price interval",
    "wald": "Wald interval",
    "t": "paired t interval",
    "normal": "normal interval",
    "bound": "interval from the bound on items that differ",
    "clustered-t": "cluster-robust t interval",
    "none": "no interval",
}

# standard errors as the comparison rows carry them
STANDARD_ERRORS = {
    "se": "SE behind the interval",
    "se_iid": "SE if items were independent",
    "se_clustered": "SE allowing for clusters",
    "se_unpaired": "SE ignoring the pairing",
}

# p-value adjustments across the tasks of one comparison (``per_task["adjustment"]``)
ADJUSTMENTS = {
    "holm": "Holm",
    "bh": "Benjamini-Hochberg",
    "none": "none",
}

# what a comparison row is computed from (``per_task["kind"]``)
COMPARISON_KINDS = {
    "paired": "paired on shared items",
    "paired, clustered SE": "paired on shared items, SE allowing for clusters",
    "unpaired from reported stderr": "unpaired, from the harness's reported SEs",
    "macro average of per-task differences": "macro average of the per-task differences",
}

# the format of a stored source file (``ingest.detect.FORMATS``), as the report's provenance
# names it
FILE_FORMATS = {
    "lm_eval_results": "lm_eval results",
    "lm_eval_samples_jsonl": "lm_eval samples (JSONL)",
    "lm_eval_samples_json": "lm_eval samples (JSON)",
    "lighteval_results": "lighteval results",
    "inspect_eval": "inspect log (.eval)",
    "inspect_json": "inspect log (JSON)",
    "helm_per_instance_stats": "HELM per-instance stats",
    "helm_run_spec": "HELM run spec",
    "helm_stats": "HELM stats",
    "helm_scenario_state": "HELM scenario state",
    "helm_display_predictions": "HELM predictions",
    "helm_instances": "HELM instances",
    "helm_schema": "HELM schema",
    "helm_scenario": "HELM scenario",
    "helm_display_requests": "HELM requests",
    "helm_suite_file": "HELM suite file",
    "tidy_csv": "table (CSV)",
    "tidy_jsonl": "table (JSONL)",
    "tidy_parquet": "table (Parquet)",
    "eee_aggregate_json": "Every Eval Ever aggregate",
    "eee_samples_jsonl": "Every Eval Ever samples (JSONL)",
}

# a score interval's method in a few words, where a table cell names it beside the numbers
SCORE_INTERVALS_SHORT = {
    "wilson": "Wilson",
    "clopper-pearson": "exact",
    "bayes": "Bayesian",
    "clt": "normal approx.",
    "bootstrap": "bootstrap",
    "clustered": "cluster-robust",
    "reported": "reported SE",
}

# the harness (``source_format``) a run was read from
HARNESSES = {
    "lm_eval": "lm-evaluation-harness",
    "inspect": "inspect_ai",
    "helm": "HELM",
    "lighteval": "lighteval",
    "tidy": "tidy table",
    "eee": "Every Eval Ever",
}

MISSING = "–"

_KINDS = {"score": SCORE_INTERVALS, "paired": PAIRED_INTERVALS, "se": STANDARD_ERRORS,
          "adjust": ADJUSTMENTS, "kind": COMPARISON_KINDS, "file": FILE_FORMATS,
          "score_short": SCORE_INTERVALS_SHORT, "harness": HARNESSES}

# the decision a verdict sentence starts with (``analysis.verdicts``), in the order tried
VERDICT_HEADS = (
    "no difference detected after Holm adjustment",
    "no difference detected after Benjamini-Hochberg adjustment",
    "no difference detected",
    "underpowered",
    "too few items to tell",
    "not enough data for an interval",
    "different",
)


def label(kind: str, key: Any) -> str:
    """The readable name of ``key`` among ``kind`` ("score", "paired", "se", "adjust",
    "kind", "file", "score_short" or "harness"); the key itself when it has none, and
    ``MISSING`` for None/NaN."""
    if key is None or (isinstance(key, float) and math.isnan(key)):
        return MISSING
    return _KINDS[kind].get(str(key), str(key))


def verdict_head(verdict: Any) -> str:
    """The decision a verdict sentence states, in a few words: "different", "no difference
    detected", "underpowered", "too few items to tell", ... (``VERDICT_HEADS``), read from
    the sentence itself (after a "macro average over k tasks: " prefix); the sentence up to
    its first colon or parenthesis when it starts otherwise, ``MISSING`` for None/NaN."""
    if verdict is None or (isinstance(verdict, float) and math.isnan(verdict)):
        return MISSING
    text = str(verdict).strip()
    if text.startswith("macro average over ") and ": " in text:
        text = text.split(": ", 1)[1]
    for head in VERDICT_HEADS:
        if text.startswith(head):
            return head
    return text.split(":", 1)[0].split(" (", 1)[0].strip() or MISSING


def verdict_word(verdict: Any, better: Any) -> str:
    """A comparison row's verdict for a chart label: "B better" / "A better" when the row
    calls one run better (``better``), else :func:`verdict_head` ("no difference detected",
    "underpowered", ...; "different" for a metric without a direction)."""
    if isinstance(better, str) and better in ("A", "B"):
        return f"{better} better"
    return verdict_head(verdict)
