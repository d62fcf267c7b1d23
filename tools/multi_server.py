"""A lecture's set-up on loopback: K `streamlit run app.py` processes behind nginx with sticky sessions.

    python -m tools.multi_server --processes 2                  # serve: prints the URL; Ctrl-C stops everything
    python -m tools.multi_server --processes 2 --sessions 20 --changes 6 --out benchmarks/multi_server.md

Starts K app processes on free loopback ports (tools/server.py), then nginx (the Debian package) in a
temporary directory: `nginx -p TMP -e TMP/error.log -c TMP/nginx.conf` with `daemon off`, so it is this
program's child and stops with it. Its configuration is deploy/nginx/attention-explorer.conf, the file a real
deployment uses, with only the upstream ports, the listen address and the access log's path rewritten, inside
a small main configuration whose pid file, logs and temporary paths all lie in TMP (no root paths).

With `--sessions`, a load run: each session behaves like a browser tab (tools/ws_client.py with cookies):
it loads the page over HTTP through nginx, keeps the sticky cookie nginx sets, opens the websocket with it and
makes its changes (the mix and pacing of tools.load_test). Then, once every session has made its changes and
while all are still connected, each downloads one export (CSV or SVG), a file that exists only in the memory
of the process that made it, through nginx with its cookie. (Not during the changes: Streamlit 1.67 deletes a
deferred download's file once two script runs of any session have ended after it was made, so under load a
download can 404 even on a single process; that race is Streamlit's, not the proxy's, and would blur this
check.) Afterwards nginx's access log says which backend served each websocket; the report counts sessions
per backend, checks that every request of one route (cookie) reached one backend, and counts errors, lost
changes and failed downloads.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import datetime
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.server import Server, free_port, streamlit_servers, wait_healthy  # noqa: E402

SITE_CONF = ROOT / "deploy" / "nginx" / "attention-explorer.conf"

# The main context around the site file: everything nginx writes goes to the temporary prefix.
MAIN_CONF = """\
daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log notice;

events {{
    worker_connections 1024;
}}

