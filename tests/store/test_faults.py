"""Faults get their exit code and a message in words: no space left (data files or the
catalog's commit) is exit 5, an unreachable or lost catalog exit 4 "store unavailable" with
the host named and no password, a lock held past ``--lock-timeout`` exit 4 on every catalog
(the store's writer lock, and PostgreSQL's own table locks), a damaged store a StoreError,
never an internal TypeError; no message quotes SQL."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from evalcore import cli
from evalcore.errors import DiskFullError, StoreBusyError, StoreError, StoreUnavailableError
from evalcore.store import Store
from evalcore.store.faults import first_line, store_error

from .conftest import make_run, store_fingerprint

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("_child.py")


def _tidy(path: Path, model: str, items: int = 50) -> Path:
    rng = np.random.default_rng(len(model))
    pd.DataFrame({"model": model, "task": "t", "item_id": np.arange(items).astype(str),
                  "score": (rng.random(items) < 0.5).astype(int)}).to_csv(path, index=False)
    return path


def _cli(*argv, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "evalcore", *map(str, argv)], env=full,
                          capture_output=True, text=True, timeout=timeout)


def _no_sql(text: str) -> bool:
    return not any(w in text for w in ("SELECT ", "INSERT ", "COPY ", "UPDATE ", "LINE 1"))


# ---- no space left --------------------------------------------------------------------------
@pytest.fixture
def tiny_fs(tmp_path):
    """A 1 MiB tmpfs (needs root; skipped where mounting is not permitted)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path, leave: int = 0) -> Path:
    """Fill the file system of ``folder`` but ``leave`` bytes; the filler file."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def test_no_space_for_the_catalog_commit_is_exit_5(tiny_fs, tmp_path):
    location = f"ducklake:sqlite:{tiny_fs / 'catalog.sqlite'}"
    data = tmp_path / "data"
    store = Store(location, data_path=data)
    store.ingest([make_run("kept", files=["kept"])])
    before = store_fingerprint(store)
    store.close()
    new = _tidy(tmp_path / "new.csv", "new")
    # room to open the catalog (its -shm file), none for the commit's pages; then no room
    # at all (SQLite can open nothing: "disk I/O error")
    for leave in (48 << 10, 0):
        filler = _fill(tiny_fs, leave)
        done = _cli("--store", location, "--data-path", data, "ingest", new)
        filler.unlink()
        assert done.returncode == 5, done.stderr
        assert "no space left on device" in done.stderr and "not changed" in done.stderr
        assert _no_sql(done.stderr)
        assert store_fingerprint(Store(location, data_path=data)) == before


def test_no_space_for_the_data_files_is_exit_5(tiny_fs, tmp_path):
    location = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    store = Store(location, data_path=tiny_fs)
    store.ingest([make_run("kept", files=["kept"])])
    before = store_fingerprint(store)
    store.close()
    filler = _fill(tiny_fs)
    done = _cli("--store", location, "--data-path", tiny_fs, "ingest",
                _tidy(tmp_path / "new.csv", "new", items=20_000))
    filler.unlink()
    assert done.returncode == 5, done.stderr
    assert "no space left on device" in done.stderr and _no_sql(done.stderr)
    assert store_fingerprint(Store(location, data_path=tiny_fs)) == before


def test_a_failed_commit_that_says_disk_full_is_a_disk_full_error():
    """SQLite's own words for a full disk, as DuckLake passes them on at COMMIT."""
    exc = duckdb.TransactionException(
        'TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\n'
        'Failed to execute query "COMMIT": database or disk is full')
    err = store_error(exc, "ingest")
    assert isinstance(err, DiskFullError) and "no space left on device" in str(err)


# ---- the catalog cannot be reached ---------------------------------------------------------
def test_an_unreachable_catalog_is_exit_4_with_the_host_and_no_password(tmp_path):
    from tests.pg_cluster import free_port
    port = free_port()          # nothing listens there
    url = (f"ducklake:postgres:dbname=evals host=127.0.0.1 port={port} user=me "
           "password=hunter2secret")
    done = _cli("--store", url, "--data-path", tmp_path / "data", "runs", timeout=120)
    assert done.returncode == 4, done.stderr
    assert "store unavailable" in done.stderr and f"host 127.0.0.1 port {port}" in done.stderr
    assert "hunter2secret" not in done.stderr and _no_sql(done.stderr)
    done = _cli("--store", url, "--data-path", tmp_path / "data", "ingest",
                _tidy(tmp_path / "a.csv", "a"), timeout=120)
    assert done.returncode == 4 and "store unavailable" in done.stderr


