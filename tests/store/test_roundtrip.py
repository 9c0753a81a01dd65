"""Schema round trip: what goes in through ``ingest`` comes back out of every query."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from evalcore.errors import StoreError
from evalcore.store import Store, default_store_path
from scipy import stats as sps

from .conftest import make_run, sha, summary


def test_default_path_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALBARS_STORE", str(tmp_path / "x"))
    assert default_store_path() == tmp_path / "x"
    monkeypatch.delenv("EVALBARS_STORE")
    assert default_store_path() == Path.cwd() / ".evalbars"


def test_new_store_is_created_empty(tmp_path):
    s = Store(tmp_path / "sub" / "new")
    assert (s.path / "catalog.sqlite").exists() and s.kind == "local"
    assert s.runs().empty and s.tasks().empty and s.cell_stats().empty and s.audit().empty
    assert s.write_counter() == 1  # the creating transaction


def test_round_trip_of_every_table(store):
    run = make_run("mistral", model="mistralai/Mistral-7B", scores=[1, 0, 1, 1],
                   item_ids=["0", "1", "2", "10"], clusters=["a", "a", "b", "b"],
                   protocol={"config": {"num_fewshot": 5, "gen": {"temperature": 0.0}}},
                   task_protocol={"num_fewshot": 5, "output_type": "multiple_choice"},
                   source_key="out/mistral@2025",
                   summaries=[summary("t", "acc", 0.75, 0.25, 4), summary("g", "acc", 0.6, None, None,
                                                                         "N/A", True)])
    rep = store.ingest([run])
    assert rep.runs["status"].tolist() == ["added"]
    assert rep.runs[["n_items", "n_scores", "k_max"]].iloc[0].tolist() == [4, 4, 1]
    assert not rep.already_present
    rid = store.resolve_run("mistral")

    runs = store.runs()
    row = runs.iloc[0]
    assert (row["run_id"], row["name"], row["model"], row["source_format"]) == (
        rid, "mistral", "mistralai/Mistral-7B", "lm_eval")
    assert (row["harness"], row["harness_version"], row["source_key"]) == (
        "lm-evaluation-harness", "0.4.8", "out/mistral@2025")
    assert row["tags"] == [] and row["n_scores"] == 4 and row["n_tasks"] == 2 and row["has_items"]

    info = store.run_info(rid)
    assert info["protocol"] == {"config": {"num_fewshot": 5, "gen": {"temperature": 0.0}}}
    assert [f["sha256"] for f in info["files"]] == [sha("mistral.jsonl")]
    assert info["files"][0]["name"] == "mistral.jsonl" and info["files"][0]["size"] == len("mistral.jsonl")

    sc = store.scores([rid])
    assert sorted(sc["item_id"]) == ["0", "1", "10", "2"]
    back = dict(zip(sc["item_id"], sc["score"]))
    assert back == {"0": 1.0, "1": 0.0, "2": 1.0, "10": 1.0}
    assert dict(zip(sc["item_id"], sc["cluster"])) == {"0": "a", "1": "a", "2": "b", "10": "b"}
    assert set(sc["item_hash"]) == {sha(f"doc{i}") for i in ["0", "1", "2", "10"]}

    summ = store.summaries([rid]).set_index("task")
    assert summ.loc["t", "value"] == 0.75 and summ.loc["t", "stderr"] == 0.25 and summ.loc["t", "n"] == 4
    assert not summ.loc["t", "is_group"]
    assert math.isnan(summ.loc["g", "stderr"]) and summ.loc["g", "stderr_raw"] == "N/A"
    assert summ.loc["g", "is_group"]

    tx = store.texts(rid, "t", ["10", "1"])
    assert tx["item_id"].tolist() == ["1", "10"]
    assert tx["prompt"].tolist() == ["Question 1?", "Question 10?"]

    tp = store.task_protocols(rid)
    assert tp["protocol"].tolist() == [{"num_fewshot": 5, "output_type": "multiple_choice"}]
    assert tp["n_choices"].tolist() == [4]

    tasks = store.tasks([rid]).set_index("task")
    assert tasks.loc["t", "has_items"] and tasks.loc["t", "n_items"] == 4
    assert tasks.loc["t", "has_cluster"] and tasks.loc["t", "binary"] and tasks.loc["t", "k_max"] == 1
    assert not tasks.loc["g", "has_items"] and tasks.loc["g", "is_group"]


def test_item_means_and_cell_stats_with_several_answers(store):
    # 3 items x 4 answers, scores differ per answer: build by hand
    run = make_run("k4", scores=[0, 0, 0], answers=4, texts=False)
    values = {("0", 0): 1, ("0", 1): 1, ("0", 2): 0, ("0", 3): 1,
              ("1", 0): 0, ("1", 1): 0, ("1", 2): 0, ("1", 3): 0,
              ("2", 0): 1, ("2", 1): 1, ("2", 2): 1, ("2", 3): 1}
    run.scores["score"] = [float(values[(i, a)]) for i, a in zip(run.scores["item_id"],
                                                                  run.scores["answer_idx"])]
    store.ingest([run])
    im = store.item_means([1], task="t", metric="acc").set_index("item_id")
    assert im["score"].to_dict() == {"0": 0.75, "1": 0.0, "2": 1.0}
    assert im["n_answers"].tolist() == [4, 4, 4]
    cs = store.cell_stats().iloc[0]
    means = np.array([0.75, 0.0, 1.0])
    assert cs["n"] == 3 and cs["k_max"] == 4 and cs["n_scores"] == 12
    assert cs["sum"] == pytest.approx(means.sum()) and cs["sumsq"] == pytest.approx((means ** 2).sum())
    assert bool(cs["binary"])  # raw scores are 0/1 although a mean is 0.75
    # the SE implied by (n, sum, sumsq) is scipy's standard error of the mean
    n, s, ss = cs["n"], cs["sum"], cs["sumsq"]
    se = math.sqrt((ss - s * s / n) / (n - 1) / n)
    assert se == pytest.approx(sps.sem(means, ddof=1))


def test_non_binary_scores_and_filters(store):
    store.ingest([make_run("a", scores=[0.5, 0.25, 1.0], metric="f1",
                           extra_cells=[("u", "acc", [1, 0])])])
    cs = store.cell_stats(task="t")
    assert cs["metric"].tolist() == ["f1"] and not bool(cs["binary"].iloc[0])
    assert store.cell_stats(metric="acc")["task"].tolist() == ["u"]
    assert store.cell_stats(run_ids=[]).empty
    assert store.scores([1], task="u")["score"].tolist() == [1.0, 0.0]


def test_item_ids_given_as_numbers_are_stored_as_text(store):
    run = make_run("ints")
    run.scores["item_id"] = [0, 1, 2]
    run.texts["item_id"] = [0, 1, 2]
    store.ingest([run])
    assert store.scores([1])["item_id"].tolist() == ["0", "1", "2"]


def test_resolve_run_by_name_id_and_error_lists_runs(store):
    store.ingest([make_run("alpha"), make_run("beta", files=["b.jsonl"])])
    assert store.resolve_run("alpha") == 1
    assert store.resolve_run(2) == 2 and store.resolve_run("2") == 2
    assert store.resolve_run("BETA") == 2
    with pytest.raises(StoreError) as err:
        store.resolve_run("gamma")
    assert "'gamma'" in str(err.value) and "'alpha' (id 1)" in str(err.value) and "'beta' (id 2)" in str(err.value)


def test_resolve_run_on_empty_store_says_so(store):
    with pytest.raises(StoreError, match="empty"):
        store.resolve_run("x")


def test_paired_item_means_joins_two_runs(store):
    store.ingest([make_run("a", scores=[1, 0, 1]),
                  make_run("b", scores=[1, 1, 0, 1], files=["b.jsonl"])])
    pm = store.paired_item_means(1, 2, "t", "acc")
    assert pm["item_id"].tolist() == ["0", "1", "2"]
    assert pm["score_a"].tolist() == [1.0, 0.0, 1.0] and pm["score_b"].tolist() == [1.0, 1.0, 0.0]
    assert pm["hash_match"].all()


def test_not_an_evalbars_store(tmp_path):
    import duckdb
    p = tmp_path / "other.duckdb"
    with duckdb.connect(str(p)) as con:
        con.execute("CREATE TABLE x (a INTEGER)")
    with pytest.raises(StoreError, match="not an evalbars store"):
        Store(p)
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        Store(junk)


def test_maintained_cell_stats_equal_a_recomputation_from_scores(store):
    store.ingest([make_run("a", scores=[1, 0, 0.5], answers=2, files=["a"],
                           extra_cells=[("u", "acc", [1, 1, 0, 1])]),
                  make_run("b", scores=[0, 0, 1], files=["b"], clusters=["x", "y", "x"])])
    kept = store.cell_stats()
    again = store.recompute_cell_stats()
    cols = ["run_id", "task", "metric", "n", "sum", "sumsq", "binary", "k_max", "n_scores", "has_cluster"]
    pd.testing.assert_frame_equal(kept[cols], again[cols], check_dtype=False)


def test_protocol_values_json_cannot_write_are_kept_as_numbers_or_text(store):
    import datetime as dt
    run = make_run("np", protocol={"n": np.int64(5), "x": np.float32(0.5), "v": np.array([1, 2]),
                                   "when": dt.date(2025, 1, 2), "s": {"b", "a"}})
    store.ingest([run])
    assert store.run_info("np")["protocol"] == {"n": 5, "x": 0.5, "v": [1, 2], "when": "2025-01-02",
                                                "s": ["a", "b"]}
