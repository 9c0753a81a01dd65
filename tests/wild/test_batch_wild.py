"""The whole wild corpus as a user drops it: one folder of mixed real files:
``python -m evalcore ingest <folder of mixed real files>`` stores every good run and names
every bad file."""

from __future__ import annotations

import json
from pathlib import Path

from evalcore.store import Store

from .conftest import run_cli
from .test_inspect_wild import header

# files of tests/fixtures/wild/inspect that hold no usable run, and why (PROVENANCE.md)
BAD_INSPECT = {
    "long_log.eval": "Git LFS pointer",
    "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval": "no scores",
    "retry-2-then-success.eval": "no scores",
}


def test_inspect_folder_stores_every_good_log_and_names_every_bad_one(ins, tmp_path):
    store_path = tmp_path / "s"
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
    assert len(good) == 23
    for p in good:
        h = header(p)
        assert (h["eval"]["model"], h["eval"]["task"]) in stored, p.name


def test_lm_eval_folder_names_the_refused_file_and_place(lm, tmp_path):
    """The polymer_tg sample log has "mae": Infinity on line 1: ingesting the whole lm_eval
    folder exits non-zero and the message names that file and the place."""
    store = tmp_path / "s"
    proc = run_cli(store, "ingest", str(lm))
    assert proc.returncode != 0
    assert "samples_polymer_tg_prediction_2025-06-30T19-40-09.461247.jsonl" in proc.stderr + proc.stdout
    assert "line 1, field mae" in proc.stderr + proc.stdout


# every file of lm_eval/ and inspect/ that is not stored, with the start of its reason
NOT_STORED = {
    "inspect/long_log.eval": "at byte 0: expected the file itself, not a Git LFS pointer",
    "inspect/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval": ": no scores: ",
    "inspect/retry-2-then-success.eval": ": no scores: the log has no scorer",
    "lm_eval/polymer_tg/samples_polymer_tg_prediction_2025-06-30T19-40-09.461247.jsonl":
        "at line 1, field mae: expected a finite score within +-1e+100 (found inf)",
    "lm_eval/polymer_tg/results_2025-06-30T19-40-09.461247.json":
        ": expected every file of its run to be readable",
}


def test_whole_corpus_folder_stores_every_good_run_and_names_every_bad_file(wild_dir, tmp_path):
    """``python -m evalcore ingest tests/fixtures/wild``: one folder of mixed real files, in a
    new process as a user types it."""
    store_path = tmp_path / "s"
    proc = run_cli(store_path, "ingest", str(wild_dir), in_process=False)
    assert proc.returncode == 3, proc.stderr
    listed = proc.stdout[proc.stdout.index("Not stored: "):].splitlines()[1:]
    mine = {}
    for line in listed:
        path = line.removeprefix("- ").split(" ")[0].rstrip(":")
        rel = str(Path(path).relative_to(wild_dir))
        if rel.startswith(("lm_eval/", "inspect/")):
            mine[rel] = line
    assert set(mine) == set(NOT_STORED)
    for rel, reason in NOT_STORED.items():
        assert reason in mine[rel], mine[rel]
    models = set(Store(store_path).runs()["model"])
    for results in (wild_dir / "lm_eval").rglob("*.json"):
        if "polymer_tg" in results.parts or results.name.startswith("samples_"):
            continue
        doc = json.loads(results.read_text(encoding="utf-8"))
        if "results" in doc:
            args = doc["config"]["model_args"]
            model = args["pretrained"] if isinstance(args, dict) else \
                args.split(",")[0].removeprefix("pretrained=")
            assert model in models, results
    for results in (wild_dir / "lighteval").rglob("results_*.json"):   # one run per file
        doc = json.loads(results.read_text(encoding="utf-8"))
        assert doc["config_general"]["model_name"] in models, results
    lighteval_runs = Store(store_path).runs().query("source_format == 'lighteval'")
    zipped = 2        # the two runs inside lighteval/open-r1_olmo/*_gpqa-diamond.zip
    assert len(lighteval_runs) == len(list((wild_dir / "lighteval").rglob("results_*.json"))) + zipped
