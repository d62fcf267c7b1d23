"""What every page owes the classroom: its controls travel in the URL, and it speaks both languages.

Set random controls -> the URL -> a fresh app opened from that URL -> the same controls and the same
metrics. Render every page in English and in Chinese: no string missing, no English prose left in Chinese.
"""

import json
import random
import re

import pytest
from app_helpers import assert_clean, open_link
from streamlit.testing.v1 import AppTest

from explorer.ui.i18n import LANGUAGES, MISSING, catalog
from explorer.ui.registry import PAGES
from tools.controls import controls, set_random, values

CHANGES = 5
PATHS = [p.path for p in PAGES]
CJK = re.compile(r"[\u4e00-\u9fff]")
# Five or more English words in a row is prose that was not translated; code, LaTeX and links are cut first.
ENGLISH_RUN = re.compile(r"[A-Za-z]{2,}(?:[ ,;'’-]+[A-Za-z]{2,}){4,}")
NOT_PROSE = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|https?://\S+", re.S)


def metrics(at: AppTest) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric]


@pytest.mark.parametrize("path", PATHS)
def test_random_controls_round_trip_through_the_url(path):
    rng = random.Random(path)
    at = open_link(path, {})
    changed = 0
    for _ in range(CHANGES):
        kind, widget = rng.choice(list(controls(at)))
        if set_random(kind, widget, rng):
            at.run()
            assert_clean(at)
            changed += 1
    assert changed, "no control could be changed"
    again = open_link(path, dict(at.query_params))  # a student opens the copied link
    assert_clean(again)
    assert values(again) == values(at)
    assert metrics(again) == metrics(at)


def visible_text(at: AppTest) -> list[str]:
    """The text a viewer reads: headings, prose, captions, notices, labels, metric names and chart titles."""
    texts = [e.value for kind in ("title", "header", "subheader", "markdown", "caption") for e in getattr(at, kind)]
    texts += [e.value for kind in ("info", "warning", "success") for e in getattr(at, kind)]
    texts += [m.label for m in at.metric] + [e.label for e in at.expander]
    for kind in ("slider", "select_slider", "selectbox", "radio", "toggle", "checkbox", "number_input", "text_input"):
        texts += [w.label for w in getattr(at, kind)]
    for chart in at.get("vega_lite_chart"):
        texts += list(_titles(json.loads(chart.proto.spec)))
    return texts


def _titles(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("title", "subtitle") and isinstance(value, (str, list)):
                yield from [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)]
            else:
                yield from _titles(value)
    elif isinstance(node, list):
        for item in node:
            yield from _titles(item)


@pytest.mark.parametrize("lang", list(LANGUAGES))
@pytest.mark.parametrize("path", ["views/home.py", *PATHS])
def test_every_page_renders_in_both_languages(path, lang):
    at = open_link(path, {"lang": lang})
    assert_clean(at)
    missing = at.session_state[MISSING] if MISSING in at.session_state else set()
    assert not missing
    if lang == "zh":
        assert CJK.search(at.title[0].value)
        english = [m.group(0) for text in visible_text(at) for m in ENGLISH_RUN.finditer(NOT_PROSE.sub(" ", text))]
        assert not english, english
    else:
        assert at.title[0].value in catalog("en").values()


@pytest.mark.parametrize("path", PATHS)
def test_every_chart_offers_its_data_as_csv_and_itself_as_svg(path):
    at = open_link(path, {})
    keys = [b.key for b in at.get("download_button")]
    n_charts = len(at.get("vega_lite_chart"))
    assert sum(k.startswith("svg_") for k in keys) == n_charts
    assert sum(k.startswith("csv_") for k in keys) == n_charts
