"""The Method check page: coverage of every interval method for the user's design, as a chart
and a table, with the numbers of evalcore.stats.coverage."""

from __future__ import annotations

import pytest

from evalcore.stats import coverage as cov
from tests.pages.conftest import app, charts, no_exception, page, texts


def _table(at):
    return next(d.value for d in at.dataframe if "Coverage, average (%)" in d.value.columns)


def test_default_design_one_score_exact():
    at = page("method_check")
    at.query_params["n"], at.query_params["p"] = "15", "0.6"
    at.run()
    no_exception(at)
    assert at.title[0].value == "Method check"
    ref = cov.proportion_coverage(15, 0.6)
    table = _table(at)
    assert list(table["Method"]) == [m.label for m in ref.methods]
    wilson = table[table["Default"] == "yes"].iloc[0]
    assert wilson["Method"].startswith("Wilson score (edge-modified")
    assert float(wilson["Coverage, average (%)"]) == pytest.approx(100 * ref.default.coverage,
                                                                   abs=0.01)
    assert "Monte Carlo SE (pp)" not in table.columns           # exact: no Monte Carlo error
    assert "Mean width (pp)" in table.columns
    assert set(table["Verdict"]) <= {"within 1.5 points of nominal", "undercovers",
                                     "overcovers (conservative)"}
    figs = charts(at)
    assert len(figs) == 2                                       # dot plot + pointwise curve
    dots = figs[0]["data"][0]
    assert sorted(round(x, 6) for x in dots["x"]) == sorted(round(100 * m.coverage, 6)
                                                            for m in ref.methods)
    assert {t["name"] for t in figs[1]["data"]} >= {cov.LABELS["wilson"], "Clopper-Pearson (exact)"}


def test_paired_small_n_flags_undercoverage_of_the_default_or_names_the_route():
    at = page("method_check")
    at.query_params.update({"design": "paired", "n": "15", "dis": "0.47"})
    at.run()
    no_exception(at)
    ref = cov.paired_coverage(15, 0.47, 0.0, 0.5)
    table = _table(at)
    assert len(table) == 1 + len(cov.PAIRED_METHODS)
    assert (table["Monte Carlo SE (pp)"] != "–").all()
    assert not table.isin(["None", "nan", "NaN"]).any().any()
    newc = table[table["Method"] == "Newcombe hybrid score"].iloc[0]
    assert float(newc["Coverage, average (%)"]) == pytest.approx(
        100 * ref.method("newcombe").coverage, abs=0.01)
    banner = texts(at.warning) + texts(at.success)
    assert any(ref.default.label in t and f"{100 * ref.default.coverage:.1f}%" in t for t in banner)
    assert any("20,000 simulated samples, seed 0" in c for c in texts(at.caption))
    # the banner says the coverage is an average and gives the lowest slice beside it
    lo, hi = cov.neighbourhood_window(0.47)
    assert any(f"on average over discordance in [{lo:.4g}, {hi:.4g}]" in t
               and f"lowest of 10 slices {100 * ref.default.min_coverage:.1f}%" in t
               for t in banner), banner
    assert (table["Lowest of 10 slices (%)"] != "–").all()
    assert float(newc["Lowest of 10 slices (%)"]) == pytest.approx(
        100 * ref.method("newcombe").min_coverage, abs=0.01)


def test_exact_banner_says_average_and_lowest_pointwise():
    at = page("method_check")
    at.query_params["n"], at.query_params["p"] = "10", "0.1"
    at.run()
    no_exception(at)
    ref = cov.proportion_coverage(10, 0.1)
    banner = texts(at.warning) + texts(at.success)
    assert any("covers 95.3% on average over p in [0.08, 0.12] (lowest pointwise 91.7%)" in t
               for t in banner), banner
    assert float(_table(at).iloc[0]["Lowest pointwise (%)"]) == pytest.approx(
        100 * ref.default.min_coverage, abs=0.01)


def test_clustered_eight_clusters():
    at = page("method_check")
    at.query_params.update({"design": "clustered", "n": "400", "g": "8", "icc": "0.1"})
    at.run()
    no_exception(at)
    table = _table(at)
    iid = table[table["Method"] == "iid CLT (ignores clusters)"].iloc[0]
    assert iid["Verdict"] == "undercovers" and float(iid["Coverage, average (%)"]) < 70
    z = table[table["Method"] == "Clustered CR1, normal quantile"].iloc[0]
    assert z["Verdict"] == "undercovers"
    assert len(charts(at)) == 1


def test_impossible_design_is_a_message_not_a_traceback():
    at = page("method_check")
    at.query_params.update({"design": "paired", "n": "100", "dis": "0.05", "diff": "0.3"})
    at.run()
    no_exception(at)
    assert any("cannot exceed the discordance" in t for t in texts(at.info))
    assert not at.dataframe


def test_continuous_mean_design():
    at = page("method_check")
    at.query_params.update({"design": "mean", "n": "12", "p": "0.6", "sd": "0.25"})
    at.run()
    no_exception(at)
    table = _table(at)
    assert set(table["Method"]) == {cov.LABELS["t"], cov.LABELS["clt"]}
    t_row = table[table["Default"] == "yes"].iloc[0]
    assert t_row["Method"] == cov.LABELS["t"]


def test_leaderboard_and_compare_link_here_with_their_numbers(toy_store):
    at = page("leaderboard")
    at.query_params["task"] = "mc"
    at.run()
    no_exception(at)
    link = next(t for t in texts(at.caption) if "method_check?" in t)
    assert "design=proportion" in link and "n=100" in link
    at = page("compare")
    at.query_params.update({"run_a": "alpha", "run_b": "beta", "task": "mc"})
    at.run()
    no_exception(at)
    link = next(t for t in texts(at.caption) if "method_check?" in t)
    assert "design=paired" in link and "n=100" in link and "dis=0.1" in link


def test_page_is_in_the_app_navigation():
    at = app().run()
    no_exception(at)
    at.switch_page("pages/method_check.py").run()
    no_exception(at)
    assert at.title[0].value == "Method check"


def test_design_line_and_routed_default_in_words():
    """The design's parameters and the routed methods by their names, not code keys."""
    at = page("method_check")
    at.query_params.update({"design": "paired", "n": "60", "dis": "0.3"})
    at.run()
    no_exception(at)
    line = next(c for c in texts(at.caption) if c.startswith("paired"))
    assert "accuracy of run A 0.5" in line and "accuracy_a" not in line
    default = _table(at).iloc[0]["Method"]
    assert "routed: Tango score 100%" in default
    assert "tango" not in default
