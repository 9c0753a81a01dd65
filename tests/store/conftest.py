"""Hand-made canonical runs and temporary stores for the store tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TASK_COLUMNS,
    TEXT_COLUMNS,
    ParsedRun,
    SourceFile,
)
from evalcore.store import Store


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def file_digest(path: Path) -> str | None:
    """sha256 of a file's bytes, None when it does not exist."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def store_fingerprint(store: Store) -> tuple:
    """The catalog's latest snapshot id and a digest of every table's rows (sorted): equal
    before and after an operation when it committed nothing."""
    from evalcore.store.schema import TABLES
    parts = [store.version()]
    with store._read() as con:
        for table in TABLES:
            rows = sorted(map(repr, con.execute(f"SELECT * FROM {table}").fetchall()))
            parts.append(hashlib.sha256("\n".join(rows).encode()).hexdigest())
    return tuple(parts)


def make_run(name: str = "run", *, model: str | None = "m", task: str = "t",
             metric: str = "acc", scores: list[float] | None = None,
             item_ids: list[str] | None = None, answers: int = 1,
             files: list[str] | None = None, source_key: str | None = None,
             protocol: dict[str, Any] | None = None, task_protocol: dict | None = None,
             n_choices: int | None = 4, summaries: list[dict] | None = None,
             item_hashes: list[str] | None = None, prompt_hashes: list[str] | None = None,
             clusters: list[str] | None = None, texts: bool = True,
             harness_version: str | None = "0.4.8", extra_cells: list[tuple] = ()) -> ParsedRun:
    """A ParsedRun with one (task, metric) cell; ``scores`` are per item (answers repeat
    them), ``extra_cells`` are (task, metric, scores) added alongside."""
    scores = [1.0, 0.0, 1.0] if scores is None else scores
    item_ids = [str(i) for i in range(len(scores))] if item_ids is None else item_ids
    rows = []
    cells = [(task, metric, scores, item_ids)] + [(t, m, s, [str(i) for i in range(len(s))])
                                                   for t, m, s in extra_cells]
    for t, m, sc, ids in cells:
        for i, (iid, s) in enumerate(zip(ids, sc)):
            for a in range(answers):
                rows.append({"task": t, "metric": m, "item_id": iid, "answer_idx": a,
                             "score": float(s),
                             "cluster": clusters[i] if clusters else None,
                             "item_hash": item_hashes[i] if item_hashes else sha(f"doc{iid}"),
                             "prompt_hash": prompt_hashes[i] if prompt_hashes else sha(f"p{iid}")})
    score_df = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    text_df = pd.DataFrame(
        [{"task": task, "item_id": iid, "answer_idx": 0, "prompt": f"Question {iid}?",
          "target": "A", "response": "B"} for iid in item_ids] if texts else [],
        columns=list(TEXT_COLUMNS))
    summ_df = pd.DataFrame(summaries or [], columns=list(SUMMARY_COLUMNS))
    task_df = pd.DataFrame([{"task": t, "n_choices": n_choices,
                             "protocol": dict(task_protocol or {"num_fewshot": 0})}
                            for t in dict.fromkeys(c[0] for c in cells)],
                           columns=list(TASK_COLUMNS))
    file_objs = [SourceFile(name=f, sha256=sha(f), size=len(f), format="lm_eval_samples_jsonl")
                 for f in (files if files is not None else [f"{name}.jsonl"])]
    return ParsedRun(name=name, model=model, source_format="lm_eval",
                     harness="lm-evaluation-harness", harness_version=harness_version,
                     protocol=dict(protocol or {"config": {"num_fewshot": 0}}),
                     files=file_objs, scores=score_df, summaries=summ_df, texts=text_df,
                     tasks=task_df, source_key=source_key)


def count_reads(monkeypatch) -> list:
    """Count ``Store._read`` calls from now on (each read cursor taken: a query of the store;
    ``version()`` reads on its own cursor and is not counted). ``monkeypatch.undo()`` stops."""
    calls: list[int] = []
    original = Store._read

    def counting(self, *a, **kw):
        calls.append(1)
        return original(self, *a, **kw)

    monkeypatch.setattr(Store, "_read", counting)
    return calls


def summary(task: str, metric: str, value: float, stderr: float | None,
            n: int | None, stderr_raw: str | None = None, is_group: bool = False) -> dict:
    return {"task": task, "metric": metric, "value": value,
            "stderr": np.nan if stderr is None else stderr, "stderr_raw": stderr_raw,
            "n": n, "is_group": is_group}


@pytest.fixture
def store(store_location) -> Store:
    return store_location.open(lock_timeout=5.0)


def export_legacy(store: Store, path: Path) -> Path:
    """Write ``store``'s tables into a single-file DuckDB store at ``path``: the layout of
    evalbars before DuckLake (schema 2: item ids, labels and hashes as text in score and
    text rows; read-only for today's Store)."""
    import duckdb

    from evalcore.store.schema import TABLES
    sql = {t: f"SELECT * FROM {t}" for t in TABLES if t not in ("items", "labels", "vectors")}
    sql["scores"] = ("SELECT run_id, task, metric, item_id, answer_idx, score, cluster, item_hash, "
                     f"prompt_hash FROM {store._text_scores('', None)[0]}")
    sql["texts"] = ("SELECT t.run_id, t.task, i.item_id, t.answer_idx, t.prompt, t.target, "
                    "t.response FROM texts t JOIN items i ON i.item = t.item")
    sql["meta"] = ("SELECT key, CASE WHEN key = 'schema_version' THEN '2' ELSE value END AS value "
                   "FROM meta WHERE key NOT IN ('next_item', 'next_label')")
    with store._read() as con:
        frames = {t: con.execute(q).fetch_arrow_table() for t, q in sql.items()}
    out = duckdb.connect(str(path))
    try:
        for t, frame in frames.items():
            out.register("_frame", frame)
            out.execute(f"CREATE TABLE {t} AS SELECT * FROM _frame")
            out.unregister("_frame")
        out.execute("CHECKPOINT")
    finally:
        out.close()
    return path


@pytest.fixture(params=["local", "postgres"])
def store_locations(request, store_locations, tmp_path):
    """Every store test runs twice: on a local store (SQLite catalog) and on a team store
    (a PostgreSQL catalog on the session's private cluster, tests/pg_cluster.py)."""
    if request.param == "local":
        return store_locations
    from tests.conftest import PostgresStoreLocations
    return PostgresStoreLocations(tmp_path, request.getfixturevalue("pg_cluster"))
