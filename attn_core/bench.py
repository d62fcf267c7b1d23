"""Time and peak memory of every attention path, side by side: `python -m attn_core.bench`.

Methods (all forward only, under torch.no_grad, on q, k, v of shape (B, H, n, d)):
    naive         naive_attention(q, k, v): always unmasked (it has no causal flag)
    naive_masked  naive_attention(q, k, v, causal_mask(n)): always causal; beside `naive` it shows
                  what a bool mask costs (the mask is built beforehand and counted as an input)
    tiled         tiled_attention(..., causal=config.causal, block_q, block_k): by default (None) its own
                  tile sizes, default_blocks(n, n, device, causal); each row records the sizes used
    sdpa          torch.nn.functional.scaled_dot_product_attention(..., is_causal=config.causal)
    triton        attn_core.flash_triton.flash_attention (CUDA only, imported lazily)
Each row's `causal` field says what that row computed.

Modes: `fwd` times the forward alone (under torch.no_grad); `fwd_bwd` times forward plus the
gradients of q, k, v for a fixed random output gradient (torch.autograd.grad, nothing accumulates).
GPU convention of the FlashAttention-2 paper (`--fa2`): batch * n = 16k tokens (`tokens`: each
row's batch is tokens // n) and heads * d = 2048; every row also gets its TFLOP/s as a multiple of
SDPA's at the same n (`tflops_vs_sdpa`, > 1: faster than SDPA).

Measurements, per (n, method):
1. Time: `warmup` untimed calls, then `repeats` timed calls -> median, p10, p90, min in ms.
   CPU: time.perf_counter around each call. CUDA: a pair of CUDA events around each call.
2. Peak memory, from one more call kept apart from the timed ones (counting slows it down):
   - CUDA: reset_peak_memory_stats(), then peak_mem_total_bytes = max_memory_allocated() and
     peak_mem_bytes = that minus memory_allocated() just before the call (the inputs).
   - CPU: the CPU allocator keeps no statistics, RSS is blurred by glibc's free lists and
     tracemalloc does not see tensor storage. So the call runs under LiveTensorBytes, a
     TorchDispatchMode that sees every tensor an ATen op returns: a storage that is none of the
     op's inputs' (not a view, not an in-place or out= result) is new, and its bytes count as live
     until a weak reference on the storage says it was freed. The maximum is peak_mem_bytes, the
     memory the call needed on top of what was live before it; peak_mem_total_bytes adds the input
     bytes. The counter holds one weak reference per live storage, so what it costs does not grow
     with the number of tiles (torch.profiler's memory events, used before, did). Not seen:
     scratch buffers a kernel allocates and frees inside one op (SDPA's per-thread buffers, about
     1 MiB on 2 threads; oneDNN/MKL's own). The peaks checked against theory and the profiler:
     benchmarks/cpu_attention.md, "How peak memory is measured on the CPU".
   theory_scores_bytes = B*H*n*n*bytes(dtype), one score matrix, is reported beside it.
3. Throughput: tflops = flops / median time, flops = 4*B*H*n^2*d (q k^T and p v, 2*n^2*d each),
   halved for causal rows (the useful work, as FlashAttention's benchmarks count it); fwd_bwd rows
   count 3.5x that (the backward's five n^2 d products = 2.5 forwards, FlashAttention-2's convention).

Memory budget: an entry needs its inputs plus its working memory, estimated_bytes(): naive methods
hold SCORE_COPIES[method] score matrices at once (measured: benchmarks/cpu_attention.md; in the
softmax dtype: fp32 for half inputs), tiled what tiled_working_bytes says, SDPA and Triton their output and a few (n,)
arrays. An entry whose estimate exceeds memory_budget_mb is not run but reported with status
"skipped: ..." (so is every method at an n whose inputs alone exceed it); an entry that raises (out of memory, a kernel
rejecting a shape) is reported with status "error: ...". Neither stops the run.

Time limit: with time_limit_s set, a sequence length is started only while the run has taken less
than that; once it is passed, every remaining (larger) n is reported with a status starting with
TIME_LIMIT_STATUS instead of being run. The smallest n always runs. The bound is checked between
sizes: a size already started finishes, so a run may overshoot the limit by up to one size's duration.

Stopping: run_benchmark(stop=...), or `with stopping(stop):` around it, calls stop() before every warm-up,
timed and counting call, and at every ATen op of the counting call; whatever stop() raises ends the run there
(a server's viewer who pressed Cancel or closed the tab). A run is so abandoned within one attention call, not
one entry: the timed calls themselves are never interrupted, so what they measure stays a plain call.

Host: the process that runs a benchmark may lend it a `Host` (run_benchmark(host=...), or `with hosting(host):`
around it): what memory the process may still take (`room`, asked before each n's inputs: an entry that needs
more is skipped, status HEADROOM_STATUS ...), what to do between entries, and a turn held for the whole run. The
default lends nothing: this module keeps no process-wide policy (a server's line, memory limit and allocator are
the server's: explorer.ui.heavy).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import csv
import datetime
import json
import math
import os
import platform
import re
import shlex
import sys
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from attn_core import naive
from attn_core._checks import check_int, check_positive
from attn_core.budget import memory_budget
from attn_core.masks import causal_mask
from attn_core.naive import naive_attention, softmax_dtype
from attn_core.tiled import default_blocks, tiled_attention, tiled_working_bytes

METHODS = ("naive", "naive_masked", "tiled", "sdpa", "triton")
MODES = ("fwd", "fwd_bwd")
FA2_TOKENS, FA2_MODEL_DIM = 16384, 2048  # FlashAttention-2's benchmarks: batch * n = 16k, heads * d = 2048
FA2_NS = (512, 1024, 2048, 4096, 8192, 16384)
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# measured peaks / (B*H*n*n*bytes), rounded up; the masked path adds the masked copy of the logits
SCORE_COPIES = {"naive": naive.SCORE_COPIES, "naive_masked": naive.SCORE_COPIES + 1}
# forward + backward (B=1, H=1, d=32, fp32, n=1024 and 2048): naive 6.06x, naive_masked 6.31x one score matrix
SCORE_COPIES_FWD_BWD = {"naive": 6, "naive_masked": 7}
ROW_FIELDS = (
    "method",
    "device",
    "dtype",
    "n",
    "d",
    "heads",
    "batch",
    "causal",
    "mode",
    "block_q",
    "block_k",
    "status",
    "repeats",
    "time_ms_median",
    "time_ms_p10",
    "time_ms_p90",
    "time_ms_min",
    "peak_mem_bytes",
    "peak_mem_total_bytes",
    "input_bytes",
    "theory_scores_bytes",
    "tflops",
    "tflops_vs_sdpa",
)

Progress = Callable[[int, int, str], None]
Stop = Callable[[], None]  # raises to end a run


def _go_on() -> None:
    """The default stop(): never stops."""


_STOP: contextvars.ContextVar[Stop] = contextvars.ContextVar("attn_core_bench_stop", default=_go_on)


@contextlib.contextmanager
def stopping(stop: Stop) -> Iterator[None]:
    """Within the block, a run_benchmark given no stop= of its own calls `stop` (as memory_budget bounds memory:
    a server sets it once around its heavy work, whatever code runs the benchmark inside)."""
    token = _STOP.set(stop)
    try:
        yield
    finally:
        _STOP.reset(token)


TIME_LIMIT_STATUS = "skipped: time limit"  # how a row skipped for the time limit begins
# how a row begins that did not fit in what the process may still take (Host.room)
HEADROOM_STATUS = "skipped: the process has too little memory left"


class Host:
    """What the process running a benchmark lends it. This one lends nothing (a command-line run owns its process);
    a server subclasses it with its own policy (explorer.ui.heavy)."""

    def room(self) -> int | None:
        """Bytes the process may still take, asked before each n's inputs are made; None: no bound beyond the
        config's memory budget."""
        return None

    def between_entries(self) -> None:
        """Called after each entry (a server hands the entry's freed memory back to the system here)."""

    def turn(self) -> AbstractContextManager:
        """Held for the whole run (a server lets one run at a time time its entries here)."""
        return contextlib.nullcontext()


