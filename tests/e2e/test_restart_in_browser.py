"""A server restart under an open tab: the tab reconnects by itself, and the value a student sets next is kept.

The tab outlives its session: its first message to the new server carries every widget's value beside the old
address bar. The value just moved must win over the (now stale) URL value, not be put back.
"""

import contextlib
import subprocess
import sys
import tempfile

import pytest
from browser_helpers import wait_for_app

from tools.server import ROOT, _stop, free_port, wait_healthy

pytestmark = pytest.mark.e2e

SLIDER = 'input[aria-label="sequence length n"]'


@contextlib.contextmanager
def app_on(port: int):
    """One `streamlit run app.py` on `port`, stopped on exit (a restart is two of these on the same port)."""
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
    cmd += ["--server.port", str(port), "--server.address", "127.0.0.1"]
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", proc, 60, "streamlit", lambda: (log.seek(0), log.read())[1])
            yield
        finally:
            _stop(proc)


def slider_value(page) -> str:
    return page.locator(SLIDER).first.get_attribute("aria-valuetext")


def test_a_value_set_after_a_restart_is_kept(browser):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
    with app_on(port):
        page.goto(f"{url}/equivariance?n=8")
        wait_for_app(page)
        assert slider_value(page) == "8"
    with app_on(port):  # the same address: the open tab reconnects by itself
        page.wait_for_function(
            '() => !document.querySelector(\'[data-testid="stConnectionStatus"], [role="dialog"]\')',
            timeout=30_000,
        )
        page.wait_for_timeout(1500)  # the reconnection settles before the student moves the slider
        page.locator(SLIDER).first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => new URL(location.href).searchParams.get('n') === '9'", timeout=90_000)
        wait_for_app(page)
        page.wait_for_timeout(1000)  # a value put back would arrive with the run's end
        assert slider_value(page) == "9"
        assert "n=9" in page.url
    page.context.close()


def test_a_benchmark_cut_short_by_a_restart_says_so_in_the_viewers_language(browser):
    """The address carries running=benchmark while the benchmark runs; while the server is away Streamlit's
    connection dialog is said in Chinese; the tab reconnected to the restarted server reruns its page, which says
    the run did not finish (in Chinese) instead of showing its starting view."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
    heavy = "bench_max_n=4096&bench_d=128&bench_heads=8&bench_methods=sdpa&bench_time_limit=120&seed=78&lang=zh"
    with app_on(port):
        page.goto(f"{url}/scaling?{heavy}")
        wait_for_app(page)
        page.locator('[data-testid="stFormSubmitButton"] button').click()
        page.wait_for_selector('[data-testid="stProgress"]', timeout=60_000)
        page.wait_for_function("() => location.search.includes('running=benchmark')", timeout=30_000)
    # the server is gone: Streamlit's connection dialog speaks the viewer's language (explorer.ui.connection)
    page.wait_for_selector('[role="dialog"] h2', timeout=60_000)
    page.wait_for_function("() => document.querySelector('[role=\"dialog\"] h2').textContent === '页面与服务器断开了'")
    assert "Are you connected to the internet" not in page.locator('[role="dialog"]').inner_text()
    with app_on(port):
        notice = page.locator('[data-testid="stAlertContentWarning"]', has_text="基准测试没有完成")
        notice.wait_for(timeout=90_000)
        page.wait_for_function("() => !location.search.includes('running=')", timeout=30_000)
        assert page.get_by_role("button", name="重新运行").count() == 1
    page.context.close()


def test_the_back_button_still_restores_the_address_value(server, page):
    """The browser's values win over an unseen address only outside history navigation: Back brings n = 8 back."""
    page.goto(f"{server}/equivariance?n=8")
    wait_for_app(page)
    page.locator(SLIDER).first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URL(location.href).searchParams.get('n') === '9'", timeout=90_000)
    wait_for_app(page)
    page.go_back()
    page.wait_for_function("() => new URL(location.href).searchParams.get('n') === '8'", timeout=30_000)
    page.wait_for_timeout(1000)
    wait_for_app(page)
    assert slider_value(page) == "8"
