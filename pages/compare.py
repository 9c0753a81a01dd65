"""Compare two runs: the answer first, then the evidence.

The first screen holds the run pickers and the settings in one row, a one-line warning when
the pairing or the protocol has problems (with a link to the details), the verdict in words
with the settings it was computed with, and one chart: the paired difference B − A with its
interval per task and for the macro average, each row coloured and labelled by its verdict.
Below: the numbers behind the verdict, the per-task table, the pairing and protocol details,
the 2x2 table and the items that disagree.

Every setting box is drawn on every run before the page can stop (a pair without a shared
task shows its task and metric boxes disabled), so no box is dropped and re-created with a
default: each shows the value the result was computed with, and the line under the verdict
prints those values from the result itself. In presentation mode (``ui.present``) the page
shows the question, the verdict, the chart and its notes, and stops there.

Numbers: ``evalcore.analysis.compare`` and ``discordant_items``. URL state: run_a, run_b,
task, metric, conf, adjust, cell.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore import analysis, words
from evalcore.analysis import BENIGN_PROTOCOL_CATEGORIES
from ui import charts, common, present

ALL = "*"
DEFAULT_METRIC = "(default)"
NONE_SHARED = "(no task in common)"
ADJUSTMENTS = ("holm", "bh")
DETAILS = "pairing-and-protocol"          # anchor of the details the warning links to
CELLS = {"b": "Only B right (b)", "c": "Only A right (c)", "both": "Both right",
         "neither": "Neither right"}


def _text(value: object) -> str:
    """A stored text for display ("" when missing)."""
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _score_text(value: object) -> str:
    """An item score for display ("–" when missing)."""
    return common.fmt_value(value, False) if value is not None else words.MISSING


# ---- controls ----------------------------------------------------------------------------
def _scope_boxes(tasks: pd.DataFrame, shared: list[str], c_task, c_metric
                 ) -> tuple[str | None, str | None]:
    """The task and metric boxes. Without a shared task both are drawn disabled, under
    their own keys, so the URL keeps the last task and metric for the next pair."""
    if not shared:
        c_task.selectbox("Task", [NONE_SHARED], key="cmp_task", disabled=True)
        c_metric.selectbox("Metric", [NONE_SHARED], key="cmp_metric", disabled=True)
        return None, None
    task = common.url_choice("Task", [ALL, *shared] if len(shared) > 1 else shared,
                             "task", key="cmp_task", container=c_task,
                             format_func=lambda t: "All shared tasks" if t == ALL else t)
    scope = tasks if task == ALL else tasks[tasks["task"].astype(str) == task]
    counts = scope.groupby("metric")["run_id"].nunique()
    metrics = sorted(counts[counts == 2].index.astype(str))
    metric = common.url_choice("Metric", [DEFAULT_METRIC, *metrics], "metric",
                               key="cmp_metric", container=c_metric,
                               format_func=lambda m: "primary metric" if m == DEFAULT_METRIC
                               else m)
    return task, metric


def _adjust_value() -> str:
    """The adjustment the box will show: its state, else the URL's, else Holm (the value is
    needed for the computation, and the box is drawn once the result says how many tasks
    were compared)."""
    current = st.session_state.get("cmp_adjust")
    if current in ADJUSTMENTS:
        return str(current)
    wanted = common.url_get("adjust")
    return wanted if wanted in ADJUSTMENTS else ADJUSTMENTS[0]


def _adjust_box(container, n_rows: int) -> str:
    """The adjustment box, disabled when one task is compared (the result then adjusts
    nothing, and the line under the verdict says so). Its option labels never change: the
    browser keeps a box's text while its value stays, so a relabelled value would show the
    old label."""
    return common.url_choice(
        "Adjustment", list(ADJUSTMENTS), "adjust", key="cmp_adjust", container=container,
        disabled=n_rows < 2, format_func=lambda a: words.label("adjust", a),
        help="How the p-values of several tasks are adjusted; the verdicts follow the "
             "adjusted p (Holm controls the chance of any false call, Benjamini-Hochberg "
             "the share of false calls). With one task there is nothing to adjust.")


# ---- the answer --------------------------------------------------------------------------
def _problems_line(cmp) -> str | None:
    """The pairing and protocol problems in one line, linking to their details, or None."""
    parts, told = [], 0
    diff = cmp.protocol_diff
    if diff is not None and len(diff) and "category" in diff:
        serious = diff[~diff["category"].isin(BENIGN_PROTOCOL_CATEGORIES)]
        if len(serious):
            kinds = ", ".join(dict.fromkeys(serious["category"].astype(str)))
            parts.append(f"protocols differ in {len(serious)} setting"
                         f"{'s' if len(serious) != 1 else ''} ({kinds})")
    mismatch = sum(len(p.hash_mismatch) for p in cmp.pairing)
    if mismatch:
        parts.append(f"prompts differ on {mismatch:,} shared item{'s' if mismatch != 1 else ''}")
    alone = sum(len(p.only_a) + len(p.only_b) for p in cmp.pairing)
    if alone:
        parts.append(f"{alone:,} item{'s' if alone != 1 else ''} in one run only")
    kinds = cmp.per_task["kind"].astype(str)
    unpaired = int(kinds.str.startswith("unpaired").sum())
    if unpaired:
        parts.append(f"unpaired for {unpaired} task{'s' if unpaired != 1 else ''} "
                     "(no item-level data)")
    for w in cmp.warnings:
        told += any(s in w for s in ("protocols differ (", "prompt/item hash", " only in ",
                                     "UNPAIRED"))
    others = len(cmp.warnings) - told
    if others > 0:
        parts.append(f"{others} more note{'s' if others != 1 else ''}")
    if not parts:
        return None
    text = common.md_escape("; ".join(parts))
    text = text[:1].upper() + text[1:]
    return text + ("" if present.is_on() else f": [details below](#{DETAILS})")


def _settings_line(cmp, task: str, metric: str) -> str:
    """What the result was computed with, read from the result itself."""
    pt = cmp.per_task
    adj = sorted(set(map(str, pt["adjustment"])) - {"none"})
    how = (f"{words.label('adjust', adj[0])} adjustment over {len(pt)} tasks" if adj
           else "no adjustment (one task)" if len(pt) == 1 else "no adjustment")
    shown = list(dict.fromkeys(map(str, pt["metric"])))
    which = ("primary metric of each task" if metric == DEFAULT_METRIC else "metric") + \
        f" ({', '.join(shown)})"
    tasks = (f"all {len(pt)} shared tasks" if task == ALL and len(pt) > 1
             else ", ".join(map(str, pt["task"])))
    return common.md_escape(f"{cmp.confidence:.0%} intervals · {how} · {which} · {tasks}")


def _verdict(cmp, run_a: str, run_b: str, task: str, metric: str) -> None:
    """The question, the verdict sentence and the settings line, in one element
    (``st-key-cmp_verdict``)."""
    text = str(cmp.verdict)
    with st.container(key="cmp_verdict"):
        if not present.is_on():
            st.markdown(f"**Is {common.md_escape(run_b)} better than "
                        f"{common.md_escape(run_a)}?**")
        st.info(common.md_escape(text[:1].upper() + text[1:]))
        st.markdown(f":small[{_settings_line(cmp, task, metric)}]")


def _answer_chart(cmp, run_a: str, run_b: str, confidence: float) -> None:
    """The one chart: drawn without a title (the verdict is printed above it), exported
    with the question, the verdict and the notes so a slide stands on its own."""
    args = dict(run_a=run_a, run_b=run_b, confidence=confidence, verdict=cmp.verdict)
    common.show_chart(charts.answer_figure(cmp.per_task, cmp.overall, headline=False, **args),
                      f"is_B_better_{run_a}_vs_{run_b}", "cmp_answer",
                      export_fig=charts.answer_figure(cmp.per_task, cmp.overall, **args))
    notes = charts.answer_notes(cmp.per_task, run_a=run_a, run_b=run_b,
                                confidence=confidence)
    st.markdown(f":small[{' · '.join(common.md_escape(n) for n in notes)}]")


# ---- the evidence ------------------------------------------------------------------------
def _headline_numbers(cmp, per_task: pd.DataFrame, percent: bool, multi: bool,
                      confidence: float) -> None:
    """The numbers behind the headline verdict (macro average or the one task)."""
    head = cmp.overall if multi else (per_task.iloc[0].to_dict() if len(per_task) else None)
    if not head:
        return
    unit = " pp" if percent else " score units"
    val = lambda x, d=2, s=False: common.fmt_value(x, percent, d, s) + (   # noqa: E731
        "" if x is None or pd.isna(x) else unit)
    kinds = per_task["kind"].astype(str)
    unpaired = str(head.get("kind", "")).startswith("unpaired") or (
        multi and bool(kinds.str.startswith("unpaired").any()))
    st.subheader("Numbers behind the verdict")
    cols = st.columns(5)
    cols[0].metric(f"B − A ({confidence:.0%} CI)", val(head["diff"], 1, True),
                   help="Paired difference over shared items; the interval's method is "
                        "chosen by the data and named below.")
    cols[0].caption(f"[{common.fmt_value(head['low'], percent, 1, True)}, "
                    f"{common.fmt_value(head['high'], percent, 1, True)}]{unit}")
    se_cl = head.get("se_clustered")
    if unpaired:
        cols[1].metric(words.label("se", "se") + " (unpaired)", val(head["se"]),
                       help="Without item-level data only the unpaired SE is available.")
    else:
        cols[1].metric(words.label("se", "se_iid"), val(head.get("se_iid")),
                       help="The SD of the per-item differences B − A over √n (0 when the "
                            "runs never differ: the interval then rests on the upper bound "
                            "of the share of items that differ, not on this 0).")
        clusters = head.get("n_clusters")
        cols[1].caption(f"{words.label('se', 'se_clustered')}: " + (
            val(se_cl) + (f" ({int(clusters)} clusters)"
                          if clusters is not None and not pd.isna(clusters) else "")
            if se_cl is not None and not pd.isna(se_cl) else "– (no cluster key applied)"))
    cols[2].metric(words.label("se", "se_unpaired"), val(head.get("se_unpaired")),
                   help="√(SE_A² + SE_B²): what ignoring the pairing would give.")
    corr = head.get("correlation")
    cols[3].metric("Correlation of A and B", words.MISSING if corr is None or pd.isna(corr)
                   else f"{corr:.3f}",
                   help="Pearson correlation of the item scores of A and B: the higher, the "
                        "more the pairing narrows the interval.")
    cols[4].metric("p (the verdict's test)", common.fmt_p(head.get("p_value")),
                   help="From the same procedure as the interval: the test the interval "
                        "inverts and, for 0/1 scores, also the exact McNemar test (p is the "
                        "larger of the two).")
    b, c = head.get("b"), head.get("c")
    if b is not None and not pd.isna(b):
        cols[4].caption(f"b = {int(b)}, c = {int(c)}; exact McNemar p "
                        f"{common.fmt_p(head.get('p_exact'))}, mid-p "
                        f"{common.fmt_p(head.get('p_midp'))}")
    scope = "macro average over tasks" if multi else f"{head.get('task')} / {head.get('metric')}"
    st.caption(f"Scope: {common.md_escape(scope)}; n = {common.fmt_n(head.get('n'))} shared "
               f"items. Interval: {common.md_escape(str(head.get('method_reason', '')))}. "
               f"Test: {common.md_escape(str(head.get('test', '')))}. Minimum detectable "
               f"effect planned from the {common.md_escape(str(head.get('mde_basis', '')))}.")
    if b is not None and not pd.isna(b) and head.get("n"):
        st.caption(common.method_check_link("paired", n=int(head["n"]),
                                            dis=(float(b) + float(c)) / float(head["n"])))


def _column(values, fmt: str) -> list[str]:
    """Numbers as text for a table ("–" when missing: a table never shows None or NaN)."""
    return [words.MISSING if v is None or pd.isna(v) else format(float(v), fmt) for v in values]


def _per_task_table(cmp, scales: pd.Series, percent: bool, confidence: float,
                    run_a: str, run_b: str) -> None:
    """Every task's row with its unit, interval, SEs, p-values and verdict."""
    pt, k = cmp.per_task, scales
    st.subheader("Per task")
    u = " (pp)" if percent else ""
    scaled = lambda c, f=".2f": _column(pt[c].astype(float) * k, f)   # noqa: E731
    view = pd.DataFrame({
        "Task": pt["task"].astype(str), "Metric": pt["metric"].astype(str),
        "n": [common.fmt_n(v) for v in pt["n"]],
        **({} if percent else {"Unit": scales.map(lambda x: "pp" if x == 100.0
                                                  else "score units")}),
        "A" + (" (%)" if percent else ""): scaled("score_a"),
        "B" + (" (%)" if percent else ""): scaled("score_b"),
        "B − A" + u: scaled("diff", "+.2f"),
        "CI low" + u: scaled("low"), "CI high" + u: scaled("high"),
        "Simultaneous CI low" + u: scaled("low_simultaneous"),
        "Simultaneous CI high" + u: scaled("high_simultaneous"),
        words.label("se", "se") + u: scaled("se"),
        words.label("se", "se_iid") + u: scaled("se_iid"),
        words.label("se", "se_clustered") + u: scaled("se_clustered"),
        words.label("se", "se_unpaired") + u: scaled("se_unpaired"),
        "Correlation of A and B": _column(pt["correlation"], ".3f"),
        "b (only B right)": _column(pt["b"], ".0f"), "c (only A right)": _column(pt["c"], ".0f"),
        "p (the row's test)": [common.fmt_p(v) for v in pt["p_value"]],
        "p exact McNemar": [common.fmt_p(v) for v in pt["p_exact"].where(pt["b"].notna())],
        "p adjusted": [common.fmt_p(v) for v in pt["p_adjusted"]],
        "Minimum detectable effect" + u: scaled("mde"),
        "Verdict": pt["verdict"].astype(str),
        "Interval method": pt["method_reason"].astype(str),
        "Items for a 5-point MDE" if percent else "Items for the target MDE":
            _column(pt["items_needed"], ",.0f"),
        "Comparison": pt["kind"].map(lambda v: words.label("kind", v)),
    })
    common.show_table(view, f"compare_{run_a}_vs_{run_b}", "cmp_table")
    adjusted = sorted(set(map(str, pt["adjustment"])) - {"none"})
    alpha = 1 - confidence
    st.caption(
        f"Intervals: {confidence:.0%}, by the method named in each row: for two 0/1 runs "
        "Tango's score interval unless n ≥ 200 and ≥ 40 items are discordant (then Wald); t "
        "quantiles with n − 1 df for continuous scores below n = 30; with a cluster key t "
        "quantiles with G − 1 df, and below 30 clusters never narrower than the interval "
        "that treats items as independent. p: the test that row's interval inverts, and for "
        "0/1 scores the larger of it and the exact McNemar p; where the exact test does not "
        "reject no difference the interval is widened to 0, so a CI excludes 0 exactly when "
        f"p < {alpha:.2g}. Verdict and colour follow p adjusted: "
        + (f"{words.label('adjust', adjusted[0])} over {len(pt)} tasks; CI low/high are "
           f"unadjusted ({confidence:.0%} each) and the simultaneous CI are Bonferroni "
           f"intervals ({1 - alpha / len(pt):.2%} each, jointly {confidence:.0%}; an adjusted "
           f"p below {alpha:.2g} does not imply that one excludes 0)."
           if adjusted and len(pt) > 1 else "no adjustment (one task).")
        + f" Minimum detectable effect: at alpha {alpha:.2g} and power 0.8 for this n and "
        "the SD of the per-item differences. Missing values: –.")


