"""The report HTML: offline (no external URL, one plotly.js), escaped, and showing the
analysis layer's numbers."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from evalcore import analysis
from evalcore import stats as st
from evalcore.report import ReportSpec, build_report
from evalcore.report.html import render_html
from tests.report.conftest import A, B, B_CHAT, EVIL, EVIL_B


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of every <script>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parse(text: str) -> _Tags:
    p = _Tags()
    p.feed(text)
    return p


def test_offline_no_external_reference_and_one_plotly_bundle(demo_html):
    p = parse(demo_html)
    for tag, attrs in p.tags:
        assert "src" not in attrs, (tag, attrs)           # nothing loaded from anywhere
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, attrs)
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
    bundles = [s for s in p.scripts if len(s) > 1_000_000]
    assert len(bundles) == 1
    assert len(re.findall(r"\* plotly\.js v\d", demo_html)) == 1
    # every figure is drawn by a small inline script calling the one bundle
    figures = [s for s in p.scripts if "Plotly.newPlot" in s and len(s) < 1_000_000]
    assert len(figures) == demo_html.count('class="plotly-graph-div"') >= 4
    csp = [a for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]


def test_sections_and_page_breaks(demo_report, demo_html):
    for section in ("leaderboard", "comparisons", "repeats", "planner", "methods", "provenance"):
        assert demo_report.has(section)
    order = [demo_html.index(f'<section id="{s}"') for s in
             ("findings", "leaderboard", "comparisons", "repeats", "planner", "methods",
              "appendix")]
    assert order == sorted(order)                   # the answer first, then the evidence
    assert "<h3>Provenance</h3>" in demo_html.split('<section id="appendix"')[1]
    assert "break-before: page" in demo_html


def test_leaderboard_numbers_are_the_analysis_layers(demo_store, demo_spec, demo_html):
    board = analysis.leaderboard(demo_store, method=demo_spec.method,
                                 confidence=demo_spec.confidence,
                                 n_resamples=demo_spec.n_resamples, seed=demo_spec.seed)
    for c in board.cells.itertuples(index=False):
        text = f"{100 * c.score:.1f} [{100 * c.low:.1f}, {100 * c.high:.1f}]"
        assert text in demo_html, (c.run, c.task, text)


def _num_cells(*values) -> str:
    return "".join(f'<td class="num">{v}</td>' for v in values)


def test_comparison_numbers_verdict_and_2x2(demo_store, demo_html):
    for a, b in ((A, B), (B, B_CHAT)):
        cmp = analysis.compare(demo_store, a, b)
        assert f"Verdict: {cmp.verdict}" in demo_html
        for r in cmp.per_task.itertuples(index=False):
            ci = f"{100 * r.diff:+.1f} [{100 * r.low:+.1f}, {100 * r.high:+.1f}]"
            assert ci in demo_html, (a, b, r.task)
            # the 2x2 table in one row: both right, only B (b), only A (c), both wrong, and
            # the exact McNemar p
            p = "&lt;0.0001" if r.p_exact < 1e-4 else f"{r.p_exact:.4f}"
            assert _num_cells(f"{int(r.both):,}", f"{int(r.b):,}", f"{int(r.c):,}",
                              f"{int(r.neither):,}", p) in demo_html, (a, b, r.task)
        for w in cmp.warnings:
            assert w.replace("'", "&#x27;") in demo_html
    # example disagreements are the first items of cells b and c
    items = analysis.discordant_items(demo_store, A, B, "arc_easy_demo", "acc", cell="b")
    assert f"<td>{items['item_id'].iloc[0]}</td><td>only B right</td>" in demo_html


def test_planner_numbers_follow_the_pilot(demo_store, demo_report, demo_html):
    pilot = analysis.plan_from_pair(demo_store, A, B, "arc_easy_demo")
    need = {d: st.required_items(d, sd_diff=pilot.sd_diff, alpha=0.05, power=0.8)
            for d in (0.01, 0.02, 0.05)}
    mde = st.minimum_detectable_effect(pilot.n, sd_diff=pilot.sd_diff, alpha=0.05, power=0.8)
    planner = demo_html.split('<section id="planner"')[1].split("</section>")[0]
    row = _num_cells(f"{pilot.n:,}", f"{100 * pilot.sd_diff:.1f}",
                     f"{100 * pilot.disagreement:.1f}", "1.00", f"{100 * mde:.1f}",
                     *(f"{need[d]:,}" for d in (0.01, 0.02, 0.05)))
    assert row in planner
    # the key findings give the items needed for the gap of interest (2 points) from it
    findings = demo_html.split('<section id="findings"')[1].split("</section>")[0]
    assert "To detect a 2-point gap" in findings
    assert f'<span class="name short">arc_easy_demo</span> {need[0.02]:,}' in findings


def test_repeats_and_clusters_where_the_data_has_them(demo_store, demo_report, demo_html):
    cl = analysis.clusters(demo_store, A, "reading_demo")
    assert any(c.run == A and c.task == "reading_demo" for c in demo_report.clusters)
    assert f"{cl.design_effect:.2f}" in demo_html and f"{cl.icc:.3f}" in demo_html
    rep = analysis.repeats(demo_store, "hf/demo-org/atlas-13b", "trivia_demo")
    assert any(r.run == rep.run for r in demo_report.repeats)
    assert f"{rep.between:.4g}" in demo_html


def test_provenance_lists_every_file_with_hash(demo_store, demo_html):
    for rid in demo_store.runs()["run_id"]:
        info = demo_store.run_info(int(rid))
        assert info["files"]
        for f in info["files"]:
            assert f["sha256"] in demo_html


def test_every_user_string_is_escaped(evil_store):
    report = build_report(evil_store, ReportSpec(comparisons=((EVIL, EVIL_B),)))
    text = render_html(report)
    for raw in (EVIL, EVIL_B, "<b>task</b>", "<i>1</i>", "<u>c1</u>"):
        assert raw not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    p = parse(text)
    assert not [t for t, a in p.tags if t == "img"]
    assert all("alert" not in s for s in p.scripts if "Plotly.newPlot" not in s
               and len(s) < 1_000_000)
    # inside figure JSON the names are entities too (Plotly shows them as characters)
    assert "&lt;script&gt;alert(1)&lt;\\u002fscript&gt;" in text or \
        "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_sections_are_optional(demo_store):
    report = build_report(demo_store, ReportSpec(sections=("methods", "provenance"),
                                                 tasks=("arc_easy_demo",)))
    text = render_html(report)
    assert '<section id="methods"' in text and "<h3>Provenance</h3>" in text
    assert '<section id="leaderboard"' not in text and "Plotly.newPlot" not in text
    assert '<section id="findings"' not in text            # nothing to find without them
    assert report.leaderboard is None and not report.comparisons


def test_task_subset_keeps_the_analysis_rules(demo_store):
    spec = ReportSpec(tasks=("arc_easy_demo", "boolq_demo"), comparisons=((A, B),),
                      sections=("leaderboard", "comparisons"))
    report = build_report(demo_store, spec)
    assert set(report.leaderboard.cells["task"]) == {"arc_easy_demo", "boolq_demo"}
    cmp = report.comparisons[0].comparison
    assert list(cmp.per_task["task"]) == ["arc_easy_demo", "boolq_demo"]
    # the macro average over the two tasks, SE = sqrt(sum SE_t^2)/k (analysis rule; each
    # SE_t at least its task interval's half-width / z)
    z = 1.959963984540054
    pt = cmp.per_task
    se = np.fmax(pt["se"].to_numpy(float),
                 (pt["high"].to_numpy(float) - pt["low"].to_numpy(float)) / (2 * z))
    assert cmp.overall["se"] == pytest.approx(np.sqrt(np.sum(se ** 2)) / 2)
    assert cmp.overall["diff"] == pytest.approx(cmp.per_task["diff"].mean())
    avg = report.leaderboard.averages
    assert set(avg["n_tasks"]) <= {1, 2}


def test_unknown_task_or_section_is_a_clear_error(demo_store):
    from evalcore.errors import AnalysisError
    with pytest.raises(AnalysisError, match="nope"):
        build_report(demo_store, ReportSpec(tasks=("nope",)))
    with pytest.raises(AnalysisError, match="unknown report section"):
        build_report(demo_store, ReportSpec(sections=("slides",)))
