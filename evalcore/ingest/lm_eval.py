"""lm-evaluation-harness output: results JSON (v0.3 and 0.4.0 .. 0.4.13) and sample logs.

Files
-----
* ``results_<ts>.json`` (0.4.x; ``results.json`` in 0.4.0-0.4.2; any name in 0.3): summary
  metrics per task and group. 0.4 keys are ``"<metric>,<filter>"`` and
  ``"<metric>_stderr,<filter>"``; 0.3 keys have no filter. Metric naming in evalbars:
  ``acc`` when the filter is ``none`` (or absent), else ``"exact_match,strict-match"``.
  A stderr of ``"N/A"`` becomes NaN with ``stderr_raw="N/A"``. ``n`` is the group entry's
  ``sample_count`` for that metric, else ``n-samples[task].effective``, else
  ``sample_len``, else (groups) the sum over the group's subtasks. Entries listed in
  ``groups`` or with a non-empty ``group_subtasks`` list are ``is_group`` summaries.
  Some wrappers embed per-sample records under a top-level ``samples: {task: [...]}``
  key; they are read like sample logs.
* ``samples_<task>_<ts>.jsonl`` (0.4.3+): one JSON object per line and per (doc, filter).
  JSON-array files of 0.4.0-0.4.2 (``<model_args>_<task>.jsonl`` holding ``[{...}, ...]``)
  and embedded records use the same record layout (``arguments`` as ``[[ctx, cont], ...]``
  and native floats/bools in ``resps`` instead of the stringified ``gen_args_i`` dicts).

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

Pairing files of one run, and ``source_key``
--------------------------------------------
lm_eval writes ``<output>/<model_name_sanitized>/results_<ts>.json`` next to
``samples_<task>_<ts>.jsonl``. Files given together are one run when they share the folder
and the timestamp; otherwise a samples file joins the results file (same folder, or any
folder for uploads) whose task list contains the longest task name found in the samples
file name. Samples without a results file form their own run, named after the model
folder (``Qwen__Qwen3-8B`` -> ``Qwen/Qwen3-8B``) or, without one, the file name.
``source_key`` is ``"lm_eval:<ts>"`` (the timestamp from either file name) so the store
can merge a later upload of the other half of the same run; None when no file name has a
timestamp.

Speed
-----
Sample logs on disk are streamed in record batches of ``CHUNK_LINES`` rows read with an
explicit schema of only the needed fields (ids, hashes, filter, metric values, the
first context, option texts, loglikelihoods, and only the cluster doc fields): by DuckDB's JSON reader (``read_json`` through
the Python relational API on a private in-memory connection: no SQL statement, no store
file; ENGINEERING.md recommends it for large sample logs) or, for in-memory uploads, by
``pyarrow.json``. The reader runs in a helper thread a few batches ahead (``_prefetch``:
DuckDB's streaming result is computed only when asked), so JSON parsing overlaps the
per-batch Arrow work. Texts, hashes and ids stay Arrow strings (pandas 3 ``str`` dtype),
kept as the reader's chunks (no concatenation copy); a metric present on every row shares
the id/hash buffers; integer doc ids are deduplicated as numbers. The file's sha256 is
computed in a thread while it is parsed. Any file the columnar readers cannot type (mixed types, NaN
tokens, list-valued metrics, missing values, bad JSON) is re-read line by line with orjson
(json without it), which handles every variant and gives exact line numbers in errors.
"""

from __future__ import annotations

import math
import queue
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    CLUSTER_NAME,
    auto_cluster_rule,
    choose_cluster_key,
    CLUSTER_TEXT_LIMIT,
    cluster_label,
    empty_frame,
    STR,
    Progress,
    MAX_ABS_SCORE,
    Source,
    call_progress,
    concat_frames,
    dumps,
    is_number,
    load_json,
    loads_line,
    summaries_frame,
    tasks_frame,
)
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS, ParsedRun

RESULTS = "lm_eval_results"
SAMPLES_JSONL = "lm_eval_samples_jsonl"
SAMPLES_JSON = "lm_eval_samples_json"
HARNESS = "lm-evaluation-harness"
TEXT_LIMIT = 8000
CHUNK_LINES = 50_000
BLOCK_BYTES = 8 << 20

