"""The items of one cell of two runs' 2x2 table (only B right, only A right, both, neither),
with their texts, in natural item order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcore.errors import AnalysisError
from evalcore.analysis._common import natural_key, resolve_runs
from evalcore.analysis._plumbing import one_version
from evalcore.analysis.compare import paired_cell


def discordant_items(store, run_a: str | int, run_b: str | int, task: str, metric: str,
                     cell: str = "b") -> pd.DataFrame:
    """Items in one cell of the 2x2 table, with texts.

    cell: "b" (only B right), "c" (only A right), "both" (both right), "neither".
    columns: item_id, score_a, score_b, prompt, target, response_a, response_b, in natural
    order of item_id (2 before 10). With several answers per item a cell uses the per-item
    means (b: x_B > x_A, c: x_A > x_B, both: both = 1, neither: both = 0) and the texts of
    each run's first answer (the prompt and target of run A, else run B's). Item ids and
    texts are read for the cell's items only.
    """
    cells = ("b", "c", "both", "neither")
    if cell not in cells:
        raise AnalysisError(f"unknown cell {cell!r}; use one of {', '.join(cells)}")
    with one_version(store):
        a, b = resolve_runs(store, [run_a, run_b], store.runs())
        sh = paired_cell(store, a, b, task, metric)
        xa, xb = sh.x_a, sh.x_b
        mask = {"b": xb > xa, "c": xa > xb, "both": (xa == 1) & (xb == 1),
                "neither": (xa == 0) & (xb == 0)}[cell]
        keys = sh.items[mask]
        label, texts = _first_texts(store, [a, b], task, keys)
    order = sorted(range(keys.size), key=lambda i: natural_key(label[int(keys[i])]))
    ks = keys[order].tolist()
    ta, tb = texts.get(a, {}), texts.get(b, {})
    out = pd.DataFrame({"item_id": [label[k] for k in ks], "score_a": xa[mask][order],
                        "score_b": xb[mask][order]})
    out["prompt"] = [ta.get(k, {}).get("prompt") or tb.get(k, {}).get("prompt") for k in ks]
    out["target"] = [ta.get(k, {}).get("target") or tb.get(k, {}).get("target") for k in ks]
    out["response_a"] = [ta.get(k, {}).get("response") for k in ks]
    out["response_b"] = [tb.get(k, {}).get("response") for k in ks]
    return out


def _first_texts(store, run_ids: list[int], task: str, keys: np.ndarray
                 ) -> tuple[dict[int, str], dict[int, dict[int, dict]]]:
    """(item key -> item id, run id -> item key -> prompt/target/response of its first
    answer) of some items (``store.first_texts``)."""
    if not keys.size:
        return {}, {}
    t = store.first_texts(run_ids, task, keys)
    label = dict(zip(t["item"].astype(int).tolist(), t["item_id"].astype(str).tolist()))
    out: dict[int, dict[int, dict]] = {}
    for r in t.itertuples(index=False):
        if int(r.run_id) >= 0:
            out.setdefault(int(r.run_id), {})[int(r.item)] = {
                "prompt": r.prompt, "target": r.target, "response": r.response}
    return label, out
