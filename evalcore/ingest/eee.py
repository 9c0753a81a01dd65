"""Every Eval Ever (EEE) files: the EvalEval coalition's shared JSON schema for results.

Files
-----
An **aggregate** file (``eval.schema.json``; one per model and evaluation run, named
``<uuid>.json`` in the datastore's ``data/<benchmark>/<developer>/<model>/`` folders)::

    {"schema_version": "0.2.2", "evaluation_id", "retrieved_timestamp",
     "source_metadata": {"source_name", "source_type", "source_organization_name", ...},
     "eval_library": {"name", "version"},            (from 0.2.1 on)
     "model_info": {"name", "id", "developer", "inference_platform", "additional_details"},
     "evaluation_results": [{"evaluation_name", "evaluation_result_id", "source_data",
         "metric_config": {"metric_name", "lower_is_better", "score_type", "min_score",
                           "max_score", "level_names", ...},
         "score_details": {"score", "details", "uncertainty": {"standard_error": {"value"},
                           "confidence_interval": {"lower", "upper", "confidence_level"},
                           "num_samples", ...}},
         "generation_config": {"generation_args": {...}, "additional_details": {...}}}, ...],
     "detailed_evaluation_results": {"format": "jsonl", "file_path", "total_rows", ...}}

and its **instance-level companion** (``instance_level_eval.schema.json``; the official
converters write ``<uuid>_samples.jsonl`` beside ``<uuid>.json``): one line per sample with
``evaluation_name``, ``evaluation_result_id``, ``sample_id``, ``sample_hash``, ``input``
(``raw``, ``reference``), ``output`` (``raw``) or ``messages`` (multi-turn and agentic
samples), ``evaluation`` (``score``, ``is_correct``) and string ``metadata``.

Schema versions ``SCHEMA_VERSIONS`` are read (0.2.0 to 0.2.2 as in the public datastore,
0.2.3 and 0.3.0 as the converters of ``every-eval-ever`` 0.3.0 write them); any other
version is refused by name.

What becomes what
-----------------
* One run per aggregate file. Model: ``model_info.id`` (else ``name``); harness and version:
  ``eval_library`` (0.2.0 files have none: ``source_metadata.source_name``). Run protocol:
  ``source_metadata``, ``eval_library``, ``model_info``'s platform, engine and details, and
  the schema version, so the protocol diff flags two runs from different sources.
* Task: ``evaluation_name``. Metric: ``metric_config.metric_name`` (else ``metric_id``, else
  ``evaluation_result_id``, else ``"score"``); two results of one task under one metric
  name keep their ``evaluation_result_id`` (or position) in brackets.
* Task protocol: ``source_data``, ``generation_config`` and each metric's ``metric_config``
  (under ``eee``), plus ``higher_is_better`` ({metric: not lower_is_better}; read by
  ``evalcore.metrics`` as a harness declaration) and ``score_range`` ({metric: [min, max]}).
  A metric with ``score_type: "levels"`` is named ``<metric> (levels)``, declares no
  direction and has no item scores: its levels are categories, so it is kept as the reported
  value only and never ranked or averaged.
* Reported values: ``score_details.score``; stderr: ``uncertainty.standard_error.value``;
  else, from a symmetric ``confidence_interval``, its half-width / z at its
  ``confidence_level`` (95% when the file states none, said in a warning). An interval
  written as a ``[-h, +h]`` half-width pair (the public Global MMLU Lite files) is read as
  score +- h. n: ``uncertainty.num_samples``.
* Item scores: ``evaluation.score`` of each companion line, matched to its result by
  ``evaluation_result_id`` (else by ``evaluation_name``), item id ``sample_id``; a sample id
  seen again for the same result is the next answer (epoch). Item hash: the lm_eval
  ``doc_hash`` the lm_eval converter keeps in ``metadata``, else ``sample_hash``; prompt hash:
  ``metadata.prompt_hash``. Texts: ``input.raw``, ``input.reference`` and ``output.raw`` or
  the last assistant message of ``messages``.
* The companion is the file ``detailed_evaluation_results.file_path`` names, or
  ``<uuid>_samples.jsonl`` / ``<uuid>.jsonl``, in the aggregate's folder (on disk, in an
  upload or in a zip). When it is absent the aggregate's values are read and a warning says
  so. A samples file that no aggregate claims is read as a tidy table (a column map names its
  columns), as before.
* Files evalbars wrote (``evalcore.export.eee``; ``eval_library.additional_details`` holds
  ``evalbars_version``) carry the run's own name, protocols and harness-reported values in
  string fields; they are read back from there, so a run survives the round trip. Their
  ``uncertainty`` is evalbars' own interval and is not read as a reported stderr.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections import Counter
from statistics import NormalDist
from dataclasses import dataclass, field
from typing import Any

from evalcore.errors import IngestError
from evalcore.ingest._common import (Source, check_size, check_unique, concat_frames, count_or_none,
                                     is_number, load_json, loads_line, scores_frame,
                                     summaries_frame, tasks_frame, text_of, texts_frame)
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS, ParsedRun

AGGREGATE = "eee_aggregate_json"
SAMPLES = "eee_samples_jsonl"
FORMATS = (AGGREGATE, SAMPLES)
SOURCE_FORMAT = "eee"
SCHEMA_VERSIONS = ("0.2.0", "0.2.1", "0.2.2", "0.2.3", "0.3.0")
# keys of the string maps an evalbars export writes (``evalcore.export.eee``)
MARK = "evalbars_version"
RUN_NAME = "evalbars_run_name"
RUN_PROTOCOL = "evalbars_run_protocol"
HARNESS = "evalbars_harness"
HARNESS_VERSION = "evalbars_harness_version"
TASK_PROTOCOL = "evalbars_task_protocol"
N_CHOICES = "evalbars_n_choices"
METRIC = "evalbars_metric"
REPORTED_VALUE = "evalbars_reported_value"
REPORTED_STDERR = "evalbars_reported_stderr"
REPORTED_STDERR_RAW = "evalbars_reported_stderr_raw"
REPORTED_N = "evalbars_reported_n"
IS_GROUP = "evalbars_is_group"
ITEM_ANSWER = "evalbars_answer_idx"
ITEM_CLUSTER = "evalbars_cluster"
ITEM_HASH = "evalbars_item_hash"
ITEM_PROMPT_HASH = "evalbars_prompt_hash"
DEFAULT_CONFIDENCE = 0.95


def is_aggregate(obj: Any) -> bool:
    """An EEE aggregate object: a schema version and a list of evaluation results."""
    return (isinstance(obj, dict) and "schema_version" in obj
            and isinstance(obj.get("evaluation_results"), list)
            and ("model_info" in obj or "evaluation_id" in obj))


def is_instance(obj: Any) -> bool:
    """One line of an EEE instance-level file."""
    return (isinstance(obj, dict) and "schema_version" in obj and "sample_id" in obj
            and isinstance(obj.get("evaluation"), dict))


def companion_names(obj: dict[str, Any], aggregate_name: str) -> list[str]:
    """Base names the aggregate's instance-level companion may have, most specific first:
    the one ``detailed_evaluation_results.file_path`` names, ``<uuid>_samples.jsonl`` and
    ``<uuid>.jsonl``. Empty when the aggregate names no companion."""
    detail = obj.get("detailed_evaluation_results")
    if not isinstance(detail, dict):
        return []
    stem = posixpath.splitext(aggregate_name)[0]
    names = []
    path = detail.get("file_path")
    if isinstance(path, str) and path.strip():
        names.append(posixpath.basename(path.strip().replace("\\", "/")))
    names += [f"{stem}_samples.jsonl", f"{stem}.jsonl"]
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------------------
# The aggregate file
# ---------------------------------------------------------------------------------------
@dataclass
class _Result:
    """One entry of ``evaluation_results`` as evalbars names it."""

    index: int
    task: str
    metric: str
    result_id: str | None
    levels: bool
    entry: dict[str, Any]


@dataclass
class _Aggregate:
    src: Source
    obj: dict[str, Any]
    ours: bool                                # written by evalbars
    results: list[_Result]
    warnings: list[str] = field(default_factory=list)
    intervals: dict[str, list[str]] = field(default_factory=dict)   # how CIs were read


def _field(src: Source, where: str, expected: str, found: Any) -> IngestError:
    return IngestError(src.name, where, expected, f"found {_short(found)}")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _details(obj: Any) -> dict[str, Any]:
    d = obj.get("additional_details") if isinstance(obj, dict) else None
    return d if isinstance(d, dict) else {}


def check_version(src: Source, obj: dict[str, Any], where: str = "schema_version") -> str:
    """The file's schema version, or an ``IngestError`` naming an unknown one."""
    version = obj.get("schema_version")
    if not isinstance(version, str) or version.strip() not in SCHEMA_VERSIONS:
        raise IngestError(src.name, where, "an Every Eval Ever schema version evalbars reads "
                          f"({', '.join(SCHEMA_VERSIONS)})",
                          f"found {_short(version)}: an unknown schema version")
    return version.strip()


