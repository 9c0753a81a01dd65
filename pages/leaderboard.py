"""Leaderboard: one row per run, one column per task (and the macro average, and each task
group folded), every cell a score with its interval and the interval method named; the
forest plot of the runs shown; runs indistinguishable from the best (paired,
Holm-adjusted); rank intervals; harness-reported stderr next to ours with audit flags.

Numbers: ``evalcore.analysis.leaderboard``; the table's columns, texts and run filters:
``ui.leaderboard_view``. URL state, one parameter per control: task, metric, method, conf
(what is computed, over the runs the filters pass: rq = name search, tag, harness, series);
top, rank (the rows shown: the top N by the macro average or a column); tq, cols (the task
columns shown); pick (runs selected for the forest plot and Compare).
"""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from evalcore import analysis
from evalcore.analysis import METHODS
from evalcore.words import label
from ui import charts, common, present, leaderboard_view as view
from ui.leaderboard_controls import url_picks, url_text

ALL = "*"
DEFAULT_METRIC = "(default)"
DEFAULT_TOP = 32            # rows shown until Top N is changed (the demo's 32 runs fit)
DEFAULT_COLUMNS = 4         # task columns shown beside the macro average: 1440 px, no scroll
FOREST_MAX_RUNS = 30        # runs in the forest plot: every label readable on a slide
RUN_COLUMN_PX, CELL_PX = 230, 140   # 230 + 5 x 140 px fit the 978 px wide table at 1440 px
PRESENT_RUN_PX, PRESENT_CELL_PX = 380, 260     # presentation mode: 1920 px, names whole

common.ensure_app_navigation()
st.title("Leaderboard")
store = common.get_store()
runs, tasks = common.runs_and_tasks(store, 1, "the leaderboard")
task_names = sorted(tasks["task"].astype(str).unique())


# ---- what is computed: task scope, metric, method, confidence ------------------------------
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
    format_func=lambda m: label("score", m),
    help="Wilson is the default for 0/1 scores. The cluster-robust interval appears when a "
         "task has a cluster key. " + common.method_check_link("proportion"))
confidence = common.confidence_choice("lb_conf", container=c_conf)


# ---- which runs: filters, then the top N by a column ------------------------------------
def _series_of() -> dict[str, str]:
    """run name -> its model series (``analysis.run_groups``' config: the model without its
    step and seed, or the run's ``config=`` tag)."""
    groups = common.compute(analysis.run_groups, stop=False)
    if groups is None or not len(groups):
        return {}
    return dict(zip(groups["run"].astype(str).tolist(), groups["config"].astype(str).tolist()))


series_of = _series_of()
c_search, c_top, c_rank, c_more = st.columns([3, 1, 2, 1], vertical_alignment="bottom")
run_query = url_text("Search runs", "rq", key="lb_run_search", container=c_search,
                     placeholder="name or model, e.g. 8b or step4000",
                     help="Shows only the runs whose name or model contains this text.")
tag_opts, harness_opts = view.tag_options(runs), sorted(set(runs["source_format"].astype(str)))
series_opts = view.series_options(series_of)
more = c_more.popover("Filters", icon=":material/filter_list:", width="stretch")
picked_tags = url_picks("Tags", tag_opts, "tag", key="lb_tags", container=more,
                        placeholder="any tag", help="Runs with any of these tags.") \
    if tag_opts else []
picked_harness = url_picks("Harness", harness_opts, "harness", key="lb_harness",
                           container=more, format_func=lambda h: label("harness", h),
                           placeholder="any harness") if len(harness_opts) > 1 else []
picked_series = url_picks(
    "Model series", list(series_opts), "series", key="lb_series", container=more,
    format_func=lambda s: f"{s} ({series_opts.get(s, 0)} runs)", placeholder="any series",
    help="Runs of one model: its checkpoints and seeds (the model name without its step and "
         "seed, or the run's config= tag), as the Noise page groups them.") \
    if series_opts else []
