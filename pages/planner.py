"""Planner: how many items two models must both answer to detect a gap of X points, in one
sentence at the top with its inputs beside it; then what a given number of items can detect,
one score's error bar against n, and a pre-registration sheet.

The assumptions are typed, or estimated from a pilot pair of runs in the store (then the
pilot's spread and design effect are used, as ``plan --pilot`` uses them, and the page says
so). Numbers: ``evalcore.analysis.paired_plan`` (items needed, the smallest detectable gap and
the sentences, shared with the CLI) with ``plan_from_pair`` for a pilot; ``evalcore.stats``
for one score's half-width and the pre-registration sheet.
URL state: the question (src, plan_a, plan_b, plan_task, gap, conf, power, spread, sd, dis,
deff, k, wshare), what n items detect (n), one score (p, hw), human labels for an LLM judge
(jl_items, jl_target, jl_value, jl_kind, jl_ph, jl_pj, jl_agree, jl_sdh, jl_sdj, jl_rho). Every input is bound to the URL
through ``ui.common``'s helpers, so what a control shows is what the page computes with.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import streamlit as st

from evalcore import analysis, stats, words
from evalcore.analysis.planning import percent
from evalcore.errors import EvalbarsError
from ui import charts, common, present

N_CHOICES = sorted({int(m * 10 ** e) for e in range(1, 5) for m in (1, 1.5, 2, 3, 5, 7.5)}
                   | {100_000})
N_GRID = np.unique(np.r_[np.round(np.geomspace(10, 100_000, 90)).astype(int), N_CHOICES])
POWERS = [f"{p / 100:g}" for p in range(50, 100)]
SPREAD = {"disagreement": "share of items", "sd": "SD of differences"}
SOURCE = {"typed": "Typed assumptions", "store": "Estimated from two runs in the store"}
LABEL_TARGETS = {"half-width": "Interval half-width", "gap": "Gap to detect"}
LABEL_KINDS = {"binary": "0/1 labels", "numeric": "Numeric labels"}
FORMULA = ("n = (z₁₋α/₂ + z_power)² · SD² · design effect / gap², rounded up; SD is the "
           "standard deviation of the per-item score differences B − A. Knowing only the share "
           "of items where the models disagree, SD² = that share is the conservative bound for "
           "0/1 scores (Miettinen 1968). Formulas: docs/methods.md, *Planning*.")


def legacy_alpha() -> None:
    """Links from before the confidence and alpha controls were one: ``?alpha=`` becomes
    ``?conf=`` (confidence = 1 − alpha) when it names one of the offered levels."""
    alpha = common.url_get("alpha")
    if alpha is None:
        return
    conf = {"0.01": "0.99", "0.05": "0.95", "0.1": "0.90"}.get(alpha)
    if conf is not None and common.url_get("conf") is None:
        common.url_set("conf", conf)
    common.url_set("alpha", None)


def keyed(prefix: str, default: str) -> str:
    """A widget key that changes with its suggested value, so a new run pair suggests new text
    instead of keeping the old pair's names."""
    return f"{prefix}_{zlib.crc32(default.encode()):08x}"


# ---- the pilot pair (store mode) ----------------------------------------------------------
def pilot_pair() -> analysis.PlanFromPair | None:
    """Run A, Run B and a shared task from the store; the pilot estimate, or None with a
    message saying why (fewer than two runs, no shared task with item scores, an error)."""
    store = common.get_store()
    runs = common.runs_table(store)
    if len(runs) < 2:
        st.info(common.EMPTY_STORE if runs.empty else
                "The store holds one run; a pilot needs two runs of the same task with item "
                "scores. Upload another run on the **Upload & runs** page, or use typed "
                "assumptions.")
        return None
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
        st.info("These two runs share no task with item-level scores, so there is no pilot "
                "to estimate from: choose another pair, or switch to typed assumptions. "
                "Nothing is computed until then.")
        return None
    task = common.url_choice("Task", shared, "plan_task", key="pl_task", container=ct)
    pilot = common.compute(analysis.plan_from_pair, run_a, run_b, task, stop=False)
    if pilot is None:
        return None
    st.caption(common.md_escape(analysis.pilot_sentence(pilot)))
    if pilot.note:
        st.warning(common.md_escape(pilot.note[0].upper() + pilot.note[1:] + "."))
    return pilot