def _read_aggregate(src: Source) -> _Aggregate:
    obj = load_json(src, what="an Every Eval Ever aggregate JSON document")
    if not is_aggregate(obj):
        raise IngestError(src.name, "top level", "an Every Eval Ever aggregate object with "
                          "'schema_version', 'model_info' and 'evaluation_results'")
    check_version(src, obj)
    model = obj.get("model_info")
    if not isinstance(model, dict) or not (isinstance(model.get("id"), str)
                                           or isinstance(model.get("name"), str)):
        raise _field(src, "model_info", "an object with the model's 'id' or 'name'", model)
    ours = MARK in _details(obj.get("eval_library"))
    results = [_result(src, i, entry, ours) for i, entry in enumerate(obj["evaluation_results"])]
    if not results:
        raise IngestError(src.name, "evaluation_results", "at least one evaluation result",
                          "an empty list")
    seen: Counter = Counter()
    for r in results:
        seen[(r.task, r.metric)] += 1
        if seen[(r.task, r.metric)] > 1:      # one task, two results under one metric name
            r.metric = f"{r.metric} [{r.result_id or r.index}]"
    return _Aggregate(src, obj, ours, results)


def _result(src: Source, i: int, entry: Any, ours: bool) -> _Result:
    """One ``evaluation_results`` entry, checked, with the task and metric it becomes."""
    where = f"evaluation_results[{i}]"
    if not isinstance(entry, dict):
        raise _field(src, where, "an evaluation result object", entry)
    task = entry.get("evaluation_name")
    if not isinstance(task, str) or not task.strip():
        raise _field(src, f"{where}.evaluation_name", "the evaluation's name", task)
    mc = entry.get("metric_config")
    if not isinstance(mc, dict):
        raise _field(src, f"{where}.metric_config", "an object", mc)
    sd = entry.get("score_details")
    if not isinstance(sd, dict) or not _finite(sd.get("score")):
        raise _field(src, f"{where}.score_details.score", "a finite number",
                     sd.get("score") if isinstance(sd, dict) else sd)
    rid = entry.get("evaluation_result_id")
    rid = str(rid) if isinstance(rid, (str, int)) and str(rid) else None
    levels = mc.get("score_type") == "levels"
    metric = _metric_name(entry, mc, rid, ours)
    if levels and not ours:
        # a category, not a number: the name says so and matches no metric whose direction
        # evalbars knows, so it is never ranked or averaged
        metric = f"{metric} (levels)"
    return _Result(i, task, metric, rid, levels, entry)