TS_RE = r"\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(?:\.\d+)?"
RESULTS_NAME = re.compile(rf"^results_(?P<ts>{TS_RE})\.json$")
SAMPLES_NAME = re.compile(rf"^samples_(?P<task>.+)_(?P<ts>{TS_RE})\.jsonl?$")

# Record fields that are never per-item metrics (0.4.0-0.4.2 records have no `metrics` list).
KNOWN_FIELDS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash", "task", "task_name", "normalized_scores",
})
ENTRY_META = frozenset({"alias", "name", "sample_len", "sample_count", "samples", " "})
RUN_CONFIG_KEYS = (
    "model", "model_args", "model_num_parameters", "model_dtype", "model_revision", "model_sha",
    "batch_size", "device", "limit", "bootstrap_iters", "gen_kwargs", "random_seed",
    "numpy_seed", "torch_seed", "fewshot_seed", "num_fewshot", "description_dict", "no_cache",
    "use_cache",
)
RUN_TOP_KEYS = (
    "lm_eval_version", "git_hash", "upper_git_hash", "transformers_version", "max_length",
    "model_name", "model_source", "chat_template", "chat_template_sha", "system_instruction",
    "system_instruction_sha", "fewshot_as_multiturn", "tokenizer_pad_token",
    "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id",
)
TASK_CONFIG_KEYS = (
    "task", "task_alias", "tag", "dataset_path", "dataset_name", "dataset_kwargs",
    "training_split", "validation_split", "test_split", "fewshot_split", "process_docs",
    "doc_to_text", "doc_to_target", "doc_to_choice", "gen_prefix", "description",
    "target_delimiter", "fewshot_delimiter", "fewshot_config", "num_fewshot", "metric_list",
    "output_type", "generation_kwargs", "repeats", "filter_list", "should_decontaminate",
)

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


# ---------------------------------------------------------------------------------------
# Results files
# ---------------------------------------------------------------------------------------
@dataclass
class ResultsFile:
    """A parsed results JSON and what pairing needs from it."""

    src: Source
    obj: dict[str, Any]
    ts: str | None
    task_names: set[str]           # tasks with per-item data possible (non-group)

    @property
    def embedded(self) -> dict[str, Any]:
        s = self.obj.get("samples")
        return s if isinstance(s, dict) else {}


# top-level keys of a results file that must be objects when present
_MAPPING_KEYS = ("configs", "versions", "n-shot", "task_hashes", "groups", "group_subtasks",
                 "n-samples", "higher_is_better", "samples")


def read_results(src: Source) -> ResultsFile:
    obj = load_json(src)
    if not isinstance(obj, dict) or not isinstance(obj.get("results"), dict):
        raise IngestError(src.name, "top level", "an lm_eval results object with a 'results' mapping")
    for task, entry in obj["results"].items():
        if not isinstance(entry, dict):
            raise IngestError(src.name, f"results.{task}", "an object of metric values",
                              f"found {type(entry).__name__}")
    for key in _MAPPING_KEYS:     # the layout the readers rely on: say what was found where
        v = obj.get(key)
        if v is not None and not isinstance(v, dict):
            raise IngestError(src.name, key, "an object (or no such key)", f"found {_describe(v)}")
    for g, subs in (obj.get("group_subtasks") or {}).items():
        if subs is not None and not (isinstance(subs, list) and
                                     all(isinstance(t, str) for t in subs)):
            raise IngestError(src.name, f"group_subtasks.{g}", "a list of task names",
                              f"found {_describe(subs)}")
    m = RESULTS_NAME.match(src.basename)
    groups = _group_names(obj)
    names = set(obj.get("configs") or {}) | set(obj["results"])
    return ResultsFile(src=src, obj=obj, ts=m.group("ts") if m else None,
                       task_names={t for t in names if t not in groups})


def _group_names(obj: dict[str, Any]) -> set[str]:
    groups = set(obj.get("groups") or {})
    for g, subs in (obj.get("group_subtasks") or {}).items():
        if subs:
            groups.add(g)
    return groups


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if is_number(v):
        return float(v)
    return None