passing = view.filter_runs(runs, series_of, query=run_query, tags=picked_tags,
                           harnesses=picked_harness, series=picked_series)
if not passing:
    st.info("No run matches these filters: change the search or the filters.")
    st.stop()

board_args = dict(task=None if task == ALL else task,
                  metric=None if metric == DEFAULT_METRIC else metric, confidence=confidence,
                  runs=None if len(passing) == len(runs) else tuple(passing))
# rank intervals bootstrap a task's items x runs matrix: computed below, for the task shown
lb = common.compute(analysis.leaderboard, method=method, include_ranks=False, **board_args)
cells = lb.cells
judged = analysis.judged_cells(store, [int(r) for r in runs["run_id"]])
if cells.empty:
    st.info("No scores for this selection. Pick another task or metric, or widen the filters.")
    st.stop()

percent_by_task = common.proportion_by(cells, "task", infos=lb.metric_info)
percent = all(percent_by_task.values())
multi_task = int(cells["task"].nunique()) > 1
with_average = multi_task and len(lb.averages) > 0


# ---- which task columns -------------------------------------------------------------------
def _picker_label(col: view.BoardColumn | None, key: str) -> str:
    if col is not None and col.kind == "group":
        return f"{key} (task group, {len(col.members)} tasks)"
    return key


def _task_controls() -> tuple[list[view.BoardColumn], list[view.BoardColumn]]:
    """(every column the search and the open groups list, the columns shown): the first
    ``DEFAULT_COLUMNS`` task columns unless others are picked."""
    c_tq, c_expand, c_cols = st.columns([2, 2, 3])
    query = url_text("Search tasks", "tq", key="lb_search", container=c_tq,
                     placeholder="e.g. mmlu, arc",
                     help="Lists only the task columns (and groups) whose name contains "
                          "this text; a group with matching subtasks lists them.")
    expanded = c_expand.multiselect(
        "Expand groups", list(lb.groups), key="lb_expand", placeholder="groups folded",
        help="Task groups as the harness forms them (lm_eval groups, MMLU subjects, BBH ...): "
             "one column with the group's aggregate until expanded.") if lb.groups else []
    listed = view.board_columns(lb, expanded=expanded, query=query, with_average=with_average)
    task_cols = [c for c in listed if c.kind != "average"]
    by_key = {c.key: c for c in task_cols}
    chosen = url_picks(
        "Task columns", list(by_key), "cols", key="lb_cols",
        container=c_cols, format_func=lambda k: _picker_label(by_key.get(k), k),
        placeholder=f"the first {min(DEFAULT_COLUMNS, len(task_cols))} in name order",
        help=f"The task columns of the table and the panels of the forest plot "
             f"({len(task_cols)} listed); none picked shows the first ones in name order.")
    shown = [by_key[k] for k in chosen] or task_cols[:DEFAULT_COLUMNS]
    return listed, shown


listed_columns, task_columns = _task_controls()
average_column = [c for c in listed_columns if c.kind == "average"]
rank_options = [c.key for c in average_column + task_columns]
rank_labels = {c.key: c.label for c in average_column + task_columns}
rank_by = common.url_choice("Rank by", rank_options, "rank", key="lb_rank", container=c_rank,
                            format_func=lambda k: rank_labels.get(k, k),
                            help="The column whose best runs come first (the table's own "
                                 "header click sorts too).")
# runs with a score on the board (a one-task scope leaves out runs without that task)
scored = set(cells["run"].astype(str).tolist()) | set(lb.averages["run"].astype(str).tolist())
ranked = [r for r in (view.rank_runs(lb, passing, rank_by) if rank_by else passing)
          if r in scored]
top = common.url_numeric("number", "Top N", "top", key="lb_top", container=c_top,
                         default=DEFAULT_TOP, min_value=1, max_value=max(len(runs), 1),
                         step=1, cast=int, help="How many runs the table lists, best first "
                                                "by the Rank by column.")
