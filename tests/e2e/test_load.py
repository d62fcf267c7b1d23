"""A small classroom: a few concurrent sessions change controls; every change must finish cleanly.

The full benchmark (30 sessions, timings, server memory) is `python -m tools.load_test`; this test
asserts no errors and no lost changes only, never wall-clock times.
"""

import asyncio

import pytest
from browser_helpers import chromium_or_skip, run_async

from tools.load_test import Heavy, Pace, run_sessions, run_ws_sessions

# Not in the default run: one change in twelve was once lost (no rerun started within 60 s) on a
# lightly loaded machine, and the cause is not yet known. Run it with `pytest -m load`.
pytestmark = pytest.mark.e2e

SESSIONS, CHANGES = 3, 4


@pytest.mark.load
def test_concurrent_sessions_finish_every_change_without_errors(server):
    chromium_or_skip()
    results, _ = run_async(asyncio.wait_for(run_sessions(server, SESSIONS, CHANGES, timeout_s=60), 240))
    errors = [e for r in results for e in r.errors]
    assert errors == []
    assert [len(r.changes) for r in results] == [CHANGES] * SESSIONS


def test_concurrent_protocol_sessions_finish_every_change_without_errors(server):
    """The same small classroom over Streamlit's websocket protocol (no browser): in the default run.

    Every rerun the sessions ask for must end in `script_finished` with no exception or error box drawn.
    """
    results, _ = run_async(asyncio.wait_for(run_ws_sessions(server, 4, 5, timeout_s=120), 400))
    errors = [e for r in results for e in r.errors]
    assert errors == []
    assert [len(r.changes) for r in results] == [5] * 4


def test_human_pace_sessions_think_switch_pages_and_lose_nothing(server):
    """The human-pace mode of the load tool (think time, page switches, a chosen mix of pages) on a few sessions."""
    pace = Pace(think=(0.05, 0.2), switch_share=0.5, pages=("sqrt_dk", "masks"))
    run = run_ws_sessions(server, 3, 4, timeout_s=120, seed=1, pace=pace)
    results, _ = run_async(asyncio.wait_for(run, 400))
    assert [e for r in results for e in r.errors] == []
    assert [len(r.changes) for r in results] == [4] * 3
    done = [(kind, what) for r in results for kind, what, _ in r.changes]
    assert {kind for kind, _ in done} - {"page"} and "page" in {kind for kind, _ in done}
    assert all(what.endswith(("go to sqrt_dk", "go to masks")) for kind, what in done if kind == "page")


def test_heavy_sessions_press_run_together_and_the_others_go_on_until_they_end(server):
    """The load tool's heavy mode on a few sessions, at light benchmark settings: each heavy session's benchmark
    ends in charts, the other sessions change controls until then, and nothing is lost."""
    light = {"bench_max_n": "512", "bench_d": "16", "bench_heads": "1", "bench_time_limit": "5"}
    settings = tuple(light.items()) + (("bench_methods", "naive,tiled"), ("bench_block", "64"))
    heavy = Heavy(count=2, settings=settings, at_s=0.5, timeout_s=240)
    pace = Pace(think=(0.05, 0.2), switch_share=0.3, pages=("sqrt_dk", "masks"))
    run = run_ws_sessions(server, 4, 2, timeout_s=120, seed=2, pace=pace, heavy=heavy)
    results, _ = run_async(asyncio.wait_for(run, 400))
    assert [e for r in results for e in r.errors] == []
    heavy_runs = [r.heavy for r in results[:2]]
    assert [h.outcome for h in heavy_runs] == ["finished", "finished"], heavy_runs
    assert [h.seed for h in heavy_runs] == [1, 2]  # a result of its own each: neither is served from the cache
    assert all(0 <= h.waited_s <= h.total_s for h in heavy_runs)
    others = results[2:]
    assert all(r.heavy is None and len(r.changes) == len(r.at) == r.planned >= 2 for r in others)
