"""Small shared test helpers."""

import torch


def rand(*shape, seed=0, dtype=torch.float64, requires_grad=False):
    """Standard-normal tensor from an explicit seed."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return x.requires_grad_(requires_grad)


# The columns of a record of kernel speeds, as tools.gpu_check writes benchmarks/gpu_attention.csv
KERNEL_FIELDS = ("mode", "dtype", "d", "causal", "n", "batch", "heads", "method", "backend", "candidate", "status")
KERNEL_FIELDS += ("time_ms", "tflops")
KERNEL_HEADER = {"device_name": "Test GPU 80GB", "torch": "2.99.0", "triton": "9.1.0", "date": "2026-02-03"}


def kernel_row(mode, n, method, tflops, *, backend="", candidate="", status="ok", d=64, causal=False) -> dict:
    """One entry of a kernel record at FlashAttention-2's sizes: batch * n = 16384 tokens, heads * d = 2048."""
    return (
        {"mode": mode, "dtype": "float16", "d": d, "causal": causal, "n": n, "batch": 16384 // n}
        | {"heads": 2048 // d, "method": method, "backend": backend, "candidate": candidate, "status": status}
        | {"time_ms": 1.0 if tflops else None, "tflops": tflops}
    )


def write_kernel_record(path) -> dict:
    """A small kernel record: its summary at the largest n both ran (2048; at 4096 our kernel failed), per mode,
    as {mode: (n, ours, best SDPA, its back-end, ratio)}. Ours: the default candidate (f0 / b0), not the fastest."""
    from attn_core.bench import write_csv

    rows = []
    for n, x in ((1024, 1.0), (2048, 2.0)):
        rows += [kernel_row("fwd", n, "triton", 100 * x, candidate="f0:128/64/w4/s3")]
        rows += [kernel_row("fwd", n, "triton", 120 * x, candidate="f1:128/64/w4/s3/DESC")]  # faster, not default
        rows += [kernel_row("fwd", n, "sdpa", 110 * x, backend="default")]
        rows += [kernel_row("fwd", n, "sdpa", 125 * x, backend="cudnn")]
        rows += [kernel_row("fwd_bwd", n, "triton", 80 * x, candidate="b0:32/128/128/32/w4/s3")]
        rows += [kernel_row("fwd_bwd", n, "sdpa", 90 * x, backend="flash")]
    rows += [kernel_row("fwd", 4096, "triton", None, candidate="f0:128/64/w4/s3", status="error: timed out")]
    rows += [kernel_row("fwd", 4096, "sdpa", 999.0, backend="default")]
    write_csv(str(path), rows, KERNEL_HEADER | {"command": "python -m tools.gpu_check"}, fields=KERNEL_FIELDS)
    return {"fwd": (2048, 200.0, 250.0, "cudnn", 0.8), "fwd_bwd": (2048, 160.0, 180.0, "flash", 0.89)}
