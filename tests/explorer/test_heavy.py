"""The server's line for heavy work: a fixed number at a time, first come first served, leaving cleanly."""

import sys
import threading
import time

import pytest

from explorer.ui import heavy
from explorer.ui.heavy import Full, Line


def test_one_at_a_time_in_arrival_order_with_places_reported():
    line = Line(slots=1, max_waiting=5)
    order, places, running = [], {}, []
    release = threading.Event()
    first_in = threading.Event()

    def job(name, arrived):
        def on_wait(ahead):
            places.setdefault(name, ahead)

        with line.place(on_wait):
            running.append(name)
            order.append(name)
            assert len(running) == 1, running  # never two at once
            if name == "a":
                first_in.set()
                release.wait(10)
            running.remove(name)
        arrived.set()

    done = {n: threading.Event() for n in "abc"}
    threads = [threading.Thread(target=job, args=("a", done["a"]))]
    threads[0].start()
    assert first_in.wait(10)
    for name in "bc":  # b arrives before c
        threads.append(threading.Thread(target=job, args=(name, done[name])))
        threads[-1].start()
        while line.state()[1] < "abc".index(name):  # wait until it stands in the line
            time.sleep(0.01)
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["a", "b", "c"]
    assert places == {"b": 1, "c": 2}  # b had a running before it; c had a running and b waiting
    assert line.state() == (0, 0)


def test_a_stopped_wait_leaves_the_line_and_a_failed_run_frees_its_place():
    line = Line(slots=1, max_waiting=5)

    class Stopped(Exception):
        pass

    def stop(ahead):
        raise Stopped  # what a Streamlit call does when the viewer clicks something while waiting

    with line.place():
        with pytest.raises(Stopped):
            with line.place(stop):
                pass
        assert line.state() == (1, 0)
    with pytest.raises(RuntimeError, match="failed"):
        with line.place():
            raise RuntimeError("the computation failed")
    assert line.state() == (0, 0)


def test_a_full_line_refuses_more():
    line = Line(slots=1, max_waiting=0)
    with line.place():
        with pytest.raises(Full):
            with line.place():
                pass
    with line.place():  # free again
        pass


def test_bad_sizes_are_refused_by_name():
    with pytest.raises(ValueError, match="slots"):
        Line(0, 1)


def _second_part_race(line, keep_for_a: bool):
    """a runs part 1 while b waits; a asks for part 2 right after part 1 (the next method of one benchmark)."""
    order, part_one = [], threading.Event()
    release = threading.Event()

    def a():
        with line.place(owner="a"):
            part_one.set()
            release.wait(10)
            order.append("a1")
        with line.place(owner="a" if keep_for_a else None):
            order.append("a2")

    def b():
        with line.place(owner="b"):
            order.append("b")

    ta = threading.Thread(target=a)
    ta.start()
    assert part_one.wait(10)
    tb = threading.Thread(target=b)
    tb.start()
    while line.state()[1] < 1:  # b stands in the line
        time.sleep(0.01)
    release.set()
    ta.join(15)
    tb.join(15)  # with a's place kept after part 2, b runs once it lapses
    return order


def test_an_owners_next_part_keeps_its_place_and_a_kept_place_lapses(monkeypatch):
    monkeypatch.setattr(heavy, "KEEP_S", 1.5)  # far longer than a takes to ask again (the next line of its code)
    assert _second_part_race(Line(slots=1, max_waiting=5), keep_for_a=True) == ["a1", "a2", "b"]
    # without an owner nothing is kept: b, first in line, goes before a's second part
    assert _second_part_race(Line(slots=1, max_waiting=5), keep_for_a=False) == ["a1", "b", "a2"]

    monkeypatch.setattr(heavy, "KEEP_S", 0.05)
    line = Line(slots=1, max_waiting=5)
    with line.place(owner="a"):
        pass
    seen = []
    with line.place(lambda ahead: seen.append(ahead), owner="b"):  # waits for a's kept place to lapse
        assert line.state() == (1, 0)
    assert seen and seen[0] == 1  # its status counted the place kept for a


def test_headroom_is_the_servers_memory_less_the_reserve_less_what_the_process_holds(monkeypatch):
    monkeypatch.setenv("ATTN_SERVER_MEMORY_MB", "1024")
    monkeypatch.setattr(heavy, "resident_bytes", lambda: 700 * 2**20)
    assert heavy.headroom() == (1024 - heavy.RESERVE_MB - 700) * 2**20
    monkeypatch.setattr(heavy, "resident_bytes", lambda: 1000 * 2**20)
    assert heavy.headroom() == 0  # over already: nothing more, never negative
    monkeypatch.setattr(heavy, "resident_bytes", lambda: None)
    assert heavy.headroom() is None  # not readable here: no bound beyond each step's own budget
    for bad in ("lots", "100", "-5"):
        monkeypatch.setenv("ATTN_SERVER_MEMORY_MB", bad)
        with pytest.raises(ValueError, match="ATTN_SERVER_MEMORY_MB"):
            heavy._server_memory_mb()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and glibc")
