"""evalcore.analysis: store queries wired to stats, checked against independent computations
(scipy, statsmodels, numpy formulas written out here), on hand-built stores and on the
lm_eval fixtures (Mistral-7B vs DialoGPT-medium on arc_easy, limit 15)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.special import comb
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalcore import analysis as an
from evalcore import stats as st
from evalcore.errors import AnalysisError
from tests import sql_reference
from tests.analysis_helpers import MemoryStore, make_run, make_store

Z95 = sps.norm.ppf(0.975)
Z80 = sps.norm.ppf(0.8)

RNG = np.random.default_rng(20261130)
N_ARC = 120
# four runs of increasing ability on a 4-choice task (0/1), a clustered 0/1 task and a
# continuous task; "sumonly" has reported numbers only
ARC = {f"m{i}": (RNG.random(N_ARC) < p).astype(float) for i, p in
       enumerate([0.28, 0.55, 0.60, 0.85])}
HS_CLUSTERS = [f"passage{j // 6}" for j in range(90)]
HS = {f"m{i}": (RNG.random(90) < p).astype(float) for i, p in enumerate([0.3, 0.5, 0.6, 0.8])}
CONT = {f"m{i}": np.clip(RNG.normal(0.3 + 0.1 * i, 0.2, 60), 0, 1) for i in range(4)}
SUMONLY_ARC = {"value": 0.61, "stderr": 0.044}


def _runs():
    runs = []
    for name in ARC:
        runs.append(make_run(
            name,
            {("arc_easy", "acc"): ARC[name], ("arc_easy", "acc_norm"): 1 - ARC[name],
             ("hellaswag", "acc"): HS[name], ("cont", "f1"): CONT[name]},
            n_choices={"arc_easy": 4},
            clusters={"hellaswag": HS_CLUSTERS},
            summaries=[{"task": "arc_easy", "metric": "acc", "value": ARC[name].mean(),
                        "stderr": np.std(ARC[name], ddof=1) / math.sqrt(N_ARC), "n": N_ARC}]))
    runs.append(make_run("sumonly", None, summaries=[
        {"task": "arc_easy", "metric": "acc", "n": N_ARC, **SUMONLY_ARC},
        {"task": "hellaswag", "metric": "acc", "value": 0.5, "stderr": float("nan"),
         "stderr_raw": "N/A", "n": 90}]))
    return runs


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(_runs(), tmp_path_factory.mktemp("analysis"), kind="real")


@pytest.fixture(scope="module")
def lb(store):
    return an.leaderboard(store, n_resamples=500)


def _cell(lb, run, task):
    c = lb.cells[(lb.cells["run"] == run) & (lb.cells["task"] == task)]
    assert len(c) == 1, (run, task)
    return c.iloc[0]


# ---------------------------------------------------------------------------------------
# leaderboard
# ---------------------------------------------------------------------------------------

def test_default_metric_rule():
    assert an.default_metric(["acc_norm", "acc"]) == "acc"
    assert an.default_metric(["exact_match,flexible-extract", "exact_match,strict-match"]) \
        == "exact_match,strict-match"
    assert an.default_metric(["f1", "bleu"]) == "bleu"
    with pytest.raises(AnalysisError):
        an.default_metric([])


def test_leaderboard_wilson_matches_statsmodels(lb):
    assert lb.method == "wilson"
    assert lb.metrics_by_task["arc_easy"] == "acc"
    assert any("acc_norm" in n for n in lb.task_notes["note"])  # the default metric is stated
    for name, x in ARC.items():
        c = _cell(lb, name, "arc_easy")
        lo, hi = proportion_confint(int(x.sum()), len(x), alpha=0.05, method="wilson")
        assert c["method"] == "wilson" and bool(c["binary"]) and bool(c["has_items"])
        assert c["score"] == pytest.approx(x.mean(), abs=1e-12)
        assert c["low"] == pytest.approx(lo, abs=1e-10)
        assert c["high"] == pytest.approx(hi, abs=1e-10)
        # se column: the harness convention sqrt(p(1-p)/(n-1))
        p = x.mean()
        assert c["se"] == pytest.approx(math.sqrt(p * (1 - p) / (len(x) - 1)), rel=1e-9)
        # reported numbers next to ours
        assert c["reported"] == pytest.approx(p)
        assert c["reported_stderr"] == pytest.approx(c["se"], rel=1e-9)


@pytest.mark.parametrize("method,sm", [("clopper-pearson", "beta"), ("bayes", None),
                                       ("clt", None)])
def test_leaderboard_other_closed_form_methods(store, method, sm):
    board = an.leaderboard(store, task="arc_easy", method=method, include_tiers=False,
                           include_ranks=False)
    for name, x in ARC.items():
        c = _cell(board, name, "arc_easy")
        k, n = int(x.sum()), len(x)
        if method == "clopper-pearson":
            lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
        elif method == "bayes":
            lo, hi = sps.beta.ppf([0.025, 0.975], 1 + k, 1 + n - k)
        else:
            p = k / n
            se = math.sqrt(p * (1 - p) / (n - 1))
            lo, hi = p - Z95 * se, p + Z95 * se
        assert c["method"] == method
        assert (c["low"], c["high"]) == pytest.approx((lo, hi), abs=1e-9)


def test_continuous_metric_falls_back_to_clt_with_note(lb):
    for name, x in CONT.items():
        c = _cell(lb, name, "cont")
        se = np.std(x, ddof=1) / math.sqrt(len(x))
        assert c["method"] == "clt" and not bool(c["binary"])
        assert c["se"] == pytest.approx(se, rel=1e-9)
        assert (c["low"], c["high"]) == pytest.approx((x.mean() - Z95 * se, x.mean() + Z95 * se),
                                                      rel=1e-9)
        assert math.isnan(c["chance"])
    assert any("CLT used for the continuous scores of: cont" in n for n in lb.notes)


def test_summary_only_run_uses_reported_stderr(lb):
    c = _cell(lb, "sumonly", "arc_easy")
    assert not bool(c["has_items"]) and c["method"] == "reported"
    v, se = SUMONLY_ARC["value"], SUMONLY_ARC["stderr"]
    assert (c["score"], c["se"]) == pytest.approx((v, se))
    assert (c["low"], c["high"]) == pytest.approx((v - Z95 * se, v + Z95 * se), rel=1e-9)
    na = _cell(lb, "sumonly", "hellaswag")
    assert math.isnan(na["low"]) and math.isnan(na["high"])
    assert "N/A stderr" in str(na["audit_flag"])
    assert any("no item-level data" in n for n in lb.task_notes["note"])


def test_chance_level_and_contains_chance(lb):
    weak, strong = _cell(lb, "m0", "arc_easy"), _cell(lb, "m3", "arc_easy")
    assert weak["chance"] == pytest.approx(0.25) and strong["chance"] == pytest.approx(0.25)
    assert bool(weak["contains_chance"]) == (weak["low"] <= 0.25 <= weak["high"])
    assert bool(weak["contains_chance"])  # 28% of 120 items: Wilson CI includes 25%
    assert not bool(strong["contains_chance"])
    assert math.isnan(_cell(lb, "m0", "hellaswag")["chance"])  # n_choices unknown


def test_macro_average_se_formula(lb):
    av = lb.averages.set_index("run")
    for name in ARC:
        rows = lb.cells[lb.cells["run"] == name]
        k = len(rows)
        assert av.loc[name, "n_tasks"] == k == 3
        assert av.loc[name, "score"] == pytest.approx(rows["score"].mean())
        assert av.loc[name, "se"] == pytest.approx(math.sqrt((rows["se"] ** 2).sum()) / k)
        assert set(av.loc[name, "tasks"].split(",")) == {"arc_easy", "cont", "hellaswag"}
    assert av.loc["sumonly", "n_tasks"] == 1  # hellaswag has no stderr: not averaged
    assert any("different task sets" in n for n in lb.notes)


def test_tiers_mcnemar_and_holm_against_scipy_statsmodels(lb):
    """Each run against the best: the p a compare row shows (120 items, so Tango's score
    test, i.e. the uncorrected McNemar chi-square, and the exact binomial test: the larger),
    Holm-adjusted over the runs."""
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
    t = lb.tiers[lb.tiers["task"] == "arc_easy"].set_index("run")
    assert (t["best_run"] == "m3").all()
    assert bool(t.loc["m3", "indistinguishable_from_best"])
    raw = {}
    for name in ("m0", "m1", "m2"):
        x, best = ARC[name], ARC["m3"]
        b = int(np.sum((x == 1) & (best == 0)))
        c = int(np.sum((x == 0) & (best == 1)))
        both = int(np.sum((x == 1) & (best == 1)))
        score = sm_mcnemar([[both, b], [c, N_ARC - both - b - c]], exact=False,
                           correction=False).pvalue
        raw[name] = max(score, sps.binomtest(min(b, c), b + c, 0.5).pvalue)
        assert t.loc[name, "p_raw"] == pytest.approx(raw[name], rel=1e-9)
        assert t.loc[name, "diff_vs_best"] == pytest.approx(x.mean() - best.mean())
        assert t.loc[name, "n_shared"] == N_ARC
    holm = multipletests(list(raw.values()), method="holm")[1]
    for name, p in zip(raw, holm):
        assert t.loc[name, "p_holm"] == pytest.approx(p, rel=1e-9)
        assert bool(t.loc[name, "indistinguishable_from_best"]) == (p >= 0.05)


def test_tiers_use_the_p_of_a_compare_row(store, lb):
    """Tiers decide with the per-pair procedure of compare (hellaswag: 15 clusters, the
    cluster-robust test with its iid floor and the exact McNemar test): each run's raw p
    against the best equals the p_value of compare(best, run) on that task, and a run
    outside the top tier has a Holm-adjusted p < alpha by that rule."""
    outside = 0
    for task in ("arc_easy", "cont", "hellaswag"):
        t = lb.tiers[lb.tiers["task"] == task].set_index("run")
        best = str(t["best_run"].iloc[0])
        raw = {}
        for run in t.index:
            if run == best:
                continue
            row = an.compare(store, best, run, task=task).per_task.iloc[0]
            assert t.loc[run, "p_raw"] == pytest.approx(row["p_value"], rel=1e-9)
            raw[run] = row["p_value"]
        holm = dict(zip(raw, multipletests(list(raw.values()), method="holm")[1]))
        for run, p in holm.items():
            assert t.loc[run, "p_holm"] == pytest.approx(p, rel=1e-9)
            if not t.loc[run, "indistinguishable_from_best"]:
                outside += 1
                assert p < 0.05
    assert outside >= 1


# ---- the SQL aggregates behind the tiers / ranks / compare, against numpy on the items ----

# three runs on one task: 0/1 scores, some items missing in some runs, and run "k3" with
# three answers per item (its item means are fractions); a continuous task as well
_MISS_RNG = np.random.default_rng(7)
_N_MISS = 80
_BIN = {f"r{i}": (_MISS_RNG.random(_N_MISS) < p).astype(float)
        for i, p in enumerate([0.4, 0.6, 0.7])}
_KANS = (_MISS_RNG.random((_N_MISS, 3)) < 0.5).astype(float)
_CNT = {f"r{i}": _MISS_RNG.normal(0.5 + 0.05 * i, 0.2, _N_MISS) for i in range(3)}
_DROP = {"r0": {3, 10, 11}, "r1": {10, 40}, "r2": set(), "k3": {5}}


def _as_items(arr, drop):
    return {str(i): float(v) for i, v in enumerate(arr) if i not in drop}


def _missing_runs():
    runs = []
    for name in ("r0", "r1", "r2"):
        runs.append(make_run(name, {("bin", "acc"): _as_items(_BIN[name], _DROP[name]),
                                    ("cnt", "f1"): _as_items(_CNT[name], _DROP[name])}))
    kans = _KANS.copy()
    kans[sorted(_DROP["k3"])] = np.nan
    runs.append(make_run("k3", {("bin", "acc"): kans}))
    return runs


def _item_vectors():
    """{run: {task: per-item means as an array over 0..n-1 with NaN where missing}}."""
    out = {}
    for name in ("r0", "r1", "r2"):
        out[name] = {}
        for task, data in (("bin", _BIN), ("cnt", _CNT)):
            v = data[name].astype(float).copy()
            v[sorted(_DROP[name])] = np.nan
            out[name][task] = v
    k = _KANS.mean(axis=1)
    k[sorted(_DROP["k3"])] = np.nan
    out["k3"] = {"bin": k}
    return out


@pytest.fixture(scope="module")
def miss_store(tmp_path_factory):
    return make_store(_missing_runs(), tmp_path_factory.mktemp("miss"), kind="real")


def test_sql_reference_moments_equal_numpy_on_items(miss_store):
    """The tests' SQL oracle (tests/sql_reference.py) against numpy on the items."""
    store = miss_store
    ids = {n: store.resolve_run(n) for n in ("r0", "r1", "r2", "k3")}
    vec = _item_vectors()
    # three references on "bin", one on "cnt"
    comps = [("bin", "acc", ids["r2"]), ("bin", "acc", ids["k3"]), ("cnt", "f1", ids["r1"]),
             ("bin", "acc", ids["r0"])]
    mom = sql_reference.reference_moments(store, comps)
    got = {(r.task, int(r.ref_run_id), int(r.run_id)): r for r in mom.itertuples(index=False)}
    checked = 0
    for task, _, ref in comps:
        ref_name = next(n for n, i in ids.items() if i == ref)
        for name, rid in ids.items():
            if task not in vec[name]:
                assert (task, ref, rid) not in got
                continue
            x, y = vec[name][task], vec[ref_name][task]
            both = np.isfinite(x) & np.isfinite(y)
            d = x[both] - y[both]
            row = got[(task, ref, rid)]
            assert row.n == both.sum()
            assert row.sum_d == pytest.approx(d.sum(), abs=1e-9)
            assert row.sum_d2 == pytest.approx((d * d).sum(), abs=1e-9)
            assert row.b == np.sum((x[both] == 1) & (y[both] == 0))
            assert row.c == np.sum((x[both] == 0) & (y[both] == 1))
            checked += 1
    assert checked == 15
    # restricted to some runs; no comparison: empty frame with the columns
    only = sql_reference.reference_moments(store, comps[:1], run_ids=[ids["r0"]])
    assert list(only["run_id"]) == [ids["r0"]]
    assert sql_reference.reference_moments(store, []).empty


