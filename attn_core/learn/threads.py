"""One CPU thread for the calling thread's torch work, leaving every other thread of the process as it was.

torch.set_num_threads is process-wide: a server that trains in one thread would slow every other page down to one
thread. OpenMP keeps the thread count per calling thread (and torch's CPU builds ask omp_get_max_threads() before
each parallel region, MKL included), so setting it in the training thread alone is enough. Why one: measured on
the 2-core server while other work ran, a d_model 256 run took 19-25 s with one thread and 362-414 s with two
(OpenMP's two threads spin waiting for a core the other processes hold).
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

import torch


def _openmp():
    """The process's OpenMP runtime (torch loads its libgomp globally), or None where there is none to set."""
    try:
        lib = ctypes.CDLL(None)
    except OSError:
        return None
    return lib if hasattr(lib, "omp_set_num_threads") and hasattr(lib, "omp_get_max_threads") else None


@contextlib.contextmanager
def one_thread() -> Iterator[bool]:
    """Within the block, this thread's torch operations use one CPU thread; yields False where that cannot be set."""
    lib = _openmp()
    if lib is None:
        yield False
        return
    torch.get_num_threads()  # torch sets a thread's count on its first parallel call: let it happen before ours
    before = lib.omp_get_max_threads()
    lib.omp_set_num_threads(1)
    try:
        yield True
    finally:
        lib.omp_set_num_threads(before)