rows = ranked[:top]


# ---- the table (first: everything else is below it) --------------------------------------
def _scores_table() -> None:
    columns = average_column + task_columns
    table = view.scores_table(lb, rows, columns, percent_by_task,
                              average_text=view.average_texts(lb.averages), judged=judged)
    run_px, cell_px = (PRESENT_RUN_PX, PRESENT_CELL_PX) if present.is_on() else \
        (RUN_COLUMN_PX, CELL_PX)
    config = {view.RUN: st.column_config.TextColumn(
        view.RUN, pinned=True, width=run_px,
        help="Best first by the Rank by column; a header click sorts by that column's score")}
    for col in columns:
        config[col.key] = st.column_config.Column(col.label, help=col.help, width=cell_px,
                                                  alignment="left")
    st.dataframe(view.styled(table), hide_index=True, column_config=config, key="lb_pivot_df",
                 height=min(35 * (len(rows) + 1) + 3, 600))
    common.table_downloads(table.texts, f"leaderboard_{task}_{lb.method}", "lb_pivot")
    n_listed = len([c for c in listed_columns if c.kind != "average"])
    st.caption(
        f"{len(rows)} of {len(ranked)} runs (best first by {rank_labels.get(rank_by, rank_by)}"
        f"{'' if len(passing) == len(runs) else f'; {len(passing)} of {len(runs)} pass the filters'}"
        f"); {len(task_columns)} of {n_listed} task columns. Each cell: score "
        f"[{lb.confidence:.0%} interval] {'in %' if percent else '(in % for proportions)'}, "
        f"{label('score', lb.method)}; a header's tooltip names the metric and its direction "
        f"({view.DIRECTION_HELP}). ~chance: the interval contains the chance level, so this "
        "score cannot rank anything. (reported): summary-only run, interval from the "
        "harness's stderr. A method in brackets: the interval used for that cell instead of "
        "the chosen one. Group columns: (recomputed) = from the subtasks' item scores with "
        "the harness's weighting, (harness) = the group value the harness reported, (mean) "
        "or (size-weighted) = from the subtasks' reported values where the harness reported "
        "none, – = no value, with what is missing."
        + (f" {view.JUDGE_HELP}." if judged else "")
        + (" Macro average: mean over the tasks whose metric is higher-is-better on [0, 1]; "
           "(only k tasks) = fewer tasks than the other runs, not comparable."
           if with_average else ""))


st.caption(f"Intervals: **{label('score', lb.method)}**, {lb.confidence:.0%} confidence."
           + (" Scores in percent; differences in percentage points (pp)." if percent else
              " Proportions in percent (differences in pp); other metrics in their own units."))
_scores_table()
if not present.is_on():
    n_typical, p_typical = cells["n"].median(), cells["score"].median()
    st.caption(common.method_check_link(
        "proportion" if percent else "mean",
        n=int(n_typical) if pd.notna(n_typical) else None,
        p=float(min(max(p_typical, 0.01), 0.99)) if percent and pd.notna(p_typical) else None))


# ---- selection: carried to the forest plot and the Compare page --------------------------
def _compare_link(a: str, b: str) -> None:
    """A link opening Compare on runs ``a`` (A) and ``b`` (B), in this tab."""
    params = {"run_a": a, "run_b": b} | ({"task": task} if task != ALL else {})
    text = (f"Compare these two: is {common.md_escape(b)} better than "
            f"{common.md_escape(a)}?")
    try:
        st.page_link("pages/compare.py", label=text, icon=":material/compare_arrows:",
                     query_params=params)
    except StreamlitAPIException:
        # the page runs without the app's navigation (a test of this script alone)
        st.markdown(f":material/compare_arrows: [{text}](compare?{urlencode(params)})")


