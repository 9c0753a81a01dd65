"""Leaderboard page: numbers shown against statsmodels/scipy, widgets and URL state, charts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from evalcore.store import Store
from tests.pages.builders import parsed_run
from ui import charts as charts_mod
from tests.pages.conftest import (LLAMA_SUMMARY, MISTRAL, app, charts, no_exception, page,
                                  plain, store_file, texts)


def cell(k: int, n: int, method: str) -> str:
    """'score [low, high]' in percent from statsmodels (independent reference)."""
    low, high = proportion_confint(k, n, alpha=0.05, method=method)
    return f"{100 * k / n:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def board_texts(at) -> pd.DataFrame:
    """The scores table as shown: the display text of every cell (the table's data are the
    scores it sorts by; its Styler display values are the texts)."""
    proto = at.dataframe[0].proto
    return pa.ipc.open_stream(proto.arrow_data.styler.display_values).read_all().to_pandas()


def board_config(at) -> dict:
    """The scores table's column configuration (labels, help, pinning)."""
    return json.loads(at.dataframe[0].proto.columns)


def pivot(at) -> dict:
    """The scores table as {run: {column: cell text}}, runs in table order (runs are rows,
    the macro average and the tasks columns)."""
    return board_texts(at).set_index("Run").to_dict("index")


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
    # the 45-character name is cut to 36 in the middle, escaped; the hover has it whole
    cut = charts_mod.short_labels([evil])[0]
    assert len(cut) == charts_mod.RUN_LABEL_CHARS and cut.startswith("<b>x</b>")
    assert charts_mod.plot_text(cut) in labels and not any("<b>" in y for y in labels)
    names = [c[4] for t in forest["data"] for c in t["customdata"]]
    assert "&lt;b&gt;x&lt;/b&gt; [link](http://e.com) **bold** $x$" in names
    assert plain(best[0]).startswith("Best run: " + evil)
    assert pivot(at)[evil]["t"].startswith("87.5 [")          # the table names it whole


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


# --- a board of 100+ tasks: two real pythia lm_eval 0.3 files -----------

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
    assert "Dataframe" in elements and "Expander" not in elements[:elements.index("Dataframe")]
    # 87 tasks: MMLU's 57 subjects and the 20 crows_pairs subsets fold into 3 group columns,
    # 13 task columns in all; the first 4 are shown beside the macro average
    cols = next(m for m in at.multiselect if m.key == "lb_cols")
    assert len(cols.options) == 13 and cols.value == []
    assert any("4 of 13 task columns" in t for t in texts(at.caption))
    texts_ = board_texts(at)
    assert list(texts_.columns[:2]) == ["Run", "Macro average"] and len(texts_.columns) == 6
    config = board_config(at)
    # 65 tasks averaged: MMLU's 57 subjects count once beside 8 other tasks
    assert "65 tasks as 9 units" in config["Macro average"]["help"]
    # the bigger model first (macro average over accuracies only)
    assert list(texts_["Run"]) == ["EleutherAI/pythia-v1.1-6.9b", "EleutherAI/pythia-v1.1-160m"]
    # the MMLU group's column, picked: the mean of the subjects' reported accuracies
    mmlu = "mmlu (hendrycksTest)"
    at.multiselect(key="lb_cols").set_value([mmlu, "crows_pairs_english"]).run()
    no_exception(at)
    table = pivot(at)
    small = json.loads((PYTHIA / "160m_step143000.json").read_text())["results"]
    mean = np.mean([e["acc"] for t, e in small.items() if t.startswith("hendrycksTest-")])
    cell_ = table["EleutherAI/pythia-v1.1-160m"][mmlu]
    assert cell_.startswith(f"{100 * mean:.1f} [") and cell_.endswith("(mean)")
    config = board_config(at)
    assert config[mmlu]["label"] == "▸ mmlu (hendrycksTest) (57)"
    assert config["crows_pairs_english"]["label"] == "crows_pairs_english ↓"
    assert "likelihood_difference ↓" in config["crows_pairs_english"]["help"]
    assert "average" in config["crows_pairs_english"]["help"]       # its note kinds
    assert at.query_params["cols"] == [mmlu, "crows_pairs_english"]
    # notes: one collapsed expander counted by kind, not 280 captions
    notes = next(e for e in at.expander if e.label.startswith("Notes ("))
    assert notes.label == "Notes (85 metric, 22 average, 3 general)"
    assert len(notes.dataframe[0].value) == 85 + 22
    assert len(at.caption) < 12
    assert "None" not in _all_values(at) and "None" not in board_texts(at).to_numpy().ravel()
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
    assert len(long) == 2 * 87 and set(long["Run"]) == {"EleutherAI/pythia-v1.1-6.9b",
                                                         "EleutherAI/pythia-v1.1-160m"}
    assert len(avg) == 2 and len(groups) == 2 * 3
    assert "None" not in _all_values(at)
    # plain words: no internal column or method names in the long tables
    assert "Interval method" in long.columns and "se" not in long.columns
    assert set(long["Interval method"]) <= {"interval from the harness's reported SE"}


