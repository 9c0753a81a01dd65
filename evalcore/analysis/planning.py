"""Planning: inputs estimated from a pilot pair of runs in the store, and the plan of a paired
comparison with the sentences every surface (page, CLI, report) states it in."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import ndtri

from evalcore import stats as st
from evalcore.errors import AnalysisError
from evalcore.analysis._plumbing import one_version
from evalcore.analysis._common import (
    fnum,
    resolve_run,
    run_names,
)
from evalcore.analysis.compare import paired_cell
from evalcore.analysis.repeats import one_metric

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
        a, b = resolve_run(store, run_a), resolve_run(store, run_b)
        names = run_names(store)
        ms_a = one_metric(store, a, task, metric)
        m = metric or ms_a
        one_metric(store, b, task, m)
        frame = paired_cell(store, a, b, task, m)
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
        deff = fnum(c.design_effect)
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




# ---------------------------------------------------------------------------------------
# a paired plan: the assumptions, what they imply, and the same sentences everywhere
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairedPlan:
    """The assumptions of a paired comparison (both runs on the same items) and the items
    they require, as the Planner page, ``plan`` and the report state them.

    ``gap`` and the MDE are in score units (0.02 = 2 points on a 0-1 score). ``spread`` is
    "disagreement" (``spread_value`` = rho_d, planned with sd_d^2 = rho_d, the conservative
    bound for 0/1 scores) or "sd" (``spread_value`` = sd_d). ``source``: "typed", "pilot"
    (the pilot pair's sd of the per-item differences) or "pilot bound" (the pilot runs never
    differed: the exact 95% upper bound of their disagreement rate). With K answers per item
    and a share w of the variance that is answer-to-answer noise, the sd planned with is
    sqrt(var (1 - w) + var w / K) (``stats.sd_diff_with_answers``).
    """

    alpha: float
    power: float
    spread: str
    spread_value: float
    design_effect: float = 1.0
    answers_per_item: int = 1
    within_share: float = 0.0
    gap: float | None = None
    required_n: int | None = None
    source: str = "typed"
    pilot: PlanFromPair | None = None

    def spread_kwargs(self) -> dict[str, float]:
        """``sd_diff=`` or ``disagreement=`` for the ``stats`` planning functions, with the K
        answers per item applied."""
        var = self.spread_value if self.spread == "disagreement" else self.spread_value ** 2
        if self.answers_per_item > 1 and self.within_share > 0:
            return {"sd_diff": st.sd_diff_with_answers(var * (1 - self.within_share),
                                                       var * self.within_share,
                                                       self.answers_per_item)}
        if self.spread == "disagreement":
            return {"disagreement": self.spread_value}
        return {"sd_diff": self.spread_value}

    def mde_at(self, n: int) -> float:
        """The minimum detectable effect with ``n`` items (``stats.minimum_detectable_effect``)."""
        return st.minimum_detectable_effect(int(n), alpha=self.alpha, power=self.power,
                                            design_effect=self.design_effect,
                                            **self.spread_kwargs())

    def assumptions_text(self) -> str:
        """The spread (and design effect, answers per item when they matter) in words."""
        parts = [self._spread_text()]
        if self.design_effect != 1.0:
            parts.append(f"design effect {self.design_effect:.2f} for clustered items")
        if self.answers_per_item > 1:
            noise = (f", {percent(self.within_share)} of the variance being answer-to-answer "
                     "noise" if self.within_share > 0 else
                     ", with no answer-to-answer noise assumed")
            parts.append(f"each item scored as the mean of {self.answers_per_item} answers"
                         + noise)
        return "; ".join(parts)

    def _spread_text(self) -> str:
        p = self.pilot
        if self.source == "pilot" and p is not None:
            return (f"using the pilot's SD of per-item differences, {self.spread_value:.4g}: "
                    f"the two runs disagree on {percent(p.disagreement)} of {p.n:,} shared "
                    f"items of {p.task}")
        if self.source == "pilot bound" and p is not None:
            return (f"assuming they disagree on at most {percent(self.spread_value)} of items: "
                    f"the pilot runs never differed on {p.n:,} items of {p.task}, and "
                    f"{percent(self.spread_value)} is the exact 95% upper bound")
        if self.spread == "disagreement":
            return f"assuming they disagree on {percent(self.spread_value)} of items"
        return f"assuming per-item score differences with an SD of {self.spread_value:.4g}"

    def _level(self) -> str:
        return f"at {percent(1 - self.alpha)} confidence and {percent(self.power)} power"

    def items_sentence(self) -> str:
        """"To detect a 2-point gap between two models at 95% confidence and 80% power, you
        need about 3,925 items (assuming they disagree on 20% of items)." """
        if self.gap is None or self.required_n is None:
            raise AnalysisError("this plan has no gap to detect")
        return (f"To detect a {points(abs(self.gap))}-point gap between two models "
                f"{self._level()}, you need about {self.required_n:,} items "
                f"({self.assumptions_text()}).")

    def mde_sentence(self, n: int, with_assumptions: bool = False) -> str:
        """"With 500 items, the smallest gap detectable at 95% confidence with 80% power is
        5.60 points." (the assumptions in brackets when asked)."""
        level = f"at {percent(1 - self.alpha)} confidence with {percent(self.power)} power"
        tail = f" ({self.assumptions_text()})" if with_assumptions else ""
        return (f"With {int(n):,} items, the smallest gap detectable {level} is "
                f"{100 * self.mde_at(n):.2f} points{tail}.")


