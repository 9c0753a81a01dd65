"""Planner: how wide one score's interval is for n items (Wilson and CLT), the minimum
detectable effect of a paired comparison against n, the items needed for a target gap, from
typed assumptions or from a pair of runs in the store, and a pre-registration sheet.

Numbers: ``evalcore.stats`` closed forms (``half_width``, ``required_n_for_half_width``,
``minimum_detectable_effect``, ``required_items``, ``sd_diff_with_answers``,
``preregistration_markdown``) and ``evalcore.analysis.plan_from_pair``.
URL state: p, n, conf, alpha, power, gap, deff, k, spread, sd, dis, src, plan_a, plan_b, plan_task.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from evalcore import stats
from evalcore.errors import EvalbarsError
from ui import charts, common

N_CHOICES = sorted({int(m * 10 ** e) for e in range(1, 5) for m in (1, 1.5, 2, 3, 5, 7.5)}
                   | {100_000})
N_GRID = np.unique(np.r_[np.round(np.geomspace(10, 100_000, 90)).astype(int), N_CHOICES])
SPREAD = {"disagreement": "Disagreement rate (share of items where the runs differ, 0/1 scores)",
          "sd": "sd of per-item differences d = x_B − x_A"}
SOURCE = {"typed": "Typed assumptions", "store": "Estimated from two runs in the store"}

common.ensure_app_navigation()
st.title("Planner")
st.caption("How many items do I need? Closed forms from evalcore.stats (METHODS: planning).")

# ---- one score: CI half-width against n -------------------------------------------------
st.subheader("1 · Error bar of one score against the number of items")
c1, c2, c3 = st.columns([3, 3, 1])
n_one = int(common.url_choice("Number of items n", [str(n) for n in N_CHOICES], "n", key="pl_n",
                              default="500", widget="select_slider",
                              format_func=lambda s: f"{int(s):,}", container=c1))
p_one = common.url_numeric("slider", "Expected score p", "p", key="pl_p", default=0.7,
                           min_value=0.01, max_value=0.99, step=0.01, container=c2)
confidence = common.confidence_choice("pl_conf", container=c3)
try:
    wilson = [stats.half_width(int(n), p_one, "wilson", confidence) for n in N_GRID]
    clt = [stats.half_width(int(n), p_one, "clt", confidence) for n in N_GRID]
    w_here = stats.half_width(n_one, p_one, "wilson", confidence)
    c_here = stats.half_width(n_one, p_one, "clt", confidence)
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()
m1, m2, m3 = st.columns(3)
m1.metric(f"Wilson {confidence:.0%} half-width at n = {n_one:,}", f"± {100 * w_here:.2f} pp")
m2.metric(f"CLT {confidence:.0%} half-width at n = {n_one:,}", f"± {100 * c_here:.2f} pp")
target_hw = m3.number_input("Target half-width (pp)", min_value=0.1, max_value=49.0, value=2.0,
                            step=0.1, key="pl_target_hw")
try:
    need_w = stats.required_n_for_half_width(target_hw / 100, p_one, "wilson", confidence)
    need_c = stats.required_n_for_half_width(target_hw / 100, p_one, "clt", confidence)
    m3.caption(f"Items needed for ± {target_hw:.1f} pp: Wilson {need_w:,}, CLT {need_c:,}")
except EvalbarsError as exc:
    common.show_error(exc)
fig = charts.ci_width_plot(N_GRID, wilson, clt, p=p_one, confidence=confidence, chosen_n=n_one)
common.show_chart(fig, f"ci_width_p{p_one:.2f}", "pl_ci_chart")
st.caption("Wilson: z·sqrt(p(1−p)/n + z²/4n²)/(1 + z²/n) at p̂ = p. CLT: z·sqrt(p(1−p)/n). "
           "Both in percentage points of the score.")

# ---- paired comparison: MDE and required n ----------------------------------------------
st.subheader("2 · Detecting a difference between two runs (paired, same items)")
source = common.url_choice("Assumptions", list(SOURCE), "src", key="pl_src",
                           format_func=lambda s: SOURCE[s], widget="radio")
pair = None
if source == "store":
    store = common.get_store()
    runs = common.require_runs(store, 2, "estimating from a pair of runs")
    names = [str(x) for x in runs["name"]]
    ids = dict(zip(names, runs["run_id"].astype(int)))
    label = common.run_label(runs)
    ca, cb, ct = st.columns(3)
    run_a = common.url_choice("Run A", names, "plan_a", key="pl_a", format_func=label,
                              container=ca)
    run_b = common.url_choice("Run B", [x for x in names if x != run_a], "plan_b", key="pl_b",
                              format_func=label, container=cb)
    tasks = common.tasks_table(store, [ids[run_a], ids[run_b]])
    if "has_items" in tasks:
        tasks = tasks[tasks["has_items"].fillna(False).astype(bool)]
    per_run = tasks.groupby("task")["run_id"].nunique()
    shared = sorted(per_run[per_run == 2].index.astype(str))
    if not shared:
        st.info("These runs share no task with item-level scores; choose another pair, or "
                "switch to typed assumptions.")
        st.stop()
    task = common.url_choice("Task", shared, "plan_task", key="pl_task", container=ct)
    pair = common.compute("plan_from_pair", run_a, run_b, task)
    cols = st.columns(4)
    cols[0].metric("Observed difference B − A", f"{100 * pair.diff:+.1f} pp")
    cols[1].metric("sd of d", f"{pair.sd_diff:.4f}")
    cols[2].metric("Disagreement rate", f"{100 * pair.disagreement:.1f}%")
    cols[3].metric("Design effect",
                   "–" if pair.design_effect is None else f"{pair.design_effect:.2f}")
    st.caption(f"Estimated from {pair.n} shared items of {common.md_escape(pair.task)} / "
               f"{common.md_escape(pair.metric)} (the observed difference is a pilot value, not "
               "the gap to plan for).")
    if pair.note:
        st.warning(common.md_escape(pair.note))

cols = st.columns(4)
spread = common.url_choice("Spread assumption", list(SPREAD), "spread", key="pl_spread",
                           default="sd" if pair is not None else "disagreement",
                           format_func=lambda s: SPREAD[s], container=cols[0])
if spread == "sd":
    sd_default = 0.4 if pair is None else (pair.sd_diff if pair.sd_diff > 0
                                           else pair.disagreement_upper ** 0.5)
    sd_diff = common.url_numeric("number", "sd of d", "sd", key="pl_sd", default=round(sd_default, 4),
                                 min_value=0.001, max_value=10.0, step=0.01, fmt="%.4f",
                                 container=cols[1])
    disagreement = None
else:
    dis_default = 0.2 if pair is None else (pair.disagreement if pair.disagreement > 0
                                            else pair.disagreement_upper)
    disagreement = common.url_numeric("number", "Disagreement rate", "dis", key="pl_dis",
                                      default=round(dis_default, 4), min_value=0.001,
                                      max_value=1.0, step=0.01, fmt="%.3f", container=cols[1])
    sd_diff = None
alpha = float(common.url_choice("alpha (two-sided)", ["0.01", "0.05", "0.1"], "alpha",
                                key="pl_alpha", default="0.05", container=cols[2]))
power = common.url_numeric("slider", "Power", "power", key="pl_power", default=0.8,
                           min_value=0.5, max_value=0.99, step=0.01, container=cols[3])
cols = st.columns(4)
gap = common.url_numeric("number", "Target gap (pp)", "gap", key="pl_gap", default=2.0,
                         min_value=0.1, max_value=50.0, step=0.1, fmt="%.1f", container=cols[0])
deff_default = pair.design_effect if (pair is not None and pair.design_effect) else 1.0
deff = common.url_numeric("number", "Design effect", "deff", key="pl_deff",
                          default=round(max(1.0, deff_default), 3), min_value=1.0,
                          max_value=50.0, step=0.1, fmt="%.2f", container=cols[1],
                          help="Variance inflation from clustered items (1 = independent items).")
k_answers = common.url_numeric("number", "Answers per item K", "k", key="pl_k", default=1,
                               min_value=1, max_value=100, step=1, cast=int, container=cols[2])
within_share = common.url_numeric(
    "slider", "Within-item share of var(d) (for K > 1)", "wshare", key="pl_wshare", default=0.0,
    min_value=0.0, max_value=1.0, step=0.05, container=cols[3],
    help="Share of the single-answer variance of d that is answer-to-answer noise; K answers "
         "per item divide that part by K (sd² = between + within/K).")

# K answers per item: sd to plan with = sqrt(between + within / K), with the typed variance
# split into its between-item and within-item parts by the stated share.
try:
    base_var = sd_diff ** 2 if sd_diff is not None else disagreement
    if k_answers > 1 and within_share > 0:
        plan_sd = stats.sd_diff_with_answers(base_var * (1 - within_share),
                                             base_var * within_share, k_answers)
        spread_kw = {"sd_diff": plan_sd}
    else:
        spread_kw = {"sd_diff": sd_diff} if sd_diff is not None else {"disagreement": disagreement}
    mde_curve = [stats.minimum_detectable_effect(int(n), alpha=alpha, power=power,
                                                 design_effect=deff, **spread_kw)
                 for n in N_GRID]
    mde_here = stats.minimum_detectable_effect(n_one, alpha=alpha, power=power,
                                               design_effect=deff, **spread_kw)
    need = stats.required_items(gap / 100, alpha=alpha, power=power, design_effect=deff,
                                **spread_kw)
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()

m1, m2 = st.columns(2)
m1.metric(f"MDE at n = {n_one:,} items", f"{100 * mde_here:.2f} pp",
          help="(z_{1−α/2} + z_power) · sd_d · sqrt(deff / n)")
m2.metric(f"Items needed for a {gap:.1f} pp gap", f"{need:,}",
          help="ceil((z_{1−α/2} + z_power)² · sd_d² · deff / gap²)")
spread_text = (f"sd_d = {spread_kw['sd_diff']:.4f}" if "sd_diff" in spread_kw
               else f"disagreement {disagreement:.3f} (sd_d² = rate, the conservative bound)")
st.caption(f"Paired design, alpha {alpha:g} two-sided, power {power:.0%}, {spread_text}, "
           f"design effect {deff:.2f}, {k_answers} answer(s) per item. n for the MDE comes from "
           "the slider in section 1.")
fig = charts.power_curve(N_GRID, mde_curve, alpha=alpha, power=power, required_n=need,
                         target=gap / 100)
common.show_chart(fig, "mde_vs_n", "pl_power_chart")
with st.expander("MDE against n (table)"):
    common.show_table(pd.DataFrame({"n": N_GRID, "mde_pp": np.asarray(mde_curve) * 100}),
                      "mde_vs_n", "pl_mde_t")

# ---- pre-registration --------------------------------------------------------------------
st.subheader("3 · Pre-registration sheet")
default_cmp = (f"{pair.run_b} vs {pair.run_a} on {pair.task}" if pair is not None
               else "model B vs model A on the benchmark")
c1, c2 = st.columns(2)
comparison = c1.text_input("Planned comparison", value=default_cmp, key="pl_cmp")
metric = c2.text_input("Metric", value=(pair.metric if pair is not None else "accuracy"),
                       key="pl_metric")
n_plan = c1.number_input("Items n to run", min_value=1, max_value=10_000_000, value=int(need),
                         step=1, key=f"pl_nplan_{need}",
                         help="Defaults to the items needed for the target gap above.")
stopping = c2.text_input("Stopping rule", key="pl_stop",
                         value="Run all n items once; no peeking and no early stopping.")
assumptions = st.text_area("Other assumptions (optional)", key="pl_assume", height=70)
try:
    sheet = stats.preregistration_markdown(
        comparison=comparison, n=int(n_plan), alpha=alpha, power=power, design_effect=deff,
        answers_per_item=k_answers, metric=metric, stopping_rule=stopping,
        assumptions=assumptions, **spread_kw)
except EvalbarsError as exc:
    common.show_error(exc)
    st.stop()
st.code(sheet, language="markdown")
st.download_button("Download pre-registration (Markdown)", data=sheet,
                   file_name="preregistration.md", mime="text/markdown", key="pl_prereg_dl",
                   on_click="ignore", icon=":material/download:")
