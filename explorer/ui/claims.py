"""One claim of the lecture notes, judged in a line on the page that demonstrates it.

The verdict, the true value and the explanation come from explorer.notes, the same source as the
worked example's claims table, so two pages never judge one claim differently.
"""

from __future__ import annotations

import re

import streamlit as st

from explorer import notes
from explorer.ui.cache import cached
from explorer.ui.i18n import fill, language, t, td
from explorer.ui.page import literal, seed

COLOURS = {"right": "green", "inexact": "orange", "wrong": "red"}  # Streamlit's badge colours


_result = cached(256)(notes.check)  # one server-wide result per (claim, seed)


# The notes' file numbers (000 to 004) name them in the strings; a student has no files, so the pages show a name.
_FILE = re.compile(r"\b(00[0-4])\b(?=( [^(;,])?)")


def readable(where: str) -> str:
    """A claim's place in the notes with each file number replaced by the notes' short name (notes.short)."""
    return _FILE.sub(lambda m: t(f"notes.short.{m.group(1)}") + (" ·" if m.group(2) else ""), where)


_WHERE: dict[str, tuple[dict, dict[str, str]]] = {}  # language -> (td's dict it was made from, readable places)


def readable_places() -> dict[str, str]:
    """Every claim's place in the notes (notes.where), readable, in the viewer's language: made once per language
    (88 claims) while td keeps that table. Shared: read it, never change it."""
    lang, where = language(), td("notes.where")
    kept = _WHERE.get(lang)
    if kept is None or kept[0] is not where:
        kept = _WHERE[lang] = where, {key: readable(place) for key, place in where.items()}
    return kept[1]


def notes_about() -> str:
    """What "the notes" are, with the five titles, for under a table of their claims."""
    titles = "; ".join(t(f"notes.files.{code}") for code in notes.FILES)
    return t("notes.about", titles=titles)


def computed_text(key: str, computed: str, facts: dict, templates: dict) -> str:
    """A claim's computed value (or what the notes print) in the viewer's language: its template in
    notes.computed (notes.printed), the table `templates`, filled with the result's facts, where the text has words;
    `computed` (numbers and formulas only) otherwise. A result whose words vary names its template in facts["form"]."""
    template = templates.get(facts.get("form", key)) or templates.get(key)
    return fill(template, facts) if template else computed


def notes_claim(key: str, where=st, result: notes.Result | None = None) -> None:
    """One bordered line: the verdict as a coloured badge, the claim and where the notes make it, the true value, why.

    Not an alert box: an error box means the page failed, and a wrong claim in the notes is not a failure.
    result: the claim judged on the page's own numbers (notes.judge_projections), where the page shows them.
    """
    r = result or _result(key, seed())
    badge = f":{COLOURS[r.verdict]}-badge[{t(f'notes.verdicts.{r.verdict}')}]"
    text = t(
        "common.claims.line",
        verdict=badge,
        claim=literal(t(f"notes.claims.{key}")),
        where=literal(readable(t(f"notes.where.{key}"))),
        computed=literal(computed_text(key, r.computed, r.facts, td("notes.computed"))),
        why=literal(t(f"notes.why.{key}", **r.facts)),
    )
    where.container(border=True).markdown(text)