http {{
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;

{site}
}}
"""

UPSTREAM_SERVER = re.compile(r"^(\s*)server 127\.0\.0\.1:\d+;\n", re.M)
LISTEN = re.compile(r"^(\s*)listen 80;$", re.M)
ACCESS_LOG = re.compile(r"^(\s*)access_log \S+ attention_explorer;$", re.M)
LOG_LINE = re.compile(
    r'"(?P<method>\S+) (?P<uri>\S+) [^"]*" (?P<status>\d{3}) \d+ upstream=(?P<upstream>\S+) route=(?P<route>\S+)'
)


def nginx_binary() -> str | None:
    """nginx on PATH, or Debian's /usr/sbin/nginx (not on a normal user's PATH); None if not installed."""
    found = shutil.which("nginx") or "/usr/sbin/nginx"
    return found if pathlib.Path(found).is_file() else None


def site_config(ports: list[int], listen: int, access_log: pathlib.Path, template: str | None = None) -> str:
    """deploy/nginx/attention-explorer.conf with its upstream on `ports`, listening on 127.0.0.1:`listen`.

    Raises ValueError if the template no longer has the lines this rewrites (one block of upstream
    `server 127.0.0.1:PORT;` lines, `listen 80;`, the `access_log` line).
    """
    if not ports or any(not 0 < p < 65536 for p in ports) or not 0 < listen < 65536:
        raise ValueError(f"ports must be 1..65535 and at least one backend, got ports={ports}, listen={listen}")
    text = SITE_CONF.read_text() if template is None else template
    servers = list(UPSTREAM_SERVER.finditer(text))
    if not servers or len(LISTEN.findall(text)) != 1 or len(ACCESS_LOG.findall(text)) != 1:
        raise ValueError(f"{SITE_CONF.name}: expected upstream server lines, one `listen 80;`, one access_log")
    indent = servers[0].group(1)
    lines = "".join(f"{indent}server 127.0.0.1:{p};\n" for p in ports)
    text = text[: servers[0].start()] + lines + text[servers[-1].end() :]
    text = LISTEN.sub(lambda m: f"{m.group(1)}listen 127.0.0.1:{listen};", text)
    return ACCESS_LOG.sub(lambda m: f"{m.group(1)}access_log {access_log} attention_explorer;", text)


@dataclass(frozen=True)
class Lecture:
    url: str  # nginx's address: what students open
    backends: list[Server]  # the app processes, each on its own loopback port
    access_log: pathlib.Path
    nginx: subprocess.Popen


@contextlib.contextmanager
def nginx_proxy(ports: list[int], listen: int | None = None, start_timeout: float = 20.0):
    """nginx in front of `ports` in a temporary directory; yields (url, access log, process); always stops it."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install -y nginx)")
    listen = listen or free_port()
    with tempfile.TemporaryDirectory(prefix="attn-nginx-") as tmp:
        tmp_path = pathlib.Path(tmp)
        tmp_path.chmod(0o711)  # nginx started as root runs its worker as nobody, which must reach the temp paths
        access_log = tmp_path / "access.log"
        conf = tmp_path / "nginx.conf"
        site = site_config(ports, listen, access_log)
        conf.write_text(MAIN_CONF.format(tmp=tmp, site=site))
        cmd = [binary, "-p", tmp, "-e", str(tmp_path / "error.log"), "-c", str(conf)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{listen}"
            error_log = tmp_path / "error.log"
            wait_healthy(url, proc, start_timeout, "nginx", lambda: error_log.read_text() if error_log.exists() else "")
            yield url, access_log, proc
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """SIGQUIT: nginx's graceful shutdown (open websockets finish); SIGTERM, then SIGKILL, if it lingers."""
    for sig, wait in ((signal.SIGQUIT, 10), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)


@contextlib.contextmanager
def lecture(processes: int, listen: int | None = None) -> Iterator[Lecture]:
    """`processes` app processes behind nginx; everything stops on exit (nginx first)."""
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    with contextlib.ExitStack() as stack:
        backends = stack.enter_context(streamlit_servers(processes))
        ports = [int(b.url.rsplit(":", 1)[1]) for b in backends]
        url, access_log, proc = stack.enter_context(nginx_proxy(ports, listen))
        yield Lecture(url, backends, access_log, proc)


@dataclass(frozen=True)
class Spread:
    websockets: dict[str, int]  # backend address -> websocket sessions it served (status 101)
    downloads: dict[str, int]  # backend address -> /media/ downloads it served with status 200
    routes: int  # distinct sticky routes (browsers) seen
    split_routes: list[str]  # routes whose requests reached more than one backend: must be empty


def read_spread(access_log: pathlib.Path, backends: list[str]) -> Spread:
    """Parse the attention_explorer log_format: sessions and downloads per backend, and stickiness per route."""
    ws = dict.fromkeys(backends, 0)
    media = dict.fromkeys(backends, 0)
    upstreams_of = collections.defaultdict(set)
    for line in access_log.read_text().splitlines():
        m = LOG_LINE.search(line)
        if m is None:
            continue
        upstream, route, status = m["upstream"], m["route"], int(m["status"])
        if m["uri"].startswith("/_stcore/stream") and status == 101:
            ws[upstream] = ws.get(upstream, 0) + 1
        elif m["uri"].startswith("/media/") and status == 200:
            media[upstream] = media.get(upstream, 0) + 1
        if upstream != "-":
            upstreams_of[route].add(upstream)
    split = sorted(r for r, ups in upstreams_of.items() if len(ups) > 1)
    return Spread(ws, media, len(upstreams_of), split)


def spread_when_logged(access_log: pathlib.Path, backends: list[str], sessions: int, timeout: float = 10) -> Spread:
    """read_spread, once nginx has logged `sessions` websockets (it logs one when it closes) or after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        spread = read_spread(access_log, backends)
        if sum(spread.websockets.values()) >= sessions or time.monotonic() > deadline:
            return spread
        time.sleep(0.2)


async def warm(backends: list[Server], pages: list[str], timeout_s: float = 180) -> None:
    """One session per backend, directly (not through nginx), visits every page: imports and caches warm."""
    from tools.ws_client import WsSession

    async def visit(url: str) -> None:
        async with WsSession(url) as session:
            for page in pages:
                await session.rerun(page, timeout=timeout_s)

    await asyncio.gather(*(visit(b.url) for b in backends))


EXPORT_PAGE = "sqrt_dk"  # a page that offers exports, for a session whose last page offers none


class Gate:
    """Opens once every one of `n` sessions has arrived or ended, so downloads run while no session reruns."""

    def __init__(self, n: int):
        self.n, self.arrived, self.open = n, set(), asyncio.Event()

    def arrive(self, idx: int) -> None:
        self.arrived.add(idx)
        if len(self.arrived) >= self.n:
            self.open.set()


async def sticky_sessions(
    url: str, sessions: int, changes: int, pace, timeout_s: float = 120, total_s: float = 900, seed: int = 0
) -> tuple[list, dict[int, list], float]:
    """`sessions` browser-like sessions through nginx; returns their results, downloads (by session) and wall time."""
    from tools.load_test import _all_sessions, run_ws_session

    gate = Gate(sessions)
    downloads: dict[int, list] = {}

    async def session(i: int, result) -> None:
        async def finish(ws, result) -> None:
            if not ws.exports:
                await ws.rerun(EXPORT_PAGE, timeout=timeout_s)
            gate.arrive(i)
            await asyncio.wait_for(gate.open.wait(), total_s)
            try:
                got = await ws.download(ws.exports[0], timeout=timeout_s)
            except (TimeoutError, RuntimeError, IndexError) as e:
                result.errors.append(f"session {i}: no download: {type(e).__name__}: {e}")
                return
            downloads[i] = [got]
            if got.status != 200 or got.size == 0:
                result.errors.append(f"session {i}: download {got.url} answered {got.status} with {got.size} bytes")

        try:
            await run_ws_session(url, i, changes, timeout_s, seed, result, pace, cookies=True, finish=finish)
        finally:
            gate.arrive(i)  # a session that failed early holds no one back

    results, wall_s = await _all_sessions(session, sessions, changes, total_s)
    return results, downloads, wall_s


def backend_rss(lec: Lecture) -> dict[str, float]:
    """Each app process's RSS with its children, in MB, by backend address."""
    from tools.load_test import tree_rss_mb

    return {b.url.removeprefix("http://"): tree_rss_mb(b.proc.pid) for b in lec.backends}


def nginx_version() -> str:
    out = subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True, check=False)
    return (out.stderr or out.stdout).strip().removeprefix("nginx version: ").removeprefix("nginx/")


