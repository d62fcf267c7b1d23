"""explorer.ui.cache: keys of arguments, the one store, @cached for tables functions, and check mode."""

import dataclasses
import threading
import time

import numpy as np
import pandas as pd
import pytest
import torch

from explorer.ui import cache, internals
from explorer.ui.cache import CacheKeyError, Store, cached, check, key_of

ROW = pd.DataFrame({"key": [0, 1, 2], "weight": [0.5, 0.3, 0.2], "series": ["scaled"] * 3})


def weights_table(n: int, shift: float = 0.0) -> pd.DataFrame:
    """A table function as the pages' tables are: a frame from plain arguments."""
    return pd.DataFrame({"key": range(n), "weight": [1 / n + shift] * n, "series": ["scaled"] * n})


# --- keys ------------------------------------------------------------------------------------------------------------
def test_keys_keep_types_apart_and_follow_values():
    assert key_of(1) != key_of(1.0) != key_of(True)
    assert key_of((1, 2)) != key_of([1, 2])
    assert key_of({"a": "x"}) == key_of({"a": "x"}) != key_of({"a": "y"})
    assert key_of(np.int64(3)) == key_of(np.int64(3)) != key_of(np.float64(3))
    small = ROW.copy()
    assert key_of(small) == key_of(ROW.copy())  # equal values: equal keys
    assert key_of(ROW.assign(weight=[0.2, 0.3, 0.5])) != key_of(ROW)
    assert key_of(ROW.astype({"key": "float64"})) != key_of(ROW)  # same numbers, other type
    with pytest.raises(TypeError):
        key_of(object())
    with pytest.raises(TypeError):  # a tensor has no cheap exact key: tables take plain parameters
        key_of(torch.zeros(2))
    with pytest.raises(TypeError):  # too large to digest on every run
        key_of(pd.DataFrame({"x": range(cache.SMALL_FRAME + 1)}))


@dataclasses.dataclass(frozen=True)
class Settings:
    n: int
    causal: bool
    scale: float | None = None


@dataclasses.dataclass(frozen=True)
class OtherSettings:
    n: int
    causal: bool
    scale: float | None = None


@dataclasses.dataclass
class Loose:
    n: int


def test_a_frozen_dataclass_is_keyed_by_its_class_and_fields():
    assert key_of(Settings(4, True)) == key_of(Settings(4, True))
    assert key_of(Settings(4, True)) != key_of(Settings(4, False)) != key_of(Settings(4, False, 0.5))
    assert key_of(Settings(4, True)) != key_of(OtherSettings(4, True))  # same fields, another meaning
    assert key_of(Settings(1, True)) != key_of(Settings(True, True))  # fields keep their types
    with pytest.raises(TypeError):  # a mutable dataclass could change after it was used as a key
        key_of(Loose(4))


class Run:
    """A result that promises: equal cache_key, equal content (as training results do)."""

    def __init__(self, run_id: str, weights: torch.Tensor):
        self.cache_key, self.weights = ("run", run_id), weights


def test_an_object_with_a_cache_key_is_keyed_by_it():
    a, b = Run("r1", torch.zeros(3)), Run("r1", torch.ones(3))
    assert key_of(a) == key_of(b) != key_of(Run("r2", torch.zeros(3)))
    calls = []

    @cached(4)
    def total(run: Run) -> float:
        calls.append(run.cache_key)
        return float(run.weights.sum())

    assert total(a) == total(b) == 0.0 and calls == [("run", "r1")]  # the promise: computed once per cache_key


def test_an_unkeyable_argument_raises_a_type_error_naming_it():
    @cached(4)
    def mean_weight(n: int, weights) -> float:
        return float(np.mean(weights))

    with pytest.raises(TypeError, match=r"mean_weight: argument 'weights'"):
        mean_weight(3, object())
    with pytest.raises(TypeError, match=r"argument 'weights'"):
        mean_weight(3, weights=torch.zeros(3))
    assert mean_weight(3, (1.0, 2.0)) == 1.5


# --- the store -------------------------------------------------------------------------------------------------------
def test_the_store_drops_the_least_recently_used():
    store = Store(2)
    store.get("a", lambda: {"a": 1})
    store.get("b", lambda: {"b": 1})
    store.get("a", lambda: {"a": 2})  # a is used again: b is now the oldest
    store.get("c", lambda: {"c": 1})
    assert store.get("a", lambda: {"a": 3}) == {"a": 1} and store.get("b", lambda: {"b": 2}) == {"b": 2}
    assert cache.store("test.once", 3) is cache.store("test.once", 3)