def test_sql_item_mean_rows_and_paired_item_means_tasks(miss_store):
    store = miss_store
    vec = _item_vectors()
    k3, r0 = store.resolve_run("k3"), store.resolve_run("r0")
    rows = sql_reference.item_mean_rows(store, [("bin", "acc"), ("cnt", "f1")], run_ids=[k3, r0])
    assert set(map(tuple, rows[["task", "metric"]].drop_duplicates().to_numpy())) == \
        {("bin", "acc"), ("cnt", "f1")}
    for (rid, task), g in rows.groupby(["run_id", "task"]):
        name = "k3" if rid == k3 else "r0"
        want = vec[name][task]
        got = np.full(_N_MISS, np.nan)
        got[g["item_id"].astype(int).to_numpy()] = g["score"].to_numpy(float)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    pm = sql_reference.paired_item_means_tasks(store, r0, k3, [("bin", "acc")])
    assert len(pm) == _N_MISS - len(_DROP["r0"] & _DROP["k3"])
    a = pm.set_index(pm["item_id"].astype(int))
    np.testing.assert_allclose(a["score_a"].sort_index().to_numpy(),
                               vec["r0"]["bin"][a.index.sort_values()], atol=1e-12)
    np.testing.assert_allclose(a["score_b"].sort_index().to_numpy(),
                               vec["k3"]["bin"][a.index.sort_values()], atol=1e-12)


