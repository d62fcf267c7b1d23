"""Everything to check on a CUDA GPU, in one budgeted command: `python -m tools.gpu_check`.

Steps (each writes <out>/gpu_check_<step>.json, and rewrites it after every job while it runs, so a
run killed at its time limit keeps what it measured; `report` turns whichever exist into
benchmarks/gpu_attention.{csv,md} with card, versions, date and command):
    candidates   every forward and backward tuning candidate (flash_triton._candidates) for each dtype
                 x head dim x causal, forced one at a time, compiled and checked in parallel worker
                 processes: forward + backward at an even and an odd length against the fp32
                 reference; ok, errors, first-call seconds (compile included), registers, spills and
                 shared memory of each kernel. Compiling here also fills Triton's on-disk cache, so
                 the later steps load these binaries (lengths that are multiples of 16 specialise alike)
    correctness  flash_attention as a user gets it (first candidates) against the fp32 reference,
                 forward and backward, fp16/bf16, odd lengths, head dims 16..128, causal or not, cross
                 attention (in the workers too); with deterministic=True also bit-identical gradients
                 from two runs
    bench        the FlashAttention-2 convention (batch * n = 16k tokens, heads * d = 2048) for each
                 mode x dtype x d x causal x n: every candidate that passed `candidates` (forward ones
                 in fwd mode; the first passing forward with each backward in fwd_bwd) and SDPA's
                 default dispatch, cuDNN and flash back-ends (one unavailable is recorded as such),
                 timed by triton.testing.do_bench (median); TFLOP/s, the ratio of our best candidate
                 to the best and to the default SDPA, and which candidate won
    overhead     host time of one flash_attention call (tuned) beside its bare kernel launches and
                 SDPA (with --stub, on any machine: the wrapper's own Python, every launch stubbed out)
    tune         (not in the default run) the autotune sweep at every benchmark length: what it chose
    report       the two files from the JSON of the steps that ran
    compile      compiles every candidate for sm_90 and sm_80 (tools.flash_compile; no GPU needed)

Every kernel runs in a worker process (tools/job_pool.py): a setting that aborts Triton's compiler
or loses the CUDA context becomes a failed entry with the tail of its worker's stderr, not a lost
run. Checks fill every output with NaN first (flash_triton._empty), so an element no kernel wrote
shows, and judge errors by FlashAttention's criterion: at most twice the error of PyTorch's own
attention (SDPA) in the same dtype against the fp32 reference, plus one rounding of the result.

`python -m tools.gpu_check` runs candidates, correctness, bench, overhead and report within
--budget-s (default 480: one 8-minute device call, start-up included). Each step has a deadline, a
share of the budget (time a step leaves over goes to the next), starts nothing after it and says
what it skipped. The last lines printed are a summary: per (mode, dtype, d, causal) at n >= 2048,
our best TFLOP/s, the best SDPA back-end's, their ratio and the target, with the failure counts.
The exit code is 1 when a correctness case or a candidate failed, or a step broke as a whole.
On a lent machine whose $OUT comes back (8 files at most), `--out "$OUT" --results "$OUT"` puts the
four JSON files and the report there; the workers' stderr goes to a temporary directory (--logs).
`--smoke` runs the same path on the CPU under Triton's interpreter with tiny shapes, writing into a
temporary directory (CI runs it: tests/test_gpu_check.py). The GPU tests
(tests/core/test_flash_gpu.py) run the correctness step.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import inspect
import json
import math
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import NamedTuple

import torch

REPO = Path(__file__).resolve().parents[1]
STEPS = ("candidates", "correctness", "tune", "bench", "overhead", "report")
DEFAULT_STEPS = ("candidates", "correctness", "bench", "overhead", "report")
# Shares of the budget: a step's deadline is the start plus the budget times the running sum of the
# shares of the steps chosen (normalised), so what one step leaves over goes to the next.
STEP_SHARES = {"candidates": 0.28, "correctness": 0.12, "tune": 0.3, "bench": 0.52, "overhead": 0.07, "report": 0.01}
END_MARGIN_S = 10.0  # of the budget, kept for the report and the summary
BENCH_GROUP_TIMEOUT_S = 60.0  # one (mode, dtype, d, causal, n) takes seconds: longer means a kernel hangs
DTYPES = ("float16", "bfloat16")
HEAD_DIMS = (64, 128)
MODES = ("fwd", "fwd_bwd")
BENCH_NS = (2048, 4096, 8192, 16384)
SDPA_BACKENDS = ("default", "cudnn", "flash")
TARGETS = {"fwd": 0.9, "fwd_bwd": 0.75}  # issue 17: ratio to SDPA in TFLOP/s at n >= 2048
AUTOTUNE_ENV = "ATTN_CORE_FLASH_AUTOTUNE"  # flash_triton's switch ("0": first candidate, nothing timed)
ABORT_ENV = "GPU_CHECK_ABORT_JOB"  # test hook: a worker calls os.abort() on the job whose id contains this
GROUP_KEYS = ("mode", "dtype", "d", "causal", "n")
BENCH_FIELDS = (*GROUP_KEYS, "batch", "heads", "method", "backend", "candidate", "status", "time_ms", "tflops")

# (n_q, n_k, d, causal): odd and even lengths, every head-dim class, cross attention both ways
CORRECTNESS_SHAPES = (
    (1, 1, 64, False),
    (1, 1, 64, True),
    (17, 17, 16, True),
    (63, 63, 24, False),
    (128, 128, 32, True),
    (129, 129, 48, True),
    (255, 255, 80, False),
    (256, 256, 64, True),
    (333, 1000, 96, True),
    (1000, 333, 128, True),
    (1000, 1000, 128, False),
    (1024, 1024, 64, True),
    (2048, 2048, 128, True),
    (4097, 4097, 64, True),
)
DETERMINISM_SHAPES = ((1000, 1000, 64, True), (1024, 1024, 128, False))
# --smoke: the interpreter runs one program at a time in NumPy, so every size is tiny
SMOKE = dict(
    device="cpu",
    dtypes=["float16"],
    head_dims=[16, 32],
    ns=[32],
    cand_ns=[32, 37],
    cand_batch=1,
    cand_heads=2,
    tokens=64,
    model_dim=32,
    summary_min_n=0,
    warmup_ms=0.0,
    rep_ms=1.0,
    calls=3,
    overhead_shapes=[(1, 1, 16, 16)],
    correctness_shapes=((1, 1, 16, False), (17, 17, 16, True), (37, 37, 32, False)),
    determinism_shapes=((37, 37, 32, True),),
)


def correctness_cases(shapes=CORRECTNESS_SHAPES, dtypes=DTYPES) -> list[dict]:
    """Every (dtype, shape) of the sweep; importable without triton or a GPU (the GPU tests use it)."""
    return [
        dict(dtype=dtype, n_q=n_q, n_k=n_k, d=d, causal=causal, batch=2, heads=3)
        for dtype in dtypes
        for n_q, n_k, d, causal in shapes
    ]


def case_id(case: dict) -> str:
    causal = "causal" if case["causal"] else "full"
    return f"{case['dtype']}-{case['n_q']}x{case['n_k']}-d{case['d']}-{causal}"


def candidate_label(prefix: str, index: int, candidate: dict) -> str:
    """A short, stable name: "f1:128/64/w4/s3/DESC" = the index, then every value (True flags by name)."""
    parts = []
    for key, value in candidate.items():
        if key in ("num_warps", "num_stages"):
            parts.append(f"{key[4]}{value}")
        elif value is True:
            parts.append(key)
        elif value is not False and value is not None:
            parts.append(str(value) if key.isupper() else f"{key}={value}")
    return f"{prefix}{index}:" + "/".join(parts)


# --- checking one case ------------------------------------------------------------------------


def _reference(q, k, v, causal):
    """fp32 attention, one (batch, head) slice at a time (the n_q x n_k logits of one slice only)."""
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril() if causal else None
    for i in range(q.shape[0]):
        logits = (q[i].float() @ k[i].float().transpose(-2, -1)) * q.shape[-1] ** -0.5
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        out[i] = torch.softmax(logits, dim=-1) @ v[i].float()
    return out


def _grads(fn, q, k, v, d_out):
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    out = fn(*leaves)
    return [out.detach(), *torch.autograd.grad(out, leaves, d_out)]


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def check_case(case: dict, device="cuda", seed=0, deterministic=False) -> dict:
    """Errors of flash_attention and of SDPA in case['dtype'] against fp32, for out, dq, dk, dv.

    flash_s: seconds of the flash call (the first in a process includes compiling its kernels).
    deterministic: pass deterministic=True and require bit-identical gradients from a second run.
    """
    import torch.nn.functional as F

    from attn_core.flash_triton import flash_attention

    result = dict(case, id=case_id(case) + ("-deterministic" if deterministic else ""), ok=True)
    flash_kw = {"causal": case["causal"]}
    if deterministic:
        if "deterministic" not in inspect.signature(flash_attention).parameters:
            return dict(result, status="skipped: flash_attention has no `deterministic` keyword")
        flash_kw["deterministic"] = True
    dtype = getattr(torch, case["dtype"])
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (case["batch"], case["heads"])
    q = torch.randn(*shape, case["n_q"], case["d"], generator=gen, device=device, dtype=dtype)
    k, v = (torch.randn(*shape, case["n_k"], case["d"], generator=gen, device=device, dtype=dtype) for _ in "kv")
    d_out = torch.randn(q.shape, generator=gen, device=device, dtype=dtype)
    causal = case["causal"]

    def ref(q, k, v):
        return _reference(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), causal).view(q.shape)

    def flash(q, k, v):
        return flash_attention(q, k, v, **flash_kw)

    start = time.perf_counter()
    got = _grads(flash, q, k, v, d_out)
    _sync(device)
    result["flash_s"] = round(time.perf_counter() - start, 3)
    torch_own = _grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), q, k, v, d_out)
    want = _grads(ref, *(x.float() for x in (q, k, v)), d_out.float())
    for name, x, t, w in zip(("out", "dq", "dk", "dv"), got, torch_own, want, strict=True):
        err, torch_err = (x.float() - w).abs().max().item(), (t.float() - w).abs().max().item()
        bound = 2 * torch_err + torch.finfo(dtype).eps * w.abs().max().item()
        ok = math.isfinite(err) and err <= bound and x.dtype == dtype
        result[name] = dict(err=err, sdpa_err=torch_err, bound=bound, ok=ok, nan=int(x.isnan().sum()))
    failed = [name for name in ("out", "dq", "dk", "dv") if not result[name]["ok"]]
    if deterministic:
        again = _grads(flash, q, k, v, d_out)
        result["repeatable"] = all(torch.equal(a, b) for a, b in zip(got[1:], again[1:], strict=True))
        failed += [] if result["repeatable"] else ["gradients differ between two runs"]
    result.update(ok=not failed, status="FAIL: " + ", ".join(failed) if failed else "ok")
    return result


class _forced:
    """Within the block, every new plan has these two settings as its only candidates."""

    def __init__(self, module, fwd: dict, bwd: dict):
        self.module, self.fwd, self.bwd = module, fwd, bwd

    def __enter__(self):
        self.saved_plans, self.saved = dict(self.module._PLANS), self.module._candidates
        self.module._PLANS.clear()
        self.module._candidates = lambda *a, **kw: ((self.fwd,), (self.bwd,))

    def __exit__(self, *exc):
        self.module._candidates = self.saved
        self.module._PLANS.clear()
        self.module._PLANS.update(self.saved_plans)


def _nan_empty(*size, dtype=None, device=None, **kwargs):
    """torch.empty's signature, filled with NaN: an element no kernel writes stays NaN."""
    size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    return torch.full(size, float("nan"), dtype=dtype, device=device)