def _describe(val: Any) -> str:
    """What a JSON value is, for a message: its type and at most 40 characters of it."""
    kind = {str: "a string", list: "a list", dict: "an object", bool: "a boolean",
            type(None): "null"}.get(type(val), type(val).__name__)
    text = dumps(val)
    return f"{kind} {text[:40]}{'...' if len(text) > 40 else ''}"


def summary_value(val: Any, src_name: str, where: str, warnings: list[str] | None
                  ) -> float | None:
    """A reported summary value as a float, or None (left out, with a warning saying so).

    Numbers are kept; NaN is kept as a missing value (warned); infinite values and values
    beyond +-``MAX_ABS_SCORE`` raise ``IngestError`` naming the field; a boolean becomes
    1.0/0.0 and strings, lists, objects and null are left out, each with a warning naming
    file, field and what was found."""
    def warn(text: str) -> None:
        if warnings is not None:
            warnings.append(f"{src_name}: {where}: {text}")

    if isinstance(val, bool):
        warn(f"found the boolean {dumps(val)} where a number was expected; stored as "
             f"{float(val):g} (a boolean is not a score: check the file)")
        return float(val)
    if is_number(val):
        v = float(val)
        if math.isnan(v):
            warn("found NaN; kept as a missing value")
            return v
        if not math.isfinite(v) or abs(v) > MAX_ABS_SCORE:
            raise IngestError(src_name, where, f"a finite number within +-{MAX_ABS_SCORE:g}",
                              f"found {val!r}")
        return v
    warn(f"found {_describe(val)} where a number was expected; this value was left out "
         "(no reported value for this metric)")
    return None


def results_summaries(obj: dict[str, Any], warnings: list[str] | None = None,
                      src_name: str = "results") -> list[dict[str, Any]]:
    """Summary rows (SUMMARY_COLUMNS as dicts) from a results object (0.3 and 0.4).

    Values are checked by ``summary_value`` (problems go to ``warnings``, naming
    ``src_name`` and the field ``results.<task>.<key>``)."""
    results: dict[str, Any] = obj["results"]
    groups_obj = obj.get("groups") or {}
    group_subtasks = obj.get("group_subtasks") or {}
    groups = _group_names(obj)
    nsamples = obj.get("n-samples") or {}
    entries = dict(results)
    for g, entry in groups_obj.items():
        if g not in entries and isinstance(entry, dict):
            entries[g] = entry

    def count(value: Any) -> int | None:
        # a count the file gives as NaN, Infinity or a negative number is unknown, not an error
        if is_number(value) and math.isfinite(value) and value >= 0:
            return int(value)
        return None

    def task_n(task: str, depth: int = 0) -> int | None:
        ns = nsamples.get(task)
        if isinstance(ns, dict) and count(ns.get("effective")) is not None:
            return count(ns["effective"])
        entry = entries.get(task) or {}
        if count(entry.get("sample_len")) is not None:
            return count(entry["sample_len"])
        subs = group_subtasks.get(task) or []
        if subs and depth < 20:
            parts = [task_n(s, depth + 1) for s in subs]
            if all(p is not None for p in parts):
                return int(sum(parts))  # type: ignore[arg-type]
        return None

    rows: list[dict[str, Any]] = []
    for task, entry in entries.items():
        counts = entry.get("sample_count") if isinstance(entry.get("sample_count"), dict) else {}
        section = "results" if task in results else "groups"
        for key, val in entry.items():
            if key in ENTRY_META or not isinstance(key, str):
                continue
            base, _, filt = key.partition(",")
            if base.endswith("_stderr"):
                continue
            value = summary_value(val, src_name, f"{section}.{task}.{key}", warnings)
            if value is None:
                continue
            metric = base if filt in ("", "none") else f"{base},{filt}"
            se_key = f"{base}_stderr,{filt}" if "," in key else f"{base}_stderr"
            se = entry.get(se_key)
            se_num = _number(se)
            n = counts.get(key) if is_number(counts.get(key)) else task_n(task)
            rows.append({
                "task": task, "metric": metric, "value": value,
                "stderr": se_num if se_num is not None else math.nan,
                "stderr_raw": None if se is None or se_num is not None else str(se),
                "n": None if n is None else int(n), "is_group": task in groups,
            })
    return rows


