"""Fixtures for the page tests: temporary stores, cleared Streamlit caches, AppTest runners."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from evalcore.store import Store
from streamlit.testing.v1 import AppTest

from tests.pages.builders import parsed_run

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "pages"
TIMEOUT = 60

MISTRAL = "lm_eval/results-with-samples_v0.4.8_mistral-7b_arc-easy_limit15.json"
DIALOGPT = "lm_eval/results-with-samples_v0.4.8_dialogpt-medium_arc-easy_limit15.json"
LLAMA_SUMMARY = "lm_eval/results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, store_location):
    """Each test: fresh caches, demo off, an empty store under tmp_path (EVALBARS_STORE)."""
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("EVALBARS_DEMO", "0")
    for key, value in store_location.env.items():
        monkeypatch.setenv(key, value)
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


def store_file(tmp_path: Path) -> str:
    """The store the pages use in this test (``_isolated`` set $EVALBARS_STORE to it)."""
    return os.environ["EVALBARS_STORE"]


def page(name: str) -> AppTest:
    """An AppTest of one page script (pages/<name>.py)."""
    return AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=TIMEOUT)


def app() -> AppTest:
    """An AppTest of the whole app (navigation + shared setup)."""
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def page_on_tab(name: str, key: str, tab: str, first: str, **params: str) -> AppTest:
    """Page ``name`` run with its tab ``tab`` open from the URL (``key``, as a shared link
    opens it; the first tab ``first`` is the one without the parameter)."""
    at = page(name)
    if tab != first:
        at.query_params[key] = tab
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def check_only_open_tab_computed(monkeypatch, name: str, key: str,
                                 wanted: dict[str, str]) -> list[str]:
    """Open each tab of page ``name`` (label -> the one ``ui.common.compute`` call it makes)
    and check that only that tab's analysis runs; returns the live list of compute calls."""
    from ui import common
    calls: list[str] = []
    compute = common.compute
    monkeypatch.setattr(common, "compute",
                        lambda fn, *a, **k: calls.append(fn.__name__) or compute(fn, *a, **k))
    labels = list(wanted)
    for tab, fn in wanted.items():
        calls.clear()
        at = page_on_tab(name, key, tab, labels[0])
        no_exception(at)
        assert calls == [fn]
        assert [t.label for t in at.tabs] == labels
    return calls


def plain(markdown_text: str) -> str:
    """Undo md_escape's backslashes (to compare rendered text with expectations)."""
    return re.sub(r"\\(.)", r"\1", markdown_text)


def texts(elements) -> list[str]:
    return [plain(e.value) for e in elements]


def charts(at: AppTest) -> list[dict]:
    """The Plotly figures on the page, as dicts (from element.proto.spec)."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def metric(at: AppTest, label_start: str) -> str:
    for m in at.metric:
        if plain(m.label).startswith(label_start):
            return m.value
    raise AssertionError(f"no metric starting with {label_start!r}: "
                         f"{[m.label for m in at.metric]}")


def unescape_plot(text: str) -> str:
    return html.unescape(text)


# ---- stores ------------------------------------------------------------------------------
def toy_runs() -> list:
    """Three runs on two tasks with fixed, known counts (no randomness in the counts).

    - mc (4 choices, 100 items, clusters of 10): alpha 60/100, beta 70/100, gamma 27/100
    - gen (50 items): alpha 20/50, beta 30/50, gamma 25/50
    beta differs from alpha on mc in exactly b = 10 (beta only), c = 0 items.
    """
    mc_a = np.zeros(100)
    mc_a[:60] = 1
    mc_b = mc_a.copy()
    mc_b[60:70] = 1
    mc_g = np.zeros(100)
    mc_g[:27] = 1
    gen_a = np.zeros(50)
    gen_a[:20] = 1
    gen_b = np.zeros(50)
    gen_b[:30] = 1
    gen_g = np.zeros(50)
    gen_g[25:] = 1
    clusters = {"mc": [f"c{i // 10}" for i in range(100)]}
    return [parsed_run(name, {("mc", "acc"): mc, ("gen", "em"): gen}, clusters=clusters,
                       n_choices={"mc": 4})
            for name, mc, gen in (("alpha", mc_a, gen_a), ("beta", mc_b, gen_b),
                                  ("gamma", mc_g, gen_g))]


@pytest.fixture
def toy_store(tmp_path) -> Store:
    store = Store(store_file(tmp_path))
    store.ingest(toy_runs())
    return store


@pytest.fixture
def fixture_store(tmp_path, fixtures_dir) -> Store:
    """Mistral-7B vs DialoGPT-medium on arc_easy (15 docs, embedded samples)."""
    from evalcore.ingest import parse_paths

    store = Store(store_file(tmp_path))
    store.ingest(parse_paths([fixtures_dir / MISTRAL, fixtures_dir / DIALOGPT]))
    return store


@pytest.fixture(scope="session")
def _demo_store_template(tmp_path_factory) -> Path:
    from evalcore.ingest import parse_paths

    path = tmp_path_factory.mktemp("demo") / "demo"
    store = Store(path)
    store.ingest(parse_paths([ROOT / "data" / "demo"]))
    store.close()
    return path


@pytest.fixture
def demo_store(tmp_path, _demo_store_template) -> Store:
    """A copy of a store holding the bundled demo (built once per session)."""
    target = Path(store_file(tmp_path))
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(_demo_store_template, target)
    return Store(target)


def fixture_item_scores(path: Path, metric: str = "acc") -> dict[int, float]:
    """doc_id -> score read straight from an lm_eval results file with embedded samples
    (an independent reading of the fixture, not through evalcore)."""
    data = json.loads(path.read_text())
    samples = next(iter(data["samples"].values()))
    return {int(s["doc_id"]): float(s[metric]) for s in samples}
