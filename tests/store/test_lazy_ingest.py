"""Large lm_eval runs are read task by task while Store.ingest writes them (``LazyRun``):
the store ends up exactly as with the eager parse, a bad line in any file rolls the whole
transaction back, ``skip_invalid`` leaves only that run out, a repeat reports the same
counts, and two halves of a run merge. Both catalogs (``store_locations``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalcore import ingest
import evalcore.ingest.reading  # noqa: F401  (ingest.reading.LAZY_BYTES below)
from evalcore.errors import IngestError
from evalcore.ingest import parse_paths, read_paths
from evalcore.model import LazyRun
from evalcore.store import write as store_write
from evalcore.store.schema import TABLES

from .conftest import store_fingerprint

TS = "2025-06-01T12-00-00.000000"
# columns that hold the time of the write, not the data
_CLOCK = {"runs": "created_at", "files": "added_at"}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _line(task: str, i: int, *, passage: bool) -> dict:
    opts = [f"option {k} of {task} {i}" for k in range(4)]
    prompt = f"Question {task} {i}: which one?\nAnswer:"
    doc = {"id": f"{task}-{i}", "question": prompt, "answerKey": "ABCD"[i % 4]}
    if passage:
        doc["passage_id"] = f"p{i // 3}"
    return {"doc_id": i, "doc": doc, "target": i % 4,
            "arguments": {f"gen_args_{k}": {"arg_0": prompt, "arg_1": " " + o}
                          for k, o in enumerate(opts)},
            "resps": [[[str(-1.0 - ((i + k) % 4)), "False"]] for k in range(4)],
            "filtered_resps": [[str(-1.0 - ((i + k) % 4)), "False"] for k in range(4)],
            "filter": "none", "metrics": ["acc", "acc_norm"],
            "doc_hash": _sha(f"doc {task} {i}"), "prompt_hash": _sha(f"prompt {task} {i}"),
            "target_hash": _sha(str(i % 4)),
            "acc": float((i * 7 + len(task)) % 3 == 0), "acc_norm": float(i % 2)}


def write_run(folder: Path, tasks: dict[str, int], *, passage: bool = False,
              bad: tuple[str, int] | None = None, ts: str = TS) -> list[Path]:
    """lm_eval 0.4.3+ sample logs of one run (one file per task, ``n`` docs each) in
    ``folder``, named with the run's timestamp ``ts`` (runs with the same one merge);
    ``bad = (task, line)`` writes that line as broken JSON."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for task, n in tasks.items():
        lines = [json.dumps(_line(task, i, passage=passage)) for i in range(n)]
        if bad is not None and bad[0] == task:
            lines[bad[1] - 1] = lines[bad[1] - 1][:40]
        p = folder / f"samples_{task}_{ts}.jsonl"
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    return paths


@pytest.fixture
def lazy_always(monkeypatch):
    """Every lm_eval run on disk is read lazily (the bytes threshold set to 0), and Store.ingest
    writes each piece as it comes (as a big run's pieces are written)."""
    monkeypatch.setattr(ingest.reading, "LAZY_BYTES", 0)
    monkeypatch.setattr(store_write, "LAZY_FLUSH_BYTES", 1)


def _contents(store) -> dict[str, list]:
    """Every table's rows, sorted, without the write-time columns."""
    out = {}
    with store._read() as con:
        for table in TABLES:
            cols = [c for (c,) in con.execute(
                "SELECT column_name FROM (DESCRIBE SELECT * FROM " + table + ")").fetchall()
                if c != _CLOCK.get(table)]
            rows = con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            out[table] = sorted(map(repr, rows))
    return out


def _report(report) -> list[dict]:
    return report.runs.to_dict("records")


def test_a_lazy_run_stores_exactly_what_the_eager_parse_stores(store_locations, tmp_path,
                                                               lazy_always):
    folder = tmp_path / "org__model-a"
    paths = write_run(folder, {"arc_x": 40, "arc_y": 25, "boolq_z": 33}, passage=True)
    lazy = parse_paths([folder])
    eager = parse_paths([folder], lazy=False)
    assert isinstance(lazy[0], LazyRun) and not isinstance(eager[0], LazyRun)
    assert len(lazy[0].scores) == 0 and len(eager[0].scores) == 2 * (40 + 25 + 33)
    assert [f.sha256 for f in lazy[0].files] == [f.sha256 for f in eager[0].files]
    assert len(lazy[0].files) == len(paths)

    a = store_locations.new("eager").open(lock_timeout=5.0)
    b = store_locations.new("lazy").open(lock_timeout=5.0)
    threads = b._threads()
    rep_a, rep_b = a.ingest(eager), b.ingest(lazy)
    assert b._threads() == threads
    assert _report(rep_a) == _report(rep_b)
    assert rep_a.warnings == rep_b.warnings
    assert _report(rep_b)[0]["n_scores"] == 196 and _report(rep_b)[0]["n_items"] == 98
    assert _contents(a) == _contents(b)
    # the materialized lazy run is the eager run
    m = lazy[0].materialize()
    assert m.scores.equals(eager[0].scores) and m.texts.equals(eager[0].texts)
    assert m.warnings == eager[0].warnings


