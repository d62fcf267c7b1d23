"""The server's training line (explorer.ui.training.TrainingLine): runs of the same settings shared while in flight,
two different runs at once, honest estimates from measured pace, runs nobody watches dropped."""

import dataclasses
import math
import pathlib
import subprocess
import sys
import threading
import time

import pytest

from explorer.ui import training


def blocking_run(gate: threading.Event, calls: list, steps: int = 10, pause_s: float = 0.0):
    """A run that takes its steps only once `gate` is set, counting how often it is started."""

    def run(keep_going, progress):
        calls.append(time.monotonic())
        assert gate.wait(10)
        for step in range(steps):
            if not keep_going(step):
                return ("stopped", step)
            time.sleep(pause_s)
            progress(step + 1, steps, 0.5)
        return ("done", steps)

    return run


def join(line, key, run, steps=10, flops=1e6, budget_s=60):
    return line.join(key, run, steps=steps, flops=flops, budget_s=budget_s, complete=lambda r: r[0] == "done")


def finish(line, job):
    """Look at the job as a viewer does until it ends (a run nobody looks at is dropped)."""
    while not job.finished.wait(0.05):
        line.look(job)
    return job


def test_the_same_settings_join_the_run_in_flight_and_one_loop_runs():
    line, gate, calls = training.TrainingLine(slots=1), threading.Event(), []
    first, joined_first = join(line, "a", blocking_run(gate, calls))
    second, joined_second = join(line, "a", blocking_run(gate, calls))  # a second student, same settings
    assert second is first and (joined_first, joined_second) == (False, True)
    gate.set()
    finish(line, first)
    assert len(calls) == 1 and first.result == ("done", 10)
    assert line.shelf.peek("a") == ("done", 10)  # complete: kept for everyone
    assert line.find("a") is None  # out of the line: a later click starts a new run


def test_different_settings_train_two_at_a_time_and_a_third_waits():
    line, gate, calls = training.TrainingLine(slots=2), threading.Event(), []
    jobs = [join(line, key, blocking_run(gate, calls))[0] for key in "abc"]
    deadline = time.monotonic() + 10
    while len(calls) < 2 and time.monotonic() < deadline:
        [line.look(j) for j in jobs]
        time.sleep(0.02)
    time.sleep(0.2)  # time enough for a wrong third start to show
    assert len(calls) == 2 and [line.look(j).state for j in jobs] == ["training", "training", "waiting"]
    assert line.look(jobs[2]).place == 1 and line.look(jobs[2]).ahead == 2
    gate.set()
    for job in jobs:
        finish(line, job)
    assert len(calls) == 3


def test_the_estimate_is_the_measured_pace_scheduled_over_the_slots():
    line, gate = training.TrainingLine(slots=1), threading.Event()
    line.pace.add(1e6, 0.01)  # measured: 0.01 s per step at 1e6 flops per step
    running = join(line, "a", blocking_run(gate, []), steps=100)[0]
    second = join(line, "b", blocking_run(gate, []), steps=200)[0]
    third = join(line, "c", blocking_run(gate, []), steps=100)[0]
    while line.look(running).state != "training":
        time.sleep(0.01)
    views = [line.look(j) for j in (running, second, third)]
    try:
        assert [v.place for v in views] == [0, 1, 2] and [v.ahead for v in views] == [0, 1, 2]
        # 100 steps left of the first (1 s), then 200 steps (2 s), then 100 (1 s), one slot
        assert views[1].start_s == pytest.approx(1.0, abs=0.05) and views[1].end_s == pytest.approx(3.0, abs=0.05)
        assert views[2].start_s == pytest.approx(3.0, abs=0.05) and views[2].end_s == pytest.approx(4.0, abs=0.05)
        assert views[2].steps_per_s == pytest.approx(100) and views[2].measured == 1
    finally:
        gate.set()
        [finish(line, j) for j in (running, second, third)]


def test_no_estimate_before_anything_was_measured():
    line, gate = training.TrainingLine(slots=1), threading.Event()
    jobs = [join(line, key, blocking_run(gate, []))[0] for key in "ab"]
    while line.look(jobs[0]).state != "training":
        time.sleep(0.01)
    try:
        view = line.look(jobs[1])
        assert view.place == 1 and view.start_s is None and view.end_s is None
    finally:
        gate.set()
        [finish(line, j) for j in jobs]


