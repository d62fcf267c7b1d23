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


def flash_compiled(device) -> bool:
    """Whether flash_attention runs on `device` as a compiled GPU kernel, not under Triton's interpreter (exact
    but far too slow to time): the only mode whose speed means anything."""
    return torch.device(device).type == "cuda" and flash_available(device)[0] and not _mode()[0]


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
# (BLOCK_M, BLOCK_N, warps, stages[, flags]). Backward: (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, warps,
# stages[, flags]): 128-key blocks for dK, dV streamed in BLOCK_M1-query steps, 128-query blocks for
# dQ in BLOCK_N2-key steps (BLOCK_N1 = BLOCK_M2 keeps the causal pairing balanced). Flags:
#   "desc"    forward through tensor descriptors (_attn_fwd_desc: TMA on Hopper) where the shapes
#             allow (16-bit, lengths multiples of the tiles, d a power of two); else the same tiles
#             through _attn_fwd
#   "ws"      with "desc": the key loop warp-specialised (a loader warp feeding compute warpgroups)
#   "atomic"  the five-matmul backward (_attn_bwd with ATOMIC: dQ added with fp32 atomics; BLOCK_M2,
#             BLOCK_N2 unused); deterministic=True takes the same tiles without it
# fp32 tiles are twice the bytes and take the exact ("ieee") dot, which runs on CUDA cores and needs
# far more registers: smaller tiles. Registers, spills and shared memory of each: tools.flash_compile.
_FWD_16BIT = {
    64: ((128, 64, 4, 3), (128, 64, 4, 3, "desc"), (128, 64, 4, 4), (64, 64, 4, 4), (128, 128, 8, 3),
         (128, 128, 8, 3, "desc")),
    128: ((128, 64, 8, 3), (128, 64, 8, 3, "desc"), (64, 64, 4, 3), (128, 128, 8, 2, "desc"), (128, 128, 8, 2),
          (128, 32, 4, 3)),
}  # fmt: skip
_BWD_16BIT = {
    64: ((32, 128, 128, 32, 4, 3), (64, 128, 128, 64, 8, 3), (64, 128, 128, 64, 8, 3, "atomic"),
         (64, 64, 64, 64, 4, 3, "atomic"), (32, 128, 128, 32, 8, 3), (32, 128, 128, 32, 8, 3, "atomic")),
    128: ((64, 128, 128, 64, 8, 3), (64, 128, 128, 64, 8, 2), (64, 128, 128, 64, 8, 2, "atomic"),
          (32, 128, 128, 32, 8, 2), (32, 64, 64, 32, 4, 2, "atomic"), (32, 128, 128, 32, 8, 2, "atomic")),
}  # fmt: skip
_FWD_FP32 = {
    64: ((32, 32, 4, 2), (64, 32, 8, 2), (32, 64, 4, 2)),
    128: ((32, 16, 4, 2), (16, 16, 4, 2), (32, 32, 8, 2)),
}
_BWD_FP32 = {
    64: ((16, 32, 32, 16, 4, 2), (16, 64, 64, 16, 4, 2), (16, 64, 64, 16, 8, 2)),
    128: ((16, 32, 32, 16, 4, 2), (16, 32, 32, 16, 8, 2), (16, 64, 64, 16, 8, 2)),
}
# The interpreter runs one program at a time in NumPy: one fixed, small, asymmetric setting (the
# atomic backward; deterministic=True runs the same tiles through _attn_bwd).
_FWD_INTERPRETED = ((32, 16, 1, 1),)
_BWD_INTERPRETED = ((16, 32, 32, 16, 1, 1, "atomic"),)
_FWD_KEYS = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
_BWD_KEYS = ("BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "num_warps", "num_stages")
_FLAGS = {"desc": "DESC", "ws": "WARP_SPEC", "atomic": "ATOMIC"}
AUTOTUNE_ENV = "ATTN_CORE_FLASH_AUTOTUNE"  # "0": take the first candidate, time nothing
_LOG2E = math.log2(math.e)

try:  # host-side tensor descriptors: triton >= 3.3
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:
    TensorDescriptor = None


def _as_dict(keys: tuple[str, ...], entry: tuple) -> dict:
    """A table entry as kernel keyword arguments: its numbers by `keys`, each flag as a True constexpr."""
    flags = entry[len(keys)].split("+") if len(entry) > len(keys) else ()
    return {**dict(zip(keys, entry[: len(keys)], strict=True)), **{_FLAGS[f]: True for f in flags}}


def _candidates(d_pad: int, dtype: torch.dtype, interpreting: bool) -> tuple[tuple[dict, ...], tuple[dict, ...]]:
    """(forward, backward) candidate settings as kernel keyword arguments, best guess first."""
    if interpreting:
        fwd, bwd = _FWD_INTERPRETED, _BWD_INTERPRETED
    else:
        fwd, bwd = (_FWD_FP32, _BWD_FP32) if dtype == torch.float32 else (_FWD_16BIT, _BWD_16BIT)
        fwd, bwd = fwd[max(64, d_pad)], bwd[max(64, d_pad)]
    return tuple(_as_dict(_FWD_KEYS, c) for c in fwd), tuple(_as_dict(_BWD_KEYS, c) for c in bwd)


def _without(candidates: tuple[dict, ...], *flags: str) -> tuple[dict, ...]:
    """The candidates with `flags` removed, duplicates dropped, order kept."""
    seen = {}
    for c in candidates:
        plain = {k: v for k, v in c.items() if k not in flags}
        seen.setdefault(tuple(sorted(plain.items())), plain)
    return tuple(seen.values())


def _override(fwd: dict, bwd: dict, block_m: int | None, block_n: int | None) -> tuple[dict, dict]:
    """The first candidates with the caller's tiles: block_m for every query tile, block_n for every key tile."""
    queries, keys = ("BLOCK_M", "BLOCK_M1", "BLOCK_M2"), ("BLOCK_N", "BLOCK_N1", "BLOCK_N2")
    fixed = {**dict.fromkeys(queries, block_m), **dict.fromkeys(keys, block_n)}
    return tuple({k: fixed.get(k) or v for k, v in c.items()} for c in (fwd, bwd))


def _shape_class(n: int) -> int:
    """n rounded up to a power of two >= 16: lengths that share their best launch settings."""
    return 1 << max(4, (n - 1).bit_length())


class _Plan:
    """What a launch needs besides the tensors, for one (device, dtype, d, causal, tile overrides,
    determinism, mode). `chosen` maps (kernel, n_q class, n_k class) to the _Setting picked for it."""

    def __init__(self, device, dtype, d, causal, block_m, block_n, interpreting, deterministic=False):
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
        if dtype == torch.float32 or d != d_pad or TensorDescriptor is None:  # the descriptor path never applies
            fwd = _without(fwd, "DESC", "WARP_SPEC")
        if deterministic:
            bwd = _without(bwd, "ATOMIC")
        self.candidates = {"fwd": fwd, "bwd": bwd}
        self.delta_block = max(16, 4096 // d_pad)  # _attn_bwd_delta: memory-bound, ~32 fp32 values a thread
        self.tune = not interpreting and os.environ.get(AUTOTUNE_ENV, "1").lower() not in ("0", "false", "off", "no")
        self.chosen: dict[tuple, _Setting] = {}

    def setting(self, kernel: str, n_q: int, n_k: int):
        return self.chosen.get((kernel, _shape_class(n_q), _shape_class(n_k)))

    def record(self, kernel: str, n_q: int, n_k: int, config: dict):
        setting = self.chosen[(kernel, _shape_class(n_q), _shape_class(n_k))] = _Setting(config, self.constants)
        return setting


class _Setting:
    """One chosen candidate, with its kernel keyword arguments made once (not on every call)."""

    def __init__(self, config: dict, constants: dict):
        self.config = config
        self.desc = config.get("DESC", False)
        self.atomic = config.get("ATOMIC", False)
        plain = {k: v for k, v in config.items() if k not in _FLAGS.values()}
        self.kwargs = {**constants, **plain}  # _attn_fwd, _attn_bwd
        if self.desc:  # _attn_fwd_desc takes fewer constants
            keep = ("HEAD_DIM", "CAUSAL", "DOT_IN_FP32", "BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
            self.desc_kwargs = {k: self.kwargs[k] for k in keep} | {"WARP_SPEC": config.get("WARP_SPEC", False)}


_PLANS: dict[tuple, _Plan] = {}


def _plan(device, dtype, d, causal, block_m, block_n, deterministic=False) -> _Plan:
    """The cached plan; on a key's first call, check that the kernels can run at all (no check after that)."""
    key = (device, dtype, d, causal, block_m, block_n, deterministic, _mode() if triton is not None else None)
    plan = _PLANS.get(key)
    if plan is None:
        _require_runnable(device)
        plan = _PLANS[key] = _Plan(device, dtype, d, causal, block_m, block_n, key[-1][0], deterministic)
    return plan


def launch_settings() -> list[dict]:
    """Every launch setting chosen so far in this process (for tools/gpu_check.py and curious readers)."""
    return [
        dict(kernel=kernel, device=str(p.device), dtype=str(p.dtype).removeprefix("torch."), d=p.d, causal=p.causal,
             n_q_class=nq, n_k_class=nk, **s.config)
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


def _bench(run) -> float:
    """Milliseconds per call of `run` on the GPU (median; short: this runs on a class's first call)."""
    from triton.testing import do_bench

    return do_bench(run, warmup=5, rep=25, return_mode="median")


def _choose(plan: _Plan, kernel: str, n_q: int, n_k: int, run):
    """The class's cached setting; on a class's first call, time every candidate with `run(setting)`
    (CUDA, tuning on) or take the first. The caller then runs the chosen one for its result."""
    setting = plan.setting(kernel, n_q, n_k)
    if setting is not None:
        return setting
    candidates = plan.candidates[kernel]
    if not plan.tune or len(candidates) == 1:
        return plan.record(kernel, n_q, n_k, candidates[0])
    timed = [(_bench(lambda s=s: run(s)), i) for i, s in enumerate(_Setting(c, plan.constants) for c in candidates)]
    return plan.record(kernel, n_q, n_k, candidates[min(timed)[1]])


_SAME_DEVICE = contextlib.nullcontext()
# Every output's allocation: tools.gpu_check swaps in a NaN-filled one, so an unwritten element shows.
_empty = torch.empty


def _on_device(device: torch.device):
    """Triton launches on the current CUDA device: make it the tensors' own."""
    if device.type == "cuda" and device.index is not None and device.index != torch.cuda.current_device():
        return torch.cuda.device(device)
    return _SAME_DEVICE


def _rows_2d(x: torch.Tensor, n: int, d: int, elem: int):
    """x (Z, n, d) as the row array a tensor descriptor reads, (Z * n, d) with row stride x.stride(1);
    None when its rows are not evenly strided, its last dim not dense, or TMA's 16-byte alignment fails."""
    sz, sn, sd = x.stride()
    if sd != 1 or (x.shape[0] > 1 and sz != n * sn) or (sn * elem) % 16 or x.data_ptr() % 16:
        return None
    return x.shape[0] * n, sn


def _forward_desc(q, k, v, out, lse, s: _Setting, sm_scale):
    """Launch _attn_fwd_desc if the shapes allow; False if not (the caller takes _attn_fwd)."""
    (z, n_q, d), n_k, bm, bn = q.shape, k.shape[1], s.config["BLOCK_M"], s.config["BLOCK_N"]
    if n_q % bm or n_k % bn or z * max(n_q, n_k) >= 2**31:
        return False
    elem = q.element_size()
    rows = [_rows_2d(x, n, d, elem) for x, n in ((q, n_q), (k, n_k), (v, n_k))]
    if None in rows:
        return False
    descs = [
        TensorDescriptor(x, shape=[r, d], strides=[sn, 1], block_shape=[b, d])
        for x, (r, sn), b in zip((q, k, v), rows, (bm, bn, bn), strict=True)
    ]
    _kernels()._attn_fwd_desc[(n_q // bm * z,)](*descs, out, lse, n_q, n_k, sm_scale * _LOG2E, **s.desc_kwargs)
    return True


def _forward(q, k, v, plan: _Plan, sm_scale: float, out_shape=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse (Z, n_q) fp32, in log2 units) for q (Z, n_q, d), k, v (Z, n_k, d).

    out is contiguous, of shape out_shape (the caller's (..., n_q, d); default (Z, n_q, d)): the
    kernel sees only its memory, so no view has to be returned through autograd.
    """
    (z, n_q, d), n_k = q.shape, k.shape[1]
    out = _empty(out_shape or (z, n_q, d), dtype=q.dtype, device=q.device)
    lse = _empty((z, n_q), dtype=torch.float32, device=q.device)
    if not z:
        return out, lse
    out3 = out.view(z, n_q, d)
    args = (q, k, v, out3, lse, *q.stride(), *k.stride(), *v.stride(), n_q, n_k, sm_scale * _LOG2E)

    def run(s: _Setting):
        if s.desc and _forward_desc(q, k, v, out3, lse, s, sm_scale):
            return
        bm, bn = s.kwargs["BLOCK_M"], s.kwargs["BLOCK_N"]
        grid = (-(-n_q // bm) * z,)
        _kernels()._attn_fwd[grid](*args, EVEN_M=n_q % bm == 0, EVEN_N=n_k % bn == 0, **s.kwargs)

    with _on_device(q.device):
        run(_choose(plan, "fwd", n_q, n_k, run))
    return out, lse


def _backward(q, k, v, out, lse, dout, plan: _Plan, sm_scale: float, shapes=None) -> tuple[torch.Tensor, ...]:
    """(dq, dk, dv), contiguous, of `shapes` (default those of q, k, v (Z, n, d)), from the saved forward
    and dout, both contiguous with Z * n_q rows of d."""
    (z, n_q, d), n_k = q.shape, k.shape[1]
    dq, dk, dv = (_empty(shape, dtype=q.dtype, device=q.device) for shape in shapes or (q.shape, k.shape, v.shape))
    if not z:
        return dq, dk, dv
    kernels, c = _kernels(), plan.constants
    delta = torch.empty((z, n_q), dtype=torch.float32, device=q.device)  # D_i = rowsum(dO * O)
    strides = (*q.stride(), *k.stride(), *v.stride())
    scales = (sm_scale * _LOG2E, sm_scale)
    delta_grid = (-(-z * n_q // plan.delta_block),)
    delta_kw = dict(HEAD_DIM=d, HEAD_DIM_PAD=c["HEAD_DIM_PAD"], BLOCK=plan.delta_block, EVEN_D=c["EVEN_D"])

    def run(s: _Setting):
        m1, n1 = s.kwargs["BLOCK_M1"], s.kwargs["BLOCK_N1"]
        if s.atomic:  # dQ summed in fp32 (in dq itself when that is fp32), zeroed by the delta kernel
            acc = dq if dq.dtype == torch.float32 else _empty((z, n_q, d), dtype=torch.float32, device=q.device)
            kernels._attn_bwd_delta[delta_grid](out, dout, delta, acc, z * n_q, ZERO_DQ=True, **delta_kw)
            grid = (-(-n_k // n1) * z,)
            kernels._attn_bwd[grid](q, k, v, dout, lse, delta, acc, dk, dv, *strides, n_q, n_k, *scales,
                                    EVEN_M=n_q % m1 == 0, EVEN_N=n_k % n1 == 0, ATOMIC=True, **s.kwargs)  # fmt: skip
            if acc is not dq:
                dq.view(z, n_q, d).copy_(acc)
            return
        m2, n2 = s.kwargs["BLOCK_M2"], s.kwargs["BLOCK_N2"]
        kernels._attn_bwd_delta[delta_grid](out, dout, delta, delta, z * n_q, ZERO_DQ=False, **delta_kw)
        grid = (max(-(-n_k // n1), -(-n_q // m2)) * z,)
        even_m, even_n = n_q % max(m1, m2) == 0, n_k % max(n1, n2) == 0
        kernels._attn_bwd[grid](q, k, v, dout, lse, delta, dq, dk, dv, *strides, n_q, n_k, *scales,
                                EVEN_M=even_m, EVEN_N=even_n, ATOMIC=False, **s.kwargs)  # fmt: skip

    with _on_device(q.device):
        run(_choose(plan, "bwd", n_q, n_k, run))
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


_SETTLED: dict[tuple, tuple] = {}  # call key -> (plan, sm_scale): the checks' verdict on shapes and numbers
_SETTLED_MAX = 1024


def _checked(q, k, v, causal, scale, temperature, block_m, block_n, deterministic) -> tuple[_Plan, float]:
    """Every input check, then the plan and the logit scale."""
    d = _check_inputs(q, k, v, causal)
    sm_scale = resolve_scale(scale, d) / check_positive("temperature", temperature)
    if block_m is not None:
        _check_block("block_m", block_m)
    if block_n is not None:
        _check_block("block_n", block_n)
    if not isinstance(deterministic, bool):
        raise ValueError(f"deterministic must be a bool, got {deterministic!r}")
    return _plan(q.device, q.dtype, d, causal, block_m, block_n, deterministic), sm_scale


def _settled(q, k, v, causal, scale, temperature, block_m, block_n, deterministic) -> tuple[_Plan, float]:
    """_checked's answer, remembered for calls that repeat one another's shapes, dtypes, devices and
    arguments (the checks read nothing else): a training loop pays for the checks once. Only plain
    values form a key, so 1 never stands in for True, nor a bool for a number."""
    plain = (
        isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor) and isinstance(v, torch.Tensor)
        and type(causal) is bool and type(deterministic) is bool
        and type(scale) in _NUMBER_OR_NONE and type(temperature) in _NUMBER_OR_NONE
        and type(block_m) in _INT_OR_NONE and type(block_n) in _INT_OR_NONE
    )  # fmt: skip
    if not plain:
        return _checked(q, k, v, causal, scale, temperature, block_m, block_n, deterministic)
    key = (q.shape, k.shape, v.shape, q.dtype, k.dtype, v.dtype, q.device, k.device, v.device,
           causal, scale, temperature, block_m, block_n, deterministic, os.environ.get("TRITON_INTERPRET"))  # fmt: skip
    found = _SETTLED.get(key)
    if found is None:
        found = _checked(q, k, v, causal, scale, temperature, block_m, block_n, deterministic)
        if len(_SETTLED) >= _SETTLED_MAX:
            _SETTLED.clear()
        _SETTLED[key] = found
    return found


_NUMBER_OR_NONE = (float, int, type(None))
_INT_OR_NONE = (int, type(None))


def flash_attention(
    q, k, v, *, causal=False, scale=None, temperature=1.0, block_m=None, block_n=None, deterministic=False
):
    """Exact attention output (..., n_q, d) from the fused Triton kernels; the dtype of q; differentiable.

    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d), the same leading shape, 16 <= d <= 128,
    float16/bfloat16/float32. `causal=True`: key j visible to query i iff j <= i (top-left, like
    SDPA's `is_causal`). `block_m`/`block_n` fix every query/key tile size (powers of two >= 16)
    instead of the tuned ones. `deterministic=True`: a backward whose dQ does not depend on the
    order the GPU runs its programs in (seven matmuls per tile pair instead of five with atomics).
    """
    plan, sm_scale = _settled(q, k, v, causal, scale, temperature, block_m, block_n, deterministic)
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return _FlashAttention.apply(q, k, v, plan, sm_scale)  # (..., n_q, d)
    return _forward(*_as_3d(q, k, v), plan, sm_scale, q.shape)[0]  # inference: no autograd node, nothing saved
