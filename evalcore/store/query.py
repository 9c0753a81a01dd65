"""The read queries of Store that the analysis layer and the pages use."""


import copy
import functools
import inspect
from typing import Any

import numpy as np
import pandas as pd

from evalcore.errors import StoreError
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
from evalcore.store.pairs import _SIDE_READS
from evalcore.store.small import _MEMO_LOCK, _SmallCopies


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
    out: list[str | None] = [None] * len(hit)
    for i in np.flatnonzero(hit.any(axis=1)).tolist():      # only the flagged rows
        out[i] = "; ".join(n for n, h in zip(names, hit[i]) if h)
    return out


def _none(value: Any) -> Any:
    """A value of a pandas frame as the Python value a fetchall gives: None for NULL
    (None/NaN/NA), int for a whole number of an integer column read as float, else as is."""
    if value is None or (not isinstance(value, (str, list, dict)) and pd.isna(value)):
        return None
    if isinstance(value, (np.integer, float, np.floating)) and float(value).is_integer():
        return int(value)
    return value


_MEMO_SIZE = 64


_SCALARS = (str, int, float, bool, type(None))


def _json_copy(v: Any) -> Any:
    """``copy.deepcopy`` of a JSON-like value (dicts, lists, scalars), several times faster
    (no memo); any other object goes through deepcopy."""
    if isinstance(v, dict):
        return {k: (x if type(x) in _SCALARS else _json_copy(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [x if type(x) in _SCALARS else _json_copy(x) for x in v]
    return v if type(v) in _SCALARS else copy.deepcopy(v)


def _copy_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy the caller may mutate: new arrays, and new dicts/lists in object columns (a
    column of flat lists of scalars, as run tags, by ``list.copy``: the same as a deep copy,
    10x faster over 4,000 runs)."""
    out = df.copy(deep=True)
    if not len(out):
        return out
    # the dtypes once: a column is looked up only when it holds objects (a lookup costs
    # about 20-40 us, the copy of a 10-column frame of tasks about 50)
    for col, dtype in zip(out.columns.tolist(), out.dtypes.tolist()):
        if dtype == object and isinstance(out[col].iloc[0], (dict, list)):
            vals = out[col].tolist()
            if all(type(v) is list for v in vals) and \
                    all(isinstance(x, _SCALARS) for v in vals for x in v):
                out[col] = [v.copy() for v in vals]
            else:
                out[col] = [_json_copy(v) for v in vals]
    return out


def _memo_key(name: str, params: dict) -> tuple:
    """The memo key of a read: its name and its arguments (bound, defaults applied)."""
    return (name, repr(tuple(params.items())))


def _per_snapshot(fn=None, *, by_run: bool = False, small: bool = False):
    """Memoize a small-table read per store snapshot (``Store.version()``) inside one Store
    object: a page that asks for runs() three times reads the catalog once. Any committed
    write (by this or another process) makes a new snapshot, which misses. Thread-safe;
    every call returns its own copy (callers mutate frames). ``by_run``: the read's only
    argument is ``run_ids`` and its rows are ordered by run_id first, so a call for some
    runs is served from a memoized call for all runs (the rows of those runs). The key is the
    call's arguments bound to the signature with defaults applied, so ``tasks()``,
    ``tasks(None)`` and ``tasks(run_ids=None)`` are one entry. ``small``: the read queries
    the small tables (``_read_small``); outside a ``one_version`` block its version is read
    in the transaction that checks or makes their copy (``_small_snapshot``: one catalog
    transaction for both on a first view)."""
    if fn is None:
        return functools.partial(_per_snapshot, by_run=by_run, small=small)
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        if small and self._pinned_version() is None and not self._target.read_only:
            version, copy_ = self._small_snapshot()
            try:
                with self.one_version(version):
                    return wrapper(self, *args, **kwargs)
            finally:
                self._release_small(copy_)
        version = self.version()
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        params = dict(list(bound.arguments.items())[1:])      # without self
        key = _memo_key(fn.__name__, params)
        with _MEMO_LOCK:
            memo = self.__dict__.setdefault("_memo", {})
            hit = memo.get(key)
            run_ids = params.get("run_ids")
            full = None
            if by_run and hit is None and run_ids is not None and len(params) == 1:
                full = memo.get(_memo_key(fn.__name__, {"run_ids": None}))
        if hit is not None and hit[0] == version:
            return _copy_frame(hit[1])
        if full is not None and full[0] == version:
            rows = full[1][full[1]["run_id"].isin([int(r) for r in run_ids])]
            return _copy_frame(rows.reset_index(drop=True))
        with self.one_version(version):    # the read's own checks (_read_small) ask no more
            value = fn(self, *args, **kwargs)
        with _MEMO_LOCK:
            # the memo as it is now: another thread (or a read nested in this one) may have
            # stored an entry since ``memo`` was looked up above; filtering that older dict
            # would drop it
            memo = {k: v for k, v in self.__dict__.get("_memo", {}).items() if v[0] == version}
            if len(memo) >= _MEMO_SIZE:
                memo.pop(next(iter(memo)))
            memo[key] = (version, value)
            self.__dict__["_memo"] = memo
        return _copy_frame(value)
    return wrapper


class _Queries(_SmallCopies):
    """Read methods of Store (each call is one read on a cursor)."""

    def _memoized(self, name: str) -> pd.DataFrame | None:
        """The memoized frame of the argument-less read ``name`` at the current version, or
        None; not a copy: for reading only."""
        version = self.version()
        with _MEMO_LOCK:
            hit = self.__dict__.get("_memo", {}).get(_memo_key(name, {}))
        return hit[1] if hit is not None and hit[0] == version else None

    def forget(self) -> None:
        """Drop every per-snapshot memo of this Store object (the small tables of
        ``_per_snapshot``, the paired cells of ``paired_items``): the next reads query the
        store as right after a write. For benchmarks that time a first view."""
        with _MEMO_LOCK:
            self.__dict__.pop("_memo", None)
            self._retire_small(self.__dict__.get("_small_holder", {}).pop("small", None))
        self.__dict__.pop("_pair_memo", None)

    def resolve_run(self, ref: str | int) -> int:
        """Run id from a name or id; StoreError naming the candidates if unknown.

        ``#3`` and ``id:3`` always mean the run with id 3, ``name:3`` the run named "3"; an int
        is an id. A bare text: the run of that exact name, else the id it spells in digits,
        else a case-insensitive name matching exactly one run. A bare number that is both a
        run's name and another run's id is refused as ambiguous (so ``delete 3`` can never
        delete the wrong run).
        """
        names = self._memoized("runs")      # a page has read runs() already: no query
        if names is None:
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

    @_per_snapshot(small=True)
    def _run_names(self) -> pd.DataFrame:
        """run_id, name of every run (resolve_run's lookup, once per snapshot)."""
        with self._read_small() as con:
            return con.execute("SELECT run_id, name FROM runs ORDER BY run_id").df()

    @_per_snapshot(small=True)
    def runs(self) -> pd.DataFrame:
        """run_id, name, model, source_format, harness, harness_version, tags (list[str]),
        created_at, source_key, n_tasks, n_scores, has_items"""
        with self._read_small() as con:
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
            ids = sorted({int(r) for r in run_ids})
            if not ids:
                return " WHERE FALSE", []
            if len(ids) > 2 and ids[-1] - ids[0] + 1 == len(ids):
                # every id of a range (all runs of a store): two parameters, not thousands
                clauses.append(f"{pre}run_id BETWEEN ? AND ?")
                params.extend([ids[0], ids[-1]])
            elif len(ids) > 64:
                clauses.append(f"list_contains(?::INTEGER[], {pre}run_id)")
                params.append(ids)
            else:
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

    @_per_snapshot(by_run=True, small=True)
    def tasks(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, n_items, k_max, has_cluster, binary, n_choices,
        has_items (False for summary-only task/metric rows), is_group (from the summary,
        False when none)"""
        where, params = self._where(run_ids, None, None)     # for cells and for summaries
        # one full join: a cell row with its summary's is_group, or a summary without cells
        # (c.run_id NULL); planned in about half the time of a union with an anti-join
        sql = f"""
            SELECT coalesce(c.run_id, s.run_id) AS run_id, coalesce(c.task, s.task) AS task,
                   coalesce(c.metric, s.metric) AS metric,
                   CASE WHEN c.run_id IS NULL THEN s.n ELSE c.n_items END AS n_items, c.k_max,
                   CASE WHEN c.run_id IS NULL THEN FALSE ELSE c.has_cluster END AS has_cluster,
                   c.is_binary AS "binary", t.n_choices, c.run_id IS NOT NULL AS has_items,
                   CASE WHEN c.run_id IS NULL THEN s.is_group
                        ELSE coalesce(s.is_group, FALSE) END AS is_group
            FROM (SELECT * FROM cells{where}) c
            FULL JOIN (SELECT * FROM summaries{where}) s
                ON s.run_id = c.run_id AND s.task = c.task AND s.metric = c.metric
            LEFT JOIN tasks t ON t.run_id = coalesce(c.run_id, s.run_id)
                AND t.task = coalesce(c.task, s.task)
            ORDER BY run_id, task, metric"""
        with self._read_small() as con:
            df = con.execute(sql, params + params).df()
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

    @_per_snapshot(small=True)
    def cell_stats(self, run_ids: list[int] | None = None, task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Over item means: run_id, task, metric, n, sum, sumsq, binary (computed in SQL).

        n = items, sum = sum_i m_i, sumsq = sum_i m_i^2 over per-item means m_i (so the CLT
        SE is sqrt((sumsq - sum^2/n)/(n-1)/n)); binary = every raw score is 0 or 1 (with K
        answers the means may still be fractions). Extra columns: k_max, n_scores,
        has_cluster. Maintained at ingest in the same transaction as the scores.
        """
        where, params = self._where(run_ids, task, metric)
        with self._read_small() as con:
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

    @_per_snapshot(by_run=True, small=True)
    def summaries(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, value, stderr, stderr_raw, n, is_group"""
        where, params = self._where(run_ids, None, None)
        with self._read_small() as con:
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
        """run_id, task, protocol (dict), n_choices of many runs in one query (the leaderboard reads
        each task's declared metric direction, primary metric and subtasks from it); only
        ``task``'s rows when given (a one-task board of 4,000 runs need not copy 40,000)."""
        where, params = self._where(run_ids, task, None, "t")
        with self._read() as con:
            df = con.execute(f"SELECT t.run_id, t.task, t.protocol, t.n_choices FROM tasks t"
                             f"{where} ORDER BY t.run_id, t.task", params).df()
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
        # from the per-snapshot reads (a compare has read them already): no query of its own
        # when they are memoized
        ids = sorted({a, b})
        # the run protocols are read on a side thread (under this thread's store version)
        # while this one reads the task protocols; memoized reads cost no query
        version = self.version()

        def read_run_protocols() -> pd.DataFrame:
            with self.one_version(version):
                return self.run_protocols(ids)

        ahead = _SIDE_READS.submit(read_run_protocols)
        try:
            tp = self.task_protocol_table(ids)
            cells = self.tasks(ids)
            runs = self.runs()
        finally:
            rp = ahead.result()             # never leave the other read running
        # the runs' columns as lists, one row per run (no frame filtered per run)
        cols = ("harness", "harness_version", "source_format")
        run_rows = {int(r): dict(zip(cols, v)) for r, *v in zip(
            runs["run_id"].tolist(), *(runs[c].tolist() for c in cols)) if int(r) in ids}
        for rid in (a, b):
            if rid not in run_rows:
                raise StoreError(f"no run with id {rid}")
        protocols = dict(zip(rp["run_id"].astype(int).tolist(), rp["protocol"].tolist()))

        def run_side(rid: int) -> dict[str, Any]:
            flat = flatten_protocol(protocols.get(rid, {}))
            flat.update({c: _none(run_rows[rid][c]) for c in cols})
            return flat

        tp_rows = list(zip(tp["run_id"].astype(int).tolist(), tp["task"].tolist(),
                           tp["n_choices"].tolist(), tp["protocol"].tolist()))
        metrics_of: dict[int, dict[str, set[str]]] = {}
        for r, t, m in zip(cells["run_id"].astype(int).tolist(), cells["task"].tolist(),
                           cells["metric"].tolist()):
            if not pd.isna(t):             # as groupby: no group for a missing task
                metrics_of.setdefault(r, {}).setdefault(str(t), set()).add(str(m))

        def task_side(rid: int) -> dict[str, dict[str, Any]]:
            out: dict[str, dict[str, Any]] = {}
            for r, t, nc, pr in tp_rows:
                if r == rid:
                    flat = flatten_protocol(pr)
                    flat["n_choices"] = _none(nc)
                    out[str(t)] = flat
            for t, ms in sorted(metrics_of.get(rid, {}).items()):
                out.setdefault(t, {"n_choices": None})["metrics"] = ", ".join(sorted(ms))
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

    def audit(self, run_ids: list[int] | None = None, task: str | None = None) -> pd.DataFrame:
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
        ``task``: only that task's rows (a one-task leaderboard).
        """
        where, params = self._where(run_ids, task, None, "s")
        where_x, params_x = self._where(run_ids, task, None, "x")
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
        with self._read_small() as con:
            df = con.execute(sql, params_x + params).df()
        df["flag"] = pd.Series(_audit_flags(df), index=df.index, dtype=object)
        cols = ["run_id", "task", "metric", "reported", "reported_stderr", "stderr_raw", "n_reported",
                "recomputed_stderr", "n_items", "flag", "recomputed", "is_group"]
        return df[cols]

    @_per_snapshot(by_run=True)
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
