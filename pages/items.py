"""Items: suspect labels (with the count chance alone would give), re-scoring with corrected
labels or exclusions (before/after with intervals, sensitivity range, the bias note), and
contamination overlap with a corpus sample (clean vs overlapping items per run).

Numbers: ``evalcore.analysis.items`` (``suspect_labels``, ``rescore``, ``contamination``) and
``evalcore.items.ngram_index.build_index``. URL state: it_task, it_m, it_strong, rs_metric,
ov_task, conf.
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
from pathlib import Path

import pandas as pd
import streamlit as st

from evalcore import analysis, words
from evalcore.analysis.items import SUSPECT_COLUMNS, VARIANTS
from evalcore.errors import EvalbarsError
from ui import common, scratch

DEMO_CORPUS = common.ROOT / "data" / "demo_items" / "corpus.jsonl"
CORPUS_TYPES = ["txt", "md", "text", "jsonl", "ndjson", "json", "parquet", "pq"]

common.ensure_app_navigation()
st.title("Items")
st.caption("Which items deserve a second look: labels the strongest models contradict, and "
           "items that also appear in a corpus sample. Both tools point at items; neither "
           "proves a label wrong or a model contaminated.")
store = common.get_store()
runs, tasks = common.runs_and_tasks(store, 1, "this page")
item_tasks = tasks[tasks["has_items"].fillna(False).astype(bool)] if "has_items" in tasks else tasks
mc_tasks = sorted(item_tasks[item_tasks["n_choices"].fillna(0).astype(int) >= 2]["task"].astype(str).unique())
all_tasks = sorted(item_tasks["task"].astype(str).unique())
confidence = common.confidence_choice("it_conf", container=st.columns([1, 5])[0])


PRIMARY = "(primary)"


def _metric_label(m: str) -> str:
    return "primary metric (as on the leaderboard)" if m == PRIMARY else m


def _text(value: object) -> str:
    """A stored text or pick for display ("–" when missing)."""
    return words.MISSING if value is None or (isinstance(value, float) and pd.isna(value)) \
        else str(value)


def _pct(x: float) -> str:
    return words.MISSING if pd.isna(x) else f"{100 * x:.1f}"


# the suspect list's own columns as people read them (the models' picks keep the run names)
SUSPECT_HEADINGS = {"task": "Task", "item_id": "Item", "prompt": "Prompt", "gold": "Gold",
                    "consensus": "Consensus pick", "n_agree": "Strong models agreeing",
                    "n_strong": "Strong models", "share_correct": "Share of all models right (%)",
                    "n_models": "Models"}




tab_sus, tab_rs, tab_ov = st.tabs(["Suspect labels", "Re-scoring", "Contamination"])

# ---- suspect labels ----------------------------------------------------------------------
report = None
with tab_sus:
    if not mc_tasks:
        st.info("No multiple-choice task with item-level answers is stored. The rule needs each "
                "model's pick: lm_eval sample logs of multiple-choice tasks and inspect "
                "multiple-choice logs carry it; summary files and tidy tables do not.")
    else:
        c1, c2, c3 = st.columns([3, 1, 1])
        task = common.url_choice("Task", mc_tasks, "it_task", key="it_task_w", container=c1,
                                 default="arc_easy_demo")
        m = common.url_numeric("number", "m: models that must agree", "it_m", key="it_m_w",
                               default=3, min_value=1, max_value=50, step=1, cast=int,
                               container=c2,
                               help="An item is listed when at least m of the strongest models "
                                    "pick the same option and it is not the gold one. Default 3.")
        strong = common.url_numeric("number", "Strongest models considered (0 = default)",
                                    "it_strong", key="it_strong_w", default=0, min_value=0,
                                    max_value=200, step=1, cast=int, container=c3,
                                    help="Default: the better half of the models by accuracy "
                                         "on this task, at least m.")
        report = common.compute(analysis.suspect_labels, task, m=int(m),
                                n_strong=None if int(strong) == 0 else int(strong), stop=False)
        if report is not None:
            e, g = report.expectation, report.given_errors
            cols = st.columns(4)
            cols[0].metric("Suspect items", f"{len(report.suspects)} of {report.n_items}")
            cols[1].metric("Expected if labels were right", f"{e.expected:.2f}",
                           help=e.method)
            cols[2].metric("Expected given item difficulty", f"{g.expected:.2f}",
                           help=g.method)
            cols[3].metric("P(at least this many | difficulty model)", common.fmt_p(g.p_value),
                           help="Exact upper tail of the count under the second model.")
            st.caption(
                f"Rule: at least {report.m} of the {report.n_strong} most accurate models agree on "
                f"one option that is not the gold (K = {report.n_options} options). "
                f"Chance references: (1) {e.method}: {e.expected:.2f} items "
                f"(P(≥ {len(report.suspects)}) = {common.fmt_p(e.p_value)}); "
                f"(2) {g.method}: {g.expected:.2f} items. Real errors are correlated between "
                "models (shared hard items, shared attractive distractors), so (1) understates "
                "what correct labels give; (2) takes each item's difficulty as observed and asks "
                "only whether the wrong picks concentrate on one option. A list well above both "
                "says 'read these items'; it does not say the labels are wrong.")
            for note in report.notes:
                st.caption(common.md_escape(note))
            with st.expander("Models and their accuracy (picks against the gold)"):
                st.dataframe(common.text_table(report.models, {
                    "run": ("Run", "text", 1), "accuracy": ("Accuracy of its picks (%)", ".1f", 100),
                    "strong": ("Among the strongest", "yes", 1),
                    "items": ("Items with a pick", ".0f", 1)}), hide_index=True, key="it_models")
            if report.suspects.empty:
                st.info("No item meets the rule with these settings.")
            else:
                view = report.suspects.assign(
                    share_correct=[_pct(x) for x in report.suspects["share_correct"]],
                    prompt=[_text(x) for x in report.suspects["prompt"]],
                    **{c: [_text(x) for x in report.suspects[c]] for c in report.suspects.columns
                       if c not in SUSPECT_COLUMNS}).rename(columns=SUSPECT_HEADINGS)
                common.show_table(view, f"suspect_labels_{task}", "it_sus")
                st.download_button("CSV for a relabelling pass (fill new_gold)",
                                   data=report.export_csv(), file_name=f"relabel_{common.slug(task)}.csv",
                                   mime="text/csv", key="it_relabel_csv", on_click="ignore",
                                   icon=":material/download:")
                pick = common.url_choice("Item", list(report.suspects["item_id"].astype(str)),
                                         "it_item", key="it_item_w")
                row = report.suspects[report.suspects["item_id"].astype(str) == pick].iloc[0]
                st.markdown(f"**Gold:** {common.md_escape(row['gold'])}  ·  **Consensus:** "
                            f"{common.md_escape(row['consensus'])}  ·  {int(row['n_agree'])} of "
                            f"{int(row['n_strong'])} strong models agree  ·  share of all models "
                            f"right: {_pct(row['share_correct'])}%")
                st.text(str(row["prompt"] or ""))
                who = pd.DataFrame({"Run": [c for c in report.suspects.columns
                                            if c not in SUSPECT_COLUMNS],
                                    "Pick": [_text(row[c]) for c in report.suspects.columns
                                             if c not in SUSPECT_COLUMNS]})
                st.dataframe(who, hide_index=True, key="it_who")

# ---- re-scoring --------------------------------------------------------------------------
with tab_rs:
    if not all_tasks:
        st.info("No task with item-level scores is stored.")
    else:
        task_rs = common.url_choice("Task", all_tasks, "it_task", key="rs_task_w",
                                    default="arc_easy_demo")
        metrics = sorted(item_tasks[item_tasks["task"].astype(str) == task_rs]["metric"].astype(str).unique())
        chosen_rs = common.url_choice("Metric", [PRIMARY, *metrics], "rs_metric",
                                      key="rs_metric_w", format_func=_metric_label)
        metric = None if chosen_rs == PRIMARY else chosen_rs
        up = st.file_uploader("Relabelled items (CSV: task, item_id, new_gold)", type=["csv"],
                              key="rs_upload")
        relabels = None
        if up is not None:
            from evalcore.analysis.items import read_relabels
            try:
                relabels = read_relabels(up.getvalue().decode("utf-8"), up.name)
                st.caption(f"{len(relabels)} relabelled item(s) read from {common.md_escape(up.name)}.")
            except (EvalbarsError, UnicodeDecodeError) as exc:
                st.error(common.error_text(exc))
        first_run = [int(r) for r in item_tasks[item_tasks["task"].astype(str)
                                                == task_rs]["run_id"].unique()][:1]
        # through the page cache (per store version), as every other read of the page
        item_ids = (common.compute(analysis.item_choices, task_rs, metric, first_run[0], stop=False)
                    or []) if first_run else []
        exclude = st.multiselect("Exclude items", item_ids, key="rs_exclude")
        suspects = None
        same_task = report is not None and report.task == task_rs
        if same_task and len(report.suspects):
            suspects = tuple(report.suspects["item_id"].astype(str))
            st.caption(f"Sensitivity range over the {len(suspects)} suspect item(s) of the first tab.")
        res = common.compute(analysis.rescore, task_rs, metric=metric, relabels=relabels,
                             exclude=tuple(exclude), suspects=suspects, confidence=confidence,
                             stop=False)
        if res is not None:
            st.warning(res.bias_note, icon=":material/balance:")
            pct = common.is_proportion(res.board["score"])
            board = res.board.assign(cell=[common.fmt_interval(s, lo, hi, pct, 1) for s, lo, hi in
                                           zip(res.board["score"], res.board["low"], res.board["high"])])
            wide = board.pivot(index="run", columns="variant", values="cell")
            wide = wide[[v for v in VARIANTS if v in wide.columns]].reset_index() \
                .rename(columns={"run": "Run"}).fillna(words.MISSING)
            st.subheader("Leaderboard before and after")
            st.caption(f"{res.metric}{', points' if pct else ''} with {confidence:.0%} intervals "
                       f"({res.board['method'].iloc[0] if len(res.board) else ''}); "
                       f"{res.n_relabelled} relabelled, {res.n_excluded} excluded, "
                       f"{res.n_suspects} suspects in the sensitivity range.")
            common.show_table(wide, f"rescore_{task_rs}", "rs_board")
            if len(res.comparisons):
                cmp = res.comparisons.assign(cell=[common.fmt_interval(d, lo, hi, pct, 1, signed=True)
                                                   for d, lo, hi in zip(res.comparisons["diff"],
                                                                        res.comparisons["low"],
                                                                        res.comparisons["high"])])
                cw = cmp.pivot(index="run", columns="variant", values="cell")
                cw = cw[[v for v in VARIANTS if v in cw.columns]].reset_index() \
                    .rename(columns={"run": "Run"}).fillna(words.MISSING)
                st.subheader(f"Paired differences to {res.ref_run}")
                st.caption(f"Run minus reference on the same items{', points' if pct else ''}, with "
                           f"{confidence:.0%} intervals ({', '.join(sorted(set(m.split(':')[0] for m in res.comparisons['method'])))}).")
                common.show_table(cw, f"rescore_diffs_{task_rs}", "rs_cmp")
            for note in res.notes:
                st.caption(common.md_escape(note))
            if len(res.consistency):
                with st.expander("Do the stored picks follow this metric?"):
                    st.dataframe(common.text_table(res.consistency, {
                        "run": ("Run", "text", 1),
                        "agreement": ("Items where the score matches the pick (%)", ".1f", 100),
                        "items": ("Items", ".0f", 1)}), hide_index=True, key="rs_consistency")

# ---- contamination -----------------------------------------------------------------------
@st.cache_resource(show_spinner="Indexing the bundled demo corpus ...")
def _demo_index(path: str, stamp: float) -> str:
    from evalcore.items.ngram_index import build_index
    out = scratch.new_folder("evalbars-demo-ngrams-") / "index.duckdb"
    build_index([path], out)
    return str(out)


with tab_ov:
    if not all_tasks:
        st.info("No task with item-level scores is stored.")
    else:
        st.caption("Upload a corpus sample (text files, JSONL with a text field, Parquet; "
                   "streamed): every 13-word sequence (Brown et al. 2020, appendix C) goes "
                   "into an n-gram index, and each item's prompt and target are checked "
                   "against it. An item is overlapping when it shares at least the chosen "
                   "number of n-grams with the corpus.")
        files = st.file_uploader("Corpus files", type=CORPUS_TYPES, accept_multiple_files=True,
                                 key="ov_upload")
        c1, c2, c3 = st.columns(3)
        n = int(c1.number_input("n-gram length (words)", min_value=5, max_value=30, value=13,
                                step=1, key="ov_n"))
        field = c2.text_input("JSONL field / Parquet column", value="text", key="ov_field")
        min_hits = int(c3.number_input("n-grams shared to count as overlapping", min_value=1,
                                       max_value=100, value=1, step=1, key="ov_min_hits"))
        index_path = None
        if files:
            digest = hashlib.sha256()
            for f in files:
                digest.update(f.name.encode() + b"\0" + f.getvalue())
            key = f"{digest.hexdigest()}:{n}:{field}"
            if st.session_state.get("ov_index_key") != key:
                from evalcore.items.ngram_index import build_index
                # the session's previous index goes; the corpus copies go once indexed
                scratch.discard(st.session_state.pop("ov_index_folder", None))
                st.session_state.pop("ov_index", None)
                st.session_state.pop("ov_index_key", None)
                folder = scratch.new_folder("evalbars-ngrams-")
                corpus = folder / "corpus"
                corpus.mkdir()
                paths, names = [], {}
                for i, f in enumerate(files):
                    p = corpus / f"{i:04d}{Path(f.name).suffix.lower()}"
                    p.write_bytes(f.getvalue())
                    paths.append(p)
                    names[p] = f.name
                try:
                    with st.spinner("Building the n-gram index ...", show_time=True):
                        info = build_index(paths, folder / f"{uuid.uuid4().hex}.duckdb", n=n,
                                           text_field=field, names=names)
                    st.session_state["ov_index_key"] = key
                    st.session_state["ov_index"] = str(info.path)
                    st.session_state["ov_index_folder"] = str(folder)
                except EvalbarsError as exc:
                    st.error(f"The corpus could not be indexed: {common.error_text(exc)}")
                    scratch.discard(folder)
                finally:
                    shutil.rmtree(corpus, ignore_errors=True)
            index_path = st.session_state.get("ov_index")
        elif DEMO_CORPUS.is_file() and common.demo_run_ids(runs):
            st.caption("No corpus uploaded: using the bundled demo corpus "
                       "(`data/demo_items/corpus.jsonl`, with planted overlaps), 13-grams.")
            index_path = _demo_index(str(DEMO_CORPUS), DEMO_CORPUS.stat().st_mtime)
        if index_path:
            task_ov = common.url_choice("Task", all_tasks, "ov_task", key="ov_task_w",
                                        default="arc_easy_demo")
            metrics = sorted(item_tasks[item_tasks["task"].astype(str) == task_ov]["metric"].astype(str).unique())
            chosen_ov = common.url_choice("Metric", [PRIMARY, *metrics], "ov_metric",
                                          key="ov_metric_w", format_func=_metric_label)
            metric_ov = None if chosen_ov == PRIMARY else chosen_ov
            rep = common.compute(analysis.contamination, task_ov, index_path, metric=metric_ov,
                                 min_hits=min_hits, confidence=confidence, stop=False)
            if rep is not None:
                n_ov = int(rep.items["overlapping"].eq(True).sum())
                cols = st.columns(4)
                cols[0].metric("Overlapping items", f"{n_ov} of {len(rep.items)}")
                cols[1].metric("Untestable (fewer words than n)", str(rep.n_untestable))
                cols[2].metric("Corpus documents", f"{rep.index.documents:,}")
                cols[3].metric(f"{rep.index.n}-grams indexed", f"{rep.index.ngrams:,}")
                st.warning(rep.causal_note, icon=":material/warning:")
                view = pd.DataFrame({
                    "Run": rep.runs["run"].astype(str),
                    "Clean items": [common.fmt_n(v) for v in rep.runs["n_clean"]],
                    "Overlapping items": [common.fmt_n(v) for v in rep.runs["n_overlap"]],
                    "Score on clean items (%)": [_pct(x) for x in rep.runs["score_clean"]],
                    "Score on overlapping items (%)": [_pct(x) for x in rep.runs["score_overlap"]],
                    f"Overlapping − clean [{confidence:.0%} CI] (pp)":
                        [common.fmt_interval(d, lo, hi, True, 1, signed=True)
                         for d, lo, hi in zip(rep.runs["diff"], rep.runs["low"], rep.runs["high"])],
                    "Method": [_text(m) for m in rep.runs["method"]]})
                st.caption(f"{rep.metric} in points; two-sample {confidence:.0%} intervals (the "
                           "two groups are different items).")
                common.show_table(view, f"contamination_{task_ov}", "ov_runs")
                for note in rep.notes:
                    st.caption(common.md_escape(note))
                hits = rep.items[rep.items["hits"] > 0].sort_values("hits", ascending=False)
                if len(hits):
                    st.subheader("Items sharing n-grams with the corpus")
                    common.show_table(common.text_table(hits, {
                        "item_id": ("Item", "text", 1), "words": ("Words", ".0f", 1),
                        "ngrams": (f"{rep.index.n}-grams", ".0f", 1),
                        "hits": ("In the corpus", ".0f", 1),
                        "share": ("Share in the corpus (%)", ".1f", 100),
                        "overlapping": ("Overlapping", "yes", 1),
                        "example": ("Example", "text", 1)}), f"overlap_items_{task_ov}", "ov_items")
        elif not files:
            st.info("Upload corpus files to check the items against them.")