_HOST: contextvars.ContextVar[Host | None] = contextvars.ContextVar("attn_core_bench_host", default=None)


@contextlib.contextmanager
def hosting(host: Host) -> Iterator[None]:
    """Within the block, a run_benchmark given no host= of its own runs in `host` (as `stopping` sets stop)."""
    token = _HOST.set(host)
    try:
        yield
    finally:
        _HOST.reset(token)


# Every status a row may carry, as (kind, pattern): status_parts() reads one back into its kind and numbers, so
# that a page can say it in its own words. The f-strings that write them are below; a test checks each round trip.
_STATUS_FORMS = (
    ("ok", r"ok"),
    (
        "budget",
        r"skipped: (?P<method>\S+) (?:holds ~(?P<copies>\d+) score copies, )?needs ~(?P<need>\d+) MiB "
        r"with its inputs > memory budget (?P<budget>[\d.e+]+) MiB",
    ),
    ("headroom", re.escape(HEADROOM_STATUS) + r" \(needs ~(?P<need>\d+) MiB, ~(?P<room>\d+) MiB left\)"),
    (
        "time_limit",
        re.escape(TIME_LIMIT_STATUS) + r" of (?P<limit>[\d.e+]+) s passed \((?P<spent>[\d.]+) s spent"
        r" on smaller n\)",
    ),
    ("error", r"error: (?P<what>.*)"),
    ("skipped", r"skipped: (?P<what>.*)"),
)
_STATUS_PATTERNS = tuple((kind, re.compile(pattern, re.DOTALL)) for kind, pattern in _STATUS_FORMS)


