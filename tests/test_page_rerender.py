"""tools.page_rerender drives each control it listed at a round's start: a control that an earlier change removed
(the induction page's snapshot slider once the steps change) is skipped and counted in the report, not a KeyError;
and each change is set on the control as last drawn, so it reaches the script."""

import random

from streamlit.testing.v1 import AppTest

from tests.browser_helpers import run_async
from tools.page_rerender import RUN_CPU, _drive, _drive_ws

# The checkbox "a", once ticked, removes the toggle "b" (listed after it); every run records what it saw.
REMOVES = f"""
import streamlit as st
a = st.checkbox("a", key="a")
b = None if a else st.toggle("b", key="b")
st.session_state.setdefault("seen", []).append((a, b))
st.session_state[{RUN_CPU!r}] = 1.0
"""


def test_a_control_removed_by_an_earlier_change_is_skipped_and_counted():
    at = AppTest.from_string(REMOVES, default_timeout=30)
    at.run()
    out = _drive(at, "removes", 1, random.Random(0))
    assert out["gone"] == 1  # "b" was listed, and gone at its turn
    assert len(out["first_cpu"]) == 1 and len(out["warm_cpu"]) == 2  # "a" alone: set, back, again


def test_each_change_reaches_the_script():
    at = AppTest.from_string(REMOVES.replace("None if a else ", ""), default_timeout=30)
    at.run()
    out = _drive(at, "both", 1, random.Random(0))
    seen = at.session_state["seen"]
    assert out["gone"] == 0 and len(out["first_cpu"]) == 2
    # runs: defaults; a set, back, again; b set (its first visit: a new value, not a rerun of the last one)
    assert seen[4] == (True, True) and seen[3] == (True, False)


class _Session:
    """Two controls; the first one's change removes the second, as the server would redraw the page."""

    def __init__(self):
        self.controls = {"a": "slider", "b": "slider"}

    def current(self, wid):
        return (wid, "before")

    def pick_value(self, wid, rng):
        return f"{wid} -> after", (wid, "after")


def test_the_ws_client_skips_and_counts_a_control_an_earlier_change_removed():
    session, sent = _Session(), []

    async def one(state, kind):
        sent.append((state, kind))
        if state == ("a", "after"):
            session.controls.pop("b", None)
        elif state == ("a", "before"):
            session.controls["b"] = "slider"

    gone = run_async(_drive_ws(session, 1, random.Random(0), one))
    assert gone == 1
    assert sent == [(("a", "after"), "first"), (("a", "before"), "warm"), (("a", "after"), "warm")]
