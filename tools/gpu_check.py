"""Everything to check on a CUDA GPU, in one command: `python -m tools.gpu_check`.

Steps (each writes <out>/gpu_check_<step>.json; `report` turns whichever exist into
benchmarks/gpu_attention.{csv,md} with machine, versions, date and command):
    correctness  flash_attention against an fp32 reference, forward and backward, fp16/bf16, odd
                 lengths and head dims 16..128, causal or not, by FlashAttention's criterion: the error
                 at most twice that of PyTorch's own low-precision attention (SDPA in the same dtype),
                 plus one rounding of the result; then every tuning candidate's tiles on two shapes
    tune         the autotune sweep: each (dtype, d, causal) at each benchmark length, forward and
                 backward, so triton.autotune picks and caches its settings; lists what it chose
    bench        attn_core.bench's FlashAttention-2 convention (batch * n = 16k tokens, heads * d =
                 2048), SDPA and the Triton kernel, forward and forward + backward, TFLOP/s and the
                 ratio to SDPA per row
    overhead     host time of one flash_attention call beside the bare kernel launch (and, with
                 --stub, on any machine: the wrapper's own Python with every launch stubbed out)
    report       writes the two files from the JSON of the steps that ran
    compile      compiles every candidate for sm_90 and sm_80 (tools.flash_compile; no GPU needed)

`python -m tools.gpu_check` runs correctness, tune, bench, overhead and report in that order and
stops starting new steps after --budget-s seconds (default 540: one 10-minute device call); run the
rest in a second call with the step names, then `report`. Nothing here runs in CI: the GPU tests
(tests/core/test_flash_gpu.py) call the correctness step in a subprocess where CUDA exists.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
STEPS = ("correctness", "tune", "bench", "overhead", "report")
DTYPES = ("float16", "bfloat16")
HEAD_DIMS = (64, 128)
BENCH_NS = (512, 1024, 2048, 4096, 8192, 16384)
TARGETS = {"fwd": 0.9, "fwd_bwd": 0.75}  # issue 17: ratio to SDPA in TFLOP/s at n >= 2048

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


def correctness_cases() -> list[dict]:
    """Every (dtype, shape) of the sweep; importable without triton or a GPU (the GPU tests use it)."""
    return [
        dict(dtype=dtype, n_q=n_q, n_k=n_k, d=d, causal=causal, batch=2, heads=3)
        for dtype in DTYPES
        for n_q, n_k, d, causal in CORRECTNESS_SHAPES
    ]


def case_id(case: dict) -> str:
    causal = "causal" if case["causal"] else "full"
    return f"{case['dtype']}-{case['n_q']}x{case['n_k']}-d{case['d']}-{causal}"


# --- correctness ------------------------------------------------------------------------------


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


def check_case(case: dict, device="cuda", seed=0) -> dict:
    """Errors of flash_attention and of SDPA in case['dtype'] against fp32, for out, dq, dk, dv."""
    import torch.nn.functional as F

    from attn_core.flash_triton import flash_attention

    dtype = getattr(torch, case["dtype"])
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (case["batch"], case["heads"])
    q = torch.randn(*shape, case["n_q"], case["d"], generator=gen, device=device, dtype=dtype)
    k, v = (torch.randn(*shape, case["n_k"], case["d"], generator=gen, device=device, dtype=dtype) for _ in "kv")
    d_out = torch.randn(q.shape, generator=gen, device=device, dtype=dtype)
    causal = case["causal"]

    def ref(q, k, v):
        return _reference(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), causal).view(q.shape)

    got = _grads(lambda q, k, v: flash_attention(q, k, v, causal=causal), q, k, v, d_out)
    torch_own = _grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), q, k, v, d_out)
    want = _grads(ref, *(x.float() for x in (q, k, v)), d_out.float())
    result = dict(case, id=case_id(case), ok=True)
    for name, x, t, w in zip(("out", "dq", "dk", "dv"), got, torch_own, want, strict=True):
        err, torch_err = (x.float() - w).abs().max().item(), (t.float() - w).abs().max().item()
        bound = 2 * torch_err + torch.finfo(dtype).eps * w.abs().max().item()
        ok = math.isfinite(err) and err <= bound and x.dtype == dtype
        result[name] = dict(err=err, sdpa_err=torch_err, bound=bound, ok=ok)
        result["ok"] &= ok
    return result


def _candidate_checks(device) -> list[dict]:
    """Every tuning candidate's tiles (warps, stages as tuned) on an odd and an even causal shape, fp16."""
    from attn_core import flash_triton

    results = []
    for d in HEAD_DIMS:
        plan_fwd, plan_bwd = flash_triton._candidates(d, torch.float16, False)
        for i in range(max(len(plan_fwd), len(plan_bwd))):
            fwd, bwd = plan_fwd[min(i, len(plan_fwd) - 1)], plan_bwd[min(i, len(plan_bwd) - 1)]
            for n in (1000, 1024):
                case = dict(dtype="float16", n_q=n, n_k=n, d=d, causal=True, batch=2, heads=3)
                with _forced(flash_triton, fwd, bwd):
                    r = check_case(case, device)
                r.update(id=f"{case_id(case)}-candidate{i}", fwd=fwd, bwd=bwd)
                results.append(r)
    return results


