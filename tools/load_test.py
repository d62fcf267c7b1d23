"""A classroom load test: N concurrent browser sessions change controls on a real server.

    python -m tools.load_test --sessions 30 --changes 20 --out benchmarks/load_test.md
    python -m tools.load_test --client ws --sessions 30 --changes 20 --out benchmarks/load_test_ws.md
    python -m tools.load_test --client ws --sessions 30 --changes 8 --think 3 9 --switch-share 0.2 \
        --out benchmarks/load_test_human.md        # a class at a human pace
    python -m tools.load_test --client ws --sessions 30 --heavy 5 --changes 8 --think 3 9 --switch-share 0.2 \
        --heavy-at 60 --heavy-timeout 3600 --global-timeout 5400 \
        --out benchmarks/load_test_heavy.md      # ... of whom 5 start the heaviest benchmark (3-4 min each)
    python -m tools.load_test --fresh 3 --sessions 30 --changes 8 --think 3 9 \
        --out benchmarks/load_test_fresh.md      # a class at once on each of 3 fresh (never visited) servers

Two paces. Closed loop (the default): every session makes its next change as soon as the last one finished,
every fifth change a page switch; the figure is the server's throughput at saturation (reruns per second).
Human pace (`--think LO HI`): after opening its first page and after each finished change a session waits a
uniform LO..HI seconds, as a student reading the chart would, and switches page with probability
`--switch-share`; the figure is the time a student waits for a change. `--pages` limits the mix of pages
(default: every page).

With `--client ws` the sessions speak Streamlit's websocket protocol instead (tools/ws_client.py): the
same mix of changes, without 30 Chromium renderers competing with the server for the CPUs. As a browser does,
a change of a control drawn inside a section (st.fragment) asks for a run of that section only.

Train at once (`--train same|different`, websocket client): the sessions press Train on the learning page at the
same moment, with one setting or each its own; see tools/load_train.py.

Heavy work (`--heavy K`, websocket client only): K of the sessions open the scaling page with its heaviest
settings in the URL (heaviest_settings(); `--heavy-set KEY=VALUE` replaces some, for a short run), wait for
each other, and press "Run benchmark" at the same moment, `--heavy-at` seconds after the start; each then
waits for its run's end and records its outcome (finished, or why not: the server's line full, an error, a
timeout), how long its status said it waited for others, and how long it took. The other sessions behave
as above and go on changing controls until every benchmark has ended; their change → rerun times are
reported apart, in all and during the heavy phase, with the server's RSS during that phase.

A fresh server (`--fresh N`, websocket client): N servers one after the other, none of them visited before (no
warm visit); on each, the sessions open their first pages within `--open-within` seconds of its health check, change
a control the moment it is drawn and go on at the human pace (`--think`, default 3-9 s), while one headless
Chromium, started before the server, opens the home page. Reported per server: session errors, "Uncaught app
execution" lines in the server's log, change -> rerun p50/p95/max, and the time from the server's start to its
health check, to the browser's first drawn page (its title, and its whole first run) and to the first and last
session's first page. With `--sessions 0` the browser is alone: one visitor's first page on a fresh server.

Starts `streamlit run app.py` on a free loopback port (tools/server.py), then drives N sessions at
once from one headless Chromium (N browser contexts, Playwright's async API). Each session opens a
page and makes `changes` changes: a slider moved with the keyboard, a checkbox or toggle clicked,
or (every fifth change) another page chosen in the sidebar navigation.

Change -> rerun time: from just before the key press or click until the app's script has run to
its end. An init script counts every change of `stApp`'s `data-test-script-state` attribute
(Streamlit 1.67 sets `initial`, `running`, `rerunRequested`, `notRunning`, ...); a change has
finished when that count has moved since the action, the state is `notRunning` and no
`stStatusWidget` is shown. It includes the widget's own debounce before the client sends the
value, the server's run and the browser drawing the result.

Errors: a change whose page then shows `stException` or an error `stAlert`, a page crash, or a
change that did not finish within the per-action timeout. Server memory: RSS of the server process
and its children from /proc, sampled every 0.5 s: baseline after start plus one warm visit to
every page, the peak during the run, and a few seconds after every session has closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import os
import pathlib
import platform
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.parse
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.ui.registry import PAGES  # noqa: E402
from tools.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

PAGE_NAMES = [pathlib.Path(p.path).stem for p in PAGES]
VIEWPORT = {"width": 1400, "height": 1000}

# Runs in every document before the app's own scripts: counts script-state changes of stApp.
COUNT_STATE_CHANGES = """
window.__ltChanges = 0;
new MutationObserver((records) => { window.__ltChanges += records.length; })
    .observe(document, {attributes: true, subtree: true, attributeFilter: ['data-test-script-state']});
"""
CHANGES = "() => window.__ltChanges"
RUN_FINISHED = """(before) => {
    const app = document.querySelector('[data-testid="stApp"]');
    return window.__ltChanges > before && app && app.dataset.testScriptState === 'notRunning'
        && !document.querySelector('[data-testid="stStatusWidget"]');
}"""
FIRST_HEADING = """() => document.querySelector(
    '[data-testid="stMainBlockContainer"] [data-testid="stHeading"]')?.innerText ?? null"""
FIRST_RUN_FINISHED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.dataset.testScriptState === 'notRunning'
        && !document.querySelector('[data-testid="stStatusWidget"]')
        && document.querySelector('[data-testid="stMainBlockContainer"] [data-testid="stHeading"]');
}"""
STATE = """() => [document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState,
    window.__ltChanges, !!document.querySelector('[data-testid="stStatusWidget"]')].join('/')"""
ERRORS_SHOWN = """() => document.querySelectorAll(
    '[data-testid="stException"], [data-testid="stAlertContentError"]').length"""