def percent(x: float) -> str:
    """A share as a percentage with up to 4 significant digits: 0.2 -> "20%", 0.975 -> "97.5%"."""
    return f"{100 * float(x):.4g}%"


def points(x: float) -> str:
    """A difference of 0-1 scores in points (hundredths) with up to 4 significant digits:
    0.02 -> "2", 0.015 -> "1.5"."""
    return f"{100 * float(x):.4g}"


def pilot_sentence(pilot: PlanFromPair) -> str:
    """What a pilot pair shows, in the words of the Planner page and ``plan --pilot``."""
    design = ("no cluster key" if pilot.design_effect is None
              else f"design effect of the differences {pilot.design_effect:.2f}")
    return (f"Pilot: {pilot.run_b} vs {pilot.run_a} on {pilot.task} ({pilot.metric}), "
            f"{pilot.n:,} shared items: they disagree on {percent(pilot.disagreement)} of them; "
            f"SD of per-item differences {pilot.sd_diff:.4f}; {design}; observed difference "
            f"B − A {100 * pilot.diff:+.1f} points (a pilot value, not the gap to plan for).")


def pilot_spread(pilot: PlanFromPair) -> tuple[str, float, str]:
    """The spread a pilot pair gives: ("sd", its sd of the per-item differences, "pilot"), or,
    when the runs never differ (sd 0), ("disagreement", the exact 95% upper bound of the
    disagreement rate, "pilot bound"): never plan with 0."""
    if pilot.sd_diff > 0 and np.isfinite(pilot.sd_diff):
        return "sd", float(pilot.sd_diff), "pilot"
    return "disagreement", float(pilot.disagreement_upper), "pilot bound"


def pilot_design_effect(pilot: PlanFromPair) -> float:
    """The pilot's design effect of the per-item differences, at least 1 (1 without
    clusters): a design effect below 1 from a pilot's few clusters is noise that would
    promise more precision than independent items give."""
    d = pilot.design_effect
    return max(1.0, float(d)) if d is not None and np.isfinite(d) else 1.0


def paired_plan(*, gap: float | None = None, alpha: float = 0.05, power: float = 0.8,
                sd_diff: float | None = None, disagreement: float | None = None,
                design_effect: float | None = None, answers_per_item: int = 1,
                within_share: float = 0.0, pilot: PlanFromPair | None = None) -> PairedPlan:
    """The plan for a paired comparison: required items for ``gap`` (None: no gap asked).

    Give ``sd_diff`` or ``disagreement``, or a ``pilot`` (``plan_from_pair``) whose estimate
    is used (:func:`pilot_spread`); a spread given with a pilot wins. ``design_effect``
    None: the pilot's (:func:`pilot_design_effect`), else 1.
    n = ceil((z_{1-alpha/2} + z_power)^2 sd_d^2 deff / gap^2) (``stats.required_items``).
    """
    if sd_diff is not None and disagreement is not None:
        raise AnalysisError("give only one of sd_diff and disagreement")
    if sd_diff is not None:
        spread, value, source = "sd", float(sd_diff), "typed"
    elif disagreement is not None:
        spread, value, source = "disagreement", float(disagreement), "typed"
    elif pilot is not None:
        spread, value, source = pilot_spread(pilot)
    else:
        raise AnalysisError("give sd_diff, disagreement or a pilot pair")
    if design_effect is None:
        design_effect = pilot_design_effect(pilot) if pilot is not None else 1.0
    k = int(answers_per_item)
    if k < 1:
        raise AnalysisError(f"answers per item must be at least 1, got {answers_per_item!r}")
    if not 0.0 <= float(within_share) < 1.0:
        raise AnalysisError(f"the answer-to-answer share must lie in [0, 1), got "
                            f"{within_share!r}")
    plan = PairedPlan(alpha=float(alpha), power=float(power), spread=spread,
                      spread_value=value, design_effect=float(design_effect),
                      answers_per_item=k, within_share=float(within_share), source=source,
                      pilot=pilot)
    if gap is None:
        plan.mde_at(1)                      # checks every input once
        return plan
    need = st.required_items(float(gap), alpha=plan.alpha, power=plan.power,
                             design_effect=plan.design_effect, **plan.spread_kwargs())
    return replace(plan, gap=float(gap), required_n=int(need))