def test_pieces_written_together_or_one_by_one_store_the_same(store_locations, tmp_path,
                                                               lazy_always, monkeypatch):
    folder = tmp_path / "org__model-a"
    write_run(folder, {"t1": 30, "t2": 20, "t3": 10})
    one_by_one = store_locations.new("one").open(lock_timeout=5.0)
    one_by_one.ingest(parse_paths([folder]))
    monkeypatch.setattr(store_write, "LAZY_FLUSH_BYTES", 1 << 40)   # all in one write
    together = store_locations.new("together").open(lock_timeout=5.0)
    together.ingest(parse_paths([folder]))
    assert _contents(one_by_one) == _contents(together)


def test_a_bad_line_in_a_later_file_rolls_everything_back(store, tmp_path, lazy_always):
    good = write_run(tmp_path / "org__model-g", {"g1": 12}, ts=TS.replace("12", "13"))
    store.ingest(parse_paths(good))
    before = store_fingerprint(store)
    folder = tmp_path / "org__model-b"
    write_run(folder, {"a1": 20, "a2": 20, "a3": 20}, bad=("a3", 7))
    runs = parse_paths([folder])   # read later: the bad line is not seen yet
    threads = store._threads()
    with pytest.raises(IngestError) as err:
        store.ingest(runs)
    assert err.value.file.endswith(f"samples_a3_{TS}.jsonl")
    assert "line 7" in str(err.value)
    assert store_fingerprint(store) == before
    # the lazy writes ran on one DuckDB thread; the setting is back after the rollback
    assert store._threads() == threads


def test_skip_invalid_leaves_out_only_the_bad_lazy_run(store, tmp_path, lazy_always):
    write_run(tmp_path / "org__model-ok1", {"k1": 15, "k2": 5}, ts=TS.replace("12", "13"))
    write_run(tmp_path / "org__model-bad", {"b1": 10, "b2": 10}, bad=("b2", 3))
    write_run(tmp_path / "org__model-ok2", {"k1": 9}, ts=TS.replace("12", "14"))
    batch = read_paths([tmp_path / "org__model-ok1", tmp_path / "org__model-bad",
                        tmp_path / "org__model-ok2"])
    assert len(batch.runs) == 3 and not batch.problems
    report = store.ingest(batch.runs, skip_invalid=True)
    assert sorted(report.runs["name"]) == ["org/model-ok1", "org/model-ok2"]
    assert list(report.runs["n_scores"]) == [40, 18]
    assert len(report.rejected) == 1
    assert f"samples_b2_{TS}.jsonl" in report.rejected[0] and "line 3" in report.rejected[0]
    assert sorted(store.runs()["name"]) == ["org/model-ok1", "org/model-ok2"]
    with pytest.raises(IngestError):   # without skip_invalid the same batch writes nothing
        store.ingest(read_paths([tmp_path / "org__model-bad"]).runs)


def test_a_repeat_reports_the_same_counts_and_writes_nothing(store, tmp_path, lazy_always):
    folder = tmp_path / "org__model-a"
    write_run(folder, {"t1": 30, "t2": 20})
    first = store.ingest(parse_paths([folder]))
    before = store_fingerprint(store)
    again = store.ingest(parse_paths([folder]))
    assert again.already_present
    row1, row2 = _report(first)[0], _report(again)[0]
    assert row2["status"] == "already present" and row2["n_scores_added"] == 0
    for key in ("tasks", "metrics", "n_items", "n_scores", "k_max", "run_id", "name"):
        assert row1[key] == row2[key]
    assert store_fingerprint(store) == before


