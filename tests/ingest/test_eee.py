"""Every Eval Ever files (evalcore/ingest/eee.py): real aggregate files of the public
datastore and aggregate + instance pairs written by the official converter
(tests/fixtures/wild/eee/, PROVENANCE.md there) read to the digit, against the numbers read
here with ``json``; the companion lookup (folder, upload, zip), bad files and the edge cases
(level-based metrics, multi-turn samples, unknown schema versions)."""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from evalcore.errors import IngestError
from evalcore.ingest import detect_format, parse_paths, parse_uploads, read_paths
from evalcore.ingest import eee
from tests.wild.conftest import board, ingest, same

COMMITTED = "eee/committed/data"
CONVERTED = "eee/converted/data"


def _doc(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def modified_wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Reference: the textbook Wilson interval (statsmodels) with Brown, Cai & DasGupta's
    (2001, Stat. Sci. 16:101, sec. 4.1.1) modification at the edges, written here from the
    paper with scipy's chi-square quantiles: for k = 1..x* (x* = 2 for n <= 50) the lower bound
    is min(Wilson, lambda_k / n), lambda_k = chi2_{2k, alpha} / 2, and symmetrically the upper."""
    alpha = 1 - confidence
    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    lo, hi = (0.0 if k == 0 else lo), (1.0 if k == n else hi)
    cut = 2 if n <= 50 else 3
    if 1 <= k <= cut:
        lo = min(lo, 0.5 * sps.chi2.ppf(alpha, 2 * k) / n)
    if 1 <= n - k <= cut:
        hi = max(hi, 1 - 0.5 * sps.chi2.ppf(alpha, 2 * (n - k)) / n)
    return lo, hi


def _aggregate(folder: Path) -> Path:
    return next(p for p in folder.rglob("*.json"))


# ---------------------------------------------------------------------------------------
# Aggregate files of the public datastore (schema 0.2.0 and 0.2.2)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("collection", ["global-mmlu-lite", "helm_lite", "hfopenllm_v2",
                                        "hal-gaia"])
def test_committed_aggregate_reported_values_to_the_digit(wild_dir, tmp_path, collection):
    path = _aggregate(wild_dir / COMMITTED / collection)
    doc = _doc(path)
    store = ingest(tmp_path, path)
    runs = store.runs()
    assert list(runs["model"]) == [doc["model_info"]["id"]]
    assert list(runs["source_format"]) == ["eee"]
    summ = store.summaries()
    got = {t: v for t, v in zip(summ["task"], summ["value"])}
    printed = {r["evaluation_name"]: r["score_details"]["score"]
               for r in doc["evaluation_results"]}
    assert set(got) == set(printed)
    for task, value in printed.items():
        assert same(got[task], value), (task, got[task], value)
    lb = board(store)
    # every task is shown from its reported value, higher is better as the file declares
    assert set(lb.cells["task"]) == set(printed)
    assert (lb.cells["method"] == "reported").all()
    assert all(i.direction == "higher" for i in lb.metric_info.values())


def test_confidence_half_widths_become_reported_stderrs(wild_dir, tmp_path):
    """Global MMLU Lite writes its 95% intervals as [-h, +h]: the reported stderr is
    h / z_0.975 and the leaderboard's interval is score +- h again."""
    path = _aggregate(wild_dir / COMMITTED / "global-mmlu-lite")
    doc = _doc(path)
    runs = parse_paths([path])
    run = runs[0]
    assert any("written as [-h, +h]" in w for w in run.warnings)
    assert any("read as 95%" in w for w in run.warnings)
    z = sps.norm.ppf(0.975)
    se = dict(zip(run.summaries["task"], run.summaries["stderr"]))
    with_ci = [r for r in doc["evaluation_results"]
               if "confidence_interval" in (r["score_details"].get("uncertainty") or {})]
    assert len(with_ci) == 16
    for r in with_ci:
        ci = r["score_details"]["uncertainty"]["confidence_interval"]
        assert ci["lower"] == -ci["upper"]
        assert math.isclose(se[r["evaluation_name"]], ci["upper"] / z, rel_tol=1e-12)
    lb = board(ingest(tmp_path, path)).cells.set_index("task")
    arabic = next(r for r in with_ci if r["evaluation_name"] == "Arabic")
    h = arabic["score_details"]["uncertainty"]["confidence_interval"]["upper"]
    assert math.isclose(lb.loc["Arabic", "high"] - lb.loc["Arabic", "score"], h, rel_tol=1e-9)
    # results without an interval have no stderr
    assert math.isnan(se["Global MMLU Lite"])


# ---------------------------------------------------------------------------------------
# Aggregate + instance pairs written by the official lm_eval converter
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("collection", ["asdiv", "masakhaner_luo_prompt_1",
                                        "math_perturbed_full", "ai2_arc", "pubmed_qa"])
def test_converted_pairs_item_means_equal_the_jsonl(wild_dir, tmp_path, collection):
    folder = wild_dir / CONVERTED / collection
    agg_path = next(p for p in folder.rglob("*.json"))
    doc = _doc(agg_path)
    rows = _lines(next(folder.rglob("*_samples.jsonl")))
    store = ingest(tmp_path, folder)
    (result,) = doc["evaluation_results"]
    summ = store.summaries().iloc[0]
    unc = result["score_details"]["uncertainty"]
    assert same(summ["value"], result["score_details"]["score"])
    assert same(summ["stderr"], (unc.get("standard_error") or {}).get("value"))
    assert int(summ["n"]) == unc["num_samples"]
    scores = store.scores(list(store.runs()["run_id"]))
    assert len(scores) == len(rows) == doc["detailed_evaluation_results"]["total_rows"]
    by_id = {str(r["sample_id"]): r["evaluation"]["score"] for r in rows}
    assert dict(zip(scores["item_id"], scores["score"])) == by_id
    cell = board(store).cells.iloc[0]
    assert cell["has_items"] and cell["n"] == len(rows)
    assert math.isclose(cell["score"], np.mean(list(by_id.values())), abs_tol=1e-15)
    # the interval comes from the items (evalbars' modified Wilson for 0/1 scores)
    k = int(sum(by_id.values()))
    lo, hi = modified_wilson(k, len(rows))
    assert math.isclose(cell["low"], lo, abs_tol=1e-12) and math.isclose(cell["high"], hi,
                                                                          abs_tol=1e-12)
    # texts for the drill-down: input.raw and output.raw
    one = rows[0]
    tx = store.texts(int(store.runs()["run_id"][0]), cell["task"], [str(one["sample_id"])])
    assert tx["prompt"].iloc[0] == one["input"]["raw"]
    assert tx["response"].iloc[0] == "\n".join(one["output"]["raw"])


@pytest.mark.parametrize("collection,flag,reported", [
    ("asdiv", "value mismatch", 0.92),
    ("masakhaner_luo_prompt_1", "value mismatch", 0.0656270305392884),
    ("math_perturbed_full", "n mismatch", 0.0)])
def test_audit_flags_converter_item_scores_that_miss_the_reported_value(
        wild_dir, tmp_path, collection, flag, reported):
    """every-eval-ever 0.3.0's lm_eval converter writes evaluation.score 0.0 for every asdiv
    sample although lm_eval's own sample log has acc 1 for 46 of 50, and 0.0 per sample for
    masakhaner's corpus-level f1; math_perturbed keeps 10 of the 5000 items. The audit
    compares the reported value and n with the items and flags each (PROVENANCE.md)."""
    store = ingest(tmp_path, wild_dir / CONVERTED / collection)
    aud = store.audit()
    assert len(aud) == 1
    assert flag in aud["flag"].iloc[0]
    assert same(aud["reported"].iloc[0], reported) and aud["recomputed"].iloc[0] == 0.0


@pytest.mark.parametrize("collection", ["ai2_arc", "pubmed_qa"])
def test_inspect_converter_pairs_agree_with_their_reported_values(wild_dir, tmp_path,
                                                                  collection):
    """The inspect converter's pairs (from the repository's own inspect test logs) are
    consistent: the audit finds nothing, and the items' mean is the reported accuracy."""
    store = ingest(tmp_path, wild_dir / CONVERTED / collection)
    aud = store.audit()
    assert len(aud) == 1 and aud["flag"].isna().all()
    assert same(aud["recomputed"].iloc[0], aud["reported"].iloc[0])


def test_committed_files_are_valid_under_their_own_schema(wild_dir):
    from jsonschema import Draft7Validator
    schemas = wild_dir / "eee" / "schemas"
    files = sorted((wild_dir / COMMITTED).rglob("*.json"))
    assert len(files) == 4
    for path in files:
        doc = _doc(path)
        schema = json.loads((schemas / doc["schema_version"] / "eval.schema.json").read_text())
        assert list(Draft7Validator(schema).iter_errors(doc)) == [], path


def test_item_hash_is_the_lm_eval_doc_hash(wild_dir):
    rows = _lines(next((wild_dir / CONVERTED / "asdiv").rglob("*_samples.jsonl")))
    run = parse_paths([wild_dir / CONVERTED / "asdiv"])[0]
    got = dict(zip(run.scores["item_id"], run.scores["item_hash"]))
    assert all(got[str(r["sample_id"])] == r["metadata"]["doc_hash"] for r in rows)
    prompt = dict(zip(run.scores["item_id"], run.scores["prompt_hash"]))
    assert all(prompt[str(r["sample_id"])] == r["metadata"]["prompt_hash"] for r in rows)


# ---------------------------------------------------------------------------------------
# Finding the companion
# ---------------------------------------------------------------------------------------
def _pair(wild_dir: Path) -> tuple[Path, Path]:
    folder = wild_dir / CONVERTED / "math_perturbed_full"
    return next(folder.rglob("*[0-9a-f].json")), next(folder.rglob("*_samples.jsonl"))


def test_aggregate_without_its_companion_is_read_and_says_so(wild_dir, tmp_path):
    agg, _ = _pair(wild_dir)
    (tmp_path / agg.name).write_bytes(agg.read_bytes())
    (run,) = parse_paths([tmp_path / agg.name])
    assert run.scores.empty and len(run.summaries) == 1
    assert any("is not beside it" in w and "_samples.jsonl" in w for w in run.warnings)


def test_uploads_and_zips_pair_the_companion(wild_dir):
    agg, samples = _pair(wild_dir)
    runs = parse_uploads([(agg.name, agg.read_bytes()), (samples.name, samples.read_bytes())])
    assert len(runs) == 1 and len(runs[0].scores) == 10
    assert {f.format for f in runs[0].files} == {eee.AGGREGATE, eee.SAMPLES}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"x/{agg.name}", agg.read_bytes())
        z.writestr(f"x/{samples.name}", samples.read_bytes())
    (run,) = parse_uploads([("eee.zip", buf.getvalue())])
    assert len(run.scores) == 10