def status_parts(status: str) -> tuple[str, dict[str, str]]:
    """(kind, fields) of a row's status: ok, budget (method, copies or None, need and budget in MiB), headroom
    (need, room in MiB), time_limit (limit, spent in s), error or skipped (what: the rest, as written), or
    ("other", {"what": status}) for a status this harness does not write (an older file's)."""
    for kind, pattern in _STATUS_PATTERNS:
        found = pattern.fullmatch(status)
        if found:
            return kind, found.groupdict()
    return "other", {"what": status}


def default_methods(device: str) -> tuple[str, ...]:
    """Every method that can run on `device`: the Triton kernel only on CUDA."""
    return METHODS if torch.device(device).type == "cuda" else METHODS[:-1]


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run: every method in `methods` at every sequence length in `ns`."""

    device: str = "cpu"
    ns: tuple[int, ...] = (256, 512, 1024, 2048)
    d: int = 64
    heads: int = 4
    batch: int = 1
    dtype: str = "float32"
    causal: bool = False
    methods: tuple[str, ...] | None = None  # None: default_methods(device)
    repeats: int = 5
    warmup: int = 1
    memory_budget_mb: float = 2048.0
    block_q: int | None = None  # None: tiled_attention's own choice, default_blocks(n, n, device, causal)
    block_k: int | None = None
    seed: int = 0
    time_limit_s: float | None = None  # None: no limit; else skip the remaining n once this has passed
    mode: str = "fwd"  # "fwd" or "fwd_bwd" (forward + gradients of q, k, v)
    tokens: int | None = None  # None: `batch` at every n; else batch = max(1, tokens // n) (FlashAttention-2)

    def __post_init__(self):
        # Frozen: validated and normalised once, so a bad config never reaches a measurement.
        set_ = object.__setattr__
        set_(self, "device", _check_device(self.device))
        set_(self, "ns", _check_ns(self.ns))
        for name in ("d", "heads", "batch", "repeats"):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("block_q", "block_k"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), minimum=1)
        check_int("warmup", self.warmup, minimum=0)
        check_int("seed", self.seed, minimum=0)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be a bool, got {self.causal!r}")
        set_(self, "memory_budget_mb", check_positive("memory_budget_mb", self.memory_budget_mb))
        set_(self, "time_limit_s", check_positive("time_limit_s", self.time_limit_s, allow_none=True))
        set_(self, "methods", _check_methods(self.methods, self.device))
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.tokens is not None:
            check_int("tokens", self.tokens, minimum=1)

    def at_length(self, n: int) -> BenchConfig:
        """The config of the rows at sequence length n: with `tokens`, batch = max(1, tokens // n)."""
        return self if self.tokens is None else replace(self, batch=max(1, self.tokens // n))


def _check_device(device) -> str:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available")
    return str(dev)


def _check_ns(ns) -> tuple[int, ...]:
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Iterable):
        raise ValueError(f"ns must be a non-empty sequence of integers >= 1, got {ns!r}")
    ns = tuple(ns)
    if not ns:
        raise ValueError("ns must be a non-empty sequence of integers >= 1, got ()")
    for n in ns:
        check_int("ns", n, minimum=1)
    return ns


def _check_methods(methods, device: str) -> tuple[str, ...]:
    if methods is None:
        return default_methods(device)
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if not methods or unknown:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {methods!r}")
    return methods


# --- measurements ---------------------------------------------------------------------------


def attention_flops(batch: int, heads: int, n: int, d: int, causal: bool, mode: str = "fwd") -> int:
    """4*B*H*n^2*d: q k^T and p v are n x n x d multiply-adds each; causal does half; fwd_bwd 3.5x."""
    flops = 4 * batch * heads * n * n * d
    flops = flops // 2 if causal else flops
    return flops * 7 // 2 if mode == "fwd_bwd" else flops


class LiveTensorBytes(TorchDispatchMode):
    """Bytes of tensor storage allocated inside the block and still alive: `live` now, `peak` at most.

    Every ATen op's result is looked at once: a storage shared with one of the op's tensor arguments is
    a view, an in-place or an out= result and allocates nothing; any other storage is new. A weak
    reference on it subtracts its bytes when the last tensor using it is gone. The counter keeps one
    reference per live storage, whatever the number of ops (what it costs is bounded by what it counts).
    Scratch that a kernel allocates and frees inside one op is not seen.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here is compiled: keep __torch_dispatch__ unwrapped. The default wraps it in
        # torch._dynamo.disable, whose import adds about 175 MB to the process (measured, torch 2.13).
        return False

    def __init__(self, stop: Stop = _go_on):
        super().__init__()
        self.live = self.peak = 0
        self._stop = stop
        self._refs: dict[int, weakref.ref] = {}  # data_ptr -> weak reference that frees its bytes

    def _freed(self, key: int, nbytes: int) -> None:
        self.live -= nbytes
        self._refs.pop(key, None)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self._stop()  # the counting call is not timed: it may be left between any two ops
        out = func(*args, **(kwargs or {}))
        results = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not results:
            return out
        inputs = {t.untyped_storage().data_ptr() for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for t in results:
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes == 0 or key in inputs or key in self._refs:
                continue
            self._refs[key] = weakref.ref(storage, lambda _, key=key, nbytes=nbytes: self._freed(key, nbytes))
            self.live += nbytes
            self.peak = max(self.peak, self.live)
        return out


def _cpu_peak_bytes(fn: Callable[[], object], stop: Stop = _go_on) -> int:
    """Peak bytes of tensor storage that fn() allocates above what was live before (LiveTensorBytes)."""
    counter = LiveTensorBytes(stop)
    with counter:
        fn()  # the result is dropped inside the block: its free is counted too
    return counter.peak


def _cuda_peak_bytes(fn: Callable[[], object], device: torch.device) -> tuple[int, int]:
    """(peak above what was live before the call, peak in total) from the caching allocator."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    fn()
    torch.cuda.synchronize(device)
    total = torch.cuda.max_memory_allocated(device)
    return total - before, total


def _time_ms(
    fn: Callable[[], object], device: torch.device, warmup: int, repeats: int, stop: Stop = _go_on
) -> list[float]:
    """Wall time of each of `repeats` calls after `warmup` calls, in ms; stop() before each call."""
    for _ in range(warmup):
        stop()
        fn()
    if device.type != "cuda":
        times = []
        for _ in range(repeats):
            stop()
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return times
    torch.cuda.synchronize(device)
    times = []
    for _ in range(repeats):
        stop()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def _quantiles(times: Sequence[float]) -> dict:
    t = torch.tensor(times, dtype=torch.float64)
    p10, p50, p90 = torch.quantile(t, torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)).tolist()
    return {"time_ms_median": p50, "time_ms_p10": p10, "time_ms_p90": p90, "time_ms_min": min(times)}


# --- methods ----------------------------------------------------------------------------------


class _Skip(Exception):
    """An entry that cannot run here; its message becomes the row's status."""


def _triton_call(q, k, v, causal: bool) -> Callable[[], object]:
    if q.device.type != "cuda":
        raise _Skip("triton needs a CUDA device")
    try:  # lazily: the module (and triton) may be missing, and bench must work without them
        from attn_core.flash_triton import flash_attention, flash_available
    except ImportError as exc:
        raise _Skip(f"triton kernel unavailable ({exc})") from None
    ok, reason = flash_available(q.device)
    if not ok:
        raise _Skip(f"triton kernel unavailable ({reason})")
    scale = 1.0 / math.sqrt(q.shape[-1])
    return lambda: flash_attention(q, k, v, causal=causal, scale=scale, temperature=1.0)


def _make_call(method: str, q, k, v, config: BenchConfig) -> tuple[Callable[[], object], int]:
    """(a no-argument call computing `method` in config.mode, bytes of its extra inputs such as a mask)."""
    if config.mode == "fwd_bwd":
        return _forward_backward_call(method, q, k, v, config)
    return _forward_call(method, q, k, v, config)


def _forward_call(method: str, q, k, v, config: BenchConfig) -> tuple[Callable[[], object], int]:
    """(a no-argument call computing `method`'s forward, bytes of its extra inputs such as a mask)."""
    c = config.causal
    if method == "naive":
        return (lambda: naive_attention(q, k, v)), 0
    if method == "naive_masked":
        mask = causal_mask(q.shape[-2], device=q.device)  # (n, n) bool, broadcast over B, H
        return (lambda: naive_attention(q, k, v, mask)), mask.numel() * mask.element_size()
    if method == "tiled":
        bq, bk = config.block_q, config.block_k
        return (lambda: tiled_attention(q, k, v, causal=c, block_q=bq, block_k=bk)), 0
    if method == "sdpa":
        return (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=c)), 0
    return _triton_call(q, k, v, c), 0


