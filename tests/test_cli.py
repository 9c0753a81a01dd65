"""The command line: ``python -m evalcore`` end to end on the lm_eval fixtures (Mistral-7B
vs DialoGPT-medium on arc_easy), JSON keys, numbers against independent formulas, exit codes
and --help. Most calls go through ``evalcore.cli.main`` in-process (fast); a few run the
real ``python -m evalcore`` in a subprocess."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from evalcore import cli
from evalcore.commands import runs as runs_command
from evalcore.errors import StoreError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MISTRAL = "results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALO = "results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"
SUBCOMMANDS = ("ingest", "runs", "leaderboard", "compare", "plan", "audit", "rename", "tag",
               "delete")


def run(capsys, *argv):
    """main(argv) in-process -> (exit code, stdout, stderr); argparse exits become codes."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def store_file(tmp_path_factory, fixtures_dir):
    path = tmp_path_factory.mktemp("cli") / "store"
    d = fixtures_dir / "lm_eval"
    code = cli.main(["--store", str(path), "ingest", str(d / MISTRAL), str(d / DIALO)])
    assert code == 0
    return path


def _names(capsys, store_file):
    code, out, _ = run(capsys, "--store", store_file, "runs", "--format", "json")
    assert code == 0
    runs = json.loads(out)["runs"]
    mistral = next(r["name"] for r in runs if "Mistral" in r["name"])
    dialo = next(r["name"] for r in runs if "DialoGPT" in r["name"])
    return mistral, dialo


