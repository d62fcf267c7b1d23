"""The classroom frame: a teacher's link that hides controls, lesson mode, projector mode, the share and
teacher links, language switching, and chart exports."""

import json
import urllib.parse

import altair as alt
import pandas as pd
import pytest
from altair.utils.schemapi import validate_jsonschema
from app_helpers import assert_clean, metric, open_link
from streamlit.testing.v1 import AppTest

from explorer.charts.projector import PROJECTOR_CHART, PROJECTOR_FONT
from explorer.ui.draw import json_data, svg, wire
from explorer.ui.page import SHARE_OPEN, TEACHER_OPEN
from explorer.ui.registry import LESSON, PAGES

PAGE = "views/sqrt_dk.py"


def specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def link_params(code_value: str) -> dict:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(code_value).query))


def test_a_teachers_link_hides_controls_but_keeps_their_values():
    at = open_link(PAGE, {"d_k": "256", "hide": "d_k,sidebar"})
    assert_clean(at)
    assert not [w for w in at.select_slider if w.key == "d_k"]  # not drawn
    assert metric(at, "theory: d_k") == "256"  # yet its value from the link rules the page
    assert at.query_params["hide"] == "d_k,sidebar" and at.query_params["d_k"] == "256"
    assert not at.sidebar.get("expander")  # no share/teacher panels for the class
    at.switch_page("views/saturation.py").run()  # hiding holds across the lesson's pages
    assert at.query_params["hide"] == "d_k,sidebar"


def test_a_hostile_hide_value_hides_nothing_and_says_so():
    at = open_link(PAGE, {"hide": "d_k,<img src=x>"})
    assert_clean(at)
    assert [w for w in at.select_slider if w.key == "d_k"]
    assert any("hide" in t.value for t in at.toast)
    assert "hide" not in at.query_params


def test_lesson_mode_walks_the_pages_in_teaching_order():
    at = open_link(PAGE, {"lesson": "true"})
    assert_clean(at)
    i = [p.path for p in LESSON].index(PAGE)
    bars = [m.value for m in at.markdown if "**Lesson**" in m.value]
    assert bars and f"stop {i + 1} of {len(LESSON)}" in bars[0]
    links = [e.proto.page for e in at.get("page_link") if e.proto.page != "glossary"]  # both bars: previous, next
    assert links == [LESSON[i - 1].name, LESSON[i + 1].name] * 2
    assert len(LESSON) == len(PAGES) - 1  # every page but the glossary is a stop
    off = open_link(PAGE, {"lesson": "false"})
    assert not [m for m in off.markdown if "**Lesson**" in m.value]


def test_projector_mode_enlarges_chart_text_and_marks():
    plain, big = open_link(PAGE, {}), open_link(PAGE, {"projector": "true"})
    assert_clean(big)
    assert all("config" not in s or s["config"].get("axis", {}).get("labelFontSize") is None for s in specs(plain))
    for spec in specs(big):
        assert spec["config"]["axis"]["labelFontSize"] == PROJECTOR_CHART["axis"]["labelFontSize"]
        assert spec["config"]["line"]["strokeWidth"] == PROJECTOR_CHART["line"]["strokeWidth"]
    assert any("font-size" in h.proto.body for h in big.get("html"))


def opened(at):
    """The sidebar's two link panels opened, as a click on each does (it reruns the page)."""
    at.session_state[SHARE_OPEN] = at.session_state[TEACHER_OPEN] = True
    return at.run()


def test_the_link_panels_are_drawn_only_while_open():
    at = open_link(PAGE, {})
    assert not at.sidebar.get("code") and not [w for w in at.sidebar.button_group if w.key == "teacher_hide"]
    opened(at)
    assert len(at.sidebar.get("code")) == 2 and at.sidebar.button_group(key="teacher_hide")


def test_the_share_link_carries_every_control_and_the_teacher_link_its_choices():
    at = open_link(PAGE, {})
    at.select_slider(key="d_k").set_value(512).run()
    share, teacher = (c.value for c in opened(at).sidebar.get("code"))
    assert link_params(share) == {k: v for k, v in at.query_params.items() if k != "lang"}
    at.sidebar.button_group(key="teacher_hide").set_value(["d_k", "temperature"]).run()
    at.sidebar.checkbox(key="teacher_no_sidebar").check().run()
    teacher = at.sidebar.get("code")[1].value
    params = link_params(teacher)
    assert params["hide"] == "d_k,sidebar,temperature" and params["lesson"] == "true" and params["d_k"] == "512"
    assert "hide" not in at.query_params  # the teacher's own view is unchanged


def test_links_leave_the_language_to_the_reader_unless_it_was_chosen():
    at = opened(open_link(PAGE, {}))  # no browser locale here: the browser's language counts as English
    share, teacher = (c.value for c in at.sidebar.get("code"))
    assert "lang" not in link_params(share) and "lang" not in link_params(teacher)
    at.sidebar.selectbox(key="teacher_lang").set_value("zh").run()
    assert link_params(at.sidebar.get("code")[1].value)["lang"] == "zh"  # the teacher chose Chinese for the class
    chinese = opened(open_link(PAGE, {"lang": "zh"}))  # a viewer who switched to Chinese shares a Chinese link
    assert link_params(chinese.sidebar.get("code")[0].value)["lang"] == "zh"
    assert "lang" not in link_params(chinese.sidebar.get("code")[1].value)


def test_switching_language_keeps_the_view():
    at = open_link(PAGE, {})
    at.select_slider(key="d_k").set_value(256).run()
    en_value = metric(at, "Var(q·k)")
    at.sidebar.selectbox(key="lang").set_value("zh").run()
    assert_clean(at)
    assert at.select_slider(key="d_k").value == 256
    assert at.title[0].value.startswith("为什么")
    assert metric(at, "Var(q·k)") == en_value
    assert at.query_params["lang"] == "zh"


def test_every_chart_has_csv_and_svg_downloads_and_svg_renders():
    at = open_link(PAGE, {})
    keys = [b.key for b in at.main.get("download_button")]
    n_charts = len(at.get("vega_lite_chart"))
    assert sum(k.startswith("svg_") for k in keys) == n_charts
    assert sum(k.startswith("csv_") for k in keys) == n_charts
    figure = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]}), title="权重").mark_line().encode(x="x", y="y")
    text = svg(wire(figure))  # as the page holds it: data already Arrow-encoded for Streamlit
    assert text.lstrip().startswith("<svg") and "权重" in text


@pytest.mark.parametrize("info", PAGES, ids=lambda p: p.name)
def test_every_page_in_projector_mode_draws_valid_enlarged_charts(info):
    at = open_link(info.path, {"projector": "true", "lang": "zh"})
    assert_clean(at)
    for spec in specs(at):
        validate_jsonschema(json_data(spec), alt.load_schema())  # the restyled spec is still valid Vega-Lite
        assert spec["usermeta"]["projected"] and spec["config"]["text"]["fontSize"] >= PROJECTOR_FONT


def test_a_shared_link_never_carries_the_mark_of_heavy_work_under_way():
    def script():
        import streamlit as st

        from explorer.ui.sidebar import view_link

        st.query_params.update({"d_k": "8", "running": "benchmark"})  # what a tab's address holds mid-benchmark
        st.code(view_link())

    at = AppTest.from_function(script).run()
    assert link_params(at.code[0].value) == {"d_k": "8"}  # whoever opens it was not cut short
