"""``export --format eee`` (evalcore/export/eee.py): the files pass the Every Eval Ever
validation, carry the leaderboard's uncertainty, are named by content, and read back into
the same run (lm_eval -> evalbars -> EEE -> evalbars keeps item scores, n, reported values
and protocols) on the demo and on real files of tests/fixtures/wild.

Validation: the official validator (``python -m every_eval_ever validate``, PyPI
``every-eval-ever`` 0.3.0) runs where a Python >= 3.12 with the package is found
(``tests/export/eee_checks.official_python``); otherwise that test is skipped with the reason
and ``test_*_pass_the_schemas`` validate against the JSON schemas the package ships plus the
port of its repository checks (tests/export/eee_checks.py), which always run.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evalcore.analysis import leaderboard
from evalcore.export import export_eee, export_eee_zip, write_eee
from evalcore.export.eee import content_uuid, model_path
from evalcore.ingest import parse_paths
from evalcore.store import Store
from tests.conftest import ROOT
from tests.export.eee_checks import (official_python, official_validate, schema_check,
                                     schema_warnings)

DEMO = ROOT / "data" / "demo"
WILD_RUNS = ["lm_eval/asdiv", "lm_eval/masakhaner", "lm_eval/eqbench",
             "lm_eval/bias_classification", "lm_eval/pythia-v1",
             "inspect/data_pubmedqa_gpt4o_mini.json", "helm-runs/every_eval_ever",
             "eee/committed/data", "eee/converted/data", "lm_eval/harness-0.3", "helm",
             "inspect/log-sets"]


def _store(path: Path, *inputs: Path) -> Store:
    store = Store(path)
    store.ingest(parse_paths([str(p) for p in inputs]))
    return store


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Store, Path, Store]:
    """The demo ingested, exported (defaults: wilson, 95%) and ingested again."""
    root = tmp_path_factory.mktemp("eee_demo")
    a = _store(root / "a", DEMO)
    write_eee(export_eee(a), root / "out")
    b = _store(root / "b", root / "out")
    return a, root / "out", b


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def assert_round_trip(a: Store, b: Store) -> None:
    """Every run of ``a`` is in ``b`` under its name with the same model, harness, item
    scores (with answer index, cluster and hashes), reported values, n, protocols and
    n_choices."""
    ra, rb = a.runs(), b.runs()
    assert sorted(ra["name"]) == sorted(rb["name"])
    ids_b = dict(zip(rb["name"], rb["run_id"]))
    for name, x in zip(ra["name"], ra["run_id"]):
        y = int(ids_b[name])
        ia, ib = a.run_info(int(x)), b.run_info(y)
        for key in ("model", "harness", "harness_version", "protocol"):
            assert ia[key] == ib[key] or (_missing(ia[key]) and _missing(ib[key])), (name, key)
        assert ib["source_format"] == "eee"
        keys = ["task", "metric", "item_id", "answer_idx"]
        sa = a.scores([int(x)]).drop(columns="run_id").sort_values(keys).reset_index(drop=True)
        sb = b.scores([y]).drop(columns="run_id").sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(sa, sb, check_dtype=False)
        qa = a.summaries([int(x)]).drop(columns="run_id").reset_index(drop=True)
        qb = b.summaries([y]).drop(columns="run_id").reset_index(drop=True)
        pd.testing.assert_frame_equal(qa, qb, check_dtype=False)
        pd.testing.assert_frame_equal(a.task_protocols(int(x)), b.task_protocols(y),
                                      check_dtype=False)


# ---------------------------------------------------------------------------------------
# Round trip
# ---------------------------------------------------------------------------------------
def test_demo_round_trip(demo):
    a, _, b = demo
    assert len(a.runs()) >= 20
    assert_round_trip(a, b)


@pytest.mark.parametrize("rel", WILD_RUNS)
def test_wild_round_trip(wild_dir, tmp_path, rel):
    a = _store(tmp_path / "a", wild_dir / rel)
    export = export_eee(a)
    write_eee(export, tmp_path / "out")
    assert schema_check(tmp_path / "out") == []
    # a model known only by a local path is filed under unknown/: valid, with the
    # validator's warning that no developer folder is named
    local = [m for m in a.runs()["model"] if model_path(m)[1] == "unknown"]
    assert len(schema_warnings(tmp_path / "out")) == len(local)
    b = _store(tmp_path / "b", tmp_path / "out")
    assert_round_trip(a, b)


def test_round_trip_keeps_the_leaderboard(demo):
    """The re-ingested runs show the same cells (score, interval, n) on the leaderboard."""
    a, _, b = demo
    ca = leaderboard(a, include_tiers=False, include_ranks=False).cells
    cb = leaderboard(b, include_tiers=False, include_ranks=False).cells
    cols = ["run", "task", "metric", "n", "score", "se", "low", "high", "method", "reported",
            "reported_stderr"]
    ca = ca[cols].sort_values(["run", "task"]).reset_index(drop=True)
    cb = cb[cols].sort_values(["run", "task"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(ca, cb, check_dtype=False)


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------
def test_demo_export_passes_the_schemas(demo):
    a, out, _ = demo
    files = list((out / "data").rglob("*"))
    runs = a.runs()
    assert sum(p.suffix == ".json" for p in files) == len(runs)
    assert sum(p.suffix == ".jsonl" for p in files) == int(runs["has_items"].sum()) >= 10
    assert schema_check(out) == [] and schema_warnings(out) == []


def test_schema_check_catches_what_the_validator_refuses(demo, tmp_path):
    """The port is not vacuous: a renamed companion, a missing deployment type and a NaN are
    each refused."""
    _, out, _ = demo
    agg = next((out / "data").rglob("*[0-9a-f].json"))
    rel = agg.relative_to(out)
    for change in ("file_path", "deployment", "nan"):
        root = tmp_path / change
        target = root / rel
        target.parent.mkdir(parents=True)
        doc = json.loads(agg.read_text())
        samples = agg.with_name(agg.stem + "_samples.jsonl")
        (target.parent / samples.name).write_bytes(samples.read_bytes())
        if change == "file_path":
            doc["detailed_evaluation_results"]["file_path"] = samples.name
        elif change == "deployment":
            del doc["model_info"]["additional_details"]["deployment_type"]
        text = json.dumps(doc)
        if change == "nan":
            text = text.replace('"score": ', '"score": NaN, "x": ', 1)
        target.write_text(text)
        if change == "nan":
            with pytest.raises(ValueError):
                schema_check(root)
        else:
            assert schema_check(root) != []


def test_demo_export_passes_the_official_validator(demo):
    python = official_python()
    if python is None:
        pytest.skip("no Python >= 3.12 with every-eval-ever 0.3.0 (set EVALBARS_EEE_PYTHON): "
                    "validated against the package's JSON schemas and ported checks instead "
                    "(test_demo_export_passes_the_schemas)")
    _, out, _ = demo
    reports = official_validate(python, out)
    assert reports and all(r["valid"] and not r["warnings"] for r in reports), reports


# ---------------------------------------------------------------------------------------
# Uncertainty fields are the leaderboard's
# ---------------------------------------------------------------------------------------
def _results(out: Path) -> dict[tuple[str, str, str], dict]:
    found = {}
    for path in (out / "data").rglob("*.json"):
        doc = json.loads(path.read_text())
        run = doc["eval_library"]["additional_details"]["evalbars_run_name"]
        for r in doc["evaluation_results"]:
            found[(run, r["evaluation_name"], r["metric_config"]["metric_name"])] = r
    return found


@pytest.mark.parametrize("method,confidence", [("wilson", 0.95), ("clustered", 0.9),
                                               ("bootstrap", 0.95)])
def test_uncertainty_is_the_leaderboards_cell(demo, tmp_path, method, confidence):
    a, _, _ = demo
    export = export_eee(a, method=method, confidence=confidence, n_resamples=200)
    write_eee(export, tmp_path)
    found = _results(tmp_path)
    cells = leaderboard(a, method=method, confidence=confidence, n_resamples=200,
                        include_tiers=False, include_ranks=False).cells
    assert len(cells) > 20
    methods = set()
    for c in cells.to_dict("records"):
        r = found[(c["run"], c["task"], c["metric"])]
        unc = r["score_details"]["uncertainty"]
        assert r["score_details"]["score"] == pytest.approx(c["score"], abs=1e-15)
        ci = unc["confidence_interval"]
        assert (ci["lower"], ci["upper"]) == pytest.approx((c["low"], c["high"]), abs=1e-15)
        assert ci["confidence_level"] == confidence
        assert unc["standard_error"]["value"] == pytest.approx(c["se"], abs=1e-15)
        assert unc["num_samples"] == c["n"]
        methods.add(c["method"])
        if c["method"] == "clustered":
            assert "cluster" in unc["standard_error"]["method"]
        if c["method"] == "bootstrap":
            assert unc["num_bootstrap_samples"] == 200
    if method in ("clustered", "bootstrap"):
        assert method in methods


def test_other_metric_variants_carry_their_own_cells(demo, tmp_path):
    """A task shown on acc also exports acc_norm with the cell of a board forced to it."""
    a, out, _ = demo
    found = _results(out)
    forced = leaderboard(a, metric="acc_norm", include_tiers=False, include_ranks=False).cells
    assert len(forced)
    for c in forced.to_dict("records"):
        unc = found[(c["run"], c["task"], "acc_norm")]["score_details"]["uncertainty"]
        assert unc["confidence_interval"]["lower"] == pytest.approx(c["low"], abs=1e-15)


# ---------------------------------------------------------------------------------------
# Names from content
# ---------------------------------------------------------------------------------------
def test_same_run_exported_twice_has_the_same_files(demo, tmp_path):
    a, out, _ = demo
    first = export_eee(a)
    assert export_eee(a).files == first.files
    # another store holding the same files gives the same names
    again = export_eee(_store(tmp_path / "c", DEMO))
    assert sorted(again.files) == sorted(first.files)
    names = [p.name for p in (out / "data").rglob("*.json")]
    assert len(set(names)) == len(names) == len(first.runs)


def test_uuid_is_uuid4_shaped_and_changes_with_content():
    a, b = content_uuid("x" * 64), content_uuid("y" * 64)
    assert a != b and a == content_uuid("x" * 64)
    assert a[14] == "4" and a[19] in "89ab"


@pytest.mark.parametrize("model,expected", [
    ("demo-org/atlas-7b", ("demo-org/atlas-7b", "demo-org", "atlas-7b")),
    ("hf/demo-org/atlas-7b", ("hf/demo-org/atlas-7b", "hf", "demo-org_atlas-7b")),
    ("gpt2", ("unknown/gpt2", "unknown", "gpt2")),
    ("/gpfs/models/FLOR-760M", ("unknown/FLOR-760M", "unknown", "FLOR-760M")),
    ("org/name:tag", ("org/name:tag", "org", "name_tag")),
    ("a<b/c", ("a_b/c", "a_b", "c")),
])
def test_model_path(model, expected):
    assert model_path(model) == expected


# ---------------------------------------------------------------------------------------
# CLI and zip
# ---------------------------------------------------------------------------------------
def _cli(store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_cli_export(wild_dir, tmp_path):
    store = tmp_path / "s"
    _store(store, wild_dir / "lm_eval" / "asdiv")
    proc = _cli(store, "export", "--format", "eee", "--out", str(tmp_path / "out"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (run,) = out["runs"]
    assert out["method"] == "wilson" and out["confidence"] == 0.95
    assert run["n_samples"] == 50 and run["aggregate"].startswith("data/asdiv/meta-llama/")
    assert (tmp_path / "out" / run["aggregate"]).is_file()
    assert (tmp_path / "out" / run["samples"]).is_file()
    assert schema_check(tmp_path / "out") == []
    bad = _cli(store, "export", "--format", "eee", "--out", str(tmp_path / "o2"), "no-such-run")
    assert bad.returncode == 3 and "no-such-run" in bad.stderr


def test_zip_holds_the_same_files(wild_dir, tmp_path):
    import io
    import zipfile
    a = _store(tmp_path / "a", wild_dir / "lm_eval" / "asdiv")
    export = export_eee(a)
    with zipfile.ZipFile(io.BytesIO(export_eee_zip(export))) as z:
        assert {n: z.read(n) for n in z.namelist()} == export.files
    assert export_eee_zip(export) == export_eee_zip(export_eee(a))


def test_summary_only_run_has_no_samples_file(wild_dir, tmp_path):
    a = _store(tmp_path / "a", wild_dir / "lm_eval" / "pythia-v1")
    export = export_eee(a)
    assert all(r.samples is None for r in export.runs)
    for path, data in export.files.items():
        doc = json.loads(data)
        assert "detailed_evaluation_results" not in doc
        for r in doc["evaluation_results"]:
            unc = r["score_details"].get("uncertainty")
            if unc and "confidence_interval" in unc:
                assert unc["confidence_interval"]["method"].startswith("Harness-reported")
                assert math.isfinite(unc["standard_error"]["value"])


def test_level_metric_is_exported_as_levels(wild_dir, tmp_path):
    """A level-based metric read from an EEE file goes out with its own level config, its
    reported value and no uncertainty, and reads back the same."""
    agg = next((wild_dir / "eee" / "converted" / "data" / "math_perturbed_full").rglob(
        "*[0-9a-f].json"))
    doc = json.loads(agg.read_text())
    doc.pop("detailed_evaluation_results")
    mc = doc["evaluation_results"][0]["metric_config"]
    mc.update(score_type="levels", level_names=["bad", "ok", "good"], metric_name="quality")
    for key in ("min_score", "max_score"):
        mc.pop(key)
    doc["evaluation_results"][0]["score_details"] = {"score": 2}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text(json.dumps(doc))
    a = _store(tmp_path / "a", tmp_path / "in" / "a.json")
    write_eee(export_eee(a), tmp_path / "out")
    assert schema_check(tmp_path / "out") == []
    (path,) = (tmp_path / "out" / "data").rglob("*.json")
    (r,) = json.loads(path.read_text())["evaluation_results"]
    assert r["metric_config"]["score_type"] == "levels"
    assert r["metric_config"]["level_names"] == ["bad", "ok", "good"]
    assert r["score_details"]["score"] == 2 and "uncertainty" not in r["score_details"]
    assert_round_trip(a, _store(tmp_path / "b", tmp_path / "out"))
