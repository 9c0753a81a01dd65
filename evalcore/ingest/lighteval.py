"""lighteval and Open LLM Leaderboard (v1) results files: ``results_<timestamp>.json``.

Files
-----
lighteval's ``EvaluationTracker`` writes one JSON object per evaluation run::

    {"config_general": {"lighteval_sha", "model_name", "model_sha", "model_dtype",
                        "num_few_shot_default", "max_samples", "generation_parameters",
                        "model_config", "start_time", ...},
     "results":        {"<suite>|<task>|<k>": {"<metric>": v, "<metric>_stderr": se, ...},
                        "all": {... unweighted averages over the tasks ...}},
     "versions":       {"<suite>|<task>|<k>": int},
     "config_tasks":   {"<suite>|<task>[|<k>]": {"hf_repo", "metric(s)": [{"metric_name",
                        "higher_is_better"}, ...], "effective_num_docs", ...}},
     "summary_tasks":  {"<suite>|<task>|<k>": {"hashes": {...}, "truncated", "non_truncated",
                        "padded", "non_padded", "effective_few_shots", ...}},
     "summary_general": {...}}

The Open LLM Leaderboard v1 (2023-2024) published the same layout, written by its
lighteval-based backend, with keys such as ``harness|arc:challenge|25``,
``harness|hendrycksTest-anatomy|5``, ``harness|truthfulqa:mc|0`` (metrics ``mc1``/``mc2``)
and ``config_tasks`` values that are plain strings ("LM Harness task"). lighteval up to 0.12
writes keys such as ``leaderboard|mmlu:anatomy|5``, ``lighteval|gsm8k|0`` or
``extended|lcb:codegeneration|0``; from 0.13 on the suite is gone: ``gsm8k|0``,
``anli:r1|0`` (``config_tasks`` and the details file names follow the same keys). Open LLM
Leaderboard v2 files are lm_eval 0.4 results files and are read by ``evalcore.ingest.lm_eval``.

What becomes what
-----------------
* One run per file. Model: ``config_general.model_name`` (else
  ``config_general.model_config.model_name``, else the file name). Harness ``lighteval``;
  harness version ``git <lighteval_sha>`` unless the sha is unknown (``"?"``).
* Task: the middle part of the key (``harness|arc:challenge|25`` -> ``arc:challenge``;
  ``anli:r1|0`` of lighteval >= 0.13 -> ``anli:r1``, so it pairs with an older run's
  ``lighteval|anli:r1|0``);
  the suite and the few-shot count go into the task protocol (``suite``, ``num_fewshot``),
  so runs that differ in few-shot count are flagged by the protocol diff. When two keys of
  one file share the middle part (``leaderboard|gsm8k|5`` and ``lighteval|gsm8k|0``) both
  keep their whole key as task name.
* ``all`` is not stored: it is lighteval's unweighted mean of every metric over the file's
  tasks (the 57 MMLU subjects count as 57 tasks), and its ``_stderr`` values are the mean of
  the tasks' standard errors, which is not the standard error of that mean. A warning says
  so. Nothing in these files is a group (``is_group`` is always False).
* Metrics: every key of a task entry, as written (``acc``, ``acc_norm``, ``mc2``,
  ``extractive_match``, ``math_pass@1:32_samples``, ...); ``<metric>_stderr`` is its
  standard error as reported (NaN when absent). Values are checked by
  ``lm_eval.summary_value`` (NaN kept as missing with a warning; infinities refused).
* n: ``config_tasks[...].effective_num_docs`` (the number of documents scored, after
  ``max_samples``) when it is a count; otherwise unknown. The counts in ``summary_tasks``
  (``non_truncated``, ``non_padded``, ...) are **not** used as n: they count model requests
  (one per answer option for multiple choice, one per sample for pass@k), not items. In
  Open LLM Leaderboard v1 files ``harness|arc:challenge|25`` has 4687 non-truncated
  requests for 1172 questions.
* Direction: ``config_tasks`` metric entries with ``higher_is_better`` are stored in the
  task protocol as ``higher_is_better`` ({metric: bool}, as for lm_eval 0.4; read by
  ``evalcore.metrics``). The primary metric of the Open LLM Leaderboard v1 tasks is the one
  the leaderboard ranked on (``OLL_V1_PRIMARY``); other tasks declare none.
* Per-item scores: from lighteval's ``details/<model>/<ts>/details_<suite>|<task>|<k>_<ts>
  .parquet`` files given with the results file (same timestamp in both names;
  ``DETAILS_NAME``), in the two layouts lighteval has written (<= 0.9: columns ``metrics``,
  ``example``, ``full_prompt``, ``gold``, ``predictions``; >= 0.10: ``metric``, ``doc``,
  ``model_response``). One score row per document and metric (``read_details``: item ids,
  texts). A details file without its results file is listed as skipped, not read.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    MAX_ABS_SCORE,
    Source,
    check_unique,
    concat_frames,
    count_or_none,
    dumps,
    is_number,
    load_json,
    scores_frame,
    summaries_frame,
    tasks_frame,
    texts_frame,
)
from evalcore.ingest.lm_eval import summary_value
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS, ParsedRun

RESULTS = "lighteval_results"
DETAILS = "lighteval_details"
HARNESS = "lighteval"
SOURCE_FORMAT = "lighteval"
AGGREGATE_KEY = "all"

# The metric the Open LLM Leaderboard v1 ranked each benchmark on (its "About" page:
# ARC acc_norm, HellaSwag acc_norm, MMLU acc, TruthfulQA mc2, Winogrande acc, GSM8K acc,
# DROP f1), keyed by the task name of the ``harness|<task>|<k>`` results keys.
OLL_V1_PRIMARY: dict[str, str] = {
    "arc:challenge": "acc_norm",
    "hellaswag": "acc_norm",
    "truthfulqa:mc": "mc2",
    "winogrande": "acc",
    "gsm8k": "acc",
    "drop": "f1",
}
OLL_V1_MMLU_PREFIX = "hendrycksTest-"

# config_general keys that describe the run (timings and job ids are left out)
RUN_KEYS = ("model_name", "model_sha", "model_dtype", "model_size", "lighteval_sha",
            "num_few_shot_default", "num_fewshot_seeds", "override_batch_size", "max_samples",
            "generation_parameters", "model_config")
# config_tasks keys that describe a task's measurement
TASK_KEYS = ("name", "prompt_function", "hf_repo", "hf_subset", "hf_revision", "hf_filter",
             "evaluation_splits", "few_shots_split", "few_shots_select", "generation_size",
             "stop_sequence", "num_samples", "original_num_docs", "must_remove_duplicate_docs",
             "version")
# summary_tasks keys kept in the task protocol (prompt hashes do not depend on the model's
# tokenizer; the input/continuation token hashes do and are left out)
SUMMARY_KEYS = ("effective_few_shots", "num_truncated_few_shots")
HASH_KEYS = ("hash_examples", "hash_full_prompts")
_FEWSHOT = re.compile(r"^\d+$")
_TS = r"\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}(?:\.\d+)?"
RESULTS_NAME = re.compile(rf"^results_(?P<ts>{_TS})\.json$")
# lighteval's per-item details: details_<suite>|<task>|<k>_<timestamp>.parquet
DETAILS_NAME = re.compile(rf"^details_(?P<task>[^|]+\|[^|]+(?:\|\d+)?)_(?P<ts>{_TS})\.parquet$")


def is_details_name(basename: str) -> bool:
    """Whether a file name is one of lighteval's per-item details files."""
    return DETAILS_NAME.match(basename) is not None


