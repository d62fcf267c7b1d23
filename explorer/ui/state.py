"""Controls mirrored in the URL, so that copying the address bar reproduces a view.

Each control is drawn through one of the functions below instead of `st.<widget>` directly. Before
the widget is drawn, a value for its key found in the URL (or kept from an earlier visit to the page
in this session) is checked against the widget's own range or options and, if valid, becomes the
widget's value; an invalid or hostile one is ignored with a notice and the default stays. After the
widget is drawn, its value is written back to the URL and kept for the session, so switching pages
and coming back restores it (Streamlit forgets the widgets of pages not shown and clears the URL's
parameters on a page switch).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import streamlit as st

from explorer.ui.i18n import t
from explorer.ui.internals import history_navigation, widget_keys_sent

MAX_URL_VALUE = 200  # characters: longer values are refused before parsing
_KEPT = "_kept_controls"  # {key: value} of every control seen in this session
_SEEN = "_url_values_seen"  # {key: raw URL value already applied}, so a URL value is adopted once
_NOTICES = "_url_notices"
_THIS_RUN = "_controls_this_run"  # {key: label} of the controls the current run has drawn (the teacher panel)
_DEFAULTS = "_control_defaults_this_run"  # {key: default as the URL writes it}: a teacher's link leaves these out
HIDE = "hide"  # URL parameter: comma-separated control keys a teacher hides from the class ("sidebar" too)
# Anyone can write a link, teacher or not: whatever it hides, the viewer can still change the language (and, with
# the sidebar hidden, the navigation moves to the top of the page: see app.py).
NEVER_HIDDEN = frozenset({"lang"})
_NAME = re.compile(r"[a-z][a-z0-9_]{0,40}")
MAX_HIDDEN = 40


class Refused(ValueError):
    """A URL value that does not fit its control; `why` names the string that explains it to the viewer."""

    def __init__(self, why: str, **fields):
        super().__init__(why)
        self.why, self.fields = why, fields


def _number(kind: type, lo, hi, step=None) -> Callable[[str], object]:
    def parse(raw: str):
        try:
            value = kind(raw) if kind is float else int(raw, 10)
        except (TypeError, ValueError):
            raise Refused("number", lo=lo, hi=hi) from None
        if (isinstance(value, float) and not math.isfinite(value)) or not lo <= value <= hi:
            raise Refused("number", lo=lo, hi=hi)
        if step and kind is int and (value - lo) % step:
            raise Refused("multiple", step=step, lo=lo)
        return value

    return parse


def _choice(options: Sequence) -> Callable[[str], object]:
    by_text = {str(o): o for o in options}

    def parse(raw: str):
        if raw not in by_text:
            raise Refused("choice", options=", ".join(list(by_text)[:8]) + ("…" if len(by_text) > 8 else ""))
        return by_text[raw]

    return parse


def _boolean(raw: str) -> bool:
    if raw not in ("true", "false"):
        raise Refused("boolean")
    return raw == "true"


def _choices(options: Sequence, limit: int | None = None) -> Callable[[str], list]:
    """A comma-separated list of distinct options ("" is the empty selection), at most `limit` of them."""
    one = _choice(options)

    def parse(raw: str) -> list:
        items = [one(item) for item in raw.split(",")] if raw else []
        if len(set(map(str, items))) != len(items):
            raise Refused("twice")
        if limit is not None and len(items) > limit:
            raise Refused("at_most", n=limit)
        return items

    return parse


def _optional(parse: Callable[[str], object]) -> Callable[[str], object]:
    return lambda raw: None if raw == "" else parse(raw)


def _serialize(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return "" if value is None else str(value)


def _sent_by_browser() -> frozenset[str]:
    """The keys of the widgets whose values the browser sent with this run.

    A tab that outlived its session (a server restart, a laptop asleep past the session's lifetime) reconnects
    to a new session and sends every widget's value with its next run: that value, maybe just moved, is newer
    than the address bar the new session has never seen. Streamlit 1.67 keeps them by widget id until the widget
    is drawn (no public call reads them earlier): internals.widget_keys_sent reads them.
    Not on the browser's back or forward button: then the address is what the student asked for.
    """
    if history_navigation():
        return frozenset()
    return widget_keys_sent()


def _restore(key: str, parse: Callable[[str], object]) -> None:
    """Give `key` its URL value (once per distinct URL value) or the value kept from an earlier visit; a value
    the browser sent for it wins over a URL value this session has not seen yet (a reconnected tab's)."""
    state = st.session_state
    raw = st.query_params.get(key)
    seen = state.setdefault(_SEEN, {})
    if raw is not None and seen.get(key) != raw and key in _sent_by_browser():
        seen[key] = raw  # the widget below takes the browser's value and _publish writes it to the URL
        return
    if raw is not None and seen.get(key) != raw:
        seen[key] = raw
        try:
            if len(raw) > MAX_URL_VALUE:
                raise Refused("long", n=MAX_URL_VALUE)
            state[key] = parse(raw)
            return
        except Refused as err:
            state.setdefault(_NOTICES, []).append((key, err))
    if key not in state and key in state.get(_KEPT, {}):
        try:  # another page may use the same key with another range: re-check the kept value
            state[key] = parse(_serialize(state[_KEPT][key]))
        except Refused:
            pass


def _publish(key: str, value) -> None:
    text = _serialize(value)
    st.session_state.setdefault(_KEPT, {})[key] = value
    st.session_state.setdefault(_SEEN, {})[key] = text
    if st.query_params.get(key) != text:
        st.query_params[key] = text


def _names(raw: str) -> frozenset[str]:
    names = [n for n in raw.split(",") if n]
    if len(names) > MAX_HIDDEN or not all(_NAME.fullmatch(n) for n in names):
        raise Refused("names")
    return frozenset(names) - NEVER_HIDDEN


def begin_run() -> None:
    """Called once at the top of every run: forget the previous run's controls, read the teacher's `hide`."""
    st.session_state[_THIS_RUN] = {}
    st.session_state[_DEFAULTS] = {}
    _restore(HIDE, _names)


def hidden() -> frozenset[str]:
    """The controls (and "sidebar") a teacher's link hides from the class."""
    return st.session_state.get(HIDE, frozenset())


def publish_hidden() -> None:
    text = ",".join(sorted(hidden()))
    st.session_state.setdefault(_SEEN, {})[HIDE] = text
    if not text:
        st.query_params.pop(HIDE, None)
    elif st.query_params.get(HIDE) != text:
        st.query_params[HIDE] = text


def box(*keys: str, where=st):
    """The bordered box a page draws `keys`' controls in; borderless when a teacher's link hides all of them, so
    that no empty frame is left on the page."""
    return where.container(border=not set(keys) <= hidden())


def controls_this_run() -> dict[str, str]:
    """{key: label} of the controls drawn so far in this run."""
    return dict(st.session_state.get(_THIS_RUN, {}))


def defaults_this_run() -> dict[str, str]:
    """{key: default value, as the URL writes it} of the controls drawn so far in this run."""
    return dict(st.session_state.get(_DEFAULTS, {}))


def _draw(widget: Callable, key: str, parse: Callable[[str], object], default, default_kw: dict, **kwargs):
    _restore(key, parse)
    st.session_state.setdefault(_THIS_RUN, {})[key] = kwargs.get("label", key)
    st.session_state.setdefault(_DEFAULTS, {})[key] = _serialize(default)
    if key in hidden():  # the teacher hid it: keep its value (from the link) without drawing it
        value = st.session_state.get(key, default)
    else:
        if key not in st.session_state:
            kwargs.update(default_kw)  # pass the default only when no state exists (Streamlit warns otherwise)
        value = widget(key=key, **kwargs)
    _publish(key, value)
    return value


def value(key: str, parse: Callable[[str], object], default):
    """A value the page draws itself (a data editor, say): restored from the URL or this session, else default.

    The page calls `keep(key, value)` once it has the value the user sees.
    """
    _restore(key, parse)
    return st.session_state.get(key, default)


def keep(key: str, value, label: str | None = None) -> None:
    """Record the value the user now sees: in the URL, and for `value()` after a page switch."""
    st.session_state.setdefault(_THIS_RUN, {})[key] = label or key
    st.session_state[key] = value
    _publish(key, value)


def slider(label: str, lo, hi, default, step, *, key: str, where=st, **kwargs):
    """A numeric slider; ints when lo, hi, default and step are all ints.

    A value already in the session is pulled inside [lo, hi] and kept when the range changes (pages whose
    range follows another control: Streamlit would otherwise treat the slider as new and restart it at lo).
    """
    kind = int if all(isinstance(x, int) for x in (lo, hi, default, step)) else float
    if key in st.session_state:  # set, not left to the widget: a new range is a new widget that would restart at lo
        st.session_state[key] = min(max(st.session_state[key], lo), hi)
    return _draw(
        where.slider,
        key,
        _number(kind, lo, hi, step),
        default,
        {"value": default},
        label=label,
        min_value=lo,
        max_value=hi,
        step=step,
        **kwargs,
    )


def number_input(label: str, lo: int, hi: int, default: int, *, key: str, where=st, **kwargs):
    return _draw(
        where.number_input,
        key,
        _number(int, lo, hi),
        default,
        {"value": default},
        label=label,
        min_value=lo,
        max_value=hi,
        step=1,
        **kwargs,
    )


def select_slider(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    return _draw(
        where.select_slider, key, _choice(options), default, {"value": default}, label=label, options=options, **kwargs
    )


def _indexed(widget: Callable, label: str, options: Sequence, default, key: str, kwargs: dict):
    """A widget whose default is given as an index into its options (selectbox, radio)."""
    index = {"index": list(options).index(default)}
    return _draw(widget, key, _choice(options), default, index, label=label, options=options, **kwargs)


def selectbox(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    return _indexed(where.selectbox, label, options, default, key, kwargs)


def radio(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    return _indexed(where.radio, label, options, default, key, kwargs)


def text_input(label: str, default: str, *, key: str, max_chars: int, where=st, **kwargs):
    """Free text, capped at max_chars; the page parses it strictly and explains what it expects."""

    def parse(raw: str) -> str:
        if len(raw) > max_chars:
            raise Refused("long", n=max_chars)
        return raw

    return _draw(where.text_input, key, parse, default, {"value": default}, label=label, max_chars=max_chars, **kwargs)


def toggle(label: str, default: bool, *, key: str, where=st, **kwargs):
    return _draw(where.toggle, key, _boolean, default, {"value": default}, label=label, **kwargs)


def multiselect(label: str, options: Sequence, default: Sequence, *, key: str, where=st, **kwargs) -> list:
    kwargs.setdefault("select_all", False)  # Streamlit's "Select all" is English on every page, Chinese ones too
    return _draw(
        where.multiselect,
        key,
        _choices(options, kwargs.get("max_selections")),
        list(default),
        {"default": list(default)},
        label=label,
        options=options,
        **kwargs,
    )


def pills(label: str, options: Sequence, default, *, key: str, multi: bool = False, where=st, **kwargs):
    """st.pills; with multi=True the value is a list, else one option or None."""
    parse = _choices(options) if multi else _optional(_choice(options))
    start = list(default) if multi else default
    mode = "multi" if multi else "single"
    return _draw(
        where.pills,
        key,
        parse,
        start,
        {"default": start},
        label=label,
        options=options,
        selection_mode=mode,
        **kwargs,
    )


def segmented_control(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    """A single choice among a few options (None when the user clears it)."""
    return _draw(
        where.segmented_control,
        key,
        _optional(_choice(options)),
        default,
        {"default": default},
        label=label,
        options=options,
        **kwargs,
    )


def url_notices() -> None:
    """Tell (once) what was ignored in the link that opened this view."""
    for key, err in st.session_state.pop(_NOTICES, []):
        why = t(f"common.url.{err.why}", **err.fields)
        st.toast(t("common.url.ignored", key=key, why=why), icon=":material/link_off:")
