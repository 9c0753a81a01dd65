"""lm_eval sample logs, columnar: DuckDB's (or pyarrow's) JSON reader with an explicit schema.

Speed
-----
Sample logs on disk are read with an explicit schema of only the needed fields (ids,
hashes, filter, the metrics list and metric values, the first context, option texts,
loglikelihoods, and only the cluster doc fields) by DuckDB's JSON reader (``read_json``
through the Python relational API on a private in-memory connection: no SQL statement, no
store file; ENGINEERING.md recommends it for large sample logs), as one materialized result
per file (all cores; DuckDB's streaming Arrow reader runs on one thread) handed on in
record batches of ``CHUNK_LINES`` rows. DuckDB also makes the per-record choices (the
response option, the target's option text, the cluster labels) so only the needed texts
cross into Arrow (``_batches_duckdb``). In-memory uploads are read by ``pyarrow.json`` and the
choices made in Arrow (``_fast_batch``). The reader runs in a helper thread a few batches
ahead (``_prefetch``), so pyarrow's JSON parsing overlaps the per-batch Arrow work; several
large logs of one run are read in parallel (``evalcore.ingest.reading.READ_WORKERS``). Texts, hashes and ids stay Arrow ``large_string``
(what pandas 3's ``str`` dtype holds: no conversion copy), kept as the reader's chunks (no
concatenation copy); a metric present on every row shares the id/hash buffers; integer doc
ids are deduplicated as numbers. The file's sha256 is computed in a thread while it is
parsed. Any file the columnar readers cannot read exactly (mixed types, NaN tokens, a
metric value that is not a number, a record naming other metrics than the first, missing
values, bad JSON) is re-read line by line with Python's json, which handles every
variant and gives exact line numbers in errors.
"""

from __future__ import annotations

import json
import queue
import re
import threading
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.ingest._common import (
    CLUSTER_TEXT_LIMIT,
    MAX_ABS_SCORE,
    Progress,
    Source,
    call_progress,
    is_number,
    loads_line,
)
from evalcore.ingest.lm_eval import records as _records
from evalcore.ingest.lm_eval.records import (
    SampleColumns,
    _cap,
    _gold_hits,
    _label_array,
    _loglik_pairs,
    cluster_fields,
    read_jsonl_slow,
)

BLOCK_BYTES = 8 << 20


class _Fallback(Exception):
    """The fast path cannot read this file; use the line-by-line reader."""


def _first_record(src: Source) -> tuple[dict[str, Any], int]:
    with src.open() as fh:
        for line in fh:
            if line.strip():
                try:
                    rec = loads_line(line)
                except ValueError:
                    raise _Fallback() from None
                if not isinstance(rec, dict):
                    raise _Fallback()
                return rec, len(line)
    raise _Fallback()


