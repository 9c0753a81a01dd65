"""Pages open an analysis on the metric the leaderboard shows for the task (the analysis
layer's ``task_metric``), not on the first metric in alphabetical order."""

from __future__ import annotations

import numpy as np

from evalcore.analysis import leaderboard
from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import no_exception, page, store_file, texts


def test_repeats_page_opens_on_the_tasks_metric(tmp_path):
    """Metrics bleu (continuous) and exact_match,strict-match (0/1) with 3 answers per item:
    the default rule picks exact_match,strict-match (the leaderboard's metric); the page used
    to open on bleu, the first alphabetically, and found no 0/1 scores for pass@k."""
    rng = np.random.default_rng(5)
    em = (rng.random((30, 3)) < 0.6).astype(float)
    store = Store(store_file(tmp_path))
    store.ingest([parsed_run("sampler", {
        ("qa", "bleu"): rng.uniform(0.1, 0.9, (30, 3)),
        ("qa", "exact_match,strict-match"): em})])
    at = page("repeats").run()
    no_exception(at)
    assert at.selectbox(key="rep_metric_w").value == "(primary)"
    assert not any("this metric is not binary" in t for t in texts(at.info))
    assert any("pass@k" in t for t in texts(at.markdown))
    board = leaderboard(store, include_ranks=False, include_tiers=False)
    assert board.metrics_by_task["qa"] == "exact_match,strict-match"
