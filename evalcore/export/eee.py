"""Stored runs as Every Eval Ever (EEE) files, with evalbars' error bars in them.

For each run: one aggregate JSON (``eval.schema.json`` 0.3.0, as ``every-eval-ever`` 0.3.0
validates it) and, when the run has item scores, its instance-level JSONL, written in the
datastore's layout::

    data/<benchmark>/<developer>/<model>/<uuid>.json
    data/<benchmark>/<developer>/<model>/<uuid>_samples.jsonl

What goes where
---------------
* One ``evaluation_results`` entry per (task, metric) of the run. ``score_details.score``
  and ``uncertainty`` are the leaderboard's cell for that task and metric
  (``analysis.leaderboard`` with the given method and confidence; the task's own metric as
  the Leaderboard page shows it, other metric variants on a board forced to that metric):
  ``confidence_interval`` {lower, upper, confidence_level, method}, ``standard_error``
  {value, method} (the cluster-robust SE when the cell's method is "clustered"),
  ``num_samples`` (n) and ``num_bootstrap_samples`` for bootstrap intervals. Nothing here
  recomputes an interval.
* ``metric_config``: ``lower_is_better`` from the metric's known direction, ``score_type``
  ("binary" for 0/1 item scores, else "continuous"), ``min_score``/``max_score`` from its
  known range ("-Infinity"/"Infinity" when unknown, as the schema asks for continuous
  metrics); a metric read from an EEE file keeps its own level-based config.
* Instance lines: one per (task, metric, item, answer), ``evaluation.score`` the item
  score, ``is_correct`` = score == 1 (the official converters' rule), ``input.raw``,
  ``input.reference`` and ``output.raw`` from the stored texts ("" when none was stored).
* What EEE has no field for travels in its string maps, so evalbars reads the run back as
  it was (``evalcore.ingest.eee``): the run's name, harness, protocol and each task's
  protocol (JSON text in ``eval_library`` / ``generation_config.additional_details``), the
  harness-reported value, stderr and n (``score_details.details``), and each item's answer
  index, cluster and hashes (instance ``metadata``).
* File name: a UUID derived from the run's content (name, model, harness, protocols,
  reported values, item scores): uuid5 of its SHA-256, with the version bits set to 4
  because the datastore's validator accepts only UUID4-shaped names. The same run exported
  twice gets the same name, so a re-export overwrites instead of duplicating.
* ``model_info.additional_details`` carries ``deployment_type`` and ``model_availability``
  as "unknown" (evalbars does not know them; the validator requires both).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import uuid
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalcore import __version__
from evalcore import metrics as mx
from evalcore.errors import AnalysisError
from evalcore.ingest import eee as spec

SCHEMA_VERSION = "0.3.0"
# a fixed namespace: the same content gives the same UUID on every machine
NAMESPACE = uuid.UUID("6f0e3c1e-2b7a-5d0c-9c51-e7a1b0e5e001")
_UNSAFE = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
             *(f"LPT{i}" for i in range(1, 10))}
_GENERATION_ARGS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
                    "max_gen_toks": "max_tokens", "max_tokens": "max_tokens",
                    "max_new_tokens": "max_tokens"}


@dataclass(frozen=True)
class ExportedRun:
    """One run written: its id and name, the files (paths relative to the export root) and
    the UUID they are named by."""

    run_id: int
    run: str
    uuid: str
    aggregate: str
    samples: str | None
    n_results: int
    n_samples: int


@dataclass(frozen=True)
class EeeExport:
    """An export: the runs written, the method and confidence of their intervals, and the
    files as (relative path, bytes)."""

    runs: tuple[ExportedRun, ...]
    method: str
    confidence: float
    files: dict[str, bytes] = field(repr=False, default_factory=dict)
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------
def export_eee(store, runs: list[str | int] | None = None, *, method: str = "wilson",
               confidence: float = 0.95, benchmark: str | None = None,
               organization: str = "unknown", n_resamples: int = 2000,
               seed: int = 0) -> EeeExport:
    """The EEE files of ``runs`` (names or ids; None: every run) in memory.

    ``method``/``confidence``: the leaderboard's interval method and level whose cells fill
    the uncertainty fields. ``benchmark``: the datastore's collection folder (default: the
    run's only task, else "evalbars"). ``organization``: ``source_metadata``'s
    organization name for runs not read from an EEE file.
    """
    from evalcore.analysis import resolve_run

    all_runs = store.runs()
    if runs is None:
        ids = [int(r) for r in all_runs["run_id"]]
    else:
        ids = list(dict.fromkeys(resolve_run(store, r) for r in runs))
    if not ids:
        raise AnalysisError("nothing to export: the store holds no run")
    cells, infos, notes = _board_cells(store, ids, method, confidence, n_resamples, seed)
    files: dict[str, bytes] = {}
    done: list[ExportedRun] = []
    for rid in ids:
        run = _RunData.read(store, rid)
        done.append(_export_run(run, cells, infos, method, confidence, n_resamples,
                                benchmark, organization, files, notes))
    return EeeExport(tuple(done), method, confidence, files, tuple(notes))


def write_eee(export: EeeExport, out_dir: str | Path) -> list[Path]:
    """Write an export's files under ``out_dir`` (folders created); the paths written."""
    root = Path(out_dir)
    written = []
    for rel, data in export.files.items():
        path = root.joinpath(*rel.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def export_eee_zip(export: EeeExport) -> bytes:
    """An export's files as one zip (the Upload & runs page's download)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for rel, data in sorted(export.files.items()):
            info = zipfile.ZipInfo(rel, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------
# The leaderboard's cells
# ---------------------------------------------------------------------------------------
def _board_cells(store, ids: list[int], method: str, confidence: float, n_resamples: int,
                 seed: int) -> tuple[dict, dict, list[str]]:
    """(run id, task, metric) -> the leaderboard cell; (task, metric) -> MetricInfo.

    The default board (every run, each task on its own metric, as the page opens) gives the
    cells of the metric shown; the runs' other metric variants come from boards forced to
    that metric (one board per metric name)."""
    from evalcore.analysis import leaderboard

    kw = dict(method=method, confidence=confidence, n_resamples=n_resamples, seed=seed,
              include_tiers=False, include_ranks=False)
    board = leaderboard(store, **kw)
    cells: dict[tuple[int, str, str], dict[str, Any]] = {}
    infos: dict[tuple[str, str], mx.MetricInfo] = {}
    _take(board, ids, cells, infos)
    notes = list(board.notes)
    pairs = store.tasks(ids)
    missing = {str(m) for r, t, m in zip(pairs["run_id"], pairs["task"], pairs["metric"])
               if (int(r), str(t), str(m)) not in cells}
    for metric in sorted(missing):
        _take(leaderboard(store, metric=metric, runs=ids, **kw), ids, cells, infos)
    return cells, infos, notes


def _take(board, ids: list[int], cells: dict, infos: dict) -> None:
    keep = set(ids)
    for row in board.cells.to_dict("records"):
        key = (int(row["run_id"]), str(row["task"]), str(row["metric"]))
        if key[0] in keep and key not in cells:
            cells[key] = row
    for task, info in board.metric_info.items():
        m = board.metrics_by_task.get(task)
        if m is not None:
            infos.setdefault((str(task), str(m)), info)


# ---------------------------------------------------------------------------------------
# One run's stored data
# ---------------------------------------------------------------------------------------
@dataclass
class _RunData:
    run_id: int
    info: dict[str, Any]
    tasks: pd.DataFrame          # run's (task, metric) rows: n_items, has_items, binary, ...
    summaries: pd.DataFrame
    task_protocols: dict[str, tuple[int | None, dict[str, Any]]]
    scores: pd.DataFrame
    texts: dict[tuple[str, str, int], tuple[Any, Any, Any]]

    @classmethod
    def read(cls, store, rid: int) -> "_RunData":
        info = store.run_info(rid)
        for key in ("model", "harness", "harness_version", "source_format"):
            v = info.get(key)
            info[key] = None if v is None or (isinstance(v, float) and math.isnan(v)) else v
        tp = store.task_protocols(rid)
        protos = {str(t): (None if pd.isna(nc) else int(nc), p if isinstance(p, dict) else {})
                  for t, nc, p in zip(tp["task"], tp["n_choices"], tp["protocol"])}
        scores = store.scores([rid])
        texts: dict[tuple[str, str, int], tuple[Any, Any, Any]] = {}
        for task, ids in scores.groupby("task", sort=True)["item_id"]:
            tx = store.texts(rid, str(task), sorted({str(i) for i in ids}))
            for row in tx.itertuples(index=False):
                texts[(str(row.task), str(row.item_id), int(row.answer_idx))] = (
                    row.prompt, row.target, row.response)
        return cls(rid, info, store.tasks([rid]), store.summaries([rid]), protos, scores,
                   texts)

    def content_key(self) -> str:
        """SHA-256 of what the run holds, independent of when and from where it was
        ingested: name, model, harness, protocols, reported values, item scores."""
        h = hashlib.sha256()
        head = {k: self.info.get(k) for k in ("name", "model", "source_format", "harness",
                                              "harness_version")}
        h.update(_canonical([head, self.info.get("protocol") or {},
                             sorted(self.task_protocols.items())]).encode("utf-8"))
        cols = ["task", "metric", "value", "stderr", "stderr_raw", "n", "is_group"]
        h.update(self.summaries[cols].to_csv(index=False, lineterminator="\n").encode())
        cols = ["task", "metric", "item_id", "answer_idx", "score", "cluster"]
        h.update(self.scores[cols].to_csv(index=False, lineterminator="\n").encode())
        return h.hexdigest()


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"),
                      default=str)


def content_uuid(key: str) -> str:
    """A UUID4-shaped name from a content hash: uuid5(NAMESPACE, key) with the version
    nibble set to 4 (the datastore's validator accepts only UUID4 names)."""
    return str(uuid.UUID(bytes=uuid.uuid5(NAMESPACE, key).bytes, version=4))


# ---------------------------------------------------------------------------------------
# One run's files
# ---------------------------------------------------------------------------------------
def _export_run(run: _RunData, cells: dict, infos: dict, method: str, confidence: float,
                n_resamples: int, benchmark: str | None, organization: str,
                files: dict[str, bytes], notes: list[str]) -> ExportedRun:
    info = run.info
    name = str(info["name"])
    model = str(info.get("model") or name)
    model_id, developer, model_dir = model_path(model)
    tasks = sorted({str(t) for t in run.tasks["task"]})
    bench = folder_name(benchmark or (tasks[0] if len(tasks) == 1 else "evalbars"))
    uid = content_uuid(run.content_key())
    folder = f"data/{bench}/{developer}/{model_dir}"
    evaluation_id = f"{bench}/{model_id}/{uid}"
    results = []
    for t, m in zip(run.tasks["task"].astype(str), run.tasks["metric"].astype(str)):
        entry = _result(run, t, m, cells.get((run.run_id, t, m)), infos.get((t, m)), method,
                        confidence, n_resamples)
        if entry is None:
            notes.append(f"{name}: {t} / {m} left out: no score on the leaderboard and no "
                         f"reported value")
        else:
            results.append(entry)
    agg: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "retrieved_timestamp": _epoch(info.get("created_at")),
        "source_metadata": _source_metadata(info.get("protocol") or {}, organization),
        "eval_library": _eval_library(info),
        "model_info": _model_info(model, model_id, developer),
        "evaluation_results": results,
    }
    samples_path = None
    lines = _sample_lines(run, evaluation_id, model_id)
    if lines:
        body = "".join(lines).encode("utf-8")
        samples_path = f"{folder}/{uid}_samples.jsonl"
        files[samples_path] = body
        agg["detailed_evaluation_results"] = {
            "format": "jsonl", "file_path": samples_path, "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(body).hexdigest(), "total_rows": len(lines)}
    agg_path = f"{folder}/{uid}.json"
    files[agg_path] = (json.dumps(agg, indent=2, ensure_ascii=False, allow_nan=False)
                       + "\n").encode("utf-8")
    return ExportedRun(run.run_id, name, uid, agg_path, samples_path, len(results), len(lines))


def _epoch(created: Any) -> str:
    try:
        ts = pd.Timestamp(created)
        if ts.tzinfo is None:
            ts = ts.tz_localize(timezone.utc)
        return f"{ts.timestamp():.6f}"
    except (ValueError, TypeError):
        return f"{datetime.now(timezone.utc).timestamp():.6f}"


def _source_metadata(protocol: dict[str, Any], organization: str) -> dict[str, Any]:
    """A run read from an EEE file keeps its source; any other run is evalbars' own
    evaluation record."""
    known = protocol.get("source_metadata")
    if isinstance(known, dict) and {"source_type", "source_organization_name",
                                    "evaluator_relationship"} <= set(known):
        keep = ("source_name", "source_type", "source_organization_name",
                "source_organization_url", "source_organization_logo_url",
                "evaluator_relationship")
        out = {k: known[k] for k in keep if isinstance(known.get(k), str)}
        if isinstance(known.get("additional_details"), dict):
            out["additional_details"] = _strings(known["additional_details"])
        return out
    return {"source_name": "evalbars", "source_type": "evaluation_run",
            "source_organization_name": organization or "unknown",
            "evaluator_relationship": "other"}


def _eval_library(info: dict[str, Any]) -> dict[str, Any]:
    details = {
        spec.MARK: __version__,
        spec.RUN_NAME: str(info["name"]),
        spec.RUN_PROTOCOL: json.dumps(info.get("protocol") or {}, sort_keys=True,
                                      default=str),
        "evalbars_source_format": str(info.get("source_format") or ""),
    }
    if info.get("harness"):
        details[spec.HARNESS] = str(info["harness"])
    if info.get("harness_version"):
        details[spec.HARNESS_VERSION] = str(info["harness_version"])
    return {"name": str(info.get("harness") or info.get("source_format") or "unknown"),
            "version": str(info.get("harness_version") or "unknown"),
            "additional_details": details}


def _model_info(model: str, model_id: str, developer: str) -> dict[str, Any]:
    details = {"deployment_type": "unknown", "model_availability": "unknown"}
    if model_id != model:
        details["evalbars_model"] = model
    return {"name": model, "id": model_id, "developer": developer,
            "additional_details": details}


def _strings(d: dict[str, Any]) -> dict[str, str]:
    return {str(k): v if isinstance(v, str) else json.dumps(v, default=str)
            for k, v in d.items()}


# ---------------------------------------------------------------------------------------
# Datastore path components
# ---------------------------------------------------------------------------------------
def folder_name(text: str) -> str:
    """One portable folder name (the validator's rules: no ``<>:"\\|?*``, control
    characters, trailing dot or space, Windows device names, or ``data``)."""
    out = _UNSAFE.sub("_", str(text).replace("/", "_")).strip().rstrip(". ") or "unnamed"
    if out.split(".", 1)[0].upper() in _RESERVED or out in (".", "..", "data"):
        out = f"_{out}"
    return out


def model_path(model: str) -> tuple[str, str, str]:
    """(model_info.id, developer folder, model folder) of a model name, as the datastore
    files it: ``org/name`` -> (org/name, org, name); a deeper id flattens its tail with
    underscores; a flat name or a local path becomes ``unknown/<last part>``. The id is
    rewritten only where its parts are not portable folder names (colons become
    underscores in the folder only, as the official converters do)."""
    parts = [p for p in str(model).strip().split("/") if p]
    if str(model).startswith("/") or len(parts) < 2 or parts[0].lower() == "unknown":
        last = folder_name(parts[-1] if parts else "model")
        return f"unknown/{last}", "unknown", last
    dev = folder_name(parts[0].replace(":", "_"))
    name = "_".join(folder_name(p.replace(":", "_")) for p in parts[1:])
    clean = dev == parts[0].replace(":", "_") and all(
        folder_name(p.replace(":", "_")) == p.replace(":", "_") for p in parts[1:])
    model_id = "/".join(parts) if clean else f"{dev}/{name}"
    return model_id, dev, name


# ---------------------------------------------------------------------------------------
# evaluation_results
# ---------------------------------------------------------------------------------------
def _result(run: _RunData, task: str, metric: str, cell: dict[str, Any] | None,
            info: mx.MetricInfo | None, method: str, confidence: float,
            n_resamples: int) -> dict[str, Any] | None:
    summ = run.summaries[(run.summaries["task"] == task) & (run.summaries["metric"] == metric)]
    reported = summ.iloc[0].to_dict() if len(summ) else None
    n_choices, tproto = run.task_protocols.get(task, (None, {}))
    own = ((tproto.get("eee") or {}).get("metrics") or {}).get(metric) \
        if isinstance(tproto.get("eee"), dict) else None
    levels = isinstance(own, dict) and own.get("score_type") == "levels"
    score = _score(cell, reported)
    if score is None:
        return None
    entry: dict[str, Any] = {
        "evaluation_result_id": f"{task}/{metric}",
        "evaluation_name": task,
        "source_data": _source_data(task, tproto),
        "metric_config": _metric_config(task, metric, cell, info, own, levels, score),
        "score_details": {"score": score, "details": _reported_details(metric, reported)},
    }
    unc = None if levels else _uncertainty(cell, confidence, n_resamples)
    if unc:
        entry["score_details"]["uncertainty"] = unc
    entry["generation_config"] = _generation_config(run, tproto, n_choices)
    return entry


def _score(cell: dict[str, Any] | None, reported: dict[str, Any] | None) -> float | None:
    """The leaderboard's score of the cell, else the reported value; None when neither is a
    number (the result is then left out, never written as a made-up score)."""
    for v in ((cell or {}).get("score"), (reported or {}).get("value")):
        if v is not None and not pd.isna(v) and math.isfinite(float(v)):
            return float(v)
    return None


def _source_data(task: str, tproto: dict[str, Any]) -> dict[str, Any]:
    own = (tproto.get("eee") or {}).get("source_data") if isinstance(tproto.get("eee"),
                                                                       dict) else None
    if isinstance(own, dict) and own.get("source_type") in ("url", "hf_dataset", "other") \
            and isinstance(own.get("dataset_name"), str):
        keep = {"url": ("dataset_name", "source_type", "url", "additional_details"),
                "hf_dataset": ("dataset_name", "source_type", "hf_repo", "hf_split",
                               "samples_number", "sample_ids", "additional_details"),
                "other": ("dataset_name", "source_type", "additional_details")}
        out = {k: own[k] for k in keep[own["source_type"]] if k in own}
        if isinstance(out.get("additional_details"), dict):
            out["additional_details"] = _strings(out["additional_details"])
        if own["source_type"] != "url" or out.get("url"):
            return out
    path = tproto.get("dataset_path")
    if isinstance(path, str) and path:
        out = {"dataset_name": task, "source_type": "hf_dataset", "hf_repo": path}
        split = tproto.get("test_split") or tproto.get("validation_split")
        if isinstance(split, str):
            out["hf_split"] = split
        return out
    return {"dataset_name": task, "source_type": "other"}


def _metric_config(task: str, metric: str, cell: dict[str, Any] | None,
                   info: mx.MetricInfo | None, own: dict[str, Any] | None, levels: bool,
                   score: float) -> dict[str, Any]:
    direction = info.direction if info is not None else mx.UNKNOWN
    if isinstance(own, dict) and levels:
        keep = ("evaluation_description", "metric_id", "metric_name", "metric_kind",
                "metric_unit", "lower_is_better", "score_type", "level_names",
                "level_metadata", "has_unknown_level")
        out = {k: own[k] for k in keep if k in own}
        out.setdefault("lower_is_better", False)
        # schema 0.3.0 requires both for levels; a file of 0.2.x may name neither
        out.setdefault("level_names", [])
        out.setdefault("has_unknown_level", False)
        return out
    binary = bool((cell or {}).get("binary")) and bool((cell or {}).get("has_items"))
    lo = info.low if info is not None else None
    hi = info.high if info is not None else None
    if binary:
        lo, hi = 0.0, 1.0
    lo_v: Any = float(lo) if lo is not None and math.isfinite(lo) else "-Infinity"
    hi_v: Any = float(hi) if hi is not None and math.isfinite(hi) else "Infinity"
    if isinstance(lo_v, float) and score < lo_v:
        lo_v = "-Infinity"
    if isinstance(hi_v, float) and score > hi_v:
        hi_v = "Infinity"
    return {
        "evaluation_description": f"{metric} on {task}",
        "metric_name": metric,
        "lower_is_better": direction == mx.LOWER,
        "score_type": "binary" if binary else "continuous",
        "min_score": lo_v,
        "max_score": hi_v,
        "additional_details": {"evalbars_direction": direction,
                               "evalbars_direction_source": info.source if info else ""},
    }


def _reported_details(metric: str, reported: dict[str, Any] | None) -> dict[str, str]:
    """The harness-reported value, stderr and n as text (repr: exact round trip)."""
    d = {spec.METRIC: metric}
    if reported is None:
        return d

    def num(v: Any) -> str:
        return "" if v is None or pd.isna(v) else repr(float(v))

    d[spec.REPORTED_VALUE] = num(reported.get("value"))
    d[spec.REPORTED_STDERR] = num(reported.get("stderr"))
    raw = reported.get("stderr_raw")
    d[spec.REPORTED_STDERR_RAW] = "" if raw is None or pd.isna(raw) else str(raw)
    n = reported.get("n")
    d[spec.REPORTED_N] = "" if n is None or pd.isna(n) else str(int(n))
    d[spec.IS_GROUP] = "true" if bool(reported.get("is_group")) else "false"
    return d


def _uncertainty(cell: dict[str, Any] | None, confidence: float,
                 n_resamples: int) -> dict[str, Any] | None:
    """The leaderboard cell's interval, SE and n in the schema's uncertainty fields."""
    if cell is None:
        return None
    from evalcore.analysis._common import METHOD_LABELS

    def fin(v: Any) -> float | None:
        return None if v is None or pd.isna(v) or not math.isfinite(float(v)) else float(v)

    method = str(cell.get("method"))
    label = METHOD_LABELS.get(method, method)
    out: dict[str, Any] = {}
    se = fin(cell.get("se"))
    if se is not None:
        se_method = {"clustered": "cluster-robust standard error over the item clusters",
                     "reported": "harness-reported stderr"}.get(
            method, "sd(item scores, ddof=1) / sqrt(n)")
        out["standard_error"] = {"value": se, "method": se_method}
    low, high = fin(cell.get("low")), fin(cell.get("high"))
    if low is not None and high is not None:
        out["confidence_interval"] = {"lower": low, "upper": high,
                                      "confidence_level": float(confidence), "method": label}
    n = cell.get("n")
    if n is not None and not pd.isna(n) and int(n) > 0:
        out["num_samples"] = int(n)
    if method == "bootstrap":
        out["num_bootstrap_samples"] = int(n_resamples)
    return out or None


def _generation_config(run: _RunData, tproto: dict[str, Any],
                       n_choices: int | None) -> dict[str, Any]:
    args: dict[str, Any] = {}
    sources = [tproto.get("generation_kwargs"), (run.info.get("protocol") or {}).get("gen_kwargs")]
    own = (tproto.get("eee") or {}).get("generation_config") if isinstance(tproto.get("eee"),
                                                                            dict) else None
    if isinstance(own, dict):
        sources.insert(0, own.get("generation_args"))
    for src in sources:
        if not isinstance(src, dict):
            continue
        for key, target in _GENERATION_ARGS.items():
            v = src.get(key)
            if target in args or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if target in ("max_tokens",) and float(v) == int(v):
                args[target] = int(v)
            elif target != "max_tokens" and math.isfinite(float(v)):
                args[target] = float(v)
    details = {spec.TASK_PROTOCOL: json.dumps(tproto, sort_keys=True, default=str)}
    if n_choices is not None:
        details[spec.N_CHOICES] = str(int(n_choices))
    few = tproto.get("num_fewshot")
    if isinstance(few, int) and not isinstance(few, bool):
        details["num_fewshot"] = str(few)
    out: dict[str, Any] = {"additional_details": details}
    if args:
        out["generation_args"] = args
    return out


# ---------------------------------------------------------------------------------------
# Instance lines
# ---------------------------------------------------------------------------------------
def _sample_lines(run: _RunData, evaluation_id: str, model_id: str) -> list[str]:
    sc = run.scores
    if sc.empty:
        return []
    lines = []
    cols = [sc[c].tolist() for c in ("task", "metric", "item_id", "answer_idx", "score",
                                     "cluster", "item_hash", "prompt_hash")]
    for task, metric, item, answer, score, cluster, ihash, phash in zip(*cols):
        prompt, target, response = run.texts.get((str(task), str(item), int(answer)),
                                                  (None, None, None))
        meta = {spec.ITEM_ANSWER: str(int(answer))}
        for key, v in ((spec.ITEM_CLUSTER, cluster), (spec.ITEM_HASH, ihash),
                       (spec.ITEM_PROMPT_HASH, phash)):
            if v is not None and not (isinstance(v, float) and np.isnan(v)):
                meta[key] = str(v)
        row = {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "model_id": model_id,
            "evaluation_name": str(task),
            "evaluation_result_id": f"{task}/{metric}",
            "sample_id": str(item),
            "sample_hash": None if ihash is None or pd.isna(ihash) else str(ihash),
            "interaction_type": "single_turn",
            "input": {"raw": _text(prompt), "reference": [_text(target)] if _text(target) else []},
            "output": {"raw": [_text(response)]},
            "answer_attribution": [],
            "evaluation": {"score": float(score), "is_correct": float(score) == 1.0},
            "metadata": meta,
        }
        lines.append(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
    return lines


def _text(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
