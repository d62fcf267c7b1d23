import pathlib

import pytest
from browser_helpers import SCREENSHOTS, wait_for_app

from ui.registry import PAGES

pytestmark = pytest.mark.e2e

URLS = [("home", "")] + [(pathlib.Path(p.path).stem, pathlib.Path(p.path).stem) for p in PAGES]


@pytest.mark.parametrize(("name", "path"), URLS, ids=[u[0] for u in URLS])
def test_page_renders_without_exception(server, page, name, path):
    page.goto(f"{server}/{path}")
    wait_for_app(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stHeading"]').count() > 0
    if path:  # every explorer page draws at least one chart
        page.wait_for_selector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_a_shared_link_reproduces_the_view(server, page):
    page.goto(f"{server}/sqrt_dk?d_k=256&distribution=uniform&seed=3")
    wait_for_app(page)
    theory = page.locator('[data-testid="stMetric"]').filter(has_text="theory: d_k")
    assert "256" in theory.inner_text()
    # The app writes every control's value back to the address bar after the run: had the link's
    # values been ignored, the defaults (d_k=64, normal, seed 0) would stand there instead.
    for param in ("d_k=256", "distribution=uniform", "seed=3"):
        assert param in page.url
