"""Compare page: the real lm_eval fixtures (Mistral-7B vs DialoGPT-medium on arc_easy), the
2x2 drill-down, integrity warnings and the empty/one-run/no-shared-task messages; the answer
first (one-line warning, verdict, one chart), every setting box in step with the result
through a pair without a shared task, presentation mode and plain words."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy import stats as sps

from evalcore import analysis, words
from evalcore.stats import paired_proportion_interval
from evalcore.store import Store
from tests.pages.builders import parsed_run
from tests.pages.conftest import (DIALOGPT, MISTRAL, charts, fixture_item_scores, metric,
                                  no_exception, page, plain, store_file, texts)
from ui import common


def names(store: Store) -> tuple[str, str]:
    runs = store.runs()
    mistral = next(n for n in runs["name"] if "Mistral" in n)
    dialo = next(n for n in runs["name"] if "DialoGPT" in n)
    return dialo, mistral


def open_pair(store: Store, **params):
    a, b = names(store)                 # A = DialoGPT, B = Mistral: b = only Mistral right
    at = page("compare")
    at.query_params["run_a"] = a
    at.query_params["run_b"] = b
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def test_mistral_vs_dialogpt_numbers(fixture_store, fixtures_dir):
    at = open_pair(fixture_store, metric="acc")
    no_exception(at)
    a = fixture_item_scores(fixtures_dir / DIALOGPT)
    b = fixture_item_scores(fixtures_dir / MISTRAL)
    ids = sorted(a)
    xa = np.array([a[i] for i in ids])
    xb = np.array([b[i] for i in ids])
    d = xb - xa
    se = d.std(ddof=1) / np.sqrt(d.size)
    z = sps.norm.ppf(0.975)
    # exact McNemar from scipy: b = 7, c = 0 -> two-sided binomial p = 2 * 0.5^7
    bb, cc = int(np.sum((xb == 1) & (xa == 0))), int(np.sum((xb == 0) & (xa == 1)))
    assert (bb, cc) == (7, 0)
    p = sps.binomtest(cc, bb + cc, 0.5).pvalue
    assert p == pytest.approx(0.015625)
    # the verdict's p: the larger of Tango's score test (z = 7/sqrt(7), p 0.0082) and the
    # exact test, i.e. the exact p here; the exact p itself in the caption beside it
    score = 2 * sps.norm.sf(7 / np.sqrt(7))
    assert score == pytest.approx(0.00815, abs=1e-5)
    assert metric(at, "p (the verdict's test)") == f"{max(p, score):.4f}" == "0.0156"
    assert any("b = 7, c = 0; exact McNemar p 0.0156" in t for t in texts(at.caption))
    assert metric(at, "B − A (95% CI)") == f"{100 * d.mean():+.1f} pp" == "+46.7 pp"
    # n = 15 with 7 discordant items: Tango's score interval, named with its reason
    tango = paired_proportion_interval(5, 7, 0, 3, method="tango")
    assert any(f"[{100 * tango.low:+.1f}, {100 * tango.high:+.1f}] pp" in t
               for t in texts(at.caption))
    wald = (100 * (d.mean() - z * se), 100 * (d.mean() + z * se))
    assert not any(f"[{wald[0]:+.1f}, {wald[1]:+.1f}] pp" in t for t in texts(at.caption))
    assert any("Tango score interval: 15 items, 7 discordant" in t for t in texts(at.caption))
    assert metric(at, "SE if items were independent") == f"{100 * se:.2f} pp"
    assert any("SE allowing for clusters: – (no cluster key applied)" in t
               for t in texts(at.caption))
    table = next(df.value for df in at.dataframe if "Interval method" in df.value.columns)
    assert table.loc[0, "Interval method"] == "Tango score interval: 15 items, 7 discordant"
    assert table.loc[0, "SE if items were independent (pp)"] == f"{100 * se:.2f}"
    assert table.loc[0, "SE allowing for clusters (pp)"] == "–"
    se_unpaired = np.sqrt(xa.var(ddof=1) / xa.size + xb.var(ddof=1) / xb.size)
    assert metric(at, "SE ignoring the pairing") == f"{100 * se_unpaired:.2f} pp"
    assert metric(at, "Correlation of A and B") == f"{np.corrcoef(xa, xb)[0, 1]:.3f}"
    # the pairing is clean: 15 shared items, same doc and prompt hashes in both files
    pairing = next(df.value for df in at.dataframe if "Shared items" in df.value.columns)
    assert pairing.loc[0, "Shared items"] == 15
    assert pairing.loc[0, "Prompt/item hash mismatches"] == 0
    assert not at.warning
    # the verdict says which run is better, in words, coloured as B's win
    assert any(v.startswith("Different") and "Mistral" in v for v in texts(at.info))


def test_2x2_chart_and_discordant_items(fixture_store, fixtures_dir):
    at = open_pair(fixture_store, metric="acc")
    table = next(f for f in charts(at) if f["data"][0]["type"] == "heatmap")
    cells = [c for row in table["data"][0]["text"] for c in row]
    assert "b: only B right<br><b>7</b> (46.7%)" in cells
    assert "c: only A right<br><b>0</b> (0.0%)" in cells
    # both right: A (DialoGPT) is right on 5 items, all of which Mistral also got
    assert "both right<br><b>5</b> (33.3%)" in cells
    items = next(d.value for d in at.dataframe if "Response A" in d.value.columns)
    b = fixture_item_scores(fixtures_dir / MISTRAL)
    a = fixture_item_scores(fixtures_dir / DIALOGPT)
    expected = sorted(str(i) for i in a if b[i] == 1 and a[i] == 0)
    assert sorted(items["Item"].astype(str)) == expected
    assert items["Prompt"].str.len().min() > 10
    # choose one item: its prompt is shown as plain text
    first = items["Item"].astype(str).iloc[0]
    at.selectbox(key="cmp_item").set_value(first).run()
    prompt = items[items["Item"].astype(str) == first]["Prompt"].iloc[0]
    assert any(t.value == prompt for t in at.text)
    # the other discordant cell is empty
    at.segmented_control(key="cmp_cell").set_value("c").run()
    no_exception(at)
    assert any("No items in this cell" in t for t in texts(at.info))
    assert at.query_params["cell"] in ("c", ["c"])


def test_url_round_trip_of_selection(fixture_store):
    a, b = names(fixture_store)
    at = page("compare").run()
    at.selectbox(key="cmp_a").set_value(b).run()
    at.selectbox(key="cmp_metric").set_value("acc_norm").run()
    params = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert params["run_a"] == b and params["metric"] == "acc_norm"
    again = page("compare")
    for k, v in params.items():
        again.query_params[k] = v
    again.run()
    assert again.selectbox(key="cmp_a").value == b
    assert again.selectbox(key="cmp_metric").value == "acc_norm"
    assert metric(again, "B − A (95% CI)") == metric(at, "B − A (95% CI)")


def test_one_run_only_message(tmp_path):
    Store(store_file(tmp_path)).ingest([parsed_run("solo", {("t", "acc"): [1, 0, 1, 1]})])
    at = page("compare").run()
    no_exception(at)
    assert any("needs at least 2" in t for t in texts(at.info))


def test_empty_store_message():
    at = page("compare").run()
    no_exception(at)
    assert any("The store is empty" in t for t in texts(at.info))


def test_no_shared_task_message(tmp_path):
    Store(store_file(tmp_path)).ingest([parsed_run("a", {("t1", "acc"): [1, 0, 1]}),
                                        parsed_run("b", {("t2", "acc"): [0, 0, 1]})])
    at = page("compare").run()
    no_exception(at)
    assert any("no task in common" in t for t in texts(at.info))


def test_prompt_mismatch_and_missing_items_warn_before_numbers(tmp_path):
    a = parsed_run("a", {("t", "acc"): np.r_[np.ones(30), np.zeros(30)]})
    b = parsed_run("b", {("t", "acc"): np.r_[np.ones(40), np.zeros(25)]})
    b.scores.loc[b.scores["item_id"] == "3", "prompt_hash"] = "other"
    Store(store_file(tmp_path)).ingest([a, b])
    at = page("compare").run()
    no_exception(at)
    # one line before the verdict names the problems and links to the details below it
    line = texts(at.warning)[0]
    assert line.startswith("Prompts differ on 1 shared item; 5 items in one run only")
    assert line.endswith("[details below](#pairing-and-protocol)")
    order = kinds(at)
    assert order.index("Warning") < order.index("Info") < order.index("PlotlyChart")
    # the details: the pairing table and the full warnings, after the answer
    pairing = next(d.value for d in at.dataframe if "Shared items" in d.value.columns).iloc[0]
    assert pairing["Shared items"] == 60 and pairing["Only in B"] == 5
    assert pairing["Prompt/item hash mismatches"] == 1
    assert any("not clean" in w for w in texts(at.warning))
    assert any("1 shared item(s) have a different prompt/item hash" in w
               for w in texts(at.warning))
    details = [s.value for s in at.subheader].index("Pairing and protocol")
    assert at.subheader[details].proto.anchor == "pairing-and-protocol"


def test_same_task_but_no_shared_items_is_a_message(tmp_path):
    a = parsed_run("a", {("t", "acc"): [1, 0, 1, 1]})
    b = parsed_run("b", {("t", "acc"): [0, 1, 1, 0]})
    b.scores["item_id"] = "other-" + b.scores["item_id"]
    b.texts["item_id"] = "other-" + b.texts["item_id"]
    Store(store_file(tmp_path)).ingest([a, b])
    at = page("compare").run()
    no_exception(at)
    assert not at.metric
    assert any("share no items" in t for t in texts(at.info))


def test_runs_without_item_level_data_compare_unpaired_with_a_message(tmp_path, fixtures_dir):
    from evalcore.ingest import parse_paths

    one = fixtures_dir / "lm_eval/results_v0.4.x_llama-3.2-1b_mmlu-arc-hellaswag-glue.json"
    three = fixtures_dir / "lm_eval/results_v0.4.x_llama-3.2-3b_mmlu-arc-hellaswag-glue.json"
    Store(store_file(tmp_path)).ingest(parse_paths([one, three]))
    at = page("compare")
    at.query_params["task"] = "arc_easy"
    at.query_params["metric"] = "acc"
    at.run()
    no_exception(at)
    assert any("no item-level data" in w.lower() for w in texts(at.warning))
    assert any("item-level 0/1 scores" in t for t in texts(at.info))
    ra = json.loads(one.read_text())["results"]["arc_easy"]
    rb = json.loads(three.read_text())["results"]["arc_easy"]
    se = np.hypot(ra["acc_stderr,none"], rb["acc_stderr,none"])
    assert metric(at, "SE behind the interval (unpaired)") == f"{100 * se:.2f} pp"
    assert any("unpaired for 1 task (no item-level data)" in w.lower()
               for w in texts(at.warning))
    assert metric(at, "B − A (95% CI)") == f"{100 * (rb['acc,none'] - ra['acc,none']):+.1f} pp"


# ---- the answer first, one chart, and every box in step with the result -----------------
BOREAL, BOREAL_CHAT = "demo-org/boreal-8b", "demo-org/boreal-8b @ 2026-03-03 14:40"
ATLAS, NO_SHARED = "demo-org/atlas-7b", "hf/demo-org/atlas-13b"   # trivia_demo only


def shown(at, key: str) -> str:
    """The text a selectbox shows (its value through its format_func)."""
    box = at.selectbox(key=key)
    return str(box.format_func(box.value))


def kinds(at) -> list[str]:
    """The page's elements in order, by kind ("Warning", "PlotlyChart", ...)."""
    return ["PlotlyChart" if getattr(e, "type", "") == "plotly_chart" else type(e).__name__
            for e in at.main]


