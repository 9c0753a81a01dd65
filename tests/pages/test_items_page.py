"""The Items page on the demo store (planted label errors and corpus overlaps) and with an
uploaded corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tests.pages.conftest import ROOT, metric, no_exception, page, texts
from ui import scratch

TRUTH = json.loads((ROOT / "data" / "demo_items" / "truth.json").read_text())


def _tag_demo(store) -> None:
    for rid in store.runs()["run_id"]:
        store.set_tags(int(rid), ["demo"])


def test_suspects_rescoring_and_demo_corpus(demo_store):
    _tag_demo(demo_store)
    at = page("items").run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    # suspect labels: every planted label error is listed, far more than chance
    sus = next(d.value for d in at.dataframe if "Consensus pick" in d.value.columns)
    assert set(TRUTH["label_errors"]["item_ids"]) <= set(sus["Item"].astype(str))
    found = int(metric(at, "Suspect items").split(" of ")[0])
    assert found == len(sus) and float(metric(at, "Expected if labels were right")) < found / 5
    # re-scoring: before / after / range side by side, with the bias note
    board = next(d.value for d in at.dataframe if "suspects correct for all" in d.value.columns)
    assert {"before", "after", "drop suspects"} <= set(board.columns)
    assert all("[" in c for c in board["before"])
    assert any("not neutral" in w for w in texts(at.warning))
    # contamination on the bundled corpus: every quoted item overlaps
    assert any("not a random subset" in w for w in texts(at.warning))
    items = next(d.value for d in at.dataframe if "In the corpus" in d.value.columns)
    assert set(TRUTH["overlaps"]["arc_easy_demo"]) <= set(items["Item"].astype(str))
    runs = next(d.value for d in at.dataframe if "Overlapping − clean [95% CI] (pp)" in d.value.columns)
    assert len(runs) == 7                          # the lm_eval runs (inspect has no arc task)
    assert runs["Method"].str.startswith("Newcombe").all()
    # every table is headed for people and shows no None or NaN
    for frame in at.dataframe:
        names = set(frame.value.columns)
        assert not {"item_id", "n_agree", "share_correct", "n_clean", "score_overlap", "hits",
                    "run", "accuracy"} & names, names
        assert not frame.value.astype(str).isin(["None", "nan", "NaN"]).any().any()
    # relabel the planted items to the consensus: 'after' moves, 'before' does not
    planted = sus[sus["Item"].astype(str).isin(TRUTH["label_errors"]["item_ids"])]
    csv = pd.DataFrame({"task": planted["Task"], "item_id": planted["Item"],
                        "new_gold": planted["Consensus pick"]}).to_csv(index=False)
    at.file_uploader(key="rs_upload").set_value(("relabel.csv", csv.encode(), "text/csv")).run()
    no_exception(at)
    after = next(d.value for d in at.dataframe if "suspects correct for all" in d.value.columns)
    assert after.set_index("Run").loc["demo-org/atlas-13b", "before"] == \
        board.set_index("Run").loc["demo-org/atlas-13b", "before"]
    assert after.set_index("Run").loc["demo-org/atlas-13b", "after"] != \
        board.set_index("Run").loc["demo-org/atlas-13b", "after"]
    assert any("6 relabelled item(s)" in c for c in texts(at.caption))


def test_uploaded_corpus(demo_store, tmp_path: Path):
    lines = [json.dumps({"body": "unrelated words " * 20})]
    tx = demo_store.item_texts([1], "reading_demo")
    lines.append(json.dumps({"body": tx["prompt"].iloc[0]}))
    at = page("items")
    at.query_params["ov_task"] = "reading_demo"
    at.run()
    at.text_input(key="ov_field").set_value("body")
    at.file_uploader(key="ov_upload").set_value(
        [("c.jsonl", ("\n".join(lines) + "\n").encode(), "application/json")]).run()
    no_exception(at)
    assert metric(at, "Overlapping items").startswith("5 of 150")   # one passage, five questions
    # the index's scratch folder holds the index only (the corpus copies are gone)
    folder = Path(at.session_state["ov_index_folder"])
    assert folder in scratch.live_folders()
    assert [p.suffix for p in folder.iterdir()] == [".duckdb"]
    at.text_input(key="ov_field").set_value("text").run()
    assert any("field text" in e for e in texts(at.error))
    # the replaced index and the failed build's folder are removed, not left in /tmp
    assert not folder.exists() and folder not in scratch.live_folders()
    assert "ov_index_folder" not in at.session_state
    assert not any(p.name.startswith("evalbars-ngrams-") for p in scratch.live_folders())


def test_scratch_folders_removed_when_discarded_and_at_exit(tmp_path: Path, monkeypatch):
    a, b = scratch.new_folder("evalbars-test-"), scratch.new_folder("evalbars-test-")
    (a / "x").write_text("x")
    scratch.discard(a)
    assert not a.exists() and b.exists() and b in scratch.live_folders()
    scratch.discard(tmp_path)            # not made here: left alone
    scratch.discard(None)
    assert tmp_path.exists()
    # what atexit runs, on this test's folder only (the process's cached demo index stays)
    monkeypatch.setattr(scratch, "_FOLDERS", {b})
    scratch._remove_all()
    assert not b.exists() and scratch.live_folders() == []


def test_exclusion_choices_come_through_the_page_cache(demo_store, monkeypatch):
    """The re-scoring tab's "Exclude items" choices (``item_choices``) are read once per store
    version, like the page's other reads: a rerun of the page does not read them again."""
    import evalcore.analysis as analysis
    calls = []
    real = analysis.item_choices

    def counted(store, *args):
        calls.append(args)
        return real(store, *args)

    monkeypatch.setattr(analysis, "item_choices", counted)
    at = page("items").run()
    no_exception(at)
    assert len(calls) == 1
    choices = at.multiselect(key="rs_exclude").options
    assert len(choices) > 0
    at.run()
    no_exception(at)
    assert len(calls) == 1                        # the rerun read the cache
    assert at.multiselect(key="rs_exclude").options == choices
