"""Format detection: which reader a file goes to, from its first bytes (content first; the
name only breaks ties), and the zip/LFS/unknown-content refusals that come with it.

``detect_format(name, head)`` classifies a file's first bytes; ``classify(src, columns)``
classifies a ``Source`` (reading further where the head is not enough, refusing Git LFS
pointers and unknown content with a short, escaped description). With a tidy column map
(``columns``), a JSONL file whose first row holds the mapped columns is a tidy table.
"""

from __future__ import annotations

import re

from evalcore.errors import IngestError
from evalcore.ingest import eee, helm, inspect_log, lighteval, lm_eval, tidy
from evalcore.ingest._common import Source, load_json, loads_line

FORMATS: tuple[str, ...] = (
    lm_eval.RESULTS, lm_eval.SAMPLES_JSONL, lm_eval.SAMPLES_JSON, lighteval.RESULTS,
    inspect_log.EVAL_ZIP, inspect_log.JSON_LOG,
    *helm.ALL_FORMATS, *eee.FORMATS,
    tidy.CSV, tidy.JSONL, tidy.PARQUET,
)
KNOWN_SUFFIXES = (".json", ".jsonl", ".eval", ".csv", ".parquet", ".pq", ".zip", ".tsv")
# The first bytes of a Git LFS pointer file (a clone without `git lfs pull`).
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
EXPECTED = ("a known format: lm_eval results/samples JSON(L), a lighteval / Open LLM "
            "Leaderboard results JSON, an inspect .eval/.json log, "
            "HELM run files, an Every Eval Ever aggregate JSON (with its _samples.jsonl), "
            "a tidy CSV/JSONL/Parquet table, or a zip of these")


def _classify_obj(obj: object, name: str = "") -> str:
    """Format of a parsed JSON value from its top-level keys (``name``: the file's base name,
    used only to tell HELM files holding an empty value apart)."""
    if isinstance(obj, dict):
        keys = set(obj)
        # inspect_ai reads a log without a top-level "version" as version 2 (seen in real
        # logs), so an "eval" spec naming its task is enough
        ev = obj.get("eval")
        if isinstance(ev, dict) and ("version" in keys or "task" in ev) and (
                {"plan", "status", "results", "samples"} & keys):
            return inspect_log.JSON_LOG
        if eee.is_aggregate(obj):
            return eee.AGGREGATE
        if eee.is_instance(obj):
            return eee.SAMPLES
        if lighteval.is_results(obj):
            return lighteval.RESULTS
        if isinstance(obj.get("results"), dict) and (
                {"versions", "configs", "config", "n-shot", "group_subtasks", "samples"} & keys):
            return lm_eval.RESULTS
        if "doc_id" in keys and ({"resps", "filtered_resps", "arguments", "doc"} & keys):
            return lm_eval.SAMPLES_JSONL
        if "item_id" in keys and "score" in keys:
            return tidy.JSONL
        return helm.classify_obj(obj, name) or "unknown"
    if isinstance(obj, list):
        fmt = helm.classify_obj(obj, name)
        if fmt:
            return fmt
        if obj and isinstance(obj[0], dict) and "doc_id" in obj[0]:
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
                fmt = _classify_obj(obj, name)
                if fmt != "unknown":
                    return fmt
        return _detect_json_head(text.decode("utf-8", "replace"))
    return _detect_text_table(name, text)


def _detect_json_head(t: str) -> str:
    def has(key: str) -> bool:
        return f'"{key}"' in t

    if t.startswith("["):
        fmt = helm.classify_head(t)
        if fmt:
            return fmt
        if has("doc_id") and (has("resps") or has("arguments") or has("doc")):
            return lm_eval.SAMPLES_JSON
        return "unknown"
    if has("schema_version") and has("evaluation_results"):
        return eee.AGGREGATE
    if has("eval") and (has("version") or has("eval_id") or has("task_id")) and (
            has("plan") or has("status")):
        return inspect_log.JSON_LOG
    if has("config_general") and (has("results") or has("lighteval_sha")):
        return lighteval.RESULTS
    if re.match(r'\{\s*"results"\s*:', t) or (has("results") and (
            has("versions") or has("configs") or has("n-shot") or ',none"' in t)):
        return lm_eval.RESULTS
    return helm.classify_head(t) or "unknown"


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
    """A short, safe description of a file's first bytes for an error message: the kind of
    content and at most 16 characters, ASCII-escaped (``ascii()``), never more."""
    if not head.strip():
        return "only whitespace"
    if b"\x00" in head[:4096] or sum(b < 9 or 13 < b < 32 for b in head[:512]) > 8:
        return "binary data"
    snippet = head[:16].decode("utf-8", "replace")
    return f"text starting with {ascii(snippet)}" + ("..." if len(head) > 16 else "")


def classify(src: Source, columns: dict[str, str] | None = None) -> str:
    """The format of ``src`` (one of ``FORMATS``, or ``"zip"`` for an archive whose members
    decide); unknown content is refused as bad input."""
    head = src.head()
    if head.startswith(LFS_POINTER):
        raise IngestError(src.name, "byte 0", "the file itself, not a Git LFS pointer",
                          "the file was never downloaded: run `git lfs pull` in the repository "
                          "it came from, then ingest again")
    fmt = detect_format(src.basename, head)
    if fmt == tidy.PARQUET and lighteval.is_details_name(src.basename):
        return lighteval.DETAILS
    if fmt == inspect_log.EVAL_ZIP:
        return "zip"          # confirmed from the member list in _expand_zip
    if fmt == "unknown" and _tidy_jsonl(src, head, columns):
        return tidy.JSONL
    if fmt == "unknown":
        stripped = head.lstrip(b"\xef\xbb\xbf").lstrip()
        if stripped[:1] == b"{" and b"\n" not in stripped.rstrip():
            # a first line longer than the head (long prompts): classify that whole line
            with src.open() as fh:
                line = fh.readline(256 * 1024 * 1024)
            try:
                fmt = _classify_obj(loads_line(line), src.basename)
            except ValueError:
                fmt = "unknown"
            if fmt != "unknown":
                return fmt
        if stripped[:1] in (b"{", b"[") and src.size <= 512 * 1024 * 1024:
            fmt = _classify_obj(load_json(src), src.basename)
            if fmt == "unknown":
                raise IngestError(src.name, "top level", EXPECTED,
                                  "valid JSON, but no known format (unexpected keys)")
            return fmt
        raise IngestError(src.name, "byte 0", EXPECTED, _describe_bad_head(head))
    return fmt


def _tidy_jsonl(src: Source, head: bytes, columns: dict[str, str] | None) -> bool:
    """A ``.jsonl`` file of JSON objects that no harness format claims: a tidy table, so that
    its columns are named in the refusal (and a column map can be offered) instead of
    "unknown format"; with a column map, the first row must hold the mapped item id and
    score (a dotted path reaches into nested objects: ``score=evaluation.score``)."""
    from evalcore.ingest.tidy_read import flat_keys

    if not src.basename.lower().endswith(".jsonl"):
        return False
    first = head.lstrip(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)
    if len(first) < 2 and len(head) >= 65536:
        return False
    try:
        row = loads_line(first[0])
    except ValueError:
        return False
    if not isinstance(row, dict) or not row:
        return False
    if not columns:
        return True
    keys = {k.lower() for k in flat_keys(row)}
    return all(columns.get(c, c).lower() in keys for c in ("item_id", "score"))
