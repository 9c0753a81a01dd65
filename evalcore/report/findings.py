"""The key findings of a report: the numbers its first page leads with, chosen from a ``Report``.

Nothing is computed or decided here: each finding is a result the analysis layer already
produced, picked out and labelled.

* **Top group** (``TopGroup``): the runs the leaderboard's tiers call indistinguishable from
  the best (paired tests on shared items, Holm-adjusted) on the macro average, each with its
  average and interval; without a tier on the macro average (one task, a task subset), the
  top group of each task.
* **Comparisons** (``ComparisonFinding``): each comparison's headline verdict as
  ``analysis.compare`` wrote it, the macro-average (or single-task) difference B - A with its
  interval, and every task's row with its verdict.
* **Items needed** (``PlanFinding``): the planner section's items needed for the gap of
  interest (``ReportSpec.gap``), per pilot pair and task.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from evalcore.analysis import AVERAGE_TASK
from evalcore.report.build import Report
from evalcore.words import MISSING


@dataclass(frozen=True)
class Member:
    """One run of a top group: its score and interval (metric units) and the n behind it
    (items of a task, or tasks of an average)."""

    run: str
    score: float
    low: float
    high: float
    n: int | None


@dataclass(frozen=True)
class TopGroup:
    """The runs not distinguishable from the best on ``task`` (``AVERAGE_TASK`` for the
    macro average). ``n_compared``: runs tested against the best, best included; ``scale``:
    100 when the scores are proportions (shown in percent)."""

    task: str
    metric: str
    best: str
    members: tuple[Member, ...]
    n_compared: int
    n_tasks: int
    scale: float
    confidence: float


@dataclass(frozen=True)
class TaskRow:
    """One task of a comparison: B - A with its (unadjusted) interval and the row's verdict."""

    task: str
    diff: float
    low: float
    high: float
    scale: float
    verdict: str


@dataclass(frozen=True)
class ComparisonFinding:
    """A comparison's headline: compare's verdict sentence, the difference it is about
    (macro average over the tasks, or the one task) with its interval, and the task rows."""

    run_a: str
    run_b: str
    verdict: str
    scope: str                       # "macro average over 4 tasks" or the task's name
    diff: float
    low: float
    high: float
    scale: float
    confidence: float
    adjustment: str                  # "holm", "bh" or "none": what the task verdicts follow
    rows: tuple[TaskRow, ...]
    n_warnings: int


@dataclass(frozen=True)
class PlanNeed:
    run_a: str
    run_b: str
    task: str
    items: int
    pilot_n: int


@dataclass(frozen=True)
class PlanFinding:
    """Items needed to detect ``gap`` (metric units) in a paired comparison at ``alpha`` and
    ``power``, one entry per pilot pair and task (the planner section's numbers)."""

    gap: float
    alpha: float
    power: float
    source: str
    needs: tuple[PlanNeed, ...]


@dataclass(frozen=True)
class KeyFindings:
    top_groups: tuple[TopGroup, ...]
    comparisons: tuple[ComparisonFinding, ...]
    plan: PlanFinding | None

    def __bool__(self) -> bool:
        return bool(self.top_groups or self.comparisons or self.plan)


def key_findings(report: Report) -> KeyFindings:
    """The key findings of ``report`` (module docstring); sections the report leaves out
    contribute nothing."""
    return KeyFindings(top_groups=top_groups(report) if report.has("leaderboard") else (),
                       comparisons=tuple(_comparison(s.comparison) for s in report.comparisons)
                       if report.has("comparisons") else (),
                       plan=_plan(report) if report.has("planner") else None)


def _proportion_scale(values) -> float:
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    return 100.0 if len(v) and bool(((v >= 0) & (v <= 1)).all()) else 1.0


