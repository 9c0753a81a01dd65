"""Builders for analysis/CLI tests: hand-made ParsedRun objects and a small in-memory store.

``MemoryStore`` implements the reading half of the ``evalcore.store.Store`` API in pandas
(the analysis layer uses the store duck-typed), so the analysis logic can be tested with
hand-built inputs independently of DuckDB. ``make_store`` returns the real Store when it
works, the MemoryStore otherwise (or when asked).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from evalcore.errors import StoreError
from evalcore.model import (
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    TASK_COLUMNS,
    TEXT_COLUMNS,
    ParsedRun,
    SourceFile,
    empty_frame,
)


def make_run(name: str, scores: dict | None = None, *, summaries: list[dict] | None = None,
             n_choices: dict | None = None, clusters: dict | None = None,
             protocol: dict | None = None, task_protocol: dict | None = None,
             prompt_hash: dict | None = None, texts: bool = True,
             harness_version: str = "0.4.8") -> ParsedRun:
    """A ParsedRun from {(task, metric): array} (1-D: one answer per item, item ids "0".."n-1";
    2-D items x answers with NaN for missing answers; or a dict item_id -> score)."""
    rows = []
    for (task, metric), vals in (scores or {}).items():
        if isinstance(vals, dict):
            items = [(str(k), 0, float(v)) for k, v in vals.items()]
        else:
            arr = np.asarray(vals, dtype=float)
            if arr.ndim == 1:
                arr = arr[:, None]
            items = [(str(i), j, float(arr[i, j])) for i in range(arr.shape[0])
                     for j in range(arr.shape[1]) if np.isfinite(arr[i, j])]
        cl = (clusters or {}).get(task)
        ph = (prompt_hash or {}).get(task, {})
        for item, ans, s in items:
            rows.append({"task": task, "metric": metric, "item_id": item, "answer_idx": ans,
                         "score": s,
                         "cluster": None if cl is None else str(cl[int(item)] if isinstance(
                             cl, (list, tuple, np.ndarray)) else cl.get(item)),
                         "item_hash": "h" + item, "prompt_hash": ph.get(item, "p" + item)})
    sc = pd.DataFrame(rows, columns=list(SCORE_COLUMNS)) if rows else empty_frame(SCORE_COLUMNS)
    su = (pd.DataFrame([{**{"stderr_raw": None, "n": None, "is_group": False}, **s}
                        for s in summaries], columns=list(SUMMARY_COLUMNS))
          if summaries else empty_frame(SUMMARY_COLUMNS))
    if texts and rows:
        tx = sc[["task", "item_id", "answer_idx"]].drop_duplicates().copy()
        tx["prompt"] = "Q" + tx["item_id"]
        tx["target"] = "T" + tx["item_id"]
        tx["response"] = name + ":" + tx["item_id"]
        tx = tx[list(TEXT_COLUMNS)]
    else:
        tx = empty_frame(TEXT_COLUMNS)
    task_names = sorted({t for t, _ in (scores or {})} | {s["task"] for s in summaries or []})
    tk = pd.DataFrame([{"task": t, "n_choices": (n_choices or {}).get(t),
                        "protocol": dict(task_protocol or {})} for t in task_names],
                      columns=list(TASK_COLUMNS)) if task_names else empty_frame(TASK_COLUMNS)
    digest = hashlib.sha256(repr((name, rows, summaries)).encode()).hexdigest()
    return ParsedRun(name=name, model=name, source_format="tidy", harness=None,
                     harness_version=harness_version,
                     protocol=dict(protocol or {"harness_version": harness_version}),
                     files=[SourceFile(name=f"{name}.csv", sha256=digest, size=len(rows),
                                       format="tidy_csv")],
                     scores=sc, summaries=su, texts=tx, tasks=tk)


class MemoryStore:
    """The Store's reading API over pandas frames (for tests of the analysis layer)."""

    def __init__(self, runs: list[ParsedRun]):
        self._runs = {}
        for i, r in enumerate(runs, start=1):
            self._runs[i] = r

    # reading ---------------------------------------------------------------------------
    def resolve_run(self, ref) -> int:
        for rid, r in self._runs.items():
            if str(ref) == r.name:
                return rid
        try:
            if int(ref) in self._runs:
                return int(ref)
        except (TypeError, ValueError):
            pass
        raise StoreError(f"unknown run {ref!r}; runs: "
                         f"{', '.join(r.name for r in self._runs.values())}")

    def runs(self) -> pd.DataFrame:
        return pd.DataFrame([{"run_id": rid, "name": r.name, "model": r.model,
                              "source_format": r.source_format, "harness": r.harness,
                              "harness_version": r.harness_version, "tags": [],
                              "created_at": pd.Timestamp("2026-01-01"), "source_key": None,
                              "n_tasks": len(set(r.scores["task"]) | set(r.summaries["task"])),
                              "n_scores": len(r.scores), "has_items": len(r.scores) > 0}
                             for rid, r in self._runs.items()],
                            columns=["run_id", "name", "model", "source_format", "harness",
                                     "harness_version", "tags", "created_at", "source_key",
                                     "n_tasks", "n_scores", "has_items"])

    def _ids(self, run_ids):
        return list(self._runs) if run_ids is None else [int(r) for r in run_ids]

    def scores(self, run_ids, task=None, metric=None) -> pd.DataFrame:
        frames = []
        for rid in self._ids(run_ids):
            s = self._runs[rid].scores.copy()
            s.insert(0, "run_id", rid)
            frames.append(s)
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["run_id", *SCORE_COLUMNS])
        if task is not None:
            out = out[out["task"] == task]
        if metric is not None:
            out = out[out["metric"] == metric]
        out["score"] = out["score"].astype(float)
        return out.reset_index(drop=True)

    def item_means(self, run_ids, task=None, metric=None) -> pd.DataFrame:
        s = self.scores(run_ids, task, metric)
        cols = ["run_id", "task", "metric", "item_id", "score", "n_answers", "cluster",
                "item_hash", "prompt_hash"]
        if s.empty:
            return pd.DataFrame(columns=cols)
        g = s.groupby(["run_id", "task", "metric", "item_id"], as_index=False, dropna=False)
        out = g.agg(score=("score", "mean"), n_answers=("score", "size"),
                    cluster=("cluster", "first"), item_hash=("item_hash", "first"),
                    prompt_hash=("prompt_hash", "first"))
        return out[cols]

    def item_mean_bounds(self, run_ids, task, metric) -> dict:
        m = self.item_means(self._ids(run_ids), task, metric)["score"].astype(float)
        m = m[~np.isnan(m)]
        return {"n": len(m), "min": float(m.min()) if len(m) else None,
                "max": float(m.max()) if len(m) else None}

    def item_cluster_codes(self, task_metrics, run_ids=None) -> pd.DataFrame:
        frames = []
        for k, (task, metric) in enumerate(dict.fromkeys(task_metrics)):
            im = self.item_means(self._ids(run_ids), task, metric)
            has = im["cluster"].notna().to_numpy(dtype=bool)
            key = [("c", str(c)) if h else ("i", str(i))
                   for c, i, h in zip(im["cluster"], im["item_id"], has)]
            frames.append(pd.DataFrame({"k": k, "run_id": im["run_id"].astype(int),
                                        "score": im["score"].astype(float),
                                        "code": pd.factorize(pd.Series(key, dtype=object))[0],
                                        "has_cluster": has}))
        cols = ["k", "run_id", "score", "code", "has_cluster"]
        return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)

    def _item_keys(self, task) -> dict:
        """item_id -> integer key: the item's rank among every item id the task has in any
        run (stable while the memory store lives; the real store allocates its own)."""
        ids = sorted({str(i) for r in self._runs.values()
                      for i in r.scores.loc[r.scores["task"] == task, "item_id"]})
        return {i: n for n, i in enumerate(ids)}

    def item_matrices(self, task_metrics, run_ids=None) -> dict:
        from evalcore.model import ItemMatrix
        out = {}
        for task, metric in dict.fromkeys((str(t), str(m)) for t, m in task_metrics):
            s = self.scores(self._ids(run_ids), task, metric)
            if s.empty:
                continue
            keys = self._item_keys(task)
            s["item"] = s["item_id"].astype(str).map(keys)
            piv = s.groupby(["item", "run_id"])["score"].mean().unstack("run_id").sort_index()
            piv = piv.reindex(sorted(piv.columns), axis=1)
            out[(task, metric)] = ItemMatrix(
                task, metric, np.asarray(piv.columns, dtype=np.int64),
                np.asarray(piv.index, dtype=np.int64), piv.to_numpy(dtype=float),
                bool(s["score"].isin([0.0, 1.0]).all()))
        return out

    def item_labels(self, task, items) -> list:
        inv = {v: k for k, v in self._item_keys(task).items()}
        try:
            return [inv[int(i)] for i in np.asarray(items, dtype=np.int64).ravel()]
        except KeyError as exc:
            raise StoreError(f"task {task!r} has no item with key {exc.args[0]}") from None

    def cell_stats(self, run_ids=None, task=None, metric=None) -> pd.DataFrame:
        im = self.item_means(self._ids(run_ids), task, metric)
        cols = ["run_id", "task", "metric", "n", "sum", "sumsq", "binary"]
        if im.empty:
            return pd.DataFrame(columns=cols)
        im["sq"] = im["score"] ** 2
        im["bin"] = im["score"].isin([0.0, 1.0])
        g = im.groupby(["run_id", "task", "metric"], as_index=False)
        out = g.agg(n=("score", "size"), sum=("score", "sum"), sumsq=("sq", "sum"),
                    binary=("bin", "all"))
        return out[cols]

    def _label_keys(self, task) -> dict:
        """label text -> integer key (1..) over every cluster label and hash of ``task``."""
        vals = sorted({str(v) for r in self._runs.values()
                       for c in ("cluster", "item_hash", "prompt_hash")
                       for v in r.scores.loc[r.scores["task"] == task, c] if v is not None
                       and not (isinstance(v, float) and np.isnan(v))})
        return {v: n + 1 for n, v in enumerate(vals)}

    def label_texts(self, task, labels) -> list:
        inv = {v: k for k, v in self._label_keys(task).items()}
        return [inv.get(int(k)) for k in np.asarray(labels, dtype=np.int64).ravel()]

    def paired_items(self, run_a, run_b, cells) -> list:
        """Store.paired_items by a pandas outer merge of two item_means on item_id."""
        from evalcore.model import PairedItems
        out = []
        for task, ma, mb in cells:
            keys, labs = self._item_keys(task), self._label_keys(task)
            a = self.item_means([run_a], task, ma)
            b = self.item_means([run_b], task, mb)
            m = a.merge(b, on=["item_id"], how="outer", suffixes=("_a", "_b"))
            m["item"] = m["item_id"].astype(str).map(keys)
            m = m.sort_values("item")

            def key(col):
                return np.array([labs[str(v)] if isinstance(v, str) else -1 for v in m[col]],
                                dtype=np.int64)
            cl_a, cl_b = key("cluster_a"), key("cluster_b")
            differ = np.zeros(len(m), dtype=bool)
            for h in ("item_hash", "prompt_hash"):
                ha, hb = key(h + "_a"), key(h + "_b")
                differ |= (ha >= 0) & (hb >= 0) & (ha != hb)
            out.append(PairedItems(task, ma, mb, m["item"].to_numpy(dtype=np.int64),
                                   m["score_a"].to_numpy(dtype=float),
                                   m["score_b"].to_numpy(dtype=float),
                                   np.where(cl_a >= 0, cl_a, cl_b), ~differ))
        return out

    def answer_matrix(self, run_id, task, metric):
        s = self.scores([run_id], task, metric)
        keys = self._item_keys(task)
        item = s["item_id"].astype(str).map(keys).to_numpy(dtype=np.int64)
        items, ii = np.unique(item, return_inverse=True)
        answers, ai = np.unique(s["answer_idx"].to_numpy(dtype=np.int64), return_inverse=True)
        x = np.full((items.size, answers.size), np.nan)
        x[ii, ai] = s["score"].to_numpy(dtype=float)
        return items, answers, x

    def first_texts(self, run_ids, task, items) -> pd.DataFrame:
        inv = {v: k for k, v in self._item_keys(task).items()}
        keys = sorted({int(i) for i in np.asarray(items, dtype=np.int64).ravel()} & set(inv))
        rows = []
        for key in keys:
            found = False
            for rid in sorted({int(r) for r in run_ids}):
                t = self._runs[rid].texts
                t = t[(t["task"] == task) & (t["item_id"].astype(str) == inv[key])]
                if len(t):
                    r = t.sort_values("answer_idx").iloc[0]
                    rows.append({"item": key, "item_id": inv[key], "run_id": rid,
                                 "prompt": r.prompt, "target": r.target,
                                 "response": r.response})
                    found = True
            if not found:
                rows.append({"item": key, "item_id": inv[key], "run_id": -1, "prompt": None,
                             "target": None, "response": None})
        return pd.DataFrame(rows, columns=["item", "item_id", "run_id", "prompt", "target",
                                           "response"])

    def task_protocol_table(self, run_ids=None, task=None) -> pd.DataFrame:
        rows = [{"run_id": rid, "task": t, "protocol": p if isinstance(p, dict) else {}}
                for rid in self._ids(run_ids)
                for t, p in zip(self._runs[rid].tasks["task"], self._runs[rid].tasks["protocol"])
                if task is None or t == task]
        return pd.DataFrame(rows, columns=["run_id", "task", "protocol"])

    def tasks(self, run_ids=None) -> pd.DataFrame:
        rows = []
        for rid in self._ids(run_ids):
            r = self._runs[rid]
            nch = dict(zip(r.tasks["task"], r.tasks["n_choices"]))
            if len(r.scores):
                im = self.item_means([rid])
                for (t, m), g in im.groupby(["task", "metric"]):
                    rows.append({"run_id": rid, "task": t, "metric": m, "n_items": len(g),
                                 "k_max": int(g["n_answers"].max()),
                                 "has_cluster": bool(g["cluster"].notna().any()),
                                 "binary": bool(g["score"].isin([0.0, 1.0]).all()),
                                 "n_choices": nch.get(t), "has_items": True})
            have = {(x["task"], x["metric"]) for x in rows if x["run_id"] == rid}
            for s in r.summaries.itertuples(index=False):
                if (s.task, s.metric) not in have and not s.is_group:
                    rows.append({"run_id": rid, "task": s.task, "metric": s.metric,
                                 "n_items": s.n, "k_max": None, "has_cluster": False,
                                 "binary": None, "n_choices": nch.get(s.task),
                                 "has_items": False})
        return pd.DataFrame(rows, columns=["run_id", "task", "metric", "n_items", "k_max",
                                           "has_cluster", "binary", "n_choices", "has_items"])

    def summaries(self, run_ids=None) -> pd.DataFrame:
        frames = []
        for rid in self._ids(run_ids):
            s = self._runs[rid].summaries.copy()
            s.insert(0, "run_id", rid)
            frames.append(s)
        cols = ["run_id", *SUMMARY_COLUMNS]
        if not frames:
            return pd.DataFrame(columns=cols)
        out = pd.concat(frames, ignore_index=True)
        for c in ("value", "stderr"):
            out[c] = out[c].astype(float)
        return out[cols]

    def texts(self, run_id, task, item_ids) -> pd.DataFrame:
        t = self._runs[int(run_id)].texts
        return t[(t["task"] == task) & t["item_id"].isin([str(i) for i in item_ids])]

    def pairing(self, run_a, run_b, task, metric) -> dict:
        a = self.item_means([run_a], task, metric)
        b = self.item_means([run_b], task, metric)
        ia, ib = set(a["item_id"]), set(b["item_id"])
        shared = sorted(ia & ib)
        ha = dict(zip(a["item_id"], a["prompt_hash"]))
        hb = dict(zip(b["item_id"], b["prompt_hash"]))
        return {"shared": shared, "only_a": sorted(ia - ib), "only_b": sorted(ib - ia),
                "hash_mismatch": [i for i in shared if ha[i] != hb[i]]}

    def protocol_diff(self, run_a, run_b, task=None) -> pd.DataFrame:
        rows = []
        pa, pb = self._runs[int(run_a)].protocol, self._runs[int(run_b)].protocol
        for k in sorted(set(pa) | set(pb)):
            if pa.get(k) != pb.get(k):
                rows.append({"scope": "run", "setting": k, "value_a": pa.get(k),
                             "value_b": pb.get(k)})
        return pd.DataFrame(rows, columns=["scope", "setting", "value_a", "value_b"])

    def audit(self, run_ids=None, task=None) -> pd.DataFrame:
        rows = []
        for rid in self._ids(run_ids):
            for s in self._runs[rid].summaries.itertuples(index=False):
                if task is not None and s.task != task:
                    continue
                flag = None
                if s.stderr_raw == "N/A":
                    flag = "N/A stderr"
                rows.append({"run_id": rid, "task": s.task, "metric": s.metric,
                             "reported": s.value, "reported_stderr": s.stderr,
                             "stderr_raw": s.stderr_raw, "n_reported": s.n,
                             "recomputed_stderr": np.nan, "n_items": None, "flag": flag})
        return pd.DataFrame(rows, columns=["run_id", "task", "metric", "reported",
                                           "reported_stderr", "stderr_raw", "n_reported",
                                           "recomputed_stderr", "n_items", "flag"])


@functools.lru_cache(maxsize=1)
def real_store_available() -> bool:
    """True when evalcore.store.Store can be created and ingest (not a stub any more)."""
    import tempfile

    from evalcore.store import Store
    try:
        with tempfile.TemporaryDirectory() as d:
            s = Store(Path(d) / "probe")
            try:
                s.ingest([make_run("probe", {("t", "acc"): [0.0, 1.0]})])
                return len(s.runs()) == 1
            finally:
                s.close()
    except Exception:
        return False


def make_store(runs: list[ParsedRun], tmp_path: Path | None = None, *, kind: str = "auto"):
    """A store holding ``runs``: the real DuckDB Store in tmp_path when it works ("auto"
    or "real"), else (or with kind="memory") a MemoryStore."""
    if kind == "memory" or (kind == "auto" and (tmp_path is None or not real_store_available())):
        return MemoryStore(runs)
    from evalcore.store import Store
    s = Store(Path(tmp_path) / "analysis")
    s.ingest(runs)
    return s
