"""The frame every page shares: header, formula, what to notice, predict-first, seed, charts with their
data, friendly errors, and the classroom options (language, projector mode, lesson mode, share link)."""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import importlib
import io
import itertools
import os
import platform
import re
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable

import pandas as pd
import pyarrow as pa
import streamlit as st
import torch
from streamlit import dataframe_util, net_util, runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from explorer.charts.common import to_wire_spec
from explorer.charts.projector import fitted, projected
from explorer.ui import state
from explorer.ui.glossary import glossary_link
from explorer.ui.heavy import RUNNING
from explorer.ui.i18n import LANGUAGES, browser_language, language_changed, t, td, this_run
from explorer.ui.registry import LESSON, PageInfo

DEFAULT_SEED = 0
SHARE_OPEN, TEACHER_OPEN = "share_open", "teacher_open"  # whether the sidebar's link panels are open
BROWSER = "browser"  # the teacher's language choice that leaves the language to each student's browser

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
# Room above a chart's title: Vega places a title by its font size, while a Chinese title's glyphs (and any title
# over a y-axis title longer than the plot) reach higher, and the top of the title was cut off.
# And room at its left: Vega's estimate of a rotated y-axis title's extent fell ~7 px short (saturation's entropy
# chart lost the first letter of its title and its axis title).
CHART_PADDING = {"top": 14, "bottom": 5, "left": 14, "right": 5}
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
    spec = figure if isinstance(figure, dict) else to_wire_spec(figure)
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


# Where a DataFrame came from: id(frame) -> (weak reference to it, (table function, its arguments)). A frame that
# `table()` handed out stands for its origin in a chart's cache key: hashing its values costs ~1 ms per thousand rows
# on every run, a look-up here costs nothing. A frame made from it (filtered, sorted) is a new object with no origin.
_ORIGINS: dict[int, tuple[weakref.ref, tuple]] = {}
_PLAIN = (str, int, float, bool, type(None))


def _remember(frame: pd.DataFrame, origin: tuple) -> None:
    key = id(frame)

    def forget(ref: weakref.ref, key: int = key) -> None:
        entry = _ORIGINS.get(key)
        if entry is not None and entry[0] is ref:
            _ORIGINS.pop(key, None)

    _ORIGINS[key] = (weakref.ref(frame, forget), origin)


def origin(frame: pd.DataFrame) -> tuple | None:
    """(table function, arguments[, position in its result]) of a frame that `table()` returned, else None."""
    entry = _ORIGINS.get(id(frame))
    return entry[1] if entry is not None and entry[0]() is frame else None


@functools.cache
def _cached_table(fn, max_entries: int):
    return st.cache_data(max_entries=max_entries)(fn)


@functools.cache
def table(fn, max_entries: int):
    """fn (a function of explorer.tables) cached for the whole server by its arguments, as st.cache_data does, with:
    - the cached function made once per process, not on every run of the page (Streamlit reads its source then);
    - results kept as the objects fn returned, keyed by _key(arguments): no hashing of the arguments (~1.3 ms a
      call in Streamlit's hasher) and no unpickling of the result on every hit. The results are shared by every
      session: pages never change a returned frame, array or dict in place (pandas' copy-on-write keeps what
      they derive from one apart);
    - within one run, the same call answered without even that look-up;
    - a result missing when a class asks for it at once (a fresh server's first visits) computed once, the other
      sessions waiting for it instead of computing it beside it on the same two cores;
    - the frames it returns remembered by origin: spec_of() keys a chart of such a frame by the call that made it
      instead of hashing its values.
    Arguments with no exact key of their own (a large frame of unknown origin, an object) go to st.cache_data."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    store = Store(max_entries)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            where = (name, _key(args), _key(dict(sorted(kwargs.items()))))
        except _Unkeyed:  # an argument with no exact key of its own: Streamlit hashes it, nothing is remembered
            return _cached_table(fn, max_entries)(*args, **kwargs)
        results = this_run().setdefault("tables", {})  # this run's results of table functions, by call
        result = results.get(where)
        if result is not None:
            return result
        result = results[where] = store.get_once(where, lambda: _remembered(fn(*args, **kwargs), where))
        return result

    return call


def _remembered(result, where: tuple):
    """result, its frames (itself, or the parts of a tuple) remembered as made by the call `where`."""
    if isinstance(result, pd.DataFrame):
        _remember(result, where)
    elif isinstance(result, tuple):
        for i, part in enumerate(result):
            if isinstance(part, pd.DataFrame):
                _remember(part, (*where, i))
    return result


SMALL_FRAME = 500  # rows: a frame of unknown origin up to this size is keyed by a digest of its values (~1 ms)


def _digest(frame: pd.DataFrame) -> bytes:
    values = pd.util.hash_pandas_object(frame, index=True).to_numpy()
    return hashlib.blake2b(values.tobytes(), digest_size=16).digest()


class _Unkeyed(TypeError):
    """An argument with no cheap, exact key (a frame of unknown origin, an object): Streamlit hashes it instead."""


def _key(value):
    """A hashable stand-in for a chart builder's argument, equal exactly when the arguments are equal."""
    if type(value) in (str, int):
        return value
    if isinstance(value, pd.DataFrame):
        where = origin(value)
        if where is not None:
            return ("frame", where)
        if len(value) > SMALL_FRAME:
            raise _Unkeyed
        where = ("values", value.shape, tuple(value.columns), tuple(map(str, value.dtypes)), _digest(value))
        _remember(value, where)  # the next key of this very frame (in this run) costs nothing
        return ("frame", where)
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, _PLAIN):  # floats and booleans keep their type: 1, 1.0 and True are equal keys otherwise
        return (type(value).__name__, value)
    raise _Unkeyed


