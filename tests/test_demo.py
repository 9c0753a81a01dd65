"""The bundled demo (data/demo): reproducible, well-formed, and telling the story it claims.

Reference values are recomputed here independently of ``scripts/make_demo.py``: hashes with
hashlib exactly as lm_eval computes them, means and stderrs with numpy, McNemar p-values with
``scipy.stats.binomtest``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import re
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
DEMO = DATA / "demo"
LM = DEMO / "lm_eval"
INSPECT = DEMO / "inspect"

MODELS = ["demo-org/atlas-13b", "demo-org/boreal-8b", "demo-org/atlas-7b",
          "demo-org/cirrus-3b-instruct", "demo-org/cirrus-3b"]
TASK_ITEMS = {"arc_easy_demo": 200, "boolq_demo": 120, "gsm8k_demo": 120, "reading_demo": 150}
PRIMARY = {"arc_easy_demo": "acc_norm", "boolq_demo": "acc", "gsm8k_demo": "exact_match,flexible-extract",
           "reading_demo": "acc"}
TRIVIA_N, EPOCHS = 60, 5


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def load_make_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_demo", ROOT / "scripts" / "make_demo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_demo"] = module   # dataclasses look their module up there   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def all_files(base: Path) -> dict[str, Path]:
    return {p.relative_to(base).as_posix(): p for p in sorted(base.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo_regen")
    load_make_demo().generate(out)
    return out


def read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "", "a JSONL file ends with a newline"
    return [json.loads(line) for line in lines[:-1]]


def lm_runs() -> list[tuple[str, str, dict]]:
    """(model folder, timestamp, results JSON) for every lm_eval invocation in the demo."""
    out = []
    for res in sorted(LM.glob("*/results_*.json")):
        ts = res.stem[len("results_"):]
        out.append((res.parent.name, ts, json.loads(res.read_text(encoding="utf-8"))))
    return out


def samples(model: str, ts: str, task: str) -> list[dict]:
    return read_jsonl(LM / model.replace("/", "__") / f"samples_{task}_{ts}.jsonl")


def scores_by_doc(lines: list[dict], metric: str) -> dict[int, float]:
    name, _, filt = metric.partition(",")
    filt = filt or "none"
    return {s["doc_id"]: s[name] for s in lines if s["filter"] == filt}


def run_timestamps(model: str) -> list[str]:
    return sorted(p.stem[len("results_"):] for p in (LM / model.replace("/", "__")).glob("results_*.json"))


# --------------------------------------------------------------------------- reproducibility

def test_regeneration_matches_committed_files(regenerated: Path) -> None:
    committed = all_files(DEMO) | {"../README.md": DATA / "README.md",
                                   "../demo_truth.json": DATA / "demo_truth.json"}
    fresh = all_files(regenerated / "demo") | {"../README.md": regenerated / "README.md",
                                               "../demo_truth.json": regenerated / "demo_truth.json"}
    assert sorted(committed) == sorted(fresh)
    for rel, path in committed.items():
        if rel.endswith(".eval"):
            # compare the zip structure and every member's bytes (robust to a different zlib build)
            with zipfile.ZipFile(path) as za, zipfile.ZipFile(fresh[rel]) as zb:
                ia, ib = za.infolist(), zb.infolist()
                assert [(i.filename, i.date_time, i.compress_type, i.external_attr) for i in ia] == \
                       [(i.filename, i.date_time, i.compress_type, i.external_attr) for i in ib], rel
                for info in ia:
                    assert za.read(info.filename) == zb.read(info.filename), f"{rel}:{info.filename}"
        else:
            assert path.read_bytes() == fresh[rel].read_bytes(), f"{rel} differs from a fresh generation"


def test_items_demo_matches_committed_files(regenerated: Path) -> None:
    """data/demo_items (scripts/demo_items.py): corpus and truth regenerate byte for byte; the
    planted label errors are in the sample logs (answerKey names a distractor)."""
    fresh = all_files(regenerated / "demo_items")
    committed = all_files(DATA / "demo_items")
    assert sorted(fresh) == sorted(committed) == ["corpus.jsonl", "truth.json"]
    for rel, path in committed.items():
        assert path.read_bytes() == fresh[rel].read_bytes(), f"demo_items/{rel} differs"
    truth = json.loads((DATA / "demo_items" / "truth.json").read_text())
    bad = truth["label_errors"]["item_ids"]
    assert len(bad) == 6 and not set(bad) & set(truth["overlaps"]["arc_easy_demo"])
    folder, ts, _ = lm_runs()[0]
    lines = {s["doc_id"]: s for s in samples(folder.replace("__", "/"), ts, "arc_easy_demo")}
    corpus = "\n".join(page["text"] for page in read_jsonl(DATA / "demo_items" / "corpus.jsonl"))
    for i in truth["overlaps"]["arc_easy_demo"]:
        assert lines[int(i)]["doc"]["question"] in corpus


def test_eval_zip_writer_is_byte_identical(tmp_path: Path) -> None:
    make_demo = load_make_demo()
    items = make_demo.build_trivia()
    model = make_demo.MODELS[0]
    make_demo.write_inspect_log(model, 0, items, tmp_path / "one")
    make_demo.write_inspect_log(model, 0, items, tmp_path / "two")
    (one,) = (tmp_path / "one" / "inspect").glob("*.eval")
    (two,) = (tmp_path / "two" / "inspect").glob("*.eval")
    assert one.name == two.name and one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as zf:
        assert {i.date_time[:3] for i in zf.infolist()} == {(2026, 3, 4)}   # fixed dates, not "now"


def test_demo_stays_small() -> None:
    total = sum(p.stat().st_size for p in all_files(DEMO).values())
    assert total < 10_000_000, f"data/demo is {total / 1e6:.1f} MB"


# --------------------------------------------------------------------------- lm_eval files

def test_lm_eval_layout_and_runs() -> None:
    runs = lm_runs()
    # 5 models x 1 main run, a rerun of atlas-7b, a protocol variant of boreal-8b
    assert len(runs) == 7
    assert sorted({r[2]["model_name"] for r in runs}) == sorted(MODELS)
    for folder, ts, res in runs:
        assert folder == res["model_name_sanitized"] == res["model_name"].replace("/", "__")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{6}", ts)
        assert res["lm_eval_version"].startswith("0.4.")
        for task, entry in res["results"].items():
            assert entry["name"] == entry["alias"] == task
            assert entry["sample_len"] == res["n-samples"][task]["effective"] == TASK_ITEMS[task]
            assert (LM / folder / f"samples_{task}_{ts}.jsonl").is_file()
        assert sorted(p.name for p in (LM / folder).glob(f"samples_*_{ts}.jsonl")) == \
            sorted(f"samples_{t}_{ts}.jsonl" for t in res["results"])


def test_lm_eval_samples_hashes_and_aggregates() -> None:
    for folder, ts, res in lm_runs():
        for task, entry in res["results"].items():
            lines = read_jsonl(LM / folder / f"samples_{task}_{ts}.jsonl")
            filters = sorted({s["filter"] for s in lines})
            assert len(lines) == TASK_ITEMS[task] * len(filters)
            for s in lines:
                assert s["doc_hash"] == sha(json.dumps(s["doc"], indent=2, ensure_ascii=False))
                assert s["prompt_hash"] == sha(s["arguments"]["gen_args_0"]["arg_0"])
                assert s["target_hash"] == sha(s["target"])
                assert isinstance(s["target"], str)
            # task_hashes: sha256 of the concatenated per-sample hashes, in file order
            assert res["task_hashes"][task] == sha("".join(
                s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines))
            for key, value in entry.items():
                if "," not in key or "_stderr," in key:
                    continue
                metric, filt = key.split(",")
                xs = np.array([s[metric] for s in lines if s["filter"] == filt])
                assert len(xs) == TASK_ITEMS[task]
                assert value == pytest.approx(xs.mean(), abs=1e-12)
                assert entry[f"{metric}_stderr,{filt}"] == pytest.approx(
                    xs.std(ddof=1) / np.sqrt(len(xs)), rel=1e-9)


def test_multiple_choice_metrics_follow_from_loglikelihoods() -> None:
    for folder, ts, res in lm_runs():
        for task in res["results"]:
            if res["configs"][task]["output_type"] != "multiple_choice":
                continue
            for s in read_jsonl(LM / folder / f"samples_{task}_{ts}.jsonl"):
                lls = np.array([float(ll) for ll, _ in s["filtered_resps"]])
                gold = int(s["target"])
                assert s["acc"] == float(np.argmax(lls) == gold)
                assert [a["arg_1"] for a in s["arguments"].values()] == \
                    [(" " if not res["chat_template"] else "") + c for c in _choices(task, s["doc"])]
                if "acc_norm" in s:
                    lengths = np.array([len(c) for c in _choices(task, s["doc"])], dtype=float)
                    assert s["acc_norm"] == float(np.argmax(lls / lengths) == gold)


def _choices(task: str, doc: dict) -> list[str]:
    if task == "arc_easy_demo":
        return doc["choices"]["text"]
    if task == "boolq_demo":
        return ["no", "yes"]
    return doc["options"]


def test_gsm8k_filters_are_consistent() -> None:
    for folder, ts, res in lm_runs():
        lines = read_jsonl(LM / folder / f"samples_gsm8k_demo_{ts}.jsonl")
        assert [s["filter"] for s in lines] == ["strict-match"] * 120 + ["flexible-extract"] * 120
        for s in lines:
            answer = s["target"].split("#### ")[-1]
            got = s["filtered_resps"][0]
            if s["filter"] == "strict-match":
                m = re.search(r"#### (\-?[0-9\.\,]+)", s["resps"][0][0])
                assert got == (m.group(1) if m else "[invalid]")
            assert s["exact_match"] == float(got.replace(",", "").replace("$", "").rstrip(".") == answer)
        strict = scores_by_doc(lines, "exact_match,strict-match")
        flexible = scores_by_doc(lines, "exact_match,flexible-extract")
        assert all(strict[d] <= flexible[d] for d in strict), "strict never rescues what flexible misses"


def test_reading_task_has_passage_clusters() -> None:
    lines = samples(MODELS[0], run_timestamps(MODELS[0])[0], "reading_demo")
    passages = [s["doc"]["passage_id"] for s in lines]
    counts = {p: passages.count(p) for p in set(passages)}
    assert len(counts) == 30 and set(counts.values()) == {5}
    # items of one passage share the article text, and the article is in the prompt
    for s in lines:
        assert s["doc"]["article"] in s["arguments"]["gen_args_0"]["arg_0"]


def test_rerun_same_prompts_some_flips() -> None:
    model = "demo-org/atlas-7b"
    first, second = run_timestamps(model)
    for task in ("arc_easy_demo", "gsm8k_demo"):
        a, b = samples(model, first, task), samples(model, second, task)
        assert [(s["doc_id"], s["doc_hash"], s["prompt_hash"]) for s in a] == \
               [(s["doc_id"], s["doc_hash"], s["prompt_hash"]) for s in b]
        metric = PRIMARY[task]
        xa, xb = scores_by_doc(a, metric), scores_by_doc(b, metric)
        flips = np.mean([xa[d] != xb[d] for d in xa])
        assert 0.02 <= flips <= 0.12, f"{task}: {flips:.3f} of items flipped"
    ra = json.loads((LM / "demo-org__atlas-7b" / f"results_{first}.json").read_text())
    rb = json.loads((LM / "demo-org__atlas-7b" / f"results_{second}.json").read_text())
    for task in rb["results"]:   # same protocol: identical task configs and few-shot
        assert ra["configs"][task] == rb["configs"][task] and ra["n-shot"][task] == rb["n-shot"][task] == 0
    assert ra["config"]["random_seed"] != rb["config"]["random_seed"]
    assert ra["chat_template"] is None and rb["chat_template"] is None


def test_protocol_variant_differs_in_prompt_not_in_items() -> None:
    model = "demo-org/boreal-8b"
    first, second = run_timestamps(model)
    ra = json.loads((LM / "demo-org__boreal-8b" / f"results_{first}.json").read_text())
    rb = json.loads((LM / "demo-org__boreal-8b" / f"results_{second}.json").read_text())
    assert set(rb["results"]) == {"arc_easy_demo", "gsm8k_demo"}
    assert all(ra["n-shot"][t] == 0 and rb["n-shot"][t] == 3 for t in rb["results"])
    assert ra["chat_template"] is None and ra["fewshot_as_multiturn"] is False
    assert rb["chat_template_sha"] == sha(rb["chat_template"]) and rb["fewshot_as_multiturn"] is True
    for task in rb["results"]:
        a, b = samples(model, first, task), samples(model, second, task)
        assert [s["doc_hash"] for s in a] == [s["doc_hash"] for s in b]
        assert all(x["prompt_hash"] != y["prompt_hash"] for x, y in zip(a, b))
        assert b[0]["arguments"]["gen_args_0"]["arg_0"].count("<|im_start|>user") == 4  # 3 shots + doc


# --------------------------------------------------------------------------- inspect files

def eval_logs() -> list[Path]:
    return sorted(INSPECT.glob("*.eval"))


def test_inspect_logs_are_complete_eval_zips() -> None:
    logs = eval_logs()
    assert len(logs) == 5
    models = set()
    for path in logs:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\+00-00_trivia-demo_[0-9A-Za-z]{22}\.eval", path.name)
        with zipfile.ZipFile(path) as zf:
            assert zf.testzip() is None
            names = zf.namelist()
            assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in zf.infolist())
            assert names[0] == "_journal/start.json" and names[-1] == "header.json"
            assert {"summaries.json", "reductions.json"} <= set(names)
            sample_names = {n for n in names if n.startswith("samples/")}
            assert sample_names == {f"samples/{i}_epoch_{e}.json"
                                    for i in range(1, TRIVIA_N + 1) for e in range(1, EPOCHS + 1)}
            header = json.loads(zf.read("header.json"))
            start = json.loads(zf.read("_journal/start.json"))
            assert header["version"] == 2 and header["status"] == "success"
            assert start["eval"] == header["eval"]
            assert header["eval"]["config"]["epochs"] == EPOCHS
            assert header["eval"]["task_id"] in path.name
            models.add(header["eval"]["model"])

            values: dict[int, list[float]] = {}
            categories = set()
            for name in sample_names:
                s = json.loads(zf.read(name))
                assert name == f"samples/{s['id']}_epoch_{s['epoch']}.json"
                v = s["scores"]["match"]["value"]
                assert v in ("C", "I")
                assert (v == "C") == (s["output"]["completion"] == s["target"])
                values.setdefault(s["id"], []).append(1.0 if v == "C" else 0.0)
                categories.add(s["metadata"]["category"])
            assert len(categories) == 6

            summaries = json.loads(zf.read("summaries.json"))
            assert len(summaries) == TRIVIA_N * EPOCHS
            journal = [n for n in names if n.startswith("_journal/summaries/")]
            assert sum(len(json.loads(zf.read(n))) for n in journal) == len(summaries)

            (red,) = json.loads(zf.read("reductions.json"))
            assert red["scorer"] == "match"
            reduced = {r["sample_id"]: r["value"] for r in red["samples"]}
            assert reduced == pytest.approx({k: float(np.mean(v)) for k, v in values.items()})
            m = header["results"]["scores"][0]["metrics"]
            xs = np.array(list(reduced.values()))
            assert m["accuracy"]["value"] == pytest.approx(xs.mean())
            assert m["stderr"]["value"] == pytest.approx(xs.std(ddof=1) / np.sqrt(len(xs)))
            assert header["results"]["total_samples"] == TRIVIA_N * EPOCHS
    assert models == {f"hf/{m}" for m in MODELS}


# --------------------------------------------------------------------------- the story it tells

def _paired_p(task: str, model_a: str, model_b: str) -> tuple[float, float, float]:
    a = scores_by_doc(samples(model_a, run_timestamps(model_a)[0], task), PRIMARY[task])
    b = scores_by_doc(samples(model_b, run_timestamps(model_b)[0], task), PRIMARY[task])
    only_a = sum(1 for d in a if a[d] == 1 and b[d] == 0)
    only_b = sum(1 for d in a if a[d] == 0 and b[d] == 1)
    p = binomtest(only_a, only_a + only_b, 0.5).pvalue
    return float(np.mean(list(a.values()))), float(np.mean(list(b.values()))), p


@pytest.mark.parametrize("task", sorted(TASK_ITEMS))
def test_designed_contrasts(task: str) -> None:
    """A clearly different pair and a not-significant pair, by exact McNemar (scipy)."""
    top, bottom, p_far = _paired_p(task, "demo-org/atlas-13b", "demo-org/cirrus-3b")
    assert top > bottom and p_far < 0.01
    _, _, p_close = _paired_p(task, "demo-org/boreal-8b", "demo-org/atlas-7b")
    assert p_close > 0.05


def test_observed_scores_agree_with_truth() -> None:
    truth = json.loads((DATA / "demo_truth.json").read_text(encoding="utf-8"))
    for model in MODELS:
        ts = run_timestamps(model)[0]
        for task, n in TASK_ITEMS.items():
            expected = truth["expected_accuracy"][model][task]
            observed = np.mean(list(scores_by_doc(samples(model, ts, task), PRIMARY[task]).values()))
            se = np.sqrt(expected * (1 - expected) / n)
            assert abs(observed - expected) < 3.5 * se, (model, task, observed, expected)
    thetas = [truth["models"][m]["theta"] for m in MODELS]
    assert thetas == sorted(thetas, reverse=True)


# --------------------------------------------------------------------------- through the ingest

@pytest.fixture(scope="module")
def parsed_demo() -> list:
    ingest = pytest.importorskip("evalcore.ingest")
    parse_paths = getattr(ingest, "parse_paths", None)
    if parse_paths is None:
        pytest.skip("evalcore.ingest.parse_paths is not available yet")
    try:
        return parse_paths([DEMO])
    except NotImplementedError:
        pytest.skip("evalcore.ingest.parse_paths is not implemented yet")


def test_ingest_reads_the_demo(parsed_demo: list) -> None:
    # the Noise page's seed and checkpoint runs (scripts/demo_noise.py) are tested in
    # tests/analysis/test_noise_demo.py
    # the LLM-judged task (scripts/demo_judge.py) is tested in tests/judge/test_judge_demo.py
    runs = [r for r in parsed_demo if not (r.model or "").startswith("demo-lab/")
            and "judged_qa_demo" not in set(r.scores["task"])]
    assert len(runs) == 12
    lm = [r for r in runs if r.source_format == "lm_eval"]
    insp = [r for r in runs if r.source_format == "inspect"]
    assert len(lm) == 7 and len(insp) == 5
    for r in lm:
        assert r.model in MODELS and r.harness_version and r.harness_version.startswith("0.4.")
        sc = r.scores
        assert (sc["answer_idx"] == 0).all()
        n_items = sc.groupby(["task", "metric"])["item_id"].nunique().to_dict()
        full = len(set(sc["task"])) == 4
        expected = {("arc_easy_demo", "acc"): 200, ("arc_easy_demo", "acc_norm"): 200,
                    ("gsm8k_demo", "exact_match,strict-match"): 120,
                    ("gsm8k_demo", "exact_match,flexible-extract"): 120}
        if full:
            expected |= {("boolq_demo", "acc"): 120, ("reading_demo", "acc"): 150}
        assert n_items == expected, r.name
        assert set(sc["score"].unique()) <= {0.0, 1.0}
    assert sorted(r.model for r in lm).count("demo-org/atlas-7b") == 2
    assert sorted(r.model for r in lm).count("demo-org/boreal-8b") == 2
    for r in insp:
        sc = r.scores
        assert set(sc["task"]) == {"trivia_demo"}
        assert sc["item_id"].nunique() == TRIVIA_N
        assert sorted(sc["answer_idx"].unique()) == list(range(EPOCHS))
        assert len(sc) == TRIVIA_N * EPOCHS
        assert r.model is not None and any(r.model.endswith(m) for m in MODELS)


def test_models_correlate_item_by_item_on_arc() -> None:
    """Items differ a lot in difficulty, so models' per-item correctness correlates (0.3-0.5 in
    real evals); a regression to a narrow difficulty spread gives near-independent runs (~0.05)."""
    task = "arc_easy_demo"
    rows = []
    for model in MODELS:
        by_doc = scores_by_doc(samples(model, run_timestamps(model)[0], task), PRIMARY[task])
        rows.append([by_doc[d] for d in sorted(by_doc)])
    corr = np.corrcoef(np.array(rows))
    pairs = corr[np.triu_indices(len(MODELS), k=1)]
    assert 0.3 <= pairs.mean() <= 0.5, pairs.round(2)
    assert pairs.min() >= 0.2 and pairs.max() <= 0.6, pairs.round(2)
    # the paired SE of the far pair is clearly smaller than the unpaired one
    a, b = np.array(rows[0]), np.array(rows[-1])
    n = len(a)
    se_paired = (a - b).std(ddof=1) / np.sqrt(n)
    se_unpaired = np.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
    assert se_paired / se_unpaired < 0.9