@contextlib.contextmanager
def _nan_outputs(module):
    """flash_triton allocates out, dq, dk, dv through module._empty: NaN-filled within the block."""
    saved = getattr(module, "_empty", None)
    if saved is None:  # an older flash_triton: outputs stay torch.empty
        yield False
        return
    module._empty = _nan_empty
    try:
        yield True
    finally:
        module._empty = saved


class _Launch(NamedTuple):
    """One kernel launch as flash_triton made it, and what Triton returned (on a GPU, the compiled kernel)."""

    name: str
    kernel: object
    grid: object
    args: tuple
    kwargs: dict
    compiled: object

    def replay(self):
        return self.kernel[self.grid](*self.args, **self.kwargs)


class _Recorder:
    """Stands in for attn_core._flash_kernels: keeps every launch and forwards it (with the compiled
    kernel a Triton launch returns: registers, spills, shared memory), whatever kernels there are;
    with run=False it launches nothing (the wrapper's own Python alone)."""

    def __init__(self, real, run: bool = True):
        self.real, self.run, self.launches = real, run, []

    def __getattr__(self, name):
        kernel, launches, run = getattr(self.real, name), self.launches, self.run

        class _Kernel:
            def __getitem__(self, grid):
                def launch(*args, **kwargs):
                    compiled = kernel[grid](*args, **kwargs) if run else None
                    launches.append(_Launch(name, kernel, grid, args, kwargs, compiled))
                    return compiled

                return launch

        return _Kernel()


@contextlib.contextmanager
def _recording(module):
    """Every kernel launch of flash_triton (`module`) within the block, as a list of _Launch."""
    saved = module._kernels
    recorder = _Recorder(saved())
    module._kernels = lambda: recorder
    try:
        yield recorder.launches
    finally:
        module._kernels = saved


def _resources(launches) -> dict:
    """Per kernel name, the largest registers per thread, spilled registers and shared bytes seen."""
    found = {}
    for launch in launches:
        compiled = launch.compiled
        if hasattr(compiled, "result") and not hasattr(compiled, "metadata"):  # an asynchronous compile's future
            compiled = compiled.result()
        if compiled is None or not hasattr(compiled, "metadata"):  # the interpreter compiles nothing
            continue
        with contextlib.suppress(Exception):
            if getattr(compiled, "n_regs", None) is None:
                compiled._init_handles()  # triton sets n_regs, n_spills when it loads the binary
        metadata = compiled.metadata
        shared = metadata.get("shared") if isinstance(metadata, dict) else getattr(metadata, "shared", None)
        values = {
            "regs": getattr(compiled, "n_regs", None),
            "spills": getattr(compiled, "n_spills", None),
            "shared": shared,
        }
        entry = found.setdefault(launch.name, {})
        for key, value in values.items():
            if value is not None:
                entry[key] = max(entry.get(key, value), value)
    return found


# --- worker side: one job, one result ---------------------------------------------------------