class Store:
    """Results kept for the whole server by key (built charts; a table function's results; benchmark rows), the
    least recently used dropped first. They are shared by every session and never changed after they are built
    (chart() copies a spec before adding padding or projector settings)."""

    def __init__(self, size: int):
        self.size, self._lock, self._specs = size, threading.Lock(), collections.OrderedDict()
        self._building: dict = {}  # key -> [its lock, callers waiting on it] while get_once builds it

    def peek(self, key):
        """The kept value, or None."""
        with self._lock:
            value = self._specs.get(key)
            if value is not None:
                self._specs.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._specs[key] = value
            while len(self._specs) > self.size:
                self._specs.popitem(last=False)

    def get(self, key, build: Callable[[], object]):
        """The kept value, or build()'s, kept. Built outside the lock: two sessions missing at once both build,
        neither waits (for cheap builds)."""
        value = self.peek(key)
        if value is None:
            value = build()
            self.put(key, value)
        return value

    def get_once(self, key, build: Callable[[], object], keep: Callable[[object], bool] | None = None):
        """get(), for expensive builds: one build per key at a time, a second caller waiting for the first's value.
        A value for which keep(value) is False is returned to its caller and not kept (a waiter then builds)."""
        value = self.peek(key)
        if value is not None:
            return value
        with self._lock:
            building = self._building.setdefault(key, [threading.Lock(), 0])
            building[1] += 1
        try:
            with building[0]:
                value = self.peek(key)
                if value is None:
                    value = build()
                    if keep is None or keep(value):
                        self.put(key, value)
                return value
        finally:
            with self._lock:
                building[1] -= 1
                if not building[1]:
                    self._building.pop(key, None)


@functools.cache
def store(name: str, size: int) -> Store:
    """The server's store called `name` (made on first use, then the same one in every session and run)."""
    return Store(size)


def known(frame: pd.DataFrame, *made_from) -> pd.DataFrame:
    """frame, remembered as made from `made_from` (plain values, frames that table() returned or known() named): the
    caller's promise that equal origins mean equal frames. spec_of, memo and @shared then key it by that origin
    instead of digesting its values on every run."""
    _remember(frame, ("known", _key(made_from)))
    return frame


_SPECS = Store(256)


def memo(key: tuple, build: Callable[[], dict]) -> dict:
    """build() once per key for the whole server (a chart spec, usually): `key` holds plain values, text dicts and
    frames that table() returned, and must name everything build() depends on (its function's name first). Any
    other argument raises TypeError: a programming error, which the page tests meet."""
    code = getattr(build, "__code__", None)  # where build() is written: a changed page never meets its old entries
    where = (code.co_filename, code.co_firstlineno) if code is not None else (repr(build),)
    return _SPECS.get_once(("memo", where, _key(key)), build)


def shared(fn):
    """A page's function (plain arguments, text dicts, frames from table()) whose results are kept for the whole
    server by its arguments, in memo()'s store: what @st.cache_data did, without hashing frame values, pickling the
    results on every hit, or reading the function's source on every run of the page (its decorator runs each time).
    The results are shared, not copied: callers only read them."""
    where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)

    @functools.wraps(fn)
    def call(*args):
        return _SPECS.get_once(("shared", where, _key(args)), lambda: fn(*args))

    return call


def spec_of(builder, *args, properties: dict | None = None, data_key: tuple | None = None, **kwargs) -> dict:
    """builder(*args, **kwargs) as a Vega-Lite dict, built once per distinct arguments for the whole server.

    Building an Altair chart and turning it into a dict costs tens of milliseconds, more than most tables behind
    it; a class on one link asks for the same charts. `builder` is a function of an explorer.charts module; its
    arguments are plain values, text dicts and DataFrames. A DataFrame that `table()` returned is keyed by the call
    that made it; `data_key`, the plain parameters the frames were computed from, stands in for every DataFrame
    argument instead (the caller promises that equal keys mean equal frames). Any other DataFrame is hashed by
    Streamlit, which costs about a millisecond per thousand rows. Projector mode is part of the key: its variant is
    built and kept beside the plain one, never made by changing a shared dict.
    """
    name, properties, big = f"{builder.__module__}.{builder.__name__}", properties or {}, projector()
    try:
        if data_key is None:
            key = (name, big, _key(args), _key(kwargs), _key(properties))
        else:
            frames = tuple(i for i, a in enumerate(args) if isinstance(a, pd.DataFrame))
            plain = tuple(None if i in frames else a for i, a in enumerate(args))
            key = (name, big, _key(plain), _key(kwargs), _key(properties), ("data_key", _key(data_key), frames))
    except _Unkeyed:
        return _built_spec(name, args, kwargs, properties, big)
    return _SPECS.get_once(key, lambda: _build(name, args, kwargs, properties, big))


