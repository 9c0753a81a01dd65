"""Synthetic lm-evaluation-harness sample logs (the 0.4.3+ ``samples_<task>_<ts>.jsonl`` layout).

Each line is one multiple-choice doc as lm_eval writes it for an ARC-like task with 4 options
and ``filter: "none"``: ``doc_id``, ``doc`` (id, question, choices, answerKey), ``target``,
``arguments`` (``gen_args_0..3`` each ``{"arg_0": prompt, "arg_1": " option"}``; the prompt
repeats in every argument, as in the harness), ``resps`` / ``filtered_resps`` (stringified
``[loglik, is_greedy]`` pairs), ``filter``, ``metrics``, ``doc_hash`` / ``prompt_hash`` /
``target_hash`` (sha256 hex), ``acc`` and ``acc_norm``. Prompts are a few hundred characters
and unique per line. Lines come out at about 1.9 KB.

Usage: ``python bench/synth_lm_eval.py OUT_DIR --lines 1000000 --files 8``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

try:
    import orjson

    def _dumps(obj, sort_keys: bool = False) -> bytes:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS if sort_keys else 0)
except ImportError:  # pragma: no cover - orjson is in the environment
    def _dumps(obj, sort_keys: bool = False) -> bytes:
        return json.dumps(obj, ensure_ascii=False, sort_keys=sort_keys).encode()

TIMESTAMP = "2025-06-01T12-00-00.000000"
MODEL_FOLDER = "synthetic__model-7b"
LABELS = ["A", "B", "C", "D"]

_WORDS = ("which of the following best explains why a plant placed near a window grows toward "
          "the light energy water soil student measured temperature experiment results shows "
          "that most likely cause change earth moon sun orbit rock mineral cell organism "
          "population ecosystem force motion friction gravity magnet electric circuit heat "
          "sound wave reflect absorb property matter solid liquid gas mass volume density "
          "scientist observed recorded data table graph increase decrease during over time "
          "season weather climate fossil layer erosion deposit volcano earthquake river ocean").split()


def _sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _pools(rng: random.Random) -> tuple[list[str], list[str]]:
    questions = []
    for _ in range(4096):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(26, 40))]
        q = " ".join(words)
        questions.append(q[0].upper() + q[1:] + "?")
    options = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 6))) for _ in range(4096)]
    return questions, options


def sample_line(doc_id: int, task_idx: int, rng: random.Random, questions: list[str],
                options: list[str]) -> bytes:
    """One JSONL line (bytes, no newline) for doc ``doc_id``."""
    question = f"[{task_idx}-{doc_id}] " + questions[rng.randrange(len(questions))]
    choices = [options[rng.randrange(len(options))] for _ in range(4)]
    gold = rng.randrange(4)
    doc = {"id": f"Synth_{task_idx}_{doc_id}", "question": question,
           "choices": {"text": choices, "label": LABELS}, "answerKey": LABELS[gold]}
    prompt = f"Question: {question}\nAnswer:"
    lls = [-rng.uniform(2.0, 40.0) for _ in range(4)]
    pick = max(range(4), key=lls.__getitem__)
    acc = 1.0 if pick == gold else 0.0
    norm = [ll / max(len(c), 1) for ll, c in zip(lls, choices)]
    acc_norm = 1.0 if max(range(4), key=norm.__getitem__) == gold else 0.0
    pairs = [[f"{ll:.4f}", "False"] for ll in lls]
    rec = {
        "doc_id": doc_id,
        "doc": doc,
        "target": gold,
        "arguments": {f"gen_args_{k}": {"arg_0": prompt, "arg_1": f" {c}"} for k, c in enumerate(choices)},
        "resps": [[p] for p in pairs],
        "filtered_resps": pairs,
        "filter": "none",
        "metrics": ["acc", "acc_norm"],
        "doc_hash": _sha(_dumps(doc, sort_keys=True)),
        "prompt_hash": _sha(prompt),
        "target_hash": _sha(str(gold)),
        "acc": acc,
        "acc_norm": acc_norm,
    }
    return _dumps(rec)


def _write_file(job: tuple[Path, int, int, int]) -> Path:
    path, task_idx, n, seed = job
    rng = random.Random(seed * 1000 + task_idx)
    questions, options = _pools(rng)
    with open(path, "wb", buffering=1 << 22) as fh:
        buf: list[bytes] = []
        for doc_id in range(n):
            buf.append(sample_line(doc_id, task_idx, rng, questions, options))
            if len(buf) >= 4096:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
    return path


def write_samples(out_dir: str | Path, lines: int = 1_000_000, files: int = 8,
                  seed: int = 0, processes: int | None = None) -> list[Path]:
    """Write ``lines`` sample lines split over ``files`` task files; return their paths.

    Files go to ``out_dir/<MODEL_FOLDER>/samples_synth_arc_<k>_<TIMESTAMP>.jsonl`` (one task
    per file, all of one run, as lm_eval lays them out). Files are written in parallel
    (``processes``, default the number of CPUs); the content depends only on ``seed``.
    """
    folder = Path(out_dir) / MODEL_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    per = [lines // files + (1 if k < lines % files else 0) for k in range(files)]
    jobs = [(folder / f"samples_synth_arc_{k}_{TIMESTAMP}.jsonl", k, n, seed) for k, n in enumerate(per)]
    procs = min(processes or os.cpu_count() or 1, files)
    if procs <= 1:
        return [_write_file(j) for j in jobs]
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        return pool.map(_write_file, jobs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    paths = write_samples(args.out_dir, args.lines, args.files, args.seed)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {args.lines:,} lines in {len(paths)} files, {size / 1e6:,.1f} MB, "
          f"{time.perf_counter() - t0:.1f} s -> {Path(args.out_dir) / MODEL_FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
