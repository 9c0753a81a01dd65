"""Items analysis on generated stores: planted label errors and planted corpus overlaps."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis.items import (contamination, item_choices, read_relabels, rescore,
                                     suspect_labels)
from evalcore.errors import AnalysisError
from evalcore.model import (SCORE_COLUMNS, SUMMARY_COLUMNS, TASK_COLUMNS, TEXT_COLUMNS, ParsedRun,
                            SourceFile, empty_frame)
from evalcore.store import Store

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
TASK = "gen_mc"


def _run(name: str, model: str, picks: list[str], gold: list[str], prompts: list[str],
         n_choices: int = 4) -> ParsedRun:
    n = len(picks)
    ids = [str(i) for i in range(n)]
    score = [1.0 if p == g else 0.0 for p, g in zip(picks, gold)]
    sc = pd.DataFrame({"task": TASK, "metric": "acc", "item_id": ids, "answer_idx": 0,
                       "score": score, "cluster": None, "item_hash": ["h" + i for i in ids],
                       "prompt_hash": ["p" + i for i in ids]}, columns=list(SCORE_COLUMNS))
    tx = pd.DataFrame({"task": TASK, "item_id": ids, "answer_idx": 0, "prompt": prompts,
                       "target": gold, "response": picks}, columns=list(TEXT_COLUMNS))
    tk = pd.DataFrame([{"task": TASK, "n_choices": n_choices, "protocol": {}}], columns=list(TASK_COLUMNS))
    return ParsedRun(name=name, model=model, source_format="lm_eval", harness="lm-evaluation-harness",
                     harness_version="0.4.8", protocol={}, files=[SourceFile(name, hashlib.sha256(name.encode()).hexdigest(), 1, "x")],
                     scores=sc, summaries=empty_frame(SUMMARY_COLUMNS), texts=tx, tasks=tk)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> dict:
    """600 four-option items, 12 with a wrong gold; six models with accuracies 0.95..0.55;
    a rerun of the best model; 20 items whose text is planted in a corpus."""
    rng = np.random.default_rng(11)
    n, k = 600, 4
    options = [[f"option {c} of item {i}" for c in range(k)] for i in range(n)]
    truth = rng.integers(0, k, n)
    bad = np.sort(rng.choice(n, 12, replace=False))
    gold_idx = truth.copy()
    gold_idx[bad] = (truth[bad] + 1 + rng.integers(0, k - 1, bad.size)) % k
    prompts = [" ".join(rng.choice(WORDS, 20)) + f" question {i}" for i in range(n)]
    gold = [options[i][gold_idx[i]] for i in range(n)]
    accs = [0.95, 0.93, 0.9, 0.7, 0.6, 0.55]
    runs = []
    for j, a in enumerate(accs):
        right = rng.random(n) < a
        wrong = (truth + 1 + rng.integers(0, k - 1, n)) % k
        pick = np.where(right, truth, wrong)
        runs.append(_run(f"m{j}", f"org/m{j}", [options[i][pick[i]] for i in range(n)], gold, prompts))
    # a rerun of m0 with the same picks: must not vote twice
    runs.append(_run("m0 rerun", "org/m0", list(runs[0].texts["response"]), gold, prompts))
    path = tmp_path_factory.mktemp("items") / "s"
    store = Store(path)
    store.ingest(runs)
    dirty = np.sort(rng.choice(n, 20, replace=False))
    corpus = tmp_path_factory.mktemp("corpus")
    lines = [json.dumps({"text": "unrelated " + " ".join(rng.choice(WORDS, 40))}) for _ in range(200)]
    for i in dirty:
        lines.insert(int(rng.integers(0, len(lines))),
                     json.dumps({"text": "Some page. " + prompts[i] + " " + gold[i] + ". More."}))
    (corpus / "c.jsonl").write_text("\n".join(lines) + "\n")
    return {"store": store, "bad": [str(i) for i in bad], "dirty": {str(i) for i in dirty},
            "corpus": corpus, "truth": truth, "options": options}


def test_planted_label_errors_are_found(planted: dict) -> None:
    rep = suspect_labels(planted["store"], TASK)
    assert rep.m == 3 and rep.n_strong == 3 and rep.n_options == 4
    assert rep.left_out == ["m0 rerun"]
    assert list(rep.models.loc[rep.models["strong"], "run"]) == ["m0", "m1", "m2"]
    found = set(rep.suspects["item_id"])
    bad = set(planted["bad"])
    # each planted item is flagged when all three strong models are right: 0.95*0.93*0.9 = 0.8
    assert len(found & bad) >= 7
    # false positives: few, as the chance model expects (about 600 * 3 * (0.05*0.07*0.1/27))
    assert len(found - bad) <= 2 and rep.expectation.expected < 0.5
    assert rep.expectation.p_value < 1e-6
    row = rep.suspects[rep.suspects["item_id"] == sorted(found & bad)[0]].iloc[0]
    i = int(row["item_id"])
    assert row["consensus"] == planted["options"][i][planted["truth"][i]]
    assert row["n_agree"] == 3 and row["m0"] == row["consensus"]
    csv = rep.export_csv()
    assert csv.splitlines()[0].startswith("task,item_id,new_gold,prompt,gold,consensus")


def test_item_choices_are_the_runs_item_ids_in_natural_order(planted: dict) -> None:
    store = planted["store"]
    rid = store.resolve_run("m0")
    want = sorted(store.scores([rid], TASK, "acc")["item_id"].astype(str).unique(), key=int)
    got = item_choices(store, TASK, "acc", rid)
    assert got == want and got[:3] == ["0", "1", "2"] and len(got) == 600
    assert item_choices(store, TASK, "no_such_metric", rid) == []


def test_relabel_and_sensitivity(planted: dict) -> None:
    store = planted["store"]
    rep = suspect_labels(store, TASK)
    ex = rep.suspects.assign(new_gold=rep.suspects["consensus"])[["task", "item_id", "new_gold"]]
    relabels = read_relabels(ex.to_csv(index=False))
    res = rescore(store, TASK, "acc", relabels=relabels, suspects=list(rep.suspects["item_id"]))
    board = res.board.set_index(["run", "variant"])
    n_s = len(rep.suspects)
    before = board.loc[("m0", "before"), "score"]
    after = board.loc[("m0", "after"), "score"]
    # m0 chose the consensus on every suspect: relabelling turns each 0 into a 1
    assert after == pytest.approx(before + n_s / 600)
    assert board.loc[("m0", "suspects correct for all"), "score"] == pytest.approx(after)
    assert board.loc[("m0", "drop suspects"), "n"] == 600 - n_s
    low, high = board.loc[("m5", "before"), ["low", "high"]]
    assert low < board.loc[("m5", "before"), "score"] < high
    assert set(res.comparisons["variant"]) == set(board.index.get_level_values(1))
    assert res.ref_run == "m0" and (res.comparisons["ref_run"] == "m0").all()
    assert (res.consistency["agreement"] == 1.0).all()
    ex2 = rescore(store, TASK, "acc", exclude=["0", "1"])
    assert ex2.board.set_index(["run", "variant"]).loc[("m3", "after"), "n"] == 598
    assert "biases" in res.bias_note or "not neutral" in res.bias_note


def test_sensitivity_needs_right_wrong_scores(tmp_path: Path) -> None:
    """A partial-credit metric: no 'correct for all' variant (1.0 means nothing there), a note."""
    picks = ["a", "b", "c", "a"]
    run = _run("p", "org/p", picks, ["a", "a", "a", "a"], ["q"] * 4)
    run.scores["score"] = [0.5, 0.25, 1.0, 0.75]
    store = Store(tmp_path / "s")
    store.ingest([run])
    res = rescore(store, TASK, "acc", suspects=["1"])
    assert set(res.board["variant"]) == {"before", "after", "drop suspects"}
    assert any("not 0/1" in n for n in res.notes)


def test_relabel_csv_errors() -> None:
    with pytest.raises(AnalysisError, match="missing new_gold"):
        read_relabels("task,item_id\nx,1\n")
    with pytest.raises(AnalysisError, match="twice"):
        read_relabels("task,item_id,new_gold\nx,1,a\nx,1,b\n")
    assert read_relabels("task,item_id,new_gold\nx,1,\nx,2,b\n")["item_id"].tolist() == ["2"]


def test_planted_overlaps_are_found(planted: dict, tmp_path: Path) -> None:
    from evalcore.items.ngram_index import build_index
    idx = tmp_path / "idx.duckdb"
    build_index([planted["corpus"]], idx)
    rep = contamination(planted["store"], TASK, idx)
    got = set(rep.items.loc[rep.items["overlapping"].eq(True), "item_id"])
    assert got == planted["dirty"]                      # recall 1, no false positives
    row = rep.runs.set_index("run").loc["m0"]
    assert row["n_overlap"] == 20 and row["n_clean"] == 580
    assert row["low"] <= row["diff"] <= row["high"] and "Newcombe" in row["method"]
    assert "not a random subset" in rep.causal_note
    hit = rep.items[rep.items["overlapping"].eq(True)].iloc[0]
    assert hit["example"].startswith("c.jsonl, line ")


def test_inspect_multiple_choice_picks_from_real_logs(fixtures_dir, tmp_path: Path) -> None:
    """inspect_evals/arc_easy logs (qwen2.5:0.5b: C, I, I; claude-sonnet-4-0: five C): the
    picks are read from 'ANSWER: X' and agree with inspect's choice scorer on every item."""
    from evalcore.analysis.items import pick_matrix
    from evalcore.ingest import parse_paths
    store = Store(tmp_path / "s")
    store.ingest(parse_paths([fixtures_dir / "inspect" / "data_arc_qwen.json",
                              fixtures_dir / "inspect" / "data_arc_sonnet.json"]))
    task = "inspect_evals/arc_easy"
    names = dict(zip(store.runs()["name"], store.runs()["run_id"]))
    qwen, sonnet = names["ollama/qwen2.5:0.5b"], names["anthropic/claude-sonnet-4-0"]
    pm = pick_matrix(store, task, [qwen, sonnet])
    assert pm.gold[:3] == ["A", "B", "D"]
    assert list(pm.picks[qwen].iloc[:3]) == ["A", "D", "A"]       # ANSWER: A / ANSWER:D / ANSWER: A
    assert list(pm.picks[sonnet]) == ["A", "B", "D", "D", "B"]
    res = rescore(store, task, relabels=pd.DataFrame({"task": [task], "item_id": ["3"], "new_gold": ["A"]}))
    assert (res.consistency["agreement"] == 1.0).all()           # picks follow the choice scorer
    after = res.board[res.board["variant"] == "after"].set_index("run")["score"]
    assert after["ollama/qwen2.5:0.5b"] == pytest.approx(2 / 3)   # item 3 now right for qwen
    assert after["anthropic/claude-sonnet-4-0"] == pytest.approx(2 / 3)
    rep = suspect_labels(store, task, m=1)
    assert rep.n_strong == 1 and rep.suspects.empty               # the strong model matches gold


