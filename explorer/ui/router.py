"""What the router (app.py) does around the pages: load every module once, in one thread, before any page runs (the
page asked for shows its title and lede meanwhile), and let a page's st.stop() end that page instead of the
router's whole run. A fresh server's home page needs none of
what the thread imports: it is drawn whole before the thread starts (home_first)."""

from __future__ import annotations

import ast
import atexit
import concurrent.futures
import contextlib
import gc
import importlib
import os
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

import streamlit as st

from explorer.ui.i18n import DEFAULT, LANGUAGES, browser_language, catalog
from explorer.ui.internals import StopException, run_yield_check
from explorer.ui.page import TEACHER_OPEN
from explorer.ui.registry import PAGES
from explorer.ui.sidebar import hardware_known

# Everything the router's chrome (sidebar, connection words, navigation, lesson bar) and the home page import: no
# torch, pandas or Altair. Imported here, by app.py's first line, so that a home page run while the page-loading
# thread imports the rest finds them in already and imports nothing itself: no two threads import the same module.
# Streamlit loads its icons' names on the first icon drawn (st.Page, st.page_link): one of them.
LIGHT = (
    *(f"explorer.ui.{name}" for name in ("connection", "glossary", "page", "sidebar", "state")),
    "streamlit.material_icon_names",
)
for _name in LIGHT:
    importlib.import_module(_name)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = (ROOT / "app.py", ROOT / "views")  # the router and the folder of page scripts

_loading = threading.Lock()
_load: concurrent.futures.Future | None = None  # the page-loading thread's outcome (None: not started yet)
GATE = "ATTN_LOADER_GATE"  # tests only: a file the page-loading thread waits for before it imports anything
_in_page = threading.local()  # .running: this script thread is inside router.run_page
_streamlit_stop = st.stop


def scripts() -> list[pathlib.Path]:
    """The router, then every page script, in a fixed order."""
    router, views = SCRIPTS
    return [router, *sorted(views.glob("*.py"))]


def top_imports(body: list) -> list:
    """The import statements a script runs at its top level, those under a top-level `if` too (app.py imports torch
    only once the load is done), none inside a function or class."""
    found = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            found += top_imports(node.body) + top_imports(node.orelse)
    return found


def import_lines(path: pathlib.Path):
    """A script's top-level import statements, compiled without the rest of the script."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return compile(ast.Module(top_imports(tree.body), type_ignores=[]), str(path), "exec")


def _wait_for_gate() -> None:
    """Hold the page-loading thread until the file named by ATTN_LOADER_GATE exists (unset: go at once): a test can
    then see what a fresh server draws while it loads, whatever the machine's speed."""
    gate = os.environ.get(GATE)
    while gate and not os.path.exists(gate):
        time.sleep(0.05)


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic collector off while the libraries are imported: each full collection on the way walks the
    growing heap (~0.2 s of CPU more for the load, benchmarks/first_page.md, "The router's warm-up"). One collection
    at the end frees the imports' cycles, which the first run's gc.freeze() would otherwise keep for good."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.collect()


def warm_first_encodes() -> None:
    """A two-row table through pandas, Arrow and an Altair spec: their first use imports ~25 modules more (pandas'
    Arrow strings, narwhals' pandas layer), which the class's first runs would otherwise import in many threads
    at once, each from its own page. ~40 ms of CPU, so done before any page runs."""
    import altair as alt
    import pandas as pd
    import pyarrow as pa

    table = pd.DataFrame({"x": [0.0, 1.0], "y": [1.0, 2.0]}, index=["a", "b"])
    pa.Table.from_pandas(table)
    alt.Chart(table).mark_bar().encode(x="x", y="y").to_dict()


def freeze() -> None:
    """Move what the process has made so far out of the collector's generations (it stays for good: modules); unfrozen
    at exit, where Triton's nanobind module would report each frozen object as a leak. Also what a home page drawn
    before the load does (home_first), which settle_process, importing torch, cannot."""
    gc.freeze()
    atexit.unregister(gc.unfreeze)
    atexit.register(gc.unfreeze)


