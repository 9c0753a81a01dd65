"""First use by many: six CLI ingests started at once against a brand-new store (and an
existing one), a local folder and a PostgreSQL catalog, all store their runs and exit 0.
DuckLake creates its catalog tables at the first ATTACH; without the catalog-creation lock
(store.connection._catalog_init_lock, and the lock file for SQLite) two to five of six
ingests into a new PostgreSQL database failed with exit 3 ("duplicate key value violates
unique constraint pg_type_typname_nsp_index", "relation ... already exists")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 6


def _tidy(folder: Path) -> list[Path]:
    out = []
    for i in range(WRITERS):
        path = folder / f"model{i}.csv"
        rng = np.random.default_rng(i)
        pd.DataFrame({"model": f"org/model-{i}", "task": "t",
                      "item_id": [str(j) for j in range(30)],
                      "score": (rng.random(30) < 0.5).astype(int)}).to_csv(path, index=False)
        out.append(path)
    return out


def _ingest_all_at_once(files: list[Path], store_args: list[str], cwd: Path) -> list[tuple]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("EVALBARS_STORE", "EVALBARS_DATA_PATH", "EVALBARS_READONLY")}
    env["PYTHONPATH"] = str(ROOT)
    procs = [subprocess.Popen([sys.executable, "-m", "evalcore", "ingest", str(f), *store_args,
                               "--lock-timeout", "120"], env=env, cwd=cwd, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for f in files]
    results = []
    for p in procs:
        _, err = p.communicate(timeout=600)
        results.append((p.returncode, err.strip()[-400:]))
    return results


def _check(results: list[tuple], store: Store) -> None:
    assert [code for code, _ in results] == [0] * WRITERS, results
    names = sorted(store.runs()["name"])
    assert names == [f"org/model-{i}" for i in range(WRITERS)]


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_six_ingests_local(tmp_path, existing):
    files = _tidy(tmp_path)
    location = tmp_path / "store"
    if existing:
        Store(location).close()
    results = _ingest_all_at_once(files, ["--store", str(location)], tmp_path)
    _check(results, Store(location))


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_six_ingests_postgres(tmp_path, pg_cluster, existing):
    files = _tidy(tmp_path)
    location = "ducklake:postgres:" + pg_cluster.dsn(pg_cluster.new_database())
    data = str(tmp_path / "data")
    if existing:
        Store(location, data_path=data).close()
    results = _ingest_all_at_once(files, ["--store", location, "--data-path", data], tmp_path)
    store = Store(location, data_path=data)
    try:
        _check(results, store)
    finally:
        store.close()


def _held_busy(result: tuple) -> None:
    code, err = result
    assert code == 4, err
    assert "store busy" in err or "store is busy" in err


def test_creation_held_too_long_exits_4_not_3_local(tmp_path):
    """Another process creating the catalog for longer than --lock-timeout: exit 4."""
    import fcntl
    from evalcore.store.lock import lock_file
    (location := tmp_path / "store").mkdir()
    fd = os.open(lock_file(location / "catalog.sqlite"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        files = _tidy(tmp_path)[:1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVALBARS_")}
        p = subprocess.run([sys.executable, "-m", "evalcore", "ingest", str(files[0]),
                            "--store", str(location), "--lock-timeout", "1"],
                           env=env | {"PYTHONPATH": str(ROOT)}, cwd=tmp_path, text=True,
                           capture_output=True, timeout=300)
    finally:
        os.close(fd)
    _held_busy((p.returncode, p.stderr))


def test_creation_held_too_long_exits_4_not_3_postgres(tmp_path, pg_cluster):
    import duckdb

    from evalcore.store.connection import PG_INIT_LOCK_KEY, _duckdb_config
    db = pg_cluster.new_database()
    holder = duckdb.connect(":memory:", config=_duckdb_config())
    holder.execute(f"ATTACH '{pg_cluster.dsn(db)}' AS pg (TYPE postgres)")
    holder.execute("BEGIN TRANSACTION")
    got = holder.execute("SELECT * FROM postgres_query('pg', 'SELECT "
                         f"pg_try_advisory_xact_lock({PG_INIT_LOCK_KEY:d}) AS got')").fetchall()
    assert got[0][0]
    try:
        files = _tidy(tmp_path)[:1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVALBARS_")}
        p = subprocess.run([sys.executable, "-m", "evalcore", "ingest", str(files[0]),
                            "--store", "ducklake:postgres:" + pg_cluster.dsn(db),
                            "--data-path", str(tmp_path / "data"), "--lock-timeout", "1"],
                           env=env | {"PYTHONPATH": str(ROOT)}, cwd=tmp_path, text=True,
                           capture_output=True, timeout=300)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    _held_busy((p.returncode, p.stderr))
