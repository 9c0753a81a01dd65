"""Batches of inputs: what reading them gave (``IngestBatch``), why a run holds no usable
score (``no_scores_reason``) and one report row per file that was not stored
(``problem_row``). The reading itself is ``evalcore.ingest.read_paths`` / ``read_uploads``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from evalcore.errors import IngestError, NoScoresError
from evalcore.ingest import lm_eval
from evalcore.model import LazyRun, ParsedRun


@dataclass
class IngestBatch:
    """What reading a batch of inputs gave.

    ``runs``: the runs that hold data (item scores or at least one reported value), ready
    for ``Store.ingest``. ``problems``: one ``IngestError`` per file that gave no run, each
    naming the file, the place and the reason: unreadable input (bad JSON, an unknown
    format, a Git LFS pointer, a file of a run whose other file failed) and, as
    ``NoScoresError``, files that were read but hold no usable score. ``skipped``: files
    not read because their extension is not one evalbars reads.
    """

    runs: list[ParsedRun]
    problems: list[IngestError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def bad_files(self) -> list[IngestError]:
        """Problems that are bad input (not the files that were fine but held no scores)."""
        return [p for p in self.problems if not isinstance(p, NoScoresError)]

    @property
    def no_scores(self) -> list[NoScoresError]:
        return [p for p in self.problems if isinstance(p, NoScoresError)]


def problem_row(exc: Exception) -> dict[str, str | None]:
    """One file that was not stored, for a report: ``{"file", "where", "kind", "reason"}``
    with kind "bad input" (an ``IngestError``), "no scores" (a ``NoScoresError``) or
    "rejected by the store" (a ``StoreError`` from ``Store.ingest(skip_invalid=True)``, whose
    message names the run and its files)."""
    if isinstance(exc, NoScoresError):
        return {"file": exc.file, "where": None, "kind": "no scores",
                "reason": f"no scores: {exc.reason}"}
    if isinstance(exc, IngestError):
        reason = f"expected {exc.expected}" + (f" ({exc.detail})" if exc.detail else "")
        return {"file": exc.file, "where": exc.where, "kind": "bad input", "reason": reason}
    return {"file": None, "where": None, "kind": "rejected by the store", "reason": str(exc)}


def run_files(run: ParsedRun) -> str:
    """The run's file names, as one text for a report."""
    names = [f.name for f in run.files] or [run.name]
    return names[0] if len(names) == 1 else ", ".join(names)


def _has_data(run: ParsedRun) -> bool:
    if isinstance(run, LazyRun):   # read later: Store.ingest rejects it if it holds nothing
        return True
    if run.scores is not None and len(run.scores):
        return True
    if run.summaries is None or not len(run.summaries):
        return False
    values = pd.to_numeric(run.summaries["value"], errors="coerce").to_numpy(dtype="float64")
    return bool(np.isfinite(values).any())


def no_scores_reason(run: ParsedRun) -> str | None:
    """None when the run holds data (an item score or a finite reported value); else why it
    holds none, in the user's words, from what the parser recorded (the log's scorers and
    samples, the file's kind) and its warnings (which values were unusable)."""
    if _has_data(run):
        return None
    proto = run.protocol or {}
    n_texts = 0 if run.texts is None else len(run.texts)
    if run.source_format == "inspect":
        if not proto.get("scorers"):
            reason = "the log has no scorer"
        elif n_texts == 0:
            reason = "the log has no samples"
        else:
            reason = f"none of its {n_texts} sample(s) has a usable score"
        if proto.get("status") not in (None, "success") and not any(
                "log status" in w for w in run.warnings):
            reason += f" (log status {proto['status']!r})"
    elif run.source_format == "helm":
        reason = "every metric was skipped: no metric has per-instance values"
    elif run.source_format == "lm_eval":
        kinds = {f.format for f in run.files}
        reason = ("no metric value in the results file is a number" if lm_eval.RESULTS in kinds
                  else "no sample has a numeric metric value")
    else:
        reason = "no item score and no reported metric value"
    notes = [_without_file_prefix(w, run) for w in run.warnings[:3]]
    if notes:
        reason += "; " + "; ".join(notes)
    return reason


def _without_file_prefix(warning: str, run: ParsedRun) -> str:
    for f in run.files:
        if warning.startswith(f.name + ": "):
            return warning[len(f.name) + 2:]
    return warning