def test_the_pace_is_fitted_from_two_sizes():
    pace = training.Pace()
    assert pace.per_step(1e6) is None
    pace.add(1e6, 0.010)
    assert pace.per_step(5e6) == pytest.approx(0.010)  # one size measured: its pace for every size
    pace.add(3e6, 0.014)  # 0.008 s fixed + 2e-9 s per flop
    assert pace.per_step(5e6) == pytest.approx(0.018)


def test_a_run_nobody_watches_any_more_stops_and_is_not_kept(monkeypatch):
    monkeypatch.setattr(training, "GRACE_S", 0.2)
    line, gate = training.TrainingLine(slots=1), threading.Event()
    job = join(line, "a", blocking_run(gate, [], steps=10_000, pause_s=0.001))[0]
    gate.set()
    assert job.finished.wait(10)  # nobody looked: it stopped within the grace time
    # stopped while training, or (on a machine too busy to start it within the grace time) dropped while waiting
    assert (job.result is None or job.result[0] == "stopped") and line.shelf.peek("a") is None


def test_a_full_line_refuses_and_an_error_reaches_its_viewers():
    line = training.TrainingLine(slots=1, max_waiting=0)

    def broken(keep_going, progress):
        raise ValueError("bad run")

    job = join(line, "a", broken)[0]
    finish(line, job)
    assert isinstance(job.error, ValueError)
    gate = threading.Event()
    holder = join(line, "b", blocking_run(gate, []))[0]
    while line.look(holder).state != "training":
        time.sleep(0.01)
    with pytest.raises(training.Full):
        join(line, "c", blocking_run(gate, []))
    gate.set()
    finish(line, holder)


def test_the_line_trains_with_one_torch_thread_and_leaves_the_others_alone():
    import torch

    line, seen = training.TrainingLine(slots=1), []

    def run(keep_going, progress):
        seen.append(torch.get_num_threads())
        return ("done", 0)

    before = torch.get_num_threads()
    finish(line, join(line, "threads", run)[0])
    if before == 1:
        pytest.skip("one CPU: nothing to tell apart")
    assert seen == [1] and torch.get_num_threads() == before


def test_a_runs_own_pace_leaves_out_its_first_seconds(monkeypatch):
    """The first steps of a run come while the pages that clicked rerun (and the model is built): a pace measured
    over them made the first estimates of a class's burst ~3x too long. Here 10 steps of 50 ms, then 3 ms ones."""
    monkeypatch.setattr(training, "SETTLE_S", 0.6)
    line, slow = training.TrainingLine(slots=1), 10

    def run(keep_going, progress):
        for step in range(400):
            if not keep_going(step):
                return ("stopped", step)
            time.sleep(0.05 if step < slow else 0.003)
            progress(step + 1, 400, 0.5)
        return ("done", 400)

    job = join(line, "pace", run, steps=400)[0]
    try:
        view = line.look(job)
        while view.steps_per_s is None and not job.finished.is_set():
            time.sleep(0.01)
            view = line.look(job)
        # since the start: at least 0.5 s / 20 steps (40 steps/s); since it settled: ~3-5 ms a step
        assert view.steps_per_s is not None and view.steps_per_s > 80
    finally:
        finish(line, job)


def test_a_run_that_does_not_fit_waits_for_the_one_training_then_starts():
    room_mib = 100
    line = training.TrainingLine(slots=2, room=lambda: room_mib * 2**20)
    gate, calls = threading.Event(), []
    first = line.join("a", blocking_run(gate, calls), steps=10, flops=1e6, budget_s=60, complete=lambda r: True,
                      memory_mb=60)[0]  # fmt: skip
    second = line.join("b", blocking_run(gate, calls), steps=10, flops=1e6, budget_s=60, complete=lambda r: True,
                       memory_mb=60)[0]  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while line.look(second).short_mb is None and time.monotonic() < deadline:
            time.sleep(0.02)
        view = line.look(second)
        assert line.look(first).state == "training" and view.state == "waiting" and len(calls) == 1
        assert view.short_mb == pytest.approx(room_mib - 60) and view.memory_mb == 60
    finally:
        gate.set()
        finish(line, first)
    finish(line, second)
    assert len(calls) == 2 and second.error is None and second.result == ("done", 10)


