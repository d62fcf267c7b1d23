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
