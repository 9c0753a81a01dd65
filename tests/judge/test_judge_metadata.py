"""Judge metadata from real inspect logs with model-graded scorers: recorded in the task
protocol, marked on the leaderboard, and a comparison of runs graded by different judges
warned as not measured the same way."""

from __future__ import annotations

import json
import shutil

import pytest

from evalcore.ingest.inspect_log import judges
from tests.cli_helpers import run_main
from tests.pages.conftest import _isolated, no_exception, page  # noqa: F401
from tests.pages.test_leaderboard import board_texts

INPUT_TASK = "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json"
GUIDE = "2025-05-12T20-28-26-04-00_security-guide.json"
GUIDE_EVAL = "2025-09-23T08-09-58-04-00_security-guide_LuxZJVwvymC3S3SyoJczxB.eval"
SIMPLEQA = "data_with_llm_scoring.json"
POPULARITY = "2025-05-12T20-28-13-04-00_popularity.json"


def _log(wild_dir, name):
    return json.loads((wild_dir / "inspect" / name).read_text())


def test_model_graded_fact_with_instructions(wild_dir):
    """model_graded_fact names no grader model: inspect grades with the evaluated model; the
    custom instructions give a template hash."""
    got = judges(_log(wild_dir, INPUT_TASK))
    assert got == {"model_graded_fact": {
        "model": "openai/gpt-4o-mini", "model_source": "the evaluated model (default)",
        "template_sha256": got["model_graded_fact"]["template_sha256"]}}
    import hashlib
    instructions = _log(wild_dir, INPUT_TASK)["results"]["scores"][0]["params"]["instructions"]
    assert got["model_graded_fact"]["template_sha256"] == \
        hashlib.sha256(instructions.encode()).hexdigest()[:16]


def test_default_template_and_grader_option(wild_dir):
    assert judges(_log(wild_dir, GUIDE))["model_graded_fact"]["template_sha256"] == \
        "scorer default"
    simple = judges(_log(wild_dir, SIMPLEQA))["simpleqa_scorer"]
    assert simple["model"] == "google/gemini-2.0-flash-001"
    assert simple["model_source"] == "scorer option"
    assert judges(_log(wild_dir, POPULARITY)) == {}        # match scorer: no judge


def test_grader_role_wins_over_evaluated_model(wild_dir):
    log = _log(wild_dir, GUIDE)
    log["eval"]["model_roles"] = {"grader": {"model": "anthropic/claude-x"}}
    got = judges(log)["model_graded_fact"]
    assert (got["model"], got["model_source"]) == ("anthropic/claude-x", "grader model role")


def test_protocol_leaderboard_mark_and_compare_warning(wild_dir, tmp_path, store_location,
                                                       capsys):
    """The .eval and the .json security-guide logs, one re-graded by another judge: the
    task protocol records each judge, the leaderboard marks both cells, and compare warns."""
    regraded = _log(wild_dir, GUIDE)
    regraded["eval"]["scorers"][0]["options"] = {"model": "anthropic/claude-x"}
    regraded["eval"]["eval_id"] = "regraded"
    path = tmp_path / "regraded.json"
    path.write_text(json.dumps(regraded))
    shutil.copy(wild_dir / "inspect" / GUIDE_EVAL, tmp_path / GUIDE_EVAL)
    args = store_location.cli_args
    assert run_main(capsys, *args, "ingest", tmp_path / GUIDE_EVAL, path)[0] == 0
    store = store_location.open()
    from evalcore import analysis as an
    marks = an.judged_cells(store)
    assert sorted(marks.values()) == [
        "anthropic/claude-x (model_graded_fact, default template)",
        "openai/gpt-4o-mini (model_graded_fact, default template)"]
    code, out, _ = run_main(capsys, *args, "compare", "1", "2", "--format", "json")
    assert code == 0
    got = json.loads(out)
    assert any("judges.model_graded_fact.model" in w for w in got["warnings"])
    diff = [r for r in got["protocol_diff"] if r["setting"].startswith("judges.")]
    assert diff and {r["category"] for r in diff} == {"judge"}


def test_leaderboard_page_marks_judged_cells(wild_dir, store_location, capsys, _isolated):
    assert run_main(capsys, *store_location.cli_args, "ingest",
                    wild_dir / "inspect" / GUIDE_EVAL,
                    wild_dir / "inspect" / POPULARITY)[0] == 0
    at = page("leaderboard").run()
    no_exception(at)
    table = board_texts(at)
    texts = [str(v) for v in table.to_numpy().ravel()]
    assert sum(t.endswith("⚖") for t in texts) == 1       # security_guide only
    assert any("⚖: scored by an LLM judge" in c.value for c in at.caption)


