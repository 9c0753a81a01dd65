"""Report: one self-contained HTML file (and its PDF) to send before a meeting.

The page opens on its answer: the downloads and the report's key findings (the same
sentences as its first page). Below, what goes into the report: runs, tasks, the pairwise
comparisons, the gap of interest and the sections; then the equivalent CLI command, the
methods section as text ready to paste, the LaTeX tables and a preview. The report is built by
``evalcore.report`` (the same analysis calls as the other pages and the CLI's ``report``
command). URL state: runs, task, conf, method. In presentation mode only the key findings show.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import streamlit as st

from evalcore import words
from evalcore.analysis import METHODS
from evalcore.errors import EvalbarsError
from evalcore.report import SECTIONS, ReportSpec, build_report, methods_text
from evalcore.report.build import DEFAULT_GAP
from evalcore.report.findings import (KeyFindings, comparison_sentences, key_findings,
                                      plan_sentences, top_group_sentence)
from evalcore.report.format import interval
from evalcore.report.html import render_html
from evalcore.report.latex import STYLES, latex_document, report_tables
from evalcore.report.pdf import PdfUnavailable, find_chromium, write_pdf
from ui import common, present

SECTION_LABELS = {"leaderboard": "Leaderboard and forest plot",
                  "comparisons": "Pairwise comparisons", "repeats": "Repeats and clusters",
                  "planner": "Planner numbers", "methods": "Methods paragraph",
                  "provenance": "Provenance (files, hashes, upload times)"}
PAIRS_KEY = "report_pairs"


@st.cache_data(show_spinner=False, max_entries=16)
def _build(path: str, version: str, spec: ReportSpec
           ) -> tuple[str, str, tuple[str, ...], dict, KeyFindings]:
    """(html, methods text, notes, LaTeX tables by style, key findings) of a report; cached
    until the store changes."""
    report = build_report(common.get_store(), spec)
    tex = {s: latex_document(report_tables(report, style=s)) for s in STYLES}
    return render_html(report), methods_text(report), report.notes, tex, key_findings(report)


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
    if spec.gap != DEFAULT_GAP:
        parts += ["--gap", f"{spec.gap:g}"]
    if spec.title != ReportSpec.title:
        parts += ["--title", spec.title]
    return shlex.join(parts + ["--out", "report.html", "--pdf"])


def _name(value: str) -> str:
    return f"**{common.md_escape(value)}**"


def show_findings(found: KeyFindings) -> None:
    """The key findings in the report's own sentences (names and texts Markdown-escaped)."""
    esc = common.md_escape
    if not found:
        st.info("This report has no key finding: add the leaderboard, a comparison or the "
                "planner numbers to its sections.")
        return
    st.subheader("Key findings")
    for g in found.top_groups:
        st.markdown(top_group_sentence(g, _name, esc))
    for f in found.comparisons:
        head, line = comparison_sentences(f, _name, esc)
        with st.container(border=True):
            st.markdown(f"{head}  \n{line}")
            if len(f.rows) > 1:
                st.markdown("\n".join(
                    f"- {esc(r.task)}: {esc(interval(r.diff, r.low, r.high, r.scale, True))}"
                    f" · {esc(r.verdict)}" for r in f.rows))
    if found.plan is not None:
        lead, pairs = plan_sentences(found.plan, esc, esc)
        st.markdown(lead + "\n" + "\n".join(f"- {p}" for p in pairs))


common.ensure_app_navigation()
presenting = present.is_on()
st.title("Report")
st.caption("One HTML file that opens offline (figures included), and its PDF: what to send "
           "before a lab meeting. Every number comes from the same analysis as the other pages.")
store = common.get_store()
runs = common.require_runs(store, 1, "a report")
common.demo_banner(runs)
names = [str(n) for n in runs["name"]]
label = common.run_label(runs)
answer = st.container()          # downloads and key findings: filled once the report is built