def test_subprocess_end_to_end(tmp_path, fixtures_dir):
    """The real entry point: ingest then compare, as a new user would type it."""
    env = {**os.environ, "PYTHONPATH": ROOT, "EVALBARS_STORE": str(tmp_path / "s")}
    d = fixtures_dir / "lm_eval"
    p = subprocess.run([sys.executable, "-m", "evalcore", "ingest", str(d / MISTRAL),
                        str(d / DIALO)], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "arc_easy" in p.stdout and "items: 15" in p.stdout
    assert "\r[" not in p.stderr  # no progress bar when stderr is not a terminal
    assert (tmp_path / "s").exists()  # $EVALBARS_STORE was used
    p = subprocess.run([sys.executable, "-m", "evalcore", "compare", "1", "2"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "b = 0" in p.stdout and "c = 7" in p.stdout and "exact p = 0.01562" in p.stdout
    p = subprocess.run([sys.executable, "-m", "evalcore", "leaderboard", "--method", "nope"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 2 and "invalid choice" in p.stderr


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_help_for_every_subcommand(capsys, sub):
    code, out, _ = run(capsys, sub, "--help")
    assert code == 0
    assert out.startswith(f"usage: python -m evalcore {sub}")
    assert "--help" in out
    assert "--store LOCATION" in out and "--lock-timeout SECONDS" in out
    assert "--data-path DIR" in out


@pytest.mark.parametrize("argv, store, timeout", [
    (["--store", "a", "runs"], "a", 120.0),
    (["runs", "--store", "a"], "a", 120.0),
    (["--lock-timeout", "2", "runs", "--store", "b"], "b", 2.0),
    (["runs", "--lock-timeout", "3"], None, 3.0),
    (["--store", "a", "runs", "--store", "b"], "b", 120.0),
    (["ingest", "results/", "--store", "x"], "x", 120.0),
])
def test_store_options_before_or_after_the_command(argv, store, timeout):
    args = cli.build_parser().parse_args(argv)
    assert args.store == store and args.lock_timeout == timeout


def test_ingest_with_store_after_the_command(tmp_path, fixtures_dir):
    """The documented ``ingest PATH... --store FILE`` works as typed."""
    results = tmp_path / "results"
    results.mkdir()
    (results / MISTRAL).write_bytes((fixtures_dir / "lm_eval" / MISTRAL).read_bytes())
    p = subprocess.run([sys.executable, "-m", "evalcore", "ingest", "results/", "--store",
                        "x"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "x").exists() and "arc_easy" in p.stdout
    p = subprocess.run([sys.executable, "-m", "evalcore", "runs", "--store", "x",
                        "--format", "json"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 0, p.stderr
    assert [r["n_tasks"] for r in json.loads(p.stdout)["runs"]] == [1]


def test_top_level_help_lists_commands_and_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for sub in SUBCOMMANDS:
        assert sub in out
    assert "Exit codes" in out and "4 store busy" in out


def test_ingest_summary_and_idempotence(capsys, store_file, fixtures_dir):
    d = fixtures_dir / "lm_eval"
    code, out, err = run(capsys, "--store", store_file, "ingest", d / MISTRAL, "--format",
                         "json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"store", "already_present", "warnings", "runs", "not_stored"}
    assert doc["already_present"] is True
    row = doc["runs"][0]
    assert {"run_id", "name", "model", "source_format", "tasks", "metrics", "n_items",
            "n_scores", "k_max", "status", "warnings"} <= set(row)
    assert row["status"] == "already present"
    code, out, _ = run(capsys, "--store", store_file, "ingest", d / MISTRAL)
    assert code == 0 and out.startswith("Already present")


def test_runs_json_keys(capsys, store_file):
    code, out, _ = run(capsys, "--store", store_file, "runs", "--format", "json")
    assert code == 0
    runs = json.loads(out)["runs"]
    assert len(runs) == 2
    assert set(runs[0]) == {"run_id", "name", "model", "source_format", "harness",
                            "harness_version", "tags", "created_at", "n_tasks", "n_scores",
                            "has_items"}
    assert all(r["has_items"] for r in runs)


def test_leaderboard_json(capsys, store_file):
    code, out, err = run(capsys, "--store", store_file, "leaderboard", "--format", "json",
                         "--resamples", "200")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"method", "method_label", "confidence", "metric", "metrics_by_task",
                        "notes", "cells", "averages", "tiers", "ranks", "task_notes",
                        "metric_info", "groups", "group_cells", "group_tree",
                        "metric_choices"}
    assert doc["method"] == "wilson" and doc["metrics_by_task"] == {"arc_easy": "acc"}
    cell_keys = {"run_id", "run", "task", "metric", "n", "score", "se", "low", "high",
                 "method", "binary", "chance", "contains_chance", "reported",
                 "reported_stderr", "audit_flag", "has_items", "direction"}
    for c in doc["cells"]:
        assert set(c) == cell_keys
        k = round(c["score"] * c["n"])
        lo, hi = proportion_confint(k, c["n"], alpha=0.05, method="wilson")
        assert (c["low"], c["high"]) == pytest.approx((lo, hi), abs=1e-9)
        assert c["chance"] == pytest.approx(0.25)
    mistral = next(c for c in doc["cells"] if "Mistral" in c["run"])
    assert mistral["score"] == pytest.approx(12 / 15)
    assert {"run_id", "run", "task", "best_run", "diff_vs_best", "p_raw", "p_holm",
            "indistinguishable_from_best", "n_shared"} == set(doc["tiers"][0])
    assert {"run_id", "run", "task", "rank", "rank_low", "rank_high"} == set(doc["ranks"][0])
    dialo_tier = next(t for t in doc["tiers"] if "DialoGPT" in t["run"])
    assert dialo_tier["p_raw"] == pytest.approx(2 * 0.5 ** 7)


def test_leaderboard_table_and_other_formats(capsys, store_file):
    code, out, _ = run(capsys, "--store", store_file, "leaderboard", "--no-ranks")
    assert code == 0
    assert "Wilson score 95% intervals" in out
    assert "== arc_easy (acc; higher is better, range [0, 1]) ==" in out
    assert "contains chance" in out  # DialoGPT 5/15 on a 4-choice task
    code, out, _ = run(capsys, "--store", store_file, "leaderboard", "--format", "csv",
                       "--method", "clopper-pearson", "--no-tiers", "--no-ranks")
    assert code == 0
    df = pd.read_csv(__import__("io").StringIO(out))
    assert set(df["method"]) == {"clopper-pearson"}
    row = df[df["run"].str.contains("Mistral")].iloc[0]
    lo, hi = proportion_confint(12, 15, alpha=0.05, method="beta")
    assert (row["low"], row["high"]) == pytest.approx((lo, hi), abs=1e-9)
    code, out, _ = run(capsys, "--store", store_file, "leaderboard", "--format", "markdown")
    assert out.splitlines()[0].startswith("| task | run |") and "| --- |" in out
    code, out, _ = run(capsys, "--store", store_file, "leaderboard", "--format", "latex")
    assert out.startswith("\\begin{tabular}") and "\\bottomrule" in out
    assert "arc\\_easy" in out  # underscores escaped


def test_compare_text_and_json(capsys, store_file):
    mistral, dialo = _names(capsys, store_file)
    code, out, _ = run(capsys, "--store", store_file, "compare", mistral, dialo)
    assert code == 0
    assert "McNemar: b = 0 (only B right), c = 7 (only A right), exact p = 0.01562" in out
    assert "difference B - A: -46.67 points" in out
    # the standard errors by the names the pages use (evalcore.words), never internal keys
    assert "SE if items were independent" in out and "SE ignoring the pairing" in out
    assert "SE allowing for clusters n/a (no cluster key)" in out
    assert "se_iid" not in out and "se_clustered" not in out
    assert "correlation of A and B" in out
    assert "method: Tango score interval: 15 items, 7 discordant" in out
    assert "Pairing:" in out and "Protocol differences:" in out
    assert out.rstrip().splitlines()[-1].startswith("Verdict: different:")
    code, out, _ = run(capsys, "--store", store_file, "compare", "1", "2", "--format", "json")
    doc = json.loads(out)
    assert set(doc) == {"run_a", "run_b", "confidence", "verdict", "family_note", "warnings",
                        "per_task", "overall", "pairing", "protocol_diff"}
    row = doc["per_task"][0]
    assert {"task", "metric", "n", "score_a", "score_b", "diff", "se", "low", "high",
            "se_unpaired", "correlation", "b", "c", "both", "neither", "p_exact", "p_midp",
            "p_value", "p_interval", "test", "p_adjusted", "adjustment", "mde", "verdict",
            "different", "better", "kind", "points_scale", "sd_diff", "se_iid",
            "se_clustered", "n_clusters", "interval_method", "method_reason", "widened",
            "low_simultaneous", "high_simultaneous", "mde_basis", "items_needed"} == set(row)
    # one procedure: p = max(score test, exact McNemar); the interval excludes 0 with it
    assert row["p_value"] == pytest.approx(max(row["p_interval"], row["p_exact"]))
    assert row["verdict"].startswith("different") == (row["p_adjusted"] < 0.05) \
        == (row["low"] > 0 or row["high"] < 0) == row["different"]
    assert row["interval_method"] == "tango" and row["se_clustered"] is None
    assert row["method_reason"] == "Tango score interval: 15 items, 7 discordant"
    assert row["p_exact"] == pytest.approx(0.015625)
    # the 2x2 table adds up: Mistral 12/15 right, DialoGPT 5/15, b = 0, c = 7
    assert (row["both"], row["b"], row["c"], row["neither"]) == (5, 0, 7, 3)
    assert doc["overall"] is None
    assert doc["pairing"][0]["n_shared"] == 15 and doc["pairing"][0]["only_a"] == []
    code, out, _ = run(capsys, "--store", store_file, "compare", "1", "2", "--format", "csv")
    assert out.splitlines()[0].startswith("task,metric,n,score_a")


def test_plan_numbers_match_the_formula(capsys):
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    code, out, _ = run(capsys, "plan", "--n", "1000", "--sd-diff", "0.4", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"alpha", "power", "sd_diff", "disagreement", "design_effect", "n",
                        "mde", "delta", "required_items", "pilot"}
    assert doc["mde"] == pytest.approx(z * 0.4 / math.sqrt(1000))
    assert doc["required_items"] is None
    code, out, _ = run(capsys, "plan", "--delta", "0.016", "--sd-diff", "0.4", "--format",
                       "json")
    assert json.loads(out)["required_items"] == math.ceil(z ** 2 * 0.16 / 0.016 ** 2)
    code, out, _ = run(capsys, "plan", "--n", "500", "--disagreement", "0.2", "--alpha", "0.01",
                       "--power", "0.9", "--format", "json")
    z2 = sps.norm.ppf(0.995) + sps.norm.ppf(0.9)
    assert json.loads(out)["mde"] == pytest.approx(z2 * math.sqrt(0.2 / 500))
    code, out, _ = run(capsys, "plan", "--n", "1000", "--sd-diff", "0.4")
    assert code == 0 and ("With 1,000 items, the smallest gap detectable at 95% confidence with "
                          "80% power is 3.54 points") in out


def test_plan_from_pilot_pair(capsys, store_file):
    code, out, err = run(capsys, "--store", store_file, "plan", "--pilot", "1", "2", "--task",
                         "arc_easy", "--delta", "0.05", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    pilot = doc["pilot"]
    assert pilot["n"] == 15 and pilot["disagreement"] == pytest.approx(7 / 15)
    d = np.array([-1.0] * 7 + [0.0] * 8)  # c = 7, b = 0 on 15 items
    assert pilot["sd_diff"] == pytest.approx(np.std(d, ddof=1))
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert doc["required_items"] == math.ceil(z ** 2 * np.var(d, ddof=1) / 0.05 ** 2)


def test_exit_code_2_for_usage_errors(capsys):
    assert run(capsys)[0] == 2
    assert run(capsys, "leaderboard", "--method", "magic")[0] == 2
    assert run(capsys, "compare", "only-one-run")[0] == 2
    assert run(capsys, "plan", "--n", "-3", "--sd-diff", "0.4")[0] == 2
    assert run(capsys, "leaderboard", "--confidence", "1.5")[0] == 2
    code, _, err = run(capsys, "plan", "--n", "100")     # no assumptions
    assert code == 2 and err.startswith("usage error: give --sd-diff, --disagreement or --pilot")


def test_exit_code_3_for_bad_input_one_line_no_traceback(capsys, store_file, tmp_path):
    for argv in (("--store", store_file, "compare", "1", "no-such-run"),
                 ("--store", store_file, "leaderboard", "--task", "no-such-task"),
                 ("--store", tmp_path / "missing", "runs"),
                 ("--store", store_file, "ingest", tmp_path / "does-not-exist.json"),
                 ("--store", store_file, "compare", "1", "1")):
        code, out, err = run(capsys, *argv)
        assert code == 3, (argv, err)
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"{\"results\": {\"arc\": [1, 2")  # truncated JSON
    code, _, err = run(capsys, "--store", tmp_path / "s", "ingest", junk)
    assert code == 3 and "junk.json" in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()  # nothing written


def test_exit_code_4_when_store_busy(capsys, monkeypatch):
    def busy(args):
        err = StoreError("store is busy (locked by another process)")
        err.busy = True
        raise err
    monkeypatch.setattr(runs_command, "run", busy)
    code, _, err = run(capsys, "runs")
    assert code == 4 and err.startswith("store busy:")


def test_exit_code_4_with_a_real_foreign_lock(capsys, store_file, tmp_path, fixtures_dir):
    """Another process holds the catalog's write lock: a write waits --lock-timeout seconds,
    then exits 4 with one line; reads go on meanwhile."""
    import shutil
    path = tmp_path / "locked"
    shutil.copytree(store_file, path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], "
                               "isolation_level=None); c.execute('BEGIN EXCLUSIVE'); "
                               "print('locked', flush=True); time.sleep(60)",
         str(path / "catalog.sqlite")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        code, out, err = run(capsys, "--store", path, "runs", "--format", "json")
        assert code == 0 and len(json.loads(out)["runs"]) == 2          # reading works
        tidy = tmp_path / "t.csv"
        tidy.write_text("model,task,item_id,score\nm,t,1,1\nm,t,2,0\n")
        code, _, err = run(capsys, "--store", path, "--lock-timeout", "0.3", "ingest", tidy)
        assert code == 4, err
        assert err.startswith("store busy:") and len(err.strip().splitlines()) == 1
    finally:
        holder.kill()
        holder.wait(timeout=10)
        holder.stdout.close()   # no ResourceWarning for the pipe (warnings are errors)


def test_internal_errors_are_one_line(capsys, monkeypatch):
    monkeypatch.setattr(runs_command, "run", lambda args: 1 / 0)
    code, _, err = run(capsys, "runs")
    assert code == 1 and err.startswith("internal error (ZeroDivisionError)")


def test_rename_tag_delete_audit(capsys, tmp_path, fixtures_dir):
    path = tmp_path / "m"
    d = fixtures_dir / "lm_eval"
    assert run(capsys, "--store", path, "ingest", d / MISTRAL)[0] == 0
    assert run(capsys, "--store", path, "rename", "1", "mistral")[0] == 0
    assert run(capsys, "--store", path, "tag", "mistral", "base", "7b")[0] == 0
    code, out, _ = run(capsys, "--store", path, "runs", "--format", "json")
    r = json.loads(out)["runs"][0]
    assert r["name"] == "mistral" and r["tags"] == ["base", "7b"]
    code, out, _ = run(capsys, "--store", path, "audit", "--format", "json")
    rows = json.loads(out)["audit"]
    acc = next(a for a in rows if a["task"] == "arc_easy" and a["metric"] == "acc")
    assert acc["run"] == "mistral"
    assert acc["reported_stderr"] == pytest.approx(math.sqrt(0.8 * 0.2 / 14), rel=1e-6)
    code, _, err = run(capsys, "--store", path, "delete", "mistral")  # stdin is not a tty
    assert code == 3 and "--yes" in err
    assert run(capsys, "--store", path, "delete", "mistral", "--yes")[0] == 0
    code, out, _ = run(capsys, "--store", path, "runs")
    assert "empty" in out


def test_cli_methods_are_the_analysis_methods():
    from evalcore import analysis
    assert cli.LEADERBOARD_METHODS == analysis.METHODS


def test_progress_bar_renders_on_a_stream():
    import io
    buf = io.StringIO()
    bar = cli._Progress(buf)
    bar(50, 100, "/some/dir/samples_arc.jsonl")
    bar(100, 100, "/some/dir/samples_arc.jsonl")
    bar.close()
    text = buf.getvalue()
    assert "\r[" in text and " 50%" in text and "100%" in text and "samples_arc.jsonl" in text
    assert text.endswith("\n")


def test_markdown_and_latex_escape_user_text():
    df = pd.DataFrame({"run": ["a|b", "50%_x&y"], "score": [0.5, float("nan")]})
    md = cli.to_markdown(df)
    assert "a\\|b" in md and md.splitlines()[1] == "| --- | --- |"
    tex = cli.to_latex(df)
    assert "50\\%\\_x\\&y" in tex and tex.count("\\\\") == 3
    assert cli.dump_json({"x": float("nan"), "y": np.int64(3)}) == '{\n  "x": null,\n  "y": 3\n}'


def test_ingest_cluster_key_option(capsys, tmp_path, fixtures_dir):
    """--cluster-key picks the metadata field that groups items; '' turns clusters off."""
    from evalcore.store import Store

    log = next((fixtures_dir / "inspect").glob("*starsim-benchmark_24Ab*.eval"))
    auto, off = str(tmp_path / "auto"), str(tmp_path / "off")
    given = str(tmp_path / "given")
    code, out, err = run(capsys, "--store", auto, "ingest", str(log))
    assert code == 0
    # metadata.problem_id has only 6 problems: offered, not applied
    assert "cluster key 'problem_id' offered, not applied: only 6 clusters" in out + err
    assert Store(auto).scores([1])["cluster"].isna().all()
    assert run(capsys, "--store", given, "ingest", "--cluster-key", "problem_id",
               str(log))[0] == 0
    assert Store(given).scores([1])["cluster"].nunique() == 6
    assert run(capsys, "--store", off, "ingest", "--cluster-key", "", str(log))[0] == 0
    assert Store(off).scores([1])["cluster"].isna().all()


TIDY = ("model,task,item_id,score\n"
        "gpt-x,arc,q1,1\ngpt-x,arc,q2,0\ngpt-y,arc,q1,0\ngpt-y,arc,q2,1\ngpt-z,arc,q1,1\n")


def test_ingest_tidy_table_stores_every_model(capsys, tmp_path):
    """Each model of a table is its own run with all its scores; the same
    table again changes nothing; a later table that adds a model adds just that model."""
    store = tmp_path / "s"
    (tmp_path / "a.csv").write_text(TIDY)
    code, out, err = run(capsys, "ingest", tmp_path / "a.csv", "--store", store, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [(r["name"], r["status"], r["n_scores"]) for r in doc["runs"]] == [
        ("gpt-x", "added", 2), ("gpt-y", "added", 2), ("gpt-z", "added", 1)]
    assert doc["not_stored"] == []
    code, out, _ = run(capsys, "ingest", tmp_path / "a.csv", "--store", store)
    assert code == 0 and out.startswith("Already present")
    (tmp_path / "b.csv").write_text(TIDY + "gpt-w,arc,q1,0\n")
    code, out, _ = run(capsys, "ingest", tmp_path / "b.csv", "--store", store, "--format", "json")
    status = {r["name"]: r["status"] for r in json.loads(out)["runs"]}
    assert code == 0 and status == {"gpt-x": "already present", "gpt-y": "already present",
                                    "gpt-z": "already present", "gpt-w": "added"}
    code, out, _ = run(capsys, "runs", "--store", store, "--format", "json")
    assert sorted((r["name"], r["n_scores"]) for r in json.loads(out)["runs"]) == [
        ("gpt-w", 1), ("gpt-x", 2), ("gpt-y", 2), ("gpt-z", 1)]


def _mixed_folder(tmp_path, fixtures_dir):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / MISTRAL).write_bytes((fixtures_dir / "lm_eval" / MISTRAL).read_bytes())
    (folder / "scores.csv").write_text(TIDY)
    (folder / "big_results.json").write_bytes(
        b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n")
    (folder / "mystery.json").write_text('{"hello": "world"}')
    return folder


def test_one_bad_file_does_not_block_a_folder(capsys, tmp_path, fixtures_dir):
    """Every good run stored, every bad file listed with place and reason,
    exit 3; the same folder again adds nothing; --strict writes nothing."""
    folder = _mixed_folder(tmp_path, fixtures_dir)
    store = tmp_path / "s"
    code, out, err = run(capsys, "ingest", folder, "--store", store)
    assert code == 3
    assert "- mistralai/Mistral-7B-v0.1 (id 1) [added]" in out
    assert "Not stored: 2 file(s) (the runs listed above were stored):" in out
    assert (f"- {folder / 'big_results.json'} at byte 0: expected the file itself, not a Git "
            "LFS pointer (the file was never downloaded: run `git lfs pull`") in out
    assert f"- {folder / 'mystery.json'} at top level: expected a known format" in out
    assert err == (f"error: 2 file(s) not stored (listed above): {folder / 'big_results.json'}, "
                   f"{folder / 'mystery.json'}\n")
    code, out, _ = run(capsys, "runs", "--store", store, "--format", "json")
    assert len(json.loads(out)["runs"]) == 4
    code, out, _ = run(capsys, "ingest", folder, "--store", store, "--format", "json")
    doc = json.loads(out)
    assert code == 3 and doc["already_present"] is True
    assert [(p["file"], p["where"], p["kind"]) for p in doc["not_stored"]] == [
        (str(folder / "big_results.json"), "byte 0", "bad input"),
        (str(folder / "mystery.json"), "top level", "bad input")]
    strict = tmp_path / "strict"
    code, out, err = run(capsys, "ingest", folder, "--store", strict, "--strict")
    assert code == 3 and out == "" and not strict.exists()
    assert err.startswith(f"error: {folder / 'big_results.json'} at byte 0") and "git lfs pull" in err


def test_files_without_scores(capsys, tmp_path, fixtures_dir):
    """A log without a scorer is not stored and named with the reason; exit
    3 when nothing in the batch had scores, 0 when other runs were stored."""
    log = json.loads((fixtures_dir / "inspect" / "data_arc_qwen.json").read_bytes())
    log["eval"]["scorers"] = None
    for key in ("results", "reductions"):
        log.pop(key, None)
    for s in log["samples"]:
        s.pop("scores", None)
    empty = tmp_path / "no_scorer.json"
    empty.write_text(json.dumps(log))
    store = tmp_path / "s"
    code, out, err = run(capsys, "ingest", empty, "--store", store)
    assert code == 3 and not store.exists()
    assert f"- {empty}: no scores: the log has no scorer" in out
    assert "nothing was written" in out
    assert err == f"error: 1 file(s) not stored (listed above): {empty}\n"
    code, out, err = run(capsys, "ingest", empty, fixtures_dir / "lm_eval" / MISTRAL,
                         "--store", store)
    assert code == 0, err
    assert "[added]" in out and f"- {empty}: no scores: the log has no scorer" in out
    code, _, err = run(capsys, "ingest", empty, fixtures_dir / "lm_eval" / DIALO, "--store",
                       store, "--strict")
    assert code == 3 and "no scores: the log has no scorer" in err
    code, out, _ = run(capsys, "runs", "--store", store, "--format", "json")
    assert [r["n_tasks"] for r in json.loads(out)["runs"]] == [1]


def test_bad_files_go_to_stderr_with_table_formats(capsys, tmp_path, fixtures_dir):
    folder = _mixed_folder(tmp_path, fixtures_dir)
    code, out, err = run(capsys, "ingest", folder, "--store", tmp_path / "s",
                         "--format", "csv")
    assert code == 3
    assert out.splitlines()[0].startswith("run_id,name,model") and len(out.splitlines()) == 5
    lines = err.splitlines()
    assert lines[0].startswith("error: 2 file(s) not stored: ")
    assert lines[1].startswith(f"- {folder / 'big_results.json'} at byte 0: expected the file "
                               "itself, not a Git LFS pointer")
    assert lines[2].startswith(f"- {folder / 'mystery.json'} at top level: expected a known format")
