"""lm_eval sample records -> columns, line by line (the reference reader).

Per-item scores
---------------
Every per-item metric named in the record's ``metrics`` list (or, for old records, every
numeric top-level key that is not a known field) becomes one score row: ``item_id`` is
``str(doc_id)``, ``item_hash``/``prompt_hash`` are ``doc_hash``/``prompt_hash``,
``answer_idx`` is 0 (lm_eval reduces ``repeats`` to one per-item value through its filters).
Non-scalar per-item values (lists such as the ``[[golds], [preds]]`` passthrough of corpus
metrics micro_f1 / bleu) are left out of the item scores with a warning; their corpus value
stays in the summaries. NaN/inf scores and duplicate (doc_id, filter, metric) rows raise an
``IngestError``.

Texts: ``prompt`` is the context (``arg_0`` of the first argument), ``target`` the gold
option text when the target is an option index, else the target as written, ``response``
the option with the highest loglikelihood for multiple choice or the raw generation
(``resps[0][0]``) for generative tasks. Texts are capped at ``TEXT_LIMIT`` characters.
``n_choices`` is the most common number of loglikelihood arguments of a multiple-choice
task's docs (else the length of a literal ``doc_to_choice`` list in the task config).


Clusters
--------
``cluster_key`` (``parse_paths``/``parse_uploads``) names a top-level field of the
record's ``doc`` (``"passage_id"``; ``"doc.passage_id"`` means the same). ``""`` turns
clusters off (no doc field is read). With ``None`` each task's key is picked automatically
(``pick_cluster_key``) among the doc fields whose *name* looks like a grouping key (listed
in ``CLUSTER_KEYS``, or matching ``CLUSTER_NAME``: ``*_id``, subject, category, topic, ...;
never a per-item field such as ``question``, ``answer``, ``label``, ``id``, ``idx``), with a
str/int value in the first record, at most ``MAX_CLUSTER_FIELDS`` of them. A field is a
candidate when, over the task's distinct docs (n >= 3), it is present in every doc, has
2 <= G < n distinct values, more than half of its clusters hold at least 2 docs, and it is
not the gold label (a short value equal to the record's target, raw or as option text,
in at least ``GOLD_SHARE`` of the records). The pick is the first candidate in
``CLUSTER_KEYS`` order, else the first by name. The pick is applied only when it gives at
least 20 clusters with more than one doc per cluster on average (``auto_cluster_rule``);
otherwise ``cluster_key`` is None, ``cluster_key_offered`` names it and a warning says why.
The task protocol records ``cluster_key`` (and, when picked
automatically, ``cluster_key_candidates``); a warning names the pick and the other
candidates. Values longer than ``CLUSTER_TEXT_LIMIT`` characters (a passage body, e.g.
RACE's ``article``) become ``cluster_label``'s 12-hex sha256 prefix, never the text itself.
An explicit key missing from (or not a scalar in) some docs gives no clusters for that task,
with a warning; an explicit key is used even when it is per-item or the gold label. Every
reader (DuckDB, pyarrow, line by line) gives the same labels: numbers as their JSON text,
bools as ``true``/``false``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    CLUSTER_NAME,
    CLUSTER_TEXT_LIMIT,
    MAX_ABS_SCORE,
    Progress,
    Source,
    call_progress,
    choose_cluster_key,
    cluster_label,
    is_number,
    load_json,
    loads_line,
)
from evalcore.ingest.lm_eval.results import _describe

TEXT_LIMIT = 8000
CHUNK_LINES = 50_000

# Record fields that are never per-item metrics (0.4.0-0.4.2 records have no `metrics` list).
KNOWN_FIELDS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash", "task", "task_name", "normalized_scores",
})

# Clusters from doc fields (see "Clusters" in the module docstring).
CLUSTER_KEYS = (
    "passage_id", "passage", "article", "context_id", "context", "document_id", "document",
    "story_id", "story", "dialogue_id", "conversation_id", "subject", "category", "problem_id",
    "topic", "question_concept", "domain", "subcategory", "subset", "group", "source",
)
PER_ITEM_FIELDS = frozenset({
    "id", "idx", "index", "doc_id", "example_id", "sample_id", "item_id", "uid", "guid", "qid",
    "key", "question", "query", "answer", "answers", "answerkey", "label", "labels", "gold",
    "target", "targets", "choices", "options", "endings",
})
PER_ITEM_PREFIX = re.compile(r"^(answer|label|gold|target|correct)", re.I)
MAX_CLUSTER_FIELDS = 12
GOLD_SHARE = 0.9


@dataclass
class SampleColumns:
    """Columns of one task's sample records (one row per (doc, filter))."""

    task: str
    item_id: list[pa.Array] = field(default_factory=list)
    filter: list[pa.Array] = field(default_factory=list)
    item_hash: list[pa.Array] = field(default_factory=list)
    prompt_hash: list[pa.Array] = field(default_factory=list)
    prompt: list[pa.Array] = field(default_factory=list)
    target: list[pa.Array] = field(default_factory=list)
    response: list[pa.Array] = field(default_factory=list)
    n_opts: list[np.ndarray] = field(default_factory=list)
    metrics: dict[str, list[np.ndarray]] = field(default_factory=dict)
    rows: int = 0
    nonscalar: dict[str, int] = field(default_factory=dict)   # metric -> rows left out
    # metric -> [count, first place, what was found]: booleans read as 1/0, and values that
    # are neither numbers nor lists (strings, objects, null) left out
    booleans: dict[str, list] = field(default_factory=dict)
    badvalues: dict[str, list] = field(default_factory=dict)
    mc_like: bool = False                                     # loglikelihood responses
    cluster_key: str | None = None        # the caller's setting: None auto, "" off, a doc field
    doc_fields: list[str] | None = None   # doc fields read for clusters (None: not decided yet)
    doc_vals: dict[str, list[pa.Array]] = field(default_factory=dict)  # cluster labels per row
    gold_hits: dict[str, int] = field(default_factory=dict)   # rows where the field == target
    hashed: set[str] = field(default_factory=set)             # fields with hashed long values
    doc_num: list[np.ndarray] = field(default_factory=list)   # integer doc_ids (fast path)

    def add_chunk(self, n: int, item_id: pa.Array, filt: pa.Array, item_hash: pa.Array,
                  prompt_hash: pa.Array, prompt: pa.Array, target: pa.Array,
                  response: pa.Array, n_opts: np.ndarray, metrics: dict[str, np.ndarray],
                  doc_vals: dict[str, pa.Array] | None = None,
                  doc_num: np.ndarray | None = None) -> None:
        if doc_num is not None:
            self.doc_num.append(doc_num)
        for f in self.doc_fields or []:
            arr = (doc_vals or {}).get(f)
            self.doc_vals.setdefault(f, []).append(arr if arr is not None else pa.nulls(n, pa.string()))
        for m in metrics:
            if m not in self.metrics:
                self.metrics[m] = [np.full(r, np.nan) for r in self._chunk_sizes()]
        for m in self.metrics:
            self.metrics[m].append(metrics.get(m, np.full(n, np.nan)))
        self.item_id.append(item_id)
        self.filter.append(filt)
        self.item_hash.append(item_hash)
        self.prompt_hash.append(prompt_hash)
        self.prompt.append(prompt)
        self.target.append(target)
        self.response.append(response)
        self.n_opts.append(np.asarray(n_opts, dtype="int64"))
        self.rows += n

    def _chunk_sizes(self) -> list[int]:
        return [len(a) for a in self.item_id]


