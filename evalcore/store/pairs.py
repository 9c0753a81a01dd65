"""The reads of two runs side by side (compare, discordant items, rerun noise, metric
variants, the planner's pilot pair): per-item means on integer item keys, and item ids and
texts fetched only for the items a caller shows. A mixin of ``Store`` beside
``query._Queries``."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow as pa

from evalcore.model import PairedItems

_NONE = np.iinfo(np.int64).max     # a missing label key while taking per-item minima
_PAIR_LOCK = threading.Lock()
_PAIR_MEMO_CELLS = 256              # cells kept per Store object (of the current snapshot)
# the second of two reads run at once (answer_texts, scored_item_ids, query.protocol_diff);
# only store reads run on it, none of which submits here again, so no job waits on this pool
# from inside it
_SIDE_READS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="evalbars-read")


def _item_side(item: np.ndarray, score: np.ndarray, labels: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One side of a cell: (item keys ascending, per-item mean score, per-item smallest
    label key of each label column (columns of ``labels``; -1 = none)). Rows of an item with
    one answer pass through; several answers are averaged (``np.bincount``)."""
    if item.size and not bool(np.all(item[1:] >= item[:-1])):
        order = np.argsort(item, kind="stable")
        item, score, labels = item[order], score[order], labels[order]
    if item.size < 2 or bool(np.all(item[1:] != item[:-1])):
        return item, score, labels
    keys, start = np.unique(item, return_index=True)
    inv = np.repeat(np.arange(keys.size), np.diff(np.append(start, item.size)))
    mean = np.bincount(inv, weights=score) / np.bincount(inv)
    lab = np.where(labels < 0, _NONE, labels)
    low = np.minimum.reduceat(lab, start, axis=0)
    return keys, mean, np.where(low == _NONE, -1, low)


