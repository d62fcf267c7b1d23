"""The backward pass of attention written out by hand, beside the one autograd computes.

Forward, with c = scale / temperature:
    S = c Q K^T        A = softmax(S) row by row (masked keys get 0)        O = A V
Backward, given G = dL/dO (same shape as O):
    dL/dV = A^T G                                   (..., n_k, d_v)
    dL/dA = G V^T                                   (..., n_q, n_k)
    dL/dS = A * (dL/dA - rowsum(dL/dA * A))         softmax's Jacobian diag(a) - a a^T, one row at a time
    dL/dQ = c dL/dS K                               (..., n_q, d_k)
    dL/dK = c (dL/dS)^T Q                           (..., n_k, d_k)
Every row of dL/dS sums to 0 (softmax ignores a shift of its row), so sum_ij dL/dS_ij = 0.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from attn_core._checks import check_finite, check_mask, check_positive, check_qkv, check_tensor, resolve_scale
from attn_core.budget import check_budget, tensor_bytes
from attn_core.naive import _softmax, attention_logits, softmax_dtype


class AttentionGrads(NamedTuple):
    """dL/dQ, dL/dK, dL/dV, and the two intermediates dL/dA (weights) and dL/dS (logits)."""

    dq: torch.Tensor  # (..., n_q, d_k)
    dk: torch.Tensor  # (..., n_k, d_k)
    dv: torch.Tensor  # (..., n_k, d_v)
    dweights: torch.Tensor  # (..., n_q, n_k)
    dscores: torch.Tensor  # (..., n_q, n_k)


def _prepare(q, k, v, grad_out, mask, scale, temperature):
    """Validate everything; return (scale, temperature, mask)."""
    n_q, n_k, d_k, d_v = check_qkv(q, k, v)
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(name, x)
    check_tensor("grad_out", grad_out, min_dim=2)
    check_finite("grad_out", grad_out)
    batch = q.shape[:-2]
    if k.shape[:-2] != batch or v.shape[:-2] != batch:
        raise ValueError(
            f"q, k, v must share their leading (batch/head) dimensions, got {tuple(q.shape)}, {tuple(k.shape)}, "
            f"{tuple(v.shape)}"
        )
    out_shape = (*batch, n_q, d_v)
    if tuple(grad_out.shape) != out_shape:
        raise ValueError(
            f"grad_out must have the output's shape (..., n_q, d_v) = {out_shape}, got {tuple(grad_out.shape)}"
        )
    if grad_out.dtype != q.dtype:
        raise ValueError(f"grad_out must share q's dtype {q.dtype}, got {grad_out.dtype}")
    scale, temperature = resolve_scale(scale, d_k), check_positive("temperature", temperature)
    shape = (*batch, n_q, n_k)
    check_budget(tensor_bytes(shape, q.dtype, 4), f"the backward pass's {n_q} x {n_k} matrices", "Use a smaller n.")
    return scale, temperature, check_mask(mask, torch.Size(shape), q.device)


def attention_backward(q, k, v, grad_out, mask=None, *, scale=None, temperature=1.0) -> AttentionGrads:
    """The gradients of L with dL/dO = grad_out, by the formulas of the module docstring (no autograd)."""
    scale, temperature, mask = _prepare(q, k, v, grad_out, mask, scale, temperature)
    c, dtype = scale / temperature, softmax_dtype(q.dtype)  # half precision is worked in fp32, as in the forward
    q, k, v, g = (x.detach().to(dtype) for x in (q, k, v, grad_out))
    with torch.no_grad():
        a = _softmax(attention_logits(q, k, scale, temperature), mask)  # (..., n_q, n_k)
        dv = a.transpose(-2, -1) @ g  # (..., n_k, d_v)
        da = g @ v.transpose(-2, -1)  # (..., n_q, n_k)
        ds = a * (da - (da * a).sum(dim=-1, keepdim=True))  # (..., n_q, n_k)
        dq = c * (ds @ k)  # (..., n_q, d_k)
        dk = c * (ds.transpose(-2, -1) @ q)  # (..., n_k, d_k)
    return AttentionGrads(*(x.to(grad_out.dtype) for x in (dq, dk, dv, da, ds)))


def attention_backward_autograd(q, k, v, grad_out, mask=None, *, scale=None, temperature=1.0) -> AttentionGrads:
    """The same five gradients from torch.autograd, through the library's own forward pass."""
    scale, temperature, mask = _prepare(q, k, v, grad_out, mask, scale, temperature)
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    with torch.enable_grad():
        logits = attention_logits(leaves[0], leaves[1], scale, temperature)  # (..., n_q, n_k)
        logits.retain_grad()
        a = _softmax(logits, mask)
        a.retain_grad()
        out = a @ leaves[2].to(a.dtype)  # (..., n_q, d_v)
        # dL/dO = grad_out through the sum of out * grad_out: the same gradient, exactly, as out.backward(grad_out),
        # whose first call imports sympy (~0.3 s of CPU in a page's first run)
        (out * grad_out.detach().to(a.dtype)).sum().backward()
    dq, dk, dv = (x.grad for x in leaves)
    return AttentionGrads(dq, dk, dv, a.grad.to(q.dtype), logits.grad.to(q.dtype))