def method_is_causal(method: str, causal: bool) -> bool:
    """What a row computes: naive is never causal, naive_masked always, the rest follow `causal`."""
    return {"naive": False, "naive_masked": True}.get(method, causal)


def tile_sizes(config: BenchConfig, n: int) -> tuple[int, int]:
    """(block_q, block_k) the tiled entry at n uses: the config's, or tiled_attention's default."""
    bq, bk = default_blocks(n, n, config.device, config.causal)
    return (bq if config.block_q is None else config.block_q), (bk if config.block_k is None else config.block_k)


def estimated_bytes(method: str, config: BenchConfig, n: int) -> int:
    """What one entry needs, checked against the budget: its inputs (q, k, v and a mask) plus its working
    memory (the naive methods' score copies, more with the backward in fwd_bwd mode; tiled_working_bytes;
    SDPA's output and log-sum-exp)."""
    b, h, d, dtype = config.batch, config.heads, config.d, DTYPES[config.dtype]
    f = softmax_dtype(dtype).itemsize
    inputs = _qkv_bytes(config, n) + (n * n if method == "naive_masked" else 0)
    if _score_copies(method, config):
        work = _score_copies(method, config) * b * h * n * n * f + 2 * b * h * n * d * f  # + the output and its cast
    elif method == "tiled":
        work = tiled_working_bytes(b * h, n, n, d, d, dtype, *tile_sizes(config, n))
    else:  # sdpa, triton: the output, the log-sum-exp and the fp32 row statistics
        work = b * h * n * (d * dtype.itemsize + 4 * f)
    return inputs + work


