"""One claim of the lecture notes, judged in a line on the page that demonstrates it.

The verdict, the true value and the explanation come from explorer.tables.notes, the same source as the
worked example's claims table, so two pages never judge one claim differently.
"""

from __future__ import annotations

import streamlit as st

from explorer.tables import notes
from explorer.ui.frame import literal, seed
from explorer.ui.i18n import t

COLOURS = {"right": "green", "inexact": "orange", "wrong": "red"}  # Streamlit's badge colours


@st.cache_data(max_entries=256)
def _result(key: str, seed: int) -> notes.Result:
    return notes.check(key, seed)


def notes_claim(key: str, where=st) -> None:
    """One bordered line: the verdict as a coloured badge, the claim and where the notes make it, the true value, why.

    Not an alert box: an error box means the page failed, and a wrong claim in the notes is not a failure.
    """
    r = _result(key, seed())
    badge = f":{COLOURS[r.verdict]}-badge[{t(f'notes.verdicts.{r.verdict}')}]"
    text = t(
        "common.claims.line",
        verdict=badge,
        claim=literal(t(f"notes.claims.{key}")),
        where=literal(t(f"notes.where.{key}")),
        computed=literal(r.computed),
        why=literal(t(f"notes.why.{key}", **r.facts)),
    )
    where.container(border=True).markdown(text)
