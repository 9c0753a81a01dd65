"""Noise beyond the items: measurement protocols, training seeds, checkpoint series and item
splits, each beside the item noise the other pages show.

Numbers: ``evalcore.analysis.noise`` (``protocol_sensitivity``, ``seed_report``,
``checkpoint_report``, ``split_report``), one section per tab, computed only while its tab
is open. URL state: nz_tab (the open tab), nz_conf, pr_task, pr_group, sd_task,
sd_gap, ck_task, sp_run, sp_task, sp_k.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore import analysis, words
from ui import charts, common

common.ensure_app_navigation()
st.title("Noise beyond the items")
st.caption("Error bars elsewhere in evalbars count the noise from which items were sampled. "
           "Scores also move with the measurement protocol, the training seed, the checkpoint "
           "and the split of the items; each section puts one of these beside the item noise.")
store = common.get_store()
runs = common.require_runs(store, 1, "this page")
common.demo_banner(runs)
confidence = common.confidence_choice("nz_conf", container=st.columns([1, 5])[0])
label = common.run_label(runs)


def _pct(*frames) -> bool:
    return all(common.is_proportion(f) for f in frames if len(f))


def _with_unit(x: float, pct: bool, digits: int = 1) -> str:
    """A score difference or spread with its unit (pp for proportions), "–" when missing."""
    text = common.fmt_value(x, pct, digits)
    return text if text == "–" else f"{text} {'pp' if pct else 'score units'}"


# ---- 1. protocols -------------------------------------------------------------------------
def _protocols() -> None:
    st.markdown("**How far does one model's score move when only the measurement changes?** "
                "Prompt template, few-shot count, chat template, answer filter and metric "
                "variant (acc/acc_norm, strict/flexible) each count as a protocol; the spread "
                "is set beside the gap to the nearest other model on the same task.")
    pr = common.compute(analysis.protocol_sensitivity, confidence=confidence, stop=False)
    if pr is not None and pr.groups.empty:
        st.info(f"No protocol group in the store. {pr.how_to}")
    elif pr is not None:
        tasks = sorted(pr.groups["task"].astype(str).unique())
        task = common.url_choice("Task", tasks, "pr_task", key="pr_task_w")
        g = pr.groups[pr.groups["task"] == task]
        pct = _pct(pr.cells["score"])
        for row in g.itertuples(index=False):
            icon = ":material/warning:" if row.spread_exceeds_gap else ":material/check:"
            st.markdown(f"{icon} {common.md_escape(row.sentence)}")
        model = common.url_choice("Model", g["model"].astype(str).tolist(), "pr_group",
                                  key="pr_group_w")
        grow = g[g["model"] == model].iloc[0]
        cells = pr.cells[pr.cells["group"] == grow["group"]]
        cols = st.columns(4)
        cols[0].metric("Protocols", int(grow["n_protocols"]))
        cols[1].metric("Range (max − min)", _with_unit(grow["range"], pct),
                       help="Spread of the score across the protocols.")
        cols[2].metric("SD across protocols", _with_unit(grow["sd"], pct, 2),
                       help="Sample SD (ddof = 1) of the protocol scores.")
        cols[3].metric("Item SE of one protocol", _with_unit(grow["item_se"], pct, 2),
                       help="Root mean square of the protocols' item standard errors.")
        common.show_chart(charts.protocol_spread_plot(
            cells, title=f"{model} on {task}", percent=pct, confidence=confidence),
            f"protocol spread {model} {task}", "pr_chart")
        table = pd.DataFrame({
            "Protocol": cells["protocol"].astype(str), "Differs from the first run":
                ["–" if v is None or v != v else str(v) for v in cells["differs"]],
            "n": [common.fmt_n(v) for v in cells["n"]],
            f"Score [{confidence:.0%} CI]" + (" (%)" if pct else ""):
                [common.fmt_interval(s, lo, hi, pct) for s, lo, hi in
                 zip(cells["score"], cells["low"], cells["high"])]})
        common.show_table(table, f"protocols {model} {task}", "pr_cells")
        st.caption("Differs from the first run: the settings that differ from the group's "
                   "first run (protocol records of the files). Intervals: Wilson for 0/1 item "
                   "scores, CLT otherwise, the reported stderr for runs without item scores.")
        u = "pp" if pct else "score units"
        with st.expander("All protocol groups and the per-task band"):
            common.show_table(common.text_table(pr.groups, {
                "model": ("Model", "text", 1), "task": ("Task", "text", 1),
                "metric_family": ("Metric", "text", 1),
                "n_protocols": ("Protocols", ".0f", 1),
                "mean": ("Mean score" + (" (%)" if pct else ""), ".1f" if pct else ".4g",
                         100 if pct else 1),
                "range": (f"Range ({u})", ".1f" if pct else ".4g", 100 if pct else 1),
                "sd": (f"SD across protocols ({u})", ".2f" if pct else ".4g", 100 if pct else 1),
                "item_se": (f"Item SE ({u})", ".2f" if pct else ".4g", 100 if pct else 1),
                "nearest_model": ("Nearest other model", "text", 1),
                "nearest_gap": (f"Gap to it ({u})", "+.1f" if pct else "+.4g",
                                100 if pct else 1),
                "spread_exceeds_gap": ("Spread larger than the gap", "yes", 1)}),
                "protocol groups", "pr_groups")
            st.caption("The band per task is the largest protocol range known for it: a gap "
                       "between two models on the leaderboard smaller than this band may be a "
                       "protocol effect.")
            common.show_table(common.text_table(pr.task_bands, {
                "task": ("Task", "text", 1), "metric_family": ("Metric", "text", 1),
                "n_groups": ("Models with several protocols", ".0f", 1),
                "max_range_points": ("Band: largest range (pp)", ".1f", 1)}),
                "protocol bands", "pr_bands")

# ---- 2. seeds -----------------------------------------------------------------------------
def _seeds() -> None:
    st.markdown("**Would the ranking survive a retrain?** Runs of one configuration trained "
                "with different seeds show how far the score moves between seeds beyond "
                "item noise (Madaan et al. 2024). Two configurations are compared with the "
                "seed as a random effect: the difference of seed means, an SE that includes "
                "the between-seed and the item variance, and Welch-Satterthwaite degrees of "
                "freedom.")
    gap_pts = common.url_numeric("number", "Gap to plan for (points; 0 = each comparison's "
                                 "observed difference)", "sd_gap", key="sd_gap_w", default=0.0,
                                 min_value=0.0, max_value=100.0, step=0.5)
    gap = float(gap_pts) / 100.0 if gap_pts else None
    sd = common.compute(analysis.seed_report, confidence=confidence, gap=gap, stop=False)
    if sd is not None and sd.groups.empty:
        st.info(f"No seed group in the store. {sd.how_to}")
    elif sd is not None:
        tasks = sorted(sd.groups["task"].astype(str).unique())
        task = common.url_choice("Task", tasks, "sd_task", key="sd_task_w")
        g = sd.groups[sd.groups["task"] == task]
        r = sd.runs[sd.runs["task"] == task]
        c = sd.comparisons[sd.comparisons["task"] == task]
        pct = _pct(r["score"])
        for row in g.itertuples(index=False):
            st.markdown(common.md_escape(row.sentence))
        common.show_chart(charts.seed_scores_plot(r, task=task, percent=pct, confidence=confidence),
                          f"seeds {task}", "sd_chart")
        u = "pp" if pct else "score units"
        k = 100 if pct else 1
        num = ".2f" if pct else ".4g"
        common.show_table(common.text_table(g, {
            "config": ("Configuration", "text", 1), "metric": ("Metric", "text", 1),
            "k": ("Seeds", ".0f", 1),
            "mean": ("Mean score" + (" (%)" if pct else ""), num, k),
            "sd_observed": (f"SD of the seed scores ({u})", num, k),
            "between_sd": (f"Between-seed SD beyond item noise ({u})", num, k),
            "item_se": (f"Item SE of one run ({u})", num, k),
            "seed_to_item_ratio": ("Between-seed SD / item SE", ".2f", 1),
            "between_var": ("Between-seed variance (" + ("pp²" if pct else "(score units)²")
                            + ")", ".4g", k * k),
            "runs": ("Runs", "text", 1)}), f"seed groups {task}", "sd_groups")
        st.caption("Between-seed SD = √max(S² − mean SE², 0), S the SD of the seed scores and "
                   "SE each run's item SE (one-way random-effects ANOVA); a negative "
                   "between-seed variance means the seeds spread no more than item noise alone "
                   "would make them.")
        if c.empty:
            st.info("One configuration only: upload a second configuration with two or more "
                    "seeds (or tag runs config=NAME) to compare them.")
        for row in c.itertuples(index=False):
            st.markdown(common.md_escape(row.sentence))
        if len(c):
            common.show_table(common.text_table(c, {
                "config_a": ("Configuration A", "text", 1),
                "config_b": ("Configuration B", "text", 1),
                "k_a": ("Seeds A", ".0f", 1), "k_b": ("Seeds B", ".0f", 1),
                "diff": (f"B − A ({u})", "+.2f" if pct else "+.4g", k),
                "low": (f"CI low ({u})", num, k), "high": (f"CI high ({u})", num, k),
                "df": ("Degrees of freedom", ".1f", 1), "p_value": ("p", ".4g", 1),
                "floored": ("Variance floored at item noise", "text", 1),
                "gap": (f"Gap planned for ({u})", num, k),
                "seeds_needed": ("Seeds needed per configuration", ".0f", 1)}),
                f"seed comparisons {task}", "sd_cmp")
            st.caption("SE² = V_A/k_A + V_B/k_B with V the variance of one run's score (the "
                       "observed seed variance, floored at the item variance; the floored "
                       "column names the configurations where the floor applied). Seeds "
                       "needed: the smallest k per configuration with (t_{1−α/2} + t_power)"
                       "·√(2V/k) ≤ gap, α = 0.05, power 0.8; more items lower only the item "
                       "part of V.")

# ---- 3. checkpoints -----------------------------------------------------------------------
def _checkpoints() -> None:
    st.markdown("**Can this benchmark guide decisions made on small models?** For a series of "
                "checkpoints (Heineman et al. 2025): the learning curve with intervals; the "
                "signal-to-noise ratio (spread between final models relative to their mean, "
                "over the relative SD of one model's last checkpoints); and decision accuracy "
                "(how often two series are ordered at an early checkpoint as at the final one).")
    ck = common.compute(analysis.checkpoint_report, confidence=confidence, stop=False)
    if ck is not None and ck.curve.empty:
        st.info(f"No checkpoint series in the store. {ck.how_to}")
    elif ck is not None:
        tasks = sorted(ck.curve["task"].astype(str).unique())
        task = common.url_choice("Task", tasks, "ck_task", key="ck_task_w")
        cur = ck.curve[ck.curve["task"] == task]
        pct = _pct(cur["score"])
        common.show_chart(charts.learning_curve_plot(cur, task=task, percent=pct,
                                                     confidence=confidence),
                          f"learning curve {task}", "ck_chart")
        snr = ck.snr[ck.snr["task"] == task]
        if len(snr):
            row = snr.iloc[0]
            cols = st.columns(3)
            cols[0].metric("Signal (relative spread)", common.fmt_value(row["signal"], False),
                           help="max |m_j − m_k| / mean(m) over the scores named below: a "
                                "ratio, without unit")
            cols[1].metric("Noise (relative SD)", common.fmt_value(row["noise"], False),
                           help=f"sd / mean of the last {row['last_n']} checkpoints: of the "
                                "series, or of all series pooled (as the reference script of "
                                "Heineman et al. pools them); a ratio, without unit")
            cols[2].metric("Signal-to-noise", common.fmt_value(row["snr"], False))
            basis = common.md_escape(row["signal_basis"]) if row["signal_basis"] \
                else words.MISSING
            st.caption(f"Signal from: {basis} ({int(row['n_models'])} scores). "
                       + (common.md_escape(row["note"]) if row["note"] else ""))
        dec = ck.decisions[ck.decisions["task"] == task]
        if dec.empty:
            st.info("Decision accuracy needs two or more series with checkpoints at the same "
                    "steps (e.g. two data mixes trained side by side).")
        else:
            st.markdown("**Decision accuracy** at each early step (share of series pairs ordered "
                        "as at their final checkpoints; a tie counts one half):")
            common.show_table(common.text_table(dec, {
                "step": ("Step", ".0f", 1), "n_series": ("Series", ".0f", 1),
                "accuracy": ("Decision accuracy", ".2f", 1),
                "n_pairs": ("Series pairs", ".0f", 1), "agree": ("Ordered as at the end", ".0f", 1),
                "ties": ("Ties", ".0f", 1)}), f"decision accuracy {task}", "ck_dec")
            if int(dec["n_pairs"].max()) == 1:
                st.caption("With two series each step is a single pair: 1 (agrees), 0 (reversed) "
                           "or ½ (tied). More series make this a rate.")
        with st.expander("Every checkpoint"):
            common.show_table(common.text_table(cur, {
                "series": ("Series", "text", 1), "seed": ("Seed", "text", 1),
                "step": ("Step", ".0f", 1), "run": ("Run", "text", 1), "n": ("n", ".0f", 1),
                "score": ("Score" + (" (%)" if pct else ""), ".2f" if pct else ".4g",
                          100 if pct else 1),
                "se": ("SE" + (" (pp)" if pct else ""), ".2f" if pct else ".4g",
                       100 if pct else 1),
                "low": (f"CI low ({confidence:.0%})", ".2f" if pct else ".4g",
                        100 if pct else 1),
                "high": (f"CI high ({confidence:.0%})", ".2f" if pct else ".4g",
                         100 if pct else 1)}), f"checkpoints {task}", "ck_curve")

# ---- 4. splits ----------------------------------------------------------------------------
def _splits() -> None:
    st.markdown("**Are the items exchangeable?** The items of one run are cut into k disjoint "
                "splits; the SD of the split scores is compared with the sampling reference "
                "s/√m (≈ √(p(1−p)/m) for 0/1 scores). Random splits match it by construction "
                "and serve as the yardstick; contiguous splits in item order test for drift, "
                "splits that keep clusters together test for clustering.")
    tasks = common.tasks_table(store)
    if "has_items" in tasks:
        tasks = tasks[tasks["has_items"].fillna(False).astype(bool)]
    names = dict(zip(runs["run_id"].astype(int), runs["name"].astype(str)))
    tasks = tasks.assign(run=tasks["run_id"].astype(int).map(names))
    tasks = tasks[tasks["n_items"].fillna(0).astype(int) >= 20]
    if tasks.empty:
        st.info("No run has item-level scores on a task with 20 or more items. Upload a run with "
                "item-level scores (lm_eval --log_samples, an inspect log, a tidy table with "
                "item ids).")
    else:
        cols = st.columns([2, 2, 1])
        run = common.url_choice("Run", sorted(tasks["run"].unique()), "sp_run", key="sp_run_w",
                                format_func=label, container=cols[0])
        task = common.url_choice("Task", sorted(tasks[tasks["run"] == run]["task"].astype(str).unique()),
                                 "sp_task", key="sp_task_w", container=cols[1])
        k = common.url_numeric("number", "Splits k", "sp_k", key="sp_k_w", default=10,
                               min_value=2, max_value=50, step=1, container=cols[2], cast=int)
        sp = common.compute(analysis.split_report, run, task, k=int(k), stop=False)
        if sp is not None:
            res = sp.result
            c = st.columns(4)
            c[0].metric("Splits × items", f"{res.k} × {res.m}")
            c[1].metric("Random splits / reference", f"{res.random_ratio:.2f}",
                        help="About 1 by construction: the yardstick.")
            c[2].metric("Item order / reference", f"{res.ordered_ratio:.2f}",
                        help=f"Permutation p = {common.fmt_p(res.ordered_p)}")
            c[3].metric("Clusters kept / reference",
                        "–" if res.n_clusters == 0 else f"{res.cluster_ratio:.2f}",
                        help=("no cluster key" if res.n_clusters == 0
                              else f"{res.n_clusters} clusters; p = {common.fmt_p(res.cluster_p)}"))
            (st.warning if not res.exchangeable else st.success)(common.md_escape(sp.sentence))


# one section per tab; only the open tab's section runs (its tab is in the URL: nz_tab)
common.tab_sections("nz_tab", {"Protocols": _protocols, "Seeds": _seeds,
                               "Checkpoints": _checkpoints, "Splits": _splits})