def settings_line(at) -> str:
    """The line under the verdict naming what the result was computed with."""
    return next(plain(m.value)[len(":small["):-1] for m in at.markdown
                if m.value.startswith(":small[") and "intervals ·" in m.value)


def answer_chart(at) -> dict:
    figs = [f for f in charts(at) if f["data"][0]["type"] == "scatter"]
    assert len(figs) == 1, "the difference chart is drawn once"
    return figs[0]


def check_in_step(at, store: Store) -> None:
    """Every setting box shows the input of the result on the page: the result recomputed
    from the boxes' values is the one the table, the chart and the settings line show."""
    no_exception(at)
    run_a, run_b = at.selectbox(key="cmp_a").value, at.selectbox(key="cmp_b").value
    conf, adjust = float(at.selectbox(key="cmp_conf").value), at.selectbox(key="cmp_adjust").value
    task, chosen = at.selectbox(key="cmp_task").value, at.selectbox(key="cmp_metric").value
    want = analysis.compare(store, run_a, run_b, task=None if task == "*" else task,
                            metric=None if chosen == "(default)" else chosen,
                            confidence=conf, adjust=adjust)
    pt = want.per_task
    assert shown(at, "cmp_conf") == f"{want.confidence:.0%}"
    assert metric(at, f"B − A ({want.confidence:.0%} CI)")
    line = settings_line(at)
    assert line.startswith(f"{want.confidence:.0%} intervals · ")
    name = words.label("adjust", adjust)
    assert shown(at, "cmp_adjust") == name
    if len(pt) > 1:
        assert not at.selectbox(key="cmp_adjust").disabled
        assert f"{name} adjustment over {len(pt)} tasks" in line
        assert set(pt["adjustment"]) == {adjust}
    else:          # nothing to adjust: the box is out of use and the line says so
        assert at.selectbox(key="cmp_adjust").disabled
        assert "no adjustment (one task)" in line and set(pt["adjustment"]) == {"none"}
    table = next(d.value for d in at.dataframe if "Interval method" in d.value.columns)
    assert list(table["Task"]) == list(pt["task"].astype(str))
    assert list(table["Metric"]) == list(pt["metric"].astype(str))
    assert list(table["p adjusted"]) == [common.fmt_p(p) for p in pt["p_adjusted"]]
    assert shown(at, "cmp_task") == ("All shared tasks" if task == "*" else task)
    if task != "*":
        assert list(table["Task"]) == [task]
    if chosen != "(default)":
        assert shown(at, "cmp_metric") == chosen and set(table["Metric"]) == {chosen}
    else:
        assert shown(at, "cmp_metric") == "primary metric"
    fig = answer_chart(at)
    k = 100.0 if (pt["points_scale"] == 100.0).all() else 1.0
    xs = list(pt["diff"] * k) + ([want.overall["diff"] * k] if want.overall and len(pt) > 1
                                 else [])
    assert fig["data"][0]["x"] == pytest.approx(xs)
    assert f"{want.confidence:.0%} interval" in fig["layout"]["xaxis"]["title"]["text"]
    verdict = want.verdict[:1].upper() + want.verdict[1:]
    assert verdict in texts(at.info)


