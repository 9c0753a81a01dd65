"""The History section of the Upload & runs page (ui/history.py): the changes listed with
their author, the undo of a delete and the restore of any deleted run, with the numbers the
run had before."""

from __future__ import annotations

import numpy as np

from evalcore.access import Actor, Role
from evalcore.analysis import leaderboard
from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import no_exception, page, store_file, texts


def _cells(store: Store):
    return leaderboard(store, n_resamples=100).cells.sort_values("run_id").reset_index(drop=True)


def test_delete_then_undo_restores_the_same_numbers(tmp_path):
    store = Store(store_file(tmp_path))
    store.ingest([parsed_run("first", {("t", "acc"): np.array([1, 0, 1, 1, 0.])}),
                  parsed_run("second", {("t", "acc"): np.array([0, 0, 1, 0, 0.])})],
                 actor=Actor("alice", Role.UPLOADER, "alice@lab.org"))
    before = _cells(store)
    at = page("upload").run()
    history = next(d.value for d in at.dataframe if "who" in d.value.columns)
    assert list(history["who"]) == ["alice"] and list(history["what"]) == ["ingest"]
    at.selectbox(key="up_target").set_value("first").run()
    at.button(key="up_delete").click().run()
    at.button(key="up_confirm_yes").click().run()
    no_exception(at)
    assert list(Store(store_file(tmp_path)).runs()["name"]) == ["second"]
    undo = at.button(key="up_undo_btn")
    assert "first" in undo.label
    undo.click().run()
    no_exception(at)
    assert any("Restored first" in t for t in texts(at.success))
    after = _cells(Store(store_file(tmp_path)))
    assert after[["run", "score", "se", "low", "high"]].equals(
        before[["run", "score", "se", "low", "high"]])
    history = next(d.value for d in at.dataframe if "who" in d.value.columns)
    assert list(history["what"]) == ["restore", "delete", "ingest"]


def test_restore_after_deleting_the_last_run(tmp_path):
    store = Store(store_file(tmp_path))
    store.ingest([parsed_run("only", {("t", "acc"): np.ones(4)})])
    store.delete_run("only")
    at = page("upload").run()
    assert any("The store is empty" in t for t in texts(at.info))
    at.button(key="up_restore_btn").click().run()
    no_exception(at)
    assert list(Store(store_file(tmp_path)).runs()["name"]) == ["only"]
