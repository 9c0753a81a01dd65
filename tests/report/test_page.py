"""Report page, presentation mode, slide exports and the one-slide answer (AppTest)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import streamlit as st
from evalcore import analysis
from evalcore.report import ReportSpec, build_report, methods_paragraphs
from evalcore.report.findings import key_findings
from streamlit.testing.v1 import AppTest

from tests.report.conftest import A, B
from ui.common import md_escape

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120


@pytest.fixture(autouse=True)
def _store_copy(demo_store, tmp_path, monkeypatch):
    """The demo store copied to this test's folder (EVALBARS_STORE), caches cleared."""
    path = tmp_path / "store"
    demo_store.close()                     # a checkpointed catalog: a consistent copy
    shutil.copytree(demo_store.path, path)
    monkeypatch.setenv("EVALBARS_STORE", str(path))
    monkeypatch.setenv("EVALBARS_DEMO", "0")
    st.cache_resource.clear()
    st.cache_data.clear()
    yield path
    st.cache_resource.clear()
    st.cache_data.clear()


def page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=TIMEOUT)


def test_report_page_builds_the_report_and_methods_text(demo_store):
    at = page("report")
    at.query_params["task"] = ["arc_easy_demo"]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="rep_pair_a").set_value(A).run()
    at.selectbox(key="rep_pair_b").set_value(B).run()
    at.button(key="rep_pair_add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    labels = [b.proto.label for b in at.get("download_button")]
    assert "HTML report" in labels
    codes = [c.value for c in at.code]
    command = next(c for c in codes if c.startswith("python -m evalcore report"))
    assert f"--task arc_easy_demo --compare {A} {B}" in command and "--pdf" in command
    assert "--gap" not in command                     # the default gap is not repeated
    expected = build_report(demo_store, ReportSpec(tasks=("arc_easy_demo",),
                                                   comparisons=((A, B),)))
    methods = next(c for c in codes if c.startswith("Data."))
    for heading, text in methods_paragraphs(expected)[:-1]:   # the last one names the time
        assert f"{heading}. {text}" in methods
    cmp = analysis.compare(demo_store, A, B, task="arc_easy_demo")
    assert "B - A" in methods and f"arc_easy_demo n = {int(cmp.per_task['n'].iloc[0])}" in methods
    # the preview is drawn on request and shows the report the download holds (st.iframe
    # with the HTML as srcdoc)
    assert not at.get("iframe")
    at.toggle(key="rep_preview").set_value(True).run()
    frames = at.get("iframe")
    assert len(frames) == 1 and "arc_easy_demo" in frames[0].proto.srcdoc
    assert frames[0].proto.srcdoc.lstrip().lower().startswith("<!doctype html")


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_report_page_opens_on_the_key_findings_it_computed(demo_store):
    """The downloads and the key findings come first (before the settings), and what they
    say is what the report built from the displayed settings says: the verdict of the
    comparison added, the top group, the items for the gap typed in."""
    at = page("report")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    heads = [h.value for h in at.subheader]
    assert heads[0] == "Key findings" and heads.index("Key findings") < \
        heads.index("What goes into the report")
    at.selectbox(key="rep_pair_a").set_value(A).run()
    at.selectbox(key="rep_pair_b").set_value(B).run()
    at.button(key="rep_pair_add").click().run()
    at.number_input(key="rep_gap").set_value(3.0).run()
    assert not at.exception, [e.value for e in at.exception]
    spec = ReportSpec(comparisons=((A, B),), gap=0.03)
    found = key_findings(build_report(demo_store, spec))
    text = _markdown(at)
    cmp = analysis.compare(demo_store, A, B)
    assert md_escape(cmp.verdict) in text and found.comparisons[0].verdict == cmp.verdict
    for r in cmp.per_task.itertuples(index=False):
        assert md_escape(r.verdict) in text
    assert "To detect a 3-point gap" in text
    for x in found.plan.needs:
        assert f"{md_escape(x.task)} {x.items:,}" in text
    best = found.top_groups[0].best
    assert f"**{md_escape(best)}**" in text
    command = next(c.value for c in at.code if c.value.startswith("python -m evalcore"))
    assert "--gap 0.03" in command and f"--compare {A} {B}" in command


def test_report_page_in_presentation_mode_shows_the_findings_only():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["present"] = "1"
    at.run()
    at.switch_page("pages/report.py").run()
    assert not at.exception, [e.value for e in at.exception]
    heads = [h.value for h in at.subheader]
    assert heads == ["Key findings"], heads
    assert not at.get("iframe") and not at.code         # no preview, command or methods
    assert "best run is" in _markdown(at)


def test_presentation_mode_from_the_url_and_back():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["present_mode"] is True
    assert at.toggle(key="present_mode").value is True
    assert any("stSidebar" in h.proto.body and "font-size" in h.proto.body
               for h in at.get("html"))
    # charts get projection-size fonts in presentation mode
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["xaxis"]["tickfont"]["size"] >= 18
    at.button(key="present_exit").click().run()
    assert at.session_state["present_mode"] is False
    assert "present" not in at.query_params
    assert not any("stSidebar" in h.proto.body for h in at.get("html"))
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["xaxis"].get("tickfont", {}).get("size", 13) < 18


def test_every_chart_gets_slide_exports_and_joins_the_zip():
    from ui import export
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    charts = at.get("plotly_chart")
    registered = at.session_state[export.REGISTRY_KEY]
    assert len(registered) == len(charts) >= 1
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download all figures (zip)" in labels
    if export.images_available():
        for size in export.SLIDE_SIZES:
            assert f"PNG {size}" in labels and f"SVG {size}" in labels


def test_compare_page_shows_the_one_slide_answer(demo_store):
    at = page("compare")
    at.query_params["run_a"] = A
    at.query_params["run_b"] = B
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    cmp = analysis.compare(demo_store, A, B)
    from ui import export       # the page prints the verdict and exports the titled slide
    figs = [export.spec_json(f) for _, f in at.session_state[export.REGISTRY_KEY]]
    answer = next(f for f in figs if "better than" in f["layout"]["title"]["text"])
    title = answer["layout"]["title"]["text"]
    assert "Is demo-org/boreal-8b better than demo-org/atlas-7b?" in title
    assert cmp.verdict[1:40] in title.replace("<br>", " ")
    xs = answer["data"][0]["x"]
    assert xs[:-1] == pytest.approx(list(cmp.per_task["diff"] * 100))
    assert xs[-1] == pytest.approx(cmp.overall["diff"] * 100)
    footer = answer["layout"]["annotations"][0]["text"]
    assert "n shared items: arc_easy_demo 200" in footer and "95% CI" in footer