def _job_candidate(job: dict) -> dict:
    """One forced (forward, backward) pair, checked at each of job['ns'] with NaN-filled outputs."""
    from attn_core import flash_triton

    checks = []
    with (
        _forced(flash_triton, job["fwd"], job["bwd"]),
        _nan_outputs(flash_triton) as nan,
        _recording(flash_triton) as launches,
    ):
        for n in job["ns"]:
            case = dict(
                dtype=job["dtype"],
                n_q=n,
                n_k=n,
                d=job["d"],
                causal=job["causal"],
                batch=job["batch"],
                heads=job["heads"],
            )
            checks.append(check_case(case, job["device"]))
        kernels = _resources(launches)
    ok = all(c["ok"] for c in checks)
    status = "ok" if ok else "; ".join(f"n={c['n_q']} {c['status']}" for c in checks if not c["ok"])
    return dict(
        ok=ok,
        status=status,
        checks=checks,
        kernels=kernels,
        nan_filled=nan,
        first_call_s=round(sum(c["flash_s"] for c in checks), 2),
    )


def _job_case(job: dict) -> dict:
    """One correctness case with flash_attention's own choice of settings, NaN-filled outputs."""
    from attn_core import flash_triton

    with _nan_outputs(flash_triton):
        return check_case(job["case"], job["device"], deterministic=job.get("deterministic", False))


def _timer(job: dict):
    """ms per call of fn: triton.testing.do_bench's median on CUDA, a plain median on the CPU (--smoke)."""
    warmup, rep = job["warmup_ms"], job["rep_ms"]
    if not job["device"].startswith("cuda"):
        return lambda fn: _plain_median_ms(fn, rep)
    from triton.testing import do_bench

    params = inspect.signature(do_bench).parameters
    extra = {"return_mode": "median"} if "return_mode" in params else {"quantiles": [0.5]}

    def time_ms(fn):
        ms = do_bench(fn, warmup=warmup, rep=rep, **extra)
        return float(ms[0] if isinstance(ms, (list, tuple)) else ms)

    return time_ms


def _plain_median_ms(fn, rep_ms: float) -> float:
    fn()  # compile or warm up, untimed
    times = []
    while len(times) < 3 or (sum(times) < rep_ms and len(times) < 100):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _attention_call(attn, q, k, v, d_out, mode: str):
    """A no-argument call: the forward alone (no autograd), or forward and the gradients of q, k, v."""
    if mode == "fwd":

        def forward():
            with torch.no_grad():
                return attn(q, k, v)

        return forward
    return lambda: torch.autograd.grad(attn(q, k, v), (q, k, v), d_out)


def _sdpa_backend(name: str):
    """A context that makes SDPA use back-end `name` ("default": PyTorch's own dispatch)."""
    if name == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[name])


def _bench_entry(entry: dict, job: dict, qkv, d_out, time_ms) -> dict:
    """One timed row; raises what the call raised."""
    import torch.nn.functional as F

    from attn_core import flash_triton
    from attn_core.bench import attention_flops

    causal, mode = job["causal"], job["mode"]
    if entry["method"] == "triton":
        context = _forced(flash_triton, entry["fwd"], entry["bwd"])
        fn = _attention_call(lambda q, k, v: flash_triton.flash_attention(q, k, v, causal=causal), *qkv, d_out, mode)
    else:
        context = _sdpa_backend(entry["backend"])
        fn = _attention_call(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), *qkv, d_out, mode
        )
    with context, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SDPA warns on every call a back-end refuses
        ms = time_ms(fn)
    flops = attention_flops(job["batch"], job["heads"], job["n"], job["d"], causal, mode)
    return {"status": "ok", "time_ms": ms, "tflops": flops / (ms * 1e-3) / 1e12}


def _job_bench(job: dict) -> dict:
    """Every entry of one (mode, dtype, d, causal, n): rows in BENCH_FIELDS; an entry that fails is a row
    with its error; after one that loses the CUDA context the rest are not run and the worker restarts."""
    dtype, device = getattr(torch, job["dtype"]), job["device"]
    gen = torch.Generator(device=device).manual_seed(0)
    shape = (job["batch"], job["heads"], job["n"], job["d"])
    q, k, v, d_out = (torch.randn(shape, generator=gen, device=device, dtype=dtype) for _ in range(4))
    qkv = tuple(x.requires_grad_(job["mode"] == "fwd_bwd") for x in (q, k, v))
    time_ms, rows, lost = _timer(job), [], None
    for entry in job["entries"]:
        row = {f: job.get(f) for f in BENCH_FIELDS} | {f: entry.get(f) for f in ("method", "backend", "candidate")}
        if lost:
            rows.append(row | {"status": f"not run: {lost}"})
            continue
        try:
            row |= _bench_entry(entry, job, qkv, d_out, time_ms)
        except Exception as exc:  # a back-end refusing this shape, a kernel failing: a finding, not a crash
            sdpa_refused = entry["method"] == "sdpa" and entry["backend"] != "default"
            row["status"] = ("unavailable: " if sdpa_refused else "error: ") + _first_line(exc)
            if _fatal(exc):
                lost = f"CUDA context lost at {entry.get('candidate') or entry['backend']}"
        rows.append(row)
    return {"ok": not lost, "status": lost or "ok", "rows": rows, "fatal": bool(lost)}


def _host_us_per_call(fn, calls: int, repeats: int = 5, clock=time.perf_counter) -> float:
    """Min over repeats of the mean host time of `calls` back-to-back calls (the GPU may lag behind).

    With kernels stubbed, clock=time.process_time: this process's CPU time, which a machine shared
    with other work disturbs less than the wall clock.
    """
    fn()
    best = math.inf
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = clock()
        for _ in range(calls):
            fn()
        best = min(best, (clock() - start) / calls * 1e6)
    return best


def _no_launch(*args, **kwargs):
    return None


class _StubKernel:
    def __getitem__(self, grid):
        return _no_launch


class _StubKernels:
    """Every kernel of _flash_kernels, launching nothing."""

    def __getattr__(self, name):
        return _StubKernel()


def _bare_launches(flash_triton, q, k, v):
    """The kernel launches of one forward, recorded and replayed as they were: Triton's own launch cost."""
    with _recording(flash_triton) as launches:
        flash_triton.flash_attention(q, k, v, causal=True)

    def replay():
        for launch in launches:
            launch.replay()

    return replay


def _overhead_row(flash_triton, shape, calls: int, stub: bool, device) -> dict:
    """Host microseconds per call of flash_attention (forward; forward + backward), SDPA and the bare launches."""
    import torch.nn.functional as F

    clock = time.process_time if stub else time.perf_counter
    q, k, v = (torch.randn(shape, device=device, dtype=torch.float16) for _ in range(3))
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    d_out = torch.ones_like(q)

    def fwd_bwd():
        out = flash_triton.flash_attention(qg, kg, vg, causal=True)
        return torch.autograd.grad(out, (qg, kg, vg), d_out)

    row = {
        "flash_fwd_us": _host_us_per_call(
            lambda: flash_triton.flash_attention(q, k, v, causal=True), calls, clock=clock
        ),
        "flash_fwd_bwd_us": _host_us_per_call(fwd_bwd, max(1, calls // 4), clock=clock),
    }
    if not stub:
        row["sdpa_fwd_us"] = _host_us_per_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), calls)
        row["bare_launch_us"] = _host_us_per_call(_bare_launches(flash_triton, q, k, v), calls)
        row["wrapper_us"] = row["flash_fwd_us"] - row["bare_launch_us"]
    return row


