"""Results kept for the whole server: the one store type, the keys of function arguments, and `@cached`, the
decorator of explorer.tables functions.

A class of 30 on one link asks for the same tables: each is computed once per distinct arguments for the server,
even when the class misses it at the same moment, and answered within one run without a look-up. Results are
shared by every session and read-only: a page derives new objects from them and never changes one in place.

Check mode (`checking()`: the environment variable ATTN_CHECK_CACHE=1, or `with check():` in a test) rebuilds every
hit and compares it with the kept value, so a key that misses an input, or a page that changes a shared result in
place, fails the tests (CacheKeyError) instead of showing a student a stale chart.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import hashlib
import math
import os
import threading
import weakref
from collections.abc import Callable

import numpy as np
import pandas as pd

from explorer.ui.internals import this_run

SMALL_FRAME = 500  # rows: a frame of unknown origin up to this size is keyed by a digest of its values (~1 ms)
_PLAIN = (str, int, float, bool, type(None))
_MISSING = object()  # "not kept": None is a result a function may return and a store keep


class CacheKeyError(AssertionError):
    """A kept result differs from the one its key rebuilds: the key misses an input, or a caller changed the
    shared result in place."""


# --- check mode ------------------------------------------------------------------------------------------------------
_CHECKS = [os.environ.get("ATTN_CHECK_CACHE") == "1"]  # global, not per thread: AppTest runs a page in its own thread


def checking() -> bool:
    """Whether every hit is rebuilt and compared with the kept value."""
    return _CHECKS[-1]


@contextlib.contextmanager
def check(on: bool = True):
    """Check mode on (or off) inside the block."""
    _CHECKS.append(on)
    try:
        yield
    finally:
        _CHECKS.pop()


def verify(kept, fresh, what: str) -> None:
    """Raise CacheKeyError naming `what` unless `kept` equals `fresh` exactly (NaN equal to NaN)."""
    problem = difference(kept, fresh)
    if problem is not None:
        raise CacheKeyError(
            f"{what}: the kept result differs from a rebuilt one ({problem}). Either the key misses an input, a caller"
            " changed the shared result in place, or the result is not reproducible (a random id, a timing: mark"
            " a measurement @cached(n, exact=False))"
        )


def rebuilt(build: Callable[[], object], key: Callable[[], tuple], was: tuple, what: str):
    """build() in check mode, which must leave its arguments as they were: a function that changes an argument
    in place (pops a key of a text dict, sorts a list) gives the next caller with equal arguments another key."""
    value = build()
    if key() != was:
        raise CacheKeyError(f"{what}: the function changed one of its arguments in place")
    return value


def difference(a, b, where: str = "result") -> str | None:
    """Where a and b differ, or None when they are equal exactly (frames, series, arrays, tensors, containers)."""
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (pd.DataFrame, pd.Series)):
        check_equal = pd.testing.assert_frame_equal if isinstance(a, pd.DataFrame) else pd.testing.assert_series_equal
        try:
            check_equal(a, b, check_exact=True)
        except AssertionError as err:
            return f"{where}: {' '.join(str(err).split())[:300]}"
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)[:8]} vs {list(b)[:8]}"
        return next((d for k in a if (d := difference(a[k], b[k], f"{where}[{k!r}]")) is not None), None)
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: length {len(a)} vs {len(b)}"
        pairs = enumerate(zip(a, b, strict=True))
        return next((d for i, (x, y) in pairs if (d := difference(x, y, f"{where}[{i}]")) is not None), None)
    if dataclasses.is_dataclass(a):
        return difference(_fields(a), _fields(b), f"{where}.{type(a).__name__}")
    if isinstance(a, np.ndarray):
        same = a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return None if same else f"{where}: arrays differ"
    if type(a).__module__ == "torch":  # a tensor, compared without importing torch here
        return None if a.shape == b.shape and _same_tensor(a, b) else f"{where}: tensors differ"
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else f"{where}: {a!r:.80} vs {b!r:.80}"


def _same_tensor(a, b) -> bool:
    if a.dtype != b.dtype:
        return False
    return a.equal(b) or (a.is_floating_point() and bool(((a == b) | (a.isnan() & b.isnan())).all()))


def _fields(value) -> dict:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


# --- keys ------------------------------------------------------------------------------------------------------------
# Where a DataFrame came from: id(frame) -> (weak reference to it, (function, its arguments)). A frame that a
# @cached function returned stands for its origin in a key: hashing its values costs ~1 ms per thousand rows on every
# run, a look-up here costs nothing. A frame made from it (filtered, sorted) is a new object with no origin.
_ORIGINS: dict[int, tuple[weakref.ref, tuple]] = {}


def remember(frame: pd.DataFrame, made_by: tuple) -> None:
    """Key `frame` by `made_by` from now on (the caller promises: equal origins mean equal frames)."""
    key = id(frame)

    def forget(ref: weakref.ref, key: int = key) -> None:
        entry = _ORIGINS.get(key)
        if entry is not None and entry[0] is ref:
            _ORIGINS.pop(key, None)

    _ORIGINS[key] = (weakref.ref(frame, forget), made_by)


def origin(frame: pd.DataFrame) -> tuple | None:
    """(function, arguments[, position in its result]) of a frame that a @cached function returned, else None."""
    entry = _ORIGINS.get(id(frame))
    return entry[1] if entry is not None and entry[0]() is frame else None


def _digest(frame: pd.DataFrame) -> bytes:
    values = pd.util.hash_pandas_object(frame, index=True).to_numpy()
    return hashlib.blake2b(values.tobytes(), digest_size=16).digest()


def _type_name(value) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def key_of(value):
    """A hashable stand-in for an argument, equal exactly when the arguments are equal; TypeError for a value with
    no cheap, exact key (a large frame of unknown origin, a tensor, an object that does not promise one)."""
    if type(value) in (str, int):
        return value
    if isinstance(value, _PLAIN):  # floats and booleans keep their type: 1, 1.0 and True are equal keys otherwise
        return (type(value).__name__, value)
    if isinstance(value, pd.DataFrame):
        return ("frame", _frame_origin(value))
    if isinstance(value, dict):
        return ("dict", tuple((key_of(k), key_of(v)) for k, v in value.items()))  # keys typed like values
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(key_of(v) for v in value))
    if isinstance(value, np.generic):
        return (type(value).__name__, value.item())
    if hasattr(value, "cache_key"):  # the object promises: equal cache_key, equal content (training results)
        return ("obj", _type_name(value), key_of(value.cache_key))
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and value.__dataclass_params__.frozen:
        return ("dataclass", _type_name(value), tuple((n, key_of(v)) for n, v in _fields(value).items()))
    raise TypeError(f"no cache key for a {type(value).__name__}")


def _frame_origin(frame: pd.DataFrame) -> tuple:
    made_by = origin(frame)
    if made_by is not None:
        return made_by
    if len(frame) > SMALL_FRAME:
        raise TypeError(f"no cache key for a frame of {len(frame)} rows not made by a @cached function")
    made_by = ("values", frame.shape, tuple(frame.columns), tuple(map(str, frame.dtypes)), _digest(frame))
    remember(frame, made_by)  # the next key of this very frame costs nothing
    return made_by


def call_key(fn: Callable, args: tuple, kwargs: dict) -> tuple:
    """key_of(args, kwargs) of a call of fn; a TypeError names the argument that has no key."""
    try:
        return key_of(args), key_of(dict(sorted(kwargs.items())))
    except TypeError:
        pass
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount] if hasattr(fn, "__code__") else ()
    named = [(names[i] if i < len(names) else f"#{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    for name, value in named:
        try:
            key_of(value)
        except TypeError as err:
            raise TypeError(f"{_name(fn)}: argument {name!r} cannot be a cache key ({err})") from None
    raise AssertionError("unreachable: some argument had no key")


def _name(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


# --- the store -------------------------------------------------------------------------------------------------------
class Store:
    """Results kept for the whole server by key (built charts; a table function's results; benchmark rows), the
    least recently used dropped first. They are shared by every session and never changed after they are built."""

    def __init__(self, size: int):
        self.size, self._lock, self._specs = size, threading.Lock(), collections.OrderedDict()
        self._building: dict = {}  # key -> [its lock, callers waiting on it] while get_once builds it

    def peek(self, key):
        """The kept value, or None (a kept None reads the same: look() tells them apart)."""
        value = self.look(key)
        return None if value is _MISSING else value

    def look(self, key):
        """The kept value, or _MISSING when nothing is kept under `key`."""
        with self._lock:
            value = self._specs.get(key, _MISSING)
            if value is not _MISSING:
                self._specs.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._specs[key] = value
            while len(self._specs) > self.size:
                self._specs.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._specs.clear()

    def get(self, key, build: Callable[[], object]):
        """The kept value, or build()'s, kept. Built outside the lock: two sessions missing at once both build,
        neither waits (for cheap builds)."""
        value = self.look(key)
        if value is _MISSING:
            value = build()
            self.put(key, value)
        return value

    def get_once(self, key, build: Callable[[], object], fresh: Callable[[object], bool] | None = None):
        """get(), for expensive builds: one build per key at a time, a second caller waiting for the first's value.
        fresh(value): whether a kept value still answers this caller; one that does not is built again (once, the
        callers waiting meanwhile taking the new value if it answers them)."""
        usable = lambda value: value is not _MISSING and (fresh is None or fresh(value))  # noqa: E731
        value = self.look(key)
        if usable(value):
            return value
        with self._lock:
            building = self._building.setdefault(key, [threading.Lock(), 0])
            building[1] += 1
        try:
            with building[0]:
                value = self.look(key)
                if not usable(value):
                    value = build()
                    self.put(key, value)
                return value
        finally:
            with self._lock:
                building[1] -= 1
                if not building[1]:
                    self._building.pop(key, None)


@functools.cache
def store(name: str, size: int) -> Store:
    """The server's store called `name` (made on first use, then the same one in every session and run)."""
    return Store(size)


# --- @cached ---------------------------------------------------------------------------------------------------------
def cached(max_entries: int, *, exact: bool = True, compared: Callable[[object], object] | None = None):
    """Decorator of an explorer.tables function: its results kept for the whole server by key_of(its arguments),
    the last `max_entries` of them. Each is computed once even when a class misses it at once (Store.get_once),
    answered within one run without a look-up, and the frames in it (itself, the parts of a tuple, the values of a
    dict) keyed by this call from then on. An argument with no key raises TypeError naming it. The function stays
    callable outside Streamlit (the tests call it directly); `fn.clear()` empties its store.

    exact=False: the function measures (timings), so its results differ from call to call and check mode leaves
    them alone. compared: for a result that holds something a rebuild never reproduces (a model object, its
    seconds) beside numbers it does: check mode compares compared(kept) with compared(rebuilt), so its key is still
    checked."""

    def decorate(fn):
        name, kept = _name(fn), Store(max_entries)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            key = lambda: call_key(fn, args, kwargs)  # noqa: E731
            where = (name, *key())
            results = this_run().setdefault("tables", {})  # this run's results of @cached functions, by call
            result = results.get(where, _MISSING)
            if result is not _MISSING:  # in check mode too: the first hit of a run was rebuilt and compared
                return result
            if exact and checking():
                build = lambda: rebuilt(lambda: fn(*args, **kwargs), key, where[1:], name)  # noqa: E731
                result = _checked(kept, where, build, compared)
            else:
                result = kept.get_once(where, lambda: _remembered(fn(*args, **kwargs), where))
            results[where] = result
            return result

        call.clear = kept.clear
        return call

    return decorate


def _checked(kept: Store, where: tuple, build: Callable[[], object], compared: Callable | None = None):
    """In check mode: a hit is rebuilt and compared with the kept value (compared(...) of each, if given); a miss is
    built and kept."""
    value = kept.look(where)
    if value is _MISSING:
        return kept.get_once(where, lambda: _remembered(build(), where))
    part = compared or (lambda result: result)
    verify(part(value), part(build()), f"{where[0]} with key {where[1:]!r:.300}")
    return value


def _remembered(result, where: tuple):
    """result, its frames (itself, the parts of a tuple, the values of a dict) remembered as made by `where`."""
    if isinstance(result, pd.DataFrame):
        remember(result, where)
    elif isinstance(result, (tuple, dict)):
        for i, part in result.items() if isinstance(result, dict) else enumerate(result):
            if isinstance(part, pd.DataFrame):
                remember(part, (*where, i))
    return result
