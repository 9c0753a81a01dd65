"""The read queries of Store that the analysis layer and the pages use."""


import copy
import functools
import threading
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from evalcore.errors import StoreError
from evalcore.model import ItemMatrix
from evalcore.store._util import (
    _CATEGORY_ORDER,
    AUDIT_ABS_TOL,
    AUDIT_REL_TOL,
    VOLATILE_PROTOCOL_KEYS,
    _category,
    _display,
    _fetch_rows,
    _json_loads,
    _natural_key,
    _one,
    flatten_protocol,
)


def _audit_flags(df: pd.DataFrame) -> list[str | None]:
    """The audit's flag per row, from column arrays (one pass per rule, not per row; the
    same rules and tolerances as ``_agrees``): "stderr mismatch", "zero stderr with 0<p<1",
    "N/A stderr", "n mismatch", "value mismatch", joined with "; "; None when none."""
    def num(col: str) -> np.ndarray:
        return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)

    rep, rse = num("reported"), num("reported_stderr")
    rec, rec_se = num("recomputed"), num("recomputed_stderr")
    n_rep, n_items = num("n_reported"), num("n_items")

    def disagree(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        both = np.isfinite(a) & np.isfinite(b)
        with np.errstate(invalid="ignore"):
            return both & ~(np.abs(a - b) <= AUDIT_ABS_TOL + AUDIT_REL_TOL * np.abs(b))

    with np.errstate(invalid="ignore"):
        rules = (
            ("stderr mismatch", disagree(rse, rec_se)),
            ("zero stderr with 0<p<1", (rse == 0.0) & (rep > 0.0) & (rep < 1.0)),
            ("N/A stderr", df["stderr_raw"].notna().to_numpy(dtype=bool)),
            ("n mismatch", np.isfinite(n_rep) & np.isfinite(n_items)
             & (np.trunc(n_rep) != np.trunc(n_items))),
            ("value mismatch", disagree(rep, rec)),
        )
    hit = np.column_stack([m for _, m in rules]) if len(df) else np.zeros((0, len(rules)), bool)
    names = [n for n, _ in rules]
    return ["; ".join(n for n, h in zip(names, row) if h) if row.any() else None for row in hit]


def _dense_unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_inverse=True)`` for integer keys in a narrow range (run ids,
    the item keys of one task): a presence table instead of a sort."""
    lo, hi = int(x.min()), int(x.max())
    if hi - lo > 4 * x.size + 1024:
        return np.unique(x, return_inverse=True)
    present = np.zeros(hi - lo + 1, dtype=bool)
    present[x - lo] = True
    uniq = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    return uniq + lo, rank[x - lo]


_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 64


def _copy_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy the caller may mutate: new arrays, and new dicts/lists in object columns."""
    out = df.copy(deep=True)
    for col in out.columns:
        if out[col].dtype == object and len(out) and isinstance(out[col].iloc[0], (dict, list)):
            out[col] = [copy.deepcopy(v) for v in out[col]]
    return out


