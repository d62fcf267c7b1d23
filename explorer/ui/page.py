"""The frame every page shares: title and lede, contents, formula, what to notice, predict-first, the seed, projector
mode, sections that rerun alone, friendly errors; and the page's CSS."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time

import streamlit as st

from explorer.ui.glossary import glossary_link
from explorer.ui.i18n import t
from explorer.ui.internals import run_is_fragment

DEFAULT_SEED = 0
# The sidebar's link panels (explorer.ui.sidebar): the session-state keys that say whether each is open. While one
# is, a section runs with the page, so that the links there follow every change.
SHARE_OPEN, TEACHER_OPEN = "share_open", "teacher_open"

# Projector mode: larger type, thicker marks, black on white, the sidebar folded and less room above the title, so
# that a chart reaches the first screen. Streamlit sizes its text in rem, so the root font size scales the whole
# page; captions lose their grey. Nothing may be cut off: the page's side margins
# shrink, metric labels, deltas and the navigation wrap, a metric's value and a formula shrink to their column
# (container units), and a chart wider than its column is scaled down to it (charts grow: explorer.charts.projector).
PROJECTOR_CSS = """<style>
html { font-size: 21px; }
.stApp, .stApp p, .stApp li, .stApp label, .stApp h1, .stApp h2, .stApp h3 { color: #000 !important; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] * { color: #111 !important; }
[data-testid="stMainBlockContainer"] { padding: 3.5rem 1.5rem 3rem !important; }
.stApp h1 { font-size: 2.1rem !important; padding-top: 0 !important; }
[data-testid="stMetricLabel"] *, [data-testid="stMetricDelta"], [data-testid="stMetricDelta"] *,
[data-testid="stSidebarNavLink"] *, [data-testid="stNavSectionHeader"], [data-testid="stNavSectionHeader"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-testid="stMetricDelta"] { height: auto !important; }
[data-testid="stMetric"] { container-type: inline-size; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * {
  overflow: visible !important; text-overflow: clip !important; font-size: clamp(1.2rem, 24cqi, 2.25rem) !important;
}
[data-testid="stElementContainer"]:has(.katex-display) { container-type: inline-size; }
.katex-display { overflow-x: auto !important; overflow-y: hidden !important; }
.katex-display > .katex { font-size: clamp(0.8em, 6.5cqi, 1.05em) !important; }
</style>"""
# Every screen: a chart wider than its column (a grid of fixed-size cells, a concatenation) is scaled down to it
# instead of running under the next column's text.
PAGE_CSS = """<style>
.vega-embed canvas.marks, .vega-embed svg.marks { max-width: 100% !important; height: auto !important; }
</style>"""
# A text or number box being edited says "Press Enter to apply" in English, whatever the page's language (Streamlit
# writes it in its first span, a character count in the next): our words instead.
ENTER_CSS = """<style>
[data-testid="InputInstructions"] > span:first-child { font-size: 0; }
[data-testid="InputInstructions"] > span:first-child::after { content: "TEXT"; font-size: 0.75rem; }
</style>"""
HIDE_SIDEBAR_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"]
{ display: none !important; }
</style>"""


# CommonMark shows a backslash-escaped punctuation character as itself. Escaping every character that can start or
# shape markup leaves no link, image, HTML, emphasis, heading, list, table, LaTeX ($), Streamlit directive
# (:red[...], :material/...:) or GFM autolink (http://, www., e-mail: the ':' and '.' are escaped) alive.
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&=^\"'])")


def literal(text) -> str:
    """Text that a user or a link wrote, made safe to place inside Markdown: shown as typed, never interpreted."""
    return _PUNCTUATION.sub(r"\\\1", " ".join(str(text).split()))


def header(title: str, lede: str, sections: tuple[str, ...] = ()) -> None:
    """The page's title and lede, a long page's contents, and the link to the glossary at the terms the page uses.

    `sections` are the string keys of the page's section headings; each heading's anchor is its key's last part
    (st.subheader(t("masks.sections.fill"), anchor="fill")).
    """
    st.title(title)
    st.markdown(lede)
    contents([(t(key), anchor_of(key)) for key in sections])
    glossary_link()


def anchor_of(key: str) -> str:
    """The anchor of the section heading whose string key is `key`."""
    return key.rpartition(".")[2]


def contents(entries: list[tuple[str, str]]) -> None:
    """A long page's sections in one line at its top, each a link to its heading's anchor: (label, anchor) pairs."""
    if len(entries) > 1:
        st.markdown(f"**{t('common.frame.contents')}** " + " · ".join(f"[{literal(x)}](#{a})" for x, a in entries))


def formula(latex: str, caption: str | None = None) -> None:
    st.latex(latex)
    if caption:
        st.caption(caption)


def notice(points: list[str]) -> None:
    """Two to four sentences of what to look for."""
    st.markdown(f"**{t('common.frame.notice')}**\n" + "\n".join(f"- {p}" for p in points))


def predict_first(question: str, answer: str) -> None:
    """A question shown up front; its answer stays folded until the student asks for it."""
    st.info(f"**{t('common.frame.predict')}** {question}", icon=":material/psychology_alt:")
    with st.expander(t("common.frame.reveal")):
        st.markdown(answer)


def seed() -> int:
    """The random seed chosen in the sidebar (every page's randomness flows from it)."""
    return int(st.session_state.get("seed", DEFAULT_SEED))


def projector() -> bool:
    return bool(st.session_state.get("projector", False))


# A file that gets one line per run, "<full|fragment> <script CPU ms>", when the variable names it: what
# tools.page_rerender --client ws reads from a real server. Unset (always, in use) it costs nothing.
RUN_CPU_LOG = os.environ.get("ATTN_RUN_CPU_LOG", "")


def log_run_cpu(kind: str, ms: float) -> None:
    if RUN_CPU_LOG:
        with open(RUN_CPU_LOG, "a", encoding="utf-8") as log:
            log.write(f"{kind} {ms:.3f}\n")


def section(fn=None, *, run_every=None):
    """A part of a page with its own controls, rerun alone when one of them changes (st.fragment): a student who
    moves a slider of one section waits for that section, not for the page. While a link panel of the sidebar is
    open the part runs with the page instead, so that the links there follow every change (except a part that
    reruns itself every `run_every` seconds, an animation: it stays a fragment).

    As a decorator (`@section`) or a call (`section(fn, run_every=0.8)(args)`)."""
    if fn is None:
        return functools.partial(section, run_every=run_every)

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        alone, start = run_is_fragment(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            if alone:  # a run of this part only (in a full run, app.py logs the whole run)
                log_run_cpu("fragment", 1000 * (time.thread_time() - start))

    part = st.fragment(timed, run_every=run_every)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if run_every is None and (st.session_state.get(SHARE_OPEN) or st.session_state.get(TEACHER_OPEN)):
            return fn(*args, **kwargs)
        return part(*args, **kwargs)

    return run


@contextlib.contextmanager
def friendly_errors(what: str):
    """Turn a failure inside one part of a page into a message; the rest of the page keeps working."""
    try:
        yield
    except ValueError as err:  # messages may quote what was typed or linked: never let it become Markdown
        st.warning(f"{what}: {literal(err)}", icon=":material/error:")
    except (RuntimeError, MemoryError) as err:
        st.error(t("common.frame.failed", what=what, kind=type(err).__name__), icon=":material/error:")
