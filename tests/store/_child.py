"""Second process for the concurrency tests (run as a script, not collected by pytest).

python _child.py ingest STORE NAME COUNT TIMEOUT  -> ingests COUNT runs NAME-0.. one call each
                                                     (STORE: a location; data path from the env)
python _child.py hold-lock CATALOG.sqlite         -> holds the SQLite catalog's write lock
                                                     (BEGIN EXCLUSIVE), prints "holding",
                                                     releases when stdin is closed
python _child.py hold-write-lock STORE             -> holds the store's writer lock
                                                     (store.lock), prints "holding", releases
                                                     when stdin is closed
python _child.py hold-pg-lock CONNINFO             -> locks the PostgreSQL catalog table
                                                     ducklake_snapshot (EXCLUSIVE mode: reads
                                                     go on, commits wait), prints "holding",
                                                     releases when stdin is closed
Exit codes: 0 ok, 4 StoreError (message on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1])]


def main(argv: list[str]) -> int:
    mode, store_path = argv[0], argv[1]
    if mode == "hold-lock":
        import sqlite3
        con = sqlite3.connect(store_path, isolation_level=None)
        con.execute("BEGIN EXCLUSIVE")
        print("holding", flush=True)
        sys.stdin.read()
        con.execute("ROLLBACK")
        con.close()
        return 0
    if mode == "hold-pg-lock":
        import duckdb
        from evalcore.store.catalog import _duckdb_config, _literal
        con = duckdb.connect(config=_duckdb_config())
        con.execute(f"ATTACH {_literal(store_path)} AS pg (TYPE postgres)")
        con.execute("BEGIN TRANSACTION")
        con.execute("CALL postgres_execute('pg', 'LOCK TABLE ducklake_snapshot IN EXCLUSIVE MODE')")
        print("holding", flush=True)
        sys.stdin.read()
        con.execute("ROLLBACK")
        return 0
    from evalcore.errors import StoreError
    from evalcore.store import Store
    if mode == "hold-write-lock":
        store = Store(store_path)
        with store._write_lock("holding the lock for a test"):
            print("holding", flush=True)
            sys.stdin.read()
        return 0
    from tests.store.conftest import make_run
    name, count, timeout = argv[2], int(argv[3]), float(argv[4])
    try:
        store = Store(store_path, lock_timeout=timeout)
        for i in range(count):
            store.ingest([make_run(f"{name}-{i}", files=[f"{name}-{i}.jsonl"])])
            print(f"ingested {name}-{i}", flush=True)
    except StoreError as exc:
        print(str(exc), file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