def top_groups(report: Report) -> tuple[TopGroup, ...]:
    """The top group on the macro average when the tiers have one, else one per task."""
    board = report.leaderboard
    tiers = board.tiers if board is not None else pd.DataFrame()
    if board is None or not len(tiers):
        return ()
    tasks = list(dict.fromkeys(tiers["task"].astype(str)))
    chosen = [AVERAGE_TASK] if AVERAGE_TASK in tasks else tasks
    return tuple(g for g in (_top_group(board, t, report.spec.confidence) for t in chosen) if g)


def _top_group(board, task: str, confidence: float) -> TopGroup | None:
    t = board.tiers[board.tiers["task"].astype(str) == task]
    if not len(t):
        return None
    best = str(t["best_run"].iloc[0])
    keep = t[t["indistinguishable_from_best"].astype(bool) | (t["run"].astype(str) == best)]
    if task == AVERAGE_TASK:
        frame = board.averages
        n_col = "n_tasks"
    else:
        frame = board.cells[board.cells["task"].astype(str) == task]
        n_col = "n"
    by_run = {str(r.run): r for r in frame.itertuples(index=False)}
    members = []
    for run in keep["run"].astype(str):
        r = by_run.get(run)
        if r is None:
            continue
        n = getattr(r, n_col)
        members.append(Member(run=run, score=float(r.score), low=float(r.low),
                              high=float(r.high), n=None if pd.isna(n) else int(n)))
    if not members:
        return None
    members.sort(key=lambda m: (m.run != best, -m.score if pd.notna(m.score) else 0.0))
    scale = _proportion_scale([v for m in members for v in (m.score, m.low, m.high)])
    metric = "" if task == AVERAGE_TASK else str(board.metrics_by_task.get(task, ""))
    n_tasks = (members[0].n or 0) if task == AVERAGE_TASK else 1
    return TopGroup(task=task, metric=metric, best=best, members=tuple(members),
                    n_compared=len(t), n_tasks=int(n_tasks), scale=scale,
                    confidence=float(board.confidence))


def _comparison(c) -> ComparisonFinding:
    pt = c.per_task
    if c.overall and len(pt) > 1:
        head, scope = c.overall, f"macro average over {len(pt)} tasks"
    else:
        head, scope = pt.iloc[0].to_dict(), str(pt["task"].iloc[0])
    rows = tuple(TaskRow(task=str(r.task), diff=float(r.diff), low=float(r.low),
                         high=float(r.high), scale=float(r.points_scale or 1.0),
                         verdict=str(r.verdict)) for r in pt.itertuples(index=False))
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    return ComparisonFinding(run_a=str(c.run_a), run_b=str(c.run_b), verdict=str(c.verdict),
                             scope=scope, diff=float(head["diff"]), low=float(head["low"]),
                             high=float(head["high"]),
                             scale=float(head.get("points_scale") or 1.0),
                             confidence=float(c.confidence),
                             adjustment=adj[0] if adj else "none", rows=rows,
                             n_warnings=len(c.warnings))


def _plan(report: Report) -> PlanFinding | None:
    if not report.plans:
        return None
    gap = float(report.spec.gap)
    needs = []
    for p in report.plans:
        items = dict(p.required).get(gap)
        if items is None:
            continue
        needs.append(PlanNeed(run_a=p.pilot.run_a, run_b=p.pilot.run_b, task=p.pilot.task,
                              items=int(items), pilot_n=int(p.pilot.n)))
    if not needs:
        return None
    p0 = report.plans[0]
    return PlanFinding(gap=gap, alpha=p0.alpha, power=p0.power,
                       source=", ".join(sorted({p.source for p in report.plans})),
                       needs=tuple(needs))


# ---- the findings in sentences (the report's page 1, the Report page) ----------------------

Text = Callable[[str], str]


def _same(text: str) -> str:
    return text


def _value(x: float, scale: float, signed: bool = False) -> str:
    if x is None or not math.isfinite(float(x)):
        return MISSING
    sign = "+" if signed else ""
    return f"{x * scale:{sign}.1f}" if scale == 100.0 else f"{x:{sign}.4g}"