def _pairing_and_protocol(cmp) -> None:
    """Which items pair, which settings differ, and every warning in full."""
    st.subheader("Pairing and protocol", anchor=DETAILS)
    for w in cmp.warnings:
        st.warning(common.md_escape(w[:1].upper() + w[1:]))
    pairing = pd.DataFrame([{
        "Task": p.task, "Metric": p.metric, "Shared items": p.n_shared,
        "Only in A": len(p.only_a), "Only in B": len(p.only_b),
        "Prompt/item hash mismatches": len(p.hash_mismatch)} for p in cmp.pairing])
    problems = [p for p in cmp.pairing if p.only_a or p.only_b or p.hash_mismatch]
    if problems:
        st.warning("The pairing is not clean: some items are in one run only or were shown "
                   "with a different prompt (hash mismatch). Only shared items are compared; "
                   "a prompt mismatch means the two runs did not use the same instrument on "
                   "those items.")
    if not pairing.empty:
        common.show_table(pairing, "pairing", "cmp_pairing")
    else:
        st.caption("No item-level pairing: the comparison uses the harnesses' reported SEs.")
    if problems:
        with st.expander("Item ids behind the pairing problems"):
            for p in problems:
                for what, ids_ in (("only in A", p.only_a), ("only in B", p.only_b),
                                   ("hash mismatch", p.hash_mismatch)):
                    if ids_:
                        st.text(f"{p.task} / {p.metric}: {what} ({len(ids_)}): "
                                + ", ".join(map(str, ids_[:200]))
                                + (" ..." if len(ids_) > 200 else ""))
    diff = cmp.protocol_diff
    if diff is not None and len(diff):
        st.markdown(f"**Recorded settings that differ ({len(diff)})**")
        shown = diff.rename(columns={"scope": "Scope", "setting": "Setting",
                                     "value_a": "Value in A", "value_b": "Value in B",
                                     "category": "Kind"})
        common.show_table(common.display_frame(shown.astype(object)), "protocol_diff",
                          "cmp_protocol")
    else:
        st.caption("Protocol: no recorded setting differs between the two runs.")


