"""Compare two runs: pairing integrity and protocol diff first, then the paired difference
with its interval, paired vs unpaired SE, correlation, exact McNemar, per-task rows with
adjusted p-values, a verdict in words, and the 2x2 table whose cells list their items.

Numbers: ``evalcore.analysis.compare`` and ``discordant_items``. URL state: run_a, run_b,
task, metric, conf, cell.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import charts, common

ALL = "*"
DEFAULT_METRIC = "(default)"
CELLS = {"b": "Only B right (b)", "c": "Only A right (c)", "both": "Both right",
         "neither": "Neither right"}



def _text(value: object) -> str:
    """A stored text for display ("" when missing)."""
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


common.ensure_app_navigation()
st.title("Compare two runs")
store = common.get_store()
with store.one_version(common.store_version(store)):   # runs and tasks: one catalog query
    runs = common.require_runs(store, 2, "a comparison")
    common.demo_banner(runs)

    names = [str(n) for n in runs["name"]]
    ids = dict(zip(names, runs["run_id"].astype(int)))
    label = common.run_label(runs)
    c_a, c_b = st.columns(2)
    run_a = common.url_choice("Run A (baseline)", names, "run_a", key="cmp_a",
                              format_func=label, container=c_a)
    run_b = common.url_choice("Run B (compared with A)", [n for n in names if n != run_a],
                              "run_b", key="cmp_b", format_func=label, container=c_b)

    tasks = common.tasks_table(store, [ids[run_a], ids[run_b]])
per_run = tasks.groupby("task")["run_id"].nunique()
shared_tasks = sorted(per_run[per_run == 2].index.astype(str))
if not shared_tasks:
    st.info("These two runs have no task in common, so there is nothing to pair. Choose two "
            "runs evaluated on the same task (run A tasks: "
            + common.md_escape(", ".join(sorted(tasks[tasks.run_id == ids[run_a]].task.astype(str).unique())))
            + "; run B tasks: "
            + common.md_escape(", ".join(sorted(tasks[tasks.run_id == ids[run_b]].task.astype(str).unique())))
            + ").")
    st.stop()

c_task, c_metric, c_conf = st.columns([3, 2, 1])
task = common.url_choice("Task", [ALL, *shared_tasks] if len(shared_tasks) > 1 else shared_tasks,
                         "task", key="cmp_task", container=c_task,
                         format_func=lambda t: "All shared tasks" if t == ALL else t)
scope = tasks if task == ALL else tasks[tasks["task"].astype(str) == task]
metric_counts = scope.groupby("metric")["run_id"].nunique()
metrics = sorted(metric_counts[metric_counts == 2].index.astype(str))
metric = common.url_choice("Metric", [DEFAULT_METRIC, *metrics], "metric", key="cmp_metric",
                           container=c_metric,
                           format_func=lambda m: "primary metric" if m == DEFAULT_METRIC else m)
confidence = common.confidence_choice("cmp_conf", container=c_conf)

cmp = common.compute("compare", run_a, run_b, task=None if task == ALL else task,
                     metric=None if metric == DEFAULT_METRIC else metric, confidence=confidence)
per_task = cmp.per_task
if "points_scale" in per_task:
    scales = per_task["points_scale"].astype(float).fillna(1.0)
else:
    scales = pd.Series([100.0 if common.is_proportion([r.score_a, r.score_b]) else 1.0
                        for r in per_task.itertuples()], index=per_task.index)
multi = bool(cmp.overall) and len(per_task) > 1
percent = bool((scales == 100.0).all()) if multi else bool(len(scales) and scales.iloc[0] == 100.0)
unit = "pp" if percent else ""

st.caption("A = " + common.md_escape(run_a) + " · B = " + common.md_escape(run_b)
           + ". Difference = B − A over items both runs answered"
           + (", in percentage points (pp)." if percent else "."))

# ---- integrity first ---------------------------------------------------------------------
st.subheader("1 · Pairing and protocol")
pairing = pd.DataFrame([{
    "Task": p.task, "Metric": p.metric, "Shared items": p.n_shared, "Only in A": len(p.only_a),
    "Only in B": len(p.only_b), "Prompt/item hash mismatches": len(p.hash_mismatch)}
    for p in cmp.pairing])
problems = [p for p in cmp.pairing if p.only_a or p.only_b or p.hash_mismatch]
if problems:
    st.warning("The pairing is not clean: some items are in one run only or were shown with a "
               "different prompt (hash mismatch). Only shared items are compared; a prompt "
               "mismatch means the two runs did not use the same instrument on those items.")
if not pairing.empty:
    common.show_table(pairing, "pairing", "cmp_pairing")
if problems:
    with st.expander("Item ids behind the pairing problems"):
        for p in problems:
            for what, ids_ in (("only in A", p.only_a), ("only in B", p.only_b),
                               ("hash mismatch", p.hash_mismatch)):
                if ids_:
                    st.text(f"{p.task} / {p.metric}: {what} ({len(ids_)}): "
                            + ", ".join(map(str, ids_[:200])) + (" ..." if len(ids_) > 200 else ""))
diff = cmp.protocol_diff
if diff is not None and len(diff):
    st.markdown(f"**Recorded settings that differ ({len(diff)})**")
    common.show_table(diff.astype(object).where(diff.notna(), "–").astype(str), "protocol_diff",
                      "cmp_protocol")
else:
    st.caption("Protocol: no recorded setting differs between the two runs.")
for w in cmp.warnings:
    st.warning(common.md_escape(w))

# ---- verdict and headline numbers --------------------------------------------------------
st.subheader("2 · Verdict")
st.info(common.md_escape(cmp.verdict))
if cmp.family_note:
    st.caption("Several tasks: " + common.md_escape(cmp.family_note) + ".")
common.show_chart(charts.answer_figure(per_task, cmp.overall, run_a=run_a, run_b=run_b,
                                      confidence=confidence, verdict=cmp.verdict),
                  f"is_B_better_{run_a}_vs_{run_b}", "cmp_answer")   # the one-slide answer
head = cmp.overall if multi else (per_task.iloc[0].to_dict() if len(per_task) else None)
if head:
    scope_name = "macro average over tasks" if multi else \
        f"{head.get('task')} / {head.get('metric')}"
    kinds = per_task["kind"].astype(str).str.lower() if "kind" in per_task else pd.Series([""])
    unpaired = "unpaired" in str(head.get("kind", "")).lower() or (
        multi and bool(kinds.str.contains("unpaired").any()))
    cols = st.columns(5)
    cols[0].metric(f"B − A ({confidence:.0%} CI)",
                   f"{common.fmt_value(head['diff'], percent, 1, True)} {unit}".strip(),
                   help="Paired difference over shared items; the interval's method is "
                        "chosen by the data and named below the numbers.")
    cols[0].caption(f"[{common.fmt_value(head['low'], percent, 1, True)}, "
                    f"{common.fmt_value(head['high'], percent, 1, True)}] {unit}")
    se_cl = head.get("se_clustered")
    clustered = se_cl is not None and not pd.isna(se_cl)
    if unpaired:
        cols[1].metric("SE (unpaired)", f"{common.fmt_value(head['se'], percent, 2)} {unit}".strip(),
                       help="Without item-level data only the unpaired SE is available.")
    else:
        cols[1].metric("se_iid (paired)",
                       f"{common.fmt_value(head.get('se_iid'), percent, 2)} {unit}".strip(),
                       help="sd(d, ddof=1)/sqrt(n), d = per-item difference B − A (0 when the "
                            "runs never differ: then the interval rests on the upper bound of "
                            "the discordance rate, not on this 0).")
        cols[1].caption("se_clustered " + (
            f"{common.fmt_value(se_cl, percent, 2)} {unit} ({int(head['n_clusters'])} clusters)"
            if clustered and not multi else
            (f"{common.fmt_value(se_cl, percent, 2)} {unit}" if clustered else
             "n/a (no cluster key applied)")))
    cols[2].metric("Unpaired SE",
                   f"{common.fmt_value(head.get('se_unpaired'), percent, 2)} {unit}".strip(),
                   help="sqrt(SE_A² + SE_B²): what ignoring the pairing would give.")
    corr = head.get("correlation")
    cols[3].metric("Correlation", "–" if corr is None or pd.isna(corr) else f"{corr:.3f}",
                   help="Pearson correlation of the item scores of A and B (how much pairing "
                        "gains: the paired SE shrinks as it grows).")
    b, c = head.get("b"), head.get("c")
    cols[4].metric("p (the verdict's test)", common.fmt_p(head.get("p_value")),
                   help="From the same procedure as the interval: the test the interval "
                        "inverts and, for 0/1 scores, also the exact McNemar test (p is the "
                        "larger of the two).")
    if b is not None and not pd.isna(b):
        cols[4].caption(f"b = {int(b)}, c = {int(c)}; exact McNemar p "
                        f"{common.fmt_p(head.get('p_exact'))}, mid-p "
                        f"{common.fmt_p(head.get('p_midp'))}")
    st.caption(f"Scope: {common.md_escape(scope_name)}; n = {common.fmt_n(head.get('n'))} "
               "shared items. "
               f"Interval: {common.md_escape(str(head.get('method_reason', '')))}. "
               f"Test: {common.md_escape(str(head.get('test', '')))}. MDE planned from the "
               f"{common.md_escape(str(head.get('mde_basis', '')))}.")
    if b is not None and not pd.isna(b) and head.get("n"):
        st.caption(common.method_check_link("paired", n=int(head["n"]),
                                            dis=(float(b) + float(c)) / float(head["n"])))

# ---- per task ----------------------------------------------------------------------------
st.subheader("3 · Per task")
k = scales
adjustment = str(per_task["adjustment"].dropna().iloc[0]) if per_task["adjustment"].notna().any() else None
view = pd.DataFrame({
    "Task": per_task["task"].astype(str), "Metric": per_task["metric"].astype(str),
    "n": [common.fmt_n(v) for v in per_task["n"]],
    "Unit": scales.map(lambda x: "pp" if x == 100.0 else "raw"),
    "A": per_task["score_a"].astype(float) * k,
    "B": per_task["score_b"].astype(float) * k,
    "B − A": per_task["diff"].astype(float) * k,
    "CI low": per_task["low"].astype(float) * k,
    "CI high": per_task["high"].astype(float) * k,
    "Simultaneous CI low": per_task["low_simultaneous"].astype(float) * k,
    "Simultaneous CI high": per_task["high_simultaneous"].astype(float) * k,
    "SE (interval)": per_task["se"].astype(float) * k,
    "se_iid": per_task["se_iid"].astype(float) * k,
    "se_clustered": per_task["se_clustered"].astype(float) * k,
    "Unpaired SE": per_task["se_unpaired"].astype(float) * k,
    "Correlation": per_task["correlation"].astype(float),
    "b (only B)": per_task["b"], "c (only A)": per_task["c"],
    "p": per_task["p_value"].astype(float),
    "p exact McNemar": per_task["p_exact"].where(per_task["b"].notna()).astype(float),
    "p adjusted": per_task["p_adjusted"].astype(float),
    "MDE": per_task["mde"].astype(float) * k,
    "Verdict": per_task["verdict"].astype(str),
    "Interval method": per_task["method_reason"].astype(str),
    "Items for a 5-point MDE" if percent else "Items for the target MDE":
        per_task["items_needed"].astype(float),
    "Kind": per_task["kind"].astype(str),
})
fmt = st.column_config.NumberColumn
common.show_table(view, f"compare_{run_a}_vs_{run_b}", "cmp_table", column_config={
    **{c: fmt(format="%.2f") for c in ("A", "B", "CI low", "CI high", "Simultaneous CI low",
                                       "Simultaneous CI high", "SE (interval)",
                                       "se_iid", "se_clustered", "Unpaired SE", "MDE")},
    "B − A": fmt(format="%+.2f"),
    "Correlation": fmt(format="%.3f"), "p": fmt(format="%.4f"),
    "p exact McNemar": fmt(format="%.4f"), "p adjusted": fmt(format="%.4f")})
st.caption(f"Interval: {confidence:.0%} CI by the method named in each row: for two 0/1 "
           "runs Tango's score interval unless n ≥ 200 and ≥ 40 items are discordant (then "
           "Wald); t quantiles with n − 1 df for continuous scores below n = 30; with a "
           "cluster key t quantiles with G − 1 df, and below 30 clusters never narrower than "
           "the iid interval (se_clustered shown beside it). p: the test that row's interval "
           "inverts (Tango: the score test; Wald: z; t; clustered: t with G − 1 df), and for "
           "0/1 scores the larger of it and the exact McNemar p; where the exact test does "
           "not reject no difference, the interval is widened to 0, so a CI excludes 0 "
           "exactly when p < alpha. Verdict and colour follow p adjusted: "
           + (f"{adjustment} over {len(per_task)} tasks; CI low/high are unadjusted and the "
              f"simultaneous CI are Bonferroni intervals (each at 1 − alpha/"
              f"{len(per_task)}; an adjusted p below alpha does not imply that one "
              f"excludes 0)." if adjustment and adjustment != "none" and len(per_task) > 1
              else "no adjustment (one task).")
           + " MDE: minimum detectable effect at alpha 0.05, power 0.8 for this n and sd of d.")
fig = charts.difference_plot(per_task, cmp.overall, label_a="A", label_b="B",
                             confidence=confidence, scales=scales)
common.show_chart(fig, f"difference_{run_a}_vs_{run_b}", "cmp_diff_chart")

# ---- 2x2 and the items behind it ---------------------------------------------------------
st.subheader("4 · Disagreements")
binary = per_task[per_task["b"].notna()]
if binary.empty:
    st.info("The 2x2 table needs item-level 0/1 scores from both runs (sample logs, not only "
            "a results JSON); here there is none, so there is no McNemar table. The difference "
            "above is the comparison.")
    st.stop()
task_rows = {f"{r.task} / {r.metric}": r for r in binary.itertuples()}
choice = st.selectbox("Task for the 2x2 table", list(task_rows), key="cmp_2x2_task") \
    if len(task_rows) > 1 else next(iter(task_rows))
row = task_rows[choice]
b, c, both, neither = int(row.b), int(row.c), int(row.both), int(row.neither)
fig = charts.mcnemar_table(both, b, c, neither, label_a="A", label_b="B", p_exact=row.p_exact)
left, right = st.columns([2, 3])
with left:
    common.show_chart(fig, f"mcnemar_{row.task}", "cmp_2x2")
with right:
    cell = common.url_choice("Cell to list", list(CELLS), "cell", key="cmp_cell",
                             format_func=lambda k_: CELLS[k_], widget="segmented")
    items = common.compute("discordant_items", run_a, run_b, str(row.task), str(row.metric),
                           cell=cell, stop=False)
    if items is not None:
        st.caption(f"{len(items)} item(s) in '{CELLS[cell]}' for {common.md_escape(row.task)}. "
                   "Texts are shown exactly as stored.")
        if items.empty:
            st.info("No items in this cell.")
        else:
            common.show_table(items, f"items_{cell}_{row.task}", "cmp_items", height=300)
            item = st.selectbox("Read one item", items["item_id"].astype(str).tolist(),
                                key="cmp_item")
            one = items[items["item_id"].astype(str) == item].iloc[0]
            st.markdown("**Prompt**")
            st.text(_text(one.get("prompt")))
            st.markdown("**Target**")
            st.code(_text(one.get("target")), language=None, wrap_lines=True)
            ca, cb = st.columns(2)
            ca.markdown(f"**Response A** (score {one.get('score_a')})")
            ca.code(_text(one.get("response_a")), language=None, wrap_lines=True)
            cb.markdown(f"**Response B** (score {one.get('score_b')})")
            cb.code(_text(one.get("response_b")), language=None, wrap_lines=True)