def test_two_halves_of_a_lazy_run_merge_as_the_eager_halves_do(store_locations, tmp_path,
                                                               lazy_always):
    whole = tmp_path / "org__model-a"
    write_run(whole, {"h1": 20, "h2": 15, "h3": 10})
    first = [whole / f"samples_{t}_{TS}.jsonl" for t in ("h1", "h2")]
    second = [whole / f"samples_h3_{TS}.jsonl"]
    stores = {}
    for lazy in (True, False):
        s = store_locations.new(f"lazy{lazy}").open(lock_timeout=5.0)
        s.ingest(parse_paths(first, lazy=lazy))
        rep = s.ingest(parse_paths(second, lazy=lazy))
        assert list(rep.runs["status"]) == ["merged"]
        stores[lazy] = s
    assert len(stores[True].runs()) == 1
    assert _contents(stores[True]) == _contents(stores[False])


def test_small_runs_and_uploads_are_read_at_once(tmp_path):
    folder = tmp_path / "org__model-a"
    paths = write_run(folder, {"t1": 10})
    assert not isinstance(parse_paths([folder])[0], LazyRun)   # under LAZY_BYTES
    uploads = [(p.name, p.read_bytes()) for p in paths]
    assert not isinstance(ingest.parse_uploads(uploads)[0], LazyRun)


def test_cli_ingest_lists_a_lazy_runs_bad_line_and_stores_the_rest(capsys, tmp_path, lazy_always):
    from tests.cli_helpers import run_main
    write_run(tmp_path / "in" / "org__model-ok", {"k1": 12}, ts=TS.replace("12", "13"))
    write_run(tmp_path / "in" / "org__model-bad", {"b1": 10, "b2": 10}, bad=("b2", 4))
    store = tmp_path / "cli-store"
    code, out, err = run_main(capsys, "--store", store, "ingest", tmp_path / "in",
                              "--format", "json")
    assert code == 3
    report = json.loads(out)
    assert [r["name"] for r in report["runs"]] == ["org/model-ok"]
    (problem,) = report["not_stored"]
    assert f"samples_b2_{TS}.jsonl" in problem["reason"] and "line 4" in problem["reason"]
    assert "not stored" in err
    code, out, err = run_main(capsys, "--store", store, "ingest", "--strict", tmp_path / "in")
    assert code == 3 and f"samples_b2_{TS}.jsonl" in err and "line 4" in err


def test_a_failed_lazy_write_rolls_back_and_restores_the_thread_count(store, tmp_path,
                                                                      lazy_always, monkeypatch):
    from evalcore.errors import StoreError
    from evalcore.store import batch as store_batch
    before = store_fingerprint(store)
    threads = store._threads()
    write_run(tmp_path / "org__model-a", {"t1": 10, "t2": 10})
    real = store_batch._Batch._write_keyed
    calls = []

    def second_write_fails(self, con, overlap=True):
        calls.append(store._threads())
        if len(calls) == 2:   # a DuckDB error: the transaction is aborted
            con.execute("SELECT CAST('not a number' AS INTEGER)")
        return real(self, con, overlap)

    monkeypatch.setattr(store_batch._Batch, "_write_keyed", second_write_fails)
    with pytest.raises(StoreError):
        store.ingest(parse_paths([tmp_path / "org__model-a"]))
    assert calls == [1, 1]   # the pieces' writes ran on one thread
    assert store._threads() == threads
    assert store_fingerprint(store) == before


def test_the_next_piece_is_read_while_this_one_is_written_one_ahead_not_during_texts(store, tmp_path,
                                                                        lazy_always, monkeypatch):
    import threading

    from evalcore.store import batch as store_batch
    write_run(tmp_path / "org__model-a", {"t1": 10, "t2": 12, "t3": 14, "t4": 16})
    (run,) = parse_paths([tmp_path / "org__model-a"])
    read = run.pieces
    produced: list[str] = []
    ready = [threading.Event() for _ in range(5)]

    batches = []
    real_init = store_batch._Batch.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        batches.append(self)

    monkeypatch.setattr(store_batch._Batch, "__init__", init)

    def counted():
        for piece in read():
            # a piece is read holding the batch's texts lock: never during a texts INSERT
            assert batches and batches[-1].texts_lock.locked()
            produced.append(piece.tasks["task"].iloc[0])
            ready[len(produced)].set()
            yield piece

    run.pieces = counted
    real = store_batch._Batch.flush_keyed
    seen: list[tuple[int, int]] = []

    def flush(self, con, overlap=True):
        if not self.tables["scores"]:           # the final flush: nothing left
            return real(self, con, overlap)
        k = len(seen) + 1                       # the k-th piece is being written ...
        if k < 4:                               # ... while piece k + 1 is read meanwhile
            assert ready[k + 1].wait(10), "the next piece was not read during this write"
        seen.append((k, len(produced)))
        return real(self, con, overlap)

    monkeypatch.setattr(store_batch._Batch, "flush_keyed", flush)
    report = store.ingest([run])
    assert produced == ["t1", "t2", "t3", "t4"]
    # one piece ahead, never two: while piece k is written, at most k + 1 were read
    assert seen == [(1, 2), (2, 3), (3, 4), (4, 4)]
    assert int(report.runs["n_scores"].iloc[0]) == 2 * (10 + 12 + 14 + 16)


