"""The whole app: first run on an empty store loads the bundled demo and opens on the
leaderboard; every page renders on the demo store without an exception."""

from __future__ import annotations

from evalcore.store import Store
from tests.pages.conftest import app, charts, no_exception, page, store_file, texts


def test_first_run_loads_demo_and_opens_on_leaderboard(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALBARS_DEMO", "1")
    at = app().run()
    no_exception(at)
    runs = Store(store_file(tmp_path)).runs()
    assert len(runs) >= 5
    assert all("demo" in list(t) for t in runs["tags"])
    assert at.title[0].value == "Leaderboard"
    assert any("Demo data" in c for c in texts(at.caption))
    table = at.dataframe[0].value                  # runs are the rows of the scores table
    assert set(table["Run"]) == set(runs["name"]) and len(table) == len(runs)
    assert charts(at)
    at.switch_page("pages/compare.py").run()      # navigation works (every page: below)
    no_exception(at)
    assert at.title[0].value == "Compare two runs"


def test_demo_off_keeps_the_store_empty(tmp_path):
    at = app().run()                          # EVALBARS_DEMO=0 from the autouse fixture
    no_exception(at)
    assert Store(store_file(tmp_path)).runs().empty
    assert any("The store is empty" in t for t in texts(at.info))


def test_demo_protocol_change_is_flagged_before_numbers(demo_store):
    runs = demo_store.runs()
    boreal = sorted(n for n in runs["name"] if n.startswith("demo-org/boreal-8b"))
    assert len(boreal) == 2
    at = page("compare")
    at.query_params["run_a"], at.query_params["run_b"] = boreal
    at.run()
    no_exception(at)
    assert any("not clean" in w for w in texts(at.warning))
    diff = next(d.value for d in at.dataframe if "Setting" in d.value.columns)
    assert any("num_fewshot" in s for s in diff["Setting"])


def test_every_page_on_the_demo_store(demo_store):
    for name in ("leaderboard", "compare", "repeats", "planner", "upload"):
        at = page(name).run()
        no_exception(at)
        assert not at.error, [e.value for e in at.error]
