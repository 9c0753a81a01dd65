"""``leaderboard`` text output in plain words: units on every number, methods and tiers by
their readable names, no internal names, None or NaN; the numbers those of ``--format json``
(and of statsmodels for the Wilson intervals)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalcore.store import Store
from tests.cli_helpers import run_main
from tests.pages.builders import parsed_run

PYTHIA = Path(__file__).resolve().parent / "fixtures" / "wild" / "pythia"
INTERNAL = ("None", "nan", "NaN", "__average__", "se_iid", "our_se", "reported_stderr",
            "indistinguishable_from_best", "~best", "no items")


@pytest.fixture
def mixed_store(tmp_path) -> Path:
    """Three runs: two on a 4-choice 0/1 task, a generative 0/1 task and a continuous one;
    a third with only the 4-choice task (its macro average covers fewer tasks)."""
    path = tmp_path / "store"
    mc = {"a": np.r_[np.ones(60), np.zeros(40)], "b": np.r_[np.ones(70), np.zeros(30)],
          "c": np.r_[np.ones(27), np.zeros(73)]}
    gen = {"a": np.r_[np.ones(20), np.zeros(30)], "b": np.r_[np.ones(30), np.zeros(20)]}
    rng = np.random.default_rng(2)
    runs = [parsed_run(n, {("mc", "acc"): mc[n], ("gen", "acc"): gen[n],
                           ("len", "chars"): rng.normal(30, 5, 50)},
                       n_choices={"mc": 4}) for n in ("a", "b")]
    runs.append(parsed_run("c", {("mc", "acc"): mc["c"]}, n_choices={"mc": 4}))
    Store(path).ingest(runs)
    return path


def _section(out: str, task: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"== {task} ("))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return [line for line in lines[start + 1:end] if not line.startswith("  note (")]


def test_text_has_units_readable_names_and_the_json_numbers(capsys, mixed_store):
    code, out, err = run_main(capsys, "--store", mixed_store, "leaderboard", "--no-ranks")
    assert code == 0, err
    for word in INTERNAL:
        assert word not in out, word
    assert out.startswith("Leaderboard: Wilson score 95% intervals")
    header, *rows = _section(out, "mc")
    assert "score (%)" in header and "95% interval (%)" in header and "our SE (pp)" in header
    assert "chance (%)" in header
    # a: 60/100 Wilson (statsmodels), in % with one decimal
    low, high = proportion_confint(60, 100, alpha=0.05, method="wilson")
    row_a = next(r for r in rows if r.split()[0] == "a")
    assert f"60.0 [{100 * low:.1f}, {100 * high:.1f}]" in re.sub(r"\s+", " ", row_a)
    assert " Wilson " in row_a
    # c: 27/100 on a 4-choice task: the interval contains chance (25 %), said in words
    row_c = next(r for r in rows if r.split()[0] == "c")
    assert "contains chance" in row_c
    # the continuous task: in its own units (no % header), the normal-approximation interval
    header_len, *rows_len = _section(out, "len")
    assert "score (%)" not in header_len and "score" in header_len
    assert all("normal approx." in r for r in rows_len)
    # the tiers in words; the macro average in % with the JSON's numbers
    assert "tied with best" in out or "below best" in out
    code, doc, _ = run_main(capsys, "--store", mixed_store, "leaderboard", "--no-ranks",
                            "--format", "json")
    averages = {a["run"]: a for a in json.loads(doc)["averages"]}
    avg_section = out.split("== macro average over tasks")[1].splitlines()
    assert "score (%)" in avg_section[1] and "SE (pp)" in avg_section[1]
    b = next(r for r in avg_section[2:] if r.split()[0] == "b")
    assert f"{100 * averages['b']['score']:.1f}" in b
    assert f"[{100 * averages['b']['low']:.1f}, {100 * averages['b']['high']:.1f}]" in b


def test_summary_only_runs_and_groups_in_words(capsys, tmp_path):
    store = tmp_path / "s"
    code, _, err = run_main(capsys, "--store", store, "ingest", PYTHIA / "160m_step143000.json",
                            PYTHIA / "6.9b_step143000.json")
    assert code == 0, err
    code, out, err = run_main(capsys, "--store", store, "leaderboard", "--no-ranks")
    assert code == 0, err
    for word in INTERNAL:
        assert word not in out, word
    header, *rows = _section(out, "arc_easy")
    assert all("summary only" in r and "reported SE" in r for r in rows)
    assert "harness SE (pp)" in header
    # the reported value of the file, in %
    small = json.loads((PYTHIA / "160m_step143000.json").read_text())["results"]["arc_easy"]
    row = next(r for r in rows if "160m" in r)
    assert f" {100 * small['acc']:.1f} " in f" {row} "
    # a lower-is-better metric in its own units; the group table names its unit
    header_ld, *_ = _section(out, "crows_pairs_english")
    assert "(%)" not in header_ld
    groups = out.split("== task groups")[1]
    assert " % " in groups and "metric units" in groups
