"""Repeats & clusters: several answers per item (between/within variance, SE against K,
smallest sufficient K, pass@k), rerun noise of two passes, clustered vs iid SE with design
effect and ICC, and metric variants of one run compared as a paired difference.

Numbers: ``evalcore.analysis.repeats``, ``rerun_noise``, ``clusters``, ``metric_variants``.
One section per tab, computed only while its tab is open. URL state: rp_tab (the open tab), per
section (rep_run/rep_task/rep_metric, rr_a/rr_b/rr_task, cl_run/cl_task, mv_run/mv_task/mv_a/
mv_b) and conf.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from evalcore import analysis, words
from ui import charts, common

common.ensure_app_navigation()
st.title("Repeats & clusters")
store = common.get_store()
runs, tasks = common.runs_and_tasks(store, 1, "this page")
names = dict(zip(runs["run_id"].astype(int), runs["name"].astype(str)))
label = common.run_label(runs)
tasks = tasks.assign(run=tasks["run_id"].astype(int).map(names))
if "has_items" in tasks:
    item_tasks = tasks[tasks["has_items"].fillna(False).astype(bool)]
else:
    item_tasks = tasks
confidence = common.confidence_choice("rep_conf", container=st.columns([1, 5])[0])


PRIMARY = "(primary)"


def _metric_label(m: str) -> str:
    return "primary metric (as on the leaderboard)" if m == PRIMARY else m


def _is_binary(run: str, task: str, metric: str | None) -> bool:
    rows = tasks[(tasks["run"] == run) & (tasks["task"].astype(str) == task)]
    if metric is not None:
        rows = rows[rows["metric"].astype(str) == metric]
    return bool(len(rows)) and bool(rows["binary"].fillna(False).astype(bool).all())


def _unit(pct: bool) -> str:
    return "pp" if pct else "score units"


def _sd_metric(col, label: str, variance: float, pct: bool, help: str) -> None:
    """A variance component shown as an SD in the score's unit (pp for 0/1 scores), with the
    variance itself and its squared unit underneath. A negative estimate (the items differ
    less than the answers' noise alone would make them) shows as SD 0 and says so."""
    if variance is None or not math.isfinite(variance):
        col.metric(label, words.MISSING, help=help)
        return
    k = 100.0 if pct else 1.0
    unit = _unit(pct)
    col.metric(label, f"{math.sqrt(max(variance, 0.0)) * k:.2f} {unit}", help=help)
    squared = "pp²" if pct else "(score units)²"
    col.caption(f"variance {variance * k * k:.4g} {squared}"
                + (" (estimated below 0: taken as 0)" if variance < 0 else ""))


def _pick_run_task(rows: pd.DataFrame, prefix: str, container=None) -> tuple[str, str]:
    """Run and task selectors limited to the (run, task) pairs in ``rows``."""
    cols = (container or st).columns(2)
    run = common.url_choice("Run", sorted(rows["run"].unique()), f"{prefix}_run",
                            key=f"{prefix}_run_w", format_func=label, container=cols[0])
    task = common.url_choice("Task", sorted(rows[rows["run"] == run]["task"].astype(str).unique()),
                             f"{prefix}_task", key=f"{prefix}_task_w", container=cols[1])
    return run, task


# ---- several answers per item ------------------------------------------------------------
def _answers_per_item() -> None:
    multi = item_tasks[item_tasks["k_max"].fillna(1).astype(int) > 1]
    if multi.empty:
        st.info("No run has several answers per item. Runs with inspect epochs, lm_eval "
                "repeats or a tidy `answer` column appear here.")
    else:
        run, task = _pick_run_task(multi, "rep")
        metrics = sorted(multi[(multi["run"] == run) & (multi["task"].astype(str) == task)]
                         ["metric"].astype(str).unique())
        # default: the task's primary metric, as on the leaderboard (the analysis decides)
        chosen = common.url_choice("Metric", [PRIMARY, *metrics], "rep_metric",
                                   key="rep_metric_w", format_func=_metric_label)
        rep = common.compute(analysis.repeats, run, task,
                             metric=None if chosen == PRIMARY else chosen, stop=False)
        if rep is not None:
            metric = rep.metric
            pct = _is_binary(run, task, metric)
            u = _unit(pct)
            cols = st.columns(5)
            cols[0].metric("Items × answers", f"{rep.n_items} × {rep.k_observed}")
            _sd_metric(cols[1], "Between-item SD", rep.between, pct,
                       "How much the items' true scores differ: s_b, with s_b² = the variance "
                       "of the item means (ddof = 1) − s_w²/K.")
            _sd_metric(cols[2], "Within-item SD", rep.within, pct,
                       "How much one item's answers differ: s_w, with s_w² = the mean of the "
                       "per-item variances (ddof = 1).")
            cols[3].metric(f"SE with K = {rep.k_observed}",
                           f"{common.fmt_value(rep.se_observed, pct, 2)} {u}",
                           help="√((s_b² + s_w²/K)/n)")
            cols[4].metric("Smallest sufficient K", str(rep.k_sufficient),
                           help="The smallest K at which one more answer per item cuts the SE "
                                "by less than 1%.")
            st.caption("Variance components of item scores (docs/methods.md, several answers "
                       "per item). More answers only shrink the within-item term; the dashed "
                       "floor is the SE with infinitely many answers, which only more items "
                       "lower.")
            fig = charts.se_vs_k_plot(rep.curve, k_observed=rep.k_observed,
                                      se_observed=rep.se_observed,
                                      k_sufficient=rep.k_sufficient, percent=pct)
            common.show_chart(fig, f"se_vs_k_{run}_{task}", "rep_curve")
            k = 100.0 if pct else 1.0
            with st.expander("SE against K (table)"):
                common.show_table(common.text_table(rep.curve, {
                    "k": ("Answers per item K", ".0f", 1.0),
                    "se": (f"SE ({u})", ".3f", k),
                    "low_floor": (f"Floor: SE with unlimited answers ({u})", ".3f", k),
                    "measured": ("K measured", "yes", 1.0)}),
                    f"se_vs_k_{run}_{task}", "rep_curve_t")
            st.markdown("**pass@k** (unbiased estimator 1 − C(N−c, k)/C(N, k), averaged over "
                        "items; SE over items)")
            if rep.pass_at_k is None or rep.pass_at_k.empty:
                st.info("pass@k needs 0/1 scores; this metric is not binary.")
            else:
                common.show_chart(charts.pass_at_k_plot(rep.pass_at_k, confidence=confidence),
                                  f"pass_at_k_{run}_{task}", "rep_pass")
                common.show_table(common.text_table(rep.pass_at_k, {
                    "k": ("k", ".0f", 1.0), "estimate": ("pass@k (%)", ".2f", 100.0),
                    "se": ("SE (pp)", ".2f", 100.0),
                    "low": (f"CI low ({confidence:.0%}, %)", ".2f", 100.0),
                    "high": (f"CI high ({confidence:.0%}, %)", ".2f", 100.0),
                    "n_items": ("Items", ".0f", 1.0), "method": ("Method", "text", 1.0)}),
                    f"pass_at_k_{run}_{task}", "rep_pass_t")

# ---- reruns ------------------------------------------------------------------------------
def _reruns() -> None:
    run_names = sorted(item_tasks["run"].dropna().unique())
    if len(run_names) < 2:
        st.info("Rerun noise needs two passes (two runs) of the same model and protocol on the "
                "same items; the store has fewer than two runs with item-level scores.")
    else:
        models = runs.set_index(runs["name"].astype(str))["model"]
        model_of = dict(zip(models.index, models.tolist()))
        # the first pair of runs (in name order) of one model
        same_model = next(((a, b) for i, a in enumerate(run_names) for b in run_names[i + 1:]
                           if model_of.get(a) is not None and model_of.get(a) == model_of.get(b)),
                          None)
        default_a, default_b = same_model or (run_names[0], run_names[1])
        cols = st.columns(3)
        ra = common.url_choice("Pass 1", run_names, "rr_a", key="rr_a_w", default=default_a,
                               format_func=label, container=cols[0])
        rb = common.url_choice("Pass 2", [r for r in run_names if r != ra], "rr_b", key="rr_b_w",
                               default=default_b, format_func=label, container=cols[1])
        shared = sorted(set(item_tasks[item_tasks["run"] == ra]["task"].astype(str))
                        & set(item_tasks[item_tasks["run"] == rb]["task"].astype(str)))
        if not shared:
            st.info("These two runs share no task with item-level scores.")
        else:
            task = common.url_choice("Task", shared, "rr_task", key="rr_task_w",
                                     container=cols[2])
            if models.get(ra) != models.get(rb):
                st.warning("These runs are of different models: rerun noise is meant for two "
                           "passes of the same model and protocol.")
            rr = common.compute(analysis.rerun_noise, ra, rb, task, stop=False)
            if rr is not None:
                cols = st.columns(3)
                cols[0].metric("Flip rate f", f"{100 * rr.flip_rate:.1f}%",
                               help="Share of items whose correctness changed between passes.")
                cols[0].caption(f"{round(rr.flip_rate * rr.n)} of {rr.n} items flipped")
                cols[1].metric("Rerun noise as an SE of the mean",
                               f"{100 * rr.variance_term ** 0.5:.2f} pp",
                               help="√(f / (2n)): the part of a score's SE that comes from "
                                    "answers flipping between passes.")
                cols[1].caption(f"variance term f/(2n) = {1e4 * rr.variance_term:.3g} pp²")
                share = rr.share_of_paired_se2
                cols[2].metric("Share of a paired comparison's SE²",
                               words.MISSING if share is None or pd.isna(share)
                               else f"{100 * share:.0f}%",
                               help="How much of the squared paired SE rerun noise explains.")
                st.caption("Rerun noise from two passes of the same run (docs/methods.md, "
                           "reruns); metric " + common.md_escape(rr.metric) + ".")

# ---- clusters ----------------------------------------------------------------------------
def _clusters() -> None:
    clustered = item_tasks[item_tasks["has_cluster"].fillna(False).astype(bool)] \
        if "has_cluster" in item_tasks else item_tasks.iloc[0:0]
    if clustered.empty:
        st.info("No task has a cluster key (reading passage, subject, problem id). Tidy tables "
                "with a `cluster` column and inspect sample metadata provide one.")
    else:
        run, task = _pick_run_task(clustered, "cl")
        cr = common.compute(analysis.clusters, run, task, confidence=confidence, stop=False)
        if cr is not None:
            pct = _is_binary(run, task, cr.metric) or common.is_proportion([cr.score])
            u = _unit(pct)
            cols = st.columns(5)
            cols[0].metric(f"Score ({confidence:.0%} clustered CI)",
                           f"{common.fmt_value(cr.score, pct)}{'%' if pct else ''}")
            cols[0].caption(f"[{common.fmt_value(cr.low, pct)}, {common.fmt_value(cr.high, pct)}]"
                            " (as on the leaderboard with the clustered method)")
            cols[1].metric(words.label("se", "se_iid"), f"{common.fmt_value(cr.se_iid, pct, 2)} {u}",
                           help="sd(x, ddof = 1)/√n: as if every item were independent")
            cols[1].caption(f"{common.md_escape(cr.iid_method)} interval ignoring clusters: "
                            f"[{common.fmt_value(cr.iid_low, pct)}, "
                            f"{common.fmt_value(cr.iid_high, pct)}]")
            cols[2].metric(words.label("se", "se_clustered"),
                           f"{common.fmt_value(cr.se_clustered, pct, 2)} {u}",
                           help="The cluster-robust SE (CR1, with the G/(G−1) factor): items "
                                "of one cluster count as one draw")
            cols[2].caption(f"t interval on it ({cr.df} df), for reference: "
                            f"[{common.fmt_value(cr.clustered_low, pct)}, "
                            f"{common.fmt_value(cr.clustered_high, pct)}]")
            cols[3].metric("Design effect (variance ratio)", f"{cr.design_effect:.2f}",
                           help="SE_clustered² / SE_iid²: the ratio of the variances. The "
                                "intervals shown differ by more than √deff: the clustered one "
                                "also uses t (or Korn-Graubard's) degrees of freedom with G − 1.")
            if pd.notna(cr.width_ratio):
                cols[3].caption(f"clustered interval {cr.width_ratio:.2f}× as wide as the "
                                f"{common.md_escape(cr.iid_method)} interval (from the two "
                                "intervals shown)")
            cols[4].metric("ICC(1)", f"{cr.icc:.3f}",
                           help="One-way ANOVA of scores on cluster; may be negative.")
            st.caption(f"{cr.n} items in {cr.n_clusters} clusters; metric "
                       + common.md_escape(cr.metric)
                       + ". Interval: " + common.md_escape(cr.method_reason) + ".")

# ---- metric variants ---------------------------------------------------------------------
def _metric_variants() -> None:
    counts = item_tasks.groupby(["run", "task"])["metric"].nunique()
    pairs = counts[counts >= 2].reset_index()
    if pairs.empty:
        st.info("No run/task has two metric variants (acc vs acc_norm, strict vs flexible "
                "extraction, strict vs loose).")
    else:
        run, task = _pick_run_task(pairs, "mv")
        variants = sorted(item_tasks[(item_tasks["run"] == run)
                                     & (item_tasks["task"].astype(str) == task)]
                          ["metric"].astype(str).unique())
        cols = st.columns(2)
        ma = common.url_choice("Variant A", variants, "mv_a", key="mv_a_w", container=cols[0])
        mb = common.url_choice("Variant B", [v for v in variants if v != ma], "mv_b",
                               key="mv_b_w", container=cols[1])
        mv = common.compute(analysis.metric_variants, run, task, ma, mb, confidence=confidence,
                            stop=False)
        if mv is not None and len(mv.per_task):
            row = mv.per_task.iloc[0]
            pct = common.is_proportion([row["score_a"], row["score_b"]])
            u = _unit(pct)
            st.info(common.md_escape(mv.verdict))
            cols = st.columns(4)
            cols[0].metric(f"B − A ({confidence:.0%} CI)",
                           f"{common.fmt_value(row['diff'], pct, 1, True)} {u}")
            cols[0].caption(f"[{common.fmt_value(row['low'], pct, 1, True)}, "
                            f"{common.fmt_value(row['high'], pct, 1, True)}] {u}")
            cols[1].metric("Scores A / B",
                           f"{common.fmt_value(row['score_a'], pct)} / "
                           f"{common.fmt_value(row['score_b'], pct)}" + (" %" if pct else ""))
            if not pd.isna(row.get("b")):
                cols[2].metric("Items only B credits / only A", f"{int(row['b'])} / {int(row['c'])}")
                cols[3].metric("Exact McNemar p", common.fmt_p(row.get("p_exact")))
                cols[3].caption(f"the verdict's p: {common.fmt_p(row.get('p_value'))}")
            st.caption("Two grading variants of one run pair item by item. Interval: "
                       + common.md_escape(str(row.get("method_reason", ""))) + ". p = "
                       + common.fmt_p(row.get("p_value")) + ": "
                       + common.md_escape(str(row.get("test", ""))) + ".")
            k = 100.0 if pct else 1.0
            common.show_table(common.text_table(mv.per_task, {
                "task": ("Task", "text", 1.0), "metric": ("Variants (B − A)", "text", 1.0),
                "n": ("n", ".0f", 1.0), "score_a": (f"A ({'%' if pct else u})", ".2f", k),
                "score_b": (f"B ({'%' if pct else u})", ".2f", k),
                "diff": (f"B − A ({u})", "+.2f", k), "low": (f"CI low ({u})", ".2f", k),
                "high": (f"CI high ({u})", ".2f", k),
                "se_iid": (f"{words.label('se', 'se_iid')} ({u})", ".2f", k),
                "b": ("Only B credits", ".0f", 1.0), "c": ("Only A credits", ".0f", 1.0),
                "p_value": ("p (the verdict's test)", ".4g", 1.0),
                "p_exact": ("p exact McNemar", ".4g", 1.0),
                "verdict": ("Verdict", "text", 1.0),
                "method_reason": ("Interval method", "text", 1.0)}),
                f"variants_{run}_{task}", "mv_table")


# one section per tab; only the open tab's section runs (its tab is in the URL: rp_tab)
common.tab_sections("rp_tab", {"Answers per item": _answers_per_item, "Reruns": _reruns,
                               "Clusters": _clusters, "Metric variants": _metric_variants})
