"""Schema 3 (integer item keys) from schema-2 rows: the in-place upgrade of a v2 DuckLake
store on first open by a writer, and the conversion ``migrate`` applies to an old
single-file store.

Schema 2 kept item_id, cluster, item_hash and prompt_hash as text in every score row (two
64-hex hashes per row: about 136 bytes per score on disk). Schema 3 keeps them once:
``items`` (item, task, item_id) and ``labels`` (label, task, value) hold each distinct
string of a task once, and score/text rows carry the integer keys. Keys are numbered
in (task, text) order here; later ingests continue from meta ``next_item``/``next_label``.

Schema 4 adds the per-cell item vectors (table ``vectors``, store/vectors.py): a v3 store is
upgraded on first open by a writer (``upgrade_v3``: the table is created and filled from the
scores, runs read in chunks), and ``migrate`` / an old single-file store fill it after
``fill_v3``.
"""

from __future__ import annotations

import duckdb

from evalcore.store import vectors
from evalcore.store._util import _one, meta_value

V3_SCORES = """CREATE TABLE {name} (run_id INTEGER NOT NULL, task VARCHAR NOT NULL,
    metric VARCHAR NOT NULL, item INTEGER NOT NULL, answer_idx INTEGER NOT NULL,
    score DOUBLE NOT NULL, cluster INTEGER, item_hash INTEGER, prompt_hash INTEGER)"""
V3_TEXTS = """CREATE TABLE {name} (run_id INTEGER NOT NULL, task VARCHAR NOT NULL,
    item INTEGER NOT NULL, answer_idx INTEGER NOT NULL, prompt VARCHAR, target VARCHAR,
    response VARCHAR)"""


def fill_v3(con: duckdb.DuckDBPyConnection, scores_src: str, texts_src: str,
            scores_dst: str = "scores", texts_dst: str = "texts",
            no_cluster: list[str] | None = None) -> tuple[int, int]:
    """Inside the open transaction: number every (task, item_id) and (task, label/hash)
    of the schema-2 tables ``scores_src``/``texts_src`` (fixed SQL names) into the empty
    ``items``/``labels``, and copy the rows into the schema-3 ``scores_dst``/``texts_dst``.
    ``no_cluster``: "run_id|task" of the runs' tasks whose cluster labels are not copied
    (``legacy.cluster_policy``). Returns (next_item, next_label)."""
    drop = list(no_cluster or [])
    # a score row's cluster label, unless its (run, task) is in ``drop`` (the ? parameter)
    cluster = ("CASE WHEN list_contains(?::VARCHAR[], CAST(run_id AS VARCHAR) || '|' || task) "
               "THEN NULL ELSE cluster END")
    con.execute(f"""INSERT INTO items
        SELECT CAST(row_number() OVER (ORDER BY task, item_id) AS INTEGER), task, item_id
        FROM (SELECT task, item_id FROM {scores_src} UNION SELECT task, item_id FROM {texts_src})""")
    con.execute(f"""INSERT INTO labels
        SELECT CAST(row_number() OVER (ORDER BY task, value) AS INTEGER), task, value FROM (
            SELECT task, value FROM (SELECT task, {cluster} AS value FROM {scores_src})
                WHERE value IS NOT NULL UNION
            SELECT task, item_hash FROM {scores_src} WHERE item_hash IS NOT NULL UNION
            SELECT task, prompt_hash FROM {scores_src} WHERE prompt_hash IS NOT NULL)""", [drop])
    con.execute(f"""INSERT INTO {scores_dst}
        SELECT s.run_id, s.task, s.metric, i.item, s.answer_idx, s.score, c.label, ih.label,
               ph.label
        FROM (SELECT * REPLACE ({cluster} AS cluster) FROM {scores_src}) s
        JOIN items i ON i.task = s.task AND i.item_id = s.item_id
        LEFT JOIN labels c ON c.task = s.task AND c.value = s.cluster
        LEFT JOIN labels ih ON ih.task = s.task AND ih.value = s.item_hash
        LEFT JOIN labels ph ON ph.task = s.task AND ph.value = s.prompt_hash
        ORDER BY s.task, s.metric, i.item, s.run_id, s.answer_idx""", [drop])
    con.execute(f"""INSERT INTO {texts_dst}
        SELECT t.run_id, t.task, i.item, t.answer_idx, t.prompt, t.target, t.response
        FROM {texts_src} t JOIN items i ON i.task = t.task AND i.item_id = t.item_id
        ORDER BY t.task, i.item, t.answer_idx, t.run_id""")
    n_items = int(_one(con, "SELECT coalesce(max(item), 0) FROM items")[0])
    n_labels = int(_one(con, "SELECT coalesce(max(label), 0) FROM labels")[0])
    return n_items + 1, n_labels + 1


def set_counters(con: duckdb.DuckDBPyConnection, next_item: int, next_label: int,
                 version: str = "3") -> None:
    """meta: schema_version ``version`` and the key counters (rows added when missing)."""
    for key, value in (("schema_version", version), ("next_item", str(next_item)),
                       ("next_label", str(next_label))):
        if _one(con, "SELECT count(*) FROM meta WHERE key = ?", [key])[0]:
            con.execute("UPDATE meta SET value = ? WHERE key = ?", [value, key])
        else:
            con.execute("INSERT INTO meta VALUES (?, ?)", [key, value])


def upgrade_v2(con: duckdb.DuckDBPyConnection) -> None:
    """Inside the open transaction: a schema-2 DuckLake store becomes schema 3 (new scores
    and texts tables are filled from the old ones, which are then dropped)."""
    if meta_value(con, "schema_version") != "2":
        return          # another process upgraded it first
    con.execute("CREATE TABLE items (item INTEGER NOT NULL, task VARCHAR NOT NULL, "
                "item_id VARCHAR NOT NULL)")
    con.execute("CREATE TABLE labels (label INTEGER NOT NULL, task VARCHAR NOT NULL, "
                "value VARCHAR NOT NULL)")
    con.execute(V3_SCORES.format(name="scores_v3"))
    con.execute(V3_TEXTS.format(name="texts_v3"))
    next_item, next_label = fill_v3(con, "scores", "texts", "scores_v3", "texts_v3")
    con.execute("DROP TABLE scores")
    con.execute("DROP TABLE texts")
    con.execute("ALTER TABLE scores_v3 RENAME TO scores")
    con.execute("ALTER TABLE texts_v3 RENAME TO texts")
    set_counters(con, next_item, next_label)


V4_VECTORS = """CREATE TABLE IF NOT EXISTS vectors (run_id INTEGER NOT NULL, task VARCHAR NOT NULL,
    metric VARCHAR NOT NULL, lo INTEGER NOT NULL, span INTEGER NOT NULL, n INTEGER NOT NULL,
    bits BOOLEAN NOT NULL, present BLOB NOT NULL, vals BLOB NOT NULL, labs BLOB)"""


def upgrade_v3(con: duckdb.DuckDBPyConnection) -> None:
    """Inside the open transaction: a schema-3 DuckLake store becomes schema 4 (the table
    ``vectors`` is created and filled from the score rows, ``vectors.fill``)."""
    if meta_value(con, "schema_version") != "3":
        return          # another process upgraded it first
    con.execute(V4_VECTORS)
    con.execute("DELETE FROM vectors")    # rows a schema-3 store cannot have written
    vectors.fill(con)
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
