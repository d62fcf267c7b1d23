"""The server's training line (explorer.ui.training.TrainingLine): runs of the same settings shared while in flight,
two different runs at once, honest estimates from measured pace, runs nobody watches dropped."""

import dataclasses
import math
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
    assert line.shelf.get("a") == ("done", 10)  # complete: kept for everyone
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
    assert (job.result is None or job.result[0] == "stopped") and line.shelf.get("a") is None


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
    assert line.shelf.get("big") is None
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
