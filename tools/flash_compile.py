"""Compile attn_core's Triton kernels for a GPU architecture on any machine, no GPU needed.

Triton ships ptxas: `triton.compile` lowers a kernel to a cubin for, say, sm_90 on a CPU-only
host. What a compile tells without a GPU: that the kernel compiles in this configuration, its
registers per thread, stack bytes (register spills) and shared memory per program. It says nothing
about speed. Used by tools/gpu_check.py (on the GPU) and runnable alone:

    python -m tools.flash_compile --arch 90 --d 64 128 --dtype float16
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

_PTR = {torch.float16: "*fp16", torch.bfloat16: "*bf16", torch.float32: "*fp32"}
_FP32_PTRS = {"Lse", "Delta", "DQAcc"}
_DESC_ROWS = {"desc_q": "BLOCK_M", "desc_k": "BLOCK_N", "desc_v": "BLOCK_N"}
_TENSORS = {"Q", "K", "V", "Out", "DO", "DQ", "DK", "DV"} | _FP32_PTRS


def _signature(kernel, dtype, constexprs: dict, ints: dict) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) as the JIT would build them for contiguous (Z, n, d) inputs.

    Pointers and ints that are multiples of 16 get tt.divisibility 16; ints equal to 1 (stride_d)
    become constants, as the JIT specialises them.
    """
    signature, consts, attrs = {}, dict(constexprs), {}
    for i, name in enumerate(kernel.arg_names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in _DESC_ROWS:  # a host-side TensorDescriptor, typed by its block as the JIT types it
            block = f"{constexprs[_DESC_ROWS[name]]}, {constexprs['HEAD_DIM']}"
            signature[name] = f"tensordesc<{_PTR[dtype][1:]}[{block}]>"
        elif name in _TENSORS:  # the atomic backward sums dQ in fp32
            fp32 = name in _FP32_PTRS or (name == "DQ" and constexprs.get("ATOMIC"))
            signature[name] = "*fp32" if fp32 else _PTR[dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif name in ints:
            if ints[name] == 1:
                signature[name], consts[name] = "constexpr", 1
            else:
                signature[name] = "i32"
                if ints[name] % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "fp32"  # the scales
    return signature, consts, attrs


def _resources(cubin: bytes) -> dict:
    """Registers per thread and stack + local bytes per thread (register spills) from cuobjdump -res-usage."""
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
    found = {key: int(value) for key, value in re.findall(r"\b(REG|LOCAL|STACK):(\d+)", text)}
    return {"regs": found.get("REG", -1), "stack_bytes": found.get("STACK", 0) + found.get("LOCAL", 0)}


def compile_kernel(kernel_name: str, settings: dict, *, dtype, n_q: int, n_k: int, arch: int = 90) -> dict:
    """Compile one kernel with `settings` (kernel keyword arguments, incl. num_warps/num_stages)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from attn_core import _flash_kernels as kernels

    kernel = getattr(kernels, kernel_name)
    d = settings["HEAD_DIM"]
    ints = {n: d for n in ("stride_qm", "stride_kn", "stride_vn")}
    ints |= {n: 1 for n in ("stride_qd", "stride_kd", "stride_vd")}
    ints |= {n: d * m for n, m in (("stride_qz", n_q), ("stride_kz", n_k), ("stride_vz", n_k))}
    ints |= {"N_Q": n_q, "N_K": n_k, "N_ROWS": n_q}
    constexprs = {k: v for k, v in settings.items() if k not in ("num_warps", "num_stages")}
    signature, consts, attrs = _signature(kernel, dtype, constexprs, ints)
    options = {"num_warps": settings.get("num_warps", 4), "num_stages": settings.get("num_stages", 2)}
    start = time.perf_counter()
    compiled = triton.compile(
        ASTSource(kernel, signature, constexprs=consts, attrs=attrs),
        target=GPUTarget("cuda", arch, 32),
        options=options,
    )
    return {
        "kernel": kernel_name,
        "arch": f"sm_{arch}",
        "shared_bytes": compiled.metadata.shared,
        **_resources(compiled.asm["cubin"]),
        "compile_s": round(time.perf_counter() - start, 1),
    }


def _report(arch: int, dtype, d: int, causal: bool, all_candidates: bool, n: int) -> int:
    """Print one table row per compiled kernel and candidate; return how many failed to compile."""
    from attn_core import flash_triton

    plan = flash_triton._Plan(torch.device("cuda"), dtype, d, causal, None, None, False)
    where = f"sm_{arch} | {str(dtype).removeprefix('torch.')} | {d} | {causal}"
    even = {"EVEN_M": n % 128 == 0, "EVEN_N": n % 128 == 0}  # every candidate tile divides 128
    jobs = []
    for kernel in ("fwd", "bwd"):
        candidates = plan.candidates[kernel]
        for cand in candidates if all_candidates else candidates[:1]:
            s = flash_triton._Setting(cand, plan.constants)
            if s.desc:
                if even["EVEN_M"]:  # the descriptor kernel runs only on lengths its tiles divide
                    jobs.append(("_attn_fwd_desc", s.desc_kwargs, cand))
            else:
                extra = {"ATOMIC": s.atomic} if kernel == "bwd" else {}
                jobs.append((f"_attn_{kernel}", {**s.kwargs, **even, **extra}, cand))
    c = plan.constants
    delta = {"HEAD_DIM": d, "HEAD_DIM_PAD": c["HEAD_DIM_PAD"], "BLOCK": plan.delta_block, "EVEN_D": c["EVEN_D"]}
    jobs.append(("_attn_bwd_delta", {**delta, "ZERO_DQ": True}, {"BLOCK": plan.delta_block}))
    failures = 0
    for name, settings, shown in jobs:
        short = "/".join(str(v) if not isinstance(v, bool) else k.lower() for k, v in shown.items())
        try:
            r = compile_kernel(name, settings, dtype=dtype, n_q=n, n_k=n, arch=arch)
        except Exception as exc:  # a setting that does not compile is a finding, not a crash
            failures += 1
            print(f"| {name} | {where} | {short} | FAILED: {type(exc).__name__}: {str(exc)[:80]!r} | | | |")
            continue
        cells = f"{r['regs']} | {r['stack_bytes']} | {r['shared_bytes'] / 1024:.0f} | {r['compile_s']}"
        print(f"| {name} | {where} | {short} | {cells} |", flush=True)
    return failures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.flash_compile", description=__doc__.splitlines()[0])
    p.add_argument("--arch", type=int, nargs="+", default=[90])
    p.add_argument("--d", type=int, nargs="+", default=[64, 128])
    p.add_argument("--dtype", nargs="+", default=["float16"], choices=["float16", "bfloat16", "float32"])
    p.add_argument("--causal", choices=["yes", "no", "both"], default="both")
    p.add_argument("--all-candidates", action="store_true", help="every tuning candidate, not only the first")
    p.add_argument(
        "--n", type=int, default=4096, help="sequence length: 4096 compiles the even-shape path, 4097 the ragged one"
    )
    args = p.parse_args(argv)
    causals = {"yes": (True,), "no": (False,), "both": (False, True)}[args.causal]
    print(f"n = {args.n}: EVEN_M = EVEN_N = {args.n % 128 == 0}")
    print("| kernel | arch | dtype | d | causal | settings | regs | stack B (spills) | shared KiB | compile s |")
    print("|---|---|---|---:|---|---|---:|---:|---:|---:|")
    failures = 0
    for arch in args.arch:
        for dtype_name in args.dtype:
            for d in args.d:
                for causal in causals:
                    failures += _report(arch, getattr(torch, dtype_name), d, causal, args.all_candidates, args.n)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