def test_task_search_and_group_expansion(pythia_store):
    at = page("leaderboard").run()
    at.text_input(key="lb_search").set_value("anatomy").run()
    no_exception(at)
    assert list(board_texts(at).columns) == [
        "Run", "Macro average", "mmlu (hendrycksTest)", "hendrycksTest-anatomy"]
    assert board_config(at)["mmlu (hendrycksTest)"]["label"].startswith("▾ ")
    assert at.query_params["tq"] == "anatomy"
    at.text_input(key="lb_search").set_value("").run()
    at.multiselect(key="lb_expand").set_value(["mmlu (hendrycksTest)"]).run()
    no_exception(at)
    cols = next(m for m in at.multiselect if m.key == "lb_cols")
    assert len(cols.options) == 13 + 57
    assert sum(o.startswith("hendrycksTest-") for o in cols.options) == 57
    assert "tq" not in at.query_params


def test_lower_is_better_task_tiers_and_forest_say_so(tmp_path):
    # two item-level runs on a perplexity-like metric: lower wins
    rng = np.random.default_rng(5)
    low = rng.normal(10.0, 1.0, 60)
    Store(store_file(tmp_path)).ingest([
        parsed_run("good", {("wikitext", "word_perplexity"): low}),
        parsed_run("bad", {("wikitext", "word_perplexity"): low + 3.0})])
    at = page("leaderboard").run()
    no_exception(at)
    assert list(pivot(at)) == ["good", "bad"]                  # the lower one first
    assert board_config(at)["wikitext"]["label"] == "wikitext ↓"
    assert "word_perplexity ↓" in board_config(at)["wikitext"]["help"]
    # sorting the column best first (ascending: lower is better) keeps the order
    values = at.dataframe[0].value
    assert values.sort_values("wikitext")["Run"].tolist() == ["good", "bad"]
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
    at.multiselect(key="lb_cols").set_value([helm, "arc"]).run()
    forest = charts(at)[0]
    lay = forest["layout"]
    titles = [a for a in lay["annotations"] if a.get("yanchor") == "bottom"]
    assert [a["text"].replace("<br>", "") for a in titles] == [helm, "arc", "Macro average"]
    # every title line fits its panel at 12 px (the page's plot area is PAGE_WIDTH wide)
    plot_px = charts_mod.PAGE_WIDTH - lay["margin"]["l"] - lay["margin"]["r"]
    for note, axis in zip(titles, ("xaxis", "xaxis2", "xaxis3")):
        width_px = (lay[axis]["domain"][1] - lay[axis]["domain"][0]) * plot_px
        for line in note["text"].split("<br>"):
            assert len(line) * 12 * charts_mod.CHAR_EM <= width_px
    assert len(titles[0]["text"].split("<br>")) > 1
    arc = next(t for t in forest["data"] if t["name"] == "arc")
    assert arc["y"] == ["alpha"]                      # beta has no arc: no mark there


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
    per_task = next(d.value for d in at.dataframe
                    if any(str(c).startswith("B − A") for c in d.value.columns))
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


# --- runs as rows: sorting, top N, filters, selection (the board at 5 runs or 500) --------

def test_runs_are_rows_run_pinned_cells_sort_by_score(toy_store):
    at = page("leaderboard").run()
    no_exception(at)
    config = board_config(at)
    assert config["Run"]["pinned"] is True
    assert all(not c.get("pinned") for k, c in config.items() if k != "Run")
    values, texts_ = at.dataframe[0].value, board_texts(at)
    assert list(values.columns) == list(texts_.columns) == ["Run", "Macro average", "gen", "mc"]
    # the data a header click sorts by are the scores (floats), shown as their interval text
    for col in ("Macro average", "gen", "mc"):
        assert values[col].dtype == float
        for v, t in zip(values[col], texts_[col]):
            assert t.startswith(f"{v:.1f} [")
    # a column sorted best first is the score order, not the text order
    assert values.sort_values("gen", ascending=False)["Run"].tolist() == ["beta", "gamma", "alpha"]


