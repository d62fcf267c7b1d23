"""The server's one heavy slot comes free within a second when its benchmark is cancelled or its tab closes.

Over Streamlit's websocket protocol against a real server: session A runs a benchmark whose largest entry takes
seconds (five attention calls of a fraction of a second each); session B presses Run and waits in line behind it.
In the middle of A's largest entry, A presses Cancel or its tab goes away; B's progress bar must turn from
"waiting" to "benchmarking" within a second. Before the benchmark asked for cancellation between its calls, A held
the slot until its entry ended (and then kept its place another second for a next part that never came).
"""

import asyncio
import itertools
import time
import urllib.parse

import pytest
from browser_helpers import run_async
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tools.load_test import _waiting_prefix
from tools.ws_client import WsSession

pytestmark = pytest.mark.e2e

LARGEST = 2048  # d 128, 8 heads, SDPA: one call ~0.4 s on a busy 2-core machine, its entry five calls
_seeds = itertools.count(int(time.time()) % 100_000 * 10)  # a setting of its own: nothing served from the store


def query(max_n: int, d: int, heads: int, method: str) -> str:
    settings = {"bench_max_n": max_n, "bench_d": d, "bench_heads": heads, "bench_methods": method}
    return urllib.parse.urlencode(settings | {"bench_time_limit": 120, "seed": next(_seeds)})


async def press(session: WsSession, button: str) -> None:
    """Send a click on `button` without waiting for the run's end (what a browser does)."""
    msg = BackMsg()
    msg.rerun_script.page_name = session.page
    msg.rerun_script.widget_states.widgets.extend(session.states.values())
    msg.rerun_script.widget_states.widgets.append(WidgetState(id=button, trigger_value=True))
    await session.ws.send(msg.SerializeToString())


async def progress_until(session: WsSession, done, seen: dict) -> float:
    """Read the session's messages until a progress text satisfies done(text); the time it came. Notes the ids of
    the widgets drawn meanwhile in `seen` (the Cancel button appears with the run)."""
    while True:
        fm = ForwardMsg()
        fm.ParseFromString(await session.ws.recv())
        element = fm.delta.new_element if fm.WhichOneof("type") == "delta" else None
        kind = element.WhichOneof("type") if element is not None else None
        if kind == "button":
            seen[element.button.id.rsplit("-", 1)[-1]] = element.button.id
        if kind == "progress" and done(element.progress.text):
            return time.monotonic()


async def opened(url: str, settings: str) -> tuple[WsSession, str]:
    session = await WsSession(url).__aenter__()
    first = await session.rerun("scaling", query=settings, timeout=120)
    button = next(w for w in first.widgets if w.endswith("-bench_run"))
    return session, button


async def slot_freed_after(url: str, how: str) -> float:
    """Seconds from A's Cancel (how="cancel") or closed tab (how="close") to B's benchmark starting."""
    a, a_run = await opened(url, query(LARGEST, 128, 8, "sdpa"))
    b, b_run = await opened(url, query(512, 16, 1, "naive"))
    waiting = _waiting_prefix()
    try:
        seen: dict[str, str] = {}
        await press(a, a_run)
        await asyncio.wait_for(progress_until(a, lambda text: "sdpa n=128" in text, seen), 120)
        await press(b, b_run)
        await asyncio.wait_for(progress_until(b, lambda text: text.startswith(waiting), {}), 60)
        b_started = asyncio.ensure_future(progress_until(b, lambda text: not text.startswith(waiting), {}))
        await asyncio.wait_for(progress_until(a, lambda text: f"n={LARGEST}" in text, seen), 120)
        await asyncio.sleep(0.6)  # into the entry's timed calls
        assert not b_started.done(), "B started before A let go of the slot"
        asked = time.monotonic()
        if how == "cancel":
            await press(a, seen["bench_cancel"])
        else:
            await a.ws.close()
        return await asyncio.wait_for(b_started, 60) - asked
    finally:
        await a.ws.close()
        await b.ws.close()


@pytest.mark.parametrize("how", ["cancel", "close"])
def test_the_heavy_slot_is_free_within_a_second(server, how):
    delay = run_async(asyncio.wait_for(slot_freed_after(server, how), 300))
    print(f"{how}: B started {delay:.2f} s after A's {how}")
    # Before the fix B waited for A's entry to end: ~7 s at these settings. Quiet, it starts 0.08 s (cancel) and
    # 0.6 s (close) after; the bound leaves a loaded 2-core CI room (a 1.004 s cancel was seen at load 7) and still
    # fails when the slot waits for the entry. The 1 s goal itself is a measured figure (README, "Deploying").
    assert delay < 3.0
