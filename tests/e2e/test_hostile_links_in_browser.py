"""The reported hostile links, in a real browser: no request leaves for the attacker's host, no live link or image."""

import urllib.parse

import pytest
from browser_helpers import SCREENSHOTS, wait_for_app

pytestmark = pytest.mark.e2e

LINKS = [
    ("equivariance_img", "equivariance?perm_kind=typed&perm_text=![x](http://127.0.0.1:8699/evil.png)"),
    ("saturation_img", "saturation?sat_logits=![x](http://127.0.0.1:8699/sat.png),1"),
    ("saturation_phish", "saturation?sat_logits=[Session expired: log in again here](https://evil.example/login)"),
]


@pytest.mark.parametrize(("name", "link"), LINKS, ids=[n for n, _ in LINKS])
def test_a_hostile_link_shows_plain_text(server, page, name, link):
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{server}/{link}")
    wait_for_app(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"hostile_{name}.png"), full_page=True)
    warning = page.locator('[data-testid="stAlertContentWarning"]').first.inner_text()
    assert "not a" in warning  # the page still says what is wrong with the text, without repeating it
    assert page.locator('a[href*="evil"], a[href*="8699"], img[src*="evil"], img[src*="8699"]').count() == 0
    assert not [u for u in requests if urllib.parse.urlsplit(u).netloc in ("127.0.0.1:8699", "evil.example")]


def test_a_link_that_hides_everything_leaves_navigation_and_language(server, page):
    page.goto(f"{server}/saturation?hide=sidebar,lang,sat_d_k,sat_n_keys,sat_temperature,sat_scale,sat_logits")
    wait_for_app(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "hostile_hide_all.png"))
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    assert page.locator('[data-testid="stTopNavLinkContainer"], [data-testid="stTopNavLink"]').count() > 0
    page.locator('[data-testid="stPopover"] button').first.click()
    page.locator('[data-testid="stPopoverBody"] [data-testid="stSelectbox"]').first.wait_for(state="visible")