def _fast_schema(first: dict[str, Any]) -> tuple[pa.Schema, list[str], bool, int]:
    """Schema of the needed fields, inferred from the first record; raises _Fallback for
    layouts the fast path does not cover."""
    fields: list[tuple[str, pa.DataType]] = []
    doc_id = first.get("doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
        raise _Fallback()
    fields.append(("doc_id", pa.int64() if isinstance(doc_id, int) else pa.string()))
    for k in ("filter", "doc_hash", "prompt_hash"):
        fields.append((k, pa.string()))
    target = first.get("target")
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        raise _Fallback()
    fields.append(("target", pa.int64() if isinstance(target, int) else pa.string()))
    names = first.get("metrics")
    if not isinstance(names, list) or not all(isinstance(m, str) for m in names):
        raise _Fallback()
    metrics = []
    for m in names:
        v = first.get(m)
        if is_number(v):
            metrics.append(m)
        elif not isinstance(v, (list, dict)):
            # null, a boolean, a string: the line reader says what it found (a string in the
            # first record must not drop the metric's numbers in the other records)
            raise _Fallback()
        # non-scalar (list) metrics: left out of the schema, hence ignored by the reader
    for m in metrics:
        fields.append((m, pa.float64()))
    fields.append(("metrics", pa.list_(pa.string())))   # checked equal to the first record's
    args = first.get("arguments")
    if not isinstance(args, dict) or not args:
        raise _Fallback()
    keys = list(args)
    if keys != [f"gen_args_{i}" for i in range(len(keys))] or not isinstance(args["gen_args_0"], dict):
        raise _Fallback()
    max_args = max(8, 2 * len(keys))   # rows with more options send the file to the slow path
    arg_fields = [("gen_args_0", pa.struct([("arg_0", pa.string()), ("arg_1", pa.string())]))]
    arg_fields += [(f"gen_args_{i}", pa.struct([("arg_1", pa.string())])) for i in range(1, max_args)]
    if not all(isinstance(a.get("arg_0"), str) and isinstance(a.get("arg_1", ""), str)
               for a in args.values() if isinstance(a, dict)):
        raise _Fallback()
    fields.append(("arguments", pa.struct(arg_fields)))
    fr = first.get("filtered_resps")
    mc = _loglik_pairs(fr) is not None
    if mc:
        if not all(isinstance(x, str) for r in fr for x in r):
            raise _Fallback()  # native floats/bools: mixed-type lists
        fields.append(("filtered_resps", pa.list_(pa.list_(pa.string()))))
    else:
        resps = first.get("resps")
        if not (isinstance(resps, list) and resps and isinstance(resps[0], list)
                and resps[0] and isinstance(resps[0][0], str)):
            raise _Fallback()
        fields.append(("resps", pa.list_(pa.list_(pa.string()))))
    schema = pa.schema(fields).with_metadata({b"metrics": json.dumps(names).encode()})
    return schema, metrics, mc, max_args


def _metric_list(schema: pa.Schema) -> list[str]:
    """The first record's ``metrics`` list, which every record must repeat: a record naming
    other metrics (or none) is read by the line reader, which reads what each record names."""
    return json.loads((schema.metadata or {}).get(b"metrics", b"[]"))


def _argmax_segments(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Index of the maximum within each segment [offsets[i], offsets[i+1]); -1 if empty.

    Ties go to the first maximum, like ``np.argmax``. Vectorised: equal-length segments are
    reshaped to a matrix; otherwise segment maxima come from ``np.maximum.reduceat`` and the
    first position reaching the maximum from ``np.minimum.reduceat``.
    """
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    out = np.full(n, -1, dtype="int64")
    if n == 0 or len(values) == 0:
        return out
    k = int(lengths[0])
    if k > 0 and (lengths == k).all():
        return np.argmax(values.reshape(n, k), axis=1).astype("int64")
    nonempty = lengths > 0
    starts = offsets[:-1][nonempty]
    maxes = np.maximum.reduceat(values, starts)
    seg_max = np.repeat(maxes, lengths[nonempty])
    pos = np.arange(len(values))
    first = np.minimum.reduceat(np.where(values == seg_max, pos, len(values)), starts)
    out[nonempty] = first - starts
    return out


def _pick_option(args: pa.StructArray, idx: np.ndarray, max_args: int,
                 options: list[pa.Array] | None = None) -> pa.Array:
    """The ``arg_1`` text of argument ``idx[i]`` for each row (null where ``idx`` is -1);
    ``options``: the ``arg_1`` arrays of the arguments, if already extracted."""
    n = len(idx)
    if options is None:
        options = [pc.struct_field(args, [f"gen_args_{k}", "arg_1"]) for k in range(max_args)]
    choice = np.where((idx >= 0) & (idx < max_args), idx, max_args).astype("int32")
    out = pc.choose(pa.array(choice), *options, pa.nulls(n, pa.string()))
    return pc.utf8_trim_whitespace(out)


def _check_metric_lists(lists: pa.Array, expected: list[str]) -> None:
    """``_Fallback`` unless every row's ``metrics`` list equals ``expected``."""
    n, k = len(lists), len(expected)
    if lists.null_count or not pc.all(pc.equal(pc.list_value_length(lists), k)).as_py():
        raise _Fallback()
    if k and not pc.all(pc.equal(pc.list_flatten(lists),
                                 pa.array(expected * n, lists.type.value_type))).as_py():
        raise _Fallback()


def _fast_batch(batch: pa.RecordBatch, cols: SampleColumns, metrics: list[str], mc: bool,
                max_args: int, metric_list: list[str] | None = None) -> None:
    n = batch.num_rows
    if n == 0:
        return
    names = batch.schema.names
    get = batch.column
    doc = get(names.index("doc_id"))
    if doc.null_count:
        raise _Fallback()
    if "metrics" in names:
        _check_metric_lists(get(names.index("metrics")), metric_list or [])
    item_id = doc.cast(pa.string())
    filt = pc.fill_null(get(names.index("filter")), "none")
    filt = pc.if_else(pc.equal(filt, ""), pa.scalar("none"), filt)   # as the line reader
    args = get(names.index("arguments"))
    prompt = pc.struct_field(args, ["gen_args_0", "arg_0"])
    target_raw = get(names.index("target"))
    raw_target = target_raw.cast(pa.string())
    if mc:
        response, target, n_opts = _mc_columns(batch, args, target_raw, raw_target, max_args)
        cols.mc_like = True
    else:
        resps = get(names.index("resps"))
        response = pc.list_element(pc.list_element(resps, 0), 0) if len(resps) else resps
        target = raw_target
        present = [pc.is_valid(pc.struct_field(args, [f"gen_args_{k}", "arg_1"] if k
                                               else ["gen_args_0", "arg_1"])) for k in range(max_args)]
        n_opts = np.sum([p.to_numpy(zero_copy_only=False) for p in present], axis=0).astype("int64")
    metric_arrays = {}
    for m in metrics:
        arr = get(names.index(m)).to_numpy(zero_copy_only=False)
        metric_arrays[m] = np.asarray(arr, dtype="float64")
    doc_vals = _doc_labels(batch, cols, target, raw_target) if cols.doc_fields else {}
    doc_ids = get(names.index("doc_id"))
    doc_num = (doc_ids.to_numpy(zero_copy_only=False).astype("int64", copy=False)
               if pa.types.is_integer(doc_ids.type) else None)
    cols.add_chunk(n, item_id, filt, get(names.index("doc_hash")), get(names.index("prompt_hash")),
                   _cap(prompt), _cap(target), _cap(response), n_opts, metric_arrays, doc_vals,
                   doc_num)


# first characters of a JSON value that is a boolean, a string, an object or an array
_NOT_A_NUMBER = 'tf"{['
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_\-@.]{1,100}$")



def _mc_columns(batch: pa.RecordBatch, args: pa.Array, target_raw: pa.Array,
                raw_target: pa.Array, max_args: int) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Multiple choice: the response (the option with the highest loglikelihood, none with
    fewer than two options), the target (an option index read as that option's text) and
    the number of options; ``_Fallback`` where the fast path cannot read a row exactly."""
    names = batch.schema.names
    fr = batch.column(names.index("filtered_resps"))
    if fr.null_count:
        raise _Fallback()
    n_opts = pc.list_value_length(fr).to_numpy(zero_copy_only=False).astype("int64")
    if n_opts.max(initial=0) > max_args:
        raise _Fallback()
    inner = fr.flatten()
    lls_str = pc.list_element(inner, 0)
    try:
        lls = pc.cast(lls_str, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise _Fallback() from None
    offsets = np.asarray(fr.offsets)
    offsets = offsets - offsets[0]
    best = _argmax_segments(lls, offsets)
    best[n_opts < 2] = -1
    options = [pc.struct_field(args, [f"gen_args_{k}", "arg_1"]) for k in range(max_args)]
    response = _pick_option(args, best, max_args, options)
    # target: an option index -> that option's text
    if pa.types.is_integer(target_raw.type):
        t_idx = pc.fill_null(target_raw, -1).to_numpy(zero_copy_only=False).astype("int64")
        t_str = raw_target
    else:
        t_str = target_raw
        try:   # the usual case: every target is an option index written as a string
            t_int = pc.cast(t_str, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            digits = pc.fill_null(pc.match_substring_regex(t_str, r"^\s*\d{1,9}\s*$"), False)
            t_int = pc.cast(pc.if_else(digits, pc.utf8_trim_whitespace(t_str),
                                       pa.scalar(None, pa.string())), pa.int64())
        t_idx = pc.fill_null(t_int, -1).to_numpy(zero_copy_only=False).astype("int64")
    t_idx[(t_idx >= n_opts) | (n_opts < 2)] = -1
    t_text = _pick_option(args, t_idx, max_args, options)
    return response, pc.if_else(pa.array(t_idx >= 0), t_text, t_str), n_opts


def _doc_labels(batch: pa.RecordBatch, cols: SampleColumns, target: pa.Array,
                raw_target: pa.Array) -> dict[str, pa.Array]:
    """The cluster label of every record per doc field (labelled here from the raw values
    of the pyarrow reader, or as DuckDB labelled them); counts hashed fields and gold hits."""
    names = batch.schema.names
    get = batch.column
    doc_vals: dict[str, pa.Array] = {}
    target_str = target.cast(pa.string())
    doc = get(names.index("doc")) if "doc" in names else None
    for i, f in enumerate(cols.doc_fields):
        if doc is not None:   # pyarrow reader: raw values, labelled here
            raw = pc.struct_field(doc, [f]).cast(pa.string())
            if doc.null_count:   # a record without a doc: the field is missing there
                raw = pc.if_else(pc.is_valid(doc), raw, pa.scalar(None, pa.string()))
            labels, hashed = _label_array(raw)
        else:                 # DuckDB reader: labelled inside DuckDB (_batches_duckdb)
            labels = get(names.index(f"__cl_{i}"))
            hashed = bool(pc.any(get(names.index(f"__lg_{i}"))).as_py())
        if hashed:
            cols.hashed.add(f)
        # the gold label: a short value equal to the target (hashed labels never match)
        hits = _gold_hits(labels, raw_target, target_str)
        if hits:
            cols.gold_hits[f] = cols.gold_hits.get(f, 0) + hits
        doc_vals[f] = labels
    return doc_vals


def _duckdb_type(t: pa.DataType) -> str:
    """DuckDB type text of the (fixed-vocabulary) Arrow read schema."""
    if pa.types.is_struct(t):
        return "STRUCT(" + ", ".join(f'"{f.name}" {_duckdb_type(f.type)}' for f in t) + ")"
    if pa.types.is_list(t):
        return _duckdb_type(t.value_type) + "[]"
    return {pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.float64(): "DOUBLE"}[t]


def _batches_duckdb(path: str, schema: pa.Schema,
                    doc_fields: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Finished record batches of a sample log, computed inside DuckDB's JSON reader.

    DuckDB reads the schema's fields (yyjson, all cores) and computes the per-record
    choices there, so only the needed values cross into Arrow (the other option texts, the
    loglikelihood lists and the ``doc`` struct never leave DuckDB; exporting them cost more
    than parsing them): ``doc_id``, ``filter`` (``"none"`` when missing or empty),
    ``doc_hash``, ``prompt_hash``, ``prompt`` (``arg_0`` of ``gen_args_0``), ``raw_target``
    (the target as written), ``response``, ``n_opts`` and the metric values, plus
    ``__bad``: true on a row the fast path cannot read exactly (the caller falls back to
    the line reader for the file). ``_duck_batch`` trims the option texts.

    Multiple choice (``filtered_resps`` in the schema): ``n_opts`` is the number of
    ``[loglikelihood, is_greedy]`` pairs; ``response`` is the option (``arg_1``) with the
    highest loglikelihood (the first on ties or NaN, like ``np.argmax``; none with fewer
    than two options); ``target_opt`` the option text when the target is an option index
    (an integer, or a string of 1-9 digits), else null. ``__bad``: missing
    ``filtered_resps``, more options than the schema has arguments, a loglikelihood that
    is not a number. Generative: ``response`` is ``resps[0][0]`` and ``n_opts`` the
    number of arguments with an ``arg_1``.

    Metric values are read as JSON and cast: DuckDB's DOUBLE reader would turn true/false
    into 1/0 silently; a boolean, string, object or list makes the row ``__bad`` (or, for a
    string that is not a number, an object or a list, makes the cast fail: a reader error,
    so the next engine reads the file). The JSON type is told by the first character of the
    value's JSON text, which DuckDB writes minified (``t``/``f``, ``"``, ``{``, ``[``; a
    number starts with a digit or ``-``; null is SQL NULL), not by ``json_type``, which parses
    the text again (measured, callgrind on 20,000 lines: the whole query took 11% fewer
    instructions).

    Cluster doc fields are read as VARCHAR (numbers as their JSON text, like ``_doc_text``)
    and labelled: ``__cl_<i>`` is the value, or ``left(sha256(value), 12)`` when
    ``length(value)`` (code points, like Python's ``len``) exceeds ``CLUSTER_TEXT_LIMIT`` (the
    same label as ``cluster_label``); ``__lg_<i>`` says whether it was hashed.

    Only the Python relational API runs here (no SQL statement). The fixed parts are
    expressions over fixed field names; the other names are metric and doc field names
    from the file, checked against ``_SAFE_NAME`` by the caller, and reach DuckDB only as
    column names of the read schema and ``ColumnExpression``/``ConstantExpression`` objects.
    The in-memory connection is private to this call (no store file, no lock).
    """
    import duckdb

    C, K, S = duckdb.ColumnExpression, duckdb.ConstantExpression, duckdb.SQLExpression
    names = schema.names
    mc = "filtered_resps" in names
    n_args = schema.field("arguments").type.num_fields
    metric_fields = [f.name for f in schema if f.type == pa.float64()]
    # texts as Arrow large_string: what pandas' ``str`` dtype holds, so no conversion copies
    # the offsets again
    con = duckdb.connect(config={"arrow_large_buffer_size": True})
    try:
        columns = {f.name: _duckdb_type(f.type) for f in schema if f.name != "doc"}
        if doc_fields:
            columns["doc"] = "STRUCT(" + ", ".join(f'"{f}" VARCHAR' for f in doc_fields) + ")"
        for m in metric_fields:
            columns[m] = "JSON"
        rel = con.read_json(path, format="newline_delimited", columns=columns)
        rel = rel.select(*_first_select(schema, doc_fields, n_args, metric_fields))

        def kept() -> list:   # the columns the last select passes on as they are
            return [C(c) for c in ("doc_id", "filter", "doc_hash", "prompt_hash", "prompt",
                                   "raw_target")]

        def tail() -> list:   # the metric values and cluster labels, last
            labels = [f"__{x}_{i}" for i in range(len(doc_fields or [])) for x in ("cl", "lg")]
            return [C(c) for c in metric_fields + labels]
        if mc:
            # the 1-based option positions of the target and of the response, computed once,
            # then each pick is a CASE over the plain option columns (a list of all option
            # texts would copy every one of them). Callgrind, 20,000 lines: the query took 3%
            # fewer instructions than with the positions inside CASEs over the struct fields
            rel = rel.select(
                *kept(), *(C(f"__o{k}") for k in range(n_args)), C("n_opts"),
                S("CASE WHEN t_idx >= 0 AND t_idx < n_opts AND n_opts >= 2 THEN t_idx + 1 END"
                  ).alias("__tp"),
                S("CASE WHEN n_opts >= 2 THEN list_position(lls, list_max(lls)) END").alias("__rp"),
                (C("__bad") | duckdb.CoalesceOperator(
                    S("list_bool_or(list_transform(lls, x -> x IS NULL))"), K(False))
                 ).alias("__bad"),
                *tail())

            def option(position: str) -> Any:   # the option text at ``position`` (1-based)
                return S(f"CASE {position} " + " ".join(
                    f"WHEN {k + 1} THEN __o{k}" for k in range(n_args)) + " END")

            second = [option("__tp").alias("target_opt"), option("__rp").alias("response"),
                      C("n_opts"), C("__bad")]
        else:
            second = [C("response"), C("n_opts"), C("__bad")]
        rel = rel.select(*kept(), *second, *tail())
        # a materialized result: DuckDB's streaming reader (fetch_arrow_reader) parses on
        # one thread (measured, duckdb 1.4.4: 2.5x the wall time of this on 2 cores); the
        # table holds only the selected values of one file (a LazyRun piece holds them anyway)
        table = rel.to_arrow_table(_records.CHUNK_LINES)
        con.close()
        if pc.any(table.column("__bad")).as_py():
            raise _Fallback()
        for batch in table.to_batches():
            yield batch
    finally:
        con.close()


def _first_select(schema: pa.Schema, doc_fields: list[str] | None, n_args: int,
                  metric_fields: list[str]) -> list:
    """The first select of ``_batches_duckdb``: the kept fields, the option columns and
    loglikelihoods (multiple choice) or the response (generative), the metric values, the
    cluster labels and ``__bad`` (expressions only; names as ``_batches_duckdb`` says)."""
    import duckdb

    C, F, K, S = (duckdb.ColumnExpression, duckdb.FunctionExpression, duckdb.ConstantExpression,
                  duckdb.SQLExpression)
    mc = "filtered_resps" in schema.names
    target_int = pa.types.is_integer(schema.field("target").type)
    raw_target = "CAST(target AS VARCHAR)" if target_int else "target"
    first = [C("doc_id"),
             S("CASE WHEN filter IS NULL OR filter = '' THEN 'none' ELSE filter END"
               ).alias("filter"),
             C("doc_hash"), C("prompt_hash"),
             S("arguments.gen_args_0.arg_0").alias("prompt"),
             S(raw_target).alias("raw_target")]
    # every record names the first record's metrics (the list is a constant, not SQL text)
    bad = [duckdb.CoalesceOperator(C("metrics") != K(_metric_list(schema)), K(True))]
    if mc:
        # option index of the target: an integer, or a string of 1-9 digits
        t_idx = ("target" if target_int else
                 r"CASE WHEN regexp_full_match(target, '\s*[0-9]{1,9}\s*') "
                 r"THEN CAST(regexp_extract(target, '[0-9]+') AS BIGINT) END")
        first += [S("len(filtered_resps)").alias("n_opts"),
                  S("list_transform(filtered_resps, x -> TRY_CAST(x[1] AS DOUBLE))"
                    ).alias("lls"),
                  S(t_idx).alias("t_idx")]
        # the option texts as plain columns: the picks below read them, not the struct
        first += [S(f"arguments.gen_args_{k}.arg_1").alias(f"__o{k}") for k in range(n_args)]
        bad += [S("filtered_resps IS NULL"), S(f"len(filtered_resps) > {n_args}")]
    else:
        present = " + ".join(f"CAST(arguments.gen_args_{k}.arg_1 IS NOT NULL AS INTEGER)"
                             for k in range(n_args))
        first += [S("resps[1][1]").alias("response"), S(present).alias("n_opts")]
    if metric_fields:
        for m in metric_fields:
            first_char = F("ascii", C(m).cast(duckdb.sqltype("VARCHAR")))
            bad.append(duckdb.CoalesceOperator(first_char.isin(
                *(K(ord(c)) for c in _NOT_A_NUMBER)), K(False)))
        first += [C(m).cast(duckdb.sqltype("DOUBLE")).alias(m) for m in metric_fields]
    if doc_fields:
        for i, f in enumerate(doc_fields):
            value = F("struct_extract", C("doc"), K(f))
            long_ = F("length", value) > K(CLUSTER_TEXT_LIMIT)
            label = duckdb.CaseExpression(long_, F("left", F("sha256", value), K(12))
                                          ).otherwise(value)
            first += [label.alias(f"__cl_{i}"), long_.alias(f"__lg_{i}")]
    first.append(duckdb.CoalesceOperator(_any(bad), K(False)).alias("__bad") if bad
                 else K(False).alias("__bad"))
    return first


def _any(exprs: list) -> Any:
    out = exprs[0]
    for e in exprs[1:]:
        out = out | e
    return out


def _duck_batch(batch: pa.RecordBatch, cols: SampleColumns, metrics: list[str]) -> None:
    """Add one batch of ``_batches_duckdb`` to the columns: option texts are trimmed here
    (``utf8_trim_whitespace``, as ``_fast_batch``; DuckDB's trim with a character set costs
    more than the whole pick) and the target is its option text when it has one."""
    n = batch.num_rows
    if n == 0:
        return
    names = batch.schema.names
    get = batch.column
    doc_ids = get(names.index("doc_id"))
    if doc_ids.null_count:
        raise _Fallback()
    raw_target = get(names.index("raw_target"))
    response = get(names.index("response"))
    if response.null_count < n:
        response = pc.utf8_trim_whitespace(response)
    if "target_opt" in names:
        opt = get(names.index("target_opt"))
        target = (pc.if_else(pc.is_valid(opt), pc.utf8_trim_whitespace(opt), raw_target)
                  if opt.null_count < n else raw_target)
    else:
        target = raw_target
    doc_vals: dict[str, pa.Array] = {}
    for i, f in enumerate(cols.doc_fields or []):
        labels = get(names.index(f"__cl_{i}"))
        if pc.any(get(names.index(f"__lg_{i}"))).as_py():
            cols.hashed.add(f)
        hits = _gold_hits(labels, raw_target, target)
        if hits:
            cols.gold_hits[f] = cols.gold_hits.get(f, 0) + hits
        doc_vals[f] = labels
    doc_num = (doc_ids.to_numpy(zero_copy_only=False).astype("int64", copy=False)
               if pa.types.is_integer(doc_ids.type) else None)
    cols.add_chunk(
        n, doc_ids.cast(pa.large_string()), get(names.index("filter")), get(names.index("doc_hash")),
        get(names.index("prompt_hash")), _cap(get(names.index("prompt"))), _cap(target),
        _cap(response), get(names.index("n_opts")).to_numpy(zero_copy_only=False).astype("int64"),
        {m: np.asarray(get(names.index(m)).to_numpy(zero_copy_only=False), dtype="float64")
         for m in metrics}, doc_vals, doc_num)


class _Raised:
    """An exception raised by the reader thread of ``_prefetch``, handed to the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


_END = object()


def _prefetch(batches: Iterator[pa.RecordBatch], depth: int = 2) -> Iterator[pa.RecordBatch]:
    """Iterate ``batches`` in a helper thread, up to ``depth`` batches ahead.

    A streaming reader (``pyarrow.json.open_json``) computes the next batch only when asked,
    so without this the reader waits while ``_fast_batch`` works on a batch (DuckDB's
    reader hands on batches of a result it has materialized: there the whole file is read
    in this thread). The JSON readers and pyarrow compute release the GIL, so the two
    overlap. Reader exceptions are re-raised here, at the batch where
    they happened. Closing this generator (or an exception in the consumer) stops the
    thread and closes ``batches`` in it (the DuckDB connection is closed there).
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(_Raised(exc))
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=work, name="evalbars-json-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()
        thread.join()


def _batches_pyarrow(src: Source, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    import pyarrow.json as pj

    source: Any = str(src.path) if src.path is not None else pa.BufferReader(src.data)
    yield from pj.open_json(
        source, read_options=pj.ReadOptions(block_size=BLOCK_BYTES, use_threads=True),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                                      newlines_in_values=False))


def _doc_schema(first: dict[str, Any], fields: list[str]) -> pa.DataType:
    """Struct type of the cluster doc fields, typed from the first record (str -> string,
    int -> int64, absent -> string); other first values raise ``_Fallback``."""
    doc = first.get("doc") if isinstance(first.get("doc"), dict) else {}
    out = []
    for f in fields:
        v = doc.get(f)
        if v is None or isinstance(v, str):
            out.append((f, pa.string()))
        elif isinstance(v, int) and not isinstance(v, bool):
            out.append((f, pa.int64()))
        else:
            raise _Fallback()
    return pa.struct(out)


def read_jsonl_fast(src: Source, task: str, progress: Progress | None = None,
                    done_before: int = 0, total: int = 0,
                    cluster_key: str | None = None) -> SampleColumns:
    """Columnar read of a sample log: DuckDB's JSON reader for files on disk, pyarrow.json
    for in-memory uploads (or if DuckDB fails). Raises ``_Fallback`` for anything unusual."""
    first, line_bytes = _first_record(src)
    schema, metrics, mc, max_args = _fast_schema(first)
    doc_fields = cluster_fields(first.get("doc"), cluster_key)
    if doc_fields:
        schema = schema.append(pa.field("doc", _doc_schema(first, doc_fields)))
    engines = ["pyarrow"]
    if (src.path is not None and all(_SAFE_NAME.match(m) for m in metrics + doc_fields)
            and not any(ch in str(src.path) for ch in "*?[]{}")):   # DuckDB would glob these
        engines.insert(0, "duckdb")
    for engine in engines:
        cols = SampleColumns(task=task, cluster_key=cluster_key, doc_fields=doc_fields)
        for m, v in first.items():
            if m in (first.get("metrics") or []) and isinstance(v, (list, dict)):
                cols.nonscalar[m] = -1   # count unknown on the fast path
        try:
            batches = _prefetch(_batches_duckdb(str(src.path), schema, doc_fields)
                                if engine == "duckdb" else _batches_pyarrow(src, schema))
            try:
                done_rows = 0
                for batch in batches:
                    if engine == "duckdb":
                        _duck_batch(batch, cols, metrics)
                        cols.mc_like = cols.mc_like or mc
                    else:
                        _fast_batch(batch, cols, metrics, mc, max_args, _metric_list(schema))
                    done_rows += batch.num_rows
                    call_progress(progress, done_before + min(src.size, done_rows * line_bytes),
                                  total, src.name)
            finally:
                batches.close()   # stops the reader thread now, also on _Fallback
        except _Fallback:
            raise
        except Exception:   # any reader error (bad JSON, type conflict): next engine
            if engine == engines[-1]:
                raise _Fallback() from None
            continue
        break
    if cols.rows == 0:
        raise _Fallback()
    for m in metrics:  # NaN (a missing value), inf or a huge value: re-read precisely
        for a in cols.metrics.get(m, []):
            if not (np.abs(a) <= MAX_ABS_SCORE).all():
                raise _Fallback()
    return cols


def read_samples_jsonl(src: Source, task: str, progress: Progress | None = None,
                       done_before: int = 0, total: int = 0,
                       cluster_key: str | None = None) -> SampleColumns:
    hasher = None
    if src.path is not None and src.size > (8 << 20):
        # sha256 of a large file in parallel with parsing (hashlib releases the GIL)
        hasher = threading.Thread(target=src.sha256, daemon=True)
        hasher.start()
    try:
        try:
            return read_jsonl_fast(src, task, progress, done_before, total, cluster_key)
        except _Fallback:
            return read_jsonl_slow(src, task, progress, done_before, total, cluster_key)
    finally:
        if hasher is not None:
            hasher.join()
