"""A verdict cannot disagree with its own row (evalcore/analysis/compare_rows.py, verdicts.py).

Contract of every ``compare`` row: ``verdict`` starts with "different" iff
``p_adjusted < 1 - confidence``; with ``adjustment`` "none" the interval [low, high] excludes
0 iff the verdict is "different"; for 0/1 scores the row's p is at least the exact McNemar p
(a handful of discordant items is never called a difference the exact test would not call).
Checked on every small 2x2 table, on random larger, clustered and continuous rows, on
several-task families (Holm, BH; Bonferroni simultaneous intervals) and on the bundled demo.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from evalcore import analysis as an
from evalcore import stats as st
from evalcore.analysis.compare_rows import SharedItems, paired_data, paired_row
from evalcore.errors import AnalysisError
from tests.analysis_helpers import make_run, make_store


def _row(xa, xb, clusters=None, confidence=0.95, **kw):
    items = np.arange(len(xa))
    sh = SharedItems(items, np.asarray(xa, float), np.asarray(xb, float),
                     None if clusters is None else np.asarray(clusters, dtype=np.int64))
    return paired_row(paired_data(sh, "t"), "t", "acc", confidence, None, "A", "B", **kw)


def _table(a, b, c, d):
    """Two 0/1 runs with cells a (both right), b (only B), c (only A), d (neither)."""
    xa = np.r_[np.ones(a), np.zeros(b), np.ones(c), np.zeros(d)]
    xb = np.r_[np.ones(a), np.ones(b), np.zeros(c), np.zeros(d)]
    return xa, xb


def _check_row(row, confidence=0.95):
    alpha = 1 - confidence
    different = str(row["verdict"]).startswith("different")
    assert different == bool(row["p_adjusted"] < alpha), row["verdict"]
    assert different == bool(row["different"])
    if row["adjustment"] == "none":
        assert row["p_adjusted"] == row["p_value"]
        excludes = row["low"] > 0 or row["high"] < 0
        assert excludes == different, (row["low"], row["high"], row["p_value"], row["verdict"])
    if not math.isnan(row["b"]):
        assert row["p_value"] >= row["p_exact"]
        assert row["p_value"] == max(row["p_interval"], row["p_exact"])
        if row["p_exact"] >= alpha:
            assert not different
    if different:
        assert row["better"] in ("A", "B")
        assert row["better"] == ("B" if row["diff"] > 0 else "A")


def _same_test_as_interval(row):
    """The routed interval's method is the test p_interval came from."""
    return row["interval_method"] in row["test"] or {
        "tango": "score test", "wald": "Wald z test", "t": "paired t test",
        "normal": "paired z test", "bound": "discordance bound",
        "clustered-t": "cluster-robust t test"}[row["interval_method"]] in row["test"]


def test_every_2x2_table_up_to_14_items():
    """Every (a, b, c, d) with 2 <= n <= 14 (3,055 tables), at 95%."""
    count = 0
    for n in range(2, 15):
        for a, b, c in itertools.product(range(n + 1), repeat=3):
            d = n - a - b - c
            if d < 0:
                continue
            row = _row(*_table(a, b, c, d))
            _check_row(row)
            assert _same_test_as_interval(row)
            count += 1
    assert count == 3055


@pytest.mark.parametrize("confidence,n_max", [(0.9, 20), (0.95, 30), (0.99, 20)])
def test_every_discordant_split_up_to_30_items(confidence, n_max):
    """The decision of a 0/1 row depends on the table only through (b, c, n): every (b, c)
    with n <= 30 at 95%, n <= 20 at 90% and 99% (tests/stats/test_paired_tests.py sweeps
    the intervals' inversion to n = 40 at all three)."""
    for n in range(2, n_max + 1):
        for b in range(n + 1):
            for c in range(n + 1 - b):
                _check_row(_row(*_table(n - b - c, b, c, 0), confidence=confidence),
                           confidence)


def test_random_larger_tables_including_the_wald_route():
    rng = np.random.default_rng(2)
    seen = set()
    for _ in range(250):
        n = int(rng.integers(40, 2500))
        k = int(rng.integers(0, max(2, int(n * rng.uniform(0.01, 0.5)))))
        b = int(rng.binomial(k, rng.uniform(0.2, 0.8)))
        c = k - b
        a = int(rng.integers(0, n - k + 1))
        row = _row(*_table(a, b, c, n - k - a))
        _check_row(row)
        assert _same_test_as_interval(row)
        seen.add(row["interval_method"])
    assert seen == {"tango", "wald"}