def report(args, lec: Lecture, results, downloads, wall_s: float, spread: Spread, state: dict, command: str):
    """The Markdown report and whether every check passed. `state`: load averages and each backend's RSS."""
    from tools.load_test import machine, percentile

    done = [t for r in results for _, _, t in r.changes]
    errors = [e for r in results for e in r.errors]
    planned = sum(r.planned for r in results)
    downloads = [d for ds in downloads.values() for d in ds]
    good_downloads = sum(d.status == 200 and d.size > 0 for d in downloads)
    m = machine()
    served = [n for n in spread.websockets.values() if n > 0]
    goals = [
        ("every backend served sessions", len(served) == len(lec.backends), _counts(spread.websockets)),
        (
            "every session's websocket counted",
            sum(spread.websockets.values()) == args.sessions,
            f"{sum(spread.websockets.values())} of {args.sessions}",
        ),
        (
            "every route (browser) stuck to one backend",
            not spread.split_routes,
            f"{spread.routes} routes (the sessions' and the tool's start-up check), {len(spread.split_routes)} split",
        ),
        (
            "every session's download reached the process that made it",
            good_downloads == args.sessions,
            f"{good_downloads} of {args.sessions} answered 200",
        ),
        ("0 errors", not errors, f"{len(errors)} errors"),
        ("0 lost changes", len(done) == planned, f"{planned - len(done)} of {planned} lost"),
    ]
    pace = f"think {args.think[0]:g}–{args.think[1]:g} s" if args.think else "closed loop"
    lines = [
        f"# {len(lec.backends)} app processes behind nginx (sticky sessions)",
        "",
        f"- date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} RAM; load average {state['load_before']:.1f} "
        f"before the sessions, {state['load_after']:.1f} after them; the client and the servers share the cores",
        f"- versions: python {m['python']}, streamlit {m['streamlit']}, torch {m['torch']}, nginx {nginx_version()}",
        f"- command: `{command}`",
        f"- set-up: {len(lec.backends)} × `streamlit run app.py` on loopback ports behind nginx "
        "(deploy/nginx/attention-explorer.conf, ports and log path rewritten by tools/multi_server.py); the "
        "client and all servers on the same machine",
        f"- sessions × changes: {args.sessions} × {args.changes} = {planned} planned, {len(done)} finished "
        f"({pace}); wall time {wall_s:.0f} s; {len(done) / wall_s:.2f} finished reruns per second",
        "- each session: GET / through nginx (keeps the `ae_route` cookie), websocket with that cookie, its "
        "changes; then, once all sessions had made theirs and with all still connected, one export (CSV or SVG) "
        "made by its server process and fetched through nginx with the cookie (what this checks is that the fetch "
        "reaches the process that made the file; exports during other sessions' reruns are checked by "
        "tests/e2e/test_exports_under_load.py)",
        "",
        "| check | met | measured |",
        "| --- | --- | --- |",
        *[f"| {g} | {'yes' if ok else 'NO'} | {v} |" for g, ok, v in goals],
        "",
        "## Per backend (from nginx's access log, `upstream=$upstream_addr`)",
        "",
        "| backend | websocket sessions | downloads served (200) | RSS after warm-up MB | RSS after the run MB |",
        "| --- | ---: | ---: | ---: | ---: |",
        *[
            f"| {b} | {n} | {spread.downloads.get(b, 0)} | {state['rss_warm'][b]:.0f} | {state['rss_end'][b]:.0f} |"
            for b, n in spread.websockets.items()
        ],
        "",
        "RSS: the app process and its children, from /proc, after one warm-up session per backend visited every "
        "page directly (not through nginx), and after the last session closed.",
        "",
        "## Change → rerun time (websocket: sending the rerun to `script_finished`)",
        "",
        "| count | p50 s | p95 s | max s |",
        "| ---: | ---: | ---: | ---: |",
        f"| {len(done)} | {percentile(done, 0.5):.2f} | {percentile(done, 0.95):.2f} | {max(done, default=0):.2f} |",
        "",
        "## Errors",
        "",
        *([f"- {e}" for e in errors[:50]] or ["none"]),
        "",
    ]
    return "\n".join(lines), all(ok for _, ok, _ in goals)