def details_for(results: Source, details: list[Source]) -> list[Source]:
    """The details files of the run of ``results``: same timestamp in the file name."""
    m = RESULTS_NAME.match(results.basename)
    if m is None:
        return []
    return [d for d in details if (dm := DETAILS_NAME.match(d.basename)) is not None
            and dm.group("ts") == m.group("ts")]




def is_results(obj: object) -> bool:
    """Whether a parsed JSON value is a lighteval / Open LLM Leaderboard v1 results object
    (a ``config_general`` object next to a ``results`` object)."""
    return (isinstance(obj, dict) and isinstance(obj.get("config_general"), dict)
            and isinstance(obj.get("results"), dict))


def split_key(key: str) -> tuple[str | None, str, int | None]:
    """(suite, task, few-shot count) of a results key: ``harness|arc:challenge|25`` ->
    ``("harness", "arc:challenge", 25)``; ``lighteval|aime24`` -> ``("lighteval", "aime24",
    None)``; lighteval >= 0.13 writes ``<task>|<k>`` without a suite (its task registry
    builds ``full_name = f"{task}|{num_fewshots}"`` and ignores a suite given on the command
    line): ``anli:r1|0`` -> ``(None, "anli:r1", 0)``, the same task as the older
    ``lighteval|anli:r1|0``. A key without ``|`` is its own task with no suite."""
    parts = str(key).split("|")
    if len(parts) < 2:
        return None, str(key), None
    if len(parts) == 2 and _FEWSHOT.match(parts[1]):
        return None, parts[0], int(parts[1])
    k = int(parts[2]) if len(parts) >= 3 and _FEWSHOT.match(parts[2]) else None
    return parts[0], parts[1], k