# Marks one visible, enabled control of the main area with data-lt-target and describes it.
PICK_CONTROL = """([kind, r]) => {
    document.querySelectorAll('[data-lt-target]').forEach(e => e.removeAttribute('data-lt-target'));
    const main = document.querySelector('[data-testid="stMain"]');
    const shown = (box) => box.checkVisibility() && box.getBoundingClientRect().width > 0;
    const sel = kind === 'slider' ? '[data-testid="stSlider"]' : '[data-testid="stCheckbox"]';
    const inner = kind === 'slider' ? 'input[type=range]' : 'input[type=checkbox]';
    // a control inside a form reruns nothing until the form is submitted: not a change to time
    const boxes = [...main.querySelectorAll(sel)].filter(
        b => shown(b) && !b.querySelector(inner).disabled && !b.closest('[data-testid="stForm"]'));
    if (!boxes.length) return null;
    const box = boxes[Math.floor(r * boxes.length)];
    const input = box.querySelector(inner);
    const target = kind === 'slider' ? input : box.querySelector('label');
    target.setAttribute('data-lt-target', '1');
    return {label: input.getAttribute('aria-label') || box.innerText.trim().slice(0, 40),
            value: Number(input.value), min: Number(input.min), max: Number(input.max)};
}"""


@dataclass(frozen=True)
class Pace:
    """How a session paces its changes: think time after each (none: closed loop) and how often it switches page."""

    think: tuple[float, float] | None = None  # seconds, uniform; None: the next change at once
    switch_share: float | None = None  # probability that a change is a page switch; None: every fifth change
    pages: tuple[str, ...] = tuple(PAGE_NAMES)
    read_first: bool = True  # human pace: think once after opening the first page too (not: change at once)

    def switch(self, c: int, rng: random.Random) -> bool:
        return c % 5 == 4 if self.switch_share is None else rng.random() < self.switch_share

    async def think_after(self, rng: random.Random) -> None:
        if self.think is not None:
            await asyncio.sleep(rng.uniform(*self.think))

    def round_of_pages(self, idx: int) -> list[str]:
        """The session's order of pages, starting at a different one for each session."""
        pages = list(self.pages)
        return pages[idx % len(pages) :] + pages[: idx % len(pages)]


CLOSED_LOOP = Pace()


def heaviest_settings() -> dict[str, str]:
    """The scaling page's heaviest benchmark as URL parameters: the largest n, d and H, the smallest (slowest)
    tile, the largest memory budget and time limit, not causal (causal skips half the work), every method the page
    offers on this machine."""
    from explorer.tables import scaling as tables

    return {
        "bench_max_n": str(tables.MAX_N_OPTIONS[-1]),
        "bench_d": "128",  # views/scaling.py offers 16, 32, 64, 128
        "bench_heads": "8",  # ... and 1, 2, 4, 8
        "bench_block": str(min(b for b in tables.BLOCK_OPTIONS if b != tables.AUTO)),
        "bench_budget_mb": str(max(tables.budget_options())),
        "bench_time_limit": "120",  # the slider's largest value
        "bench_causal": "false",
        "bench_methods": ",".join(tables.method_options(tables.live_device())),
    }


def _waiting_prefix() -> str:
    """How the scaling page's "waiting for the server" status begins (English: the load test's sessions)."""
    with open(ROOT / "locales" / "en" / "scaling.toml", "rb") as f:
        return tomllib.load(f)["queue"]["waiting"].split("{")[0]


@dataclass(frozen=True)
class Heavy:
    """The heavy part of a class: `count` sessions open the scaling page with `settings` in its URL and press
    "Run benchmark" at the same moment, `at_s` after the sessions started; the others keep changing controls
    until every benchmark has ended. Each heavy session has its own seed (1, 2, ...), so that no two share a
    cached result, unless `same_seed`: then they ask for the same one, as a class on one teacher's link would."""

    count: int = 0
    settings: tuple[tuple[str, str], ...] = ()
    at_s: float = 15.0
    timeout_s: float = 1800.0  # for one benchmark, its wait in the server's line included
    same_seed: bool = False

    def seed(self, k: int) -> int:
        return 0 if self.same_seed else k + 1

    def query(self, k: int) -> str:
        return urllib.parse.urlencode([*self.settings, ("seed", str(self.seed(k)))])


@dataclass
class HeavyRun:
    """What one heavy session saw: `outcome` is finished (charts drawn), full (the server's line was full),
    error (an exception or error box), timeout (no end within the time allowed), nothing (no chart, no error)
    or failed (the session itself broke); `why` holds the warnings and errors the page showed."""

    seed: int
    outcome: str = "failed"
    why: list[str] = field(default_factory=list)
    waited_s: float = 0.0  # time its status said it was waiting for others
    total_s: float = float("nan")  # from the click to the end of the run
    click_at: float = float("nan")  # time.monotonic()
    end_at: float = float("nan")


@dataclass
class SessionResult:
    changes: list[tuple[str, str, float]] = field(default_factory=list)  # (kind, what, seconds) per finished change
    errors: list[str] = field(default_factory=list)
    planned: int = 0
    at: list[float] = field(default_factory=list)  # time.monotonic() when each finished change was made
    heavy: HeavyRun | None = None  # set for a heavy session (it makes no changes)


async def _finish(page, before: int, timeout_ms: float) -> None:
    await page.wait_for_function(RUN_FINISHED, arg=before, timeout=timeout_ms, polling=50)