def chart(figure, data: pd.DataFrame | None, name: str, *, where=None, width="stretch") -> None:
    """Draw an Altair chart (or a cached Vega-Lite dict) and offer its data as CSV and the chart as SVG.

    `name` names the files and must be unique on the page. Streamlit's own chart menu offers PNG. Both
    files are made only when the button is clicked (see `pinned`: a rerun costs nothing for them). In projector
    mode the chart's type, marks and fixed sizes grow (explorer.charts.projector); a spec from spec_of arrives
    already projected, any other is projected here.
    """
    where = where or st
    spec = wire(figure)  # st.altair_chart would validate the chart and re-encode its data on every run
    spec = {"padding": CHART_PADDING, **spec}
    spec = projected(spec) if projector() else fitted(spec)
    where.vega_lite_chart(spec, width=width)
    row = where.container(horizontal=True, gap="small")
    if data is not None:
        headers = td("common.csv_columns")  # read in the script's thread: the language is the session's
        row.download_button(
            t("common.frame.csv"),
            data=pinned(lambda: csv_text(data, headers), "text/csv", f"{name}.csv"),
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
        data=pinned(lambda: svg(spec), "image/svg+xml", f"{name}.svg"),
        file_name=f"{name}.svg",
        mime="image/svg+xml",
        key=f"svg_{name}",
        on_click="ignore",
        type="tertiary",
        icon=":material/image:",
        help=t("common.frame.svg_help"),
    )


def csv_text(data: pd.DataFrame, headers: dict[str, str]) -> str:
    """A chart's data as CSV for a spreadsheet: each column named in the viewer's language (common.csv_columns; a
    name not there, a symbol such as n or d_k, stays), every value as computed. Chinese names start the file with
    a byte-order mark: without one, Excel reads UTF-8 as the local code page and shows them garbled."""
    text = data.rename(columns=lambda c: headers.get(str(c), c)).to_csv(index=False)
    return text if text.isascii() else "\ufeff" + text


# Files made by export clicks that stay pinned on the server: the last PINNED_EXPORTS of them (the largest export
# is about 0.3 MB, so at most about 10 MB).
PINNED_EXPORTS = 32
_pin_slots = itertools.count()


def pinned(make, mime: str, file_name: str):
    """A download button's deferred data: make() run on the click, its file kept until the browser has fetched it.

    Streamlit 1.67 stores the file a deferred download makes without tying it to any session, so the next two
    script runs that end anywhere on the server delete it; in a busy class they can come before the browser's
    fetch of the URL it was just given, and the click gets a 404. Here the file is also stored under one of
    PINNED_EXPORTS slots of the server's media file manager, taken in turn: Streamlit keys a file by its bytes,
    MIME type and name, so this is the very file the click's URL names, and it stays until its slot is reused.
    Reruns are not affected: nothing is made or hashed before a click.
    """

    def data() -> bytes:
        content = make()
        content = content.encode("utf-8") if isinstance(content, str) else content
        if runtime.exists():
            slot = next(_pin_slots) % PINNED_EXPORTS
            runtime.get_instance().media_file_mgr.add(
                content, mime, f"attn-export-pin-{slot}", file_name=file_name, is_for_static_download=True
            )
        return content

    return data


def svg(spec: dict) -> str:
    """The chart rendered to SVG by vl-convert (imported on first use: it starts a JavaScript runtime)."""
    import vl_convert

    return vl_convert.vegalite_to_svg(_json_data(spec))


@st.cache_resource
def _hardware() -> dict:
    """What the app computes on, once per process: the GPU's name, or the CPU with its thread count."""
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
        ctx = get_script_run_ctx(suppress_warning=True)
        alone, start = bool(ctx and ctx.fragment_ids_this_run), time.thread_time()
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
    ip = (own_address or net_util.get_internal_ip)()
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


@contextlib.contextmanager
def friendly_errors(what: str):
    """Turn a failure inside one part of a page into a message; the rest of the page keeps working."""
    try:
        yield
    except ValueError as err:  # messages may quote what was typed or linked: never let it become Markdown
        st.warning(f"{what}: {literal(err)}", icon=":material/error:")
    except (RuntimeError, MemoryError) as err:
        st.error(t("common.frame.failed", what=what, kind=type(err).__name__), icon=":material/error:")
