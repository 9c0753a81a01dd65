"""lm-evaluation-harness output: results JSON (v0.3 and 0.4.0 .. 0.4.13) and sample logs.

One module per concern (each docstring describes its part of the format):

* ``results``: ``results_<ts>.json`` files: summaries per task and group, run and task
  protocol, the file-name patterns and format names.
* ``records``: sample records -> columns line by line (the reference reader for every
  layout: 0.4.3+ ``samples_<task>_<ts>.jsonl``, 0.4.0-0.4.2 JSON arrays, records embedded
  in a results file), per-item score rules, texts, cluster doc fields.
* ``columnar``: the fast path for sample logs: DuckDB's ``read_json`` (pyarrow.json for
  uploads) with explicit columns; files it cannot type go to the line reader.
* ``frames``: columns -> canonical score and text frames (``assemble``), the cluster
  choice per task.
* ``runs``: pairing results and sample files into runs, one ``ParsedRun`` per run.

The names below are the package's interface (``from evalcore.ingest import lm_eval``;
``lm_eval.read_results(...)``, ``lm_eval.build_run(...)``).
"""

from __future__ import annotations

from evalcore.ingest.lm_eval.columnar import read_jsonl_fast, read_samples_jsonl
from evalcore.ingest.lm_eval.frames import TaskData, assemble
from evalcore.ingest.lm_eval.records import (CHUNK_LINES, CLUSTER_KEYS, GOLD_SHARE,
                                             KNOWN_FIELDS, MAX_CLUSTER_FIELDS, PER_ITEM_FIELDS,
                                             PER_ITEM_PREFIX, TEXT_LIMIT, RecordReader,
                                             SampleColumns, cluster_fields, doc_field_name,
                                             pick_cluster_key, read_jsonl_slow, read_records,
                                             read_samples_json_array)
from evalcore.ingest.lm_eval.results import (ENTRY_META, HARNESS, RESULTS, RESULTS_NAME,
                                             RUN_CONFIG_KEYS, RUN_TOP_KEYS, SAMPLES_JSON,
                                             SAMPLES_JSONL, SAMPLES_NAME, TASK_CONFIG_KEYS,
                                             TS_RE, ResultsFile, read_results,
                                             results_summaries, run_identity, run_protocol,
                                             summary_value, task_rows)
from evalcore.ingest.lm_eval.runs import (build_lazy_run, build_run, pair_samples,
                                          samples_task_name, samples_ts)

__all__ = [
    "CHUNK_LINES", "CLUSTER_KEYS", "ENTRY_META", "GOLD_SHARE", "HARNESS", "KNOWN_FIELDS",
    "MAX_CLUSTER_FIELDS", "PER_ITEM_FIELDS", "PER_ITEM_PREFIX", "RESULTS", "RESULTS_NAME",
    "RUN_CONFIG_KEYS", "RUN_TOP_KEYS", "SAMPLES_JSON", "SAMPLES_JSONL", "SAMPLES_NAME",
    "TASK_CONFIG_KEYS", "TEXT_LIMIT", "TS_RE", "RecordReader", "ResultsFile", "SampleColumns",
    "TaskData", "assemble", "build_lazy_run", "build_run", "cluster_fields", "doc_field_name", "pair_samples",
    "pick_cluster_key", "read_jsonl_fast", "read_jsonl_slow", "read_records", "read_results",
    "read_samples_json_array", "read_samples_jsonl", "results_summaries", "run_identity",
    "run_protocol", "samples_task_name", "samples_ts", "summary_value", "task_rows",
]
