"""FlashAttention as Triton kernels: the online softmax of tiled.py, fused on the GPU, and its backward.

The kernels live in attn_core/_flash_kernels.py; this module checks inputs, picks launch settings
and wires forward and backward into autograd. Per call it does no more than it must:
- input checks that read only shapes, dtypes and devices (nothing that waits for the GPU);
- one dictionary lookup for the launch settings, cached per (device, dtype, head dim, causal,
  tile overrides) and, within that, per shape class (n_q, n_k rounded up to powers of two);
- two allocations and one launch forward; one small launch (D = rowsum(dO * O)) and one fused
  launch (dK, dV and dQ) backward. Without autograd (inference, torch.no_grad) no graph is built.
On CUDA the first call of a shape class tunes the tile sizes, warps and stages among a few
candidates per (head dim, dtype) with triton.autotune (set ATTN_CORE_FLASH_AUTOTUNE=0 to take the
first candidate without timing anything); later calls of the class reuse the choice.

Logits are computed as (q . k) * scale / temperature * log2(e), so exp2 (one hardware instruction)
replaces exp. Causal attention is top-left: query i sees keys 0..i.

CUDA tensors run compiled; CPU tensors run under Triton's interpreter when TRITON_INTERPRET=1 is
set before triton is first imported (correct, slow: for tests). Elsewhere use attn_core.tiled_attention.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os

import torch

from attn_core._checks import check_int, check_positive, check_qkv, resolve_scale

try:
    import triton
    import triton.language as tl
except ImportError:  # attn_core works without triton; only flash_attention needs it
    triton = tl = None

MIN_HEAD_DIM, MAX_HEAD_DIM = 16, 128  # tl.dot needs >= 16; 128 keeps acc + tiles within registers/smem
_FALLBACK = "use attn_core.tiled_attention (the same algorithm in plain PyTorch) instead"


def _mode() -> tuple[bool, bool]:
    """(TRITON_INTERPRET=1 now, triton imported under it).

    Triton jits its own helpers (tl.cdiv, tl.max, ...) when triton.language is first imported, so
    a kernel only runs in the mode that was in force then.
    """
    knobs = getattr(triton, "knobs", None)  # triton >= 3.4; older ones read the variable directly
    now = knobs.runtime.interpret if knobs is not None else os.environ.get("TRITON_INTERPRET", "0") in _TRUE
    return bool(now), not isinstance(tl.cdiv, triton.runtime.JITFunction)


_TRUE = ("1", "true", "on", "yes")


def flash_available(device) -> tuple[bool, str]:
    """(True, what runs) if flash_attention can run on `device`, else (False, why not)."""
    device = torch.device(device)
    if triton is None:
        return False, f"triton is not installed; {_FALLBACK}"
    interpret_now, imported_interpreted = _mode()
    if interpret_now and not imported_interpreted:
        return False, f"TRITON_INTERPRET=1 was set after triton was imported: set it before; {_FALLBACK}"
    if imported_interpreted and not interpret_now:
        return False, f"triton was imported under TRITON_INTERPRET=1, now unset: use a new process; {_FALLBACK}"
    if device.type == "cuda" and not torch.cuda.is_available():
        return False, f"CUDA is not available; {_FALLBACK}"
    if interpret_now and device.type in ("cpu", "cuda"):  # the interpreter copies CUDA tensors to the host
        return True, f"Triton {triton.__version__} interpreter (TRITON_INTERPRET=1): exact but slow"
    if device.type == "cuda":
        return True, f"Triton {triton.__version__} kernel on {torch.cuda.get_device_name(device)}"
    if device.type == "cpu":
        return False, f"the Triton kernel needs a CUDA GPU, or TRITON_INTERPRET=1 on CPU; {_FALLBACK}"
    return False, f"the Triton kernel does not run on {device.type} tensors; {_FALLBACK}"


def _require_runnable(device: torch.device) -> None:
    ok, reason = flash_available(device)
    if ok:
        return
    if triton is None:
        raise ImportError(f"flash_attention needs the 'triton' package: {reason}")
    raise RuntimeError(f"flash_attention cannot run on {device}: {reason}")


def _check_block(name: str, value) -> int:
    check_int(name, value, minimum=16)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two >= 16 (tl.arange and tl.dot need it), got {value}")
    return value


def _check_inputs(q, k, v, causal) -> int:
    """Everything check_qkv allows, minus what the kernel cannot do; return d."""
    _, _, d_k, d_v = check_qkv(q, k, v)
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            "q, k, v must have the same leading (batch/head) shape (no broadcasting), got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if d_v != d_k:
        raise ValueError(f"v must have d_v = d_k = {d_k} (last dimension), got shape {tuple(v.shape)}")
    if not MIN_HEAD_DIM <= d_k <= MAX_HEAD_DIM:
        raise ValueError(f"q must have a head dim d_k in [{MIN_HEAD_DIM}, {MAX_HEAD_DIM}], got {d_k}")
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"q, k, v must be float16, bfloat16 or float32, got {q.dtype}")
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be a bool, got {causal!r}")
    return d_k


# --- launch settings ------------------------------------------------------------------------------
# Candidates per (head dim, dtype), best guess first (what runs when tuning is off). Forward:
# (BLOCK_M, BLOCK_N, warps, stages). Backward: (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, warps,
# stages): 128-key blocks for dK, dV streamed in 32-query steps, 128-query blocks for dQ in 32-key
# steps (BLOCK_N1 = BLOCK_M2 keeps the causal pairing balanced). fp32 tiles are twice the bytes and
# take the exact ("ieee") dot, which runs on CUDA cores and needs far more registers: smaller tiles.
# Checked by compiling for sm_90 without a GPU (python -m tools.flash_compile --arch 90 80
# --all-candidates): every 16-bit first candidate spills no register, the others at most 64 bytes
# a thread; settings that spilled hundreds of bytes were dropped.
_FWD_16BIT = {
    64: ((128, 64, 4, 3), (128, 64, 4, 4), (128, 128, 8, 3), (64, 64, 4, 4), (128, 32, 4, 4)),
    128: ((128, 64, 8, 3), (128, 128, 8, 2), (128, 32, 4, 3), (64, 64, 4, 3), (64, 32, 4, 2)),
}
_BWD_16BIT = {
    64: ((32, 128, 128, 32, 8, 3), (32, 128, 128, 32, 4, 3), (64, 128, 128, 64, 8, 2), (32, 64, 64, 32, 4, 3)),
    128: ((32, 128, 128, 32, 8, 2), (64, 128, 128, 64, 8, 2), (32, 64, 64, 32, 4, 2), (16, 64, 64, 16, 4, 3)),
}
_FWD_FP32 = {
    64: ((32, 32, 4, 2), (64, 32, 8, 2), (32, 64, 4, 2)),
    128: ((32, 16, 4, 2), (16, 16, 4, 2), (32, 32, 8, 2)),
}
_BWD_FP32 = {
    64: ((16, 32, 32, 16, 4, 2), (16, 64, 64, 16, 4, 2), (16, 64, 64, 16, 8, 2)),
    128: ((16, 32, 32, 16, 4, 2), (16, 32, 32, 16, 8, 2), (16, 64, 64, 16, 8, 2)),
}
# The interpreter runs one program at a time in NumPy: one fixed, small, asymmetric setting.
_FWD_INTERPRETED = ((32, 16, 1, 1),)
_BWD_INTERPRETED = ((16, 32, 32, 16, 1, 1),)
_FWD_KEYS = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
_BWD_KEYS = ("BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "num_warps", "num_stages")
AUTOTUNE_ENV = "ATTN_CORE_FLASH_AUTOTUNE"  # "0": take the first candidate, time nothing
_LOG2E = math.log2(math.e)


def _candidates(d_pad: int, dtype: torch.dtype, interpreting: bool) -> tuple[tuple[dict, ...], tuple[dict, ...]]:
    """(forward, backward) candidate settings as kernel keyword arguments, best guess first."""
    if interpreting:
        fwd, bwd = _FWD_INTERPRETED, _BWD_INTERPRETED
    else:
        fwd, bwd = (_FWD_FP32, _BWD_FP32) if dtype == torch.float32 else (_FWD_16BIT, _BWD_16BIT)
        fwd, bwd = fwd[max(64, d_pad)], bwd[max(64, d_pad)]
    return tuple(dict(zip(_FWD_KEYS, c, strict=True)) for c in fwd), tuple(
        dict(zip(_BWD_KEYS, c, strict=True)) for c in bwd
    )


def _override(fwd: dict, bwd: dict, block_m: int | None, block_n: int | None) -> tuple[dict, dict]:
    """The first candidates with the caller's tiles: block_m for every query tile, block_n for every key tile."""
    queries, keys = ("BLOCK_M", "BLOCK_M1", "BLOCK_M2"), ("BLOCK_N", "BLOCK_N1", "BLOCK_N2")
    fixed = {**dict.fromkeys(queries, block_m), **dict.fromkeys(keys, block_n)}
    return tuple({k: fixed.get(k) or v for k, v in c.items()} for c in (fwd, bwd))


