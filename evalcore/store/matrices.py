"""The analysis layer's batched reads: items x runs matrices of per-item means
(``item_matrices``), integer cluster codes, first-answer texts, per-item mean bounds.
A mixin of ``Store`` beside ``query._Queries`` (whose ``_where`` these use)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import StoreError
from evalcore.model import ItemMatrix
from evalcore.store import vectors
from evalcore.store._util import _fetch_rows, _one
from evalcore.store.catalog import LAKE
from evalcore.store.query import _per_snapshot


class _MatrixQueries:
    """Batched reads for the leaderboard, compare and items analyses."""

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

    # ---- read queries for page speed ---------------------------------------------------

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
        cluster label in every run, codes in the order of the labels' keys; an item without
        a label is its own cluster, numbered after the labels in order of first appearance),
        has_cluster (the item has a label). For the clustered interval method
        (``stats.grouped_clustered_intervals``). Rows are grouped by k; within a cell, item
        by item (keys ascending), runs ascending (the first appearance of an unlabelled item
        follows that order; from the score rows (a cell without vectors): the read's order).

        Read with ``item_matrices_and_codes`` (the cells' vector rows, with their label
        keys). Labels are the store's integer label keys (one key per distinct label of a
        task, so the codes are exact); an item whose answers carry different labels takes
        the smallest key's label."""
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        if not tms:
            return _EMPTY_CODES.copy()
        return self.item_matrices_and_codes(tms, run_ids)[1]

    def item_matrices_and_codes(self, task_metrics: list[tuple[str, str]],
                                run_ids: list[int] | None = None
                                ) -> tuple[dict[tuple[str, str], ItemMatrix], pd.DataFrame]:
        """``(item_matrices(task_metrics, run_ids), item_cluster_codes(task_metrics,
        run_ids))`` from one read of the score rows (the clustered leaderboard needs both:
        its intervals the codes, its tiers the matrices). The same matrices and codes as
        the two calls (per-item means of several answers are DuckDB averages in both; their
        last bits follow the scan's order there as here)."""
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        if not tms:
            return {}, _EMPTY_CODES.copy()
        found, labs, missing = self._vector_matrices(tms, run_ids, True)
        frames = [_codes_of_matrices(len(tms), found, labs)]
        if missing:
            sub = [tms[k] for k in missing]
            old, codes = self._matrices_and_codes_scores(sub, run_ids)
            found.update({k: old[tms[k]] for k in missing if tms[k] in old})
            codes["k"] = np.asarray(missing, dtype=np.int32)[codes["k"].to_numpy()]
            frames.append(codes)
            frame = pd.concat(frames, ignore_index=True)
            frame = frame.iloc[np.argsort(frame["k"].to_numpy(), kind="stable")]
            codes = frame.reset_index(drop=True)
        else:
            codes = frames[0]
        return {tms[k]: found[k] for k in range(len(tms)) if k in found}, codes

    def item_code_matrices(self, task_metrics: list[tuple[str, str]],
                           run_ids: list[int] | None = None
                           ) -> dict[tuple[str, str], tuple[ItemMatrix, np.ndarray, np.ndarray]]:
        """``item_matrices`` with each cell's cluster codes as matrices of the same shape:
        {(task, metric): (matrix, codes, has_cluster)}. ``codes`` (int64) are
        ``item_cluster_codes``' codes of the entries (dense 0..G-1 within the cell: the
        label keys ranked, then each unlabelled item its own cluster, numbered in item
        order), -1 where the run lacks the item; ``has_cluster`` (bool) marks the entries
        with a label; where every run of a cell has every item with the same labels, both
        are read-only views repeating one column (``_cell_code_matrix``). For the clustered
        leaderboard (``stats.clustered_intervals_of_matrices`` on the matrices, no rows per
        item and run). One read of the vector rows; a cell
        without them is read from the score rows (``_matrices_and_labels_scores``)."""
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        if not tms:
            return {}
        found, labs, missing = self._vector_matrices(tms, run_ids, True)
        if missing:
            old, old_labs = self._matrices_and_labels_scores([tms[k] for k in missing], run_ids)
            for k in missing:
                if tms[k] in old:
                    found[k], labs[k] = old[tms[k]], old_labs[tms[k]]
        out = {}
        for k in range(len(tms)):
            if k in found:
                code, has = _cell_code_matrix(found[k].scores, labs[k])
                out[tms[k]] = (found[k], code, has)
        return out

    def _cluster_rows_and_flags(self, tms: list[tuple[str, str]], run_ids: list[int] | None
                                ) -> tuple[tuple | None, dict[int, bool]]:
        """One read of the score rows of ``tms`` with their label keys (``_cluster_rows``: None
        when there are none) and, per index k of ``tms``, whether every cell of it is 0/1."""
        base, pbase = self._where(run_ids, None, None, "s")
        tm = ("tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric, "
              "unnest(range(?)) AS k)")
        with self._read() as con:
            flags = con.execute(
                f"WITH {tm} SELECT tm.k, bool_and(s.is_binary) FROM cells s "
                f"JOIN tm USING (task, metric){base} GROUP BY tm.k",
                [[t for t, _ in tms], [m for _, m in tms], len(tms)] + pbase).fetchall()
            rows = self._cluster_rows(con, tms, run_ids)
        return rows, {int(k): bool(b) for k, b in flags}

    def _matrices_and_labels_scores(self, tms: list[tuple[str, str]], run_ids: list[int] | None
                                    ) -> tuple[dict[tuple[str, str], ItemMatrix],
                                               dict[tuple[str, str], np.ndarray]]:
        """``item_matrices`` and the label-key matrices (int32, -1: no label or absent) of
        cells without vector rows, from one read of the score rows (``_cluster_rows``; an
        item whose answers carry different labels takes the smallest key)."""
        rows, binary = self._cluster_rows_and_flags(tms, run_ids)
        if rows is None:
            return {}, {}
        got, lut, kmin = rows
        mats = _fill_matrices(tms, got, lut, kmin, binary)
        lab_rows = dict(got, m=np.asarray(got["lab"], dtype=np.float64))
        labs = {tm: np.where(np.isnan(im.scores), -1, im.scores).astype(np.int32)
                for tm, im in _fill_matrices(tms, lab_rows, lut, kmin, binary).items()}
        return mats, labs

    def _matrices_and_codes_scores(self, tms: list[tuple[str, str]], run_ids: list[int] | None
                                   ) -> tuple[dict[tuple[str, str], ItemMatrix], pd.DataFrame]:
        """``item_matrices_and_codes`` from the score rows (cells without vector rows; the
        tests' oracle): one read of the rows for both (per-item means of several answers are
        DuckDB averages)."""
        if not tms:
            return {}, _EMPTY_CODES.copy()
        rows, binary = self._cluster_rows_and_flags(tms, run_ids)
        if rows is None:
            return {}, _EMPTY_CODES.copy()
        got, lut, kmin = rows
        return _fill_matrices(tms, got, lut, kmin, binary), _codes_frame(tms, got, lut, kmin)

    def _cluster_rows(self, con: duckdb.DuckDBPyConnection, tms: list[tuple[str, str]],
                      run_ids: list[int] | None
                      ) -> tuple[dict[str, np.ndarray], np.ndarray, int] | None:
        """``item_cluster_codes``' read: (rows, lut, kmin) with rows run_id, item, m (mean
        over answers), lab (label key, -1 for none) and km (metric number, several metrics
        only), every asked run's rows of the asked tasks' keys (``_cell_lut``); None when
        nothing is asked or stored."""
        if not tms:
            return None
        tasks = list(dict.fromkeys(t for t, _ in tms))
        metrics = list(dict.fromkeys(m for _, m in tms))
        umetrics = sorted(set(metrics))
        base, pbase = self._where(run_ids, None, None)
        filt = (f"{base}{' AND' if base else ' WHERE'} task IN ({', '.join('?' * len(tasks))}) "
                f"AND metric IN ({', '.join('?' * len(metrics))})")
        pfilt = pbase + tasks + metrics
        ks = con.execute(f"SELECT run_id, max(k_max) FROM cells{filt} GROUP BY run_id",
                         pfilt).fetchall()
        one = sorted(int(r) for r, km in ks if int(km) <= 1)
        many = sorted(int(r) for r, km in ks if int(km) > 1)
        got_lut = _cell_lut(con, tms) if ks else None
        if got_lut is None:
            return None
        lut, kmin = got_lut
        mcol = "" if len(umetrics) == 1 else "list_position(?::VARCHAR[], metric) - 1 AS km, "
        pm = [] if len(umetrics) == 1 else [umetrics]
        # a task filter only for a few tasks (row groups of other tasks are skipped; a
        # string test per row otherwise); the grouped part keeps both filters (few rows)
        few = len(tasks) <= 3
        tcond = f" AND task IN ({', '.join('?' * len(tasks))})" if few else ""
        mcond = f" AND metric IN ({', '.join('?' * len(metrics))})"
        pieces = []
        if one:     # the runs as a range in SQL, the exact set in numpy (_runs_in)
            pieces.append(_runs_in(con.execute(
                f"SELECT {mcol}run_id, item, score AS m, coalesce(cluster, -1) AS lab "
                f"FROM scores WHERE run_id BETWEEN ? AND ?{mcond}{tcond}",
                pm + [one[0], one[-1]] + metrics + (tasks if few else [])), one))
        if many:
            wk, pk = self._where(many, None, None)
            pieces.append(_arrays(con.execute(
                f"SELECT {mcol}run_id, item, avg(score) AS m, coalesce(min(cluster), -1) AS lab "
                f"FROM scores{wk}{mcond} AND task IN ({', '.join('?' * len(tasks))}) "
                "GROUP BY task, metric, run_id, item", pm + pk + metrics + tasks)))
        got = pieces[0] if len(pieces) == 1 else \
            {c: np.concatenate([g[c] for g in pieces]) for c in pieces[0]}
        return got, lut, kmin

    # ---- the analysis layer's matrix read ------------------------------------

    def item_matrices(self, task_metrics: list[tuple[str, str]],
                      run_ids: list[int] | None = None) -> dict[tuple[str, str], ItemMatrix]:
        """Per-item means (mean over the item's answers) of several (task, metric) cells as
        items x runs matrices.

        Returns {(task, metric): ItemMatrix} for the cells some asked run (all runs when
        ``run_ids`` is None) has item scores for; a cell no asked run scored is absent.
        ``run_ids`` of a matrix: the asked runs with item scores for the cell, ascending;
        ``items``: the store's integer item keys of the cell's items (every item any of
        those runs scored), ascending; ``scores``: NaN where a run lacks the item;
        ``binary``: every raw score of the cell is 0 or 1 in those runs (``cells.is_binary``).

        Schema 4: one query reads the asked cells' item vectors (one row per run and cell,
        store/vectors.py), decoded in numpy; a cell where some asked run has no vector row
        is read from the score rows instead (``_item_matrices_scores``: the same matrices;
        a mean over several answers is DuckDB's ``avg`` there and numpy's sum / count in the
        vector, so its last bits may differ)."""
        tms = list(dict.fromkeys((str(t), str(m)) for t, m in task_metrics))
        if not tms:
            return {}
        found, _, missing = self._vector_matrices(tms, run_ids, False)
        if missing:
            old = self._item_matrices_scores([tms[k] for k in missing], run_ids)
            found.update({k: old[tms[k]] for k in missing if tms[k] in old})
        return {tms[k]: found[k] for k in range(len(tms)) if k in found}

    def _vector_matrices(self, tms: list[tuple[str, str]], run_ids: list[int] | None,
                         labels: bool) -> tuple[dict[int, ItemMatrix], dict[int, np.ndarray],
                                                list[int]]:
        """One read of the asked cells' vector rows (``vectors.matrices``): ({k: matrix},
        {k: label keys} when ``labels``, the cell numbers k where some asked run has no
        vector row: those are left to the score rows).

        The asked cells come from this snapshot's copy of the cells table (``_read_small``,
        which the board's cell statistics read too; a DuckLake scan of its own cost 10-15
        ms), the vector rows from the store's latest snapshot: a cell written since the copy
        is not asked for (the caller's cells do not have it either), a cell deleted since
        has no vector row and goes to the score rows (which have none either)."""
        base, pbase = self._where(run_ids, None, None, "c")
        vbase, pvbase = self._where(run_ids, None, None)
        tasks = sorted({t for t, _ in tms})
        metrics = sorted({m for _, m in tms})
        vfilt = (f"{vbase}{' AND' if vbase else ' WHERE'} task IN ({', '.join('?' * len(tasks))})"
                 f" AND metric IN ({', '.join('?' * len(metrics))})")
        tm = ("tm AS (SELECT unnest(?::VARCHAR[]) AS task, unnest(?::VARCHAR[]) AS metric, "
              "unnest(range(?)) AS k)")
        lab, vlab = (", labs", ", v.labs") if labels else ("", "")
        with self._read_small() as con:
            got = con.execute(
                f"WITH {tm} SELECT tm.k, c.run_id, c.is_binary, v.lo, v.span, v.n, v.bits, "
                f"v.present, v.vals{vlab} FROM cells c JOIN tm USING (task, metric) "
                f"LEFT JOIN (SELECT run_id, task, metric, lo, span, n, bits, present, vals{lab} "
                f"FROM {LAKE}.vectors{vfilt}) v ON v.run_id = c.run_id AND v.task = c.task "
                f"AND v.metric = c.metric{base} ORDER BY tm.k, v.lo, v.span, v.bits, c.run_id",
                [[t for t, _ in tms], [m for _, m in tms], len(tms)] + pvbase + tasks + metrics
                + pbase).fetch_arrow_table()
        k = got.column("k").to_numpy()
        missing = np.unique(k[got.column("lo").is_null().to_numpy(zero_copy_only=False)])
        if missing.size:
            got = got.filter(pc.invert(pc.is_in(got.column("k"), pa.array(missing))))
        found, labs = vectors.matrices(got, tms, labels)
        return found, labs, [int(i) for i in missing]

    def _item_matrices_scores(self, task_metrics: list[tuple[str, str]],
                              run_ids: list[int] | None = None
                              ) -> dict[tuple[str, str], ItemMatrix]:
        """``item_matrices`` from the score rows (cells without a vector row; the tests'
        oracle for the vectors): one query for all cells, the contract of ``item_matrices``.
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
            got_lut = _cell_lut(con, tms)
            if got_lut is None:
                return {}
            lut, kmin = got_lut
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
            pieces = []
            if one:
                # the runs as a range (a test per row that costs nothing; a list of 50 ids
                # cost a third of the scan), the exact set in numpy (_runs_in)
                pieces.append(_runs_in(con.execute(
                    f"SELECT {mcol}s.run_id, s.item, s.score AS m FROM scores s "
                    f"WHERE s.run_id BETWEEN ? AND ?{mcond}{tcond}",
                    ([umetrics] if mcol else []) + [one[0], one[-1]] + pm + pt), one))
            if many:
                w, p = self._where(many, None, None, "s")
                pieces.append(_arrays(con.execute(
                    f"SELECT {mcol}s.run_id, s.item, avg(s.score) AS m "
                    f"FROM scores s{w}{mcond}{tcond} GROUP BY ALL",
                    ([umetrics] if mcol else []) + p + pm + pt)))
            got = pieces[0] if len(pieces) == 1 else \
                {c: np.concatenate([g[c] for g in pieces]) for c in pieces[0]}
        return _fill_matrices(tms, got, lut, kmin, binary)

    def item_id_order(self, tasks: list[str]) -> dict[str, np.ndarray]:
        """task -> the task's integer item keys in the order of their item ids (the order of
        ``item_means``: ``ORDER BY item_id``), one read of the items table for all tasks
        (the bootstrap board puts a matrix's rows in this order, ``ItemMatrix.items`` being
        ascending keys)."""
        names = sorted({str(t) for t in tasks})
        if not names:
            return {}
        with self._read() as con:
            got = con.execute("SELECT task, item FROM items WHERE list_contains(?, task) "
                              "ORDER BY task, item_id", [names]).fetch_arrow_table()
        task = got.column("task").to_numpy(zero_copy_only=False)
        item = got.column("item").to_numpy().astype(np.int64)
        return {t: item[task == t] for t in names}

    def item_labels(self, task: str, items: np.ndarray | list[int]) -> list[str]:
        """The item ids (as the harness wrote them) of integer item keys of ``task``
        (``ItemMatrix.items``), in the given order; StoreError for a key the task lacks.

        Looked up in the task's whole key -> id table, read once per snapshot
        (``_task_item_ids``): a page asks for the ids of one task several times (the Items
        page three times), and a DuckLake query costs 5-15 ms however few rows it returns."""
        keys = np.asarray(items, dtype=np.int64).ravel()
        if not keys.size:
            return []
        table = self._task_item_ids(str(task))
        known = table["item"].to_numpy(np.int64)           # sorted by key
        at = np.minimum(np.searchsorted(known, keys), max(known.size - 1, 0))
        found = (known[at] == keys) if known.size else np.zeros(keys.size, dtype=bool)
        if not found.all():
            missing = keys[~found]
            raise StoreError(f"task {task!r} has no item with key {int(missing[0])} "
                             f"({missing.size} unknown key(s))")
        ids = table["item_id"].to_numpy(object)
        return ids[at].tolist()

    @_per_snapshot
    def _task_item_ids(self, task: str) -> pd.DataFrame:
        """item (key, ascending), item_id of every item of ``task``."""
        with self._read() as con:
            return con.execute("SELECT item, item_id FROM items WHERE task = ? ORDER BY item",
                               [task]).df()


_EMPTY_CODES = pd.DataFrame({"k": pd.Series(dtype="int32"), "run_id": pd.Series(dtype="int32"),
                             "score": pd.Series(dtype=float), "code": pd.Series(dtype="int64"),
                             "has_cluster": pd.Series(dtype=bool)})


def _codes_frame(tms: list[tuple[str, str]], got: dict[str, np.ndarray], lut: np.ndarray,
                 kmin: int) -> pd.DataFrame:
    """``item_cluster_codes``' numpy half: the rows of ``_cluster_rows`` -> its frame."""
    empty = _EMPTY_CODES.copy()
    cell, kept = _row_cells(got, lut, kmin)
    cols = {c: (got[c] if kept is None else got[c][kept]) for c in ("run_id", "m", "lab", "item")}
    if cell.size == 0:
        return empty
    order = np.argsort(cell.astype(np.int16 if len(tms) < 2 ** 15 else np.int64),
                       kind="stable")                 # by cell, read order within
    return _codes_rows(len(tms), cell[order], cols["run_id"][order], cols["m"][order],
                       cols["lab"][order], cols["item"][order])


