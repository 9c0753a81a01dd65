"""A judged run in tidy format and its human labels, simulated with a known truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np

TASK = "qa_judged"
METRIC = "model_graded_qa"


def simulate(seed: int = 0, n_items: int = 400, p: float = 0.6, agree: float = 0.85,
             lenient: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """(human truth, judge score) per item: Y ~ Bernoulli(p); the judge agrees with probability
    ``agree`` and also passes a further share ``lenient`` of the wrong items."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n_items) < p).astype(float)
    f = np.where(rng.random(n_items) < agree, y, 1 - y)
    f = np.where((y == 0) & (rng.random(n_items) < lenient), 1.0, f)
    return y, f


def write_run(folder: Path, judge: np.ndarray, model: str = "judged-model") -> Path:
    path = folder / f"{model}.csv"
    lines = ["model,task,item_id,metric,score"]
    lines += [f"{model},{TASK},q{i:04d},{METRIC},{s:g}" for i, s in enumerate(judge)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_labels(folder: Path, human: np.ndarray, rows: np.ndarray, name: str = "labels.csv"
                 ) -> Path:
    path = folder / name
    path.write_text("item_id,human\n" + "".join(f"q{i:04d},{human[i]:g}\n" for i in rows))
    return path