def test_boxes_stay_in_step_through_a_pair_without_a_shared_task(demo_store):
    """The sequence of the issue: 90% chosen, then a run pair with no shared task, then a
    pair with shared tasks again: the Confidence box and the computation agree (and so do
    the adjustment, the task and the metric)."""
    at = page("compare")
    at.query_params["run_a"], at.query_params["run_b"] = ATLAS, BOREAL
    at.run()
    check_in_step(at, demo_store)
    at.selectbox(key="cmp_conf").set_value("0.90").run()
    at.selectbox(key="cmp_adjust").set_value("bh").run()
    check_in_step(at, demo_store)
    assert settings_line(at).startswith("90% intervals · Benjamini-Hochberg adjustment")
    # B with no task in common: every box is still drawn, task and metric disabled
    at.selectbox(key="cmp_b").set_value(NO_SHARED).run()
    no_exception(at)
    assert any("no task in common" in t for t in texts(at.info))
    assert shown(at, "cmp_conf") == "90%" and at.selectbox(key="cmp_task").disabled
    assert at.selectbox(key="cmp_metric").disabled
    assert at.query_params["conf"] in ("0.90", ["0.90"])
    # back to a pair with shared tasks: the boxes and the result agree
    at.selectbox(key="cmp_b").set_value(BOREAL).run()
    check_in_step(at, demo_store)
    assert shown(at, "cmp_conf") == "90%" and shown(at, "cmp_adjust") == "Benjamini-Hochberg"
    # the same through run A, with a task and a metric chosen
    at.selectbox(key="cmp_task").set_value("gsm8k_demo").run()
    check_in_step(at, demo_store)
    at.selectbox(key="cmp_metric").set_value("exact_match,flexible-extract").run()
    check_in_step(at, demo_store)
    at.selectbox(key="cmp_a").set_value(NO_SHARED).run()
    assert any("no task in common" in t for t in texts(at.info))
    at.selectbox(key="cmp_a").set_value(ATLAS).run()
    check_in_step(at, demo_store)
    assert shown(at, "cmp_task") == "gsm8k_demo"
    assert shown(at, "cmp_metric") == "exact_match,flexible-extract"
    assert shown(at, "cmp_adjust") == "Benjamini-Hochberg"
    assert at.selectbox(key="cmp_adjust").disabled
    # and from the URL alone (a shared link) the same view
    again = page("compare")
    for key, value in at.query_params.items():
        again.query_params[key] = value[0] if isinstance(value, list) else value
    again.run()
    check_in_step(again, demo_store)
    assert metric(again, "B − A (90% CI)") == metric(at, "B − A (90% CI)")


