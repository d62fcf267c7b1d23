"""The sidebar every page shares (language, seed, projector and lesson mode, the hardware), the lesson bar, and the
links to a view: the share panel, the teacher's class link and its QR code."""

from __future__ import annotations

import functools
import glob
import importlib.metadata
import io
import platform
import sys
import urllib.parse
from collections.abc import Callable

import streamlit as st

from explorer.ui import state
from explorer.ui.i18n import LANGUAGES, browser_language, language_changed, t
from explorer.ui.internals import internal_ip
from explorer.ui.page import (
    DEFAULT_SEED,
    ENTER_CSS,
    HIDE_SIDEBAR_CSS,
    PAGE_CSS,
    PROJECTOR_CSS,
    SHARE_OPEN,
    TEACHER_OPEN,
    projector,
)
from explorer.ui.registry import LESSON, PageInfo

BROWSER = "browser"  # the teacher's language choice that leaves the language to each student's browser
RUNNING = "running"  # URL parameter: the kind of heavy work under way in this tab (explorer.ui.heavy sets it)
THREADS = 1  # torch's threads per operation, as the router (app.py) sets them
GPU_DEVICES = ("/dev/nvidia[0-9]*", "/dev/kfd")  # CUDA's and ROCm's device files: torch sees no GPU without one


def hardware_known() -> bool:
    """Whether the sidebar can say the hardware without importing torch: torch is in already, or no GPU device is
    there (a fresh server's home page runs before torch is imported, and may import nothing; explorer.ui.router)."""
    return "torch" in sys.modules or not any(glob.glob(pattern) for pattern in GPU_DEVICES)


@st.cache_resource
def _hardware() -> dict:
    """What the app computes on, once per process: the GPU's name, or the CPU with its thread count."""
    torch = sys.modules.get("torch")
    if torch is None:  # no GPU device (hardware_known): the CPU, with the threads the router gives torch
        version = importlib.metadata.version("torch")
        return {"kind": "cpu", "threads": THREADS, "name": platform.processor() or platform.machine(), "torch": version}
    if torch.cuda.is_available():
        return {"kind": "gpu", "name": torch.cuda.get_device_name(0), "torch": torch.__version__}
    cpu = platform.processor() or platform.machine()
    return {"kind": "cpu", "threads": torch.get_num_threads(), "name": cpu, "torch": torch.__version__}


def hardware_label() -> str:
    """The hardware in the viewer's language."""
    facts = _hardware()
    return t(f"common.sidebar.hardware_{facts['kind']}", **facts)


def sidebar() -> None:
    """The sidebar shared by all pages: language, seed, projector and lesson mode, the hardware in use."""
    state.begin_run()
    bar = st.sidebar
    # With the sidebar hidden by a link, the language choice moves to the top of the page: never out of reach.
    where = bar if not sidebar_hidden() else st.popover("Language / 语言", icon=":material/translate:")
    state.selectbox(
        "Language / 语言", list(LANGUAGES), browser_language(), key="lang", where=where, format_func=LANGUAGES.get
    )
    language_changed()
    state.number_input(
        t("common.sidebar.seed"), 0, 2**31 - 1, DEFAULT_SEED, key="seed", where=bar, help=t("common.sidebar.seed_help")
    )
    state.toggle(
        t("common.sidebar.projector"), False, key="projector", where=bar, help=t("common.sidebar.projector_help")
    )
    state.toggle(t("common.sidebar.lesson"), False, key="lesson", where=bar, help=t("common.sidebar.lesson_help"))
    bar.caption(hardware_label())
    st.html(PAGE_CSS + ENTER_CSS.replace("TEXT", t("common.frame.enter_to_apply")))
    if projector():
        st.html(PROJECTOR_CSS)
        st.set_page_config(initial_sidebar_state="collapsed")  # the chart is the point: the page's whole width
    if sidebar_hidden():
        st.html(HIDE_SIDEBAR_CSS)


def sidebar_hidden() -> bool:
    """A link hid the sidebar (`hide=sidebar`): navigation and language then sit at the top of the page."""
    return "sidebar" in state.hidden()


def page_title(info: PageInfo) -> str:
    return t(f"pages.{info.name}.title")


def lesson_bar(current: PageInfo | None, *, bottom: bool = False) -> None:
    """In lesson mode: where the class is on the path through the pages, with the previous and next stops."""
    if not st.session_state.get("lesson") or current not in LESSON:
        return
    i = LESSON.index(current)
    with st.container(border=True):
        left, middle, right = st.columns([1, 3, 1], vertical_alignment="center")
        if i > 0:
            left.page_link(LESSON[i - 1].path, label=t("common.lesson.previous"), icon=":material/arrow_back:")
        middle.markdown(t("common.lesson.stop", i=i + 1, n=len(LESSON), title=page_title(current)))
        if i + 1 < len(LESSON):
            right.page_link(LESSON[i + 1].path, label=t("common.lesson.next"), icon=":material/arrow_forward:")
        elif bottom:
            middle.caption(t("common.lesson.end"))


def view_link(**override) -> str:
    """The address of this view: the page and every control's value (override or drop some with None)."""
    params = {k: v for k, v in st.query_params.to_dict().items() if k not in override}
    params.update({k: v for k, v in override.items() if v is not None})
    return _address(st.context.url or "", params)