def test_a_run_that_does_not_fit_with_nothing_training_ends_short_of_memory_untrained():
    line, calls = training.TrainingLine(slots=1, room=lambda: 10 * 2**20), []
    job = line.join("big", blocking_run(threading.Event(), calls), steps=10, flops=1e6, budget_s=60,
                    complete=lambda r: True, memory_mb=60)[0]  # fmt: skip
    finish(line, job)
    assert isinstance(job.error, training.ShortOfMemory) and job.error.need_mb == 60 and calls == []
    assert line.shelf.peek("big") is None
    small = line.join("small", lambda keep_going, progress: ("done", 0), steps=10, flops=1e6, budget_s=60,
                      complete=lambda r: True, memory_mb=5)[0]  # fmt: skip
    finish(line, small)
    assert small.error is None and small.result == ("done", 0)


def test_a_run_waiting_for_memory_says_so_with_what_it_needs_and_what_is_free(monkeypatch):
    monkeypatch.setattr(training, "t", lambda key, **values: f"{key}{sorted(values.items())}")
    view = training.View("waiting", 1, 1, 1, 0, 300, math.nan, 0.0, 3.0, 0, None, memory_mb=20.0, short_mb=12.5)
    text = training.status_text(view)
    assert "learning.line.memory_wait" in text and "('free', 12.5)" in text and "('need', 20.0)" in text
    assert "memory_wait" not in training.status_text(dataclasses.replace(view, short_mb=None))


@dataclasses.dataclass(frozen=True)
class Run:
    """One model's result inside a result of several (as attn_core.learn.InductionResult in tables.induction.Pair)."""

    config: int


@dataclasses.dataclass(frozen=True)
class Result:
    """A training result as a page gets it (a frozen dataclass, as tables.induction.Pair)."""

    steps: int
    two: Run | None = None


def test_a_result_carries_its_runs_key_as_cache_key_and_a_cut_run_one_of_its_own():
    """A complete run's result has cache_key == the run's key (settings and seed), so cached table functions can
    take the result itself; a run cut short gets a key no other result has (its content depends on where it
    stopped)."""
    line = training.TrainingLine(slots=1)

    def run(keep_going, progress):
        return Result(10)

    def make(key, complete):
        return line.join(key, run, steps=10, flops=1e6, budget_s=60, complete=lambda r: complete)[0]

    done = finish(line, make(("learn", "reverse", 7), True))
    assert done.result.cache_key == ("learn", "reverse", 7) and line.shelf.peek(("learn", "reverse", 7)) is done.result
    assert done.result == Result(10)  # no field: equality (and the dataclass's own hash) ignore it
    pair = finish(line, line.join("pair", lambda **kw: Result(5, Run(3)), steps=1, flops=1, budget_s=9,
                                  complete=bool)[0]).result  # fmt: skip
    assert pair.cache_key == "pair" and pair.two.cache_key == ("pair", "two")  # the runs inside it too
    cut = [finish(line, make(("learn", "reverse", 8), False)).result for _ in range(2)]
    assert len({r.cache_key for r in cut}) == 2 and all(r.cache_key[0] == ("learn", "reverse", 8) for r in cut)
    training.server_line.clear()
    training.shelve(("learn", "tool"), Result(3, Run(1)))  # trained by a tool, not the line: stamped alike
    shelved = training.results().peek(("learn", "tool"))
    assert shelved.cache_key == ("learn", "tool") and shelved.two.cache_key == (("learn", "tool"), "two")
    untagged = finish(line, line.join("t", lambda **kw: ("done", 1), steps=1, flops=1, budget_s=9, complete=bool)[0])
    assert untagged.error is None and untagged.result == ("done", 1)  # a tuple takes no attribute: left as it is