@pytest.mark.parametrize("g", [5, 12, 29, 30, 60])
def test_clustered_rows(g):
    """0/1 and continuous scores on clustered items: the clustered interval (t on G - 1
    df, below 30 clusters its union with the iid one), p from the same procedure, and for
    0/1 scores the exact McNemar test too."""
    rng = np.random.default_rng(g)
    for k in range(40):
        n = int(rng.integers(g * 2, g * 8))
        cl = rng.integers(0, g, n)
        effect = rng.normal(0, 0.6, g)[cl]
        pa = 1 / (1 + np.exp(-(0.3 + effect)))
        pb = 1 / (1 + np.exp(-(0.3 + effect + rng.normal(0.15, 0.2))))
        xa = (rng.random(n) < pa).astype(float)
        xb = np.where(rng.random(n) < 0.7, xa, (rng.random(n) < pb).astype(float))
        if k % 2:
            xa, xb = xa * 0.5 + rng.random(n) * 0.5, xb * 0.5 + rng.random(n) * 0.5
        row = _row(xa, xb, clusters=cl)
        _check_row(row)
        if len(np.unique(cl)) >= 2 and row["se_clustered"] > 0:
            assert row["interval_method"] == "clustered-t"
        assert _same_test_as_interval(row)


def test_continuous_rows_t_normal_and_bound():
    rng = np.random.default_rng(4)
    methods = set()
    for n in (3, 8, 15, 29, 30, 60, 200):
        for _ in range(20):
            xa = rng.random(n)
            xb = np.clip(xa + rng.normal(rng.normal(0, 0.1), 0.15, n), 0, 1)
            row = _row(xa, xb)
            _check_row(row)
            methods.add(row["interval_method"])
    # no spread in d on [0, 1] scores: the discordance bound and its own p
    for shift in (0.0, 1 / 128, 0.25):
        xa = np.arange(50) / 128            # dyadic: xa + shift - xa is exactly shift
        row = _row(xa, xa + shift)
        assert row["interval_method"] == "bound"
        assert row["p_value"] == pytest.approx((1 + shift) ** -50, rel=1e-6)
        _check_row(row)
        methods.add("bound")
    assert {"t", "normal", "bound"} <= methods


def test_the_issue_table_is_not_called_different():
    """(50, 4, 0, 46): Tango alone excludes 0 (score p 0.0455) but the exact McNemar p is
    0.125; the row says no difference, shows the interval widened to 0 and says why."""
    row = _row(*_table(50, 4, 0, 46))
    assert row["interval_method"] == "tango" and bool(row["widened"])
    assert row["low"] == 0.0 and row["high"] == pytest.approx(
        st.paired_proportion_interval(50, 4, 0, 46, 0.95, "tango").high)
    assert row["p_interval"] == pytest.approx(2 * sps.norm.sf(2.0))
    assert row["p_value"] == pytest.approx(sps.binomtest(4, 4).pvalue) == 0.125
    assert not str(row["verdict"]).startswith("different")
    assert "widened to 0: the exact McNemar test does not reject no difference " \
           "(p = 0.125)" in row["method_reason"]
    _check_row(row)


def test_small_n_with_a_significant_exact_test_is_different():
    """8 items, all 8 discordant one way: exact p = 2/256 < 0.05: "different", and the
    sentence says how few items there were."""
    row = _row(np.zeros(8), np.ones(8))
    assert row["p_exact"] == pytest.approx(2 / 256)
    assert str(row["verdict"]).startswith("different: B is better than A")
    assert "only 8 items" in row["verdict"]
    _check_row(row)


def _family_store(tmp_path, specs):
    """Two runs A, B over tasks t0..: specs = [(a, b, c, d), ...] 0/1 tables."""
    ra, rb = {}, {}
    for i, cells in enumerate(specs):
        xa, xb = _table(*cells)
        ra[(f"t{i}", "acc")], rb[(f"t{i}", "acc")] = xa, xb
    return make_store([make_run("A", ra), make_run("B", rb)], tmp_path, kind="memory")


