"""Ingest semantics: idempotency, unique names, merge by source_key, validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import StoreError
from evalcore.model import SCORE_COLUMNS

from .conftest import make_run, store_fingerprint, summary


def test_same_files_again_change_nothing(store):
    first = store.ingest([make_run("a", scores=[1, 0, 1, 1])])
    before = store_fingerprint(store)
    version = store.version()
    again = store.ingest([make_run("a", scores=[1, 0, 1, 1])])
    assert again.already_present
    assert again.runs["status"].tolist() == ["already present"]
    assert again.runs["run_id"].tolist() == first.runs["run_id"].tolist()
    assert again.runs["n_scores_added"].tolist() == [0]
    assert store_fingerprint(store) == before and store.version() == version
    assert len(store.runs()) == 1 and len(store.scores([1])) == 4


def test_names_are_made_unique(store):
    rep = store.ingest([make_run("m", files=["1"]), make_run("m", files=["2"])])
    rep2 = store.ingest([make_run("m", files=["3"])])
    assert rep.runs["name"].tolist() == ["m", "m (2)"]
    assert rep2.runs["name"].tolist() == ["m (3)"]
    assert any("stored as 'm (3)'" in w for w in rep2.warnings)
    assert store.runs()["name"].tolist() == ["m", "m (2)", "m (3)"]


def test_colliding_lm_eval_runs_are_named_by_their_time(store):
    """Two lm_eval runs of one model (a rerun, another protocol) differ by their results time."""
    rep = store.ingest([
        make_run("org/m", files=["1"], source_key="lm_eval:2026-03-02T10-47-33.550921"),
        make_run("org/m", files=["2"], source_key="lm_eval:2026-03-03T08-21-09.733208"),
        make_run("org/m", files=["3"], source_key="lm_eval:2026-03-03T08-21-59.000001"),
    ])
    assert rep.runs["name"].tolist() == ["org/m", "org/m @ 2026-03-03 08:21", "org/m (2)"]


def test_empty_name_falls_back_to_model(store):
    rep = store.ingest([make_run("  ", model="org/model")])
    assert rep.runs["name"].tolist() == ["org/model"]


def test_samples_after_results_merge_by_source_key(store):
    # results JSON first: summaries only, no item scores
    results = make_run("qwen", scores=[], texts=False, files=["results.json"], source_key="out/qwen@t1",
                       summaries=[summary("t", "acc", 0.5, 0.2887, 4)],
                       protocol={"lm_eval_version": "0.4.13", "config": {"limit": 20}})
    r1 = store.ingest([results])
    assert r1.runs["status"].tolist() == ["added"]
    assert not store.tasks().iloc[0]["has_items"]
    v1 = store.version()
    samples = make_run("qwen samples", scores=[1, 0, 1, 0], files=["samples_t.jsonl"],
                       source_key="out/qwen@t1", protocol={"config": {"limit": 20, "extra": 1}})
    r2 = store.ingest([samples])
    assert r2.runs["status"].tolist() == ["merged"]
    assert r2.runs["run_id"].tolist() == r1.runs["run_id"].tolist()
    assert store.version() != v1
    runs = store.runs()
    assert len(runs) == 1 and runs["name"].tolist() == ["qwen"] and runs["n_scores"].tolist() == [4]
    info = store.run_info("qwen")
    assert sorted(f["name"] for f in info["files"]) == ["results.json", "samples_t.jsonl"]
    # stored protocol kept, new keys added
    assert info["protocol"] == {"lm_eval_version": "0.4.13", "config": {"limit": 20, "extra": 1}}
    tasks = store.tasks()
    assert tasks["has_items"].tolist() == [True]
    audit = store.audit()
    assert audit["n_items"].tolist() == [4] and audit["flag"].isna().all()


def test_merge_keeps_stored_cells_and_adds_new_ones(store):
    store.ingest([make_run("r", scores=[1, 1], files=["a"], source_key="k")])
    rep = store.ingest([make_run("r", scores=[0, 0], files=["b"], source_key="k",
                                 extra_cells=[("u", "acc", [1, 0, 1])])])
    assert rep.runs["status"].tolist() == ["merged"]
    assert rep.runs["n_scores_added"].tolist() == [3]
    assert any("task 't' metric 'acc' already has item scores" in w for w in rep.warnings)
    cs = store.cell_stats().set_index("task")
    assert cs.loc["t", "sum"] == 2.0 and cs.loc["t", "n"] == 2      # stored scores kept
    assert cs.loc["u", "sum"] == 2.0 and cs.loc["u", "n"] == 3      # new cell added
    assert len(store.scores([1])) == 5


def test_upload_with_one_known_file_merges_into_its_run(store):
    store.ingest([make_run("r", scores=[1, 0], files=["results.json"])])
    rep = store.ingest([make_run("r", scores=[1, 0], files=["results.json", "samples_u.jsonl"],
                                 extra_cells=[("u", "acc", [1])])])
    assert rep.runs["status"].tolist() == ["merged"]
    assert len(store.runs()) == 1
    assert sorted(store.cell_stats()["task"]) == ["t", "u"]


def test_runs_in_one_call_with_the_same_source_key_become_one(store):
    rep = store.ingest([make_run("x", files=["1"], source_key="k"),
                        make_run("x", files=["2"], source_key="k", task="u")])
    assert rep.runs["status"].tolist() == ["added", "merged"]
    assert len(store.runs()) == 1 and sorted(store.cell_stats()["task"]) == ["t", "u"]


def _bad(kind: str):
    run = make_run("bad")
    if kind == "nan":
        run.scores.loc[1, "score"] = np.nan
    elif kind == "inf":
        run.scores.loc[1, "score"] = np.inf
    elif kind == "dup":
        run.scores = pd.concat([run.scores, run.scores.iloc[[0]]], ignore_index=True)
    elif kind == "extra":
        run.scores["oops"] = 1
    elif kind == "missing":
        run.scores = run.scores.drop(columns=["cluster"])
    elif kind == "text_score":
        run.scores["score"] = ["x", "y", "z"]
    elif kind == "null_item":
        run.scores.loc[0, "item_id"] = None
    elif kind == "dup_summary":
        run.summaries = pd.DataFrame([summary("t", "acc", .5, .1, 3)] * 2)
    elif kind == "neg_answer":
        run.scores.loc[0, "answer_idx"] = -1
    elif kind == "sha":
        run.files[0].sha256 = "nothex"
    return run


@pytest.mark.parametrize("kind,message", [
    ("nan", "item '1' is nan; expected a finite number"),
    ("inf", "is inf; expected a finite number"),
    ("dup", "appears 2 times; expected one score per"),
    ("extra", "unexpected oops"),
    ("missing", "missing cluster"),
    ("text_score", "column 'score'"),
    ("null_item", "column 'item_id': 1 missing value"),
    ("dup_summary", "summary of task 't', metric 'acc' appears 2 times"),
    ("neg_answer", "answer_idx -1"),
    ("sha", "sha256 must be 64 hex digits"),
])
def test_bad_runs_are_rejected_and_nothing_is_written(store, kind, message):
    store.ingest([make_run("good", files=["good"])])
    before = store_fingerprint(store)
    with pytest.raises(StoreError) as err:
        store.ingest([make_run("fine", files=["fine"]), _bad(kind)])
    assert message in str(err.value)
    assert "'bad'" in str(err.value)
    assert store_fingerprint(store) == before
    assert store.runs()["name"].tolist() == ["good"]


def test_duplicate_texts_keep_the_first_with_a_warning(store):
    run = make_run("t")
    run.texts = pd.concat([run.texts, run.texts.iloc[[0]].assign(response="other")], ignore_index=True)
    rep = store.ingest([run])
    assert any("1 duplicate text row" in w for w in rep.warnings)
    assert store.texts(1, "t", ["0"])["response"].tolist() == ["B"]


def test_empty_ingest_is_a_no_op(store):
    before = store_fingerprint(store)
    rep = store.ingest([])
    assert rep.runs.empty and not rep.already_present
    assert store_fingerprint(store) == before


def test_bulk_insert_does_not_go_row_by_row(store, monkeypatch):
    """100,000 score rows arrive through Arrow scans: well under a second of store work."""
    import time
    n = 100_000
    run = make_run("big", scores=[0.0], texts=False)
    run.scores = pd.DataFrame({"task": "t", "metric": "acc", "item_id": [str(i) for i in range(n)],
                               "answer_idx": 0, "score": np.tile([0.0, 1.0], n // 2),
                               "cluster": None, "item_hash": None, "prompt_hash": None},
                              columns=list(SCORE_COLUMNS))
    t0 = time.perf_counter()
    store.ingest([run])
    assert time.perf_counter() - t0 < 5.0
    cs = store.cell_stats().iloc[0]
    assert cs["n"] == n and cs["sum"] == n / 2


def test_tasks_lists_cells_with_their_summary_and_summaries_without_cells(store):
    """Store.tasks(): a cell row (has_items, its summary's is_group), a summary without
    cells (has_items False, n from the summary, no k_max/binary, no clusters), for all runs
    and for a subset of runs alike."""
    first = make_run("a", scores=[1, 0, 1, 1], answers=2,
                     summaries=[summary("t", "acc", 0.75, 0.2, 4),
                                summary("grp", "acc", 0.6, 0.1, 30, is_group=True),
                                summary("u", "f1", 0.4, None, None)])
    second = make_run("b", task="s", scores=[0, 1], n_choices=None)
    store.ingest([first, second])
    tasks = store.tasks()
    assert list(zip(tasks["run_id"], tasks["task"], tasks["metric"])) == [
        (1, "grp", "acc"), (1, "t", "acc"), (1, "u", "f1"), (2, "s", "acc")]
    by = tasks.set_index(["run_id", "task"])
    cell, group, lone, other = (by.loc[k] for k in ((1, "t"), (1, "grp"), (1, "u"), (2, "s")))
    assert cell["has_items"] and cell["n_items"] == 4 and cell["k_max"] == 2
    assert not cell["is_group"] and cell["binary"] and cell["n_choices"] == 4
    assert not group["has_items"] and group["is_group"] and group["n_items"] == 30
    assert pd.isna(group["k_max"]) and pd.isna(group["binary"]) and not group["has_cluster"]
    assert not lone["has_items"] and pd.isna(lone["n_items"]) and not lone["is_group"]
    assert other["has_items"] and not other["is_group"] and pd.isna(other["n_choices"])
    for ids in ([1], [2], [1, 2], [7]):
        store.forget()       # read for these runs (not served from the all-runs memo)
        want = tasks[tasks["run_id"].isin(ids)].reset_index(drop=True)
        # a column without a NULL in the subset reads as a plain numpy dtype
        pd.testing.assert_frame_equal(store.tasks(ids), want, check_dtype=False)