def _check_tiers(board, vec, task, mcnemar):
    """Tier rows of ``task`` against scipy/statsmodels on the shared items."""
    t = board.tiers[board.tiers["task"] == task].set_index("run")
    cells = board.cells[board.cells["task"] == task].set_index("run")
    best = cells["score"].idxmax()
    assert (t["best_run"] == best).all() and bool(t.loc[best, "indistinguishable_from_best"])
    raw = {}
    for name in t.index.drop(best):
        x, y = vec[name][task], vec[best][task]
        both = np.isfinite(x) & np.isfinite(y)
        d = x[both] - y[both]
        assert t.loc[name, "n_shared"] == both.sum()
        assert t.loc[name, "diff_vs_best"] == pytest.approx(d.mean())
        if mcnemar:
            b, c = int(np.sum(d == 1)), int(np.sum(d == -1))
            raw[name] = sps.binomtest(min(b, c), b + c, 0.5).pvalue
        else:
            z = d.mean() / (np.std(d, ddof=1) / math.sqrt(d.size))
            raw[name] = 2 * sps.norm.sf(abs(z))
        assert t.loc[name, "p_raw"] == pytest.approx(raw[name], rel=1e-9)
    holm = multipletests(list(raw.values()), method="holm")[1]
    for name, p in zip(raw, holm):
        assert t.loc[name, "p_holm"] == pytest.approx(p, rel=1e-9)
        assert bool(t.loc[name, "indistinguishable_from_best"]) == (p >= 0.05)