def _metric_name(entry: dict[str, Any], mc: dict[str, Any], rid: str | None,
                 ours: bool) -> str:
    mine = (entry.get("score_details") or {}).get("details")
    if ours and isinstance(mine, dict) and isinstance(mine.get(METRIC), str):
        return mine[METRIC]
    for key in ("metric_name", "metric_id"):
        if isinstance(mc.get(key), str) and mc[key].strip():
            return mc[key].strip()
    return rid or "score"


def _finite(v: Any) -> bool:
    return is_number(v) and math.isfinite(float(v))


# ---------------------------------------------------------------------------------------
# Reported values and their uncertainty
# ---------------------------------------------------------------------------------------
def _summary_row(agg: _Aggregate, r: _Result) -> dict[str, Any]:
    sd = r.entry["score_details"]
    value = float(sd["score"])
    unc = sd.get("uncertainty") if isinstance(sd.get("uncertainty"), dict) else {}
    row = {"task": r.task, "metric": r.metric, "value": value, "stderr": math.nan,
           "stderr_raw": None, "n": count_or_none(unc.get("num_samples")), "is_group": False}
    if agg.ours:
        return _our_summary(row, sd.get("details"))
    se = unc.get("standard_error")
    if isinstance(se, dict) and _finite(se.get("value")):
        row["stderr"] = float(se["value"])
    elif isinstance(unc.get("confidence_interval"), dict):
        row["stderr"] = _stderr_from_interval(agg, r, value, unc["confidence_interval"])
    return row


