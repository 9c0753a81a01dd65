"""Ingest: files in, canonical ``ParsedRun`` records out (no SQL, no Streamlit).

CONTRACT (stub written by the lead; the ingest owner fills in the bodies and may add
functions, but must not rename or remove these):

- ``parse_paths(paths, progress=None) -> list[ParsedRun]``: files, folders (recursively)
  and zips. Files of one run (an lm_eval results JSON and its samples JSONL, a HELM run
  directory) come back as ONE ParsedRun.
- ``parse_uploads(files, progress=None) -> list[ParsedRun]``: the same for in-memory
  uploads given as (file name, bytes) pairs (the dashboard's path).
- ``progress(done_bytes, total_bytes, current_file)`` is called now and then if given.
- Any unreadable input raises ``IngestError(file, where, expected)``; nothing partial is
  returned.

Added by the ingest owner
-------------------------
- ``cluster_key`` (both parse functions): the field to use as the cluster of each item: an
  inspect sample-metadata field, or a top-level field of lm_eval's ``doc`` (``"passage_id"``
  or ``"doc.passage_id"``). ``None``: auto-pick an obvious grouping key per log / per
  lm_eval task (see ``inspect_log.pick_cluster_key``, ``lm_eval.pick_cluster_key``),
  recorded in the (task) protocol as ``cluster_key`` with ``cluster_key_candidates`` and
  announced in a warning; ``""``: no clusters.
- ``detect_format(name, head) -> str``: the format of a file from its first bytes (content
  first; the name only breaks ties). One of ``FORMATS`` or ``"zip"`` / ``"unknown"``.
- ``read_paths(paths, progress=None, cluster_key=None, strict=False) -> IngestBatch`` and
  ``read_uploads(...)``: the batch entry points of the CLI and the upload page. One bad
  file does not block the rest: every good run is returned, every bad file is listed with
  its place and reason (a run stays whole: a run one of whose files failed is left out);
  runs that hold no usable score are left out with the reason (``NoScoresError``, e.g.
  "the log has no scorer"); a Git LFS pointer is named as such. ``strict=True`` is all or
  nothing (the first problem is raised). ``parse_paths``/``parse_uploads`` are the strict
  parsers underneath and return runs without scores as read.
- ``max_file_bytes()``: the size limit (``$EVALBARS_MAX_FILE_MB``, default 2048 MB), checked
  before any file is read.
- ``lazy`` (``parse_paths`` / ``read_paths``, default True): an lm_eval run whose JSONL sample
  logs on disk hold ``LAZY_BYTES`` or more comes back as a ``LazyRun`` (``evalcore.model``),
  read task by task by ``Store.ingest``; a bad line in it is then raised by ``Store.ingest``
  (which rolls back), not by the parse. Uploads are always read at once.

- ``columns`` (all four): a tidy column map (``tidy.parse_columns("model=llm,
  task=qset,item_id=question_id,score=correct")``) for tidy tables whose columns have other
  names; a JSONL file whose first row holds the mapped columns is read as a tidy table.

Formats, one module each: ``lm_eval`` (results JSON 0.3/0.4.x, sample logs JSONL/JSON
array, embedded samples), ``lighteval`` (lighteval and Open LLM Leaderboard v1
``results_<ts>.json``: summaries only), ``inspect_log`` (``.eval`` zips with deflate or zstd members,
``.json`` logs v1/v2), ``helm`` (run folders, suite folders, ``benchmark_output/`` trees,
zips of these), ``eee`` (Every Eval Ever aggregate JSON with the instance-level JSONL it
names beside it), ``tidy`` (CSV, JSONL, Parquet with ``model``/``run``, ``task``, ``item_id``,
``score`` [, ``metric``, ``answer``, ``cluster``]: the escape hatch for any other harness).
"""

from __future__ import annotations

import logging
import os
import posixpath
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

import numpy as np

