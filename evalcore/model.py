"""Canonical records: what every ingest parser produces and what the store consumes.

A parser turns one or more files into ``ParsedRun`` objects. Tables are pandas DataFrames
with exactly the columns listed below (extra columns are not allowed; missing optional
values are ``None``/NaN). Scores are floats; 0/1 scores are stored as 0.0/1.0.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

# One row per (task, metric, item, answer). `answer_idx` is 0 unless a run has several
# answers per item (inspect epochs, lm_eval repeats, tidy `answer` column).
SCORE_COLUMNS: tuple[str, ...] = (
    "task",         # str: task name as the harness calls it (arc_easy, inspect task name)
    "metric",       # str: metric variant; lm_eval "acc", "acc_norm", "exact_match,strict-match"
                    #      (filter appended after a comma unless it is "none")
    "item_id",      # str: stable item id within the task (lm_eval doc_id, inspect sample id)
    "answer_idx",   # int: 0..K-1
    "score",        # float: finite; NaN is rejected by parsers with an IngestError
    "cluster",      # str | None: cluster key (passage, subject, problem id) if known
    "item_hash",    # str | None: hash of the item/doc (lm_eval doc_hash)
    "prompt_hash",  # str | None: hash of the exact prompt (lm_eval prompt_hash)
)

# Summary metrics as the harness reported them (one row per task x metric).
SUMMARY_COLUMNS: tuple[str, ...] = (
    "task",          # str
    "metric",        # str: same naming as SCORE_COLUMNS.metric
    "value",         # float | NaN
    "stderr",        # float | NaN: NaN when absent or "N/A"
    "stderr_raw",    # str | None: the stderr exactly as written when not a number ("N/A")
    "n",             # int | None: number of items (lm_eval n-samples effective, sample_len)
    "is_group",      # bool: an aggregate over subtasks (lm_eval groups)
)

# Texts for drill-down (one row per task x item x answer); any text may be None.
TEXT_COLUMNS: tuple[str, ...] = (
    "task", "item_id", "answer_idx", "prompt", "target", "response",
)

# Per-task facts: number of answer choices (for the chance baseline) and the task's
# protocol (few-shot, template, generation kwargs, task version ...) as a JSON-able dict.
TASK_COLUMNS: tuple[str, ...] = (
    "task",
    "n_choices",     # int | None: number of options of a multiple-choice task
    "protocol",      # dict: task-level settings; compared between runs in the protocol diff
)


@dataclass
class SourceFile:
    """One input file that contributed to a run."""

    name: str          # file name as the user gave it (path or upload name)
    sha256: str        # hex digest of the file's bytes
    size: int          # bytes
    format: str        # detected format, e.g. "lm_eval_samples_jsonl"
    # Identity of this run's share of a file that holds several runs (a tidy table with
    # several models): a digest of the run's own rows, so the store keys "already present"
    # on the run, not on the whole file. None when the file is one run (its sha256 decides).
    run_key: str | None = None


@dataclass
class ParsedRun:
    """One run (one model, one protocol) as read from one or more files.

    ``name`` is a proposed display name (the store makes it unique). ``protocol`` holds the
    run-level settings (harness version, model args, chat template, few-shot, generation
    settings, ...) as a JSON-able dict. ``source_key`` groups files of the same run across
    uploads (e.g. lm_eval's output folder plus timestamp); None when unknown.
    """

    name: str
    model: str | None
    source_format: str          # "lm_eval", "inspect", "helm", "tidy"
    harness: str | None         # "lm-evaluation-harness", "inspect_ai", "helm", None
    harness_version: str | None
    protocol: dict[str, Any]
    files: list[SourceFile]
    scores: pd.DataFrame        # SCORE_COLUMNS
    summaries: pd.DataFrame     # SUMMARY_COLUMNS
    texts: pd.DataFrame         # TEXT_COLUMNS
    tasks: pd.DataFrame         # TASK_COLUMNS
    source_key: str | None = None
    warnings: list[str] = field(default_factory=list)  # human-readable notes from parsing


@dataclass
class LazyRun(ParsedRun):
    """A ParsedRun whose item data is read when the store consumes it, one piece at a time
    (``evalcore.ingest.parse_paths`` returns one for the sample logs of a large lm_eval run:
    the whole run's texts never sit in memory together).

    The run's own fields are known up front: name, model, protocol, files (with their
    sha256), summaries, the tasks without item data and the warnings of the results file;
    ``scores`` and ``texts`` are empty. ``pieces()`` reads the item data anew on each call and
    yields ParsedRun pieces, each holding the scores, texts, task rows and warnings of one or
    more COMPLETE tasks (no task is split over two pieces; the other fields repeat the run's).
    A bad file raises ``IngestError`` (file, line, what was expected) from ``pieces()``:
    ``Store.ingest`` then rolls back. ``materialize()`` gives the equivalent eager ParsedRun.
    """

    pieces: Callable[[], Iterator[ParsedRun]] | None = None

    def materialize(self) -> ParsedRun:
        """The run with every piece read and concatenated (as an eager parse gives it)."""
        parts = list(self.pieces()) if self.pieces is not None else []
        def cat(frames: list[pd.DataFrame], own: pd.DataFrame) -> pd.DataFrame:
            frames = [f for f in [own, *frames] if f is not None and len(f)]
            return (pd.concat(frames, ignore_index=True) if len(frames) > 1 else
                    frames[0].reset_index(drop=True) if frames else own)
        return ParsedRun(
            name=self.name, model=self.model, source_format=self.source_format,
            harness=self.harness, harness_version=self.harness_version, protocol=self.protocol,
            files=list(self.files), scores=cat([p.scores for p in parts], self.scores),
            summaries=self.summaries, texts=cat([p.texts for p in parts], self.texts),
            tasks=cat([p.tasks for p in parts], self.tasks), source_key=self.source_key,
            warnings=list(self.warnings) + [w for p in parts for w in p.warnings])


def empty_frame(columns: tuple[str, ...]) -> pd.DataFrame:
    """An empty DataFrame with the given canonical columns."""
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


def rows_key(name: str, model: str | None, scores: pd.DataFrame) -> str:
    """``"rows:" + sha256`` of one run's own content, independent of row order, file name and
    format: the run name and model, then its score rows (task, metric, item_id, answer_idx,
    score, cluster) sorted by the first four, as CSV (scores in Python's shortest round-trip
    float text). ``SourceFile.run_key`` of the runs of a tidy table with several models; the
    store recomputes it from stored scores when it upgrades a version-1 store."""
    cols = ["task", "metric", "item_id", "answer_idx", "score", "cluster"]
    rows = scores[cols].astype({"task": str, "metric": str, "item_id": str, "answer_idx": "int64",
                                "score": "float64"})
    rows = rows.sort_values(cols[:4], kind="stable")
    h = hashlib.sha256()
    h.update(f"{name}\x1f{model or ''}\n".encode("utf-8"))
    h.update(rows.to_csv(index=False, header=False, lineterminator="\n").encode("utf-8"))
    return "rows:" + h.hexdigest()


@dataclass(frozen=True)
class PairedItems:
    """Two sides of one task item by item (``Store.paired_items``): run A on ``metric_a`` and
    run B on ``metric_b`` (two runs, or two metric variants of one run).

    ``items``: the store's integer item keys of every item either side has, ascending
    (``Store.item_labels`` names them); ``score_a`` / ``score_b``: the per-item mean over
    answers, NaN where that side lacks the item; ``cluster``: the cluster's integer label
    key (side A's, else side B's; -1 = no cluster), equal keys meaning equal labels within
    the task; ``hash_match``: False where both sides recorded an item or prompt hash and
    they differ.
    """

    task: str
    metric_a: str
    metric_b: str
    items: np.ndarray       # int64 ascending
    score_a: np.ndarray     # float64, NaN = side A lacks the item
    score_b: np.ndarray     # float64, NaN = side B lacks the item
    cluster: np.ndarray     # int64 label key, -1 = none
    hash_match: np.ndarray  # bool

    @property
    def shared(self) -> np.ndarray:
        """Mask of the items both sides have."""
        return ~np.isnan(self.score_a) & ~np.isnan(self.score_b)


@dataclass(frozen=True)
class ItemMatrix:
    """Per-item means of one (task, metric) cell as an items x runs matrix
    (``Store.item_matrices``).

    ``scores[i, j]`` is the mean over the answers of item ``items[i]`` in run ``run_ids[j]``
    (NaN where that run has no score for the item). ``items`` are the store's integer item
    keys, stable for the life of the store (``Store.item_labels`` turns them back into the
    harness's item ids). ``binary``: every raw score of the cell (in these runs) is 0 or 1;
    with several answers per item the means may still be fractions.
    """

    task: str
    metric: str
    run_ids: np.ndarray   # int64 ascending: the asked runs that have item scores for the cell
    items: np.ndarray     # int64 ascending: the store's integer item keys
    scores: np.ndarray    # float64 (len(items), len(run_ids)); NaN where the run lacks the item
    binary: bool