with st.container():
    if not presenting:
        st.subheader("What goes into the report")
    chosen = common.url_multi("Runs", names, "runs", key="rep_runs", format_func=label,
                              help="Leave all selected for every run in the store.")
    tasks = common.tasks_table(store)
    task_names = sorted(tasks["task"].astype(str).unique())
    chosen_tasks = common.url_multi("Tasks", task_names, "task", key="rep_tasks")
    c_method, c_conf, c_gap = st.columns([3, 1, 1])
    method = common.url_choice("Interval method (leaderboard)", list(METHODS), "method",
                               key="rep_method", default="wilson", container=c_method,
                               format_func=lambda m: words.label("score", m))
    confidence = common.confidence_choice("rep_conf", container=c_conf)
    gap_points = c_gap.number_input("Gap of interest (points)", min_value=0.1, max_value=50.0,
                                    value=DEFAULT_GAP * 100, step=0.5, key="rep_gap",
                                    help="The key findings give the items needed to detect a "
                                         "gap this large in a paired comparison.")

    if not presenting:
        st.markdown("**Pairwise comparisons**")
    st.session_state.setdefault(PAIRS_KEY, [])
    c_a, c_b, c_add = st.columns([4, 4, 1], vertical_alignment="bottom")
    pair_a = c_a.selectbox("Run A (baseline)", names, key="rep_pair_a", format_func=label)
    pair_b = c_b.selectbox("Run B", [n for n in names if n != pair_a], key="rep_pair_b",
                           format_func=label)
    if c_add.button("Add", key="rep_pair_add", icon=":material/add:") and pair_b is not None:
        if (pair_a, pair_b) not in st.session_state[PAIRS_KEY]:
            st.session_state[PAIRS_KEY].append((pair_a, pair_b))
    pairs = list(st.session_state[PAIRS_KEY])
    if pairs and not presenting:
        st.markdown("\n".join(f"{i + 1}. B = {common.md_escape(b)} against A = "
                              f"{common.md_escape(a)}" for i, (a, b) in enumerate(pairs)))
    if pairs and st.button("Clear comparisons", key="rep_pair_clear"):
        st.session_state[PAIRS_KEY] = []
        st.rerun()
    if not pairs:
        st.caption("No comparison added: the report has no comparison section, and its "
                   "planner numbers use the two best runs of each task as the pilot pair.")
    sections = st.multiselect("Sections", list(SECTIONS), default=list(SECTIONS),
                              key="rep_sections", format_func=lambda s: SECTION_LABELS[s])
    title = st.text_input("Title", value="Evaluation report", key="rep_title")

spec = ReportSpec(runs=None if set(chosen) == set(names) else tuple(chosen),
                  tasks=None if set(chosen_tasks) == set(task_names) else tuple(chosen_tasks),
                  comparisons=tuple(pairs), method=method, confidence=confidence,
                  gap=round(float(gap_points), 6) / 100,
                  sections=tuple(s for s in SECTIONS if s in sections), title=title)
if not chosen or not chosen_tasks or not sections:
    answer.info("Choose at least one run, one task and one section.")
    st.stop()

try:
    with answer, st.spinner("Building the report ...", show_time=True):
        html, methods, notes, tex, found = _build(str(common.store_path()),
                                                  str(store.version()), spec)
except EvalbarsError as exc:
    with answer:
        common.show_error(exc)
    st.stop()

with answer:
    row = st.container(horizontal=True, gap="small")
    # made on click (a callable): the 5 MB file is not sent with every view of the page
    row.download_button("HTML report", data=lambda: html, file_name="evalbars_report.html",
                        mime="text/html", key="rep_html", on_click="ignore",
                        icon=":material/download:", type="primary")
    if find_chromium():
        try:
            row.download_button("PDF report", data=lambda: _pdf(html),
                                file_name="evalbars_report.pdf", mime="application/pdf",
                                key="rep_pdf", on_click="ignore",
                                icon=":material/picture_as_pdf:")
        except PdfUnavailable as exc:
            common.show_error(exc)
    else:
        st.caption("PDF: no Chromium on this server (install Debian's chromium package); "
                   "open the HTML file and print it from a browser instead.")
    show_findings(found)

if presenting:
    st.stop()

st.subheader("The same report elsewhere")
st.caption(f"{len(html.encode('utf-8')) / 1e6:.1f} MB, self-contained: opens offline, no "
           "network request. The same report from the command line:")
st.code(_command(spec), language="bash")
for n in notes:
    st.caption(common.md_escape(n))
style = st.radio("LaTeX intervals", list(STYLES), key="rep_tex_style", horizontal=True,
                 format_func=lambda s: "71.9 [68.1, 75.5]" if s == "brackets" else "71.9 ± 3.8")
st.download_button("LaTeX tables", data=tex[style], file_name="evalbars_tables.tex",
                   mime="application/x-tex", key="rep_tex", on_click="ignore",
                   icon=":material/functions:")

if "methods" in spec.sections:
    st.subheader("Methods (ready to paste)")
    st.code(methods, language=None, wrap_lines=True)

st.subheader("Preview")
# the report inlines Plotly (about 5 MB): drawn on request, so the page itself opens at once
if st.toggle(f"Show the report here ({len(html.encode('utf-8')) / 1e6:.1f} MB with its "
             "interactive charts)", key="rep_preview"):
    st.iframe(html, height=900)   # the report is our own HTML (every value escaped)
