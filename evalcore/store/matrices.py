"""The analysis layer's batched reads: per-item means of many cells in one query, items x
runs matrices (``item_matrices``), integer cluster codes, paired sums against reference runs.
A mixin of ``Store`` beside ``query._Queries`` (whose ``_where`` these use)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from evalcore.errors import StoreError
from evalcore.model import ItemMatrix
from evalcore.store._util import _fetch_rows, _one
from evalcore.store.query import _Queries


class _MatrixQueries:
    """Batched reads for the leaderboard, compare and items analyses."""

    # ---- batched reads for the analysis layer (leaderboard tiers and ranks, compare) ----
    # Each replaces one query per task by one query for all tasks. The (task, metric) lists
    # travel as two ``?`` list parameters and are unnested in SQL (no user text in the SQL).

    @staticmethod
    def _item_means_sql(con: duckdb.DuckDBPyConnection, tasks: list[str], metrics: list[str],
                        run_ids: list[int] | None) -> tuple[str, list]:
        """SELECT run_id, task, metric, item (integer key), m (per-item mean over answers) for the
        (task, metric) pairs of the CTE ``tm`` and the given runs. Runs whose selected cells
        all have one answer per item (``cells.k_max = 1``) read their scores as the item
        means without a GROUP BY (a third of the time on 2M scores); the other runs average
        over answers."""
        where_c, pc = _Queries._where(run_ids, None, None, "c")
        rows = con.execute("SELECT c.run_id, max(c.k_max) FROM cells c SEMI JOIN (SELECT "
                           "unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric) tm "
                           f"USING (task, metric){where_c} GROUP BY c.run_id",
                           [tasks, metrics] + pc).fetchall()
        one = [int(r) for r, k in rows if int(k) <= 1]
        many = [int(r) for r, k in rows if int(k) > 1]
        w1, p1 = _Queries._where(one, None, None, "s")
        wk, pk = _Queries._where(many, None, None, "s")
        return ("SELECT s.run_id, s.task, s.metric, s.item, s.score AS m FROM scores s "
                f"SEMI JOIN tm USING (task, metric){w1} UNION ALL "
                "SELECT s.run_id, s.task, s.metric, s.item, avg(s.score) AS m FROM scores s "
                f"SEMI JOIN tm USING (task, metric){wk} "
                "GROUP BY s.run_id, s.task, s.metric, s.item"), p1 + pk

    def item_mean_rows(self, task_metrics: list[tuple[str, str]],
                       run_ids: list[int] | None = None) -> pd.DataFrame:
        """Per-item means of several (task, metric) cells in one Arrow query, lean columns:
        run_id, task, metric, item_id, score (mean over the item's answers), ordered by
        run_id, task, metric, item_id. For pivoting items x runs in numpy (rank intervals)."""
        tms = [(str(t), str(m)) for t, m in task_metrics]
        if not tms:
            return pd.DataFrame({"run_id": pd.Series(dtype="int32"), "task": pd.Series(dtype=str),
                                 "metric": pd.Series(dtype=str), "item_id": pd.Series(dtype=str),
                                 "score": pd.Series(dtype=float)})
        tasks, metrics = [t for t, _ in tms], [m for _, m in tms]
        with self._read() as con:
            x_sql, px = self._item_means_sql(con, tasks, metrics, run_ids)
            sql = ("WITH tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric) "
                   f"SELECT x.run_id, x.task, x.metric, i.item_id, x.m AS score FROM ({x_sql}) x "
                   "JOIN items i USING (item) ORDER BY x.run_id, x.task, x.metric, i.item_id")
            return _fetch_rows(con, sql, [tasks, metrics] + px)

    def reference_moments(self, comparisons: list[tuple[str, str, int]],
                          run_ids: list[int] | None = None) -> pd.DataFrame:
        """Paired sufficient statistics of every run against a reference run, one query.

        ``comparisons``: (task, metric, reference run_id) triples. For each triple and each
        run r with item scores for (task, metric) (only ``run_ids`` when given; the reference
        itself included), over the items r and the reference both have, with per-item means
        x_i (run r) and y_i (reference) and d_i = x_i - y_i:
        n (shared items), sum_d = sum d_i, sum_d2 = sum d_i^2, b = #{x_i = 1, y_i = 0},
        c = #{x_i = 0, y_i = 1}. Enough for the paired mean difference sum_d/n, its SE
        sqrt((sum_d2 - sum_d^2/n)/(n-1)/n) and McNemar's b, c without pulling any item.
        Columns: task, metric, ref_run_id, run_id, n, sum_d, sum_d2, b, c (run_id ascending
        within each comparison). A run sharing no item with the reference has no row;
        repeated triples count once.
        """
        comps = list(dict.fromkeys((str(t), str(m), int(r)) for t, m, r in comparisons))
        cols = ["task", "metric", "ref_run_id", "run_id", "n", "sum_d", "sum_d2", "b", "c"]
        if not comps:
            return pd.DataFrame({c: pd.Series(dtype=float if c.startswith("sum") else
                                              (str if c in ("task", "metric") else "int64"))
                                 for c in cols})
        tasks = [t for t, _, _ in comps]
        metrics = [m for _, m, _ in comps]
        refs = [r for _, _, r in comps]
        with self._read() as con:
            x_sql, px = self._item_means_sql(con, tasks, metrics, run_ids)
            # grouping on the comparison's number k (an integer) rather than on the task and
            # metric strings halves the aggregation time on 2M joined rows
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

    def paired_item_means_tasks(self, run_a: int, run_b: int,
                                task_metrics: list[tuple[str, str]]) -> pd.DataFrame:
        """``paired_item_means`` and ``pairing`` of two runs for several (task, metric) cells
        in one query: every item either run has, columns task, metric, item_id, score_a,
        score_b (NaN where that run lacks the item), cluster (run A's, else B's), hash_match
        (False when both runs recorded an item or prompt hash and they differ), ordered by
        task, metric, item_id."""
        tms = [(str(t), str(m)) for t, m in task_metrics]
        tasks, metrics = [t for t, _ in tms], [m for _, m in tms]
        side = ("SELECT s.task, s.metric, s.item, avg(s.score) AS s, min(s.cluster) AS cl, "
                "min(s.item_hash) AS ih, min(s.prompt_hash) AS ph FROM scores s "
                "SEMI JOIN tm USING (task, metric) WHERE s.run_id = ? "
                "GROUP BY s.task, s.metric, s.item")
        # joined on the integer item keys; item ids and cluster labels joined at the end
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
        with self._read() as con:
            return _fetch_rows(con, sql, [tasks, metrics, int(run_a), int(run_b)])

    def item_texts(self, run_ids: list[int], task: str) -> pd.DataFrame:
        """run_id, item_id, prompt, target, response of each item's first answer
        (answer_idx 0) of ``task`` in the runs: the Items page reads each model's pick (the
        response: for lm_eval multiple choice the chosen option's text) and the gold (target)
        from it."""
        ids = [int(r) for r in run_ids]
        with self._read() as con:
            return _fetch_rows(
                con, "SELECT t.run_id, i.item_id, t.prompt, t.target, t.response FROM texts t "
                "JOIN (SELECT item, item_id FROM items WHERE task = ?) i ON i.item = t.item "
                "WHERE list_contains(?, t.run_id) AND t.task = ? AND t.answer_idx = 0 "
                "ORDER BY t.run_id, i.item_id", [str(task), ids, str(task)])

    # ---- read queries added for page speed (perf helper, issue 9 section 2) -------------

    def item_mean_bounds(self, run_ids: list[int], task: str, metric: str) -> dict:
        """Range of the per-item means (mean over answers) of some runs on one (task, metric),
        NaN means left out: {"n": count of non-NaN means, "min": smallest, "max": largest}
        (min/max None when n = 0). One SQL aggregate instead of pulling every item mean
        (the leaderboard's check whether continuous scores are credit in [0, 1])."""
        where, params = self._where(run_ids, task, metric)
        sql = ("SELECT count(m), min(m), max(m) FROM (SELECT avg(score) AS m FROM scores"
               f"{where} GROUP BY run_id, item) WHERE NOT isnan(m)")
        with self._read() as con:
            n, lo, hi = _one(con, sql, params) or (0, None, None)
        return {"n": int(n or 0), "min": None if lo is None else float(lo),
                "max": None if hi is None else float(hi)}

    def item_cluster_codes(self, task_metrics: list[tuple[str, str]],
                           run_ids: list[int] | None = None) -> pd.DataFrame:
        """Per-item means with integer cluster codes for several (task, metric) cells, no
        text columns: k (position of the cell in ``task_metrics``), run_id, score (mean over
        the item's answers), code (dense 0..G-1 within the cell, the same code for the same
        cluster label in every run; an item without a label is its own cluster, keyed by its
        item_id), has_cluster (the item has a label). For the clustered interval method
        (``stats.grouped_clustered_intervals``).

        One filtered scan for all cells (the cell number comes from ``list_position`` on the
        task and metric, not from a join); runs with one answer per item (``cells.k_max =
        1``) skip the GROUP BY. Labels travel as the store's integer label keys (one key per
        distinct label of a task, so the codes are exact) and become dense codes in numpy;
        an item whose answers carry different labels takes the smallest key's label."""
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        empty = pd.DataFrame({"k": pd.Series(dtype="int32"), "run_id": pd.Series(dtype="int32"),
                              "score": pd.Series(dtype=float), "code": pd.Series(dtype="int64"),
                              "has_cluster": pd.Series(dtype=bool)})
        if not tms:
            return empty
        tasks = list(dict.fromkeys(t for t, _ in tms))
        metrics = list(dict.fromkeys(m for _, m in tms))
        cell_of = {(tasks.index(t) + 1, metrics.index(m) + 1): k for k, (t, m) in enumerate(tms)}
        base, pbase = self._where(run_ids, None, None)
        filt = (f"{base}{' AND' if base else ' WHERE'} task IN ({', '.join('?' * len(tasks))}) "
                f"AND metric IN ({', '.join('?' * len(metrics))})")
        pfilt = pbase + tasks + metrics
        pos = "list_position(?::VARCHAR[], task) AS kt, list_position(?::VARCHAR[], metric) AS km"
        with self._read() as con:
            ks = con.execute(f"SELECT run_id, max(k_max) FROM cells{filt} GROUP BY run_id",
                             pfilt).fetchall()
            one = [int(r) for r, km in ks if int(km) <= 1]
            many = [int(r) for r, km in ks if int(km) > 1]

            def x_sql(label: str) -> tuple[str, list]:
                w1, p1 = self._where(one, None, None)
                wk, pk = self._where(many, None, None)
                cond = f" AND task IN ({', '.join('?' * len(tasks))}) AND metric IN " \
                       f"({', '.join('?' * len(metrics))})"
                return (f"SELECT {pos}, run_id, score AS m, {label.format('cluster')} AS lab, "
                        "cluster IS NOT NULL AS has, CASE WHEN cluster IS NULL THEN item END "
                        f"AS lone FROM scores{w1}{cond if one else ''} UNION ALL "
                        f"SELECT {pos}, run_id, avg(score), {label.format('min(cluster)')}, "
                        "min(cluster) IS NOT NULL, CASE WHEN min(cluster) IS NULL THEN item "
                        f"END FROM scores{wk}{cond if many else ''} "
                        "GROUP BY task, metric, run_id, item",
                        [tasks, metrics] + p1 + (tasks + metrics if one else [])
                        + [tasks, metrics] + pk + (tasks + metrics if many else []))

            sql, params = x_sql("{}")
            got = con.execute(sql, params).fetchnumpy()
            n_labels = {cell_of.get((int(a), int(b))): int(n) for a, b, n in con.execute(
                f"SELECT {pos}, count(DISTINCT cluster) FROM scores{filt} GROUP BY task, metric",
                [tasks, metrics] + pfilt).fetchall()}
            lut = np.full((len(tasks) + 1) * (len(metrics) + 1), -1, dtype=np.int64)
            for (a, b), k in cell_of.items():
                lut[a * (len(metrics) + 1) + b] = k

            def split(res: dict) -> tuple[np.ndarray, np.ndarray]:
                """Row order grouping the cells, and each cell's slice bounds in it."""
                kt = np.asarray(res["kt"], dtype=np.int64)
                km = np.asarray(res["km"], dtype=np.int64)
                cell = lut[kt * (len(metrics) + 1) + km]
                order = np.argsort(cell, kind="stable")
                return order, np.searchsorted(cell[order], np.arange(-1, len(tms) + 1))

            order, bounds = split(got)
            labs = [np.asarray(got[c])[order] for c in ("lab", "has")]
            hashed = True
            for k in range(len(tms)):
                sl = slice(bounds[k + 1], bounds[k + 2])
                lab, has = labs[0][sl], labs[1][sl].astype(bool)
                if has.any() and len(np.unique(lab[has])) != n_labels.get(k, -1):
                    hashed = False   # hash collision or labels differing within an item
                    break
            if not hashed:           # fetch the labels themselves (text)
                sql, params = x_sql("{}")
                got = con.execute(sql, params).fetchnumpy()
                order, bounds = split(got)
            cols = {c: np.asarray(got[c], dtype=object if c in ("lone", "lab") and
                                  (c == "lone" or not hashed) else None)[order]
                    for c in ("run_id", "m", "lab", "has", "lone")}
            frames = []
            for k in range(len(tms)):
                sl = slice(bounds[k + 1], bounds[k + 2])
                if sl.stop <= sl.start:
                    continue
                has = cols["has"][sl].astype(bool)
                code = np.zeros(has.size, dtype=np.int64)
                g = 0
                if has.any():
                    lab = cols["lab"][sl][has]
                    if hashed:
                        uniq, inv = np.unique(lab, return_inverse=True)
                    else:
                        inv, uniq = pd.factorize(pd.Series(lab))
                    code[has] = inv
                    g = len(uniq)
                if (~has).any():
                    code[~has] = g + pd.factorize(pd.Series(cols["lone"][sl][~has]))[0]
                frames.append(pd.DataFrame({
                    "k": np.full(has.size, k, dtype=np.int32),
                    "run_id": cols["run_id"][sl].astype(np.int32),
                    "score": cols["m"][sl].astype(float), "code": code, "has_cluster": has}))
        return pd.concat(frames, ignore_index=True) if frames else empty

    # ---- the analysis layer's matrix read (issue 9) ------------------------------------

    def item_matrices(self, task_metrics: list[tuple[str, str]],
                      run_ids: list[int] | None = None) -> dict[tuple[str, str], ItemMatrix]:
        """Per-item means (mean over the item's answers) of several (task, metric) cells as
        items x runs matrices, one query for all cells.

        Returns {(task, metric): ItemMatrix} for the cells some asked run (all runs when
        ``run_ids`` is None) has item scores for; a cell no asked run scored is absent.
        ``run_ids`` of a matrix: the asked runs with item scores for the cell, ascending;
        ``items``: the store's integer item keys of the cell's items (every item any of
        those runs scored), ascending; ``scores``: NaN where a run lacks the item;
        ``binary``: every raw score of the cell in those runs is 0 or 1 (``cells.is_binary``).
        Runs with one answer per item skip the GROUP BY (as ``item_cluster_codes``).

        The score rows are read as integers and doubles only (run_id, item, score; plus a
        metric number when several metrics are asked): an item key belongs to one task
        (keys are global, ``items``), so the task of a row comes from a lookup table over
        the asked tasks' key range, not from a string column. The matrices are filled by
        one scatter into one buffer (no sort).
        """
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        if not tms:
            return {}
        tasks = [t for t, _ in tms]
        metrics = [m for _, m in tms]
        base, pbase = self._where(run_ids, None, None, "s")
        tm = ("tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric, "
              "unnest(range(?)) AS k)")
        utasks = sorted(set(tasks))
        umetrics = sorted(set(metrics))
        # a task filter only for a few tasks (it lets the scan skip the other tasks' row
        # groups, but costs a string test per row); one metric: a filter, no metric column
        few = len(utasks) <= 3
        with self._read() as con:
            cells = con.execute(
                f"WITH {tm} SELECT tm.k, s.run_id, s.k_max, s.is_binary FROM cells s "
                f"JOIN tm USING (task, metric){base}", [tasks, metrics, len(tms)] + pbase
            ).fetchall()
            if not cells:
                return {}
            spans = con.execute(
                "SELECT task, min(item), max(item), count(*) FROM items "
                "WHERE list_contains(?::VARCHAR[], task) GROUP BY task", [utasks]).fetchall()
            if not spans:
                return {}
            kmin = min(int(lo) for _, lo, _, _ in spans)
            kmax = max(int(hi) for _, _, hi, _ in spans)
            # lut[metric number, item key - kmin] -> cell number k (-1: not asked)
            lut = np.full((len(umetrics), kmax - kmin + 1), -1, dtype=np.int32)
            mpos = {m: i for i, m in enumerate(umetrics)}
            cells_of: dict[str, list[tuple[int, int]]] = {}
            for k, (t, m) in enumerate(tms):
                cells_of.setdefault(t, []).append((mpos[m], k))
            if all(int(hi) - int(lo) + 1 == int(n) for _, lo, hi, n in spans):
                for t, lo, hi, _ in spans:          # each task's keys: one contiguous range
                    for mi, k in cells_of[str(t)]:
                        lut[mi, int(lo) - kmin:int(hi) - kmin + 1] = k
            else:
                got_keys = con.execute(
                    "SELECT task, item FROM items WHERE list_contains(?::VARCHAR[], task)",
                    [utasks]).fetch_arrow_table()
                key_task = got_keys.column("task").to_numpy(zero_copy_only=False)
                key_item = got_keys.column("item").to_numpy().astype(np.int64) - kmin
                for t, pairs in cells_of.items():
                    sel = key_item[key_task == t]
                    for mi, k in pairs:
                        lut[mi, sel] = k
            one = sorted({int(r) for _, r, km, _ in cells}
                         - {int(r) for _, r, km, _ in cells if int(km) > 1})
            many = sorted({int(r) for _, r, _, _ in cells} - set(one))
            binary: dict[int, bool] = {}
            for k, _, _, b in cells:
                binary[int(k)] = binary.get(int(k), True) and bool(b)
            if len(umetrics) == 1:
                mcol, mcond, pm = "", " AND s.metric = ?", umetrics
            else:
                mcol = "list_position(?::VARCHAR[], s.metric) - 1 AS km, "
                mcond = f" AND s.metric IN ({', '.join('?' * len(umetrics))})"
                pm = umetrics
            tcond = f" AND s.task IN ({', '.join('?' * len(utasks))})" if few else ""
            pt = utasks if few else []
            parts, params = [], []
            for ids, grouped in ((one, False), (many, True)):
                if not ids:
                    continue
                w, p = self._where(ids, None, None, "s")
                if grouped:
                    parts.append(f"SELECT {mcol}s.run_id, s.item, avg(s.score) AS m "
                                 f"FROM scores s{w}{mcond}{tcond} GROUP BY ALL")
                else:
                    parts.append(f"SELECT {mcol}s.run_id, s.item, s.score AS m "
                                 f"FROM scores s{w}{mcond}{tcond}")
                params += ([umetrics] if mcol else []) + p + pm + pt
            # Arrow, then numpy: about half the time of fetchnumpy on 2M rows
            table = con.execute(" UNION ALL ".join(parts), params).fetch_arrow_table()
            got = {c: table.column(c).to_numpy() for c in table.column_names}
            del table
        return _fill_matrices(tms, got, lut, kmin, binary)

    def item_labels(self, task: str, items: np.ndarray | list[int]) -> list[str]:
        """The item ids (as the harness wrote them) of integer item keys of ``task``
        (``ItemMatrix.items``), in the given order; StoreError for a key the task lacks."""
        keys = [int(i) for i in np.asarray(items, dtype=np.int64).ravel()]
        if not keys:
            return []
        with self._read() as con:
            rows = con.execute("SELECT item, item_id FROM items WHERE task = ? AND "
                               "list_contains(?, item)", [str(task), sorted(set(keys))]
                               ).fetchall()
        label = {int(k): v for k, v in rows}
        missing = [k for k in keys if k not in label]
        if missing:
            raise StoreError(f"task {task!r} has no item with key {missing[0]} "
                             f"({len(missing)} unknown key(s))")
        return [label[k] for k in keys]


def _fill_matrices(tms: list[tuple[str, str]], got: dict[str, np.ndarray], lut: np.ndarray,
                   kmin: int, binary: dict[int, bool]) -> dict[tuple[str, str], ItemMatrix]:
    """``item_matrices``' numpy half: rows (run_id, item, m, optional metric number km)
    -> one items x runs matrix per cell k = ``lut[km, item - kmin]``, run ids and item keys
    ascending, filled by one scatter into one NaN buffer (the matrices are views of it, one
    region each). Every pass over the rows is a gather or a scatter through small tables
    (cell x run id, metric number x item key): no sort, no unique."""
    n_m, span = lut.shape
    mean = np.asarray(got["m"], dtype=np.float64)
    if mean.size == 0:
        return {}
    # key: flat index into lut (metric number x item key)
    key = np.subtract(np.asarray(got["item"]), kmin, dtype=np.int64)
    if "km" in got:
        key += np.asarray(got["km"]).astype(np.int64) * span
    run = np.asarray(got["run_id"]).astype(np.int64)
    flat_lut = lut.ravel()
    if int(key.min()) < 0 or int(key.max()) >= flat_lut.size:   # rows of other tasks
        inside = (key >= 0) & (key < flat_lut.size)
        key, run, mean = key[inside], run[inside], mean[inside]
    cell = flat_lut[key].astype(np.int64)
    if cell.size and int(cell.min()) < 0:                         # tasks asked, not this metric
        keep = cell >= 0
        key, run, mean, cell = key[keep], run[keep], mean[keep], cell[keep]
    if cell.size == 0:
        return {}
    n_cells = len(tms)
    rmin = int(run.min())
    rspan = int(run.max()) - rmin + 1
    # runs of each cell: presence over (cell, run id); the column of a run = its rank
    rkey = cell * rspan + (run - rmin)
    has_run = np.zeros(n_cells * rspan, dtype=bool)
    has_run[rkey] = True
    has_run = has_run.reshape(n_cells, rspan)
    n_runs = has_run.sum(axis=1)
    # items of each cell: presence over (metric number, item key); a key belongs to one task,
    # so a (metric number, key) pair belongs to one cell; the row of an item = its rank
    has_item = np.zeros(n_m * span, dtype=bool)
    has_item[key] = True
    where = np.flatnonzero(has_item)
    owner = flat_lut[where]
    order = np.argsort(owner, kind="stable")      # by cell; keys ascending within a cell
    where, owner = where[order], owner[order]
    starts = np.searchsorted(owner, np.arange(n_cells + 1))
    n_items = np.diff(starts)
    rank = np.arange(where.size) - starts[owner]
    size = n_items * n_runs
    offset = np.concatenate([[0], np.cumsum(size)])
    # position of a row = offset of its cell + item row * runs of the cell + run column
    item_term = np.zeros(n_m * span, dtype=np.int64)
    item_term[where] = offset[owner] + rank * n_runs[owner]
    run_term = (np.cumsum(has_run, axis=1, dtype=np.int64) - 1).ravel()
    buf = np.full(int(offset[-1]), np.nan)
    buf[item_term[key] + run_term[rkey]] = mean
    out: dict[tuple[str, str], ItemMatrix] = {}
    for k, (t, m) in enumerate(tms):
        if size[k] == 0:
            continue
        keys = where[starts[k]:starts[k + 1]] % span + kmin
        out[(t, m)] = ItemMatrix(t, m, np.flatnonzero(has_run[k]).astype(np.int64) + rmin,
                                 keys.astype(np.int64),
                                 buf[offset[k]:offset[k + 1]].reshape(int(n_items[k]),
                                                                      int(n_runs[k])),
                                 binary.get(k, False))
    return out