async def _change(page, c: int, rng: random.Random, pages: list[str], pace: Pace) -> tuple[str, str]:
    """Make change number c; return its kind (slider, checkbox, page) and what was done.

    `pages` is the session's round of pages, the current one first; a page switch rotates it.
    """
    info = None
    if not pace.switch(c, rng):
        kind = "checkbox" if rng.random() < 0.2 else "slider"
        info = await page.evaluate(PICK_CONTROL, [kind, rng.random()])
        if info is None and kind == "checkbox":
            kind, info = "slider", await page.evaluate(PICK_CONTROL, ["slider", rng.random()])
    if info is None:  # every fifth change, or a page without a usable control
        pages.append(pages.pop(0))
        await page.locator(f'[data-testid="stSidebarNavLink"][href$="/{pages[0]}"]').click()
        return "page", f"go to {pages[0]}"
    target = page.locator("[data-lt-target]")
    if kind == "checkbox":
        await target.click()
        return kind, f"click {info['label']!r} on {pages[0]}"
    key = _slider_key(info, rng)
    await target.focus()
    await page.keyboard.press(key)
    return kind, f"{key} on slider {info['label']!r} of {pages[0]}"


def _slider_key(info: dict, rng: random.Random) -> str:
    """A key that surely moves the slider: at an end only the way back in; End/Home now and then."""
    if info["value"] >= info["max"]:
        return "ArrowLeft" if rng.random() < 0.8 else "Home"
    if info["value"] <= info["min"]:
        return "ArrowRight" if rng.random() < 0.8 else "End"
    return rng.choice(["ArrowRight"] * 5 + ["ArrowLeft"] * 3 + ["End", "Home"])


