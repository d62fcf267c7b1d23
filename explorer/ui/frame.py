"""The old home of the page frame, kept while the pages move to its successors: explorer.ui.page (the page's
frame), explorer.ui.draw (charts with exports), explorer.ui.cache (caching), explorer.ui.sidebar (the sidebar and
links), explorer.ui.internals (Streamlit's internals). The caching helpers below (table, spec_of, memo, shared,
known) are the ones `@cached` and `draw.chart` replace; this module goes when no page imports it."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pandas as pd
import streamlit as st

from explorer.ui.cache import SMALL_FRAME, Store, call_key, key_of, origin, remember, store  # noqa: F401
from explorer.ui.cache import _digest as _digest  # noqa: F401
from explorer.ui.draw import (  # noqa: F401
    CHART_PADDING,
    PINNED_EXPORTS,
    SPECS,
    _build,
    chart,
    csv_text,
    json_data,
    pinned,
    svg,
    wire,
)
from explorer.ui.internals import this_run
from explorer.ui.page import (  # noqa: F401
    DEFAULT_SEED,
    ENTER_CSS,
    HIDE_SIDEBAR_CSS,
    PAGE_CSS,
    PROJECTOR_CSS,
    RUN_CPU_LOG,
    SHARE_OPEN,
    TEACHER_OPEN,
    anchor_of,
    contents,
    formula,
    friendly_errors,
    header,
    literal,
    log_run_cpu,
    notice,
    predict_first,
    projector,
    section,
    seed,
)
from explorer.ui.sidebar import (  # noqa: F401
    BROWSER,
    LOOPBACK,
    QR_PX,
    _address,
    _hardware,
    class_base,
    class_link,
    hardware_label,
    lesson_bar,
    page_title,
    qr_dialog,
    qr_png,
    share_panel,
    sidebar,
    sidebar_hidden,
    teacher_panel,
    view_link,
)

_json_data = json_data
_SPECS = SPECS
_key = key_of
_remember = remember
_Unkeyed = TypeError


@st.cache_data(max_entries=256, show_spinner=False)
def _built_spec(builder: str, args: tuple, kwargs: dict, properties: dict, big: bool) -> dict:
    module, _, name = builder.rpartition(".")
    import importlib

    return _build(getattr(importlib.import_module(module), name), args, kwargs, properties, big)


@functools.cache
def _cached_table(fn, max_entries: int):
    return st.cache_data(max_entries=max_entries)(fn)


@functools.cache
def table(fn, max_entries: int):
    """fn cached for the whole server by its arguments (the older form of @cached, which replaces it); arguments
    with no key of their own go to st.cache_data."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    kept = Store(max_entries)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            where = (name, key_of(args), key_of(dict(sorted(kwargs.items()))))
        except TypeError:
            return _cached_table(fn, max_entries)(*args, **kwargs)
        results = this_run().setdefault("tables", {})
        result = results.get(where)
        if result is not None:
            return result
        result = results[where] = kept.get_once(where, lambda: _remembered(fn(*args, **kwargs), where))
        return result

    return call


def _remembered(result, where: tuple):
    if isinstance(result, pd.DataFrame):
        remember(result, where)
    elif isinstance(result, tuple):
        for i, part in enumerate(result):
            if isinstance(part, pd.DataFrame):
                remember(part, (*where, i))
    return result


def known(frame: pd.DataFrame, *made_from) -> pd.DataFrame:
    """frame, remembered as made from `made_from` (the caller's promise that equal origins mean equal frames)."""
    remember(frame, ("known", key_of(made_from)))
    return frame


def memo(key: tuple, build: Callable[[], dict]) -> dict:
    """build() once per key for the whole server; `key` must name everything build() depends on."""
    code = getattr(build, "__code__", None)  # where build() is written: a changed page never meets its old entries
    where = (code.co_filename, code.co_firstlineno) if code is not None else (repr(build),)
    return SPECS.get_once(("memo", where, key_of(key)), build)


def shared(fn):
    """A page's function whose results are kept for the whole server by its arguments, in memo()'s store."""
    where = (fn.__code__.co_filename, fn.__code__.co_firstlineno, fn.__qualname__)

    @functools.wraps(fn)
    def call(*args):
        return SPECS.get_once(("shared", where, key_of(args)), lambda: fn(*args))

    return call


def spec_of(builder, *args, properties: dict | None = None, data_key: tuple | None = None, **kwargs) -> dict:
    """builder(*args, **kwargs) as a Vega-Lite dict, built once per distinct arguments for the whole server (the
    older form of draw.chart(builder, ...)); `data_key` stands in for every DataFrame argument."""
    name, properties, big = f"{builder.__module__}.{builder.__qualname__}", properties or {}, projector()
    try:
        if data_key is None:
            key = (name, big, key_of(args), key_of(kwargs), key_of(properties))
        else:
            frames = tuple(i for i, a in enumerate(args) if isinstance(a, pd.DataFrame))
            plain = tuple(None if i in frames else a for i, a in enumerate(args))
            key = (name, big, key_of(plain), key_of(kwargs), key_of(properties), ("data_key", key_of(data_key), frames))
    except TypeError:
        return _built_spec(name, args, kwargs, properties, big)
    return SPECS.get_once(key, lambda: _build(builder, args, kwargs, properties, big))
