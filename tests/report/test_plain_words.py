"""Plain words: no internal name (``__average__``, ``se_iid``, ``clustered-t``, format ids),
no raw None/NaN, anywhere a reader looks: the HTML's text, the LaTeX tables, the methods
paragraph. Method names are ``evalcore.words``'."""

from __future__ import annotations

import pytest

from evalcore import words
from evalcore.ingest import detect, parse_paths
from evalcore.report import ReportSpec, build_report, methods_text
from evalcore.report.html import render_html
from evalcore.report.latex import STYLES, latex_document, report_tables
from evalcore.store import Store
from tests.report.conftest import EVIL, EVIL_B, forbidden_in, visible_text


def _surfaces(report) -> dict[str, str]:
    return {"html": visible_text(render_html(report)), "methods": methods_text(report),
            **{f"latex-{s}": latex_document(report_tables(report, style=s)) for s in STYLES}}


@pytest.mark.parametrize("which", ["demo_report", "default_report"])
def test_demo_reports_speak_plainly(which, request):
    for surface, text in _surfaces(request.getfixturevalue(which)).items():
        assert forbidden_in(text) == [], surface


def test_method_names_are_the_words_ones(demo_report):
    text = visible_text(render_html(demo_report))
    pt = demo_report.comparisons[0].comparison.per_task
    for m in pt["interval_method"]:
        assert words.label("paired", m) in text
    for m in demo_report.leaderboard.cells["method"]:
        assert words.label("score", m) in text


def test_a_helm_cell_without_stderr_and_hostile_names_speak_plainly(tmp_path, evil_store):
    """A HELM main metric without per-instance values (no stderr, no interval: the missing
    values must print as '–', never None/NaN), and names that are HTML."""
    from tests.ingest.test_helm import _bbq_run
    em = [1.0] * 40 + [0.0] * 10
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([_bbq_run(tmp_path, em, em, 0.9)]))
    helm = build_report(store, ReportSpec())
    assert helm.leaderboard.cells["low"].isna().all()
    evil = build_report(evil_store, ReportSpec(comparisons=((EVIL, EVIL_B),)))
    for report in (helm, evil):
        for surface, text in _surfaces(report).items():
            assert forbidden_in(text) == [], surface


def test_every_file_format_has_a_readable_name():
    for fmt in detect.FORMATS:
        assert fmt in words.FILE_FORMATS and words.label("file", fmt) != fmt