async def run_session(browser, url, idx, changes, timeout_ms, seed, result, pace: Pace = CLOSED_LOOP) -> None:
    """One student: open a page, then make `changes` changes, timing each to its finished rerun."""
    rng = random.Random(seed * 1000 + idx)
    pages = pace.round_of_pages(idx)
    context = await browser.new_context(viewport=VIEWPORT)
    try:
        await context.add_init_script(COUNT_STATE_CHANGES)
        page = await context.new_page()
        page.on("crash", lambda _: result.errors.append(f"session {idx}: page crashed"))
        await page.goto(f"{url}/{pages[0]}", timeout=timeout_ms)
        await page.wait_for_function(FIRST_RUN_FINISHED, timeout=timeout_ms, polling=100)
        for c in range(changes):
            before = await page.evaluate(CHANGES)
            start = time.perf_counter()
            kind, what = await _change(page, c, rng, pages, pace)
            try:
                await _finish(page, before, timeout_ms)
            except Exception as e:  # noqa: BLE001 - a timeout or a crash: count it and go on
                state = await page.evaluate(STATE)
                result.errors.append(f"session {idx} change {c} ({what}): {type(e).__name__}, state {state}")
                continue
            result.changes.append((kind, f"session {idx}: {what}", time.perf_counter() - start))
            if await page.evaluate(ERRORS_SHOWN):
                result.errors.append(f"session {idx} change {c} ({what}): error shown on the page")
            await pace.think_after(rng)
    except Exception as e:  # noqa: BLE001 - the session could not go on
        result.errors.append(f"session {idx}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    finally:
        await context.close()


async def run_ws_session(
    url,
    idx,
    changes,
    timeout_s,
    seed,
    result,
    pace: Pace = CLOSED_LOOP,
    cookies: bool = False,
    finish=None,
    until: asyncio.Event | None = None,
) -> None:
    """One student over Streamlit's websocket protocol (tools/ws_client.py): the same mix of changes.

    `cookies`: load the page over HTTP first and carry its cookies, as a browser does (sticky sessions behind
    nginx need them). `finish`: an async callable given the open session and `result` after the last change.
    `until`: after `changes` changes, go on changing until this event is set (and count those as planned too).
    """
    from tools.ws_client import WsSession

    rng = random.Random(seed * 1000 + idx)
    pages = pace.round_of_pages(idx)
    try:
        async with WsSession(url, cookies=cookies) as session:
            first = await session.rerun(pages[0], timeout=timeout_s)
            result.errors += [f"session {idx} first page ({pages[0]}): {e}" for e in first.errors]
            if pace.read_first:
                await pace.think_after(rng)  # a student reads the page before moving anything (human pace)
            c = -1
            while (c := c + 1) < changes or (until is not None and not until.is_set()):
                result.planned = max(result.planned, c + 1)
                made_at = time.monotonic()
                step = None if pace.switch(c, rng) else session.pick_change(rng)
                if step is None:
                    pages.append(pages.pop(0))
                    kind, what = "page", f"go to {pages[0]}"
                    action = session.rerun(pages[0], timeout=timeout_s)
                else:
                    what, state = step
                    kind = what.split()[0].replace("select_", "")
                    action = session.set(state, timeout=timeout_s)  # as a browser: only its section, if it has one
                try:
                    run = await action
                except TimeoutError:
                    result.errors.append(f"session {idx} change {c} ({what}): no finished run within {timeout_s:.0f} s")
                    continue
                result.changes.append((kind, f"session {idx}: {what}", run.seconds))
                result.at.append(made_at)
                result.errors += [f"session {idx} change {c} ({what}): {e}" for e in run.errors]
                await pace.think_after(rng)
            if finish is not None:
                await finish(session, result)
    except Exception as e:  # noqa: BLE001 - the session could not go on
        result.errors.append(f"session {idx}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")


async def run_heavy_session(url, k: int, heavy: Heavy, barrier: asyncio.Barrier, click_at: float, result) -> None:
    """Heavy session k: open the scaling page at heavy.settings, wait at the barrier for the others, press
    "Run benchmark" at time.monotonic() == click_at, and wait for the run's end (heavy.timeout_s at most)."""
    from tools.ws_client import WsSession

    done = result.heavy = HeavyRun(heavy.seed(k))
    passed = False
    try:
        async with WsSession(url) as session:
            first = await session.rerun("scaling", query=heavy.query(k), timeout=heavy.timeout_s)
            button = next((w for w in first.widgets if w.endswith("-bench_run")), None)
            if button is None or first.errors:
                raise RuntimeError(f"the scaling page drew no Run benchmark button, or an error: {first.errors}")
            await barrier.wait()
            passed = True
            await asyncio.sleep(max(0.0, click_at - time.monotonic()))
            done.click_at = time.monotonic()
            try:
                run = await session.rerun(trigger=button, timeout=heavy.timeout_s)
            except TimeoutError:
                done.outcome, done.end_at = "timeout", time.monotonic()
                done.total_s = done.end_at - done.click_at
                result.errors.append(f"heavy session {k}: the benchmark did not end within {heavy.timeout_s:.0f} s")
                return
            done.end_at = time.monotonic()
            done.total_s = run.seconds
            done.waited_s = waited(run.progress, _waiting_prefix())
            full = _full_text()
            if run.errors:
                done.outcome, done.why = "error", list(run.errors)
                result.errors += [f"heavy session {k}: {e}" for e in run.errors]
            elif any(w.startswith(full) for w in run.warnings):
                done.outcome, done.why = "full", list(run.warnings)
            else:
                done.outcome, done.why = ("finished" if run.charts else "nothing"), list(run.warnings)
    except Exception as e:  # noqa: BLE001 - the session could not go on
        if not passed:
            barrier.abort()  # the others would wait for this one for ever
        result.errors.append(f"heavy session {k}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")


def _full_text() -> str:
    with open(ROOT / "locales" / "en" / "scaling.toml", "rb") as f:
        return tomllib.load(f)["queue"]["full"]


def waited(progress: list[tuple[float, str]], prefix: str) -> float:
    """Seconds the progress bar said "waiting": from each waiting text to the next progress text that is not."""
    total, since = 0.0, None
    for t, text in progress:
        if text.startswith(prefix):
            since = t if since is None else since
        elif since is not None:
            total, since = total + t - since, None
    return total


async def _all_sessions(session, sessions: int, changes: int, total_s: float):
    """Run session(i, result) for every i at once, cutting off any still running after total_s.

    Returns the results and the wall time.
    """
    results = [SessionResult(planned=changes) for _ in range(sessions)]
    start = time.perf_counter()
    jobs = [asyncio.create_task(session(i, r)) for i, r in enumerate(results)]
    if not jobs:  # --fresh with --sessions 0: the browser alone
        return results, 0.0
    _, late = await asyncio.wait(jobs, timeout=total_s)
    for i, job in enumerate(jobs):
        if job in late:
            job.cancel()
            results[i].errors.append(f"session {i}: cut off by the global timeout ({total_s:.0f} s)")
    await asyncio.gather(*late, return_exceptions=True)
    return results, time.perf_counter() - start


async def run_ws_sessions(
    url, sessions, changes, timeout_s=60, seed=0, total_s=900, pace: Pace = CLOSED_LOOP, heavy: Heavy | None = None
):
    """N concurrent websocket sessions, all cut off after total_s; returns their results and the wall time.

    With `heavy`, sessions 0 .. heavy.count - 1 are its heavy sessions (run_heavy_session) and the others change
    controls until all of those have ended (at least `changes` changes each).
    """
    heavy = heavy or Heavy()
    if not 0 <= heavy.count <= sessions:
        raise ValueError(f"heavy.count must be in 0..sessions ({sessions}), got {heavy.count}")
    until = asyncio.Event() if heavy.count else None
    barrier = asyncio.Barrier(heavy.count) if heavy.count else None
    click_at = time.monotonic() + heavy.at_s
    left = [heavy.count]

    async def session(i: int, result: SessionResult) -> None:
        if i >= heavy.count:
            await run_ws_session(url, i, changes, timeout_s, seed, result, pace, until=until)
            return
        result.planned = 0  # its click is not a change
        try:
            await run_heavy_session(url, i, heavy, barrier, click_at, result)
        finally:
            left[0] -= 1
            if not left[0]:
                until.set()

    return await _all_sessions(session, sessions, changes, total_s)


async def run_sessions(url, sessions, changes, timeout_s=60, seed=0, total_s=900, pace: Pace = CLOSED_LOOP):
    """N concurrent sessions from one browser, all cut off after total_s; returns their results and the wall time."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)

        async def session(i: int, result: SessionResult) -> None:
            await run_session(browser, url, i, changes, 1000 * timeout_s, seed, result, pace)

        try:
            return await _all_sessions(session, sessions, changes, total_s)
        finally:
            await browser.close()


async def warm_visit(url: str, timeout_s: float = 120) -> None:
    """One session visits every page once, so the baseline has the modules imported and caches warm."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport=VIEWPORT)
            for name in PAGE_NAMES:
                await page.goto(f"{url}/{name}", timeout=1000 * timeout_s)
                await page.wait_for_function(FIRST_RUN_FINISHED, timeout=1000 * timeout_s, polling=100)
        finally:
            await browser.close()


def tree_pids(root: int) -> list[int]:
    """The process and all its descendants, from the ppid field of /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = pathlib.Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo += children.get(pid, [])
    return pids


def tree_rss_mb(root: int, field: str = "VmRSS") -> float:
    """The sum of `field` (VmRSS now, or VmHWM: the highest RSS so far) over the process and its descendants."""
    total_kb = 0
    for pid in tree_pids(root):
        try:
            for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    total_kb += int(line.split()[1])
        except OSError:
            pass
    return total_kb / 1024


class MemorySampler(threading.Thread):
    """Samples the server tree's RSS every `interval` s; `peak_since(t)` reads the samples."""

    def __init__(self, pid: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.monotonic(), tree_rss_mb(self.pid)))
            self.stop.wait(self.interval)

    def peak_between(self, t0: float, t1: float) -> float:
        return max((mb for t, mb in self.samples if t0 <= t <= t1), default=float("nan"))


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def machine() -> dict[str, str]:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "unknown")
    import streamlit
    import torch

    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
        "python": platform.python_version(),
        "streamlit": streamlit.__version__,
        "torch": torch.__version__,
    }


