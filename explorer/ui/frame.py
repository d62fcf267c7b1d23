"""The frame every page shares: header, formula, what to notice, predict-first, seed, charts with their
data, friendly errors, and the classroom options (language, projector mode, lesson mode, share link)."""

from __future__ import annotations

import contextlib
import importlib
import platform
import re
import urllib.parse

import pandas as pd
import pyarrow as pa
import streamlit as st
import torch
from streamlit import dataframe_util

from explorer.charts.common import to_spec
from explorer.charts.projector import projected
from explorer.ui import state
from explorer.ui.glossary import glossary_link
from explorer.ui.i18n import LANGUAGES, browser_language, t
from explorer.ui.registry import LESSON, PageInfo

DEFAULT_SEED = 0
BROWSER = "browser"  # the teacher's language choice that leaves the language to each student's browser

# Projector mode: larger type, thicker marks, black on white. Streamlit sizes its text in rem, so the
# root font size scales the whole page; captions lose their grey. Nothing may be cut off: the page's side margins
# shrink, metric labels, deltas and the navigation wrap, a metric's value and a formula shrink to their column
# (container units), and a chart wider than its column is scaled down to it (charts grow: explorer.charts.projector).
PROJECTOR_CSS = """<style>
html { font-size: 21px; }
.stApp, .stApp p, .stApp li, .stApp label, .stApp h1, .stApp h2, .stApp h3 { color: #000 !important; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] * { color: #111 !important; }
[data-testid="stMainBlockContainer"] { padding-left: 1.5rem !important; padding-right: 1.5rem !important; }
[data-testid="stMetricLabel"] *, [data-testid="stMetricDelta"], [data-testid="stMetricDelta"] *,
[data-testid="stSidebarNavLink"] *, [data-testid="stNavSectionHeader"], [data-testid="stNavSectionHeader"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-testid="stMetricDelta"] { height: auto !important; }
[data-testid="stMetric"] { container-type: inline-size; }
[data-testid="stMetricValue"], [data-testid="stMetricValue"] * {
  overflow: visible !important; text-overflow: clip !important; font-size: clamp(1.2rem, 24cqi, 2.25rem) !important;
}
.vega-embed canvas.marks, .vega-embed svg.marks { max-width: 100% !important; height: auto !important; }
[data-testid="stElementContainer"]:has(.katex-display) { container-type: inline-size; }
.katex-display { overflow-x: auto !important; overflow-y: hidden !important; }
.katex-display > .katex { font-size: clamp(0.8em, 6.5cqi, 1.05em) !important; }
</style>"""
# Room above a chart's title: Vega places a title by its font size, while a Chinese title's glyphs (and any title
# over a y-axis title longer than the plot) reach higher, and the top of the title was cut off.
CHART_PADDING = {"top": 14, "bottom": 5, "left": 5, "right": 5}
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


def wire(figure) -> dict:
    """A chart as chart() hands it to Streamlit: a Vega-Lite dict whose datasets are already Arrow bytes.

    st.vega_lite_chart re-encodes inline data to Arrow on every run, unless it already is; a page that caches
    wire(...) by its parameters pays for the encoding once for the whole server.
    """
    spec = figure if isinstance(figure, dict) else to_spec(figure)
    datasets = spec.get("datasets")
    if not datasets or all(isinstance(v, bytes) for v in datasets.values()):
        return spec
    encoded = {
        k: v if isinstance(v, bytes) else dataframe_util.convert_anything_to_arrow_bytes(v) for k, v in datasets.items()
    }
    return {**spec, "datasets": encoded}


def _json_data(spec: dict) -> dict:
    """The spec with its Arrow datasets back as rows of values (plain Vega-Lite, for vl-convert)."""
    datasets = spec.get("datasets") or {}
    rows = {k: pa.ipc.open_stream(v).read_all().to_pylist() if isinstance(v, bytes) else v for k, v in datasets.items()}
    return {**spec, "datasets": rows} if datasets else spec


def _build(builder: str, args: tuple, kwargs: dict, properties: dict, big: bool) -> dict:
    module, _, name = builder.rpartition(".")
    figure = getattr(importlib.import_module(module), name)(*args, **kwargs)
    spec = wire(figure.properties(**properties) if properties else figure)
    return projected(spec) if big else spec


@st.cache_data(max_entries=256, show_spinner=False)
def _built_spec(builder: str, args: tuple, kwargs: dict, properties: dict, big: bool) -> dict:
    return _build(builder, args, kwargs, properties, big)


@st.cache_data(max_entries=64, show_spinner=False)
def _built_from_key(builder: str, data_key: tuple, plain: tuple, kwargs: dict, properties: dict, big: bool, _frames):
    args = tuple(p if f is None else f for f, p in zip(_frames, plain, strict=True))
    return _build(builder, args, kwargs, properties, big)


def spec_of(builder, *args, properties: dict | None = None, data_key: tuple | None = None, **kwargs) -> dict:
    """builder(*args, **kwargs) as a Vega-Lite dict, built once per distinct arguments for the whole server.

    Building an Altair chart and turning it into a dict costs tens of milliseconds, more than most tables behind
    it; a class on one link asks for the same charts. `builder` is a function of an explorer.charts module; its
    arguments are plain values, DataFrames and text dicts (Streamlit hashes them). `properties` are set on the
    chart before it is turned into a dict (a height, say). Hashing a DataFrame of tens of thousands of rows costs
    more than the lookup saves: `data_key`, the plain parameters the frames were computed from, then stands in
    for the DataFrame arguments (the caller promises that equal keys mean equal frames). Projector mode is part
    of the key: its variant is built and cached beside the plain one, never made by changing a cached dict.
    """
    name, properties, big = f"{builder.__module__}.{builder.__name__}", properties or {}, projector()
    if data_key is None:
        return _built_spec(name, args, kwargs, properties, big)
    frames = tuple(a if isinstance(a, pd.DataFrame) else None for a in args)
    plain = tuple(None if isinstance(a, pd.DataFrame) else a for a in args)
    return _built_from_key(name, data_key, plain, kwargs, properties, big, frames)


