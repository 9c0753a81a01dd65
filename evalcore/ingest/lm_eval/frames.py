"""lm_eval sample columns -> canonical frames (scores, texts), with the cluster choice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import IngestError
from evalcore.ingest._common import STR, auto_cluster_rule, empty_frame
from evalcore.ingest.lm_eval.records import (
    GOLD_SHARE,
    SampleColumns,
    doc_field_name,
    pick_cluster_key,
)
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS


def _concat(chunks: list[pa.Array], typ: pa.DataType = pa.large_string()) -> pa.Array:
    if not chunks:
        return pa.array([], typ)
    chunks = [c.cast(typ) if c.type != typ else c for c in chunks]
    return pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]


def _chunked(chunks: list[pa.Array | pa.ChunkedArray], typ: pa.DataType = pa.large_string()
             ) -> pa.ChunkedArray:
    """The chunks as one ChunkedArray of ``typ`` without copying their buffers (a
    concatenation would copy every text once more)."""
    flat = [c for a in chunks for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])]
    return pa.chunked_array([c.cast(typ) if c.type != typ else c for c in flat], typ)


def _pd_str(arr: pa.Array | pa.ChunkedArray) -> pd.Series:
    return pd.Series(arr, dtype=STR)


@dataclass
class TaskData:
    scores: pd.DataFrame
    texts: pd.DataFrame
    n_choices: int | None
    warnings: list[str]
    cluster_protocol: dict[str, Any] = field(default_factory=dict)   # task protocol entries


def _choose_cluster(src_name: str, cols: SampleColumns, first_rows: np.ndarray | None
                    ) -> tuple[pa.Array | None, dict[str, Any], list[str]]:
    """(cluster label per record or None, task protocol entries, warnings).

    ``first_rows``: the first record of each distinct doc (None: every record is one doc).
    """
    task, key = cols.task, cols.cluster_key
    per_row = {f: _concat(chunks) for f, chunks in cols.doc_vals.items()}
    cols.doc_vals = {}
    if not cols.doc_fields:   # cluster_key "" or no eligible doc field
        return None, {}, []
    take = None if first_rows is None else pa.array(first_rows)
    per_doc = {f: (a if take is None else a.take(take)) for f, a in per_row.items()}
    warnings: list[str] = []
    if key:   # explicit
        f = doc_field_name(key)
        arr = per_doc[f]
        if arr.null_count or len(arr) == 0:
            warnings.append(f"{src_name}: task {task}: cluster key {key!r} is missing (or not a "
                            f"scalar) in {arr.null_count} of {len(arr)} docs; no clusters for "
                            f"this task")
            return None, {}, warnings
        g = len(pc.unique(arr))
        if f in cols.hashed:
            warnings.append(f"{src_name}: task {task}: cluster key {key!r}: long texts are "
                            f"labelled by a 12-hex sha256 prefix ({g} clusters)")
        return per_row[f], {"cluster_key": f}, warnings
    gold = {f for f, hits in cols.gold_hits.items() if hits >= GOLD_SHARE * cols.rows}
    auto, candidates = pick_cluster_key(per_doc, gold)
    proto: dict[str, Any] = {}
    if auto or candidates:
        proto = {"cluster_key": auto, "cluster_key_candidates": candidates}
    if auto is None:
        return None, proto, warnings
    g = len(pc.unique(per_doc[auto]))
    applied, note = auto_cluster_rule(auto, len(per_doc[auto]), g)
    if not applied:
        proto = {"cluster_key": None, "cluster_key_offered": auto,
                 "cluster_key_candidates": candidates}
        warnings.append(f"{src_name}: task {task}: {note}")
        return None, proto, warnings
    others = [c for c in candidates if c != auto]
    warnings.append(f"{src_name}: task {task}: cluster key {auto!r} picked automatically from "
                    f"the docs ({g} clusters"
                    + ("; long texts labelled by a 12-hex sha256 prefix" if auto in cols.hashed else "")
                    + ")" + (f"; other candidates: {', '.join(others)}" if others else ""))
    return per_row[auto], proto, warnings


def assemble(src_name: str, cols: SampleColumns) -> TaskData:
    """Score rows (one per record and metric), texts (one per doc), n_choices, warnings.
    The columns gathered in ``cols`` are let go as soon as they are used (the frames wrap
    the same Arrow buffers)."""
    warnings = _value_warnings(src_name, cols)
    if cols.rows == 0:
        return TaskData(empty_frame(SCORE_COLUMNS), empty_frame(TEXT_COLUMNS), None, warnings)
    item_id = _chunked(cols.item_id)
    filt = _chunked(cols.filter)
    ih = _chunked(cols.item_hash)
    ph = _chunked(cols.prompt_hash)
    n_opts = np.concatenate(cols.n_opts)
    cols.item_id, cols.filter, cols.item_hash, cols.prompt_hash = [], [], [], []
    id_codes = _doc_codes(cols, item_id)
    _, first_rows = np.unique(id_codes, return_index=True)
    first_rows.sort()
    identity = len(first_rows) == len(item_id)
    cluster, cluster_proto, cluster_warn = _choose_cluster(src_name, cols,
                                                           None if identity else first_rows)
    warnings.extend(cluster_warn)
    scores = _scores(src_name, cols, item_id, filt, ih, ph, cluster, id_codes)
    texts = _texts(cols, item_id, first_rows, identity)
    n_choices = None
    if cols.mc_like:
        multi = n_opts[first_rows]
        multi = multi[multi > 1]
        if len(multi):
            n_choices = int(np.argmax(np.bincount(multi)))
    return TaskData(scores, texts, n_choices, warnings, cluster_proto)


def _value_warnings(src_name: str, cols: SampleColumns) -> list[str]:
    """What was read of the per-item metric values that are not plain numbers."""
    task = cols.task
    warnings: list[str] = []
    for m, cnt in sorted(cols.nonscalar.items()):
        how = f"{cnt} records" if cnt >= 0 else "its records"
        warnings.append(
            f"{src_name}: task {task}: per-item metric {m!r} is not a number in {how} (a list "
            f"kept for corpus-level aggregation, e.g. F1/BLEU); left out of item scores, its "
            f"corpus value stays in the summaries")
    for m, (cnt, first, found) in sorted(cols.badvalues.items()):
        warnings.append(
            f"{src_name}: task {task}: per-item metric {m!r} is not a number in {cnt} "
            f"record{'s' if cnt != 1 else ''} (first at {first}: {found}); those records have "
            f"no item score for {m!r}")
    for m, (cnt, first, _found) in sorted(cols.booleans.items()):
        warnings.append(
            f"{src_name}: task {task}: per-item metric {m!r} is a boolean (true/false) in "
            f"{cnt} record{'s' if cnt != 1 else ''} (first at {first}); read as 1/0")
    return warnings


def _doc_codes(cols: SampleColumns, item_id: pa.ChunkedArray) -> np.ndarray:
    """An integer code per record for its doc (the duplicate checks, the first record of
    each doc), numbered in order of first appearance."""
    n = len(item_id)
    if cols.doc_num and sum(len(a) for a in cols.doc_num) == n:
        # integer doc_ids (the fast path): np.unique on the numbers, no string hashing
        nums = np.concatenate(cols.doc_num)
        uniq, first_idx, inverse = np.unique(nums, return_index=True, return_inverse=True)
        rank = np.empty(len(uniq), dtype="int64")
        rank[np.argsort(first_idx, kind="stable")] = np.arange(len(uniq))
        id_codes = rank[inverse.reshape(-1)]
    else:
        id_codes, _ = pd.factorize(pd.Series(item_id, dtype=STR), sort=False)
    cols.doc_num = []
    return id_codes


def _scores(src_name: str, cols: SampleColumns, item_id: pa.ChunkedArray,
            filt: pa.ChunkedArray, ih: pa.ChunkedArray, ph: pa.ChunkedArray,
            cluster: pa.ChunkedArray | None, id_codes: np.ndarray) -> pd.DataFrame:
    """One score row per record and metric (``metric,filter`` unless the filter is
    "none"); a doc_id twice for one (filter, metric) is refused."""
    task = cols.task
    n = len(item_id)
    f_codes, f_uniques = pd.factorize(pd.Series(filt, dtype=STR), sort=False)
    f_names = [str(x) for x in f_uniques]
    metric_names: list[str] = []
    id_parts: list[pa.Array] = []
    ih_parts: list[pa.Array] = []
    ph_parts: list[pa.Array] = []
    cl_parts: list[pa.Array] = []
    code_parts: list[np.ndarray] = []
    val_parts: list[np.ndarray] = []
    for m, chunks in cols.metrics.items():
        vals = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        present = ~np.isnan(vals)
        if not present.any():
            continue
        full = bool(present.all())
        idx = np.arange(n) if full else np.flatnonzero(present)
        key = id_codes[idx].astype("int64") * max(len(f_names), 1) + f_codes[idx]
        _uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
        if (counts > 1).any():
            bad = idx[first[np.argmax(counts > 1)]]
            fname = f_names[f_codes[bad]]
            metric = m if fname == "none" else f"{m},{fname}"
            raise IngestError(src_name, f"task {task!r}, metric {metric!r}",
                              "each doc_id once per (filter, metric)",
                              f"doc_id {str(item_id[int(bad)].as_py())!r} appears more than once")
        base = len(metric_names)
        metric_names.extend(m if f == "none" else f"{m},{f}" for f in f_names)
        code_parts.append((f_codes[idx] + base).astype("int32"))
        val_parts.append(vals[idx])
        # a metric present on every row shares the id/hash buffers (no copy)
        take = None if full else pa.array(idx)
        id_parts.append(item_id if full else item_id.take(take))
        ih_parts.append(ih if full else ih.take(take))
        ph_parts.append(ph if full else ph.take(take))
        if cluster is not None:
            cl_parts.append(cluster if full else cluster.take(take))
    cols.metrics = {}
    if not val_parts:
        return empty_frame(SCORE_COLUMNS)
    total = sum(len(v) for v in val_parts)
    metric_arr = pa.DictionaryArray.from_arrays(
        pa.array(np.concatenate(code_parts)), pa.array(metric_names, pa.large_string())).cast(pa.large_string())
    return pd.DataFrame({
        "task": pd.Series(pa.repeat(pa.scalar(task, pa.large_string()), total), dtype=STR),
        "metric": pd.Series(metric_arr, dtype=STR),
        "item_id": pd.Series(_chunked(id_parts), dtype=STR),
        "answer_idx": np.zeros(total, dtype="int64"),
        "score": np.concatenate(val_parts),
        "cluster": pd.Series(_chunked(cl_parts) if cl_parts
                             else pa.nulls(total, pa.large_string()), dtype=STR),
        "item_hash": pd.Series(_chunked(ih_parts), dtype=STR),
        "prompt_hash": pd.Series(_chunked(ph_parts), dtype=STR),
    })[list(SCORE_COLUMNS)]


def _texts(cols: SampleColumns, item_id: pa.ChunkedArray, first_rows: np.ndarray,
           identity: bool) -> pd.DataFrame:
    """The texts of the first record of each doc."""
    take = None if identity else pa.array(first_rows)

    def pick(chunks: list[pa.Array]) -> pa.ChunkedArray:
        arr = _chunked(chunks)
        return arr if identity else arr.take(take)

    prompt, target, response = pick(cols.prompt), pick(cols.target), pick(cols.response)
    cols.prompt, cols.target, cols.response = [], [], []
    return pd.DataFrame({
        "task": pd.Series(pa.repeat(pa.scalar(cols.task, pa.large_string()), len(first_rows)),
                          dtype=STR),
        "item_id": _pd_str(item_id if identity else item_id.take(take)),
        "answer_idx": np.zeros(len(first_rows), dtype="int64"),
        "prompt": _pd_str(prompt), "target": _pd_str(target), "response": _pd_str(response),
    })[list(TEXT_COLUMNS)]
