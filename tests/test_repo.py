"""The README's promises and CI's behaviour must not drift apart."""

import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".ci"))
from readme_command import readme_command  # noqa: E402


def test_readme_has_the_two_setup_commands():
    assert readme_command("app") == "pip install -r requirements.txt && streamlit run app.py"
    assert readme_command("test") == "pip install -r requirements-dev.txt && pytest"


def test_ci_runs_the_readme_test_command_in_a_fresh_venv():
    ci = (ROOT / ".ci" / "run").read_text()
    out = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "readme_command.py"), "test"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == readme_command("test")
    assert "python3 .ci/readme_command.py test" in ci and 'bash -c "$test_command"' in ci
    assert "rm -rf .ci-venv" in ci and "python3 -m venv .ci-venv" in ci
    assert "apt-get install" in ci and "chromium" in ci and "nginx" in ci


def test_requirements_are_pinned_and_dev_includes_app():
    app = (ROOT / "requirements.txt").read_text().split()
    pins = [line for line in app if line and not line.startswith("#") and "==" in line]
    names = {p.split("==")[0] for p in pins}
    assert {"torch", "numpy", "pandas", "altair", "streamlit"} <= names and "torch==2.13.0" in pins
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text()


def test_library_never_imports_app_libraries():
    """attn_core is a library an engineer installs alone: torch (and triton, optional), nothing of the app."""
    code = (
        "import sys, attn_core, attn_core.bench, attn_core.budget, attn_core.tiled;"
        "print(','.join(sorted(m for m in ('pandas', 'altair', 'streamlit', 'explorer') if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""
    sources = [p for p in (ROOT / "attn_core").rglob("*.py")]
    offenders = [
        p.name
        for p in sources
        for line in p.read_text().splitlines()
        if line.lstrip().startswith(("import ", "from "))
        and any(f" {m}" in line.split("#")[0] for m in ("pandas", "altair", "streamlit", "explorer"))
    ]
    assert offenders == []


def test_library_declares_its_own_dependencies():
    """`pip install .` gives attn_core with torch and numpy (triton optional), and only attn_core.

    numpy is declared because torch's wheel does not require it and attn_core.learn.induction imports it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = project["project"]["dependencies"]
    assert [d.split(">")[0].split("=")[0] for d in deps] == ["torch", "numpy"]
    assert project["project"]["optional-dependencies"]["triton"][0].startswith("triton")
    packages = project["tool"]["setuptools"]["packages"]
    subpackages = sorted("attn_core." + p.parent.name for p in (ROOT / "attn_core").glob("*/__init__.py"))
    assert packages == ["attn_core", *subpackages] == ["attn_core", "attn_core.learn"]  # every one ships
    assert "pip install ." in (ROOT / "README.md").read_text()


def _imports(path: pathlib.Path) -> list[tuple[str, str]]:
    """(module, name) of every import in a file: ("streamlit.runtime", "get_script_run_ctx"), ("streamlit", "")."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [(node.module or "", alias.name) for alias in node.names]
    return found


APP_SOURCES = [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py")), *sorted((ROOT / "explorer").rglob("*.py"))]
INTERNALS = ROOT / "explorer" / "ui" / "internals.py"


def test_only_internals_touches_streamlits_internals():
    """Streamlit promises its public API (`import streamlit as st`) between releases, not its submodules: every
    internal the app uses sits in explorer/ui/internals.py, each with a test (tests/explorer/test_internals.py)."""
    offenders = [
        f"{path.relative_to(ROOT)}: {module}{'.' + name if name else ''}"
        for path in APP_SOURCES
        if path != INTERNALS
        for module, name in _imports(path)
        if module.startswith("streamlit.") or (module == "streamlit" and name)
    ]
    assert offenders == []
    assert any(module.startswith("streamlit.") for module, _ in _imports(INTERNALS))  # the scan reads imports


def test_chart_builders_import_no_streamlit():
    """explorer/charts builds Vega-Lite specs from DataFrames: usable, and testable, without Streamlit."""
    offenders = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in sorted((ROOT / "explorer" / "charts").rglob("*.py"))
        for module, _ in _imports(path)
        if module.split(".")[0] == "streamlit" or module.startswith("explorer.ui")
    ]
    assert offenders == []


# What a page may import (README, "Adding a page"): Streamlit's public API, the page's frame, the one chart call (and
# draw.download for a file made on the click), its URL-bound controls, its words, the shared claim line, training,
# a benchmark and the player, and its own tables and charts. The caching and Streamlit's internals stay behind these
# (explorer.ui.cache, explorer.ui.internals).
PAGE_API = {
    "explorer.ui.page": None,  # any name
    "explorer.ui.draw": {"chart", "download"},
    "explorer.ui.i18n": {"t", "td", "tl"},
    "explorer.ui.claims": None,
    "explorer.ui.training": None,
    "explorer.ui.benchmark": None,
    "explorer.ui.player": None,
}
PAGE_MODULES = {"explorer.ui": {"state", "claims", "training", "benchmark", "player"}}
# The two pages about the other pages: the registry, the glossary's terms and the pages' titles.
ABOUT_PAGES = {"explorer.ui.registry": None, "explorer.ui.glossary": None, "explorer.ui.sidebar": {"page_title"}}
# What a page still takes from the machinery beyond this API, by page (issue 24): nothing is left, and nothing may be
# added (the scaling page's benchmark goes through explorer.ui.benchmark).
LEFT: dict[str, set[str]] = {}
# A page whose tables and charts modules are named otherwise (shared by two pages, or named by their subject).
OWN = {"flash_walkthrough": "flash", "learning_scale": "learning"}
NEVER_ST = {"cache_data", "cache_resource"}  # a page's results are cached by its tables functions (@cached)


def _page_offences(path: pathlib.Path) -> list[str]:
    import ast

    name, tree = path.stem, ast.parse(path.read_text())
    mine = OWN.get(name, name)
    own = {f"explorer.tables.{mine}", f"explorer.charts.{mine}", "explorer.notes"}  # notes: the notes' claims
    allowed = PAGE_API | (ABOUT_PAGES if name in ("home", "glossary") else {})
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("explorer"):
            module, names = node.module, {a.name for a in node.names}
            if module in PAGE_MODULES:
                bad += [f"{module}.{n}" for n in names - PAGE_MODULES[module]]
                bad += [f"{module}.{a.name} as {a.asname}" for a in node.names if a.asname]
            elif module in allowed:
                bad += [f"{module}.{n}" for n in names - (allowed[module] or names)]
            elif module in ("explorer.tables", "explorer.charts"):
                bad += [f"{module}.{n}" for n in names if n != mine]
            elif module == "explorer":
                bad += [f"explorer.{n}" for n in names - {"notes"}]
            elif module not in own:
                bad.append(module)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "attn_core":
            bad.append(node.module)  # the library reaches a page through its tables module
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.split(".")[0] in ("explorer", "attn_core")]
            bad += [a.name for a in node.names if a.name.startswith("streamlit.")]
        elif isinstance(node, ast.Attribute) and node.attr in NEVER_ST and getattr(node.value, "id", "") == "st":
            bad.append(f"st.{node.attr}")
        elif isinstance(node, ast.keyword) and node.arg == "data_key":
            bad.append("data_key=")
    return [f"{path.name}: {b}" for b in bad if b not in LEFT.get(name, ())]


def test_adding_a_page_in_the_readme_names_the_whole_page_api():
    """Whoever writes a page from the README finds every module and named call a view may use there."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Adding a page", 1)[1].split("\n## ", 1)[0]
    named = {n for names in PAGE_API.values() if names for n in names}
    missing = [m for m in PAGE_API if f"`{m}" not in section] + [n for n in named if f"`{n}" not in section]
    assert missing == []


def test_pages_use_only_the_page_api():
    """A page reads as its controls, its one call per chart and its words: no caching helper, store or Streamlit
    cache decorator in a view (tables functions cache themselves with @cached, draw.chart keys its specs)."""
    offences = [o for path in sorted((ROOT / "views").glob("*.py")) for o in _page_offences(path)]
    assert offences == []
