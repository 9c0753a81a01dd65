"""Repeats & clusters page: variance components, pass@k, rerun noise, clustered SE and metric
variants, each checked against an independent computation (numpy/statsmodels/scipy)."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps

from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (
    charts,
    check_only_open_tab_computed,
    metric,
    no_exception,
    page_on_tab,
    store_file,
    texts,
)

RNG = np.random.default_rng(7)
K = 4
N = 40
P_ITEM = RNG.uniform(0.1, 0.9, N)
ANSWERS = (RNG.random((N, K)) < P_ITEM[:, None]).astype(float)
CLUSTERS = [f"g{i // 8}" for i in range(N)]
PASS1 = (RNG.random(N) < 0.6).astype(float)
PASS2 = PASS1.copy()
PASS2[:6] = 1 - PASS2[:6]                    # exactly 6 of 40 items flip
STRICT = (RNG.random(N) < 0.4).astype(float)
LOOSE = STRICT.copy()
LOOSE[np.where(STRICT == 0)[0][:5]] = 1       # the loose grader rescues 5 items, loses none


TABS = ("Answers per item", "Reruns", "Clusters", "Metric variants")


def _tab(name: str):
    """The page with the tab ``name`` open (from the URL, as a shared link opens it)."""
    return page_on_tab("repeats", "rp_tab", name, TABS[0])


@pytest.fixture
def store(tmp_path) -> Store:
    s = Store(store_file(tmp_path))
    s.ingest([
        parsed_run("sampler", {("rep", "acc"): ANSWERS, ("cl", "acc"): PASS1},
                   clusters={"cl": CLUSTERS}, model="m1"),
        parsed_run("pass-1", {("ifeval", "strict"): STRICT, ("ifeval", "loose"): LOOSE,
                              ("cl", "acc"): PASS1}, model="m2"),
        parsed_run("pass-2", {("cl", "acc"): PASS2}, model="m2"),
    ])
    return s


def test_answers_per_item_and_rerun_sections(store):
    """Two tabs, three sections read: variance components + SE curve, pass@k, reruns."""
    at = _tab("Answers per item")
    no_exception(at)
    means = ANSWERS.mean(axis=1)
    within = ANSWERS.var(axis=1, ddof=1).mean()
    between = means.var(ddof=1) - within / K
    se = np.sqrt((between + within / K) / N)
    assert metric(at, "Items × answers") == f"{N} × {K}"
    # variance components as SDs in the score's unit, each variance with its unit below it
    assert between > 0
    assert metric(at, "Between-item SD") == f"{100 * np.sqrt(between):.2f} pp"
    assert metric(at, "Within-item SD") == f"{100 * np.sqrt(within):.2f} pp"
    assert f"variance {1e4 * between:.4g} pp²" in texts(at.caption)
    assert f"variance {1e4 * within:.4g} pp²" in texts(at.caption)
    assert metric(at, f"SE with K = {K}") == f"{100 * se:.2f} pp"
    curve = next(f for f in charts(at) if f["layout"]["title"]["text"].startswith("Standard error"))
    se_k = dict(zip(curve["data"][0]["x"], curve["data"][0]["y"]))
    assert se_k[1] == pytest.approx(100 * np.sqrt((between + within) / N))
    assert curve["data"][1]["y"][0] == pytest.approx(100 * np.sqrt(between / N))  # the floor
    assert curve["data"][2]["x"] == [K]

    # pass@k: unbiased estimator 1 - C(N-c, k)/C(N, k) per item, mean and SE over items
    table = next(d.value for d in at.dataframe if "pass@k (%)" in d.value.columns)
    c = ANSWERS.sum(axis=1)
    for k in (1, 2, K):
        per_item = [1 - comb(int(K - ci), k) / comb(K, k) for ci in c]
        row = table[table["k"] == str(k)].iloc[0]
        assert row["pass@k (%)"] == f"{100 * np.mean(per_item):.2f}"
        assert row["SE (pp)"] == f"{100 * np.std(per_item, ddof=1) / np.sqrt(N):.2f}"
    curve_table = next(d.value for d in at.dataframe if "Answers per item K" in d.value.columns)
    assert list(curve_table.columns) == ["Answers per item K", "SE (pp)",
                                         "Floor: SE with unlimited answers (pp)", "K measured"]

    # reruns: the defaults pick the two runs of the same model
    at = _tab("Reruns")
    no_exception(at)
    assert {at.selectbox(key="rr_a_w").value, at.selectbox(key="rr_b_w").value} == \
        {"pass-1", "pass-2"}
    assert metric(at, "Flip rate f") == f"{100 * 6 / N:.1f}%"
    term = (6 / N) / (2 * N)
    assert metric(at, "Rerun noise as an SE of the mean") == f"{100 * np.sqrt(term):.2f} pp"
    assert f"variance term f/(2n) = {1e4 * term:.3g} pp²" in texts(at.caption)


def test_clustered_se_against_statsmodels(store):
    at = _tab("Clusters")
    at.selectbox(key="cl_run_w").set_value("sampler").run()
    no_exception(at)
    fit = sm.OLS(PASS1, np.ones(N)).fit(cov_type="cluster",
                                        cov_kwds={"groups": np.arange(N) // 8})
    se_iid = PASS1.std(ddof=1) / np.sqrt(N)
    assert metric(at, "SE allowing for clusters") == f"{100 * fit.bse[0]:.2f} pp"
    assert metric(at, "SE if items were independent") == f"{100 * se_iid:.2f} pp"
    assert metric(at, "Design effect") == f"{(fit.bse[0] / se_iid) ** 2:.2f}"


def test_metric_variants_paired(store):
    at = _tab("Metric variants")
    at.selectbox(key="mv_a_w").set_value("strict").run()
    no_exception(at)
    assert at.selectbox(key="mv_b_w").value == "loose"
    assert metric(at, "Items only B credits / only A") == "5 / 0"
    assert metric(at, "Exact McNemar p") == f"{sps.binomtest(0, 5, 0.5).pvalue:.4f}"
    assert metric(at, "B − A") == f"{100 * 5 / N:+.1f} pp"
    table = next(d.value for d in at.dataframe if "Variants (B − A)" in d.value.columns)
    assert table.loc[0, "Only B credits"] == "5" and table.loc[0, "Only A credits"] == "0"
    assert table.loc[0, "B − A (pp)"] == f"{100 * 5 / N:+.2f}"
    assert not any(c in table.columns for c in ("se_iid", "p_adjusted", "metric"))


def test_messages_without_repeats_clusters_or_variants(tmp_path):
    Store(store_file(tmp_path)).ingest([parsed_run("only", {("t", "acc"): [1, 0, 1, 0]})])
    ats = [_tab(name) for name in TABS]
    for at in ats:
        no_exception(at)
    info = " ".join(t for at in ats for t in texts(at.info))
    assert "No run has several answers per item" in info
    assert "two passes" in info
    assert "No task has a cluster key" in info
    assert "No run/task has two metric variants" in info


def test_only_the_open_tab_is_computed(store, monkeypatch):
    check_only_open_tab_computed(
        monkeypatch, "repeats", "rp_tab",
        {"Answers per item": "repeats", "Reruns": "rerun_noise", "Clusters": "clusters",
         "Metric variants": "metric_variants"})


def test_a_negative_between_item_variance_shows_sd_zero_and_says_so(tmp_path):
    """Every item answered right exactly 2 times in 4: the item means do not vary, so
    s_b² = 0 − s_w²/K < 0; the page shows SD 0 with the negative variance and its unit."""
    answers = np.array([np.roll([1.0, 1.0, 0.0, 0.0], i) for i in range(20)])
    Store(store_file(tmp_path)).ingest([parsed_run("flat", {("rep", "acc"): answers})])
    at = _tab("Answers per item")
    no_exception(at)
    within = answers.var(axis=1, ddof=1).mean()
    between = 0.0 - within / 4
    assert metric(at, "Between-item SD") == "0.00 pp"
    assert f"variance {1e4 * between:.4g} pp² (estimated below 0: taken as 0)" in \
        texts(at.caption)
