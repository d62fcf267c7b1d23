"""A link is written by anyone: what it carries never becomes a live link, image or markup on any page.

Every URL parameter a page reads (its controls, typed inputs and editors) is set to Markdown/HTML payloads.
Wherever the payload's text shows up (warnings quoting a parse error, notices, captions, chart titles), it
must be escaped: no live address of the attacker's hosts may remain in any rendered text.
"""

import pytest
from app_helpers import assert_clean, open_link
from streamlit.testing.v1 import AppTest

from explorer.ui.registry import PAGES
from explorer.ui.state import NEVER_HIDDEN

HOSTS = ("evil.example", "127.0.0.1:8699")
SHORT = "[a](https://evil.example)"  # fits inputs capped at a few dozen characters
LONG = (
    "[Session expired: log in again here](https://evil.example/login) ![x](http://127.0.0.1:8699/evil.png) "
    '<img src="http://evil.example/p.png"> $\\href{https://evil.example}{x}$ :red[x] https://evil.example'
)


def rendered_text(at: AppTest) -> list[str]:
    """Every string the browser renders as Markdown, LaTeX or chart text."""
    kinds = ("title", "header", "subheader", "markdown", "caption", "latex", "info", "warning", "error", "success")
    texts = [e.value for kind in kinds for e in getattr(at, kind)] + [e.value for e in at.toast]
    texts += [str(x) for m in at.metric for x in (m.label, m.value, m.proto.help)]
    texts += [e.label for e in at.expander]
    texts += [c.proto.spec for c in at.get("vega_lite_chart")]
    return texts


def live_addresses(at: AppTest) -> list[str]:
    """Rendered texts in which an attacker's address survives unescaped (escaped text reads 'https\\:\\/\\/...')."""
    return [text for text in rendered_text(at) for host in HOSTS if f"//{host}" in text]


def page_keys(path: str) -> list[str]:
    """The URL parameters a page reads: every control and editor it drew, plus the frame's own."""
    at = open_link(path, {})
    return sorted(at.session_state["_controls_this_run"])


@pytest.mark.parametrize("path", [p.path for p in PAGES])
@pytest.mark.parametrize("payload", [SHORT, LONG], ids=["short", "long"])
def test_link_payloads_never_become_markup(path, payload):
    keys = page_keys(path)
    at = open_link(path, {key: payload for key in keys} | {"hide": ",".join(k for k in keys if k != "lang")})
    assert_clean(at)
    assert live_addresses(at) == []
    assert at.selectbox(key="lang")  # hide= cannot take the language away


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("views/equivariance.py", {"perm_kind": "typed", "perm_text": "![x](http://127.0.0.1:8699/evil.png)"}),
        ("views/saturation.py", {"sat_logits": "![x](http://127.0.0.1:8699/sat.png),1"}),
        ("views/saturation.py", {"sat_logits": "[Session expired: log in again here](https://evil.example/login)"}),
    ],
)
def test_the_reported_links_show_a_plain_warning(path, params):
    at = open_link(path, params)
    assert_clean(at)
    warnings = [w.value for w in at.warning]
    assert warnings, "the bad text must still be explained"
    assert live_addresses(at) == []


def test_hide_keeps_the_language_and_the_navigation():
    at = open_link("views/sqrt_dk.py", {"hide": "lang,sidebar,d_k", "lang": "zh"})
    assert_clean(at)
    assert "lang" in NEVER_HIDDEN
    assert at.selectbox(key="lang").value == "zh"
    at.selectbox(key="lang").set_value("en").run()
    assert at.title[0].value.startswith("Why")
    assert at.query_params["hide"] == "d_k,sidebar"
