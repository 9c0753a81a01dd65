"""Leaderboard: every run x task with its score, interval and the interval method named;
forest plot per task and for the macro average; runs indistinguishable from the best
(paired, Holm-adjusted); rank intervals; harness-reported stderr next to ours with audit flags.

Numbers: ``evalcore.analysis.leaderboard``. URL state: task, metric, method, conf, runs.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.analysis import METHOD_LABELS, METHODS
from ui import charts, common, leaderboard_view

ALL = "*"
DEFAULT_METRIC = "(default)"
MAX_PANELS = 6

common.ensure_app_navigation()
st.title("Leaderboard")
store = common.get_store()
runs, tasks = common.runs_and_tasks(store, 1, "the leaderboard")
task_names = sorted(tasks["task"].astype(str).unique())

c_task, c_metric, c_method, c_conf = st.columns([3, 2, 3, 1])
task = common.url_choice("Task", [ALL, *task_names], "task", key="lb_task",
                         format_func=lambda t: "All tasks (+ macro average)" if t == ALL else t,
                         container=c_task)
scope = tasks if task == ALL else tasks[tasks["task"].astype(str) == task]
metric_names = sorted(scope["metric"].astype(str).unique())
metric = common.url_choice(
    "Metric", [DEFAULT_METRIC, *metric_names], "metric", key="lb_metric", container=c_metric,
    format_func=lambda m: "primary metric of each task" if m == DEFAULT_METRIC else m,
    help="The primary metric is the harness's own (lm_eval 0.4: the first metric of the task "
         "config's metric_list; HELM: the schema's main metric; Open LLM Leaderboard: the "
         "metric it ranked on), else acc, else exact_match,strict-match, else the first "
         "alphabetically. Compare and the other pages use the same metric; the notes say "
         "when runs lack it.")
has_cluster = bool(scope.get("has_cluster", pd.Series(dtype=bool)).fillna(False).astype(bool).any())
methods = [m for m in METHODS if m != "clustered" or has_cluster]
method = common.url_choice(
    "Interval method", methods, "method", key="lb_method", default="wilson", container=c_method,
    format_func=lambda m: METHOD_LABELS.get(m, m),
    help="Wilson is the default for 0/1 scores. Clustered appears when a task has a cluster key. "
         + common.method_check_link("proportion"))
confidence = common.confidence_choice("lb_conf", container=c_conf)

run_names = [str(n) for n in runs["name"]]
with st.expander(f"Runs shown ({len(run_names)} in the store)"):
    chosen = common.url_multi("Runs", run_names, "runs", key="lb_runs",
                              format_func=common.run_label(runs))
if not chosen:
    st.info("No run selected: choose at least one run above.")
    st.stop()

board_args = dict(task=None if task == ALL else task,
                  metric=None if metric == DEFAULT_METRIC else metric, confidence=confidence,
                  runs=None if len(chosen) == len(run_names) else chosen)
# rank intervals bootstrap a task's items x runs matrix: computed below, for the task shown
lb = common.compute("leaderboard", method=method, include_ranks=False, **board_args)
cells = lb.cells
if cells.empty:
    st.info("No scores for this selection. Pick another task or metric.")
    st.stop()

method_label = METHOD_LABELS.get(lb.method, lb.method)
percent_by_task = common.proportion_by(cells, "task")
percent = all(percent_by_task.values())
st.caption(common.method_caption(lb.method, lb.confidence)
           + (" Scores in percent; differences in percentage points (pp)." if percent else
              " Proportions in percent (differences in pp); other metrics in their own units."))
n_typ, p_typ = cells["n"].median(), cells["score"].median()
st.caption(common.method_check_link(
    "proportion" if percent else "mean", n=int(n_typ) if pd.notna(n_typ) else None,
    p=float(min(max(p_typ, 0.01), 0.99)) if percent and pd.notna(p_typ) else None))

# ---- the table (first: everything else is below it) --------------------------------------
averages = lb.averages
n_tasks_shown = int(cells["task"].nunique())
# the most complete task set any run has: averages over fewer tasks are not comparable with it
n_tasks_full = int(averages["n_tasks"].max()) if len(averages) else 0


def _average_text(row: dict) -> str:
    text = common.fmt_interval(row["score"], row["low"], row["high"], True)
    k = int(row["n_tasks"])
    if k < n_tasks_full:
        text += f" (only {k} task{'s' if k > 1 else ''})"
    return text


if len(averages) and n_tasks_shown > 1:
    # runs averaged over all tasks first, so a one-task average never tops the table
    order = averages.sort_values(["n_tasks", "score"], ascending=[False, False])["run"] \
        .astype(str).tolist()
    average_text = {str(r["run"]): _average_text(r) for r in averages.to_dict("records")}
else:
    first = cells[cells["task"] == cells["task"].iloc[0]]
    order = first["run"].astype(str).tolist()     # best first in the metric's direction
    average_text = None
order += [r for r in dict.fromkeys(cells["run"].astype(str).tolist()) if r not in order]

st.subheader("Scores")
c_search, c_expand = st.columns([1, 2])
query = c_search.text_input("Search tasks", key="lb_search", placeholder="e.g. mmlu, arc",
                            help="Lists only the tasks (and groups) whose name contains this "
                                 "text; a group with matching subtasks lists them.")
expanded = c_expand.multiselect(
    "Expand groups", list(lb.groups), key="lb_expand",
    help="Task groups as the harness forms them (lm_eval groups, MMLU subjects, BBH ...): "
         "one row with the group's aggregate until expanded.") if lb.groups else []
table = leaderboard_view.scores_table(lb, order, percent_by_task, average_text=average_text,
                                      expanded=expanded, query=query.strip())
common.show_table(table, f"leaderboard_{task}_{lb.method}", "lb_pivot",
                  height=min(38 * (len(table) + 1), 640))
st.caption(f"Each cell: score [{lb.confidence:.0%} interval] "
           f"{'in %' if percent else '(in % for proportions)'} ({method_label}). Metric: "
           + leaderboard_view.DIRECTION_HELP + ". ~chance: the interval contains the chance "
           "level, so this score cannot rank anything. (reported): summary-only run, interval "
           "from the harness's stderr. A method in brackets: the interval method used for that "
           "cell instead of the chosen one. Group rows (nested groups under theirs when expanded): "
           "(recomputed) = from the subtasks' item scores with the harness's weighting, "
           "(harness) = the group value the harness reported, (mean) or (size-weighted) = "
           "from the subtasks' reported values where the harness reported none, – = no value, "
           "with what is missing."
           + (" Macro average: mean over the tasks whose metric is higher-is-better on [0, 1]."
              if average_text else ""))

# ---- notes: one collapsed summary ---------------------------------------------------------
tnotes = lb.task_notes
n_notes = len(lb.notes) + len(tnotes)
if n_notes:
    counts = tnotes["kind"].value_counts() if len(tnotes) else pd.Series(dtype=int)
    summary = ", ".join([f"{int(v)} {k}" for k, v in counts.items()]
                        + ([f"{len(lb.notes)} general"] if lb.notes else []))
    with st.expander(f"Notes ({summary})"):
        for note in lb.notes:
            st.caption(":material/info: " + common.md_escape(note))
        if len(tnotes):
            common.show_table(tnotes.rename(columns={"task": "Task", "kind": "Kind",
                                                     "note": "Note"}),
                              "leaderboard_notes", "lb_notes")

# drawn only while open (opening reruns the page from its caches): at 50 runs x 20 tasks its
# three tables cost about 40 ms of every first view, collapsed or not
numbers_box = st.expander("All numbers (long format)", key="lb_numbers_open",
                          on_change="rerun")
with numbers_box:
    if numbers_box.open:
        numbers = cells[[c for c in ("run", "task", "metric", "direction", "n", "score", "se",
                                     "low", "high", "method", "chance", "contains_chance",
                                     "has_items") if c in cells.columns]]
        common.show_table(common.display_frame(numbers), f"leaderboard_cells_{lb.method}",
                          "lb_cells")
        if len(averages):
            st.caption("Macro average over tasks: a task group counts once (n_units = units "
                       "averaged), SE = sqrt(sum w_t^2 SE_t^2)/sum w_t; left_out names the "
                       "tasks a run's average leaves out and why.")
            common.show_table(common.display_frame(averages), "leaderboard_macro_average",
                              "lb_avg")
        if len(lb.group_cells):
            st.caption("Task groups, nested ones included: the value shown (source), the "
                       "harness's reported value and the value recomputed from the subtasks "
                       "(weighting: size = item-weighted, equal = mean of the subtasks); "
                       "missing names the subtasks a run lacks.")
            common.show_table(common.display_frame(lb.group_cells), "leaderboard_groups",
                              "lb_groups")

# ---- forest plot -------------------------------------------------------------------------
st.subheader("Forest plot")
plot_tasks = list(dict.fromkeys(cells["task"].astype(str).tolist()))
if len(plot_tasks) > MAX_PANELS:
    kept = [t for t in st.session_state.get("lb_panels", []) if t in plot_tasks]
    st.session_state["lb_panels"] = kept or plot_tasks[:MAX_PANELS - 1]
    shown = st.multiselect("Task panels", plot_tasks, key="lb_panels",
                           help="Many tasks: choose which task panels to draw (the macro "
                                "average is always drawn).")
else:
    shown = plot_tasks
# the macro-average panel compares like with like: only runs averaged over every task shown
full_averages = averages[averages["n_tasks"] == n_tasks_full] if len(averages) else averages
cell_runs = set(cells["run"].astype(str).tolist())
fig = charts.forest_plot(cells[cells["task"].astype(str).isin(shown)],
                         full_averages if n_tasks_shown > 1 and len(full_averages) else None,
                         method_label=method_label, confidence=lb.confidence,
                         percent=percent_by_task,
                         run_order=[r for r in order if r in cell_runs],
                         directions={t: i.direction for t, i in lb.metric_info.items()})
common.show_chart(fig, f"forest_{task}_{lb.method}", "lb_forest")
st.caption("Filled circle: interval excludes chance. Open circle: interval contains chance. "
           "Diamond: summary-only run. Dotted line: chance level of a multiple-choice task. "
           "Each panel lists the runs that have its task."
           + (f" The macro-average panel shows only the runs averaged over {n_tasks_full} "
              "tasks, the most any run has."
              if n_tasks_shown > 1 and len(full_averages) < len(averages) else ""))

# ---- tiers and ranks ---------------------------------------------------------------------
st.subheader("Which runs are indistinguishable from the best?")
tiers = lb.tiers
tier_scopes = list(dict.fromkeys(tiers["task"].astype(str).tolist())) if len(tiers) else []
if not tier_scopes:
    st.info("Tiers need item-level scores of at least two runs on shared items.")
else:
    default_scope = "__average__" if "__average__" in tier_scopes else tier_scopes[0]
    scope_choice = st.selectbox(
        "Tiers for", tier_scopes, index=tier_scopes.index(default_scope), key="lb_tier_scope",
        format_func=lambda t: "Macro average" if t == "__average__" else t)
    t = tiers[tiers["task"].astype(str) == scope_choice].copy()
    tier_pct = percent if scope_choice == "__average__" else percent_by_task.get(scope_choice, False)
    tier_info = lb.metric_info.get(scope_choice)
    lower = tier_info is not None and tier_info.direction == "lower"
    best = t["best_run"].dropna().astype(str)
    if len(best):
        st.caption("Best run: " + common.md_escape(best.iloc[0])
                   + (" (the lowest score: lower is better)" if lower else "")
                   + ". Paired tests on shared items against it, p-values Holm-adjusted "
                     "across runs.")
    is_best = (t["run"].astype(str) == t["best_run"].astype(str)).to_numpy()
    view = pd.DataFrame({
        "Run": t["run"].astype(str),
        f"Difference vs best ({'pp' if tier_pct else 'raw'})":
            t["diff_vs_best"].astype(float) * (100 if tier_pct else 1),
        "p (raw)": [common.fmt_p(p) for p in t["p_raw"]],
        "p (Holm)": [common.fmt_p(p) for p in t["p_holm"]],
        "Indistinguishable from best": t["indistinguishable_from_best"].astype(bool),
        # the best run's own row compares nothing: no shared-item count to show
        "Shared items": ["–" if b and scope_choice == "__average__" else common.fmt_n(n)
                         for b, n in zip(is_best, t["n_shared"])],
    })
    r = pd.DataFrame()
    if scope_choice != "__average__":
        # rank intervals for the task shown only: the board above already names its metric,
        # runs and direction, so nothing of it is recomputed
        shown_cells = cells[(cells["task"].astype(str) == scope_choice)
                            & cells["has_items"].astype(bool)]
        ranked = common.compute(
            "rank_intervals", scope_choice, lb.metrics_by_task[scope_choice],
            tuple(int(x) for x in shown_cells["run_id"]), lower_is_better=lower,
            confidence=lb.confidence, stop=False)
        if ranked is not None and len(ranked):
            r = ranked
    if len(r):
        r = r.assign(rank_interval=r.apply(
            lambda x: "–" if pd.isna(x["rank"]) else
            f"{x['rank']:.0f} [{x['rank_low']:.0f}, {x['rank_high']:.0f}]", axis=1))
        view = view.merge(r[["run", "rank_interval"]].rename(
            columns={"run": "Run", "rank_interval": f"Rank [{lb.confidence:.0%} interval]"}),
            on="Run", how="left")
    view = view.fillna("–")
    common.show_table(view, f"tiers_{scope_choice}", "lb_tiers", column_config={
        view.columns[1]: st.column_config.NumberColumn(format="%+.2f")})
    st.caption("Rank intervals: paired bootstrap over shared items (the same resampled items "
               "for every run).")

# ---- reported vs ours --------------------------------------------------------------------
st.subheader("Harness-reported stderr vs ours")
has_reported = cells.get("reported_stderr", pd.Series(dtype=float)).notna() | \
    cells.get("audit_flag", pd.Series(dtype=object)).notna()
audit = cells[has_reported]
if audit.empty:
    st.caption("No harness-reported stderr for these runs (inspect and tidy inputs do not "
               "report one).")
else:
    flagged = audit["audit_flag"].notna().sum() if "audit_flag" in audit else 0
    if flagged:
        st.warning(f"{int(flagged)} reported value(s) carry an audit flag (stderr mismatch, zero "
                   "stderr with 0<p<1, N/A stderr or n mismatch); see the table.")
    view = pd.DataFrame({
        "Run": audit["run"].astype(str), "Task": audit["task"].astype(str),
        "Metric": audit["metric"].astype(str),
        "Reported score": audit["reported"].astype(float),
        "Reported stderr": audit["reported_stderr"].astype(float),
        "Our score": audit["score"].astype(float), "Our SE": audit["se"].astype(float),
        "Our n": audit["n"], "Audit flag": audit["audit_flag"],
    })
    common.show_table(common.display_frame(view, decimals=4), "stderr_audit", "lb_audit")
    st.caption("Our SE: sd(ddof=1)/sqrt(n) over item scores, the lm-evaluation-harness "
               "convention, so it matches the harness to the printed digit when nothing is off.")