def chart(figure, data: pd.DataFrame | None, name: str, *, where=None, width="stretch") -> None:
    """Draw an Altair chart (or a cached Vega-Lite dict) and offer its data as CSV and the chart as SVG.

    `name` names the files and must be unique on the page. Streamlit's own chart menu offers PNG. Both
    files are made only when the button is clicked. In projector mode the chart's type, marks and fixed sizes grow
    (explorer.charts.projector); a spec from spec_of arrives already projected, any other is projected here.
    """
    where = where or st
    spec = wire(figure)  # st.altair_chart would validate the chart and re-encode its data on every run
    spec = {"padding": CHART_PADDING, **spec}
    if projector():
        spec = projected(spec)
    where.vega_lite_chart(spec, width=width)
    row = where.container(horizontal=True, gap="small")
    if data is not None:
        row.download_button(
            t("common.frame.csv"),
            data=lambda: data.to_csv(index=False).encode("utf-8"),
            file_name=f"{name}.csv",
            mime="text/csv",
            key=f"csv_{name}",
            on_click="ignore",
            type="tertiary",
            icon=":material/download:",
            help=t("common.frame.csv_help"),
        )
    row.download_button(
        "SVG",
        data=lambda: svg(spec),
        file_name=f"{name}.svg",
        mime="image/svg+xml",
        key=f"svg_{name}",
        on_click="ignore",
        type="tertiary",
        icon=":material/image:",
        help=t("common.frame.svg_help"),
    )


def svg(spec: dict) -> str:
    """The chart rendered to SVG by vl-convert (imported on first use: it starts a JavaScript runtime)."""
    import vl_convert

    return vl_convert.vegalite_to_svg(_json_data(spec))


@st.cache_resource
def hardware_label() -> str:
    """What the app computes on: the GPU's name, or the CPU with its core count."""
    if torch.cuda.is_available():
        return f"GPU: {torch.cuda.get_device_name(0)}"
    cpu = platform.processor() or platform.machine()
    return f"CPU ({torch.get_num_threads()} threads, {cpu}) · torch {torch.__version__}"


def sidebar() -> None:
    """The sidebar shared by all pages: language, seed, projector and lesson mode, the hardware in use."""
    state.begin_run()
    bar = st.sidebar
    # With the sidebar hidden by a link, the language choice moves to the top of the page: never out of reach.
    where = bar if not sidebar_hidden() else st.popover("Language / 语言", icon=":material/translate:")
    state.selectbox(
        "Language / 语言", list(LANGUAGES), browser_language(), key="lang", where=where, format_func=LANGUAGES.get
    )
    state.number_input(
        t("common.sidebar.seed"), 0, 2**31 - 1, DEFAULT_SEED, key="seed", where=bar, help=t("common.sidebar.seed_help")
    )
    state.toggle(
        t("common.sidebar.projector"), False, key="projector", where=bar, help=t("common.sidebar.projector_help")
    )
    state.toggle(t("common.sidebar.lesson"), False, key="lesson", where=bar, help=t("common.sidebar.lesson_help"))
    bar.caption(hardware_label())
    if projector():
        st.html(PROJECTOR_CSS)
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
    base = st.context.url or ""
    return base + ("?" + urllib.parse.urlencode(params, safe=",") if params else "")


def share_panel() -> None:
    """After the page has drawn its controls: the link to this view, and the teacher's lesson link."""
    if sidebar_hidden():
        return
    bar = st.sidebar
    # A link names the language only when the viewer chose one other than their browser's: a student whose browser
    # is Chinese then reads Chinese, whatever the language of the person who copied the link.
    chosen = st.session_state.get("lang")
    with bar.expander(t("common.share.title"), icon=":material/link:"):
        st.caption(t("common.share.help"))
        st.code(view_link(lang=chosen if chosen != browser_language() else None), language=None, wrap_lines=True)
    with bar.expander(t("common.teacher.title"), icon=":material/school:"):
        st.caption(t("common.teacher.help"))
        drawn = {k: v for k, v in state.controls_this_run().items() if k != "lang"}
        hide = st.multiselect(
            t("common.teacher.hide"), list(drawn), format_func=drawn.get, key="teacher_hide", placeholder="—"
        )
        no_sidebar = st.checkbox(t("common.teacher.no_sidebar"), key="teacher_no_sidebar")
        lesson = st.checkbox(t("common.teacher.lesson"), value=True, key="teacher_lesson")
        languages = {BROWSER: t("common.teacher.browser_language"), **LANGUAGES}
        language = st.selectbox(
            t("common.teacher.language"), list(languages), key="teacher_lang", format_func=languages.get
        )
        names = sorted(set(hide) | (state.hidden() - set(drawn)) | ({"sidebar"} if no_sidebar else set()))
        st.code(
            view_link(
                hide=",".join(names) or None,
                lesson="true" if lesson else "false",
                lang=None if language == BROWSER else language,
            ),
            language=None,
            wrap_lines=True,
        )


@contextlib.contextmanager
def friendly_errors(what: str):
    """Turn a failure inside one part of a page into a message; the rest of the page keeps working."""
    try:
        yield
    except ValueError as err:  # messages may quote what was typed or linked: never let it become Markdown
        st.warning(f"{what}: {literal(err)}", icon=":material/error:")
    except (RuntimeError, MemoryError) as err:
        st.error(t("common.frame.failed", what=what, kind=type(err).__name__), icon=":material/error:")
