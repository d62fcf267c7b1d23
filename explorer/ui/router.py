"""What the router (app.py) does around the pages: load every module once, in one thread, before any page runs (the
page asked for shows its title and lede meanwhile), and let a page's st.stop() end that page instead of the
router's whole run."""

from __future__ import annotations

import ast
import concurrent.futures
import pathlib
import threading

import streamlit as st

from explorer.ui.i18n import DEFAULT, LANGUAGES, browser_language, catalog
from explorer.ui.internals import StopException
from explorer.ui.registry import PAGES

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = (ROOT / "app.py", ROOT / "views")  # the router and the folder of page scripts

_loading = threading.Lock()
_load: concurrent.futures.Future | None = None  # the page-loading thread's outcome (None: not started yet)
_in_page = threading.local()  # .running: this script thread is inside router.run_page
_streamlit_stop = st.stop


def scripts() -> list[pathlib.Path]:
    """The router, then every page script, in a fixed order."""
    router, views = SCRIPTS
    return [router, *sorted(views.glob("*.py"))]


def import_lines(path: pathlib.Path):
    """A script's top-level import statements, compiled without the rest of the script."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    lines = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return compile(ast.Module(lines, type_ignores=[]), str(path), "exec")


def _import_all(done: concurrent.futures.Future) -> None:
    try:
        for script in scripts():
            exec(import_lines(script), {})  # noqa: S102 - our own scripts' import lines, nothing else
    except BaseException as e:  # noqa: BLE001 - handed to every run that waits for the load
        done.set_exception(e)
    else:
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
    the browser's. The first visitor's title is drawn before the import starts: beside it, its ~50 ms took ~2 s
    on a busy machine (each of its reads gives the GIL to the importing thread and waits to get it back)."""
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