def test_resident_memory_is_read_and_grows_with_what_the_process_touches():
    before = heavy.resident_bytes()
    block = bytearray(64 * 2**20)  # zero pages touched by the allocation itself
    after = heavy.resident_bytes()
    assert before is not None and after - before >= 48 * 2**20
    del block
    assert heavy.settle_allocator()  # glibc accepts both settings (idempotent: the app calls it once per process)


def test_a_stopped_run_keeps_no_place_for_its_owner(monkeypatch):
    """Cancel or a closed tab ends a run with Streamlit's exception: nothing of that run comes back, so the next
    in line starts at once instead of after KEEP_S (a finished part still keeps its owner's place)."""
    monkeypatch.setattr(heavy, "KEEP_S", 30.0)
    line = Line(slots=1, max_waiting=5)

    class Stopped(BaseException):  # Streamlit's StopException and RerunException are BaseExceptions
        pass

    with pytest.raises(Stopped):
        with line.place(owner="a"):
            raise Stopped
    assert line._kept_for_others("b")[0] == 0  # no place kept for a
    waits = []
    with line.place(on_wait=waits.append, owner="b"):
        pass
    assert waits == []  # b never waited
    with line.place(owner="b"):  # finished normally: b's place is kept, a newcomer waits for it
        pass
    assert line._kept_for_others("c")[0] == 1


def test_heavy_slot_hands_its_stop_check_to_the_benchmark(monkeypatch):
    """Inside heavy_slot, run_benchmark asks the slot's stop_check before its calls (a Cancel reaches it there)."""
    from attn_core.bench import BenchConfig, run_benchmark

    asked = []
    monkeypatch.setattr(heavy, "stop_check", lambda: lambda: asked.append(1))
    heavy.server_line.clear()
    with heavy.heavy_slot():
        run_benchmark(BenchConfig(ns=(64,), d=16, heads=1, methods=("naive",), repeats=2, warmup=1))
    inside = len(asked)
    assert inside >= 4  # warm-up, two repeats, the counting call (and its ops)
    run_benchmark(BenchConfig(ns=(64,), d=16, heads=1, methods=("naive",), repeats=2, warmup=1))
    assert len(asked) == inside  # outside the slot nobody asks


def test_a_benchmark_in_a_heavy_slot_runs_under_the_servers_policy(monkeypatch):
    """The server's policy, no longer the library's: inside heavy_slot a benchmark's room is heavy.headroom (what
    the server may still take), freed memory is given back after each entry, and one benchmark times its entries
    at a time (ServerHost.turn: one lock for the process)."""
    import gc

    from attn_core.bench import HEADROOM_STATUS, BenchConfig, run_benchmark

    collected = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(a) or 0)
    monkeypatch.setattr(heavy, "headroom", lambda: 0)
    heavy.server_line.clear()
    config = BenchConfig(ns=(64,), d=16, heads=1, methods=("naive", "tiled"), repeats=1, warmup=0)
    with heavy.heavy_slot():
        rows = run_benchmark(config)
        assert heavy.ServerHost().turn() is heavy.ServerHost().turn()  # one turn for every session's benchmark
    assert all(r["status"].startswith(HEADROOM_STATUS) for r in rows)
    assert collected == [(1,), (1,)]  # after each entry, the young generations only
    collected.clear()
    assert run_benchmark(config)[0]["status"] == "ok" and collected == []  # outside a slot: no policy


def test_the_resting_floor_is_the_least_sample_of_its_window():
    floor = heavy.Floor(window_s=10)
    assert floor.low() is None
    floor.add(500, now=0.0)
    floor.add(700, now=5.0)
    assert floor.low() == (500, 5.0)
    floor.add(650, now=12.0)  # the 500 of t = 0 is older than the window now
    assert floor.low() == (650, 7.0)


@pytest.mark.parametrize(
    ("floor", "need", "verdict"),
    [(500.0, 40.0, "later"), (850.0, 50.0, "smaller"), (900.0, 0.1, "never")],
)
def test_what_a_page_says_about_memory_follows_what_the_server_holds_at_rest(monkeypatch, floor, need, verdict):
    """1024 MiB less the 128 MiB reserve: 396 MiB free at a 500 MiB rest (a 40 MiB entry fits once the server is back
    there: run again later), 46 MiB at 850 (a 50 MiB entry never fits: smaller settings), none at 900 (nothing fits:
    the limit is too low, and no setting helps)."""
    monkeypatch.setattr(heavy, "outlook", lambda: heavy.Outlook(limit=1024, reserve=128, held=950, floor=floor))
    monkeypatch.setattr(heavy, "t", lambda key, **numbers: (key, numbers))
    key, numbers = heavy.short_of_memory_text(3, need)
    assert key == f"common.memory.{verdict}"
    assert numbers["count"] == 3 and numbers["need"] == need and numbers["free"] == max(0.0, 1024 - 128 - floor)