def _cap(arr: pa.Array) -> pa.Array:
    """Texts as Arrow strings, each cut to ``TEXT_LIMIT`` characters."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())
    if len(arr) == 0:
        return arr
    # bytes >= characters: the byte lengths come from the offsets alone (no text scan)
    longest_bytes = pc.max(pc.binary_length(arr)).as_py()
    if longest_bytes is None or longest_bytes <= TEXT_LIMIT:
        return arr
    longest = pc.max(pc.utf8_length(arr)).as_py()
    if longest is not None and longest > TEXT_LIMIT:
        return pc.utf8_slice_codeunits(arr, 0, TEXT_LIMIT)
    return arr


def doc_field_name(cluster_key: str) -> str:
    """The doc field a ``cluster_key`` names: ``"doc.passage_id"`` -> ``"passage_id"``."""
    return cluster_key[4:] if cluster_key.startswith("doc.") else cluster_key


def _auto_eligible(name: str) -> bool:
    """Whether a doc field's name allows it to be picked automatically as a cluster key."""
    low = name.lower()
    if low in PER_ITEM_FIELDS or PER_ITEM_PREFIX.match(low):
        return False
    return name in CLUSTER_KEYS or bool(CLUSTER_NAME.search(name))


def cluster_fields(doc: Any, cluster_key: str | None) -> list[str]:
    """The doc fields to read for clusters, decided from the first record's ``doc``.

    ``""``: none. An explicit key: that field only. ``None``: the fields whose name is
    auto-eligible (``_auto_eligible``) and whose value is a str or int, ``CLUSTER_KEYS``
    first (in that order), then in doc order; at most ``MAX_CLUSTER_FIELDS``.
    """
    if cluster_key == "":
        return []
    if cluster_key:
        return [doc_field_name(cluster_key)]
    if not isinstance(doc, dict):
        return []
    names = [k for k, v in doc.items() if isinstance(k, str) and isinstance(v, (str, int))
             and not isinstance(v, bool) and _auto_eligible(k)]
    rank = {k: i for i, k in enumerate(CLUSTER_KEYS)}
    names.sort(key=lambda k: rank.get(k, len(rank)))   # stable: doc order after the list
    return names[:MAX_CLUSTER_FIELDS]


