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


def _imported_by_scripts() -> set[str]:
    """Every module named by a top-level import of the router or a page script."""
    from explorer.ui import router

    named = set()
    for script in router.scripts():
        for node in ast.parse(script.read_text(encoding="utf-8")).body:
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
    assert {"attn_core.learn", "explorer.ui.frame", "torch"} <= wanted  # the router and the pages were read
    assert wanted <= set(got), sorted(wanted - set(got))
    assert {"explorer.tables.scaling", "explorer.charts.flash"} <= set(got)  # `from package import module` too


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
