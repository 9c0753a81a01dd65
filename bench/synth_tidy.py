"""Synthetic tidy score tables (CSV or JSONL) for the tidy ingest memory bench.

``--models`` models x ``--tasks`` tasks x ``--items`` items, one row per (model, task,
item); item ids ``q000000``, ``q000001``, ... (the same ids in every task and model, so the
models pair item by item). Three shapes:

* ``short`` (CSV): ``model,task,item_id,score`` with 0/1 scores, about 27 bytes a row
  (150 MB: 10 x 50 x 11,100 = 5.55M rows);
* ``wide`` (CSV): ``model,task,item_id,metric,score,cluster`` with fractional scores and a
  cluster label per item, about 52 bytes a row (150 MB: 10 x 50 x 5,800 = 2.9M rows);
* ``jsonl`` (JSONL): ``{"model", "task", "item_id", "score"}`` objects with 0/1 scores,
  about 73 bytes a row (150 MB: 10 x 50 x 4,140 = 2.07M rows).

Scores are a fixed function of (model, task, item), so a file is the same on every call.

Usage::

    python bench/synth_tidy.py /tmp/tidy_short.csv --shape short --items 11100
    python bench/synth_tidy.py /tmp/tidy_wide.csv --shape wide --items 5800
    python bench/synth_tidy.py /tmp/tidy.jsonl --shape jsonl --items 4140
"""

from __future__ import annotations

import argparse
from pathlib import Path

SHAPES = ("short", "wide", "jsonl")
# items per task that make a 150 MB file of each shape with 10 models x 50 tasks
ITEMS_150MB = {"short": 11_100, "wide": 5_800, "jsonl": 4_140}


def _score(m: int, t: int, i: int) -> int:
    """A deterministic 0/1 score: models differ in skill, items in difficulty."""
    return int((i * 2654435761 + t * 97 + m * 7919) % 1000 < 400 + 30 * m)


def _lines(shape: str, models: int, tasks: int, items: int):
    """The file's lines (with the header for CSV), model by model, task by task."""
    if shape == "short":
        yield "model,task,item_id,score\n"
    elif shape == "wide":
        yield "model,task,item_id,metric,score,cluster\n"
    for m in range(models):
        model = f"model-{m:02d}"
        for t in range(tasks):
            task = f"task_{t:02d}"
            if shape == "short":
                yield "".join(f"{model},{task},q{i:06d},{_score(m, t, i)}\n"
                              for i in range(items))
            elif shape == "wide":
                yield "".join(f"{model},{task},q{i:06d},acc_norm,{_score(m, t, i) * 0.75:.2f},"
                              f"passage_{i // 4:04d}\n" for i in range(items))
            else:
                yield "".join(f'{{"model": "{model}", "task": "{task}", "item_id": '
                              f'"q{i:06d}", "score": {_score(m, t, i)}}}\n'
                              for i in range(items))


def write(path: Path, shape: str, models: int = 10, tasks: int = 50,
          items: int | None = None) -> int:
    """Write one table to ``path``; returns its row count."""
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r}: expected one of {', '.join(SHAPES)}")
    items = ITEMS_150MB[shape] if items is None else items
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for chunk in _lines(shape, models, tasks, items):
            fh.write(chunk)
    return models * tasks * items


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--shape", choices=SHAPES, default="short")
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--tasks", type=int, default=50)
    ap.add_argument("--items", type=int, default=None,
                    help="items per task (default: a 150 MB file of the shape)")
    args = ap.parse_args(argv)
    rows = write(args.out, args.shape, args.models, args.tasks, args.items)
    print(f"{args.out}: {rows:,} rows, {args.out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
