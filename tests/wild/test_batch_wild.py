"""The whole wild corpus as a user drops it: one folder of mixed real files (issue 7 "done
when": ``python -m evalcore ingest <folder of mixed real files>`` stores every good run and
names every bad file)."""

from __future__ import annotations

from evalcore.store import Store

from .conftest import run_cli
from .test_inspect_wild import header

# files of tests/fixtures/wild/inspect that hold no usable run, and why (PROVENANCE.md)
BAD_INSPECT = {
    "long_log.eval": "Git LFS pointer",
    "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval": "no scores",
    "retry-2-then-success.eval": "no scores",
    "data_with_llm_scoring.json": "",            # refused today as no known format (reported)
}


def test_inspect_folder_stores_every_good_log_and_names_every_bad_one(ins, tmp_path):
    store_path = tmp_path / "s.duckdb"
    proc = run_cli(store_path, "ingest", str(ins))
    assert proc.returncode == 3, proc.stderr
    listed = proc.stdout[proc.stdout.index("Not stored: "):]
    assert listed.startswith(f"Not stored: {len(BAD_INSPECT)} file(s)")
    for name, why in BAD_INSPECT.items():
        line = next(ln for ln in listed.splitlines() if name in ln)
        assert why in line, line
    store = Store(store_path)
    stored = {(m, t) for m, t in store.tasks().merge(store.runs(), on="run_id")[["model", "task"]]
              .itertuples(index=False)}
    good = [p for p in ins.iterdir() if p.suffix in (".eval", ".json") and p.name not in BAD_INSPECT]
    assert len(good) == 21
    for p in good:
        h = header(p)
        assert (h["eval"]["model"], h["eval"]["task"]) in stored, p.name


def test_lm_eval_folder_names_the_refused_file_and_place(lm, tmp_path):
    """The polymer_tg sample log has "mae": Infinity on line 1: ingesting the whole lm_eval
    folder exits non-zero and the message names that file and the place."""
    store = tmp_path / "s.duckdb"
    proc = run_cli(store, "ingest", str(lm))
    assert proc.returncode != 0
    assert "samples_polymer_tg_prediction_2025-06-30T19-40-09.461247.jsonl" in proc.stderr + proc.stdout
    assert "line 1, field mae" in proc.stderr + proc.stdout