def test_tiers_match_scipy_with_missing_items(miss_store, tmp_path):
    vec = _item_vectors()
    # include_ranks=False: every task's matrix read for the tiers alone
    board = an.leaderboard(miss_store, include_ranks=False)
    _check_tiers(board, vec, "cnt", mcnemar=False)
    # "k3" has fractional item means (3 answers per item): the task is not 0/1, so z-tests
    _check_tiers(board, vec, "bin", mcnemar=False)
    # without it the task is 0/1: exact McNemar on the shared items
    only01 = make_store(_missing_runs()[:3], tmp_path, kind="real")
    _check_tiers(an.leaderboard(only01, include_ranks=False), vec, "bin", mcnemar=True)


@pytest.mark.parametrize("which", ["main", "missing"])
def test_tiers_same_with_and_without_rank_intervals(which, store, miss_store):
    """Tasks whose matrices were pulled for the rank intervals reuse them for their tiers;
    the others read theirs for the tiers alone: the two give the same rows."""
    s = store if which == "main" else miss_store
    tasks = sorted(set(an.leaderboard(s, include_tiers=False, include_ranks=False).cells["task"]))
    sql = an.leaderboard(s, include_ranks=False).tiers
    for rank_tasks in (None, tasks[:1]):
        mixed = an.leaderboard(s, n_resamples=100, rank_tasks=rank_tasks).tiers
        pd.testing.assert_frame_equal(mixed.reset_index(drop=True), sql.reset_index(drop=True),
                                      check_exact=False, rtol=1e-9, atol=1e-12)


def test_rank_tasks_limits_rank_intervals(store):
    board = an.leaderboard(store, n_resamples=200, include_tiers=False, rank_tasks=["cont"])
    assert set(board.ranks["task"]) == {"cont"}
    assert len(board.ranks) == 4
    none = an.leaderboard(store, n_resamples=200, include_tiers=False,
                          rank_tasks=["no such task", an.AVERAGE_TASK])
    assert none.ranks.empty


def test_audit_recomputed_from_cell_sums_matches_numpy(store):
    aud = store.audit()
    for name in ("m0", "m3"):
        rid = store.resolve_run(name)
        row = aud[(aud["run_id"] == rid) & (aud["task"] == "arc_easy") & (aud["metric"] == "acc")]
        x = ARC[name]
        assert row["recomputed_stderr"].iloc[0] == pytest.approx(
            np.std(x, ddof=1) / math.sqrt(x.size), rel=1e-9)
        assert row["recomputed"].iloc[0] == pytest.approx(x.mean())
        assert row["n_items"].iloc[0] == N_ARC and pd.isna(row["flag"].iloc[0])


def test_average_tier_row(lb):
    t = lb.tiers[lb.tiers["task"] == an.AVERAGE_TASK].set_index("run")
    assert t.index[0] == "m3" and bool(t.loc["m3", "indistinguishable_from_best"])
    # m0 is far below on every task
    d = np.mean([ARC["m0"].mean() - ARC["m3"].mean(), HS["m0"].mean() - HS["m3"].mean(),
                 CONT["m0"].mean() - CONT["m3"].mean()])
    assert t.loc["m0", "diff_vs_best"] == pytest.approx(d)
    assert not bool(t.loc["m0", "indistinguishable_from_best"])


def test_rank_intervals(lb, store):
    r = lb.ranks[lb.ranks["task"] == "cont"].set_index("run")
    means = {k: v.mean() for k, v in CONT.items()}
    order = sorted(means, key=means.get, reverse=True)
    for rank, name in enumerate(order, start=1):
        assert r.loc[name, "rank"] == rank
        assert r.loc[name, "rank_low"] <= rank <= r.loc[name, "rank_high"]
    # the same observed ranks and similar intervals as stats.paired_bootstrap_ranks
    x = np.column_stack([CONT[f"m{i}"] for i in range(4)])
    ref = st.paired_bootstrap_ranks(x, n_resamples=500, seed=0)
    assert [r.loc[f"m{i}", "rank"] for i in range(4)] == list(ref.rank)
    for i in range(4):
        assert abs(r.loc[f"m{i}", "rank_low"] - ref.rank_low[i]) <= 1
        assert abs(r.loc[f"m{i}", "rank_high"] - ref.rank_high[i]) <= 1


def test_rank_intervals_for_one_task_equal_the_boards(lb, store):
    # the page's second call: only the task's ranks, the same numbers as the board's
    for task in ("cont", "arc_easy"):
        cells = lb.cells[(lb.cells["task"] == task) & lb.cells["has_items"].astype(bool)]
        got = an.rank_intervals(store, task, lb.metrics_by_task[task],
                                tuple(int(r) for r in cells["run_id"]))
        want = lb.ranks[lb.ranks["task"] == task].reset_index(drop=True)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    assert an.rank_intervals(store, "cont", "f1", ("m1",)).empty


def test_bootstrap_and_clustered_methods(store):
    bs = an.leaderboard(store, task="cont", method="bootstrap", n_resamples=4000, seed=1,
                        include_tiers=False, include_ranks=False)
    for name, x in CONT.items():
        c = _cell(bs, name, "cont")
        se = np.std(x, ddof=1) / math.sqrt(len(x))
        assert c["method"] == "bootstrap"
        # percentile bootstrap of a mean of 60 items ~ CLT interval (Monte Carlo + n/(n-1))
        assert c["low"] == pytest.approx(x.mean() - Z95 * se, abs=0.35 * Z95 * se)
        assert c["high"] == pytest.approx(x.mean() + Z95 * se, abs=0.35 * Z95 * se)
    cl = an.leaderboard(store, method="clustered", include_tiers=False, include_ranks=False)
    import statsmodels.api as sm
    for name, x in HS.items():
        c = _cell(cl, name, "hellaswag")
        codes = pd.factorize(pd.Series(HS_CLUSTERS))[0]
        fit = sm.OLS(x, np.ones(len(x))).fit(cov_type="cluster", cov_kwds={"groups": codes})
        assert c["method"] == "clustered"
        assert c["se"] == pytest.approx(float(fit.bse[0]), rel=1e-9)
    assert _cell(cl, "m0", "arc_easy")["method"] == "clt"  # no cluster key there
    assert any("no cluster key" in n for n in cl.notes)
    # the clustered cells are computed in a worker while the frame takes the summary-only
    # cells: those keep the reported value and stderr, and the notes keep their order
    so = _cell(cl, "sumonly", "arc_easy")
    assert so["method"] == "reported" and not so["has_items"]
    assert so["se"] == pytest.approx(SUMONLY_ARC["stderr"])
    assert so["low"] == pytest.approx(SUMONLY_ARC["value"] - Z95 * SUMONLY_ARC["stderr"])
    clt = an.leaderboard(store, method="clt", include_tiers=False, include_ranks=False)
    assert [n for n in cl.notes if "no cluster key" not in n] == list(clt.notes)
    assert cl.notes.index(next(n for n in cl.notes if "no cluster key" in n)) == 0
    assert any("without a reported stderr" in n for n in cl.notes)


