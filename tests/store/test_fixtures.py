"""Real harness outputs (shared fixtures) through the parsers into the store."""

from __future__ import annotations

import math

import pytest

from evalcore.errors import IngestError
from evalcore.store import Store

from .conftest import store_fingerprint

parse_paths = pytest.importorskip("evalcore.ingest").parse_paths

MISTRAL = "lm_eval/results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALOGPT = "lm_eval/results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"


def _parse(paths):
    try:
        return parse_paths([str(p) for p in paths])
    except NotImplementedError:
        pytest.skip("parsers not available yet")


def test_mistral_vs_dialogpt_arc_easy(fixtures_dir, store):
    runs = _parse([fixtures_dir / MISTRAL, fixtures_dir / DIALOGPT])
    rep = store.ingest(runs)
    assert rep.runs["status"].tolist() == ["added", "added"]
    ids = dict(zip(store.runs()["model"], store.runs()["run_id"]))
    a, b = ids["mistralai/Mistral-7B-v0.1"], ids["microsoft/DialoGPT-medium"]

    p = store.pairing(a, b, "arc_easy", "acc")
    assert len(p["shared"]) == 15 and p["only_a"] == [] and p["only_b"] == []
    assert p["hash_mismatch"] == []                         # PROVENANCE.md: hashes match

    # PROVENANCE.md: Mistral right / DialoGPT wrong on 7 items, the reverse on none
    pm = store.paired_item_means(a, b, "arc_easy", "acc")
    assert ((pm["score_a"] == 1) & (pm["score_b"] == 0)).sum() == 7
    assert ((pm["score_a"] == 0) & (pm["score_b"] == 1)).sum() == 0

    audit = store.audit([a, b])
    acc = audit[audit["metric"] == "acc"].set_index("run_id")
    assert acc["flag"].isna().all()
    # lm_eval's acc_stderr = sqrt(p(1-p)/(n-1)) with p = 0.8, n = 15 (Mistral)
    assert acc.loc[a, "reported_stderr"] == pytest.approx(math.sqrt(0.8 * 0.2 / 14), rel=1e-9)
    assert acc.loc[a, "recomputed_stderr"] == pytest.approx(acc.loc[a, "reported_stderr"], rel=1e-9)
    assert acc.loc[b, "recomputed_stderr"] == pytest.approx(acc.loc[b, "reported_stderr"], rel=1e-9)

    cs = store.cell_stats(task="arc_easy", metric="acc").set_index("run_id")
    assert cs.loc[a, "sum"] / cs.loc[a, "n"] == pytest.approx(0.8)
    assert cs.loc[b, "sum"] / cs.loc[b, "n"] == pytest.approx(1 / 3)

    # the same files again: nothing changes
    before = store_fingerprint(store)
    again = store.ingest(_parse([fixtures_dir / MISTRAL, fixtures_dir / DIALOGPT]))
    assert again.already_present and store_fingerprint(store) == before


def test_results_first_then_results_with_samples_merge(fixtures_dir, store):
    results = fixtures_dir / "lm_eval/results_v0.4.13dev_qwen3-8b_negotiationtom-group_limit20.json"
    samples = fixtures_dir / "lm_eval/samples_v0.4.13dev_qwen3-8b_negotiationtom_belief_limit20.jsonl"
    first = store.ingest(_parse([results]))
    assert first.runs["status"].tolist() == ["added"]
    second = store.ingest(_parse([results, samples]))     # the known results file links them
    assert second.runs["status"].tolist() == ["merged"] and len(store.runs()) == 1
    audit = store.audit().set_index(["task", "metric"])
    row = audit.loc[("negotiationtom_belief", "acc")]
    assert row["n_items"] == 20 and row["flag"] is None    # PROVENANCE.md: 0.45 reproduces 0.11413
    assert row["recomputed_stderr"] == pytest.approx(math.sqrt(0.45 * 0.55 / 19), rel=1e-9)


def test_every_fixture_the_parsers_read_goes_into_one_store(fixtures_dir, tmp_path):
    """Every fixture through the batch reader into one store; the inspect log that ended in
    an error before any sample was scored (a2ui) is left out with its reason, not stored as
    a run with 0 tasks."""
    from evalcore.ingest import read_paths

    store = Store(tmp_path / "all")
    files = sorted(p for p in fixtures_dir.glob("*/*") if p.name != "PROVENANCE.md")
    runs, no_scores = [], []
    for path in files:
        try:
            batch = read_paths([path], strict=False)
        except IngestError:
            continue  # nothing to read
        runs.extend(batch.runs)
        no_scores.extend(batch.no_scores)
    rep = store.ingest(runs)                                 # one transaction for all of them
    assert len(rep.runs) == len(runs) >= 10 and not rep.rejected
    stored = store.runs()
    assert stored["name"].is_unique and len(stored) == (rep.runs["status"] == "added").sum()
    assert set(stored["source_format"]) >= {"lm_eval", "inspect", "helm"}
    assert (stored["n_tasks"] > 0).all()
    assert not store.tasks().empty and len(store.audit()) == len(store.summaries())
    [a2ui] = [e for e in no_scores if "a2ui" in e.file]
    assert "none of its 27 sample(s) has a usable score" in str(a2ui)
    assert "log status is 'error'" in str(a2ui)
