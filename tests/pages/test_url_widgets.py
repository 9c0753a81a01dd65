"""The URL-bound widget helpers of ui/common.py: what the browser draws equals what the page
computes with, also for a widget that was skipped for a run and comes back.

The browser draws a widget that (re)appears from the default in its element (``proto.default``),
not from a value seeded into session state (checked in Chromium by
tests/browser/test_planner_flow.py); so every widget's default must equal its value, which
equals the URL's value."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.pages.conftest import TIMEOUT, no_exception


def _script() -> None:
    import streamlit as st

    from ui import common

    if st.checkbox("show", value=True, key="show"):
        common.url_numeric("number", "Gap", "gap", key="w_gap", default=2.0, min_value=0.1,
                           max_value=50.0, step=0.1)
        common.url_numeric("slider", "Power", "power", key="w_power", default=0.8,
                           min_value=0.5, max_value=0.99, step=0.01)
        common.url_numeric("number", "K", "k", key="w_k", default=1, min_value=1,
                           max_value=100, step=1, cast=int)
        common.url_choice("Alpha", ["0.01", "0.05", "0.1"], "alpha", key="w_alpha",
                          default="0.05")
        common.url_choice("Mode", ["typed", "store"], "src", key="w_src", widget="radio")
        common.url_choice("n", ["100", "500", "1000"], "n", key="w_n", default="500",
                          widget="select_slider")
        common.url_choice("Kind", ["a", "b", "c"], "kind", key="w_kind", widget="segmented")
        common.url_multi("Tasks", ["t1", "t2", "t3"], "tasks", key="w_tasks")
        common.confidence_choice("w_conf")


def shown(widget):
    """The value the browser draws for ``widget`` when it mounts: its element's default."""
    proto = widget.proto
    kind = type(widget).__name__
    if kind in ("NumberInput",):
        return proto.default
    if kind == "Slider":
        return proto.default[0]
    if kind in ("Selectbox", "Radio"):
        return proto.options[proto.default]
    if kind == "SelectSlider":
        return proto.options[int(proto.default[0])]
    if kind == "Multiselect":
        return [proto.options[i] for i in proto.default]
    if kind == "ButtonGroup":
        return [o.content for o in proto.options][int(proto.default[0])]
    raise AssertionError(kind)


def widgets(at: AppTest) -> dict:
    out = {}
    for group in (at.number_input, at.slider, at.selectbox, at.radio, at.select_slider,
                  at.multiselect, at.button_group):
        for w in group:
            out[w.key] = w
    return out


def label_of(widget, value):
    """``value`` as the browser labels it (choice widgets send formatted options)."""
    fmt = getattr(widget, "format_func", None)
    if fmt is None or type(widget).__name__ in ("NumberInput", "Slider"):
        return value
    if isinstance(value, list):
        return [str(fmt(v)) for v in value]
    return str(fmt(value))


def check_shown_equals_value(at: AppTest) -> dict:
    """Assert that every widget's drawn default equals its value; return key -> value."""
    values = {}
    for key, w in widgets(at).items():
        value = w.value
        value = list(value) if isinstance(value, (list, tuple)) else value
        if type(w).__name__ == "ButtonGroup":
            value = value[0] if isinstance(value, list) else value
        assert shown(w) == label_of(w, value), (key, shown(w), value)
        values[key] = value
    return values


def url(at: AppTest, param: str) -> str:
    value = at.query_params[param]
    return value[0] if isinstance(value, list) else value


def test_widgets_show_the_url_values_and_keep_them_after_a_skipped_run():
    at = AppTest.from_function(_script, default_timeout=TIMEOUT)
    at.query_params.update({"gap": "7.5", "power": "0.9", "k": "3", "alpha": "0.01",
                            "src": "store", "n": "1000", "kind": "c", "tasks": ["t2", "t3"],
                            "conf": "0.99"})
    at.run()
    no_exception(at)
    first = check_shown_equals_value(at)
    assert first == {"w_gap": 7.5, "w_power": 0.9, "w_k": 3, "w_alpha": "0.01",
                     "w_src": "store", "w_n": "1000", "w_kind": "c", "w_tasks": ["t2", "t3"],
                     "w_conf": "0.99"}
    at.checkbox(key="show").uncheck().run()          # a run without the widgets
    assert not at.number_input and not at.selectbox
    at.checkbox(key="show").check().run()            # they come back with the same values
    no_exception(at)
    assert check_shown_equals_value(at) == first
    assert url(at, "gap") == "7.5" and url(at, "alpha") == "0.01"


def test_a_changed_value_is_the_default_of_the_next_run():
    at = AppTest.from_function(_script, default_timeout=TIMEOUT).run()
    at.number_input(key="w_gap").increment().run()
    at.selectbox(key="w_alpha").set_value("0.1").run()
    at.slider(key="w_power").set_value(0.95).run()
    values = check_shown_equals_value(at)
    assert values["w_gap"] == 2.1 and values["w_alpha"] == "0.1" and values["w_power"] == 0.95
    assert url(at, "gap") == "2.1" and url(at, "alpha") == "0.1"
    at.checkbox(key="show").uncheck().run()
    at.checkbox(key="show").check().run()
    assert check_shown_equals_value(at) == values


def test_url_values_outside_the_options_fall_back_to_the_default():
    at = AppTest.from_function(_script, default_timeout=TIMEOUT)
    at.query_params.update({"gap": "500", "alpha": "0.2", "n": "7", "tasks": ["zzz"],
                            "power": "nan"})
    at.run()
    values = check_shown_equals_value(at)
    assert values["w_gap"] == 50.0          # clipped to the maximum
    assert values["w_alpha"] == "0.05" and values["w_n"] == "500"
    assert values["w_tasks"] == ["t1", "t2", "t3"] and values["w_power"] == 0.8
