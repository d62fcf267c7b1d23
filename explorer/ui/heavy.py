"""Heavy work shared fairly: at most a few long computations at once across the whole server, the rest in line.

One student starting the largest benchmark must not freeze the other 29 nor push a 1 GB server over its memory:
every benchmark runs inside `heavy_slot()`, which admits `SLOTS` at a time (ATTN_HEAVY_SLOTS, default 1) in
first-come order. Each step runs under attn_core's memory budget, which bounds the step's estimated working memory,
and within `headroom()`, what the whole process may still take (ATTN_SERVER_MEMORY_MB less a reserve for the other
sessions, less its resident memory now): a step that does not fit is skipped with the reason, never run. That and
the rest of the server's policy for a benchmark (freed memory given back between entries, one benchmark timing
at a time) is the server's, lent to attn_core.bench as a host (`ServerHost`). `Line` is the one line type of the
server: training runs wait in one too (explorer.ui.training.TrainingLine).

A computation in parts (the benchmark measures one method at a time, each cached apart) keeps its place between
them: a viewer's next part that asks within KEEP_S of the last one's end goes first. Without that the parts of
everybody waiting took turns, and benchmarks started together all ended together, the first in line no sooner than
the last (benchmarks/load_test_heavy.md, "The heavy line's policies").

While waiting, `on_wait(ahead)` is called about twice a second with the number of computations ahead; it may draw
a status (and a Streamlit call is where a click on "cancel", or any other control, stops this run: the exception
it raises leaves the line at once). A running computation calls `stop_check()` between its calls or steps, so a
Cancel or a closed tab frees its slot within one attention call or training step, and keeps no place for it.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import ctypes
import dataclasses
import gc
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import streamlit as st

from attn_core.bench import Host, hosting, stopping
from explorer.ui.i18n import t
from explorer.ui.internals import RerunException, StopException, run_yield_check, session_id
from explorer.ui.sidebar import RUNNING  # in the sidebar, which a fresh server's home page runs without torch

POLL_S = 0.5  # how often a waiting run wakes to report its place (and to notice it was stopped)
KEEP_S = 1.0  # how long an owner's place is kept for its next part after one ends


class Full(RuntimeError):
    """The line is as long as it may get: the viewer is told to try again later."""


class Line:
    """A first-come, first-served line in front of `slots` places: the one implementation of the server's lines.
    place() holds a place for a computation in the caller's thread (a benchmark's part); a subclass may admit its
    own tickets with _enter/_start/_leave (explorer.ui.training.TrainingLine: runs trained by its own workers).
    An owner whose computation just ended keeps its place for KEEP_S seconds, for its next part."""

    def __init__(self, slots: int, max_waiting: int):
        if slots < 1 or max_waiting < 0:
            raise ValueError(f"slots must be >= 1 and max_waiting >= 0, got {slots} and {max_waiting}")
        self.slots, self.max_waiting = slots, max_waiting
        self._cond = threading.Condition()
        self._running: list = []  # the tickets holding a place now
        self._waiting: list = []  # the tickets waiting, in line order
        self._kept: dict[object, float] = {}  # owner -> until when (time.monotonic()) its place is kept

    def _kept_for_others(self, owner: object) -> tuple[int, float]:
        """(places kept for other owners, seconds until the first of them lapses); the lock held."""
        now = time.monotonic()
        self._kept = {o: until for o, until in self._kept.items() if until > now}
        others = [until for o, until in self._kept.items() if o != owner]
        return len(others), min(others, default=now + POLL_S) - now

    def state(self) -> tuple[int, int]:
        """(running, waiting) now."""
        with self._cond:
            return len(self._running), len(self._waiting)

    def _enter(self, ticket: object, first: bool = False) -> None:
        """`ticket` at the end of the line (`first`: at its head, never refused); Full when every place is taken
        and max_waiting wait already. The lock held."""
        if first:
            self._waiting.insert(0, ticket)
            return
        if len(self._waiting) >= self.max_waiting and len(self._running) >= self.slots:
            raise Full(f"{len(self._waiting)} are already waiting")
        self._waiting.append(ticket)

    def _start(self, ticket: object) -> None:
        """`ticket` from the line to a place; the lock held."""
        self._waiting.remove(ticket)
        self._running.append(ticket)

    def _leave(self, ticket: object) -> None:
        """`ticket` out of the line or its place, and the waiting woken; the lock held."""
        for tickets in (self._running, self._waiting):
            if ticket in tickets:
                tickets.remove(ticket)
        self._cond.notify_all()

    def _place_of(self, ticket: object) -> tuple[int, int]:
        """(place, ahead): 1 = next to start, 0 when holding a place or gone; ahead = those running or waiting
        before it. The lock held."""
        if ticket not in self._waiting:
            return 0, 0
        waiting_ahead = self._waiting.index(ticket)
        return waiting_ahead + 1, waiting_ahead + len(self._running)

    @contextlib.contextmanager
    def place(self, on_wait: Callable[[int], None] | None = None, owner: object = None) -> Iterator[None]:
        """Wait for a place, then hold it in the block. `owner` (a viewer's session, say): see KEEP_S."""
        ticket = object()
        with self._cond:
            self._enter(ticket, first=owner is not None and self._kept.get(owner, 0.0) > time.monotonic())
        try:
            while True:
                with self._cond:
                    kept, lapse_s = self._kept_for_others(owner)
                    place, ahead = self._place_of(ticket)
                    if place == 1 and len(self._running) + kept < self.slots:
                        self._start(ticket)
                        self._kept.pop(owner, None)
                        break
                    ahead += kept  # those in line before it, running, or coming back
                if on_wait is not None:
                    on_wait(ahead)
                with self._cond:
                    self._cond.wait(min(POLL_S, max(lapse_s, 0.01)))
        except BaseException:
            with self._cond:
                self._leave(ticket)
            raise
        try:
            yield
        except BaseException:
            owner = None  # stopped (Cancel, a closed tab) or failed: no next part comes, so keep no place for it
            raise
        finally:
            with self._cond:
                if owner is not None:
                    self._kept[owner] = time.monotonic() + KEEP_S
                self._leave(ticket)


def slots(variable: str = "ATTN_HEAVY_SLOTS", default: int = 1) -> int:
    """How many runs a line lets run at once: the environment variable's whole number >= 1, else `default`."""
    raw = os.environ.get(variable, str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{variable} must be a whole number >= 1, got {raw!r}")
    return int(raw)


RESERVE_MB = 128  # of the server's memory, kept for everybody else's reruns while heavy work runs


def _server_memory_mb() -> float:
    raw = os.environ.get("ATTN_SERVER_MEMORY_MB", "1024")
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > RESERVE_MB:
        raise ValueError(f"ATTN_SERVER_MEMORY_MB must be a number of MB above {RESERVE_MB}, got {raw!r}")
    return value


def _load_libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS, musl): no allocator to tune or trim
        return None


_LIBC = _load_libc()


_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8  # glibc's mallopt() parameters (malloc.h)


def settle_allocator() -> bool:
    """Once per process, at start: glibc's allocator told to give a freed block of 1 MiB or more straight back to
    the system and to keep at most two heaps for all threads (Streamlit runs every rerun in a thread of its own):
    glibc's defaults keep such blocks and more heaps, and the server's peak RSS higher
    (benchmarks/load_test_heavy.md, "The heavy line's policies"). False where the C library is not glibc."""
    if _LIBC is None or not hasattr(_LIBC, "mallopt"):
        return False
    return _LIBC.mallopt(_M_MMAP_THRESHOLD, 1 << 20) == 1 and _LIBC.mallopt(_M_ARENA_MAX, 2) == 1


# Decorated here, once per process, not in app.py: a decorator there runs on every run of every page, making the
# cached function again and reading its source (~0.4 ms).
@st.cache_resource
def settle_process() -> None:
    """Once per process: move the ~250,000 objects of the imported libraries out of the collector's generations, so
    Python's automatic collections (the only ones left: .streamlit/config.toml turns postScriptGC off) stay short;
    and make the C allocator give large freed blocks back (settle_allocator)."""
    settle_allocator()
    # No gc.collect() first: after the imports it finds ~60 unreachable objects, for 0.13 s of CPU that every first
    # visitor of a fresh server would wait for (measured); those few stay frozen.
    gc.freeze()
    # Frozen objects are never collected, not even when the interpreter exits: an extension that checks at exit
    # what it left alive (Triton's nanobind module, imported by a GPU server or a test) then reports each object.
    atexit.unregister(gc.unfreeze)  # once, whatever the number of times the cache is cleared
    atexit.register(gc.unfreeze)


def give_back_memory() -> None:
    """Hand freed memory back to the system between two benchmark entries: glibc keeps it otherwise, and the
    server's RSS would carry every entry's high-water mark into the next. Only the young generations are collected:
    what an entry leaves in reference cycles is young, while a full collection walks the whole heap holding the GIL
    (every other student's rerun waiting; benchmarks/load_test_heavy.md)."""
    gc.collect(1)
    if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


_ONE_BENCHMARK = threading.Lock()


class ServerHost(Host):
    """The server's policy for a benchmark run in a heavy slot (attn_core.bench.Host): the memory the process may
    still take (headroom), freed memory given back after each entry, and one benchmark timing its entries at a time
    even with several slots (two at once would time each other)."""

    def room(self) -> int | None:
        return headroom()

    def between_entries(self) -> None:
        give_back_memory()

    def turn(self) -> contextlib.AbstractContextManager:
        return _ONE_BENCHMARK


def resident_bytes() -> int | None:
    """The process's resident memory now (Linux: /proc/self/statm), or None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def headroom() -> int | None:
    """Bytes heavy work may still add to the server: its memory (ATTN_SERVER_MEMORY_MB, default 1024, a Community
    Cloud app; with several processes on one host, each one's share) less RESERVE_MB, less what the process holds
    now. None where the resident memory cannot be read: then only each computation's own budget bounds it.

    A computation's budget bounds one step's estimate; this bounds the process, which the budget alone let go past
    1 GB (benchmarks/load_test_heavy.md, "The heavy line's policies")."""
    held = resident_bytes()
    return None if held is None else max(0, int((_server_memory_mb() - RESERVE_MB) * 2**20) - held)


# What survives a restart is the tab's address: heavy work writes its kind there while it runs and removes it when
# it ends. A new session that finds it (the server restarted, or the session was lost, mid-run) knows the run was
# cut short; this session's own record tells a run it stopped itself (Cancel, another click) from such a loss.
_MINE = "_heavy_running"  # session state: the kind this session started and has not seen end


@contextlib.contextmanager
def announced(kind: str) -> Iterator[None]:
    """Heavy work of `kind` ("benchmark", "training") under way in the block, said in the URL until it ends.

    Ended by a click of this session (Cancel: a rerun), it leaves both marks: the page's next run, whose address
    may still carry the mark, finds this session's own and clears them quietly. Ended because the session stopped
    (its tab gone, the server shutting down), it leaves the URL's mark alone: whoever comes back to this tab, in
    this session or a new one, is told."""
    st.session_state[_MINE] = kind
    st.query_params[RUNNING] = kind
    try:
        yield
    except RerunException:
        raise
    except StopException:
        st.session_state.pop(_MINE, None)
        raise
    except BaseException:  # failed or refused (the line full): the page says why itself
        _clear()
        raise
    _clear()


def _clear() -> None:
    st.session_state.pop(_MINE, None)
    st.query_params.pop(RUNNING, None)


def interrupted(kind: str) -> bool:
    """Whether this tab's address says heavy work of `kind` was under way that no run of this session saw end: a
    server restart or a lost session cut it short (its result is gone). Clears the mark; call it at every run of
    the page, before the work may start again."""
    if st.query_params.get(RUNNING) != kind:
        return False
    mine = st.session_state.pop(_MINE, None) == kind
    st.query_params.pop(RUNNING, None)
    return not mine


FLOOR_WINDOW_S = 600.0  # the server "at rest": the least resident memory seen over the last ten minutes
SAMPLE_S = 5.0  # how often that is sampled (one read of /proc/self/statm)


class Floor:
    """The least of the samples taken in the last `window_s` seconds (and since when there are samples)."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._lock = threading.Lock()

    def add(self, held: int, now: float) -> None:
        with self._lock:
            self._samples.append((now, held))
            while self._samples[0][0] < now - self.window_s:
                self._samples.popleft()

    def low(self) -> tuple[int, float] | None:
        """(least bytes held, seconds the samples span), or None before the first sample."""
        with self._lock:
            if not self._samples:
                return None
            return min(held for _, held in self._samples), self._samples[-1][0] - self._samples[0][0]


@st.cache_resource
def resting() -> Floor:
    """The server's floor of resident memory, sampled every SAMPLE_S seconds by a thread of its own."""
    floor = Floor(FLOOR_WINDOW_S)

    def sample() -> None:
        while True:
            held = resident_bytes()
            if held is not None:
                floor.add(held, time.monotonic())
            time.sleep(SAMPLE_S)

    threading.Thread(target=sample, name="attn-resident-floor", daemon=True).start()
    return floor


@dataclass(frozen=True)
class Outlook:
    """What heavy work may take, in MiB: the server's limit less the reserve, less what it holds now or at rest."""

    limit: float  # ATTN_SERVER_MEMORY_MB
    reserve: float  # kept for everybody else's reruns
    held: float  # resident now
    floor: float  # the least resident over the last FLOOR_WINDOW_S (or since the server started, if sooner)

    @property
    def free_at_rest(self) -> float:
        return max(0.0, self.limit - self.reserve - self.floor)


def outlook() -> Outlook | None:
    """The server's memory now and at rest (None where the resident memory cannot be read)."""
    held = resident_bytes()
    if held is None:
        return None
    floor = resting()
    floor.add(held, time.monotonic())
    low, _ = floor.low()
    return Outlook(_server_memory_mb(), RESERVE_MB, held / 2**20, low / 2**20)


def memory_case(now: Outlook, need_mib: float) -> str:
    """When work needing `need_mib` that did not fit could: "later" (once the server is back at rest), "smaller"
    (not even at rest: smaller settings), "never" (nothing fits at rest: the limit is too low for live heavy work)."""
    if now.free_at_rest < 1:
        return "never"
    return "smaller" if need_mib > now.free_at_rest else "later"


def short_of_memory_text(count: int, smallest_need_mib: float, section: str = "memory") -> str:
    """What is true about `count` parts skipped for memory, the smallest needing `smallest_need_mib`, in the
    viewer's language (memory_case; `section`: the locale table of common.toml that words it, "training_memory"
    for a training run)."""
    now = outlook()
    if now is None:
        return t(f"common.{section}.unknown", count=count, need=smallest_need_mib)
    numbers = dataclasses.asdict(now) | {"count": count, "need": smallest_need_mib, "free": now.free_at_rest}
    numbers["minutes"] = FLOOR_WINDOW_S / 60
    return t(f"common.{section}.{memory_case(now, smallest_need_mib)}", **numbers)


@st.cache_resource
def server_line() -> Line:
    """The one line of the whole server (shared by every session: st.cache_resource)."""
    return Line(slots(), max_waiting=30)


def stop_check() -> Callable[[], None]:
    """What a long computation calls often (between repeats, between training steps): it raises Streamlit's own
    stop or rerun exception once this script run was asked to end - a click on Cancel (any click: a rerun), the tab
    closed or the session gone (the server stops a disconnected session's run) - and is a no-op otherwise (a few
    microseconds: a lock and a flag) and outside a script run. Without it the run would notice only at its next
    Streamlit call, up to a whole benchmark entry later (15.6 s at the heaviest settings), holding the slot."""
    return run_yield_check() or _go_on


def _go_on() -> None:
    """Outside a script run nothing asks a computation to stop."""


@contextlib.contextmanager
def heavy_slot(on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
    """`with heavy_slot(show_place): run()` - wait for a place in the server's line, then hold it while running.

    The viewer's session owns the place: its next part, asked for within KEEP_S, goes first. A benchmark run in
    the block checks stop_check() before each of its calls (attn_core.bench.stopping), so a cancelled or
    abandoned one leaves the slot within one attention call, and runs in the server's host (ServerHost)."""
    with server_line().place(on_wait, owner=session_id()), stopping(stop_check()), hosting(ServerHost()):
        yield
