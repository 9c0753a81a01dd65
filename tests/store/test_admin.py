"""rename_run, set_tags, delete_run: one transaction each, clear errors."""

from __future__ import annotations

import pytest

from evalcore.errors import StoreError

from .conftest import make_run, store_fingerprint, summary


@pytest.fixture
def two(store):
    store.ingest([make_run("a", files=["a"], summaries=[summary("t", "acc", 2 / 3, 0.33, 3)]),
                  make_run("b", files=["b"])])
    return store


def test_rename(two):
    two.rename_run("a", "alpha")
    assert two.runs()["name"].tolist() == ["alpha", "b"]
    assert two.resolve_run("alpha") == 1
    before = store_fingerprint(two)
    two.rename_run(1, "alpha")                         # same name: nothing to do
    assert store_fingerprint(two) == before
    with pytest.raises(StoreError, match="already named 'b'"):
        two.rename_run("alpha", "b")
    with pytest.raises(StoreError, match="cannot be empty"):
        two.rename_run("alpha", "  ")
    assert store_fingerprint(two) == before


def test_set_tags(two):
    two.set_tags("b", [" demo ", "demo", "", "baseline"])
    runs = two.runs().set_index("name")
    assert runs.loc["b", "tags"] == ["demo", "baseline"] and runs.loc["a", "tags"] == []
    two.set_tags(2, [])
    assert two.runs().set_index("name").loc["b", "tags"] == []


def test_delete_removes_everything_the_run_owns(two):
    two.delete_run("a")
    assert two.runs()["name"].tolist() == ["b"]
    assert two.scores([1]).empty and two.summaries([1]).empty and two.cell_stats([1]).empty
    assert two.texts(1, "t", ["0"]).empty and two.task_protocols(1).empty
    assert len(two.scores([2])) == 3
    # its file is forgotten too: uploading it again adds the run anew, with a new id
    rep = two.ingest([make_run("a", files=["a"])])
    assert rep.runs["status"].tolist() == ["added"] and rep.runs["run_id"].tolist() == [3]


def test_unknown_run_is_a_clear_error_and_changes_nothing(two):
    before = store_fingerprint(two)
    for op in (lambda: two.delete_run("zzz"), lambda: two.set_tags("zzz", ["x"]),
               lambda: two.rename_run("zzz", "y"), lambda: two.run_info("zzz")):
        with pytest.raises(StoreError, match="known runs: 'a' \\(id 1\\), 'b' \\(id 2\\)"):
            op()
    assert store_fingerprint(two) == before
