"""FlashAttention as Triton kernels: the online softmax of tiled.py, fused on the GPU, and its backward.

One program owns BLOCK_M query rows of one (batch x head) slice and streams every key/value tile
through on-chip memory, keeping per row
    m   = running max of the logits (in log2 units),   l = running sum of 2^(logit - m),
    acc = running sum of 2^(logit - m) * v,             rescaled by 2^(m_old - m_new) when m grows,
then writes acc / l. The n_q x n_k logits never reach global memory:
    # read n_q*d + (n_q/BLOCK_M) * 2*n_k*d elements; write n_q*d outputs + n_q row statistics
Logits are computed as (q . k) * scale / temperature * log2(e), so exp2 (one hardware instruction)
replaces exp. Causal attention (top-left: query i sees keys 0..i) stops the key loop at the diagonal.
The backward pass recomputes the weights tile by tile from the saved row log-sum-exp (see below).

CUDA tensors run compiled; CPU tensors run under Triton's interpreter when TRITON_INTERPRET=1 is
set before triton is first imported (correct, slow: for tests). Elsewhere use attn_core.tiled_attention.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from attn_core._checks import check_int, check_positive, check_qkv, resolve_scale

try:
    import triton
    import triton.language as tl
except ImportError:  # attn_core works without triton; only flash_attention needs it
    triton = tl = None

MIN_HEAD_DIM, MAX_HEAD_DIM = 16, 128  # tl.dot needs >= 16; 128 keeps acc + tiles within registers/smem
_FALLBACK = "use attn_core.tiled_attention (the same algorithm in plain PyTorch) instead"


def _flash_fwd_kernel(
    Q, K, V, Out, Lse,
    stride_qz, stride_qm, stride_qd,
    stride_kz, stride_kn, stride_kd,
    stride_vz, stride_vn, stride_vd,
    N_Q, N_K, qk_scale_log2,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """Program pid: query rows [start_m*BLOCK_M, +BLOCK_M) of slice z, against all visible key tiles.

    Out (Z, N_Q, HEAD_DIM) and Lse (Z, N_Q) are contiguous; Lse = m + log2(l) lets the backward
    pass rebuild any tile of softmax weights as 2^(logit - Lse) without a second online pass.
    """
    pid = tl.program_id(0)
    n_m_blocks = tl.cdiv(N_Q, BLOCK_M)
    z = (pid // n_m_blocks).to(tl.int64)  # int64: z * stride passes 2^31 on large batches
    start_m = pid % n_m_blocks
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query rows
    offs_n = tl.arange(0, BLOCK_N)  # (BLOCK_N,) key columns within a tile
    offs_d = tl.arange(0, HEAD_DIM_PAD)  # tl.arange needs a power of two: pad d, mask the loads
    d_ok = offs_d[None, :] < HEAD_DIM  # padded columns load as 0 and add 0 to every dot product

    q_mask = (offs_m[:, None] < N_Q) & d_ok
    q = tl.load(Q + z * stride_qz + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd, q_mask, other=0.0)
    if DOT_IN_FP32:  # Triton's interpreter stores bf16 as uint16 and would multiply the raw bits
        q = q.to(tl.float32)  # (BLOCK_M, HEAD_DIM_PAD)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM_PAD], dtype=tl.float32)

    hi = N_K
    if CAUSAL:  # tiles right of the diagonal are never loaded: ~half the work for n_q = n_k
        hi = tl.minimum(N_K, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n  # (BLOCK_N,)
        kv_mask = (cols[:, None] < N_K) & d_ok
        k = tl.load(K + z * stride_kz + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd, kv_mask, other=0.0)
        v = tl.load(V + z * stride_vz + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd, kv_mask, other=0.0)
        if DOT_IN_FP32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale_log2  # (BLOCK_M, BLOCK_N)

        visible = cols[None, :] < N_K  # the tail tile's columns past n_k hold zeros, not keys
        if CAUSAL:
            visible = visible & (cols[None, :] <= offs_m[:, None])
        s = tl.where(visible, s, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no visible key yet: avoid -inf - -inf = NaN
        alpha = tl.exp2(m_i - m_safe)  # rescales the old state; 0 while m_i = -inf
        p = tl.exp2(s - m_safe[:, None])  # (BLOCK_M, BLOCK_N), in [0, 1]
        l_i = l_i * alpha + tl.sum(p, axis=1)
        # p is rounded to the input dtype, as in FlashAttention, so the second matmul runs on tensor cores
        p = p.to(V.dtype.element_ty).to(v.dtype)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision=DOT_PRECISION)  # (BLOCK_M, HEAD_DIM_PAD)
        m_i = m_new

    row_ok = offs_m < N_Q
    seen = l_i > 0  # a row that saw no key outputs 0, not NaN, and gets weights 2^-inf = 0 in backward
    out = acc / tl.where(seen, l_i, 1.0)[:, None]
    tl.store(Out + (z * N_Q + offs_m[:, None]) * HEAD_DIM + offs_d[None, :], out.to(Out.dtype.element_ty), q_mask)
    tl.store(Lse + z * N_Q + offs_m, tl.where(seen, m_i + tl.log2(l_i), float("inf")), row_ok)


# Backward, with P = softmax weights, dO = incoming gradient, D_i = sum_d dO_id O_id = sum_j P_ij dP_ij:
#     dV = P^T dO,   dP = dO V^T,   dS = P * (dP - D),   dQ = dS K * c,   dK = dS^T Q * c   (c = scale/temp)
# Two kernels so that no two programs add into the same rows: one owns a key block (dK, dV) and
# walks the query blocks below its diagonal; one owns a query block (dQ) and walks the key tiles.


def _flash_bwd_dkdv_kernel(
    Q, K, V, DO, Lse, Delta, DK, DV,
    stride_qz, stride_qm, stride_qd,
    stride_kz, stride_kn, stride_kd,
    stride_vz, stride_vn, stride_vd,
    N_Q, N_K, qk_scale_log2, sm_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """Program pid: dK, dV of key rows [start_n, start_n + BLOCK_N) of slice z. DO, DK, DV contiguous."""
    pid = tl.program_id(0)
    n_n_blocks = tl.cdiv(N_K, BLOCK_N)
    z = (pid // n_n_blocks).to(tl.int64)
    start_n = (pid % n_n_blocks) * BLOCK_N
    cols = start_n + tl.arange(0, BLOCK_N)  # (BLOCK_N,) key rows owned by this program
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    d_ok = offs_d[None, :] < HEAD_DIM

    kv_mask = (cols[:, None] < N_K) & d_ok
    k = tl.load(K + z * stride_kz + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd, kv_mask, other=0.0)
    v = tl.load(V + z * stride_vz + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd, kv_mask, other=0.0)
    if DOT_IN_FP32:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    dk = tl.zeros([BLOCK_N, HEAD_DIM_PAD], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM_PAD], dtype=tl.float32)

    lo = 0
    if CAUSAL:  # queries before start_n see none of these keys
        lo = start_n
    for start_m in range(lo, N_Q, BLOCK_M):
        rows = start_m + offs_m  # (BLOCK_M,)
        row_ok = rows < N_Q
        q_mask = row_ok[:, None] & d_ok
        q = tl.load(Q + z * stride_qz + rows[:, None] * stride_qm + offs_d[None, :] * stride_qd, q_mask, other=0.0)
        do = tl.load(DO + (z * N_Q + rows[:, None]) * HEAD_DIM + offs_d[None, :], q_mask, other=0.0)
        if DOT_IN_FP32:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        lse = tl.load(Lse + z * N_Q + rows, row_ok, other=0.0)
        delta = tl.load(Delta + z * N_Q + rows, row_ok, other=0.0)

        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale_log2  # (BLOCK_M, BLOCK_N)
        visible = row_ok[:, None] & (cols[None, :] < N_K)
        if CAUSAL:
            visible = visible & (cols[None, :] <= rows[:, None])
        p = tl.where(visible, tl.exp2(s - lse[:, None]), 0.0)  # the forward's softmax weights
        dv += tl.dot(tl.trans(p.to(Q.dtype.element_ty).to(do.dtype)), do, input_precision=DOT_PRECISION)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N)
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(Q.dtype.element_ty).to(q.dtype)), q, input_precision=DOT_PRECISION)

    out_offs = (z * N_K + cols[:, None]) * HEAD_DIM + offs_d[None, :]
    tl.store(DK + out_offs, (dk * sm_scale).to(DK.dtype.element_ty), kv_mask)
    tl.store(DV + out_offs, dv.to(DV.dtype.element_ty), kv_mask)


def _flash_bwd_dq_kernel(
    Q, K, V, DO, Lse, Delta, DQ,
    stride_qz, stride_qm, stride_qd,
    stride_kz, stride_kn, stride_kd,
    stride_vz, stride_vn, stride_vd,
    N_Q, N_K, qk_scale_log2, sm_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, DOT_PRECISION: tl.constexpr, DOT_IN_FP32: tl.constexpr,
):  # fmt: skip
    """Program pid: dQ of query rows [start_m*BLOCK_M, +BLOCK_M) of slice z. DO, DQ contiguous."""
    pid = tl.program_id(0)
    n_m_blocks = tl.cdiv(N_Q, BLOCK_M)
    z = (pid // n_m_blocks).to(tl.int64)
    start_m = pid % n_m_blocks
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    d_ok = offs_d[None, :] < HEAD_DIM

    row_ok = rows < N_Q
    q_mask = row_ok[:, None] & d_ok
    q = tl.load(Q + z * stride_qz + rows[:, None] * stride_qm + offs_d[None, :] * stride_qd, q_mask, other=0.0)
    do = tl.load(DO + (z * N_Q + rows[:, None]) * HEAD_DIM + offs_d[None, :], q_mask, other=0.0)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    lse = tl.load(Lse + z * N_Q + rows, row_ok, other=0.0)
    delta = tl.load(Delta + z * N_Q + rows, row_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM_PAD], dtype=tl.float32)

    hi = N_K
    if CAUSAL:
        hi = tl.minimum(N_K, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kv_mask = (cols[:, None] < N_K) & d_ok
        k = tl.load(K + z * stride_kz + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd, kv_mask, other=0.0)
        v = tl.load(V + z * stride_vz + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd, kv_mask, other=0.0)
        if DOT_IN_FP32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale_log2
        visible = row_ok[:, None] & (cols[None, :] < N_K)
        if CAUSAL:
            visible = visible & (cols[None, :] <= rows[:, None])
        p = tl.where(visible, tl.exp2(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(Q.dtype.element_ty).to(k.dtype), k, input_precision=DOT_PRECISION)

    dq = dq * sm_scale
    tl.store(DQ + (z * N_Q + rows[:, None]) * HEAD_DIM + offs_d[None, :], dq.to(DQ.dtype.element_ty), q_mask)


@functools.cache
def _jitted(kernel, interpret: bool):
    """Decorated on first use, once per mode: triton.jit reads TRITON_INTERPRET when it decorates."""
    del interpret  # only the cache key
    return triton.jit(kernel)


def _mode() -> tuple[bool, bool]:
    """(TRITON_INTERPRET=1 now, triton imported under it).

    Triton jits its own helpers (tl.cdiv, tl.max, ...) when triton.language is first imported, so
    a kernel only runs in the mode that was in force then.
    """
    return bool(triton.knobs.runtime.interpret), not isinstance(tl.cdiv, triton.runtime.JITFunction)


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


@dataclass(frozen=True)
class _Launch:
    """What a kernel launch needs besides the tensors."""

    causal: bool
    sm_scale: float  # scale / temperature
    d: int
    d_pad: int
    dtype: torch.dtype
    interpreting: bool
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    def scalars(self) -> tuple[float, float]:
        return self.sm_scale * math.log2(math.e), self.sm_scale  # exp(x * c) = 2^(x * c * log2 e)

    def constants(self) -> dict:
        return dict(
            HEAD_DIM=self.d, HEAD_DIM_PAD=self.d_pad, BLOCK_M=self.block_m, BLOCK_N=self.block_n,
            CAUSAL=self.causal,
            DOT_PRECISION="ieee" if self.dtype == torch.float32 else None,  # fp32 stays fp32, no silent tf32
            DOT_IN_FP32=self.interpreting and self.dtype == torch.bfloat16,
            num_warps=self.num_warps, num_stages=self.num_stages,
        )  # fmt: skip


def _launches(d, dtype, causal, sm_scale, block_m, block_n) -> tuple[_Launch, _Launch]:
    """(forward, backward) launch settings: small tiles for the interpreter, roomy ones on a GPU.

    Forward, 16-bit: a 128 x d_pad fp32 accumulator needs 8 warps at d = 128 to stay in registers;
    two stages of 64 x 128 K/V tiles plus the Q tile (96 KB) fit the ~100 KB of shared memory of
    consumer GPUs. Backward holds two fp32 accumulators (dK, dV) of BLOCK_N x d_pad: BLOCK_N = 32
    at d = 128 keeps them at 32 registers per thread. fp32 tiles are twice the bytes and take the
    slower exact ("ieee") path: halve them.
    """
    interpreting = _mode()[0]
    d_pad = max(MIN_HEAD_DIM, triton.next_power_of_2(d))
    wide = d_pad > 64
    if interpreting:
        fwd, bwd = (16, 16, 1, 1), (16, 16, 1, 1)
    elif dtype == torch.float32:
        fwd, bwd = (64, 32, 4, 2), (32, 32, 4, 2)
    else:
        fwd, bwd = (128, 64, 8 if wide else 4, 2 if wide else 3), (64, 32 if wide else 64, 8 if wide else 4, 2)
    common = dict(causal=causal, sm_scale=sm_scale, d=d, d_pad=d_pad, dtype=dtype, interpreting=interpreting)
    return tuple(
        _Launch(**common, block_m=block_m or bm, block_n=block_n or bn, num_warps=w, num_stages=st)
        for bm, bn, w, st in (fwd, bwd)
    )


def _grid(z: int, n: int, block: int) -> tuple[int]:
    return (triton.cdiv(n, block) * z,)  # 1-D: no 65535 limit on the batch x head axis


def _forward(q, k, v, cfg: _Launch) -> tuple[torch.Tensor, torch.Tensor]:
    """(out (Z, n_q, d), lse (Z, n_q) fp32, in log2 units) for q (Z, n_q, d), k, v (Z, n_k, d)."""
    (z, n_q, _), n_k = q.shape, k.shape[1]
    out = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty((z, n_q), dtype=torch.float32, device=q.device)
    if z:
        _jitted(_flash_fwd_kernel, cfg.interpreting)[_grid(z, n_q, cfg.block_m)](
            q, k, v, out, lse, *q.stride(), *k.stride(), *v.stride(), n_q, n_k, cfg.scalars()[0], **cfg.constants()
        )
    return out, lse


def _backward(q, k, v, out, lse, dout, cfg: _Launch) -> tuple[torch.Tensor, ...]:
    """(dq, dk, dv), each (Z, n, d) contiguous, from the saved forward and dout (Z, n_q, d) contiguous."""
    (z, n_q, _), n_k = q.shape, k.shape[1]
    delta = (dout.float() * out.float()).sum(dim=-1)  # (Z, n_q): D_i = rowsum(dO * O)
    dq, dk, dv = (torch.empty_like(x, memory_format=torch.contiguous_format) for x in (q, k, v))
    if z:
        args = (*q.stride(), *k.stride(), *v.stride(), n_q, n_k, *cfg.scalars())
        _jitted(_flash_bwd_dkdv_kernel, cfg.interpreting)[_grid(z, n_k, cfg.block_n)](
            q, k, v, dout, lse, delta, dk, dv, *args, **cfg.constants()
        )
        _jitted(_flash_bwd_dq_kernel, cfg.interpreting)[_grid(z, n_q, cfg.block_m)](
            q, k, v, dout, lse, delta, dq, *args, **cfg.constants()
        )
    return dq, dk, dv


class _FlashAttention(torch.autograd.Function):
    """The Triton forward, with a Triton backward that recomputes the weights tile by tile."""

    @staticmethod
    def forward(ctx, q, k, v, fwd: _Launch, bwd: _Launch):
        out, lse = _forward(q, k, v, fwd)
        ctx.save_for_backward(q, k, v, out, lse)  # O(n) extra: lse, not the n_q x n_k weights
        ctx.bwd = bwd
        return out

    @staticmethod
    def backward(ctx, dout):
        dq, dk, dv = _backward(*ctx.saved_tensors, dout.contiguous(), ctx.bwd)
        return dq, dk, dv, None, None


def flash_attention(q, k, v, *, causal=False, scale=None, temperature=1.0, block_m=None, block_n=None):
    """Exact attention output (..., n_q, d) from the fused Triton kernels; the dtype of q; differentiable.

    q (..., n_q, d), k (..., n_k, d), v (..., n_k, d), the same leading shape, 16 <= d <= 128,
    float16/bfloat16/float32. `causal=True`: key j visible to query i iff j <= i (top-left, like
    SDPA's `is_causal`). `block_m`/`block_n` override the tile sizes (powers of two >= 16).
    """
    d = _check_inputs(q, k, v, causal)
    scale = resolve_scale(scale, d)
    temperature = check_positive("temperature", temperature)
    block_m = None if block_m is None else _check_block("block_m", block_m)
    block_n = None if block_n is None else _check_block("block_n", block_n)
    _require_runnable(q.device)
    fwd, bwd = _launches(d, q.dtype, causal, scale / temperature, block_m, block_n)
    z = math.prod(q.shape[:-2])
    q3, k3, v3 = (x.reshape(z, x.shape[-2], d) for x in (q, k, v))  # (Z, n, d), views when possible
    return _FlashAttention.apply(q3, k3, v3, fwd, bwd).reshape(q.shape)  # (..., n_q, d)
