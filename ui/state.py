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
from collections.abc import Callable, Sequence

import streamlit as st

MAX_URL_VALUE = 200  # characters: longer values are refused before parsing
_KEPT = "_kept_controls"  # {key: value} of every control seen in this session
_SEEN = "_url_values_seen"  # {key: raw URL value already applied}, so a URL value is adopted once
_NOTICES = "_url_notices"


def _number(kind: type, lo, hi, step=None) -> Callable[[str], object]:
    def parse(raw: str):
        try:
            value = kind(raw) if kind is float else int(raw, 10)
        except (TypeError, ValueError):
            raise ValueError(f"expected a number between {lo} and {hi}") from None
        if (isinstance(value, float) and not math.isfinite(value)) or not lo <= value <= hi:
            raise ValueError(f"expected a number between {lo} and {hi}")
        if step and kind is int and (value - lo) % step:
            raise ValueError(f"expected a multiple of {step} from {lo}")
        return value

    return parse


def _choice(options: Sequence) -> Callable[[str], object]:
    by_text = {str(o): o for o in options}

    def parse(raw: str):
        if raw not in by_text:
            raise ValueError("expected one of " + ", ".join(list(by_text)[:8]) + ("…" if len(by_text) > 8 else ""))
        return by_text[raw]

    return parse


def _boolean(raw: str) -> bool:
    if raw not in ("true", "false"):
        raise ValueError("expected true or false")
    return raw == "true"


def _serialize(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _restore(key: str, parse: Callable[[str], object]) -> None:
    """Give `key` its URL value (once per distinct URL value) or the value kept from an earlier visit."""
    state = st.session_state
    raw = st.query_params.get(key)
    seen = state.setdefault(_SEEN, {})
    if raw is not None and seen.get(key) != raw:
        seen[key] = raw
        try:
            if len(raw) > MAX_URL_VALUE:
                raise ValueError(f"longer than {MAX_URL_VALUE} characters")
            state[key] = parse(raw)
            return
        except ValueError as err:
            state.setdefault(_NOTICES, []).append(f"`{key}` in the link was ignored ({err}); using the default.")
    if key not in state and key in state.get(_KEPT, {}):
        try:  # another page may use the same key with another range: re-check the kept value
            state[key] = parse(_serialize(state[_KEPT][key]))
        except ValueError:
            pass


def _publish(key: str, value) -> None:
    text = _serialize(value)
    st.session_state.setdefault(_KEPT, {})[key] = value
    st.session_state.setdefault(_SEEN, {})[key] = text
    if st.query_params.get(key) != text:
        st.query_params[key] = text


def _draw(widget: Callable, key: str, parse: Callable[[str], object], default_kw: dict, **kwargs):
    _restore(key, parse)
    if key not in st.session_state:
        kwargs.update(default_kw)  # pass the default only when no state exists (Streamlit warns otherwise)
    value = widget(key=key, **kwargs)
    _publish(key, value)
    return value


def slider(label: str, lo, hi, default, step, *, key: str, where=st, **kwargs):
    """A numeric slider; ints when lo, hi, default and step are all ints."""
    kind = int if all(isinstance(x, int) for x in (lo, hi, default, step)) else float
    return _draw(
        where.slider,
        key,
        _number(kind, lo, hi, step),
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
        {"value": default},
        label=label,
        min_value=lo,
        max_value=hi,
        step=1,
        **kwargs,
    )


def select_slider(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    return _draw(where.select_slider, key, _choice(options), {"value": default}, label=label, options=options, **kwargs)


def selectbox(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    return _draw(
        where.selectbox,
        key,
        _choice(options),
        {"index": list(options).index(default)},
        label=label,
        options=options,
        **kwargs,
    )


def radio(label: str, options: Sequence, default, *, key: str, where=st, **kwargs):
    return _draw(
        where.radio,
        key,
        _choice(options),
        {"index": list(options).index(default)},
        label=label,
        options=options,
        **kwargs,
    )


def text_input(label: str, default: str, *, key: str, max_chars: int, where=st, **kwargs):
    """Free text, capped at max_chars; the page parses it strictly and explains what it expects."""

    def parse(raw: str) -> str:
        if len(raw) > max_chars:
            raise ValueError(f"longer than {max_chars} characters")
        return raw

    return _draw(where.text_input, key, parse, {"value": default}, label=label, max_chars=max_chars, **kwargs)


def toggle(label: str, default: bool, *, key: str, where=st, **kwargs):
    return _draw(where.toggle, key, _boolean, {"value": default}, label=label, **kwargs)


def url_notices() -> None:
    """Tell (once) what was ignored in the link that opened this view."""
    for message in st.session_state.pop(_NOTICES, []):
        st.toast(message, icon=":material/link_off:")
