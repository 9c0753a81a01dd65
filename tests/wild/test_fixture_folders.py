"""A missing fixture folder skips on a developer machine and fails when ``$CI`` is set."""

from __future__ import annotations

import pytest

from tests.conftest import WILD, in_ci, require_folder


@pytest.mark.parametrize("value,expected", [("true", True), ("1", True), ("yes", True),
                                            ("", False), ("0", False), ("false", False)])
def test_in_ci_reads_the_ci_variable(monkeypatch, value, expected):
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_missing_folder_fails_under_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must not skip"):
        require_folder(tmp_path / "missing", "shared fixtures")


def test_missing_folder_skips_with_the_reason_elsewhere(monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="shared fixtures not found at"):
        require_folder(tmp_path / "missing", "shared fixtures")


def test_present_folder_is_returned(tmp_path):
    assert require_folder(tmp_path, "x") == tmp_path


def test_wild_corpus_is_in_the_repository():
    """The corpus ships with the code: at least 30 files from 8 repositories, each folder with
    its PROVENANCE.md naming every file."""
    files = [p for p in WILD.rglob("*") if p.is_file() and p.name != "PROVENANCE.md"]
    assert len(files) >= 30
    repos = set()
    for folder in ("lm_eval", "inspect", "lighteval"):
        text = (WILD / folder / "PROVENANCE.md").read_text(encoding="utf-8")
        for p in (WILD / folder).rglob("*"):
            if p.is_file() and p.name != "PROVENANCE.md":
                assert f"`{p.relative_to(WILD / folder).as_posix()}`" in text, p
        repos |= {line.split("|")[2].strip() for line in text.splitlines()
                  if line.startswith("| `")}
    assert len(repos) >= 8, repos
    assert sum(p.stat().st_size for p in files) < 15 * 2**20