def test_companion_beside_an_aggregate_given_alone(wild_dir):
    agg, _ = _pair(wild_dir)
    (run,) = parse_paths([agg])
    assert len(run.scores) == 10 and len(run.files) == 2


def test_companion_named_uuid_jsonl(wild_dir, tmp_path):
    agg, samples = _pair(wild_dir)
    (tmp_path / agg.name).write_bytes(agg.read_bytes())
    (tmp_path / agg.name.replace(".json", ".jsonl")).write_bytes(samples.read_bytes())
    (run,) = parse_paths([tmp_path])
    assert len(run.scores) == 10


def test_detect_format(wild_dir):
    agg, samples = _pair(wild_dir)
    assert detect_format(agg.name, agg.read_bytes()[:65536]) == eee.AGGREGATE
    assert detect_format(samples.name, samples.read_bytes()[:65536]) == eee.SAMPLES
    one_line = json.dumps(_doc(agg)).encode()
    assert detect_format("x.json", one_line) == eee.AGGREGATE


# ---------------------------------------------------------------------------------------
# Schema versions and bad files
# ---------------------------------------------------------------------------------------
def _write(folder: Path, doc: dict, lines: list[dict] | None = None, stem: str = "a") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    if lines is not None:
        (folder / f"{stem}_samples.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("version", ["0.2.0", "0.2.1", "0.2.2", "0.2.3", "0.3.0"])
def test_known_schema_versions_are_read(wild_dir, tmp_path, version):
    agg, samples = _pair(wild_dir)
    doc = _doc(agg)
    doc["schema_version"] = version
    lines = [dict(r, schema_version=version) for r in _lines(samples)]
    (run,) = parse_paths([_write(tmp_path, doc, lines)])
    assert len(run.scores) == 10 and run.protocol["eee_schema_version"] == version


@pytest.mark.parametrize("version", ["0.1.0", "0.4.0", 2])
def test_unknown_schema_version_is_named(wild_dir, tmp_path, version):
    agg, _ = _pair(wild_dir)
    doc = dict(_doc(agg), schema_version=version)
    with pytest.raises(IngestError) as exc:
        parse_paths([_write(tmp_path, doc)])
    assert exc.value.where == "schema_version"
    assert "unknown schema version" in str(exc.value) and str(version) in str(exc.value)


def test_bad_sample_line_names_file_line_and_field(wild_dir, tmp_path):
    agg, samples = _pair(wild_dir)
    lines = _lines(samples)
    lines[3]["evaluation"]["score"] = "high"
    path = _write(tmp_path, _doc(agg), lines)
    with pytest.raises(IngestError) as exc:
        parse_paths([path])
    assert exc.value.file.endswith("a_samples.jsonl")
    assert exc.value.where == "line 4, field evaluation.score"
    assert "a finite number" in str(exc.value) and "'high'" in str(exc.value)
    # in a batch the run is left out whole: the aggregate is held back with it
    batch = read_paths([tmp_path])
    assert batch.runs == [] and len(batch.problems) == 2


def test_broken_json_line_and_bad_result(wild_dir, tmp_path):
    agg, samples = _pair(wild_dir)
    path = _write(tmp_path / "a", _doc(agg), _lines(samples))
    text = (tmp_path / "a" / "a_samples.jsonl").read_text().splitlines()
    text[1] = text[1][:40]
    (tmp_path / "a" / "a_samples.jsonl").write_text("\n".join(text) + "\n")
    with pytest.raises(IngestError) as exc:
        parse_paths([path])
    assert exc.value.where == "line 2"
    doc = _doc(agg)
    doc["evaluation_results"][0]["score_details"]["score"] = None
    with pytest.raises(IngestError) as exc:
        parse_paths([_write(tmp_path / "b", doc)])
    assert exc.value.where == "evaluation_results[0].score_details.score"


def test_level_metrics_keep_the_reported_value_only(wild_dir, tmp_path):
    """A level-based metric (score_type "levels") is a category: no item scores, no
    declared direction (never ranked or averaged), the reported value kept."""
    agg, samples = _pair(wild_dir)
    doc = _doc(agg)
    mc = doc["evaluation_results"][0]["metric_config"]
    mc.update(score_type="levels", level_names=["bad", "ok", "good"])
    doc["evaluation_results"][0]["score_details"]["score"] = 2
    (run,) = parse_paths([_write(tmp_path, doc, _lines(samples))])
    assert run.scores.empty and run.summaries["value"].tolist() == [2.0]
    assert "higher_is_better" not in run.tasks["protocol"].iloc[0]
    assert any("level-based" in w for w in run.warnings)
    lb = board(ingest(tmp_path, tmp_path / "a.json"))
    assert lb.averages.empty or lb.averages["n_tasks"].fillna(0).eq(0).all()
    assert all(i.direction == "unknown" for i in lb.metric_info.values())


def test_multi_turn_samples_read_their_last_assistant_message(wild_dir, tmp_path):
    agg, samples = _pair(wild_dir)
    lines = _lines(samples)
    for r in lines:
        r["interaction_type"] = "agentic"
        r["output"] = None
        r["messages"] = [{"turn_idx": 0, "role": "user", "content": "go"},
                         {"turn_idx": 1, "role": "assistant", "content": "first"},
                         {"turn_idx": 2, "role": "tool", "content": "42"},
                         {"turn_idx": 3, "role": "assistant", "content": f"final {r['sample_id']}"}]
    (run,) = parse_paths([_write(tmp_path, _doc(agg), lines)])
    assert len(run.scores) == 10
    assert run.texts["response"].tolist()[:2] == ["final 0", "final 1"]


def test_protocol_differences_are_flagged(wild_dir, tmp_path):
    """Two aggregates that differ in their generation settings: the protocol diff shows it."""
    agg, _ = _pair(wild_dir)
    doc = _doc(agg)
    other = json.loads(json.dumps(doc))
    other["evaluation_results"][0]["generation_config"]["generation_args"]["temperature"] = 0.7
    other["model_info"]["id"] = "someone/else"
    _write(tmp_path / "a", doc)
    _write(tmp_path / "b", other)
    store = ingest(tmp_path, tmp_path / "a", tmp_path / "b")
    ids = sorted(int(r) for r in store.runs()["run_id"])
    diff = store.protocol_diff(ids[0], ids[1])
    row = diff[diff["setting"].str.endswith("generation_args.temperature")]
    assert len(row) == 1 and row["value_a"].iloc[0] == "0.0" and row["value_b"].iloc[0] == "0.7"


def test_converted_run_pairs_with_the_lm_eval_run_it_came_from(wild_dir, tmp_path):
    """The lm_eval converter keeps doc_hash and prompt_hash in each sample's metadata: the
    EEE run and the lm_eval run pair item by item with no hash mismatch."""
    store = ingest(tmp_path, wild_dir / "lm_eval" / "asdiv", wild_dir / CONVERTED / "asdiv")
    runs = store.runs()
    fmt = dict(zip(runs["source_format"], runs["run_id"].astype(int)))
    pairing = store.pairing(fmt["lm_eval"], fmt["eee"], "asdiv", "acc")
    assert len(pairing["shared"]) == 50
    assert pairing["only_a"] == pairing["only_b"] == pairing["hash_mismatch"] == []


def test_declared_rows_and_checksum_are_checked(wild_dir, tmp_path):
    """A companion whose row count or sha256 differs from what the aggregate declares is
    read, with a warning for each; a level-based metric's lines still count as rows."""
    agg, samples = _pair(wild_dir)
    doc = _doc(agg)
    lines = _lines(samples)
    (run,) = parse_paths([_write(tmp_path / "same", doc, lines)])   # the same bytes again
    assert not any("declares" in w or "checksum" in w for w in run.warnings)
    changed = json.loads(json.dumps(lines))
    changed[0]["evaluation"]["score"] = 1.0
    (run,) = parse_paths([_write(tmp_path / "changed", doc, changed)])
    assert any("differs from the checksum" in w for w in run.warnings)
    doc["detailed_evaluation_results"]["total_rows"] = 11
    (run,) = parse_paths([_write(tmp_path / "rows", doc, lines)])
    assert any("declares 11 rows, the file holds 10 lines" in w for w in run.warnings)
    doc["detailed_evaluation_results"]["total_rows"] = 10
    doc["evaluation_results"][0]["metric_config"]["score_type"] = "levels"
    (run,) = parse_paths([_write(tmp_path / "levels", doc, lines)])
    assert not any("declares" in w for w in run.warnings)
    # the real pair as written: its checksum matches
    (run,) = parse_paths([agg])
    assert run.warnings == []


def _paths(obj, prefix=()):
    """Every key path of a JSON value (lists: their first element)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list) and obj:
        yield prefix + (0,)
        yield from _paths(obj[0], prefix + (0,))


def _set(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


@pytest.mark.parametrize("swap", [None, "x", [], {}, -1, True, 1e308])
def test_every_field_of_a_wrong_type_is_read_or_refused_cleanly(wild_dir, tmp_path, swap):
    """Each field of the aggregate and of one sample line swapped for a value of another
    type: the pair is read, or refused with an IngestError naming the file; never another
    exception."""
    agg, samples = _pair(wild_dir)
    doc, lines = _doc(agg), _lines(samples)
    cases = [("agg", p) for p in _paths(doc)] + [("line", p) for p in _paths(lines[0])]
    for n, (which, path) in enumerate(cases):
        d, ls = json.loads(json.dumps(doc)), json.loads(json.dumps(lines))
        _set(d if which == "agg" else ls[0], path, swap)
        folder = tmp_path / str(n)
        try:
            parse_paths([_write(folder, d, ls)])
        except IngestError as exc:
            assert str(folder) in exc.file, (path, exc)
