"""Files that hold several runs: a tidy table with several models stores
every model as its own run with all its scores; ingesting it again changes nothing; a later
table that adds a model adds just that model. Also: the upgrade (by ``migrate``) of a version-1
single-file store, whose ``files`` table was keyed on the file's sha256 alone."""

from __future__ import annotations

import duckdb
import pandas as pd

from evalcore.ingest import parse_uploads
from evalcore.store import Store, migrate

from .conftest import export_legacy, make_run, store_fingerprint

TABLE = ("model,task,item_id,score\n"
         "gpt-x,arc,q1,1\ngpt-x,arc,q2,0\ngpt-x,arc,q3,1\n"
         "gpt-y,arc,q1,0\ngpt-y,arc,q2,1\n"
         "gpt-z,arc,q1,1\ngpt-z,boolq,b1,0\n")


def item_scores(store: Store, name: str) -> dict[tuple[str, str], float]:
    runs = store.runs()
    rid = int(runs.loc[runs["name"] == name, "run_id"].iloc[0])
    s = store.scores([rid])
    return {(t, i): float(v) for t, i, v in zip(s["task"], s["item_id"], s["score"])}


def test_every_model_of_a_table_becomes_its_own_run(store):
    report = store.ingest(parse_uploads([("scores.csv", TABLE.encode())]))
    assert report.runs["status"].tolist() == ["added"] * 3
    assert not report.already_present
    assert sorted(store.runs()["name"]) == ["gpt-x", "gpt-y", "gpt-z"]
    assert item_scores(store, "gpt-x") == {("arc", "q1"): 1.0, ("arc", "q2"): 0.0,
                                           ("arc", "q3"): 1.0}
    assert item_scores(store, "gpt-y") == {("arc", "q1"): 0.0, ("arc", "q2"): 1.0}
    assert item_scores(store, "gpt-z") == {("arc", "q1"): 1.0, ("boolq", "b1"): 0.0}
    # every run records the table it came from
    for name in ("gpt-x", "gpt-y", "gpt-z"):
        files = store.run_info(name)["files"]
        assert [f["name"] for f in files] == ["scores.csv"]
        assert files[0]["sha256"] == report_sha(TABLE)