def _option_codes_loop(gold, picks):
    """The per-item loop pick_matrix used before the vectorised _option_codes."""
    n_items, n_runs = picks.shape
    codes = np.full((n_runs, n_items), -1, dtype="int64")
    gold_codes = np.full(n_items, -1, dtype="int64")
    options = []
    for j in range(n_items):
        opts: dict[str, int] = {}
        if isinstance(gold[j], str):
            gold_codes[j] = opts.setdefault(gold[j], len(opts))
        for i in range(n_runs):
            p = picks[j, i]
            if isinstance(p, str):
                codes[i, j] = opts.setdefault(p, len(opts))
        options.append(list(opts))
    return codes, gold_codes, options


def test_option_codes_equal_the_per_item_loop():
    from evalcore.analysis.items.picks import _option_codes
    rng = np.random.default_rng(5)
    texts = np.array(["A", "B", "C", "D", "Paris", "a long answer"], dtype=object)
    picks = texts[rng.integers(0, len(texts), size=(300, 9))]
    picks[rng.random(picks.shape) < 0.1] = None
    picks[rng.random(picks.shape) < 0.05] = np.nan
    picks[7, :] = None                       # an item nobody answered
    gold = list(texts[rng.integers(0, len(texts), size=300)])
    gold[3] = None
    gold[7] = None                           # ... and without gold
    got = _option_codes(gold, picks)
    want = _option_codes_loop(gold, picks)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert got[2] == want[2]
    assert got[2][7] == [] and got[1][7] == -1
    empty = _option_codes([], np.empty((0, 3), dtype=object))
    assert empty[0].shape == (3, 0) and empty[2] == []


def test_positions_and_pair_groups_equal_the_sorting_paths():
    """pick_matrix's run columns (_positions) and distinct (response, target) pairs
    (store.keys.groups): the table paths give what the np.unique paths give, and a range too
    wide for a table takes the np.unique path."""
    from evalcore.analysis.items.picks import _positions
    from evalcore.store.keys import groups

    rng = np.random.default_rng(5)
    for values, keys in [(rng.integers(3, 60, 5000), [7, 3, 59, 100, 40]),
                         (np.array([5, 10**12, 5, 7]), [10**12, 7]),     # sparse: np.unique
                         (np.array([], dtype=np.int64), [1])]:
        want = np.array([([*keys].index(int(v)) if int(v) in keys else -1) for v in values],
                        dtype=np.int64)
        assert np.array_equal(_positions(values, keys), want)
    for values, bound in [(rng.integers(0, 40, 3000), 40), (rng.integers(0, 10**7, 50), 10**7),
                          (np.array([0, 0, 3]), 4), (np.array([], dtype=np.int64), 5)]:
        found, index = groups(values, bound)
        u, inv = np.unique(values, return_inverse=True)
        assert np.array_equal(found, u) and np.array_equal(index, inv.ravel())