class _TwoReads:
    """A store without ``item_code_matrices`` and ``item_matrices_and_codes``: the board
    reads its cluster codes as rows and its matrices separately (the path a store without
    the shared read takes)."""

    def __init__(self, store):
        self._store = store

    def __getattr__(self, name):
        if name in ("item_matrices_and_codes", "item_code_matrices"):
            raise AttributeError(name)
        return getattr(self._store, name)


class _RowCodes(_TwoReads):
    """A store without ``item_code_matrices`` only: the cluster codes as rows, read with
    the matrices (``item_matrices_and_codes``)."""

    def __getattr__(self, name):
        if name == "item_code_matrices":
            raise AttributeError(name)
        return getattr(self._store, name)


@pytest.mark.parametrize("st_name", ["store", "miss_store"])
def test_clustered_board_from_one_read_equals_two_reads(st_name, request):
    # the clustered board with tiers and ranks takes the cluster codes and the items x runs
    # matrices from one read (Store.item_code_matrices: codes as matrices); the same board
    # as the codes as rows, read with the matrices (Store.item_matrices_and_codes) or
    # separately (several answers, missing items, continuous tasks)
    store = request.getfixturevalue(st_name)
    for kw in ({}, {"include_ranks": False}, {"task": store.tasks()["task"].iloc[0]}):
        one = an.leaderboard(store, method="clustered", n_resamples=200, **kw)
        for other in (_TwoReads(store), _RowCodes(store)):
            two = an.leaderboard(other, method="clustered", n_resamples=200, **kw)
            assert len(one.cells) and (len(one.tiers) or "task" in kw)
            for f in ("cells", "averages", "tiers", "ranks", "task_notes", "group_cells"):
                pd.testing.assert_frame_equal(getattr(one, f), getattr(two, f))
            assert one.notes == two.notes


@pytest.mark.parametrize("kind", ["real", "memory"])
def test_fast_bootstrap_and_clustered_cells_equal_the_per_cell_intervals(kind, tmp_path):
    # the leaderboard's batched paths (binomial draws for 0/1 cells, shared weights for
    # continuous cells, integer cluster codes) give each cell the numbers of
    # stats.score_interval on that cell's item means
    store = make_store(_runs(), tmp_path, kind=kind)
    bs = an.leaderboard(store, method="bootstrap", n_resamples=600, seed=3,
                        include_tiers=False, include_ranks=False)
    for name in ARC:
        for task, x, exact in (("arc_easy", ARC[name], True), ("hellaswag", HS[name], True),
                               ("cont", CONT[name], False)):
            c = _cell(bs, name, task)
            if not exact:   # resampled by position: the item means in the store's order
                x = store.item_means([store.resolve_run(name)], task=task)["score"].to_numpy(float)
            ref = st.score_interval(x, "bootstrap", n_resamples=600, seed=3)
            got = (c["low"], c["high"], c["se"])
            if exact:
                assert got == (ref.low, ref.high, ref.se)
            else:
                assert got == pytest.approx((ref.low, ref.high, ref.se), rel=1e-12)
    cl = an.leaderboard(store, method="clustered", confidence=0.9, include_tiers=False,
                        include_ranks=False)
    for name, x in HS.items():
        c = _cell(cl, name, "hellaswag")
        ref = st.score_interval(x, "clustered", clusters=np.array(HS_CLUSTERS), confidence=0.9)
        assert (c["low"], c["high"], c["se"]) == pytest.approx((ref.low, ref.high, ref.se),
                                                               rel=1e-12)
        assert c["method"] == "clustered"


def test_leaderboard_errors_and_empty_store(store):
    with pytest.raises(AnalysisError, match="unknown method"):
        an.leaderboard(store, method="magic")
    with pytest.raises(AnalysisError, match="no run has task"):
        an.leaderboard(store, task="nope")
    with pytest.raises(AnalysisError, match="no metric"):
        an.leaderboard(store, task="arc_easy", metric="bleu")
    empty = an.leaderboard(MemoryStore([]))
    assert empty.cells.empty and "empty" in empty.notes[0]


def test_leaderboard_runs_subset_and_optional_parts(store):
    board = an.leaderboard(store, runs=["m1", 2], include_tiers=False, include_ranks=False,
                           include_audit=False)
    assert set(board.cells["run"]) == {"m1"}  # m1 is run id 2
    assert board.tiers.empty and board.ranks.empty
    assert board.cells["audit_flag"].isna().all()


# ---------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory, fixtures_dir):
    from evalcore.ingest import parse_paths
    from evalcore.store import Store
    d = fixtures_dir / "lm_eval"
    s = Store(tmp_path_factory.mktemp("fx") / "fx")
    s.ingest(parse_paths([d / "results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json",
                          d / "results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"]))
    return s


def _fixture_names(store):
    names = list(store.runs()["name"])
    mistral = next(n for n in names if "Mistral" in n)
    dialo = next(n for n in names if "DialoGPT" in n)
    return mistral, dialo


