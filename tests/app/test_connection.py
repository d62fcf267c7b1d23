"""Streamlit's connection dialog in the viewer's language: every page draws the script that rewrites it
(explorer.ui.connection; the browser test tests/e2e/test_restart_in_browser.py sees the dialog itself)."""

import json

import pytest
from app_helpers import assert_clean, open_link


@pytest.mark.parametrize(("lang", "title"), [("en", "The page lost the server"), ("zh", "页面与服务器断开了")])
def test_every_page_carries_the_connection_words_in_its_language(lang, title):
    at = open_link("views/sqrt_dk.py", {"lang": lang})
    assert_clean(at)
    (script,) = [h.proto.body for h in at.get("html") if "attnConnectionWords" in h.proto.body]
    assert json.dumps(title, ensure_ascii=False) in script
    assert "Are you connected" not in script
    assert script.count("</") == 3  # </span>, </style>, </script>: the words close nothing early
