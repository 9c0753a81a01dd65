"""Fixtures for the report tests: the bundled demo in a temporary store, a store whose names
are HTML, and reports built from them once per session."""

from __future__ import annotations

import re
from html.parser import HTMLParser
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
# Internal names and raw values no reader should meet in a report (HTML text, PDF, LaTeX):
# column and method keys of the analysis layer, Python/pandas missing values, numpy jargon.
FORBIDDEN = (r"__average__", r"\bse_iid\b", r"\bse_clustered\b", r"\bse_unpaired\b",
             r"clustered-t", r"\binterval_method\b", r"_simultaneous\b", r"\bp_adjusted\b",
             r"\bpoints_scale\b", r"\bhas_items\b", r"\bsd_diff\b", r"\bNone\b", r"\bNaN\b",
             r"\bnan\b", r"\binf\b", r"\btango\b", r"\bwald\b", r"\bddof\b",
             r"\blm_eval_samples_jsonl\b", r"\binspect_eval\b", r"\blm_eval_results\b")


def forbidden_in(text: str) -> list[str]:
    """Each forbidden token found in ``text``, with a little context."""
    return [text[max(0, m.start() - 40):m.end() + 40] for pat in FORBIDDEN
            for m in re.finditer(pat, text)]


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def visible_text(html: str) -> str:
    """The text a reader sees in ``html`` (no scripts, styles, tags or attributes)."""
    v = _Visible()
    v.feed(html)
    return " ".join(v.parts)


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
def default_report(demo_store):
    """The report ``python -m evalcore report --out r.html`` writes on the demo store."""
    return build_report(demo_store, ReportSpec())


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