def _task_names(keys: list[str]) -> dict[str, str]:
    """Results key -> task name: the middle part, or the whole key when two keys share it."""
    middle = {k: split_key(k)[1] for k in keys}
    seen: dict[str, int] = {}
    for m in middle.values():
        seen[m] = seen.get(m, 0) + 1
    return {k: (m if seen[m] == 1 else k) for k, m in middle.items()}


def _task_config(config_tasks: dict[str, Any], key: str) -> dict[str, Any]:
    """The ``config_tasks`` entry of a results key (``suite|task|k`` or ``suite|task``), when
    it is an object (Open LLM Leaderboard v1 files hold the string "LM Harness task")."""
    suite, task, _k = split_key(key)
    for cand in (key, f"{suite}|{task}" if suite is not None else task):
        entry = config_tasks.get(cand)
        if isinstance(entry, dict):
            return entry
    return {}


def _metric_directions(tc: dict[str, Any]) -> dict[str, bool]:
    """{metric name: higher_is_better} from a task config's ``metrics`` (or ``metric``) list."""
    out: dict[str, bool] = {}
    entries = tc.get("metrics", tc.get("metric"))
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("metric_name"), str) \
                and isinstance(entry.get("higher_is_better"), bool):
            out[entry["metric_name"]] = entry["higher_is_better"]
        elif isinstance(entry, dict) and isinstance(entry.get("metric_name"), list):
            # one metric function reporting several names shares one direction
            if isinstance(entry.get("higher_is_better"), dict):
                for name, hib in entry["higher_is_better"].items():
                    if isinstance(hib, bool):
                        out[str(name)] = hib
    return out


_JUDGE_MODEL_ARG = re.compile(r"judge_model_name\W{0,4}([\w./:@-]+)")


