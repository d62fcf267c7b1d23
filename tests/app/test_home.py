from app_helpers import APP, assert_clean
from streamlit.testing.v1 import AppTest

from ui.registry import PAGES


def test_home_has_a_card_per_page_and_the_shared_sidebar():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert_clean(at)
    assert at.title[0].value == "Attention Explorer"
    shown = " ".join(m.value for m in at.markdown)
    assert all(p.title in shown for p in PAGES)
    assert at.sidebar.number_input(key="seed").value == 0
    assert any("CPU" in c.value or "GPU" in c.value for c in at.sidebar.caption)