def _row(name: str, ts: list[float]) -> str:
    if not ts:
        return f"| {name} | 0 | - | - | - | - |"
    q = (percentile(ts, 0.5), percentile(ts, 0.95), max(ts), statistics.fmean(ts))
    return f"| {name} | {len(ts)} | " + " | ".join(f"{x:.2f}" for x in q) + " |"


def _heavy_phase(results) -> tuple[float, float] | None:
    """(first click, last end) of the heavy sessions, in time.monotonic(); None without any click."""
    runs = [r.heavy for r in results if r.heavy is not None and r.heavy.click_at == r.heavy.click_at]
    if not runs:
        return None
    ends = [h.end_at if h.end_at == h.end_at else h.click_at for h in runs]
    return min(h.click_at for h in runs), max(ends)


def _heavy_section(args, results, done_at, mem) -> list[str]:
    runs = [r.heavy for r in results if r.heavy is not None]
    phase = _heavy_phase(results)
    before = [t for (_, _, t), at in done_at if phase and at < phase[0]]
    during = [t for (_, _, t), at in done_at if phase and phase[0] <= at <= phase[1]]
    lines = [
        "## Heavy benchmarks",
        "",
        f"{len(runs)} sessions opened the scaling page with `{urllib.parse.urlencode(args.heavy_settings)}` "
        f"(seed {'0 for all' if args.heavy_same_seed else '1, 2, … one per session'}) and pressed Run benchmark "
        f"together, {args.heavy_at:g} s after the sessions started; the other sessions kept changing controls "
        "until every benchmark had ended. The server runs at most ATTN_HEAVY_SLOTS "
        f"(here {os.environ.get('ATTN_HEAVY_SLOTS', '1 (default)')}) benchmarks at once (explorer/ui/heavy.py).",
        "",
        "| session | seed | outcome | waited s | ran s | click → end s | what the page said |",
        "| ---: | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for i, h in enumerate(runs):
        why = "; ".join(w.replace("|", "/").replace("\n", " ")[:160] for w in h.why) or "-"
        ran = h.total_s - h.waited_s
        lines.append(f"| {i} | {h.seed} | {h.outcome} | {h.waited_s:.1f} | {ran:.1f} | {h.total_s:.1f} | {why} |")
    lines += [
        "",
        f"Heavy phase: {phase[1] - phase[0]:.0f} s from the first click to the last end."
        if phase
        else "No benchmark was started.",
        "",
        "The non-heavy sessions' changes, by when they were made (the same sessions, the same run):",
        "",
        "| changes | count | p50 s | p95 s | max s | mean s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        _row("before the first click", before),
        _row("during the heavy phase", during),
        "",
        f"Server RSS peak during the heavy phase (samples every {args.mem_interval:g} s): {mem['heavy_peak']:.0f} MB.",
        "",
    ]
    return lines


def report(args, results, wall_s, mem: dict[str, float], command: str) -> tuple[str, bool]:
    light = [r for r in results if r.heavy is None]  # with --heavy, the others; without, every session
    heavy = [r.heavy for r in results if r.heavy is not None]
    done = [ch for r in light for ch in r.changes]
    done_at = [(ch, at) for r in light for ch, at in zip(r.changes, r.at, strict=False)]
    times = [t for _, _, t in done]
    errors = [e for r in results for e in r.errors]
    planned = sum(r.planned for r in results)
    p95 = percentile(times, 0.95)
    m = machine()
    growth = mem["after"] - mem["baseline"]
    rate = len(times) / wall_s if wall_s else float("nan")
    human = args.think is not None
    limit = 1.5 if heavy else 1.0
    goals = [
        ("0 errors", len(errors) == 0, f"{len(errors)} errors"),
        ("0 lost changes", len(times) == planned, f"{planned - len(times)} of {planned} lost"),
        (
            f"p95 change→rerun ≤ {limit} s" + (" (non-heavy sessions)" if heavy else ""),
            p95 <= limit,
            f"p95 = {p95:.2f} s",
        )
        if human
        else ("reruns per second at saturation ≥ 15", rate >= 15, f"{rate:.2f} reruns/s"),
        ("memory after close within 100 MB of baseline", growth <= 100, f"{growth:+.0f} MB"),
    ]
    if heavy:
        said = sum(h.outcome in ("finished", "full") for h in heavy)
        goals += [
            ("server RSS ≤ 1 GB (1024 MB) all along", mem["peak"] <= 1024, f"peak {mem['peak']:.0f} MB"),
            ("every benchmark finished or said why not", said == len(heavy), f"{said} of {len(heavy)}"),
        ]
    pace = (
        f"human: think {args.think[0]:g}–{args.think[1]:g} s after each change, a page switch with probability "
        f"{args.switch_share:g}"
        + (
            ", the first change right after the first page opened"
            if args.change_at_once
            else ", the first page read for a think time too"
        )
        if human
        else "closed loop: the next change as soon as the last finished, every fifth a page switch"
    )
    lines = [
        "# Classroom load test",
        "",
        f"- date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} RAM",
        f"- versions: python {m['python']}, streamlit {m['streamlit']}, torch {m['torch']}",
        f"- command: `{command}`",
        (
            f"- sessions: {args.sessions}, of which {len(heavy)} heavy; the other {len(light)} made at least "
            f"{args.changes} changes each and went on until the benchmarks had ended: {planned} planned changes, "
            f"{len(times)} finished; wall time {wall_s:.0f} s; {rate:.2f} finished reruns per second"
            if heavy
            else f"- sessions × changes: {args.sessions} × {args.changes} = {planned} planned changes, "
            f"{len(times)} finished; wall time {wall_s:.0f} s; {rate:.2f} finished reruns per second"
        ),
        f"- pace: {pace}; pages: {', '.join(args.pages)}",
        (
            "- the client (one headless Chromium with one context per session) runs on the same machine as "
            "the server and shares its CPUs"
            if args.client == "browser"
            else "- the client speaks Streamlit's websocket protocol (tools/ws_client.py: one socket per session, "
            "the widget states a browser would send, a section's control rerunning only its section as in a browser; "
            "change → rerun = from sending the rerun to `script_finished`, without the browser's debounce and "
            "drawing); it runs on the same machine"
        ),
        "",
        "| goal | met | measured |",
        "| --- | --- | --- |",
        *[f"| {g} | {'yes' if ok else 'NO'} | {v} |" for g, ok, v in goals],
        "",
        "## Change → rerun time" + (" (the non-heavy sessions)" if heavy else ""),
        "",
        "| changes | count | p50 s | p95 s | max s | mean s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        _row("all", times),
        *[_row(kind, [t for k, _, t in done if k == kind]) for kind in ("slider", "checkbox", "page")],
        "",
        "Slowest changes:",
        "",
        *[f"- {t:.2f} s: {what}" for _, what, t in sorted(done, key=lambda ch: -ch[2])[:5]],
        "",
        *(_heavy_section(args, results, done_at, mem) if heavy else []),
        "## Server memory (RSS of the server process and its children)",
        "",
        "| baseline MB | peak MB | after close MB | after close − baseline MB | high-water mark MB |",
        "| ---: | ---: | ---: | ---: | ---: |",
        f"| {mem['baseline']:.0f} | {mem['peak']:.0f} | {mem['after']:.0f} | {growth:+.0f} | {mem['hwm']:.0f} |",
        "",
        f"Baseline: after start and one warm visit to every page. Peak: the highest of the samples taken every "
        f"{args.mem_interval:g} s during the run. After close: {args.settle:.0f} s after the last session closed. "
        "High-water mark: the kernel's VmHWM of each process of the server, summed (their highest RSS since start, "
        "the warm-up included: no peak between two samples escapes it).",
        "",
        "## Errors",
        "",
        *([f"- {e}" for e in errors[:50]] or ["none"]),
        *([f"- ... and {len(errors) - 50} more"] if len(errors) > 50 else []),
        "",
    ]
    return "\n".join(lines), all(ok for _, ok, _ in goals)


# --- A fresh server: the class arrives at once on a server that nobody has visited yet (--fresh) ------------------

UNCAUGHT = "Uncaught app execution"  # what Streamlit logs when an exception reached a session's script
SLOWEST = 8  # the slowest changes each fresh server's report lists


@dataclass
class FreshRun:
    """One fresh server's class. Times are seconds after the server process was started."""

    results: list[SessionResult]
    wall_s: float
    healthy_s: float  # the server answered /_stcore/health
    opened_s: list[float]  # each session's first page finished (its first change is made right then)
    browser_s: float  # a headless Chromium had drawn the home page: its first run finished (nan: no browser)
    log: str  # the server's log
    title_s: float = float("nan")  # ... and showed the page's title (its first heading), at the latest browser_s
    slowest: list[tuple[float, float, str]] = field(default_factory=list)  # (seconds, made at, what), slowest first

    @property
    def uncaught(self) -> int:
        return self.log.count(UNCAUGHT)

    @property
    def errors(self) -> list[str]:
        return [e for r in self.results for e in r.errors]

    @property
    def times(self) -> list[float]:
        return [t for r in self.results for _, _, t in r.changes]


@contextlib.contextmanager
def fresh_server(start_timeout: float = 120.0, env: dict[str, str] | None = None):
    """`streamlit run app.py` on a free loopback port with its log in a temporary file: yields (url, started, log)
    with `started` the time.monotonic() just before the process was made and log() the log so far. `env`: variables
    added to this process's environment for the server (a test's ATTN_LOADER_GATE)."""
    from tools.server import _stop, free_port, wait_healthy

    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
    cmd += ["--server.port", str(port), "--server.address", "127.0.0.1"]
    with tempfile.TemporaryFile(mode="w+") as out:

        def log() -> str:
            out.flush()
            out.seek(0)
            return out.read()

        started = time.monotonic()
        server_env = {**os.environ, **(env or {})}
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True, env=server_env)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, start_timeout, "streamlit", log)
            yield url, started, log
        finally:
            _stop(proc)


