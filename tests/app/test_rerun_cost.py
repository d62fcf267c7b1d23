"""What a warm rerun of a page must not do again (issue 25: warm reruns <= 40 ms): structural checks, not timings."""

import pathlib

import pytest
from streamlit.runtime.caching import cache_data_api, cache_resource_api

PAGES = [
    "views/saturation.py",
    "views/multihead.py",
    "views/flash_walkthrough.py",
    "views/learning_scale.py",
    "views/learning.py",
    "views/masks.py",
    "views/induction.py",
    "views/language_model.py",
]


@pytest.mark.parametrize("path", PAGES)
def test_a_warm_rerun_makes_no_streamlit_cached_function_of_the_page(open_page, monkeypatch, path):
    """An @st.cache_data / @st.cache_resource written in a page runs with the page: every rerun made the cached
    function again and read its source (~0.4 ms each, learning_scale had two) before hashing its arguments."""
    made = []
    for api in (cache_data_api, cache_resource_api):
        real = api.make_cached_func_wrapper
        counted = lambda info, real=real: made.append(info.func) or real(info)  # noqa: E731
        monkeypatch.setattr(api, "make_cached_func_wrapper", counted)
    at = open_page(path)
    at.run()
    assert not at.exception
    page = pathlib.Path(path).name
    assert [f.__qualname__ for f in made if pathlib.Path(f.__code__.co_filename).name == page] == []


def test_saturation_hands_its_charts_the_stored_frames_not_new_slices(open_page, monkeypatch):
    """Each chart's CSV data was cut from the sweep again on every run (column selections, a filter by d_k and
    set_index for the metrics: ~15 % of a warm full rerun in cProfile); now cut once per sweep and reused."""
    from explorer.ui import draw

    handed, real = {}, draw.chart

    def recording(builder, *args, name=None, data=None, **kwargs):
        handed.setdefault(name, []).append(data)
        return real(builder, *args, name=name, data=data, **kwargs)

    monkeypatch.setattr(draw, "chart", recording)
    at = open_page("views/saturation.py")
    at.run()
    assert not at.exception
    assert len(handed) >= 5
    for name, frames in handed.items():
        assert len(frames) == 2 and frames[0] is frames[1], name


def test_the_walkthrough_hands_its_charts_the_stored_frames_of_a_step(open_page, monkeypatch):
    """A step's logits, partial output and row state were filtered out of the walk on every run, then digested (or,
    a 32 x 32 tile's logits, hashed by Streamlit) to find their charts; now cut once per step, named by it."""
    from explorer.ui import draw

    handed, real = {}, draw.chart

    def recording(builder, *args, name=None, data=None, **kwargs):
        handed.setdefault(name, []).append(data)
        return real(builder, *args, name=name, data=data, **kwargs)

    monkeypatch.setattr(draw, "chart", recording)
    at = open_page("views/flash_walkthrough.py", flash_block_q=32, flash_block_k=32)
    at.run()
    assert not at.exception
    assert {"logits_0", "partial_output_0", "row_state_0"} <= set(handed)  # one tile of 32: step 0 only
    for name, frames in handed.items():
        assert len(frames) == 2 and frames[0] is frames[1], name


def test_a_warm_rerun_of_the_router_makes_no_streamlit_cached_function(open_page, monkeypatch):
    """app.py runs on every run of every page: an @st.cache_resource written there made its function again and read
    its source every time (~0.4 ms); the once-per-process settling is decorated where it is imported once."""
    made = []
    for api in (cache_data_api, cache_resource_api):
        real = api.make_cached_func_wrapper
        counted = lambda info, real=real: made.append(info.func) or real(info)  # noqa: E731
        monkeypatch.setattr(api, "make_cached_func_wrapper", counted)
    at = open_page("views/glossary.py")
    at.run()
    assert not at.exception
    assert [f.__qualname__ for f in made if pathlib.Path(f.__code__.co_filename).name == "app.py"] == []


def test_masks_serves_a_rerun_its_charts_and_tables_from_the_store(open_page, monkeypatch):
    """The summary's text (tables.summary_text, ~15 % of a warm rerun in cProfile), each chart's CSV columns, one
    recipe's rows and the tables' words were made again on every run; now once per setting and language."""
    import streamlit as st

    from explorer.tables import masks as tables
    from explorer.ui import draw

    handed, texts, real_chart, real_text = {}, [], draw.chart, tables.summary_text

    def recording(builder, *args, name, data=None, **kwargs):
        handed.setdefault(name, []).append(data)
        return real_chart(builder, *args, name=name, data=data, **kwargs)

    def shown(kind):
        real = getattr(st, kind)
        return lambda data, *args, **kwargs: handed.setdefault(kind, []).append(data) or real(data, *args, **kwargs)

    monkeypatch.setattr(draw, "chart", recording)
    for kind in ("table", "dataframe"):
        monkeypatch.setattr(st, kind, shown(kind))
    at = open_page("views/masks.py")
    monkeypatch.setattr(tables, "summary_text", lambda *a, **k: texts.append(a) or real_text(*a, **k))
    at.run()
    assert not at.exception
    assert texts == []
    assert {"scores", "weights", "fill_weights", "gradient", "table", "dataframe"} <= set(handed)
    for name, frames in handed.items():
        half = len(frames) // 2
        assert len(frames) == 2 * half and all(a is b for a, b in zip(frames[:half], frames[half:], strict=True)), name