from evalcore.errors import IngestError, NoScoresError
from evalcore.ingest import eee, helm, inspect_log, lighteval, lm_eval, tidy
from evalcore.ingest.batch import IngestBatch, no_scores_reason, problem_row, run_files
from evalcore.ingest.detect import (
    EXPECTED,
    FORMATS,
    KNOWN_SUFFIXES,
    LFS_POINTER,
    classify as _classify,
    detect_format,
)
from evalcore.ingest._common import (
    MAX_ABS_SCORE,
    MAX_ANSWER_IDX,
    Progress,
    Source,
    call_progress,
    check_size,
    max_file_bytes,
)
from evalcore.ingest._zip import UnzipBudget, ZipArchive, member_folder
from evalcore.model import LazyRun, ParsedRun

log = logging.getLogger(__name__)

# lm_eval sample logs of one run read in parallel (threads; DuckDB releases the GIL) when
# there are several on disk holding at least PARALLEL_READ_BYTES together
READ_WORKERS = min(4, os.cpu_count() or 1)
PARALLEL_READ_BYTES = 32 << 20
# parse_paths / read_paths: an lm_eval run whose sample logs on disk hold at least this
# many bytes comes back as a LazyRun (read task by task while Store.ingest writes it)
LAZY_BYTES = 256 << 20

__all__ = ["parse_paths", "parse_uploads", "read_paths", "read_uploads", "IngestBatch",
           "no_scores_reason", "problem_row", "detect_format", "max_file_bytes", "FORMATS",
           "LFS_POINTER", "EXPECTED", "KNOWN_SUFFIXES"]


# ---------------------------------------------------------------------------------------
# Gathering sources
# ---------------------------------------------------------------------------------------
def _path_sources(paths: Iterable[str | Path]) -> tuple[list[Source], list[str]]:
    """Sources of the files given and of the files inside the folders given (recursively).

    Inside a folder, symlinks are followed only when they resolve to a place inside that
    folder; others (``/etc/passwd``, ``../secret``, broken or looping links) are skipped and
    named in a warning, so nothing outside what the user named is read."""
    sources: list[Source] = []
    skipped: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            root = path.resolve()
            for f in sorted(_walk(path, root, skipped)):
                if any(part.startswith(".") for part in f.relative_to(path).parts):
                    continue
                if f.suffix.lower() not in KNOWN_SUFFIXES:
                    skipped.append(str(f))
                    continue
                sources.append(Source(name=str(f), path=f, folder=str(f.parent)))
        elif path.is_file():
            sources.append(Source(name=str(p), path=path, folder=str(path.parent)))
        else:
            raise IngestError(str(p), None, "an existing file or folder", "not found")
    return sources, skipped


def _inside(target: Path, root: Path) -> bool:
    return target == root or root in target.parents


