"""Pages on a store built from real inspect_ai logs (the starsim pair: two models, 23 shared
samples, metadata.problem_id as cluster key); references read straight from the .eval zips."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps

from evalcore.store import Store
from tests.pages.conftest import metric, no_exception, page, store_file, texts

SONNET = "inspect/2026-02-20T05-22-33+00-00_starsim-benchmark_24AbBSr25iP6DbfTNwbAUU.eval"
OPUS = "inspect/2026-02-20T05-28-38+00-00_starsim-benchmark_ZLCP7ftbVUCYkyJGemYV6a.eval"


def reduced_scores(path) -> dict[str, float]:
    """sample id -> reduced score from the log's reductions.json (read without evalcore)."""
    with zipfile.ZipFile(path) as z:
        reductions = json.loads(z.read("reductions.json"))
    return {str(s["sample_id"]): float(s["value"]) for s in reductions[0]["samples"]}


@pytest.fixture
def starsim(tmp_path, fixtures_dir) -> Store:
    from evalcore.ingest import parse_paths

    store = Store(store_file(tmp_path))
    # 6 problems is below the automatic cluster-key rule (20): give the key explicitly
    store.ingest(parse_paths([fixtures_dir / SONNET, fixtures_dir / OPUS],
                             cluster_key="problem_id"))
    return store


def test_compare_sonnet_vs_opus(starsim, fixtures_dir):
    a = reduced_scores(fixtures_dir / SONNET)
    b = reduced_scores(fixtures_dir / OPUS)
    ids = sorted(a)
    xa, xb = np.array([a[i] for i in ids]), np.array([b[i] for i in ids])
    nb, nc = int(np.sum((xb == 1) & (xa == 0))), int(np.sum((xb == 0) & (xa == 1)))
    assert nb + nc == 5                                  # PROVENANCE: 5 discordant pairs
    at = page("compare")
    at.query_params["run_a"] = "anthropic/claude-sonnet-4-6"
    at.query_params["run_b"] = "anthropic/claude-opus-4-6"
    at.run()
    no_exception(at)
    assert any(f"b = {nb}, c = {nc}" in t for t in texts(at.caption))
    p_exact = sps.binomtest(min(nb, nc), nb + nc, 0.5).pvalue
    assert any(f"exact McNemar p {p_exact:.4f}" in t for t in texts(at.caption))
    # the verdict's p (docs/methods.md, "Verdicts"): the problem_id clusters (6 < 30) make
    # the interval the union of the cluster-robust t (G - 1 df) and the iid Tango interval,
    # so p is the largest of their tests' p and the exact McNemar p
    d = xb - xa
    problem = np.unique([i.split(".")[0] for i in ids], return_inverse=True)[1]
    g = problem.max() + 1
    sums = np.bincount(problem, weights=d - d.mean())
    se_cl = np.sqrt(g / (g - 1) * np.sum(sums ** 2)) / d.size
    p_cluster = 2 * sps.t.sf(abs(d.mean()) / se_cl, g - 1)
    p_score = 2 * sps.norm.sf(abs(nb - nc) / np.sqrt(nb + nc))
    assert metric(at, "p (the verdict's test)") == f"{max(p_exact, p_score, p_cluster):.4f}"
    assert metric(at, "B − A (95% CI)") == f"{100 * (xb - xa).mean():+.1f} pp"


def test_clusters_tab_on_problem_ids(starsim, fixtures_dir):
    at = page("repeats")
    at.query_params["rp_tab"] = "Clusters"
    at.query_params["cl_run"] = "anthropic/claude-sonnet-4-6"
    at.run()
    no_exception(at)
    scores = reduced_scores(fixtures_dir / SONNET)
    ids = sorted(scores)
    x = np.array([scores[i] for i in ids])
    problem = [i.split(".")[0] for i in ids]              # starsim_t<problem>.<step>
    fit = sm.OLS(x, np.ones(x.size)).fit(cov_type="cluster",
                                         cov_kwds={"groups": np.unique(problem, return_inverse=True)[1]})
    assert any("23 items in 6 clusters" in t for t in texts(at.caption))
    assert metric(at, "SE allowing for clusters") == f"{100 * fit.bse[0]:.2f} pp"