def test_answer_first_then_the_evidence(demo_store):
    at = page("compare")
    at.query_params["run_a"], at.query_params["run_b"] = BOREAL, BOREAL_CHAT
    at.run()
    no_exception(at)
    order = kinds(at)
    first_chart = order.index("PlotlyChart")
    # controls, the one-line warning, the verdict and the chart come before any table
    assert order.index("Selectbox") < order.index("Warning") < order.index("Info") \
        < first_chart < order.index("Subheader") < order.index("Dataframe")
    line = texts(at.warning)[0]
    assert line == ("Protocols differ in 6 settings (few-shot, chat template); prompts differ "
                    "on 320 shared items: [details below](#pairing-and-protocol)")
    heads = [plain(s.value) for s in at.subheader]
    assert heads == ["Numbers behind the verdict", "Per task", "Pairing and protocol",
                     "Disagreements"]
    # one difference chart: labels carry each row's numbers and verdict in words
    fig = answer_chart(at)
    labels = fig["data"][0]["y"]
    assert "B better" in labels[1] and "+25.8 [16.1, 35.6] pp" in labels[1]
    assert "underpowered" in labels[0] and "Macro average (2 tasks)" in labels[2]
    assert "title" not in fig["layout"] or not fig["layout"]["title"].get("text")
    # the downloads hold the one-slide answer: the question and the verdict as its title
    from ui import export
    registered = dict(at.session_state[export.REGISTRY_KEY])
    slide = export.spec_json(registered[f"is_B_better_{BOREAL}_vs_{BOREAL_CHAT}"])
    assert f"Is {BOREAL_CHAT} better than {BOREAL}?" in slide["layout"]["title"]["text"]
    footer = slide["layout"]["annotations"][0]["text"]
    assert "Interval: Tango score interval; 95% CI, unadjusted; colour and verdict " \
           "follow the Holm-adjusted p" in footer
    # the notes under the page's chart say the same in words
    notes = next(plain(m.value) for m in at.markdown if "n shared items:" in plain(m.value))
    assert "arc_easy_demo 200, gsm8k_demo 120" in notes and "Tango score interval" in notes


