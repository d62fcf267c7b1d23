"""What the router (app.py) does around the pages: load every module once before any page runs, and let a page's
st.stop() end that page instead of the router's whole run."""

from __future__ import annotations

import ast
import pathlib
import threading

import streamlit as st
from streamlit.runtime.scriptrunner import StopException

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = (ROOT / "app.py", ROOT / "views")  # the router and the folder of page scripts

_loading = threading.Lock()
_loaded = threading.Event()
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


def load_modules() -> None:
    """Import what the router and every page import, once per process: the first run does it while the others
    wait here. Streamlit runs each session's script in a thread of its own, so a fresh server's first class
    otherwise imports the same modules in 30 threads at once, each from its own page, in its own order; Python's
    per-module import locks then deadlock or hand out half-made modules ("cannot import name ... from partially
    initialized module", KeyError on a package removed by a failed import). One thread importing everything,
    before any page runs, leaves no two imports racing. A failed import raises here and the next run tries again."""
    if _loaded.is_set():
        return
    with _loading:
        if _loaded.is_set():
            return
        for script in scripts():
            exec(import_lines(script), {})  # noqa: S102 - our own scripts' import lines, nothing else
        _loaded.set()


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
