"""The server's one heavy slot comes free at the benchmark's next check when it is cancelled or its tab closes.

Over Streamlit's websocket protocol against a real server whose attention calls are counted (counted_server.py):
session A runs a benchmark whose largest entry makes seven calls of a fraction of a second each; session B presses
Run and waits in line behind it. In the middle of A's largest entry, A presses Cancel or its tab goes away; B's
progress bar must turn from "waiting" to "benchmarking", and A must make no attention call after the one under way
when the request came: counted, not timed. Before the benchmark asked for cancellation between its calls, A held
the slot until its entry ended (all its calls made) and then kept its place another second.
"""

import asyncio
import contextlib
import itertools
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import pytest
from browser_helpers import run_async
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tools.load_test import _waiting_prefix
from tools.server import _stop, free_port, wait_healthy
from tools.ws_client import WsSession

pytestmark = pytest.mark.e2e

LARGEST = 2048  # d 128, 8 heads, SDPA: one call ~0.4 s on a busy 2-core machine; its entry makes ENTRY_CALLS
ENTRY_CALLS = 7  # a warm-up, five timed calls, the memory-counting call (explorer.tables.scaling.live_config)
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def counted():
    """(url, log path): a server of its own whose attention calls are noted in the log (counted_server.py)."""
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "server.log", "w+") as out:
        log, port = Path(tmp) / "calls.log", free_port()
        cmd = [sys.executable, str(HERE / "counted_server.py"), str(log), "streamlit", "run", "app.py"]
        cmd += ["--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1"]
        proc = subprocess.Popen(cmd, cwd=HERE.parents[1], stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, 60, "the counted server", lambda: (out.seek(0), out.read())[1])
            yield url, log
        finally:
            _stop(proc)


def calls(log: Path) -> list[tuple[float, str, int]]:
    """(when, method, n) of every attention call the server made so far."""
    with contextlib.suppress(FileNotFoundError):
        return [(float(t), m, int(n)) for t, m, n in (line.split() for line in log.read_text().splitlines())]
    return []


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


async def slot_freed_after(url: str, log: Path, how: str) -> tuple[float, bool]:
    """(when A's Cancel or closed tab was sent, whether B's benchmark then started)."""
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
        while sum(n == LARGEST for _, _, n in calls(log)) < 2:  # into the entry's timed calls
            await asyncio.sleep(0.05)
        assert not b_started.done(), "B started before A let go of the slot"
        asked = time.monotonic()
        if how == "cancel":
            await press(a, seen["bench_cancel"])
        else:
            await a.ws.close()
        await asyncio.wait_for(b_started, 120)  # a bound on a hang only: what is checked is counted below
        return asked, True
    finally:
        await a.ws.close()
        await b.ws.close()


@pytest.mark.parametrize("how", ["cancel", "close"])
def test_the_heavy_slot_is_free_at_the_next_check(counted, how):
    url, log = counted
    asked, b_started = run_async(asyncio.wait_for(slot_freed_after(url, log, how), 300))
    largest = [t for t, method, n in calls(log) if (method, n) == ("sdpa", LARGEST)]
    after = sum(t > asked for t in largest)
    print(f"{how}: A made {len(largest)} of its entry's {ENTRY_CALLS} calls, {after} after the {how}")
    assert b_started
    # The call under way (or one starting before the request reaches the server) may end; none may start after it.
    assert after <= 1 and len(largest) < ENTRY_CALLS
