"""Ingest: files in, canonical ``ParsedRun`` records out (no SQL, no Streamlit).

- ``parse_paths(paths, progress=None) -> list[ParsedRun]``: files, folders (recursively)
  and zips. Files of one run (an lm_eval results JSON and its samples JSONL, a HELM run
  directory) come back as ONE ParsedRun.
- ``parse_uploads(files, progress=None) -> list[ParsedRun]``: the same for in-memory
  uploads given as (file name, bytes) pairs (the dashboard's path).
- ``progress(done_bytes, total_bytes, current_file)`` is called now and then if given.
- Any unreadable input raises ``IngestError(file, where, expected)``; nothing partial is
  returned.

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

Parts: ``sources`` (inputs as sources), ``detect`` (a file's format from its first bytes),
``reading`` (a batch read in stages), ``guards``, ``entry``, ``batch``. This face re-exports.
"""

from evalcore.ingest import eee, helm, inspect_log, lighteval, lm_eval, tidy  # noqa: F401
from evalcore.ingest._common import max_file_bytes  # noqa: F401
from evalcore.ingest.batch import IngestBatch, no_scores_reason, problem_row  # noqa: F401
from evalcore.ingest.detect import (  # noqa: F401
    EXPECTED, FORMATS, KNOWN_SUFFIXES, LFS_POINTER, detect_format)
from evalcore.ingest.entry import parse_paths, parse_uploads, read_paths, read_uploads  # noqa: F401

__all__ = ["parse_paths", "parse_uploads", "read_paths", "read_uploads", "IngestBatch",
           "no_scores_reason", "problem_row", "detect_format", "max_file_bytes", "FORMATS",
           "LFS_POINTER", "EXPECTED", "KNOWN_SUFFIXES"]