LOADER_NICE = 10  # the page-loading thread's niceness above the server's: see yield_cpu


def yield_cpu() -> None:
    """Lower this thread's CPU priority (Linux: each thread has its own niceness; elsewhere nothing). The page-loading
    thread's ~2 s of a core otherwise compete with the first visitors' browsers loading Streamlit's scripts on the
    same cores when they share the machine (the load test's Chromium, the class arriving and first pages in turns:
    its home page whole 2.7-3.2 s after the start with the loader at +10, 3.1-3.6 s without;
    benchmarks/load_test_fresh.md). The thread only imports and then ends: nothing else runs at the lower priority."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            me = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + LOADER_NICE))


def _import_all(done: concurrent.futures.Future) -> None:
    try:
        _wait_for_gate()
        yield_cpu()
        with _collector_paused():
            for script in scripts():
                exec(import_lines(script), {})  # noqa: S102 - our own scripts' import lines, nothing else
            warm_first_encodes()
    except BaseException as e:  # noqa: BLE001 - handed to every run that waits for the load
        done.set_exception(e)
    else:
        # As the first run's settle does (explorer.ui.heavy.settle_process): the ~127,000 objects these imports made
        # cost every full collection 65-75 ms more (measured) unless frozen.
        freeze()
        done.set_result(None)


def start_loading() -> concurrent.futures.Future:
    """Start importing what the router and every page import, once per process, in one thread of its own (again
    after a failed load): the first visitor's run starts it once it has drawn the page's title.

    Streamlit runs each session's script in a thread of its own, so a fresh server's first class otherwise imports
    the same modules in 30 threads at once, each from its own page, in its own order; Python's per-module import
    locks then deadlock or hand out half-made modules ("cannot import name ... from partially initialized module",
    KeyError on a package removed by a failed import). One thread importing everything, while no page runs, leaves
    no two imports racing."""
    global _load
    with _loading:
        if _load is None or (_load.done() and _load.exception() is not None):
            _load = concurrent.futures.Future()
            threading.Thread(target=_import_all, args=(_load,), name="page-loader", daemon=True).start()
        return _load


def loaded() -> bool:
    return _load is not None and _load.done() and _load.exception() is None


def load_modules() -> None:
    """Wait until the page-loading thread has imported every module (starting it if need be); its error, if any,
    is raised here and the next run tries again."""
    if not loaded():
        start_loading().result()


def home_first() -> bool:
    """Whether this run may draw its page before the modules are loaded: the home page of a server that has not
    loaded them yet, which with the router's chrome needs only the LIGHT modules: the whole first page need not
    wait for the ~2 s of a core that the load takes (benchmarks/first_page.md). Not while the teacher's
    panel is open (its QR code imports segno), nor where a GPU device is there (the sidebar names it from torch).
    The run then starts the load as it ends (start_loading); a page it switches to waits for the load."""
    return not loaded() and _asked_page() == "home" and hardware_known() and not st.session_state.get(TEACHER_OPEN)


def _word(lang: str, *keys: str) -> str:
    """The first of `keys` that the language has (English if it lacks them all), unfilled."""
    for each in dict.fromkeys((lang, DEFAULT)):
        found = next((catalog(each)[k] for k in keys if k in catalog(each)), None)
        if found is not None:
            return found
    return ""


def _asked_page() -> str:
    """The name of the page the browser's address asks for (home when it names none of them)."""
    path = (st.context.url or "").rstrip("/").rpartition("/")[2]
    return next((p.name for p in PAGES if pathlib.Path(p.path).stem == path), "home")


def draw_while_loading() -> None:
    """While a fresh server imports torch and the pages' modules (~2 s of a core), show the page's title and lede
    instead of a blank page, with a word that the rest follows; gone once the modules are in. No control is drawn:
    the page's run draws its own. The language is the one the sidebar will choose: the session's, the link's, or
    the browser's. The first visitor's title is drawn before the import starts: beside it, the title would wait for
    the GIL at each of its reads (benchmarks/first_page.md, "The router's warm-up")."""
    if loaded():
        return
    lang = st.session_state.get("lang") or st.query_params.get("lang")
    lang = lang if lang in LANGUAGES else browser_language()
    name = _asked_page()
    shown = st.empty()
    with shown.container():
        st.title(_word(lang, f"{name}.title", f"pages.{name}.title"))
        st.markdown(_word(lang, f"{name}.lede", f"{name}.story", f"pages.{name}.summary"))
        st.caption(_word(lang, "common.frame.preparing"))
    load_modules()
    shown.empty()