def _our_summary(row: dict[str, Any], details: Any) -> dict[str, Any]:
    """The harness-reported value an evalbars export kept in ``score_details.details``."""
    d = details if isinstance(details, dict) else {}
    row["value"] = _float_text(d.get(REPORTED_VALUE), row["value"])
    row["stderr"] = _float_text(d.get(REPORTED_STDERR), math.nan)
    raw = d.get(REPORTED_STDERR_RAW)
    row["stderr_raw"] = raw if isinstance(raw, str) and raw else None
    row["n"] = count_or_none(_float_text(d.get(REPORTED_N), math.nan))
    row["is_group"] = d.get(IS_GROUP) == "true"
    return row


def _float_text(text: Any, default: float) -> float:
    if not isinstance(text, str) or not text:
        return default
    try:
        return float(text)
    except ValueError:
        return default


def _stderr_from_interval(agg: _Aggregate, r: _Result, score: float,
                          ci: dict[str, Any]) -> float:
    """SE = half-width / z_{(1+c)/2} of a symmetric reported interval (NaN otherwise); how
    each interval was read is collected in ``agg.intervals`` for one warning per file."""
    lo, hi = ci.get("lower"), ci.get("upper")
    if not (_finite(lo) and _finite(hi)):
        return math.nan
    lo, hi = float(lo), float(hi)
    if not lo <= score <= hi and math.isclose(lo, -hi, abs_tol=1e-12) and hi > 0:
        half = hi                      # written as the pair (-h, +h)
        agg.intervals.setdefault("pair", []).append(r.task)
    elif lo <= score <= hi and math.isclose(score - lo, hi - score, rel_tol=1e-3, abs_tol=1e-9):
        half = (hi - lo) / 2
    else:
        agg.intervals.setdefault("asymmetric", []).append(r.task)
        return math.nan
    conf = ci.get("confidence_level")
    if _finite(conf) and 0 < float(conf) < 1:
        level = float(conf)
    elif _finite(conf) and 1 < float(conf) < 100:
        level = float(conf) / 100
    else:
        level = DEFAULT_CONFIDENCE
        agg.intervals.setdefault("no level", []).append(r.task)
    return half / NormalDist().inv_cdf(0.5 + level / 2)


def _interval_warnings(agg: _Aggregate) -> None:
    """One warning per way the file's confidence intervals were read."""
    texts = {
        "pair": "confidence interval(s) written as [-h, +h] are read as score +- h",
        "no level": "confidence interval(s) state no confidence level: read as 95% "
                    "(reported stderr = half-width / 1.96)",
        "asymmetric": "reported interval(s) are not symmetric about the score: no standard "
                      "error is derived from them",
    }
    for kind, text in texts.items():
        tasks = agg.intervals.get(kind)
        if tasks:
            shown = ", ".join(tasks[:4]) + (f" and {len(tasks) - 4} more" if len(tasks) > 4
                                            else "")
            agg.warnings.append(f"{agg.src.name}: {len(tasks)} {text} ({shown})")


