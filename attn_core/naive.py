"""Scaled dot-product attention, the readable reference every other path is checked against.

    Attention(Q, K, V) = softmax(Q K^T * scale / temperature) V,   scale = 1/sqrt(d_k)

Masked attention is the same function with a bool mask (True = may attend).
"""

from __future__ import annotations

import torch

from attn_core._checks import broadcast_shape, check_attention, check_mask, softmax_dtype
from attn_core.budget import check_budget, tensor_bytes

# logits, exp(logits - max) and the weights are alive together at the peak (measured by attn_core.bench)
SCORE_COPIES = 3


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Stable softmax over the last dimension; masked entries and fully masked rows get weight 0.

    Masked logits become -inf, so exp() sends them to exactly 0 and their gradient is exactly 0.
    A row with no allowed key has sum 0: it is divided by 1 instead, giving zeros and no NaN.
    """
    if bool((torch.isnan(logits) | (logits == float("inf"))).any()):
        raise ValueError("logits must not contain NaN or +infinity (-infinity is allowed: it hides a key)")
    return _softmax(logits, mask)


def _softmax(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """masked_softmax without the scan for NaN/+inf, for logits already known to be finite."""
    x = logits if mask is None else logits.masked_fill(~mask, float("-inf"))
    row_max = x.amax(dim=-1, keepdim=True).detach()  # shift only: softmax is shift-invariant
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(x - row_max)  # (..., n_q, n_k)
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def renormalise(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Weights restricted to the keys `mask` keeps and divided by their sum over those keys, row by row.

    Masking before softmax does exactly this to the unmasked weights: for kept j,
    e^(s_j) / sum_{kept l} e^(s_l) = w_j / sum_{kept l} w_l with w = softmax(s). A row that keeps
    nothing gets zeros, as in masked_softmax.
    """
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point() or weights.dim() < 1:
        raise ValueError(f"weights must be a floating-point tensor (..., n_k), got {weights!r:.60}")
    if bool((weights < 0).any()) or not bool(torch.isfinite(weights).all()):
        raise ValueError("weights must be finite and >= 0")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError("mask must be a bool tensor (True = keep)")
    try:
        broadcast_shape(mask.shape, weights.shape)
    except RuntimeError:
        raise ValueError(f"mask {tuple(mask.shape)} must broadcast to weights {tuple(weights.shape)}") from None
    kept = weights * mask
    total = kept.sum(dim=-1, keepdim=True)
    return kept / torch.where(total > 0, total, torch.ones_like(total))


def attention_logits(q: torch.Tensor, k: torch.Tensor, scale: float, temperature: float) -> torch.Tensor:
    """q @ k^T * scale / temperature, in the softmax dtype."""
    dtype = softmax_dtype(q.dtype)
    return (q.to(dtype) @ k.to(dtype).transpose(-2, -1)) * (scale / temperature)  # (..., n_q, n_k)


def naive_attention(q, k, v, mask=None, *, scale=None, temperature=1.0):
    """Return (output (..., n_q, d_v), weights (..., n_q, n_k)), materialising all n_q x n_k logits."""
    n_q, n_k, _, scale, temperature = check_attention(q, k, v, scale, temperature)
    logits_shape = (*broadcast_shape(q.shape[:-2], k.shape[:-2]), n_q, n_k)
    check_budget(
        tensor_bytes(logits_shape, softmax_dtype(q.dtype), SCORE_COPIES),
        f"naive attention's {n_q} x {n_k} score matrices",
        "Use a smaller n, or tiled_attention, which never holds more than one tile of scores.",
    )
    logits = attention_logits(q, k, scale, temperature)
    mask = check_mask(mask, logits.shape, logits.device)
    weights = _softmax(logits, mask)  # finite: the inputs are checked and the logits bounded above
    out = weights @ v.to(weights.dtype)  # (..., n_q, d_v)
    return out.to(v.dtype), weights.to(v.dtype)