def test_presentation_mode_shows_the_answer_only(demo_store):
    at = page("compare")
    at.session_state["present_mode"] = True
    at.query_params["run_a"], at.query_params["run_b"] = BOREAL, BOREAL_CHAT
    at.run()
    no_exception(at)
    assert [plain(t.value) for t in at.title] == [f"Is {BOREAL_CHAT} better than {BOREAL}?"]
    assert not at.dataframe and not at.metric and not at.subheader
    assert len(at.get("plotly_chart")) == 1
    config = json.loads(at.get("plotly_chart")[0].proto.config)
    assert config["displayModeBar"] is False
    assert texts(at.warning)[0].endswith("prompts differ on 320 shared items")   # no link
    assert any("different: " in t for t in texts(at.info))
    hexes = [t for t in texts(at.markdown) + texts(at.warning) + texts(at.info)
             if re.search(r"\b[0-9a-f]{40}\b", t)]
    assert hexes == []


def test_confidence_sets_the_minimum_detectable_effect_alpha(demo_store):
    at = page("compare")
    at.query_params.update(run_a=ATLAS, run_b=BOREAL, task="arc_easy_demo", conf="0.90")
    at.run()
    no_exception(at)
    caption = next(t for t in texts(at.caption) if t.startswith("Intervals: 90%"))
    assert "Minimum detectable effect: at alpha 0.1 and power 0.8" in caption
    assert "p < 0.1" in caption
    want = analysis.compare(demo_store, ATLAS, BOREAL, task="arc_easy_demo", confidence=0.9)
    table = next(d.value for d in at.dataframe if "Interval method" in d.value.columns)
    assert table.loc[0, "Minimum detectable effect (pp)"] == f"{100 * want.per_task['mde'].iloc[0]:.2f}"


def test_no_internal_names_or_missing_markers_on_the_page(demo_store):
    at = page("compare")
    at.query_params["run_a"], at.query_params["run_b"] = ATLAS, BOREAL
    at.run()
    no_exception(at)
    internal = re.compile(r"\b(se_iid|se_clustered|se_unpaired|p_adjusted|method_reason|"
                          r"clustered-t|item_id|value_a|value_b|None|nan|NaN)\b")
    for frame in at.dataframe:
        assert not any(internal.search(str(c)) for c in frame.value.columns), \
            list(frame.value.columns)
        cells = frame.value.astype(str).to_numpy().ravel()
        assert not [c for c in cells if c in ("None", "nan", "NaN", "<NA>")]
    for element in list(at.metric):
        assert not internal.search(plain(element.label)) and element.value not in ("None", "nan")
    text = " ".join(texts(at.caption) + texts(at.markdown) + texts(at.info) + texts(at.warning))
    assert not internal.search(text), internal.search(text)