def test_lm_eval_llm_judge_task(wild_dir, tmp_path, store_location, capsys):
    """A real lm_eval task scored by an LLM judge in its process_results (nl2foam): the
    judge is recorded for that task only, with the hash of the judging code; the model is
    set by a constant in the code, so it is reported as unknown."""
    import hashlib
    from evalcore import analysis as an
    from evalcore.ingest.lm_eval.results import task_judges
    path = wild_dir / "lm_eval" / "nl2foam" / "results_2025-12-17T20-24-58.608862.json"
    configs = json.loads(path.read_text())["configs"]
    got = task_judges(configs["nl2foam_llm_judge_original"])
    code = configs["nl2foam_llm_judge_original"]["process_results"]
    assert got == {"llm_judge": {"model": "unknown (set in process_results)",
                                 "model_source": "process_results",
                                 "template_sha256": hashlib.sha256(code.encode()).hexdigest()[:16]}}
    assert task_judges(configs["nl2foam_gen_original"]) == {}
    assert task_judges({"metric_list": [{"metric": "acc"}],
                        "process_results": "client.chat.completions.create(model='gpt-4o')"}) \
        == {"acc": {"model": "gpt-4o", "model_source": "process_results",
                    "template_sha256": hashlib.sha256(
                        b"client.chat.completions.create(model='gpt-4o')").hexdigest()[:16]}}
    assert run_main(capsys, *store_location.cli_args, "ingest", path)[0] == 0
    marks = an.judged_cells(store_location.open())
    assert [t for _, t in marks] == ["nl2foam_llm_judge_original"]


def test_helm_annotators_are_judges(fixtures_dir, tmp_path):
    """A HELM run whose run_spec names an annotator (HELM's model-as-judge scoring): its
    tasks record the annotator as the judge."""
    from evalcore.ingest import parse_paths
    from evalcore.ingest.helm._run import annotator_judges
    src = fixtures_dir / "helm" / "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
    run = tmp_path / src.name
    shutil.copytree(src, run)
    spec = json.loads((run / "run_spec.json").read_text())
    assert not parse_paths([run])[0].tasks["protocol"].map(lambda p: "judges" in p).any()
    ann = {"class_name": "helm.benchmark.annotation.demo_annotator.DemoJudgeAnnotator",
           "args": {"model_deployment": "openai/gpt-4o-2024-05-13"}}
    spec["annotators"] = [ann]
    (run / "run_spec.json").write_text(json.dumps(spec))
    got = annotator_judges(spec)["DemoJudgeAnnotator"]
    assert (got["model"], got["model_source"]) == ("openai/gpt-4o-2024-05-13",
                                                   "HELM annotator spec")
    protos = parse_paths([run])[0].tasks["protocol"].tolist()
    assert protos and all(p["judges"]["DemoJudgeAnnotator"] == got for p in protos)
    assert annotator_judges({"annotators": [{"class_name": "x.Y"}]})["Y"]["model"] == \
        "unknown (in the annotator)"


def test_lighteval_judge_metric(wild_dir, tmp_path):
    """A lighteval results file whose task names an LLM-judge metric (as lighteval's
    llm_judge metrics log it): the task protocol records the judge; the real file as it is
    records none."""
    from evalcore.ingest import parse_paths
    from evalcore.ingest.lighteval import metric_judges
    src = wild_dir / "lighteval" / "open-r1_olmo" / "results_2025-05-02T21-28-09.714048.json"
    assert all("judges" not in p for r in parse_paths([src]) for p in r.tasks["protocol"])
    obj = json.loads(src.read_text())
    key = next(iter(obj["config_tasks"]))
    entry = {"metric_name": "llm_judge_mt_bench", "higher_is_better": True,
             "category": "8", "sample_level_fn": "JudgeLLMMTBench(judge_model_name='gpt-4o', "
                                                 "template=flow_judge_prompt)"}
    obj["config_tasks"][key]["metric"].append(entry)
    path = tmp_path / src.name
    path.write_text(json.dumps(obj))
    got = metric_judges(obj["config_tasks"][key])
    assert list(got) == ["llm_judge_mt_bench"]
    assert (got["llm_judge_mt_bench"]["model"], got["llm_judge_mt_bench"]["model_source"]) == \
        ("gpt-4o", "lighteval metric")
    protos = [p for r in parse_paths([path]) for p in r.tasks["protocol"] if "judges" in p]
    assert protos and protos[0]["judges"] == got