class Clock:
    """A clock the runs below advance themselves: what they measure is exact, whatever the machine's load."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def pages_join(monkeypatch, arrivals: list[float], crowded_until: float, watched: tuple[str, ...]):
    """One slot; a first run of 300 steps, during which pages join the line at `arrivals` (fake seconds), each
    with a run of 300 steps of its own. Steps take 30 ms until `crowded_until`, 10 ms after (the same work, the CPUs
    given back). Returns the first estimated end shown for each `watched` run ("page <arrival>") and the real ends.
    The clock is the runs' own: no wall time."""
    clock = Clock()
    monkeypatch.setattr(training, "time", clock)
    monkeypatch.setattr(training, "GRACE_S", 1e9)
    line, steps, pages = training.TrainingLine(slots=1, room=lambda: None), 300, list(arrivals)
    first_estimate, ended, over = {}, {}, []

    def run(name):
        def train(keep_going, progress):
            for step in range(steps):
                if over:
                    return ("stopped", step)
                while pages and pages[0] <= clock.now:  # another page reran into the line
                    key = f"page {pages.pop(0)}"
                    join(line, key, run(key), steps=steps)
                clock.now += 0.030 if clock.now < crowded_until else 0.010
                progress(step + 1, steps, 0.5)
                for later in set(watched) - set(first_estimate):
                    job = line.find(later)
                    end_s = None if job is None else line.look(job).end_s
                    if end_s is not None:
                        first_estimate[later] = clock.now + end_s
            ended[name] = clock.now
            return ("done", steps)

        return train

    first = join(line, "first", run("first"), steps=steps)[0]
    try:
        while not set(watched) <= set(ended):
            line.look(first)
            threading.Event().wait(0.01)
    finally:
        over.append(True)
    return first_estimate, ended


def test_the_first_estimate_of_a_class_burst_is_the_pace_after_the_burst(monkeypatch):
    """30 students press Train at once: while their pages rerun into the line (one joins every 0.1 s for 3 s) the
    first run's steps take 30 ms, after the last has joined 10 ms. The first estimate shown to the next two runs'
    viewers must be their real end (within 10 %), not the burst's pace extrapolated (measured from SETTLE_S after
    the run's start alone, it said ~2.2x the real time)."""
    watched = ("page 0.1", "page 0.2")
    first_estimate, ended = pages_join(monkeypatch, [k / 10 for k in range(1, 31)], 3.0, watched)
    for later in watched:
        assert first_estimate[later] == pytest.approx(ended[later], rel=0.1), later


def test_a_class_that_clicks_one_by_one_still_gets_estimates(monkeypatch):
    """Pages joining every second for 20 s at an even pace (no burst): each join restarts the runs' measured window
    CALM_S later, which must still leave estimates, right ones, before the next runs start."""
    watched = ("page 1.0", "page 2.0")
    first_estimate, ended = pages_join(monkeypatch, [float(k) for k in range(1, 21)], 0.0, watched)
    for later in watched:
        assert first_estimate[later] == pytest.approx(ended[later], rel=0.1), later


def test_the_session_key_of_a_run_cut_short_comes_from_the_run_key():
    """A page passes only its run key: where the session keeps a run cut short is derived from its first element,
    and is the key each training page named before (a session that lived through the change keeps its run)."""
    assert training.kept_key_of(("learn", "copy", 16)) == "_learn_kept"
    assert training.kept_key_of(("scale", "copy", 8)) == "_scale_kept"
    assert training.kept_key_of(("induction", 300, 7)) == "_ind_kept"
    assert training.kept_key_of(("newpage", 1)) == "_newpage_kept"


def test_a_worker_imports_torch_s_compiler_before_it_takes_its_first_run(monkeypatch):
    """Making a torch optimizer imports torch._dynamo (~1.3 s of CPU once per process): the line's worker does it
    before its first run, under one lock for both workers, so that the run's measured pace does not count it and
    no page or second worker imports it at the same time."""
    order, gate = [], threading.Event()
    monkeypatch.setattr(training, "import_compiler", lambda: order.append("import"))
    line = training.TrainingLine(slots=2)
    job, _ = join(line, "compiler", blocking_run(gate, order))
    gate.set()
    finish(line, job)
    started = [i for i, x in enumerate(order) if isinstance(x, float)]
    assert len(started) == 1 and order[0] == "import" and order.count("import") == 2  # each worker, before its runs
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, threading; from explorer.ui import training; training.import_compiler(); "
            "print('torch._dynamo' in sys.modules, [t.daemon for t in threading.enumerate() if t.name == "
            "'compiler-import'])",
        ],
        cwd=pathlib.Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.strip() == "True []", done.stderr[-2000:]  # imported, and its thread (no daemon) ended
