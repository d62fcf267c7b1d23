"""Projector mode's chart restyling: larger type everywhere, fixed sizes grown with it, titles wrapped, and the
cached spec it starts from left untouched."""

import copy
import itertools
import json
import re

import altair as alt
import pandas as pd
from altair.utils.schemapi import validate_jsonschema

from explorer.charts import equivariance as eq_charts
from explorer.charts import masks as mask_charts
from explorer.charts import sqrt_dk as charts
from explorer.charts.common import to_spec
from explorer.charts.projector import (
    PROJECTOR_CHART,
    PROJECTOR_FONT,
    ROOMS,
    SCALE,
    SCREEN_TITLE_FONT,
    fitted,
    projected,
    wrap,
)
from explorer.ui.draw import spec_for
from explorer.ui.i18n import LANGUAGES, catalog

CLOSING_MARKS = set(")]}）】」』》〉，。、：；！？,;:!?%…’”")
OPENING_MARKS = set("([{（【「『《〈‘“")

ROW = pd.DataFrame({"key": [0, 1, 2], "weight": [0.5, 0.3, 0.2], "series": ["scaled"] * 3})
TEXT = {"title": "t", "x": "key", "y": "weight", "legend": "logits", "uniform": "1/n"}
NAMES = {"scaled": "scaled", "unscaled": "unscaled"}
EQ_CELLS = pd.DataFrame(
    {"matrix": "A", "query": [0, 0, 1, 1], "key": [0, 1, 0, 1], "weight": [0.4, 0.6, 0.7, 0.3]}
).assign(query_token="a", key_token="b")
EQ_TEXT = dict.fromkeys(("x", "y", "weight", "query_token", "key_token"), "w")


def _values(node, key):
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k == key and isinstance(v, int | float)]
        return found + [x for k, v in node.items() if k not in ("config", "datasets") for x in _values(v, key)]
    if isinstance(node, list):
        return [x for item in node for x in _values(item, key)]
    return []


def _heatmap():
    n = 10  # more than 8 keys: the builder prints its numbers at 8 px
    cells = pd.DataFrame([{"query": i, "key": j, "weight": 1 / n, "hidden": j > i} for i in range(n) for j in range(n)])
    text = {k: k for k in ("title", "x", "y", "legend", "cell", "hidden", "visible")}
    return to_spec(mask_charts.cell_heatmap(cells, "weight", text))


def test_every_chart_font_reaches_the_projector_size():
    spec = projected(_heatmap())
    validate_jsonschema(spec, alt.load_schema())  # still valid Vega-Lite
    for part in ("axis", "legend", "header"):
        assert spec["config"][part]["labelFontSize"] >= PROJECTOR_FONT
    assert spec["config"]["text"]["fontSize"] >= PROJECTOR_FONT
    (cell_font,) = _values(spec, "fontSize")  # the heatmap's own 8 px numbers
    assert cell_font >= PROJECTOR_FONT


def test_a_heatmaps_cells_grow_with_their_numbers():
    plain = _heatmap()
    big = projected(plain)
    (small_font,), (big_font,) = _values(plain, "fontSize"), _values(big, "fontSize")
    growth = big_font / small_font
    assert growth > SCALE  # more than the common factor: 8 px had to reach the projector size
    assert big["width"] == round(plain["width"] * growth, 1) and big["height"] == round(plain["height"] * growth, 1)


def test_charts_do_not_shrink_and_the_cached_spec_is_left_alone():
    plain = to_spec(charts.softmax_bars(ROW, TEXT, NAMES))
    before = copy.deepcopy(plain)
    big = projected(plain)
    validate_jsonschema(big, alt.load_schema())
    assert plain == before  # a cached spec is shared by every session
    assert big["height"] >= SCALE * plain["height"]
    assert projected(big) == big  # projecting twice changes nothing
    assert big["config"]["line"] == PROJECTOR_CHART["line"]


def test_long_titles_break_into_lines_in_english_and_chinese():
    title = "Both on one axis: dashed N(0, d_k) and N(0, 1); shaded [-3, 3]"
    lines = wrap(title, 14)
    assert len(lines) > 1 and " ".join(lines) == title
    zh = "同一坐标轴：虚线为 N(0, d_k) 与 N(0, 1)；阴影为 [-3, 3]"
    lines = wrap(zh, 10)
    assert len(lines) > 1 and all(len(line) <= 16 for line in lines)
    assert "".join(lines).replace(" ", "") == zh.replace(" ", "")
    spec = projected(to_spec(charts.softmax_bars(ROW, {**TEXT, "title": title * 2}, NAMES)))
    narrow, wide = (_pick(spec["title"]["text"]["expr"], width) for width in (340, 1200))
    assert len(narrow) > len(wide) >= 1 and " ".join(wide) == title * 2  # as many lines as the chart's width needs


def test_no_line_of_a_chart_title_starts_with_a_closing_mark_or_ends_with_an_opening_one():
    """zh projector mode wrapped the sqrt_dk histogram's x title as '分数（… q·k /' and a lone '）'."""
    assert wrap("分数（未缩放的 q·k，或 q·k / √d_k）", 340 / 19)[-1] != "）"
    bad = []
    for lang in LANGUAGES:
        titles = [text for key, text in catalog(lang).items() if ".charts." in key and isinstance(text, str)]
        for text in titles:
            for ems in (4, 6, 8, 10, 12, 14, 17.9, 20, 25, 30):
                lines = wrap(text, ems)
                bad += [(lang, text, ems, lines) for a, b in itertools.pairwise(lines) if b[0] in CLOSING_MARKS]
                bad += [(lang, text, ems, lines) for line in lines[:-1] if line[-1] in OPENING_MARKS]
    assert not bad, bad[:5]


