"""Drive every control of a page in AppTest: list them, pick another valid value, set it.

Shared by the page re-render benchmark and the control-fuzzing tests.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator

KINDS = (
    "slider",
    "select_slider",
    "selectbox",
    "radio",
    "checkbox",
    "toggle",
    "number_input",
    "multiselect",
    "button_group",
)


def _parse_option(text: str):
    """select_slider exposes its options formatted as text; numbers come back as numbers."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def real_options(widget) -> list:
    """The option values a choice widget was given, recovered from their formatted labels.

    AppTest only sees the labels; setting a value needs the value. A dict.get format_func (the
    pages' usual labels) is inverted through its dict, anything else is assumed to print as itself.
    """
    fmt = widget.format_func
    owner = getattr(fmt, "__self__", None)
    candidates = list(owner) if isinstance(owner, dict) else [_parse_option(o) for o in widget.options]
    by_label = {}
    for value in candidates:
        try:
            by_label[str(fmt(value))] = value
        except Exception:  # a format_func that rejects a guessed candidate
            continue
    return [by_label[o] for o in widget.options if o in by_label]


def controls(at) -> Iterator[tuple[str, object]]:
    """(kind, widget) for every enabled, keyed control in the main area of the rendered page.

    Keys starting with "_", "csv_" or "svg_" belong to the frame (downloads, the teacher's panel), not the page;
    controls inside a form are left out (a change reruns nothing until the form is submitted).
    """
    for kind in KINDS:
        for widget in getattr(at.main, kind):
            if (
                widget.key
                and not widget.key.startswith(("_", "csv_", "svg_"))
                and not getattr(widget, "disabled", False)
                and not getattr(widget, "form_id", "")
            ):
                yield kind, widget


def values(at) -> dict[str, object]:
    """{key: value} of every keyed control on the page, disabled ones included."""
    return {w.key: w.value for kind in KINDS for w in getattr(at.main, kind) if w.key}


def _numeric(widget, rng: random.Random, extreme: bool):
    lo, hi, step = widget.min, widget.max, widget.step or 1
    if isinstance(widget.value, (tuple, list)):
        return None  # range sliders are not used by the pages
    if extreme:
        return rng.choice([lo, hi])
    n_steps = int(round((hi - lo) / step))
    value = lo + step * rng.randint(0, n_steps)
    return type(widget.value)(min(hi, value)) if isinstance(widget.value, int) else round(min(hi, value), 10)


def set_random(kind: str, widget, rng: random.Random, *, extreme: bool = False) -> bool:
    """Give `widget` a random valid value (an end of its range when `extreme`); False if not possible."""
    if kind in ("checkbox", "toggle"):
        widget.set_value(not widget.value)
    elif kind in ("selectbox", "radio", "select_slider"):
        options = real_options(widget)
        if not options:
            return False
        widget.set_value(rng.choice([options[0], options[-1]]) if extreme else rng.choice(options))
    elif kind == "button_group":  # st.pills and st.segmented_control
        options = real_options(widget)
        if not options:
            return False
        if widget._is_single_select:
            widget.set_value(rng.choice([options[0], options[-1]]) if extreme else rng.choice(options))
        else:
            widget.set_value(rng.sample(options, rng.randint(0, len(options))))
    elif kind == "multiselect":
        options = real_options(widget)
        limit = widget.max_selections or len(options)
        if not options:
            return False
        widget.set_value(rng.sample(options, rng.randint(1, min(limit, len(options)))))
    elif kind in ("slider", "number_input"):
        if widget.min is None or widget.max is None:
            return False
        value = _numeric(widget, rng, extreme)
        if value is None:
            return False
        widget.set_value(value)
    else:
        return False
    return True
