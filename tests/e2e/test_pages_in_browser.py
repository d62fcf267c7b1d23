import pathlib

import pytest
from browser_helpers import SCREENSHOTS, wait_for_app

from explorer.ui.registry import PAGES

pytestmark = pytest.mark.e2e

URLS = [("home", "")] + [(pathlib.Path(p.path).stem, pathlib.Path(p.path).stem) for p in PAGES]
WITHOUT_CHARTS = {"", "glossary"}  # home and the glossary are text and links


@pytest.mark.parametrize(("name", "path"), URLS, ids=[u[0] for u in URLS])
def test_page_renders_without_exception(server, page, name, path):
    page.goto(f"{server}/{path}")
    wait_for_app(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stHeading"]').count() > 0
    if path not in WITHOUT_CHARTS:  # every explorer page draws at least one chart
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


def test_chart_menu_offers_png_and_the_page_offers_csv_and_svg(server, page):
    page.goto(f"{server}/sqrt_dk")
    wait_for_app(page)
    page.locator('[data-testid="stVegaLiteChart"]').first.hover()
    toolbar = page.locator('[data-testid="stElementToolbar"]').first
    toolbar.wait_for(state="visible")
    labels = [b.get_attribute("aria-label") or b.inner_text() for b in toolbar.locator("button").all()]
    assert "Download as PNG" in labels
    buttons = page.locator('[data-testid="stDownloadButton"]').all_inner_texts()
    assert any("CSV" in b for b in buttons) and any("SVG" in b for b in buttons)


def test_a_teachers_lesson_link_in_chinese_hides_what_it_names(server, page):
    page.goto(f"{server}/sqrt_dk?lang=zh&lesson=true&hide=d_k,sidebar&d_k=256")
    wait_for_app(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "lesson_zh_hidden.png"), full_page=True)
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    assert page.locator('[data-testid="stSlider"]').filter(has_text="d_k").count() == 0
    assert "为什么" in page.locator("h1").first.inner_text()
    assert "第 2 站" in page.locator('[data-testid="stMarkdown"]').all_inner_texts()[0] or any(
        "第 2 站" in t for t in page.locator('[data-testid="stMarkdown"]').all_inner_texts()
    )
    for param in ("hide=d_k%2Csidebar", "d_k=256", "lang=zh"):
        assert param in page.url or param.replace("%2C", ",") in page.url


def test_the_share_panel_fills_in_when_opened(server, page):
    """The link panel is drawn only while open: a click opens it, reruns the page and shows the current link."""
    page.goto(f"{server}/sqrt_dk?d_k=256")
    wait_for_app(page)
    assert page.locator('[data-testid="stSidebar"] [data-testid="stCode"]').count() == 0
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary').first.click()
    code = page.locator('[data-testid="stSidebar"] [data-testid="stCode"]').first
    code.wait_for(state="visible", timeout=30_000)
    assert "d_k=256" in code.inner_text()
