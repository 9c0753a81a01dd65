"""pairing, protocol_diff and audit on hand-made runs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from evalcore.store import flatten_protocol

from .conftest import make_run, sha, summary


def test_pairing_shared_only_and_hash_mismatch(store):
    a_ids = ["0", "1", "2", "3", "4", "5", "10"]
    b_ids = ["2", "3", "4", "5", "10", "6", "7"]
    b_prompt = [sha(f"p{i}") if i != "3" else sha("another template") for i in b_ids]
    b_item = [sha(f"doc{i}") if i != "4" else sha("edited doc") for i in b_ids]
    store.ingest([
        make_run("A", item_ids=a_ids, scores=[1] * 7, files=["a"]),
        make_run("B", item_ids=b_ids, scores=[0] * 7, files=["b"], prompt_hashes=b_prompt,
                 item_hashes=b_item),
    ])
    p = store.pairing(1, 2, "t", "acc")
    assert p == {"shared": ["2", "3", "4", "5", "10"], "only_a": ["0", "1"], "only_b": ["6", "7"],
                 "hash_mismatch": ["3", "4"]}
    pm = store.paired_item_means(1, 2, "t", "acc").set_index("item_id")
    assert not pm.loc["3", "hash_match"] and not pm.loc["4", "hash_match"] and pm.loc["2", "hash_match"]


def test_pairing_ignores_hashes_one_run_does_not_have(store):
    run_b = make_run("B", files=["b"])
    run_b.scores["prompt_hash"] = None
    run_b.scores["item_hash"] = None
    store.ingest([make_run("A", files=["a"]), run_b])
    p = store.pairing(1, 2, "t", "acc")
    assert p["shared"] == ["0", "1", "2"] and p["hash_mismatch"] == []


def test_metric_variants_of_one_run_pair_like_two_runs(store):
    store.ingest([make_run("A", scores=[1, 0, 0], extra_cells=[("t", "acc_norm", [1, 1, 0])])])
    pm = store.paired_item_means(1, 1, "t", "acc", metric_b="acc_norm")
    assert pm["score_a"].tolist() == [1.0, 0.0, 0.0] and pm["score_b"].tolist() == [1.0, 1.0, 0.0]


def test_flatten_protocol():
    assert flatten_protocol({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None, "f": {}}) == {
        "a.b": 1, "a.c.d": [1, 2], "e": None, "f": {}}


def test_protocol_diff_lists_exactly_the_settings_that_differ(store):
    store.ingest([
        make_run("A", files=["a"], harness_version="0.4.8",
                 protocol={"config": {"num_fewshot": 0, "gen": {"temperature": 0}, "batch_size": 8},
                           "chat_template": None, "date": 1.0},
                 task_protocol={"num_fewshot": 0, "doc_to_text": "Q: {{q}}"}),
        make_run("B", files=["b"], harness_version="0.4.13",
                 protocol={"config": {"num_fewshot": 5, "gen": {"temperature": 0.7}, "batch_size": 8},
                           "chat_template": "llama3", "date": 2.0},
                 task_protocol={"num_fewshot": 5, "doc_to_text": "Q: {{q}}"},
                 extra_cells=[("t", "acc_norm", [1, 0, 1])]),
    ])
    d = store.protocol_diff(1, 2)
    got = {(r.scope, r.setting): (r.value_a, r.value_b, r.category) for r in d.itertuples()}
    assert got == {
        ("run", "harness_version"): ("0.4.8", "0.4.13", "harness version"),
        ("run", "config.num_fewshot"): ("0", "5", "few-shot"),
        ("t", "num_fewshot"): ("0", "5", "few-shot"),
        ("run", "chat_template"): (None, "llama3", "chat template"),
        ("run", "config.gen.temperature"): ("0", "0.7", "generation"),
        ("t", "metrics"): ("acc", "acc, acc_norm", "metric variants"),
    }
    # ordered by category: harness version first, metric variants last
    assert d["category"].tolist()[0] == "harness version" and d["category"].tolist()[-1] == "metric variants"
    assert store.protocol_diff(1, 1).empty
    only_task = store.protocol_diff(1, 2, task="t")
    assert set(only_task["scope"]) == {"run", "t"}


def _binary(p: float, n: int) -> list[float]:
    k = round(p * n)
    return [1.0] * k + [0.0] * (n - k)


def test_audit_flags_known_cases(store):
    n, p = 10, 0.4
    harness_se = math.sqrt(p * (1 - p) / (n - 1))   # lm-evaluation-harness convention
    cells = [("ok", "acc", _binary(p, n)), ("zero", "acc", _binary(p, n)),
             ("na", "acc", _binary(p, n)), ("count", "acc", _binary(p, n)),
             ("biased", "acc", _binary(p, n)), ("rounded", "acc", _binary(p, n)),
             ("allzero", "acc", [0.0] * 8)]
    summaries = [
        summary("ok", "acc", p, harness_se, n),
        summary("zero", "acc", p, 0.0, n),
        summary("na", "acc", p, None, n, stderr_raw="N/A"),
        summary("count", "acc", p, harness_se, 12),
        summary("biased", "acc", p, math.sqrt(p * (1 - p) / n), n),    # n instead of n-1
        summary("rounded", "acc", p, round(harness_se, 4), n),
        summary("allzero", "acc", 0.0, 0.0, 8),                          # gsm8k-like degenerate
        summary("onlysummary", "acc", 0.4, 0.0, 100),                    # no items at all
        summary("grp", "acc", 0.5, 0.01, None, is_group=True),
    ]
    run = make_run("R", task="ok", scores=_binary(p, n), extra_cells=cells[1:], summaries=summaries)
    store.ingest([run])
    a = store.audit().set_index("task")
    ref = sps.sem(np.array(_binary(p, n)), ddof=1)                     # scipy reference
    assert a.loc["ok", "recomputed_stderr"] == pytest.approx(ref, rel=1e-12)
    assert a.loc["ok", "recomputed_stderr"] == pytest.approx(harness_se, rel=1e-12)
    assert a.loc["ok", "n_items"] == n and a.loc["ok", "recomputed"] == pytest.approx(p)
    assert a.loc["ok", "flag"] is None
    assert "zero stderr with 0<p<1" in a.loc["zero", "flag"] and "stderr mismatch" in a.loc["zero", "flag"]
    assert a.loc["na", "flag"] == "N/A stderr" and a.loc["na", "stderr_raw"] == "N/A"
    assert a.loc["count", "flag"] == "n mismatch" and a.loc["count", "n_reported"] == 12
    assert a.loc["biased", "flag"] == "stderr mismatch"
    assert a.loc["rounded", "flag"] is None
    assert a.loc["allzero", "flag"] is None
    assert a.loc["onlysummary", "flag"] == "zero stderr with 0<p<1"
    assert math.isnan(a.loc["onlysummary", "recomputed_stderr"])
    assert a.loc["grp", "flag"] is None and bool(a.loc["grp", "is_group"])
    # one task's rows (a one-task leaderboard): the same row as in the whole audit
    one = store.audit(task="count")
    assert one["task"].tolist() == ["count"] and one["flag"].tolist() == ["n mismatch"]
    assert store.audit(task="nope").empty


def test_audit_recomputes_from_item_means_with_several_answers(store):
    run = make_run("K", scores=[0, 0, 0, 0], answers=2,
                   summaries=[summary("t", "acc", 0.5, 0.2041, 4)])  # sem, 4 decimals
    run.scores["score"] = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]   # item means .5, 1, 0, .5
    store.ingest([run])
    a = store.audit().iloc[0]
    assert a["recomputed_stderr"] == pytest.approx(sps.sem([0.5, 1.0, 0.0, 0.5]))
    assert a["n_items"] == 4 and a["flag"] is None