@pytest.mark.parametrize("adjust", ["holm", "bh"])
def test_a_family_follows_the_adjusted_p_and_shows_simultaneous_intervals(tmp_path, adjust):
    specs = [(60, 29, 13, 98), (80, 17, 6, 17), (40, 41, 10, 29), (50, 23, 11, 66),
             (50, 4, 0, 46), (30, 3, 3, 30)]
    cmp = an.compare(_family_store(tmp_path, specs), "A", "B", adjust=adjust)
    pt = cmp.per_task
    k = len(pt)
    ref = multipletests(pt["p_value"].to_numpy(), method="holm" if adjust == "holm"
                        else "fdr_bh")[1]
    assert pt["p_adjusted"].to_numpy() == pytest.approx(ref, rel=1e-12)
    assert (pt["adjustment"] == adjust).all()
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}[adjust]
    for row in pt.to_dict("records"):
        _check_row(row)
        # the simultaneous interval: the same procedure at 1 - alpha/k, around the unadjusted
        assert row["low_simultaneous"] <= row["low"] and row["high_simultaneous"] >= row["high"]
        if not row["different"] and (row["low"] > 0 or row["high"] < 0):
            assert row["verdict"].startswith(f"no difference detected after {name} "
                                             f"adjustment")
            assert "unadjusted CI" in row["verdict"]
        if row["different"]:
            assert f"{name}-adjusted p" in row["verdict"] and "unadjusted CI" in row["verdict"]
    # each simultaneous interval is the row's procedure at 1 - alpha/k
    level = 1 - 0.05 / k
    for cells, row in zip(specs, pt.to_dict("records")):
        alone = _row(*_table(*cells), confidence=level)
        assert (row["low_simultaneous"], row["high_simultaneous"]) == pytest.approx(
            (alone["low"], alone["high"]))
    assert name in cmp.family_note and "unadjusted" in cmp.family_note
    assert "Bonferroni" in cmp.family_note
    # the overall row is its own question: normal interval and p from one SE, not adjusted
    o = cmp.overall
    assert o["adjustment"] == "none" and o["p_value"] == o["p_adjusted"]
    assert (o["low"] > 0 or o["high"] < 0) == bool(o["different"])


def test_a_single_task_has_no_adjustment_and_no_simultaneous_interval(tmp_path):
    cmp = an.compare(_family_store(tmp_path, [(60, 29, 13, 98)]), "A", "B")
    row = cmp.per_task.iloc[0]
    assert row["adjustment"] == "none" and math.isnan(row["low_simultaneous"])
    assert cmp.family_note == ""


def test_compare_tasks_subset_is_its_own_family(tmp_path):
    specs = [(60, 29, 13, 98), (80, 17, 6, 17), (40, 41, 10, 29)]
    s = _family_store(tmp_path, specs)
    sub = an.compare(s, "A", "B", tasks=["t0", "t2"])
    assert list(sub.per_task["task"]) == ["t0", "t2"]
    ref = multipletests(sub.per_task["p_value"].to_numpy(), method="holm")[1]
    assert sub.per_task["p_adjusted"].to_numpy() == pytest.approx(ref)
    with pytest.raises(AnalysisError, match="not in both"):
        an.compare(s, "A", "B", tasks=["t0", "nope"])


# ---- the bundled demo ------------------------------------------------------------------

A7, A13 = "demo-org/atlas-7b", "demo-org/atlas-13b"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from pathlib import Path

    from evalcore.ingest import parse_paths
    from evalcore.store import Store
    store = Store(tmp_path_factory.mktemp("verdict-demo") / "store")
    store.ingest(parse_paths([Path(__file__).resolve().parents[2] / "data" / "demo"]))
    yield store
    store.close()


def test_demo_atlas_pair_only_gsm8k_survives_holm(demo):
    """The issue's demo: reading_demo (exact p 0.0576) and arc_easy_demo (Holm p 0.0586) were
    called "different"; now only gsm8k_demo is, and every verdict follows its adjusted p."""
    cmp = an.compare(demo, A7, A13)
    pt = cmp.per_task.set_index("task")
    for row in cmp.per_task.to_dict("records"):
        _check_row(row)
    assert set(pt.index[pt["different"].astype(bool)]) == {"gsm8k_demo"}
    assert pt.loc["arc_easy_demo", "verdict"].startswith(
        "no difference detected after Holm adjustment (adjusted p 0.0586")
    read = pt.loc["reading_demo"]
    assert read["interval_method"] == "clustered-t" and bool(read["widened"])
    assert read["p_exact"] == pytest.approx(0.0576, abs=1e-4) and read["low"] == 0.0


def test_demo_reading_alone_is_not_called_different(demo):
    """reading_demo alone: clustered-t [0.51, 15.49] excluded 0 beside exact p = 0.0576;
    the row's p is now 0.0576 and the interval starts at 0."""
    cmp = an.compare(demo, A7, A13, task="reading_demo")
    row = cmp.per_task.iloc[0].to_dict()
    _check_row(row)
    assert row["p_value"] == pytest.approx(row["p_exact"]) and row["p_value"] > 0.05
    assert row["low"] == 0.0 and row["high"] == pytest.approx(0.1549, abs=1e-4)
    assert not cmp.verdict.startswith("different")