def _selection() -> list[str]:
    picks = url_picks("Selected runs (for the forest plot and Compare)", ranked, "pick",
                      key="lb_pick", format_func=common.run_label(runs),
                      placeholder=f"none: the forest plot shows the first "
                                  f"{min(len(rows), FOREST_MAX_RUNS)} rows of the table",
                      help="Pick runs to draw in the forest plot; two picked runs can be "
                           "compared on the Compare page (A = the first picked, B = the "
                           "second).")
    if len(picks) == 2:
        _compare_link(*picks)
    elif picks:
        st.caption("Pick exactly two runs to compare them on the Compare page.")
    return picks


picked = _selection()


# ---- forest plot -------------------------------------------------------------------------
def _group_rows(groups: list[view.BoardColumn]) -> pd.DataFrame:
    """The group columns' values as forest-plot rows (a group in place of a task)."""
    gc = lb.group_cells
    if not groups or not len(gc):
        return pd.DataFrame()
    keep = gc[gc["group"].astype(str).isin([g.key for g in groups])]
    keep = keep[pd.to_numeric(keep["score"], errors="coerce").notna()]
    return pd.DataFrame({"run": keep["run"].astype(str), "task": keep["group"].astype(str),
                         "n": keep["n"], "score": keep["score"], "low": keep["low"],
                         "high": keep["high"], "chance": np.nan, "contains_chance": False,
                         "has_items": True})


def _forest() -> None:
    st.subheader("Forest plot")
    chosen = set(picked)
    base = [r for r in ranked if r in chosen] if picked else rows
    drawn = base[:FOREST_MAX_RUNS]
    panel_tasks = [c.key for c in task_columns if c.kind == "task"]
    panel_groups = [c for c in task_columns if c.kind == "group"]
    frame = cells[cells["task"].astype(str).isin(panel_tasks)]
    group_rows = _group_rows(panel_groups)
    if len(group_rows):
        frame = pd.concat([frame, group_rows], ignore_index=True)
    order = {c.key: i for i, c in enumerate(task_columns)}
    frame = frame.iloc[np.argsort([order.get(t, 0) for t in frame["task"].astype(str)],
                                  kind="stable")]
    percent_panels = dict(percent_by_task)
    for g in panel_groups:
        percent_panels[g.key] = all(percent_by_task.get(t, False) for t in g.members)
    directions = {t: i.direction for t, i in lb.metric_info.items()}
    for g in panel_groups:
        first = next((m for m in g.members if m in lb.metric_info), None)
        if first is not None:
            directions[g.key] = lb.metric_info[first].direction
    # the macro-average panel compares like with like: only runs averaged over every task
    averages = lb.averages
    full = averages[averages["n_tasks"] == averages["n_tasks"].max()] if len(averages) else averages
    fig = charts.forest_plot(frame, full if with_average and len(full) else None,
                             method_label=label("score", lb.method), confidence=lb.confidence,
                             percent=percent_panels, run_order=drawn, directions=directions)
    common.show_chart(fig, f"forest_{task}_{lb.method}", "lb_forest")
    why = "the runs picked" if picked else "the table's first rows"
    st.caption(f"{len(drawn)} runs ({why}{'; the first ' + str(FOREST_MAX_RUNS) if len(base) > FOREST_MAX_RUNS else ''}) "
               "x the table's task columns: pick runs above, task columns above the table. "
               "One x range for every panel in %. Filled circle: interval excludes chance. "
               "Open circle: interval contains chance. Diamond: summary-only run. Dotted "
               "line: chance level of a multiple-choice task."
               + (f" The macro-average panel shows only the runs averaged over "
                  f"{int(averages['n_tasks'].max())} tasks, the most any run has."
                  if with_average and len(full) < len(averages) else ""))


_forest()


# ---- notes: one collapsed summary ---------------------------------------------------------
def _notes() -> None:
    tnotes = lb.task_notes
    if not (len(lb.notes) + len(tnotes)):
        return
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


_notes()