class Turns:
    """At most `count` holders at a time, a holder counted for `lapse_s` seconds at most: one still running after
    that (waiting in the heavy-work line, training) no longer holds anyone back, so no wait here depends on another
    run's end. take() waits for a turn, calling `check` between tries (it raises to end the wait)."""

    def __init__(self, count: int, lapse_s: float):
        self.count, self.lapse_s = count, lapse_s
        self._cond = threading.Condition()
        self._held: dict[object, float] = {}  # token -> when (time.monotonic()) it took its turn

    def _busy(self, now: float) -> int:
        return sum(now - since < self.lapse_s for since in self._held.values())

    def take(self, check: Callable[[], None] = lambda: None) -> object:
        token = object()
        with self._cond:
            while self._busy(time.monotonic()) >= self.count:
                oldest = min(self._held.values())
                self._cond.wait(min(0.1, max(0.0, oldest + self.lapse_s - time.monotonic())))
                check()
            self._held[token] = time.monotonic()
        return token

    def give_back(self, token: object) -> None:
        with self._cond:
            self._held.pop(token, None)
            self._cond.notify_all()

    def held(self) -> int:
        """The turns counted now."""
        with self._cond:
            return self._busy(time.monotonic())


# A session's first page other than home waits for one of these turns: on a fresh server the class's first pages
# (every page's first tables and charts, several seconds of a core, benchmarks/load_test_fresh.md) would otherwise
# run in 30 threads at once, and a student who already has a page and moves a control would wait for the GIL behind
# all of them. Two: one first page computes in torch (no GIL) while another draws. A turn lapses after 2 s: the
# first views measured take 0.2-1.5 s of CPU alone.
FIRST_PAGES = Turns(2, lapse_s=2.0)
DRAWN = "_router_drawn"  # session state: this session has run a page (its first-page turn is behind it)


@contextlib.contextmanager
def first_page_turn(home: bool) -> Iterator[None]:
    """Run the block in a FIRST_PAGES turn when it is the session's first page other than home; a session that has
    run a page (a control moved, a page switched) passes at once, as does the home page (drawn before the load,
    ~0.1 s). The wait ends as soon as the run is asked to end (the tab closed, a click)."""
    if home or st.session_state.get(DRAWN):
        yield
        return
    token = FIRST_PAGES.take(run_yield_check() or (lambda: None))
    try:
        yield
    finally:
        FIRST_PAGES.give_back(token)
        st.session_state[DRAWN] = True


class PageEnded(StopException):
    """A page called st.stop(): its script ends there; the router's run goes on."""


def _stop() -> None:
    """st.stop() as pages see it: inside router.run_page it ends the page only; anywhere else it is Streamlit's."""
    if getattr(_in_page, "running", False):
        raise PageEnded
    _streamlit_stop()


def run_page(page) -> bool:
    """Run the navigation's page; True when it ended early with st.stop().

    Streamlit 1.67's st.stop() marks the run's request queue STOP and raises StopException at the next element
    (streamlit.commands.execution_control.stop): nothing can be drawn after it in that run, so the router's
    bottom lesson bar, the sidebar's link and teacher panels and the notices about the link were lost whenever a
    page stopped early (and the notices came up later on another page). The page's script reads `st.stop` when
    it calls it, so while it runs here that name ends the page instead: an exception of Streamlit's own stop
    kind, which every layer between (fragments, the heavy-work line) lets through as it does a stop."""
    if st.stop is not _stop:
        st.stop = _stop
    _in_page.running = True
    try:
        page.run()
    except PageEnded:
        return True
    finally:
        _in_page.running = False
    return False