def _shape_class(n: int) -> int:
    """n rounded up to a power of two >= 16: lengths that share their best launch settings."""
    return 1 << max(4, (n - 1).bit_length())


def _even_fwd(n_q: int, n_k: int, s: dict) -> tuple[bool, bool]:
    """(EVEN_M, EVEN_N): n_q, n_k multiples of the forward's query and key tiles."""
    return n_q % s["BLOCK_M"] == 0, n_k % s["BLOCK_N"] == 0


def _even_bwd(n_q: int, n_k: int, s: dict) -> tuple[bool, bool]:
    """(EVEN_M, EVEN_N): n_q, n_k multiples of every query and key tile of the backward."""
    return n_q % max(s["BLOCK_M1"], s["BLOCK_M2"]) == 0, n_k % max(s["BLOCK_N1"], s["BLOCK_N2"]) == 0


class _Plan:
    """What a launch needs besides the tensors, for one (device, dtype, d, causal, tile overrides, mode).

    `chosen` maps (kernel, n_q class, n_k class) to the kernel keyword arguments picked for it.
    """

    def __init__(self, device, dtype, d, causal, block_m, block_n, interpreting):
        d_pad = max(MIN_HEAD_DIM, triton.next_power_of_2(d))
        self.device, self.dtype, self.d, self.causal = device, dtype, d, causal
        self.constants = dict(
            HEAD_DIM=d, HEAD_DIM_PAD=d_pad, CAUSAL=causal, EVEN_D=d == d_pad,
            DOT_PRECISION="ieee" if dtype == torch.float32 else None,  # fp32 stays fp32, no silent tf32
            DOT_IN_FP32=interpreting and dtype == torch.bfloat16,  # the interpreter multiplies bf16 bits
        )  # fmt: skip
        fwd, bwd = _candidates(d_pad, dtype, interpreting)
        if block_m is not None or block_n is not None:
            fwd, bwd = (tuple([c]) for c in _override(fwd[0], bwd[0], block_m, block_n))
        self.candidates = {"fwd": fwd, "bwd": bwd}
        self.delta_block = max(16, 4096 // d_pad)  # _attn_bwd_delta: memory-bound, ~32 fp32 values a thread
        self.tune = not interpreting and os.environ.get(AUTOTUNE_ENV, "1").lower() not in ("0", "false", "off", "no")
        self.chosen: dict[tuple, dict] = {}

    def settings(self, kernel: str, n_q: int, n_k: int) -> dict | None:
        return self.chosen.get((kernel, _shape_class(n_q), _shape_class(n_k)))

    def fixed_settings(self, kernel: str, n_q: int, n_k: int) -> dict | None:
        """The settings without timing anything, when there is nothing to choose (or tuning is off)."""
        if self.tune and len(self.candidates[kernel]) > 1:
            return None
        return self.record(kernel, n_q, n_k, self.candidates[kernel][0])

    def record(self, kernel: str, n_q: int, n_k: int, config: dict) -> dict:
        settings = {**self.constants, **config}
        self.chosen[(kernel, _shape_class(n_q), _shape_class(n_k))] = settings
        return settings


_PLANS: dict[tuple, _Plan] = {}


def _plan(device, dtype, d, causal, block_m, block_n) -> _Plan:
    """The cached plan; on a key's first call, check that the kernels can run at all (no check after that)."""
    key = (device, dtype, d, causal, block_m, block_n, _mode() if triton is not None else None)
    plan = _PLANS.get(key)
    if plan is None:
        _require_runnable(device)
        plan = _PLANS[key] = _Plan(device, dtype, d, causal, block_m, block_n, key[-1][0])
    return plan


def launch_settings() -> list[dict]:
    """Every launch setting chosen so far in this process (for tools/gpu_check.py and curious readers)."""
    return [
        dict(kernel=kernel, device=str(p.device), dtype=str(p.dtype).removeprefix("torch."), d=p.d, causal=p.causal,
             n_q_class=nq, n_k_class=nk, **{k: v for k, v in s.items() if k in _FWD_KEYS + _BWD_KEYS})
        for p in _PLANS.values()
        for (kernel, nq, nk), s in p.chosen.items()
    ]  # fmt: skip


_KERNELS = None


def _kernels():
    """attn_core._flash_kernels, imported on the first launch (after _require_runnable checked the mode)."""
    global _KERNELS
    if _KERNELS is None:
        from attn_core import _flash_kernels

        _KERNELS = _flash_kernels
    return _KERNELS


def _autotuned(kernel, candidates: tuple[dict, ...], even):
    """triton.autotune over `candidates`, keyed by the exact lengths (our own cache keys by class)."""
    configs = [
        triton.Config({k: v for k, v in c.items() if k.isupper()}, num_warps=c["num_warps"], num_stages=c["num_stages"])
        for c in candidates
    ]
    extra = {"cache_results": True} if "cache_results" in inspect.signature(triton.autotune).parameters else {}
    return triton.autotune(configs=configs, key=["N_Q", "N_K"], **extra)(
        triton.heuristics(
            {
                "EVEN_M": lambda a: even(a["N_Q"], a["N_K"], a)[0],
                "EVEN_N": lambda a: even(a["N_Q"], a["N_K"], a)[1],
            }
        )(kernel)
    )


def _launch(plan: _Plan, name: str, kernel, grid, args: tuple, n_q: int, n_k: int, even) -> None:
    """Launch with the class's cached settings; on a class's first call, tune (CUDA) or take the first candidate."""
    settings = plan.settings(name, n_q, n_k) or plan.fixed_settings(name, n_q, n_k)
    if settings is not None:
        even_m, even_n = even(n_q, n_k, settings)
        kernel[grid(settings)](*args, EVEN_M=even_m, EVEN_N=even_n, **settings)
        return
    tuner = _autotuned(kernel, plan.candidates[name], even)
    tuner[grid](*args, **plan.constants)  # times every candidate, then runs the best: the outputs are valid
    best = tuner.best_config
    plan.record(name, n_q, n_k, {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages})


_SAME_DEVICE = contextlib.nullcontext()


def _on_device(device: torch.device):
    """Triton launches on the current CUDA device: make it the tensors' own."""
    if device.type == "cuda" and device.index is not None and device.index != torch.cuda.current_device():
        return torch.cuda.device(device)
    return _SAME_DEVICE


def _forward(q, k, v, plan: _Plan, sm_scale: float, out_shape=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse (Z, n_q) fp32, in log2 units) for q (Z, n_q, d), k, v (Z, n_k, d).

    out is contiguous, of shape out_shape (the caller's (..., n_q, d); default (Z, n_q, d)): the
    kernel sees only its memory, so no view has to be returned through autograd.
    """
    (z, n_q, d), n_k = q.shape, k.shape[1]
    out = torch.empty(out_shape or (z, n_q, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((z, n_q), dtype=torch.float32, device=q.device)
    if z:
        args = (q, k, v, out, lse, *q.stride(), *k.stride(), *v.stride(), n_q, n_k, sm_scale * _LOG2E)
        with _on_device(q.device):
            _launch(plan, "fwd", _kernels()._attn_fwd, lambda s: (-(-n_q // s["BLOCK_M"]) * z,), args,
                    n_q, n_k, _even_fwd)  # fmt: skip
    return out, lse


def _backward(q, k, v, out, lse, dout, plan: _Plan, sm_scale: float, shapes=None) -> tuple[torch.Tensor, ...]:
    """(dq, dk, dv), contiguous, of `shapes` (default those of q, k, v (Z, n, d)), from the saved forward
    and dout, both contiguous with Z * n_q rows of d."""
    (z, n_q, _), n_k = q.shape, k.shape[1]
    dq, dk, dv = (torch.empty(shape, dtype=q.dtype, device=q.device) for shape in shapes or (q.shape, k.shape, v.shape))
    if not z:
        return dq, dk, dv
    kernels, c = _kernels(), plan.constants
    delta = torch.empty((z, n_q), dtype=torch.float32, device=q.device)  # D_i = rowsum(dO * O)
    with _on_device(q.device):
        kernels._attn_bwd_delta[(-(-z * n_q // plan.delta_block),)](
            out, dout, delta, z * n_q, HEAD_DIM=c["HEAD_DIM"], HEAD_DIM_PAD=c["HEAD_DIM_PAD"], BLOCK=plan.delta_block,
            EVEN_D=c["EVEN_D"],
        )  # fmt: skip
        args = (q, k, v, dout, lse, delta, dq, dk, dv, *q.stride(), *k.stride(), *v.stride(), n_q, n_k,
                sm_scale * _LOG2E, sm_scale)  # fmt: skip

        def grid(s):
            return (max(-(-n_k // s["BLOCK_N1"]), -(-n_q // s["BLOCK_M2"])) * z,)  # ceil divisions

        _launch(plan, "bwd", kernels._attn_bwd, grid, args, n_q, n_k, _even_bwd)
    return dq, dk, dv


def _as_3d(q, k, v) -> tuple[torch.Tensor, ...]:
    """q, k, v as (Z, n, d) with Z the product of the leading dims: views when the strides allow."""
    if q.dim() == 3:
        return q, k, v
    z, d = math.prod(q.shape[:-2]), q.shape[-1]
    return tuple(x.reshape(z, x.shape[-2], d) for x in (q, k, v))


class _FlashAttention(torch.autograd.Function):
    """The Triton forward, with a Triton backward that recomputes the weights tile by tile.

    Takes and returns tensors with any leading dims, reshaped (as views) only inside, and returns
    freshly allocated outputs, never views: autograd records one node per call and nothing else.
    """

    @staticmethod
    def forward(ctx, q, k, v, plan: _Plan, sm_scale: float):
        q3, k3, v3 = _as_3d(q, k, v)
        out, lse = _forward(q3, k3, v3, plan, sm_scale, q.shape)
        ctx.save_for_backward(q3, k3, v3, out, lse)  # O(n) extra: lse, not the n_q x n_k weights
        ctx.plan, ctx.sm_scale, ctx.shapes = plan, sm_scale, (q.shape, k.shape, v.shape)
        return out

    @staticmethod
    def backward(ctx, dout):
        dq, dk, dv = _backward(*ctx.saved_tensors, dout.contiguous(), ctx.plan, ctx.sm_scale, ctx.shapes)
        return dq, dk, dv, None, None


def flash_attention(q, k, v, *, causal=False, scale=None, temperature=1.0, block_m=None, block_n=None):
    """Exact attention output (..., n_q, d) from the fused Triton kernels; the dtype of q; differentiable.

    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d), the same leading shape, 16 <= d <= 128,
    float16/bfloat16/float32. `causal=True`: key j visible to query i iff j <= i (top-left, like
    SDPA's `is_causal`). `block_m`/`block_n` fix every query/key tile size (powers of two >= 16)
    instead of the tuned ones.
    """
    d = _check_inputs(q, k, v, causal)
    sm_scale = resolve_scale(scale, d) / check_positive("temperature", temperature)
    if block_m is not None:
        _check_block("block_m", block_m)
    if block_n is not None:
        _check_block("block_n", block_n)
    plan = _plan(q.device, q.dtype, d, causal, block_m, block_n)
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return _FlashAttention.apply(q, k, v, plan, sm_scale)  # (..., n_q, d)
    return _forward(*_as_3d(q, k, v), plan, sm_scale, q.shape)[0]  # inference: no autograd node, nothing saved