def _score_copies(method: str, config: BenchConfig) -> int:
    return (SCORE_COPIES_FWD_BWD if config.mode == "fwd_bwd" else SCORE_COPIES).get(method, 0)


# --- modes and the comparison with SDPA (the GPU benchmarks) ----------------------------------


def _forward_backward_call(method: str, q, k, v, config: BenchConfig) -> tuple[Callable[[], object], int]:
    """(a call computing `method`'s forward and the gradients of q, k, v, bytes of its extra inputs).

    The output gradient is fixed and random (seed + 1); torch.autograd.grad returns fresh gradients,
    so nothing accumulates from call to call.
    """
    leaves = tuple(x.detach().requires_grad_() for x in (q, k, v))
    forward, extra = _forward_call(method, *leaves, config)
    gen = torch.Generator().manual_seed(config.seed + 1)
    d_out = torch.randn(q.shape, generator=gen).to(device=q.device, dtype=q.dtype)  # d_v = d

    def call():
        with torch.enable_grad():  # the harness times under torch.no_grad
            out = forward()
            out = out[0] if isinstance(out, tuple) else out  # naive_attention returns (out, weights)
            return torch.autograd.grad(out, leaves, d_out)

    return call, extra + d_out.numel() * d_out.element_size()


def _compare_with_sdpa(rows: list[dict]) -> None:
    """Set tflops_vs_sdpa of `rows` (one n): each row's TFLOP/s over SDPA's, where both ran."""
    sdpa = next((r["tflops"] for r in rows if r["method"] == "sdpa" and r["tflops"]), None)
    for r in rows:
        r["tflops_vs_sdpa"] = r["tflops"] / sdpa if sdpa and r["tflops"] else None


