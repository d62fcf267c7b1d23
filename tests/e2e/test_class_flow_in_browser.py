"""The class flow in a browser: every page one click away, the Chinese page free of Streamlit's English words."""

import pytest
from browser_helpers import wait_for_app

from explorer.ui.registry import PAGES

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("width", [1366, 1920])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_is_one_click_away(server, browser, lang, width):
    context = browser.new_context(viewport={"width": width, "height": 1080})
    page = context.new_page()
    try:
        page.goto(f"{server}/saturation?lang={lang}")
        wait_for_app(page)
        nav = page.locator('[data-testid="stSidebarNav"]')
        assert nav.locator('[data-testid="stSidebarNavLink"]').count() == len(PAGES) + 1  # and home
        assert not nav.get_by_role("button").filter(has_text="more").count()  # no "View 4 more"
    finally:
        context.close()


def test_the_chinese_page_has_no_english_from_streamlit(server, page):
    page.goto(f"{server}/saturation?lang=zh")
    wait_for_app(page)
    box = page.locator('[data-testid="stTextInput"] input').first
    box.click()
    box.press("End")
    box.type(",1")  # edited, not yet applied: Streamlit shows its instructions under the box
    instructions = page.locator('[data-testid="InputInstructions"]').first
    instructions.wait_for(state="visible")
    shown = instructions.evaluate(
        "e => [...e.children].map(s => getComputedStyle(s).fontSize === '0px' ? "
        "getComputedStyle(s, '::after').content : s.innerText).join(' ')"
    )
    assert "按回车键应用" in shown and "Press" not in shown
    caption = page.locator('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]').last.inner_text()
    assert "线程" in caption and "threads" not in caption


def test_a_benchmark_shows_its_progress_in_sight_on_a_laptop_and_offers_no_triton_without_a_gpu(server, browser):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        page.goto(f"{server}/scaling?bench_max_n=2048&bench_time_limit=5")
        wait_for_app(page)
        methods = page.locator('[data-testid="stButtonGroup"]').first.inner_text()
        assert "SDPA" in methods and "Triton" not in methods  # this machine has no CUDA GPU
        page.locator('[data-testid="stFormSubmitButton"] button').first.click()
        bar = page.locator('[data-testid="stProgress"]').first
        bar.wait_for(state="visible", timeout=30_000)
        box = bar.bounding_box()
        assert 0 <= box["y"] and box["y"] + box["height"] <= 768  # on the first screen, under the Run button
        page.get_by_role("button").filter(has_text="Cancel").first.click()
    finally:
        context.close()


def test_on_a_projector_the_chart_reaches_the_first_screen(server, browser):
    """1920x1080 in projector mode: the sidebar folds, a chart starts on the first screen, its title on at most two
    lines (it took four: titles were broken for a third of the page whatever the chart's width)."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    try:
        page.goto(f"{server}/sqrt_dk?projector=true")
        wait_for_app(page)
        assert page.locator('[data-testid="stSidebar"]').bounding_box()["width"] < 50
        chart = page.locator('[data-testid="stVegaLiteChart"]').first
        chart.locator("svg.marks, canvas.marks").first.wait_for()
        box = chart.bounding_box()
        assert box["y"] + 150 < 1080 and box["width"] > 0.5 * 1920
        title = chart.locator("svg.marks .role-title-text text").first
        assert title.count() and title.locator("tspan").count() <= 2  # a title of several lines: one tspan each
    finally:
        context.close()