# ---------------------------------------------------------------------------------------
# human labels for an LLM judge (PPI++)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LabelsPlan:
    """Human labels needed to correct a judge-scored task with PPI++ (``judge_labels_plan``).

    target : "half-width" (the corrected score's interval half-width) or "gap" (a gap the
    corrected score must detect against a fixed value at ``power``); ``value`` in score
    units (points of a 0-1 score for 0/1 labels, the labels' units otherwise: ``binary``).
    ``needed``: ``stats.LabelsNeeded``. ``assumptions``: the pilot moments in words.
    """

    target: str
    value: float
    confidence: float
    power: float
    n_items: int
    correlation: float
    needed: st.LabelsNeeded
    assumptions: str
    z_total: float
    binary: bool

    @property
    def best_value(self) -> float:
        """The half-width (or detectable gap) with every item but two labelled."""
        return self.z_total * self.needed.best_se

    def _amount(self, x: float) -> str:
        """x in points for 0/1 labels ("2-point"), in the labels' units otherwise."""
        return f"{points(x)}-point" if self.binary else f"{float(x):.4g}-unit"

    def sentence(self) -> str:
        """"For a ±2-point interval at 95% confidence on 5,000 judged items, you need about
        1,562 human labels with PPI++ (2,305 with human labels alone; ...)." """
        if self.target == "half-width":
            what = (f"For a ±{self._amount(self.value)} interval at "
                    f"{percent(self.confidence)} confidence")
        else:
            what = (f"To detect a {self._amount(self.value)} gap at "
                    f"{percent(self.confidence)} confidence and {percent(self.power)} power")
        need = self.needed
        human = f"{need.n_human_only:,} with human labels alone"
        if need.n_labels is None:
            best = "half-width" if self.target == "half-width" else "detectable gap"
            amount = (f"{100 * self.best_value:.2f} points" if self.binary
                      else f"{self.best_value:.4g}")
            return (f"{what} on {self.n_items:,} judged items, no number of human labels is "
                    f"enough: labelling all but 2 of them gives a {best} of {amount} with "
                    f"PPI++ ({human}; {self.assumptions}). More items are needed.")
        return (f"{what} on {self.n_items:,} judged items, you need about {need.n_labels:,} "
                f"human labels with PPI++ ({human}; {self.assumptions}).")


def judge_labels_plan(*, n_items: int, target: str, value: float, confidence: float = 0.95,
                      power: float = 0.8, p_human: float | None = None,
                      p_judge: float | None = None, agreement: float | None = None,
                      sd_human: float | None = None, sd_judge: float | None = None,
                      correlation: float | None = None) -> LabelsPlan:
    """Labels needed for PPI++ from a pilot's agreement: 0/1 labels (``p_human``, ``p_judge``,
    ``agreement`` = share of items where judge and human agree) or numeric ones
    (``sd_human``, ``sd_judge``, ``correlation``). Target SE = value / z_{1-alpha/2} for a
    half-width, value / (z_{1-alpha/2} + z_power) for a gap (``stats.ppi_labels_needed``)."""
    if target not in ("half-width", "gap"):
        raise AnalysisError(f"target must be 'half-width' or 'gap', got {target!r}")
    if not float(value) > 0:
        raise AnalysisError(f"the target must be positive, got {value!r}")
    binary = (p_human, p_judge, agreement)
    numeric = (sd_human, sd_judge, correlation)
    binary_given = all(v is not None for v in binary)
    if binary_given:
        var_y, var_f, cov = st.binary_agreement_moments(p_human, p_judge, agreement)
        words_ = (f"human score {percent(p_human)}, judge score {percent(p_judge)}, "
                  f"agreeing on {percent(agreement)} of items")
    elif all(v is not None for v in numeric):
        if not -1.0 <= float(correlation) <= 1.0:
            raise AnalysisError(f"the correlation must lie in [-1, 1], got {correlation!r}")
        var_y, var_f = float(sd_human) ** 2, float(sd_judge) ** 2
        cov = float(correlation) * float(sd_human) * float(sd_judge)
        words_ = (f"human SD {sd_human:.3g}, judge SD {sd_judge:.3g}, correlation "
                  f"{correlation:.2f}")
    else:
        raise AnalysisError("give p_human, p_judge and agreement (0/1 labels) or sd_human, "
                            "sd_judge and correlation")
    z = st.z_value(confidence)
    if target == "gap":
        if not 0.0 < float(power) < 1.0:
            raise AnalysisError(f"power must lie in (0, 1), got {power!r}")
        z += float(ndtri(float(power)))
    needed = st.ppi_labels_needed(float(value) / z, int(n_items), var_y, var_f, cov)
    rho = 0.0 if var_f == 0 or var_y == 0 else cov / (var_y * var_f) ** 0.5
    return LabelsPlan(target, float(value), float(confidence), float(power), int(n_items),
                      float(rho), needed, words_, z, binary_given)
