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


def test_the_fresh_report_counts_errors_uncaught_lines_and_first_pages():
    """The --fresh report's goals read the runs: errors and the log's uncaught lines fail them, times are pooled."""
    import argparse

    from tools.load_test import FreshRun, SessionResult, fresh_report

    ok = SessionResult(changes=[("slider", "s", 0.2), ("page", "p", 0.4)], planned=2, at=[10.0, 14.0])
    bad = SessionResult(changes=[("slider", "s", 2.5)], errors=["session 1: boom"], planned=2, at=[12.0])
    runs = [
        FreshRun([ok], 30.0, 1.5, [8.0], 2.5, "all fine"),
        FreshRun([bad], 30.0, 1.5, [11.0], float("nan"), f"{UNCAUGHT}\nImportError: cannot import name 'x'"),
    ]
    args = argparse.Namespace(
        fresh=2, sessions=1, changes=2, open_within=1.0, think=(3.0, 9.0), switch_share=0.2, no_browser=False
    )
    args.load_before = (1.0, 1.0, 1.0)
    text, met = fresh_report(args, runs, "python -m tools.load_test --fresh 2")
    assert not met
    assert "| 0 session errors | NO | 1 errors |" in text
    assert f"| 0 '{UNCAUGHT}' in the servers' logs | NO | 1 |" in text
    assert "| 0 lost changes | NO | 1 of 4 lost |" in text
    assert "| p95 change→rerun ≤ 1.0 s | NO | p95 = 2.50 s |" in text
    assert "| first page drawn ≤ 3 s after the server's start | NO | worst 11.0 s |" in text  # no browser: ws page
    assert "`ImportError: cannot import name 'x'`" in text
