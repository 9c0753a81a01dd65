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
- ``max_file_bytes()``: the size limit (``$EVALBARS_MAX_FILE_MB``, default 2048 MB), checked
  before any file is read.

Formats, one module each: ``lm_eval`` (results JSON 0.3/0.4.x, sample logs JSONL/JSON
array, embedded samples), ``inspect_log`` (``.eval`` zips with deflate or zstd members,
``.json`` logs v1/v2), ``helm`` (run directories or zips of one), ``tidy`` (CSV, JSONL,
Parquet with ``model``/``run``, ``task``, ``item_id``, ``score`` [, ``metric``, ``answer``,
``cluster``]: the escape hatch for any other harness).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Iterable

from evalcore.errors import IngestError
from evalcore.ingest import helm, inspect_log, lm_eval, tidy
from evalcore.ingest._common import (
    Progress,
    Source,
    call_progress,
    check_size,
    loads_line,
    max_file_bytes,
)
from evalcore.ingest._zip import ZipArchive, member_folder
from evalcore.model import ParsedRun

__all__ = ["parse_paths", "parse_uploads", "detect_format", "max_file_bytes", "FORMATS"]

FORMATS: tuple[str, ...] = (
    lm_eval.RESULTS, lm_eval.SAMPLES_JSONL, lm_eval.SAMPLES_JSON,
    inspect_log.EVAL_ZIP, inspect_log.JSON_LOG,
    helm.PER_INSTANCE, helm.RUN_SPEC, helm.STATS, helm.SCENARIO_STATE, helm.SCENARIO,
    tidy.CSV, tidy.JSONL, tidy.PARQUET,
)
KNOWN_SUFFIXES = (".json", ".jsonl", ".eval", ".csv", ".parquet", ".pq", ".zip", ".tsv")
EXPECTED = ("a known format: lm_eval results/samples JSON(L), an inspect .eval/.json log, "
            "HELM run files, a tidy CSV/JSONL/Parquet table, or a zip of these")


# ---------------------------------------------------------------------------------------
# Detection
# ---------------------------------------------------------------------------------------
def _classify_obj(obj: object) -> str:
    """Format of a parsed JSON value from its top-level keys."""
    if isinstance(obj, dict):
        keys = set(obj)
        if "eval" in keys and "version" in keys and ({"plan", "status", "results", "samples"} & keys):
            return inspect_log.JSON_LOG
        if isinstance(obj.get("results"), dict) and (
                {"versions", "configs", "config", "n-shot", "group_subtasks", "samples"} & keys):
            return lm_eval.RESULTS
        if "adapter_spec" in keys and ("scenario_spec" in keys or "metric_specs" in keys):
            return helm.RUN_SPEC
        if "request_states" in keys:
            return helm.SCENARIO_STATE
        if {"name", "description", "tags"} <= keys and "definition_path" in keys:
            return helm.SCENARIO
        if "doc_id" in keys and ({"resps", "filtered_resps", "arguments", "doc"} & keys):
            return lm_eval.SAMPLES_JSONL
        if "item_id" in keys and "score" in keys:
            return tidy.JSONL
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        first = obj[0]
        if "instance_id" in first and "stats" in first:
            return helm.PER_INSTANCE
        if isinstance(first.get("name"), dict) and "split" in first["name"]:
            return helm.STATS
        if "doc_id" in first:
            return lm_eval.SAMPLES_JSON
    return "unknown"


def detect_format(name: str, head: bytes) -> str:
    """The format of a file from its first bytes (``head``, e.g. the first 64 KB).

    Content decides: zip magic (``PK\\x03\\x04``; an inspect log when its first member is
    ``_journal/...``, ``header.json`` or ``samples/...``, else ``"zip"`` to be classified
    from its member list), Parquet magic, the first JSON line (JSONL files), the leading
    keys of a JSON document, a CSV header with ``item_id`` and ``score``. The name only
    helps where content is ambiguous. Returns one of ``FORMATS``, ``"zip"`` or
    ``"unknown"``.
    """
    if head.startswith(b"PK\x03\x04"):
        name_len = int.from_bytes(head[26:28], "little")
        first = head[30:30 + name_len].decode("utf-8", "replace")
        if first.startswith(("_journal/", "header.json", "samples/", "summaries.json",
                             "reductions.json")):
            return inspect_log.EVAL_ZIP
        return "zip"
    if head.startswith(b"PAR1"):
        return tidy.PARQUET
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if not text:
        return "unknown"
    if b"\x00" in head[:4096]:
        return "unknown"
    if text[:1] in (b"{", b"["):
        nl = text.find(b"\n")
        first_line = text if nl < 0 and len(head) < 65536 else text[:nl] if nl >= 0 else b""
        if first_line:
            try:
                obj = loads_line(first_line)
            except ValueError:
                obj = None
            if obj is not None:
                fmt = _classify_obj(obj)
                if fmt != "unknown":
                    return fmt
        return _detect_json_head(text.decode("utf-8", "replace"))
    return _detect_text_table(name, text)


