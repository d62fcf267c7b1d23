"""A lecture's set-up: two `streamlit run app.py` processes behind nginx (deploy/nginx/attention-explorer.conf).

Sessions that behave like browser tabs (page over HTTP, sticky cookie, websocket, a download) must spread over
both processes, each browser sticking to one, with every change finished and every download found. The
recorded run with more sessions is benchmarks/multi_server.md (`python -m tools.multi_server`). Skipped
where nginx is not installed (Debian: `apt-get install -y nginx`; .ci/run installs it).
"""

import asyncio
import urllib.error
import urllib.request

import pytest
from browser_helpers import run_async

from tools.load_test import Pace
from tools.multi_server import lecture, nginx_binary, spread_when_logged, sticky_sessions
from tools.ws_client import WsSession

pytestmark = pytest.mark.skipif(nginx_binary() is None, reason="nginx is not installed (apt-get install -y nginx)")

# 16 browsers on 2 backends: all of them on one backend by chance has probability 2 / 2**16.
SESSIONS, CHANGES = 16, 2
PAGE = "worked_example"  # a cheap page that offers exports


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


async def _made_here_only(maker: str, other: str) -> tuple[int, int]:
    """A session connected straight to one process makes an export: its URL's status there and at the other."""
    async with WsSession(maker) as session:
        run = await session.rerun(PAGE, timeout=120)
        got = await session.download(run.exports[0], timeout=120)
        return got.status, await asyncio.to_thread(_status, other + got.url)


async def _warm(url: str) -> None:
    async with WsSession(url) as session:
        await session.rerun(PAGE, timeout=120)


async def _prepare(backends) -> tuple[int, int]:
    """Both processes import the app at once (the slow first run); the first also makes one download."""
    statuses, _ = await asyncio.gather(_made_here_only(backends[0].url, backends[1].url), _warm(backends[1].url))
    return statuses


def test_two_processes_behind_nginx_spread_sticky_sessions_and_lose_nothing():
    with lecture(2) as lec:
        # Why stickiness matters: a download lives only in the memory of the process that made it.
        assert run_async(_prepare(lec.backends)) == (200, 404)

        run = sticky_sessions(lec.url, SESSIONS, CHANGES, Pace(pages=(PAGE,)), timeout_s=120, total_s=300)
        results, downloads, _ = run_async(asyncio.wait_for(run, 300))
        assert [e for r in results for e in r.errors] == []
        assert [len(r.changes) for r in results] == [CHANGES] * SESSIONS
        assert sorted(downloads) == list(range(SESSIONS))
        assert {(d.status, d.size > 0) for ds in downloads.values() for d in ds} == {(200, True)}

        names = [b.url.removeprefix("http://") for b in lec.backends]
        spread = spread_when_logged(lec.access_log, names, SESSIONS)
        assert sum(spread.websockets.values()) == SESSIONS, spread  # every session's websocket went through nginx
        assert all(n > 0 for n in spread.websockets.values()), spread  # ... and both processes served some
        assert spread.split_routes == []  # each browser's page, websocket and download reached one process
        assert sum(spread.downloads.values()) == SESSIONS