def _per_snapshot(fn):
    """Memoize a small-table read per store snapshot (``Store.version()``) inside one Store
    object: a page that asks for runs() three times reads the catalog once. Any committed
    write (by this or another process) makes a new snapshot, which misses. Thread-safe;
    every call returns its own copy (callers mutate frames)."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        version = self.version()
        key = (fn.__name__, repr(args), repr(sorted(kwargs.items())))
        with _MEMO_LOCK:
            memo = self.__dict__.setdefault("_memo", {})
            hit = memo.get(key)
        if hit is not None and hit[0] == version:
            return _copy_frame(hit[1])
        value = fn(self, *args, **kwargs)
        with _MEMO_LOCK:
            memo = {k: v for k, v in memo.items() if v[0] == version}
            if len(memo) >= _MEMO_SIZE:
                memo.pop(next(iter(memo)))
            memo[key] = (version, value)
            self.__dict__["_memo"] = memo
        return _copy_frame(value)
    return wrapper


class _Queries:
    """Read methods of Store (each call is one read on a cursor)."""

    def resolve_run(self, ref: str | int) -> int:
        """Run id from a name or id; StoreError naming the candidates if unknown.

        ``#3`` and ``id:3`` always mean the run with id 3, ``name:3`` the run named "3"; an int
        is an id. A bare text: the run of that exact name, else the id it spells in digits,
        else a case-insensitive name matching exactly one run. A bare number that is both a
        run's name and another run's id is refused as ambiguous (so ``delete 3`` can never
        delete the wrong run).
        """
        names = self._run_names()
        rows = list(zip(names["run_id"].tolist(), names["name"].tolist()))
        ids = {int(rid) for rid, _ in rows}
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if int(ref) in ids:
                return int(ref)
        else:
            text = str(ref).strip()
            low_text = text.lower()
            id_text = (text[1:] if text.startswith("#") else
                       text[3:] if low_text.startswith("id:") else None)
            if id_text is not None:
                id_text = id_text.strip()
                if id_text.isascii() and id_text.isdigit() and int(id_text) in ids:
                    return int(id_text)
            else:
                if low_text.startswith("name:"):
                    text = text[5:].strip()
                    numeric = False
                else:
                    numeric = text.isascii() and text.isdigit()
                named = [int(rid) for rid, name in rows if name == text]
                if named:
                    if numeric and int(text) in ids and int(text) != named[0]:
                        raise StoreError(
                            f"run {text!r} is ambiguous: it is the name of run id {named[0]} and "
                            f"the id of another run; write #{text} (or id:{text}) for the id, "
                            f"name:{text} for the name")
                    return named[0]
                if numeric and int(text) in ids:
                    return int(text)
                low = [int(rid) for rid, name in rows if name.lower() == text.lower()]
                if len(low) == 1:
                    return low[0]
        if not rows:
            raise StoreError(f"no run {ref!r}: the store is empty (ingest some results first)")
        listed = ", ".join(f"{name!r} (id {rid})" for rid, name in rows[:20])
        more = f" and {len(rows) - 20} more" if len(rows) > 20 else ""
        raise StoreError(f"no run named or numbered {ref!r}; known runs: {listed}{more}")

    @_per_snapshot
    def _run_names(self) -> pd.DataFrame:
        """run_id, name of every run (resolve_run's lookup, once per snapshot)."""
        with self._read() as con:
            return con.execute("SELECT run_id, name FROM runs ORDER BY run_id").df()

    @_per_snapshot
    def runs(self) -> pd.DataFrame:
        """run_id, name, model, source_format, harness, harness_version, tags (list[str]),
        created_at, source_key, n_tasks, n_scores, has_items"""
        with self._read() as con:
            df = con.execute("""
                WITH t AS (SELECT run_id, task FROM cells UNION SELECT run_id, task FROM summaries),
                     nt AS (SELECT run_id, count(*) AS n_tasks FROM t GROUP BY run_id),
                     ns AS (SELECT run_id, sum(n_scores) AS n_scores FROM cells GROUP BY run_id)
                SELECT r.run_id, r.name, r.model, r.source_format, r.harness, r.harness_version,
                       r.tags, r.created_at, r.source_key,
                       coalesce(nt.n_tasks, 0) AS n_tasks,
                       CAST(coalesce(ns.n_scores, 0) AS BIGINT) AS n_scores,
                       ns.n_scores IS NOT NULL AS has_items
                FROM runs r LEFT JOIN nt USING (run_id) LEFT JOIN ns USING (run_id)
                ORDER BY r.run_id""").df()
        df["tags"] = [list(t) if t is not None else [] for t in df["tags"]]
        return df

    def run_info(self, run: str | int) -> dict:
        """One run's row plus 'protocol' (dict) and 'files' (list of dicts)."""
        rid = self.resolve_run(run)
        runs = self.runs()
        info = runs[runs["run_id"] == rid].iloc[0].to_dict()
        with self._read() as con:
            proto = _one(con, "SELECT protocol FROM runs WHERE run_id = ?", [rid])[0]
            files = con.execute("SELECT name, sha256, size, format, added_at FROM files "
                                "WHERE run_id = ? ORDER BY added_at, name", [rid]).df()
        info["protocol"] = _json_loads(proto)
        info["files"] = files.to_dict("records")
        return info

    @staticmethod
    def _where(run_ids: list[int] | None, task: str | None, metric: str | None,
               alias: str = "") -> tuple[str, list]:
        """A WHERE clause of fixed fragments with ``?`` placeholders (no user text in SQL)."""
        pre = f"{alias}." if alias else ""
        clauses, params = [], []
        if run_ids is not None:
            ids = [int(r) for r in run_ids]
            if not ids:
                return " WHERE FALSE", []
            clauses.append(f"{pre}run_id IN ({', '.join('?' * len(ids))})")
            params.extend(ids)
        if task is not None:
            clauses.append(f"{pre}task = ?")
            params.append(str(task))
        if metric is not None:
            clauses.append(f"{pre}metric = ?")
            params.append(str(metric))
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    @staticmethod
    def _text_scores(where: str, task: str | None) -> tuple[str, list]:
        """A subquery of score rows with their texts (item_id, cluster, item_hash,
        prompt_hash as strings, plus the integer ``item``), the score rows filtered by
        ``where`` (a ``_where`` clause on alias-less columns); with ``task`` the small
        tables are read for that task only."""
        tf = " WHERE task = ?" if task is not None else ""
        sql = ("(SELECT s.run_id, s.task, s.metric, i.item_id, s.answer_idx, s.score, "
               "c.value AS cluster, ih.value AS item_hash, ph.value AS prompt_hash, s.item "
               f"FROM (SELECT * FROM scores{where}) s "
               f"JOIN (SELECT item, item_id FROM items{tf}) i ON i.item = s.item "
               f"LEFT JOIN (SELECT label, value FROM labels{tf}) c ON c.label = s.cluster "
               f"LEFT JOIN (SELECT label, value FROM labels{tf}) ih ON ih.label = s.item_hash "
               f"LEFT JOIN (SELECT label, value FROM labels{tf}) ph ON ph.label = s.prompt_hash)")
        return sql, ([str(task)] * 4 if task is not None else [])

    @_per_snapshot
    def tasks(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, n_items, k_max, has_cluster, binary, n_choices,
        has_items (False for summary-only task/metric rows), is_group (from the summary,
        False when none)"""
        where_c, pc = self._where(run_ids, None, None, "c")
        where_s, ps = self._where(run_ids, None, None, "s")
        sql = f"""
            SELECT c.run_id, c.task, c.metric, c.n_items, c.k_max, c.has_cluster, c.is_binary AS "binary",
                   t.n_choices, TRUE AS has_items, coalesce(s.is_group, FALSE) AS is_group
            FROM cells c
            LEFT JOIN tasks t ON t.run_id = c.run_id AND t.task = c.task
            LEFT JOIN summaries s ON s.run_id = c.run_id AND s.task = c.task AND s.metric = c.metric
            {where_c}
            UNION ALL
            SELECT s.run_id, s.task, s.metric, s.n, NULL, FALSE, NULL, t.n_choices, FALSE, s.is_group
            FROM summaries s
            LEFT JOIN tasks t ON t.run_id = s.run_id AND t.task = s.task
            {where_s}{' AND' if where_s else ' WHERE'} NOT EXISTS (SELECT 1 FROM cells c2
                WHERE c2.run_id = s.run_id AND c2.task = s.task AND c2.metric = s.metric)
            ORDER BY run_id, task, metric"""
        with self._read() as con:
            df = con.execute(sql, pc + ps).df()
        return df

    def scores(self, run_ids: list[int], task: str | None = None,
               metric: str | None = None) -> pd.DataFrame:
        """run_id, task, metric, item_id, answer_idx, score, cluster, item_hash, prompt_hash"""
        where, params = self._where(run_ids, task, metric)
        view, pv = self._text_scores(where, task)
        with self._read() as con:
            return _fetch_rows(con, "SELECT run_id, task, metric, item_id, answer_idx, score, "
                               f"cluster, item_hash, prompt_hash FROM {view} "
                               "ORDER BY run_id, task, metric, item_id, answer_idx",
                               params + pv)

    def item_means(self, run_ids: list[int], task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Per-item mean over answers: run_id, task, metric, item_id, score, n_answers,
        cluster, item_hash, prompt_hash (computed in SQL).

        score = mean of the item's answer scores; cluster/hashes: the smallest value among
        the item's answers (they agree unless the harness changed the prompt between
        repeats).
        """
        where, params = self._where(run_ids, task, metric)
        view, pv = self._text_scores(where, task)
        with self._read() as con:
            return _fetch_rows(
                con, "SELECT run_id, task, metric, item_id, avg(score) AS score, "
                "CAST(count(*) AS INTEGER) AS n_answers, min(cluster) AS cluster, "
                "min(item_hash) AS item_hash, min(prompt_hash) AS prompt_hash "
                f"FROM {view} GROUP BY run_id, task, metric, item_id "
                "ORDER BY run_id, task, metric, item_id", params + pv)

    def paired_item_means(self, run_a: int, run_b: int, task: str, metric: str,
                          metric_b: str | None = None) -> pd.DataFrame:
        """Item means of two runs (or two metric variants of one run) joined on item_id.

        Columns: item_id, score_a, score_b, n_answers_a, n_answers_b, cluster (run A's,
        else B's), hash_match (False when both runs have an item or prompt hash and they
        differ). Only items both sides have; the pairing report lists the rest.
        """
        mb = metric if metric_b is None else metric_b
        # grouped and joined on the integer keys; hashes compare as keys (one key per
        # distinct text within a task, so equality is exact); texts joined at the end
        sql = """
            WITH a AS (SELECT item, avg(score) AS s, count(*) AS k, min(cluster) AS cl,
                              min(item_hash) AS ih, min(prompt_hash) AS ph
                       FROM scores WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item),
                 b AS (SELECT item, avg(score) AS s, count(*) AS k, min(cluster) AS cl,
                              min(item_hash) AS ih, min(prompt_hash) AS ph
                       FROM scores WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item)
            SELECT i.item_id, a.s AS score_a, b.s AS score_b,
                   CAST(a.k AS INTEGER) AS n_answers_a, CAST(b.k AS INTEGER) AS n_answers_b,
                   c.value AS cluster,
                   NOT (coalesce(a.ih <> b.ih, FALSE) OR coalesce(a.ph <> b.ph, FALSE)) AS hash_match
            FROM a JOIN b USING (item) JOIN items i ON i.item = a.item
            LEFT JOIN labels c ON c.label = coalesce(a.cl, b.cl)
            ORDER BY i.item_id"""
        with self._read() as con:
            return _fetch_rows(con, sql, [int(run_a), task, metric, int(run_b), task, mb])

    @_per_snapshot
    def cell_stats(self, run_ids: list[int] | None = None, task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Over item means: run_id, task, metric, n, sum, sumsq, binary (computed in SQL).

        n = items, sum = sum_i m_i, sumsq = sum_i m_i^2 over per-item means m_i (so the CLT
        SE is sqrt((sumsq - sum^2/n)/(n-1)/n)); binary = every raw score is 0 or 1 (with K
        answers the means may still be fractions). Extra columns: k_max, n_scores,
        has_cluster. Maintained at ingest in the same transaction as the scores.
        """
        where, params = self._where(run_ids, task, metric)
        with self._read() as con:
            return con.execute("SELECT run_id, task, metric, n_items AS n, sum, sumsq, is_binary AS \"binary\", "
                               f"k_max, n_scores, has_cluster FROM cells{where} "
                               "ORDER BY run_id, task, metric", params).df()

    def recompute_cell_stats(self, run_ids: list[int] | None = None, task: str | None = None,
                             metric: str | None = None) -> pd.DataFrame:
        """``cell_stats`` recomputed from the raw score rows instead of the maintained table
        (same columns; an integrity check, and the cost of the leaderboard aggregate
        without materialisation)."""
        where, params = self._where(run_ids, task, metric)
        sql = ("SELECT run_id, task, metric, count(*) AS n, sum(m) AS sum, sum(m * m) AS sumsq, "
               "bool_and(bin) AS \"binary\", CAST(max(k) AS INTEGER) AS k_max, "
               "sum(k) AS n_scores, bool_or(hc) AS has_cluster FROM ("
               "SELECT run_id, task, metric, item, avg(score) AS m, count(*) AS k, "
               "bool_and(score = 0 OR score = 1) AS bin, bool_or(cluster IS NOT NULL) AS hc "
               f"FROM scores{where} GROUP BY run_id, task, metric, item) "
               "GROUP BY run_id, task, metric ORDER BY run_id, task, metric")
        with self._read() as con:
            return con.execute(sql, params).df()

    @_per_snapshot
    def summaries(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, value, stderr, stderr_raw, n, is_group"""
        where, params = self._where(run_ids, None, None)
        with self._read() as con:
            return con.execute("SELECT run_id, task, metric, value, stderr, stderr_raw, n, is_group "
                               f"FROM summaries{where} ORDER BY run_id, task, metric", params).df()

    def texts(self, run_id: int, task: str, item_ids: list[str]) -> pd.DataFrame:
        """task, item_id, answer_idx, prompt, target, response"""
        ids = [str(i) for i in item_ids]
        with self._read() as con:
            return con.execute(
                "SELECT t.task, i.item_id, t.answer_idx, t.prompt, t.target, t.response "
                "FROM texts t JOIN (SELECT item, item_id FROM items WHERE task = ? AND "
                "list_contains(?, item_id)) i ON i.item = t.item "
                "WHERE t.run_id = ? AND t.task = ? ORDER BY i.item_id, t.answer_idx",
                [task, ids, int(run_id), task]).df()

    def task_protocols(self, run_id: int) -> pd.DataFrame:
        """task, n_choices, protocol (dict)"""
        with self._read() as con:
            df = con.execute("SELECT task, n_choices, protocol FROM tasks WHERE run_id = ? "
                             "ORDER BY task", [int(run_id)]).df()
        df["protocol"] = [_json_loads(p) for p in df["protocol"]]
        return df

    @_per_snapshot
    def task_protocol_table(self, run_ids: list[int] | None = None,
                            task: str | None = None) -> pd.DataFrame:
        """run_id, task, protocol (dict) of many runs in one query (the leaderboard reads
        each task's declared metric direction, primary metric and subtasks from it); only
        ``task``'s rows when given (a one-task board of 4,000 runs need not copy 40,000)."""
        where, params = self._where(run_ids, task, None, "t")
        with self._read() as con:
            df = con.execute(f"SELECT t.run_id, t.task, t.protocol FROM tasks t{where} "
                             "ORDER BY t.run_id, t.task", params).df()
        df["protocol"] = [_json_loads(p) for p in df["protocol"]]
        return df

    def pairing(self, run_a: int, run_b: int, task: str, metric: str) -> dict:
        """{'shared': [...], 'only_a': [...], 'only_b': [...], 'hash_mismatch': [...]}

        Items are matched on item_id within (task, metric). hash_mismatch lists shared items
        whose item hash or prompt hash differs between the runs (compared only when both
        runs recorded that hash). Item ids are in natural order (2 before 10).
        """
        sql = """
            WITH a AS (SELECT item, min(item_hash) AS ih, min(prompt_hash) AS ph FROM scores
                       WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item),
                 b AS (SELECT item, min(item_hash) AS ih, min(prompt_hash) AS ph FROM scores
                       WHERE run_id = ? AND task = ? AND metric = ? GROUP BY item),
                 p AS (SELECT coalesce(a.item, b.item) AS item, a.item IS NOT NULL AS in_a,
                              b.item IS NOT NULL AS in_b,
                              coalesce(a.ih <> b.ih, FALSE) OR coalesce(a.ph <> b.ph, FALSE)
                                  AS mismatch
                       FROM a FULL OUTER JOIN b USING (item))
            SELECT i.item_id, p.in_a, p.in_b, p.mismatch FROM p JOIN items i USING (item)"""
        with self._read() as con:
            rows = con.execute(sql, [int(run_a), task, metric, int(run_b), task, metric]).fetchall()
        out: dict[str, list[str]] = {"shared": [], "only_a": [], "only_b": [], "hash_mismatch": []}
        for item, in_a, in_b, mismatch in rows:
            if in_a and in_b:
                out["shared"].append(item)
                if mismatch:
                    out["hash_mismatch"].append(item)
            elif in_a:
                out["only_a"].append(item)
            else:
                out["only_b"].append(item)
        for k in out:
            out[k].sort(key=_natural_key)
        return out

    def protocol_diff(self, run_a: int, run_b: int, task: str | None = None) -> pd.DataFrame:
        """scope ("run" or task), setting, value_a, value_b — only settings that differ.

        Run scope: harness, harness_version, source_format and the run protocol flattened to
        dotted keys ({"a": {"b": 1}} -> "a.b"). Task scope (the given task, else every task
        both runs have): the task protocol flattened the same way, n_choices and "metrics"
        (the metric variants present, comma list). Values are shown as text (JSON for
        non-strings; None when a run lacks the setting). Keys that change on every run
        (``VOLATILE_PROTOCOL_KEYS``: dates, timings) are skipped. Extra column
        ``category``: harness version, few-shot, chat template, generation, metric variants,
        prompt, model or other; rows are ordered by category, then scope and setting.
        """
        a, b = int(run_a), int(run_b)
        with self._read() as con:
            def run_side(rid: int) -> dict[str, Any]:
                row = _one(con, "SELECT harness, harness_version, source_format, protocol "
                                  "FROM runs WHERE run_id = ?", [rid])
                if row is None:
                    raise StoreError(f"no run with id {rid}")
                flat = flatten_protocol(_json_loads(row[3]))
                flat.update({"harness": row[0], "harness_version": row[1], "source_format": row[2]})
                return flat

            def task_side(rid: int) -> dict[str, dict[str, Any]]:
                out: dict[str, dict[str, Any]] = {}
                for t, nc, pr in con.execute("SELECT task, n_choices, protocol FROM tasks "
                                             "WHERE run_id = ?", [rid]).fetchall():
                    flat = flatten_protocol(_json_loads(pr))
                    flat["n_choices"] = nc
                    out[t] = flat
                for t, ms in con.execute(
                        "SELECT task, string_agg(DISTINCT metric, ', ' ORDER BY metric) FROM "
                        "(SELECT task, metric FROM cells WHERE run_id = ? UNION "
                        " SELECT task, metric FROM summaries WHERE run_id = ?) GROUP BY task",
                        [rid, rid]).fetchall():
                    out.setdefault(t, {"n_choices": None})["metrics"] = ms
                return out

            ra, rb = run_side(a), run_side(b)
            ta, tb = task_side(a), task_side(b)
        rows: list[tuple[str, str, str | None, str | None, str]] = []

        def compare(scope: str, da: dict[str, Any], db: dict[str, Any]) -> None:
            for key in sorted(set(da) | set(db)):
                if key.rsplit(".", 1)[-1] in VOLATILE_PROTOCOL_KEYS:
                    continue
                va, vb = _display(da.get(key)), _display(db.get(key))
                if va != vb:
                    rows.append((scope, key, va, vb, _category(key)))

        compare("run", ra, rb)
        task_list = [task] if task is not None else sorted(set(ta) & set(tb))
        for t in task_list:
            compare(t, ta.get(t, {}), tb.get(t, {}))
        df = pd.DataFrame(rows, columns=["scope", "setting", "value_a", "value_b", "category"],
                          dtype=object)  # keeps None (a missing setting) as None
        if len(df):
            df["_o"] = df["category"].map(_CATEGORY_ORDER)
            df["_s"] = (df["scope"] != "run").astype(int)
            df = df.sort_values(["_o", "_s", "scope", "setting"], kind="stable").drop(columns=["_o", "_s"])
        return df.reset_index(drop=True)

    def audit(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, reported, reported_stderr, stderr_raw, n_reported,
        recomputed_stderr, n_items, flag (str|None: 'stderr mismatch', 'zero stderr with
        0<p<1', 'N/A stderr', 'n mismatch')

        One row per reported summary. When the run has item scores for the same (task,
        metric): recomputed_stderr = sd(m_i, ddof=1)/sqrt(n) over the per-item means m_i
        (the lm-evaluation-harness convention, sqrt(p(1-p)/(n-1)) for 0/1 scores; METHODS.md)
        and recomputed = mean(m_i) (extra column; flag 'value mismatch'). Numbers agree
        within AUDIT_ABS_TOL + AUDIT_REL_TOL * |recomputed| (printed rounding). Also:
        'zero stderr with 0<p<1' when the reported stderr is 0 while 0 < value < 1;
        'N/A stderr' when the stderr was written as text ("N/A"); 'n mismatch' when the
        reported n differs from the number of items. Several flags are joined with "; ".
        Groups (is_group) are audited only if item scores exist under the group name.
        """
        where, params = self._where(run_ids, None, None, "s")
        where_x, params_x = self._where(run_ids, None, None, "x")
        sql = f"""
            WITH rc AS (
                -- from the per-cell sums of item means kept at ingest (no scan of the scores):
                -- sd(m_i, ddof=1)/sqrt(n) = sqrt((sumsq - sum^2/n)/(n-1)/n), floored at 0
                SELECT x.run_id, x.task, x.metric, x.n_items, x.sum / x.n_items AS mean,
                       CASE WHEN x.n_items >= 2 THEN sqrt(greatest(x.sumsq - x.sum * x.sum / x.n_items, 0)
                                                          / (x.n_items - 1) / x.n_items) END AS se
                FROM cells x{where_x})
            SELECT s.run_id, s.task, s.metric, s.value AS reported, s.stderr AS reported_stderr,
                   s.stderr_raw, s.n AS n_reported, rc.se AS recomputed_stderr, rc.n_items,
                   rc.mean AS recomputed, s.is_group
            FROM summaries s LEFT JOIN rc USING (run_id, task, metric)
            {where}
            ORDER BY s.run_id, s.task, s.metric"""
        with self._read() as con:
            df = con.execute(sql, params_x + params).df()
        df["flag"] = pd.Series(_audit_flags(df), index=df.index, dtype=object)
        cols = ["run_id", "task", "metric", "reported", "reported_stderr", "stderr_raw", "n_reported",
                "recomputed_stderr", "n_items", "flag", "recomputed", "is_group"]
        return df[cols]

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

    @_per_snapshot
    def run_protocols(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, protocol (dict) of many runs in one query (the run-level settings:
        model args, revision, seeds of the harness; the Noise page reads training seeds
        and checkpoint steps from them)."""
        where, params = _Queries._where(run_ids, None, None, "r")
        with self._read() as con:
            df = con.execute(f"SELECT r.run_id, r.protocol FROM runs r{where} ORDER BY r.run_id",
                             params).df()
        df["protocol"] = [_json_loads(p) if p is not None else {} for p in df["protocol"]]
        return df

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
        Runs with one answer per item skip the GROUP BY (as ``item_cluster_codes``). Reads
        only integer columns of the score rows (the item keys of schema 3).
        """
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        if not tms:
            return {}
        tasks = [t for t, _ in tms]
        metrics = [m for _, m in tms]
        base, pbase = self._where(run_ids, None, None, "s")
        tm = ("tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric, "
              "unnest(range(?)) AS k)")
        # the cell of a score row from two list_position calls (a join with the list of
        # cells costs twice as much on 2M rows); a task filter only for a few tasks (it lets
        # the scan skip the other tasks' row groups, but costs a string test per row)
        utasks = sorted(set(tasks))
        umetrics = sorted(set(metrics))
        width = len(umetrics) + 1
        lut = np.full((len(utasks) + 1) * width, -1, dtype=np.int16)
        for k, (t, m) in enumerate(tms):
            lut[(utasks.index(t) + 1) * width + umetrics.index(m) + 1] = k
        pos = ("coalesce(list_position(?::VARCHAR[], s.task), 0) AS kt, "
               "coalesce(list_position(?::VARCHAR[], s.metric), 0) AS km")
        few = len(utasks) <= 3
        cond = f" AND s.task IN ({', '.join('?' * len(utasks))})" if few else ""
        pcond = utasks if few else []
        with self._read() as con:
            cells = con.execute(
                f"WITH {tm} SELECT tm.k, s.run_id, s.k_max, s.is_binary FROM cells s "
                f"JOIN tm USING (task, metric){base}", [tasks, metrics, len(tms)] + pbase
            ).fetchall()
            one = sorted({int(r) for _, r, km, _ in cells}
                         - {int(r) for _, r, km, _ in cells if int(km) > 1})
            many = sorted({int(r) for _, r, _, _ in cells} - set(one))
            binary: dict[int, bool] = {}
            for k, _, _, b in cells:
                binary[int(k)] = binary.get(int(k), True) and bool(b)
            parts, params = [], []
            for ids, grouped in ((one, False), (many, True)):
                if not ids:
                    continue
                w, p = self._where(ids, None, None, "s")
                rows = f"SELECT {pos}, s.run_id, s.item, s.score FROM scores s{w}{cond}"
                parts.append(f"SELECT kt, km, run_id, item, avg(score) AS m FROM ({rows}) "
                             "GROUP BY kt, km, run_id, item" if grouped else
                             rows.replace("s.score FROM", "s.score AS m FROM"))
                params += [utasks, umetrics] + p + pcond
            if not parts:
                return {}
            # Arrow, then numpy: about half the time of fetchnumpy on 2M rows
            table = con.execute(" UNION ALL ".join(parts), params).fetch_arrow_table()
            got = {c: table.column(c).to_numpy() for c in table.column_names}
        cell = lut[got["kt"].astype(np.int32) * width + got["km"].astype(np.int32)]
        order = np.argsort(cell, kind="stable")       # int16: a radix sort
        bounds = np.searchsorted(cell[order], np.arange(len(tms) + 1))
        run_col = np.asarray(got["run_id"], dtype=np.int64)[order]
        item_col = np.asarray(got["item"], dtype=np.int64)[order]
        mean_col = np.asarray(got["m"], dtype=np.float64)[order]
        out: dict[tuple[str, str], ItemMatrix] = {}
        for k, (t, m) in enumerate(tms):
            sl = slice(bounds[k], bounds[k + 1])
            if sl.stop <= sl.start:
                continue
            runs, ri = _dense_unique(run_col[sl])
            items, ii = _dense_unique(item_col[sl])
            mat = np.full((items.size, runs.size), np.nan)
            mat[ii, ri] = mean_col[sl]
            out[(t, m)] = ItemMatrix(t, m, runs, items, mat, binary.get(k, False))
        return out

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
