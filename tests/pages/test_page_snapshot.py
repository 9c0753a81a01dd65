"""A page that only reads sees one store snapshot for its whole run (app.py wraps it in
``ui.common.page_snapshot``); the upload page, which writes, is not pinned, so it sees its
own writes."""

from __future__ import annotations

import os

from evalcore.store import Store

from tests.pages.conftest import app, no_exception


def test_a_reading_page_runs_in_one_snapshot(toy_store, monkeypatch):
    """Another process writes right after the page's first read: every later read of the
    page run (its analysis pins blocks of its own) still sees the first snapshot."""
    from tests.pages.builders import parsed_run
    version = toy_store.version()
    writer = Store(os.environ["EVALBARS_STORE"])
    seen: list = []
    real_runs, real_cells = Store.runs, Store.cell_stats

    def runs(self, *args, **kwargs):
        seen.append(self._pinned_version())
        if len(seen) == 1:
            writer.ingest([parsed_run("written-meanwhile", {("gen", "acc"): [1.0, 0.0, 1.0]})])
        return real_runs(self, *args, **kwargs)

    def cell_stats(self, *args, **kwargs):
        seen.append(self._pinned_version())
        return real_cells(self, *args, **kwargs)
    monkeypatch.setattr(Store, "runs", runs)
    monkeypatch.setattr(Store, "cell_stats", cell_stats)
    at = app().run()                                  # the default page: the leaderboard
    no_exception(at)
    assert writer.version() != version
    assert len(seen) >= 2 and all(v == version for v in seen), (seen, version)
    board = next(d.value for d in at.dataframe if "Run" in d.value.columns)
    assert "written-meanwhile" not in set(board["Run"])


def test_the_upload_page_is_not_pinned(toy_store, monkeypatch):
    """(Its own reads may pin themselves, as ``runs_and_tasks`` does; the page as a whole is
    not wrapped, so the runs table after an upload shows the runs just stored.)"""
    import contextlib

    from ui import common
    entered: list[str] = []

    @contextlib.contextmanager
    def recording():
        entered.append("pinned")
        yield
    monkeypatch.setattr(common, "page_snapshot", recording)
    at = app()
    at.switch_page("pages/upload.py")
    at.run()
    no_exception(at)
    assert entered == []
    at.switch_page("pages/leaderboard.py")
    at.run()
    no_exception(at)
    assert entered == ["pinned"]