@dataclass(frozen=True)
class FirstPage:
    """A browser's first page on a fresh server; times are seconds after `started` (time.monotonic())."""

    loaded_s: float  # the browser had loaded Streamlit's page and scripts (its "load" event)
    title_s: float  # the page's first heading was shown (the title; anything drawn below it may still be missing)
    title: str  # that heading's text
    drawn_s: float  # the page's first run had finished: every control and chart drawn
    final_title: str  # the first heading's text then


async def first_page(page, url: str, started: float, timeout_s: float) -> FirstPage:
    """Open `url` in `page` and time its title and its whole first run from `started` (polled every 20 ms)."""
    await page.goto(url, timeout=1000 * timeout_s)
    loaded_s = time.monotonic() - started
    await page.wait_for_function(f"() => ({FIRST_HEADING})()", timeout=1000 * timeout_s, polling=20)
    title_s, title = time.monotonic() - started, await page.evaluate(FIRST_HEADING)
    await page.wait_for_function(FIRST_RUN_FINISHED, timeout=1000 * timeout_s, polling=20)
    return FirstPage(loaded_s, title_s, title, time.monotonic() - started, await page.evaluate(FIRST_HEADING))


async def _first_drawn(browser, url: str, started: float, timeout_s: float, path: str = "") -> FirstPage:
    """The title and first run of the page at `path` (the home page: "") in `browser` (launched before the server)."""
    page = await browser.new_page(viewport=VIEWPORT)
    try:
        return await first_page(page, f"{url}/{path}" if path else url, started, timeout_s)
    finally:
        await page.close()