class _forced:
    """Within the block, every new plan has these two settings as its only candidates."""

    def __init__(self, module, fwd: dict, bwd: dict):
        self.module, self.fwd, self.bwd = module, fwd, bwd

    def __enter__(self):
        self.saved_plans, self.saved = dict(self.module._PLANS), self.module._candidates
        self.module._PLANS.clear()
        self.module._candidates = lambda *a: ((self.fwd,), (self.bwd,))

    def __exit__(self, *exc):
        self.module._candidates = self.saved
        self.module._PLANS.clear()
        self.module._PLANS.update(self.saved_plans)


def step_correctness(args) -> dict:
    cases, failures = [], 0
    for case in correctness_cases():
        r = check_case(case, args.device)
        failures += not r["ok"]
        cases.append(r)
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['id']}", flush=True)
    candidates = [] if args.quick else _candidate_checks(args.device)
    for r in candidates:
        failures += not r["ok"]
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['id']}", flush=True)
    return dict(cases=cases, candidates=candidates, failures=failures)


# --- tuning, benchmark, overhead ----------------------------------------------------------------


def step_tune(args) -> dict:
    """Run every (dtype, d, causal, n) of the benchmark once forward and backward: triton.autotune picks."""
    from attn_core.flash_triton import flash_attention, launch_settings

    start = time.perf_counter()
    for dtype in args.dtypes:
        for d in HEAD_DIMS:
            for causal in (False, True):
                for n in args.ns:
                    shape = (max(1, 16384 // n), 2048 // d, n, d)  # the benchmark's (batch, heads, n, d)
                    q, k, v = (
                        torch.randn(shape, device=args.device, dtype=getattr(torch, dtype)).requires_grad_()
                        for _ in range(3)
                    )
                    flash_attention(q, k, v, causal=causal).sum().backward()
                    del q, k, v
                print(f"tuned {dtype} d={d} causal={causal} ({time.perf_counter() - start:.0f} s)", flush=True)
    return dict(settings=launch_settings(), seconds=time.perf_counter() - start)


def step_bench(args) -> dict:
    from attn_core.bench import BenchConfig, run_benchmark

    rows = []
    for mode in ("fwd", "fwd_bwd"):
        for dtype in args.dtypes:
            for d in HEAD_DIMS:
                for causal in (False, True):
                    config = BenchConfig(
                        device=args.device, ns=tuple(args.ns), d=d, heads=2048 // d, tokens=16384, dtype=dtype,
                        causal=causal, methods=("sdpa", "triton"), mode=mode, repeats=args.repeats, warmup=3,
                        memory_budget_mb=1e6,
                    )  # fmt: skip
                    rows += run_benchmark(config)
                    last = rows[-2 * len(args.ns) :]
                    ratios = [r["tflops_vs_sdpa"] for r in last if r["method"] == "triton"]
                    print(f"bench {mode} {dtype} d={d} causal={causal}: x SDPA {ratios}", flush=True)
    return dict(rows=rows)


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


class _StubKernel:
    def __getitem__(self, grid):
        return _no_launch


def _no_launch(*args, **kwargs):
    return None


class _StubKernels:
    _attn_fwd = _attn_bwd = _attn_bwd_delta = _StubKernel()


def step_overhead(args) -> dict:
    """Host microseconds per call at the issue's shape (B=4, H=16, n=512, d=64, fp16) and a tiny one."""
    import torch.nn.functional as F

    from attn_core import flash_triton

    if args.stub:
        flash_triton._kernels = lambda: _StubKernels
    device = args.device if not args.stub else "cpu"
    results = {"stubbed": args.stub, "device": device, "calls": args.calls}
    for label, (b, h, n, d) in (("B4 H16 n512 d64", (4, 16, 512, 64)), ("B1 H1 n16 d64", (1, 1, 16, 64))):
        q, k, v = (torch.randn(b, h, n, d, device=device, dtype=torch.float16) for _ in range(3))
        qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
        d_out = torch.ones_like(q)

        def fwd_bwd(qg=qg, kg=kg, vg=vg, d_out=d_out):
            out = flash_triton.flash_attention(qg, kg, vg, causal=True)
            return torch.autograd.grad(out, (qg, kg, vg), d_out)

        clock = time.process_time if args.stub else time.perf_counter
        row = {
            "flash_fwd_us": _host_us_per_call(lambda q=q, k=k, v=v: flash_triton.flash_attention(q, k, v, causal=True),
                                              args.calls, clock=clock),
            "flash_fwd_bwd_us": _host_us_per_call(fwd_bwd, max(1, args.calls // 4), clock=clock),
        }  # fmt: skip
        if not args.stub:
            row["sdpa_fwd_us"] = _host_us_per_call(
                lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True), args.calls
            )
            row["bare_launch_us"] = _host_us_per_call(_bare_forward(flash_triton, q, k, v), args.calls)
            row["wrapper_us"] = row["flash_fwd_us"] - row["bare_launch_us"]
        results[label] = row
        print(label, {k: round(v, 1) for k, v in row.items()}, flush=True)
    return results


def _bare_forward(flash_triton, q, k, v):
    """The forward kernel launched directly with the settings flash_attention chose: Triton's own launch cost."""
    z, n_q, d = q.shape[0] * q.shape[1], q.shape[2], q.shape[3]
    q3, k3, v3 = (x.reshape(z, -1, d) for x in (q, k, v))
    out = torch.empty_like(q3)
    lse = torch.empty(z, n_q, device=q.device, dtype=torch.float32)
    plan = flash_triton._plan(q.device, q.dtype, d, True, None, None)
    flash_triton.flash_attention(q, k, v, causal=True)  # make sure the settings are chosen
    s = plan.settings("fwd", n_q, n_q)
    even_m, even_n = flash_triton._even_fwd(n_q, n_q, s)
    kernel, grid = flash_triton._kernels()._attn_fwd, (-(-n_q // s["BLOCK_M"]) * z,)
    args = (q3, k3, v3, out, lse, *q3.stride(), *k3.stride(), *v3.stride(), n_q, n_q, d**-0.5 * math.log2(math.e))
    return lambda: kernel[grid](*args, EVEN_M=even_m, EVEN_N=even_n, **s)


# --- report -------------------------------------------------------------------------------------


def _versions() -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    cuda = torch.cuda.is_available()
    return {
        "device_name": torch.cuda.get_device_name(0) if cuda else platform.processor(),
        "capability": ".".join(map(str, torch.cuda.get_device_capability(0))) if cuda else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton_version,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.date.today().isoformat(),
    }


def step_report(args) -> dict:
    from attn_core.bench import write_csv

    found = {s: _load(args.out, s) for s in ("correctness", "tune", "bench", "overhead")}
    header = {**_versions(), "command": args.command, "steps": ",".join(s for s, v in found.items() if v)}
    if found["bench"]:
        write_csv(str(args.results / "gpu_attention.csv"), found["bench"]["rows"], header)
    lines = [f"# Attention kernels on {header['device_name']}", ""]
    lines += [f"- {k}: {v}" for k, v in header.items() if k != "device_name"]
    lines += ["", *_report_correctness(found["correctness"]), "", *_report_bench(found["bench"])]
    lines += ["", *_report_tune(found["tune"]), "", *_report_overhead(found["overhead"])]
    (args.results / "gpu_attention.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.results / 'gpu_attention.md'}" + (" and .csv" if found["bench"] else ""))
    return header


def _report_correctness(found) -> list[str]:
    if not found:
        return ["## Correctness", "", "not run"]
    lines = ["## Correctness", "", f"{found['failures']} failures over "
             f"{len(found['cases']) + len(found['candidates'])} cases (error <= 2 x SDPA's + eps * max|ref|).", "",
             "| case | out err / SDPA err | dq | dk | dv | ok |", "|---|---|---|---|---|---|"]  # fmt: skip
    for r in found["cases"] + found["candidates"]:
        cells = [f"{r[g]['err']:.2e} / {r[g]['sdpa_err']:.2e}" for g in ("out", "dq", "dk", "dv")]
        lines.append(f"| {r['id']} | {' | '.join(cells)} | {'yes' if r['ok'] else 'NO'} |")
    return lines


def _report_bench(found) -> list[str]:
    if not found:
        return ["## Throughput", "", "not run"]
    lines = ["## Throughput (FlashAttention-2 convention: batch * n = 16k, heads * d = 2048)", "",
             "TFLOP/s of the Triton kernel, its ratio to SDPA in the same run, and the issue's target.", "",
             "| mode | dtype | d | causal | n | Triton TFLOP/s | SDPA TFLOP/s | x SDPA | target |",
             "|---|---|---:|---|---:|---:|---:|---:|---|"]  # fmt: skip
    rows, same = found["rows"], ("mode", "dtype", "d", "causal", "n")
    for r in (r for r in rows if r["method"] == "triton"):
        sdpa = next((s for s in rows if s["method"] == "sdpa" and all(s[f] == r[f] for f in same)), {})
        ratio, target = r["tflops_vs_sdpa"], TARGETS[r["mode"]]
        verdict = "" if ratio is None or r["n"] < 2048 else ("met" if ratio >= target else f"missed (< {target})")
        lines.append(
            f"| {r['mode']} | {r['dtype']} | {r['d']} | {r['causal']} | {r['n']} | {_num(r['tflops'])} "
            f"| {_num(sdpa.get('tflops'))} | {_num(ratio, 2)} | {verdict or r['status']} |"
        )
    return lines


def _report_tune(found) -> list[str]:
    if not found:
        return ["## Tuned launch settings", "", "not run"]
    lines = ["## Tuned launch settings", "", f"Autotune sweep: {found['seconds']:.0f} s.", "",
             "| kernel | dtype | d | causal | n_q class | settings |", "|---|---|---:|---|---:|---|"]  # fmt: skip
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
    return lines


def _num(x, digits=1) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _load(out: Path, step: str):
    path = out / f"gpu_check_{step}.json"
    return json.loads(path.read_text()) if path.exists() else None


# --- command line -------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.gpu_check", description=__doc__.splitlines()[0])
    p.add_argument("steps", nargs="*", help=f"any of {', '.join(STEPS)}, compile (default: {' '.join(STEPS)})")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    p.add_argument("--ns", type=int, nargs="+", default=list(BENCH_NS))
    p.add_argument("--repeats", type=int, default=20, help="timed calls per benchmark entry")
    p.add_argument("--calls", type=int, default=500, help="calls per overhead measurement")
    p.add_argument("--quick", action="store_true", help="correctness: skip the per-candidate checks")
    p.add_argument("--stub", action="store_true", help="overhead: stub every kernel launch (runs on CPU)")
    p.add_argument("--budget-s", type=float, default=540.0, help="start no step after this many seconds")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "gpu_check", help="JSON of each step")
    p.add_argument("--results", type=Path, default=REPO / "benchmarks", help="where report writes its files")
    p.add_argument("--json", type=Path, help="correctness: also write its result here (the GPU tests read it)")
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    unknown = [s for s in args.steps if s not in (*STEPS, "compile")]
    if unknown:
        _parser().error(f"unknown steps {unknown}: choose from {', '.join(STEPS)}, compile")
    args.command = shlex.join(["python", "-m", "tools.gpu_check", *(sys.argv[1:] if argv is None else argv)])
    steps = args.steps or list(STEPS)
    if "compile" in steps:
        from tools import flash_compile

        return flash_compile.main(["--arch", "90", "80", "--dtype", "float16", "bfloat16", "--all-candidates"])
    if args.stub:
        os.environ["TRITON_INTERPRET"] = "1"  # flash_available on the CPU; no kernel runs
    elif not torch.cuda.is_available() and steps != ["report"]:
        print("no CUDA device: only `report`, `compile` and `overhead --stub` run here", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    start, failed = time.perf_counter(), 0
    for step in steps:
        if step != "report" and time.perf_counter() - start > args.budget_s:
            print(f"skipped {step}: past --budget-s {args.budget_s:g}; run it in another call", flush=True)
            continue
        result = globals()[f"step_{step}"](args)
        if step == "overhead" and args.stub:
            break  # the wrapper's Python on this machine, not a GPU result: printed, not recorded
        if step != "report":
            (args.out / f"gpu_check_{step}.json").write_text(json.dumps(result, indent=1, default=str))
        if step == "correctness":
            failed = result["failures"]
            if args.json:
                args.json.write_text(json.dumps(result, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
