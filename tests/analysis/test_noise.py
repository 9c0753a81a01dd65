"""evalcore.analysis.noise on hand-built stores: grouping from tags, model args, revisions
and model names; each section's numbers recomputed independently (numpy/scipy) from the
item scores the store was given."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from evalcore import analysis as an
from evalcore import stats as st
from evalcore.analysis.noise import STEP_TOKEN, SEED_TOKEN, metric_family
from evalcore.errors import AnalysisError
from tests.analysis_helpers import make_run, make_store


def _binary(rng, n, p):
    return (rng.random(n) < p).astype(float)


def _store(tmp_path, runs, tags=None):
    s = make_store(runs, tmp_path, kind="real")
    for name, t in (tags or {}).items():
        s.set_tags(name, t)
    return s


def test_tokens_and_metric_families():
    assert SEED_TOKEN.search("org/wren-1b-seed12").group(1) == "12"
    assert SEED_TOKEN.search("org/seedling-1b") is None
    assert STEP_TOKEN.search("stage1-step140000-tokens587B").group(1) == "140000"
    assert STEP_TOKEN.search("global_step500").group(1) == "500"
    assert STEP_TOKEN.search("org/model/checkpoint-2000").group(1) == "2000"
    assert STEP_TOKEN.search("org/stepwise-7b") is None
    assert metric_family("acc_norm") == "acc" == metric_family("acc")
    assert metric_family("exact_match,strict-match") == metric_family("exact_match,flexible-extract")


def test_run_groups_reads_tags_model_args_revisions_and_names(tmp_path):
    x = [1.0, 0.0, 1.0]
    runs = [make_run("a", {("t", "acc"): x}, protocol={"model_args": {"pretrained": "o/m", "seed": 7}}),
            make_run("b", {("t", "acc"): x}, protocol={"model_args": "pretrained=o/p,revision=step3000"}),
            make_run("c-seed4-step20", {("t", "acc"): x}),
            make_run("d", {("t", "acc"): x}, protocol={"random_seed": 3, "model_args": {"pretrained": "o/q"}}),
            make_run("e", {("t", "acc"): x})]
    s = _store(tmp_path, runs, {"e": ["seed=2", "step=10", "config=big", "model=o/e"]})
    g = an.run_groups(s).set_index("run")
    assert (g.loc["a", "seed"], g.loc["a", "seed_source"]) == (7, "model_args")
    assert (g.loc["b", "step"], g.loc["b", "step_source"]) == (3000, "revision")
    assert (g.loc["c-seed4-step20", "seed"], g.loc["c-seed4-step20", "step"]) == (4, 20)
    assert g.loc["c-seed4-step20", "config"] == "c"
    assert pd.isna(g.loc["d", "seed"])            # lm_eval's random_seed is an eval seed
    assert (g.loc["e", "seed"], g.loc["e", "step"], g.loc["e", "config"], g.loc["e", "identity"]) == \
        (2, 10, "big", "o/e")


def test_protocol_groups_spread_and_gap(tmp_path):
    rng = np.random.default_rng(1)
    x0, x5 = _binary(rng, 300, 0.55), _binary(rng, 300, 0.65)
    xn = np.where(rng.random(300) < 0.1, 1.0, x0)
    y = _binary(rng, 300, 0.58)
    runs = [make_run("X 0-shot", {("t", "acc"): x0, ("t", "acc_norm"): xn},
                     task_protocol={"num_fewshot": 0}),
            make_run("X 5-shot", {("t", "acc"): x5}, task_protocol={"num_fewshot": 5}),
            make_run("Y", {("t", "acc"): y})]
    s = _store(tmp_path, runs, {"X 0-shot": ["model=X"], "X 5-shot": ["model=X"]})
    rep = an.protocol_sensitivity(s)
    assert len(rep.groups) == 1
    g = rep.groups.iloc[0]
    scores = [x0.mean(), xn.mean(), x5.mean()]
    assert g["n_protocols"] == 3 and g["model"] == "X" and g["metric_family"] == "acc"
    assert g["range"] == pytest.approx(max(scores) - min(scores))
    assert g["sd"] == pytest.approx(np.std(scores, ddof=1))
    # gap on the default metric (acc): mean of X's acc runs vs Y
    gap = y.mean() - np.mean([x0.mean(), x5.mean()])
    assert g["nearest_model"] == "Y" and g["nearest_gap"] == pytest.approx(gap)
    assert g["spread_exceeds_gap"] == (g["range"] > abs(gap))
    assert f"{100 * g['range']:.1f} points over 3 protocols" in g["sentence"]
    assert f"{100 * abs(gap):.1f}-point gap to Y" in g["sentence"]
    cells = rep.cells.set_index("protocol")
    assert set(rep.cells["metric"]) == {"acc", "acc_norm"}
    five = rep.cells[rep.cells["run"] == "X 5-shot"].iloc[0]
    assert "num_fewshot: 0 -> 5" in five["differs"]
    w = st.wilson_interval(int(x5.sum()), 300)
    assert (five["low"], five["high"]) == pytest.approx((w.low, w.high))
    assert rep.task_bands.iloc[0]["max_range"] == pytest.approx(g["range"])
    assert len(cells) == 3


def test_no_groups_leaves_empty_tables_and_says_what_to_upload(tmp_path):
    s = _store(tmp_path, [make_run("A", {("t", "acc"): [1.0, 0.0]})])
    rep = an.noise_report(s)
    assert rep.protocols.groups.empty and rep.seeds.groups.empty and rep.checkpoints.curve.empty
    assert "seed=1" in rep.seeds.how_to and "step=1000" in rep.checkpoints.how_to
    with pytest.raises(AnalysisError):
        an.protocol_sensitivity(s, task="nope")


def test_seed_groups_and_comparison_match_stats_on_item_scores(tmp_path):
    rng = np.random.default_rng(5)
    runs, a, b = [], [], []
    for s_ in (1, 2, 3):
        xa = _binary(rng, 400, 0.60 + rng.normal(0, 0.03))
        xb = _binary(rng, 400, 0.66 + rng.normal(0, 0.03))
        runs += [make_run(f"base-seed{s_}", {("t", "acc"): xa}),
                 make_run(f"big-seed{s_}", {("t", "acc"): xb})]
        a.append(xa)
        b.append(xb)
    s = _store(tmp_path, runs)
    rep = an.seed_report(s)
    grp = rep.groups.set_index("config")
    se = lambda x: x.std(ddof=1) / math.sqrt(x.size)  # noqa: E731
    for cfg, xs in (("base", a), ("big", b)):
        ref = st.seed_variance([x.mean() for x in xs], [se(x) for x in xs])
        assert grp.loc[cfg, "k"] == 3
        assert grp.loc[cfg, "between_var"] == pytest.approx(ref.between_var)
        assert grp.loc[cfg, "item_se"] == pytest.approx(ref.item_se)
    c = rep.comparisons.iloc[0]
    ref = st.seed_comparison([x.mean() for x in a], [x.mean() for x in b],
                             [se(x) for x in a], [se(x) for x in b])
    assert (c["config_a"], c["config_b"]) == ("base", "big")
    assert c["diff"] == pytest.approx(np.mean([x.mean() for x in b]) - np.mean([x.mean() for x in a]))
    assert (c["se"], c["df"], c["low"], c["high"]) == pytest.approx((ref.se, ref.df, ref.low, ref.high))
    need = st.seeds_needed(abs(ref.diff), 0.5 * (max(ref.a.between_var, 0) + max(ref.b.between_var, 0)),
                           0.5 * (ref.a.item_var + ref.b.item_var))
    assert c["seeds_needed"] == need.seeds
    assert f"train {need.seeds} seeds per configuration" in c["sentence"]
    assert len(rep.runs) == 6
    # a planned gap replaces the observed one
    assert an.seed_report(s, gap=0.10).comparisons.iloc[0]["gap"] == 0.10


def test_seed_groups_from_summary_only_runs(tmp_path):
    runs = [make_run(f"m-seed{i}", summaries=[{"task": "t", "metric": "acc", "value": v,
                                               "stderr": 0.02, "n": 500}])
            for i, v in enumerate([0.61, 0.64, 0.60], start=1)]
    s = _store(tmp_path, runs)
    g = an.seed_report(s).groups.iloc[0]
    assert g["k"] == 3 and g["item_se"] == pytest.approx(0.02)
    assert g["between_var"] == pytest.approx(np.var([0.61, 0.64, 0.60], ddof=1) - 0.02 ** 2)


def test_checkpoint_series_curve_snr_and_decision_accuracy(tmp_path):
    rng = np.random.default_rng(8)
    steps = [1000, 2000, 3000, 4000, 5000, 6000]
    p = {"mixA": [0.40, 0.50, 0.56, 0.58, 0.59, 0.60], "mixB": [0.45, 0.50, 0.55, 0.60, 0.63, 0.66]}
    runs, means = [], {}
    for mix, ps in p.items():
        for step, pp in zip(steps, ps):
            x = _binary(rng, 500, pp)
            means[(mix, step)] = x.mean()
            runs.append(make_run(f"{mix}-step{step}", {("t", "acc"): x}))
    s = _store(tmp_path, runs)
    rep = an.checkpoint_report(s)
    assert len(rep.curve) == 12
    a = rep.curve[rep.curve["series"] == "mixA"]
    assert list(a["step"]) == steps
    assert list(a["score"]) == pytest.approx([means[("mixA", st_)] for st_ in steps])
    row = rep.snr.iloc[0]
    finals = [means[("mixA", 6000)], means[("mixB", 6000)]]
    # the reference script (Heineman et al., snr_simple.compute_snr_small_scale): signal from
    # each series' mean over its last checkpoints, noise from those checkpoints pooled
    tails = {m: [means[(m, st_)] for st_ in steps[-3:]] for m in p}
    level = [np.mean(v) for v in tails.values()]
    pooled = np.concatenate(list(tails.values()))
    noise = np.std(pooled) / np.mean(pooled)
    assert row["last_n"] == 3
    assert row["signal"] == pytest.approx(abs(level[0] - level[1]) / np.mean(level))
    assert row["noise"] == pytest.approx(noise)
    assert row["snr"] == pytest.approx(row["signal"] / noise)
    assert "reference script" in row["signal_basis"]
    d = rep.decisions.set_index("step")
    assert list(d.index) == steps[:-1]
    for st_ in steps[:-1]:
        e = np.sign(means[("mixA", st_)] - means[("mixB", st_)])
        f = np.sign(finals[0] - finals[1])
        assert d.loc[st_, "accuracy"] == (0.5 if e == 0 else float(e == f))
    # an explicit last_n
    assert an.checkpoint_report(s, last_n=5).snr.iloc[0]["last_n"] == 5


def test_single_series_takes_its_signal_from_the_other_models(tmp_path):
    rng = np.random.default_rng(2)
    runs = [make_run(f"solo-step{k}", {("t", "acc"): _binary(rng, 200, 0.5 + 0.02 * k)}) for k in range(1, 5)]
    runs.append(make_run("other", {("t", "acc"): _binary(rng, 200, 0.7)}))
    s = _store(tmp_path, runs)
    row = an.checkpoint_report(s).snr.iloc[0]
    assert row["n_models"] == 2 and "other models" in row["signal_basis"]
    assert an.checkpoint_report(s).decisions.empty


def test_split_report_in_item_order_with_clusters(tmp_path):
    rng = np.random.default_rng(3)
    x = np.concatenate([_binary(rng, 300, 0.9), _binary(rng, 300, 0.3)])   # drift along the file
    s = _store(tmp_path, [make_run("drift", {("t", "acc"): x})])
    rep = an.split_report(s, "drift", "t", repetitions=300)
    res = st.split_consistency(x, k=10, repetitions=300, seed=0)
    assert rep.result.ordered_ratio == pytest.approx(res.ordered_ratio)
    assert rep.result.ordered_p == pytest.approx(res.ordered_p)
    assert "not exchangeable" in rep.sentence
    small = _store(tmp_path / "s", [make_run("small", {("t", "acc"): x[:50]})])
    assert an.split_report(small, "small", "t").result.k == 5        # lowered to n // 10
    with pytest.raises(AnalysisError, match="no item-level scores"):
        an.split_report(s, "drift", "other")
    with pytest.raises(AnalysisError, match="no metric"):
        an.split_report(s, "drift", "t", metric="f1")


def test_p_value_of_seed_comparison_is_two_sided_t(tmp_path):
    runs = [make_run(f"{c}-seed{i}", summaries=[{"task": "t", "metric": "acc", "value": v, "stderr": 0.001, "n": 10000}])
            for c, vals in (("a", [0.50, 0.52, 0.55]), ("b", [0.58, 0.60, 0.61]))
            for i, v in enumerate(vals, start=1)]
    s = _store(tmp_path, runs)
    c = an.seed_report(s).comparisons.iloc[0]
    ref = sps.ttest_ind([0.58, 0.60, 0.61], [0.50, 0.52, 0.55], equal_var=False)
    assert c["p_value"] == pytest.approx(ref.pvalue) and c["df"] == pytest.approx(ref.df)


def test_seed_comparison_without_any_variance_shows_no_interval(tmp_path):
    runs = [make_run(f"{c}-seed{i}", summaries=[{"task": "t", "metric": "acc", "value": v, "n": 100}])
            for c, v in (("a", 0.5), ("b", 0.6)) for i in (1, 2)]
    s = _store(tmp_path, runs)
    c = an.seed_report(s).comparisons.iloc[0]
    assert np.isnan(c["low"]) and np.isnan(c["high"]) and c["seeds_needed"] is None
    assert "cannot be computed" in c["sentence"] and "CI" not in c["sentence"]
