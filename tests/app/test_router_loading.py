"""The app's modules load in one place, one way: what keeps a fresh server's first class from racing its imports."""

import ast
import json
import pathlib
import subprocess
import sys

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


def test_the_loader_warms_the_first_uses_that_import_more():
    """The first table, Arrow encode and Altair spec import pandas', pyarrow's and narwhals' lazy parts before any page
    runs; then the same thread makes torch's first backward with an output gradient (sympy) and first optimizer step
    (torch._dynamo): a page's own first use of either imports nothing afterwards (the induction page's first run
    imported ~880 modules, ~1.2 s of CPU). What they made is frozen out of the collector's generations."""
    got = _fresh(
        "import json, sys, torch\n"
        "from explorer.ui import router\n"
        "router.load_modules()\n"
        "at_load = [m in sys.modules for m in ('pyarrow.pandas_compat', 'narwhals._pandas_like.dataframe')]\n"
        "import threading\n"
        "daemon = [t.daemon for t in threading.enumerate() if t.name == 'torch-warmer']\n"
        "warmed = router.warmed(240)\n"
        "import gc\n"
        "tracked = len(gc.get_objects())\n"
        "before = set(sys.modules)\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "(w * w).backward(torch.ones(3))\n"
        "torch.optim.Adam([w], lr=0.1).step()\n"
        "print(json.dumps(dict(at_load=at_load, warmed=warmed, sympy='sympy' in before, few=tracked < 20000,\n"
        "                      daemon=daemon, new=sorted(set(sys.modules) - before))))"
    )
    expected = {"at_load": [True, True], "warmed": True, "sympy": True, "few": True, "new": []}
    assert got == {**expected, "daemon": [False]}  # the interpreter waits for it: one ended mid-import aborted


# Prints, for an import of the module named by argv[1] after torch's, each module it brings and the modules this
# thread was importing when that one started (its import locks held), outermost first.
_CHAINS = """
import json, sys, torch
met = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        held, frame = [], sys._getframe(1)
        while frame:
            if frame.f_code.co_name == "_find_and_load_unlocked":
                held.append(frame.f_locals["name"])
            frame = frame.f_back
        met.append([name, held[::-1]])
sys.meta_path.insert(0, Watch())
__import__(sys.argv[1])
print(json.dumps(met))
"""


def _brought(module: str) -> list:
    done = subprocess.run(
        [sys.executable, "-c", _CHAINS, module], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_torch_s_two_warmed_imports_share_their_modules_through_one_gate_only():
    """Why a page may run while the loader warms torch (router.warm_torch): a page's first optimizer imports
    torch._dynamo, whose import brings every module of sympy's part (what the first backward with an output gradient
    imports) through torch.fx.experimental.symbolic_shapes alone. So whichever thread holds that module's lock, the
    other waits holding none the first needs: no deadlock, no half-made module (issue 26's race)."""
    gate = "torch.fx.experimental.symbolic_shapes"
    sympy_part = {name for name, _ in _brought(gate)}
    entered = {
        next(m for m in [*held, name] if m in sympy_part)
        for name, held in _brought("torch._dynamo")
        if name in sympy_part
    }
    assert len(sympy_part) > 100  # sympy and mpmath
    assert entered == {gate}


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
