"""Constants, report types and small helpers shared by the store modules (no SQL state)."""


import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

ENV_VAR = "EVALBARS_STORE"
_log = logging.getLogger(__name__)  # DEBUG: timings of each ingest step
SCHEMA_VERSION = "4"
# Version 1 keyed ``files`` on the file's sha256 alone, so a tidy table with several models
# could record only one of them; ``migrate`` upgrades an old single-file version-1 store.

# Relative and absolute tolerance used by ``audit`` when comparing a reported number with
# the one recomputed from item scores: agreement to the 4th decimal (rounding of printed
# values) or within 0.5 % (harness float noise).

AUDIT_ABS_TOL = 5e-5
AUDIT_REL_TOL = 5e-3

# Protocol keys that change on every run and say nothing about how it was measured; they
# are left out of ``protocol_diff`` (matched on the last component of the dotted key).
VOLATILE_PROTOCOL_KEYS = frozenset({
    "date", "start_time", "end_time", "total_evaluation_time_seconds", "started_at",
    "completed_at", "created", "pretty_env_info", "eval_id", "run_id", "log_file",
})


@dataclass(frozen=True)
class IngestReport:
    """What one ``Store.ingest`` call did.

    runs columns: run_id, name, model, source_format, tasks (comma list), metrics,
        n_items, n_scores, k_max (answers per item), status ("added" | "already present"
        | "merged"), warnings (str)

    ``n_items`` (per task the largest item count over its metrics, summed over tasks),
    ``n_scores`` and ``k_max`` describe what the
    ParsedRun carried; ``n_scores_added`` (extra column) is how many score rows this call
    actually wrote (0 when already present; fewer than ``n_scores`` when a merge kept
    stored task/metric cells).
    """

    runs: pd.DataFrame
    already_present: bool            # every file was already in the store; nothing changed
    warnings: tuple[str, ...]
    # with ``skip_invalid=True``: the runs left out because they failed validation, one
    # message each naming the run, its files and the reason (the other runs were written)
    rejected: tuple[str, ...] = ()


# Separator of the task and metric lists in ingest reports: metric variants and HELM task
# names contain commas ("exact_match,strict-match"), so the lists use "; ".
LIST_SEP = "; "
REPORT_COLUMNS = ("run_id", "name", "model", "source_format", "tasks", "metrics", "n_items",
                  "n_scores", "k_max", "status", "warnings", "n_scores_added")

# ---------------------------------------------------------------------------------------
# small helpers (no SQL)
# ---------------------------------------------------------------------------------------