CELL_NAMES = {"run": "Run", "task": "Task", "metric": "Metric", "direction": "Direction",
              "n": "n", "score": "Score", "se": "SE", "low": "Low", "high": "High",
              "method": "Interval method", "chance": "Chance level",
              "contains_chance": "Interval contains chance", "has_items": "Item-level data"}
AVERAGE_NAMES = {"run": "Run", "n_tasks": "Tasks averaged", "n_units": "Units averaged",
                 "score": "Score", "se": "SE", "low": "Low", "high": "High",
                 "tasks": "Tasks", "left_out": "Left out (why)"}
GROUP_NAMES = {"run": "Run", "group": "Group", "parent": "Inside group", "metric": "Metric",
               "n_tasks": "Subtasks with a score", "n_tasks_group": "Subtasks in the group",
               "n": "n", "score": "Score shown", "low": "Low", "high": "High",
               "source": "Source", "reported": "Harness value",
               "reported_stderr": "Harness stderr", "recomputed": "Recomputed",
               "recomputed_se": "Recomputed SE", "weighting": "Weighting",
               "missing": "Missing subtasks", "note": "Note"}


def _readable(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """``frame``'s columns named in ``names``, renamed, as display text."""
    out = frame[[c for c in names if c in frame.columns]].rename(columns=names)
    if "Interval method" in out:
        out["Interval method"] = [label("score", m) for m in out["Interval method"]]
    return common.display_frame(out)


def _numbers() -> None:
    # drawn only while open (opening reruns the page from its caches): at 50 runs x 20 tasks
    # its three tables cost about 40 ms of every first view, collapsed or not
    box = st.expander("All numbers (long format)", key="lb_numbers_open", on_change="rerun")
    with box:
        if not box.open:
            return
        st.caption("Scores, SEs and interval ends as proportions (0–1) for 0/1 metrics, "
                   "else in the metric's units.")
        common.show_table(_readable(cells, CELL_NAMES), f"leaderboard_cells_{lb.method}",
                          "lb_cells")
        if len(lb.averages):
            st.caption("Macro average over tasks: a task group counts once (units averaged), "
                       "SE = sqrt(sum w_t^2 SE_t^2)/sum w_t; the last column names the tasks "
                       "a run's average leaves out and why.")
            common.show_table(_readable(lb.averages, AVERAGE_NAMES),
                              "leaderboard_macro_average", "lb_avg")
        if len(lb.group_cells):
            st.caption("Task groups, nested ones included: the value shown (source), the "
                       "harness's reported value and the value recomputed from the subtasks "
                       "(weighting: size = item-weighted, equal = mean of the subtasks); "
                       "missing names the subtasks a run lacks.")
            common.show_table(_readable(lb.group_cells, GROUP_NAMES), "leaderboard_groups",
                              "lb_groups")


_numbers()


# ---- tiers and ranks ---------------------------------------------------------------------
def _tiers() -> None:
    st.subheader("Which runs are indistinguishable from the best?")
    tiers = lb.tiers
    scopes = list(dict.fromkeys(tiers["task"].astype(str).tolist())) if len(tiers) else []
    if not scopes:
        st.info("Tiers need item-level scores of at least two runs on shared items.")
        return
    average_key = "__average__"
    default_scope = average_key if average_key in scopes else scopes[0]
    choice = st.selectbox(
        "Tiers for", scopes, index=scopes.index(default_scope), key="lb_tier_scope",
        format_func=lambda t: view.AVERAGE if t == average_key else t)
    t = tiers[tiers["task"].astype(str) == choice].copy()
    tier_pct = percent if choice == average_key else percent_by_task.get(choice, False)
    info = lb.metric_info.get(choice)
    lower = info is not None and info.direction == "lower"
    best = t["best_run"].dropna().astype(str)
    if len(best):
        st.caption("Best run: " + common.md_escape(best.iloc[0])
                   + (" (the lowest score: lower is better)" if lower else "")
                   + ". Paired tests on shared items against it, p-values Holm-adjusted "
                     "across runs.")
    is_best = (t["run"].astype(str) == t["best_run"].astype(str)).to_numpy()
    unit = "pp" if tier_pct else "metric units"
    table = pd.DataFrame({
        "Run": t["run"].astype(str),
        f"Difference vs best ({unit})": t["diff_vs_best"].astype(float) * (100 if tier_pct else 1),
        "p (raw)": [common.fmt_p(p) for p in t["p_raw"]],
        "p (Holm)": [common.fmt_p(p) for p in t["p_holm"]],
        "Indistinguishable from best": t["indistinguishable_from_best"].astype(bool),
        # the best run's own row compares nothing: no shared-item count to show
        "Shared items": ["–" if b and choice == average_key else common.fmt_n(n)
                         for b, n in zip(is_best, t["n_shared"])],
    })
    ranks = pd.DataFrame()
    if choice != average_key:
        # rank intervals for the task shown only: the board above already names its metric,
        # runs and direction, so nothing of it is recomputed
        shown = cells[(cells["task"].astype(str) == choice) & cells["has_items"].astype(bool)]
        got = common.compute(
            analysis.rank_intervals, choice, lb.metrics_by_task[choice],
            tuple(int(x) for x in shown["run_id"]), lower_is_better=lower,
            confidence=lb.confidence, stop=False)
        if got is not None and len(got):
            ranks = got
    if len(ranks):
        ranks = ranks.assign(rank_interval=ranks.apply(
            lambda x: "–" if pd.isna(x["rank"]) else
            f"{x['rank']:.0f} [{x['rank_low']:.0f}, {x['rank_high']:.0f}]", axis=1))
        table = table.merge(ranks[["run", "rank_interval"]].rename(
            columns={"run": "Run", "rank_interval": f"Rank [{lb.confidence:.0%} interval]"}),
            on="Run", how="left")
    table = table.fillna("–")
    common.show_table(table, f"tiers_{choice}", "lb_tiers", column_config={
        table.columns[1]: st.column_config.NumberColumn(format="%+.2f")})
    st.caption("Rank intervals: paired bootstrap over shared items (the same resampled items "
               "for every run).")


_tiers()


# ---- reported vs ours --------------------------------------------------------------------
def _audit() -> None:
    st.subheader("Harness-reported stderr vs ours")
    has_reported = cells.get("reported_stderr", pd.Series(dtype=float)).notna() | \
        cells.get("audit_flag", pd.Series(dtype=object)).notna()
    audit = cells[has_reported]
    if audit.empty:
        st.caption("No harness-reported stderr for these runs (inspect and tidy inputs do not "
                   "report one).")
        return
    flagged = audit["audit_flag"].notna().sum() if "audit_flag" in audit else 0
    if flagged:
        st.warning(f"{int(flagged)} reported value(s) carry an audit flag (stderr mismatch, zero "
                   "stderr with 0<p<1, N/A stderr or n mismatch); see the table.")
    table = pd.DataFrame({
        "Run": audit["run"].astype(str), "Task": audit["task"].astype(str),
        "Metric": audit["metric"].astype(str),
        "Reported score": audit["reported"].astype(float),
        "Reported stderr": audit["reported_stderr"].astype(float),
        "Our score": audit["score"].astype(float), "Our SE": audit["se"].astype(float),
        "Our n": audit["n"], "Audit flag": audit["audit_flag"],
    })
    common.show_table(common.display_frame(table, decimals=4), "stderr_audit", "lb_audit")
    st.caption("Scores and SEs as proportions (0–1) for 0/1 metrics, else in the metric's "
               "units. Our SE: sd(ddof=1)/sqrt(n) over item scores, the lm-evaluation-harness "
               "convention, so it matches the harness to the printed digit when nothing is off.")


_audit()