def _walk(folder: Path, root: Path, skipped: list[str]) -> list[Path]:
    """Regular files under ``folder`` (not following symlinks that leave ``root``)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        d = Path(dirpath)
        for name in list(dirnames):
            sub = d / name
            if sub.is_symlink():
                dirnames.remove(name)
                try:
                    target = sub.resolve(strict=True)
                except (OSError, RuntimeError):
                    target = None
                if target is None or not _inside(target, root):
                    skipped.append(f"{sub} (symlink to outside the folder, not followed)")
                # a link to a folder inside the root: its files are reached directly
        for name in filenames:
            f = d / name
            if f.is_symlink():
                try:
                    target = f.resolve(strict=True)
                except (OSError, RuntimeError):
                    skipped.append(f"{f} (broken symlink)")
                    continue
                if not _inside(target, root):
                    skipped.append(f"{f} (symlink to outside the folder, not followed)")
                    continue
            if f.is_file():
                out.append(f)
    return out


def _expand_zip(src: Source, skipped: list[str], budget: UnzipBudget | None = None
                ) -> tuple[list[Source], str | None]:
    """A zip's members as sources (streamed from the archive when read); (members, kind)
    with kind 'inspect' | 'helm' | None. Sizes, ratios and the ingest's ``budget`` are
    checked before anything is unpacked."""
    with ZipArchive(src, budget) as z:
        names = z.names
        bases = {posixpath.basename(n) for n in names}
        if "header.json" in names or "_journal/start.json" in names:
            return [], "inspect"
        members: list[Source] = []
        for n in names:
            base = posixpath.basename(n)
            if not base or base.startswith(".") or "__MACOSX" in n:
                continue
            if posixpath.splitext(base)[1].lower() not in KNOWN_SUFFIXES:
                skipped.append(f"{src.name}!{n}")
                continue
            members.append(Source(name=f"{src.name}!{n}", archive=src, member=n,
                                  folder=f"{src.name}!{member_folder(n)}",
                                  _size=z.info(n).file_size))
        if not members:
            raise IngestError(src.name, "zip members", "at least one known file "
                              "(.json, .jsonl, .eval, .csv, .parquet)",
                              f"members: {', '.join(names[:6]) or 'none'}")
        kind = "helm" if "per_instance_stats.json" in bases else None
        return members, kind



# ---------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------
def _layout_guard(name: str, parse, *args, **kwargs):
    """``parse(*args)``; a value the parser's own checks do not name (a fuzzed or
    hand-edited file: a value of an unexpected type, a number too large to convert, an index
    out of range) becomes an ``IngestError`` naming the file instead of an internal error,
    so the other files of the batch are read as usual."""
    try:
        return parse(*args, **kwargs)
    except IngestError:
        raise
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        raise IngestError(name, "file layout", "the layout this harness writes (objects, lists "
                          "and values where it puts them)",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None
    except (ValueError, OverflowError) as exc:   # ValueError includes pyarrow's ArrowInvalid
        raise IngestError(name, "a value", "values that fit (numbers within range, counts "
                          "and indices that are whole numbers of a usual size)",
                          f"{type(exc).__name__}: {str(exc)[:80]}") from None


def _checked_pieces(run: LazyRun) -> LazyRun:
    """``run`` whose pieces pass ``_check_magnitudes`` (and ``_layout_guard``) as they are
    read."""
    read = run.pieces
    name = run.files[0].name if run.files else run.name

    def pieces():
        stream = iter(read())
        while (piece := _layout_guard(name, next, stream, None)) is not None:
            _check_magnitudes(piece, name)
            yield piece

    run.pieces = pieces
    return run


def _check_magnitudes(run: ParsedRun, name: str | None = None) -> None:
    """Every format: item scores finite and within +-MAX_ABS_SCORE, summary values within it
    (NaN allowed: a missing value), so means and variances of what is stored stay finite.
    The parsers check with line numbers where they can; this names task, metric and item
    (and ``name`` or the run's first file)."""
    name = name or (run.files[0].name if run.files else run.name)
    sc = run.scores["score"].to_numpy(dtype="float64")
    bad = np.flatnonzero(~(np.abs(sc) <= MAX_ABS_SCORE))
    if len(bad):
        r = run.scores.iloc[int(bad[0])]
        raise IngestError(name, f"task {r['task']!r}, metric {r['metric']!r}, item "
                          f"{r['item_id']!r}", f"a finite score within +-{MAX_ABS_SCORE:g}",
                          f"found {float(sc[bad[0]])!r}")
    for col in ("value", "stderr"):
        v = run.summaries[col].to_numpy(dtype="float64")
        bad = np.flatnonzero(np.abs(v) > MAX_ABS_SCORE)
        if len(bad):
            r = run.summaries.iloc[int(bad[0])]
            raise IngestError(name, f"summary of task {r['task']!r}, metric {r['metric']!r}",
                              f"a {col} within +-{MAX_ABS_SCORE:g} or missing",
                              f"found {float(v[bad[0]])!r}")
    answer = run.scores["answer_idx"].to_numpy()
    bad = np.flatnonzero((answer < 0) | (answer > MAX_ANSWER_IDX))
    if len(bad):
        r = run.scores.iloc[int(bad[0])]
        raise IngestError(name, f"task {r['task']!r}, metric {r['metric']!r}, item "
                          f"{r['item_id']!r}", f"an answer index (epoch, sample) from 0 to "
                          f"{MAX_ANSWER_IDX:,}", f"found {int(answer[bad[0]])}")


def parse_paths(paths: Iterable[str | Path], progress: Progress | None = None,
                cluster_key: str | None = None, *, lazy: bool = True,
                columns: dict[str, str] | None = None) -> list[ParsedRun]:
    """Parse files, folders (recursively; hidden files and unknown extensions are skipped
    with a warning) and zips into runs. All or nothing: any bad file raises ``IngestError``.
    Runs without scores are returned as read (``read_paths`` leaves them out).

    ``lazy`` (default): an lm_eval run whose JSONL sample logs on disk hold at least
    ``LAZY_BYTES`` comes back as a ``LazyRun``: its results file is read and its sample
    files hashed now, their records when ``Store.ingest`` writes the run, one task at a
    time, so the whole run never sits in memory (1,000,000 lines: under 1 GB). A bad line
    in such a file raises its ``IngestError`` from ``Store.ingest``, which then rolls back
    (or, with ``skip_invalid``, leaves that run out). ``lazy=False``: every run is read
    now (``LazyRun.materialize()`` gives the same from a lazy one)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    sources, skipped = _path_sources(paths)
    return _parse_sources(sources, skipped, progress, cluster_key, lazy=lazy, columns=columns)


def parse_uploads(files: list[tuple[str, bytes]], progress: Progress | None = None,
                  cluster_key: str | None = None, *,
                  columns: dict[str, str] | None = None) -> list[ParsedRun]:
    """Parse in-memory uploads ``[(file name, bytes), ...]`` (the dashboard's path)."""
    return _parse_sources(_upload_sources(files), [], progress, cluster_key, columns=columns)


def _upload_sources(files: list[tuple[str, bytes]]) -> list[Source]:
    sources = []
    for name, data in files:
        norm = name.replace("\\", "/")
        sources.append(Source(name=name, data=bytes(data), folder=posixpath.dirname(norm)))
    return sources


# ---------------------------------------------------------------------------------------
# Batches: every good run, and every file that gave none with its reason
# ---------------------------------------------------------------------------------------
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
    sources, skipped = _path_sources(paths)
    return _read_batch(sources, skipped, progress, cluster_key, strict, lazy, columns)


def read_uploads(files: list[tuple[str, bytes]], progress: Progress | None = None,
                 cluster_key: str | None = None, *, strict: bool = False,
                 columns: dict[str, str] | None = None) -> IngestBatch:
    """``read_paths`` for in-memory uploads ``[(file name, bytes), ...]`` (the upload page)."""
    return _read_batch(_upload_sources(files), [], progress, cluster_key, strict,
                       columns=columns)


def _read_batch(sources: list[Source], skipped: list[str], progress: Progress | None,
                cluster_key: str | None, strict: bool, lazy: bool = False,
                columns: dict[str, str] | None = None) -> IngestBatch:
    problems: list[IngestError] | None = None if strict else []
    parsed = _parse_sources(sources, skipped, progress, cluster_key, problems, lazy=lazy,
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
        runs[0].warnings.append(_skipped_note(skipped))
    return IngestBatch(runs=runs, problems=found, skipped=list(skipped))


def _skipped_note(skipped: list[str]) -> str:
    return ("skipped (not a known file type, or a symlink leaving the folder): "
            + ", ".join(skipped[:20])
            + (f" and {len(skipped) - 20} more" if len(skipped) > 20 else ""))


def _parse_sources(sources: list[Source], skipped: list[str], progress: Progress | None,
                   cluster_key: str | None,
                   problems: list[IngestError] | None = None, *,
                   lazy: bool = False,
                   columns: dict[str, str] | None = None) -> list[ParsedRun]:
    """Runs from sources. ``problems is None``: all or nothing (the first ``IngestError`` is
    raised). Otherwise each bad file is appended to ``problems`` and the rest goes on; a
    run whose file failed is left out whole (its other files are listed too)."""
    if not sources:
        raise IngestError(", ".join(skipped) or "(no input)", None,
                          "at least one file of a known format", "nothing to read")

    def failed(exc: IngestError) -> None:
        if problems is None:
            raise exc
        problems.append(exc)

    def held_back(src: Source, because: IngestError) -> None:
        failed(IngestError(src.name, None, "every file of its run to be readable",
                           f"not stored: {because.file} of the same run could not be read; "
                           "a run is stored whole or not at all"))

    noise = helm.noise_names([s.name for s in sources] + skipped)  # HELM inputs, caches
    if noise:
        log.debug("skipped HELM inputs and caches: %s", ", ".join(sorted(noise)))
        sources = [s for s in sources if s.name not in noise]
        skipped[:] = [s for s in skipped if s not in noise]
    ok_sources = []
    for src in sources:                       # limits first, before reading anything
        try:
            check_size(src.name, src.size)
            ok_sources.append(src)
        except IngestError as exc:
            failed(exc)
    sources = ok_sources
    total = sum(s.size for s in sources)
    done = 0
    by_fmt: dict[str, list[Source]] = {}
    helm_parts: dict[str, dict[str, Source]] = {}
    helm_schemas: dict[str, Source] = {}
    formats: dict[str, str] = {}

    def add(src: Source, fmt: str) -> None:
        formats[src.name] = fmt
        if fmt in helm.UNUSED:
            log.debug("%s", helm.describe(fmt, src.name))
        elif fmt == helm.SCHEMA:
            helm_schemas[src.folder] = src
        elif fmt in helm.PART_FORMATS:
            parts = helm_parts.setdefault(src.folder, {})
            if fmt in parts:
                raise IngestError(src.name, None, "one HELM run per folder",
                                  f"{parts[fmt].name} is also a {fmt} file of folder {src.folder!r}")
            parts[fmt] = src
        else:
            by_fmt.setdefault(fmt, []).append(src)

    budget = UnzipBudget()
    for src in sources:
        try:
            fmt = _classify(src, columns)
            if fmt != "zip":
                add(src, fmt)
                continue
            members, kind = _expand_zip(src, skipped, budget)
        except IngestError as exc:
            failed(exc)
            continue
        if kind == "inspect":
            add(src, inspect_log.EVAL_ZIP)
            continue
        noise = helm.noise_names([m.name for m in members])
        for m in members:
            if m.name in noise:
                log.debug("skipped HELM input or cache %s", m.name)
                continue
            try:
                check_size(m.name, m.size)
                mfmt = _classify(m, columns)
                if mfmt == "zip":
                    raise IngestError(src.name, f"zip member {m.name}", "no nested archives")
                add(m, mfmt)
            except IngestError as exc:
                failed(exc)

    zipped_noise = helm.noise_names(skipped + list(formats))   # e.g. a zip's groups/latex/*.tex
    skipped[:] = [s for s in skipped if s not in zipped_noise]
    runs: list[ParsedRun] = []

    def step(src_name: str, size: int) -> None:
        nonlocal done
        done += size
        call_progress(progress, min(done, total), total, src_name)

    # lm_eval: results files and sample logs, paired into runs
    results = []
    bad_results: list[tuple[Source, IngestError]] = []
    for src in by_fmt.get(lm_eval.RESULTS, []):
        try:
            results.append(_layout_guard(src.name, lm_eval.read_results, src))
        except IngestError as exc:
            failed(exc)
            bad_results.append((src, exc))
    sample_srcs = by_fmt.get(lm_eval.SAMPLES_JSONL, []) + by_fmt.get(lm_eval.SAMPLES_JSON, [])
    if bad_results:   # sample logs that would have paired with a failed results file
        kept = []
        for s in sample_srcs:
            owner = next((exc for r, exc in bad_results if _may_pair(r, s)), None)
            if owner is None:
                kept.append(s)
            else:
                held_back(s, owner)
        sample_srcs = kept
    attached, alone = lm_eval.pair_samples(results, sample_srcs)

    def read_samples(src: Source, task: str) -> lm_eval.SampleColumns:
        if formats[src.name] == lm_eval.SAMPLES_JSON:
            cols = _layout_guard(src.name, lm_eval.read_samples_json_array, src, task,
                                 cluster_key)
        else:
            cols = _layout_guard(src.name, lm_eval.read_samples_jsonl, src, task, progress,
                                 done, total, cluster_key)
        step(src.name, src.size)
        return cols

    def read_group(group: list[tuple[Source, str]]
                   ) -> list[tuple[Source, str, lm_eval.SampleColumns]]:
        """The sample logs of one run; large logs on disk are read ``READ_WORKERS`` at a time
        (DuckDB's JSON reader keeps about one core busy per file). Progress is then reported
        per file, from this thread only; the first file that fails (in the given order)
        raises, as in a sequential read."""
        eligible = [s for s, _ in group
                    if s.path is not None and formats[s.name] != lm_eval.SAMPLES_JSON]
        workers = min(READ_WORKERS, len(eligible))
        ids = {id(s) for s in eligible}
        if workers < 2 or sum(s.size for s in eligible) < PARALLEL_READ_BYTES:
            return [(s, t, read_samples(s, t)) for s, t in group]
        out = []
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evalbars-read") as pool:
            futures = [pool.submit(_layout_guard, s.name, lm_eval.read_samples_jsonl, s, t,
                                   None, 0, 0, cluster_key)
                       if id(s) in ids else None for s, t in group]
            try:
                for (s, t), fut in zip(group, futures):
                    out.append((s, t, fut.result() if fut is not None else read_samples(s, t)))
                    if fut is not None:
                        step(s.name, s.size)
            finally:
                for fut in futures:
                    if fut is not None:
                        fut.cancel()
        return out

    def read_quiet(group: list[tuple[Source, str]]
                   ) -> list[tuple[Source, str, lm_eval.SampleColumns]]:
        """A lazy run's piece: its files read one after the other, no progress calls."""
        return [(s, t, _layout_guard(s.name, lm_eval.read_samples_jsonl, s, t, None, 0, 0,
                                     cluster_key))
                for s, t in group]

    def lazy_ok(res: lm_eval.ResultsFile | None, group: list[tuple[Source, str]]) -> bool:
        return (lazy and bool(group) and (res is None or not res.embedded)
                and all(s.path is not None and formats[s.name] == lm_eval.SAMPLES_JSONL
                        for s, _ in group)
                and sum(s.size for s, _ in group) >= LAZY_BYTES)

    def build(res: lm_eval.ResultsFile | None, group: list[tuple[Source, str]]) -> None:
        """One lm_eval run, all or nothing: a failed file leaves the whole run out."""
        members = ([res.src] if res is not None else []) + [s for s, _ in group]
        if lazy_ok(res, group):
            try:
                with ThreadPoolExecutor(max_workers=2, thread_name_prefix="evalbars-sha") as pool:
                    list(pool.map(lambda s: s.sha256(), [s for s, _ in group]))
                run = lm_eval.build_lazy_run(res, group, formats, read_quiet)
            except (IngestError, OSError) as exc:
                if not isinstance(exc, IngestError):
                    exc = IngestError(group[0][0].name, None, "a readable file", str(exc))
                failed(exc)
                for other in members:
                    if other.name != exc.file:
                        held_back(other, exc)
                return
            runs.append(_checked_pieces(run))
            for s, _ in group:
                step(s.name, s.size)
            return
        try:
            samples = read_group(group)
            runs.append(_layout_guard(members[0].name, lm_eval.build_run, res, samples,
                                      formats, cluster_key))
        except IngestError as exc:
            failed(exc)
            for other in members:
                if other.name != exc.file:
                    held_back(other, exc)

    for i, res in enumerate(results):
        build(res, attached[i])
        step(res.src.name, res.src.size)
    alone_groups: dict[str, list[tuple[Source, str]]] = {}
    for s, t in alone:
        # one run per (folder, timestamp); a file without a timestamp is its own run unless
        # it sits in a folder on disk (lm_eval's per-model output folder)
        key = lm_eval.samples_ts(s) or (s.name if s.path is None or not s.folder else "")
        alone_groups.setdefault(f"{s.folder}|{key}", []).append((s, t))
    for group in alone_groups.values():
        build(None, group)

    # lighteval / Open LLM Leaderboard v1 results: one run each, with the per-item details
    # files of the same run (same timestamp); details without their results file are skipped
    details = by_fmt.get(lighteval.DETAILS, [])
    noted: set[str] = set()
    for src in by_fmt.get(lighteval.RESULTS, []):
        mine = lighteval.details_for(src, details)
        noted.update(d.name for d in mine)
        try:
            runs.append(_layout_guard(src.name, lighteval.parse_results, src, mine))
        except IngestError as exc:
            failed(exc)
            for other in [src, *mine]:
                if other.name != exc.file:
                    held_back(other, exc)
        step(src.name, src.size)
        for d in mine:
            step(d.name, d.size)
    for d in details:
        if d.name not in noted:
            skipped.append(f"{d.name} (lighteval per-item details without their results file: "
                           f"not read)")
            step(d.name, d.size)

    # Every Eval Ever: one run per aggregate file, with the instance-level file it names in
    # its folder; a samples file no aggregate claims is read as a tidy table (below)
    _read_eee(by_fmt, formats, runs, failed, held_back, step)

    # inspect logs: one run each
    for fmt, parse in ((inspect_log.EVAL_ZIP, inspect_log.parse_eval),
                       (inspect_log.JSON_LOG, inspect_log.parse_json_log)):
        for src in by_fmt.get(fmt, []):
            try:
                runs.append(_layout_guard(src.name, parse, src, cluster_key))
            except IngestError as exc:
                failed(exc)
            step(src.name, src.size)

    # HELM: run folders, one run per (suite folder, model); a bad folder is left out whole
    def helm_failed(parts: dict[str, Source], exc: IngestError) -> None:
        failed(exc)
        for p in parts.values():
            if p.name != exc.file:
                held_back(p, exc)

    if helm_parts:
        first = next(iter(next(iter(helm_parts.values())).values())).name
        try:
            runs.extend(_layout_guard(first, helm.parse_runs, helm_parts, helm_schemas,
                                      on_error=helm_failed))
        except IngestError as exc:
            failed(exc)
        for p in [p for parts in helm_parts.values() for p in parts.values()]:
            step(p.name, p.size)
        for p in helm_schemas.values():
            step(p.name, p.size)

    # tidy tables: one run per model/run value
    for fmt in (tidy.CSV, tidy.JSONL, tidy.PARQUET):
        for src in by_fmt.get(fmt, []):
            try:
                runs.extend(_layout_guard(src.name, tidy.parse_table, src, fmt, columns))
            except IngestError as exc:
                failed(exc)
            step(src.name, src.size)

    kept = []
    for run in runs:
        try:
            _check_magnitudes(run)   # a LazyRun: its summaries here, its pieces when read
            kept.append(run)
        except IngestError as exc:
            failed(exc)
    runs = kept
    if skipped and runs:
        runs[0].warnings.append(_skipped_note(skipped))
    call_progress(progress, total, total, "")
    return runs


def _read_eee(by_fmt: dict[str, list[Source]], formats: dict[str, str], runs: list[ParsedRun],
              failed, held_back, step) -> None:
    """Every Eval Ever aggregates with their companions (``eee.parse_aggregate``), all or
    nothing per run; unclaimed instance-level files go on to the tidy reader."""
    beside: dict[str, dict[str, Source]] = {}
    for s in by_fmt.get(eee.SAMPLES, []):
        beside.setdefault(s.folder, {})[s.basename] = s
    claimed: set[str] = set()
    for src in by_fmt.get(eee.AGGREGATE, []):
        mine = beside.get(src.folder, {})
        try:
            run, comp = _layout_guard(src.name, eee.parse_aggregate, src, mine)
        except IngestError as exc:
            failed(exc)
            stem = posixpath.splitext(src.basename)[0]
            for name in (f"{stem}_samples.jsonl", f"{stem}.jsonl", exc.file):
                other = mine.get(posixpath.basename(name.replace("!", "/")))
                if other is not None and other.name not in claimed:
                    claimed.add(other.name)
                    if other.name != exc.file:
                        held_back(other, exc)
            if exc.file != src.name:
                held_back(src, exc)
            step(src.name, src.size)
            continue
        runs.append(run)
        if comp is not None:
            claimed.add(comp.name)
            step(comp.name, comp.size)
        step(src.name, src.size)
    for s in by_fmt.get(eee.SAMPLES, []):
        if s.name not in claimed:
            formats[s.name] = tidy.JSONL
            by_fmt.setdefault(tidy.JSONL, []).append(s)


def _may_pair(results: Source, samples: Source) -> bool:
    """Whether a sample log could belong to an lm_eval results file (same folder, and the
    same timestamp when both names carry one), as ``lm_eval.pair_samples`` would pair them."""
    if results.folder != samples.folder:
        return False
    m = lm_eval.RESULTS_NAME.match(results.basename)
    r_ts, s_ts = (m.group("ts") if m else None), lm_eval.samples_ts(samples)
    return r_ts is None or s_ts is None or r_ts == s_ts