def test_get_once_builds_once_for_callers_who_arrive_together_and_keeps_only_what_it_should():
    store, started, release, builds = Store(4), threading.Event(), threading.Event(), []

    def slow():
        builds.append(1)
        started.set()
        release.wait(5)
        return {"rows": len(builds)}

    results = []
    first = threading.Thread(target=lambda: results.append(store.get_once("k", slow)))
    first.start()
    started.wait(5)
    second = threading.Thread(target=lambda: results.append(store.get_once("k", slow)))
    second.start()
    release.set()
    first.join(5)
    second.join(5)
    assert builds == [1] and results[0] is results[1]  # the second caller waited for the first one's value
    assert store.peek("k") is results[0]


def test_get_once_builds_again_what_is_no_longer_fresh_for_its_caller():
    store, builds = Store(4), []
    build = lambda: builds.append(1) or {"n": len(builds)}  # noqa: E731
    first = store.get_once("k", build, fresh=lambda v: True)
    assert store.get_once("k", build, fresh=lambda v: v["n"] >= 1) is first and builds == [1]
    again = store.get_once("k", build, fresh=lambda v: v["n"] >= 2)  # stale for this caller: built again, kept
    assert again == {"n": 2} and store.peek("k") is again and builds == [1, 1]
    assert store.get_once("k", build) is again  # no test: whatever is kept answers


# --- @cached ---------------------------------------------------------------------------------------------------------
def test_a_cached_frame_is_keyed_by_its_origin_and_a_frame_made_from_it_is_not():
    table = cached(8)(weights_table)
    first, again = table(4), table(4)
    assert first is again  # the server's store answers with the frame it keeps: no copy, no hashing
    assert cache.origin(first) == cache.origin(again) != cache.origin(table(5))
    assert cache.origin(first[first.key > 0]) is None  # filtered: a new frame with no origin of its own
    assert key_of(first) == key_of(again)
    big = cached(2)(lambda n: {"cells": pd.DataFrame({"x": range(n)}), "n": n})(cache.SMALL_FRAME + 1)
    assert key_of(big["cells"])  # a large frame in a dict result is keyed by its origin, not refused


def test_a_table_computes_each_call_once_for_the_server_and_keeps_its_last_entries():
    calls = []

    @cached(2)
    def table(n: int, shift: float = 0.0) -> pd.DataFrame:
        calls.append((n, shift))
        return weights_table(n, shift)

    assert table(3) is table(3)
    assert table(3, shift=0.5) is not table(3)  # (3, 0.0) used last
    assert calls == [(3, 0.0), (3, 0.5)]
    table(4)  # a third entry: (3, 0.5), the least recently used, is dropped
    assert table(3) is table(3) and calls == [(3, 0.0), (3, 0.5), (4, 0.0)]
    assert table(3, shift=0.5).equals(weights_table(3, 0.5)) and calls[-1] == (3, 0.5)  # made again
    assert table(3, 0.5).equals(table(3, shift=0.5))  # a positional and a named argument: two keys, both right
    table.clear()
    table(3)
    assert calls[-1] == (3, 0.0)


def test_a_run_asks_a_table_once_and_the_next_run_asks_again(monkeypatch):
    """Within one run the same call answers without a look-up; a new run (new cursors) starts afresh."""

    class Context:
        cursors: dict = {}

    ctx = Context()
    monkeypatch.setattr(internals, "get_script_run_ctx", lambda suppress_warning=False: ctx)
    table = cached(8)(weights_table)
    ctx.cursors = {}
    first = table(4)
    assert table(4) is first and table(5) is not first
    assert internals.this_run() is internals.this_run()  # one dict for the whole run
    assert len(internals.this_run()["tables"]) == 2
    ctx.cursors = {}  # Streamlit's next run
    assert "tables" not in internals.this_run()
    assert table(4) is first  # from the server's store this time


def test_thirty_sessions_missing_a_table_at_once_compute_it_once():
    started, release, calls = threading.Event(), threading.Event(), []

    @cached(4)
    def slow(n: int) -> pd.DataFrame:
        calls.append(n)
        started.set()
        release.wait(5)
        return weights_table(n, 0.0)

    results = []
    students = [threading.Thread(target=lambda: results.append(slow(3))) for _ in range(30)]
    students[0].start()
    started.wait(5)
    for student in students[1:]:
        student.start()
    time.sleep(0.2)  # the others ask while the first still computes (a fresh server's first visits)
    release.set()
    for student in students:
        student.join(5)
    assert calls == [3] and len(results) == 30 and all(r is results[0] for r in results)


