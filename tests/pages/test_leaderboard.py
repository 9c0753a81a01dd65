"""Leaderboard page: numbers shown against statsmodels/scipy, widgets and URL state, charts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (LLAMA_SUMMARY, MISTRAL, charts, no_exception, page, plain,
                                  store_file, texts)


def cell(k: int, n: int, method: str) -> str:
    """'score [low, high]' in percent from statsmodels (independent reference)."""
    low, high = proportion_confint(k, n, alpha=0.05, method=method)
    return f"{100 * k / n:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def pivot(at) -> dict:
    df = at.dataframe[0].value
    return df.set_index("Run").to_dict(orient="index")


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
    # beta vs alpha on mc: b = 10, c = 0 discordant items -> exact McNemar p = 2 * 0.5^10
    assert not rows.loc["alpha", "Indistinguishable from best"]
    assert rows.loc["beta", "Indistinguishable from best"]
    assert rows.loc["alpha", "Shared items"] == 100
    assert rows.loc["alpha", "Difference vs best (pp)"] == pytest.approx(-10.0)
    assert "Rank [95% interval]" in tiers.columns


def test_summary_only_run_shows_reported_stderr_and_audit(tmp_path, fixtures_dir):
    from evalcore.ingest import parse_paths

    Store(store_file(tmp_path)).ingest(parse_paths([fixtures_dir / LLAMA_SUMMARY,
                                                    fixtures_dir / MISTRAL]))
    reported = json.loads((fixtures_dir / LLAMA_SUMMARY).read_text())["results"]["arc_easy"]
    at = page("leaderboard")
    at.query_params["task"] = "arc_easy"
    at.run()
    no_exception(at)
    table = at.dataframe[0].value.set_index("Run")
    llama = next(r for r in table.index if "Llama" in r or "llama" in r)
    assert table.loc[llama, "arc_easy"].endswith("(reported)")
    assert table.loc[llama, "arc_easy"].startswith(f"{100 * reported['acc,none']:.1f} [")
    audit = next(d.value for d in at.dataframe if "Reported stderr" in d.value.columns)
    row = audit[audit["Run"] == llama].iloc[0]
    assert row["Reported stderr"] == pytest.approx(reported["acc_stderr,none"])


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
