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