def report_sha(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_same_table_again_changes_nothing(store):
    store.ingest(parse_uploads([("scores.csv", TABLE.encode())]))
    before, version = store_fingerprint(store), store.version()
    again = store.ingest(parse_uploads([("scores.csv", TABLE.encode())]))
    assert again.already_present
    assert again.runs["status"].tolist() == ["already present"] * 3
    assert sorted(again.runs["name"]) == ["gpt-x", "gpt-y", "gpt-z"]
    assert store_fingerprint(store) == before and store.version() == version


def test_the_same_runs_in_another_order_format_or_file_name_are_already_present(store, tmp_path):
    store.ingest(parse_uploads([("scores.csv", TABLE.encode())]))
    df = pd.read_csv(pd.io.common.StringIO(TABLE)).iloc[::-1]
    path = tmp_path / "other_name.parquet"
    df.to_parquet(path)
    again = store.ingest(parse_uploads([(path.name, path.read_bytes())]))
    assert again.already_present and len(store.runs()) == 3


def test_a_later_table_that_adds_a_model_adds_just_that_model(store):
    store.ingest(parse_uploads([("week1.csv", TABLE.encode())]))
    before = {n: item_scores(store, n) for n in ("gpt-x", "gpt-y", "gpt-z")}
    later = TABLE + "gpt-w,arc,q1,1\ngpt-w,arc,q2,1\n"
    report = store.ingest(parse_uploads([("week2.csv", later.encode())]))
    status = dict(zip(report.runs["name"], report.runs["status"]))
    assert status == {"gpt-x": "already present", "gpt-y": "already present",
                      "gpt-z": "already present", "gpt-w": "added"}
    assert not report.already_present
    assert sorted(store.runs()["name"]) == ["gpt-w", "gpt-x", "gpt-y", "gpt-z"]
    assert item_scores(store, "gpt-w") == {("arc", "q1"): 1.0, ("arc", "q2"): 1.0}
    assert {n: item_scores(store, n) for n in before} == before


def test_a_changed_model_is_a_new_run_never_a_silent_overwrite(store):
    store.ingest(parse_uploads([("a.csv", TABLE.encode())]))
    changed = TABLE.replace("gpt-y,arc,q2,1", "gpt-y,arc,q2,0")
    report = store.ingest(parse_uploads([("b.csv", changed.encode())]))
    status = dict(zip(report.runs["name"], report.runs["status"]))
    assert status["gpt-y (2)"] == "added" and status["gpt-x"] == "already present"
    assert any("stored as 'gpt-y (2)'" in w for w in report.warnings)
    assert item_scores(store, "gpt-y") == {("arc", "q1"): 0.0, ("arc", "q2"): 1.0}
    assert item_scores(store, "gpt-y (2)") == {("arc", "q1"): 0.0, ("arc", "q2"): 0.0}


def test_run_column_names_the_runs(store):
    table = "run,model,task,item_id,score\nr1,m,t,1,1\nr2,m,t,1,0\nr3,m,t,1,1\n"
    report = store.ingest(parse_uploads([("runs.csv", table.encode())]))
    assert report.runs["name"].tolist() == ["r1", "r2", "r3"]
    assert report.runs["status"].tolist() == ["added"] * 3
    assert store.ingest(parse_uploads([("runs.csv", table.encode())])).already_present


def _downgrade_to_v1(path) -> None:
    """Rewrite a store's ``files`` table as schema version 1 had it (sha256 primary key)."""
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE TABLE files_v1 (sha256 VARCHAR PRIMARY KEY, run_id INTEGER NOT NULL, "
                    "name VARCHAR NOT NULL, size BIGINT NOT NULL, format VARCHAR NOT NULL, "
                    "added_at TIMESTAMP NOT NULL)")
        con.execute("INSERT INTO files_v1 SELECT sha256, run_id, name, size, format, added_at "
                    "FROM files")
        con.execute("DROP TABLE files")
        con.execute("ALTER TABLE files_v1 RENAME TO files")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def test_a_version_1_store_is_upgraded_by_migrate(tmp_path, store_locations):
    first = store_locations.new("first").open()
    first.ingest([make_run("a", files=["r.json", "s.jsonl"]), make_run("b", files=["t.json"])])
    path = export_legacy(first, tmp_path / "old.duckdb")
    _downgrade_to_v1(path)
    store = store_locations.new("new").open()
    migrate(path, store)
    with store._read() as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
        assert con.execute("SELECT count(*) FROM files WHERE key = sha256").fetchone() == (3,)
    assert store.runs()["name"].tolist() == ["a", "b"]
    again = store.ingest([make_run("a", files=["r.json", "s.jsonl"])])
    assert again.already_present
    report = store.ingest(parse_uploads([("t.csv", TABLE.encode())]))
    assert report.runs["status"].tolist() == ["added"] * 3


def test_upgrading_a_version_1_store_recovers_the_models_it_lost(tmp_path, store_locations):
    """A version-1 store kept only the first model of a table (the others were "already
    present" by the file's hash). After the upgrade, ingesting the table again finds that
    model already present and adds the lost ones, without a duplicate."""
    first = store_locations.new("first").open()
    [x, y, z] = parse_uploads([("scores.csv", TABLE.encode())])
    x.files[0].run_key = None            # what version 1 wrote: the file's sha256 as key
    first.ingest([x])
    path = export_legacy(first, tmp_path / "old.duckdb")
    _downgrade_to_v1(path)
    store = store_locations.new("new").open()
    migrate(path, store)
    report = store.ingest(parse_uploads([("scores.csv", TABLE.encode())]))
    assert dict(zip(report.runs["name"], report.runs["status"])) == {
        "gpt-x": "already present", "gpt-y": "added", "gpt-z": "added"}
    assert sorted(store.runs()["name"]) == ["gpt-x", "gpt-y", "gpt-z"]
    assert item_scores(store, "gpt-y") == {("arc", "q1"): 0.0, ("arc", "q2"): 1.0}