# --- one entry, one run -----------------------------------------------------------------------


def _inputs(config: BenchConfig, n: int) -> tuple[torch.Tensor, ...]:
    """q, k, v (B, H, n, d) from `seed` alone: the same n gives the same inputs in any run."""
    gen = torch.Generator().manual_seed(config.seed)
    shape = (config.batch, config.heads, n, config.d)
    return tuple(
        torch.randn(shape, generator=gen).to(device=config.device, dtype=DTYPES[config.dtype]) for _ in range(3)
    )


def _base_row(config: BenchConfig, method: str, n: int, input_bytes: int) -> dict:
    row = dict.fromkeys(ROW_FIELDS)
    tiled = method == "tiled"
    row.update(
        method=method,
        device=config.device,
        dtype=config.dtype,
        n=n,
        d=config.d,
        heads=config.heads,
        batch=config.batch,
        causal=method_is_causal(method, config.causal),
        mode=config.mode,
        block_q=tile_sizes(config, n)[0] if tiled else None,
        block_k=tile_sizes(config, n)[1] if tiled else None,
        repeats=config.repeats,
        input_bytes=input_bytes,
        theory_scores_bytes=config.batch * config.heads * n * n * DTYPES[config.dtype].itemsize,
    )
    return row


def _measure(row: dict, fn: Callable[[], object], config: BenchConfig, stop: Stop = _go_on) -> None:
    device = torch.device(config.device)
    row.update(_quantiles(_time_ms(fn, device, config.warmup, config.repeats, stop)))
    stop()
    if device.type == "cuda":
        row["peak_mem_bytes"], row["peak_mem_total_bytes"] = _cuda_peak_bytes(fn, device)
    else:
        row["peak_mem_bytes"] = _cpu_peak_bytes(fn, stop)
        row["peak_mem_total_bytes"] = row["peak_mem_bytes"] + row["input_bytes"]
    flops = attention_flops(config.batch, config.heads, row["n"], config.d, row["causal"], config.mode)
    row["tflops"] = flops / (row["time_ms_median"] * 1e-3) / 1e12
    row["status"] = "ok"


def _entry(
    config: BenchConfig,
    method: str,
    n: int,
    qkv: tuple[torch.Tensor, ...] | None,
    room: int | None = None,
    stop: Stop = _go_on,
) -> dict:
    """One measured row; qkv may be None only when this entry is over the budget or `room` (bytes)."""
    row = _base_row(config, method, n, _qkv_bytes(config, n))
    need, budget = estimated_bytes(method, config, n), config.memory_budget_mb * 2**20
    if need > budget:
        held = f"holds ~{_score_copies(method, config)} score copies, " if _score_copies(method, config) else ""
        row["status"] = (
            f"skipped: {method} {held}needs ~{need / 2**20:.0f} MiB with its inputs "
            f"> memory budget {config.memory_budget_mb:g} MiB"
        )
        return row
    if room is not None and need > room:
        row["status"] = f"{HEADROOM_STATUS} (needs ~{need / 2**20:.0f} MiB, ~{room / 2**20:.0f} MiB left)"
        return row
    try:
        fn, extra = _make_call(method, *qkv, config)
        row["input_bytes"] += extra
        with torch.no_grad():
            _measure(row, fn, config, stop)
    except _Skip as exc:
        row["status"] = f"skipped: {exc}"
    # out of memory (RuntimeError/MemoryError) or a kernel rejecting this shape or dtype (ValueError)
    except (RuntimeError, MemoryError, ValueError) as exc:
        row["status"] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if config.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return row


def _qkv_bytes(config: BenchConfig, n: int) -> int:
    return 3 * config.batch * config.heads * n * config.d * DTYPES[config.dtype].itemsize


def _out_of_time(config: BenchConfig, method: str, n: int, elapsed: float) -> dict:
    """The row of an entry not run because the time limit had passed."""
    row = _base_row(config, method, n, _qkv_bytes(config, n))
    row["status"] = f"{TIME_LIMIT_STATUS} of {config.time_limit_s:g} s passed ({elapsed:.1f} s spent on smaller n)"
    return row


