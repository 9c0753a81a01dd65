"""Upload & runs page: real uploads through st.file_uploader, the recognition report, a bad
file leaving the store untouched, several models of one table, good runs stored next to
bad files, and rename / tag / delete with confirmation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (DIALOGPT, MISTRAL, no_exception, page, store_file, texts)


def table_with(at, column):
    """The first table on the page that has ``column`` (the not-stored list has "Reason",
    the recognition report "answers per item")."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def upload(at, files):
    at.file_uploader(key="up_files").set_value(files).run()
    no_exception(at)
    return at


def test_upload_two_lm_eval_files_reports_what_was_recognised(tmp_path, fixtures_dir):
    at = page("upload").run()
    assert any("The store is empty" in t for t in texts(at.info))
    files = [(p.name, p.read_bytes(), "application/json")
             for p in (fixtures_dir / MISTRAL, fixtures_dir / DIALOGPT)]
    upload(at, files)
    assert any("Recognised 2 run(s)" in t for t in texts(at.success))
    report = at.dataframe[0].value
    assert len(report) == 2
    assert set(report["tasks"]) == {"arc_easy"}
    assert set(report["n_items"]) == {15}
    assert "answers per item" in report.columns
    assert any("Mistral" in str(m) for m in report["model"])
    # the runs are in the store and listed in the runs table
    runs = Store(store_file(tmp_path)).runs()
    assert len(runs) == 2 and runs["has_items"].all()
    listed = next(d.value for d in at.dataframe if "run_id" in d.value.columns)
    assert sorted(listed["name"]) == sorted(runs["name"])
    # uploading the same file again (a new session) changes nothing and says so
    again = page("upload").run()
    upload(again, files[:1])
    assert [t for t in texts(again.info) if t.startswith("Already stored")] == [
        f"Already stored: 1 file(s) (runs {runs['name'][runs['name'].str.contains('Mistral')].iloc[0]}); "
        "nothing was written for them."]
    assert not again.warning and not again.error and not again.success
    assert len(Store(store_file(tmp_path)).runs()) == 2