def _detect_json_head(t: str) -> str:
    def has(key: str) -> bool:
        return f'"{key}"' in t

    if t.startswith("["):
        if has("instance_id") and has("stats"):
            return helm.PER_INSTANCE
        if re.match(r'\[\s*\{\s*"name"\s*:\s*\{', t) and has("split"):
            return helm.STATS
        if has("doc_id") and (has("resps") or has("arguments") or has("doc")):
            return lm_eval.SAMPLES_JSON
        return "unknown"
    if has("eval") and has("version") and (has("plan") or has("status")):
        return inspect_log.JSON_LOG
    if re.match(r'\{\s*"results"\s*:', t) or (has("results") and (
            has("versions") or has("configs") or has("n-shot") or ',none"' in t)):
        return lm_eval.RESULTS
    if has("adapter_spec") and (has("scenario_spec") or has("metric_specs")):
        return helm.RUN_SPEC
    if has("request_states"):
        return helm.SCENARIO_STATE
    return "unknown"


def _detect_text_table(name: str, text: bytes) -> str:
    try:
        line = text.split(b"\n", 1)[0].decode("utf-8").strip().lower()
    except UnicodeDecodeError:
        return "unknown"
    sep = "\t" if ("\t" in line and name.lower().endswith(".tsv")) else ","
    cols = {c.strip().strip('"') for c in line.split(sep)}
    if {"item_id", "score"} <= cols or ({"task", "score"} <= cols and len(cols) >= 3):
        return tidy.CSV
    # a delimited text header in a .csv/.tsv file: a tidy table (missing columns are then
    # reported by name instead of "unknown format")
    if name.lower().endswith((".csv", ".tsv")) and len(cols) >= 2 and line.isprintable():
        return tidy.CSV
    return "unknown"


def _describe_bad_head(head: bytes) -> str:
    if not head.strip():
        return "only whitespace"
    if b"\x00" in head[:4096] or sum(b < 9 or 13 < b < 32 for b in head[:512]) > 8:
        return "binary data"
    snippet = head[:60].decode("utf-8", "replace").replace("\n", "\\n")
    return f"it starts with {snippet!r}"


# ---------------------------------------------------------------------------------------
# Gathering sources
# ---------------------------------------------------------------------------------------
def _path_sources(paths: Iterable[str | Path]) -> tuple[list[Source], list[str]]:
    sources: list[Source] = []
    skipped: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for f in sorted(path.rglob("*")):
                if not f.is_file() or any(part.startswith(".") for part in f.relative_to(path).parts):
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


def _expand_zip(src: Source, skipped: list[str]) -> tuple[list[Source], str | None]:
    """A zip's members as sources; (members, kind) with kind 'inspect' | 'helm' | None."""
    with ZipArchive(src) as z:
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
            members.append(Source(name=f"{src.name}!{n}", data=z.read(n),
                                  folder=f"{src.name}!{member_folder(n)}"))
        if not members:
            raise IngestError(src.name, "zip members", "at least one known file "
                              "(.json, .jsonl, .eval, .csv, .parquet)",
                              f"members: {', '.join(names[:6]) or 'none'}")
        kind = "helm" if "per_instance_stats.json" in bases else None
        return members, kind


def _classify(src: Source) -> str:
    head = src.head()
    fmt = detect_format(src.basename, head)
    if fmt == inspect_log.EVAL_ZIP:
        return "zip"          # confirmed from the member list in _expand_zip
    if fmt == "unknown":
        stripped = head.lstrip(b"\xef\xbb\xbf").lstrip()
        if stripped[:1] == b"{" and b"\n" not in stripped.rstrip():
            # a first line longer than the head (long prompts): classify that whole line
            with src.open() as fh:
                line = fh.readline(256 * 1024 * 1024)
            try:
                fmt = _classify_obj(loads_line(line))
            except ValueError:
                fmt = "unknown"
            if fmt != "unknown":
                return fmt
        if stripped[:1] in (b"{", b"[") and src.size <= 512 * 1024 * 1024:
            from evalcore.ingest._common import load_json

            fmt = _classify_obj(load_json(src))
            if fmt == "unknown":
                raise IngestError(src.name, "top level", EXPECTED,
                                  "valid JSON, but no known format (unexpected keys)")
            return fmt
        raise IngestError(src.name, "byte 0", EXPECTED, _describe_bad_head(head))
    return fmt


