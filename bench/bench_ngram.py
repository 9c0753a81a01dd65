"""Benchmark of the item-quality tools: n-gram index build time and memory for a generated
corpus sample (1 GB by default), item lookups against it, and the suspect-label rule.

    python bench/bench_ngram.py                       # 1 GB JSONL corpus, 13-grams
    python bench/bench_ngram.py --size-mb 100 --format text

The corpus is generated (seeded): documents of 50-400 words drawn from a Zipf-like vocabulary
of 50,000 words, JSONL with a ``text`` field (or one plain text file), written to a temporary
folder and removed afterwards (``--keep`` keeps it). The index build runs in a child process so
its peak resident memory (``ru_maxrss``) is the build's own; DuckDB's memory limit is the
build's default (1 GB) and it spills beyond it. Then 2,000 probe items (half copied from the
corpus) are looked up, and the rule plus both chance references run on a generated matrix of
``--models`` models x ``--items`` items. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def generate(path: Path, size_mb: float, fmt: str, seed: int) -> tuple[int, int]:
    """Write about ``size_mb`` MB of documents; returns (documents, words)."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i:x}" for i in range(50_000)])
    weights = 1.0 / np.arange(1, vocab.size + 1) ** 1.05
    weights /= weights.sum()
    target = int(size_mb * 1e6)
    written = docs = words = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < target:
            lengths = rng.integers(50, 401, 2000)
            draws = rng.choice(vocab.size, int(lengths.sum()), p=weights)
            ends = np.cumsum(lengths)
            starts = ends - lengths
            lines = []
            for s, e in zip(starts, ends):
                text = " ".join(vocab[draws[s:e]])
                lines.append(json.dumps({"text": text}) if fmt == "jsonl" else text)
            chunk = "\n".join(lines) + "\n"
            fh.write(chunk)
            written += len(chunk)
            docs += len(lines)
            words += int(lengths.sum())
    return docs, words


def _build(corpus: str, index: str, n: int, out: mp.Queue) -> None:
    from evalcore.items.ngram_index import build_index
    t0 = time.perf_counter()
    info = build_index([corpus], index, n=n)
    out.put({"seconds": time.perf_counter() - t0, "documents": info.documents,
             "ngrams": info.ngrams,
             "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def bench_rule(models: int, items: int, seed: int) -> dict:
    from evalcore.stats.label_consensus import (consensus_suspects, expected_suspects,
                                                expected_suspects_given_errors, strongest)
    rng = np.random.default_rng(seed)
    acc = np.linspace(0.9, 0.4, models)
    truth = rng.integers(0, 4, items)
    right = rng.random((models, items)) < acc[:, None]
    picks = np.where(right, truth, (truth + rng.integers(1, 4, (models, items))) % 4)
    t0 = time.perf_counter()
    strong = strongest((picks == truth).mean(axis=1), models // 2)
    res = consensus_suspects(picks, truth, strong, 3)
    t1 = time.perf_counter()
    exp = expected_suspects(acc[list(strong)], np.full(items, 4), 3, observed=res.n_flagged)
    t2 = time.perf_counter()
    missed = (picks[list(strong)] != truth).sum(axis=0)
    cond = expected_suspects_given_errors(missed, 4, 3, observed=res.n_flagged)
    t3 = time.perf_counter()
    return {"models": models, "items": items, "strong": len(strong), "flagged": res.n_flagged,
            "expected": exp.expected, "expected_given_errors": cond.expected,
            "rule_seconds": t1 - t0, "expectation_seconds": t2 - t1,
            "conditional_seconds": t3 - t2}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="corpus size in MB (default 1024)")
    ap.add_argument("--format", choices=("jsonl", "text"), default="jsonl")
    ap.add_argument("--n", type=int, default=13, help="n-gram length (default 13)")
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the generated corpus and index")
    args = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-ngram-"))
    try:
        corpus = folder / ("corpus.jsonl" if args.format == "jsonl" else "corpus.txt")
        t0 = time.perf_counter()
        docs, words = generate(corpus, args.size_mb, args.format, args.seed)
        gen_s = time.perf_counter() - t0
        q: mp.Queue = mp.get_context("spawn").Queue()
        proc = mp.get_context("spawn").Process(target=_build, args=(str(corpus), str(folder / "i.duckdb"),
                                                                   args.n, q))
        proc.start()
        build = q.get()
        proc.join()
        from evalcore.items.ngram_index import item_overlap
        rng = np.random.default_rng(args.seed + 1)
        lines = []
        with open(corpus, encoding="utf-8") as fh:
            for k, line in enumerate(fh):
                if k >= 1000:
                    break
                lines.append(json.loads(line)["text"] if args.format == "jsonl" else line)
        probes = [" ".join(ln.split()[:40]) for ln in lines]
        probes += [" ".join(f"zz{int(x)}" for x in rng.integers(0, 10**6, 40)) for _ in range(1000)]
        t0 = time.perf_counter()
        _, ov = item_overlap(folder / "i.duckdb", probes)
        lookup_s = time.perf_counter() - t0
        out = {"corpus": {"format": args.format, "mb": corpus.stat().st_size / 1e6, "documents": docs,
                          "words": words, "generate_seconds": gen_s},
               "build": {**build, "n": args.n,
                         "index_mb": (folder / "i.duckdb").stat().st_size / 1e6,
                         "mb_per_second": corpus.stat().st_size / 1e6 / build["seconds"]},
               "lookup": {"items": len(probes), "seconds": lookup_s,
                          "copied_found": int((ov.hits[:len(lines)] > 0).sum()),
                          "random_found": int((ov.hits[len(lines):] > 0).sum())},
               "rule": bench_rule(args.models, args.items, args.seed)}
        print(json.dumps(out, indent=2))
    finally:
        if args.keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
