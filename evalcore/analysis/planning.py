"""Planning inputs estimated from a pilot pair of runs in the store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis._common import (
    _fnum,
    _resolve,
    _run_names,
    one_version,
)
from evalcore.analysis.compare import _paired_cell
from evalcore.analysis.repeats import _one_metric

# ---------------------------------------------------------------------------------------
# planning from a pilot pair, overview
# ---------------------------------------------------------------------------------------

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
    disagreement_upper: float = float("nan")
    note: str = ""


def plan_from_pair(store, run_a: str | int, run_b: str | int, task: str,
                   metric: str | None = None) -> PlanFromPair:
    """sd of the paired differences, disagreement rate and observed diff on shared items.

    sd_diff = sd(x_B - x_A, ddof=1) (``stats.paired_difference``: paired SE * sqrt(n));
    disagreement = share of items whose per-item scores differ; design_effect of the
    differences when a cluster key exists (``stats.clustered_se`` on d_i), else None.
    Feed these to ``stats.minimum_detectable_effect`` / ``stats.required_items``.
    disagreement_upper = the exact one-sided upper confidence bound of the disagreement rate
    (``stats.discordance_upper_bound`` at 95%); when the pilot runs never differ, plan with
    it (sd_d^2 <= that rate for scores in [0, 1]) rather than with 0, as ``note`` says.
    """
    with one_version(store):
        a, b = _resolve(store, run_a), _resolve(store, run_b)
        names = _run_names(store)
        ms_a = _one_metric(store, a, task, metric)
        m = metric or ms_a
        _one_metric(store, b, task, m)
        frame = _paired_cell(store, a, b, task, m)
    if len(frame) < 2:
        raise AnalysisError(f"{task!r}: the runs share {len(frame)} item(s); a pilot needs "
                            f"at least 2 shared items")
    xa, xb = frame.x_a, frame.x_b
    r = st.paired_difference(xa, xb)
    n = len(frame)
    sd_diff = float(np.std(xb - xa, ddof=1))
    deff = None
    if frame.clusters is not None and np.unique(frame.clusters).size >= 2:
        c = st.clustered_se(xb - xa, frame.clusters)
        deff = _fnum(c.design_effect)
        deff = deff if np.isfinite(deff) else None
    k = int(np.sum(xa != xb))
    upper = st.discordance_upper_bound(n, k)
    note = ""
    if k == 0:
        note = (f"the pilot runs never differ on {n} items: the disagreement rate is not 0 but "
                f"below {100 * upper:.1f}% (exact 95% upper bound); plan with that bound")
    return PlanFromPair(run_a=names.get(a, str(a)), run_b=names.get(b, str(b)), task=task,
                        metric=m, n=n, sd_diff=sd_diff,
                        disagreement=k / n, diff=float(r.diff),
                        design_effect=deff, disagreement_upper=upper, note=note)