def _disagreements(per_task: pd.DataFrame, run_a: str, run_b: str) -> None:
    """The 2x2 table of one task and the items of the chosen cell with their texts."""
    st.subheader("Disagreements")
    binary = per_task[per_task["b"].notna()]
    if binary.empty:
        st.info("The 2x2 table needs item-level 0/1 scores from both runs (sample logs, not "
                "only a results JSON); here there is none, so there is no McNemar table. The "
                "difference above is the comparison.")
        return
    task_rows = {f"{r.task} / {r.metric}": r for r in binary.itertuples()}
    choice = st.selectbox("Task for the 2x2 table", list(task_rows), key="cmp_2x2_task") \
        if len(task_rows) > 1 else next(iter(task_rows))
    row = task_rows[choice]
    fig = charts.mcnemar_table(int(row.both), int(row.b), int(row.c), int(row.neither),
                               label_a="A", label_b="B", p_exact=row.p_exact)
    left, right = st.columns([2, 3])
    with left:
        common.show_chart(fig, f"mcnemar_{row.task}", "cmp_2x2")
    with right:
        cell = common.url_choice("Cell to list", list(CELLS), "cell", key="cmp_cell",
                                 format_func=lambda k_: CELLS[k_], widget="segmented")
        items = common.compute(analysis.discordant_items, run_a, run_b, str(row.task),
                               str(row.metric), cell=cell, stop=False)
        if items is None:
            return
        st.caption(f"{len(items)} item(s) in '{CELLS[cell]}' for "
                   f"{common.md_escape(row.task)}. Texts are shown exactly as stored.")
        if items.empty:
            st.info("No items in this cell.")
            return
        shown = items.rename(columns={"item_id": "Item", "score_a": "Score A",
                                      "score_b": "Score B", "prompt": "Prompt",
                                      "target": "Target", "response_a": "Response A",
                                      "response_b": "Response B"})
        common.show_table(common.display_frame(shown), f"items_{cell}_{row.task}",
                          "cmp_items", height=300)
        item = st.selectbox("Read one item", items["item_id"].astype(str).tolist(),
                            key="cmp_item")
        one = items[items["item_id"].astype(str) == item].iloc[0]
        st.markdown("**Prompt**")
        st.text(_text(one.get("prompt")))
        st.markdown("**Target**")
        st.code(_text(one.get("target")), language=None, wrap_lines=True)
        ca, cb = st.columns(2)
        ca.markdown(f"**Response A** (score {_score_text(one.get('score_a'))})")
        ca.code(_text(one.get("response_a")), language=None, wrap_lines=True)
        cb.markdown(f"**Response B** (score {_score_text(one.get('score_b'))})")
        cb.code(_text(one.get("response_b")), language=None, wrap_lines=True)