def test_compare_lm_eval_fixture_mcnemar(fixture_store):
    mistral, dialo = _fixture_names(fixture_store)
    cmp = an.compare(fixture_store, mistral, dialo, task="arc_easy")
    row = cmp.per_task.iloc[0]
    assert row["metric"] == "acc" and row["n"] == 15
    assert (row["b"], row["c"]) == (0, 7)
    assert row["p_exact"] == pytest.approx(2 * 0.5 ** 7)  # 0.015625
    assert row["diff"] == pytest.approx(-7 / 15)
    a = fixture_store.item_means([fixture_store.resolve_run(mistral)], "arc_easy", "acc")
    b = fixture_store.item_means([fixture_store.resolve_run(dialo)], "arc_easy", "acc")
    m = a.merge(b, on="item_id")
    d = m["score_y"].to_numpy() - m["score_x"].to_numpy()
    assert row["se"] == pytest.approx(np.std(d, ddof=1) / math.sqrt(15))
    assert row["mde"] == pytest.approx((Z95 + Z80) * np.std(d, ddof=1) / math.sqrt(15))
    assert row["correlation"] == pytest.approx(np.corrcoef(m["score_x"], m["score_y"])[0, 1])
    assert cmp.verdict.startswith("different:") and "46.7 points" in cmp.verdict
    # n = 15 with 7 discordant items is routed to Tango's score interval, not Wald
    assert row["interval_method"] == "tango"
    assert row["method_reason"] == "Tango score interval: 15 items, 7 discordant"
    tango = st.paired_proportion_interval(int(row["both"]), 0, 7, int(row["neither"]),
                                          method="tango")
    assert (row["low"], row["high"]) == pytest.approx((tango.low, tango.high))
    wald = st.paired_proportion_interval(int(row["both"]), 0, 7, int(row["neither"]),
                                         method="wald")
    assert (round(-100 * wald.high, 1), round(-100 * wald.low, 1)) == (20.5, 72.8)
    assert row["low"] > wald.low and row["high"] > wald.high   # shifted toward 0, asymmetric
    assert cmp.pairing[0].n_shared == 15 and not cmp.pairing[0].only_a
    # runs of two different models: model settings differ but raise no instrument warning
    assert len(cmp.protocol_diff) > 0
    assert not any(w.startswith("protocols differ") for w in cmp.warnings)


def test_compare_several_tasks_holm_and_overall(store):
    cmp = an.compare(store, "m1", "m3")
    pt = cmp.per_task.set_index("task")
    assert set(pt.index) == {"arc_easy", "hellaswag", "cont"}
    assert (pt["adjustment"] == "holm").all()
    holm = multipletests(pt["p_value"].to_numpy(), method="holm")[1]
    assert pt["p_adjusted"].to_numpy() == pytest.approx(holm)
    # McNemar only for 0/1 tasks; hellaswag uses the clustered paired SE
    assert math.isnan(pt.loc["cont", "b"]) and not math.isnan(pt.loc["arc_easy", "b"])
    assert pt.loc["hellaswag", "kind"] == "paired, clustered SE"
    d = HS["m3"] - HS["m1"]
    r = st.paired_difference(HS["m1"], HS["m3"], clusters=HS_CLUSTERS)
    assert pt.loc["hellaswag", "se"] == pytest.approx(r.se)
    o = cmp.overall
    assert o["diff"] == pytest.approx(pt["diff"].mean())
    # each task's SE counts at least as its interval's half-width / z (a score interval is
    # not narrowed by averaging a smaller Wald SE); never below the plain formula
    se_t = np.fmax(pt["se"], (pt["high"] - pt["low"]) / (2 * Z95))
    assert o["se"] == pytest.approx(math.sqrt((se_t ** 2).sum()) / 3)
    assert o["se"] >= math.sqrt((pt["se"] ** 2).sum()) / 3
    # both SEs travel with every row; 15 clusters (< 30): the headline SE is the larger one
    assert pt.loc["hellaswag", "se_clustered"] == pytest.approx(r.se_clustered)
    assert pt.loc["hellaswag", "se_iid"] == pytest.approx(np.std(d, ddof=1) / math.sqrt(90))
    assert pt.loc["hellaswag", "se"] == pytest.approx(
        max(r.se_clustered, pt.loc["hellaswag", "se_iid"]))
    assert pt.loc["hellaswag", "n_clusters"] == 15
    assert math.isnan(pt.loc["arc_easy", "se_clustered"])
    assert cmp.verdict.startswith("macro average over 3 tasks")
    assert d.mean() == pytest.approx(pt.loc["hellaswag", "diff"])


def test_verdict_rule_branches():
    v = an.verdict_text(0.05, 0.02, 0.08, 0.03, scale=100, threshold=0.05, name_a="A",
                        name_b="B")
    assert v.startswith("different: B is better than A by 5.0 points")
    v = an.verdict_text(-0.05, -0.08, -0.02, 0.03, scale=100, threshold=0.05)
    assert v.startswith("different: A is better than B") and "(CI 2.0 to 8.0)" in v
    v = an.verdict_text(0.01, -0.01, 0.03, 0.03, scale=100, threshold=0.05)
    assert v == "no difference detected, and this design could have detected 3.0 points"
    v = an.verdict_text(0.01, -0.1, 0.12, 0.2, scale=100, threshold=0.05)
    assert v == "underpowered: the MDE here is 20.0 points"


