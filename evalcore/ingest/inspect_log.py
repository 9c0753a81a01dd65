"""inspect_ai logs: ``.eval`` zips and ``.json`` logs (schema versions 1 and 2).

``.eval`` members read: ``header.json`` (eval spec, plan, results, status; absent while a
log is still being written, then ``_journal/start.json`` stands in), ``samples/*.json``
(one per sample and epoch), else ``summaries.json`` / ``_journal/summaries/*.json`` when a
log has no sample members. ``reductions.json`` is not needed: evalbars keeps every epoch.
Members may be deflate or zstandard (method 93) compressed (see ``_zip``).

Scores
------
* One score row per (scorer, sample, epoch): ``item_id`` = ``str(sample id)``,
  ``answer_idx`` = ``epoch - 1`` (several epochs = several answers per item), ``metric`` =
  the scorer name; a dict-valued score gives one metric per key, ``"scorer/key"``.
* Values are converted like inspect's ``value_to_float``: numbers and bools as floats,
  ``C`` = 1, ``P`` = 0.5, ``I`` = ``N`` = 0, ``"yes"``/``"true"`` = 1, ``"no"``/``"false"`` = 0,
  numeric strings as numbers. Where inspect would log a warning and use 0, evalbars skips
  that scorer for that sample and says so in a warning (never a silent 0). NaN/inf values
  raise an ``IngestError``. Samples with an ``error`` are skipped (counted in a warning).
* v1 logs: per-sample ``score`` (singular) under ``results.scorer.name``.
* ``item_hash`` = sha256 of the sample's input, choices and target (detects a changed
  dataset between runs).
* Clusters: ``cluster_key`` names a sample-metadata field; with None an obvious grouping
  key is picked (``pick_cluster_key``), recorded in ``protocol["cluster_key"]`` with the
  other candidates, and announced in a warning; it is applied only with at least 20
  clusters and more than one item per cluster on average (``auto_cluster_rule``), else
  recorded as ``protocol["cluster_key_offered"]`` with a warning saying why.

Summaries: ``results.scores[]`` metrics as reported: the ``accuracy`` or ``mean`` metric
(else the only metric) is the row ``metric = scorer`` (matching the item scores) with
``stderr`` from the ``stderr`` metric; other metrics get rows ``"scorer:metric"``. ``n`` = distinct sample ids scored (else
``scored_samples`` or ``completed_samples / epochs``).

Trimmed logs: ``results.total_samples`` counts sample records (samples x epochs) of the whole
run. A log that holds samples of fewer distinct ids than ``total_samples / epochs`` was cut
after inspect wrote it (test fixtures and shared excerpts keep one sample: every_eval_ever's
``data_intercode_ctf_local_path.json`` has ``total_samples`` 79 and one sample). Its reported
values describe all the samples, its item scores the few kept: the warning says "trimmed
upstream: the log holds 1 of 79 samples", the summaries' ``n`` is the results' count
(``scored_samples``, else ``completed_samples / epochs``, else ``total_samples / epochs``),
and ``protocol["trimmed_upstream"]`` = {"samples_in_log", "samples"} records both.

Texts: ``prompt`` = the sample input (attachments resolved, chat messages joined),
``target`` = the target (several joined by " | "), ``response`` = the model's completion;
each capped at ``TEXT_LIMIT`` characters.

Logs still running, or with status ``error``/``cancelled``, are read as far as they go,
with a warning.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import Counter
from typing import Any

import numpy as np

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    auto_cluster_rule,
    choose_cluster_key,
    Source,
    check_unique,
    dumps,
    is_number,
    load_json,
    scores_frame,
    sha256_text,
    summaries_frame,
    tasks_frame,
    text_of,
    texts_frame,
)
from evalcore.ingest._zip import ZipArchive
from evalcore.model import ParsedRun

EVAL_ZIP = "inspect_eval"
JSON_LOG = "inspect_json"
HARNESS = "inspect_ai"
TEXT_LIMIT = 8000

PREFERRED_CLUSTER_KEYS = (
    "problem_id", "subject", "passage_id", "category", "topic", "domain", "group", "passage",
    "question_group", "source", "subset", "subcategory", "level", "difficulty", "type",
)
CENTRAL_METRICS = ("accuracy", "mean")
SPREAD_METRICS = ("stderr", "std", "var", "bootstrap_stderr", "clustered_stderr")


class _Unconvertible(Exception):
    pass


def value_to_float(value: Any) -> float:
    """inspect's ``value_to_float`` without the silent 0: raises ``_Unconvertible``.

    C -> 1, P -> 0.5, I/N -> 0, numbers and bools as floats, "yes"/"true" -> 1,
    "no"/"false" -> 0, numeric strings as numbers.
    """
    if isinstance(value, bool):
        return float(value)
    if is_number(value):
        return float(value)
    if value == "C":
        return 1.0
    if value == "P":
        return 0.5
    if value in ("I", "N"):
        return 0.0
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("yes", "true"):
            return 1.0
        if v in ("no", "false"):
            return 0.0
        try:
            return float(v)
        except ValueError:
            pass
    raise _Unconvertible()


def pick_cluster_key(metadatas: list[dict[str, Any]]) -> tuple[str | None, list[str]]:
    """An obvious grouping key among per-item metadata dicts (one per distinct item).

    Candidates: fields present in every item with short scalar (str/int) values, repeated
    across items (2 <= distinct values < items). The pick is the first candidate in
    ``PREFERRED_CLUSTER_KEYS`` order, else the first whose name looks like a grouping key
    (``*_id``, subject, category, topic, ...), else None. Returns (pick, candidates).
    """
    n = len(metadatas)
    if n < 3 or not all(isinstance(m, dict) for m in metadatas):
        return None, []
    keys = set(metadatas[0])
    for m in metadatas[1:]:
        keys &= set(m)
    candidates = []
    for k in sorted(keys):
        vals = [m[k] for m in metadatas]
        if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in vals):
            continue
        if any(len(str(v)) > 200 for v in vals):
            continue
        distinct = len(set(vals))
        if 2 <= distinct < n:
            candidates.append(k)
    return choose_cluster_key(candidates, PREFERRED_CLUSTER_KEYS)


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value[len("attachment://"):], value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _message_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if c.get("type") in (None, "text") and isinstance(c.get("text"), str):
                    parts.append(c["text"])
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts) if parts else None
    return text_of(content)


def _response(sample: dict[str, Any]) -> str | None:
    out = sample.get("output")
    if not isinstance(out, dict):
        return None
    if isinstance(out.get("completion"), str) and out["completion"]:
        return out["completion"]
    choices = out.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        if isinstance(msg, dict):
            return _message_text(msg.get("content"))
    return None


def _prompt(value: Any) -> str | None:
    if isinstance(value, list):
        parts = []
        for m in value:
            if isinstance(m, dict):
                t = _message_text(m.get("content"))
                if t:
                    parts.append(t)
            elif isinstance(m, str):
                parts.append(m)
        return "\n".join(parts) if parts else None
    return text_of(value)


def _cap(s: str | None) -> str | None:
    return s[:TEXT_LIMIT] if isinstance(s, str) and len(s) > TEXT_LIMIT else s


def _protocol(log: dict[str, Any], status: str) -> dict[str, Any]:
    ev = log.get("eval") or {}
    cfg = ev.get("config") or {}
    plan = log.get("plan") or {}
    proto: dict[str, Any] = {
        "harness": HARNESS,
        "inspect_version": (ev.get("packages") or {}).get("inspect_ai"),
        "log_version": log.get("version"),
        "status": status,
        "model": ev.get("model"),
        "model_args": ev.get("model_args") or None,
        "model_base_url": ev.get("model_base_url"),
        "generate_config": ev.get("model_generate_config") or plan.get("config") or None,
        "task": ev.get("task"),
        "task_version": ev.get("task_version"),
        "task_file": ev.get("task_file"),
        "task_args": ev.get("task_args") or None,
        "solver": ev.get("solver"),
        "solver_args": ev.get("solver_args") or None,
        "plan": [{"solver": s.get("solver"), "params": s.get("params")}
                 for s in plan.get("steps") or [] if isinstance(s, dict)] or None,
        "epochs": cfg.get("epochs", 1),
        "epochs_reducer": cfg.get("epochs_reducer"),
        "limit": cfg.get("limit"),
        "dataset": {k: v for k, v in (ev.get("dataset") or {}).items()
                    if k in ("name", "location", "samples", "shuffled")} or None,
        "scorers": [s.get("name") for s in ev.get("scorers") or [] if isinstance(s, dict)] or None,
        "revision": ev.get("revision"),
    }
    return {k: v for k, v in proto.items() if v is not None}


# scorers that grade with a model (inspect_ai's own); other scorers count as judges when
# their options name a grader model
JUDGE_SCORERS = ("model_graded_qa", "model_graded_fact")
_JUDGE_MODEL_KEYS = ("model", "grader_model", "judge_model", "grader", "judge")
_JUDGE_TEMPLATE_KEYS = ("template", "grader_template", "judge_template", "instructions",
                        "grade_pattern", "prompt")


def _model_name(value: Any) -> str | None:
    """A grader model from a scorer option: a name, {"model": name, ...} or a list of them."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, dict):
        return _model_name(value.get("model") or value.get("name"))
    if isinstance(value, list):
        names = [n for n in (_model_name(v) for v in value) if n]
        return ", ".join(names) or None
    return None