async def fresh_class(
    sessions: int,
    changes: int,
    open_within_s: float,
    pace: Pace,
    seed: int = 0,
    browser=None,
    timeout_s: float = 60,
    total_s: float = 900,
    browser_page: str = "",
) -> FreshRun:
    """A fresh server; as soon as it answers, `sessions` websocket sessions open their first pages (each its own
    round of pages, as in run_ws_sessions) at random moments within `open_within_s`, change a control the moment it
    is drawn, then go on at `pace`; `browser` (a Playwright browser), if given, opens the page at `browser_page`
    (the home page: "") at once too."""
    rng = random.Random(seed)
    delays = [rng.uniform(0, open_within_s) for _ in range(sessions)]
    pace = dataclasses.replace(pace, read_first=False)
    with fresh_server() as (url, started, log):
        healthy_s = time.monotonic() - started

        async def session(i: int, result: SessionResult) -> None:
            await asyncio.sleep(delays[i])
            await run_ws_session(url, i, changes, timeout_s, seed, result, pace)

        probe = asyncio.create_task(_first_drawn(browser, url, started, timeout_s, browser_page)) if browser else None
        results, wall_s = await _all_sessions(session, sessions, changes, total_s)
        shown = await probe if probe else FirstPage(float("nan"), float("nan"), "", float("nan"), "")
        opened = sorted(r.at[0] - started for r in results if r.at)  # the first change is made as the page is drawn
        made = [(t, at - started, what) for r in results for (_, what, t), at in zip(r.changes, r.at, strict=True)]
        slowest = sorted(made, reverse=True)[:SLOWEST]
        return FreshRun(results, wall_s, healthy_s, opened, shown.drawn_s, log(), shown.title_s, slowest)