# ---- the inputs beside the answer ---------------------------------------------------------
def question_inputs(source: str, pilot: analysis.PlanFromPair | None) -> dict:
    """The controls of the question; returns the keyword arguments of ``paired_plan``
    (``confidence`` too, for the sections below). Typed mode asks for the spread and the
    design effect; store mode takes both from the pilot and shows them."""
    c1, c2 = st.columns(2)
    gap = common.url_numeric(
        "number", "Gap to detect (points)", "gap", key="pl_gap", default=2.0, min_value=0.1,
        max_value=50.0, step=0.1, fmt="%.1f", container=c1,
        help="The smallest difference between the two models' scores worth detecting, in "
             "points of a 0–100 score (2 = two percentage points of accuracy).")
    confidence = common.confidence_choice(
        "pl_conf", container=c2,
        help="Confidence of the two-sided test (1 − alpha); also the level of the one-score "
             "error bar below.")
    power = float(common.url_choice(
        "Power", POWERS, "power", key="pl_power", default="0.8", widget="select_slider",
        format_func=lambda s: f"{float(s):.0%}",
        help="The chance that a true gap of this size comes out significant."))
    kw: dict = {"gap": gap / 100, "alpha": round(1 - confidence, 10), "power": power}
    if source == "typed":
        c3, c4 = st.columns(2)
        spread = common.url_choice("How often they disagree, as", list(SPREAD), "spread",
                                   key="pl_spread", default="disagreement",
                                   format_func=SPREAD.get, container=c3)
        if spread == "sd":
            kw["sd_diff"] = common.url_numeric(
                "number", "SD of per-item differences", "sd", key="pl_sd", default=0.4,
                min_value=0.001, max_value=10.0, step=0.01, fmt="%.4f", container=c4,
                help="Standard deviation of x_B − x_A over items (at most 1 for 0/1 scores).")
        else:
            kw["disagreement"] = common.url_numeric(
                "number", "Share of items where they disagree (0–1)", "dis", key="pl_dis",
                default=0.2, min_value=0.001, max_value=1.0, step=0.01, fmt="%.3f",
                container=c4, help="0.2 = one model right and the other wrong on 20% of items.")
    elif pilot is not None:
        kind, value, _ = analysis.pilot_spread(pilot)
        what = (f"SD of per-item differences {value:.4f}" if kind == "sd" else
                f"share of items where they disagree at most {percent(value)}")
        st.caption(f"From the pilot: {what}; design effect "
                   f"{analysis.pilot_design_effect(pilot):.2f}.")
    # open whenever a setting inside it is not 1, so no input of the answer is hidden
    extra = [("pl_k", "k")] + ([("pl_deff", "deff")] if source == "typed" else [])
    opened = any(st.session_state.get(key, common.url_number(param, 1.0)) != 1
                 for key, param in extra)
    with st.expander("Clustered items, several answers per item", expanded=opened):
        if source == "typed":
            kw["design_effect"] = common.url_numeric(
                "number", "Design effect (clustered items)", "deff", key="pl_deff", default=1.0,
                min_value=1.0, max_value=50.0, step=0.1, fmt="%.2f",
                help="How many times larger clustering (items sharing a passage or subject) "
                     "makes the variance of the mean difference; 1 = independent items. The "
                     "Repeats & clusters page estimates it.")
        else:
            st.caption("Design effect: the pilot's (at least 1; 1 without a cluster key).")
        kw["answers_per_item"] = common.url_numeric(
            "number", "Answers per item K", "k", key="pl_k", default=1, min_value=1,
            max_value=100, step=1, cast=int,
            help="Each item scored as the mean of K sampled answers.")
        if kw["answers_per_item"] > 1:
            kw["within_share"] = common.url_numeric(
                "slider", "Share of the variance that is answer-to-answer noise", "wshare",
                key="pl_wshare", default=0.0, min_value=0.0, max_value=0.95, step=0.05,
                help="K answers per item divide this part of the variance by K "
                     "(SD² = between items + within an item / K); with 0, K changes nothing.")
    return {**kw, "confidence": confidence}


