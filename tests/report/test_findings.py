"""Key findings are the analysis layer's results as they are (never re-decided), and the
evidence is compact: summary-only runs in one line, a few disagreements, provenance in one
table."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urlparse

import pytest

from evalcore import analysis
from evalcore.analysis import AVERAGE_TASK
from evalcore.errors import AnalysisError
from evalcore.ingest import parse_paths
from evalcore.report import ReportSpec, build_report, methods_text
from evalcore.report.findings import key_findings
from evalcore.report.format import cut, name
from evalcore.report.html import render_html
from evalcore.report.html_compare import PROMPT_CHARS, TEXT_CHARS
from evalcore.store import Store
from tests.report.conftest import DEMO, A, B


def _section(text: str, sid: str) -> str:
    return text.split(f'<section id="{sid}"')[1].split("</section>")[0]


def test_comparison_findings_are_compares_rows(demo_store, demo_report):
    found = key_findings(demo_report)
    assert len(found.comparisons) == len(demo_report.comparisons) == 2
    for f in found.comparisons:
        cmp = analysis.compare(demo_store, f.run_a, f.run_b)
        assert f.verdict == cmp.verdict
        assert (f.diff, f.low, f.high) == (cmp.overall["diff"], cmp.overall["low"],
                                           cmp.overall["high"])
        assert f.scope == f"macro average over {len(cmp.per_task)} tasks"
        assert [r.verdict for r in f.rows] == list(cmp.per_task["verdict"])
        assert [(r.low, r.high) for r in f.rows] == list(zip(cmp.per_task["low"],
                                                             cmp.per_task["high"]))
        assert f.adjustment == "holm"


def test_one_task_comparison_finding_is_the_task_row(demo_store):
    rep = build_report(demo_store, ReportSpec(tasks=("arc_easy_demo",), comparisons=((A, B),),
                                              sections=("comparisons",)))
    f = key_findings(rep).comparisons[0]
    cmp = analysis.compare(demo_store, A, B, task="arc_easy_demo")
    row = cmp.per_task.iloc[0]
    assert f.scope == "arc_easy_demo" and f.verdict == cmp.verdict
    assert (f.diff, f.low, f.high) == (row["diff"], row["low"], row["high"])


def test_top_group_is_the_tier_of_the_macro_average(demo_report):
    board = demo_report.leaderboard
    (g,) = key_findings(demo_report).top_groups
    tiers = board.tiers[board.tiers["task"] == AVERAGE_TASK]
    best = str(tiers["best_run"].iloc[0])
    want = set(tiers.loc[tiers["indistinguishable_from_best"].astype(bool), "run"]) | {best}
    assert g.task == AVERAGE_TASK and g.best == best == g.members[0].run
    assert {m.run for m in g.members} == want and g.n_compared == len(tiers)
    avg = board.averages.set_index("run")
    for m in g.members:
        assert (m.score, m.low, m.high) == tuple(avg.loc[m.run, ["score", "low", "high"]])
        assert m.n == avg.loc[m.run, "n_tasks"]
    page = _section(render_html(demo_report), "findings")
    assert name(best) in page and "78.1% [74.8, 81.5]" in page


def test_top_group_per_task_without_an_average_tier(demo_store):
    rep = build_report(demo_store, ReportSpec(tasks=("arc_easy_demo",),
                                              sections=("leaderboard",), n_resamples=200))
    (g,) = key_findings(rep).top_groups
    t = rep.leaderboard.tiers
    assert g.task == "arc_easy_demo" and g.metric == "acc"
    assert {m.run for m in g.members} == set(t.loc[t["indistinguishable_from_best"], "run"])
    assert len(g.members) > 1                       # several runs tie with the best here


def test_items_needed_come_from_the_planner_rows(demo_report):
    plan = key_findings(demo_report).plan
    assert plan.gap == 0.02 and plan.power == 0.8
    rows = {(p.pilot.run_a, p.pilot.run_b, p.pilot.task): dict(p.required)
            for p in demo_report.plans}
    assert len(plan.needs) == len(rows)
    for x in plan.needs:
        assert x.items == rows[(x.run_a, x.run_b, x.task)][0.02]


def test_the_gap_of_interest_is_sized_even_when_not_a_delta(demo_store):
    rep = build_report(demo_store, ReportSpec(comparisons=((A, B),), gap=0.03,
                                              sections=("comparisons", "planner")))
    assert all(0.03 in dict(p.required) for p in rep.plans)
    assert "To detect a 3-point gap" in render_html(rep)
    with pytest.raises(AnalysisError, match="positive"):
        build_report(demo_store, ReportSpec(gap=0.0))


def test_summary_only_runs_are_grouped_by_series_and_seed(demo_report):
    groups = {(g.kind, g.name): g.runs for g in demo_report.summary_only}
    assert set(groups) == {("checkpoint series", "demo-lab/kite-1b-mixA"),
                           ("checkpoint series", "demo-lab/kite-1b-mixB"),
                           ("seeds", "demo-lab/wren-1b"), ("seeds", "demo-lab/wren-1b-dedup")}
    mix_a = groups[("checkpoint series", "demo-lab/kite-1b-mixA")]
    assert mix_a == tuple(f"demo-lab/kite-1b-mixA-step{k}" for k in range(2000, 12001, 2000))
    assert len(demo_report.collapsed_runs()) == 18


def test_summary_only_runs_are_one_line_on_the_board_and_listed_in_the_appendix(demo_report,
                                                                               demo_html):
    board = _section(demo_html, "leaderboard")
    assert "+ 18 summary-only runs" in board
    assert f"checkpoint series {name('demo-lab/kite-1b-mixA')} (6 checkpoints)" in board
    rows = re.findall(r"<tr><td><span class=\"name[^>]*>(.*?)</span></td>", board)
    # 12 runs with item scores, and the 2 LLM-judged runs (scripts/demo_judge.py)
    assert len(rows) == 14 and not any("kite" in r or "wren" in r for r in rows)
    appendix = _section(demo_html, "appendix")
    cells = demo_report.leaderboard.cells.set_index("run")
    for run in demo_report.collapsed_runs():
        c = cells.loc[run]
        assert f"{100 * c.score:.1f} [{100 * c.low:.1f}, {100 * c.high:.1f}]" in appendix
    # inside a series a run is named by what follows the series' name
    assert f"<b>Checkpoint series {name('demo-lab/kite-1b-mixA')}</b> (6): " \
           f"{name('step2000')} " in appendix


def test_nothing_is_collapsed_when_every_run_is_summary_only(tmp_path):
    store = Store(tmp_path / "store")
    store.ingest(parse_paths([DEMO / "noise"]))
    rep = build_report(store, ReportSpec(sections=("leaderboard",)))
    assert rep.summary_only and rep.collapsed_runs() == set()
    board = _section(render_html(rep), "leaderboard")
    assert "summary-only runs" not in board
    assert name("demo-lab/kite-1b-mixA-step2000") in board


def test_a_few_examples_per_comparison_with_the_link_to_all(demo_store, demo_report,
                                                            demo_html):
    k = demo_report.spec.n_examples
    for i, sec in enumerate(demo_report.comparisons):
        ex = sec.examples
        assert (ex["cell"].value_counts() <= k).all()
        # the tasks in turn: the first rows of cell b come from different tasks
        first_b = ex[ex["cell"] == "b"]["task"].tolist()
        tasks = list(sec.n_discordant)
        assert len(first_b) == k
        assert first_b == [tasks[j % len(tasks)] for j in range(k)]
        c = sec.comparison
        for row in ex.itertuples(index=False):
            items = analysis.discordant_items(demo_store, c.run_a, c.run_b, row.task,
                                              str(c.per_task.set_index("task").loc[row.task,
                                                                                   "metric"]),
                                              cell=row.cell)
            assert row.item_id in set(items["item_id"])
    block = demo_html.split('id="comparison-1"')[1].split('id="comparison-2"')[0]
    url = html.unescape(re.search(r"<span class='url'>(.*?)</span>", block).group(1)
                        .replace("<wbr>", ""))
    q = parse_qs(urlparse(url).query)
    assert urlparse(url).path == "/compare"
    assert q["run_a"] == [A] and q["run_b"] == [B] and q["cell"] == ["b"]
    texts = re.findall(r'<table class="examples">.*?</table>', block)[0]
    cells = [html.unescape(t) for t in re.findall(r'<td class="text">(.*?)</td>', texts)]
    assert cells and all(len(t) <= PROMPT_CHARS + 2 for t in cells)
    assert max(len(t) for t in cells[1::4]) <= TEXT_CHARS + 2


def test_texts_are_cut_and_names_break_only_at_separators():
    long = "Question: " + "word " * 100 + "\nAnswer:"
    text = cut(long, PROMPT_CHARS, one_line=True)
    assert text.endswith(" …") and len(text) <= PROMPT_CHARS + 2 and "\n" not in text
    assert cut(None, 10) == "–" and cut(float("nan"), 10) == "–"
    assert name("demo-org/atlas-13b") == '<span class="name short">demo-org/atlas-13b</span>'
    long_name = "helm/together/llama-2-70b_chat:subject=all,method=multiple_choice_joint"
    assert name(long_name) == ('<span class="name">helm/<wbr>together/<wbr>llama-<wbr>2-<wbr>'
                               '70b_<wbr>chat:subject=all,method=multiple_<wbr>choice_<wbr>'
                               'joint</span>')
    assert name("<b>x-y</b>" * 5).count("&lt;/<wbr>b&gt;") == 5      # escaped first


def test_provenance_is_one_line_per_file_with_the_full_hash_kept(demo_store, demo_html):
    appendix = _section(demo_html, "appendix")
    n_files = 0
    for rid in demo_store.runs()["run_id"]:
        for f in demo_store.run_info(int(rid))["files"]:
            n_files += 1
            sha = f["sha256"]
            assert (f"title='{sha}' data-sha256='{sha}'>{sha[:12]}</span>") in appendix
    table = appendix.split("<table class='provenance'>")[1].split("</table>")[0]
    assert table.count("<tr") == n_files + 1            # the header and one row per file
    assert "lm_eval samples (JSONL)" in table and "lm_eval_samples_jsonl" not in table
    assert "/work/" not in re.sub(r"title='[^']*'", "", table)   # file names, not paths


def test_sentences_never_print_nan():
    from evalcore.report.findings import ComparisonFinding, TaskRow, comparison_sentences
    nan = float("nan")
    f = ComparisonFinding(run_a="a", run_b="b", verdict="not enough data for an interval",
                          scope="t", diff=0.01, low=nan, high=nan, scale=100.0,
                          confidence=0.95, adjustment="none",
                          rows=(TaskRow("t", 0.01, nan, nan, 100.0, "x"),), n_warnings=0)
    head, line = comparison_sentences(f)
    assert "nan" not in (head + line).lower()
    assert line == "B − A: +1.0 points, no interval."


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory):
    """Three runs of a tidy table on 14 tasks of 30 items (0/1 scores)."""
    tmp = tmp_path_factory.mktemp("report-wide")
    rows = ["model,task,item_id,score"]
    for m, shift in (("lab/alpha", 0), ("lab/beta", 1), ("lab/gamma", 2)):
        for t in range(14):
            rows += [f"{m},task_{t:02d},{i},{int((i + shift * t) % 3 != 0)}" for i in range(30)]
    (tmp / "wide.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    store = Store(tmp / "store")
    store.ingest(parse_paths([tmp / "wide.csv"]))
    return build_report(store, ReportSpec(sections=("leaderboard", "methods"), n_resamples=100))


def test_a_wide_board_is_split_into_tables_that_fit_a_page(wide_report):
    from evalcore.report.html_board import COLUMNS_PER_TABLE, FOREST_TASKS
    board = _section(render_html(wide_report), "leaderboard")
    tables = re.findall(r'<table class="board">.*?</table>', board)
    assert len(tables) == -(-(1 + 14) // COLUMNS_PER_TABLE)      # the average and 14 tasks
    for t in tables:
        head = t.split("</thead>")[0]
        assert head.count("</th>") <= COLUMNS_PER_TABLE + 1 and ">Run</th>" in head
        assert t.count("<tr>") == 1 + 3                               # the header, 3 runs
    for k in range(14):
        assert sum(f">task_{k:02d}</span>" in t for t in tables) == 1
    assert "Macro average" in tables[0]
    assert f"Drawn: the {FOREST_TASKS} tasks with the most runs of 14" in board
    text = methods_text(wide_report)
    assert "Scores are reported on 14 tasks: 14 tasks on score (n = 30 items)" in text
    assert "task_00, task_01" not in text                            # counted, not listed