def judges(log: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Scorers of the log that grade with a model: {scorer: {"model", "model_source",
    "template_sha256"}}, for the task protocol, so that two runs graded by different judges
    (or judge templates) show as measured differently.

    The grader model is the scorer's ``model``-like option, else the log's ``grader`` model
    role, else (for ``model_graded_qa``/``model_graded_fact``, whose default grader is the
    model under evaluation) the evaluated model. The template hash is the first 16 hex
    digits of the SHA-256 of the scorer's template/instructions options, or "scorer default"
    (inspect's built-in template: the inspect version tells which)."""
    import hashlib
    ev = log.get("eval") or {}
    specs: dict[str, dict] = {}
    for s in ev.get("scorers") or []:
        if isinstance(s, dict) and isinstance(s.get("name"), str):
            specs[s["name"]] = s.get("options") if isinstance(s.get("options"), dict) else {}
    res = log.get("results")
    for s in (res.get("scores") or []) if isinstance(res, dict) else []:
        name = s.get("scorer") or s.get("name") if isinstance(s, dict) else None
        if isinstance(name, str) and not specs.get(name):
            specs[name] = s.get("params") if isinstance(s.get("params"), dict) else {}
    roles = ev.get("model_roles") if isinstance(ev.get("model_roles"), dict) else {}
    out: dict[str, dict[str, str]] = {}
    for name, options in specs.items():
        base = name.rsplit("/", 1)[-1]
        model = next((m for m in (_model_name(options.get(k)) for k in _JUDGE_MODEL_KEYS) if m),
                     None)
        source = "scorer option"
        if model is None and base not in JUDGE_SCORERS:
            continue
        if model is None and _model_name(roles.get("grader")):
            model, source = _model_name(roles.get("grader")), "grader model role"
        if model is None:
            model, source = str(ev.get("model") or "unknown"), "the evaluated model (default)"
        template = "\n".join(str(options[k]) for k in _JUDGE_TEMPLATE_KEYS
                             if isinstance(options.get(k), str) and options[k])
        digest = (hashlib.sha256(template.encode("utf-8")).hexdigest()[:16] if template
                  else "scorer default")
        out[base] = {"model": model, "model_source": source, "template_sha256": digest}
    return out


def _count(value: Any) -> int | None:
    return int(value) if is_number(value) and float(value) >= 0 else None


def _samples_reported(log: dict[str, Any], epochs: int) -> int | None:
    """Distinct samples the results describe: ``total_samples / epochs`` (inspect counts a
    sample once per epoch), None when the results give no count."""
    res = log.get("results")
    total = _count(res.get("total_samples")) if isinstance(res, dict) else None
    return None if total is None else total // max(int(epochs or 1), 1)


def _summary_rows(log: dict[str, Any], n_by_metric: dict[str, int], epochs: int,
                  trimmed: bool = False) -> list[dict]:
    """Summary rows of ``results``; n per scorer: the items scored in the log, or, when the
    log is ``trimmed`` (or has no item scores for the scorer), the results' own count."""
    res = log.get("results")
    if not isinstance(res, dict):
        return []
    task = (log.get("eval") or {}).get("task") or "task"
    rows: list[dict] = []
    entries: list[tuple[str, dict, dict]] = []
    if isinstance(res.get("scores"), list):
        for e in res["scores"]:
            if not isinstance(e, dict):
                continue
            scorer = e.get("scorer") or e.get("name") or "score"
            name = e.get("name") or scorer
            base = scorer if name == scorer else f"{scorer}/{name}"
            entries.append((base, e.get("metrics") or {}, e))
    elif isinstance(res.get("scorer"), dict):      # schema version 1
        entries.append((res["scorer"].get("name") or "score", res.get("metrics") or {}, res))
    for base, metrics, entry in entries:
        metrics = {k: v for k, v in metrics.items() if isinstance(v, dict)}
        central = next((m for m in CENTRAL_METRICS if m in metrics), None)
        if central is None:
            plain = [m for m in metrics if m not in SPREAD_METRICS]
            central = plain[0] if len(plain) == 1 else None
        se = metrics.get("stderr", {}).get("value")
        n = None if trimmed else n_by_metric.get(base)
        if n is None:
            if _count(entry.get("scored_samples")) is not None:
                n = _count(entry["scored_samples"])
            elif _count(res.get("completed_samples")) is not None:
                n = _count(res["completed_samples"]) // max(int(epochs or 1), 1)
            elif trimmed:
                n = _samples_reported(log, epochs)
        for mname, m in metrics.items():
            if mname in SPREAD_METRICS:
                continue
            val = m.get("value")
            is_central = mname == central
            rows.append({
                "task": task, "metric": base if is_central else f"{base}:{mname}",
                "value": float(val) if is_number(val) else math.nan,
                "stderr": float(se) if is_central and is_number(se) else math.nan,
                "stderr_raw": None, "n": n, "is_group": False,
            })
    return rows


def _build(src: Source, fmt: str, log: dict[str, Any], status: str,
           samples: list[tuple[str, dict[str, Any]]], cluster_key: str | None,
           extra_warnings: list[str]) -> ParsedRun:
    ev = log.get("eval") if isinstance(log.get("eval"), dict) else None
    if ev is None or not ev.get("task"):
        raise IngestError(src.name, "eval", "an inspect eval spec with a 'task' name")
    task = str(ev["task"])
    model = ev.get("model")
    version = (ev.get("packages") or {}).get("inspect_ai")
    epochs = (ev.get("config") or {}).get("epochs") or 1
    warnings = list(extra_warnings)
    if status not in ("success",):
        err = log.get("error")
        msg = err.get("message") if isinstance(err, dict) else None
        warnings.append(f"{src.name}: log status is {status!r}" + (f" ({msg})" if msg else "")
                        + ": reading the samples that are there")
    v1_scorer = None
    res = log.get("results")
    if isinstance(res, dict) and isinstance(res.get("scorer"), dict):
        v1_scorer = res["scorer"].get("name")

    ids: list[str] = []
    answers: list[int] = []
    metric_col: list[str] = []
    values: list[float] = []
    row_item: list[str] = []
    hashes: dict[str, str] = {}
    metas: dict[str, dict[str, Any]] = {}
    text_rows: list[tuple[str, int, str | None, str | None, str | None]] = []
    n_choices: Counter[int] = Counter()
    skipped_err = 0
    unconvertible: Counter[str] = Counter()
    nonscalar: Counter[str] = Counter()
    for where, s in samples:
        if not isinstance(s, dict) or "id" not in s:
            raise IngestError(src.name, where, "a sample object with an 'id'")
        sid = str(s["id"])
        epoch = s.get("epoch", 1)
        if not is_number(epoch) or int(epoch) < 1:
            raise IngestError(src.name, f"{where}, field epoch", "an epoch number >= 1",
                              f"found {epoch!r}")
        ans = int(epoch) - 1
        attachments = s.get("attachments") if isinstance(s.get("attachments"), dict) else {}
        inp = _resolve(s.get("input"), attachments)
        target = _resolve(s.get("target"), attachments)
        if sid not in hashes:
            hashes[sid] = sha256_text(dumps([inp, s.get("choices"), target]))
            metas[sid] = s.get("metadata") if isinstance(s.get("metadata"), dict) else {}
            if isinstance(s.get("choices"), list) and s["choices"]:
                n_choices[len(s["choices"])] += 1
        resp = _response({"output": _resolve(s.get("output"), attachments)})
        text_rows.append((sid, ans, _cap(_prompt(inp)),
                          _cap(text_of(target) if not isinstance(target, list) else " | ".join(map(str, target))),
                          _cap(resp)))
        if s.get("error"):
            skipped_err += 1
            continue
        scores = s.get("scores")
        if scores is None and "score" in s and s["score"] is not None:   # schema v1
            scores = {v1_scorer or "score": s["score"]}
        if not isinstance(scores, dict):
            continue
        for scorer, sc in scores.items():
            value = sc.get("value") if isinstance(sc, dict) else sc
            parts = value.items() if isinstance(value, dict) else [(None, value)]
            for key, v in parts:
                metric = scorer if key is None else f"{scorer}/{key}"
                if isinstance(v, (list, dict)):
                    nonscalar[metric] += 1
                    continue
                if v is None:
                    unconvertible[metric] += 1
                    continue
                try:
                    x = value_to_float(v)
                except _Unconvertible:
                    unconvertible[metric] += 1
                    continue
                if not math.isfinite(x):
                    raise IngestError(src.name, f"{where}, scores.{metric}", "a finite score",
                                      f"found {v!r}")
                ids.append(sid)
                answers.append(ans)
                metric_col.append(metric)
                values.append(x)
                row_item.append(sid)
    if skipped_err:
        warnings.append(f"{src.name}: {skipped_err} sample(s) ended with an error; their scores "
                        f"(if any) were left out")
    for metric, cnt in unconvertible.items():
        warnings.append(f"{src.name}: scorer {metric!r}: {cnt} value(s) could not be converted to "
                        f"a number (inspect would count them as 0); those samples were skipped "
                        f"for this scorer")
    for metric, cnt in nonscalar.items():
        warnings.append(f"{src.name}: scorer {metric!r}: {cnt} list/dict value(s) are not item "
                        f"scores; left out")

    # clusters
    protocol = _protocol(log, status)
    chosen: str | None = None
    item_metas = list(metas.values())
    auto, candidates = pick_cluster_key(item_metas)
    if cluster_key:
        if item_metas and all(cluster_key in m for m in item_metas):
            chosen = cluster_key
        else:
            warnings.append(f"{src.name}: cluster key {cluster_key!r} is not in every sample's "
                            f"metadata; no clusters (candidates: {', '.join(candidates) or 'none'})")
    elif cluster_key is None and auto:
        g = len({str(m[auto]) for m in item_metas})
        applied, note = auto_cluster_rule(auto, len(item_metas), g)
        others = [c for c in candidates if c != auto]
        if applied:
            chosen = auto
            warnings.append(f"{src.name}: cluster key {auto!r} picked automatically from "
                            f"sample metadata ({g} clusters)"
                            + (f"; other candidates: {', '.join(others)}" if others else ""))
        else:
            protocol["cluster_key_offered"] = auto
            warnings.append(f"{src.name}: {note}")
    if chosen or candidates:
        protocol["cluster_key"] = chosen
        protocol["cluster_key_candidates"] = candidates
    cluster = [str(metas[i][chosen]) if chosen else None for i in row_item] if chosen else None

    scores_df = scores_frame(task, metric_col, ids, answers, np.asarray(values, dtype="float64"),
                             cluster=cluster, item_hash=[hashes[i] for i in ids])
    check_unique(scores_df, src.name)
    n_by_metric = scores_df.groupby("metric")["item_id"].nunique().to_dict() if len(scores_df) else {}
    reported = _samples_reported(log, epochs)
    trimmed = bool(hashes) and reported is not None and len(hashes) < reported
    if trimmed:
        protocol["trimmed_upstream"] = {"samples_in_log": len(hashes), "samples": reported}
        per_epoch = f" ({epochs} epochs each)" if int(epochs) > 1 else ""
        warnings.append(f"{src.name}: trimmed upstream: the log holds {len(hashes)} of "
                        f"{reported} samples{per_epoch}; the reported values describe all "
                        f"{reported}, the item scores only the samples kept")
    summaries = summaries_frame(_summary_rows(log, n_by_metric, epochs, trimmed))
    seen = set()
    uniq_texts = []
    for row in text_rows:
        if (row[0], row[1]) not in seen:
            seen.add((row[0], row[1]))
            uniq_texts.append(row)
    texts = texts_frame(task, [r[0] for r in uniq_texts], [r[1] for r in uniq_texts],
                        [r[2] for r in uniq_texts], [r[3] for r in uniq_texts],
                        [r[4] for r in uniq_texts])
    task_proto = {k: protocol[k] for k in ("task_version", "task_args", "dataset", "scorers",
                                           "epochs", "plan", "generate_config") if k in protocol}
    judged = judges(log)
    if judged:
        task_proto["judges"] = judged
    tasks = tasks_frame([{"task": task, "protocol": task_proto,
                          "n_choices": n_choices.most_common(1)[0][0] if n_choices else None}])
    eval_id = ev.get("eval_id") or ev.get("run_id")
    return ParsedRun(
        name=str(model or task), model=model, source_format="inspect", harness=HARNESS,
        harness_version=version, protocol=protocol, files=[src.source_file(fmt)],
        scores=scores_df, summaries=summaries, texts=texts, tasks=tasks,
        source_key=f"inspect:{eval_id}:{ev.get('task_id')}" if eval_id else None,
        warnings=warnings)


def _member_json(z: ZipArchive, src: Source, name: str) -> Any:
    data = z.read(name)
    member_src = Source(name=f"{src.name}!{name}", data=data)
    if not data.strip():
        raise IngestError(src.name, f"zip member {name!r}", "a JSON document", "the member is empty")
    return load_json(member_src)


def parse_eval(src: Source, cluster_key: str | None = None) -> ParsedRun:
    """One ParsedRun from an inspect ``.eval`` zip (see the module docstring)."""
    with ZipArchive(src) as z:
        names = z.names
        header = _member_json(z, src, "header.json") if "header.json" in names else None
        start = _member_json(z, src, "_journal/start.json") if "_journal/start.json" in names else None
        if header is None and start is None:
            raise IngestError(src.name, "zip members", "header.json or _journal/start.json "
                              "(an inspect .eval log)", f"members: {', '.join(names[:6])}")
        log = header if isinstance(header, dict) else start
        if not isinstance(log, dict):
            raise IngestError(src.name, "zip member 'header.json'", "a JSON object")
        warnings: list[str] = []
        status = str(log.get("status") or "started") if header is not None else "started"
        if header is None:
            warnings.append(f"{src.name}: no header.json (log still being written?): "
                            f"using _journal/start.json")
        sample_members = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")),
                                key=_natural)
        samples: list[tuple[str, dict]] = []
        for n in sample_members:
            samples.append((f"zip member {n!r}", _member_json(z, src, n)))
        if not samples:
            summ_names = (["summaries.json"] if "summaries.json" in names else
                          sorted((n for n in names if n.startswith("_journal/summaries/")), key=_natural))
            for n in summ_names:
                part = _member_json(z, src, n)
                if not isinstance(part, list):
                    raise IngestError(src.name, f"zip member {n!r}", "a list of sample summaries")
                samples.extend((f"zip member {n!r}[{i}]", s) for i, s in enumerate(part))
            if samples:
                warnings.append(f"{src.name}: no samples/ members; scores read from sample "
                                f"summaries (no responses)")
    return _build(src, EVAL_ZIP, log, status, samples, cluster_key, warnings)


def parse_json_log(src: Source, cluster_key: str | None = None) -> ParsedRun:
    """One ParsedRun from an inspect ``.json`` log (schema version 1 or 2)."""
    obj = load_json(src)
    if not isinstance(obj, dict) or not isinstance(obj.get("eval"), dict):
        raise IngestError(src.name, "top level", "an inspect log object with an 'eval' spec")
    samples = obj.get("samples") or []
    if not isinstance(samples, list):
        raise IngestError(src.name, "samples", "a list of samples")
    return _build(src, JSON_LOG, obj, str(obj.get("status") or "started"),
                  [(f"samples[{i}]", s) for i, s in enumerate(samples)], cluster_key, [])


def _natural(name: str) -> list[Any]:
    base = posixpath.basename(name)
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", base)]