def test_verdict_branches_end_to_end(tmp_path):
    rng = np.random.default_rng(7)
    big = (rng.random(4000) < 0.6).astype(float)
    big_b = big.copy()                      # the runs disagree on 200 items, b = c = 100
    big_b[np.flatnonzero(big == 1)[:100]] = 0.0
    big_b[np.flatnonzero(big == 0)[:100]] = 1.0
    small = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 0], dtype=float)
    small_b = np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 0], dtype=float)
    s = make_store([make_run("A", {("big", "acc"): big, ("small", "acc"): small}),
                    make_run("B", {("big", "acc"): big_b, ("small", "acc"): small_b})],
                   tmp_path, kind="real")
    c_big = an.compare(s, "A", "B", task="big")
    assert c_big.verdict.startswith("no difference detected, and this design could have "
                                    "detected")
    mde = c_big.per_task.iloc[0]["mde"]
    assert mde < 0.05
    d = big_b - big
    assert mde == pytest.approx((Z95 + Z80) * np.std(d, ddof=1) / math.sqrt(4000))
    c_small = an.compare(s, "A", "B", task="small")
    # n = 10 with an MDE of about 59 points: below the floor, nothing can be concluded
    assert c_small.verdict.startswith("too few items to tell: the MDE here is")
    row = c_small.per_task.iloc[0]
    need = st.required_items(0.05, sd_diff=float(np.std(small_b - small, ddof=1)))
    assert row["items_needed"] == need
    assert f"about {need:,} items are needed to detect 5.0 points" in c_small.verdict
    assert an.compare(s, "A", "B", task="small", mde_threshold=1.0).verdict.startswith(
        "no difference detected")


def test_compare_summary_only_falls_back_to_unpaired(store):
    cmp = an.compare(store, "m1", "sumonly", task="arc_easy")
    row = cmp.per_task.iloc[0]
    assert row["kind"] == "unpaired from reported stderr"
    se_a = np.std(ARC["m1"], ddof=1) / math.sqrt(N_ARC)
    assert row["diff"] == pytest.approx(SUMONLY_ARC["value"] - ARC["m1"].mean())
    assert row["se"] == pytest.approx(math.hypot(se_a, SUMONLY_ARC["stderr"]))
    assert row["verdict"].startswith("unpaired (reported stderr, no item-level data)")
    assert any("UNPAIRED" in w for w in cmp.warnings)
    # no stderr on either side for hellaswag: nothing to compare
    with pytest.raises(AnalysisError):
        an.compare(store, "m1", "sumonly", task="hellaswag")


def test_compare_errors(store, tmp_path):
    with pytest.raises(AnalysisError, match="no run"):
        an.compare(store, "m1", "does-not-exist")
    with pytest.raises(AnalysisError, match="two different runs"):
        an.compare(store, "m1", "m1")
    with pytest.raises(AnalysisError, match="not in run"):
        an.compare(store, "m1", "m2", task="nope")
    s = make_store([make_run("A", {("t", "acc"): {"1": 1.0, "2": 0.0}}),
                    make_run("B", {("t", "acc"): {"3": 1.0, "4": 0.0}})], tmp_path, kind="real")
    with pytest.raises(AnalysisError, match="share no items"):
        an.compare(s, "A", "B")


def test_compare_warns_before_numbers_on_protocol_and_hash_differences(tmp_path):
    x = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    a = make_run("A", {("t", "acc"): x}, protocol={"num_fewshot": 0})
    b = make_run("B", {("t", "acc"): x[::-1].copy()}, protocol={"num_fewshot": 5},
                 prompt_hash={"t": {"0": "other", "1": "other2"}})
    s = make_store([a, b], tmp_path, kind="real")
    cmp = an.compare(s, "A", "B")
    assert cmp.warnings[0].startswith("protocols differ") and "num_fewshot" in cmp.warnings[0]
    assert any("different prompt/item hash" in w for w in cmp.warnings)
    assert cmp.pairing[0].hash_mismatch == ("0", "1")
    assert "num_fewshot" in set(cmp.protocol_diff["setting"])


def test_discordant_items_with_texts(fixture_store):
    mistral, dialo = _fixture_names(fixture_store)
    c = an.discordant_items(fixture_store, mistral, dialo, "arc_easy", "acc", cell="c")
    assert len(c) == 7
    assert (c["score_a"] == 1).all() and (c["score_b"] == 0).all()
    assert c["prompt"].notna().all() and c["response_a"].notna().all()
    assert list(c.columns) == ["item_id", "score_a", "score_b", "prompt", "target",
                               "response_a", "response_b"]
    assert an.discordant_items(fixture_store, mistral, dialo, "arc_easy", "acc",
                               cell="b").empty
    with pytest.raises(AnalysisError):
        an.discordant_items(fixture_store, mistral, dialo, "arc_easy", "acc", cell="x")


# ---------------------------------------------------------------------------------------
# one run: repeats, reruns, clusters, metric variants, planning, overview
# ---------------------------------------------------------------------------------------

def test_repeats_variance_components_and_pass_at_k(tmp_path):
    rng = np.random.default_rng(11)
    p_item = rng.beta(2, 2, 80)
    x = (rng.random((80, 5)) < p_item[:, None]).astype(float)
    s = make_store([make_run("R", {("gsm", "acc"): x})], tmp_path, kind="real")
    rep = an.repeats(s, "R", "gsm", k_max=20)
    within = np.var(x, axis=1, ddof=1).mean()
    between = np.var(x.mean(axis=1), ddof=1) - within / 5
    assert rep.k_observed == 5 and rep.n_items == 80
    assert (rep.within, rep.between) == pytest.approx((within, between))
    se5 = math.sqrt((between + within / 5) / 80)
    assert rep.se_observed == pytest.approx(se5)
    assert rep.curve.loc[rep.curve["measured"], "k"].tolist() == [5]
    assert rep.curve["low_floor"].iloc[0] == pytest.approx(math.sqrt(between / 80))
    assert len(rep.curve) == 20
    c = x.sum(axis=1)
    for k in (1, 3):
        per_item = 1 - comb(5 - c, k) / comb(5, k)
        row = rep.pass_at_k[rep.pass_at_k["k"] == k].iloc[0]
        assert row["estimate"] == pytest.approx(per_item.mean())
        assert row["se"] == pytest.approx(np.std(per_item, ddof=1) / math.sqrt(80))
    with pytest.raises(AnalysisError, match="one answer per item"):
        an.repeats(make_store([make_run("S", {("t", "acc"): x[:, 0]})], kind="memory"),
                   "S", "t")