def _model_from_args(model_args: Any) -> str | None:
    if isinstance(model_args, dict):
        for k in ("pretrained", "model", "model_name", "path"):
            if isinstance(model_args.get(k), str):
                return model_args[k]
        return None
    if isinstance(model_args, str):
        for part in model_args.split(","):
            k, _, v = part.partition("=")
            if k.strip() in ("pretrained", "model", "model_name", "path") and v:
                return v.strip()
    return None


def run_identity(obj: dict[str, Any]) -> tuple[str | None, str | None]:
    """(model name, harness version) of a results object."""
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    model = obj.get("model_name") or _model_from_args(cfg.get("model_args")) or cfg.get("model")
    version = obj.get("lm_eval_version")
    if not version and obj.get("git_hash"):
        version = f"git {obj['git_hash']}"
    return (str(model) if model else None), (str(version) if version else None)


def _is_v03(obj: dict[str, Any]) -> bool:
    return not any("," in k for e in obj["results"].values() if isinstance(e, dict) for k in e) \
        and "configs" not in obj


def run_protocol(obj: dict[str, Any]) -> dict[str, Any]:
    """Run-level settings compared in protocol diffs (None values dropped)."""
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    proto: dict[str, Any] = {"harness": HARNESS, "results_format": "0.3" if _is_v03(obj) else "0.4"}
    for k in RUN_TOP_KEYS:
        if obj.get(k) is not None:
            proto[k] = obj[k]
    for k in RUN_CONFIG_KEYS:
        if cfg.get(k) is not None:
            proto[k] = cfg[k]
    proto["apply_chat_template"] = obj.get("chat_template") is not None
    return proto