# ---------------------------------------------------------------------------------------
# Protocols
# ---------------------------------------------------------------------------------------
def _run_protocol(agg: _Aggregate, version: str) -> dict[str, Any]:
    obj = agg.obj
    if agg.ours:
        text = _details(obj.get("eval_library")).get(RUN_PROTOCOL)
        return _json_object(agg.src, text, "eval_library.additional_details."
                            + RUN_PROTOCOL)
    model = obj["model_info"]
    proto: dict[str, Any] = {"eee_schema_version": version}
    for key in ("source_metadata", "eval_library"):
        if isinstance(obj.get(key), dict):
            proto[key] = obj[key]
    info = {k: model[k] for k in ("developer", "inference_platform", "inference_engine",
                                  "additional_details") if k in model}
    if info:
        proto["model_info"] = info
    return proto


def _json_object(src: Source, text: Any, where: str) -> dict[str, Any]:
    if not isinstance(text, str):
        raise _field(src, where, "the JSON text of an object (written by evalbars)", text)
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise IngestError(src.name, where, "the JSON text of an object (written by evalbars)",
                          str(exc)[:80]) from None
    if not isinstance(value, dict):
        raise _field(src, where, "the JSON text of an object (written by evalbars)", value)
    return value


def _task_rows(agg: _Aggregate) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for r in agg.results:
        e = r.entry
        if agg.ours:
            if r.task not in rows:
                extra = _details(e.get("generation_config"))
                rows[r.task] = {"task": r.task,
                                "n_choices": count_or_none(_float_text(extra.get(N_CHOICES),
                                                                       math.nan)),
                                "protocol": _json_object(
                                    agg.src, extra.get(TASK_PROTOCOL),
                                    f"evaluation_results[{r.index}].generation_config."
                                    f"additional_details.{TASK_PROTOCOL}")}
            continue
        row = rows.setdefault(r.task, {"task": r.task, "n_choices": None,
                                       "protocol": {"eee": {"metrics": {}}}})
        proto = row["protocol"]
        for key in ("source_data", "generation_config"):
            if isinstance(e.get(key), dict) and key not in proto["eee"]:
                proto["eee"][key] = e[key]
        mc = e["metric_config"]
        proto["eee"]["metrics"][r.metric] = mc
        if isinstance(mc.get("lower_is_better"), bool) and not r.levels:
            proto.setdefault("higher_is_better", {})[r.metric] = not mc["lower_is_better"]
        lo, hi = _bound(mc.get("min_score")), _bound(mc.get("max_score"))
        if lo is not None and hi is not None and not r.levels:
            proto.setdefault("score_range", {})[r.metric] = [lo, hi]
    return list(rows.values())


def _bound(v: Any) -> float | None:
    if v == "Infinity":
        return math.inf
    if v == "-Infinity":
        return -math.inf
    return float(v) if _finite(v) else None


# ---------------------------------------------------------------------------------------
# The instance-level companion
# ---------------------------------------------------------------------------------------
@dataclass
class _Items:
    task: list[str] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    item: list[str] = field(default_factory=list)
    answer: list[int] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    cluster: list[str | None] = field(default_factory=list)
    item_hash: list[str | None] = field(default_factory=list)
    prompt_hash: list[str | None] = field(default_factory=list)
    texts: dict[tuple[str, str, int], tuple[str | None, str | None, str | None]] = \
        field(default_factory=dict)
    lines: int = 0                     # non-blank lines read, scored or not


def _result_finder(agg: _Aggregate):
    """(evaluation_result_id, evaluation_name) of a sample -> the result it scores."""
    by_id = {r.result_id: r for r in agg.results if r.result_id is not None}
    by_task: dict[str, list[_Result]] = {}
    for r in agg.results:
        by_task.setdefault(r.task, []).append(r)
    ambiguous: set[str] = set()

    def find(rid: Any, task: str) -> _Result | str:
        if isinstance(rid, (str, int)) and str(rid) in by_id and by_id[str(rid)].task == task:
            return by_id[str(rid)]
        rs = [r for r in by_task.get(task, []) if not r.levels] or by_task.get(task, [])
        if not rs:
            return task                   # a task the aggregate does not list
        if len(rs) > 1 and task not in ambiguous:
            ambiguous.add(task)
            agg.warnings.append(f"{agg.src.name}: the samples of {task!r} name no "
                                f"evaluation_result_id; their scores are read as "
                                f"{rs[0].metric!r}, the first of its {len(rs)} metrics")
        return rs[0]

    return find


