"""A failed or killed write commits nothing: the catalog's snapshot and every table stay as
they were; reads never change the store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.errors import StoreError
from evalcore.model import SCORE_COLUMNS
from evalcore.store import Store

from .conftest import make_run, store_fingerprint

ROOT = Path(__file__).resolve().parents[2]


def _data_root(store: Store) -> Path:
    """The store's Parquet folder (a local store's data/, a team store's data path)."""
    return Path(store.data_path).resolve()


def _data_files(store: Store) -> set[str]:
    """Parquet files in the store's data folder (relative to it)."""
    root = _data_root(store)
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet")}


def _referenced_files(store: Store) -> set[str]:
    """Data files the current snapshot reads (relative to the data folder)."""
    with store._read() as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE "
                                            "database_name = 'lake'").fetchall()]
        out = set()
        for t in tables:
            for (path,) in con.execute("SELECT data_file FROM ducklake_list_files('lake', ?)",
                                       [t]).fetchall():
                out.add(str(Path(path).resolve().relative_to(_data_root(store))))
    return out


def _big_run(name: str, n: int) -> object:
    run = make_run(name, files=[f"{name}.jsonl"], texts=False)
    run.scores = pd.DataFrame({"task": "t", "metric": "acc", "item_id": np.arange(n).astype(str),
                               "answer_idx": 0, "score": np.tile([0.0, 1.0], n // 2),
                               "cluster": None, "item_hash": None, "prompt_hash": None},
                              columns=list(SCORE_COLUMNS))
    return run


def test_exception_mid_ingest_after_a_bulk_insert_commits_nothing(store, monkeypatch):
    store.ingest([make_run("kept", files=["kept"])])
    before, version = store_fingerprint(store), store.version()
    original = Store._write_runs
    calls = []

    def crash_after_insert(self, con, prepared):
        original(self, con, prepared)  # both runs' rows are inserted ...
        calls.extend(p.name for p in prepared)
        con.execute("SELECT count(*) FROM scores").fetchall()
        raise RuntimeError("simulated crash mid-ingest")  # ... then the ingest dies

    monkeypatch.setattr(Store, "_write_runs", crash_after_insert)
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.ingest([make_run("first", files=["f"]), _big_run("big", 150_000)])
    assert calls == ["first", "big"]
    assert store_fingerprint(store) == before and store.version() == version
    monkeypatch.undo()
    assert store.runs()["name"].tolist() == ["kept"]
    # every file in the data folder that the catalog does not reference is an orphan that
    # maintain removes; the referenced ones are all there
    assert _referenced_files(store) <= _data_files(store)


def test_duplicate_key_is_a_store_error_and_changes_nothing(store, monkeypatch):
    """DuckLake has no UNIQUE constraint: the keys are checked before COMMIT."""
    store.ingest([make_run("taken", files=["a"])])
    before = store_fingerprint(store)
    monkeypatch.setattr(Store, "_unique_name", staticmethod(lambda con, base, exclude_run=None, hint=None, pending=(): "taken"))
    with pytest.raises(StoreError) as err:
        store.ingest([make_run("other", files=["b"])])
    assert "constraint" in str(err.value) and "duplicate run name 'taken'" in str(err.value)
    assert store_fingerprint(store) == before


def test_killed_process_mid_ingest_leaves_the_catalog_unchanged(store):
    store.ingest([make_run("kept", files=["kept"])])
    before = store_fingerprint(store)
    files_before = _data_files(store)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}]
        from evalcore.store import Store
        from tests.store.test_atomic import _big_run
        original = Store._write_runs
        def die(self, con, prepared):
            original(self, con, prepared)
            con.execute("SELECT count(*) FROM scores").fetchall()   # the rows are written out
            os._exit(9)  # no cleanup, no rollback, no close: like a kill -9
        Store._write_runs = die
        Store({store.location!r}).ingest([_big_run("dies", 200_000)])
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    assert store_fingerprint(store) == before
    assert store.runs()["name"].tolist() == ["kept"]
    orphans = _data_files(store) - files_before
    assert orphans            # the dead writer's Parquet files stay behind, unreferenced
    # a later ingest works; maintain with a short orphan age removes what the dead writer left
    store.ingest([make_run("next", files=["next"])])
    report = store.maintain(merge=False, keep_history=timedelta(days=7),
                            orphans_older_than=timedelta(0), allow_short_orphan_age=True)
    assert report.orphans_deleted == len(orphans)
    assert not (orphans & _data_files(store))
    assert store.runs()["name"].tolist() == ["kept", "next"]
    assert _referenced_files(store) <= _data_files(store)


def test_reads_and_reopening_never_change_the_store(store):
    store.ingest([make_run("a", files=["a"], summaries=[]),
                  make_run("b", files=["b"], scores=[1, 1, 0])])
    before = store_fingerprint(store)
    for _ in range(2):
        s = Store(store.location)
        s.runs(); s.tasks(); s.cell_stats(); s.item_means([1, 2]); s.scores([1])
        s.summaries(); s.texts(1, "t", ["0"]); s.task_protocols(1); s.audit()
        s.pairing(1, 2, "t", "acc"); s.protocol_diff(1, 2); s.run_info("a"); s.version()
        s.close()
    assert store_fingerprint(store) == before


def test_a_write_makes_one_snapshot_and_counts_once(store):
    before = store.version()
    counter = store.write_counter()
    store.ingest([make_run("a")])
    assert store.version() != before
    assert store.write_counter() == counter + 1
    again = store.version()
    store.ingest([make_run("a")])            # already present: no snapshot at all
    assert store.version() == again and store.write_counter() == counter + 1
