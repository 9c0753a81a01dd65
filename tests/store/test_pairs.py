"""Two-run reads on integer keys (store/pairs.py): paired_items agrees with the SQL join of
paired_item_means_tasks (the SQL oracle in tests/sql_reference.py) item by item, first_texts
reads the first answer's texts and the ids of the asked items only, answer_texts the first
answers of every item (the Items page's picks), label_texts, answer_matrix, scored_item_ids,
the per-snapshot memo and Store.one_version."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests import sql_reference

from .conftest import count_reads, make_run, sha


def _two_runs(store):
    a_ids = ["0", "1", "2", "3", "4", "5", "10"]
    b_ids = ["2", "3", "4", "5", "10", "6", "7"]
    b_prompt = [sha(f"p{i}") if i != "3" else sha("another template") for i in b_ids]
    b_item = [sha(f"doc{i}") if i != "4" else sha("edited doc") for i in b_ids]
    store.ingest([
        make_run("A", item_ids=a_ids, scores=[1, 0, 1, 1, 0, 1, 0], files=["a"], answers=2,
                 clusters=["g1", "g1", "g2", "g2", None, "g3", "g3"],
                 extra_cells=[("u", "acc", [0.5, 0.25])]),
        make_run("B", item_ids=b_ids, scores=[0, 1, 1, 0, 1, 1, 0], files=["b"],
                 prompt_hashes=b_prompt, item_hashes=b_item,
                 clusters=["x", "x", "y", "y", "y", "z", "z"],
                 extra_cells=[("u", "acc", [1.0, 0.0, 1.0])]),
    ])


def test_paired_items_agree_with_the_sql_join(store):
    """Every item either run has, on both cells: scores (NaN where missing), the cluster
    (run A's, else B's) and the hash check are those of paired_item_means_tasks."""
    _two_runs(store)
    got = store.paired_items(1, 2, [("t", "acc", "acc"), ("u", "acc", "acc")])
    ref = sql_reference.paired_item_means_tasks(store, 1, 2, [("t", "acc"), ("u", "acc")])
    assert [p.task for p in got] == ["t", "u"]
    for p in got:
        assert np.all(np.diff(p.items) > 0)
        ids = store.item_labels(p.task, p.items)
        r = ref[ref["task"] == p.task].set_index("item_id").loc[ids]
        np.testing.assert_array_equal(p.score_a, r["score_a"].to_numpy(float))
        np.testing.assert_array_equal(p.score_b, r["score_b"].to_numpy(float))
        np.testing.assert_array_equal(p.hash_match, r["hash_match"].to_numpy(bool))
        # equal cluster keys <=> equal cluster labels; -1 <=> no label
        labels = r["cluster"].where(r["cluster"].notna(), None).tolist()
        assert [lab is None for lab in labels] == (p.cluster < 0).tolist()
        for i in range(len(ids)):
            for j in range(len(ids)):
                if labels[i] is not None and labels[j] is not None:
                    assert (labels[i] == labels[j]) == (p.cluster[i] == p.cluster[j])
    t = got[0]
    named = dict(zip(store.item_labels("t", t.items), range(t.items.size)))
    assert np.isnan(t.score_b[named["0"]]) and np.isnan(t.score_a[named["7"]])
    assert not t.hash_match[named["3"]] and not t.hash_match[named["4"]]
    assert t.shared.sum() == 5
    # item 4 has no cluster in run A: run B's label ("y", no other coalesced item has it)
    others = np.delete(t.cluster, named["4"])
    assert t.cluster[named["4"]] >= 0 and t.cluster[named["4"]] not in others
    assert not t.score_a.flags.writeable    # memoized arrays are read-only


def test_paired_items_average_answers_and_pair_metric_variants(store):
    run = make_run("A", scores=[1, 0, 1], answers=3, extra_cells=[("t", "acc_norm", [1, 1, 0])])
    run.scores.loc[(run.scores["metric"] == "acc") & (run.scores["item_id"] == "0")
                   & (run.scores["answer_idx"] == 2), "score"] = 0.0
    store.ingest([run])
    p = store.paired_items(1, 1, [("t", "acc", "acc_norm")])[0]
    assert store.item_labels("t", p.items) == ["0", "1", "2"]
    np.testing.assert_allclose(p.score_a, [2 / 3, 0.0, 1.0])
    np.testing.assert_array_equal(p.score_b, [1.0, 1.0, 0.0])
    same = store.paired_items(1, 1, [("t", "acc", "acc")])[0]
    np.testing.assert_array_equal(same.score_a, same.score_b)
    assert store.paired_items(1, 1, []) == []
    none = store.paired_items(1, 1, [("missing", "acc", "acc")])[0]
    assert none.items.size == 0 and none.score_a.size == 0


def test_paired_items_memo_sees_writes(store, store_location):
    store.ingest([make_run("A", scores=[1, 0, 1], files=["a"])])
    store.ingest([make_run("B", scores=[1, 1, 1], files=["b"])])
    first = store.paired_items(1, 2, [("t", "acc", "acc")])[0]
    assert store.paired_items(1, 2, [("t", "acc", "acc")])[0] is first    # memo hit
    store_location.open().delete_run("B")
    store.ingest([make_run("B", scores=[0, 0, 0], files=["b2"])])
    rid = int(store.resolve_run("B"))
    again = store.paired_items(1, rid, [("t", "acc", "acc")])[0]
    np.testing.assert_array_equal(again.score_b, [0.0, 0.0, 0.0])


def test_first_texts_reads_first_answers_and_ids_of_asked_items(store):
    run_a = make_run("A", item_ids=["2", "10", "1"], scores=[1, 0, 1], files=["a"])
    extra = run_a.texts.iloc[[0]].assign(answer_idx=1, response="later")
    run_a.texts = run_a.texts.assign(response=["r2", "r10", "r1"])
    run_a.texts = pd.concat([run_a.texts, extra], ignore_index=True)
    run_b = make_run("B", item_ids=["2", "10", "1"], scores=[1, 1, 1], files=["b"], texts=False)
    store.ingest([run_a, run_b])
    p = store.paired_items(1, 2, [("t", "acc", "acc")])[0]
    keys = dict(zip(store.item_labels("t", p.items), p.items.tolist()))
    t = store.first_texts([1, 2], "t", [keys["2"], keys["10"]])
    assert set(t["item_id"]) == {"2", "10"}
    by = t.set_index("item_id")
    assert by.loc["2", "response"] == "r2" and by.loc["2", "run_id"] == 1
    assert by.loc["10", "prompt"] == "Question 10?"
    only_b = store.first_texts([2], "t", [keys["1"]])
    assert only_b["run_id"].tolist() == [-1] and only_b["item_id"].tolist() == ["1"]
    assert only_b["prompt"].tolist() == [None]
    assert store.first_texts([1], "t", []).empty


def test_answer_texts_first_answers_and_first_prompt_and_target_by_run(store):
    """answer_texts: every run's first answer (answer_idx 0) on integer keys, and per item
    the first prompt and target that are not missing, in run-id order."""
    run_a = make_run("A", item_ids=["2", "10", "1"], scores=[1, 0, 1], files=["a"])
    extra = run_a.texts.iloc[[0]].assign(answer_idx=1, response="later")
    run_a.texts = run_a.texts.assign(response=["r2", "r10", None], target=[None, "T10", "T1"],
                                     prompt=[None, "P10 A", "P1 A"])
    run_a.texts = pd.concat([run_a.texts, extra], ignore_index=True)
    run_b = make_run("B", item_ids=["2", "10", "7"], scores=[1, 1, 1], files=["b"])
    run_b.texts = run_b.texts.assign(response=["s2", "s10", "s7"], target=["U2", "U10", "U7"],
                                     prompt=["P2 B", "P10 B", "P7 B"])
    store.ingest([run_a, run_b])
    answers, firsts = store.answer_texts([1, 2], "t")
    got = sorted(zip(answers.column("run_id").to_pylist(), answers.column("response").to_pylist(),
                     answers.column("target").to_pylist()), key=str)
    assert got == sorted([(1, "r2", None), (1, "r10", "T10"), (1, None, "T1"),
                          (2, "s2", "U2"), (2, "s10", "U10"), (2, "s7", "U7")], key=str)
    by = firsts.set_index("item_id")
    assert sorted(by.index) == ["1", "10", "2", "7"]
    assert by.loc["2", "prompt"] == "P2 B" and by.loc["2", "target"] == "U2"   # A's are missing
    assert by.loc["10", "prompt"] == "P10 A" and by.loc["10", "target"] == "T10"
    keys = dict(zip(firsts["item_id"], firsts["item"]))
    assert sorted(answers.column("item").to_pylist()) == sorted(
        [keys[i] for i in ("2", "10", "1", "2", "10", "7")])
    only_b, firsts_b = store.answer_texts([2], "t")
    assert only_b.num_rows == 3 and sorted(firsts_b["item_id"]) == ["10", "2", "7"]
    none, no_firsts = store.answer_texts([], "t")
    assert none.num_rows == 0 and no_firsts.empty


def test_scored_item_ids_are_the_ids_of_the_runs_keys(store):
    """scored_item_ids: item_labels of answer_matrix's keys (the two reads at once), for a
    run with several answers per item too; [] for a cell the run has no scores for."""
    _two_runs(store)
    for run in (1, 2):
        items, _, _ = store.answer_matrix(run, "t", "acc")
        with store.one_version():
            got = store.scored_item_ids(run, "t", "acc")
        assert got == store.item_labels("t", items)
    assert sorted(store.scored_item_ids(1, "t", "acc"), key=int) == ["0", "1", "2", "3", "4",
                                                                     "5", "10"]
    assert store.scored_item_ids(2, "u", "acc") == ["0", "1", "2"]
    assert store.scored_item_ids(1, "t", "no such metric") == []


def test_label_texts_names_cluster_keys_in_the_given_order(store):
    _two_runs(store)
    a = store.paired_items(1, 1, [("t", "acc", "acc")])[0]
    ids = store.item_labels("t", a.items)
    texts = dict(zip(ids, store.label_texts("t", a.cluster)))
    assert texts == {"0": "g1", "1": "g1", "2": "g2", "3": "g2", "4": None, "5": "g3", "10": "g3"}
    assert store.label_texts("t", list(a.cluster[::-1])) == [texts[i] for i in ids[::-1]]
    assert store.label_texts("t", [-1, -1]) == [None, None]
    assert store.label_texts("u", [int(a.cluster.max())]) == [None]     # another task's key


def test_answer_matrix(store):
    run = make_run("A", scores=[1, 0, 1], answers=2)
    run.scores = run.scores[~((run.scores["item_id"] == "1") & (run.scores["answer_idx"] == 1))]
    store.ingest([run])
    items, answers, x = store.answer_matrix(1, "t", "acc")
    assert store.item_labels("t", items) == ["0", "1", "2"] and answers.tolist() == [0, 1]
    np.testing.assert_array_equal(x, [[1.0, 1.0], [0.0, np.nan], [1.0, 1.0]])
    items, answers, x = store.answer_matrix(1, "t", "nothing")
    assert items.size == 0 and x.shape == (0, 0)


def test_one_version_reads_the_version_once(store, store_location):
    """Inside the block version() answers without a catalog query: a write committed by
    another Store object meanwhile is not seen by version() until the block ends."""
    store.ingest([make_run("a", files=["a"])])
    with store.one_version() as v:
        assert store.version() == v and store.runs()["name"].tolist() == ["a"]
        store_location.open().ingest([make_run("b", files=["b"])])
        with store.one_version() as inner:
            assert inner == v
        assert store.version() == v
    assert store.version() != v
    assert store.runs()["name"].tolist() == ["a", "b"]


def test_one_version_is_per_thread(store):
    import threading
    store.ingest([make_run("a", files=["a"])])
    seen = []
    with store.one_version() as v:
        store.__dict__["_pin"].version = "pinned-here"
        t = threading.Thread(target=lambda: seen.append(store.version()))
        t.start()
        t.join()
        store.__dict__["_pin"].version = v
    assert seen and seen[0] != "pinned-here"


@pytest.mark.parametrize("cell", ["b", "c"])
def test_discordant_items_natural_order_with_texts(store, cell):
    from evalcore import analysis
    ids = ["10", "2", "1", "3"]
    store.ingest([make_run("A", item_ids=ids, scores=[0, 0, 1, 1] if cell == "b" else [1, 1, 0, 0],
                           files=["a"]),
                  make_run("B", item_ids=ids, scores=[1, 1, 1, 1] if cell == "b" else [0, 0, 0, 0],
                           files=["b"], texts=False)])
    d = analysis.discordant_items(store, "A", "B", "t", "acc", cell=cell)
    assert d["item_id"].tolist() == ["2", "10"]
    assert d["prompt"].tolist() == ["Question 2?", "Question 10?"]
    assert d["response_b"].tolist() == [None, None]


def test_forget_drops_every_memo(store, monkeypatch):
    store.ingest([make_run("A", files=["a"]), make_run("B", scores=[0, 0, 1], files=["b"])])
    store.runs()
    first = store.paired_items(1, 2, [("t", "acc", "acc")])[0]
    reads = count_reads(monkeypatch)
    store.runs()
    assert store.paired_items(1, 2, [("t", "acc", "acc")])[0] is first and reads == []
    store.forget()
    store.runs()
    again = store.paired_items(1, 2, [("t", "acc", "acc")])[0]
    assert len(reads) == 2 and again is not first
    np.testing.assert_array_equal(again.score_b, first.score_b)


def test_reused_read_cursors_see_new_snapshots_and_survive_errors(store, store_location):
    """Read cursors are reused within a thread: a reused one sees a write another Store
    object committed after its last statement, and a failed read does not spoil the next."""
    from evalcore.errors import StoreError
    store.ingest([make_run("A", files=["a"])])
    with store._read() as con:
        first = con
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]
    store_location.open().ingest([make_run("B", files=["b"])])
    with store._read() as con:
        assert con is first                                  # reused
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(2,)]
        with store._read() as inner:                         # nested: another cursor
            assert inner is not con
    with pytest.raises(StoreError):
        with store._read() as con:
            con.execute("SELECT * FROM no_such_table")
    with store._read() as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(2,)]
