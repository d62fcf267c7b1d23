"""Inside a small language model, in a browser: typed text is read by the model and drawn, hostile text is refused
as plain words (never as markup)."""

import pytest
from browser_helpers import wait_for_app

from explorer.charts.common import HEIGHT

pytestmark = pytest.mark.e2e


def type_text(page, text: str) -> None:
    page.get_by_text("your own text").click()
    wait_for_app(page)
    box = page.get_by_label("your text (at most 80 characters)", exact=True)
    box.fill(text)
    box.press("Enter")
    wait_for_app(page)


def test_typed_text_is_drawn_and_put_in_the_address(server, page):
    page.goto(f"{server}/language_model")
    wait_for_app(page)
    type_text(page, "spam and eggs. spam and eggs.")
    page.wait_for_selector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg')
    assert page.locator('[data-testid="stVegaLiteChart"]').count() == 6
    assert page.locator('[data-testid="stAlert"]').filter(has_text="cannot read").count() == 0
    assert "lm_text=spam" in page.url
    # the plot keeps the spec's height (HEIGHT - 80) with the title and axes added, not squeezed into it
    for chart in page.locator('[data-testid="stVegaLiteChart"]').all()[-2:]:
        assert chart.bounding_box()["height"] > HEIGHT - 80 + 60


def test_hostile_text_is_refused_in_words(server, page):
    page.goto(f"{server}/language_model")
    wait_for_app(page)
    type_text(page, "<img src=x onerror=alert(1)> 注意")
    warning = page.locator('[data-testid="stAlert"]').filter(has_text="cannot read")
    assert warning.count() == 1
    assert "U+6CE8" in warning.inner_text()
    assert page.locator("img[src=x]").count() == 0
    assert page.locator('[data-testid="stVegaLiteChart"]').count() == 0


def test_metric_labels_keep_their_words_whole_in_projector_mode(server, browser):
    # the projector's CSS makes a metric an inline-size container, so a metric as wide as its content had no width
    # and its label wrapped one or two letters a line ("la / ye / r 1")
    context = browser.new_context(viewport={"width": 1920, "height": 3000})
    page = context.new_page()
    try:
        page.goto(f"{server}/language_model?projector=true")
        wait_for_app(page)
        page.wait_for_selector('[data-testid="stMetricLabel"]')
        labels = page.locator('[data-testid="stMetricLabel"]')
        assert labels.count() == 4  # two layers' entropy, the two losses
        for label in labels.all():
            box = label.bounding_box()
            assert box["width"] > 150 and box["height"] < 120, label.inner_text()
    finally:
        context.close()
