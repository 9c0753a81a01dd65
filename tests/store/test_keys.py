"""The integer keys of an ingest call (store/keys.py): byte order of strings against DuckDB's
ORDER BY and Python's bytes order, dictionary codes shared between columns, and the keys a
store assigns: new pairs numbered in (task, text) byte order, stored pairs kept."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from evalcore.store.keys import DENSE, byte_order, encode, groups, rank_of

from .conftest import make_run, sha


def _strings() -> list[list[str]]:
    rng = random.Random(7)
    return [
        ["a", "a\x00", "", "b", "ab", "a\x00\x00", "abcdefg", "abcdefgh", "abcdefg\x00",
         "abcdefgh\x00", "zz", "é", "e", "\U0001f600", "Z"],
        [str(i) for i in range(2000)],                       # "10" < "2"
        [f"arc_challenge_{i % 3}_{i}" for i in range(3000)],  # long common prefixes
        ["x" * k for k in range(30)] + ["x" * k + "y" for k in range(30)],
        [f"{rng.getrandbits(256):064x}" for _ in range(3000)],
        ["".join(rng.choice("ab\x00é") for _ in range(rng.randint(0, 25))) for _ in range(2000)],
    ]


@pytest.mark.parametrize("k", range(6))
def test_byte_order_is_duckdbs_order_by(k):
    values = list(dict.fromkeys(_strings()[k]))
    got = [values[i] for i in byte_order(pa.array(values, pa.large_string()))]
    assert got == sorted(values, key=lambda s: s.encode())
    con = duckdb.connect()
    con.register("v", pa.table({"s": pa.array(values)}))
    assert got == [s for (s,) in con.execute("SELECT s FROM v ORDER BY s").fetchall()]
    assert [values[i] for i in byte_order(pa.array(values, pa.string()))] == got


def test_byte_order_of_a_slice_and_of_tiny_inputs():
    arr = pa.array(["zz", "b", "a", "c", "zz"]).slice(1, 3)
    assert list(byte_order(arr)) == [1, 0, 2]
    assert list(byte_order(pa.array([], pa.string()))) == []
    assert list(byte_order(pa.array(["only"]))) == [0]
    assert list(byte_order(pa.array(["", "a"]))) == [0, 1]
    order = byte_order(pa.array(["b", "c", "a"]))
    assert list(rank_of(order)) == [1, 2, 0]


@pytest.mark.parametrize("span", [1, 50, 1000, 1000 * DENSE, 1000 * DENSE + 1, 10 ** 9])
def test_groups_is_np_unique_with_the_inverse_on_both_paths(span):
    rng = np.random.default_rng(span)
    key = rng.integers(0, span, size=1000)
    key[:3] = span - 1   # the range's last key, repeated
    uniq, index = groups(key, span)
    want, inv = np.unique(key, return_inverse=True)
    assert np.array_equal(uniq, want) and np.array_equal(index, inv.reshape(-1))
    assert np.array_equal(uniq[index], key)
    empty, none = groups(np.zeros(0, np.int64), 0)
    assert empty.size == 0 and none.size == 0


def test_encode_shares_one_dictionary_and_hashes_a_recurring_chunk_once():
    x = pa.array(["b", "a", None])
    y = pa.array(["c", "b"])
    codes, dictionary = encode([pa.chunked_array([x, y, x]), pa.chunked_array([y]),
                                x.slice(1)])
    words = dictionary.to_pylist()
    back = [[None if c < 0 else words[c] for c in col] for col in codes]
    assert back == [["b", "a", None, "c", "b", "b", "a", None], ["c", "b"], ["a", None]]
    assert sorted(words) == ["a", "b", "c"]
    empty, d = encode([pa.chunked_array([], pa.string())])
    assert [len(c) for c in empty] == [0] and len(d) == 0


def _tricky_run(name: str, ids: list[str], hashes: list[str]):
    return make_run(name, files=[name], scores=[float(i % 2) for i in range(len(ids))],
                    item_ids=ids, answers=2, item_hashes=hashes,
                    prompt_hashes=[h.upper() for h in hashes],
                    clusters=[f"c{i % 3}" for i in range(len(ids))])


def test_new_keys_follow_task_then_text_byte_order_and_stored_keys_stay(store):
    ids = ["10", "2", "é", "e", "a\x00", "a", "arc_challenge_0001", "arc_challenge_0000"]
    hashes = [sha(i) for i in ids]
    first = _tricky_run("a", ids, hashes)
    store.ingest([first])
    with store._read() as con:
        items = con.execute("SELECT item, task, item_id FROM items ORDER BY item").fetchall()
        labels = con.execute("SELECT label, task, value FROM labels ORDER BY label").fetchall()
    assert [i for _, _, i in items] == sorted(ids, key=lambda s: s.encode())
    assert [k for k, _, _ in items] == list(range(1, len(ids) + 1))
    values = {f"c{i}" for i in range(3)} | set(hashes) | {h.upper() for h in hashes}
    assert [v for _, _, v in labels] == sorted(values, key=lambda s: s.encode())
    # a second call: stored pairs keep their keys, new ones continue the counters in order
    more = ids[:3] + ["1", "zz"]
    store.ingest([_tricky_run("b", more, [sha(i) for i in more])])
    with store._read() as con:
        items2 = con.execute("SELECT item, task, item_id FROM items ORDER BY item").fetchall()
        n_labels = con.execute("SELECT count(*), count(DISTINCT label), "
                               "count(DISTINCT (task, value)) FROM labels").fetchone()
        rows = con.execute("SELECT s.run_id, i.item_id, s.answer_idx, lc.value, li.value, "
                           "lp.value FROM scores s JOIN items i ON i.item = s.item "
                           "LEFT JOIN labels lc ON lc.label = s.cluster "
                           "JOIN labels li ON li.label = s.item_hash "
                           "JOIN labels lp ON lp.label = s.prompt_hash").fetchall()
    assert items2[:len(ids)] == items
    assert [i for _, _, i in items2[len(ids):]] == ["1", "zz"]
    assert n_labels[0] == n_labels[1] == n_labels[2] == len(values) + 4
    # every score row points at its own strings
    want = set()
    for run_id, idl in ((1, ids), (2, more)):
        for n, i in enumerate(idl):
            for a in range(2):
                want.add((run_id, i, a, f"c{n % 3}", sha(i), sha(i).upper()))
    assert set(rows) == want and len(rows) == len(want)


def test_scores_and_texts_are_written_in_key_order(store):
    ids = [str(i) for i in range(12)]
    store.ingest([make_run("a", files=["a"], scores=[1.0] * 12, item_ids=ids[::-1],
                           extra_cells=[("s", "acc", [0.0] * 3)])])
    with store._read() as con:
        s = con.execute("SELECT task, metric, item FROM scores").fetchall()
        t = con.execute("SELECT task, item, answer_idx FROM texts").fetchall()
    assert s == sorted(s) and len(s) == 15
    assert t == sorted(t) and len(t) == 12


def test_texts_of_two_halves_keep_the_first_row_and_a_merge_adds_only_new_ones(store):
    a = make_run("a", files=["a1"], source_key="k", scores=[1, 0, 1])
    b = make_run("a", files=["a2"], source_key="k", scores=[1, 0, 1, 1], metric="acc_norm")
    b.texts.loc[:, "prompt"] = "second"
    store.ingest([a, b])
    with store._read() as con:
        rows = con.execute("SELECT i.item_id, t.prompt FROM texts t JOIN items i "
                           "ON i.item = t.item ORDER BY i.item_id").fetchall()
    assert rows == [("0", "Question 0?"), ("1", "Question 1?"), ("2", "Question 2?"),
                    ("3", "second")]
    c = make_run("a", files=["a3"], source_key="k", scores=[1] * 5, metric="f1")
    c.texts.loc[:, "prompt"] = "third"
    store.ingest([c])
    with store._read() as con:
        rows = con.execute("SELECT i.item_id, t.prompt FROM texts t JOIN items i "
                           "ON i.item = t.item ORDER BY i.item_id").fetchall()
    assert rows[:4] == [("0", "Question 0?"), ("1", "Question 1?"), ("2", "Question 2?"),
                        ("3", "second")]
    assert rows[4:] == [("4", "third")]


def test_many_rows_of_the_real_shape_are_keyed_like_sql(store):
    """A run of 3 tasks x 2 metrics x 3,000 items with hashes shared between the metrics'
    rows (the lm_eval parser's shape): keys and stored strings agree with a SQL join."""
    import pandas as pd

    from evalcore.model import SCORE_COLUMNS
    rng = np.random.default_rng(3)
    n = 3000
    parts = []
    for t in ("task_b", "task_a", "task_c"):
        ids = pa.array([str(i) for i in rng.permutation(n)], pa.large_string())
        ih = pa.array([f"{t}{i:060x}" for i in range(n)], pa.large_string())
        for m in ("acc", "acc_norm"):
            parts.append(pd.DataFrame({
                "task": pd.Series([t] * n, dtype="str"), "metric": pd.Series([m] * n, dtype="str"),
                "item_id": pd.Series(ids, dtype="str"), "answer_idx": np.zeros(n, dtype=np.int64),
                "score": rng.integers(0, 2, n).astype(float),
                "cluster": pd.Series([None] * n, dtype="str"),
                "item_hash": pd.Series(ih, dtype="str"), "prompt_hash": pd.Series(ih, dtype="str")}))
    run = make_run("big", files=["big"])
    run.scores = pd.concat(parts, ignore_index=True)[list(SCORE_COLUMNS)]
    run.texts = run.texts.iloc[0:0]
    store.ingest([run])
    with store._read() as con:
        items = con.execute("SELECT task, item_id FROM items ORDER BY item").fetchall()
        got = con.execute("SELECT l.task, i.item_id, s.metric, s.score, l.value FROM scores s "
                          "JOIN items i ON i.item = s.item JOIN labels l ON l.label = s.item_hash "
                          "ORDER BY 1, 2, 3").fetchall()
    assert items == sorted(items, key=lambda r: (r[0].encode(), r[1].encode()))
    want = sorted(zip(run.scores["task"], run.scores["item_id"], run.scores["metric"],
                      run.scores["score"], run.scores["item_hash"]))
    assert got == want