def test_missing_cells_read_dash_and_sort_last(tmp_path):
    rng = np.random.default_rng(4)
    Store(store_file(tmp_path)).ingest([
        parsed_run("both", {("t1", "acc"): (rng.random(60) < 0.4).astype(float),
                            ("t2", "acc"): (rng.random(60) < 0.5).astype(float)}),
        parsed_run("one", {("t2", "acc"): (rng.random(60) < 0.9).astype(float)})])
    at = page("leaderboard").run()
    no_exception(at)
    values, texts_ = at.dataframe[0].value, board_texts(at)
    row = texts_.set_index("Run").loc["one"]
    assert row["t1"] == "–"                                # never None or nan
    assert values.set_index("Run").loc["one", "t1"] == -np.inf
    assert values.sort_values("t1", ascending=False)["Run"].tolist() == ["both", "one"]
    assert not texts_.isin(["None", "nan", "NaN"]).any().any()


def test_top_n_and_rank_by_a_task(toy_store):
    at = page("leaderboard").run()
    at.number_input(key="lb_top").set_value(2).run()
    no_exception(at)
    assert list(pivot(at)) == ["beta", "alpha"]               # by the macro average
    assert at.query_params["top"] == "2"
    # ranked by gen: beta 30/50, gamma 25/50, alpha 20/50
    at.selectbox(key="lb_rank").set_value("gen").run()
    no_exception(at)
    assert list(pivot(at)) == ["beta", "gamma"]
    assert at.query_params["rank"] == "gen"
    # the forest plot draws the rows shown
    mc = next(t for t in charts(at)[0]["data"] if t["name"] == "mc")
    assert mc["y"] == ["beta", "gamma"]
    shared = page("leaderboard")
    shared.query_params.update({"top": "2", "rank": "gen"})
    shared.run()
    assert list(pivot(shared)) == ["beta", "gamma"]


def _series_store(tmp_path) -> None:
    """Two checkpoint series of one model (steps 1000/2000), a seed run of another, tagged
    and stored from two harnesses."""
    import dataclasses

    rng = np.random.default_rng(9)
    runs = []
    for name, p in (("org/kite-1b-step1000", 0.5), ("org/kite-1b-step2000", 0.6),
                    ("org/kite-1b-step3000", 0.7), ("org/wren-1b-seed1", 0.55),
                    ("org/wren-1b-seed2", 0.58)):
        run = parsed_run(name, {("t", "acc"): (rng.random(80) < p).astype(float)})
        if "wren" in name:
            run = dataclasses.replace(run, source_format="lm_eval")
        runs.append(run)
    store = Store(store_file(tmp_path))
    store.ingest(runs)
    ids = dict(zip(store.runs()["name"], store.runs()["run_id"]))
    store.set_tags(int(ids["org/kite-1b-step3000"]), ["final"])
    store.set_tags(int(ids["org/wren-1b-seed2"]), ["final"])


def test_filters_act_on_runs_and_live_in_the_url(tmp_path):
    _series_store(tmp_path)
    at = page("leaderboard").run()
    no_exception(at)
    assert len(pivot(at)) == 5
    at.text_input(key="lb_run_search").set_value("STEP").run()      # case-insensitive
    no_exception(at)
    assert sorted(pivot(at)) == ["org/kite-1b-step1000", "org/kite-1b-step2000",
                                 "org/kite-1b-step3000"]
    assert at.query_params["rq"] == "STEP"
    at.text_input(key="lb_run_search").set_value("").run()
    at.multiselect(key="lb_tags").set_value(["final"]).run()
    assert sorted(pivot(at)) == ["org/kite-1b-step3000", "org/wren-1b-seed2"]
    at.multiselect(key="lb_tags").set_value([]).run()
    harness = at.multiselect(key="lb_harness")
    assert [harness.format_func(o) for o in harness.options] == ["lm-evaluation-harness",
                                                                 "tidy table"]
    harness.set_value(["lm_eval"]).run()
    assert sorted(pivot(at)) == ["org/wren-1b-seed1", "org/wren-1b-seed2"]
    at.multiselect(key="lb_harness").set_value([]).run()
    # a model series: the checkpoints of one model (analysis.run_groups' config)
    series = at.multiselect(key="lb_series")
    assert series.options == ["org/kite-1b (3 runs)", "org/wren-1b (2 runs)"]
    series.set_value(["org/kite-1b"]).run()
    no_exception(at)
    assert sorted(pivot(at)) == ["org/kite-1b-step1000", "org/kite-1b-step2000",
                                 "org/kite-1b-step3000"]
    assert at.query_params["series"] == "org/kite-1b"
    # a shared link opens the same rows; filters that match nothing say so
    shared = page("leaderboard")
    shared.query_params.update({"series": "org/wren-1b", "tag": "final"})
    shared.run()
    assert list(pivot(shared)) == ["org/wren-1b-seed2"]
    at.text_input(key="lb_run_search").set_value("no such run").run()
    no_exception(at)
    assert any("No run matches" in t for t in texts(at.info)) and not at.dataframe


