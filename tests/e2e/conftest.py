"""A real `streamlit run app.py` server on a free loopback port, and headless Debian Chromium."""

import pytest
from browser_helpers import chromium_or_skip

from tools.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server


@pytest.fixture(scope="session")
def server():
    try:
        with streamlit_server() as srv:
            yield srv.url
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def browser():
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    # Streamlit scrolls inside its own container, so only a tall window shows a whole page.
    context = browser.new_context(viewport={"width": 1400, "height": 2600})
    p = context.new_page()
    yield p
    context.close()