async def run_fresh(args, pace: Pace) -> list[FreshRun]:
    """args.fresh fresh servers one after the other, a class at once on each; one Chromium for all of them, started
    first so that its own start is not counted in the time to the first page."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = None
        if not args.no_browser:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            common = (args.sessions, args.changes, args.open_within, pace)
            limits = (args.action_timeout, args.global_timeout)
            runs = range(args.fresh)
            return [await fresh_class(*common, args.seed + k, browser, *limits, args.browser_page) for k in runs]
        finally:
            if browser is not None:
                await browser.close()


def fresh_main(args, pace: Pace, command: str) -> None:
    """The --fresh mode: run, report, write --out."""
    args.think = tuple(args.think or (3.0, 9.0))
    pace = dataclasses.replace(pace, think=args.think, switch_share=args.switch_share)
    args.load_before = os.getloadavg()
    text, _ = fresh_report(args, asyncio.run(run_fresh(args, pace)), command)
    print(text)
    if args.out:
        args.out.write_text(text)


def _fresh_row(name: str, run: FreshRun) -> str:
    ts, opened = run.times, run.opened_s
    q = [percentile(ts, 0.5), percentile(ts, 0.95), max(ts, default=float("nan"))]
    return (
        f"| {name} | {len(run.errors)} | {run.uncaught} | {len(ts)} | "
        + " | ".join(f"{x:.2f}" for x in q)
        + f" | {run.healthy_s:.1f} | {run.title_s:.1f} | {run.browser_s:.1f} | "
        f"{opened[0] if opened else float('nan'):.1f} | "
        f"{opened[-1] if opened else float('nan'):.1f} |"
    )


def fresh_report(args, runs: list[FreshRun], command: str) -> tuple[str, bool]:
    m = machine()
    times = [t for run in runs for t in run.times]
    errors = [f"server {k + 1}: {e}" for k, run in enumerate(runs) for e in run.errors]
    planned = sum(r.planned for run in runs for r in run.results)
    uncaught = sum(run.uncaught for run in runs)
    drawn = [run.browser_s if run.browser_s == run.browser_s else run.opened_s[:1] for run in runs]
    firsts = [first if isinstance(first, float) else first[0] for first in drawn if first]
    p95 = percentile(times, 0.95)
    goals = [
        ("0 session errors", not errors, f"{len(errors)} errors"),
        (f"0 '{UNCAUGHT}' in the servers' logs", not uncaught, f"{uncaught}"),
        *(
            [
                ("0 lost changes", len(times) == planned, f"{planned - len(times)} of {planned} lost"),
                ("p95 change→rerun ≤ 1.0 s", p95 <= 1.0, f"p95 = {p95:.2f} s"),
            ]
            if planned  # none with --sessions 0
            else []
        ),
        (
            "first page drawn ≤ 3 s after the server's start",
            max(firsts, default=99) <= 3.0,
            "worst " + (f"{max(firsts):.1f} s" if firsts else "none drawn"),
        ),
    ]
    titles = [run.title_s for run in runs if run.title_s == run.title_s]
    if titles:
        goals.append(
            (
                "first page's title shown ≤ 3 s after the server's start",
                max(titles) <= 3.0,
                f"worst {max(titles):.1f} s",
            )
        )
    exceptions = sorted(
        {
            line.strip()
            for run in runs
            for line in run.log.splitlines()
            if re.match(r"\s*\w+(\.\w+)*(Error|Exception)\b", line)
        }
    )
    lines = [
        "# A class at once on a fresh server",
        "",
        f"- date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} RAM; load average before the run "
        f"{' '.join(f'{x:.1f}' for x in args.load_before)} (the machine may be shared with other work)",
        f"- versions: python {m['python']}, streamlit {m['streamlit']}, torch {m['torch']}",
        f"- command: `{command}`",
        f"- {args.fresh} fresh servers, one after the other; on each, {args.sessions} websocket sessions open their "
        f"first pages within {args.open_within:g} s of the server answering its health check (every session its "
        f"own page first, in the order of the pages), change a control the moment the page is drawn, then every "
        f"{args.think[0]:g}–{args.think[1]:g} s ({args.changes} changes each, a page switch with probability "
        f"{args.switch_share:g})"
        + (
            f"; a headless Chromium opens {'/' + args.browser_page if args.browser_page else 'the home page'} at the "
            "same time"
            if not args.no_browser
            else ""
        ),
        "- change → rerun (p50/p95/max): from sending the change to `script_finished` (tools/ws_client.py); the "
        "columns healthy, browser title, browser page, first and last ws page are seconds after the server process "
        "was started (browser title: the home page's title shown; browser page: its first run finished, every "
        "control drawn)",
        "",
        "| goal | met | measured |",
        "| --- | --- | --- |",
        *[f"| {g} | {'yes' if ok else 'NO'} | {v} |" for g, ok, v in goals],
        "",
        "| server | session errors | uncaught in log | changes | p50 s | p95 s | max s | healthy s | browser title s "
        "| browser page s | first ws page s | last ws page s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *[_fresh_row(str(k + 1), run) for k, run in enumerate(runs)],
        "",
        "Slowest changes of each server (seconds, made at seconds after the server's start):",
        "",
        *[
            f"- server {k + 1}: {t:.2f} s at {at:.1f} s: {what}"
            for k, run in enumerate(runs)
            for t, at, what in run.slowest
        ],
        "",
        "## Errors",
        "",
        *([f"- {e}" for e in errors[:30]] or ["none"]),
        "",
        "Exceptions named in the servers' logs:",
        "",
        *([f"- `{e[:200]}`" for e in exceptions[:20]] or ["none"]),
        "",
    ]
    return "\n".join(lines), all(ok for _, ok, _ in goals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--action-timeout", type=float, default=60, help="seconds one change may take")
    parser.add_argument("--global-timeout", type=float, default=900, help="seconds for all sessions")
    parser.add_argument("--settle", type=float, default=5, help="seconds to wait after close before measuring")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--client", choices=["browser", "ws"], default="browser", help="headless Chromium, or the websocket protocol"
    )
    parser.add_argument(
        "--think", type=float, nargs=2, metavar=("LO", "HI"), help="human pace: seconds to wait after each change"
    )
    parser.add_argument("--switch-share", type=float, default=0.2, help="human pace: share of changes that switch page")
    parser.add_argument(
        "--change-at-once",
        action="store_true",
        help="human pace: the first change right after the first page opened (30 sessions open and change together)",
    )
    parser.add_argument("--pages", nargs="+", default=PAGE_NAMES, choices=PAGE_NAMES, help="the mix of pages")
    parser.add_argument(
        "--heavy", type=int, default=0, metavar="K", help="K sessions start the scaling page's benchmark at once (ws)"
    )
    parser.add_argument("--heavy-at", type=float, default=15, help="seconds after the start that they press Run")
    parser.add_argument("--heavy-timeout", type=float, default=1800, help="seconds a benchmark may take, wait included")
    parser.add_argument(
        "--heavy-set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="URL parameters that replace the heaviest settings (bench_max_n=1024, say: a short run)",
    )
    parser.add_argument("--heavy-same-seed", action="store_true", help="every heavy session asks for the same result")
    parser.add_argument(
        "--fresh", type=int, default=0, metavar="N", help="N fresh servers, the class at once on each (ws, human pace)"
    )
    parser.add_argument("--open-within", type=float, default=1.0, help="--fresh: seconds in which sessions open")
    parser.add_argument("--no-browser", action="store_true", help="--fresh: no Chromium timing the first page")
    parser.add_argument(
        "--browser-page", default="", choices=["", *PAGE_NAMES], help="--fresh: the page Chromium opens (home: '')"
    )
    parser.add_argument(
        "--train", choices=["same", "different"], help="the sessions press Train at once (tools/load_train.py)"
    )
    parser.add_argument(
        "--train-page", choices=["learning", "induction"], default="learning", help="--train: whose Train button"
    )
    parser.add_argument("--train-set", nargs="+", default=[], metavar="KEY=VALUE", help="--train: URL parameters")
    parser.add_argument("--mem-interval", type=float, default=0.5, help="seconds between two samples of server RSS")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    if args.heavy and args.client != "ws":
        parser.error("--heavy needs --client ws")
    settings = heaviest_settings()
    for item in args.heavy_set:
        key, sep, value = item.partition("=")
        if not sep or key not in settings:
            parser.error(f"--heavy-set takes KEY=VALUE with KEY one of {', '.join(settings)}, got {item!r}")
        settings[key] = value
    args.heavy_settings = tuple(settings.items())
    heavy = Heavy(args.heavy, args.heavy_settings, args.heavy_at, args.heavy_timeout, args.heavy_same_seed)
    pace = Pace(
        think=tuple(args.think) if args.think else None,
        switch_share=args.switch_share if args.think else None,
        pages=tuple(args.pages),
        read_first=not args.change_at_once,
    )
    command = "python -m tools.load_test " + shlex.join(sys.argv[1:])
    if args.fresh:
        fresh_main(args, pace, command)
        return
    if args.train:
        from tools.load_train import train_main

        sys.exit(0 if train_main(args, command) else 1)

    with streamlit_server() as srv:
        sampler = MemorySampler(srv.proc.pid, args.mem_interval)
        sampler.start()
        try:
            asyncio.run(warm_visit(srv.url))
            time.sleep(2)
            baseline = tree_rss_mb(srv.proc.pid)
            t0 = time.monotonic()
            common = (srv.url, args.sessions, args.changes, args.action_timeout, args.seed, args.global_timeout, pace)
            run = run_ws_sessions(*common, heavy) if args.client == "ws" else run_sessions(*common)
            results, wall_s = asyncio.run(run)
            t1 = time.monotonic()
            hwm = tree_rss_mb(srv.proc.pid, "VmHWM")
            time.sleep(args.settle)
            phase = _heavy_phase(results)
            mem = {
                "baseline": baseline,
                "peak": sampler.peak_between(t0, t1),
                "after": tree_rss_mb(srv.proc.pid),
                "hwm": hwm,
                "heavy_peak": sampler.peak_between(*phase) if phase else float("nan"),
            }
        finally:
            sampler.stop.set()
    text, ok = report(args, results, wall_s, mem, command)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