def run_benchmark(
    config: BenchConfig,
    progress: Progress | None = None,
    *,
    host: Host | None = None,
    stop: Stop | None = None,
) -> list[dict]:
    """One row (keys ROW_FIELDS) per (n, method), in that order; never raises for one entry.

    progress(done, total, label) is called before each entry, label naming it, and once at the end
    with done == total: enough to drive a progress bar. With config.time_limit_s, the sizes after the
    first that would start once the limit has passed are skipped (status TIME_LIMIT_STATUS ...).
    host (default: the one `hosting` set, else one lending nothing): host.turn() is held for the whole run;
    host.room() is asked before each n's inputs are made: an entry that needs more (inputs included) is skipped
    (status HEADROOM_STATUS ...), so the budget bounds what one entry may take, the room what the process may;
    host.between_entries() follows each entry.
    stop() (default: the one `stopping` set, else none) is called before every call the run makes (and at every op
    of the memory-counting call): what it raises ends the run at once.
    """
    rows, total = [], len(config.ns) * len(config.methods)
    budget, stop = config.memory_budget_mb * 2**20, stop or _STOP.get()
    host = host or _HOST.get() or Host()
    with host.turn(), memory_budget(config.memory_budget_mb):  # the library's own guard agrees with the skips
        limit, start = config.time_limit_s, time.perf_counter()
        for i, n in enumerate(config.ns):
            elapsed = time.perf_counter() - start
            late = i > 0 and limit is not None and elapsed > limit
            at_n = config.at_length(n)
            room = None if late else host.room()
            allowed = budget if room is None else min(budget, room)
            fits = not late and any(estimated_bytes(m, at_n, n) <= allowed for m in config.methods)
            qkv = _inputs(at_n, n) if fits else None  # never made when no entry could use them
            for method in config.methods:
                if progress is not None:
                    progress(len(rows), total, f"{method} n={n}")
                rows.append(
                    _out_of_time(at_n, method, n, elapsed) if late else _entry(at_n, method, n, qkv, room, stop)
                )
                host.between_entries()
            del qkv  # free this n's inputs before the next, larger ones
            _compare_with_sdpa(rows[-len(config.methods) :])
    if progress is not None:
        progress(total, total, "done")
    return rows


