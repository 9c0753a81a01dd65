"""Several CLI writers, a reader and the dashboard on one store at once; a writer killed -9.

Runs on both catalogs (the ``store_locations`` parametrization in this folder's conftest):
the local store (SQLite catalog) and a team store (PostgreSQL catalog). The writers are real
``python -m evalcore ingest`` processes, each ingesting tidy CSV files one CLI call after
another; meanwhile this process reads in a loop (Store queries, raw SQL) and renders the
dashboard's *Upload & runs* page with AppTest. Checked:

- every read sees whole runs only: each run it sees has all its scores, in every table;
- all commits land: every run every writer ingested is in the store at the end, once;
- ``kill -9`` of a writer in the middle of its write leaves the catalog exactly as it was
  (the store's fingerprint), and the same file ingested again lands whole.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.testing.v1 import AppTest

from evalcore.ingest import parse_paths

from .conftest import store_fingerprint

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("alpha", "beta")
ITEMS = 150                      # per task: a whole run has 2 x 150 scores
WRITERS, FILES_PER_WRITER = 3, 2


def _tidy_csv(path: Path, model: str, items: int, seed: int) -> Path:
    """One run (``model``) as a tidy table: every task x item, 0/1 scores."""
    rng = np.random.default_rng(seed)
    n = len(TASKS) * items
    pd.DataFrame({"model": model, "task": np.repeat(TASKS, items),
                  "item_id": np.tile(np.arange(items), len(TASKS)).astype(str),
                  "score": (rng.random(n) < 0.6).astype(int)}).to_csv(path, index=False)
    return path


def _cli_env(location) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("EVALBARS_STORE", "EVALBARS_DATA_PATH")}
    return env | location.env | {"PYTHONPATH": str(ROOT)}


def _ingest_cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "evalcore", "ingest", str(path), "--lock-timeout", "120"]


def _whole_run_violations(store) -> list[str]:
    """What a read sees that is not a whole run (empty when every run it sees is whole)."""
    bad = []
    whole = len(TASKS) * ITEMS
    runs = store.runs()
    bad += [f"runs(): {n} has {k} scores" for n, k in zip(runs["name"], runs["n_scores"])
            if int(k) != whole]
    cells = store.cell_stats()
    per_run = cells.groupby("run_id")["n"].agg(["count", "min", "max"])
    bad += [f"cell_stats(): run {r} has {c} cells of {lo}..{hi} items"
            for r, (c, lo, hi) in per_run.iterrows() if (c, lo, hi) != (len(TASKS), ITEMS, ITEMS)]
    with store._read() as con:
        counts = con.execute("SELECT r.name, count(s.run_id) FROM runs r "
                             "LEFT JOIN scores s ON s.run_id = r.run_id GROUP BY r.name").fetchall()
    bad += [f"scores table: {n} has {k} rows" for n, k in counts if k != whole]
    return bad


def _dashboard_sees_whole_runs() -> list[str]:
    """Render the Upload & runs page (reads $EVALBARS_STORE) and check its runs table."""
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "pages" / "upload.py"), default_timeout=120).run()
    if at.exception:
        return [f"page raised {[e.value for e in at.exception]}"]
    tables = [d.value for d in at.dataframe if "n_scores" in d.value.columns]
    if not tables:   # an empty store shows no runs table yet
        return []
    return [f"page: {n} shows {k} scores" for n, k in zip(tables[0]["name"], tables[0]["n_scores"])
            if int(k) != len(TASKS) * ITEMS]


def test_cli_writers_a_reader_and_the_dashboard_at_once(store_location, tmp_path, monkeypatch):
    for key, value in store_location.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("EVALBARS_DEMO", "0")
    store = store_location.open(lock_timeout=60)
    store.version()       # create the store before the writers race to
    files = [[_tidy_csv(tmp_path / f"w{w}-{k}.csv", f"model-w{w}-{k}", ITEMS, 10 * w + k)
              for k in range(FILES_PER_WRITER)] for w in range(WRITERS)]
    failures: list[str] = []

    def writer(paths: list[Path]) -> None:
        for p in paths:   # one CLI process (one commit) per file, one after another
            proc = subprocess.run(_ingest_cmd(p), env=_cli_env(store_location), cwd=tmp_path,
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                failures.append(f"{p.name}: exit {proc.returncode}: {proc.stderr[-2000:]}")

    threads = [threading.Thread(target=writer, args=(paths,)) for paths in files]
    for t in threads:
        t.start()
    violations: list[str] = []
    seen: list[int] = []
    page_renders = 0
    while any(t.is_alive() for t in threads):
        violations += _whole_run_violations(store)
        seen.append(len(store.runs()))
        if page_renders < 1 and seen[-1] > 0:
            violations += _dashboard_sees_whole_runs()
            page_renders += 1
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert failures == []
    assert violations == []
    assert seen == sorted(seen)                          # a reader never goes back in time
    names = sorted(store.runs()["name"])
    assert names == sorted(f"model-w{w}-{k}" for w in range(WRITERS)
                           for k in range(FILES_PER_WRITER))
    assert _whole_run_violations(store) == []
    assert _dashboard_sees_whole_runs() == []
    assert len(seen) >= 2                                # the reader did read during writes
    store.close()


def _data_root(location) -> Path:
    return Path(location.data_path or Path(location.location) / "data")


def test_kill_9_of_a_cli_writer_mid_write_leaves_the_catalog_unchanged(store_location, tmp_path):
    store = store_location.open(lock_timeout=60)
    store.ingest(parse_paths([_tidy_csv(tmp_path / "kept.csv", "kept", ITEMS, 1)]))
    before = store_fingerprint(store)
    root = _data_root(store_location)
    files_before = set(root.rglob("*.parquet"))

    big = tmp_path / "big.csv"
    n = 200_000
    pd.DataFrame({"model": "big", "task": np.repeat(TASKS, n // 2),
                  "item_id": np.tile(np.arange(n // 2), 2).astype(str),
                  "score": np.tile([0, 1], n // 2)}).to_csv(big, index=False)
    with subprocess.Popen(_ingest_cmd(big), env=_cli_env(store_location), cwd=tmp_path,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as writer:
        # the writer has begun writing its Parquet files: it is inside its transaction
        deadline = time.monotonic() + 240
        while not (set(root.rglob("*.parquet")) - files_before):
            assert writer.poll() is None, ("the writer ended before it was killed: "
                                           + writer.stderr.read().decode()[-2000:])
            assert time.monotonic() < deadline, "the writer wrote no Parquet file in 240 s"
            time.sleep(0.005)
        os.kill(writer.pid, signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
    assert set(root.rglob("*.parquet")) - files_before     # it left files behind ...
    assert store_fingerprint(store) == before               # ... and committed nothing
    assert store.runs()["name"].tolist() == ["kept"]
    # the store goes on: the same file again lands whole
    assert store.ingest(parse_paths([big])).runs["status"].tolist() == ["added"]
    runs = store.runs().set_index("name")
    assert runs.loc["big", "n_scores"] == n and runs.loc["kept", "n_scores"] == 2 * ITEMS
    store.close()
