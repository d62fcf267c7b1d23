"""The app's modules load in one place, one way: what keeps a fresh server's first class from racing its imports."""

import ast
import json
import pathlib
import subprocess
import sys
import threading

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _fresh(code: str):
    """Run `code` in a fresh interpreter at the repository root; it prints one JSON object."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_attn_core_imports_none_of_its_modules():
    """A package __init__ that imports its submodules takes the locks package-first while a thread importing a
    submodule directly takes them submodule-first: the deadlock of the issue. The names still resolve on use."""
    got = _fresh(
        "import json, sys, attn_core\n"
        "before = sorted(m for m in sys.modules if m.startswith('attn_core.'))\n"
        "from attn_core import naive_attention, train, MultiHeadAttention\n"
        "print(json.dumps(dict(before=before, train=train.__module__, names=len(dir(attn_core)))))"
    )
    assert got["before"] == []
    assert got["train"] == "attn_core.learn.train"
    assert got["names"] >= 60


def test_the_router_draws_its_title_before_any_numerical_library_is_imported():
    """app.py's first line imports the router; what it imports runs before a fresh server can draw the title, so the
    heavy libraries wait for the loader thread (each costs a first visitor tenths of a second: pandas 0.4 s)."""
    got = _fresh(
        "import json, sys, streamlit\n"
        "before = set(sys.modules)\n"
        "from explorer.ui import router\n"
        "heavy = ('numpy', 'pandas', 'pyarrow', 'altair', 'torch')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules and m not in before]))"
    )
    assert got == []


def _imported_by_scripts() -> set[str]:
    """Every module named by a top-level import of the router or a page script."""
    from explorer.ui import router

    named = set()
    for script in router.scripts():
        for node in router.top_imports(ast.parse(script.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.ImportFrom):
                named.add(node.module)
            elif isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
    return named


def test_load_modules_imports_what_every_page_imports_before_any_page_runs():
    got = _fresh(
        "import json, sys\n"
        "from explorer.ui import router\n"
        "router.load_modules()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    wanted = _imported_by_scripts()
    assert {"explorer.ui.draw", "explorer.ui.sidebar", "torch"} <= wanted  # the router and the pages were read (no
    # page imports attn_core since 4f70577: attn_core.learn was the pages' mark before)
    assert wanted <= set(got), sorted(wanted - set(got))
    assert {"explorer.tables.scaling", "explorer.charts.flash"} <= set(got)  # `from package import module` too


def test_a_fresh_server_s_home_page_is_drawn_whole_before_the_load_and_imports_nothing_new():
    """The home page and the router's chrome need no torch, pandas or Altair: on a fresh server its run draws the whole
    page (sidebar with the hardware, the cards, the lesson button; no "preparing" word) without waiting for the
    page-loading thread, and imports no module the router had not imported before that thread could start (a
    module imported by two threads at once is issue 26's race); the run starts the load as it ends. The loader is
    held (ATTN_LOADER_GATE) so that it imports nothing meanwhile."""
    got = _fresh(
        "import json, os, sys\n"
        "os.environ['ATTN_LOADER_GATE'] = '/nonexistent/gate'\n"
        "from streamlit.testing.v1 import AppTest\n"
        "AppTest.from_string('import streamlit as st\\nst.title(1)\\nst.button(\"b\")').run()  # AppTest's own\n"
        "from explorer.ui import router\n"
        "from explorer.ui.i18n import catalog\n"
        "before = set(sys.modules)\n"
        "at = AppTest.from_file('app.py', default_timeout=60).run()\n"
        "preparing = catalog('en')['common.frame.preparing']\n"
        "print(json.dumps(dict(errors=[str(e.value) for e in at.exception], new=sorted(set(sys.modules) - before),\n"
        "    started=router._load is not None, loaded=router.loaded(), buttons=len(at.button),\n"
        "    preparing=any(c.value == preparing for c in at.caption),\n"
        "    hardware=any('CPU' in c.value for c in at.sidebar.caption))))"
    )
    assert got == {
        "errors": [],
        "new": [],
        "started": True,
        "loaded": False,
        "buttons": 1,
        "preparing": False,
        "hardware": True,
    }


def test_every_page_but_home_waits_for_the_load_and_home_too_once_a_gpu_or_the_teacher_s_panel_needs_it(monkeypatch):
    """home_first: only the home page of a server that has not loaded yet, and only while the sidebar can name the
    hardware without torch and the teacher's panel (its QR code imports segno) is closed."""
    import streamlit as st

    from explorer.ui import router

    page = {"url": "http://h/"}
    monkeypatch.setattr(router, "loaded", lambda: False)
    monkeypatch.setattr(router, "hardware_known", lambda: True)
    monkeypatch.setattr(type(st.context), "url", property(lambda _: page["url"]))
    monkeypatch.setattr(st, "session_state", {})
    assert router.home_first()
    page["url"] = "http://h/masks"
    assert not router.home_first()
    page["url"] = "http://h/"
    st.session_state[router.TEACHER_OPEN] = True
    assert not router.home_first()
    st.session_state.clear()
    monkeypatch.setattr(router, "hardware_known", lambda: False)
    assert not router.home_first()
    monkeypatch.setattr(router, "hardware_known", lambda: True)
    monkeypatch.setattr(router, "loaded", lambda: True)
    assert not router.home_first()


def test_a_failed_load_is_raised_to_the_waiting_run_and_the_next_run_tries_again(tmp_path):
    """The page-loading thread's error reaches the run that waits for it (the page shows it); the next run starts a
    new thread instead of keeping the failure."""
    broken, fine = tmp_path / "broken.py", tmp_path / "fine.py"
    broken.write_text("import json\nimport no_such_module_of_ours\n")
    fine.write_text("import json\n")
    got = _fresh(
        "import json, pathlib, threading\n"
        "from explorer.ui import router\n"
        f"router.scripts = lambda: [pathlib.Path({str(broken)!r})]\n"
        "try:\n"
        "    router.load_modules()\n"
        "    error = None\n"
        "except ImportError as e:\n"
        "    error = e.name\n"
        "failed = router.loaded()\n"
        f"router.scripts = lambda: [pathlib.Path({str(fine)!r})]\n"
        "router.load_modules()\n"
        "print(json.dumps(dict(error=error, failed=failed, loaded=router.loaded())))"
    )
    assert got == {"error": "no_such_module_of_ours", "failed": False, "loaded": True}


def test_the_title_shown_while_loading_is_the_page_s_own_in_the_viewer_s_language():
    """What a fresh server shows first: the strings the page's own header draws, English only where a language lacks
    one."""
    from explorer.ui import router
    from explorer.ui.i18n import catalog

    assert router._word("zh", "masks.title", "pages.masks.title") == catalog("zh")["masks.title"]
    assert router._word("zh", "home.lede", "home.story") == catalog("zh")["home.story"]
    assert router._word("zh", "no.such.key", "common.frame.preparing") == catalog("zh")["common.frame.preparing"]
    assert router._word("en", "no.such.key") == ""


def test_the_loader_warms_the_first_encodes_and_no_page_s_first_view_imports_torch_s_compiler():
    """The first table, Arrow encode and Altair spec import pandas', pyarrow's and narwhals' lazy parts before any page
    runs, and what the load made is frozen out of the collector's generations. No page's first view then imports
    torch._dynamo (what making a torch optimizer imports, ~1.3 s of CPU: the learning, √d_k and induction pages drew
    their untrained models with one made) or sympy (a backward given an output gradient, a module built on "meta":
    the worked example's gradients, the multi-head toy module): a fresh server's class would share the cores with
    those imports (they were warmed in a thread of their own beside the class's first runs)."""
    got = _fresh(
        "import gc, json, sys\n"
        "from explorer.ui import router\n"
        "router.load_modules()\n"
        "at_load = [m in sys.modules for m in ('pyarrow.pandas_compat', 'narwhals._pandas_like.dataframe')]\n"
        "tracked = len(gc.get_objects())\n"
        "from explorer.ui.registry import PAGES\n"
        "from streamlit.testing.v1 import AppTest\n"
        "errors = []\n"
        "for info in PAGES:\n"
        "    at = AppTest.from_file('app.py', default_timeout=120)\n"
        "    at.switch_page(info.path)\n"
        "    at.run()\n"
        "    errors += [e.message for e in at.exception]\n"
        "print(json.dumps(dict(at_load=at_load, few=tracked < 20000, pages=len(PAGES), errors=errors,\n"
        "                      imported=[m for m in ('sympy', 'torch._dynamo') if m in sys.modules])))"
    )
    assert got == {"at_load": [True, True], "few": True, "pages": got["pages"], "errors": [], "imported": []}
    assert got["pages"] >= 14


def test_the_collector_is_paused_while_the_libraries_load_and_collects_once_after():
    """Full collections during the import walk the whole growing heap (~0.4 s of the load's ~2.1 s of CPU): off
    meanwhile, then one collection frees the cycles the imports left, and the collector is on again."""
    import gc
    import weakref

    from explorer.ui import router

    class Node:
        pass

    assert gc.isenabled()
    with router._collector_paused():
        inside = gc.isenabled()
        node = Node()
        node.me = node
        dead = weakref.ref(node)
        del node
        left = dead() is not None
    assert (inside, left, dead(), gc.isenabled()) == (False, True, None, True)


# --- first pages take turns -------------------------------------------------------------------------------------------
class _Taker(threading.Thread):
    """A thread that takes a turn of `turns`: .token once it has one, .error if its wait was ended instead."""

    def __init__(self, turns, check=lambda: None):
        super().__init__(daemon=True)
        self.turns, self.check, self.token, self.error = turns, check, None, None
        self.start()

    def run(self):
        try:
            self.token = self.turns.take(self.check)
        except Exception as e:  # noqa: BLE001 - the test reads it
            self.error = e


def test_first_pages_take_at_most_two_turns_and_a_third_waits_for_a_turn_given_back():
    from explorer.ui.router import Turns

    turns = Turns(2, lapse_s=60.0)
    first, second = turns.take(), turns.take()
    third = _Taker(turns)
    third.join(0.5)
    assert third.is_alive() and third.token is None  # both turns held: it waits
    turns.give_back(first)
    third.join(30)
    assert not third.is_alive() and third.token is not None
    assert turns.held() == 2
    turns.give_back(second)
    turns.give_back(third.token)
    assert turns.held() == 0


def test_a_turn_held_past_its_lapse_holds_nobody_back():
    """A first page still running after lapse_s (waiting in the heavy-work line, say) no longer counts: no wait for a
    turn depends on another run's end."""
    import time

    from explorer.ui.router import Turns

    turns = Turns(1, lapse_s=0.3)
    turns.take()
    started = time.monotonic()
    late = _Taker(turns)
    late.join(30)
    assert late.token is not None
    assert time.monotonic() - started >= 0.3  # not before the lapse (no upper bound: a slow machine only waits longer)


def test_a_wait_for_a_turn_ends_when_the_run_is_asked_to_end():
    from explorer.ui.router import Turns

    class Asked(Exception):
        pass

    asked = threading.Event()

    def check():
        if asked.is_set():
            raise Asked

    turns = Turns(1, lapse_s=60.0)
    turns.take()
    waiting = _Taker(turns, check)
    waiting.join(0.3)
    assert waiting.is_alive()
    asked.set()
    waiting.join(30)
    assert not waiting.is_alive() and isinstance(waiting.error, Asked) and waiting.token is None
    assert turns.held() == 1  # it took none


def test_a_session_s_first_page_takes_a_turn_and_home_or_a_later_page_passes(monkeypatch):
    """router.first_page_turn with every turn taken: the home page and a session that has run a page go on; a first
    page waits, then runs once a turn is given back, and marks the session."""
    import types

    from explorer.ui import router

    turns = router.Turns(1, lapse_s=60.0)
    monkeypatch.setattr(router, "FIRST_PAGES", turns)
    state = {}
    monkeypatch.setattr(router, "st", types.SimpleNamespace(session_state=state))
    monkeypatch.setattr(router, "run_yield_check", lambda: None)
    held = turns.take()
    with router.first_page_turn(home=True):
        pass
    assert router.DRAWN not in state
    ran = threading.Event()

    def first_page():
        with router.first_page_turn(home=False):
            ran.set()

    page = threading.Thread(target=first_page)
    page.start()
    assert not ran.wait(0.3)
    turns.give_back(held)
    assert ran.wait(30)
    page.join(30)
    assert state[router.DRAWN] is True and turns.held() == 0
    held = turns.take()
    with router.first_page_turn(home=False):  # the session has run a page: no turn needed
        pass
    turns.give_back(held)


def test_the_page_loading_thread_runs_at_a_lower_cpu_priority_than_the_server():
    import os

    import pytest

    from explorer.ui import router

    if not sys.platform.startswith("linux"):
        pytest.skip("per-thread niceness is Linux's")
    seen = {}

    def loader():
        router.yield_cpu()
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    thread = threading.Thread(target=loader)
    thread.start()
    thread.join(5)
    assert seen["nice"] == min(19, os.getpriority(os.PRIO_PROCESS, 0) + router.LOADER_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == os.getpriority(os.PRIO_PROCESS, 0)