def _two_ingests(location, tmp_path, tasks_a: dict, tasks_b: dict):
    """A new store at ``location`` with two eager ingests (model-a, then model-b)."""
    store = location.open(lock_timeout=5.0)
    write_run(tmp_path / "org__model-a", tasks_a)
    store.ingest(parse_paths([tmp_path / "org__model-a"], lazy=False))
    write_run(tmp_path / "org__model-b", tasks_b, ts=TS.replace("12", "13"))
    store.ingest(parse_paths([tmp_path / "org__model-b"], lazy=False))
    return store


def _option_and_files(store, option: str, table: str) -> tuple[list, list[str]]:
    """The table's value(s) of a DuckLake option, and its data files."""
    with store._read() as con:
        opts = con.execute("SELECT value FROM lake.options() WHERE option_name = ? AND "
                           "scope_entry = ?", [option, f"main.{table}"]).fetchall()
        files = [f for (f,) in con.execute(
            "SELECT data_file FROM ducklake_list_files('lake', ?)", [table]).fetchall()]
    return opts, files


def test_texts_are_written_in_row_groups_of_text_row_group_rows(store_locations, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setattr(store_write, "TEXT_ROW_GROUP", 2048)   # DuckDB's smallest
    store = _two_ingests(store_locations.new("rg"), tmp_path, {"big": 5000}, {"big": 300})
    opts, files = _option_and_files(store, "parquet_row_group_size", "texts")
    with store._read() as con:
        groups = [con.execute("SELECT max(row_group_num_rows), count(DISTINCT row_group_id) "
                              "FROM parquet_metadata(?)", [f]).fetchone() for f in files]
    assert opts == [("2048",)]            # set by the first ingest, once
    assert max(rows for rows, _n in groups) <= 2048
    assert max(n for _rows, n in groups) >= 3   # 5,000 texts: three row groups


def test_a_lazy_write_runs_without_huge_pages_and_restores_them(store, tmp_path, lazy_always,
                                                                monkeypatch):
    from evalcore import threads
    if threads.huge_pages_disabled() is None:
        pytest.skip("prctl(PR_GET_THP_DISABLE) is not available here")
    before = threads.huge_pages_disabled()
    seen = []
    read_lazy = store_write._Writes._read_lazy

    def spy(self, p, *args, **kwargs):
        seen.append(threads.huge_pages_disabled())
        return read_lazy(self, p, *args, **kwargs)

    monkeypatch.setattr(store_write._Writes, "_read_lazy", spy)
    write_run(tmp_path / "org__model-a", {"t1": 12, "t2": 8})
    assert threads.huge_pages_disabled() is before
    store.ingest(parse_paths([tmp_path / "org__model-a"]))
    assert seen == [True]
    assert threads.huge_pages_disabled() is before
    # a failed lazy write restores them too
    write_run(tmp_path / "org__model-b", {"b1": 10}, bad=("b1", 4))
    with pytest.raises(IngestError):
        store.ingest(parse_paths([tmp_path / "org__model-b"]))
    assert seen == [True, True]
    assert threads.huge_pages_disabled() is before


def test_labels_are_written_without_compression_set_once(store_locations, tmp_path):
    store = _two_ingests(store_locations.new("lab"), tmp_path, {"t1": 300}, {"t2": 200})
    opts, files = _option_and_files(store, "parquet_compression", "labels")
    with store._read() as con:
        codecs = {c for f in files for (c,) in con.execute(
            "SELECT DISTINCT compression FROM parquet_metadata(?)", [f]).fetchall()}
        n_labels = con.execute("SELECT count(*) FROM labels").fetchone()[0]
    assert opts == [(store_write.LABELS_COMPRESSION,)]   # set by the first ingest, once
    assert len(files) == 2 and codecs == {"UNCOMPRESSED"}
    assert n_labels == 2 * (300 + 200)   # a doc hash and a prompt hash per item
