"""The write path's file discipline: one ingest call adds at most one Parquet file per table
(however many runs it holds), and the automatic merge keeps each table's file count bounded
over many small ingests without rewriting big files."""

from __future__ import annotations

import pytest

from evalcore.store import Store, maintain

from .conftest import make_run


def _counts(store: Store) -> dict[str, int]:
    return {t: n for t, (n, _) in store.file_counts().items()}


def test_one_ingest_call_adds_at_most_one_file_per_table(store):
    store.ingest([make_run("first", files=["first"])])
    before = _counts(store)
    runs = [make_run(f"r{i}", files=[f"f{i}"], scores=[1.0, 0.0, float(i % 2)],
                     summaries=[{"task": "t", "metric": "acc", "value": 0.5, "stderr": 0.1}],
                     extra_cells=[("u", "f1", [0.25, 0.5])])
            for i in range(12)]
    report = store.ingest(runs)
    assert (report.runs["status"] == "added").all() and len(report.runs) == 12
    after = _counts(store)
    for table, n in after.items():
        # meta: the UPDATE of its counters may replace one file (delete + rewrite)
        assert n - before.get(table, 0) <= (2 if table == "meta" else 1), (table, before, after)
    assert after["scores"] == before["scores"] + 1
    assert set(store.runs()["name"]) == {"first"} | {f"r{i}" for i in range(12)}


def test_two_halves_of_a_run_in_one_call_merge_and_write_one_file_per_table(store):
    a = make_run("half", files=["a"], source_key="k", task="t", texts=True)
    b = make_run("half", files=["b"], source_key="k", task="u", texts=True)
    before = _counts(store)
    report = store.ingest([a, b])
    assert report.runs["status"].tolist() == ["added", "merged"]
    assert store.runs()["name"].tolist() == ["half"]
    assert sorted(set(store.tasks()["task"])) == ["t", "u"]
    after = _counts(store)
    assert all(after[t] - before.get(t, 0) <= 1 for t in after if t != "meta")


def test_file_count_stays_bounded_over_many_one_run_ingests(store, monkeypatch):
    """200 one-run ingests: every table stays under (levels x fanout) files. (Fanout 4 here,
    so the levels fill faster than with the default 8. Local catalog only: the policy is the
    same code on PostgreSQL, which test_one_ingest_call... covers, and 200 ingests take
    a minute.)"""
    if store.kind != "local":
        pytest.skip("200 ingests: run on the local catalog only")
    monkeypatch.setattr(maintain, "MERGE_FANOUT", 4)
    n_levels = len(maintain.MERGE_LEVELS) - 1
    worst = 0
    for i in range(200):
        store.ingest([make_run(f"r{i}", files=[f"f{i}"], scores=[float(i % 2), 1.0],
                               texts=False, n_choices=None)])
        counts = _counts(store)
        worst = max(worst, max(counts.values()))
        assert max(counts.values()) <= n_levels * (4 - 1) + 1, (i, counts)
    assert worst >= 3          # files did accumulate between merges
    assert len(store.runs()) == 200
    assert store.cell_stats()["n"].sum() == 400