def test_projector_mode_is_part_of_the_cache_key(monkeypatch):
    import streamlit as st

    def spec_of(*args):
        return spec_for(charts.softmax_bars, args, {}, {})

    plain = spec_of(ROW, TEXT, NAMES)
    monkeypatch.setitem(st.session_state, "projector", True)
    big = spec_of(ROW, TEXT, NAMES)
    assert big["usermeta"]["projected"] and "usermeta" not in plain
    assert big["config"]["axis"]["labelFontSize"] == PROJECTOR_CHART["axis"]["labelFontSize"]
    monkeypatch.setitem(st.session_state, "projector", False)
    assert spec_of(ROW, TEXT, NAMES) == plain


def test_long_axis_titles_break_into_lines():
    long = "feature of Concat (head i holds columns i·d_k to (i+1)·d_k − 1)"
    spec = projected(to_spec(charts.softmax_bars(ROW, {**TEXT, "x": long}, NAMES)))
    validate_jsonschema(spec, alt.load_schema())
    titles = [v["title"] for v in _encodings(spec) if isinstance(v.get("title"), list)]
    assert titles and all(" ".join(t) == long for t in titles)


def _encodings(node):
    if isinstance(node, dict):
        found = [v for k, v in node.get("encoding", {}).items() if k in ("x", "y") and isinstance(v, dict)]
        return found + [x for k, v in node.items() if k not in ("config", "datasets") for x in _encodings(v)]
    if isinstance(node, list):
        return [x for item in node for x in _encodings(item)]
    return []


def _pick(expr: str, width: float, container: float = 0):
    """Evaluate fitted()'s title expression (nested `room >= N ? lines : (...)`) for one plot width and the width of
    the chart's container (0: the plot's width is all the title has)."""
    rooms = {"width": width, "max(width, containerSize()[0] - 19)": max(width, container - 19)}
    while True:
        m = re.match(r"(width|max\(width, containerSize\(\)\[0\] - 19\)) >= (\d+) \? (\[.*?\]) : \((.*)\)$", expr, re.S)
        if not m:
            return json.loads(expr)
        if rooms[m.group(1)] >= int(m.group(2)):
            return json.loads(m.group(3))
        expr = m.group(4)


def test_a_long_title_on_a_plain_screen_breaks_to_the_charts_width_instead_of_ending_in_an_ellipsis():
    """sqrt_dk's and equivariance's titles ended in "…" at 1366 px: Vega shortens a title to the plot's width."""
    title = "Both on one axis: dashed N(0, d_k) and N(0, 1); shaded ±3σ of the scaled logits"
    spec = to_spec(alt.Chart(ROW, title=title).mark_bar().encode(x="key:O", y="weight:Q"))
    fitted_spec = fitted(spec)
    assert spec["title"] == title  # the shared spec is left as it was
    expr = fitted_spec["title"]["text"]["expr"]
    for width in (130, 250, 400, 800):
        lines = _pick(expr, width)
        assert " ".join(lines) == title
        assert all(len(line) * 0.56 * SCREEN_TITLE_FONT <= max(width, ROOMS[0]) for line in lines)
    assert len(_pick(expr, 130)) > len(_pick(expr, 800))
    validate_jsonschema(fitted_spec, alt.load_schema())
    short = to_spec(alt.Chart(ROW, title="Weights").mark_bar().encode(x="key:O", y="weight:Q"))
    assert fitted(short) == short
    concat = to_spec(alt.hconcat(alt.Chart(ROW).mark_bar().encode(x="key:O"), title=title))
    assert fitted(concat) == concat  # no `width` to read there


def test_a_title_takes_the_whole_chart_s_width_not_only_the_plot_s():
    """Equivariance's heatmaps in a third of a 1366 px page: a 145 px plot beside its legend broke "A: weights of X"
    after "of", with a column of 290 px to spare."""
    spec = to_spec(eq_charts.weights_heatmap(EQ_CELLS, "A", {**EQ_TEXT, "title": "A: weights of X"}, 1.0))
    expr = fitted(spec)["title"]["text"]["expr"]
    assert _pick(expr, 145, container=290) == ["A: weights of X"]
    assert len(_pick(expr, 145)) == 2  # where the container is unknown, the plot's width decides as before


def test_a_title_is_broken_into_lines_once_not_on_every_run(monkeypatch):
    """draw.chart fits every chart on every rerun: a title's lines are worked out the first time only (wrapping it
    for the nine rooms cost ~0.8 ms of CPU a chart, ~15 % of a warm rerun of the saturation page)."""
    from explorer.charts import projector

    calls = []
    monkeypatch.setattr(projector, "wrap", lambda text, ems: calls.append(text) or wrap(text, ems))
    title = "A title long enough to need two lines in a narrow column, seen once by this test only"
    spec = to_spec(alt.Chart(ROW, title=title).mark_bar().encode(x="key:O", y="weight:Q"))
    first = fitted(spec)
    assert calls and set(calls) == {title}
    calls.clear()
    assert fitted(spec) == first and fitted({**spec, "mark": "line"})["title"] == first["title"]
    assert calls == []  # the same title again: nothing re-wrapped