# --- context and output -----------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def hardware_info(device: str = "cpu") -> dict:
    """Where the numbers come from: machine, versions and the name of `device`."""
    dev = torch.device(device)
    cuda = torch.cuda.get_device_name(dev if dev.type == "cuda" else 0) if torch.cuda.is_available() else None
    cpu = _cpu_model()
    return {
        "device": device,
        "device_name": cuda if dev.type == "cuda" else cpu,
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda_device_name": cuda,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _header(config: BenchConfig, command: str) -> dict:
    return {
        **hardware_info(config.device),
        "date": datetime.date.today().isoformat(),
        "command": command,
        "config": json.dumps(asdict(config)),
    }


def write_csv(path: str, rows: Sequence[dict], header: dict, fields: Sequence[str] = ROW_FIELDS) -> None:
    """Rows as CSV after `# key: value` lines; read with pandas.read_csv(path, comment="#")."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        for key, value in header.items():
            f.write(f"# {key}: {value}\n")
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_json(path: str, rows: Sequence[dict], header: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"header": header, "rows": list(rows)}, f, indent=1)


def _fmt(value, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def markdown_table(rows: Sequence[dict]) -> str:
    """The figures a reader compares: time, memory (measured and theoretical), TFLOP/s, status."""
    lines = [
        "| method | n | batch | causal | mode | median ms | p10 ms | p90 ms | peak MiB | scores MiB (theory) "
        "| TFLOP/s | x SDPA | status |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        mib = None if r["peak_mem_bytes"] is None else r["peak_mem_bytes"] / 2**20
        name = r["method"] if r["block_q"] is None else f"{r['method']} ({r['block_q']}x{r['block_k']})"
        lines.append(
            f"| {name} | {r['n']} | {r['batch']} | {r['causal']} | {r['mode']} | {_fmt(r['time_ms_median'], 1)} "
            f"| {_fmt(r['time_ms_p10'], 1)} | {_fmt(r['time_ms_p90'], 1)} | {_fmt(mib, 1)} "
            f"| {r['theory_scores_bytes'] / 2**20:.1f} | {_fmt(r['tflops'], 3)} | {_fmt(r['tflops_vs_sdpa'], 2)} "
            f"| {r['status']} |"
        )
    return "\n".join(lines)


# --- command line -----------------------------------------------------------------------------


def _stderr_progress(done: int, total: int, label: str) -> None:
    """A text bar on stderr; one line per step when stderr is not a terminal (logs, CI)."""
    width = 30
    bar = "#" * (width * done // total) + "." * (width - width * done // total)
    end = "\r" if sys.stderr.isatty() and done < total else "\n"
    print(f"[{bar}] {done}/{total} {label:<24}", end=end, file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m attn_core.bench", description=__doc__.splitlines()[0])
    dflt = BenchConfig()
    p.add_argument("--device", default=dflt.device, help="cpu, cuda or cuda:N")
    p.add_argument(
        "--n", type=int, nargs="+", help=f"sequence lengths (default {list(dflt.ns)}; --fa2: {list(FA2_NS)})"
    )
    p.add_argument("--d", type=int, default=dflt.d, help="head dimension")
    p.add_argument("--heads", type=int, default=dflt.heads)
    p.add_argument("--batch", type=int, default=dflt.batch)
    p.add_argument("--dtype", choices=sorted(DTYPES), default=dflt.dtype)
    p.add_argument("--causal", action="store_true", help="causal tiled/sdpa/triton")
    p.add_argument("--methods", nargs="+", choices=METHODS, help="default: all that run on the device")
    p.add_argument("--repeats", type=int, default=dflt.repeats, help="timed calls per entry")
    p.add_argument("--warmup", type=int, default=dflt.warmup, help="untimed calls before them")
    p.add_argument(
        "--memory-budget-mb",
        type=float,
        default=dflt.memory_budget_mb,
        help="skip naive entries whose score copies exceed this",
    )
    p.add_argument("--block-q", type=int, default=dflt.block_q, help="tiled query block (default: tiled's own)")
    p.add_argument("--block-k", type=int, default=dflt.block_k, help="tiled key block (default: tiled's own)")
    p.add_argument("--seed", type=int, default=dflt.seed)
    p.add_argument(
        "--time-limit-s", type=float, default=None, help="skip the remaining n once the run has taken this long"
    )
    p.add_argument("--mode", choices=MODES, default=dflt.mode, help="forward, or forward + gradients of q, k, v")
    p.add_argument("--tokens", type=int, help="batch = tokens // n at each n (instead of --batch)")
    p.add_argument(
        "--fa2",
        action="store_true",
        help=f"FlashAttention-2's convention: --tokens {FA2_TOKENS} and heads = {FA2_MODEL_DIM} // d",
    )
    p.add_argument("--csv", metavar="PATH", help="write the rows as CSV")
    p.add_argument("--json", metavar="PATH", help="write the rows and the header as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _sizes(args: argparse.Namespace) -> dict:
    """ns, heads, batch and tokens from the command line; --fa2 fixes tokens and heads * d."""
    ns = tuple(args.n) if args.n else (FA2_NS if args.fa2 else BenchConfig.ns)
    if not args.fa2:
        return dict(ns=ns, heads=args.heads, batch=args.batch, tokens=args.tokens)
    if args.d < 1 or FA2_MODEL_DIM % args.d:
        raise ValueError(f"--fa2 needs a head dim d that divides {FA2_MODEL_DIM}, got {args.d}")
    return dict(ns=ns, heads=FA2_MODEL_DIM // args.d, batch=1, tokens=FA2_TOKENS)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        sizes = _sizes(args)
        config = BenchConfig(
            device=args.device,
            **sizes,
            d=args.d,
            dtype=args.dtype,
            causal=args.causal,
            methods=args.methods,
            repeats=args.repeats,
            warmup=args.warmup,
            memory_budget_mb=args.memory_budget_mb,
            block_q=args.block_q,
            block_k=args.block_k,
            seed=args.seed,
            time_limit_s=args.time_limit_s,
            mode=args.mode,
        )
    except ValueError as exc:
        _parser().error(str(exc))
    rows = run_benchmark(config, None if args.no_progress else _stderr_progress)
    argv_list = sys.argv[1:] if argv is None else list(argv)
    header = _header(config, shlex.join(["python", "-m", "attn_core.bench", *argv_list]))
    if args.csv:
        write_csv(args.csv, rows, header)
    if args.json:
        write_json(args.json, rows, header)
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
