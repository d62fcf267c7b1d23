"""The tables of the geometry, positional-encoding and sqrt(d_k) pages compute on one torch thread.

Why: on a busy 2-core server a second OpenMP thread spins for a core other sessions hold, which made a page's first
visit many times slower (benchmarks/first_visit_tables.md). These tests check that those tables do run on one thread,
that their numbers are those of two threads, and that a process that never sets torch's thread count (a server)
computes the same numbers as the tests, which set it (tests/conftest.py). The equivariance page's tables keep the
process's threads: in a server MKL follows one_thread, and a product split over one thread instead of two sums in
another order, which would change the rounding errors that page is about (its settings below show it).
"""

import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch.overrides import TorchFunctionMode

from attn_core.learn import one_thread
from explorer.tables import equivariance, geometry, positional, sqrt_dk

PERM = equivariance.choose_permutation("random", 29, 794772)
AMPLITUDES = (0.0, 0.5, 1.0)
# (module, function, arguments): the equivariance settings are ones whose products come out differently when a
# server computes them on one thread
EQUIVARIANCE = [
    ("equivariance", "weights_views", (29, 16, PERM, True, False, 794772, "float64")),
    ("equivariance", "variant_errors", (29, 16, PERM, 794772, "float32")),
    ("equivariance", "shared_projection", (29, 16, 794772)),
    ("equivariance", "shared_projection", (13, 32, 934973)),
]
# every other table function the pages call, at settings of their controls
ONE_THREAD = [
    ("geometry", "hull_view", (6, 1.0, 0.5, 0.7, 3)),
    ("geometry", "regression_1d", (40, 0.3, 0.3, 3)),
    ("geometry", "parity_samples", (16, 32, 3)),
    ("geometry", "cosine_histogram", (64, 3000, 3)),
    ("geometry", "cosine_variance_sweep", (200, 3)),
    ("positional", "encoding_table", (64, 32, 10000)),
    ("positional", "gram_by_offset", (72, 16, 1000)),
    ("positional", "shift_check", (10, 5, 32, 10000, 64, 2)),
    ("positional", "rotation_circle", (64, 32, 10000, 2, 10, 5)),
    ("positional", "first_collision", ((4, 6, 9),)),
    ("positional", "aliasing_table", ((4, 6), 60)),
    ("positional", "equivariance_sweep", (48, 32, 100, "reverse", AMPLITUDES, 3)),
    ("sqrt_dk", "score_histograms", (64, 2000, "uniform", 0.5, 3)),
    ("sqrt_dk", "variance_sweep", (500, "shifted", 0.5, 3)),
    ("sqrt_dk", "softmax_row", (64, 8, 1.0, 3)),
]
CALLS = EQUIVARIANCE + ONE_THREAD
MODULES = {"equivariance": equivariance, "geometry": geometry, "positional": positional, "sqrt_dk": sqrt_dk}
IDS = [f"{module}.{name}" for module, name, _ in ONE_THREAD]


def function(module: str, name: str):
    return getattr(MODULES[module], name)


def one_thread_layer(fn):
    """The wrapper closest to fn's own code (one_thread's, under any cache above it)."""
    while hasattr(getattr(fn, "__wrapped__", None), "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def assert_same(a, b, where="result"):
    """a equals b exactly: frames, arrays, floats (NaN equal to NaN), containers of them."""
    assert type(a) is type(b), where
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float):
        assert a == b or (np.isnan(a) and np.isnan(b)), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, where


class ThreadCounts(TorchFunctionMode):
    """Records torch's thread count at every torch call made inside it."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.add(torch.get_num_threads())
        return func(*args, **(kwargs or {}))


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(("module", "name", "args"), ONE_THREAD, ids=IDS)
def test_tables_compute_on_one_thread(two_threads, module, name, args):
    with one_thread() as settable:
        if not settable:
            pytest.skip("no OpenMP runtime to set")
    counts = ThreadCounts()
    with counts:
        one_thread_layer(function(module, name))(*args)
    assert counts.seen == {1}


@pytest.mark.parametrize(("module", "name", "args"), ONE_THREAD, ids=IDS)
def test_one_thread_keeps_the_numbers_of_two(two_threads, module, name, args):
    fn = function(module, name)
    assert_same(inspect.unwrap(fn)(*args), one_thread_layer(fn)(*args))


SERVER_LIKE = """
import pickle, runpy, sys
sys.path.insert(0, sys.argv[1])
here = runpy.run_path(sys.argv[2])
layer, function = here["one_thread_layer"], here["function"]
sys.stdout.buffer.write(pickle.dumps([layer(function(m, n))(*a) for m, n, a in here["CALLS"]]))
"""


def test_a_process_that_never_sets_its_thread_count_computes_the_same_numbers():
    """A server never calls torch.set_num_threads (the tests' conftest does): both must show the same numbers."""
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", SERVER_LIKE, str(root), __file__]
    done = subprocess.run(command, capture_output=True, check=True, timeout=120, cwd=root)
    for (module, name, args), theirs in zip(CALLS, pickle.loads(done.stdout), strict=True):
        assert_same(one_thread_layer(function(module, name))(*args), theirs, f"{module}.{name}")
