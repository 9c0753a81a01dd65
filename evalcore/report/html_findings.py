"""The report's first page: key findings (``evalcore.report.findings``) in the sentences the
Report page shows too, and one small table per comparison, before the evidence."""

from __future__ import annotations

from evalcore.analysis.verdicts import ADJUSTMENT_NAMES
from evalcore.report.findings import (ComparisonFinding, KeyFindings, comparison_sentences,
                                      plan_sentences, top_group_sentence)
from evalcore.report.format import e, gap_unit, interval, name, table


def comparison_html(f: ComparisonFinding) -> str:
    level = f"{f.confidence:.0%}"
    head, line = comparison_sentences(f, name, e)
    out = f"<div class='verdict'>{head}</div><p>{line}</p>"
    if len(f.rows) == 1:
        return out
    adj = ADJUSTMENT_NAMES.get(f.adjustment, "")
    rows = [[name(r.task), interval(r.diff, r.low, r.high, r.scale, signed=True), e(r.verdict)]
            for r in f.rows]
    return out + table(
        ["Task", f"B − A [{level} CI{', unadjusted' if adj else ''}] ({gap_unit(f.scale)})",
         f"Verdict{f' (follows the {adj}-adjusted p)' if adj else ''}"], rows,
        numeric={1}, text={2}, css="findings")


def findings_section(k: KeyFindings) -> str:
    out = ['<section id="findings"><h2>Key findings</h2>']
    if k.top_groups:
        out.append("<h3>Leaderboard: the top group</h3><ul>"
                   + "".join(f"<li>{top_group_sentence(g, name, e)}</li>" for g in k.top_groups)
                   + "</ul>")
    if k.comparisons:
        out.append("<h3>Comparisons</h3>" + "".join(comparison_html(f) for f in k.comparisons))
    if k.plan is not None:
        lead, pairs = plan_sentences(k.plan, name, e)
        out.append(f"<h3>Items needed</h3><p>{lead}</p><ul>"
                   + "".join(f"<li>{x}</li>" for x in pairs) + "</ul>")
    out.append("<p class='muted'>The evidence follows: leaderboard, comparisons, and how "
               "each number was computed.</p></section>")
    return "".join(out)