def test_rerun_noise_flip_rate(store):
    rep = an.rerun_noise(store, "m1", "m2", "arc_easy", against="m3")
    f = np.mean(ARC["m1"] != ARC["m2"])
    assert rep.flip_rate == pytest.approx(f)
    assert rep.variance_term == pytest.approx(f / (2 * N_ARC))
    d = ARC["m3"] - ARC["m1"]
    se2 = np.var(d, ddof=1) / N_ARC
    assert rep.share_of_paired_se2 == pytest.approx(2 * f / (2 * N_ARC) / se2)
    assert an.rerun_noise(store, "m1", "m2", "arc_easy").share_of_paired_se2 is None


def test_clusters_report_matches_statsmodels(store):
    import statsmodels.api as sm
    rep = an.clusters(store, "m2", "hellaswag")
    x = HS["m2"]
    codes = pd.factorize(pd.Series(HS_CLUSTERS))[0]
    fit = sm.OLS(x, np.ones(len(x))).fit(cov_type="cluster", cov_kwds={"groups": codes})
    se_iid = np.std(x, ddof=1) / math.sqrt(len(x))
    assert rep.n_clusters == 15 and rep.n == 90
    assert rep.se_clustered == pytest.approx(float(fit.bse[0]))
    assert rep.se_iid == pytest.approx(se_iid)
    assert rep.design_effect == pytest.approx(float(fit.bse[0]) ** 2 / se_iid ** 2)
    # the clustered interval uses t with G - 1 = 14 df: statsmodels' use_t interval
    fit_t = sm.OLS(x, np.ones(len(x))).fit(cov_type="cluster", cov_kwds={"groups": codes},
                                           use_t=True)
    assert (rep.clustered_low, rep.clustered_high) == pytest.approx(tuple(fit_t.conf_int()[0]))
    assert rep.df == 14
    # 0/1 scores: the headline is Korn-Graubard (Clopper-Pearson on the effective n with the
    # (t_{n-1}/t_{G-1})^2 factor; n_eff capped at n below 30 clusters), from scipy's beta
    p = x.mean()
    n_eff = min(p * (1 - p) / float(fit.bse[0]) ** 2, len(x))
    n_df = n_eff * (sps.t.ppf(0.975, len(x) - 1) / sps.t.ppf(0.975, 14)) ** 2
    k = p * n_df
    assert rep.low == pytest.approx(sps.beta.ppf(0.025, k, n_df - k + 1), rel=1e-9)
    assert rep.high == pytest.approx(sps.beta.ppf(0.975, k + 1, n_df - k), rel=1e-9)
    assert rep.method_reason.startswith("Korn-Graubard") and "14 df" in rep.method_reason
    # beside it the iid (Wilson) interval, and the ratio of the two widths shown
    wil = st.wilson_interval(int(x.sum()), len(x))
    assert (rep.iid_low, rep.iid_high) == pytest.approx((wil.low, wil.high))
    assert rep.width_ratio == pytest.approx((rep.high - rep.low) / (wil.high - wil.low))
    with pytest.raises(AnalysisError, match="no cluster key"):
        an.clusters(store, "m2", "arc_easy")


def test_metric_variants_paired(store):
    cmp = an.metric_variants(store, "m1", "arc_easy", "acc", "acc_norm")
    row = cmp.per_task.iloc[0]
    x = ARC["m1"]
    assert row["diff"] == pytest.approx((1 - x).mean() - x.mean())
    assert row["b"] == np.sum(x == 0) and row["c"] == np.sum(x == 1)
    assert "[acc]" in cmp.run_a and "[acc_norm]" in cmp.run_b
    with pytest.raises(AnalysisError):
        an.metric_variants(store, "m1", "arc_easy", "acc", "bleu")


def test_plan_from_pair(store):
    plan = an.plan_from_pair(store, "m1", "m2", "arc_easy")
    d = ARC["m2"] - ARC["m1"]
    assert plan.n == N_ARC
    assert plan.sd_diff == pytest.approx(np.std(d, ddof=1))
    assert plan.disagreement == pytest.approx(np.mean(d != 0))
    assert plan.diff == pytest.approx(d.mean())
    assert plan.design_effect is None
    cl = an.plan_from_pair(store, "m1", "m2", "hellaswag")
    dh = HS["m2"] - HS["m1"]
    assert cl.design_effect == pytest.approx(st.clustered_se(dh, HS_CLUSTERS).design_effect)


def test_overview(store):
    ov = an.overview(store)
    assert list(ov.runs["name"]) == ["m0", "m1", "m2", "m3", "sumonly"]
    assert {"run", "task", "metric", "n_items", "k_max", "has_cluster", "n_choices"} <= \
        set(ov.tasks.columns)
    assert any("sumonly" in n for n in ov.notes)
    assert "N/A stderr" in set(ov.audit["flag"].dropna())
    empty = an.overview(MemoryStore([]))
    assert empty.runs.empty and "empty" in empty.notes[0]


@pytest.mark.parametrize("method", ["wilson", "clustered"])
def test_memory_store_gives_the_same_leaderboard(store, method):
    """The analysis layer uses the store duck-typed: the pandas MemoryStore and DuckDB agree
    (clustered: the MemoryStore has no code matrices nor ``one_version``: the cluster codes
    as rows, in the board's worker thread)."""
    mem = an.leaderboard(MemoryStore(_runs()), n_resamples=500, method=method)
    real = an.leaderboard(store, n_resamples=500, method=method)
    cols = ["run", "task", "metric", "n", "score", "se", "low", "high", "method"]
    a = mem.cells[cols].sort_values(["task", "run"]).reset_index(drop=True)
    b = real.cells[cols].sort_values(["task", "run"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a.astype({"n": float}), b.astype({"n": float}),
                                  check_dtype=False)
    assert mem.notes == real.notes