def metric_judges(tc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """LLM-judge metrics of a task config (lighteval's ``llm_judge_*``/``*judge*`` metrics):
    {metric: {"model", "model_source", "template_sha256"}}; the model is the
    ``judge_model_name`` the entry names, else "unknown (in the metric)"; the hash is of the
    metric entry as logged (the judge's settings and prompt function)."""
    import hashlib
    import json
    out: dict[str, dict[str, str]] = {}
    entries = tc.get("metrics", tc.get("metric"))
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        text = json.dumps(entry, sort_keys=True, default=str)
        if "judge" not in text.lower():
            continue
        names = entry.get("metric_name")
        names = names if isinstance(names, list) else [names]
        found = _JUDGE_MODEL_ARG.search(text)
        record = {"model": found.group(1) if found else "unknown (in the metric)",
                  "model_source": "lighteval metric",
                  "template_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]}
        for metric_name in names:
            out[str(metric_name)] = dict(record)
    return out


def _primary_metric(suite: str | None, task: str) -> str | None:
    if suite != "harness":
        return None
    if task.startswith(OLL_V1_MMLU_PREFIX):
        return "acc"
    return OLL_V1_PRIMARY.get(task)


def task_protocol(obj: dict[str, Any], key: str) -> tuple[dict[str, Any], int | None]:
    """(task protocol, n) of one results key: suite, few-shot count, the task config's
    measurement settings, metric directions, prompt hashes; n = ``effective_num_docs``."""
    suite, task, k = split_key(key)
    proto: dict[str, Any] = {"task_key": key}
    if suite is not None:
        proto["suite"] = suite
    if k is not None:
        proto["num_fewshot"] = k
    config_tasks = obj.get("config_tasks") if isinstance(obj.get("config_tasks"), dict) else {}
    tc = _task_config(config_tasks, key)
    for name in TASK_KEYS:
        if tc.get(name) is not None:
            proto[name] = tc[name]
    if "original_num_docs" in proto and count_or_none(proto["original_num_docs"]) is None:
        del proto["original_num_docs"]      # -1: not recorded
    if k is None and isinstance(tc.get("num_fewshots"), int):
        proto["num_fewshot"] = tc["num_fewshots"]
    hib = _metric_directions(tc)
    if hib:
        proto["higher_is_better"] = hib
    judges = metric_judges(tc)
    if judges:
        proto["judges"] = judges
    versions = obj.get("versions") if isinstance(obj.get("versions"), dict) else {}
    if key in versions and "version" not in proto:
        proto["version"] = versions[key]
    summary = (obj.get("summary_tasks") or {}).get(key) if isinstance(
        obj.get("summary_tasks"), dict) else None
    if isinstance(summary, dict):
        for name in SUMMARY_KEYS:
            if summary.get(name) is not None:
                proto[name] = summary[name]
        hashes = summary.get("hashes")
        if isinstance(hashes, dict):
            for name in HASH_KEYS:
                if hashes.get(name) is not None:
                    proto[name] = hashes[name]
    primary = _primary_metric(suite, task)
    if primary is not None:
        proto["primary_metric"] = primary
    return proto, count_or_none(tc.get("effective_num_docs"))


def run_identity(obj: dict[str, Any], src: Source) -> tuple[str | None, str | None]:
    """(model name, harness version) of a results object."""
    cg = obj["config_general"]
    mc = cg.get("model_config") if isinstance(cg.get("model_config"), dict) else {}
    model = cg.get("model_name") or mc.get("model_name")
    sha = cg.get("lighteval_sha")
    version = f"git {sha}" if isinstance(sha, str) and sha.strip() not in ("", "?") else None
    return (str(model) if model else None), version


def run_protocol(obj: dict[str, Any]) -> dict[str, Any]:
    """Run-level settings compared in protocol diffs (timings and job ids left out)."""
    cg = obj["config_general"]
    proto: dict[str, Any] = {"harness": HARNESS}
    for name in RUN_KEYS:
        v = cg.get(name)
        if v is None:
            continue
        if name == "model_config" and isinstance(v, dict):
            v = {a: b for a, b in v.items() if a != "cache_dir" and b is not None}
        elif name == "generation_parameters" and isinstance(v, dict):
            v = {a: b for a, b in v.items() if b is not None}
        proto[name] = v
    suites = sorted({s for s in (split_key(k)[0] for k in obj["results"]) if s})
    if suites:
        proto["suites"] = suites
    return proto


def _entry_rows(src_name: str, task: str, key: str, entry: dict[str, Any], n: int | None,
                warnings: list[str]) -> list[dict[str, Any]]:
    """Summary rows of one task entry: each metric with its ``_stderr`` companion."""
    rows = []
    for metric, raw in entry.items():
        metric = str(metric)
        if metric.endswith("_stderr") and metric[:-len("_stderr")] in entry:
            continue
        where = f"results.{key}.{metric}"
        value = summary_value(raw, src_name, where, warnings)
        if value is None:
            continue
        se_raw = entry.get(f"{metric}_stderr")
        stderr, stderr_raw = None, None
        if se_raw is not None:
            stderr = summary_value(se_raw, src_name, f"{where}_stderr", warnings)
            if stderr is None and isinstance(se_raw, str):
                stderr_raw = se_raw
        rows.append({"task": task, "metric": metric, "value": value, "stderr": stderr,
                     "stderr_raw": stderr_raw, "n": n, "is_group": False})
    return rows


def parse_results(src: Source, details: list[Source] | tuple = ()) -> ParsedRun:
    """One ``ParsedRun`` from a lighteval / Open LLM Leaderboard v1 results file and the
    details files of the same run (``details_for``); see the module docstring."""
    obj = load_json(src)
    if not is_results(obj):
        raise IngestError(src.name, "top level", "a lighteval results object with "
                          "'config_general' and 'results' objects")
    for key, entry in obj["results"].items():
        if not isinstance(entry, dict):
            raise IngestError(src.name, f"results.{key}", "an object of metric values",
                              f"found {type(entry).__name__}")
    for name in ("config_tasks", "summary_tasks", "versions"):
        v = obj.get(name)
        if v is not None and not isinstance(v, dict):
            raise IngestError(src.name, name, "an object (or no such key)",
                              f"found {type(v).__name__}")
    warnings: list[str] = []
    keys = [k for k in obj["results"] if k != AGGREGATE_KEY]
    if AGGREGATE_KEY in obj["results"] and len(keys) > 1:
        warnings.append(
            f"{src.name}: results.all not stored: it is lighteval's unweighted mean over the "
            f"file's {len(keys)} task(s), and its _stderr values are the mean of the tasks' "
            f"standard errors, not the standard error of that mean")
    names = _task_names(keys)
    rows: list[dict[str, Any]] = []
    task_info: list[dict[str, Any]] = []
    unknown_n: list[str] = []
    for key in keys:
        task = names[key]
        proto, n = task_protocol(obj, key)
        if n is None:
            unknown_n.append(task)
        rows.extend(_entry_rows(src.name, task, key, obj["results"][key], n, warnings))
        task_info.append({"task": task, "n_choices": None, "protocol": proto})
    if unknown_n:
        warnings.append(
            f"{src.name}: number of items unknown for {len(unknown_n)} task(s) "
            f"({', '.join(unknown_n[:5])}{', ...' if len(unknown_n) > 5 else ''}): the file "
            f"gives no effective_num_docs (the request counts in summary_tasks are not item "
            f"counts)")
    model, version = run_identity(obj, src)
    name = model or re.sub(r"\.json$", "", src.basename)
    files = [src.source_file(RESULTS)]
    score_frames, text_frames = [], []
    for d in details:
        key = DETAILS_NAME.match(d.basename).group("task")
        task = names.get(key)
        if task is None:
            warnings.append(f"{d.name}: not read: its task {key!r} is not in {src.name}")
            continue
        got = read_details(d, task)
        warnings.extend(got.warnings)
        if got.scores is None:
            continue
        score_frames.append(got.scores)
        text_frames.append(got.texts)
        files.append(d.source_file(DETAILS))
    scores = concat_frames(score_frames, SCORE_COLUMNS)
    check_unique(scores, ", ".join(f.name for f in files[1:]) or src.name)
    return ParsedRun(
        name=name, model=model, source_format=SOURCE_FORMAT, harness=HARNESS,
        harness_version=version, protocol=run_protocol(obj), files=files, scores=scores,
        summaries=summaries_frame(rows), texts=concat_frames(text_frames, TEXT_COLUMNS),
        tasks=tasks_frame(task_info), source_key=None, warnings=warnings)


# ---------------------------------------------------------------------------------------
# Per-item details (details_<suite>|<task>|<k>_<ts>.parquet)
# ---------------------------------------------------------------------------------------
TEXT_LIMIT = 8000
# two layouts lighteval has written: <= 0.9 (flat columns) and >= 0.10 (doc / model_response)
DETAILS_V1 = ("metrics", "example")
DETAILS_V2 = ("metric", "doc")


@dataclass
class Details:
    """Item scores and texts of one details file (``scores``/``texts`` None when not read)."""

    scores: pd.DataFrame | None
    texts: pd.DataFrame | None
    warnings: list[str]


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _clip(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else "\n".join(str(v) for v in value) \
        if isinstance(value, list) else str(value)
    return text[:TEXT_LIMIT]


def _details_rows(src: Source) -> tuple[str | None, list[dict[str, Any]]]:
    """(layout, rows) of a details file, reading only the columns evalbars uses."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(str(src.path) if src.path is not None
                            else pa.BufferReader(src.read_bytes()))
        names = set(pf.schema_arrow.names)
        if set(DETAILS_V1) <= names:
            cols = [c for c in ("metrics", "example", "full_prompt", "gold", "predictions")
                    if c in names]
            return "v1", pf.read(columns=cols).to_pylist()
        if set(DETAILS_V2) <= names:
            cols = [c for c in ("metric", "doc", "model_response") if c in names]
            return "v2", pf.read(columns=cols).to_pylist()
        return None, []
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise IngestError(src.name, "parquet", "a lighteval details Parquet file",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None


def _row_fields(layout: str, row: dict[str, Any]) -> tuple[dict, str, str | None, str | None,
                                                           str | None, str | None]:
    """(metric values, item text, doc id, prompt, target, response) of one details row."""
    if layout == "v1":
        preds = row.get("predictions")
        return (row.get("metrics") or {}, str(row.get("example") or ""), None,
                row.get("full_prompt") or row.get("example"), _clip(row.get("gold")),
                preds[0] if isinstance(preds, list) and preds else None)
    doc = row.get("doc") or {}
    resp = row.get("model_response") or {}
    choices, gold = doc.get("choices"), doc.get("gold_index")
    target = choices[gold] if isinstance(choices, list) and isinstance(gold, int) \
        and 0 <= gold < len(choices) else None
    text = resp.get("text")
    doc_id = doc.get("id")
    return (row.get("metric") or {}, str(doc.get("query") or ""),
            doc_id if isinstance(doc_id, str) and doc_id else None, doc.get("query"), target,
            text[0] if isinstance(text, list) and text else None)


def _collect(fields: list[tuple], use_ids: bool) -> tuple[dict, dict, list[str], bool]:
    """(metric -> [(item id, value, row)], metric -> first bad value, item id per row,
    whether an id repeated within a metric)."""
    per_metric: dict[str, list[tuple[str, float, int]]] = {}
    bad: dict[str, str] = {}
    seen: dict[tuple[str, str], int] = {}
    item_of_row: list[str] = []
    repeated = False
    for i, (metrics, text, doc_id, *_rest) in enumerate(fields):
        base = doc_id if use_ids else _short_hash(text)
        item_of_row.append(base)
        for name, v in (metrics.items() if isinstance(metrics, dict) else []):
            if v is None:
                continue
            name = str(name)
            if isinstance(v, bool):
                v = float(v)
            if not is_number(v) or not math.isfinite(v) or abs(v) > MAX_ABS_SCORE:
                bad.setdefault(name, f"row {i}: {dumps(v)[:40]}")
                continue
            k = seen.get((name, base), 0) + 1
            seen[(name, base)] = k
            repeated = repeated or k > 1
            per_metric.setdefault(name, []).append((base if k == 1 else f"{base}#{k}",
                                                    float(v), i))
    return per_metric, bad, item_of_row, repeated


def read_details(src: Source, task: str) -> Details:
    """Item scores (one row per document and metric) and texts of a details file.

    Item id: the document's ``id`` (lighteval >= 0.10) when every row has one; otherwise the
    first 16 hex digits of the sha256 of the document's query text (``example``), with
    ``#2``, ``#3`` ... for repeats of one text within a metric, so runs of one task pair on
    the same questions. A metric with a value that is not a finite number (a list, NaN, a
    string) in any row gets no item scores (a warning says so); its summary stays.
    """
    layout, rows = _details_rows(src)
    if layout is None:
        return Details(None, None, [f"{src.name}: not read: not a details layout evalbars knows "
                                    f"(columns metrics+example or metric+doc)"])
    fields = [_row_fields(layout, r) for r in rows]
    use_ids = bool(fields) and all(f[2] is not None for f in fields)
    per_metric, bad, item_of_row, repeated = _collect(fields, use_ids)
    if use_ids and repeated:            # ids repeat within a metric: fall back to the text
        use_ids = False
        per_metric, bad, item_of_row, _ = _collect(fields, use_ids)
    warnings = [f"{src.name}: task {task}: per-item metric {m!r} is not a finite number at "
                f"{where}; no item scores for it (its reported summary stays)"
                for m, where in sorted(bad.items())]
    frames = []
    for name, vals in per_metric.items():
        if name in bad:
            continue
        items = [it for it, _v, _i in vals]
        rows_i = [i for _it, _v, i in vals]
        prompts = [fields[i][3] for i in rows_i]
        frames.append(scores_frame(
            task, name, items, 0, [v for _it, v, _i in vals],
            item_hash=[_short_hash(fields[i][1]) for i in rows_i],
            prompt_hash=[_short_hash(p) if isinstance(p, str) else None for p in prompts]))
    scores = concat_frames(frames, SCORE_COLUMNS)
    check_unique(scores, src.name)
    first: dict[str, int] = {}
    for i, item in enumerate(item_of_row):
        first.setdefault(item, i)
    idx = list(first.values())
    texts = texts_frame(task, list(first), 0, [_clip(fields[i][3]) for i in idx],
                        [_clip(fields[i][4]) for i in idx], [_clip(fields[i][5]) for i in idx])
    return Details(scores, texts, warnings)
