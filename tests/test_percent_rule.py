"""One rule for percent display (``evalcore.metrics.shown_in_percent``): scores are shown in
percent, differences in percentage points, when every value lies in [0, 1] AND the metric's
range, when known, is [0, 1]. A metric known to live elsewhere (bits per byte on [0, inf),
SQuAD 2.0's 0-100 sub-scores) keeps its own units even when its values fall in [0, 1], on
the leaderboard (CLI text), in ``compare`` (``points_scale``) and in the report alike."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from evalcore import analysis as an
from evalcore import cli
from evalcore import metrics as mx
from evalcore.ingest import parse_paths
from evalcore.report import ReportSpec, build_report
from evalcore.report.html import _cell_scale
from evalcore.store import Store


def test_the_rule():
    bpb, acc = mx.metric_info("bits_per_byte"), mx.metric_info("acc")
    squad = mx.metric_info("HasAns_exact")
    assert not mx.shown_in_percent([0.61, 0.72], bpb)       # known range [0, inf)
    assert not mx.shown_in_percent([0.759], squad)          # known range [0, 100]
    assert mx.shown_in_percent([0.61, 0.72], acc)
    assert mx.shown_in_percent([0.61], mx.metric_info("some_new_metric"))   # range unknown
    assert not mx.shown_in_percent([0.6, 1.7], None)
    assert mx.percent_scale([0.5], acc) == 100.0 and mx.percent_scale([0.5], bpb) == 1.0


@pytest.fixture(scope="module")
def bpb_store(tmp_path_factory):
    """Two runs of a bits-per-byte task (values in [0, 1]) and an accuracy task, item-level."""
    d = tmp_path_factory.mktemp("pct")
    rng = np.random.default_rng(0)
    path = d / "scores.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "task", "item_id", "metric", "score"])
        for model, shift in (("m-a", 0.0), ("m-b", 0.05)):
            for i in range(60):
                w.writerow([model, "wiki", f"q{i}", "bits_per_byte",
                            f"{0.6 + shift + 0.1 * rng.random():.4f}"])
                w.writerow([model, "quiz", f"q{i}", "acc", int(rng.random() < 0.6 + shift)])
    store = Store(d / "s")
    store.ingest(parse_paths([path]))
    return store


def test_leaderboard_compare_and_report_keep_bits_per_byte_in_its_units(bpb_store, capsys):
    lb = an.leaderboard(bpb_store, include_ranks=False)
    assert lb.metric_info["wiki"].metric == "bits_per_byte"
    cmp = an.compare(bpb_store, "m-a", "m-b")
    scale = dict(zip(cmp.per_task["task"], cmp.per_task["points_scale"]))
    assert scale == {"wiki": 1.0, "quiz": 100.0}
    assert cli.main(["--store", str(bpb_store.path), "leaderboard", "--no-ranks"]) == 0
    out = capsys.readouterr().out
    section = {part.split(" ", 1)[0]: part for part in out.split("\n== ")[1:]}
    wiki, quiz = section["wiki"], section["quiz"]
    assert "(%)" not in wiki and "score (%)" in quiz
    rep = build_report(bpb_store, ReportSpec(comparisons=(("m-a", "m-b"),)))
    assert _cell_scale(rep, "m-a", "wiki") == 1.0 and _cell_scale(rep, "m-a", "quiz") == 100.0