def _doc_text(v: Any) -> str | None:
    """A scalar doc value as text, as DuckDB's VARCHAR cast writes it (bools lower case);
    None for missing and non-scalar values."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)) and not (isinstance(v, float) and not math.isfinite(v)):
        return str(v)
    return None


def _label_array(raw: pa.Array) -> tuple[pa.Array, bool]:
    """Cluster labels of a string array (``cluster_label`` of each distinct value longer
    than ``CLUSTER_TEXT_LIMIT``; nulls stay null) and whether any value was hashed."""
    if len(raw) == 0 or raw.null_count == len(raw):
        return raw, False
    longest = pc.max(pc.utf8_length(raw)).as_py()
    if longest is None or longest <= CLUSTER_TEXT_LIMIT:
        return raw, False
    enc = pc.dictionary_encode(raw)
    labels = pa.array([cluster_label(v) for v in enc.dictionary.to_pylist()], pa.string())
    return pa.DictionaryArray.from_arrays(enc.indices, labels).cast(pa.string()), True


def _gold_hits(raw: pa.Array, *targets: pa.Array) -> int:
    """Rows where the doc value equals any of the target arrays (nulls never match)."""
    hit = None
    for t in targets:
        eq = pc.fill_null(pc.equal(raw, t), False)
        hit = eq if hit is None else pc.or_(hit, eq)
    return int(pc.sum(hit).as_py() or 0) if hit is not None else 0


def pick_cluster_key(per_doc: dict[str, Any], gold: Iterable[str] = ()) -> tuple[str | None, list[str]]:
    """An obvious grouping key among doc fields: (pick, candidates).

    ``per_doc`` maps a field name to its value (cluster label) for each distinct doc, in
    the same doc order (Arrow arrays or lists; None = missing). A field is a candidate when
    n >= 3 docs, it is not per-item by name (``PER_ITEM_FIELDS``/``PER_ITEM_PREFIX``) nor
    listed in ``gold`` (the gold label), it has a value in every doc, 2 <= G < n distinct
    values, and more than half of its G clusters hold at least 2 docs. The pick is the first
    candidate in ``CLUSTER_KEYS`` order, else the first (by name) whose name looks like a
    grouping key (``CLUSTER_NAME``), else None. Candidates are sorted by name.
    """
    gold = set(gold)
    candidates: list[str] = []
    for name, vals in per_doc.items():
        arr = vals if isinstance(vals, (pa.Array, pa.ChunkedArray)) else pa.array(list(vals), pa.string())
        n = len(arr)
        low = name.lower()
        if (n < 3 or name in gold or low in PER_ITEM_FIELDS or PER_ITEM_PREFIX.match(low)
                or arr.null_count):
            continue
        counts = pc.value_counts(arr).field("counts").to_numpy(zero_copy_only=False)
        g = len(counts)
        if 2 <= g < n and 2 * int((counts >= 2).sum()) > g:
            candidates.append(name)
    candidates.sort()
    return choose_cluster_key(candidates, CLUSTER_KEYS)


def _str_or_none(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else str(v)


def _options(arguments: Any) -> tuple[str | None, list[Any]]:
    """(context of the first request, continuation of each request)."""
    if isinstance(arguments, dict):
        keys = sorted(arguments, key=lambda k: int(re.sub(r"\D", "", k) or 0))
        vals = [arguments[k] for k in keys]
        ctx = None
        opts: list[Any] = []
        for v in vals:
            if isinstance(v, dict):
                if ctx is None:
                    ctx = v.get("arg_0")
                opts.append(v.get("arg_1"))
            else:
                opts.append(v)
        return _str_or_none(ctx), opts
    if isinstance(arguments, list) and arguments:
        first = arguments[0]
        if isinstance(first, (list, tuple)) and first:
            return _str_or_none(first[0]), [a[1] if isinstance(a, (list, tuple)) and len(a) > 1 else None
                                            for a in arguments]
        if isinstance(first, dict):
            return _options({f"gen_args_{i}": a for i, a in enumerate(arguments)})
        return _str_or_none(first), [None] * len(arguments)
    return None, []


def _as_float(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if is_number(x):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return None
    return None


def _loglik_pairs(resps: Any) -> list[float] | None:
    """Loglikelihood per option from filtered_resps ([[ll, greedy], ...]); None if generative."""
    if not isinstance(resps, list) or not resps:
        return None
    out: list[float] = []
    for r in resps:
        if isinstance(r, (list, tuple)) and len(r) == 2:
            v = _as_float(r[0])
        else:
            return None
        if v is None:
            return None
        out.append(v)
    return out


def _generation(rec: dict[str, Any]) -> str | None:
    resps = rec.get("resps")
    if isinstance(resps, list) and resps:
        first = resps[0]
        while isinstance(first, list) and first:
            first = first[0]
        if isinstance(first, str):
            return first
    fr = rec.get("filtered_resps")
    if isinstance(fr, list) and fr and isinstance(fr[0], str):
        return fr[0]
    return None


def _target_text(target: Any, options: list[Any]) -> str | None:
    if target is None:
        return None
    idx: int | None = None
    if isinstance(target, int) and not isinstance(target, bool):
        idx = target
    elif isinstance(target, str) and target.strip().isdigit() and options and len(options) > 1:
        idx = int(target.strip())
    if idx is not None and len(options) > 1 and 0 <= idx < len(options) and isinstance(options[idx], str):
        return options[idx].strip()
    return _str_or_none(target) if not isinstance(target, (list, dict)) else str(target)


class RecordReader:
    """Turns sample records (dicts) into ``SampleColumns`` chunks, line by line."""

    def __init__(self, src: Source, task: str, cluster_key: str | None = None):
        self.src = src
        self.cols = SampleColumns(task=task, cluster_key=cluster_key)
        self._reset()

    def _reset(self) -> None:
        self._ids: list[str] = []
        self._filters: list[str] = []
        self._ih: list[str | None] = []
        self._ph: list[str | None] = []
        self._prompt: list[str | None] = []
        self._target: list[str | None] = []
        self._resp: list[str | None] = []
        self._nopts: list[int] = []
        self._metrics: dict[str, list[float]] = {}
        self._doc: dict[str, list[str | None]] = {f: [] for f in self.cols.doc_fields or []}

    def add(self, rec: Any, where: str) -> None:
        doc_id = self._doc_id(rec, where)
        self._add_metrics(rec, where)
        ctx, opts = _options(rec.get("arguments"))
        lls = _loglik_pairs(rec.get("filtered_resps"))
        if lls is None:
            resp = _generation(rec)
            nopt = len(opts) if opts else 0
        else:
            self.cols.mc_like = True
            nopt = len(lls)
            best = int(np.argmax(lls)) if len(lls) > 1 else None
            resp = (opts[best].strip() if best is not None and best < len(opts)
                    and isinstance(opts[best], str) else None)
        target = rec.get("target")
        target_text = _target_text(target, opts)
        self._add_doc_fields(rec, target, target_text)
        self._ids.append(str(doc_id))
        filt = rec.get("filter")
        self._filters.append(filt if isinstance(filt, str) and filt else "none")
        self._ih.append(_str_or_none(rec.get("doc_hash")))
        self._ph.append(_str_or_none(rec.get("prompt_hash")))
        self._prompt.append(ctx)
        self._target.append(target_text)
        self._resp.append(resp)
        self._nopts.append(nopt)
        if len(self._ids) >= CHUNK_LINES:
            self.flush()

    def _doc_id(self, rec: Any, where: str) -> Any:
        """The record's doc_id; IngestError for a record that is not one."""
        src = self.src
        if not isinstance(rec, dict):
            raise IngestError(src.name, where, "a JSON object (one sample record)",
                              f"found {type(rec).__name__}")
        if "doc_id" not in rec:
            raise IngestError(src.name, where, "a sample record with a 'doc_id' field",
                              f"keys: {', '.join(list(rec)[:8])}")
        doc_id = rec["doc_id"]
        if isinstance(doc_id, (dict, list)) or doc_id is None:
            raise IngestError(src.name, f"{where}, field doc_id", "a number or string doc_id")
        return doc_id

    def _add_metrics(self, rec: dict, where: str) -> None:
        """The record's per-item metric values into their columns (NaN-padded); booleans read
        as 1/0, lists and other non-numbers counted for the warnings."""
        names = rec.get("metrics")
        if not isinstance(names, list):
            # 0.4.0-0.4.2 records: every other numeric (or list-valued) top-level field
            names = [k for k, v in rec.items() if k not in KNOWN_FIELDS and
                     (is_number(v) or isinstance(v, (bool, list)))]
        n = len(self._ids)
        for m in names:
            if not isinstance(m, str) or m not in rec:
                continue
            v = rec[m]
            if isinstance(v, bool):
                seen = self.cols.booleans.setdefault(m, [0, where, ""])
                seen[0] += 1
                v = float(v)
            elif is_number(v):
                v = float(v)
                if not math.isfinite(v) or abs(v) > MAX_ABS_SCORE:
                    raise IngestError(self.src.name, f"{where}, field {m}",
                                      f"a finite score within +-{MAX_ABS_SCORE:g}",
                                      f"found {v!r}")
            elif isinstance(v, (list, tuple)):
                self.cols.nonscalar[m] = self.cols.nonscalar.get(m, 0) + 1
                continue
            else:
                seen = self.cols.badvalues.setdefault(m, [0, where, _describe(v)])
                seen[0] += 1
                continue
            col = self._metrics.get(m)
            if col is None:
                col = self._metrics[m] = [math.nan] * n
            elif len(col) < n:
                col.extend([math.nan] * (n - len(col)))
            col.append(v)

    def _add_doc_fields(self, rec: dict, target: Any, target_text: str | None) -> None:
        """The cluster doc fields' labels of the record (the fields are chosen from the first
        record); counts the fields hashed and those that repeat the gold answer."""
        cols = self.cols
        if cols.doc_fields is None:
            cols.doc_fields = cluster_fields(rec.get("doc"), cols.cluster_key)
            self._doc = {f: [] for f in cols.doc_fields}
        if not cols.doc_fields:
            return
        doc = rec.get("doc")
        raw_target = _doc_text(target)
        for f in cols.doc_fields:
            text = _doc_text(doc.get(f)) if isinstance(doc, dict) else None
            if text is not None:
                label = cluster_label(text)
                if label is not text:
                    cols.hashed.add(f)
                elif text == raw_target or text == target_text:
                    cols.gold_hits[f] = cols.gold_hits.get(f, 0) + 1
                text = label
            self._doc[f].append(text)

    def flush(self) -> None:
        n = len(self._ids)
        if not n:
            return
        metrics = {}
        for m, vals in self._metrics.items():
            if len(vals) < n:
                vals.extend([math.nan] * (n - len(vals)))
            metrics[m] = np.asarray(vals, dtype="float64")
        self.cols.add_chunk(
            n, pa.array(self._ids, pa.string()), pa.array(self._filters, pa.string()),
            pa.array(self._ih, pa.string()), pa.array(self._ph, pa.string()),
            _cap(pa.array(self._prompt, pa.string())), _cap(pa.array(self._target, pa.string())),
            _cap(pa.array(self._resp, pa.string())), np.asarray(self._nopts), metrics,
            {f: pa.array(v, pa.string()) for f, v in self._doc.items()})
        self._reset()

    def finish(self) -> SampleColumns:
        self.flush()
        return self.cols