def show_answer(plan: analysis.PairedPlan | None) -> None:
    """The answer: one sentence, large, and the formula behind it."""
    with st.container(border=True):
        if plan is None:
            st.subheader("How many items do I need to detect a gap?", anchor=False)
            st.caption("No answer yet: it needs a pilot pair of runs that share a task "
                       "(above), or typed assumptions.")
            return
        st.subheader(common.md_escape(plan.items_sentence()), anchor=False)
        st.caption(FORMULA)


# ---- below the answer ---------------------------------------------------------------------
def detectable_section(plan: analysis.PairedPlan | None) -> int:
    """What n items can detect: the sentence for the chosen n and the curve against n.
    Returns the chosen n (one score's section uses it too)."""
    st.subheader("What a given number of items can detect", anchor=False)
    n = int(common.url_choice("Number of items n", [str(v) for v in N_CHOICES], "n", key="pl_n",
                              default="500", widget="select_slider",
                              format_func=lambda s: f"{int(s):,}"))
    if plan is None:
        st.caption("Shown once the question above has an answer.")
        return n
    st.markdown(common.md_escape(plan.mde_sentence(n)))
    curve = [plan.mde_at(int(v)) for v in N_GRID]
    fig = charts.power_curve(N_GRID, curve, alpha=plan.alpha, power=plan.power,
                             required_n=plan.required_n, target=plan.gap)
    common.show_chart(fig, "smallest_detectable_gap_vs_n", "pl_power_chart")
    with st.expander("Smallest detectable gap against n (table)"):
        common.show_table(pd.DataFrame({"n": N_GRID, "smallest detectable gap (points)":
                                        np.asarray(curve) * 100}),
                          "smallest_detectable_gap_vs_n", "pl_mde_t")
    return n


def one_score_section(n: int, confidence: float) -> None:
    """One score's error bar at n items (Wilson and normal approximation) and the items needed
    for a target half-width."""
    st.subheader("Error bar of one score", anchor=False)
    c1, c2 = st.columns(2)
    p = common.url_numeric("slider", "Expected score", "p", key="pl_p", default=0.7,
                           min_value=0.01, max_value=0.99, step=0.01, container=c1,
                           help="The score (share of items right) you expect, 0–1.")
    target = common.url_numeric("number", "Target half-width (points)", "hw", key="pl_target_hw",
                                default=2.0, min_value=0.1, max_value=49.0, step=0.1,
                                fmt="%.1f", container=c2)
    wilson_name = words.label("score", "wilson")
    normal_name = words.label("score", "clt")
    normal_title = normal_name[0].upper() + normal_name[1:]
    try:
        wilson = [stats.half_width(int(v), p, "wilson", confidence) for v in N_GRID]
        normal = [stats.half_width(int(v), p, "clt", confidence) for v in N_GRID]
        w_here = stats.half_width(n, p, "wilson", confidence)
        c_here = stats.half_width(n, p, "clt", confidence)
        need_w = stats.required_n_for_half_width(target / 100, p, "wilson", confidence)
        need_c = stats.required_n_for_half_width(target / 100, p, "clt", confidence)
    except EvalbarsError as exc:
        common.show_error(exc)
        return
    m1, m2, m3 = st.columns(3)
    m1.metric(f"{wilson_name}, {confidence:.0%}, n = {n:,}", f"± {100 * w_here:.2f} points")
    m2.metric(f"{normal_title}, {confidence:.0%}, n = {n:,}", f"± {100 * c_here:.2f} points")
    m3.metric(f"Items for ± {target:.1f} points", f"{need_w:,}",
              help=f"{wilson_name}; the {normal_name} needs {need_c:,}.")
    st.caption(f"A score of {100 * p:.0f}% measured on n items (n from the section above, "
               f"confidence from the question at the top). Wilson: z·√(p(1−p)/n + z²/4n²) / "
               f"(1 + z²/n); normal approximation: z·√(p(1−p)/n); both in points of the score.")
    fig = charts.ci_width_plot(N_GRID, wilson, normal, p=p, confidence=confidence, chosen_n=n)
    common.show_chart(fig, f"error_bar_p{p:.2f}", "pl_ci_chart")


