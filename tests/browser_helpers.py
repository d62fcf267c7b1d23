"""Helpers for the browser tests (headless Chromium against a real streamlit server)."""

import asyncio
import concurrent.futures
import os
import pathlib
import shutil

import pytest

from tools.server import CHROMIUM

SCREENSHOTS = pathlib.Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"  # git-ignored


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until the page's script has run to its end: a heading is drawn and no run is in progress."""
    page.wait_for_selector('[data-testid="stMainBlockContainer"] [data-testid="stHeading"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.dataset.testScriptState !== 'running'
                && !document.querySelector('[data-testid="stStatusWidget"]');
        }""",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(800)  # let Vega finish drawing before a screenshot


def chromium_or_skip() -> None:
    """Skip when Debian's chromium is missing; in CI that is a failure instead."""
    if not os.path.exists(CHROMIUM) and not shutil.which("chromium"):
        if os.environ.get("CI"):
            pytest.fail("CI must have Debian's chromium at /usr/bin/chromium (.ci/run installs it)")
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")


def run_async(coro):
    """asyncio.run(coro) in a thread of its own: an earlier browser test's sync Playwright runs an event loop in
    this one for the rest of the session, and asyncio.run refuses to start inside a running loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
