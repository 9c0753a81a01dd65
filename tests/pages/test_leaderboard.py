"""Leaderboard page: numbers shown against statsmodels/scipy, widgets and URL state, charts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from evalcore.store import Store
from tests.pages.builders import parsed_run
from ui import charts as charts_mod
from tests.pages.conftest import (LLAMA_SUMMARY, MISTRAL, charts, no_exception, page, plain,
                                  store_file, texts)


def cell(k: int, n: int, method: str) -> str:
    """'score [low, high]' in percent from statsmodels (independent reference)."""
    low, high = proportion_confint(k, n, alpha=0.05, method=method)
    return f"{100 * k / n:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def pivot(at) -> dict:
    """The scores table as {run: {task: cell}} (tasks are rows, runs columns)."""
    df = at.dataframe[0].value
    return df.drop(columns=["Metric", "Notes"]).set_index("Task").to_dict()


def test_empty_store_gets_a_message():
    at = page("leaderboard").run()
    no_exception(at)
    assert any("The store is empty" in t for t in texts(at.info))
    assert not at.dataframe


def test_wilson_default_cells_chance_average_and_forest_plot(toy_store):
    at = page("leaderboard").run()
    no_exception(at)
    table = pivot(at)
    assert table["alpha"]["mc"] == cell(60, 100, "wilson")
    assert table["beta"]["mc"] == cell(70, 100, "wilson")
    assert table["beta"]["gen"] == cell(30, 50, "wilson")
    # gamma's 27/100 on a 4-choice task: the Wilson interval contains chance (25%)
    low, high = proportion_confint(27, 100, method="wilson")
    assert low < 0.25 < high
    assert table["gamma"]["mc"] == cell(27, 100, "wilson") + " ~chance"
    # macro average: mean of task scores, SE = sqrt(sum SE_t^2)/k (METHODS), CLT interval
    assert table["beta"]["Macro average"].startswith(f"{100 * (0.7 + 0.6) / 2:.1f} [")
    # rows ordered by macro average, best first
    assert list(table) == ["beta", "alpha", "gamma"]
    assert any("Wilson score" in t and "95%" in t for t in texts(at.caption))

    # the forest plot (chart JSON): scores, intervals, chance line, macro average panel
    figs = charts(at)
    forest = figs[0]
    mc = next(t for t in forest["data"] if t["name"] == "mc")
    points = dict(zip(mc["y"], mc["x"]))
    assert points == pytest.approx({"beta": 70.0, "alpha": 60.0, "gamma": 27.0})
    low, high = proportion_confint(60, 100, method="wilson")
    i = mc["y"].index("alpha")
    assert mc["error_x"]["array"][i] == pytest.approx(100 * high - 60, abs=1e-6)
    assert mc["error_x"]["arrayminus"][i] == pytest.approx(60 - 100 * low, abs=1e-6)
    assert "Wilson score" in mc["hovertemplate"]
    # gamma's interval contains chance: open marker; chance line at 25 on the mc panel
    assert mc["marker"]["symbol"][mc["y"].index("gamma")] == "circle-open"
    assert any(s.get("x0") == 25.0 for s in forest["layout"].get("shapes", []))
    assert any(t["name"] == "Macro average" for t in forest["data"])


def test_method_selector_changes_numbers_caption_and_url(toy_store):
    at = page("leaderboard").run()
    at.selectbox(key="lb_method").set_value("clopper-pearson").run()
    no_exception(at)
    assert pivot(at)["alpha"]["mc"] == cell(60, 100, "beta")
    assert any("Clopper-Pearson" in t for t in texts(at.caption))
    assert at.query_params["method"] == ["clopper-pearson"] or \
        at.query_params["method"] == "clopper-pearson"


def test_url_state_selects_task_and_method(toy_store):
    at = page("leaderboard")
    at.query_params["task"] = "mc"
    at.query_params["method"] = "bayes"
    at.run()
    no_exception(at)
    assert at.selectbox(key="lb_task").value == "mc"
    assert at.selectbox(key="lb_method").value == "bayes"
    table = pivot(at)
    assert "gen" not in table["alpha"] and "Macro average" not in table["alpha"]
    # Bayesian Beta(1+k, 1+n-k) equal-tailed interval (scipy)
    low, high = sps.beta.ppf([0.025, 0.975], 61, 41)
    assert table["alpha"]["mc"] == f"60.0 [{100 * low:.1f}, {100 * high:.1f}]"


def test_tiers_holm_and_rank_intervals(toy_store):
    at = page("leaderboard")
    at.query_params["task"] = "mc"
    at.run()
    tiers = next(d.value for d in at.dataframe if "Indistinguishable from best" in d.value.columns)
    rows = tiers.set_index("Run")
    # beta vs alpha on mc: b = 10, c = 0 (exact McNemar p = 2 * 0.5^10), but all ten flips
    # lie in one of the 10 clusters: the cluster-robust t test (SE 0.1, t = 1 on 9 df,
    # p 0.34) that compare uses does not separate them, so neither does the tier
    assert rows.loc["alpha", "Indistinguishable from best"]
    assert rows.loc["beta", "Indistinguishable from best"]
    assert rows.loc["alpha", "Shared items"] == "100"
    assert rows.loc["alpha", "Difference vs best (pp)"] == pytest.approx(-10.0)
    assert "Rank [95% interval]" in tiers.columns
    # gen (no cluster key): beta vs alpha b = 10, c = 0 on 50 items: p = max(score p, exact
    # p = 2 * 0.5^10) < 0.05 after Holm: alpha is outside the top tier
    at = page("leaderboard")
    at.query_params["task"] = "gen"
    at.run()
    tiers = next(d.value for d in at.dataframe if "Indistinguishable from best" in d.value.columns)
    rows = tiers.set_index("Run")
    assert not rows.loc["alpha", "Indistinguishable from best"]
    assert rows.loc["beta", "Indistinguishable from best"]


def test_summary_only_run_shows_reported_stderr_and_audit(tmp_path, fixtures_dir):
    from evalcore.ingest import parse_paths

    Store(store_file(tmp_path)).ingest(parse_paths([fixtures_dir / LLAMA_SUMMARY,
                                                    fixtures_dir / MISTRAL]))
    reported = json.loads((fixtures_dir / LLAMA_SUMMARY).read_text())["results"]["arc_easy"]
    at = page("leaderboard")
    at.query_params["task"] = "arc_easy"
    at.run()
    no_exception(at)
    table = pivot(at)
    llama = next(r for r in table if "Llama" in r or "llama" in r)
    assert table[llama]["arc_easy"].endswith("(reported)")
    assert table[llama]["arc_easy"].startswith(f"{100 * reported['acc,none']:.1f} [")
    audit = next(d.value for d in at.dataframe if "Reported stderr" in d.value.columns)
    row = audit[audit["Run"] == llama].iloc[0]
    assert float(row["Reported stderr"]) == pytest.approx(reported["acc_stderr,none"], abs=5e-5)
    n_file = json.loads((fixtures_dir / LLAMA_SUMMARY).read_text())["n-samples"]["arc_easy"]
    assert row["Our n"] == str(n_file["effective"]) and row["Audit flag"] != "None"
    assert not (audit == "None").any().any()


def test_user_strings_are_escaped_in_markdown_and_plots(tmp_path):
    evil = "<b>x</b> [link](http://e.com) **bold** $x$"
    good = np.ones(40)
    good[:5] = 0
    Store(store_file(tmp_path)).ingest([
        parsed_run(evil, {("t", "acc"): good}),
        parsed_run("plain", {("t", "acc"): np.r_[np.ones(20), np.zeros(20)]})])
    at = page("leaderboard").run()
    no_exception(at)
    best = [c.value for c in at.caption if "Best run" in c.value]
    assert best and "[link](http" not in best[0] and r"\[link\]" in best[0]
    forest = charts(at)[0]
    labels = [y for t in forest["data"] for y in t["y"]]
    assert "&lt;b&gt;x&lt;/b&gt; [link](http://e.com) **bold** $x$" in labels
    assert evil not in labels
    assert plain(best[0]).startswith("Best run: " + evil)


def test_run_subset_lives_in_the_url(toy_store):
    at = page("leaderboard").run()
    at.multiselect(key="lb_runs").set_value(["alpha", "gamma"]).run()
    no_exception(at)
    assert set(pivot(at)) == {"alpha", "gamma"}
    shared = at.query_params["runs"]
    assert sorted(shared if isinstance(shared, list) else [shared]) == ["alpha", "gamma"]
    again = page("leaderboard")
    again.query_params["runs"] = ["alpha", "gamma"]
    again.run()
    assert set(pivot(again)) == {"alpha", "gamma"}


def test_average_over_fewer_tasks_is_labelled_and_kept_out_of_the_average_panel(tmp_path):
    """A run with 1 of 2 tasks: its macro average is that one score, not comparable with the
    two-task averages; it says so, sorts after them and stays out of the forest plot's
    macro-average panel, even when its one score is the highest on the board."""
    rng = np.random.default_rng(3)
    full = [parsed_run(n, {("mc", "acc"): (rng.random(80) < p).astype(float),
                           ("gen", "acc"): (rng.random(80) < p - 0.2).astype(float)})
            for n, p in (("alpha", 0.6), ("beta", 0.7))]
    solo = parsed_run("solo", {("mc", "acc"): np.ones(80)})
    Store(store_file(tmp_path)).ingest(full + [solo])
    at = page("leaderboard").run()
    no_exception(at)
    table = pivot(at)
    assert table["solo"]["Macro average"].endswith("(only 1 task)")
    assert "only" not in table["beta"]["Macro average"]
    assert list(table)[-1] == "solo"
    forest = charts(at)[0]
    panels = {t["name"]: t["y"] for t in forest["data"]}
    assert "solo" in panels["mc"]                    # drawn in its task panel ...
    assert sorted(panels["Macro average"]) == ["alpha", "beta"]   # ... not among the averages
    assert any("only the runs averaged over 2 tasks" in t for t in texts(at.caption))


# --- a board of 100+ tasks (issue 7 item 8): two real pythia lm_eval 0.3 files -----------

PYTHIA = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "pythia"


@pytest.fixture()
def pythia_store(tmp_path):
    from evalcore.ingest import parse_paths

    Store(store_file(tmp_path)).ingest(parse_paths([PYTHIA / "160m_step143000.json",
                                                    PYTHIA / "6.9b_step143000.json"]))


def _all_values(at) -> list[str]:
    return [str(v) for d in at.dataframe for v in d.value.to_numpy().ravel()]


def test_many_tasks_table_first_groups_folded_notes_collapsed(pythia_store):
    at = page("leaderboard").run()
    no_exception(at)
    elements = [type(e).__name__ for e in at.main.children.values()]
    first_table = elements.index("Dataframe")
    assert "Expander" not in elements[elements.index("Subheader"):first_table]
    table = at.dataframe[0].value
    # 87 tasks: MMLU's 57 subjects and the 20 crows_pairs subsets fold into 3 group rows
    assert len(table) == 14 and table["Task"].iloc[0] == "Macro average"
    # 65 tasks averaged: MMLU's 57 subjects count once beside 8 other tasks
    assert table["Metric"].iloc[0] == "65 tasks as 9 units ↑ on [0, 1]"
    labels = list(table["Task"])
    assert "▸ mmlu (hendrycksTest) (57 tasks)" in labels
    mmlu = table[table["Task"] == "▸ mmlu (hendrycksTest) (57 tasks)"].iloc[0]
    small = json.loads((PYTHIA / "160m_step143000.json").read_text())["results"]
    mean = np.mean([e["acc"] for t, e in small.items() if t.startswith("hendrycksTest-")])
    assert mmlu["EleutherAI/pythia-v1.1-160m"].startswith(f"{100 * mean:.1f} [")
    assert mmlu["EleutherAI/pythia-v1.1-160m"].endswith("(mean)")
    # the bigger model first (macro average over accuracies only)
    assert [c for c in table.columns if c.startswith("Eleuther")] == [
        "EleutherAI/pythia-v1.1-6.9b", "EleutherAI/pythia-v1.1-160m"]
    row = table[table["Task"] == "crows_pairs_english"].iloc[0]
    assert row["Metric"] == "likelihood_difference ↓" and "average" in row["Notes"]
    # notes: one collapsed expander counted by kind, not 280 captions
    notes = next(e for e in at.expander if e.label.startswith("Notes ("))
    assert notes.label == "Notes (85 metric, 22 average, 3 general)"
    assert len(notes.dataframe[0].value) == 85 + 22
    assert len(at.caption) < 12
    assert "None" not in _all_values(at)
    # the long-format tables are drawn only once their expander is opened (a rerun)
    box = next(e for e in at.expander if e.label == "All numbers (long format)")
    assert not box.dataframe
    n_tables = len(at.dataframe)
    at.session_state["lb_numbers_open"] = True
    at.run()
    no_exception(at)
    box = next(e for e in at.expander if e.label == "All numbers (long format)")
    long, avg, groups = (d.value for d in box.dataframe)
    assert len(at.dataframe) == n_tables + 3
    assert len(long) == 2 * 87 and set(long["run"]) == {"EleutherAI/pythia-v1.1-6.9b",
                                                         "EleutherAI/pythia-v1.1-160m"}
    assert len(avg) == 2 and len(groups) == 2 * 3
    assert "None" not in _all_values(at)


def test_task_search_and_group_expansion(pythia_store):
    at = page("leaderboard").run()
    at.text_input(key="lb_search").set_value("anatomy").run()
    no_exception(at)
    assert list(at.dataframe[0].value["Task"]) == [
        "Macro average", "▾ mmlu (hendrycksTest) (57 tasks)", "  · hendrycksTest-anatomy"]
    at.text_input(key="lb_search").set_value("").run()
    at.multiselect(key="lb_expand").set_value(["mmlu (hendrycksTest)"]).run()
    no_exception(at)
    labels = list(at.dataframe[0].value["Task"])
    assert len(labels) == 14 + 57
    assert sum(t.startswith("  · hendrycksTest-") for t in labels) == 57


def test_lower_is_better_task_tiers_and_forest_say_so(tmp_path):
    # two item-level runs on a perplexity-like metric: lower wins
    rng = np.random.default_rng(5)
    low = rng.normal(10.0, 1.0, 60)
    Store(store_file(tmp_path)).ingest([
        parsed_run("good", {("wikitext", "word_perplexity"): low}),
        parsed_run("bad", {("wikitext", "word_perplexity"): low + 3.0})])
    at = page("leaderboard").run()
    no_exception(at)
    table = at.dataframe[0].value
    assert [c for c in table.columns if c in ("good", "bad")] == ["good", "bad"]
    assert table["Metric"].iloc[0] == "word_perplexity ↓"
    best = [c.value for c in at.caption if "Best run" in c.value]
    assert best and plain(best[0]).startswith("Best run: good (the lowest score")
    forest = charts(at)[0]
    titles = [a["text"] for a in forest["layout"]["annotations"]]
    assert "wikitext (lower is better)" in titles


def test_forest_titles_wrap_and_panels_list_only_their_runs(tmp_path):
    helm = "bbq:subject=all,method=multiple_choice_joint,model=openai_gpt2"
    rng = np.random.default_rng(1)
    Store(store_file(tmp_path)).ingest([
        parsed_run("alpha", {(helm, "quasi_exact_match"): (rng.random(50) < 0.6).astype(float),
                             ("arc", "acc"): (rng.random(50) < 0.5).astype(float)}),
        parsed_run("beta", {(helm, "quasi_exact_match"): (rng.random(50) < 0.4).astype(float)})])
    at = page("leaderboard").run()
    no_exception(at)
    forest = charts(at)[0]
    titles = [a["text"] for a in forest["layout"]["annotations"] if "<br>" in a["text"]]
    assert titles and all(len(line) <= charts_mod.TITLE_WIDTH
                          for line in titles[0].split("<br>"))
    assert titles[0].replace("<br>", "") == helm
    arc = next(t for t in forest["data"] if t["name"] == "arc")
    assert arc["y"] == ["alpha"]                      # beta has no arc: not listed


def test_wrap_title_cuts_very_long_names():
    text = charts_mod.wrap_title("x" * 200)
    lines = text.split("<br>")
    assert len(lines) == charts_mod.TITLE_LINES and lines[-1].endswith("…")
    assert charts_mod.wrap_title("<b>") == "&lt;b&gt;"


def test_compare_page_shows_unknown_n_not_zero(pythia_store):
    """(The compare page, on the same real files: lm_eval 0.3 results give no n.)"""
    at = page("compare")
    at.query_params["run_a"] = "EleutherAI/pythia-v1.1-160m"
    at.query_params["run_b"] = "EleutherAI/pythia-v1.1-6.9b"
    at.query_params["task"] = "arc_easy"
    at.run()
    no_exception(at)
    per_task = next(d.value for d in at.dataframe if "B − A" in d.value.columns)
    assert list(per_task["n"]) == ["unknown"]
    assert not any("n = None" in t or "n = 0 " in t for t in texts(at.caption))


def test_runs_and_tasks_read_at_one_store_version(toy_store, monkeypatch):
    """ui.common.runs_and_tasks: the runs and the tasks of a first view cost one catalog
    version query, and they are the frames require_runs and tasks_table give."""
    from evalcore.store import Store as StoreClass
    from ui import common

    store = common.get_store()
    want_runs, want_tasks = store.runs(), store.tasks()
    store.forget()
    queries = []
    original = StoreClass.version

    def counted(self):
        if getattr(self.__dict__.get("_pin"), "version", None) is None:
            queries.append(1)
        return original(self)

    monkeypatch.setattr(StoreClass, "version", counted)
    runs, tasks = common.runs_and_tasks(store, 1, "the test")
    assert len(queries) == 1
    assert runs.equals(want_runs) and tasks.equals(want_tasks)