def judge_labels_section(confidence: float, power: float) -> None:
    """Human labels needed to correct an LLM judge's score with PPI++, from the judge-human
    agreement of a pilot (``analysis.judge_labels_plan``)."""
    st.subheader("Human labels for an LLM judge", anchor=False)
    st.caption("A judge-scored task corrected with human labels on a random sample of its "
               "items (PPI++, the LLM judges page): how many labels does a target precision "
               "need? Take the inputs from a pilot: the LLM judges page shows the human and "
               "judge scores and their agreement on the labelled items.")
    kind = common.url_choice("Labels", list(LABEL_KINDS), "jl_kind", key="jl_kind_w",
                             format_func=LABEL_KINDS.get, widget="radio")
    c1, c2, c3 = st.columns(3)
    n_items = common.url_numeric("number", "Judged items in the task", "jl_items",
                                 key="jl_items_w", default=2000, min_value=4,
                                 max_value=10_000_000, step=1, cast=int, container=c1)
    target = common.url_choice("Target", list(LABEL_TARGETS), "jl_target", key="jl_target_w",
                               format_func=LABEL_TARGETS.get, widget="radio", container=c2)
    unit = "points" if kind == "binary" else "label units"
    value = common.url_numeric("number", f"Half-width ({unit})" if target == "half-width"
                               else f"Gap ({unit})", "jl_value", key="jl_value_w",
                               default=3.0, min_value=0.1 if kind == "binary" else 0.001,
                               max_value=50.0 if kind == "binary" else 1e6,
                               step=0.1 if kind == "binary" else 0.01,
                               fmt="%.1f" if kind == "binary" else "%.3f", container=c3)
    d1, d2, d3 = st.columns(3)
    if kind == "binary":
        moments = dict(
            p_human=common.url_numeric("slider", "Human score (pilot)", "jl_ph",
                                       key="jl_ph_w", default=0.6, min_value=0.01,
                                       max_value=0.99, step=0.01, container=d1),
            p_judge=common.url_numeric("slider", "Judge score (pilot)", "jl_pj",
                                       key="jl_pj_w", default=0.65, min_value=0.01,
                                       max_value=0.99, step=0.01, container=d2),
            agreement=common.url_numeric("slider", "Judge and human agree on", "jl_agree",
                                         key="jl_agree_w", default=0.85, min_value=0.0,
                                         max_value=1.0, step=0.01, container=d3,
                                         help="Share of the labelled items where the "
                                              "judge's verdict equals the human's."))
    else:
        moments = dict(
            sd_human=common.url_numeric("number", "SD of human labels", "jl_sdh",
                                        key="jl_sdh_w", default=1.0, min_value=0.001,
                                        max_value=1000.0, step=0.01, container=d1),
            sd_judge=common.url_numeric("number", "SD of judge scores", "jl_sdj",
                                        key="jl_sdj_w", default=1.0, min_value=0.001,
                                        max_value=1000.0, step=0.01, container=d2),
            correlation=common.url_numeric("slider", "Judge-human correlation", "jl_rho",
                                           key="jl_rho_w", default=0.7, min_value=-1.0,
                                           max_value=1.0, step=0.01, container=d3))
    scale = 100 if kind == "binary" else 1
    try:
        plan = analysis.judge_labels_plan(n_items=int(n_items), target=target,
                                          value=float(value) / scale, confidence=confidence,
                                          power=power, **moments)
    except EvalbarsError as exc:
        common.show_error(exc)
        return
    st.markdown(f"**{common.md_escape(plan.sentence())}**")
    st.caption("Variance of the PPI++ estimate with n labels of the task's items and the "
               "judge on the rest, lambda tuned for each n: Var = λ² var(f)/N + var(Y − λf)/n "
               "(Angelopoulos, Duchi & Zrnic 2023); without clipping Var = var(Y)·[(1 − ρ²)/n "
               "+ ρ²/(n + N)]. Gap: the corrected score against a fixed value, at the "
               "question's confidence and power; for two runs graded by one judge give the "
               "SDs and correlation of the per-item differences. Labels must be a random "
               "sample of the items. docs/methods.md, *LLM judges*.")


