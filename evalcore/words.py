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
}

MISSING = "–"

_KINDS = {"score": SCORE_INTERVALS, "paired": PAIRED_INTERVALS, "se": STANDARD_ERRORS,
          "score_short": SCORE_INTERVALS_SHORT, "harness": HARNESSES}


def label(kind: str, key: Any) -> str:
    """The readable name of ``key`` among ``kind`` ("score", "paired", "se", "score_short" or
    "harness"); the key itself when it has none, and ``MISSING`` for None/NaN."""
    if key is None or (isinstance(key, float) and math.isnan(key)):
        return MISSING
    return _KINDS[kind].get(str(key), str(key))
