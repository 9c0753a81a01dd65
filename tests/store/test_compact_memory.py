"""The automatic merge after an ingest (``maintain.compact``) sorts the merged files' rows
with DuckDB's memory limit lowered to ``MERGE_MEMORY_LIMIT`` (so the sort spills instead of
growing with the table: a second 5.55M-row tidy table into one store peaked at 1.70 GB
before, 0.91 GB with the limit, bench/README.md), and resets it to DuckDB's default afterwards, also
when the merge fails."""

from __future__ import annotations

import pytest

from evalcore.errors import StoreError
from evalcore.store import maintain

from .conftest import make_run


def _limit(store) -> str:
    cur = store._cursor()
    try:
        return str(cur.execute("SELECT current_setting('memory_limit')").fetchone()[0])
    finally:
        cur.close()


def _fill(store, k: int) -> None:
    for i in range(k):
        store.ingest([make_run(f"r{i}", model=f"m{i}", files=[f"f{i}.json"],
                               scores=[float((i + j) % 2) for j in range(20)])])


def test_merge_runs_under_the_lowered_limit_and_restores_it(store, monkeypatch):
    before = _limit(store)
    seen: list[str] = []
    write = type(store)._write

    def spy(self, body, action, *args, **kwargs):
        if action.startswith("merging"):
            seen.append(_limit(self))
        return write(self, body, action, *args, **kwargs)

    monkeypatch.setattr(type(store), "_write", spy)
    monkeypatch.setattr(maintain, "MERGE_FANOUT", 3)
    _fill(store, 3)
    assert seen, "no merge ran"
    assert all(s.replace(" ", "") in ("128.0MiB", "122.0MiB") for s in seen), seen
    assert _limit(store) == before
    assert store.file_counts()["scores"][0] == 1


def test_limit_restored_after_a_failed_merge(store, monkeypatch):
    _fill(store, 2)
    before = _limit(store)
    paths = [p for p, _ in store._live_files()["scores"]]

    def boom(self, body, action, *args, **kwargs):
        raise StoreError("disk on fire")

    monkeypatch.setattr(type(store), "_write", boom)
    with pytest.raises(StoreError):
        store._rewrite_files("scores", paths)
    assert _limit(store) == before


@pytest.mark.parametrize("bad", ["128MB'; DROP TABLE runs; --", "lots", ""])
def test_a_limit_that_is_not_a_size_never_reaches_sql(store, bad):
    with pytest.raises(StoreError, match="expected a size"):
        with store._memory_limit(bad):
            pass
