"""Cluster keys of lm-evaluation-harness sample logs: automatic pick from doc fields, an
explicit ``cluster_key``, ``""`` to disable, hashed long-text keys, and the same result on
every reader (DuckDB, pyarrow, line by line, JSON arrays).

Expected clusters are computed here from the raw JSON (json + hashlib), never from the
code under test."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from evalcore.ingest import lm_eval, parse_paths, parse_uploads
from evalcore.ingest._common import Source

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "lm_eval"
READING = "reading_demo"
QWEN_RESULTS = "results_v0.4.13dev_qwen3-8b_negotiationtom-group_limit20.json"
QWEN_SAMPLES = "samples_v0.4.13dev_qwen3-8b_negotiationtom_belief_limit20.jsonl"
ARC_FIXTURES = ("results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json",
                "results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json",
                "results-with-samples_v0.4.8_gemma-2b_gsm8k_limit8.json")


def sha12(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def docs_of(path: Path) -> dict[str, dict]:
    """doc_id -> doc of a JSONL sample log, read with json."""
    out = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        out[str(rec["doc_id"])] = rec["doc"]
    return out


def cluster_by_item(run, task: str) -> dict[str, str | None]:
    sc = run.scores[run.scores.task == task]
    per_item = sc.groupby("item_id").cluster.agg(lambda s: set(s.tolist()))
    assert all(len(v) == 1 for v in per_item), "one cluster per item across metrics"
    return {k: next(iter(v)) for k, v in per_item.items()}


def task_protocol(run, task: str) -> dict:
    return run.tasks.set_index("task").protocol[task]


def record(doc_id: int, doc: dict, gold: int = 0, acc: float = 1.0, native: bool = False) -> dict:
    """A 4-option loglikelihood record, 0.4.3+ layout (or 0.4.0-0.4.2 with ``native``)."""
    prompt = f"Q{doc_id}?"
    opts = [f" opt {k}" for k in range(4)]
    lls = [-1.0, -2.0, -0.5, -3.0]
    if native:
        arguments = [[prompt, o] for o in opts]
        resps, filtered = [[[x, False]] for x in lls], [[x, False] for x in lls]
    else:
        arguments = {f"gen_args_{k}": {"arg_0": prompt, "arg_1": o} for k, o in enumerate(opts)}
        resps, filtered = [[[str(x), "False"]] for x in lls], [[str(x), "False"] for x in lls]
    rec = {"doc_id": doc_id, "doc": doc, "target": gold if native else str(gold),
           "arguments": arguments, "resps": resps, "filtered_resps": filtered, "filter": "none",
           "doc_hash": f"d{doc_id}", "prompt_hash": f"p{doc_id}", "target_hash": "t", "acc": acc}
    if not native:
        rec["metrics"] = ["acc"]
    return rec


def write_log(path: Path, docs: list[dict], **kw) -> Path:
    path.write_text("".join(json.dumps(record(i, d, **kw)) + "\n" for i, d in enumerate(docs)))
    return path


def race_docs(n_passages: int = 20, per: int = 3) -> list[dict]:
    """RACE-like docs: the passage text itself is the only grouping field."""
    docs = []
    for p in range(n_passages):
        article = f"Passage {p}. " + " ".join(f"word{p}_{w}" for w in range(60))   # > 64 chars
        for q in range(per):
            docs.append({"example_id": f"{p}-{q}", "article": article,
                         "question": f"What about {p}/{q}?", "answer": "ABCD"[q % 4],
                         "options": ["a", "b", "c", "d"]})
    return docs


# ---------------------------------------------------------------------------------------
# The bundled demo
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_atlas() -> list:
    return parse_paths([DEMO / "demo-org__atlas-13b"])


def test_demo_reading_task_gets_30_passage_clusters_of_5(demo_atlas) -> None:
    run = demo_atlas[0]
    sample = next((DEMO / "demo-org__atlas-13b").glob(f"samples_{READING}_*.jsonl"))
    docs = docs_of(sample)
    got = cluster_by_item(run, READING)
    assert got == {i: d["passage_id"] for i, d in docs.items()}
    sizes = Counter(got.values())
    assert len(sizes) == 30 and set(sizes.values()) == {5}
    proto = task_protocol(run, READING)
    assert proto["cluster_key"] == "passage_id"
    assert proto["cluster_key_candidates"] == ["article", "passage_id"]   # article: same groups
    assert any("cluster key 'passage_id' picked automatically" in w and "30 clusters" in w
               and "other candidates: article" in w for w in run.warnings)


def test_demo_tasks_without_a_grouping_field_stay_unclustered(demo_atlas) -> None:
    # arc: id/question per item, answerKey is the gold letter; boolq: every passage distinct;
    # gsm8k: question/answer only
    run = demo_atlas[0]
    for task in ("arc_easy_demo", "boolq_demo", "gsm8k_demo"):
        assert run.scores[run.scores.task == task].cluster.isna().all()
        assert "cluster_key" not in task_protocol(run, task)


@pytest.mark.parametrize("key", ["passage_id", "doc.passage_id"])
def test_explicit_key(key: str) -> None:
    run = parse_paths([DEMO / "demo-org__cirrus-3b"], cluster_key=key)[0]
    sample = next((DEMO / "demo-org__cirrus-3b").glob(f"samples_{READING}_*.jsonl"))
    docs = docs_of(sample)
    assert cluster_by_item(run, READING) == {i: d["passage_id"] for i, d in docs.items()}
    assert task_protocol(run, READING) == {**task_protocol(run, READING), "cluster_key": "passage_id"}
    assert not any("picked automatically" in w for w in run.warnings)
    # tasks whose docs lack the field: no clusters, and a warning says so
    assert run.scores[run.scores.task == "arc_easy_demo"].cluster.isna().all()
    assert any("arc_easy_demo" in w and repr(key) in w and "missing" in w for w in run.warnings)


def test_explicit_long_text_key_is_hashed() -> None:
    run = parse_paths([DEMO / "demo-org__cirrus-3b"], cluster_key="article")[0]
    sample = next((DEMO / "demo-org__cirrus-3b").glob(f"samples_{READING}_*.jsonl"))
    docs = docs_of(sample)
    want = {i: (d["article"] if len(d["article"]) <= 64 else sha12(d["article"]))
            for i, d in docs.items()}
    assert cluster_by_item(run, READING) == want
    assert all(len(v) == 12 for v in want.values())        # demo articles are > 64 chars
    # the same partition as passage_id
    pairs = {(docs[i]["passage_id"], c) for i, c in want.items()}
    assert len(pairs) == 30 == len(set(want.values()))


def test_empty_key_disables_clusters() -> None:
    run = parse_paths([DEMO / "demo-org__cirrus-3b"], cluster_key="")[0]
    assert run.scores.cluster.isna().all()
    assert all("cluster_key" not in p for p in run.tasks.protocol)
    assert not any("cluster key" in w for w in run.warnings)


# ---------------------------------------------------------------------------------------
# The shared fixtures
# ---------------------------------------------------------------------------------------
def test_fixture_picks(fixtures_dir: Path) -> None:
    lm = fixtures_dir / "lm_eval"
    # arc_easy (id, question, choices, answerKey) and gsm8k (question, answer): nothing to pick
    for name in ARC_FIXTURES:
        run = parse_paths([lm / name])[0]
        assert len(run.scores) > 0 and run.scores.cluster.isna().all()
        assert all("cluster_key" not in p for p in run.tasks.protocol)
    # negotiationtom belief: 5 questions (agent x slot) about each dialogue -> dialogue_id
    # (agent/slot/mode/gold are not grouping names; gold is the label)
    # with only 4 dialogues the key is offered, not applied (fewer than 20 clusters)
    run = parse_paths([lm / QWEN_RESULTS, lm / QWEN_SAMPLES])[0]
    docs = docs_of(lm / QWEN_SAMPLES)
    assert run.scores[run.scores.task == "negotiationtom_belief"].cluster.isna().all()
    proto = task_protocol(run, "negotiationtom_belief")
    assert proto["cluster_key"] is None and proto["cluster_key_offered"] == "dialogue_id"
    assert proto["cluster_key_candidates"] == ["dialogue_id"]
    assert any("cluster key 'dialogue_id' offered, not applied: only 4 clusters" in w
               for w in run.warnings)
    # given explicitly, it is applied
    run = parse_paths([lm / QWEN_RESULTS, lm / QWEN_SAMPLES], cluster_key="dialogue_id")[0]
    got = cluster_by_item(run, "negotiationtom_belief")
    assert got == {i: d["dialogue_id"] for i, d in docs.items()}
    assert len(set(got.values())) == 4


# ---------------------------------------------------------------------------------------
# Synthetic logs: what is (not) picked, and every reader agrees
# ---------------------------------------------------------------------------------------
def test_per_item_and_gold_fields_are_not_picked(tmp_path: Path) -> None:
    docs = []
    for i in range(12):
        docs.append({
            "id": i // 2,                       # repeats, but a per-item name
            "question": f"q{i // 2}",           # repeats, per-item name
            "label": i % 4,                     # the gold (target below), per-item name
            "category": str(i % 4),             # a grouping name, but equal to the target
            "subject": f"s{i}" if i < 10 else "s0",   # mostly singletons
            "topic": "all",                     # one value only
        })
    path = tmp_path / "samples_t_2026-01-01T00-00-00.000001.jsonl"
    path.write_text("".join(json.dumps(record(i, d, gold=i % 4)) + "\n" for i, d in enumerate(docs)))
    run = parse_paths([path])[0]
    assert run.scores.cluster.isna().all()
    assert "cluster_key" not in task_protocol(run, "t")
    # with an explicit key the user's choice wins, even for the gold-like field
    run = parse_paths([path], cluster_key="category")[0]
    assert cluster_by_item(run, "t") == {str(i): str(i % 4) for i in range(12)}


def test_long_text_field_becomes_hashed_clusters_on_every_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = race_docs()
    want = {str(i): sha12(d["article"]) for i, d in enumerate(docs)}
    path = write_log(tmp_path / "samples_race_2026-01-01T00-00-00.000001.jsonl", docs)
    src = Source(name=str(path), path=path)

    def no_pyarrow(*_a, **_k):
        raise AssertionError("the DuckDB reader should have been used")

    with monkeypatch.context() as m:
        m.setattr(lm_eval.columnar, "_batches_pyarrow", no_pyarrow)
        duck = lm_eval.assemble(src.name, lm_eval.read_jsonl_fast(src, "race"))
    # DuckDB labels the passages itself: no passage text reaches Python (memory stays small)
    schema, *_ = lm_eval.columnar._fast_schema(record(0, docs[0]))
    schema = schema.append(pa.field("doc", pa.struct([("article", pa.string())])))
    batches = list(lm_eval.columnar._batches_duckdb(str(path), schema, ["article"]))
    assert all("doc" not in b.schema.names for b in batches)
    assert sum(b.column(b.schema.names.index("__cl_0")).to_pylist() == [want[str(i)] for i in range(len(docs))]
               for b in batches) == 1
    mem = Source(name=path.name, data=path.read_bytes())
    arrow = lm_eval.assemble(mem.name, lm_eval.read_jsonl_fast(mem, "race"))
    slow = lm_eval.assemble(src.name, lm_eval.read_jsonl_slow(src, "race"))
    native = lm_eval.assemble("arr", lm_eval.read_records(
        src, "race", [record(i, d, native=True) for i, d in enumerate(docs)], "record"))
    for data in (duck, arrow, slow, native):
        assert dict(zip(data.scores.item_id, data.scores.cluster)) == want
        assert data.cluster_protocol == {"cluster_key": "article",
                                         "cluster_key_candidates": ["article"]}
        assert any("long texts labelled by a 12-hex sha256 prefix" in w for w in data.warnings)
    pd.testing.assert_frame_equal(duck.scores, slow.scores)
    pd.testing.assert_frame_equal(arrow.scores, slow.scores)


def test_short_and_numeric_keys_agree_across_readers(tmp_path: Path) -> None:
    # numbers are labelled as their JSON text on every path; a short value is kept as is
    docs = [{"problem_id": i // 3, "passage_id": f"p{i // 2}", "question": f"q{i}"}
            for i in range(48)]
    path = write_log(tmp_path / "samples_num_2026-01-01T00-00-00.000001.jsonl", docs)
    src = Source(name=str(path), path=path)
    fast = lm_eval.assemble(src.name, lm_eval.read_jsonl_fast(src, "num"))
    slow = lm_eval.assemble(src.name, lm_eval.read_jsonl_slow(src, "num"))
    pd.testing.assert_frame_equal(fast.scores, slow.scores)
    assert fast.cluster_protocol == {"cluster_key": "passage_id",     # listed first
                                     "cluster_key_candidates": ["passage_id", "problem_id"]}
    assert fast.scores.cluster.tolist() == [f"p{i // 2}" for i in range(48)]
    by_num = lm_eval.assemble(src.name, lm_eval.read_jsonl_fast(src, "num", cluster_key="problem_id"))
    assert by_num.scores.cluster.tolist() == [str(i // 3) for i in range(48)]


def test_uploads_and_embedded_samples_get_clusters(tmp_path: Path) -> None:
    docs = race_docs(20, 2)     # 20 passages: enough clusters to be applied automatically
    line_bytes = "".join(json.dumps(record(i, d)) + "\n" for i, d in enumerate(docs)).encode()
    run = parse_uploads([("samples_race_2026-01-01T00-00-00.000001.jsonl", line_bytes)])[0]
    assert run.scores.cluster.tolist() == [sha12(d["article"]) for d in docs]
    results = {"results": {"race": {"alias": "race", "acc,none": 0.5}}, "configs": {"race": {}},
               "samples": {"race": [record(i, d, native=True) for i, d in enumerate(docs)]}}
    path = tmp_path / "results_2026-01-01T00-00-00.000001.json"
    path.write_text(json.dumps(results))
    run = parse_paths([path])[0]
    assert run.scores.cluster.tolist() == [sha12(d["article"]) for d in docs]
    assert task_protocol(run, "race")["cluster_key"] == "article"
    assert parse_paths([path], cluster_key="")[0].scores.cluster.isna().all()


def test_pick_cluster_key_rules() -> None:
    pick = lm_eval.pick_cluster_key
    # preferred order beats name order; other candidates are listed
    assert pick({"topic": ["a", "a", "b", "b"], "passage": ["x", "x", "y", "y"]}) == \
        ("passage", ["passage", "topic"])
    # a grouping-looking name outside the list is picked; a plain one is only a candidate
    assert pick({"story_group": list("aabb")}) == ("story_group", ["story_group"])
    assert pick({"colour": list("aabb")}) == (None, ["colour"])
    # G == n, G == 1, a missing value, too few docs, mostly singletons: not candidates
    assert pick({"subject": list("abcd")}) == (None, [])
    assert pick({"subject": list("aaaa")}) == (None, [])
    assert pick({"subject": ["a", "a", None, "b"]}) == (None, [])
    assert pick({"subject": list("aa")}) == (None, [])
    assert pick({"subject": list("aabcde")}) == (None, [])     # 1 of 5 clusters has 2 docs
    assert pick({"subject": list("aabbcd")}) == (None, [])     # 2 of 4: not more than half
    assert pick({"subject": list("aabbccd")}) == ("subject", ["subject"])   # 3 of 4
    # per-item names and the gold label are never candidates
    assert pick({"question": list("aabb"), "answer_idx": list("aabb"), "id": list("aabb")}) == (None, [])
    assert pick({"category": list("aabb")}, gold={"category"}) == (None, [])
