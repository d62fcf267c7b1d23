"""A class arriving at once on a fresh server: no first visit may fail.

Every session's script runs in a thread of its own, so on a server nobody has visited yet the first visitors import
the app's modules at the same moment, each from its own page. Before the router loaded them once (and attn_core's
__init__ stopped importing its modules) some of them got "This app has encountered an error": deadlocked or
half-made imports, logged as "Uncaught app execution". Asserts no errors only, never wall-clock times.
"""

import asyncio
import contextlib

import pytest
from browser_helpers import chromium_or_skip, run_async

from explorer.ui.i18n import catalog
from explorer.ui.router import GATE
from tools.load_test import (
    FIRST_HEADING,
    FIRST_RUN_FINISHED,
    PAGE_NAMES,
    UNCAUGHT,
    VIEWPORT,
    Pace,
    fresh_class,
    fresh_server,
)
from tools.server import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.e2e

SESSIONS = 2 * len(PAGE_NAMES)  # every page opened first by two sessions
OPEN_WITHIN_S = 0.5


def test_a_fresh_server_answers_a_class_opening_every_page_at_once():
    pace = Pace(think=(0.05, 0.2), switch_share=0.3)
    run = run_async(asyncio.wait_for(fresh_class(SESSIONS, 2, OPEN_WITHIN_S, pace, seed=3, timeout_s=120), 600))
    assert run.errors == []
    assert run.uncaught == 0, run.log[-3000:]
    assert UNCAUGHT not in run.log and "Traceback" not in run.log, run.log[-3000:]
    assert len(run.opened_s) == SESSIONS  # every session drew its first page and changed a control on it
    assert sum(len(r.changes) for r in run.results) == 2 * SESSIONS


def test_a_fresh_server_draws_the_home_page_for_a_browser_among_a_class_on_every_page():
    """The home page runs before the modules are loaded (router.home_first) while the class's other pages wait for
    the page-loading thread: a browser on the home page among two sessions per page, all within half a second of the
    server answering, and still 0 errors, 0 uncaught lines, every session's first page drawn."""
    chromium_or_skip()
    from playwright.async_api import async_playwright

    async def run_with_browser():
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                pace = Pace(think=(0.05, 0.2), switch_share=0.3)
                return await fresh_class(SESSIONS, 1, OPEN_WITHIN_S, pace, seed=5, browser=browser, timeout_s=120)
            finally:
                await browser.close()

    run = run_async(asyncio.wait_for(run_with_browser(), 600))
    assert run.errors == []
    assert run.uncaught == 0 and UNCAUGHT not in run.log and "Traceback" not in run.log, run.log[-3000:]
    assert len(run.opened_s) == SESSIONS
    assert run.browser_s == run.browser_s, run.log[-3000:]  # not nan: the home page's first run ended


def _fresh_args(**given):
    """The parsed arguments fresh_report reads: --fresh's defaults, then `given`."""
    import argparse

    defaults = {"open_within": 1.0, "think": (3.0, 9.0), "switch_share": 0.2, "no_browser": False}
    return argparse.Namespace(**defaults, **given, load_before=(1.0, 1.0, 1.0))