def test_selection_carries_to_the_forest_plot_and_the_compare_link(toy_store):
    at = page("leaderboard").run()
    at.multiselect(key="lb_pick").set_value(["gamma", "beta"]).run()
    no_exception(at)
    assert at.query_params["pick"] == ["gamma", "beta"]
    forest = charts(at)[0]
    # only the picked runs, in the table's order (best first)
    assert {t["name"]: t["y"] for t in forest["data"]}["mc"] == ["beta", "gamma"]
    link = next(m.value for m in at.markdown if "Compare these two" in m.value)
    # A = the first picked, B = the second: the Compare page's run_a / run_b
    assert "](compare?run_a=gamma&run_b=beta)" in link
    # the compare page opened by that link compares those two runs
    cmp = page("compare")
    cmp.query_params.update({"run_a": "gamma", "run_b": "beta"})
    cmp.run()
    no_exception(cmp)
    assert (cmp.query_params["run_a"], cmp.query_params["run_b"]) in (
        ("gamma", "beta"), (["gamma"], ["beta"]))
    at.multiselect(key="lb_pick").set_value(["gamma", "beta", "alpha"]).run()
    assert not any("Compare these two" in m.value for m in at.markdown)
    assert any("exactly two" in t for t in texts(at.caption))
    # inside the app (st.navigation): a page link to the Compare page, in this tab
    whole = app()
    whole.query_params.update({"pick": ["gamma", "beta"]})
    whole.run()
    no_exception(whole)
    (link,) = whole.get("page_link")
    assert link.proto.page == "compare"
    assert link.proto.query_string == "run_a=gamma&run_b=beta"
    assert "Compare these two" in link.proto.label


def test_no_control_keeps_a_value_the_page_does_not_use(tmp_path):
    """A pick filtered out, a task column hidden by the search, a Rank by column no longer
    listed: each is dropped from its widget and the URL, and the page computes what the
    controls show."""
    _series_store(tmp_path)
    at = page("leaderboard").run()
    at.multiselect(key="lb_pick").set_value(["org/wren-1b-seed1", "org/kite-1b-step1000"]).run()
    at.text_input(key="lb_run_search").set_value("kite").run()
    no_exception(at)
    assert at.multiselect(key="lb_pick").value == ["org/kite-1b-step1000"]
    assert at.query_params["pick"] == "org/kite-1b-step1000"
    assert {t["name"]: t["y"] for t in charts(at)[0]["data"]}["t"] == ["org/kite-1b-step1000"]


def test_hidden_columns_and_rank_reset(toy_store):
    at = page("leaderboard").run()
    # a pick that stays listed survives a search that changes what else is listed
    at.multiselect(key="lb_cols").set_value(["gen"]).run()
    at.text_input(key="lb_search").set_value("g").run()
    assert at.multiselect(key="lb_cols").value == ["gen"]
    at.text_input(key="lb_search").set_value("").run()
    at.multiselect(key="lb_cols").set_value(["mc"]).run()
    at.selectbox(key="lb_rank").set_value("mc").run()
    assert list(board_texts(at).columns) == ["Run", "Macro average", "mc"]
    at.text_input(key="lb_search").set_value("gen").run()
    no_exception(at)
    # "mc" no longer listed: not picked, not ranked by; the table shows what is listed
    assert at.multiselect(key="lb_cols").value == []
    assert "cols" not in at.query_params
    assert at.selectbox(key="lb_rank").value == "Macro average"
    assert at.query_params.get("rank") in (None, "Macro average")
    assert list(board_texts(at).columns) == ["Run", "Macro average", "gen"]
    assert list(pivot(at)) == ["beta", "alpha", "gamma"]


def test_a_task_search_without_matches_keeps_the_page_whole(toy_store):
    at = page("leaderboard")
    at.query_params["tq"] = "no such task"
    at.run()
    no_exception(at)
    assert list(board_texts(at).columns) == ["Run", "Macro average"]
    assert any("0 of 0 task columns" in t for t in texts(at.caption))