def test_bad_file_is_an_error_and_nothing_is_written(tmp_path, fixtures_dir):
    good = (fixtures_dir / MISTRAL).read_bytes()
    at = page("upload").run()
    upload(at, [("results.json", good[: len(good) // 2], "application/json")])
    assert any("Nothing was written" in e.value for e in at.error)
    detail = table_with(at, "Reason")
    assert detail.loc[0, "File"] == "results.json"
    assert detail.loc[0, "Where"] and detail.loc[0, "Reason"].startswith("expected ")
    assert Store(store_file(tmp_path)).runs().empty


def test_rename_tag_and_delete_with_confirmation(tmp_path):
    store = Store(store_file(tmp_path))
    store.ingest([parsed_run("first", {("t", "acc"): np.ones(5)}),
                  parsed_run("second", {("t", "acc"): np.zeros(5)})])
    at = page("upload").run()
    at.selectbox(key="up_target").set_value("first").run()
    rid = int(store.resolve_run("first"))
    at.text_input(key=f"up_newname_{rid}").set_value("renamed <b>").run()
    at.button(key="up_rename").click().run()
    no_exception(at)
    assert "renamed <b>" in list(Store(store_file(tmp_path)).runs()["name"])

    at.selectbox(key="up_target").set_value("renamed <b>").run()
    at.text_input(key=f"up_tags_{rid}").set_value("baseline, v2").run()
    at.button(key="up_save_tags").click().run()
    runs = Store(store_file(tmp_path)).runs().set_index("run_id")
    assert list(runs.loc[rid, "tags"]) == ["baseline", "v2"]

    at.button(key="up_delete").click().run()
    assert any("History below can restore them" in w for w in texts(at.warning))
    assert len(Store(store_file(tmp_path)).runs()) == 2          # not yet: needs confirmation
    at.button(key="up_confirm_no").click().run()
    assert len(Store(store_file(tmp_path)).runs()) == 2
    at.button(key="up_delete").click().run()
    at.button(key="up_confirm_yes").click().run()
    no_exception(at)
    assert list(Store(store_file(tmp_path)).runs()["name"]) == ["second"]


def test_cluster_key_choice_reaches_the_parser(tmp_path, fixtures_dir):
    """The starsim inspect log groups its 23 sub-steps into 6 problems (metadata.problem_id):
    picked automatically by default, left out with 'none', named explicitly with 'field'."""
    log = next((fixtures_dir / "inspect").glob("*starsim-benchmark_24Ab*.eval"))
    files = [(log.name, log.read_bytes(), "application/zip")]
    at = page("upload").run()
    at.radio(key="up_cluster_mode").set_value("none").run()
    upload(at, files)
    assert any("Recognised 1 run(s)" in t for t in texts(at.success))
    assert Store(store_file(tmp_path)).scores([1])["cluster"].isna().all()

    other = next((fixtures_dir / "inspect").glob("*starsim-benchmark_ZLCP*.eval"))
    at = page("upload").run()
    at.radio(key="up_cluster_mode").set_value("field").run()
    at.text_input(key="up_cluster_field").set_value("problem_id").run()
    upload(at, [(other.name, other.read_bytes(), "application/zip")])
    assert Store(store_file(tmp_path)).scores([2])["cluster"].nunique() == 6


TIDY = ("model,task,item_id,score\n"
        "gpt-x,arc,q1,1\ngpt-x,arc,q2,0\ngpt-y,arc,q1,0\ngpt-y,arc,q2,1\ngpt-z,arc,q1,1\n")


def test_a_table_with_several_models_stores_each(tmp_path):
    """Every model of a tidy table is stored; the same table again changes nothing;
    a later table that adds a model adds just that model."""
    at = upload(page("upload").run(), [("scores.csv", TIDY.encode(), "text/csv")])
    assert any("Recognised 3 run(s); 3 added" in t for t in texts(at.success))
    report = table_with(at, "answers per item")
    assert report["name"].tolist() == ["gpt-x", "gpt-y", "gpt-z"]
    assert report["n_scores"].tolist() == [2, 2, 1]
    store = Store(store_file(tmp_path))
    assert sorted(store.runs()["name"]) == ["gpt-x", "gpt-y", "gpt-z"]

    again = upload(page("upload").run(), [("scores.csv", TIDY.encode(), "text/csv")])
    assert any(t.startswith("Already stored: 1 file(s) (runs gpt-x, gpt-y, gpt-z)")
               for t in texts(again.info))
    later = TIDY + "gpt-w,arc,q1,0\ngpt-w,arc,q2,0\n"
    more = upload(page("upload").run(), [("week2.csv", later.encode(), "text/csv")])
    assert any("Recognised 4 run(s); 1 added" in t for t in texts(more.success))
    runs = Store(store_file(tmp_path)).runs()
    assert sorted(zip(runs["name"], runs["n_scores"])) == [
        ("gpt-w", 2), ("gpt-x", 2), ("gpt-y", 2), ("gpt-z", 1)]


def test_good_runs_are_stored_and_bad_files_listed(tmp_path, fixtures_dir):
    """One upload with a good results file, a Git LFS
    pointer, an unknown JSON and an inspect log without a scorer."""
    log = json.loads((fixtures_dir / "inspect" / "data_arc_qwen.json").read_bytes())
    log["eval"]["scorers"] = None
    for key in ("results", "reductions"):
        log.pop(key, None)
    for s in log["samples"]:
        s.pop("scores", None)
    files = [("mistral.json", (fixtures_dir / MISTRAL).read_bytes(), "application/json"),
             ("big.json", b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n",
              "application/json"),
             ("mystery.json", b'{"hello": "world"}', "application/json"),
             ("no_scorer.json", json.dumps(log).encode(), "application/json")]
    at = upload(page("upload").run(), files)
    assert any("Recognised 1 run(s); 1 added" in t for t in texts(at.success))
    assert any("3 new file(s) were not stored (2 bad, 1 without scores)" in t
               for t in texts(at.warning))
    problems = table_with(at, "Reason").set_index("File")
    assert set(problems.index) == {"big.json", "mystery.json", "no_scorer.json"}
    assert "run `git lfs pull`" in problems.loc["big.json", "Reason"]
    assert problems.loc["big.json", "Where"] == "byte 0"
    assert problems.loc["mystery.json", "Where"] == "top level"
    assert problems.loc["no_scorer.json", "Reason"] == "no scores: the log has no scorer"
    assert problems.loc["no_scorer.json", "Kind"] == "no scores"
    runs = Store(store_file(tmp_path)).runs()
    assert runs["name"].tolist() == ["mistralai/Mistral-7B-v0.1"] and runs["n_tasks"].tolist() == [1]


def test_only_files_without_scores_write_nothing(tmp_path, fixtures_dir):
    results = {"results": {"arc": {"acc,none": "N/A"}}, "versions": {"arc": 1}}
    at = upload(page("upload").run(), [("results.json", json.dumps(results).encode(),
                                        "application/json")])
    assert any("Nothing was written" in e.value for e in at.error)
    problems = table_with(at, "Reason")
    (reason,) = problems["Reason"].tolist()
    assert reason.startswith("no scores: no metric value in the results file is a number")
    assert 'results.arc.acc,none: found a string "N/A" where a number was expected' in reason
    assert Store(store_file(tmp_path)).runs().empty


def test_tidy_table_with_other_column_names_is_offered_a_column_map(tmp_path):
    """A tidy table whose columns are not recognised is not stored; the page offers a column
    map (guessed from its columns) and reads it again with the map the user confirms."""
    from pathlib import Path

    eee = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / "tidy" / "every_eval_ever"
    path = next(eee.rglob("mmlu/*/*/None_samples.jsonl"))
    at = page("upload").run()
    upload(at, [("mmlu.jsonl", path.read_bytes(), "application/json")])
    assert any("Nothing was written" in e.value for e in at.error)
    assert any("Tables with other column names" in m.value for m in at.markdown)
    # the guess: model_id, evaluation_name, sample_id, evaluation.score
    assert at.selectbox(key="up_col_model").value == "model_id"
    assert at.selectbox(key="up_col_item_id").value == "sample_id"
    assert at.selectbox(key="up_col_score").value == "evaluation.score"
    assert at.selectbox(key="up_col_task").value == "evaluation_name"
    assert any("--columns" in c.value for c in at.code)
    at.button[0].click().run()          # the form's submit button
    no_exception(at)
    runs = Store(store_file(tmp_path)).runs()
    assert runs["model"].tolist() == ["openai/gpt2"]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    store = Store(store_file(tmp_path))
    scores = store.scores([int(runs["run_id"].iloc[0])])
    assert sorted(scores["item_id"]) == sorted(r["sample_id"] for r in rows)
    assert scores["score"].sum() == sum(r["evaluation"]["score"] for r in rows)


# ---- files added again, new runs first, help text -----------------------------------------
DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "lm_eval"


def demo_files(model: str) -> list[tuple[str, bytes, str]]:
    return [(p.name, p.read_bytes(), "application/octet-stream")
            for p in sorted((DEMO / model).iterdir())]


def test_files_added_again_are_already_stored_not_bad(tmp_path, fixtures_dir):
    """The uploader keeps every file added in a session: adding the same eight files again
    and one new file reports the new run as new and the eight as already stored, with no
    file "not stored" (the same files read twice in one batch made 14 of them "bad")."""
    first = demo_files("demo-org__boreal-8b")
    at = upload(page("upload").run(), first)
    assert any(t.startswith("Recognised 2 run(s); 2 added or merged.") for t in texts(at.success))
    new = (MISTRAL.split("/")[-1], (fixtures_dir / MISTRAL).read_bytes(), "application/json")
    upload(at, first + first + [new])
    assert [t for t in texts(at.success)] == [
        "Recognised 1 run(s); 1 added or merged. New: mistralai/Mistral-7B-v0.1 (first in the "
        "runs table below)."]
    assert [t for t in texts(at.info)] == [
        "Already stored: 8 file(s) (runs demo-org/boreal-8b, demo-org/boreal-8b @ 2026-03-03 "
        "14:40); nothing was written for them."]
    assert any(t.startswith("8 file(s) in the list have the same content as another one")
               for t in texts(at.caption))
    assert not at.warning and not at.error
    assert not any("Reason" in d.value.columns for d in at.dataframe)
    assert len(Store(store_file(tmp_path)).runs()) == 3


def test_one_file_added_again_reads_nothing_and_says_so(tmp_path, fixtures_dir):
    files = [(p.name, p.read_bytes(), "application/json")
             for p in (fixtures_dir / MISTRAL, fixtures_dir / DIALOGPT)]
    at = upload(page("upload").run(), files)
    version = Store(store_file(tmp_path)).version()
    upload(at, files + files[:1])
    assert not at.success and not at.warning and not at.error
    assert len([t for t in texts(at.info) if t.startswith("Already stored: 2 file(s)")]) == 1
    assert Store(store_file(tmp_path)).version() == version       # nothing written


def test_new_runs_come_first_in_the_runs_table_and_are_marked(tmp_path, fixtures_dir):
    at = upload(page("upload").run(), [("dialo.json", (fixtures_dir / DIALOGPT).read_bytes(),
                                        "application/json")])
    upload(at, [("dialo.json", (fixtures_dir / DIALOGPT).read_bytes(), "application/json"),
                ("a_tidy.csv", TIDY.encode(), "text/csv")])
    runs = table_with(at, "run_id")
    assert runs.columns[0] == "new"
    assert runs["name"].tolist()[:3] == ["gpt-x", "gpt-y", "gpt-z"]
    assert runs["new"].tolist() == ["new", "new", "new", ""]
    assert any("stored by the last upload are first" in t for t in texts(at.caption))
    # no raw None: a tidy run has no harness
    assert not runs.isin([None, "None", "nan", "<NA>"]).any().any()
    assert runs.loc[0, "harness"] == "–"


def test_a_file_that_failed_is_not_read_again_until_a_setting_changes(tmp_path, fixtures_dir):
    bad = ("mystery.json", b'{"hello": "world"}', "application/json")
    at = upload(page("upload").run(), [bad])
    assert any("Nothing was written" in e.value for e in at.error)
    good = ("mistral.json", (fixtures_dir / MISTRAL).read_bytes(), "application/json")
    upload(at, [bad, good])
    assert any(t.startswith("Recognised 1 run(s); 1 added or merged.") for t in texts(at.success))
    assert not at.error, [w.value for w in at.warning]
    assert any(t.startswith("1 file(s) that could not be stored before were not read again")
               for t in texts(at.caption))


def test_help_text_renders_as_written():
    """`samples_*.jsonl` in a code span: Markdown would read bare asterisks as italics."""
    at = page("upload").run()
    (caption,) = [c.value for c in at.caption if "lm-evaluation-harness" in c.value]
    assert "`samples_*.jsonl`" in caption and "`results_*.json`" in caption
    outside = re.sub(r"`[^`]*`", "", caption)
    assert "*" not in outside and not re.search(r"(?<!\w)_|_(?!\w)", outside)
    assert at.file_uploader(key="up_files").help == caption
