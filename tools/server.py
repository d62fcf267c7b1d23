"""A real `streamlit run app.py` server on a free loopback port, and the flags for headless Debian Chromium.

Shared by the browser tests (tests/e2e/conftest.py) and the load test (tools/load_test.py).
"""

from __future__ import annotations

import contextlib
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@dataclass(frozen=True)
class Server:
    url: str
    proc: subprocess.Popen


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(start_timeout: float = 60.0) -> Iterator[Server]:
    """Start the app, wait for /_stcore/health, yield it; always terminate it on exit.

    The server's output goes to a temporary file, not a pipe: a pipe nobody reads fills up and
    blocks a long-running server. Raises RuntimeError, with the log, if it does not come up.
    """
    with streamlit_servers(1, start_timeout) as servers:
        yield servers[0]


@contextlib.contextmanager
def streamlit_servers(count: int, start_timeout: float = 60.0) -> Iterator[list[Server]]:
    """`count` app processes, each on its own free loopback port, started at once; all terminated on exit."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    with contextlib.ExitStack() as stack:
        started = []
        for _ in range(count):
            port = free_port()
            cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
            cmd += ["--server.port", str(port), "--server.address", "127.0.0.1"]
            log = stack.enter_context(tempfile.TemporaryFile(mode="w+"))
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
            stack.callback(_stop, proc)  # runs before its log file closes
            started.append((Server(f"http://127.0.0.1:{port}", proc), log))
        for server, log in started:
            wait_healthy(
                server.url, server.proc, start_timeout, "streamlit", lambda log=log: (log.seek(0), log.read())[1]
            )
        try:
            yield [server for server, _ in started]
        finally:
            for server, _ in started:  # ask all to stop at once; each _stop above then mostly waits
                server.proc.terminate()


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float, what: str, log_text) -> None:
    """Wait until `url`/_stcore/health answers "ok"; else raise with `what` failed and log_text() (its log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(
        f"{what} did not answer /_stcore/health within {timeout:.0f} s (exit {proc.poll()}):\n{log_text()}"
    )
