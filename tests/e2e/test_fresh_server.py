"""A class arriving at once on a fresh server: no first visit may fail.

Every session's script runs in a thread of its own, so on a server nobody has visited yet the first visitors import
the app's modules at the same moment, each from its own page. Before the router loaded them once (and attn_core's
__init__ stopped importing its modules) some of them got "This app has encountered an error": deadlocked or
half-made imports, logged as "Uncaught app execution". Asserts no errors only, never wall-clock times.
"""

import asyncio

import pytest
from browser_helpers import run_async

from tools.load_test import PAGE_NAMES, UNCAUGHT, Pace, fresh_class

pytestmark = pytest.mark.e2e

SESSIONS = 2 * len(PAGE_NAMES)  # every page opened first by two sessions
OPEN_WITHIN_S = 0.5


def test_a_fresh_server_answers_a_class_opening_every_page_at_once():
    pace = Pace(think=(0.05, 0.2), switch_share=0.3)
    run = run_async(asyncio.wait_for(fresh_class(SESSIONS, 2, OPEN_WITHIN_S, pace, seed=3, timeout_s=120), 600))
    assert run.errors == []
    assert run.uncaught == 0, run.log[-3000:]
    assert UNCAUGHT not in run.log and "Traceback" not in run.log, run.log[-3000:]
    assert len(run.opened_s) == SESSIONS  # every session drew its first page and changed a control on it
    assert sum(len(r.changes) for r in run.results) == 2 * SESSIONS
