"""The store's tables (DuckLake DDL, the keys checked before each commit) and the Arrow specs of
incoming frames."""

import pyarrow as pa

from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TEXT_COLUMNS,
)

# ---------------------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------------------

# DuckLake has no PRIMARY KEY / UNIQUE constraints and no per-column compression: the keys
# below are kept by the write code (``_Writes``) and checked before every commit
# (``KEY_CHECKS``); a violation rolls the transaction back.
_DDL = (
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id INTEGER NOT NULL,            -- key
        name VARCHAR NOT NULL,              -- unique
        model VARCHAR,
        source_format VARCHAR NOT NULL,
        harness VARCHAR,
        harness_version VARCHAR,
        protocol VARCHAR NOT NULL,          -- JSON text of the run-level protocol dict
        tags VARCHAR[] NOT NULL,
        created_at TIMESTAMP NOT NULL,      -- UTC upload time
        source_key VARCHAR
    )""",
    """CREATE TABLE IF NOT EXISTS files (
        -- idempotency key: the file's sha256, or for one run of a file that holds several
        -- (a tidy table) "rows:" + the digest of that run's rows (SourceFile.run_key)
        key VARCHAR NOT NULL,
        sha256 VARCHAR NOT NULL,
        run_id INTEGER NOT NULL,
        name VARCHAR NOT NULL,
        size BIGINT NOT NULL,
        format VARCHAR NOT NULL,
        added_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS items (
        item INTEGER NOT NULL,              -- key; allocated from meta next_item
        task VARCHAR NOT NULL,              -- unique (task, item_id)
        item_id VARCHAR NOT NULL            -- the harness's item id
    )""",
    """CREATE TABLE IF NOT EXISTS labels (
        label INTEGER NOT NULL,             -- key; allocated from meta next_label
        task VARCHAR NOT NULL,              -- unique (task, value)
        value VARCHAR NOT NULL              -- a cluster label, item hash or prompt hash
    )""",
    """CREATE TABLE IF NOT EXISTS scores (
        -- one row per (run, task, metric, item, answer); rows of one ingest call are
        -- written sorted by task, metric, item, run_id
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        item INTEGER NOT NULL,              -- items.item
        answer_idx INTEGER NOT NULL,
        score DOUBLE NOT NULL,
        cluster INTEGER,                    -- labels.label of the cluster label
        item_hash INTEGER,                  -- labels.label of the item hash
        prompt_hash INTEGER                 -- labels.label of the prompt hash
    )""",
    """CREATE TABLE IF NOT EXISTS cells (
        run_id INTEGER NOT NULL,            -- key (run_id, task, metric)
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        n_items BIGINT NOT NULL,            -- items (distinct item_id)
        n_scores BIGINT NOT NULL,           -- score rows (items x answers)
        k_max INTEGER NOT NULL,             -- most answers of one item
        sum DOUBLE NOT NULL,                -- sum of per-item means
        sumsq DOUBLE NOT NULL,              -- sum of squared per-item means
        is_binary BOOLEAN NOT NULL,         -- every raw score is 0 or 1
        has_cluster BOOLEAN NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS vectors (
        -- schema 4: one row per cells row (key run_id, task, metric; none for a cell whose
        -- keys lie far apart), the run's per-item means of the cell over its item-key
        -- range [lo, lo + span); encoding in store/vectors.py
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        lo INTEGER NOT NULL,                -- smallest item key of the run in the cell
        span INTEGER NOT NULL,              -- largest key - lo + 1
        n INTEGER NOT NULL,                 -- items present
        bits BOOLEAN NOT NULL,              -- vals are packed 0/1 bits (else float64 means)
        present BLOB NOT NULL,              -- packbits (little) of the items present
        vals BLOB NOT NULL,                 -- the per-item means (see bits)
        labs BLOB                           -- int32 cluster label key per slot (-1 none)
    )""",
    """CREATE TABLE IF NOT EXISTS summaries (
        run_id INTEGER NOT NULL,            -- key (run_id, task, metric)
        task VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE,
        stderr DOUBLE,
        stderr_raw VARCHAR,
        n BIGINT,
        is_group BOOLEAN NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS texts (
        run_id INTEGER NOT NULL,
        task VARCHAR NOT NULL,
        item INTEGER NOT NULL,              -- items.item
        answer_idx INTEGER NOT NULL,
        prompt VARCHAR,
        target VARCHAR,
        response VARCHAR
    )""",
    """CREATE TABLE IF NOT EXISTS run_owners (
        run_id INTEGER NOT NULL,            -- key; the uploader of each run (store.history)
        owner VARCHAR NOT NULL              -- access.Actor.owner_key
    )""",
    """CREATE TABLE IF NOT EXISTS tasks (
        run_id INTEGER NOT NULL,            -- key (run_id, task)
        task VARCHAR NOT NULL,
        n_choices INTEGER,
        protocol VARCHAR NOT NULL           -- JSON text of the task protocol dict
    )""",
)

# The keys DuckLake cannot declare, as (what, query returning one offending key or nothing).
# Run inside every write transaction before COMMIT (the small tables only: runs, files,
# cells, vectors (their key columns), summaries, tasks, meta; milliseconds).
KEY_CHECKS = (
    ("run id", "SELECT run_id FROM runs GROUP BY run_id HAVING count(*) > 1 LIMIT 1"),
    ("run name", "SELECT name FROM runs GROUP BY name HAVING count(*) > 1 LIMIT 1"),
    ("file key", "SELECT key FROM files GROUP BY key HAVING count(*) > 1 LIMIT 1"),
    ("cell", "SELECT run_id, task, metric FROM cells GROUP BY ALL HAVING count(*) > 1 LIMIT 1"),
    ("summary", ("SELECT run_id, task, metric FROM summaries GROUP BY ALL "
                 "HAVING count(*) > 1 LIMIT 1")),
    ("vector", "SELECT run_id, task, metric FROM vectors GROUP BY ALL HAVING count(*) > 1 LIMIT 1"),
    ("task", "SELECT run_id, task FROM tasks GROUP BY ALL HAVING count(*) > 1 LIMIT 1"),
    ("meta key", "SELECT key FROM meta GROUP BY key HAVING count(*) > 1 LIMIT 1"),
)
META_KEY_CHECK = KEY_CHECKS[-1:]   # an ingest checks the others over what it wrote

# items and labels grow with the store: their keys are checked by the write that adds rows,
# over what it adds only (batch._Batch.flush)

# Schema 3 (integer item keys) in the catalog's own words; the v2 -> v3 upgrade rewrites
# scores and texts (catalog.upgrade_v2).
SCHEMA_V3_TABLES = ("items", "labels")

# Schema 4: the per-cell item vectors (store/vectors.py); the v3 -> v4 upgrade fills them
# from the scores (upgrade.upgrade_v3).
SCHEMA_V4_TABLES = ("vectors",)

TABLES = ("meta", "runs", "files", "items", "labels", "scores", "cells", "vectors", "summaries",
          "texts", "tasks", "run_owners")


# Arrow schemas of the canonical frames: (column, type, required)
_SCORE_SPEC = (("task", pa.large_string(), True), ("metric", pa.large_string(), True),
               ("item_id", pa.large_string(), True), ("answer_idx", pa.int32(), True),
               ("score", pa.float64(), True), ("cluster", pa.large_string(), False),
               ("item_hash", pa.large_string(), False), ("prompt_hash", pa.large_string(), False))
_SUMMARY_SPEC = (("task", pa.large_string(), True), ("metric", pa.large_string(), True),
                 ("value", pa.float64(), False), ("stderr", pa.float64(), False),
                 ("stderr_raw", pa.large_string(), False), ("n", pa.int64(), False),
                 ("is_group", pa.bool_(), False))
_TEXT_SPEC = (("task", pa.large_string(), True), ("item_id", pa.large_string(), True),
              ("answer_idx", pa.int32(), True), ("prompt", pa.large_string(), False),
              ("target", pa.large_string(), False), ("response", pa.large_string(), False))
_EMPTY_CELLS = pa.table({"task": pa.array([], pa.string()), "metric": pa.array([], pa.string()),
                         "n_items": pa.array([], pa.int64()), "n_scores": pa.array([], pa.int64()),
                         "k_max": pa.array([], pa.int32()), "sum": pa.array([], pa.float64()),
                         "sumsq": pa.array([], pa.float64()), "is_binary": pa.array([], pa.bool_()),
                         "has_cluster": pa.array([], pa.bool_())})
assert tuple(c for c, _, _ in _SCORE_SPEC) == SCORE_COLUMNS
assert tuple(c for c, _, _ in _SUMMARY_SPEC) == SUMMARY_COLUMNS
assert tuple(c for c, _, _ in _TEXT_SPEC) == TEXT_COLUMNS