def read_records(src: Source, task: str, records: Iterable[Any], where_prefix: str,
                 cluster_key: str | None = None) -> SampleColumns:
    reader = RecordReader(src, task, cluster_key)
    for i, rec in enumerate(records):
        reader.add(rec, f"{where_prefix}[{i}]")
    return reader.finish()


def read_jsonl_slow(src: Source, task: str, progress: Progress | None = None,
                    done_before: int = 0, total: int = 0,
                    cluster_key: str | None = None) -> SampleColumns:
    """Line by line with ``loads_line`` (exact line numbers in errors)."""
    reader = RecordReader(src, task, cluster_key)
    done = 0
    with src.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            done += len(line)
            if not line.strip():
                continue
            try:
                rec = loads_line(line)
            except ValueError as exc:
                truncated = not line.endswith(b"\n")
                raise IngestError(src.name, f"line {lineno}", "one complete JSON object per line",
                                  "the line is cut off (truncated file?)" if truncated else str(exc)
                                  ) from None
            reader.add(rec, f"line {lineno}")
            if lineno % CHUNK_LINES == 0:
                call_progress(progress, done_before + done, total, src.name)
    cols = reader.finish()
    if cols.rows == 0:
        raise IngestError(src.name, "line 1", "at least one sample record", "no records found")
    return cols


def read_samples_json_array(src: Source, task: str, cluster_key: str | None = None) -> SampleColumns:
    obj = load_json(src, what="a JSON array of sample records")
    if isinstance(obj, dict) and isinstance(obj.get("samples"), list):
        obj = obj["samples"]
    if not isinstance(obj, list) or not obj:
        raise IngestError(src.name, "top level", "a non-empty JSON array of sample records")
    return read_records(src, task, obj, "record", cluster_key)