def preregistration_section(plan: analysis.PairedPlan | None) -> None:
    """The sheet to write before the run, with the plan's assumptions and n."""
    st.subheader("Pre-registration sheet", anchor=False)
    if plan is None:
        st.caption("Shown once the question at the top has an answer.")
        return
    pilot = plan.pilot
    default_cmp = (f"{pilot.run_b} vs {pilot.run_a} on {pilot.task}" if pilot is not None
                   else "model B vs model A on the benchmark")
    default_metric = pilot.metric if pilot is not None else "accuracy"
    c1, c2 = st.columns(2)
    comparison = c1.text_input("Planned comparison", value=default_cmp,
                               key=keyed("pl_cmp", default_cmp))
    metric = c2.text_input("Metric", value=default_metric, key=keyed("pl_metric", default_metric))
    n_plan = c1.number_input("Items n to run", min_value=1, max_value=10_000_000,
                             value=int(plan.required_n), step=1,
                             key=f"pl_nplan_{plan.required_n}",
                             help="Defaults to the items needed for the gap at the top.")
    stopping = c2.text_input("Stopping rule", key="pl_stop",
                             value="Run all n items once; no peeking and no early stopping.")
    assumptions = st.text_area("Other assumptions (optional)", key="pl_assume", height=70)
    try:
        sheet = stats.preregistration_markdown(
            comparison=comparison, n=int(n_plan), alpha=plan.alpha, power=plan.power,
            design_effect=plan.design_effect, answers_per_item=plan.answers_per_item,
            metric=metric, stopping_rule=stopping, assumptions=assumptions,
            **plan.spread_kwargs())
    except EvalbarsError as exc:
        common.show_error(exc)
        return
    st.code(sheet, language="markdown")
    st.download_button("Download pre-registration (Markdown)", data=sheet,
                       file_name="preregistration.md", mime="text/markdown", key="pl_prereg_dl",
                       on_click="ignore", icon=":material/download:")


# ---- the page -----------------------------------------------------------------------------
common.ensure_app_navigation()
legacy_alpha()
st.title("Planner")
st.caption("How many items (questions) two models must both answer before a gap between their "
           "scores can be told apart from noise: a paired comparison, both runs on the same "
           "items.")
source = common.url_choice("Assumptions", list(SOURCE), "src", key="pl_src",
                           format_func=SOURCE.get, widget="radio")
pilot = pilot_pair() if source == "store" else None
# The answer is drawn first, its inputs beside it (below it in presentation mode, where the
# controls are hidden); the inputs run first because the answer is computed from them.
if present.is_on():
    answer_box, inputs_box = st.container(), st.container()
else:
    answer_box, inputs_box = st.columns([3, 2], gap="large")
with inputs_box:
    settings = question_inputs(source, pilot)
confidence = settings.pop("confidence")
plan = None
with answer_box:
    if source == "typed" or pilot is not None:
        try:
            plan = analysis.paired_plan(pilot=pilot, **settings)
        except EvalbarsError as exc:
            common.show_error(exc)
    show_answer(plan)
st.divider()
chosen_n = detectable_section(plan)
if not present.is_on():          # a projected page keeps to the answer and its curve
    st.divider()
    one_score_section(chosen_n, confidence)
    st.divider()
    preregistration_section(plan)
    st.divider()
    judge_labels_section(confidence, float(settings["power"]))
