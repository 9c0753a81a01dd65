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
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import pandas as pd

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    Source,
    concat_frames,
    empty_frame,
    summaries_frame,
    tasks_frame,
)
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
from evalcore.model import SCORE_COLUMNS, TEXT_COLUMNS, LazyRun, ParsedRun


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
    head = _run_head(results, [s for s, _t, _c in samples])
    if results is not None:
        covered = {task for _src, task, _cols in samples}
        for task, recs in results.embedded.items():
            if task in covered:
                head.warnings.append(f"{results.src.name}: embedded samples of {task} ignored: "
                                     f"a separate samples file was given")
                continue
            if not isinstance(recs, list):
                raise IngestError(results.src.name, f"samples.{task}", "a list of sample records")
            samples = samples + [(results.src, task, read_records(results.src, task, recs,
                                                                  f"samples.{task}", cluster_key))]
    scores, texts, files, ts = _sample_frames(head, samples, sample_formats)
    return ParsedRun(
        name=head.name, model=head.model, source_format="lm_eval", harness=HARNESS,
        harness_version=head.version, protocol=head.protocol, files=head.files + files,
        scores=scores, summaries=head.summaries, texts=texts,
        tasks=tasks_frame(list(head.task_info.values())),
        source_key=f"lm_eval:{ts}" if ts else None, warnings=head.warnings)


@dataclass
class _Head:
    """What a run takes from its results file (or, without one, from its first sample log)."""

    name: str
    model: str | None
    version: str | None
    protocol: dict[str, Any]
    summaries: pd.DataFrame
    task_info: dict[str, dict[str, Any]]
    files: list
    ts: str | None
    warnings: list[str] = field(default_factory=list)
    results_src: Source | None = None


def _run_head(results: ResultsFile | None, sample_srcs: list[Source]) -> _Head:
    warnings: list[str] = []
    if results is not None:
        obj = results.obj
        model, version = run_identity(obj)
        summaries = summaries_frame(results_summaries(obj, warnings, results.src.name))
        return _Head(name=model or re.sub(r"\.json$", "", results.src.basename), model=model,
                     version=version, protocol=run_protocol(obj), summaries=summaries,
                     task_info=task_rows(obj), files=[results.src.source_file(RESULTS)],
                     ts=results.ts, warnings=warnings, results_src=results.src)
    first = sample_srcs[0]
    folder = first.folder.replace("\\", "/").rstrip("/").split("/")[-1].split("!")[-1]
    model = None
    if folder and folder not in (".", ""):
        name = folder.replace("__", "/")
        model = name
    else:
        name = re.sub(r"\.(jsonl|json)$", "", first.basename)
    warnings.append(f"{first.name}: sample log(s) without their results file: no summaries, "
                    f"run named {name!r}")
    return _Head(name=name, model=model, version=None, protocol={"harness": HARNESS},
                 summaries=summaries_frame([]), task_info={}, files=[], ts=None,
                 warnings=warnings)


def _sample_frames(head: _Head, samples: list[tuple[Source, str, SampleColumns]],
                   sample_formats: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame, list, str | None]:
    """(scores, texts, the sample files, the run's timestamp) of ``samples``; each task's
    n_choices and cluster choice go into ``head.task_info`` and warnings into
    ``head.warnings``."""
    score_frames: list[pd.DataFrame] = []
    text_frames: list[pd.DataFrame] = []
    files = []
    ts = head.ts
    for src, task, cols in samples:
        data = assemble(src.name, cols)
        head.warnings.extend(data.warnings)
        score_frames.append(data.scores)
        text_frames.append(data.texts)
        info = head.task_info.setdefault(task, {"task": task, "n_choices": None, "protocol": {}})
        if data.n_choices is not None:
            info["n_choices"] = data.n_choices
        for k, v in data.cluster_protocol.items():   # a task split over files: first file wins
            info["protocol"].setdefault(k, v)
        ts = ts or samples_ts(src)
        if src is not head.results_src:
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
    return (concat_frames(score_frames, SCORE_COLUMNS), concat_frames(text_frames, TEXT_COLUMNS),
            files, ts)


def build_lazy_run(results: ResultsFile | None, group: list[tuple[Source, str]],
                   sample_formats: dict[str, str],
                   read_group: Callable[[list[tuple[Source, str]]],
                                        list[tuple[Source, str, SampleColumns]]]) -> LazyRun:
    """``build_run`` for sample logs read later, one task at a time (``LazyRun``): the run's
    head (results file, the sample files' sha256, name, source_key) now; each piece is the
    ``read_group`` of one task's files (tasks in order of first appearance), assembled as
    ``build_run`` does, read when the caller asks for it. ``results`` must have no embedded
    samples (``build_run`` reads those)."""
    try:
        head = _run_head(results, [s for s, _t in group])
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        name = results.src.name if results is not None else group[0][0].name
        raise IngestError(name, "results layout", "the lm_eval results layout (objects and "
                          "lists where lm_eval writes them)",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None
    files = [s.source_file(sample_formats.get(s.name, SAMPLES_JSONL)) for s, _t in group]
    ts = head.ts or next((samples_ts(s) for s, _t in group if samples_ts(s)), None)
    by_task: dict[str, list[tuple[Source, str]]] = {}
    for s, t in group:
        by_task.setdefault(t, []).append((s, t))
    task_info = head.task_info
    own_tasks = [info for t, info in task_info.items() if t not in by_task]

    def piece(task: str, samples: list[tuple[Source, str, SampleColumns]]) -> ParsedRun:
        info = dict(task_info.get(task) or {"task": task, "n_choices": None, "protocol": {}})
        info["protocol"] = dict(info.get("protocol") or {})
        part = _Head(name=head.name, model=head.model, version=head.version,
                     protocol=head.protocol, summaries=summaries_frame([]),
                     task_info={task: info}, files=[], ts=ts, results_src=head.results_src)
        scores, texts, _files, _ts = _sample_frames(part, samples, sample_formats)
        return ParsedRun(name=head.name, model=head.model, source_format="lm_eval",
                         harness=HARNESS, harness_version=head.version, protocol=head.protocol,
                         files=[], scores=scores, summaries=summaries_frame([]), texts=texts,
                         tasks=tasks_frame([info]), source_key=f"lm_eval:{ts}" if ts else None,
                         warnings=part.warnings)

    def pieces() -> Iterator[ParsedRun]:
        # one task at a time, read when asked (Store.ingest asks for the next one while it
        # writes this one: store.write._Writes._read_lazy)
        for task, files in by_task.items():
            yield build_piece(task, read_group(files))

    def build_piece(task: str, samples: list) -> ParsedRun:
        try:
            return piece(task, samples)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise IngestError(samples[0][0].name, "sample layout", "the lm_eval sample layout",
                              f"{type(exc).__name__}: {str(exc)[:80]}") from None

    return LazyRun(
        name=head.name, model=head.model, source_format="lm_eval", harness=HARNESS,
        harness_version=head.version, protocol=head.protocol, files=head.files + files,
        scores=empty_frame(SCORE_COLUMNS), summaries=head.summaries,
        texts=empty_frame(TEXT_COLUMNS), tasks=tasks_frame(own_tasks),
        source_key=f"lm_eval:{ts}" if ts else None, warnings=head.warnings, pieces=pieces)


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
