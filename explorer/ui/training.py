"""Training on a page: one server-wide shelf of finished runs, and one line of training runs that a class shares.

A page never trains on a plain view: it looks its settings up on the shelf (`results()`), shared by every
session, so once anyone on the server trained these settings everyone sees the result. A click on Train joins
the server's training line (`TrainingLine`): a run of the same settings already waiting or training is joined,
not started again, so 30 students pressing Train with the same settings watch one run and see it end together.
The line's own worker threads train up to `slots` runs at once (ATTN_TRAIN_SLOTS, default 2: the server's two
cores), each with one torch thread (attn_core.learn.one_thread), in first-come order; a run stops at the page's
time budget and a complete run goes on the shelf.

What a click asks of the server comes from the page (`Cost`: its steps, flops per step and memory; a Learning
page's from tables.learning.cost), so any page that trains shares the line. Memory is checked as the heavy line
checks a benchmark step: a run that needs more than the server has free even at rest (ATTN_SERVER_MEMORY_MB less
heavy.RESERVE_MB less its least resident memory of the last minutes) is refused at the click, saying so in the
viewer's language; one whose turn comes while the server holds too much now waits for a training run to end, or,
with none training, ends untrained, saying that it would fit later.

While a student waits, the page shows the run's place in the line and when it should start and end, computed
from measured work: each run's steps and flops per step and the seconds per step of the runs measured so far on
this server (`Pace`), scheduled over the slots in line order. A run's own pace counts only from SETTLE_S after its
start and CALM_S after the latest page joined the line (see there); until something is measured the page says so
instead of guessing.

The shelf is an explorer.ui.cache Store, the one store type of the app; the line is the heavy line's (heavy.Line)
with training runs as its tickets; each result carries a `cache_key` (stamp) so a page's cached table functions
take it as an argument.

A run belongs to whoever watches it: a student who stops watching (the stop button, another control, closing the
tab) just leaves, and a run that nobody has looked at for GRACE_S seconds is dropped (waiting) or stopped
(training), with nothing kept.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import NamedTuple

import streamlit as st

from attn_core.learn import one_thread
from explorer.tables.learning import TooMuchWork
from explorer.tables.learning import cost as learning_cost
from explorer.ui import heavy
from explorer.ui.cache import Store
from explorer.ui.i18n import t
from explorer.ui.page import friendly_errors, literal

SHELF_SIZE = 8  # finished runs kept for the whole server: a default run is well under a megabyte
STOPPED = "_training_stopped"  # session flag: the last run was stopped by its button
AGAIN = "_training_again"  # session flag: the interrupted notice's button asks for the run again
WATCHING = "_training_watching"  # session: the key of the run it waits for, so that a rerun waits on
POLL_S = 0.5  # how often a waiting page redraws its place (and notices a click that stops it)
GRACE_S = 3.0  # a run nobody has looked at for this long has lost its viewers: dropped or stopped
MAX_WAITING = 60  # runs waiting (not training) in the whole server: two per student of a class of 30
# A run's own pace is measured over at least MIN_STEPS steps from SETTLE_S after its start (building the model) and
# CALM_S after the latest page joined the line, whichever is later: a page reruns until it joins, and the steps
# taken while a class's pages rerun into the line are several times slower at the same CPU per step
# (benchmarks/load_test_train.md). A run finished without such a window gives its last MIN_STEPS steps' pace.
SETTLE_S = 2.0
CALM_S = 0.5
MIN_STEPS = 20


Full = heavy.Full  # the same refusal as the benchmarks' line: the viewer is told to try again later


class Cost(NamedTuple):
    """What one Train click asks of the server, as the page computes it from its settings: the line's estimates
    and its memory check are made from these numbers alone, whatever the page trains."""

    steps: int  # training steps of the whole click (all its runs)
    flops: float  # per step
    memory_mb: float  # peak growth of the server's resident memory while it trains, its result kept (MiB)


class ShortOfMemory(RuntimeError):
    """A run that did not fit in what the server may still take when its turn came, with nothing else training
    that could free memory: it ends untrained, and its viewers are told when it could run (heavy.memory_case)."""

    def __init__(self, need_mb: float, room_mb: float):
        super().__init__(f"training needs ~{need_mb:.0f} MiB, the server has ~{room_mb:.0f} MiB left")
        self.need_mb = need_mb


class Pace:
    """Seconds per training step measured on this server, as a + b f for a run of f flops per step.

    A step of a small model costs mostly fixed overhead (Python, the optimizer, small kernels), a large one mostly
    flops, so a and b are fitted by least squares to the recent runs' (f, seconds per step); with one size measured
    so far, its mean is the estimate for every size."""

    def __init__(self, keep: int = 32):
        self._samples: collections.deque = collections.deque(maxlen=keep)
        self._lock = threading.Lock()

    def add(self, flops: float, seconds_per_step: float) -> None:
        with self._lock:
            self._samples.append((flops, seconds_per_step))

    def __len__(self) -> int:
        return len(self._samples)

    def per_step(self, flops: float, live: list[tuple[float, float]] = ()) -> float | None:
        """Estimated seconds per step at `flops` per step (`live`: samples of runs still training); None: none."""
        with self._lock:
            samples = [*self._samples, *live]
        if not samples:
            return None
        fs, ss = [f for f, _ in samples], [s for _, s in samples]
        f_mean, s_mean = sum(fs) / len(fs), sum(ss) / len(ss)
        spread = sum((f - f_mean) ** 2 for f in fs)
        if spread == 0:
            return s_mean
        b = max(0.0, sum((f - f_mean) * (s - s_mean) for f, s in samples) / spread)
        a = max(0.0, s_mean - b * f_mean)
        return a + b * flops


@dataclass(eq=False)
class Job:
    """One training run in the line: what to run, its cost, and how far it got (read by its viewers' pages)."""

    key: Hashable
    run: Callable[..., object]  # run(keep_going=..., progress=...) -> result
    steps: int
    flops: float  # per step
    budget_s: float
    complete: Callable[[object], bool]
    memory_mb: float = 0.0  # what it may add to the server's resident memory (Cost.memory_mb)
    state: str = "waiting"  # -> "training" -> "done"
    short_mb: float | None = None  # first in line but waiting for memory: the MiB free now beside what it needs
    done: int = 0
    loss: float = math.nan
    started: float = 0.0
    calm_from: float = 0.0  # its steps from then on measure its pace (see SETTLE_S)
    settled: tuple[float, int] | None = None  # (when, steps done) at its first step from calm_from
    crowded: bool = False  # a page joined the line while it trained
    recent: collections.deque = field(default_factory=lambda: collections.deque(maxlen=MIN_STEPS + 1))
    seen: float = field(default_factory=time.monotonic)  # when a viewer last looked
    result: object = None
    error: BaseException | None = None
    finished: threading.Event = field(default_factory=threading.Event)

    def own_pace(self, now: float) -> float | None:
        """Seconds per step this run has measured itself since it settled (None before MIN_STEPS of them)."""
        if self.state != "training" or self.settled is None or self.done - self.settled[1] < MIN_STEPS:
            return None
        return (now - self.settled[0]) / (self.done - self.settled[1])

    def step_taken(self, done: int, loss: float) -> None:
        now = time.monotonic()
        self.done, self.loss = done, loss
        self.recent.append((now, done))
        if self.settled is None and now >= self.calm_from:
            self.settled = (now, done)

    def crowd(self, calm_from: float) -> None:
        """A page joined the line: this run measures its pace again from `calm_from` (the line's lock held)."""
        if calm_from > self.calm_from:
            self.calm_from, self.settled, self.crowded = calm_from, None, True

    def pace(self, end: float) -> float | None:
        """Seconds per step of the finished run: since it settled when that covers MIN_STEPS steps; else, if no
        page joined meanwhile, over the whole run (a short run's start is most of it, and counts), else over its
        last MIN_STEPS steps; None for a run of fewer steps."""
        if self.settled is not None and self.done - self.settled[1] >= MIN_STEPS:
            return (end - self.settled[0]) / (self.done - self.settled[1])
        if self.done < MIN_STEPS:
            return None
        if not self.crowded:
            return (end - self.started) / self.done
        (first, first_done), (last, last_done) = self.recent[0], self.recent[-1]
        return (last - first) / (last_done - first_done) if last_done > first_done else None


@dataclass(frozen=True)
class View:
    """What a viewer's page shows of its run: place 0 while training; start_s/end_s None before any measurement."""

    state: str
    place: int  # 1 = next to start
    ahead: int  # runs before it: training now or waiting ahead
    training: int  # runs training now
    done: int
    steps: int
    loss: float
    start_s: float | None
    end_s: float | None
    measured: int  # finished runs the estimate is made from
    steps_per_s: float | None  # the estimated pace of this run
    memory_mb: float = 0.0  # what it needs
    short_mb: float | None = None  # next to start but waiting for a training run to free memory: MiB free now


_compiler = threading.Lock()
_compiler_import: threading.Thread | None = None


def import_compiler() -> None:
    """Import torch._dynamo, which making a torch optimizer imports (~1.3 s of CPU, ~900 modules with sympy's), once
    per process, before the line's first run: both workers wait for one import (two threads importing it at once
    could each hold a module the other needs). No page's own run makes an optimizer: a page draws its untrained
    models without one (attn_core.learn makes it at the first update). The import runs in a thread that is no
    daemon, as the workers are: an interpreter ending halfway through it aborts (benchmarks/first_page.md)."""
    global _compiler_import
    with _compiler:
        if _compiler_import is None:
            _compiler_import = threading.Thread(target=_import_dynamo, name="compiler-import", daemon=False)
            _compiler_import.start()
    _compiler_import.join()


def _import_dynamo() -> None:
    import torch._dynamo  # noqa: F401


class TrainingLine(heavy.Line):
    """First-come, first-served training runs, `slots` at a time in worker threads; a run asked for while the same
    key waits or trains is joined instead of queued again. The line itself (its places, order, refusal when full) is
    the heavy line's (heavy.Line), with the runs as its tickets."""

    def __init__(self, slots: int, max_waiting: int = MAX_WAITING, shelf: Store | None = None, room=None):
        """room() -> bytes the server may still take (default heavy.headroom), None where unknown."""
        super().__init__(slots, max_waiting)
        self._room = room
        self.shelf = shelf if shelf is not None else Store(SHELF_SIZE)
        self.pace = Pace()
        self._workers: list[threading.Thread] = []
        self._arrived = -math.inf  # when a page last joined the line (its rerun crowds the CPUs)
        self._cut = itertools.count()  # numbers the runs cut short: no two share a cache_key

    def join(
        self, key: Hashable, run, *, steps: int, flops: float, budget_s: float, complete, memory_mb: float = 0.0
    ) -> tuple[Job, bool]:
        """(the run of `key` in the line, whether it was already there); Full when too many wait."""
        with self._cond:
            now = self._arrived = time.monotonic()
            for running in self._running:
                running.crowd(now + CALM_S)
            job = self._find(key)
            if job is not None:
                job.seen = now
                return job, True
            job = Job(key, run, steps, flops, budget_s, complete, memory_mb)
            self._enter(job)  # Full when no place is free and max_waiting runs wait
            self._start_workers()
            self._cond.notify_all()
            return job, False

    def find(self, key: Hashable) -> Job | None:
        """The run of `key` waiting or training now, if any."""
        with self._cond:
            return self._find(key)

    @property
    def _jobs(self) -> list[Job]:
        """The runs in the line: those training, then those waiting in order."""
        return [*self._running, *self._waiting]

    def _find(self, key: Hashable) -> Job | None:
        return next((j for j in self._jobs if j.key == key), None)

    def look(self, job: Job) -> View:
        """`job` as its viewer sees it now (and a sign that it still has one)."""
        with self._cond:
            now = job.seen = time.monotonic()
            times = self._schedule(now)
            training = len(self._running)
            place, ahead = self._place_of(job)
            start_s, end_s = times.get(job, (None, None))
            per = job.own_pace(now) or self.pace.per_step(job.flops, self._live(now))
        return View(
            job.state, place, ahead, training, job.done, job.steps, job.loss,
            start_s, end_s, len(self.pace), None if not per else 1 / per, job.memory_mb, job.short_mb,
        )  # fmt: skip

    def _live(self, now: float) -> list[tuple[float, float]]:
        """The training runs' own paces, for an estimate only until a run has finished (a whole run's pace is
        steadier than the first steps of one)."""
        if len(self.pace):
            return []
        return [(j.flops, p) for j in self._running if (p := j.own_pace(now)) is not None]

    def _schedule(self, now: float) -> dict[Job, tuple[float, float]]:
        """Seconds from now until each run starts and ends: the training runs' remaining steps, then the waiting
        ones in order on whichever slot frees first, each at the measured pace and within its time budget."""
        live = self._live(now)
        slots, times = [], {}
        for job in self._running:
            per = job.own_pace(now) or self.pace.per_step(job.flops, live)
            if per is None:
                return {}
            left = min((job.steps - job.done) * per, max(0.0, job.budget_s - (now - job.started)))
            times[job] = (0.0, left)
            slots.append(left)
        slots += [0.0] * max(0, self.slots - len(slots))
        heapq.heapify(slots)
        for job in self._waiting:
            per = self.pace.per_step(job.flops, live)
            if per is None:
                return times
            start = heapq.heappop(slots)
            times[job] = (start, start + min(job.steps * per, job.budget_s))
            heapq.heappush(slots, times[job][1])
        return times

    def _start_workers(self) -> None:
        while len(self._workers) < self.slots:
            worker = threading.Thread(target=self._work, name=f"training-{len(self._workers)}", daemon=True)
            self._workers.append(worker)
            worker.start()

    def _next(self) -> Job:
        """The first waiting run that still has a viewer (the others leave the line) once it fits in memory; blocks
        until there is one."""
        with self._cond:
            while True:
                now = time.monotonic()
                for job in [j for j in self._waiting if now - j.seen > GRACE_S]:
                    self._end(job)
                job = self._waiting[0] if self._waiting else None
                if job is not None and self._fits(job):
                    self._start(job)
                    job.state, job.started, job.short_mb = "training", now, None
                    job.calm_from = max(now + SETTLE_S, self._arrived + CALM_S)
                    return job
                self._cond.wait(POLL_S if job is not None else GRACE_S)

    def _fits(self, job: Job) -> bool:
        """Whether `job` fits in what the server may still take, less what the runs training now may still add
        (counted in full: part of it may already be resident, but a run's peak can come at any step). One that
        does not waits while a run trains (its end frees memory); with none training it ends, ShortOfMemory."""
        try:
            room = (self._room or heavy.headroom)()
        except ValueError:  # a bad ATTN_SERVER_MEMORY_MB: the click's own check has said so on the page
            room = None
        if room is None or not job.memory_mb:
            return True
        training = self._running
        free_mb = room / 2**20 - sum(j.memory_mb for j in training)
        if job.memory_mb <= free_mb:
            return True
        if training:
            job.short_mb = max(0.0, free_mb)
        else:
            job.error = ShortOfMemory(job.memory_mb, max(0.0, free_mb))
            self._end(job)
        return False

    def _end(self, job: Job) -> None:
        """Out of the line, its viewers woken (the lock held)."""
        job.state = "done"
        self._leave(job)
        job.finished.set()

    def _work(self) -> None:
        import_compiler()  # before the first run's clock starts: its pace would count the import
        with one_thread():  # two runs at once on two cores, and no OpenMP threads spinning for a busy core
            while True:
                self._train(self._next())

    def _train(self, job: Job) -> None:
        def keep_going(step: int) -> bool:
            now = time.monotonic()
            return now - job.started < job.budget_s and now - job.seen <= GRACE_S

        def progress(done: int, total: int, loss: float) -> None:
            job.step_taken(done, loss)

        try:
            job.result = job.run(keep_going=keep_going, progress=progress)
            if (pace := job.pace(time.monotonic())) is not None:
                self.pace.add(job.flops, pace)
            complete = job.complete(job.result)
            stamp(job.result, job.key if complete else (job.key, "cut short", next(self._cut)))
            if complete:
                self.shelf.put(job.key, job.result)
        except Exception as err:  # noqa: BLE001 - shown to its viewers by the page, not lost in a worker thread
            job.error = err
        with self._cond:
            self._end(job)


def stamp(result: object, key: Hashable) -> None:
    """Give a training result its `cache_key` (explorer.ui.cache.key_of keys it by that, so a page passes the result
    itself to a cached table function): the run's key, its settings and seed, for a complete run (the runs are
    seeded and take one torch thread: the same key trains the same result); for a run cut short (its time budget,
    its viewers gone) a key of its own. The runs inside a result of several (a dataclass field holding a result of
    its own, one with a `config`: ScalingComparison.scaled, Pair.two) get (key, field name). Set past a frozen
    dataclass's guard: it is no field, equality ignores it. A value that takes no attribute (None, a tuple: key_of
    keys it by its items) is left as it is."""
    try:
        object.__setattr__(result, "cache_key", key)
    except (AttributeError, TypeError):
        return
    if dataclasses.is_dataclass(result):
        for part in dataclasses.fields(result):
            value = getattr(result, part.name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, "config"):
                stamp(value, (key, part.name))


@st.cache_resource
def server_line() -> TrainingLine:
    """The server's one training line and its shelf (st.cache_resource: shared by every session)."""
    return TrainingLine(heavy.slots("ATTN_TRAIN_SLOTS", 2))


def results() -> Store:
    """The server's shelf of finished runs (peek(key): the run of `key`, or None)."""
    return server_line().shelf


def shelve(key: Hashable, result: object) -> None:
    """Put a complete run of `key` trained elsewhere (a tool warming the server) on the shelf, stamped as the line
    stamps its own (stamp): a page passes it to its cached table functions as it would a run of the line."""
    stamp(result, key)
    results().put(key, result)


def stop() -> None:
    """on_click of the stop button: the click has already ended this page's wait; remember to say so."""
    st.session_state[STOPPED] = True
    st.session_state.pop(WATCHING, None)


def again() -> None:
    """on_click of the interrupted notice's button: train on this run."""
    st.session_state[AGAIN] = True


def interrupted_notice() -> None:
    """A run under way when the server restarted, or this tab's session was lost, never finished: say so and offer
    it again (nothing trains by itself)."""
    st.warning(t("common.training.interrupted"), icon=":material/sync_problem:")
    st.button(t("common.training.again"), key="training_again", on_click=again, icon=":material/replay:")


def was_stopped() -> bool:
    """The previous run of this session was ended by its stop button (asked once: the flag is cleared)."""
    return bool(st.session_state.pop(STOPPED, False))


def status_text(view: View) -> str:
    """The line's words for one run in the viewer's language: its place and estimated start and end, or its
    progress and estimated time left; without a measured pace yet, a note that there is no estimate."""
    if view.state == "training":
        text = t("learning.line.training", done=view.done, total=view.steps, loss=view.loss)
        if view.end_s is None:
            return text + " " + t("learning.line.no_estimate")
        return text + " " + t("learning.line.left", seconds=math.ceil(view.end_s), rate=view.steps_per_s)
    text = t("learning.line.place", place=view.place, ahead=view.ahead, training=view.training)
    if view.short_mb is not None:
        return text + " " + t("learning.line.memory_wait", need=view.memory_mb, free=view.short_mb)
    if view.start_s is None:
        return text + " " + t("learning.line.no_estimate")
    return (
        text
        + " "
        + t(
            "learning.line.estimate" if view.measured else "learning.line.estimate_live",
            start=math.ceil(view.start_s),
            end=math.ceil(view.end_s),
            runs=view.measured,
            rate=view.steps_per_s,
        )
    )


def watch(line: TrainingLine, job: Job, joined: bool, stop_key: str, where=st) -> Job:
    """Draw the run's place or progress every POLL_S until it ends, with a stop button (a click on it, or on any
    control, ends this page's wait; the run goes on for its other viewers)."""
    bar = where.progress(0.0, text=t("common.training.starting"))
    note = where.empty()
    if joined:
        note.caption(t("learning.line.joined"))
    cancel = where.empty()
    cancel.button(t("common.training.stop"), key=stop_key, on_click=stop, icon=":material/stop_circle:")
    while True:
        view = line.look(job)
        bar.progress(min(1.0, view.done / max(1, view.steps)), text=status_text(view))
        if job.finished.wait(POLL_S):
            break
    for placeholder in (bar, note, cancel):
        placeholder.empty()
    return job


def short_of_memory(need_mb: float, where=st) -> None:
    """Say, in the viewer's language, that a run needing `need_mb` MiB did not fit, and when it could."""
    text = heavy.short_of_memory_text(1, need_mb, section="training_memory")
    where.warning(text, icon=":material/memory:")


def fits_at_rest(need_mb: float) -> bool:
    """Whether a run needing `need_mb` MiB fits in the server's memory at rest (its least resident memory of the
    last minutes): one that does not is refused at the click, since waiting in line would not make room for it."""
    now = heavy.outlook()
    return now is None or need_mb <= now.free_at_rest


def train_in_line(key, run, *, cost: Cost, budget_s, complete, stop_key, where=st, rejoin=False):
    """Join the server's line for `key` (or its run already there) and watch it to its end. Returns the result,
    or None when the line is full or the run does not fit in memory (both said), or, with rejoin, when no run of
    `key` is in the line any more. A run already in the line is joined whatever memory is left: it takes no more."""
    line = server_line()
    try:
        job = line.find(key)
        if rejoin and job is None:
            return None
        if job is None and not fits_at_rest(cost.memory_mb):
            short_of_memory(cost.memory_mb, where)
            return None
        job, joined = line.join(
            key, run, steps=cost.steps, flops=cost.flops, budget_s=budget_s, complete=complete,
            memory_mb=cost.memory_mb,
        )  # fmt: skip
    except Full:
        where.warning(t("common.training.full"), icon=":material/hourglass_disabled:")
        return None
    with heavy.announced("training"):  # in the URL while watched: a restart's new session tells the student
        watch(line, job, joined, stop_key, where)
    if isinstance(job.error, ShortOfMemory):
        short_of_memory(job.error.need_mb, where)
        return None
    if job.error is not None:
        raise job.error
    return job.result


# The session keys the pages named before kept_key_of derived them, where they differ: a session that lived through
# the change finds its run cut short still there.
OLD_KEPT = {"induction": "_ind_kept"}


def kept_key_of(key: Hashable) -> str:
    """Where a session keeps its last run of a page cut short by the time budget (this session's only: the shelf
    keeps complete runs), derived from the page's run key, whose first element names the page."""
    page = key[0] if isinstance(key, tuple) and key else key
    return OLD_KEPT.get(page, f"_{page}_kept")


def trained(
    key: Hashable,
    make_config: Callable[[], object],
    run: Callable[..., object],
    *,
    clicked: bool,
    stop_key: str,
    budget_s: float,
    complete: Callable[[object], bool],
    runs: int = 1,
    cost: Callable[[object], Cost] | None = None,
) -> object | None:
    """A page's training, start to end: the settings checked (a too-large or bad setting is said, and the run
    ends there), the result on the server's shelf or kept in this session, and on a click of Train the run
    `run(config, keep_going=..., progress=...)` in the server's training line. `cost(config)`: the click's steps,
    flops per step and memory (Cost), from which the line estimates its times and checks that it fits; default:
    a Learning page's LearnConfig trained `runs` times (explorer.tables.learning.cost). A page rerun while this
    session waits goes on waiting. Returns the result to show, or None before anyone trained these settings."""
    try:
        config = make_config()
    except TooMuchWork as err:
        st.warning(t("learning.too_much", factor=err.factor), icon=":material/timer_off:")
        st.stop()
    except ValueError as err:
        st.warning(t("learning.bad_settings") + " " + literal(err), icon=":material/error:")
        st.stop()
    if heavy.interrupted("training"):
        interrupted_notice()
    clicked = clicked or bool(st.session_state.pop(AGAIN, False))
    result = results().peek(key)
    kept_key = kept_key_of(key)
    kept = st.session_state.get(kept_key)
    if result is None and kept is not None and kept[0] == key:
        result = kept[1]
    status = st.container()  # drawn on every run: what appears in it shifts nothing below
    rejoin = not clicked and result is None and st.session_state.get(WATCHING) == key
    if clicked or rejoin:
        st.session_state.pop(STOPPED, None)
        st.session_state[WATCHING] = key
        with status, friendly_errors(t("learning.sections.training")):
            ran = train_in_line(
                key,
                lambda **kw: run(config, **kw),
                cost=cost(config) if cost is not None else Cost(*learning_cost(config, runs)),
                budget_s=budget_s,
                complete=complete,
                stop_key=stop_key,
                where=status,
                rejoin=rejoin,
            )
            st.session_state.pop(WATCHING, None)
            result = ran or result
            if result is not None and not complete(result):  # cut short by the budget: this session's only
                st.session_state[kept_key] = (key, result)
    if was_stopped():
        status.info(t("learning.stopped"), icon=":material/stop_circle:")
    return result