def test_postgres_stopping_mid_write_is_exit_4_and_commits_nothing(tmp_path):
    from tests.pg_cluster import PgCluster, find_bin_dir
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server programs")
    cluster = PgCluster(bin_dir).start()
    try:
        url = cluster.ducklake_url(cluster.new_database())
        data = tmp_path / "data"
        store = Store(url, data_path=data)
        store.ingest([make_run("kept", files=["kept"])])
        store.close()
        big = _tidy(tmp_path / "big.csv", "big", items=400_000)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with subprocess.Popen([sys.executable, "-m", "evalcore", "--store", url, "--data-path",
                               str(data), "ingest", str(big)], env=env, text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as writer:
            files_before = set(data.rglob("*.parquet"))
            deadline = time.monotonic() + 240
            while not (set(data.rglob("*.parquet")) - files_before):   # inside its write
                assert writer.poll() is None, writer.stderr.read()
                assert time.monotonic() < deadline
                time.sleep(0.01)
            cluster._run("pg_ctl", "-D", str(cluster.data), "-m", "immediate", "-w", "stop")
            err = writer.stderr.read()
            code = writer.wait(timeout=240)
        assert code == 4, err
        assert "store unavailable" in err and f"port {cluster.port}" in err and _no_sql(err)
        cluster._run("pg_ctl", "-D", str(cluster.data), "-l", str(cluster.log), "-o",
                     f"-c listen_addresses={cluster.host} -p {cluster.port} "
                     f"-c unix_socket_directories={cluster.sock}", "-w", "start")
        assert Store(url, data_path=data).runs()["name"].tolist() == ["kept"]
    finally:
        cluster.stop()


# ---- locks and --lock-timeout ---------------------------------------------------------------
def _holder(*args: str, env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(CHILD), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))
    line = proc.stdout.readline()
    if line.strip() != "holding":
        _release(proc)
        raise AssertionError(f"the lock holder did not start: {line!r}")
    return proc


def _release(proc: subprocess.Popen) -> None:
    """Let a holder go (closing its stdin) and close its pipes."""
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()


def test_a_write_waits_for_the_writer_lock_and_gives_up_after_lock_timeout(store_location,
                                                                          tmp_path):
    store = store_location.open()
    store.ingest([make_run("kept", files=["kept"])])
    before = store_fingerprint(store)
    holder = _holder("hold-write-lock", store_location.location, env=store_location.env)
    try:
        t0 = time.monotonic()
        done = _cli(*store_location.cli_args, "ingest", _tidy(tmp_path / "a.csv", "a"),
                    "--lock-timeout", "1")
        waited = time.monotonic() - t0
        assert done.returncode == 4, done.stderr
        assert "store is busy" in done.stderr and _no_sql(done.stderr)
        assert waited < 60
        assert store.runs()["name"].tolist() == ["kept"]       # reads go on meanwhile
        assert store_fingerprint(store) == before
    finally:
        _release(holder)
    done = _cli(*store_location.cli_args, "ingest", tmp_path / "a.csv", "--lock-timeout", "30")
    assert done.returncode == 0, done.stderr


def test_lock_timeout_is_honoured_on_a_postgres_table_lock(store_location, tmp_path):
    if not store_location.location.startswith("ducklake:postgres:"):
        pytest.skip("a PostgreSQL catalog's own locks")
    store = store_location.open()
    store.ingest([make_run("kept", files=["kept"])])
    store.close()
    conninfo = store_location.location[len("ducklake:postgres:"):]
    holder = _holder("hold-pg-lock", conninfo)
    try:
        t0 = time.monotonic()
        done = _cli(*store_location.cli_args, "ingest", _tidy(tmp_path / "a.csv", "a"),
                    "--lock-timeout", "2", timeout=90)
        waited = time.monotonic() - t0
    finally:
        _release(holder)
    assert done.returncode == 4, done.stderr
    assert "busy" in done.stderr and _no_sql(done.stderr)
    assert waited < 30, f"the ingest waited {waited:.0f} s on a lock it was to give up after 2 s"
    assert store_location.open().runs()["name"].tolist() == ["kept"]


def test_a_busy_error_is_a_store_busy_error_and_unavailable_is_busy_too():
    assert issubclass(StoreUnavailableError, StoreBusyError)
    assert StoreBusyError("x").busy and StoreUnavailableError("x").busy


# ---- a damaged store --------------------------------------------------------------------------
def test_a_missing_meta_row_is_named_not_a_type_error(store_location, tmp_path, capsys):
    store = store_location.open()
    store.ingest([make_run("kept", files=["kept"])])
    store._write(lambda con: con.execute("DELETE FROM meta WHERE key = 'next_run_id'"),
                 "damaging the store for a test")
    with pytest.raises(StoreError, match="meta table has 0 rows for 'next_run_id'"):
        store.ingest([make_run("new", files=["new"])])
    code = cli.main([*store_location.cli_args, "ingest", str(_tidy(tmp_path / "n.csv", "n"))])
    err = capsys.readouterr().err
    assert code == 3 and "the store is damaged" in err and "TypeError" not in err


def test_messages_quote_no_sql():
    exc = duckdb.IOException('IO Error: Failed to prepare COPY "COPY (SELECT a FROM t) TO '
                             'STDOUT": ERROR: x\nLINE 1: COPY (SELECT')
    assert first_line(exc) == "IO Error: Failed to prepare COPY: ERROR: x"


def test_the_cli_default_lock_timeout_is_the_stores():
    from evalcore.commands._shared import DEFAULT_LOCK_TIMEOUT as CLI_DEFAULT
    from evalcore.store.catalog import DEFAULT_LOCK_TIMEOUT
    assert CLI_DEFAULT == DEFAULT_LOCK_TIMEOUT == 120.0
