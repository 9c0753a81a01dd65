"""Tidy score tables (CSV, JSONL, Parquet): the escape hatch for any other harness.

Column spec (one row per task x metric x item x answer; names are case-insensitive)
--------------------------------------------------------------------------------------
=========  ========  ====================================================================
column     required  meaning
=========  ========  ====================================================================
model      yes (*)   the run: one ParsedRun per distinct value (*) or a ``run`` column
run        yes (*)   alternative to ``model`` (if both exist, ``run`` names the run and
                     ``model`` is kept as its model)
task       yes       task / benchmark name
item_id    yes       stable id of the item within the task (pairs runs item by item)
score      yes       finite number (0/1 for correct/incorrect, partial credit, any metric)
metric     no        metric name (default ``"score"``)
answer     no        answer index 0..K-1 for several answers per item (default 0)
cluster    no        cluster of the item (passage, subject, ...) for clustered SEs
=========  ========  ====================================================================

Any other column is ignored (with a warning). Example CSV::

    model,task,item_id,score,cluster
    gpt-x,arc_easy,q1,1,physics
    gpt-x,arc_easy,q2,0,biology
    gpt-y,arc_easy,q1,1,physics

Errors name the file, the row (CSV/JSONL line number; Parquet row index) and what was
expected: a missing required column, a non-numeric, NaN or infinite score or one beyond
+-1e100 (``MAX_ABS_SCORE``), a negative or non-integer answer, an empty id, or the same
(run, task, metric, item_id, answer) twice. Boolean scores (JSON/Parquet ``true``/``false``,
CSV ``true``/``false`` in any case) are read as 1/0 in every format, with a warning.
Tidy runs have no summaries or texts; ``source_key`` is None.

Idempotency: a table holds several runs, so each run's ``SourceFile.run_key`` is
``evalcore.model.rows_key``, a digest of that run's own rows (name, model, and the sorted
(task, metric, item_id, answer, score, cluster) rows), not the file's hash. Ingesting the same table again
changes nothing; a later table that repeats some runs unchanged and adds a model adds just
that model (whatever the file name or format, CSV or Parquet, and the row order).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evalcore.errors import IngestError
from evalcore.ingest._common import (
    MAX_ABS_SCORE,
    empty_frame,
    Source,
    loads_line,
    scores_frame,
    summaries_frame,
    tasks_frame,
)
from evalcore.model import TEXT_COLUMNS, ParsedRun, rows_key

CSV = "tidy_csv"
JSONL = "tidy_jsonl"
PARQUET = "tidy_parquet"
REQUIRED = ("task", "item_id", "score")
OPTIONAL = ("metric", "answer", "cluster")


def _read(src: Source, fmt: str) -> tuple[pd.DataFrame, int]:
    """The table as strings/objects and the line number of its first data row (0 = Parquet
    row index)."""
    if fmt == PARQUET:
        import pyarrow.parquet as pq

        try:
            with src.open() as fh:   # closed here: no ResourceWarning (issue 8)
                table = pq.read_table(fh)
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise IngestError(src.name, "Parquet footer", "a readable Parquet file", str(exc)) from None
        return table.to_pandas(), 0
    if fmt == JSONL:
        rows: list[Any] = []
        with src.open() as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = loads_line(line)
                except ValueError as exc:
                    raise IngestError(src.name, f"line {lineno}", "one JSON object per line",
                                      str(exc)) from None
                if not isinstance(rec, dict):
                    raise IngestError(src.name, f"line {lineno}", "a JSON object (one table row)")
                rows.append(rec)
        if not rows:
            raise IngestError(src.name, "line 1", "at least one row")
        return pd.DataFrame(rows), 1
    sep = "\t" if src.basename.lower().endswith(".tsv") else ","
    try:
        with src.open() as fh:
            df = pd.read_csv(fh, sep=sep, dtype=str, keep_default_na=False,
                             na_values=[""], skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise IngestError(src.name, "CSV", "a comma-separated table with a header row",
                          str(exc).splitlines()[0]) from None
    return df, 2


_BOOL_TEXT = {"true": 1.0, "false": 0.0}


def _score_values(raw: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Scores as float64 (NaN where not a number) and a mask of booleans read as 1/0.

    Booleans are treated alike in every format: a JSON/Parquet ``true``/``false`` and the
    CSV text ``true``/``false`` (any case) become 1/0, and the caller says so in a warning."""
    values = raw.to_numpy(dtype=object)
    is_bool = np.fromiter((isinstance(v, (bool, np.bool_)) or
                           (isinstance(v, str) and v.strip().lower() in _BOOL_TEXT)
                           for v in values), dtype=bool, count=len(values))
    if is_bool.any():
        values = values.copy()
        for i in np.flatnonzero(is_bool):
            v = values[i]
            values[i] = _BOOL_TEXT[v.strip().lower()] if isinstance(v, str) else float(bool(v))
    score = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(
        dtype="float64")
    return score, is_bool