def _read_samples(agg: _Aggregate, comp: Source) -> _Items:
    items = _Items()
    find = _result_finder(agg)
    answers: Counter = Counter()
    skipped_levels: set[str] = set()
    with comp.open() as fh:
        for k, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                row = loads_line(raw)
            except ValueError as exc:
                raise IngestError(comp.name, f"line {k}", "one JSON object per line "
                                  "(Every Eval Ever instance-level JSONL)", str(exc)[:80]) from None
            if not is_instance(row):
                raise IngestError(comp.name, f"line {k}", "an instance-level record with "
                                  "'schema_version', 'sample_id' and 'evaluation'")
            check_version(comp, row, f"line {k}, field schema_version")
            items.lines += 1
            _add_sample(agg, comp, k, row, find, answers, skipped_levels, items)
    for task in sorted(skipped_levels):
        agg.warnings.append(f"{comp.name}: item scores of {task!r} not stored: its metric "
                            f"is level-based (score_type 'levels'), kept as the reported "
                            f"value only")
    return items


def _add_sample(agg: _Aggregate, comp: Source, k: int, row: dict[str, Any], find,
                answers: Counter, skipped_levels: set[str], items: _Items) -> None:
    task = row.get("evaluation_name")
    if not isinstance(task, str) or not task:
        raise _field(comp, f"line {k}, field evaluation_name", "the evaluation's name", task)
    sid = row.get("sample_id")
    if not isinstance(sid, (str, int)) or isinstance(sid, bool) or str(sid) == "":
        raise _field(comp, f"line {k}, field sample_id", "the sample's id (a string)", sid)
    score = row["evaluation"].get("score")
    if not _finite(score):
        raise _field(comp, f"line {k}, field evaluation.score", "a finite number", score)
    res = find(row.get("evaluation_result_id"), task)
    if isinstance(res, _Result) and res.levels:
        skipped_levels.add(task)
        return
    metric = res.metric if isinstance(res, _Result) else "score"
    meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    sid = str(sid)
    answer = answers[(task, metric, sid)]
    if agg.ours and meta.get(ITEM_ANSWER) is not None:
        answer = int(_float_text(meta.get(ITEM_ANSWER), answer))
    answers[(task, metric, sid)] += 1
    items.task.append(task)
    items.metric.append(metric)
    items.item.append(sid)
    items.answer.append(answer)
    items.score.append(float(score))
    items.cluster.append(_text_or_none(meta.get(ITEM_CLUSTER)))
    items.item_hash.append(_text_or_none(meta.get(ITEM_HASH) or meta.get("doc_hash")
                                         or row.get("sample_hash")))
    items.prompt_hash.append(_text_or_none(meta.get(ITEM_PROMPT_HASH) or meta.get("prompt_hash")))
    key = (task, sid, answer)
    if key not in items.texts:
        items.texts[key] = _texts_of(row)


def _text_or_none(v: Any) -> str | None:
    return str(v) if isinstance(v, (str, int)) and str(v) != "" else None


