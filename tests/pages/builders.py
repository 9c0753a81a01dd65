"""Hand-made canonical runs for the page tests (independent of the ingest parsers)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from evalcore.model import (SCORE_COLUMNS, SUMMARY_COLUMNS, TASK_COLUMNS, TEXT_COLUMNS,
                            ParsedRun, SourceFile)


def parsed_run(name: str, cells: dict[tuple[str, str], Any], *, model: str | None = None,
               clusters: dict[str, list[str]] | None = None,
               n_choices: dict[str, int] | None = None, protocol: dict | None = None,
               summaries: list[dict] | None = None, texts: bool = True) -> ParsedRun:
    """A ParsedRun from {(task, metric): scores}; scores are 1-D (one answer per item, item
    ids "0".."n-1") or 2-D items x answers. Texts: prompt "Q<i>", target "T<i>",
    response "<name>:<i>"."""
    rows: list[dict] = []
    for (task, metric), values in cells.items():
        arr = np.asarray(values, dtype=float)
        if arr.ndim == 1:
            arr = arr[:, None]
        cl = (clusters or {}).get(task)
        for i in range(arr.shape[0]):
            for j in range(arr.shape[1]):
                rows.append({"task": task, "metric": metric, "item_id": str(i), "answer_idx": j,
                             "score": float(arr[i, j]), "cluster": None if cl is None else cl[i],
                             "item_hash": f"h{task}{i}", "prompt_hash": f"p{task}{i}"})
    scores = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    if texts and rows:
        tx = scores[["task", "item_id", "answer_idx"]].drop_duplicates().copy()
        tx["prompt"] = "Q" + tx["item_id"]
        tx["target"] = "T" + tx["item_id"]
        tx["response"] = name + ":" + tx["item_id"]
        tx = tx[list(TEXT_COLUMNS)].reset_index(drop=True)
    else:
        tx = pd.DataFrame(columns=list(TEXT_COLUMNS))
    summ = pd.DataFrame([{"stderr_raw": None, "n": None, "is_group": False, **s}
                         for s in summaries or []], columns=list(SUMMARY_COLUMNS))
    task_names = sorted({t for t, _ in cells} | {s["task"] for s in summaries or []})
    tasks = pd.DataFrame([{"task": t, "n_choices": (n_choices or {}).get(t), "protocol": {}}
                          for t in task_names], columns=list(TASK_COLUMNS))
    digest = hashlib.sha256(repr((name, rows, summaries)).encode()).hexdigest()
    return ParsedRun(name=name, model=model or name, source_format="tidy", harness=None,
                     harness_version=None, protocol=dict(protocol or {}),
                     files=[SourceFile(name=f"{name}.csv", sha256=digest, size=len(rows),
                                       format="tidy_csv")],
                     scores=scores, summaries=summ, texts=tx, tasks=tasks)