def _counts(per_backend: dict[str, int]) -> str:
    return ", ".join(f"{b}: {n}" for b, n in per_backend.items())


def main() -> None:
    from tools.load_test import PAGE_NAMES, Pace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2, help="app processes behind nginx")
    parser.add_argument("--port", type=int, help="nginx's loopback port (default: a free one)")
    parser.add_argument("--sessions", type=int, help="a load run with this many sessions (default: just serve)")
    parser.add_argument("--changes", type=int, default=6)
    parser.add_argument("--action-timeout", type=float, default=120, help="seconds one change may take")
    parser.add_argument("--global-timeout", type=float, default=900, help="seconds for all sessions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--think", type=float, nargs=2, metavar=("LO", "HI"), help="seconds to wait after a change")
    parser.add_argument("--switch-share", type=float, default=0.2, help="with --think: share of page switches")
    parser.add_argument("--pages", nargs="+", default=PAGE_NAMES, choices=PAGE_NAMES, help="the mix of pages")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    if args.processes < 1 or (args.sessions is not None and args.sessions < 1) or args.changes < 0:
        parser.error("--processes and --sessions must be >= 1, --changes >= 0")
    command = "python -m tools.multi_server " + shlex.join(sys.argv[1:])

    with lecture(args.processes, args.port) as lec:
        backends = ", ".join(b.url for b in lec.backends)
        print(f"nginx at {lec.url} in front of {backends}; access log {lec.access_log}", flush=True)
        if args.sessions is None:
            signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop on SIGTERM as on Ctrl-C: cleanly
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
            return
        asyncio.run(warm(lec.backends, args.pages))
        names = [b.url.removeprefix("http://") for b in lec.backends]
        state = {"rss_warm": backend_rss(lec), "load_before": os.getloadavg()[0]}
        pace = Pace(
            think=tuple(args.think) if args.think else None,
            switch_share=args.switch_share if args.think else None,
            pages=tuple(args.pages),
        )
        run = sticky_sessions(
            lec.url, args.sessions, args.changes, pace, args.action_timeout, args.global_timeout, args.seed
        )
        results, downloads, wall_s = asyncio.run(run)
        state |= {"rss_end": backend_rss(lec), "load_after": os.getloadavg()[0]}
        spread = spread_when_logged(lec.access_log, names, args.sessions)
        text, ok = report(args, lec, results, downloads, wall_s, spread, state, command)
    print(text)
    if args.out:
        args.out.write_text(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
