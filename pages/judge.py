"""LLM judges: a judge-scored task corrected with human labels on a random sample of its items.

Pick a run and task, upload a CSV ``item_id,human``; the page shows the judge's own mean, the
human labels alone and the PPI++ estimate side by side, then the judge-human agreement
(confusion table, Cohen's kappa, the judge's bias) and the random-sample check. Numbers:
``evalcore.analysis.judge_report`` (the same call as ``python -m evalcore judge``); the
labels are used for this page only and never stored.
Below, two runs graded by the judge: ``evalcore.analysis.judge_compare`` (``judge --vs``).
URL state: jd_run, jd_task, jd_run_b, conf.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from evalcore import analysis
from evalcore.analysis.judge import SAMPLING_NOTE
from evalcore.errors import EvalbarsError
from ui import common

DEMO_LABELS = Path(__file__).resolve().parents[1] / "data" / "demo_judge_labels"
DEMO_TASK = "judged_qa_demo"


class DemoFile(NamedTuple):
    """The bundled labels file, read like an upload."""

    name: str
    data: bytes

    def getvalue(self) -> bytes:
        return self.data


common.ensure_app_navigation()
st.title("LLM judges")
st.caption("A score graded by a model carries the judge's bias, which its interval does not "
           "show: the interval says how noisy the judge's average is, not how far it is from "
           "what people would say. With human labels on a random sample of the items, "
           "prediction-powered inference (PPI++: Angelopoulos et al. 2023; Angelopoulos, "
           "Duchi & Zrnic 2023) corrects the judge's score and gives a valid interval, "
           "usually narrower than the human labels alone.")

store = common.get_store()
runs, tasks = common.runs_and_tasks(store, 1, "this page")
if "has_items" in tasks:
    tasks = tasks[tasks["has_items"].fillna(False).astype(bool)]
names = [str(x) for x in runs["name"]]
ids = dict(zip(names, runs["run_id"].astype(int)))
# the page opens on a run and task an LLM judge graded, when the store has one
judged = sorted((r, t) for r, t in common.compute(analysis.judged_cells, stop=False) or {}
                if r in ids)
c1, c2, c3 = st.columns([3, 3, 1])
run = common.url_choice("Run (graded by the judge)", names, "jd_run", key="jd_run_w",
                        default=judged[0][0] if judged else None,
                        format_func=common.run_label(runs), container=c1)
run_tasks = sorted(tasks.loc[tasks["run_id"].astype(int) == ids[run], "task"].astype(str)
                   .unique())
if not run_tasks:
    st.info("This run has no task with item scores; PPI needs the judge's score on every "
            "item.")
    st.stop()
judged_tasks = [t for r, t in judged if r == run and t in run_tasks]
task = common.url_choice("Task", run_tasks, "jd_task", key="jd_task_w",
                         default=judged_tasks[0] if judged_tasks else None, container=c2)
confidence = common.confidence_choice("jd_conf", container=c3)

recorded = analysis.run_judges(store, ids[run], task)
st.caption("Judge: " + (common.md_escape(analysis.judge_text(recorded)) if recorded else
                        "none recorded in this run's protocol (only inspect logs with "
                        "model-graded scorers name one); the labels work all the same."))
upload = st.file_uploader("Human labels (CSV with columns item_id,human)", type=["csv"],
                          key="jd_labels")
demo_labels = DEMO_LABELS / f"{run.rsplit('/', 1)[-1]}.csv"
if upload is None and task == DEMO_TASK and demo_labels.is_file() and st.toggle(
        "Use the bundled demo's human labels", key="jd_demo",
        help=f"data/demo_judge_labels/{demo_labels.name}: a random sample of the items, "
             "labelled by (simulated) people."):
    upload = DemoFile(demo_labels.name, demo_labels.read_bytes())
st.caption(f"{SAMPLING_NOTE} Labels: 0/1, or numbers on the judge's scale; at least 10 "
           "items; each item of the run's task once. They are used on this page only and "
           "not stored.")
if upload is None:
    st.info("Upload a labels file to see the corrected score. Command line: `python -m "
            "evalcore judge --run RUN --task TASK --human LABELS.csv`.")
    st.stop()

try:
    report = analysis.judge_report(store, ids[run], task, upload.getvalue(), upload.name,
                                   confidence=confidence)
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()

pct = 100 * confidence
ppi = report.ppi
st.subheader(f"Corrected score: {ppi.estimate:.4f} ({pct:g}% CI {ppi.low:.4f} to "
             f"{ppi.high:.4f}), PPI++ with lambda = {ppi.lam:.3f}")
m1, m2, m3 = st.columns(3)
m1.metric("Judge only (every item)", f"{report.judge_only.estimate:.4f}",
          help="The judge's mean and its usual interval: the judge's noise, not its bias.")
m2.metric("Human labels only", f"{report.human_only.estimate:.4f}")
m3.metric("PPI++", f"{ppi.estimate:.4f}")
rows = pd.DataFrame(analysis.estimate_rows(report))
common.show_table(common.text_table(rows, {
    "answer": ("Answer", "text", 1), "mean": ("Mean", ".4f", 1), "low": ("Low", ".4f", 1),
    "high": ("High", ".4f", 1), "width": ("Width", ".4f", 1), "items": ("Items", ".0f", 1),
    "method": ("Method", "text", 1)}), f"judge {report.run} {report.task}", "jd_rows")
st.caption(f"{report.n_labelled:,} items labelled by people, {report.n_unlabelled:,} judged "
           f"only; metric {common.md_escape(report.metric)}; {pct:g}% intervals.")
for w in report.warnings:
    st.warning(common.md_escape(w))

st.markdown("**How far to trust the judge** (on the labelled items)")
for sentence in analysis.agreement_sentences(report):
    st.markdown(common.md_escape(sentence))
if report.kappa is not None:
    cats = [f"{c:g}" for c in report.kappa.categories]
    confusion = pd.DataFrame([[str(v) for v in r] for r in report.kappa.table],
                             columns=[f"judge {c}" for c in cats])
    confusion.insert(0, "human", [f"human {c}" for c in cats])
    common.show_table(confusion, f"confusion {report.run} {report.task}", "jd_confusion")
if report.kappa is not None and report.kappa.categories == (0.0, 1.0) and report.binary_labels:
    query = urlencode({"jl_items": report.n_labelled + report.n_unlabelled, "jl_kind": "binary",
                       "jl_ph": f"{report.human_only.estimate:.2f}",
                       "jl_pj": f"{report.shift.mean_labelled:.2f}",
                       "jl_agree": f"{report.kappa.observed:.2f}"})
    st.caption(f"[Planner: how many labels a target precision needs, with this pilot's "
               f"agreement](planner?{query})")
shift = report.shift
st.caption(f"Random-sample check: the judge's mean is {shift.mean_labelled:.4f} on the "
           f"labelled items and {shift.mean_unlabelled:.4f} on the rest "
           f"({common.md_escape(shift.method)}: p = {common.fmt_p(shift.p_value)}).")

# ---- two runs graded by the same judge ----------------------------------------------------
st.divider()
st.subheader("Two runs graded by this judge", anchor=False)
others = [n for n in names if n != run and task in set(
    tasks.loc[tasks["run_id"].astype(int) == ids[n], "task"].astype(str))]
if not others:
    st.caption("No other run has this task with item scores.")
    st.stop()
run_b = common.url_choice("Run B (B − A, A = the run above)", others, "jd_run_b",
                          key="jd_run_b_w", format_func=common.run_label(runs))
upload_b = st.file_uploader("Human labels of run B's answers (item_id,human)", type=["csv"],
                            key="jd_labels_b")
demo_b = DEMO_LABELS / f"{run_b.rsplit('/', 1)[-1]}.csv"
if upload_b is None and task == DEMO_TASK and demo_b.is_file() and st.toggle(
        "Use the bundled demo's human labels for run B", key="jd_demo_b"):
    upload_b = DemoFile(demo_b.name, demo_b.read_bytes())
if upload_b is None:
    st.caption("Upload run B's labels to correct the paired difference; the labels of items "
               "labelled in both runs are paired. Command line: `judge ... --vs RUN_B "
               "--human-b LABELS_B.csv`.")
    st.stop()
try:
    cmp = analysis.judge_compare(store, ids[run], ids[run_b], task, upload.getvalue(),
                                 upload.name, upload_b.getvalue(), upload_b.name,
                                 confidence=confidence)
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()
cp = cmp.ppi
st.markdown(f"**B − A corrected: {cp.estimate:+.4f} ({pct:g}% CI {cp.low:+.4f} to "
            f"{cp.high:+.4f}), PPI++ with lambda = {cp.lam:.3f}**")
common.show_table(common.text_table(pd.DataFrame(analysis.comparison_rows(cmp)), {
    "answer": ("Answer", "text", 1), "difference": ("B − A", "+.4f", 1),
    "low": ("Low", "+.4f", 1), "high": ("High", "+.4f", 1), "width": ("Width", ".4f", 1),
    "items": ("Items", ".0f", 1), "method": ("Method", "text", 1)}),
    f"judge compare {cmp.run_a} {cmp.run_b} {cmp.task}", "jd_cmp")
st.caption(f"{cmp.n_shared:,} shared items, {cmp.n_labelled:,} labelled in both runs. "
           "Judge only: the Compare page's paired interval on the judge's scores.")
for w in cmp.warnings:
    st.warning(common.md_escape(w))
