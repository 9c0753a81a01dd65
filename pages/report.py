"""Report: one self-contained HTML file (and its PDF) to send before a meeting.

Choose runs, tasks, the pairwise comparisons and the sections; the report is built by
``evalcore.report`` (the same analysis calls as the other pages and the CLI's ``report``
command), offered as HTML and PDF downloads, previewed below, and its methods section is
shown as text ready to paste. URL state: runs, task, conf, method.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import streamlit as st
import streamlit.components.v1 as components

from evalcore.analysis import METHOD_LABELS, METHODS
from evalcore.errors import EvalbarsError
from evalcore.report import SECTIONS, ReportSpec, build_report, methods_text
from evalcore.report.html import render_html
from evalcore.report.latex import STYLES, latex_document, report_tables
from evalcore.report.pdf import PdfUnavailable, find_chromium, write_pdf
from ui import common

SECTION_LABELS = {"leaderboard": "Leaderboard and forest plot",
                  "comparisons": "Pairwise comparisons", "repeats": "Repeats and clusters",
                  "planner": "Planner numbers", "methods": "Methods paragraph",
                  "provenance": "Provenance (files, hashes, upload times)"}
PAIRS_KEY = "report_pairs"


@st.cache_data(show_spinner=False, max_entries=16)
def _build(path: str, version: str, spec: ReportSpec) -> tuple[str, str, tuple[str, ...], dict]:
    """(html, methods text, notes, LaTeX tables by style) of a report; cached until the
    store changes."""
    report = build_report(common.get_store(), spec)
    tex = {s: latex_document(report_tables(report, style=s)) for s in STYLES}
    return render_html(report), methods_text(report), report.notes, tex


@st.cache_data(show_spinner=False, max_entries=4)
def _pdf(html: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="evalbars-report-") as tmp:
        src = Path(tmp) / "report.html"
        src.write_text(html, encoding="utf-8")
        return write_pdf(src, Path(tmp) / "report.pdf").read_bytes()


def _command(spec: ReportSpec) -> str:
    """The CLI command that writes the same report."""
    parts = ["python", "-m", "evalcore", "report", *(spec.runs or ())]
    for t in spec.tasks or ():
        parts += ["--task", t]
    for a, b in spec.comparisons:
        parts += ["--compare", a, b]
    if tuple(spec.sections) != SECTIONS:
        parts += ["--sections", *spec.sections]
    if spec.method != "wilson":
        parts += ["--method", spec.method]
    if spec.confidence != 0.95:
        parts += ["--confidence", f"{spec.confidence:g}"]
    return shlex.join(parts + ["--out", "report.html", "--pdf"])


common.ensure_app_navigation()
st.title("Report")
st.caption("One HTML file that opens offline (figures included), and its PDF: what to send "
           "before a lab meeting. Every number comes from the same analysis as the other pages.")
store = common.get_store()
runs = common.require_runs(store, 1, "a report")
common.demo_banner(runs)
names = [str(n) for n in runs["name"]]
label = common.run_label(runs)

chosen = common.url_multi("Runs", names, "runs", key="rep_runs", format_func=label,
                          help="Leave all selected for every run in the store.")
tasks = common.tasks_table(store)
task_names = sorted(tasks["task"].astype(str).unique())
chosen_tasks = common.url_multi("Tasks", task_names, "task", key="rep_tasks")
c_method, c_conf = st.columns([3, 1])
method = common.url_choice("Interval method (leaderboard)", list(METHODS), "method",
                           key="rep_method", default="wilson", container=c_method,
                           format_func=lambda m: METHOD_LABELS.get(m, m))
confidence = common.confidence_choice("rep_conf", container=c_conf)

st.subheader("Pairwise comparisons")
st.session_state.setdefault(PAIRS_KEY, [])
c_a, c_b, c_add = st.columns([4, 4, 1], vertical_alignment="bottom")
pair_a = c_a.selectbox("Run A (baseline)", names, key="rep_pair_a", format_func=label)
pair_b = c_b.selectbox("Run B", [n for n in names if n != pair_a], key="rep_pair_b",
                       format_func=label)
if c_add.button("Add", key="rep_pair_add", icon=":material/add:") and pair_b is not None:
    if (pair_a, pair_b) not in st.session_state[PAIRS_KEY]:
        st.session_state[PAIRS_KEY].append((pair_a, pair_b))
pairs = list(st.session_state[PAIRS_KEY])
if pairs:
    for i, (a, b) in enumerate(pairs):
        st.text(f"{i + 1}. B = {b}  against  A = {a}")
    if st.button("Clear comparisons", key="rep_pair_clear"):
        st.session_state[PAIRS_KEY] = []
        st.rerun()
else:
    st.caption("No comparison added: the report has no comparison section, and its planner "
               "numbers use the two best runs of each task as the pilot pair.")

sections = st.multiselect("Sections", list(SECTIONS), default=list(SECTIONS),
                          key="rep_sections", format_func=lambda s: SECTION_LABELS[s])
title = st.text_input("Title", value="Evaluation report", key="rep_title")

spec = ReportSpec(runs=None if set(chosen) == set(names) else tuple(chosen),
                  tasks=None if set(chosen_tasks) == set(task_names) else tuple(chosen_tasks),
                  comparisons=tuple(pairs), method=method, confidence=confidence,
                  sections=tuple(s for s in SECTIONS if s in sections), title=title)
if not chosen or not chosen_tasks or not sections:
    st.info("Choose at least one run, one task and one section.")
    st.stop()

try:
    with st.spinner("Building the report ...", show_time=True):
        html, methods, notes, tex = _build(str(common.store_path()), str(store.version()), spec)
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()

st.subheader("Download")
row = st.container(horizontal=True, gap="small")
row.download_button("HTML report", data=html, file_name="evalbars_report.html",
                    mime="text/html", key="rep_html", on_click="ignore",
                    icon=":material/download:", type="primary")
if find_chromium():
    try:
        row.download_button("PDF report", data=lambda: _pdf(html),
                            file_name="evalbars_report.pdf", mime="application/pdf",
                            key="rep_pdf", on_click="ignore", icon=":material/picture_as_pdf:")
    except PdfUnavailable as exc:
        common.show_error(exc)
else:
    st.caption("PDF: no Chromium on this server (install Debian's chromium package); open the "
               "HTML file and print it from a browser instead.")
style = st.radio("LaTeX intervals", list(STYLES), key="rep_tex_style", horizontal=True,
                 format_func=lambda s: "71.9 [68.1, 75.5]" if s == "brackets" else "71.9 ± 3.8")
st.download_button("LaTeX tables", data=tex[style], file_name="evalbars_tables.tex",
                   mime="application/x-tex", key="rep_tex", on_click="ignore",
                   icon=":material/functions:")
st.caption(f"{len(html.encode('utf-8')) / 1e6:.1f} MB, self-contained: opens offline, no "
           "network request. The same report from the command line:")
st.code(_command(spec), language="bash")
for n in notes:
    st.caption(common.md_escape(n))

if "methods" in spec.sections:
    st.subheader("Methods (ready to paste)")
    st.code(methods, language=None, wrap_lines=True)

st.subheader("Preview")
components.html(html, height=900, scrolling=True)