def _job_overhead(job: dict) -> dict:
    """Host microseconds per call at each of job['shapes'] (B, H, n, d), fp16, causal."""
    from attn_core import flash_triton

    os.environ[AUTOTUNE_ENV] = job["autotune"]  # what a user gets: tuned on a class's first call
    if job["stub"]:
        flash_triton._kernels = _StubKernels
    results = {"stubbed": job["stub"], "device": job["device"], "calls": job["calls"]}
    for b, h, n, d in job["shapes"]:
        results[f"B{b} H{h} n{n} d{d}"] = _overhead_row(
            flash_triton, (b, h, n, d), job["calls"], job["stub"], job["device"]
        )
    return dict(results, settings=flash_triton.launch_settings(), ok=True, status="ok")


def _job_tune(job: dict) -> dict:
    """Every (dtype, d, causal, n) of the benchmark once forward and backward, tuning on: what was chosen."""
    from attn_core.flash_triton import flash_attention, launch_settings

    os.environ[AUTOTUNE_ENV] = "1"
    start = time.perf_counter()
    for dtype in job["dtypes"]:
        for d in job["head_dims"]:
            for causal in (False, True):
                for n in job["ns"]:
                    shape = (max(1, job["tokens"] // n), job["model_dim"] // d, n, d)  # the benchmark's (B, H, n, d)
                    q, k, v = (
                        torch.randn(shape, device=job["device"], dtype=getattr(torch, dtype)).requires_grad_()
                        for _ in range(3)
                    )
                    flash_attention(q, k, v, causal=causal).sum().backward()
                    del q, k, v
    return dict(settings=launch_settings(), seconds=time.perf_counter() - start, ok=True, status="ok")


_JOBS = {
    "candidate": _job_candidate,
    "case": _job_case,
    "bench": _job_bench,
    "overhead": _job_overhead,
    "tune": _job_tune,
}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def _fatal(exc: BaseException) -> bool:
    """Whether the CUDA context is likely unusable after exc (every later call in the process would fail)."""
    text = str(exc)
    lost = (
        "illegal memory access",
        "unspecified launch failure",
        "device-side assert",
        "misaligned address",
        "illegal instruction",
        "CUDA error",
    )
    return any(s in text for s in lost) and "out of memory" not in text


def _run_job(job: dict) -> dict:
    """The worker's handler: the job's result, or a failed one with the traceback; never raises."""
    hook = os.environ.get(ABORT_ENV)
    if hook and hook in job["id"]:
        os.abort()  # the test of a worker that dies (tests/test_gpu_check.py)
    start = time.perf_counter()
    try:
        result = _JOBS[job["kind"]](job)
    except Exception as exc:
        traceback.print_exc()
        result = dict(
            ok=False, status="error: " + _first_line(exc), fatal=_fatal(exc), traceback=traceback.format_exc()[-3000:]
        )
    return dict(result, id=job["id"], seconds=round(time.perf_counter() - start, 2))


# --- main side: the steps ---------------------------------------------------------------------


def _age_s() -> float:
    """Seconds since this process started (Linux; else 0): the budget counts Python's and torch's start-up."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


class _Run:
    """What the steps of one invocation share: arguments, clock, deadlines and worker pools."""

    def __init__(self, args, steps):
        self.args, self.start = args, time.monotonic() - min(_age_s(), 30.0)  # 30: not a long-lived caller's age
        self.end = self.start + max(args.budget_s - END_MARGIN_S, 1.0)
        total, running, self.deadlines = sum(STEP_SHARES[s] for s in steps), 0.0, {}
        for step in steps:
            running += STEP_SHARES[step]
            self.deadlines[step] = self.start + (self.end - self.start) * running / total
        self.pools, self.seconds = {}, {"start-up": time.monotonic() - self.start}  # Python, torch: part of the budget

    def hard_end(self, step: str) -> float:
        """When a job still running for `step` is killed: a little past its deadline, never past the budget."""
        return min(self.deadlines[step] + 0.05 * self.args.budget_s, self.end)

    def pool(self, kind: str):
        """'wide': one worker per core (compiling and checking); 'single': one worker (timing)."""
        from tools.job_pool import Pool

        if kind not in self.pools:
            workers = self.args.workers if kind == "wide" else 1
            command = [sys.executable, "-m", "tools.gpu_check", "--worker"]
            if self.args.logs is None:  # not in --out: a lent machine's $OUT brings back 8 files at most
                self.args.logs = Path(tempfile.mkdtemp(prefix="gpu_check_logs_"))
            self.pools[kind] = Pool(command, workers, _worker_env(self.args), self.args.logs / kind, cwd=REPO)
        return self.pools[kind]

    def map(self, kind: str, step: str, jobs: list[dict], on_result=None, timeout: float | None = None) -> list[dict]:
        """The jobs' results from pool `kind`, within `step`'s deadline, each within `timeout` s (--job-timeout-s)."""
        timeout = min(timeout or math.inf, self.args.job_timeout_s)
        return self.pool(kind).map(jobs, self.deadlines[step], self.hard_end(step), timeout, on_result)

    def close(self, kind: str | None = None) -> None:
        for name in [kind] if kind else list(self.pools):
            if name in self.pools:
                self.pools.pop(name).close()


def _worker_env(args) -> dict:
    """The workers' environment: the repository importable, Triton's mode chosen before it is imported."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault(AUTOTUNE_ENV, "0")  # correctness: the first candidates (the candidates step checks the others)
    env.setdefault("OMP_NUM_THREADS", "1")  # 16 workers' CPU thread pools would oversubscribe the cores
    if args.smoke or args.stub:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def _d_pad(d: int) -> int:
    return max(16, 1 << (d - 1).bit_length())


def _causal_name(causal: bool) -> str:
    return "causal" if causal else "full"


def _candidate_lists(args) -> dict:
    """{(dtype, d): (forward candidates, backward candidates)}, as flash_triton proposes them."""
    from attn_core import flash_triton

    return {
        (dtype, d): flash_triton._candidates(_d_pad(d), getattr(torch, dtype), args.smoke)
        for dtype in args.dtypes
        for d in args.head_dims
    }


def _candidate_jobs(args) -> list[dict]:
    """Per (dtype, d, causal): f_i with b0 for each forward candidate, f0 with b_j for each other backward.
    Every base job (f0 with b0) first, so each configuration's common kernels compile early, then by index
    across configurations: a deadline skips the last guesses of every configuration, not whole ones."""
    base_jobs, other_jobs = [], []
    for (dtype, d), (fwd, bwd) in _candidate_lists(args).items():
        for causal in (False, True):
            common = dict(
                kind="candidate",
                dtype=dtype,
                d=d,
                causal=causal,
                ns=args.cand_ns,
                batch=args.cand_batch,
                heads=args.cand_heads,
                device=args.device,
            )
            pairs = [("fwd", i, fwd[i], bwd[0], 0) for i in range(len(fwd))]
            pairs += [("bwd", j, fwd[0], bwd[j], j) for j in range(1, len(bwd))]
            for which, i, f, b, j in pairs:
                tests = ("fwd", "bwd") if (which, i) == ("fwd", 0) else (which,)
                job = dict(
                    common,
                    id=f"{dtype}-d{d}-{_causal_name(causal)}-{which[0]}{i}",
                    tests=tests,
                    fwd=f,
                    bwd=b,
                    fwd_label=candidate_label("f", 0 if which == "bwd" else i, f),
                    bwd_label=candidate_label("b", j, b),
                )
                (base_jobs if len(tests) == 2 else other_jobs).append((i, which, job))
    return [job for _, _, job in base_jobs + sorted(other_jobs, key=lambda t: t[:2])]


def _progress(step: str, job: dict, result: dict) -> None:
    mark = "ok  " if result.get("ok") else ("skip" if result.get("ok") is None else "FAIL")
    detail = "" if result.get("ok") else f": {str(result.get('status'))[:160]}"
    print(f"{mark} {step} {job['id']} ({result.get('wall_s', 0):.0f} s){detail}", flush=True)


def _run_saving(args, run: _Run, step: str, jobs: list[dict], summarise) -> dict:
    """Run `step`'s jobs on the wide pool; after each, print a line and save summarise(finished pairs) as
    the step's JSON (marked partial), so a run killed mid-step keeps what its workers finished."""
    finished = []

    def on_result(job, result):
        finished.append((job, result))
        _progress(step, job, result)
        _save(args.out, step, dict(summarise(finished), partial=True))

    results = run.map("wide", step, jobs, on_result)
    return summarise(list(zip(jobs, results, strict=True)))


def _candidates_result(args, pairs) -> dict:
    keep = ("dtype", "d", "causal", "tests", "fwd", "bwd", "fwd_label", "bwd_label")
    merged = [dict(r, **{k: job[k] for k in keep}) for job, r in pairs]
    failures, skipped = sum(r["ok"] is False for r in merged), sum(r["ok"] is None for r in merged)
    return dict(jobs=merged, failures=failures, skipped=skipped, workers=args.workers, ns=args.cand_ns)


def step_candidates(args, run: _Run) -> dict:
    jobs = _candidate_jobs(args)
    print(f"candidates: {len(jobs)} jobs on {args.workers} workers", flush=True)
    return _run_saving(args, run, "candidates", jobs, lambda pairs: _candidates_result(args, pairs))


def _passed(found) -> dict | None:
    """{(dtype, d, causal): {"fwd": labels, "bwd": labels}} of the candidates that passed; None if not run."""
    if not found or "jobs" not in found:
        return None
    passed = collections.defaultdict(lambda: {"fwd": set(), "bwd": set()})
    for job in found["jobs"]:
        if job["ok"]:
            for which in job["tests"]:
                passed[(job["dtype"], job["d"], job["causal"])][which].add(job[f"{which}_label"])
    return passed


def _correctness_result(pairs) -> dict:
    results = [r for _, r in pairs]
    return dict(
        cases=[r for r in results if not r["id"].endswith("-deterministic")],
        determinism=[r for r in results if r["id"].endswith("-deterministic")],
        failures=sum(r["ok"] is False for r in results),
        skipped=sum(r["ok"] is None for r in results),
    )


def step_correctness(args, run: _Run) -> dict:
    cases = [
        dict(kind="case", id=case_id(c), case=c, device=args.device)
        for c in correctness_cases(args.correctness_shapes, args.dtypes)
    ]
    cases += [
        dict(kind="case", id=case_id(c) + "-deterministic", case=c, device=args.device, deterministic=True)
        for c in correctness_cases(args.determinism_shapes, args.dtypes)
    ]
    return _run_saving(args, run, "correctness", cases, _correctness_result)


def _bench_jobs(args, passed) -> list[dict]:
    """One job per (mode, dtype, d, causal, n), each with its entries: candidates that passed, SDPA back-ends."""
    jobs = []
    lists = _candidate_lists(args)
    for mode in MODES:
        for dtype in args.dtypes:
            for d in args.head_dims:
                fwd, bwd = lists[(dtype, d)]
                for causal in (False, True):
                    ok = None if passed is None else passed[(dtype, d, causal)]
                    fwds = [(candidate_label("f", i, c), c) for i, c in enumerate(fwd)]
                    fwds = [(label, c) for label, c in fwds if ok is None or label in ok["fwd"]]
                    bwds = [(candidate_label("b", j, c), c) for j, c in enumerate(bwd)]
                    bwds = [(label, c) for label, c in bwds if ok is None or label in ok["bwd"]]
                    if mode == "fwd":
                        ours = [dict(method="triton", candidate=label, fwd=c, bwd=bwd[0]) for label, c in fwds]
                    else:  # the first forward that passed, with each backward that passed
                        ours = [dict(method="triton", candidate=label, fwd=fwds[0][1], bwd=c) for label, c in bwds]
                        ours = ours if fwds else []
                    entries = ours + [dict(method="sdpa", backend=b) for b in SDPA_BACKENDS]
                    for n in args.ns:
                        jobs.append(
                            dict(
                                kind="bench",
                                id=f"{mode}-{dtype}-d{d}-{_causal_name(causal)}-n{n}",
                                mode=mode,
                                dtype=dtype,
                                d=d,
                                causal=causal,
                                n=n,
                                device=args.device,
                                batch=max(1, args.tokens // n),
                                heads=max(1, args.model_dim // d),
                                entries=entries,
                            )
                        )
    return jobs


def _fit_timing(args, jobs, seconds: float) -> tuple[float, float]:
    """(warmup_ms, rep_ms) for do_bench, shrunk so that every entry fits in `seconds` if it can."""
    entries = sum(len(j["entries"]) for j in jobs)
    per_entry = (args.warmup_ms + args.rep_ms) * 1.3e-3 + 0.1  # do_bench's 6 extra calls, Python, a cache load
    available = seconds - 10.0 - 0.2 * len(jobs)  # the worker's start, each group's inputs
    scale = min(1.0, max(0.0, available) / max(entries * per_entry, 1e-9))
    return max(5.0, args.warmup_ms * scale), max(20.0, args.rep_ms * scale)


def step_bench(args, run: _Run) -> dict:
    passed = _passed(_load(args.out, "candidates"))
    if passed is None:
        print("bench: no candidates step found: every candidate is timed, unchecked", flush=True)
    jobs = _bench_jobs(args, passed)
    warmup, rep = args.warmup_ms, args.rep_ms
    if args.device.startswith("cuda"):
        warmup, rep = _fit_timing(args, jobs, run.deadlines["bench"] - time.monotonic())
    for job in jobs:
        job.update(warmup_ms=warmup, rep_ms=rep)
    result = dict(
        rows=[],
        failed_groups=[],
        warmup_ms=warmup,
        rep_ms=rep,
        summary_min_n=args.summary_min_n,
        tokens=args.tokens,
        model_dim=args.model_dim,
        timer="triton.testing.do_bench median" if args.device.startswith("cuda") else "perf_counter median",
        candidates_checked=passed is not None,
    )
    print(
        f"bench: {len(jobs)} groups, {sum(len(j['entries']) for j in jobs)} entries, do_bench warmup {warmup:.0f} "
        f"ms, rep {rep:.0f} ms",
        flush=True,
    )

    def done(job, r):
        result["rows"] += r.get("rows") or []
        if not r.get("ok"):
            result["failed_groups"].append({"id": job["id"], "status": r.get("status"), "tail": r.get("stderr_tail")})
        _save(args.out, "bench", result)  # a kill at the time limit keeps every group measured so far
        print(_bench_progress(job, r), flush=True)

    results = run.map("single", "bench", jobs, done, timeout=BENCH_GROUP_TIMEOUT_S)
    result["skipped"] = [r["id"] for r in results if r.get("ok") is None]
    result["groups"] = bench_groups(result["rows"])
    return result


def _bench_progress(job, r) -> str:
    if not r.get("rows"):
        return f"FAIL bench {job['id']}: {r.get('status')}"
    g = bench_groups(r["rows"])[0]
    return (
        f"bench {job['id']}: {g['winner'] or '-'} {_tf(g['tflops'])} TF/s, SDPA {g['best_sdpa'] or '-'} "
        f"{_tf(g['best_sdpa_tflops'])} -> x{_num(g['x_best_sdpa'], 2)}"
    )


def step_overhead(args, run: _Run) -> dict:
    """Host microseconds per call at the issue's shape (B=4, H=16, n=512, d=64, fp16) and a tiny one."""
    job = dict(
        kind="overhead",
        id="overhead",
        stub=args.stub,
        device="cpu" if args.stub else args.device,
        calls=args.calls,
        shapes=args.overhead_shapes,
        autotune=os.environ.get(AUTOTUNE_ENV, "1"),
    )
    (result,) = run.map("single", "overhead", [job])
    for label, row in result.items():
        if isinstance(row, dict):
            print(label, {k: round(v, 1) for k, v in row.items()}, flush=True)
    return result


def step_tune(args, run: _Run) -> dict:
    job = dict(
        kind="tune",
        id="tune",
        device=args.device,
        dtypes=args.dtypes,
        head_dims=args.head_dims,
        ns=args.ns,
        tokens=args.tokens,
        model_dim=args.model_dim,
    )
    (result,) = run.map("single", "tune", [job])
    return result


# --- report -------------------------------------------------------------------------------------


def bench_groups(rows: list[dict]) -> list[dict]:
    """Per (mode, dtype, d, causal, n): our best candidate (the winner), each SDPA back-end, the ratios."""
    keyed = {}
    for r in rows:
        keyed.setdefault(tuple(r[f] for f in GROUP_KEYS), []).append(r)
    groups = []
    for key, group in keyed.items():
        ok = [r for r in group if r["status"] == "ok"]
        ours = {r["candidate"]: r["tflops"] for r in ok if r["method"] == "triton"}
        sdpa = {r["backend"]: r["tflops"] for r in ok if r["method"] == "sdpa"}
        winner = max(ours, key=ours.get, default=None)
        best_sdpa = max(sdpa, key=sdpa.get, default=None)
        tflops, sdpa_best = ours.get(winner), sdpa.get(best_sdpa)
        groups.append(
            dict(
                zip(GROUP_KEYS, key, strict=True),
                winner=winner,
                tflops=tflops,
                candidates=ours,
                sdpa=sdpa,
                best_sdpa=best_sdpa,
                best_sdpa_tflops=sdpa_best,
                x_best_sdpa=_ratio(tflops, sdpa_best),
                x_default_sdpa=_ratio(tflops, sdpa.get("default")),
            )
        )
    return groups


def _ratio(a, b):
    return a / b if a and b else None


def summary_lines(found: dict, seconds: dict | None = None) -> list[str]:
    """The compact table printed last: per (mode, dtype, d, causal), at the n >= min_n where our best
    candidate does worst against the best SDPA back-end; then the failure counts."""
    bench = found.get("bench") or {}
    tail = ["", *_counts(found, bench), *([_times(seconds)] if seconds else [])]
    if not bench.get("rows"):
        return ["## Summary", "", "bench: no rows (not run, or nothing measured)", *tail]
    min_n = bench.get("summary_min_n", 2048)
    lines = [
        f"## Summary (each row: the n >= {min_n} where our best candidate does worst against the best SDPA)",
        "",
        "| mode | dtype | d | causal | n | ours TF/s | best SDPA TF/s | x best | x default | target | met "
        "| winner (n won / n) |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    keyed = {}
    for g in bench_groups(bench.get("rows", [])):
        if g["n"] >= min_n:
            keyed.setdefault(tuple(g[f] for f in GROUP_KEYS[:-1]), []).append(g)
    for (mode, dtype, d, causal), groups in keyed.items():
        rated = [g for g in groups if g["x_best_sdpa"] is not None]
        worst = min(rated, key=lambda g: g["x_best_sdpa"]) if rated else groups[0]
        wins = collections.Counter(g["winner"] for g in groups if g["winner"])
        winner = f"{wins.most_common(1)[0][0]} ({wins.most_common(1)[0][1]}/{len(groups)})" if wins else "none ran"
        ratio, target = worst["x_best_sdpa"], TARGETS[mode]
        met = "" if ratio is None else ("yes" if ratio >= target else "NO")
        sdpa = f"{_tf(worst['best_sdpa_tflops'])} {worst['best_sdpa'] or ''}".strip()
        lines.append(
            f"| {mode} | {dtype} | {d} | {causal} | {worst['n']} | {_tf(worst['tflops'])} | {sdpa} "
            f"| {_num(ratio, 2)} | {_num(worst['x_default_sdpa'], 2)} | {target} | {met} | {winner} |"
        )
    lines += ["", "Candidates by mean TFLOP/s as a fraction of each (causal, n)'s fastest (a default order):"]
    for (mode, dtype, d), ranked in candidate_ranking([g for gs in keyed.values() for g in gs]).items():
        lines.append(f"- {mode} {dtype} d{d}: " + ", ".join(f"{c.split(':')[0]} {f:.2f}" for c, f in ranked))
    return lines + tail


def candidate_ranking(groups: list[dict]) -> dict:
    """{(mode, dtype, d): [(candidate, mean over the groups of its TFLOP/s / the group's best)], best first}.
    A candidate missing from a group (failed there) counts 0 in it."""
    fractions = {}
    for g in groups:
        if g["tflops"]:
            key = (g["mode"], g["dtype"], g["d"])
            for candidate, tflops in g["candidates"].items():
                fractions.setdefault(key, {}).setdefault(candidate, []).append(tflops / g["tflops"])
    ranking = {}
    for key, by_candidate in fractions.items():
        n_groups = sum(1 for g in groups if g["tflops"] and (g["mode"], g["dtype"], g["d"]) == key)
        means = {c: sum(f) / n_groups for c, f in by_candidate.items()}
        ranking[key] = sorted(means.items(), key=lambda cf: -cf[1])
    return ranking


def _counts(found: dict, bench: dict) -> list[str]:
    lines = [
        f"{step}: {found[step]['status']}"
        for step in ("candidates", "correctness", "bench")
        if (found.get(step) or {}).get("ok") is False
    ]  # a step that broke as a whole
    if (found.get("candidates") or {}).get("jobs") is not None:
        c = found["candidates"]
        bad = [f"{j['id']} ({str(j['status'])[:80]})" for j in c["jobs"] if j["ok"] is False]
        lines.append(
            f"candidates: {len(c['jobs']) - c['failures'] - c['skipped']} ok, {c['failures']} failed, "
            f"{c['skipped']} skipped" + (": " + "; ".join(bad[:8]) if bad else "")
        )
    if (found.get("correctness") or {}).get("cases") is not None:
        c = found["correctness"]
        total = len(c["cases"]) + len(c.get("determinism", []))
        lines.append(
            f"correctness: {total - c['failures'] - c.get('skipped', 0)}/{total} ok, {c['failures']} failed, "
            f"{c.get('skipped', 0)} skipped"
        )
    if bench.get("rows") is not None:
        errors = sum(r["status"].startswith("error") for r in bench["rows"])
        lines.append(
            f"bench: {len(bench['rows'])} entries, {errors} errors, {len(bench.get('skipped', []))} groups "
            f"skipped for time, {len(bench['failed_groups'])} groups failed"
        )
    return lines


def _times(seconds: dict) -> str:
    return (
        "steps: " + ", ".join(f"{s} {t:.0f} s" for s, t in seconds.items()) + f"; total {sum(seconds.values()):.0f} s"
    )


def _versions() -> dict:
    from attn_core.bench import hardware_info

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    cuda = torch.cuda.is_available()
    return {
        "device_name": torch.cuda.get_device_name(0) if cuda else hardware_info("cpu")["cpu_model"],
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))) if cuda else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton_version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "date": datetime.date.today().isoformat(),
    }


def step_report(args, run: _Run | None = None) -> dict:
    from attn_core.bench import write_csv

    found = {s: _load(args.out, s) for s in ("candidates", "correctness", "tune", "bench", "overhead")}
    header = {**_versions(), "command": args.command, "steps": ",".join(s for s, v in found.items() if v)}
    args.results.mkdir(parents=True, exist_ok=True)
    if (found["bench"] or {}).get("rows"):
        write_csv(str(args.results / "gpu_attention.csv"), found["bench"]["rows"], header, fields=BENCH_FIELDS)
    lines = [f"# Attention kernels on {header['device_name']}", ""]
    lines += [f"- {k}: {v}" for k, v in header.items() if k != "device_name"]
    lines += ["", *summary_lines(found), "", *_report_candidates(found["candidates"])]
    lines += ["", *_report_correctness(found["correctness"]), "", *_report_bench(found["bench"])]
    lines += ["", *_report_tune(found["tune"]), "", *_report_overhead(found["overhead"])]
    (args.results / "gpu_attention.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.results / 'gpu_attention.md'}" + (" and .csv" if (found["bench"] or {}).get("rows") else ""))
    return header


def _worst(check: dict) -> str:
    """out, dq, dk, dv errors as fractions of their bounds (> 1: failed)."""
    return " ".join(
        f"{check[g]['err'] / check[g]['bound']:.2f}" if g in check and check[g]["bound"] else "-"
        for g in ("out", "dq", "dk", "dv")
    )


def _missing(title: str, found, key: str) -> list[str] | None:
    """The section's text when its step did not run or broke as a whole (no `key` in its JSON), else None."""
    if found and key in found:
        return None
    return [f"## {title}", "", found.get("status", "broke") if found else "not run"]


def _report_candidates(found) -> list[str]:
    if missing := _missing("Candidates", found, "jobs"):
        return missing
    lines = [
        f"## Candidates (each forced alone, NaN-filled outputs, checked at n = {', '.join(map(str, found['ns']))})",
        "",
        "Errors as fractions of FlashAttention's bound (out dq dk dv, one group per length); first call: "
        "seconds of the flash calls, compiling included; kernels: registers / spilled registers / shared KiB.",
        "",
        "| job | checks | forward | backward | ok | errors / bound | first call s | kernels | status |",
        "|---|---|---|---|---|---|---:|---|---|",
    ]
    for j in found["jobs"]:
        errors = "; ".join(_worst(c) for c in j.get("checks", []))
        kernels = ", ".join(
            f"{name} {k.get('regs', '-')}/{k.get('spills', '-')}/{k.get('shared', 0) / 1024:.0f}"
            for name, k in (j.get("kernels") or {}).items()
        )
        ok = {True: "yes", False: "NO", None: "skipped"}[j["ok"]]
        status = str(j.get("status", "")).replace("|", "/").replace("\n", " ")[:200]
        lines.append(
            f"| {j['id']} | {'+'.join(j['tests'])} | {j['fwd_label']} | {j['bwd_label']} | {ok} | {errors} "
            f"| {_num(j.get('first_call_s'))} | {kernels} | {status} |"
        )
    return lines


def _report_correctness(found) -> list[str]:
    if missing := _missing("Correctness", found, "cases"):
        return missing
    cases = found["cases"] + found.get("determinism", [])
    lines = [
        "## Correctness",
        "",
        f"{found['failures']} failures over {len(cases)} cases (error <= 2 x SDPA's + eps * "
        "max|ref|; outputs NaN-filled first; -deterministic: deterministic=True, gradients bit-identical twice).",
        "",
        "| case | out err / SDPA err | dq | dk | dv | NaN | ok |",
        "|---|---|---|---|---|---:|---|",
    ]
    for r in cases:
        if "out" not in r:
            lines.append(f"| {r['id']} | | | | | | {r.get('status')} |")
            continue
        cells = [f"{r[g]['err']:.2e} / {r[g]['sdpa_err']:.2e}" for g in ("out", "dq", "dk", "dv")]
        nan = sum(r[g].get("nan", 0) for g in ("out", "dq", "dk", "dv"))
        ok = "yes" if r["ok"] else "NO" + ("" if r.get("repeatable", True) else " (not repeatable)")
        lines.append(f"| {r['id']} | {' | '.join(cells)} | {nan} | {ok} |")
    return lines


def _report_bench(found) -> list[str]:
    if missing := _missing("Throughput", found, "rows"):
        return missing
    lines = [
        f"## Throughput (FlashAttention-2 convention: batch * n = {found.get('tokens', 16384)}, heads * d = "
        f"{found.get('model_dim', 2048)})",
        "",
        f"Timer: {found['timer']} (warmup {found['warmup_ms']:.0f} ms, rep {found['rep_ms']:.0f} ms). Ours: the "
        "fastest candidate (fwd_bwd: the first passing forward with each backward); every candidate's TFLOP/s "
        "in the last column and in the CSV.",
        "",
        "| mode | dtype | d | causal | n | winner | TF/s | SDPA default | cuDNN | flash | x best SDPA | x default "
        "| target | all candidates |",
        "|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    groups = found.get("groups") or bench_groups(found["rows"])
    for g in groups:
        ratio, target = g["x_best_sdpa"], TARGETS[g["mode"]]
        verdict = "" if ratio is None else ("met" if ratio >= target else f"missed (< {target})")
        sdpa = " | ".join(_tf(g["sdpa"].get(b)) for b in SDPA_BACKENDS)
        every = ", ".join(f"{c.split(':')[0]} {_tf(t)}" for c, t in g["candidates"].items())
        lines.append(
            f"| {g['mode']} | {g['dtype']} | {g['d']} | {g['causal']} | {g['n']} | {g['winner'] or ''} "
            f"| {_tf(g['tflops'])} | {sdpa} | {_num(ratio, 2)} | {_num(g['x_default_sdpa'], 2)} "
            f"| {verdict} | {every} |"
        )
    lines += ["", "Candidates by mean TFLOP/s as a fraction of each group's fastest (0 where one failed):"]
    for (mode, dtype, d), ranked in candidate_ranking(groups).items():
        lines.append(f"- {mode} {dtype} d{d}: " + ", ".join(f"{c} {f:.2f}" for c, f in ranked))
    for failed in found["failed_groups"]:
        lines.append(f"- {failed['id']}: {failed['status']}")
    if found.get("skipped"):
        lines.append(f"- not run (time budget): {', '.join(found['skipped'])}")
    return lines


def _report_tune(found) -> list[str]:
    if missing := _missing("Tuned launch settings", found, "settings"):
        return missing
    lines = [
        "## Tuned launch settings",
        "",
        f"Autotune sweep: {found['seconds']:.0f} s.",
        "",
        "| kernel | dtype | d | causal | n_q class | settings |",
        "|---|---|---:|---|---:|---|",
    ]
    for s in found["settings"]:
        tiles = {k: v for k, v in s.items() if k.isupper() or k.startswith("num_")}
        lines.append(f"| {s['kernel']} | {s['dtype']} | {s['d']} | {s['causal']} | {s['n_q_class']} | {tiles} |")
    return lines


def _report_overhead(found) -> list[str]:
    if not found:
        return ["## Wrapper overhead", "", "not run"]
    lines = ["## Wrapper overhead (host microseconds per call, min of 5 means)", ""]
    for label, row in found.items():
        if isinstance(row, dict):
            lines.append(f"- {label}: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()))
    if not found.get("ok", True):
        lines.append(f"- failed: {found.get('status')}")
    return lines


def _num(x, digits=1) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _tf(x) -> str:
    """TFLOP/s: one decimal on a GPU, two significant digits for the interpreter's tiny figures."""
    return "" if x is None else (f"{x:.1f}" if x >= 1 else f"{x:.2g}")


def _load(out: Path, step: str):
    path = out / f"gpu_check_{step}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _save(out: Path, step: str, result: dict) -> None:
    """Write then rename: a kill mid-write leaves the previous file, never half of one."""
    path = out / f"gpu_check_{step}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str))
    tmp.replace(path)


# --- command line -------------------------------------------------------------------------------


def _cores() -> int:
    """The cores this process may use (a container may see more than it gets)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.gpu_check", description=__doc__.splitlines()[0])
    p.add_argument("steps", nargs="*", help=f"any of {', '.join(STEPS)}, compile (default: {' '.join(DEFAULT_STEPS)})")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    p.add_argument("--head-dims", type=int, nargs="+", default=list(HEAD_DIMS), help="candidates, bench, tune")
    p.add_argument("--ns", type=int, nargs="+", default=list(BENCH_NS), help="bench and tune lengths")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warmup (shrunk to fit the budget)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench timed repetitions (shrunk to fit the budget)")
    p.add_argument("--calls", type=int, default=500, help="calls per overhead measurement")
    p.add_argument("--workers", type=int, default=min(_cores(), 16), help="parallel compile/check workers")
    p.add_argument("--job-timeout-s", type=float, default=180.0, help="a worker running one job longer is killed")
    p.add_argument("--quick", action="store_true", help="accepted for old command lines (candidates is its own step)")
    p.add_argument("--stub", action="store_true", help="overhead: stub every kernel launch (runs on CPU)")
    p.add_argument("--smoke", action="store_true", help="the same steps on the CPU, Triton's interpreter, tiny shapes")
    p.add_argument("--budget-s", type=float, default=480.0, help="the whole run, start-up included; steps share it")
    p.add_argument("--out", type=Path, help="JSON of each step (default benchmarks/gpu_check; --smoke: a temp dir)")
    p.add_argument("--results", type=Path, help="where report writes its files (default benchmarks; --smoke: --out)")
    p.add_argument("--logs", type=Path, help="the workers' stderr (default: a temporary directory)")
    p.add_argument("--json", type=Path, help="correctness: also write its result here (the GPU tests read it)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # a worker process (tools/job_pool.py)
    return p


def _settle(args) -> None:
    """Fill in what depends on --smoke: tiny shapes on the CPU, a temporary directory."""
    defaults = dict(
        tokens=16384,
        model_dim=2048,
        cand_ns=[1024, 1000],
        cand_batch=2,
        cand_heads=3,
        summary_min_n=2048,
        overhead_shapes=[(4, 16, 512, 64), (1, 1, 128, 64)],
        correctness_shapes=CORRECTNESS_SHAPES,
        determinism_shapes=DETERMINISM_SHAPES,
    )
    for key, value in defaults.items():
        setattr(args, key, value)
    if args.smoke:
        chosen = {a.dest for a in _parser()._actions if getattr(args, a.dest, None) != a.default}
        for key, value in SMOKE.items():
            if key not in chosen:  # what the command line says wins
                setattr(args, key, value)
        args.workers = min(args.workers, 2)
        os.environ["TRITON_INTERPRET"] = "1"  # before this process imports triton (the report asks its version)
    default_out = Path(tempfile.mkdtemp(prefix="gpu_check_smoke_")) if args.smoke else REPO / "benchmarks" / "gpu_check"
    args.out = args.out or default_out
    args.results = args.results or (args.out if args.smoke else REPO / "benchmarks")


def _run_steps(args, steps) -> tuple[dict, dict]:
    """Each step in order within its deadline; its JSON written when it ends. (results, seconds per step)."""
    run, results = _Run(args, steps), {}
    try:
        for step in steps:
            if step != "report" and time.monotonic() > run.deadlines[step]:
                print(f"skipped {step}: past its deadline within --budget-s {args.budget_s:g}", flush=True)
                continue
            if step == "bench":
                run.close("wide")  # the compile workers' GPU memory and cores, back before timing
            start = time.monotonic()
            print(f"== {step} (deadline in {run.deadlines[step] - start:.0f} s)", flush=True)
            try:
                results[step] = globals()[f"step_{step}"](args, run)
            except Exception as exc:  # a step that breaks (e.g. flash_triton mid-edit) must not lose the others
                traceback.print_exc()
                results[step] = {"ok": False, "status": "error: " + _first_line(exc)}
            run.seconds[step] = time.monotonic() - start
            print(f"== {step}: {run.seconds[step]:.0f} s", flush=True)
            if step != "report" and not (step == "overhead" and args.stub):
                _save(args.out, step, results[step])
    finally:
        run.close()
    return results, run.seconds


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.worker:
        from tools.job_pool import serve

        return serve(_run_job)
    unknown = [s for s in args.steps if s not in (*STEPS, "compile")]
    if unknown:
        _parser().error(f"unknown steps {unknown}: choose from {', '.join(STEPS)}, compile")
    args.command = shlex.join(["python", "-m", "tools.gpu_check", *(sys.argv[1:] if argv is None else argv)])
    steps = args.steps or list(DEFAULT_STEPS)
    if "compile" in steps:
        from tools import flash_compile

        return flash_compile.main(["--arch", "90", "80", "--dtype", "float16", "bfloat16", "--all-candidates"])
    _settle(args)
    if not (args.smoke or args.stub or torch.cuda.is_available()) and steps != ["report"]:
        print("no CUDA device: only `report`, `compile`, `overhead --stub` and --smoke run here", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    results, seconds = _run_steps(args, steps)
    if args.json and "correctness" in results:
        args.json.write_text(json.dumps(results["correctness"], default=str))
    found = {s: _load(args.out, s) for s in ("candidates", "correctness", "bench")}
    print("\n" + "\n".join(summary_lines(found, seconds)), flush=True)  # last: what a truncated log keeps
    failed = sum((results.get(s) or {}).get("failures", 0) for s in ("candidates", "correctness"))
    broken = [s for s, r in results.items() if s != "report" and isinstance(r, dict) and r.get("ok") is False]
    return 1 if failed or broken else 0


if __name__ == "__main__":
    sys.exit(main())