def test_the_fresh_report_counts_errors_uncaught_lines_and_first_pages():
    """The --fresh report's goals read the runs: errors and the log's uncaught lines fail them, times are pooled."""
    from tools.load_test import FreshRun, SessionResult, fresh_report

    ok = SessionResult(changes=[("slider", "s", 0.2), ("page", "p", 0.4)], planned=2, at=[10.0, 14.0])
    bad = SessionResult(changes=[("slider", "s", 2.5)], errors=["session 1: boom"], planned=2, at=[12.0])
    runs = [
        FreshRun([ok], 30.0, 1.5, [8.0], 2.5, "all fine"),
        FreshRun(
            [bad],
            30.0,
            1.5,
            [11.0],
            float("nan"),
            f"{UNCAUGHT}\nImportError: cannot import name 'x'",
            slowest=[(2.5, 12.0, "session 1: s")],
        ),
    ]
    args = _fresh_args(fresh=2, sessions=1, changes=2, browser_page="saturation")
    text, met = fresh_report(args, runs, "python -m tools.load_test --fresh 2")
    assert not met
    assert "| 0 session errors | NO | 1 errors |" in text
    assert f"| 0 '{UNCAUGHT}' in the servers' logs | NO | 1 |" in text
    assert "| 0 lost changes | NO | 1 of 4 lost |" in text
    assert "| p95 change→rerun ≤ 1.0 s | NO | p95 = 2.50 s |" in text
    assert "| first page drawn ≤ 3 s after the server's start | NO | worst 11.0 s |" in text  # no browser: ws page
    assert "`ImportError: cannot import name 'x'`" in text
    assert "a headless Chromium opens /saturation at the same time" in text  # a teacher's deep link
    assert "- server 2: 2.50 s at 12.0 s: session 1: s" in text  # where a fresh server's tail comes from


def test_the_fresh_mode_runs_a_browser_alone_with_no_sessions():
    """--sessions 0: one visitor's first page; the report leaves out the goals about changes."""
    from tools.load_test import FreshRun, _all_sessions, fresh_report

    results, wall_s = run_async(_all_sessions(None, 0, 8, 60))
    assert (results, wall_s) == ([], 0.0)
    args = _fresh_args(fresh=1, sessions=0, changes=8, browser_page="")
    text, met = fresh_report(args, [FreshRun([], 0.0, 0.6, [], 3.2, "", 0.9)], "python -m tools.load_test")
    assert "| first page drawn ≤ 3 s after the server's start | NO | worst 3.2 s |" in text
    assert "| first page's title shown ≤ 3 s after the server's start | yes | worst 0.9 s |" in text
    assert "lost changes" not in text and "p95 change→rerun" not in text
    assert "a headless Chromium opens the home page at the same time" in text
    assert not met


CONTROLS = '[data-testid="stMain"] [role="slider"], [data-testid="stMain"] input'  # the main area's controls
# What the browser shows: the first heading, the "preparing" word, the script's state, the main area's controls.
SHOWN = """(preparing) => [
    (FIRST_HEADING)(),
    [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].filter(e => e.innerText === preparing).length,
    document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState,
    document.querySelectorAll(CONTROLS).length,
]""".replace("(FIRST_HEADING)", f"({FIRST_HEADING})").replace("CONTROLS", repr(CONTROLS))


@contextlib.asynccontextmanager
async def _held_server(gate):
    """A Chromium started first (so that its start does not count in the server's), then a fresh server whose
    page-loading thread waits for the file `gate`: yields a blank browser page, the server's url and its log()."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport=VIEWPORT)
            with fresh_server(env={GATE: str(gate)}) as (url, _, log):
                yield page, url, log
        finally:
            await browser.close()


async def _first_visit_held(path: str, gate) -> tuple[list, list, str]:
    """The browser opens `path` on a held server: what it shows once a heading is there (the load held), then once
    the gate is opened and the page's first run has finished."""
    preparing = catalog("zh")["common.frame.preparing"]
    async with _held_server(gate) as (page, url, log):
        await page.goto(url + path, timeout=120_000)
        await page.wait_for_function(f"() => ({FIRST_HEADING})()", timeout=120_000, polling=50)
        held = await page.evaluate(SHOWN, preparing)
        gate.touch()
        await page.wait_for_function(FIRST_RUN_FINISHED, timeout=120_000, polling=50)
        # The browser fetches a widget's code on its first use and draws a placeholder meanwhile: on a fresh server
        # the sliders can come a few seconds after the run has ended (measured: 0 controls at its end, 9 three
        # seconds later). What counts is that the run drew them, so wait for them to be shown.
        await page.wait_for_function(f"() => document.querySelector({CONTROLS!r})", timeout=60_000, polling=50)
        return held, await page.evaluate(SHOWN, preparing), log()


