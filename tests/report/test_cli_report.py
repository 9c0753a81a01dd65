"""``python -m evalcore report``: files written, numbers, --pdf with and without Chromium."""

from __future__ import annotations

import pytest

from evalcore.report.pdf import find_chromium
from tests.report.conftest import A, B
from tests.cli_helpers import run_main as run




def test_report_command_writes_the_html(capsys, demo_store, tmp_path):
    out = tmp_path / "sub" / "report.html"
    code, stdout, err = run(capsys, "--store", demo_store.path, "report", A, B,
                            "--task", "arc_easy_demo", "--compare", A, B, "--out", out,
                            "--title", "Monday <meeting>")
    assert code == 0, err
    assert f"report written: {out}" in stdout
    text = out.read_text(encoding="utf-8")
    assert "<title>Monday &lt;meeting&gt;</title>" in text
    assert '<span class="name short">arc_easy_demo</span>' in text
    code, stdout, err = run(capsys, "--store", demo_store.path, "report", "--compare", A, B,
                            "--sections", "comparisons", "planner", "--gap", "0.04",
                            "--out", out)
    assert code == 0, err
    assert "To detect a 4-point gap" in out.read_text(encoding="utf-8")
    assert ">boolq_demo</span>" not in text
    assert text.count('id="comparison-1"') == 1


def test_report_command_errors(capsys, demo_store, tmp_path):
    code, _, err = run(capsys, "--store", demo_store.path, "report", "--out", tmp_path / "r.txt")
    assert code == 3 and "ending in .html" in err
    code, _, err = run(capsys, "--store", demo_store.path, "report", "no-such-run",
                       "--out", tmp_path / "r.html")
    assert code == 3 and "no-such-run" in err
    code, _, err = run(capsys, "report", "--out", tmp_path / "r.html", "--sections", "slides")
    assert code == 2
    code, _, err = run(capsys, "report", "--out", tmp_path / "r.html", "--gap", "0")
    assert code == 2 and "--gap" in err


def test_pdf_without_chromium_says_so(capsys, demo_store, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALBARS_CHROMIUM", str(tmp_path / "no-chromium"))
    out = tmp_path / "r.html"
    code, stdout, err = run(capsys, "--store", demo_store.path, "report", "--sections",
                            "methods", "--out", out, "--pdf")
    assert code == 3
    assert "PDF needs headless Chromium" in err and "none was found" in err
    assert out.exists() and not out.with_suffix(".pdf").exists()


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium to print with")
def test_pdf_with_chromium(capsys, demo_store, tmp_path):
    out = tmp_path / "r.html"
    code, stdout, err = run(capsys, "--store", demo_store.path, "report", "--sections",
                            "methods", "provenance", "--out", out, "--pdf")
    assert code == 0, err
    pdf = out.with_suffix(".pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-" and f"PDF written: {pdf}" in stdout
