"""The ingest's entry points: ``parse_paths``/``parse_uploads`` (all or nothing) and
``read_paths``/``read_uploads`` (a batch: every good run, every bad file with its reason)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from evalcore.errors import IngestError, NoScoresError
from evalcore.ingest._common import Progress, Source
from evalcore.ingest.batch import IngestBatch, no_scores_reason, run_files
from evalcore.ingest.reading import parse_sources, skipped_note
from evalcore.ingest.sources import path_sources, upload_sources
from evalcore.model import ParsedRun


def parse_paths(paths: Iterable[str | Path], progress: Progress | None = None,
                cluster_key: str | None = None, *, lazy: bool = True,
                columns: dict[str, str] | None = None) -> list[ParsedRun]:
    """Parse files, folders (recursively; hidden files and unknown extensions are skipped
    with a warning) and zips into runs. All or nothing: any bad file raises ``IngestError``.
    Runs without scores are returned as read (``read_paths`` leaves them out).

    ``lazy`` (default): an lm_eval run whose JSONL sample logs on disk hold at least
    ``reading.LAZY_BYTES`` comes back as a ``LazyRun``: its results file is read and its sample
    files hashed now, their records when ``Store.ingest`` writes the run, one task at a
    time, so the whole run never sits in memory (1,000,000 lines: under 1 GB). A bad line
    in such a file raises its ``IngestError`` from ``Store.ingest``, which then rolls back
    (or, with ``skip_invalid``, leaves that run out). ``lazy=False``: every run is read
    now (``LazyRun.materialize()`` gives the same from a lazy one)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    sources, skipped = path_sources(paths)
    return parse_sources(sources, skipped, progress, cluster_key, lazy=lazy, columns=columns)


def parse_uploads(files: list[tuple[str, bytes]], progress: Progress | None = None,
                  cluster_key: str | None = None, *,
                  columns: dict[str, str] | None = None) -> list[ParsedRun]:
    """Parse in-memory uploads ``[(file name, bytes), ...]`` (the dashboard's path)."""
    return parse_sources(upload_sources(files), [], progress, cluster_key, columns=columns)


def read_paths(paths: Iterable[str | Path], progress: Progress | None = None,
               cluster_key: str | None = None, *, strict: bool = False,
               lazy: bool = True, columns: dict[str, str] | None = None) -> IngestBatch:
    """Read files, folders and zips as a batch (the CLI's ``ingest``).

    Default: one bad file does not block the rest: every good run comes back in ``runs``
    and every bad file in ``problems``; a run is whole or absent (when one file of a run
    fails, the run is left out and its other files are listed too). Files that hold no
    usable score are left out with the reason (``NoScoresError``). ``strict=True``: all or
    nothing: the first problem of either kind is raised. ``lazy`` as for ``parse_paths``:
    a lazy run's bad sample line is found by ``Store.ingest`` (``skip_invalid=True`` leaves
    the run out and names the file and line in ``report.rejected``).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    sources, skipped = path_sources(paths)
    return _read_batch(sources, skipped, progress, cluster_key, strict, lazy, columns)


def read_uploads(files: list[tuple[str, bytes]], progress: Progress | None = None,
                 cluster_key: str | None = None, *, strict: bool = False,
                 columns: dict[str, str] | None = None) -> IngestBatch:
    """``read_paths`` for in-memory uploads ``[(file name, bytes), ...]`` (the upload page)."""
    return _read_batch(upload_sources(files), [], progress, cluster_key, strict,
                       columns=columns)


def _read_batch(sources: list[Source], skipped: list[str], progress: Progress | None,
                cluster_key: str | None, strict: bool, lazy: bool = False,
                columns: dict[str, str] | None = None) -> IngestBatch:
    problems: list[IngestError] | None = None if strict else []
    parsed = parse_sources(sources, skipped, progress, cluster_key, problems, lazy=lazy,
                            columns=columns)
    found = problems if problems is not None else []
    runs = []
    for run in parsed:
        reason = no_scores_reason(run)
        if reason is None:
            runs.append(run)
            continue
        err = NoScoresError(run_files(run), reason)
        if strict:
            raise err
        found.append(err)
    if skipped and runs and not any(w.startswith("skipped (not a known") for w in runs[0].warnings):
        runs[0].warnings.append(skipped_note(skipped))
    return IngestBatch(runs=runs, problems=found, skipped=list(skipped))