# ---- the page ----------------------------------------------------------------------------
common.ensure_app_navigation()
title = st.empty()          # the page is named before the store is asked for anything
title.title("Compare two runs")
store = common.get_store()
with store.one_version(common.store_version(store)):   # runs and tasks: one catalog query
    runs = common.require_runs(store, 2, "a comparison")
    names = [str(n) for n in runs["name"]]
    ids = dict(zip(names, runs["run_id"].astype(int)))
    label = common.run_label(runs)
    if not present.is_on():
        common.demo_banner(runs)
    c_a, c_b, c_task, c_metric, c_conf, c_adjust = st.columns([3, 3, 2, 2, 1.3, 1.6],
                                                              vertical_alignment="bottom")
    run_a = common.url_choice("Run A (baseline)", names, "run_a", key="cmp_a",
                              format_func=label, container=c_a)
    run_b = common.url_choice("Run B (compared with A)", [n for n in names if n != run_a],
                              "run_b", key="cmp_b", format_func=label, container=c_b)
    tasks = common.tasks_table(store, [ids[run_a], ids[run_b]])
if present.is_on():
    title.title(f"Is {common.md_escape(run_b)} better than {common.md_escape(run_a)}?")
per_run = tasks.groupby("task")["run_id"].nunique()
shared_tasks = sorted(per_run[per_run == 2].index.astype(str))
task, metric = _scope_boxes(tasks, shared_tasks, c_task, c_metric)
confidence = common.confidence_choice("cmp_conf", container=c_conf)
if not shared_tasks:
    _adjust_box(c_adjust, 1)
    listed = {r: common.md_escape(", ".join(sorted(tasks[tasks.run_id == ids[r]]
                                                   .task.astype(str).unique())))
              for r in (run_a, run_b)}
    st.info("These two runs have no task in common, so there is nothing to pair. Choose two "
            f"runs evaluated on the same task (run A tasks: {listed[run_a]}; run B tasks: "
            f"{listed[run_b]}).")
    st.stop()

cmp = common.compute(analysis.compare, run_a, run_b, task=None if task == ALL else task,
                     metric=None if metric == DEFAULT_METRIC else metric,
                     confidence=confidence, adjust=_adjust_value(), stop=False)
_adjust_box(c_adjust, 0 if cmp is None else len(cmp.per_task))
if cmp is None:
    st.stop()
per_task = cmp.per_task
scales = per_task["points_scale"].astype(float).fillna(1.0)
multi = bool(cmp.overall) and len(per_task) > 1
percent = bool((scales == 100.0).all()) if multi else bool(len(scales) and scales.iloc[0] == 100.0)

problems = _problems_line(cmp)
if problems:
    st.warning(problems, icon=":material/warning:")
_verdict(cmp, run_a, run_b, task, metric)
_answer_chart(cmp, run_a, run_b, confidence)
if present.is_on():
    st.stop()                                   # the answer only, for the room

_headline_numbers(cmp, per_task, percent, multi, confidence)
_per_task_table(cmp, scales, percent, confidence, run_a, run_b)
_pairing_and_protocol(cmp)
_disagreements(per_task, run_a, run_b)
