"""The report's first page: key findings (``evalcore.report.findings``) in sentences and one
small table per comparison, before the evidence."""

from __future__ import annotations

from evalcore.analysis import AVERAGE_TASK
from evalcore.analysis.verdicts import ADJUSTMENT_NAMES
from evalcore.report.findings import ComparisonFinding, KeyFindings, PlanFinding, TopGroup
from evalcore.report.format import e, gap_unit, interval, name, num, table


def _member(m, scale: float) -> str:
    unit = "%" if scale == 100.0 else ""
    return (f"{name(m.run)} ({num(m.score, scale)}{unit} [{num(m.low, scale)}, "
            f"{num(m.high, scale)}])")


def top_group_html(g: TopGroup) -> str:
    level = f"{g.confidence:.0%}"
    if g.task == AVERAGE_TASK:
        where = f"On the macro average over {g.n_tasks} tasks"
        others = f"the {g.n_compared - 1} other run{'s' if g.n_compared != 2 else ''} with " \
                 f"those tasks"
    else:
        where = f"On {name(g.task)} ({e(g.metric)})"
        others = f"the {g.n_compared - 1} other run{'s' if g.n_compared != 2 else ''} with " \
                 f"item scores"
    best, rest = g.members[0], g.members[1:]
    text = f"{where}, the best run is {_member(best, g.scale)}"
    if rest:
        text += ("; not distinguishable from it: " + ", ".join(_member(m, g.scale) for m in rest)
                 + f". The top group holds {len(g.members)} of {g.n_compared} runs")
    elif g.n_compared > 1:
        text += f"; every one of {others} is below it"
    return (f"<li>{text} (paired tests on shared items, Holm-adjusted; {level} intervals)."
            f"</li>")


def comparison_html(f: ComparisonFinding) -> str:
    level = f"{f.confidence:.0%}"
    unit = gap_unit(f.scale)
    head = (f"<div class='verdict'>{name(f.run_b)} against {name(f.run_a)}: "
            f"{e(f.verdict)}</div>")
    where = "" if len(f.rows) == 1 else f", {e(f.scope)}"
    line = (f"<p>B − A{where}: {interval(f.diff, f.low, f.high, f.scale, signed=True)} {unit} "
            f"({level} CI)"
            + (f"; {f.n_warnings} protocol or pairing warning{'s' if f.n_warnings != 1 else ''}"
               f" in the evidence" if f.n_warnings else "") + ".</p>")
    if len(f.rows) == 1:
        return head + line
    adj = ADJUSTMENT_NAMES.get(f.adjustment, "")
    rows = [[name(r.task), interval(r.diff, r.low, r.high, r.scale, signed=True), e(r.verdict)]
            for r in f.rows]
    return head + line + table(
        ["Task", f"B − A [{level} CI{', unadjusted' if adj else ''}] ({unit})",
         f"Verdict{f' (follows the {adj}-adjusted p)' if adj else ''}"], rows,
        numeric={1}, text={2}, css="findings")


def plan_html(p: PlanFinding) -> str:
    gap = num(p.gap, 100.0, 0)
    pairs: dict[tuple[str, str], list[str]] = {}
    for x in p.needs:
        pairs.setdefault((x.run_b, x.run_a), []).append(f"{name(x.task)} {x.items:,}")
    per_pair = "".join(f"<li>{name(b)} vs {name(a)}: {', '.join(tasks)} items</li>"
                       for (b, a), tasks in pairs.items())
    return (f"<p>To detect a {gap}-point gap in a paired comparison (alpha = {p.alpha:.2g}, "
            f"power {p.power:.0%}), with the spread of per-item differences of each pilot "
            f"pair ({e(p.source)}):</p><ul>{per_pair}</ul>")


def findings_section(k: KeyFindings) -> str:
    out = ['<section id="findings"><h2>Key findings</h2>']
    if k.top_groups:
        out.append("<h3>Leaderboard: the top group</h3><ul>"
                   + "".join(top_group_html(g) for g in k.top_groups) + "</ul>")
    if k.comparisons:
        out.append("<h3>Comparisons</h3>" + "".join(comparison_html(f) for f in k.comparisons))
    if k.plan is not None:
        out.append("<h3>Items needed</h3>" + plan_html(k.plan))
    out.append("<p class='muted'>The evidence follows: leaderboard, comparisons, and how "
               "each number was computed.</p></section>")
    return "".join(out)
