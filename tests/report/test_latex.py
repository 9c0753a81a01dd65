"""LaTeX tables: intervals in either style, booktabs, a caption naming the method, escaping,
and they compile when pdflatex is installed."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from evalcore import analysis
from evalcore.report import ReportSpec, build_report
from evalcore.report.latex import (comparison_table, interval_cell, latex_document,
                                   latex_escape, leaderboard_table, report_tables)
from tests.report.conftest import A, B, EVIL, EVIL_B


def test_interval_cell_styles():
    assert interval_cell(0.719, 0.681, 0.755, scale=100.0, style="brackets") == \
        ("71.9 [68.1, 75.5]", False)
    assert interval_cell(0.719, 0.681, 0.757, scale=100.0, style="pm") == ("71.9 $\\pm$ 3.8", False)
    text, asym = interval_cell(0.77, 0.707, 0.823, scale=100.0, style="pm")
    assert asym and text == "77.0$^{+5.3}_{-6.3}$"          # Wilson: not one half-width
    assert interval_cell(0.01, -0.05, 0.07, scale=100.0, style="brackets", signed=True)[0] == \
        "$+$1.0 [$-$5.0, $+$7.0]"
    with pytest.raises(ValueError):
        interval_cell(0.5, 0.4, 0.6, scale=100.0, style="sd")


def test_leaderboard_table_numbers_booktabs_and_caption(demo_store):
    board = analysis.leaderboard(demo_store, task="arc_easy_demo", include_ranks=False,
                                 method="clopper-pearson", confidence=0.9)
    tex = leaderboard_table(board, style="brackets")
    for r in board.cells.itertuples(index=False):
        assert f"{latex_escape(r.run)} & {100 * r.score:.1f} [{100 * r.low:.1f}, {100 * r.high:.1f}]" in tex
    assert tex.count("\\toprule") == tex.count("\\midrule") == tex.count("\\bottomrule") == 1
    assert "\\hline" not in tex
    assert "90\\% intervals (Clopper-Pearson exact interval)" in tex and "n = 200" in tex


def test_comparison_table_has_paired_ci_and_mcnemar(demo_store):
    cmp = analysis.compare(demo_store, A, B)
    tex = comparison_table(cmp, style="pm")
    for r in cmp.per_task.itertuples(index=False):
        half = 100 * (r.high - r.diff)
        assert f"{latex_escape(r.task)} & {int(r.n)} &" in tex
        assert f"$\\pm$ {half:.1f}" in tex and f"{r.p_exact:.4f}" in tex
    assert "exact two-sided McNemar" in tex and "Holm" in tex and "Macro average" in tex
    # interval methods by their readable names (evalcore.words), never the internal keys
    assert "Tango score interval" in tex and "tango" not in tex


def test_user_strings_are_escaped(evil_store):
    report = build_report(evil_store, ReportSpec(comparisons=((EVIL, EVIL_B),),
                                                 sections=("leaderboard", "comparisons")))
    tex = report_tables(report)
    assert "\\textless{}script\\textgreater{}alert(1)" in tex and "<script>" not in tex


@pytest.mark.skipif(not shutil.which("pdflatex"), reason="pdflatex not installed "
                    "(Debian: texlive-latex-base texlive-latex-recommended)")
@pytest.mark.parametrize("style", ["brackets", "pm"])
def test_tables_compile(demo_report, tmp_path, style):
    src = tmp_path / "tables.tex"
    src.write_text(latex_document(report_tables(demo_report, style=style)), encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                           "-output-directory", str(tmp_path), str(src)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "tables.pdf").read_bytes()[:5] == b"%PDF-"
