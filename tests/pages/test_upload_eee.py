"""Upload & runs page and Every Eval Ever: an uploaded aggregate + samples pair is one run with
its items; the download is a zip of ``export --format eee`` for the runs chosen, with the
chosen interval method and confidence."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from evalcore.export import export_eee, export_eee_zip
from evalcore.ingest import parse_paths
from evalcore.store import Store
from tests.pages.conftest import no_exception, page, store_file

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"


def test_eee_download_is_the_cli_export(tmp_path):
    store = Store(store_file(tmp_path))
    store.ingest(parse_paths([WILD / "lm_eval" / "asdiv", WILD / "lm_eval" / "pythia-v1"]))
    names = sorted(str(n) for n in store.runs()["name"])
    chosen = [n for n in names if "Llama-3" in n]
    at = page("upload").run()
    no_exception(at)
    assert not at.download_button or all("every_eval_ever" not in b.label
                                         for b in at.download_button)
    at.multiselect(key="up_eee_runs").set_value(chosen).run()
    at.selectbox(key="up_eee_method").set_value("clopper-pearson").run()
    at.button(key="up_eee_prepare").click().run()
    no_exception(at)
    button = next(b for b in at.download_button if "every_eval_ever.zip" in b.label)
    assert "(2 files)" in button.label
    asked, data, _ = at.session_state["up_eee_zip"]
    assert asked == (tuple(chosen), "clopper-pearson", 0.95)
    expected = export_eee_zip(export_eee(Store(store_file(tmp_path)), chosen,
                                         method="clopper-pearson"))
    assert data == expected
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert sorted(n.rsplit(".", 1)[1] for n in z.namelist()) == ["json", "jsonl"]
        assert all(n.startswith("data/asdiv/meta-llama/") for n in z.namelist())
    # another choice hides the stale zip until it is prepared again
    at.selectbox(key="up_eee_method").set_value("wilson").run()
    assert all("every_eval_ever.zip" not in b.label for b in at.download_button)


def test_eee_pair_uploaded_is_one_run_with_items(tmp_path):
    from tests.pages.conftest import texts
    folder = WILD / "eee" / "converted" / "data" / "ai2_arc"
    files = [(p.name, p.read_bytes(), "application/json")
             for p in sorted(folder.rglob("*.json*"))]
    assert len(files) == 2
    at = page("upload").run()
    at.file_uploader(key="up_files").set_value(files).run()
    no_exception(at)
    assert any("Recognised 1 run(s)" in t for t in texts(at.success))
    report = at.dataframe[0].value
    assert list(report["n_items"]) == [3]
    runs = Store(store_file(tmp_path)).runs()
    assert list(runs["source_format"]) == ["eee"] and bool(runs["has_items"].iloc[0])
