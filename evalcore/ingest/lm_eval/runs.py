"""lm_eval runs: pairing results and sample files, and one ParsedRun per run.

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
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import pandas as pd

from evalcore.errors import IngestError
from evalcore.ingest._common import Source, concat_frames, summaries_frame, tasks_frame
from evalcore.ingest.lm_eval.frames import assemble
from evalcore.ingest.lm_eval.records import SampleColumns, read_records
from evalcore.ingest.lm_eval.results import (
    HARNESS,
    RESULTS,
    SAMPLES_JSONL,
    SAMPLES_NAME,
    ResultsFile,
    results_summaries,
    run_identity,
    run_protocol,
    task_rows,
)
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS, ParsedRun


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
