"""ui.common helpers: text safety, table exports, formatting (no Streamlit run needed)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ui import common


def test_md_escape_neutralises_markdown_and_streamlit_directives():
    raw = "<script>x</script> [a](javascript:1) **b** $c$ :red[d] a_b\nnext"
    out = common.md_escape(raw)
    for token in ("[a]", "**b**", "$c$", ":red[", "a_b", "<script>", "\n"):
        assert token not in out
    # removing the escapes gives back the text (newline as a space)
    import re
    assert re.sub(r"\\(.)", r"\1", out) == raw.replace("\n", " ")


def test_plot_text_escapes_plotly_html_subset():
    assert common.plot_text("<b>m</b> & co") == "&lt;b&gt;m&lt;/b&gt; &amp; co"


def test_markdown_export_escapes_pipes_and_keeps_values():
    df = pd.DataFrame({"run": ["a|b", "c\nd"], "score": [0.5, float("nan")], "n": [10, 20]})
    md = common.to_markdown(df)
    lines = md.strip().splitlines()
    assert lines[0] == "| run | score | n |"
    assert lines[2] == r"| a\|b | 0.5 | 10 |"
    assert lines[3] == "| c d |  | 20 |"


def test_latex_export_escapes_specials():
    tex = common.to_latex(pd.DataFrame({"run": ["a_b & c%"], "score": [0.12345]}))
    assert r"a\_b \& c\%" in tex and "0.1235" in tex and r"\toprule" in tex


def test_latex_export_carries_intervals_and_names_the_method():
    """A table with score, low and high exports as 'score [low, high]',
    with a caption naming the one method; an unknown n stays empty, counts print as counts."""
    df = pd.DataFrame({"run": ["a_b", "x"], "score": [0.77, 0.5], "low": [0.7069, 0.4],
                       "high": [0.8229, 0.6], "method": ["wilson", "wilson"], "n": [200, None]})
    tex = common.to_latex(df)
    assert r"a\_b & 0.77 [0.7069, 0.8229] & wilson & 200 \\" in tex
    assert r"x & 0.5 [0.4, 0.6] & wilson &  \\" in tex
    assert r"\caption{Estimates with intervals [low, high]; method: wilson.}" in tex
    assert r"\toprule" in tex and r"\bottomrule" in tex and "low &" not in tex


def test_csv_export_round_trips():
    df = pd.DataFrame({"run": ["x", "y"], "score": [0.25, 0.75]})
    back = pd.read_csv(io.StringIO(df.to_csv(index=False)))
    pd.testing.assert_frame_equal(back, df)


def test_formatting_helpers():
    assert common.fmt_interval(0.6, 0.5, 0.7, True) == "60.0 [50.0, 70.0]"
    assert common.fmt_value(0.0123, True, 1, True) == "+1.2"
    assert common.fmt_value(123.456, False) == "123.5"
    assert common.fmt_value(float("nan"), True) == "–"
    # every kind of missing value, whichever test (float NaN fast path or pd.isna) sees it
    for missing in (None, float("nan"), np.float64("nan"), pd.NA, pd.NaT, np.nan):
        assert common.fmt_value(missing, False) == "–"
    assert common.fmt_value(np.float64(0.5), True) == "50.0"
    assert common.fmt_value(3, False) == "3"
    assert common.fmt_p(0.015625) == "0.0156" and common.fmt_p(1e-6) == "<0.0001"
    assert common.is_proportion([0, 0.5, 1]) and not common.is_proportion([0.5, 3.2])
    assert common.slug("Mistral/7B vs <x>") == "Mistral_7B_vs_x"


def test_proportion_by_equals_is_proportion_per_group():
    import numpy as np
    df = pd.DataFrame({"task": ["a", "a", "b", "b", "c", "d", "e"],
                       "score": [0.2, 0.9, 0.5, 3.0, np.nan, 1.0, -0.1]})
    want = {str(t): common.is_proportion(g["score"]) for t, g in df.groupby("task")}
    assert common.proportion_by(df, "task") == want == {
        "a": True, "b": False, "c": False, "d": True, "e": False}
    assert common.proportion_by(df.iloc[:0], "task") == {}
    missing = pd.DataFrame({"task": pd.array(["a", None, "b"], dtype="string"),
                            "score": [0.5, 7.0, 2.0]})      # a row without a key counts nowhere
    assert common.proportion_by(missing, "task") == {"a": True, "b": False}


def test_display_frame_arrow_strings_missing_as_dash():
    df = pd.DataFrame({"run": pd.array(["m1", None, "m<3>"], dtype="string[pyarrow]"),
                       "task": pd.array(["arc", "mmlu", None], dtype="string"),
                       "tags": [["demo"], None, []]})
    out = common.display_frame(df)
    assert out["run"].tolist() == ["m1", "–", "m<3>"]
    assert out["task"].tolist() == ["arc", "mmlu", "–"]
    assert out["tags"].tolist() == [["demo"], "–", []]


def test_text_table_heads_formats_and_never_shows_none():
    frame = pd.DataFrame({"se": [0.0123, np.nan], "n": [10, None], "name": ["a", None],
                          "flag": [True, False], "skipped": [1, 2]})
    out = common.text_table(frame, {"name": ("Run", "text", 1), "se": ("SE (pp)", ".2f", 100),
                                    "n": ("Items", ".0f", 1), "flag": ("Measured", "yes", 1)})
    assert list(out.columns) == ["Run", "SE (pp)", "Items", "Measured"]
    assert out.to_dict("list") == {"Run": ["a", "–"], "SE (pp)": ["1.23", "–"],
                                   "Items": ["10", "–"], "Measured": ["yes", ""]}
