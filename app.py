"""Attention Explorer: the router. Page config, navigation by section, the sidebar every page shares."""

import time

import streamlit as st

from explorer.ui import router  # first: it imports the light modules below before any page-loading thread starts
from explorer.ui.connection import connection_words
from explorer.ui.glossary import CURRENT
from explorer.ui.i18n import language, t
from explorer.ui.page import log_run_cpu
from explorer.ui.registry import PAGES, SECTIONS
from explorer.ui.sidebar import THREADS, lesson_bar, page_title, share_panel, sidebar, sidebar_hidden
from explorer.ui.state import publish_hidden, url_notices

st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")
early = router.home_first()  # a fresh server's home page: drawn whole at once, the load started as it ends
if not early:
    router.draw_while_loading()  # a fresh server: the page's title and lede while the first visitors wait
    router.load_modules()  # one thread imports every page's modules, once per process, while the others wait
    # Loaded above already: imports here only name what the router uses (router.import_lines reads them too).
    import torch

    from explorer.ui.heavy import settle_process

    # The pages' tensors are small: one thread per op wastes no time waking a pool and lets 30 sessions
    # share two cores instead of fighting over them.
    torch.set_num_threads(THREADS)
    settle_process()  # once per process (explorer.ui.heavy)

NAVIGATION = "_navigation_pages"  # this session's st.Page objects, by language
RUN_CPU = "_run_cpu_ms"  # this run's CPU time in the script thread (tools.page_rerender reads it)
_started = time.thread_time()


def _pages() -> tuple[dict, dict]:
    """(the navigation by section, url path -> PageInfo) in the viewer's language, made once per session and
    language: st.Page resolves and checks its file on the disk each time it is made (14 pages: ~4% of the server's
    CPU in a closed-loop load test, py-spy). Kept per session, not per server: a page object carries its own run's
    state (st.navigation marks the one to run)."""
    kept = st.session_state.setdefault(NAVIGATION, {})
    lang = language()
    if lang not in kept:
        home = st.Page("views/home.py", title=t("pages.home.title"), icon=":material/home:", default=True)
        navigation, by_page = {"": [home]}, {}
        for section in SECTIONS:
            navigation[t(f"pages.sections.{section}")] = entries = []
            for info in (p for p in PAGES if p.section == section):
                entries.append(st.Page(info.path, title=page_title(info), icon=info.icon))
                by_page[entries[-1].url_path] = info
        kept[lang] = navigation, by_page
    return kept[lang]


sidebar()  # first: the language it sets titles the navigation
connection_words()  # Streamlit's "connection error" dialog, said in that language
navigation, by_page = _pages()
# expanded: every page one click away (Streamlit folds a menu of more than 12 pages behind "View N more", in English)
page = st.navigation(navigation, position="top" if sidebar_hidden() else "sidebar", expanded=True)  # never no way on
if early and page is not navigation[""][0]:  # a switch from the home page (its lesson button): that page waits
    router.load_modules()
    st.rerun()
current = by_page.get(page.url_path)
st.session_state[CURRENT] = current.name if current else None  # the page's glossary link reads it
lesson_bar(current)
try:
    with router.first_page_turn(home=page is navigation[""][0]):
        router.run_page(page)  # a page that stops early (st.stop) ends there; what follows is drawn all the same
    lesson_bar(current, bottom=True)
    publish_hidden()
    share_panel()
    url_notices()
finally:  # a run cut short (an error, Streamlit's stop) is measured too (the log first: session state may not be set)
    run_cpu_ms = 1000 * (time.thread_time() - _started)
    log_run_cpu("full", run_cpu_ms)
    st.session_state[RUN_CPU] = run_cpu_ms
    if early:
        router.freeze()  # as settle_process does after the load
        router.start_loading()  # after the home page: the load's ~2 s of a core would have delayed it
