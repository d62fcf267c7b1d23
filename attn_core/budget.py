"""One memory budget for every path that allocates something of size n_q x n_k or larger.

A classroom host has about 1 GB for all sessions together, so a request that would need more than
the budget is refused up front with a MemoryBudgetError (a ValueError) that says what to do instead,
before anything is allocated. The budget is process-wide by default (ATTN_CORE_MEMORY_BUDGET_MB,
else DEFAULT_BUDGET_MB) and can be changed for one block of code with `memory_budget(mb)`.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from contextvars import ContextVar

import torch

DEFAULT_BUDGET_MB = 256.0
MB = 1 << 20


class MemoryBudgetError(ValueError):
    """A computation would need more memory than the budget allows."""


def _from_environment() -> float:
    raw = os.environ.get("ATTN_CORE_MEMORY_BUDGET_MB")
    try:
        value = float(raw) if raw else DEFAULT_BUDGET_MB
    except ValueError:
        return DEFAULT_BUDGET_MB
    return value if math.isfinite(value) and value > 0 else DEFAULT_BUDGET_MB


_PROCESS_BUDGET_MB = _from_environment()
_budget_mb: ContextVar[float] = ContextVar("attn_core_memory_budget_mb", default=_PROCESS_BUDGET_MB)


def budget_bytes() -> int:
    """The budget in force here, in bytes."""
    return int(_budget_mb.get() * MB)


@contextlib.contextmanager
def memory_budget(mb: float) -> Iterator[None]:
    """Use `mb` megabytes as the budget inside the block (per thread / context)."""
    if isinstance(mb, bool) or not isinstance(mb, (int, float)) or not math.isfinite(mb) or mb <= 0:
        raise ValueError(f"mb must be a finite number > 0, got {mb!r}")
    token = _budget_mb.set(float(mb))
    try:
        yield
    finally:
        _budget_mb.reset(token)


def check_budget(n_bytes: int, what: str, suggestion: str) -> None:
    """Raise MemoryBudgetError if `n_bytes` exceeds the budget; `what` and `suggestion` go in the message."""
    limit = budget_bytes()
    if n_bytes > limit:
        raise MemoryBudgetError(
            f"{what} would need about {n_bytes / MB:,.0f} MB, over the memory budget of {limit / MB:,.0f} MB. "
            f"{suggestion}"
        )


def tensor_bytes(shape, dtype: torch.dtype, copies: int = 1) -> int:
    """Bytes of `copies` tensors of `shape` and `dtype`."""
    return copies * math.prod(shape) * torch.empty((), dtype=dtype).element_size()