def _texts_of(row: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(prompt, target, response) of one sample: ``input.raw``, ``input.reference`` and
    ``output.raw`` or, for multi-turn and agentic samples, the last assistant message."""
    inp = row.get("input") if isinstance(row.get("input"), dict) else {}
    prompt = text_of(inp.get("raw")) or None
    target = text_of(inp.get("reference")) or None
    out = row.get("output")
    response = text_of(out.get("raw")) if isinstance(out, dict) else None
    if response is None and isinstance(row.get("messages"), list):
        for msg in reversed(row["messages"]):
            if isinstance(msg, dict) and msg.get("role") == "assistant":
                response = text_of(msg.get("content"))
                break
    return prompt, target, response or None


# ---------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------
def parse_aggregate(src: Source, beside: dict[str, Source]) -> tuple[ParsedRun, Source | None]:
    """One run from an aggregate file and its instance-level companion, looked up by name
    among ``beside`` (base name -> instance-level source in the aggregate's folder); returns
    the run and the companion read (None: absent, said in a warning)."""
    agg = _read_aggregate(src)
    obj = agg.obj
    version = check_version(src, obj)
    names = companion_names(obj, src.basename)
    companion = next((beside[n] for n in names if n in beside), None) or _on_disk(src, names)
    model_info = obj["model_info"]
    model = model_info.get("id") if isinstance(model_info.get("id"), str) else model_info["name"]
    library = obj.get("eval_library") if isinstance(obj.get("eval_library"), dict) else {}
    lib_details = _details(library)
    meta = obj.get("source_metadata") if isinstance(obj.get("source_metadata"), dict) else {}
    source_name = meta.get("source_name") if isinstance(meta.get("source_name"), str) else None
    if agg.ours:
        model = _details(model_info).get("evalbars_model") or model
        name = lib_details.get(RUN_NAME) or model
        harness = lib_details.get(HARNESS) or None
        harness_version = lib_details.get(HARNESS_VERSION) or None
    else:
        name = f"{model} ({source_name})" if source_name else model
        harness = library.get("name") if isinstance(library.get("name"), str) else source_name
        harness_version = library.get("version") if isinstance(library.get("version"), str) \
            else None
    summaries = summaries_frame([_summary_row(agg, r) for r in agg.results])
    _interval_warnings(agg)
    tasks = tasks_frame(_task_rows(agg))
    files = [src.source_file(AGGREGATE)]
    scores, texts = _item_frames(agg, companion, files)
    if names and companion is None:
        agg.warnings.append(f"{src.name}: its instance-level file ({names[0]}) is not beside "
                            f"it: the reported values are read, without item scores or "
                            f"intervals from items")
    run = ParsedRun(name=str(name), model=str(model), source_format=SOURCE_FORMAT,
                    harness=harness, harness_version=harness_version,
                    protocol=_run_protocol(agg, version), files=files, scores=scores,
                    summaries=summaries, texts=texts, tasks=tasks, warnings=agg.warnings)
    return run, companion


def _on_disk(src: Source, names: list[str]) -> Source | None:
    """The companion beside an aggregate given as one file on disk (not among the inputs)."""
    if src.path is None:
        return None
    for name in names:
        path = src.path.parent / name
        if path.is_file():
            check_size(str(path), path.stat().st_size)
            return Source(name=str(path), path=path, folder=src.folder)
    return None


def _item_frames(agg: _Aggregate, companion: Source | None, files: list):
    if companion is None:
        return concat_frames([], SCORE_COLUMNS), concat_frames([], TEXT_COLUMNS)
    items = _read_samples(agg, companion)
    files.append(companion.source_file(SAMPLES))
    _check_declared(agg, companion, items.lines)
    scores = scores_frame(items.task, items.metric, items.item, items.answer, items.score,
                          items.cluster, items.item_hash, items.prompt_hash)
    check_unique(scores, companion.name)
    keys = list(items.texts)
    texts = texts_frame([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
                        [items.texts[k][0] for k in keys], [items.texts[k][1] for k in keys],
                        [items.texts[k][2] for k in keys])
    return scores, texts


def _check_declared(agg: _Aggregate, companion: Source, n_lines: int) -> None:
    """Warnings where the companion differs from what the aggregate declares of it."""
    detail = agg.obj.get("detailed_evaluation_results") or {}
    total = detail.get("total_rows") if isinstance(detail, dict) else None
    if isinstance(total, int) and not isinstance(total, bool) and total != n_lines:
        agg.warnings.append(f"{companion.name}: the aggregate declares {total} rows, the file "
                            f"holds {n_lines} lines")
    algo = detail.get("hash_algorithm") if isinstance(detail, dict) else None
    checksum = detail.get("checksum") if isinstance(detail, dict) else None
    if algo == "sha256" and isinstance(checksum, str) and checksum != companion.sha256():
        agg.warnings.append(f"{companion.name}: its sha256 differs from the checksum the "
                            f"aggregate declares (the file was changed after the aggregate "
                            f"was written)")
