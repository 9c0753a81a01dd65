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
"""

from __future__ import annotations
