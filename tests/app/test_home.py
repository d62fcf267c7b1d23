from app_helpers import APP, assert_clean
from streamlit.testing.v1 import AppTest

from explorer.ui.i18n import catalog
from explorer.ui.registry import PAGES


def test_home_has_a_card_per_page_and_the_shared_sidebar():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert_clean(at)
    assert at.title[0].value == "Attention Explorer"
    shown = " ".join(m.value for m in at.markdown)
    assert all(catalog("en")[f"pages.{p.name}.title"] in shown for p in PAGES)
    assert at.sidebar.number_input(key="seed").value == 0
    assert at.sidebar.selectbox(key="lang").value == "en"
    assert any("CPU" in c.value or "GPU" in c.value for c in at.sidebar.caption)


def test_start_the_lesson_opens_the_first_stop_in_lesson_mode():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.button[0].click().run()
    assert_clean(at)
    assert at.sidebar.toggle(key="lesson").value is True
    assert at.query_params["lesson"] == "true"
    assert any("stop 1 of" in m.value for m in at.markdown)


def test_the_navigation_pages_are_made_once_per_session_and_language(monkeypatch):
    """st.Page checks its file on the disk each time it is made: app.py keeps this session's pages per language."""
    import streamlit as st

    made, page = [], st.Page
    monkeypatch.setattr(st, "Page", lambda *args, **kwargs: made.append(args[0]) or page(*args, **kwargs))
    at = AppTest.from_file(APP, default_timeout=60).run()
    first = len(made)
    assert first == len(PAGES) + 1  # the home page and every registered page
    at.run()
    assert len(made) == first  # the next run reuses them
    at.sidebar.selectbox(key="lang").set_value("zh").run()
    assert_clean(at)
    assert len(made) == 2 * first and "首页" in [p.title for p in at.session_state["_navigation_pages"]["zh"][0][""]]
    assert not AppTest.from_file(APP, default_timeout=60).run().exception and len(made) == 3 * first  # new session


def test_the_hardware_caption_is_grammatical_with_one_thread(monkeypatch):
    """Audit (issue 25): the sidebar read "CPU (1 threads, x86_64)" on a one-thread server."""
    import torch

    from explorer.ui import sidebar

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    sidebar._hardware.clear()
    try:
        at = AppTest.from_file(APP, default_timeout=60).run()
        assert_clean(at)
        caption = next(c.value for c in at.sidebar.caption if "CPU" in c.value or "GPU" in c.value)
        assert "1 threads" not in caption and ("threads: 1" in caption or "GPU" in caption), caption
    finally:
        sidebar._hardware.clear()
