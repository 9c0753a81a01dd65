"""Fixtures for the report tests: the bundled demo in a temporary store, a store whose names
are HTML, and reports built from them once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.ingest import parse_paths
from evalcore.report import ReportSpec, build_report
from evalcore.report.html import render_html
from evalcore.store import Store

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"
A, B = "demo-org/atlas-7b", "demo-org/boreal-8b"
B_CHAT = "demo-org/boreal-8b @ 2026-03-03 14:40"   # same model, chat template + few-shot
EVIL = "<script>alert(1)</script>"
EVIL_B = "<img src=x onerror=alert(2)>"


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory) -> Store:
    path = tmp_path_factory.mktemp("report-demo") / "store"
    store = Store(path)
    store.ingest(parse_paths([DEMO]))
    return store


@pytest.fixture(scope="session")
def demo_spec() -> ReportSpec:
    return ReportSpec(comparisons=((A, B), (B, B_CHAT)), n_resamples=400, seed=3)


@pytest.fixture(scope="session")
def demo_report(demo_store, demo_spec):
    return build_report(demo_store, demo_spec)


@pytest.fixture(scope="session")
def demo_html(demo_report) -> str:
    return render_html(demo_report)


@pytest.fixture(scope="session")
def evil_store(tmp_path_factory) -> Store:
    """Two runs of a tidy table whose model, task, item and texts are HTML/JS."""
    tmp = tmp_path_factory.mktemp("report-evil")
    paths = []
    for k, (model, shift) in enumerate(((EVIL, 0), (EVIL_B, 7))):
        rows = ["model,task,item_id,score,cluster"]
        for i in range(40):
            rows.append(f'"{model}","<b>task</b>","<i>{i}</i>",{int((i * 3 + shift) % 5 < 3)},'
                        f'"<u>c{i % 4}</u>"')
        paths.append(tmp / f"evil_{k}.csv")
        paths[-1].write_text("\n".join(rows) + "\n", encoding="utf-8")
    store = Store(tmp / "store")
    store.ingest(parse_paths(paths))
    return store