# --- check mode ------------------------------------------------------------------------------------------------------
SCALE = [1.0]  # an input a careless table reads without naming it in its arguments


def test_check_mode_catches_a_key_that_misses_an_input():
    @cached(4)
    def scaled(n: int) -> pd.DataFrame:
        return weights_table(n).assign(weight=lambda f: f.weight * SCALE[0])

    scaled(3)
    SCALE[0] = 2.0
    try:
        assert scaled(3).weight.iloc[0] == pytest.approx(1 / 3)  # outside check mode: stale, silently
        with check(), pytest.raises(CacheKeyError, match=r"scaled with key"):
            scaled(3)
    finally:
        SCALE[0] = 1.0
    with check():
        assert scaled(3) is scaled(3)  # a right key passes, and answers with the kept object
    timings = iter(range(100))
    measured = cached(4, exact=False)(lambda n: next(timings))
    with check():
        assert measured(3) == measured(3) == 0  # a measurement is not rebuilt: it would differ every time


def test_check_mode_catches_a_shared_result_changed_in_place():
    table = cached(4)(weights_table)
    kept = table(3)
    kept.loc[0, "weight"] = 9.0  # a page that writes into what every session shares
    with check(), pytest.raises(CacheKeyError, match=r"weights_table"):
        table(3)
    parts = cached(4)(lambda n: {"rows": weights_table(n), "labels": ["a", "b"], "grid": np.zeros((2, 2))})
    parts(2)["labels"].append("c")
    with check(), pytest.raises(CacheKeyError, match=r"\['labels'\]"):
        parts(2)


def test_check_mode_rebuilds_the_first_hit_of_each_run_only(monkeypatch):
    """What a run asked for once is answered again without a rebuild (the page's own repeats cost nothing more);
    the next run's first hit is rebuilt and compared again."""

    class Context:
        cursors: dict = {}

    ctx, calls = Context(), []
    monkeypatch.setattr(internals, "get_script_run_ctx", lambda suppress_warning=False: ctx)

    @cached(4)
    def table(n: int) -> pd.DataFrame:
        calls.append(n)
        return weights_table(n)

    with check():
        first = table(4)
        assert table(4) is first and calls == [4]
        ctx.cursors = {}  # the next run: a hit, rebuilt once
        assert table(4) is first and table(4) is first and calls == [4, 4]


def test_check_mode_catches_a_function_that_changes_its_arguments():
    @cached(4)
    def sorted_names(names: list) -> tuple:
        names.sort()  # the caller's list, sorted in place: its next call with the same list has another key
        return tuple(names)

    with check(), pytest.raises(CacheKeyError, match="changed one of its arguments in place"):
        sorted_names(["b", "a"])
    assert sorted_names(["a", "b"]) == ("a", "b")  # outside check mode nothing is verified


def test_check_mode_compares_exactly_and_counts_nan_equal_to_nan():
    both = [{"x": [float("nan"), 1.0], "t": torch.tensor([float("nan")])} for _ in range(2)]
    cache.verify(*both, "same")
    nan_frame = pd.DataFrame({"x": [np.nan, 1.0]})
    cache.verify(nan_frame, nan_frame.copy(), "frames")
    for kept, fresh in [
        (pd.DataFrame({"x": [1.0]}), pd.DataFrame({"x": [1.0 + 1e-12]})),  # exact, not approximately equal
        (np.array([1, 2]), np.array([1.0, 2.0])),  # same numbers, another dtype
        (torch.tensor([1.0]), torch.tensor([1.5])),
        (Settings(2, True), Settings(2, False)),
        ("a", "b"),
        ((1, 2), (1, 2, 3)),
    ]:
        with pytest.raises(CacheKeyError):
            cache.verify(kept, fresh, "what")