def _with_interval(score: float, low: float, high: float, scale: float,
                   signed: bool = False) -> str:
    """"78.1% [74.8, 81.5]" (proportions) or "0.53 [0.41, 0.66]"."""
    unit = "%" if scale == 100.0 and not signed else ""
    if not all(v is not None and math.isfinite(float(v)) for v in (low, high)):
        return f"{_value(score, scale, signed)}{unit} (no interval)"
    return (f"{_value(score, scale, signed)}{unit} [{_value(low, scale, signed)}, "
            f"{_value(high, scale, signed)}]")


def top_group_sentence(g: TopGroup, nm: Text = _same, esc: Text = _same) -> str:
    """"On the macro average over 4 tasks, the best run is X (78.1% [74.8, 81.5]); ..." with
    names through ``nm`` and other text through ``esc`` (escaping for HTML or Markdown)."""
    def member(m: Member) -> str:
        return f"{nm(m.run)} ({esc(_with_interval(m.score, m.low, m.high, g.scale))})"
    others = g.n_compared - 1
    if g.task == AVERAGE_TASK:
        where, pool = f"On the macro average over {g.n_tasks} tasks", "with those tasks"
    else:
        where, pool = f"On {nm(g.task)} ({esc(g.metric)})", "with item scores"
    best, rest = g.members[0], g.members[1:]
    text = f"{where}, the best run is {member(best)}"
    if rest:
        text += (f"; not distinguishable from it: {', '.join(member(m) for m in rest)} (the "
                 f"top group holds {len(g.members)} of {g.n_compared} runs {pool})")
    elif others:
        text += (f"; each of the {others} other run{'s' if others != 1 else ''} {pool} is "
                 f"distinguishably worse")
    return (f"{text} (paired tests on shared items, Holm-adjusted; {g.confidence:.0%} "
            f"intervals).")


def comparison_sentences(f: ComparisonFinding, nm: Text = _same,
                         esc: Text = _same) -> tuple[str, str]:
    """(headline, interval line): "B against A: <compare's verdict>" and "B − A, macro
    average over 4 tasks: +0.5 [-3.8, +4.9] points (95% CI)."."""
    unit = "points" if f.scale == 100.0 else "metric units"
    head = f"{nm(f.run_b)} against {nm(f.run_a)}: {esc(f.verdict)}"
    where = "" if len(f.rows) == 1 else f", {esc(f.scope)}"
    warn = (f"; {f.n_warnings} protocol or pairing warning{'s' if f.n_warnings != 1 else ''} "
            f"in the evidence" if f.n_warnings else "")
    if all(math.isfinite(v) for v in (f.low, f.high)):
        gap = (f"{_with_interval(f.diff, f.low, f.high, f.scale, signed=True)} {unit} "
               f"({f.confidence:.0%} CI)")
    else:
        gap = f"{_value(f.diff, f.scale, signed=True)} {unit}, no interval"
    line = f"B − A{where}: {gap}{warn}."
    return head, line


def plan_sentences(p: PlanFinding, nm: Text = _same, esc: Text = _same) -> tuple[str, list[str]]:
    """(lead, one line per pilot pair): the items needed for the gap of interest."""
    lead = (f"To detect a {p.gap * 100:.0f}-point gap in a paired comparison (alpha = "
            f"{p.alpha:.2g}, power {p.power:.0%}), with the spread of per-item differences of "
            f"each pilot pair ({esc(p.source)}):")
    pairs: dict[tuple[str, str], list[str]] = {}
    for x in p.needs:
        pairs.setdefault((x.run_b, x.run_a), []).append(f"{nm(x.task)} {x.items:,}")
    return lead, [f"{nm(b)} vs {nm(a)}: {', '.join(tasks)} items"
                  for (b, a), tasks in pairs.items()]