def test_demo_every_pair_keeps_the_contract(demo):
    """Every pair of the demo's item-level runs, all tasks: the contract on every row."""
    runs = [r for r in demo.runs()["name"] if r.startswith("demo-org/") and "@" not in r]
    for ra, rb in itertools.permutations(runs, 2):
        cmp = an.compare(demo, ra, rb)
        for row in cmp.per_task.to_dict("records"):
            _check_row(row)


def test_cli_json_and_text_follow_the_rows(tmp_path, capsys):
    """`compare --format json` on the demo: the contract on every per_task row, and the text
    output prints each row's verdict and the family note."""
    import json
    from pathlib import Path

    from tests.cli_helpers import run_main
    loc = str(tmp_path / "store")
    demo_dir = Path(__file__).resolve().parents[2] / "data" / "demo"
    assert run_main(capsys, "--store", loc, "ingest", demo_dir)[0] == 0
    code, out, _ = run_main(capsys, "--store", loc, "compare", A7, A13, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    for row in doc["per_task"]:
        assert row["verdict"].startswith("different") == (row["p_adjusted"] < 0.05)
        assert row["adjustment"] == "holm" and row["low_simultaneous"] is not None
    assert "unadjusted" in doc["family_note"]
    code, text, _ = run_main(capsys, "--store", loc, "compare", A7, A13)
    for row in doc["per_task"]:
        assert f"  verdict: {row['verdict']}" in text
    assert "Note: verdicts follow the Holm-adjusted p over 4 tasks" in text


def test_demo_tiers_decide_with_the_compare_rule(demo):
    """Every tier of the demo's leaderboard (reading_demo has 30 clusters): each run's raw p
    against the best is compare(best, run)'s p_value on that task; a run outside the top
    tier has a Holm-adjusted p < alpha, a run inside does not."""
    lb = an.leaderboard(demo, include_ranks=False)
    tiers = lb.tiers[lb.tiers["task"] != "__average__"]
    assert "reading_demo" in set(tiers["task"])
    for task, t in tiers.groupby("task"):
        best = str(t["best_run"].iloc[0])
        for row in t.itertuples(index=False):
            if row.run == best:
                continue
            p = an.compare(demo, best, row.run, task=task).per_task.iloc[0]["p_value"]
            assert row.p_raw == pytest.approx(p, rel=1e-9), (task, row.run)
            assert bool(row.indistinguishable_from_best) == (not row.p_holm < 0.05)


def test_p_words_never_round_across_alpha():
    from evalcore.analysis.verdicts import p_words
    assert p_words(0.069379) == "0.0694" and p_words(0.125) == "0.125"
    assert p_words(0.049996) == "0.049996" and p_words(0.050004) == "0.05"
    assert p_words(0.0999999, alpha=0.1) == "0.0999999"
    assert p_words(3e-5) == "< 0.0001" and p_words(float("nan")) == "n/a"


@pytest.mark.parametrize("kind", ["memory", "real"])
def test_clustered_tiers_equal_compare_on_any_store(tmp_path, kind):
    """Tiers on a clustered task give compare's p_value for each run against the best,
    from the code matrices (real store) or from each pair's items (a store without them)."""
    rng = np.random.default_rng(12)
    n = 160
    labels = [f"p{i // 8}" for i in range(n)]                      # 20 clusters of 8
    eff = rng.normal(0, 0.9, n // 8).repeat(8)
    runs = [make_run(f"r{j}", {("rc", "acc"): (rng.random(n) < 1 / (1 + np.exp(
        -(eff + 0.25 * j)))).astype(float)}, clusters={"rc": labels}) for j in range(4)]
    s = make_store(runs, tmp_path, kind=kind)
    try:
        lb = an.leaderboard(s, include_ranks=False)
        t = lb.tiers[lb.tiers["task"] == "rc"]
        best = str(t["best_run"].iloc[0])
        for row in t.itertuples(index=False):
            if row.run == best:
                continue
            cmp = an.compare(s, best, row.run, task="rc").per_task.iloc[0]
            assert cmp["interval_method"] == "clustered-t"
            assert row.p_raw == pytest.approx(cmp["p_value"], rel=1e-9)
    finally:
        if hasattr(s, "close"):
            s.close()