class _PairQueries:
    """Two runs (or two metrics of one run) item by item, on integer keys."""

    def paired_items(self, run_a: int, run_b: int,
                     cells: list[tuple[str, str, str]]) -> list[PairedItems]:
        """Per-item means of run A on (task, metric_a) and run B on (task, metric_b) for
        several cells in one query, joined on the integer item keys (a full outer join:
        every item either side has).

        ``cells``: (task, metric_a, metric_b) triples; one ``PairedItems`` per triple, in
        order. Per item: the mean over its answers on each side (NaN where that side lacks
        the item); ``cluster`` the cluster's integer label key (run A's, else run B's; the
        smallest key when an item's answers differ; -1 = no cluster); ``hash_match`` False
        when both sides recorded an item hash (or a prompt hash) and they differ. Label keys
        are unique per distinct text within a task, so equal keys mean equal labels. No
        item id or label text is read: ``item_labels`` names the items a caller shows.
        ``run_a == run_b`` with ``metric_a == metric_b`` gives one run's item means and
        cluster keys (on both sides). Cells are memoized per snapshot.
        """
        cells = [(str(t), str(ma), str(mb)) for t, ma, mb in cells]
        if not cells:
            return []
        a, b = int(run_a), int(run_b)
        # per-snapshot memo of single cells: the discordant list after a compare, or a
        # second view of the same pair, reads nothing (arrays are read-only)
        version = self.version()
        with _PAIR_LOCK:
            memo = self.__dict__.setdefault("_pair_memo", {})
            got = {c: hit[1] for c in cells
                   if (hit := memo.get((a, b) + c)) is not None and hit[0] == version}
        missing = list(dict.fromkeys(c for c in cells if c not in got))
        if missing:
            fresh = self._paired_items(a, b, missing)
            with _PAIR_LOCK:
                memo = {k: v for k, v in self.__dict__.get("_pair_memo", {}).items()
                        if v[0] == version}
                for c, p in zip(missing, fresh):
                    memo[(a, b) + c] = (version, p)
                    got[c] = p
                while len(memo) > _PAIR_MEMO_CELLS:
                    memo.pop(next(iter(memo)))
                self.__dict__["_pair_memo"] = memo
        return [got[c] for c in cells]

    def _paired_items(self, a: int, b: int, cells: list[tuple[str, str, str]]
                      ) -> list[PairedItems]:
        """``paired_items`` of distinct cells, read in one query."""
        tasks = sorted({t for t, _, _ in cells})
        metrics = sorted({m for _, ma, mb in cells for m in (ma, mb)})
        sql = ("SELECT run_id, list_position(?::VARCHAR[], task) AS kt, "
               "list_position(?::VARCHAR[], metric) AS km, item, score, "
               "coalesce(cluster, -1) AS cl, coalesce(item_hash, -1) AS ih, "
               "coalesce(prompt_hash, -1) AS ph FROM scores WHERE run_id IN (?, ?) "
               # list_contains, not IN: an IN list of 20 tasks is a hash join (measured
               # 40-47 against 21-29 ms for the 20 tasks of two bench runs)
               "AND list_contains(?, task) AND list_contains(?, metric)")
        with self._read() as con:
            table = con.execute(sql, [tasks, metrics, a, b, tasks, metrics]
                                ).fetch_arrow_table()
        got = {c: table.column(c).to_numpy() for c in table.column_names}
        # one stable sort of the rows by (task, metric, side) blocks: kt, km and the side are
        # small integers, so the block code is too (a radix sort)
        width = len(metrics) + 1
        side = (np.asarray(got["run_id"]) != a).astype(np.int32)   # a == b: all side 0
        block = (np.asarray(got["kt"], dtype=np.int32) * width
                 + np.asarray(got["km"], dtype=np.int32)) * 2 + side
        order = np.argsort(block, kind="stable")
        bounds = np.searchsorted(block[order], np.arange((len(tasks) + 1) * width * 2 + 1))
        item = np.asarray(got["item"], dtype=np.int64)[order]
        score = np.asarray(got["score"], dtype=np.float64)[order]
        labels = np.column_stack([np.asarray(got[c], dtype=np.int64)[order]
                                  for c in ("cl", "ih", "ph")])

        def rows(task: str, metric: str, s: int) -> slice:
            k = ((tasks.index(task) + 1) * width + metrics.index(metric) + 1) * 2 + s
            return slice(bounds[k], bounds[k + 1])

        out = []
        for t, ma, mb in cells:
            sa, sb = rows(t, ma, 0), rows(t, mb, int(a != b))
            out.append(_join_sides(t, ma, mb, _item_side(item[sa], score[sa], labels[sa]),
                                   _item_side(item[sb], score[sb], labels[sb])))
        return out

    def answer_matrix(self, run_id: int, task: str, metric: str
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One run's raw answers of (task, metric) as (item keys ascending, answer_idx values
        ascending, items x answers matrix of scores with NaN where an item lacks that
        answer), from integer columns only (the repeats page's variance components)."""
        with self._read() as con:
            table = con.execute("SELECT item, answer_idx, score FROM scores WHERE run_id = ? "
                                "AND task = ? AND metric = ?",
                                [int(run_id), str(task), str(metric)]).fetch_arrow_table()
        item = np.asarray(table.column("item").to_numpy(), dtype=np.int64)
        ans = np.asarray(table.column("answer_idx").to_numpy(), dtype=np.int64)
        items, ii = np.unique(item, return_inverse=True)
        answers, ai = np.unique(ans, return_inverse=True)
        x = np.full((items.size, answers.size), np.nan)
        x[ii, ai] = np.asarray(table.column("score").to_numpy(), dtype=np.float64)
        return items, answers, x

    def scored_item_ids(self, run_id: int, task: str, metric: str) -> list[str]:
        """The item ids of one run's (task, metric) scores, in item-key order (the Items
        page's exclusion choices): ``item_labels`` of ``answer_matrix``'s item keys, with
        the task's key -> id table (read once per snapshot) read while the run's keys are
        (two reads at once, the side one under this thread's store version); [] when the
        run has no such scores."""
        version = self.version()

        def id_table() -> pd.DataFrame:
            with self.one_version(version):
                return self._task_item_ids(str(task))

        table = _SIDE_READS.submit(id_table)
        try:
            items, _, _ = self.answer_matrix(int(run_id), str(task), str(metric))
        finally:
            table.result()                  # never leave the other read running
        return self.item_labels(str(task), items) if items.size else []

    def answer_texts(self, run_ids: list[int], task: str) -> tuple[pa.Table, pd.DataFrame]:
        """The first answer (answer_idx 0) of every item of ``task`` in the runs, on integer
        item keys, for the Items page's picks (``analysis.items.pick_matrix``):

        - ``answers``: an Arrow table run_id, item, target, response, one row per run and
          item with a first answer, in no particular order (no item id, no prompt);
        - ``firsts``: a DataFrame item, item_id, prompt, target, one row per item of those
          rows: the first non-missing prompt and target in run-id order.

        Two reads at once, each on its own cursor (the prompts are aggregated in SQL, so
        only one per item leaves DuckDB); an item of ``answers`` that a write between them
        removed from ``firsts`` is the caller's to drop."""
        ids = sorted({int(r) for r in run_ids})
        where = "FROM texts WHERE task = ? AND answer_idx = 0 AND list_contains(?, run_id)"

        def read_firsts() -> pd.DataFrame:
            with self._read() as con:
                return con.execute(
                    "SELECT f.item, i.item_id, f.prompt, f.target FROM (SELECT item, "
                    "arg_min(prompt, run_id) FILTER (WHERE prompt IS NOT NULL) AS prompt, "
                    "arg_min(target, run_id) FILTER (WHERE target IS NOT NULL) AS target "
                    f"{where} GROUP BY item) f JOIN items i ON i.item = f.item",
                    [str(task), ids]).df()

        firsts = _SIDE_READS.submit(read_firsts)
        try:
            with self._read() as con:
                answers = con.execute(f"SELECT run_id, item, target, response {where}",
                                      [str(task), ids]).fetch_arrow_table()
        finally:
            got = firsts.result()           # never leave the other read running
        return answers, got

    def label_texts(self, task: str, labels: np.ndarray | list[int]) -> list[str | None]:
        """The texts of integer label keys of ``task`` (``PairedItems.cluster``: cluster
        labels), in the given order; None for -1 (no label) and for a key the task lacks."""
        keys = [int(k) for k in np.asarray(labels, dtype=np.int64).ravel()]
        wanted = sorted({k for k in keys if k >= 0})
        if not wanted:
            return [None] * len(keys)
        with self._read() as con:
            rows = con.execute("SELECT label, value FROM labels WHERE task = ? AND "
                               "list_contains(?, label)", [str(task), wanted]).fetchall()
        text = {int(k): v for k, v in rows}
        return [text.get(k) for k in keys]

    def first_texts(self, run_ids: list[int], task: str, items: np.ndarray | list[int]
                    ) -> pd.DataFrame:
        """The item id of each asked item (integer keys of ``task``) and the texts of its
        first stored answer (smallest answer_idx) in each of the runs, in one query.

        Columns item, item_id, run_id, prompt, target, response: one row per item and run
        with texts; an item without texts in any of the runs has one row with run_id -1 and
        None texts; a key the task lacks has no row. Ordered by item, run_id."""
        keys = sorted({int(i) for i in np.asarray(items, dtype=np.int64).ravel()})
        ids = sorted({int(r) for r in run_ids})
        if not keys:
            return pd.DataFrame({"item": pd.Series(dtype="int32"),
                                 "item_id": pd.Series(dtype=object),
                                 "run_id": pd.Series(dtype="int32"),
                                 **{c: pd.Series(dtype=object)
                                    for c in ("prompt", "target", "response")}})
        runs = f"run_id IN ({', '.join('?' * len(ids))})" if ids else "FALSE"
        sql = ("SELECT i.item, i.item_id, coalesce(t.run_id, -1) AS run_id, t.prompt, t.target, "
               "t.response FROM (SELECT item, item_id FROM items WHERE task = ? AND "
               "list_contains(?, item)) i LEFT JOIN (SELECT run_id, item, prompt, target, "
               f"response FROM texts WHERE task = ? AND {runs} AND list_contains(?, item) "
               "QUALIFY row_number() OVER (PARTITION BY run_id, item ORDER BY answer_idx) = 1"
               ") t USING (item) ORDER BY i.item, run_id")
        with self._read() as con:   # .df(): a missing text is None (as ``texts``)
            return con.execute(sql, [str(task), keys, str(task)] + ids + [keys]).df()


def _join_sides(task: str, metric_a: str, metric_b: str, side_a: tuple, side_b: tuple
                ) -> PairedItems:
    """Full outer join of two ``_item_side`` results on the item key."""
    ia, xa, la = side_a
    ib, xb, lb = side_b
    if ia.size == ib.size and bool(np.all(ia == ib)):
        items = ia
        pa = pb = np.arange(ia.size)
    else:
        items = np.union1d(ia, ib)
        pa, pb = np.searchsorted(items, ia), np.searchsorted(items, ib)
    score_a = np.full(items.size, np.nan)
    score_b = np.full(items.size, np.nan)
    score_a[pa], score_b[pb] = xa, xb
    lab_a = np.full((items.size, 3), -1, dtype=np.int64)
    lab_b = np.full((items.size, 3), -1, dtype=np.int64)
    lab_a[pa], lab_b[pb] = la, lb
    cluster = np.where(lab_a[:, 0] >= 0, lab_a[:, 0], lab_b[:, 0])
    differ = (lab_a[:, 1:] >= 0) & (lab_b[:, 1:] >= 0) & (lab_a[:, 1:] != lab_b[:, 1:])
    arrays = [np.array(items, dtype=np.int64), score_a, score_b, cluster, ~differ.any(axis=1)]
    for x in arrays:
        x.setflags(write=False)
    return PairedItems(task, metric_a, metric_b, *arrays)
