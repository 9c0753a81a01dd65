"""The DuckLake layout: where a location points, old single-file stores (read-only, then
``migrate``), ``maintain`` and what it does to time travel."""

from __future__ import annotations

import gzip
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from evalcore import cli
from evalcore.errors import StoreError
from evalcore.store import Store, migrate, resolve_location

from .conftest import make_run, store_fingerprint

LEGACY = Path(__file__).parent / "data" / "legacy_v2.duckdb.gz"


@pytest.fixture
def legacy(tmp_path) -> Path:
    """The single-file store written by evalbars before DuckLake (tests/store/data/README.md)."""
    path = tmp_path / "old.duckdb"
    with gzip.open(LEGACY, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- locations -----------------------------------------------------------------------------
def test_locations_resolve_to_the_documented_layouts(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALBARS_STORE", raising=False)
    monkeypatch.delenv("EVALBARS_DATA_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    t = resolve_location()
    assert (t.kind, t.path) == ("local", tmp_path / ".evalbars")
    assert t.attach == f"ducklake:sqlite:{tmp_path / '.evalbars' / 'catalog.sqlite'}"
    assert t.data_path == str(tmp_path / ".evalbars" / "data") + "/"
    t = resolve_location("ducklake:sqlite:cat/x.sqlite")
    assert t.kind == "sqlite" and t.data_path == str(tmp_path / "cat" / "data") + "/"
    url = "ducklake:postgres:dbname=evals host=db.example port=5432 user=me"
    t = resolve_location(url)
    assert (t.kind, t.attach, t.data_path, t.path) == ("postgres", url, None, None)
    monkeypatch.setenv("EVALBARS_DATA_PATH", "s3://bucket/evals")
    assert resolve_location(url).data_path == "s3://bucket/evals/"
    with pytest.raises(StoreError, match="unsupported DuckLake catalog"):
        resolve_location("ducklake:mysql:db=x")
    with pytest.raises(StoreError, match="single-file .* stores can only be read"):
        resolve_location(tmp_path / "new.duckdb")      # no new single-file stores
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match="is a file; expected a store folder"):
        resolve_location(tmp_path / "notes.txt")


def test_a_quote_in_the_folder_name_is_data_not_sql(tmp_path):
    store = Store(tmp_path / "it's a store")
    store.ingest([make_run("a")])
    assert Store(tmp_path / "it's a store").runs()["name"].tolist() == ["a"]


def test_a_moved_store_folder_keeps_working(tmp_path):
    store = Store(tmp_path / "here")
    store.ingest([make_run("a")])
    store.close()
    shutil.move(tmp_path / "here", tmp_path / "there")
    moved = Store(tmp_path / "there")
    assert moved.runs()["name"].tolist() == ["a"] and len(moved.scores([1])) == 3
    moved.ingest([make_run("b", files=["b"])])
    assert not list((tmp_path / "here").glob("**/*.parquet"))


# ---- old single-file stores -------------------------------------------------------------------
def test_an_old_single_file_store_reads_as_before(legacy):
    old = Store(legacy)
    assert old.read_only and old.kind == "legacy"
    runs = old.runs().set_index("name")
    assert runs.loc["alpha", "tags"] == ["x", "y"] and runs.loc["alpha", "n_scores"] == 8
    assert runs.loc["beta", "n_tasks"] == 2
    cells = old.cell_stats([1])
    assert cells["n"].tolist() == [4] and cells["sum"].tolist() == [3.0]
    assert old.summaries([1])["stderr"].tolist() == [0.2]
    assert old.write_counter() == 5 and old.version() == old.version()


def test_writing_to_an_old_store_says_to_migrate(legacy):
    old = Store(legacy)
    before = legacy.read_bytes()
    for write in (lambda: old.ingest([make_run("new", files=["n"])]),
                  lambda: old.rename_run("alpha", "x"), lambda: old.set_tags("alpha", []),
                  lambda: old.delete_run("beta")):
        with pytest.raises(StoreError, match=r"can only be read.*python -m evalcore migrate"):
            write()
    assert legacy.read_bytes() == before


def test_migrate_copies_everything_in_one_transaction(legacy, store_location):
    old = Store(legacy)
    new = store_location.open()
    report = migrate(legacy, new)
    assert (report.n_runs, report.n_scores) == (2, 14)
    for name in ("runs", "tasks", "cell_stats", "summaries", "audit"):
        a, b = getattr(old, name)(), getattr(new, name)()
        if name == "runs":
            a, b = a.drop(columns=["created_at"]), b.drop(columns=["created_at"])
        assert a.to_dict("records") == b.to_dict("records"), name
    assert old.scores([1, 2]).equals(new.scores([1, 2]))
    assert old.texts(1, "t", ["0", "1"]).equals(new.texts(1, "t", ["0", "1"]))
    # the next run gets id 4 (run 3 was deleted in the old store); re-ingest is idempotent
    report = new.ingest([make_run("delta", files=["d.jsonl"])])
    assert report.runs["run_id"].tolist() == [4]
    assert new.ingest([make_run("beta", files=["b.jsonl"], scores=[0, 0, 1, 1])]).already_present
    # a second migration into the now used store is refused and changes nothing
    before = store_fingerprint(new)
    with pytest.raises(StoreError, match="already holds 3 run"):
        migrate(legacy, new)
    assert store_fingerprint(new) == before


def test_migrate_command(capsys, legacy, tmp_path):
    target = tmp_path / "new-store"
    code, out, err = _cli(capsys, "migrate", legacy, "--store", target)
    assert code == 0, err
    assert f"migrated 2 run(s), 14 score row(s) from {legacy}" in out
    code, out, err = _cli(capsys, "--store", target, "runs", "--format", "json")
    assert code == 0 and [r["name"] for r in __import__("json").loads(out)["runs"]] == ["alpha", "beta"]
    code, _, err = _cli(capsys, "migrate", legacy, "--store", target)     # not into a used store
    assert code == 3 and "already holds 2 run(s)" in err
    code, _, err = _cli(capsys, "--store", legacy, "tag", "alpha", "z")  # writes: say how
    assert code == 3 and "python -m evalcore migrate" in err


# ---- maintain --------------------------------------------------------------------------------
def _files(store: Store) -> set[Path]:
    return set(Path(store.data_path).rglob("*.parquet"))


def test_maintain_frees_a_deleted_runs_files_and_ends_time_travel_to_before(store):
    for i in range(4):
        store.ingest([make_run(f"r{i}", files=[f"r{i}"], scores=[1, 0, 1, 1, 0])])
    store.delete_run("r0")
    runs_before = store.runs().drop(columns=["created_at"]).to_dict("records")
    with store._read() as con:
        first = con.execute("SELECT min(snapshot_id) FROM lake.snapshots()").fetchall()[0][0]
        assert con.execute(f"SELECT count(*) FROM lake.runs AT (VERSION => {first + 2})"
                           ).fetchall() == [(1,)]       # time travel works before maintain
    files_before = _files(store)
    # no reader grace (a store nobody else reads): every snapshot but the latest may go
    now = dict(keep_history=timedelta(0), reader_grace=timedelta(0), allow_short_orphan_age=True)
    dry = store.maintain(**now, dry_run=True)
    assert dry.dry_run and dry.snapshots_expired > 0 and _files(store) == files_before
    report = store.maintain(**now)
    assert report.merged and report.snapshots_expired > 0 and report.files_deleted > 0
    assert len(_files(store)) < len(files_before)
    assert store.runs().drop(columns=["created_at"]).to_dict("records") == runs_before
    assert store.cell_stats()["n"].tolist() == [5, 5, 5]
    with store._read() as con, pytest.raises(Exception):
        con.execute(f"SELECT count(*) FROM lake.runs AT (VERSION => {first + 2})").fetchall()
    store.ingest([make_run("after", files=["after"])])      # writes go on afterwards
    assert len(store.runs()) == 4


def test_maintain_refuses_a_short_orphan_age(store):
    with pytest.raises(StoreError, match="files of an ingest still running could be deleted"):
        store.maintain(orphans_older_than=timedelta(minutes=1))


def _snapshot_runs(store: Store, snapshot: int | None = None) -> tuple[int, int]:
    """(the latest snapshot id, the number of runs at ``snapshot``, default the latest)."""
    with store._read() as con:
        last = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchall()[0][0]
        at = last if snapshot is None else snapshot
        return last, con.execute(f"SELECT count(*) FROM lake.runs AT (VERSION => {int(at)})"
                                 ).fetchall()[0][0]


def test_maintain_command(capsys, store_location):
    store = store_location.open()
    store.ingest([make_run("a", files=["a"])])
    ingested, _ = _snapshot_runs(store)
    store.delete_run("a")
    code, out, err = _cli(capsys, *store_location.cli_args, "maintain", "--keep-days", "0",
                          "--format", "json")
    assert code == 0, err
    result = __import__("json").loads(out)
    # --keep-days 0 keeps what a read of the last 10 minutes may use: here, everything the
    # test wrote (an empty store made from a template may have older snapshots)
    assert result["merged"] is True and result["files_deleted"] == 0
    assert result["orphans_deleted"] == 0
    assert len(store.runs()) == 0 and _snapshot_runs(store, ingested)[1] == 1
    code, _, err = _cli(capsys, *store_location.cli_args, "maintain", "--orphan-days", "0")
    assert code == 3 and "shorter than" in err
    with pytest.raises(SystemExit):
        cli.main(["maintain", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "ENDS TIME TRAVEL" in text and "cleanup_all is never used" in text
