"""evalcore.tables: the one Markdown/LaTeX writer behind the CLI, the pages and the report."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from evalcore import tables
from evalcore.commands import _shared


def _markdown_cells(line: str) -> list[str]:
    """A Markdown table row split the way GitHub splits it: at pipes not escaped by a
    backslash (a backslash escaped by another backslash escapes nothing)."""
    cells, text, i = [], "", 0
    body = line.strip()[1:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            text += body[i:i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(text.strip())
            text = ""
        else:
            text += ch
        i += 1
    return cells + [text.strip()]


def test_markdown_cell_with_a_backslash_before_a_pipe_stays_one_cell():
    """A task name such as ``a\\|b``: escaping only the pipe would leave ``a\\\\|b``, whose
    pipe then splits the cell (the pages' export did that). Both exports keep two cells."""
    df = pd.DataFrame({"task": ["a\\|b"], "n": [3]})
    for text in (tables.to_markdown(df), _shared.to_markdown(df)):
        row = text.strip().splitlines()[2]
        assert len(_markdown_cells(row)) == 2, row
        assert re.sub(r"\\(.)", r"\1", _markdown_cells(row)[0]) == "a\\|b"


def test_markdown_table_escapes_header_and_line_breaks():
    text = tables.markdown_table(["a|b", "c"], [["x\ny", "z\r"]])
    assert text.splitlines() == [r"| a\|b | c |", "| --- | --- |", "| x y | z  |"]


def test_cli_latex_escapes_angle_brackets_as_the_report_does():
    """``<`` and ``>`` print as other glyphs in LaTeX's default font encoding; the CLI's
    LaTeX now escapes them with the report's ``latex_escape``."""
    df = pd.DataFrame({"run": ["<b>x</b>"], "score": [0.5]})
    tex = _shared.to_latex(df)
    assert r"\textless{}b\textgreater{}x\textless{}/b\textgreater{}" in tex
    assert "<" not in tex and ">" not in tex
    assert tables.latex_escape("a<b>c") == r"a\textless{}b\textgreater{}c"


def test_page_latex_export_is_pandas_booktabs_layout():
    """The pages' ``to_latex`` writes what pandas' ``DataFrame.to_latex`` writes for the
    same text cells (same alignment rule: numeric and boolean columns right-aligned)."""
    df = pd.DataFrame({"run": ["a_b", "x"], "n": [3, 4], "ok": [True, False],
                       "f": [0.123456, 2.5]})
    want = df.assign(run=[tables.latex_escape(v) for v in df["run"]]).to_latex(
        index=False, escape=False, float_format="%.4f", na_rep="")
    assert tables.to_latex(df) == want


def test_page_latex_export_joins_intervals_at_the_estimate():
    df = pd.DataFrame({"run": ["r"], "low": [0.1], "high": [0.3], "diff": [0.2], "n": [5.0]})
    tex = tables.to_latex(df)
    assert r"\begin{tabular}{lrl}" in tex          # run, n (a count), diff [low, high]
    assert r"r & 5 & 0.2 [0.1, 0.3] \\" in tex
    assert r"\caption{Estimates with intervals [low, high].}" in tex


def test_interval_cell_is_the_reports():
    from evalcore.report import latex
    assert latex.interval_cell is tables.interval_cell
    assert latex.latex_escape is tables.latex_escape
    assert tables.interval_cell(np.nan, 0, 1, scale=1.0, style="pm") == ("--", False)


def test_slug():
    assert tables.slug("Mistral/7B vs <x>") == "Mistral_7B_vs_x"
    assert tables.slug("///") == "table" and tables.slug("", fallback="figure") == "figure"
    assert len(tables.slug("a" * 200)) == 80
