"""UI text in English and Simplified Chinese: one folder of TOML files per language, formulas shared.

`locales/<lang>/<file>.toml` holds the strings of one page (or of the frame); a string's key is the
file name followed by its dotted path in the file, e.g. "sqrt_dk.controls.d_k". Placeholders are
`{name}` or `{name:spec}`, filled from keyword arguments; other braces (LaTeX) are left alone.
"""

from __future__ import annotations

import functools
import pathlib
import re
import tomllib

import streamlit as st

from explorer.ui.internals import this_run


class ReadOnlyDict(dict):
    """A dict shared by every session (a language's strings of a table, td()): read as any dict, refuses changes.
    `d | {...}`, `{**d}` and copies are plain dicts of their own."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("this dict is shared by every session and read-only: change a copy (dict(...), d | {...})")

    __setitem__ = __delitem__ = __ior__ = setdefault = pop = popitem = clear = update = _refuse

    def __reduce__(self):
        return (dict, (dict(self),))


LANGUAGES = {"en": "English", "zh": "简体中文"}
DEFAULT = "en"
LOCALES = pathlib.Path(__file__).resolve().parents[2] / "locales"
MISSING = "_missing_strings"  # keys looked up this session that a language lacks (the tests read it)
_FIELD = re.compile(r"\{(\w+)(:[^{}]*)?\}")


def _flatten(table: dict, prefix: str) -> dict[str, str]:
    flat = {}
    for name, value in table.items():
        key = f"{prefix}.{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, key))
        else:
            flat[key] = value
    return flat


@functools.cache
def catalog(lang: str) -> dict[str, str]:
    """Every string of one language, by key."""
    strings: dict[str, str] = {}
    for path in sorted((LOCALES / lang).glob("*.toml")):
        with path.open("rb") as f:
            strings.update(_flatten(tomllib.load(f), path.stem))
    return strings


def fields(text: str) -> set[str]:
    """The placeholder names a string expects (LaTeX braces included: both languages share them)."""
    return {m.group(1) for m in _FIELD.finditer(text)}


def fill(text: str, values: dict) -> str:
    def one(m: re.Match) -> str:
        name, spec = m.group(1), (m.group(2) or ":")[1:]
        return format(values[name], spec) if name in values else m.group(0)

    return _FIELD.sub(one, text) if values else text


def language() -> str:
    kept = this_run()
    lang = kept.get("lang")
    if lang is None:
        lang = st.session_state.get("lang", DEFAULT)
        lang = kept["lang"] = lang if lang in LANGUAGES else DEFAULT
    return lang


def language_changed() -> None:
    """The language control has just been drawn: look the language up again."""
    this_run().pop("lang", None)


def browser_language() -> str:
    """The viewer's browser language if we have it, else English (used only when the link names none)."""
    try:
        locale = st.context.locale or ""
    except Exception:  # noqa: BLE001 - no browser context (tests, bare scripts)
        locale = ""
    return "zh" if locale.lower().startswith("zh") else DEFAULT


def t(key: str, /, **values) -> str:
    """The string `key` in the viewer's language, placeholders filled from `values`."""
    lang = language()
    text = catalog(lang).get(key)
    if text is None:
        st.session_state.setdefault(MISSING, set()).add(f"{lang}:{key}")
        text = catalog(DEFAULT).get(key, key)
    return fill(text, values)


def tl(key: str, /, **values) -> list[str]:
    """A list of strings stored as a TOML array (e.g. the points of "what to notice")."""
    value = catalog(language()).get(key)
    if value is None:
        st.session_state.setdefault(MISSING, set()).add(f"{language()}:{key}")
        value = catalog(DEFAULT).get(key, [key])
    return [fill(text, values) for text in value]


@functools.cache
def _table(prefix: str) -> tuple[str, ...]:
    """The names of the strings directly under a TOML table (looked up once per table, not per run)."""
    start = prefix + "."
    return tuple(k[len(start) :] for k in catalog(DEFAULT) if k.startswith(start) and "." not in k[len(start) :])


_TD: dict[tuple[str, str], dict[str, str]] = {}  # (language, table) -> its strings, when none is missing


def td(prefix: str, /, **values) -> dict[str, str]:
    """Every string under a TOML table, by its name in the table: the `text` a chart builder takes.

    Without values, the same dict on every run in a language (a page asks for some tables with 100 strings on every
    run): shared by every session, so read-only (ReadOnlyDict). A table with a missing translation is made every
    time, so that every session notes what is missing."""
    if values:
        return {name: t(f"{prefix}.{name}", **values) for name in _table(prefix)}
    lang = language()
    kept = _TD.get((lang, prefix))
    if kept is None:
        kept = ReadOnlyDict((name, t(f"{prefix}.{name}")) for name in _table(prefix))
        if all(f"{prefix}.{name}" in catalog(lang) for name in _table(prefix)):
            _TD[(lang, prefix)] = kept
    return kept
