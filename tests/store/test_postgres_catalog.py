"""The team catalog's foundation: DuckLake on a real PostgreSQL catalog, shared by processes.

These tests use duckdb directly (no evalbars Store), so they pin what the store builds on:
with the pinned extension wheels, two processes attach one ``ducklake:postgres:...`` catalog
with a shared data path, each sees the other's commits, and concurrent commits all land
once DuckLake's retry count is set. They also pin the private cluster helper itself
(tests/pg_cluster.py): a killed test session leaves no server running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import duckdb_ext

ROOT = Path(__file__).resolve().parents[2]

# One process's work on the catalog: attach, run the given statements (one transaction
# each), print what the final query returns as JSON.
CHILD = textwrap.dedent("""
    import json, sys, duckdb, duckdb_ext
    url, data_path, statements, final = json.loads(sys.argv[1])
    con = duckdb.connect(config={"extension_directory": duckdb_ext.get_extension_dir(),
                                 "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": True})
    con.execute("SET enable_progress_bar = false")   # stdout carries the answer
    q = lambda text: "'" + text.replace("'", "''") + "'"  # ATTACH takes no ? parameters
    con.execute(f"ATTACH {q(url)} AS lake (DATA_PATH {q(data_path)})")
    con.execute("SET ducklake_max_retry_count = 100")
    for sql, params in statements:
        con.execute(sql, params)
    print(json.dumps(con.execute(final).fetchall()))
""")


def _quote(text: str) -> str:
    """A SQL string literal (ATTACH takes no ? parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _attach(url: str, data_path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"extension_directory": duckdb_ext.get_extension_dir(),
                                 "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": True})
    con.execute(f"ATTACH {_quote(url)} AS lake (DATA_PATH {_quote(str(data_path) + '/')})")
    return con


def _child(url: str, data_path: Path, statements: list, final: str) -> subprocess.Popen:
    arg = json.dumps([url, str(data_path) + "/", statements, final])
    return subprocess.Popen([sys.executable, "-c", CHILD, arg], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen) -> list:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_two_processes_write_and_read_one_postgres_catalog(pg_cluster, tmp_path):
    url = pg_cluster.ducklake_url(pg_cluster.new_database())
    data = tmp_path / "data"
    first = _child(url, data, [["CREATE TABLE lake.runs (id INTEGER, name VARCHAR)", []],
                               ["INSERT INTO lake.runs VALUES (?, ?)", [1, "written by A"]]],
                   "SELECT id, name FROM lake.runs ORDER BY id")
    assert _result(first) == [[1, "written by A"]]
    # a second process sees A's commit and adds its own
    second = _child(url, data, [["INSERT INTO lake.runs VALUES (?, ?)", [2, "written by B"]]],
                    "SELECT id, name FROM lake.runs ORDER BY id")
    assert _result(second) == [[1, "written by A"], [2, "written by B"]]
    # and this process, attached afresh, reads both; the rows live in Parquet under the data
    # path and the catalog (not a local file) knows them
    con = _attach(url, data)
    assert con.execute("SELECT id, name FROM lake.runs ORDER BY id").fetchall() == [
        (1, "written by A"), (2, "written by B")]
    parquet = sorted(data.rglob("*.parquet"))
    assert len(parquet) == 2
    files = con.execute("SELECT data_file FROM ducklake_list_files('lake', 'runs')").fetchall()
    assert sorted(Path(f).name for (f,) in files) == sorted(p.name for p in parquet)
    con.close()


def test_concurrent_commits_from_two_processes_all_land(pg_cluster, tmp_path):
    url = pg_cluster.ducklake_url(pg_cluster.new_database())
    data = tmp_path / "data"
    setup = _child(url, data, [["CREATE TABLE lake.t (writer VARCHAR, k INTEGER)", []]],
                   "SELECT count(*) FROM lake.t")
    assert _result(setup) == [[0]]
    commits = 8
    procs = [_child(url, data, [["INSERT INTO lake.t VALUES (?, ?)", [w, k]]
                                for k in range(commits)],
                    "SELECT count(*) FROM lake.t")
             for w in ("A", "B")]
    for p in procs:
        _result(p)
    con = _attach(url, data)
    rows = con.execute("SELECT writer, k FROM lake.t ORDER BY writer, k").fetchall()
    assert rows == [(w, k) for w in ("A", "B") for k in range(commits)]
    # one snapshot per commit: the CREATE, 16 inserts, and the catalog's initial snapshot
    n_snapshots = con.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0]
    assert n_snapshots == 1 + 1 + 2 * commits
    con.close()


def test_each_test_gets_its_own_database(pg_cluster):
    a, b = pg_cluster.new_database(), pg_cluster.new_database()
    assert a != b
    assert pg_cluster.ducklake_url(a) == (f"ducklake:postgres:dbname={a} host=127.0.0.1 "
                                          f"port={pg_cluster.port} user=postgres")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_killed_session_leaves_no_server_running(pg_cluster, tmp_path):
    """The watchdog stops the cluster of a process killed with SIGKILL and deletes its folder."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from tests.pg_cluster import PgCluster
        c = PgCluster({str(pg_cluster.bin_dir)!r}).start()
        print(c.port, c.base, flush=True)
        time.sleep(600)
    """)
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                          text=True) as proc:
        port_text, base = proc.stdout.readline().split()
        port = int(port_text)
        assert _listening(port) and Path(base, "data").is_dir()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    deadline = time.monotonic() + 30
    while (_listening(port) or Path(base).exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _listening(port)
    assert not Path(base).exists()


def test_stop_shuts_the_server_and_removes_its_folder(pg_cluster):
    from tests.pg_cluster import PgCluster

    c = PgCluster(pg_cluster.bin_dir).start()
    port, base = c.port, c.base
    assert c.running() and _listening(port)
    assert "PostgreSQL" in c.version
    c.stop()
    assert not _listening(port)
    assert not base.exists()