def _codes_of_matrices(n_cells: int, found: dict[int, ItemMatrix],
                       labs: dict[int, np.ndarray]) -> pd.DataFrame:
    """``item_cluster_codes``' frame from the vector read's matrices and label keys: a row
    per (cell, item, run) present (scores are finite, so present = not NaN), item-major
    within a cell, cells in k order. Codes as ``_codes_rows`` gives for these rows, computed
    per cell on the matrices: the cell's label keys ranked (dense, key order), then each
    item with an unlabelled entry numbered after them in item order (its first appearance
    in item-major order)."""
    parts = []
    for k in sorted(found):
        mat = found[k]
        n_items, n_runs = mat.scores.shape
        if mat.scores.size == 0:
            continue
        present = ~np.isnan(mat.scores)
        code, has = _cell_code_matrix(mat.scores, labs[k])
        keep = present.ravel()
        everything = bool(keep.all())

        def take(a: np.ndarray, keep: np.ndarray = keep, everything: bool = everything
                 ) -> np.ndarray:          # this cell's mask, bound now (used right here)
            return a.ravel() if everything else a.ravel()[keep]

        parts.append((np.full(int(keep.sum()), k, dtype=np.int32),
                      take(np.broadcast_to(mat.run_ids.astype(np.int32)[None, :],
                                           (n_items, n_runs))),
                      take(mat.scores), take(code), take(has)))
    if not parts:
        return _EMPTY_CODES.copy()
    cell, run, mean, code, has = (np.concatenate(c) for c in zip(*parts))
    return pd.DataFrame({"k": cell, "run_id": run, "score": mean, "code": code,
                         "has_cluster": has})


