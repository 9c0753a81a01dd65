"""Compare page: the real lm_eval fixtures (Mistral-7B vs DialoGPT-medium on arc_easy), the
2x2 drill-down, integrity warnings and the empty/one-run/no-shared-task messages."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps

from evalcore.stats import paired_proportion_interval
from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (DIALOGPT, MISTRAL, charts, fixture_item_scores, metric,
                                  no_exception, page, store_file, texts)


def names(store: Store) -> tuple[str, str]:
    runs = store.runs()
    mistral = next(n for n in runs["name"] if "Mistral" in n)
    dialo = next(n for n in runs["name"] if "DialoGPT" in n)
    return dialo, mistral


def open_pair(store: Store, **params):
    a, b = names(store)                 # A = DialoGPT, B = Mistral: b = only Mistral right
    at = page("compare")
    at.query_params["run_a"] = a
    at.query_params["run_b"] = b
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def test_mistral_vs_dialogpt_numbers(fixture_store, fixtures_dir):
    at = open_pair(fixture_store, metric="acc")
    no_exception(at)
    a = fixture_item_scores(fixtures_dir / DIALOGPT)
    b = fixture_item_scores(fixtures_dir / MISTRAL)
    ids = sorted(a)
    xa = np.array([a[i] for i in ids])
    xb = np.array([b[i] for i in ids])
    d = xb - xa
    se = d.std(ddof=1) / np.sqrt(d.size)
    z = sps.norm.ppf(0.975)
    # exact McNemar from scipy: b = 7, c = 0 -> two-sided binomial p = 2 * 0.5^7
    bb, cc = int(np.sum((xb == 1) & (xa == 0))), int(np.sum((xb == 0) & (xa == 1)))
    assert (bb, cc) == (7, 0)
    p = sps.binomtest(cc, bb + cc, 0.5).pvalue
    assert p == pytest.approx(0.015625)
    # the verdict's p: the larger of Tango's score test (z = 7/sqrt(7), p 0.0082) and the
    # exact test, i.e. the exact p here; the exact p itself in the caption beside it
    score = 2 * sps.norm.sf(7 / np.sqrt(7))
    assert score == pytest.approx(0.00815, abs=1e-5)
    assert metric(at, "p (the verdict's test)") == f"{max(p, score):.4f}" == "0.0156"
    assert any("b = 7, c = 0; exact McNemar p 0.0156" in t for t in texts(at.caption))
    assert metric(at, "B − A (95% CI)") == f"{100 * d.mean():+.1f} pp" == "+46.7 pp"
    # n = 15 with 7 discordant items: Tango's score interval (issue 8), named with its reason
    tango = paired_proportion_interval(5, 7, 0, 3, method="tango")
    assert any(f"[{100 * tango.low:+.1f}, {100 * tango.high:+.1f}] pp" in t
               for t in texts(at.caption))
    wald = (100 * (d.mean() - z * se), 100 * (d.mean() + z * se))
    assert not any(f"[{wald[0]:+.1f}, {wald[1]:+.1f}] pp" in t for t in texts(at.caption))
    assert any("Tango score interval: 15 items, 7 discordant" in t for t in texts(at.caption))
    assert metric(at, "se_iid (paired)") == f"{100 * se:.2f} pp"
    assert any("se_clustered n/a (no cluster key applied)" in t for t in texts(at.caption))
    table = next(df.value for df in at.dataframe if "Interval method" in df.value.columns)
    assert table.loc[0, "Interval method"] == "Tango score interval: 15 items, 7 discordant"
    assert table.loc[0, "se_iid"] == pytest.approx(100 * se)
    assert np.isnan(table.loc[0, "se_clustered"])
    se_unpaired = np.sqrt(xa.var(ddof=1) / xa.size + xb.var(ddof=1) / xb.size)
    assert metric(at, "Unpaired SE") == f"{100 * se_unpaired:.2f} pp"
    assert metric(at, "Correlation") == f"{np.corrcoef(xa, xb)[0, 1]:.3f}"
    # the pairing is clean: 15 shared items, same doc and prompt hashes in both files
    pairing = at.dataframe[0].value
    assert pairing.loc[0, "Shared items"] == 15
    assert pairing.loc[0, "Prompt/item hash mismatches"] == 0
    assert not any("not clean" in w for w in texts(at.warning))
    # the verdict says which run is better, in words
    assert any("different" in v and "Mistral" in v for v in texts(at.info))


def test_2x2_chart_and_discordant_items(fixture_store, fixtures_dir):
    at = open_pair(fixture_store, metric="acc")
    table = next(f for f in charts(at) if f["data"][0]["type"] == "heatmap")
    cells = [c for row in table["data"][0]["text"] for c in row]
    assert "b: only B right<br><b>7</b> (46.7%)" in cells
    assert "c: only A right<br><b>0</b> (0.0%)" in cells
    # both right: A (DialoGPT) is right on 5 items, all of which Mistral also got
    assert "both right<br><b>5</b> (33.3%)" in cells
    items = next(d.value for d in at.dataframe if "response_a" in d.value.columns)
    b = fixture_item_scores(fixtures_dir / MISTRAL)
    a = fixture_item_scores(fixtures_dir / DIALOGPT)
    expected = sorted(str(i) for i in a if b[i] == 1 and a[i] == 0)
    assert sorted(items["item_id"].astype(str)) == expected
    assert items["prompt"].str.len().min() > 10
    # choose one item: its prompt is shown as plain text
    first = items["item_id"].astype(str).iloc[0]
    at.selectbox(key="cmp_item").set_value(first).run()
    prompt = items[items["item_id"].astype(str) == first]["prompt"].iloc[0]
    assert any(t.value == prompt for t in at.text)
    # the other discordant cell is empty
    at.segmented_control(key="cmp_cell").set_value("c").run()
    no_exception(at)
    assert any("No items in this cell" in t for t in texts(at.info))
    assert at.query_params["cell"] in ("c", ["c"])


def test_url_round_trip_of_selection(fixture_store):
    a, b = names(fixture_store)
    at = page("compare").run()
    at.selectbox(key="cmp_a").set_value(b).run()
    at.selectbox(key="cmp_metric").set_value("acc_norm").run()
    params = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert params["run_a"] == b and params["metric"] == "acc_norm"
    again = page("compare")
    for k, v in params.items():
        again.query_params[k] = v
    again.run()
    assert again.selectbox(key="cmp_a").value == b
    assert again.selectbox(key="cmp_metric").value == "acc_norm"
    assert metric(again, "B − A (95% CI)") == metric(at, "B − A (95% CI)")


def test_one_run_only_message(tmp_path):
    Store(store_file(tmp_path)).ingest([parsed_run("solo", {("t", "acc"): [1, 0, 1, 1]})])
    at = page("compare").run()
    no_exception(at)
    assert any("needs at least 2" in t for t in texts(at.info))


def test_empty_store_message():
    at = page("compare").run()
    no_exception(at)
    assert any("The store is empty" in t for t in texts(at.info))


def test_no_shared_task_message(tmp_path):
    Store(store_file(tmp_path)).ingest([parsed_run("a", {("t1", "acc"): [1, 0, 1]}),
                                        parsed_run("b", {("t2", "acc"): [0, 0, 1]})])
    at = page("compare").run()
    no_exception(at)
    assert any("no task in common" in t for t in texts(at.info))


def test_prompt_mismatch_and_missing_items_warn_before_numbers(tmp_path):
    a = parsed_run("a", {("t", "acc"): np.r_[np.ones(30), np.zeros(30)]})
    b = parsed_run("b", {("t", "acc"): np.r_[np.ones(40), np.zeros(25)]})
    b.scores.loc[b.scores["item_id"] == "3", "prompt_hash"] = "other"
    Store(store_file(tmp_path)).ingest([a, b])
    at = page("compare").run()
    no_exception(at)
    pairing = at.dataframe[0].value.iloc[0]
    assert pairing["Shared items"] == 60 and pairing["Only in B"] == 5
    assert pairing["Prompt/item hash mismatches"] == 1
    warning = next(w for w in at.warning if "not clean" in w.value)
    # the warning comes before the verdict and the headline numbers on the page
    order = [type(e).__name__ for e in at.main]
    assert order.index("Warning") < order.index("Info")
    assert warning is not None


def test_same_task_but_no_shared_items_is_a_message(tmp_path):
    a = parsed_run("a", {("t", "acc"): [1, 0, 1, 1]})
    b = parsed_run("b", {("t", "acc"): [0, 1, 1, 0]})
    b.scores["item_id"] = "other-" + b.scores["item_id"]
    b.texts["item_id"] = "other-" + b.texts["item_id"]
    Store(store_file(tmp_path)).ingest([a, b])
    at = page("compare").run()
    no_exception(at)
    assert not at.metric
    assert any("share no items" in t for t in texts(at.info))


def test_runs_without_item_level_data_compare_unpaired_with_a_message(tmp_path, fixtures_dir):
    from evalcore.ingest import parse_paths

    one = fixtures_dir / "lm_eval/results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json"
    three = fixtures_dir / "lm_eval/results_v0.4.x_llama-3.2-3b_mmlu-arc-hellaswag-glue.json"
    Store(store_file(tmp_path)).ingest(parse_paths([one, three]))
    at = page("compare")
    at.query_params["task"] = "arc_easy"
    at.query_params["metric"] = "acc"
    at.run()
    no_exception(at)
    assert any("no item-level data" in w.lower() for w in texts(at.warning))
    assert any("item-level 0/1 scores" in t for t in texts(at.info))
    ra = json.loads(one.read_text())["results"]["arc_easy"]
    rb = json.loads(three.read_text())["results"]["arc_easy"]
    se = np.hypot(ra["acc_stderr,none"], rb["acc_stderr,none"])
    assert metric(at, "SE (unpaired)") == f"{100 * se:.2f} pp"
    assert metric(at, "B − A (95% CI)") == f"{100 * (rb['acc,none'] - ra['acc,none']):+.1f} pp"