def test_a_fresh_server_shows_the_asked_page_title_while_its_modules_load(tmp_path):
    """The first visitor of a fresh server sees the page's title (and lede) in the link's language, with a word that
    the rest follows, while the page-loading thread has not imported anything yet (it waits for a file this test
    makes only after it has seen the title), not a blank page for the ~2 s of a core that importing torch and the
    pages' modules takes; the page's controls and charts follow when its run ends, with the title the page itself
    draws, and the word is gone. No wall-clock bound: the order is what is checked."""
    chromium_or_skip()
    title = catalog("zh")["masks.title"]
    held, done, log = run_async(asyncio.wait_for(_first_visit_held("/masks?lang=zh", tmp_path / "gate"), 300))
    assert held == [title, 1, "running", 0], held  # the title and the word, the run waiting for the load, no control
    assert done[:3] == [title, 0, "notRunning"], done
    assert done[3] > 0, done  # the page's own run drew its controls
    assert UNCAUGHT not in log and "Traceback" not in log, log[-3000:]


# What the browser shows of the home page: its heading, the "preparing" word, the script's state, the main area's
# buttons and page links, and whether the sidebar names the hardware.
HOME_SHOWN = """(preparing) => [
    (FIRST_HEADING)(),
    [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].filter(e => e.innerText === preparing).length,
    document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState,
    document.querySelectorAll('[data-testid="stMain"] [data-testid="stButton"]').length,
    document.querySelectorAll('[data-testid="stMain"] [data-testid="stPageLink"]').length,
    [...document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]')]
        .some(e => e.innerText.includes("CPU") || e.innerText.includes("GPU")),
]""".replace("(FIRST_HEADING)", f"({FIRST_HEADING})")


async def _home_while_held(gate) -> tuple[list, str]:
    """A held server whose gate is never made: what a browser shows once the home page's first run has finished."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    preparing = catalog("zh")["common.frame.preparing"]
    async with _held_server(gate) as (page, url, log):
        await page.goto(url + "/?lang=zh", timeout=120_000)
        await page.wait_for_function(FIRST_RUN_FINISHED, timeout=90_000, polling=50)
        # The browser draws the finished run's last elements a moment after its state says so (CI once read 9 of
        # the 15 cards with the lesson button already drawn): wait for the button and every card.
        last = (
            '(cards) => document.querySelector(\'[data-testid="stMain"] [data-testid="stButton"]\') &&'
            ' document.querySelectorAll(\'[data-testid="stMain"] [data-testid="stPageLink"]\').length >= cards'
        )
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_function(last, arg=len(PAGE_NAMES), timeout=10_000, polling=50)
        return await page.evaluate(HOME_SHOWN, preparing), log()


def test_a_fresh_server_draws_the_whole_home_page_before_it_loads_any_page_s_modules(tmp_path):
    """The first page of a fresh server drawn whole within 3 s of its start (issue 26) needs the home page not to
    wait for the ~2 s of a core that importing torch and the pages' modules takes: with the page-loading thread held
    (it imports nothing until a file appears, which this test never makes) the home page's run still ends with every
    card, its lesson button, the sidebar's hardware line, and no "preparing" word. No wall-clock bound."""
    chromium_or_skip()
    from playwright.async_api import Error as PlaywrightError

    try:
        shown, log = run_async(asyncio.wait_for(_home_while_held(tmp_path / "gate"), 300))
    except PlaywrightError as e:  # waited for the held load: the home page's run never ended
        pytest.fail(f"the home page's first run did not end while the load was held: {e}")
    assert shown[:3] == [catalog("zh")["home.title"], 0, "notRunning"], shown
    assert shown[3] >= 1 and shown[4] == len(PAGE_NAMES) and shown[5], shown  # the lesson button, every card
    assert UNCAUGHT not in log and "Traceback" not in log, log[-3000:]
