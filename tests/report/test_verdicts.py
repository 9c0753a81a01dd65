"""The report shows compare's rows as they are: its verdict words are compare's, for the
whole comparison and for a subset of tasks (a family of its own), in the Report object and
in the HTML and LaTeX it renders."""

from __future__ import annotations

import html

from evalcore import analysis
from evalcore.report import ReportSpec, build_report
from evalcore.report.html import render_html
from evalcore.report.latex import comparison_table
from evalcore.report.methods import methods_text
from tests.report.conftest import A, B


def _same_rows(report_cmp, cmp) -> None:
    got = report_cmp.per_task.set_index("task")
    want = cmp.per_task.set_index("task")
    assert list(got.index) == list(want.index)
    for col in ("verdict", "p_value", "p_adjusted", "low", "high", "low_simultaneous",
                "high_simultaneous", "different"):
        assert got[col].equals(want[col]), col
    assert report_cmp.verdict == cmp.verdict


def test_report_verdicts_are_compares(demo_store, demo_report, demo_html):
    for sec in demo_report.comparisons:
        c = sec.comparison
        cmp = analysis.compare(demo_store, c.run_a, c.run_b, confidence=0.95, adjust="holm")
        _same_rows(c, cmp)
        for v in list(cmp.per_task["verdict"]) + [cmp.verdict]:
            assert html.escape(v, quote=False) in demo_html
    # the methods paragraph states the rule the rows followed
    text = methods_text(demo_report)
    assert "the larger of the two p-values" in text and "Holm-adjusted" in text


def test_report_on_a_task_subset_is_compare_over_those_tasks(demo_store):
    tasks = ("arc_easy_demo", "reading_demo")
    rep = build_report(demo_store, ReportSpec(comparisons=((A, B),), tasks=tasks,
                                              sections=("comparisons", "methods")))
    c = rep.comparisons[0].comparison
    cmp = analysis.compare(demo_store, A, B, tasks=list(tasks))
    _same_rows(c, cmp)
    assert (c.per_task["adjustment"] == "holm").all()
    tex = comparison_table(c)
    assert "the verdicts follow the adjusted p" in tex
    out = render_html(rep)
    for v in c.per_task["verdict"]:
        assert html.escape(v, quote=False) in out
