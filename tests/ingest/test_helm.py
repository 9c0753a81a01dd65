"""HELM run directories and zips of one (numbers pinned from PROVENANCE.md)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from evalcore.ingest import helm, parse_paths, parse_uploads

RUN = "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
TASK = "mmlu:subject=philosophy,method=multiple_choice_joint"


@pytest.fixture(scope="module")
def run_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "helm" / RUN


def check_run(run) -> None:
    assert run.name == "openai/gpt2" and run.source_format == "helm"
    em = run.scores[run.scores.metric == "exact_match"]
    assert len(em) == 10                                   # 9 test + 1 valid instances
    test = em[em.task == TASK]
    assert len(test) == 9
    assert test.loc[test.score == 1.0, "item_id"].tolist() == ["id222"]   # only id222 right
    valid = em[em.task == TASK + "@valid"]
    assert valid.item_id.tolist() == ["id11"] and valid.score.tolist() == [0.0]
    summ = run.summaries.set_index(["task", "metric"])
    assert summ.loc[(TASK, "exact_match"), "value"] == pytest.approx(0.1111111111111111)
    assert summ.loc[(TASK, "exact_match"), "n"] == 9       # not stats.json's count (1)
    assert run.tasks.set_index("task").loc[TASK, "n_choices"] == 4
    t = run.texts.set_index("item_id").loc["id147"]
    assert t.target == "C. internalmeaning" and t.response == "D. meaning in an afterlife"
    assert run.protocol["adapter_spec"]["max_train_instances"] == 5
    assert {f.format for f in run.files} >= {helm.PER_INSTANCE, helm.RUN_SPEC, helm.STATS}


def test_helm_run_directory(run_dir: Path) -> None:
    runs = parse_paths([run_dir])
    assert len(runs) == 1
    check_run(runs[0])


def test_helm_zip_of_run_directory(run_dir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "helm_run.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(run_dir.iterdir()):
            z.write(f, f"{RUN}/{f.name}")
    runs = parse_paths([archive])
    assert len(runs) == 1
    check_run(runs[0])
    assert all("helm_run.zip!" in f.name for f in runs[0].files)


def test_helm_uploaded_files(run_dir: Path) -> None:
    files = [(f.name, f.read_bytes()) for f in sorted(run_dir.iterdir())]
    runs = parse_uploads(files)
    assert len(runs) == 1
    check_run(runs[0])


def test_item_ids_carry_trial_and_perturbation() -> None:
    assert helm._item_id({"instance_id": "id7", "train_trial_index": 0}) == "id7"
    assert helm._item_id({"instance_id": "id7", "train_trial_index": 2,
                          "perturbation": {"name": "typos"}}) == "id7#trial2#typos"


def test_whole_fixture_tree(fixtures_dir: Path) -> None:
    runs = parse_paths([fixtures_dir])
    by_format: dict[str, int] = {}
    for r in runs:
        by_format[r.source_format] = by_format.get(r.source_format, 0) + 1
    # lm_eval: 8 files, the qwen samples join their results file -> 7 runs
    assert by_format == {"lm_eval": 7, "inspect": 8, "helm": 1}
    assert any("PROVENANCE.md" in w for r in runs for w in r.warnings)