def _cell_code_matrix(scores: np.ndarray, lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, has_cluster) of one cell's items x runs matrix and its label keys (-1: none):
    the label keys of the present entries ranked (dense, key order), then each item with an
    unlabelled present entry numbered after them in item order; codes are -1 where the run
    lacks the item (``scores`` NaN). Where every run has the same labels and every entry
    is present, codes and has_cluster are read-only views repeating one column
    (``np.broadcast_to``: column stride 0, which ``stats.clustered_intervals_of_matrices``
    reads as one code vector)."""
    one = lab[:, :1]
    # every run the same labels: ``vectors.matrices`` gives them as one repeated column
    shared = lab.ndim == 2 and lab.shape[1] > 0 and (lab.strides[1] == 0 or lab.shape[1] == 1)
    if lab.size and int((one if shared else lab).min()) >= 0 and not np.isnan(scores).any():
        # the usual cell: every entry present and labelled; when every run has the same
        # labels, one column's ranks serve all (returned as read-only views repeating it)
        shared = shared or bool((lab == one).all())
        got = one if shared else lab
        lo = int(got.min())
        seen = np.zeros(int(got.max()) - lo + 1, dtype=bool)
        seen[got.ravel() - lo] = True
        rank = np.cumsum(seen, dtype=np.int64) - 1
        code = rank[got - lo]
        if shared:
            return (np.broadcast_to(code, lab.shape),
                    np.broadcast_to(np.ones((1, 1), dtype=bool), lab.shape))
        return code, np.ones(lab.shape, dtype=bool)
    present = ~np.isnan(scores)
    has = (lab >= 0) & present
    code = np.full(lab.shape, -1, dtype=np.int64)
    n_lab = 0
    if has.any():
        got = lab[has]
        lo = int(got.min())
        seen = np.zeros(int(got.max()) - lo + 1, dtype=bool)
        seen[got - lo] = True
        rank = np.cumsum(seen, dtype=np.int64) - 1
        n_lab = int(rank[-1]) + 1
        code[has] = rank[got - lo]
    lone = present & ~has
    if lone.any():
        lone_item = lone.any(axis=1)
        item_code = n_lab + np.cumsum(lone_item, dtype=np.int64) - 1
        code[lone] = np.broadcast_to(item_code[:, None], lab.shape)[lone]
    return code, has


def _codes_rows(n_cells: int, cell: np.ndarray, run: np.ndarray, mean: np.ndarray,
                lab: np.ndarray, items: np.ndarray) -> pd.DataFrame:
    """``item_cluster_codes``' frame from rows grouped by cell (cell number, run id, mean,
    label key or -1, item key): codes of the labels dense per cell in key order, then the
    unlabelled items in order of first appearance."""
    mean = mean.astype(np.float64, copy=False)
    cell = cell.astype(np.int64, copy=False)
    lab = lab.astype(np.int64)
    has = lab >= 0
    code = np.zeros(cell.size, dtype=np.int64)
    n_lab = np.zeros(n_cells, dtype=np.int64)
    if has.any():
        # dense rank of (cell, label key), the order np.unique gives, per cell from 0
        lo = int(lab[has].min())
        span = int(lab[has].max()) - lo + 1
        key = cell[has] * span + (lab[has] - lo)
        if n_cells * span <= 1 << 26:
            seen = np.zeros(n_cells * span, dtype=bool)
            seen[key] = True
            rank = np.cumsum(seen, dtype=np.int64) - 1
            n_lab = seen.reshape(n_cells, span).sum(axis=1)
            dense = rank[key]
        else:
            uniq, dense = np.unique(key, return_inverse=True)
            n_lab = np.bincount(uniq // span, minlength=n_cells)
        first = np.concatenate([[0], np.cumsum(n_lab)[:-1]])
        code[has] = dense - first[cell[has]]
    if (~has).any():
        # an unlabelled item is its own cluster, numbered after the cell's labels in order
        # of first appearance (rows are grouped by cell, so each cell's new codes are one
        # run of pd.factorize's codes)
        lone_cell = cell[~has]
        items = items[~has].astype(np.int64)
        span_i = int(items.max()) + 1
        f, uniq = pd.factorize(lone_cell * span_i + items)
        n_lone = np.bincount(np.asarray(uniq) // span_i, minlength=n_cells)
        first = np.concatenate([[0], np.cumsum(n_lone)[:-1]])
        code[~has] = n_lab[lone_cell] + f - first[lone_cell]
    return pd.DataFrame({"k": cell.astype(np.int32), "run_id": run.astype(np.int32),
                         "score": mean, "code": code, "has_cluster": has})


def _fill_matrices(tms: list[tuple[str, str]], got: dict[str, np.ndarray], lut: np.ndarray,
                   kmin: int, binary: dict[int, bool]) -> dict[tuple[str, str], ItemMatrix]:
    """``item_matrices``' numpy half: rows (run_id, item, m, optional metric number km)
    -> one items x runs matrix per cell k = ``lut[km, item - kmin]``, run ids and item keys
    ascending, filled by one scatter into one NaN buffer (the matrices are views of it, one
    region each). Every pass over the rows is a gather or a scatter through small tables
    (cell x run id, metric number x item key): no sort, no unique. One cell whose runs and
    items are key ranges without gaps (the usual one-task board) needs no table at all."""
    n_m, span = lut.shape
    mean = np.asarray(got["m"], dtype=np.float64)
    if mean.size == 0:
        return {}
    # key: flat index into lut (metric number x item key); int32 arithmetic where it fits
    # (the passes over millions of rows move half the bytes)
    small = n_m * span < 2 ** 31 - 1
    ityp = np.int32 if small else np.int64
    key = np.subtract(np.asarray(got["item"]), kmin, dtype=ityp)
    if "km" in got:
        key += np.asarray(got["km"]).astype(ityp) * ityp(span)
    run = np.asarray(got["run_id"])
    run = run if run.dtype == np.int32 else run.astype(np.int64)
    flat_lut = lut.ravel()
    klo, khi = int(key.min()), int(key.max())
    if klo < 0 or khi >= flat_lut.size:                       # rows of other tasks
        inside = (key >= 0) & (key < flat_lut.size)
        key, run, mean = key[inside], run[inside], mean[inside]
        if key.size == 0:
            return {}
        klo, khi = int(key.min()), int(key.max())
    n_cells = len(tms)
    one = n_cells == 1 and bool(np.all(flat_lut[klo:khi + 1] == 0))
    if one:                                                   # every row is cell 0
        cell = None
    else:
        cell = flat_lut[key].astype(np.int64)
        if int(cell.min()) < 0:                               # tasks asked, not this metric
            keep = cell >= 0
            key, run, mean, cell = key[keep], run[keep], mean[keep], cell[keep]
            if cell.size == 0:
                return {}
    rmin = int(run.min())
    rspan = int(run.max()) - rmin + 1
    # runs of each cell: presence over (cell, run id); the column of a run = its rank
    rkey = np.subtract(run, rmin, dtype=run.dtype) if cell is None else \
        cell * rspan + (run - rmin)
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
    size = n_items * n_runs
    offset = np.concatenate([[0], np.cumsum(size)])
    # a row per (cell, run, item) (one answer per item, or averaged): when there are as many
    # rows as slots, every slot is written once and the buffer needs no NaN fill
    buf = np.empty(int(offset[-1])) if mean.size == int(offset[-1]) else \
        np.full(int(offset[-1]), np.nan)
    if one and n_runs[0] == rspan and where[-1] - where[0] + 1 == where.size:
        # no gaps: row = key - first key, column = run id - first run id (in place: one
        # int64 index array)
        pos = key.astype(np.int64)
        pos -= int(where[0])
        pos *= rspan
        pos += rkey
        buf[pos] = mean
    else:
        # position of a row = offset of its cell + item row * runs of the cell + run column
        rank = np.arange(where.size) - starts[owner]
        item_term = np.zeros(n_m * span, dtype=np.int64)
        item_term[where] = offset[owner] + rank * n_runs[owner]
        run_term = (np.cumsum(has_run, axis=1, dtype=np.int64) - 1).ravel()
        pos = item_term[key]
        pos += run_term[rkey]
        buf[pos] = mean
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


def _cell_lut(con: duckdb.DuckDBPyConnection,
              tms: list[tuple[str, str]]) -> tuple[np.ndarray, int] | None:
    """(lut, kmin): ``lut[metric number, item key - kmin]`` = the number k of the cell
    (task, metric) = ``tms[k]`` an item key and metric belong to, -1 when not asked; metric
    numbers index the sorted distinct metrics of ``tms``. Item keys are global (one task
    per key, table ``items``), so a score row's cell follows from its integer item key and
    metric, without reading the task column. None when no asked task has items."""
    utasks = sorted({t for t, _ in tms})
    umetrics = sorted({m for _, m in tms})
    spans = con.execute(
        "SELECT task, min(item), max(item), count(*) FROM items "
        "WHERE list_contains(?::VARCHAR[], task) GROUP BY task", [utasks]).fetchall()
    if not spans:
        return None
    kmin = min(int(lo) for _, lo, _, _ in spans)
    kmax = max(int(hi) for _, _, hi, _ in spans)
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
        got = con.execute("SELECT task, item FROM items WHERE list_contains(?::VARCHAR[], task)",
                          [utasks]).fetch_arrow_table()
        key_task = got.column("task").to_numpy(zero_copy_only=False)
        key_item = got.column("item").to_numpy().astype(np.int64) - kmin
        for t, pairs in cells_of.items():
            sel = key_item[key_task == t]
            for mi, k in pairs:
                lut[mi, sel] = k
    return lut, kmin


def _row_cells(got: dict[str, np.ndarray], lut: np.ndarray, kmin: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(cell number per row, rows kept) of score rows (``item``, optional metric number
    ``km``) through ``_cell_lut``'s table; rows of cells not asked are dropped (``kept``:
    a boolean mask, or None when every row is kept)."""
    key = np.subtract(np.asarray(got["item"]), kmin, dtype=np.int64)
    if "km" in got:
        key += np.asarray(got["km"]).astype(np.int64) * lut.shape[1]
    flat = lut.ravel()
    kept = None
    if key.size and (int(key.min()) < 0 or int(key.max()) >= flat.size):
        kept = (key >= 0) & (key < flat.size)
        key = key[kept]
    cell = flat[key].astype(np.int64)
    if cell.size and int(cell.min()) < 0:
        ok = cell >= 0
        if kept is None:
            kept = ok
        else:
            kept[np.flatnonzero(kept)[~ok]] = False
        cell = cell[ok]
    return cell, kept


def _arrays(result: duckdb.DuckDBPyConnection) -> dict[str, np.ndarray]:
    """A query's columns as numpy arrays, through Arrow (about half the time of
    ``fetchnumpy`` on millions of rows)."""
    table = result.fetch_arrow_table()
    return {c: table.column(c).to_numpy() for c in table.column_names}


def _runs_in(result: duckdb.DuckDBPyConnection, runs: list[int]) -> dict[str, np.ndarray]:
    """``_arrays`` of a query read with ``run_id BETWEEN min(runs) AND max(runs)``, keeping
    only the rows of ``runs`` (ascending ids): a presence table over the id range."""
    got = _arrays(result)
    lo, hi = runs[0], runs[-1]
    if len(runs) == hi - lo + 1 or not len(got["run_id"]):
        return got
    ok = np.zeros(hi - lo + 1, dtype=bool)
    ok[np.asarray(runs) - lo] = True
    keep = ok[np.asarray(got["run_id"], dtype=np.int64) - lo]
    return {c: v[keep] for c, v in got.items()}
