"""The one-slide answer (``charts.answer_figure``) and its words: each row labelled with its
numbers and its verdict in a few words, readable method names in the notes, long task
names shortened without collisions, and ``words.verdict_head`` on every verdict form
``analysis.verdicts`` writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalcore import charts, words
from evalcore.analysis.verdicts import verdict_text


def _rows(n_tasks: int, method: str = "tango") -> pd.DataFrame:
    d = np.linspace(-0.04, 0.2, n_tasks)
    verdicts = [verdict_text(x, x - 0.03, x + 0.03, 0.06, scale=100.0, threshold=0.05,
                             name_a="a", name_b="b", p=0.5 if abs(x) < 0.03 else 0.001,
                             n=200) for x in d]
    return pd.DataFrame({
        "task": [f"task_{i}" for i in range(n_tasks)], "n": [100 + i for i in range(n_tasks)],
        "diff": d, "low": d - 0.03, "high": d + 0.03, "se": 0.015,
        "p_value": [0.5 if abs(x) < 0.03 else 0.001 for x in d],
        "p_adjusted": [0.5 if abs(x) < 0.03 else 0.001 for x in d],
        "different": [abs(x) >= 0.03 for x in d],
        "better": ["" if abs(x) < 0.03 else ("B" if x > 0 else "A") for x in d],
        "verdict": verdicts, "points_scale": 100.0, "interval_method": method,
        "adjustment": "holm" if n_tasks > 1 else "none"})


@pytest.mark.parametrize("verdict,head", [
    ("different: b is better than a by 4.0 points (CI 0.2 to 9.8)", "different"),
    ("no difference detected, and this design could have detected 3.1 points",
     "no difference detected"),
    ("no difference detected after Holm adjustment (adjusted p 0.09; unadjusted p 0.03, "
     "unadjusted CI 0.1 to 4.0); this design could have detected 3.9 points",
     "no difference detected after Holm adjustment"),
    ("underpowered: the MDE here is 8.9 points", "underpowered"),
    ("too few items to tell: 6 items (CI -20.0 to 40.0)", "too few items to tell"),
    ("macro average over 4 tasks: underpowered: the MDE here is 6.2 points", "underpowered"),
    ("not enough data for an interval", "not enough data for an interval"),
    (None, "–"), (float("nan"), "–")])
def test_verdict_head_reads_every_verdict_form(verdict, head):
    assert words.verdict_head(verdict) == head


def test_verdict_head_on_sentences_the_analysis_writes():
    for p, mde, n in ((0.001, 0.03, 200), (0.5, 0.03, 200), (0.5, 0.09, 200), (0.5, 0.3, 200),
                      (0.5, 0.03, 6)):
        text = verdict_text(0.02, -0.01, 0.05, mde, scale=100.0, threshold=0.05, p=p, n=n)
        assert words.verdict_head(text) in words.VERDICT_HEADS, text
    adjusted = verdict_text(0.04, 0.01, 0.07, 0.04, scale=100.0, threshold=0.05, p=0.01,
                            p_adjusted=0.2, adjustment="bh", n=300)
    assert words.verdict_head(adjusted) == \
        "no difference detected after Benjamini-Hochberg adjustment"
    assert words.verdict_word(adjusted, "") == words.verdict_head(adjusted)
    assert words.verdict_word("different: ...", "A") == "A better"


def test_rows_carry_numbers_and_verdict_words():
    pt = _rows(4)
    overall = {"diff": 0.08, "low": 0.05, "high": 0.11, "n": 406, "se": 0.015,
               "p_value": 1e-5, "p_adjusted": 1e-5, "different": True, "better": "B",
               "verdict": "different: b is better than a by 8.0 points (CI 5.0 to 11.0)"}
    fig = charts.answer_figure(pt, overall, run_a="a", run_b="b", confidence=0.95,
                               verdict="macro average over 4 tasks: " + overall["verdict"],
                               headline=False)
    labels = fig.data[0].y
    assert len(labels) == 5 and "Macro average (4 tasks)" in labels[-1]
    for label, (d, lo, hi, v, b) in zip(labels, zip(
            pt["diff"], pt["low"], pt["high"], pt["verdict"], pt["better"])):
        assert f"[{100 * lo:.1f}, {100 * hi:.1f}] pp" in label
        assert words.verdict_word(v, b) in label
    assert "A better" in labels[0] and "B better" in labels[3]
    assert "B better" in labels[-1]
    assert not fig.layout.title.text and not fig.layout.annotations
    assert list(fig.data[0].x) == pytest.approx([*(100 * pt["diff"]), 8.0])


def test_notes_name_methods_for_people_and_stay_short_for_many_tasks():
    notes = charts.answer_notes(_rows(3, "clustered-t"), run_a="a", run_b="b", confidence=0.9)
    assert notes[1] == "n shared items: task_0 100, task_1 101, task_2 102"
    assert notes[2] == ("Interval: cluster-robust t interval; 90% CI, unadjusted; colour and "
                        "verdict follow the Holm-adjusted p")
    many = charts.answer_notes(_rows(40), run_a="a", run_b="b", confidence=0.95)
    assert many[1] == "n shared items: 4,780 over 40 tasks (100 to 139 per task)"
    one = charts.answer_notes(_rows(1, "wald"), run_a="a", run_b="b", confidence=0.95)
    assert one[2] == "Interval: Wald interval; 95% CI; colour: the verdict"
    slide = charts.answer_figure(_rows(2), None, run_a="a", run_b="b", confidence=0.95,
                                 verdict="x")
    footer = slide.layout.annotations[0].text
    assert "tango" not in footer and "Tango score interval" in footer


def test_long_task_names_are_shortened_in_the_middle_and_whole_on_hover():
    pt = _rows(2)
    pt["task"] = ["mmlu_high_school_european_history_extended_cot",
                  "mmlu_high_school_world_history_extended_cot"]
    fig = charts.answer_figure(pt, None, run_a="a", run_b="b", confidence=0.95, verdict="x",
                               headline=False)
    firsts = [label.split("<br>")[0] for label in fig.data[0].y]
    assert all(len(f) == charts.ANSWER_LABEL_CHARS for f in firsts)
    assert len(set(fig.data[0].y)) == 2 and all("…" in f for f in firsts)
    assert [c[3] for c in fig.data[0].customdata] == list(pt["task"])
    assert charts.short_label("short") == "short"