def task_rows(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per-task protocol and n_choices from configs, versions, n-shot, task_hashes and the
    harness's ``higher_is_better`` per metric (read by ``evalcore.metrics``)."""
    configs = obj.get("configs") or {}
    versions = obj.get("versions") or {}
    nshot = obj.get("n-shot") or {}
    hashes = obj.get("task_hashes") or {}
    hib = obj.get("higher_is_better") if isinstance(obj.get("higher_is_better"), dict) else {}
    group_subtasks = obj.get("group_subtasks") or {}
    groups = _group_names(obj)
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    out: dict[str, dict[str, Any]] = {}
    names = list(obj["results"]) + [t for t in configs if t not in obj["results"]] + \
        [g for g in groups if g not in obj["results"]]
    for task in names:
        tc = configs.get(task) if isinstance(configs.get(task), dict) else {}
        proto: dict[str, Any] = {k: tc[k] for k in TASK_CONFIG_KEYS if tc.get(k) is not None}
        if task in versions:
            proto["version"] = versions[task]
        elif isinstance(tc.get("metadata"), dict) and "version" in tc["metadata"]:
            proto["version"] = tc["metadata"]["version"]
        if task in nshot:
            proto["num_fewshot"] = nshot[task]
        elif "num_fewshot" not in proto and cfg.get("num_fewshot") is not None:
            proto["num_fewshot"] = cfg["num_fewshot"]
        if hashes.get(task):
            proto["task_hash"] = hashes[task]
        if isinstance(hib.get(task), dict):
            # the harness's own direction per metric (0.4 results; evalcore.metrics)
            proto["higher_is_better"] = {str(m): v for m, v in hib[task].items()
                                         if isinstance(v, bool)}
        if task in groups:
            proto["is_group"] = True
            proto["subtasks"] = list(group_subtasks.get(task) or [])
        choice = tc.get("doc_to_choice")
        n_choices = len(choice) if isinstance(choice, list) and choice else None
        out[task] = {"task": task, "n_choices": n_choices, "protocol": proto}
    return out


# ---------------------------------------------------------------------------------------
# Sample records -> columns (shared by the fast and the line-by-line path)
# ---------------------------------------------------------------------------------------
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
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
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
                    raise IngestError(src.name, f"{where}, field {m}",
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
        cols = self.cols
        if cols.doc_fields is None:
            cols.doc_fields = cluster_fields(rec.get("doc"), cols.cluster_key)
            self._doc = {f: [] for f in cols.doc_fields}
        if cols.doc_fields:
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
    """Line by line with orjson (exact line numbers in errors)."""
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


# ---------------------------------------------------------------------------------------
# Columnar fast path: DuckDB or pyarrow JSON readers with an explicit schema
# ---------------------------------------------------------------------------------------
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
        elif v is None or isinstance(v, bool):
            raise _Fallback()
        # non-scalar (list) metrics: left out of the schema, hence ignored by the reader
    for m in metrics:
        fields.append((m, pa.float64()))
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
    return pa.schema(fields), metrics, mc, max_args


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


def _fast_batch(batch: pa.RecordBatch, cols: SampleColumns, metrics: list[str], mc: bool,
                max_args: int) -> None:
    n = batch.num_rows
    if n == 0:
        return
    names = batch.schema.names
    get = batch.column
    doc = get(names.index("doc_id"))
    if doc.null_count:
        raise _Fallback()
    item_id = doc.cast(pa.string())
    filt = pc.fill_null(get(names.index("filter")), "none")
    args = get(names.index("arguments"))
    prompt = pc.struct_field(args, ["gen_args_0", "arg_0"])
    target_raw = get(names.index("target"))
    raw_target = target_raw.cast(pa.string())
    if mc:
        fr = get(names.index("filtered_resps"))
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
        target = pc.if_else(pa.array(t_idx >= 0), t_text, t_str)
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
    doc_vals: dict[str, pa.Array] = {}
    if cols.doc_fields:
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
    doc_ids = get(names.index("doc_id"))
    doc_num = (doc_ids.to_numpy(zero_copy_only=False).astype("int64", copy=False)
               if pa.types.is_integer(doc_ids.type) else None)
    cols.add_chunk(n, item_id, filt, get(names.index("doc_hash")), get(names.index("prompt_hash")),
                   _cap(prompt), _cap(target), _cap(response), n_opts, metric_arrays, doc_vals,
                   doc_num)


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_\-@.]{1,100}$")


def _duckdb_type(t: pa.DataType) -> str:
    """DuckDB type text of the (fixed-vocabulary) Arrow read schema."""
    if pa.types.is_struct(t):
        return "STRUCT(" + ", ".join(f'"{f.name}" {_duckdb_type(f.type)}' for f in t) + ")"
    if pa.types.is_list(t):
        return _duckdb_type(t.value_type) + "[]"
    return {pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.float64(): "DOUBLE"}[t]


def _batches_duckdb(path: str, schema: pa.Schema,
                    doc_fields: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Record batches of the schema's fields read by DuckDB's JSON reader (yyjson, all cores).

    Only the Python relational API is used (no SQL statement); field names other than the
    fixed ones are metric and doc field names from the file, checked against ``_SAFE_NAME``
    by the caller. The in-memory connection is private to this call (no store file, no lock).

    Cluster doc fields are read as VARCHAR (numbers as their JSON text, like ``_doc_text``)
    and labelled inside DuckDB with expression objects: ``__cl_<i>`` is the value, or
    ``left(sha256(value), 12)`` when ``length(value)`` (code points, like Python's ``len``)
    exceeds ``CLUSTER_TEXT_LIMIT`` (the same label as ``cluster_label``); ``__lg_<i>`` says
    whether it was hashed. The ``doc`` struct itself never leaves DuckDB: an Arrow batch's
    buffers live as long as any of its columns (the kept prompt texts), so a passage body in
    it would stay in memory for the whole read.
    """
    import duckdb

    con = duckdb.connect()
    try:
        columns = {f.name: _duckdb_type(f.type) for f in schema}
        if doc_fields:
            columns["doc"] = "STRUCT(" + ", ".join(f'"{f}" VARCHAR' for f in doc_fields) + ")"
        # metric values are read as JSON and cast here: DuckDB's DOUBLE reader would turn
        # true/false into 1/0 silently; a boolean or string sends the file to the slow path
        # (which says what it found where)
        metric_fields = [f.name for f in schema if f.type == pa.float64()]
        for m in metric_fields:
            columns[m] = "JSON"
        rel = con.read_json(path, format="newline_delimited", columns=columns)
        C, F, K = duckdb.ColumnExpression, duckdb.FunctionExpression, duckdb.ConstantExpression
        if metric_fields:
            odd = None
            for m in metric_fields:
                kind = F("json_type", C(m)).isin(K("BOOLEAN"), K("VARCHAR"), K("OBJECT"),
                                                  K("ARRAY"))
                odd = kind if odd is None else (odd | kind)
            rel = rel.select(duckdb.StarExpression(exclude=metric_fields),
                             *[C(m).cast(duckdb.sqltype("DOUBLE")).alias(m)
                               for m in metric_fields], odd.alias("__odd_metric"))
        if doc_fields:
            extra = []
            for i, f in enumerate(doc_fields):
                value = F("struct_extract", C("doc"), K(f))
                long_ = F("length", value) > K(CLUSTER_TEXT_LIMIT)
                label = duckdb.CaseExpression(long_, F("left", F("sha256", value), K(12))
                                              ).otherwise(value)
                extra += [label.alias(f"__cl_{i}"), long_.alias(f"__lg_{i}")]
            rel = rel.select(duckdb.StarExpression(exclude=["doc"]), *extra)
        for batch in rel.fetch_arrow_reader(CHUNK_LINES):
            if metric_fields:
                odd = batch.column(batch.schema.names.index("__odd_metric"))
                if pc.any(pc.fill_null(odd, False)).as_py():
                    raise _Fallback()
            yield batch
    finally:
        con.close()


class _Raised:
    """An exception raised by the reader thread of ``_prefetch``, handed to the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


_END = object()


def _prefetch(batches: Iterator[pa.RecordBatch], depth: int = 2) -> Iterator[pa.RecordBatch]:
    """Iterate ``batches`` in a helper thread, up to ``depth`` batches ahead.

    DuckDB's streaming result computes the next batch only when asked (measured: a pause
    after each batch adds its full length to the read), so without this the reader waits
    while ``_fast_batch`` works on a batch. The JSON readers and pyarrow compute release
    the GIL, so the two overlap. Reader exceptions are re-raised here, at the batch where
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
                    _fast_batch(batch, cols, metrics, mc, max_args)
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


def read_samples_json_array(src: Source, task: str, cluster_key: str | None = None) -> SampleColumns:
    obj = load_json(src, what="a JSON array of sample records")
    if isinstance(obj, dict) and isinstance(obj.get("samples"), list):
        obj = obj["samples"]
    if not isinstance(obj, list) or not obj:
        raise IngestError(src.name, "top level", "a non-empty JSON array of sample records")
    return read_records(src, task, obj, "record", cluster_key)


# ---------------------------------------------------------------------------------------
# Columns -> canonical frames
# ---------------------------------------------------------------------------------------
def _concat(chunks: list[pa.Array], typ: pa.DataType = pa.string()) -> pa.Array:
    if not chunks:
        return pa.array([], typ)
    chunks = [c.cast(typ) if c.type != typ else c for c in chunks]
    return pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]


def _chunked(chunks: list[pa.Array | pa.ChunkedArray], typ: pa.DataType = pa.string()
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
    """Score rows (one per record and metric), texts (one per doc), n_choices, warnings."""
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
    if cols.rows == 0:
        return TaskData(empty_frame(SCORE_COLUMNS), empty_frame(TEXT_COLUMNS), None, warnings)
    item_id = _chunked(cols.item_id)
    filt = _chunked(cols.filter)
    ih = _chunked(cols.item_hash)
    ph = _chunked(cols.prompt_hash)
    n_opts = np.concatenate(cols.n_opts)
    cols.item_id, cols.filter, cols.item_hash, cols.prompt_hash = [], [], [], []
    n = len(item_id)
    # integer codes for ids and filters (duplicate checks, first-record-per-doc texts),
    # numbered in order of first appearance
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
    _, first_rows = np.unique(id_codes, return_index=True)
    first_rows.sort()
    identity = len(first_rows) == n
    cluster, cluster_proto, cluster_warn = _choose_cluster(src_name, cols,
                                                           None if identity else first_rows)
    warnings.extend(cluster_warn)
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
    if val_parts:
        total = sum(len(v) for v in val_parts)
        metric_arr = pa.DictionaryArray.from_arrays(
            pa.array(np.concatenate(code_parts)), pa.array(metric_names, pa.string())).cast(pa.string())
        scores = pd.DataFrame({
            "task": pd.Series(pa.repeat(pa.scalar(task, pa.string()), total), dtype=STR),
            "metric": pd.Series(metric_arr, dtype=STR),
            "item_id": pd.Series(_chunked(id_parts), dtype=STR),
            "answer_idx": np.zeros(total, dtype="int64"),
            "score": np.concatenate(val_parts),
            "cluster": pd.Series(_chunked(cl_parts) if cl_parts
                                 else pa.nulls(total, pa.string()), dtype=STR),
            "item_hash": pd.Series(_chunked(ih_parts), dtype=STR),
            "prompt_hash": pd.Series(_chunked(ph_parts), dtype=STR),
        })[list(SCORE_COLUMNS)]
    else:
        scores = empty_frame(SCORE_COLUMNS)
    # texts: the first record of each doc
    take = None if identity else pa.array(first_rows)

    def pick(chunks: list[pa.Array]) -> pa.ChunkedArray:
        arr = _chunked(chunks)
        return arr if identity else arr.take(take)

    prompt, target, response = pick(cols.prompt), pick(cols.target), pick(cols.response)
    cols.prompt, cols.target, cols.response = [], [], []
    texts = pd.DataFrame({
        "task": pd.Series(pa.repeat(pa.scalar(task, pa.string()), len(first_rows)), dtype=STR),
        "item_id": _pd_str(item_id if identity else item_id.take(take)),
        "answer_idx": np.zeros(len(first_rows), dtype="int64"),
        "prompt": _pd_str(prompt), "target": _pd_str(target), "response": _pd_str(response),
    })[list(TEXT_COLUMNS)]
    n_choices = None
    if cols.mc_like:
        multi = n_opts[first_rows]
        multi = multi[multi > 1]
        if len(multi):
            n_choices = int(np.argmax(np.bincount(multi)))
    return TaskData(scores, texts, n_choices, warnings, cluster_proto)


# ---------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------
def samples_task_name(src: Source, candidates: Iterable[str] = ()) -> str:
    """Task of a samples file: ``samples_<task>_<ts>``, else the longest known task name
    inside the file name, else the file stem."""
    m = SAMPLES_NAME.match(src.basename)
    if m:
        return m.group("task")
    stem = re.sub(r"\.(jsonl|json)$", "", src.basename)
    best = max((t for t in candidates if t and t in stem), key=len, default=None)
    if best:
        return best
    return re.sub(r"^samples_", "", stem)


def samples_ts(src: Source) -> str | None:
    m = SAMPLES_NAME.match(src.basename)
    return m.group("ts") if m else None


def build_run(results: ResultsFile | None, samples: list[tuple[Source, str, SampleColumns]],
              sample_formats: dict[str, str], cluster_key: str | None = None) -> ParsedRun:
    """One ParsedRun from an optional results file and sample columns per task.

    ``cluster_key`` applies to samples embedded in the results file (sample files were read
    with it already); each task's cluster choice goes into its protocol. A value of an
    unexpected type deep in a results file (a fuzzed or hand-edited one) that no specific
    check names is an ``IngestError`` naming the file, not an internal error."""
    try:
        return _build_run(results, samples, sample_formats, cluster_key)
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        name = results.src.name if results is not None else (samples[0][0].name if samples
                                                             else "lm_eval run")
        raise IngestError(name, "results layout", "the lm_eval results layout (objects and "
                          "lists where lm_eval writes them)",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None


def _build_run(results: ResultsFile | None, samples: list[tuple[Source, str, SampleColumns]],
               sample_formats: dict[str, str], cluster_key: str | None = None) -> ParsedRun:
    warnings: list[str] = []
    score_frames: list[pd.DataFrame] = []
    text_frames: list[pd.DataFrame] = []
    task_info: dict[str, dict[str, Any]] = {}
    files = []
    summaries = summaries_frame([])
    if results is not None:
        obj = results.obj
        model, version = run_identity(obj)
        protocol = run_protocol(obj)
        summaries = summaries_frame(results_summaries(obj, warnings, results.src.name))
        task_info = task_rows(obj)
        files.append(results.src.source_file(RESULTS))
        name = model or re.sub(r"\.json$", "", results.src.basename)
        ts = results.ts
        covered = {task for _src, task, _cols in samples}
        for task, recs in results.embedded.items():
            if task in covered:
                warnings.append(f"{results.src.name}: embedded samples of {task} ignored: "
                                f"a separate samples file was given")
                continue
            if not isinstance(recs, list):
                raise IngestError(results.src.name, f"samples.{task}", "a list of sample records")
            samples = samples + [(results.src, task, read_records(results.src, task, recs,
                                                                  f"samples.{task}", cluster_key))]
    else:
        model, version, protocol, ts = None, None, {"harness": HARNESS}, None
        first = samples[0][0]
        folder = first.folder.replace("\\", "/").rstrip("/").split("/")[-1].split("!")[-1]
        if folder and folder not in (".", ""):
            name = folder.replace("__", "/")
            model = name
        else:
            name = re.sub(r"\.(jsonl|json)$", "", first.basename)
        warnings.append(f"{first.name}: sample log(s) without their results file: no summaries, "
                        f"run named {name!r}")
    for src, task, cols in samples:
        data = assemble(src.name, cols)
        warnings.extend(data.warnings)
        score_frames.append(data.scores)
        text_frames.append(data.texts)
        info = task_info.setdefault(task, {"task": task, "n_choices": None, "protocol": {}})
        if data.n_choices is not None:
            info["n_choices"] = data.n_choices
        for k, v in data.cluster_protocol.items():   # a task split over files: first file wins
            info["protocol"].setdefault(k, v)
        ts = ts or samples_ts(src)
        if src is not (results.src if results else None):
            files.append(src.source_file(sample_formats.get(src.name, SAMPLES_JSONL)))
    by_task: dict[str, list[int]] = {}
    for i, (_src, task, _cols) in enumerate(samples):
        by_task.setdefault(task, []).append(i)
    for task, idx in by_task.items():    # one task in several files: their items must not overlap
        if len(idx) > 1:
            both = concat_frames([score_frames[i] for i in idx], SCORE_COLUMNS)
            dup = both.duplicated(subset=["metric", "item_id", "answer_idx"])
            if dup.any():
                row = both[dup].iloc[0]
                raise IngestError(", ".join(samples[i][0].name for i in idx), f"task {task!r}",
                                  "each item of a task in one sample file",
                                  f"item id {row['item_id']!r} of metric {row['metric']!r} "
                                  f"appears in two files")
    scores = concat_frames(score_frames, SCORE_COLUMNS)
    return ParsedRun(
        name=name, model=model, source_format="lm_eval", harness=HARNESS,
        harness_version=version, protocol=protocol, files=files, scores=scores,
        summaries=summaries, texts=concat_frames(text_frames, TEXT_COLUMNS),
        tasks=tasks_frame(list(task_info.values())),
        source_key=f"lm_eval:{ts}" if ts else None, warnings=warnings)


def pair_samples(results: list[ResultsFile], samples: list[Source]) -> tuple[
        dict[int, list[tuple[Source, str]]], list[tuple[Source, str]]]:
    """Assign each samples file to a results file (by index) or leave it standalone.

    Rules (first match wins): same folder and timestamp; else the results files in the
    same folder (for uploads: all) whose task list contains the longest task name found in
    the samples file name, if exactly one does.
    """
    attached: dict[int, list[tuple[Source, str]]] = {i: [] for i in range(len(results))}
    alone: list[tuple[Source, str]] = []
    for s in samples:
        ts = samples_ts(s)
        hit = None
        if ts:
            same = [i for i, r in enumerate(results) if r.ts == ts and r.src.folder == s.folder]
            if len(same) == 1:
                hit = same[0]
        if hit is None:
            local = [i for i, r in enumerate(results) if r.src.folder == s.folder]
            all_tasks = {t for i in local for t in results[i].task_names}
            task = samples_task_name(s, all_tasks)
            owners = [i for i in local if task in results[i].task_names]
            if len(owners) == 1 and not (ts and results[owners[0]].ts and results[owners[0]].ts != ts):
                hit = owners[0]
        if hit is None:
            alone.append((s, samples_task_name(s)))
        else:
            attached[hit].append((s, samples_task_name(s, results[hit].task_names)))
    return attached, alone
