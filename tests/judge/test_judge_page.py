"""The LLM judges page: the same PPI++ answer as ``judge`` and ppi_py, and a bad labels file
shown as a message naming the line."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cli_helpers import run_main
from tests.judge.helpers import TASK, simulate, write_labels, write_run
from tests.pages.conftest import _isolated, no_exception, page, plain  # noqa: F401

ppi_py = pytest.importorskip("ppi_py")


@pytest.fixture
def judged(tmp_path, store_location, capsys):
    human, judge = simulate(seed=5)
    assert run_main(capsys, *store_location.cli_args, "ingest",
                    write_run(tmp_path, judge))[0] == 0
    rows = np.random.default_rng(2).permutation(human.size)[:100]
    return human, judge, rows


def test_page_shows_the_reference_interval(judged, tmp_path):
    human, judge, rows = judged
    labels = write_labels(tmp_path, human, rows).read_bytes()
    at = page("judge").run()
    no_exception(at)
    assert any("Upload a labels file" in plain(i.value) for i in at.info)
    at.file_uploader(key="jd_labels").set_value(("labels.csv", labels, "text/csv")).run()
    no_exception(at)
    rest = np.setdiff1d(np.arange(human.size), rows)
    lo, hi = ppi_py.ppi_mean_ci(human[rows], judge[rows], judge[rest], alpha=0.05)
    head = plain(at.subheader[0].value)
    assert f"CI {float(np.ravel(lo)[0]):.4f} to {float(np.ravel(hi)[0]):.4f}" in head
    table = at.dataframe[0].value
    assert list(table["Items"]) == ["400", "100", "400"]
    assert table["Answer"].iloc[2].startswith("PPI++")
    assert float(table["Width"].iloc[2]) < float(table["Width"].iloc[1])
    body = " ".join(plain(m.value) for m in at.markdown)
    assert "Cohen's kappa" in body and "Judge bias" in body
    confusion = at.dataframe[1].value
    assert list(confusion.columns) == ["human", "judge 0", "judge 1"]
    assert sum(int(v) for v in confusion[["judge 0", "judge 1"]].to_numpy().ravel()) == 100


def test_bad_labels_file_is_a_message(judged):
    at = page("judge").run()
    bad = b"item_id,human\nq0001,1\nq0001,0\n"
    at.file_uploader(key="jd_labels").set_value(("bad.csv", bad, "text/csv")).run()
    no_exception(at)
    errors = [plain(e.value) for e in at.error]
    assert any("bad.csv" in e and "line 3" in e and "labelled once" in e for e in errors)


def test_demo_labels_toggle(store_location, capsys):
    """On the demo's judged run the bundled labels can be used without an upload; the
    corrected interval is narrower than the labels alone."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    assert run_main(capsys, *store_location.cli_args, "ingest",
                    root / "data" / "demo" / "judge")[0] == 0
    at = page("judge")
    at.query_params["jd_run"] = "hf/demo-org/atlas-7b-chat"
    at.run()
    no_exception(at)
    at.toggle(key="jd_demo").set_value(True).run()
    no_exception(at)
    table = at.dataframe[0].value
    assert list(table["Items"]) == ["400", "120", "400"]
    assert float(table["Width"].iloc[2]) < float(table["Width"].iloc[1])
    assert "PPI++ with lambda" in plain(at.subheader[0].value)


def test_demo_pair_section(store_location, capsys):
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    assert run_main(capsys, *store_location.cli_args, "ingest",
                    root / "data" / "demo" / "judge")[0] == 0
    at = page("judge")
    at.query_params["jd_run"] = "hf/demo-org/atlas-7b-chat"
    at.run()
    at.toggle(key="jd_demo").set_value(True).run()
    at.toggle(key="jd_demo_b").set_value(True).run()
    no_exception(at)
    from evalcore import analysis as an
    from evalcore.store import Store
    labels = root / "data" / "demo_judge_labels"
    ref = an.judge_compare(Store(store_location.location), "hf/demo-org/atlas-7b-chat",
                           "hf/demo-org/boreal-8b-chat", "judged_qa_demo",
                           (labels / "atlas-7b-chat.csv").read_bytes(), "a",
                           (labels / "boreal-8b-chat.csv").read_bytes(), "b")
    shown = " ".join(plain(m.value) for m in at.markdown)
    assert f"CI {ref.ppi.low:+.4f} to {ref.ppi.high:+.4f}" in shown
    table = next(d.value for d in at.dataframe if "B − A" in d.value.columns)
    assert list(table["Items"]) == ["400", "120", "400"]


def test_planner_link_carries_the_pilot(judged, tmp_path):
    human, judge, rows = judged
    at = page("judge").run()
    at.file_uploader(key="jd_labels").set_value(
        ("labels.csv", write_labels(tmp_path, human, rows).read_bytes(), "text/csv")).run()
    no_exception(at)
    link = next(c.value for c in at.caption if "Planner" in c.value)
    agree = float(np.mean(human[rows] == judge[rows]))
    assert f"jl_agree={agree:.2f}" in link and "jl_items=400" in link
    assert f"jl_ph={human[rows].mean():.2f}" in link


def test_page_opens_on_a_judged_run_and_task(store_location, capsys):
    """Without URL parameters the page opens on a run and task an LLM judge graded (the
    demo's judged task), not on the first run of the store, which no judge graded."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    for folder in ("lm_eval", "judge"):     # an ungraded run comes first in the store
        assert run_main(capsys, *store_location.cli_args, "ingest",
                        root / "data" / "demo" / folder)[0] == 0
    at = page("judge").run()
    no_exception(at)
    assert at.selectbox(key="jd_task_w").value == "judged_qa_demo"
    assert at.selectbox(key="jd_run_w").value.endswith("-chat")
    assert any("Use the bundled demo" in t.label for t in at.toggle)
