"""Independent SQL references for the store's two-run and items x runs reads.

These were store methods (``Store.reference_moments``, ``item_mean_rows``,
``paired_item_means_tasks``) until the analysis layer moved to integer-key reads in numpy
(``Store.item_matrices``, ``Store.paired_items``). They stay here, outside the product, as
an independent oracle: the same quantities computed by a plain SQL join on the store's
tables, which the tests compare with the numpy paths item by item. Each takes an open
``Store`` and reads through its read cursor; every value travels as a ``?`` parameter.
"""

from __future__ import annotations

import pandas as pd

from evalcore.store._util import _fetch_rows
from evalcore.store.query import _Queries


def _item_means_sql(con, tasks: list[str], metrics: list[str],
                    run_ids: list[int] | None) -> tuple[str, list]:
    """SELECT run_id, task, metric, item (integer key), m (per-item mean over answers) for the
    (task, metric) pairs of the CTE ``tm`` and the given runs (all runs when None)."""
    where, params = _Queries._where(run_ids, None, None, "s")
    return ("SELECT s.run_id, s.task, s.metric, s.item, avg(s.score) AS m FROM scores s "
            f"SEMI JOIN tm USING (task, metric){where} "
            "GROUP BY s.run_id, s.task, s.metric, s.item"), params


def item_mean_rows(store, task_metrics: list[tuple[str, str]],
                   run_ids: list[int] | None = None) -> pd.DataFrame:
    """Per-item means of several (task, metric) cells: run_id, task, metric, item_id, score
    (mean over the item's answers), ordered by run_id, task, metric, item_id."""
    tasks = [str(t) for t, _ in task_metrics]
    metrics = [str(m) for _, m in task_metrics]
    with store._read() as con:
        x_sql, px = _item_means_sql(con, tasks, metrics, run_ids)
        sql = ("WITH tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric) "
               f"SELECT x.run_id, x.task, x.metric, i.item_id, x.m AS score FROM ({x_sql}) x "
               "JOIN items i USING (item) ORDER BY x.run_id, x.task, x.metric, i.item_id")
        return _fetch_rows(con, sql, [tasks, metrics] + px)


def reference_moments(store, comparisons: list[tuple[str, str, int]],
                      run_ids: list[int] | None = None) -> pd.DataFrame:
    """Paired sufficient statistics of every run against a reference run, by a SQL join.

    ``comparisons``: (task, metric, reference run_id) triples. For each triple and each run r
    with item scores for (task, metric) (only ``run_ids`` when given; the reference itself
    included), over the items r and the reference both have, with per-item means x_i (run r)
    and y_i (reference), d_i = x_i - y_i: n, sum_d, sum_d2, b = #{x_i = 1, y_i = 0},
    c = #{x_i = 0, y_i = 1}. Columns: task, metric, ref_run_id, run_id, n, sum_d, sum_d2, b,
    c (run_id ascending within each comparison); repeated triples count once.
    """
    comps = list(dict.fromkeys((str(t), str(m), int(r)) for t, m, r in comparisons))
    cols = ["task", "metric", "ref_run_id", "run_id", "n", "sum_d", "sum_d2", "b", "c"]
    if not comps:
        return pd.DataFrame(columns=cols)
    tasks = [t for t, _, _ in comps]
    metrics = [m for _, m, _ in comps]
    refs = [r for _, _, r in comps]
    with store._read() as con:
        x_sql, px = _item_means_sql(con, tasks, metrics, run_ids)
        sql = f"""
            WITH cmp AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric,
                                unnest(?::INTEGER[]) AS ref_run, unnest(?::INTEGER[]) AS k),
                 tm AS (SELECT DISTINCT task, metric FROM cmp),
                 r AS (SELECT cmp.k, s.task, s.metric, s.item, avg(s.score) AS y
                       FROM scores s JOIN cmp ON s.run_id = cmp.ref_run AND s.task = cmp.task
                                             AND s.metric = cmp.metric
                       GROUP BY cmp.k, s.task, s.metric, s.item),
                 x AS ({x_sql}),
                 agg AS (SELECT r.k, x.run_id, count(*) AS n, sum(x.m - r.y) AS sum_d,
                                sum((x.m - r.y) * (x.m - r.y)) AS sum_d2,
                                count(*) FILTER (WHERE x.m = 1 AND r.y = 0) AS b,
                                count(*) FILTER (WHERE x.m = 0 AND r.y = 1) AS c
                         FROM x JOIN r ON x.task = r.task AND x.metric = r.metric
                                      AND x.item = r.item
                         GROUP BY r.k, x.run_id)
            SELECT cmp.task, cmp.metric, cmp.ref_run AS ref_run_id, agg.run_id, agg.n,
                   agg.sum_d, agg.sum_d2, agg.b, agg.c
            FROM agg JOIN cmp USING (k) ORDER BY cmp.k, agg.run_id"""
        return con.execute(sql, [tasks, metrics, refs, list(range(len(comps)))] + px).df()


def paired_item_means_tasks(store, run_a: int, run_b: int,
                            task_metrics: list[tuple[str, str]]) -> pd.DataFrame:
    """Two runs' per-item means on several (task, metric) cells by a SQL FULL OUTER JOIN:
    every item either run has, columns task, metric, item_id, score_a, score_b (NaN where
    that run lacks the item), cluster (run A's, else B's), hash_match (False when both runs
    recorded an item or prompt hash and they differ), ordered by task, metric, item_id."""
    tasks = [str(t) for t, _ in task_metrics]
    metrics = [str(m) for _, m in task_metrics]
    side = ("SELECT s.task, s.metric, s.item, avg(s.score) AS s, min(s.cluster) AS cl, "
            "min(s.item_hash) AS ih, min(s.prompt_hash) AS ph FROM scores s "
            "SEMI JOIN tm USING (task, metric) WHERE s.run_id = ? "
            "GROUP BY s.task, s.metric, s.item")
    sql = f"""
        WITH tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric),
             a AS ({side}), b AS ({side}),
             p AS (SELECT coalesce(a.task, b.task) AS task,
                          coalesce(a.metric, b.metric) AS metric,
                          coalesce(a.item, b.item) AS item, a.s AS score_a, b.s AS score_b,
                          coalesce(a.cl, b.cl) AS cl,
                          NOT (coalesce(a.ih <> b.ih, FALSE) OR coalesce(a.ph <> b.ph, FALSE))
                              AS hash_match
                   FROM a FULL OUTER JOIN b
                     ON a.task = b.task AND a.metric = b.metric AND a.item = b.item)
        SELECT p.task, p.metric, i.item_id, p.score_a, p.score_b, c.value AS cluster,
               p.hash_match
        FROM p JOIN items i ON i.item = p.item LEFT JOIN labels c ON c.label = p.cl
        ORDER BY 1, 2, 3"""
    with store._read() as con:
        return _fetch_rows(con, sql, [tasks, metrics, int(run_a), int(run_b)])