def _json_default(obj: Any) -> Any:
    """JSON for values json cannot write: numpy scalars/arrays, sets, dates, the rest as str."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    return str(obj)


def _json_dumps(obj: Any) -> str:
    return json.dumps(obj if obj is not None else {}, sort_keys=True, default=_json_default)


def _json_loads(text: str | None) -> Any:
    if text is None:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _deep_merge(stored: Any, new: Any, path: str, conflicts: list[str]) -> Any:
    """Stored values win; keys only the new dict has are added; conflicts are listed."""
    if isinstance(stored, dict) and isinstance(new, dict):
        out = dict(stored)
        for k, v in new.items():
            key = f"{path}.{k}" if path else str(k)
            out[k] = _deep_merge(stored[k], v, key, conflicts) if k in stored else v
        return out
    if stored != new and new is not None and stored is not None:
        conflicts.append(path)
    return new if stored is None else stored


def flatten_protocol(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys ({"a": {"b": 1}} -> {"a.b": 1}); lists stay leaves."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        if not obj and prefix:
            out[prefix] = {}
        for k, v in obj.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            out.update(flatten_protocol(v, key))
    else:
        out[prefix] = obj
    return out


# Parts of a protocol value that change from one process to the next without changing the
# measurement: the memory address in a Python repr (``<function list_fewshot_samples at
# 0x7f3e09ad45e0>``, how lm_eval writes a ``!function`` config entry), a temporary path
# (``/tmp/tmpab12cd/...``) and a timestamp. ``normalise_protocol_value`` replaces them with a
# placeholder before protocol values are compared, so two runs with the same function, the
# same task files and the same settings no longer "differ"; the function's name, the file's
# name and every other character still count.
_NOISE = (
    (re.compile(r"\bat 0x[0-9a-fA-F]+"), "at 0x…"),
    (re.compile(r"\b0x[0-9a-fA-F]{8,16}\b"), "0x…"),
    (re.compile(r"(?:/private)?/(?:tmp|var/tmp|var/folders/[^/\s'\"]+/[^/\s'\"]+/T)"
                r"/(?:tmp|pytest-of-[^/\s'\"]+/)?[^/\s'\"]*"), "<tmp>"),
    (re.compile(r"[A-Za-z]:\\\\?Users\\\\?[^\\\s'\"]+\\\\?AppData\\\\?Local\\\\?Temp(?:\\\\?[^\\\s'\"]+)?"),
     "<tmp>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T _]\d{2}[:-]\d{2}[:-]\d{2}(?:\.\d+)?"
                r"(?:Z|[+-]\d{2}:?\d{2})?"), "<timestamp>"),
)


def normalise_protocol_value(text: str) -> str:
    """A protocol value with memory addresses, temporary paths and timestamps replaced by
    placeholders (see ``_NOISE``): what two runs of one measurement have in common."""
    for pattern, placeholder in _NOISE:
        text = pattern.sub(placeholder, text)
    return text


def _display(value: Any) -> str | None:
    """A protocol value as text (strings as-is, None stays None, the rest as JSON), with
    process noise normalised out (``normalise_protocol_value``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return normalise_protocol_value(value)
    return normalise_protocol_value(json.dumps(value, sort_keys=True, default=str))


_CATEGORIES = (
    ("judge", ("judges.",)),                # the grader of a model-graded score
    ("harness version", ("harness_version", "lm_eval_version", "git_hash", "version")),
    ("few-shot", ("fewshot", "few_shot", "n-shot", "n_shot", "num_shot",
                  "max_train_instances")),                         # HELM adapter_spec
    ("chat template", ("chat_template", "system_instruction", "system_message",
                       "multiturn", "system_prompt")),
    ("generation", ("generation_kwargs", "gen_kwargs", "generate_config", "temperature",
                    "top_p", "top_k", "max_tokens", "max_gen_toks", "max_new_tokens",
                    "until", "do_sample", "seed", "num_beams", "repeats", "epochs",
                    "stop_sequences", "num_outputs")),
    ("metric variants", ("metric", "filter")),
    ("prompt", ("doc_to_text", "doc_to_target", "doc_to_choice", "template", "description",
                "target_delimiter", "prompt",
                *(f"adapter_spec.{k}" for k in ("method", "instructions", "input_", "output_",
                                                "reference_", "instance_", "global_",
                                                "chain_of_thought_")))),   # HELM
    ("model", ("model",)),
)
_CATEGORY_ORDER = {name: i for i, (name, _) in enumerate(_CATEGORIES)} | {"other": len(_CATEGORIES)}


def _category(setting: str) -> str:
    low = setting.lower()
    for name, needles in _CATEGORIES:
        if any(n in low for n in needles):
            return name
    return "other"


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    """First row of a query (fully fetched: DuckDB 2 refuses new work on a connection that
    still has an unfinished result)."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str:
    """The value of the ``meta`` row ``key`` (a fixed name); StoreError when the row is
    missing or repeated (a damaged store), never a TypeError further on."""
    from evalcore.errors import StoreError
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    if len(rows) != 1:
        raise StoreError(f"the store's meta table has {len(rows)} rows for {key!r} (expected "
                         "one); the store is damaged")
    return str(rows[0][0])


def _fetch_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> pd.DataFrame:
    """A large result as a DataFrame through Arrow (2-3x faster than ``.df()`` for string
    columns: pandas keeps them Arrow-backed). Same dtypes as ``.df()`` except that an
    all-NULL text column comes back as ``str`` with NaN instead of ``object`` with None.

    Through ``execute``, not the relational API: ``con.sql(sql, params=...)`` materializes
    the whole result in DuckDB when the relation is made, and ``to_arrow_table`` then
    converts that copy on one thread, which took longer than the query (duckdb 1.4.4; item
    means of 40 runs x 6,250 items on the 5M bench store: 0.9 s against 2.8 s)."""
    return con.execute(sql, params).fetch_arrow_table().to_pandas()


def _natural_key(item_id: Any) -> tuple:
    s = str(item_id)
    return (0, int(s), s) if s.lstrip("-").isdigit() else (1, 0, s)


def _agrees(reported: float, recomputed: float) -> bool:
    return abs(reported - recomputed) <= AUDIT_ABS_TOL + AUDIT_REL_TOL * abs(recomputed)

def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def one_array(col: pa.ChunkedArray) -> pa.Array:
    """A column as one array: its only chunk as it is, else the chunks combined (a copy).
    ``combine_chunks`` copies even a one-chunk column (8 MB of label keys on the 2M bench
    store's vector read)."""
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