def test_check_mode_is_on_in_the_environment():
    import subprocess
    import sys

    code = "from explorer.ui import cache; print(cache.checking())"
    env = {"ATTN_CHECK_CACHE": "1", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    with check(False):
        assert not cache.checking()
    with check():
        assert cache.checking()


def test_the_strings_td_shares_between_sessions_are_read_only():
    from explorer.ui.i18n import td

    text = td("common.csv_columns")
    assert text is td("common.csv_columns")  # one dict per language for the whole server
    for change in (lambda d: d.__setitem__("x", "y"), lambda d: d.update(x="y"), lambda d: d.pop("time_ms", None)):
        with pytest.raises(TypeError, match="read-only"):
            change(text)
    assert (text | {"x": "y"})["x"] == "y" and "x" not in text  # a page adds to a copy


def test_a_cache_key_error_is_never_turned_into_a_friendly_message():
    """A page's friendly_errors shows a ValueError as a warning and lets the rest of the page run; a wrong key must
    fail the page's tests instead (the random walk over every control meets it as an exception)."""
    from explorer.ui.page import friendly_errors

    with pytest.raises(CacheKeyError), friendly_errors("part"):
        raise CacheKeyError("kept result differs")


class Timed:
    """A result with a part no rebuild reproduces (its seconds) beside numbers that are reproducible."""

    def __init__(self, numbers: list, seconds: float):
        self.numbers, self.seconds = numbers, seconds


def test_check_mode_compares_what_a_rebuild_reproduces_of_a_result():
    clock, offset = iter(range(100)), [0]
    run = cached(4, compared=lambda r: r.numbers)(lambda n: Timed([n + offset[0]], next(clock)))
    with check():
        assert run(3) is run(3)  # the seconds differ; the numbers agree
        offset[0] = 1  # an input the key misses
        with pytest.raises(CacheKeyError, match="with key"):
            run(3)


def test_check_mode_checks_the_keys_of_the_untrained_runs(monkeypatch):
    """The pages' untrained runs hold a model and their seconds, which no rebuild reproduces; their numbers are
    compared, so a key that misses an input fails (here: a config built with another seed)."""
    from explorer.tables import induction, learning

    settings = learning.LearnSettings("reverse", 32, 1, 1, learning.AUTO, 100, True, 0)
    with check():
        learning.untrained_run(settings)
        assert learning.untrained_run(settings) is learning.untrained_run(settings)
        induction.untrained(induction.STEPS[0], 0)
        assert induction.untrained(induction.STEPS[0], 0) is induction.untrained(induction.STEPS[0], 0)
        config, pair_config = learning.learn_config, induction.pair_config
        monkeypatch.setattr(learning, "learn_config", lambda *a: dataclasses.replace(config(*a), seed=1))
        monkeypatch.setattr(induction, "pair_config", lambda steps, seed: pair_config(steps, seed + 1))
        with pytest.raises(CacheKeyError, match="untrained_run with key"):
            learning.untrained_run(settings)
        with pytest.raises(CacheKeyError, match="untrained with key"):
            induction.untrained(induction.STEPS[0], 0)


def test_a_function_that_returns_none_is_computed_once_per_key(monkeypatch):
    """None is a result like any other: kept, and not taken for "nothing kept" (which recomputed it every call),
    by the server's store (calls outside a run) and by a run's own memo."""
    calls = []
    nothing = cached(4)(lambda n: calls.append(n))
    assert [nothing(1), nothing(1), nothing(1)] == [None] * 3 and calls == [1]

    class Context:
        cursors: dict = {}

    monkeypatch.setattr(internals, "get_script_run_ctx", lambda suppress_warning=False: Context)
    assert nothing(2) is None and calls == [1, 2]
    nothing.clear()  # the run's memo alone now stands between a second call and a recomputation
    assert nothing(2) is None and calls == [1, 2]
    store = Store(2)
    built = []
    assert store.get("k", lambda: built.append(1)) is None and store.get("k", lambda: built.append(2)) is None
    assert store.get_once("j", lambda: built.append(3)) is None and store.get_once("j", lambda: built.append(4)) is None
    assert built == [1, 3] and store.peek("k") is None  # peek's None: kept None or nothing, as before


def test_a_dicts_keys_are_typed_like_its_values():
    """{1: x}, {1.0: x} and {True: x} are equal dicts in Python but different arguments: three keys."""
    keys = {key_of({1: "a"}), key_of({1.0: "a"}), key_of({True: "a"})}
    assert len(keys) == 3
    assert key_of({"a": 1, 2: (3,)}) == key_of({"a": 1, 2: (3,)})
    with pytest.raises(TypeError):
        key_of({object(): 1})  # a key with no key of its own is refused like a value