def _address(base: str, params: dict) -> str:
    """base with params as its query, less the mark of heavy work under way (heavy.RUNNING), which would tell
    whoever opens the link that their run was cut short."""
    params = {k: v for k, v in params.items() if k != RUNNING}
    return base + ("?" + urllib.parse.urlencode(params, safe=",") if params else "")


def share_panel() -> None:
    """After the page has drawn its controls: the link to this view, and the teacher's lesson link."""
    if sidebar_hidden():
        return
    bar = st.sidebar
    # A link names the language only when the viewer chose one other than their browser's: a student whose browser
    # is Chinese then reads Chinese, whatever the language of the person who copied the link.
    chosen = st.session_state.get("lang")
    # Each panel is drawn only while open (its key holds whether it is): most runs skip both, ~5 ms of widgets and
    # links. Opening one reruns the page, so its links are made from the view as it is at that moment.
    with bar.expander(t("common.share.title"), icon=":material/link:", key=SHARE_OPEN, on_change="rerun"):
        if st.session_state.get(SHARE_OPEN):
            st.caption(t("common.share.help"))
            st.code(view_link(lang=chosen if chosen != browser_language() else None), language=None, wrap_lines=True)
    with bar.expander(t("common.teacher.title"), icon=":material/school:", key=TEACHER_OPEN, on_change="rerun"):
        if st.session_state.get(TEACHER_OPEN):
            teacher_panel()


def teacher_panel() -> None:
    """The teacher's lesson link: which controls to hide, the sidebar, lesson and projector mode, the class's
    language; as text and as a QR code the room can scan from the projector."""
    st.caption(t("common.teacher.help"))
    drawn = {k: v for k, v in state.controls_this_run().items() if k != "lang"}
    # Pills, not a multiselect: Streamlit writes a multiselect's "Select all" in English whatever the language.
    hide = st.pills(
        t("common.teacher.hide"), list(drawn), format_func=drawn.get, key="teacher_hide", selection_mode="multi"
    )
    no_sidebar = st.checkbox(t("common.teacher.no_sidebar"), key="teacher_no_sidebar")
    lesson = st.checkbox(t("common.teacher.lesson"), value=True, key="teacher_lesson")
    big = st.checkbox(t("common.teacher.projector"), key="teacher_projector", help=t("common.teacher.projector_help"))
    languages = {BROWSER: t("common.teacher.browser_language"), **LANGUAGES}
    language = st.selectbox(
        t("common.teacher.language"), list(languages), key="teacher_lang", format_func=languages.get
    )
    names = sorted(set(hide or ()) | (state.hidden() - set(drawn)) | ({"sidebar"} if no_sidebar else set()))
    base, how = class_base(st.context.url or "", st.get_option("server.address"))
    link = class_link(
        base,
        st.query_params.to_dict(),
        state.defaults_this_run(),
        hide=",".join(names) or None,
        lesson="true" if lesson else None,
        projector="true" if big else None,
        lang=None if language == BROWSER else language,
    )
    if how:
        st.caption(how)
    st.code(link, language=None, wrap_lines=True)
    if st.button(t("common.teacher.qr"), icon=":material/qr_code_2:", key="teacher_qr"):
        qr_dialog(link)


LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def class_base(url: str, listens_on: str | None, own_address: Callable[[], str | None] | None = None):
    """(the address students open, a note saying which address that is or None): the teacher's own address, unless
    it is this computer's loopback name, which a student's device cannot reach: then this computer's address on the
    network (Streamlit's "Network URL"), or the loopback one with a note when the server listens on loopback only."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname not in LOOPBACK:
        return url, None
    if listens_on and listens_on not in ("0.0.0.0", "::"):
        return url, t("common.teacher.loopback_only", address=listens_on)
    ip = (own_address or internal_ip)()
    if not ip or ip.startswith("127."):
        return url, t("common.teacher.loopback_only", address=parts.hostname)
    netloc = f"{ip}:{parts.port}" if parts.port else ip
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)), t("common.teacher.network", address=netloc)


def class_link(base: str, params: dict, defaults: dict, **override) -> str:
    """The class's link: `params` with `override` applied (None drops one), less every control left at its default
    and the teacher's own projector mode: short enough to type, and each student's screen in plain mode unless the
    teacher asks otherwise."""
    params = {k: v for k, v in params.items() if k not in override and defaults.get(k, object()) != v}
    params.pop("projector", None)
    params.update({k: v for k, v in override.items() if v is not None})
    return _address(base, params)


@functools.lru_cache(maxsize=16)
def qr_png(link: str) -> bytes:
    """The link as a QR code, a PNG of QR_PX pixels or more: at 4 px per module a phone reads it from the back of a
    room once it fills a third of a projected screen (made on the server by segno: no network)."""
    import segno

    code = segno.make(link, error="m")
    scale = max(4, -(-QR_PX // code.symbol_size(scale=1, border=2)[0]))
    out = io.BytesIO()
    code.save(out, kind="png", scale=scale, border=2)
    return out.getvalue()


QR_PX = 640


@st.dialog(" ", width="large")
def qr_dialog(link: str) -> None:
    st.markdown(f"### {t('common.teacher.qr_title')}")
    st.image(qr_png(link), width="stretch")
    st.code(link, language=None, wrap_lines=True)
