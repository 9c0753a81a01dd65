"""The DuckDB store: the only module that writes SQL.

CONTRACT (stub written by the lead; the store owner fills in the bodies and may add
methods/columns, but must not rename or remove what is here without telling the analysis
owner). All values are passed as ``?`` parameters; identifiers only from fixed lists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evalcore.model import ParsedRun

ENV_VAR = "EVALBARS_STORE"


def default_store_path() -> Path:
    """$EVALBARS_STORE if set, else ./.evalbars/evalbars.duckdb (relative to the cwd)."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else Path.cwd() / ".evalbars" / "evalbars.duckdb"


@dataclass(frozen=True)
class IngestReport:
    """What one ``Store.ingest`` call did.

    runs columns: run_id, name, model, source_format, tasks (comma list), metrics,
        n_items, n_scores, k_max (answers per item), status ("added" | "already present"
        | "merged"), warnings (str)
    """

    runs: pd.DataFrame
    already_present: bool            # every file was already in the store; nothing changed
    warnings: tuple[str, ...]


class Store:
    """One DuckDB file. Connections are short-lived (opened per operation, retried while
    another process holds the write lock), so the CLI can ingest while the dashboard runs."""

    def __init__(self, path: str | Path | None = None, *, lock_timeout: float = 15.0):
        raise NotImplementedError

    # ---- writing (each call is one transaction) -------------------------------------
    def ingest(self, runs: list[ParsedRun]) -> IngestReport: ...
    def rename_run(self, run: str | int, new_name: str) -> None: ...
    def set_tags(self, run: str | int, tags: list[str]) -> None: ...
    def delete_run(self, run: str | int) -> None: ...

    # ---- reading ----------------------------------------------------------------------
    def version(self) -> str:
        """Changes whenever the content changes (use as a cache key)."""
    def resolve_run(self, ref: str | int) -> int:
        """Run id from a name or id; StoreError naming the candidates if unknown."""
    def runs(self) -> pd.DataFrame:
        """run_id, name, model, source_format, harness, harness_version, tags (list[str]),
        created_at, source_key, n_tasks, n_scores, has_items"""
    def run_info(self, run: str | int) -> dict:
        """One run's row plus 'protocol' (dict) and 'files' (list of dicts)."""
    def tasks(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, n_items, k_max, has_cluster, binary, n_choices,
        has_items (False for summary-only task/metric rows)"""
    def scores(self, run_ids: list[int], task: str | None = None,
               metric: str | None = None) -> pd.DataFrame:
        """run_id, task, metric, item_id, answer_idx, score, cluster, item_hash, prompt_hash"""
    def item_means(self, run_ids: list[int], task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Per-item mean over answers: run_id, task, metric, item_id, score, n_answers,
        cluster, item_hash, prompt_hash (computed in SQL)."""
    def cell_stats(self, run_ids: list[int] | None = None, task: str | None = None,
                   metric: str | None = None) -> pd.DataFrame:
        """Over item means: run_id, task, metric, n, sum, sumsq, binary (computed in SQL)."""
    def summaries(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, value, stderr, stderr_raw, n, is_group"""
    def texts(self, run_id: int, task: str, item_ids: list[str]) -> pd.DataFrame:
        """task, item_id, answer_idx, prompt, target, response"""
    def task_protocols(self, run_id: int) -> pd.DataFrame:
        """task, n_choices, protocol (dict)"""
    def pairing(self, run_a: int, run_b: int, task: str, metric: str) -> dict:
        """{'shared': [...], 'only_a': [...], 'only_b': [...], 'hash_mismatch': [...]}"""
    def protocol_diff(self, run_a: int, run_b: int, task: str | None = None) -> pd.DataFrame:
        """scope ("run" or task), setting, value_a, value_b — only settings that differ."""
    def audit(self, run_ids: list[int] | None = None) -> pd.DataFrame:
        """run_id, task, metric, reported, reported_stderr, stderr_raw, n_reported,
        recomputed_stderr, n_items, flag (str|None: 'stderr mismatch', 'zero stderr with
        0<p<1', 'N/A stderr', 'n mismatch')"""
