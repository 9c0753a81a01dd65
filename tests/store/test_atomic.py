"""A failed write leaves the store file byte-for-byte as it was; reads never change it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from evalcore.errors import StoreError
from evalcore.model import SCORE_COLUMNS
from evalcore.store import Store

from .conftest import make_run, store_fingerprint

ROOT = Path(__file__).resolve().parents[2]


def _leftovers(store: Store) -> list[str]:
    return sorted(p.name for p in store.path.parent.iterdir() if ".tmp-" in p.name)


def _big_run(name: str, n: int) -> object:
    run = make_run(name, files=[f"{name}.jsonl"], texts=False)
    run.scores = pd.DataFrame({"task": "t", "metric": "acc", "item_id": np.arange(n).astype(str),
                               "answer_idx": 0, "score": np.tile([0.0, 1.0], n // 2),
                               "cluster": None, "item_hash": None, "prompt_hash": None},
                              columns=list(SCORE_COLUMNS))
    return run


def test_duckdb_alone_would_change_the_file_on_rollback(tmp_path):
    """Why the store writes on a copy: DuckDB 2.0.1 rewrites the file for a rolled-back bulk
    insert (rows beyond one row group are written to the file before COMMIT)."""
    p = tmp_path / "raw.duckdb"
    with duckdb.connect(str(p)) as con:
        con.execute("CREATE TABLE t (a BIGINT, b VARCHAR)")
        con.execute("INSERT INTO t VALUES (1, 'x')")
    before = p.read_bytes()
    with duckdb.connect(str(p)) as con:
        con.execute("BEGIN")
        con.execute("INSERT INTO t SELECT range, 'abc' || range FROM range(1000000)")
        con.execute("ROLLBACK")
    if p.read_bytes() == before:  # a DuckDB that no longer does this: the premise is gone
        pytest.skip(f"duckdb {duckdb.__version__} kept the file unchanged on ROLLBACK")
    assert len(p.read_bytes()) > len(before)   # rolled-back rows were written to the file


def test_exception_mid_ingest_after_a_bulk_insert_leaves_bytes_unchanged(store, monkeypatch):
    store.ingest([make_run("kept", files=["kept"])])
    before, version = store_fingerprint(store.path), store.version()
    original = Store._write_run
    calls = []

    def crash_on_second(self, con, prepared):
        row = original(self, con, prepared)  # the big run's rows are inserted ...
        calls.append(prepared.name)
        if len(calls) == 2:
            raise RuntimeError("simulated crash mid-ingest")  # ... then the ingest dies
        return row

    monkeypatch.setattr(Store, "_write_run", crash_on_second)
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.ingest([make_run("first", files=["f"]), _big_run("big", 150_000)])
    assert calls == ["first", "big"]
    assert store_fingerprint(store.path) == before and store.version() == version
    assert _leftovers(store) == []
    monkeypatch.undo()
    assert store.runs()["name"].tolist() == ["kept"]


def test_constraint_violation_is_a_store_error_and_changes_nothing(store, monkeypatch):
    store.ingest([make_run("taken", files=["a"])])
    before = store_fingerprint(store.path)
    monkeypatch.setattr(Store, "_unique_name", staticmethod(lambda con, base, exclude_run=None, hint=None: "taken"))
    with pytest.raises(StoreError) as err:
        store.ingest([make_run("other", files=["b"])])
    assert "constraint" in str(err.value)
    assert store_fingerprint(store.path) == before
    assert _leftovers(store) == []


def test_killed_process_mid_ingest_leaves_bytes_unchanged(store):
    store.ingest([make_run("kept", files=["kept"])])
    before = store_fingerprint(store.path)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}]
        from evalcore.store import Store
        from tests.store.test_atomic import _big_run
        original = Store._write_run
        def die(self, con, prepared):
            original(self, con, prepared)
            os._exit(9)  # no cleanup, no rollback, no close: like a kill -9
        Store._write_run = die
        Store({str(store.path)!r}).ingest([_big_run("dies", 20_000)])
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    assert store_fingerprint(store.path) == before
    assert len(_leftovers(store)) >= 1          # the dead writer's copy is still there
    store.ingest([make_run("next", files=["next"])])
    assert _leftovers(store) == []              # ... and the next writer removed it
    assert store.runs()["name"].tolist() == ["kept", "next"]


def test_reads_and_reopening_never_change_the_file(store):
    store.ingest([make_run("a", files=["a"], summaries=[]),
                  make_run("b", files=["b"], scores=[1, 1, 0])])
    before = store_fingerprint(store.path)
    for _ in range(2):
        s = Store(store.path)
        s.runs(); s.tasks(); s.cell_stats(); s.item_means([1, 2]); s.scores([1])
        s.summaries(); s.texts(1, "t", ["0"]); s.task_protocols(1); s.audit()
        s.pairing(1, 2, "t", "acc"); s.protocol_diff(1, 2); s.run_info("a"); s.version()
        s.close()
    assert store_fingerprint(store.path) == before


def test_a_write_replaces_the_file_and_leaves_no_wal(store):
    before = store_fingerprint(store.path)
    counter = store.write_counter()
    store.ingest([make_run("a")])
    after = store_fingerprint(store.path)
    assert after[0] != before[0] and after[1] is None and after[2] != before[2]
    assert store.write_counter() == counter + 1