# ---------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------
def parse_paths(paths: Iterable[str | Path], progress: Progress | None = None,
                cluster_key: str | None = None) -> list[ParsedRun]:
    """Parse files, folders (recursively; hidden files and unknown extensions are skipped
    with a warning) and zips into runs. All or nothing: any bad file raises ``IngestError``."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    sources, skipped = _path_sources(paths)
    return _parse_sources(sources, skipped, progress, cluster_key)


def parse_uploads(files: list[tuple[str, bytes]], progress: Progress | None = None,
                  cluster_key: str | None = None) -> list[ParsedRun]:
    """Parse in-memory uploads ``[(file name, bytes), ...]`` (the dashboard's path)."""
    sources = []
    for name, data in files:
        norm = name.replace("\\", "/")
        sources.append(Source(name=name, data=bytes(data), folder=posixpath.dirname(norm)))
    return _parse_sources(sources, [], progress, cluster_key)


def _parse_sources(sources: list[Source], skipped: list[str], progress: Progress | None,
                   cluster_key: str | None) -> list[ParsedRun]:
    if not sources:
        raise IngestError(", ".join(skipped) or "(no input)", None,
                          "at least one file of a known format", "nothing to read")
    for src in sources:                       # limits first, before reading anything
        check_size(src.name, src.size)
    total = sum(s.size for s in sources)
    done = 0
    by_fmt: dict[str, list[Source]] = {}
    helm_parts: dict[str, dict[str, Source]] = {}
    formats: dict[str, str] = {}

    def add(src: Source, fmt: str) -> None:
        formats[src.name] = fmt
        if fmt in helm.PART_FORMATS:
            parts = helm_parts.setdefault(src.folder, {})
            if fmt in parts:
                raise IngestError(src.name, None, "one HELM run per folder",
                                  f"{parts[fmt].name} is also a {fmt} file of folder {src.folder!r}")
            parts[fmt] = src
        else:
            by_fmt.setdefault(fmt, []).append(src)

    for src in sources:
        fmt = _classify(src)
        if fmt == "zip":
            members, kind = _expand_zip(src, skipped)
            if kind == "inspect":
                add(src, inspect_log.EVAL_ZIP)
                continue
            for m in members:
                check_size(m.name, m.size)
                mfmt = _classify(m)
                if mfmt == "zip":
                    raise IngestError(src.name, f"zip member {m.name}", "no nested archives")
                add(m, mfmt)
        else:
            add(src, fmt)

    runs: list[ParsedRun] = []

    def step(src_name: str, size: int) -> None:
        nonlocal done
        done += size
        call_progress(progress, min(done, total), total, src_name)

    # lm_eval: results files and sample logs, paired into runs
    results = []
    for src in by_fmt.get(lm_eval.RESULTS, []):
        results.append(lm_eval.read_results(src))
    sample_srcs = by_fmt.get(lm_eval.SAMPLES_JSONL, []) + by_fmt.get(lm_eval.SAMPLES_JSON, [])
    attached, alone = lm_eval.pair_samples(results, sample_srcs)

    def read_samples(src: Source, task: str) -> lm_eval.SampleColumns:
        if formats[src.name] == lm_eval.SAMPLES_JSON:
            cols = lm_eval.read_samples_json_array(src, task, cluster_key)
        else:
            cols = lm_eval.read_samples_jsonl(src, task, progress, done, total, cluster_key)
        step(src.name, src.size)
        return cols

    for i, res in enumerate(results):
        samples = [(s, t, read_samples(s, t)) for s, t in attached[i]]
        runs.append(lm_eval.build_run(res, samples, formats, cluster_key))
        step(res.src.name, res.src.size)
    alone_groups: dict[str, list[tuple[Source, str]]] = {}
    for s, t in alone:
        # one run per (folder, timestamp); a file without a timestamp is its own run unless
        # it sits in a folder on disk (lm_eval's per-model output folder)
        key = lm_eval.samples_ts(s) or (s.name if s.path is None or not s.folder else "")
        alone_groups.setdefault(f"{s.folder}|{key}", []).append((s, t))
    for group in alone_groups.values():
        samples = [(s, t, read_samples(s, t)) for s, t in group]
        runs.append(lm_eval.build_run(None, samples, formats, cluster_key))

    # inspect logs: one run each
    for src in by_fmt.get(inspect_log.EVAL_ZIP, []):
        runs.append(inspect_log.parse_eval(src, cluster_key))
        step(src.name, src.size)
    for src in by_fmt.get(inspect_log.JSON_LOG, []):
        runs.append(inspect_log.parse_json_log(src, cluster_key))
        step(src.name, src.size)

    # HELM: one run per folder
    for folder, parts in helm_parts.items():
        runs.append(helm.parse_run(parts, folder))
        for p in parts.values():
            step(p.name, p.size)

    # tidy tables: one run per model/run value
    for fmt in (tidy.CSV, tidy.JSONL, tidy.PARQUET):
        for src in by_fmt.get(fmt, []):
            runs.extend(tidy.parse_table(src, fmt))
            step(src.name, src.size)

    if skipped and runs:
        runs[0].warnings.append("skipped (not a known file type): " + ", ".join(skipped[:20])
                                + (f" and {len(skipped) - 20} more" if len(skipped) > 20 else ""))
    call_progress(progress, total, total, "")
    return runs