def parse_table(src: Source, fmt: str) -> list[ParsedRun]:
    """One ParsedRun per distinct ``model``/``run`` value of a tidy table."""
    df, first_line = _read(src, fmt)
    df.columns = [str(c).strip().lower() for c in df.columns]
    cols = set(df.columns)
    run_col = "run" if "run" in cols else "model" if "model" in cols else None
    missing = [c for c in REQUIRED if c not in cols]
    if run_col is None:
        missing.insert(0, "model (or run)")
    if missing:
        raise IngestError(src.name, "header", "columns model (or run), task, item_id, score "
                          "[, metric, answer, cluster]",
                          f"missing {', '.join(missing)}; found {', '.join(map(str, df.columns)) or 'none'}")
    if df.empty:
        raise IngestError(src.name, "header", "at least one data row")

    def where(i: int) -> str:
        return f"row {i}" if first_line == 0 else f"line {i + first_line}"

    # required text columns: non-empty
    for c in (run_col, "task", "item_id"):
        vals = df[c]
        bad = vals.isna() | (vals.astype(str).str.strip() == "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise IngestError(src.name, f"{where(i)}, column {c}", f"a non-empty {c}")
    raw = df["score"]
    score, is_bool = _score_values(raw)
    bad = ~(np.abs(score) <= MAX_ABS_SCORE)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise IngestError(src.name, f"{where(i)}, column score",
                          f"a finite number within +-{MAX_ABS_SCORE:g}", f"found {raw.iloc[i]!r}")
    bool_warning = []
    if is_bool.any():
        i = int(np.flatnonzero(is_bool)[0])
        k = int(is_bool.sum())
        bool_warning = [f"{src.name}: column score: {k} boolean value{'s' if k != 1 else ''} "
                        f"(true/false; first at {where(i)}) read as 1/0"]
    if "answer" in cols:
        ans_num = pd.to_numeric(df["answer"], errors="coerce").to_numpy(dtype="float64")
        bad = ~np.isfinite(ans_num) | (ans_num < 0) | (ans_num != np.floor(ans_num))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise IngestError(src.name, f"{where(i)}, column answer", "an answer index 0, 1, 2, ...",
                              f"found {df['answer'].iloc[i]!r}")
        answer = ans_num.astype("int64")
    else:
        answer = np.zeros(len(df), dtype="int64")
    metric = df["metric"].fillna("score").astype(str) if "metric" in cols else pd.Series(["score"] * len(df))
    cluster = df["cluster"].astype(object).where(df["cluster"].notna(), None).map(
        lambda v: None if v is None else str(v)) if "cluster" in cols else None
    key = pd.DataFrame({"r": df[run_col].astype(str), "t": df["task"].astype(str),
                        "m": metric.astype(str).to_numpy(), "i": df["item_id"].astype(str), "a": answer})
    dup = key.duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise IngestError(src.name, where(i), "each (run, task, metric, item_id, answer) once",
                          f"item id {key['i'].iloc[i]!r} of task {key['t'].iloc[i]!r} repeats")
    extra = sorted(cols - set(REQUIRED) - set(OPTIONAL) - {"model", "run"})
    runs: list[ParsedRun] = []
    run_values = key["r"]
    for run in pd.unique(run_values):
        mask = (run_values == run).to_numpy()
        sub = df[mask]
        scores = scores_frame(sub["task"].astype(str).to_numpy(), metric[mask].to_numpy(),
                              sub["item_id"].astype(str).to_numpy(), answer[mask], score[mask],
                              cluster=None if cluster is None else cluster[mask].tolist())
        model = None
        if run_col == "model":
            model = run
        elif "model" in cols:
            models = pd.unique(sub["model"].dropna().astype(str))
            model = models[0] if len(models) == 1 else None
        warnings = [f"{src.name}: ignored columns: {', '.join(extra)}"] if extra else []
        warnings += bool_warning
        task_names = list(pd.unique(sub["task"].astype(str)))
        file = src.source_file(fmt)
        file.run_key = rows_key(str(run), model, scores)
        runs.append(ParsedRun(
            name=str(run), model=model, source_format="tidy", harness=None, harness_version=None,
            protocol={"tidy_file": src.basename}, files=[file], scores=scores,
            summaries=summaries_frame([]), texts=empty_frame(TEXT_COLUMNS),
            tasks=tasks_frame([{"task": t, "n_choices": None, "protocol": {}} for t in task_names]),
            source_key=None, warnings=warnings))
    return runs

