"""Attention as kernel regression, and additive (Bahdanau) attention.

Nadaraya-Watson:  f(q) = sum_i K(q, k_i) v_i / sum_j K(q, k_j).
With the exponential kernel K(q, k) = exp(q.k / sqrt(d_k)) this is exactly softmax attention.
"""

from __future__ import annotations

import torch
from torch import nn

from attn_core._checks import broadcast_shape, check_int, check_mask, check_positive, check_qkv, resolve_scale
from attn_core.budget import check_budget, tensor_bytes
from attn_core.naive import masked_softmax

KERNELS = ("exponential", "gaussian")


def kernel_weights(q, k, *, kernel: str = "exponential", scale=None, bandwidth: float = 1.0):
    """Normalised kernel weights K(q, k_j) / sum_j K(q, k_j), computed from the kernel itself.

    "exponential": K = exp(q.k * scale); "gaussian": K = exp(-|q - k|^2 / (2 h^2)), h = bandwidth.
    The largest log-kernel of each row is subtracted before exp() (it cancels in the ratio).
    """
    n_q, n_k, _, _ = check_qkv(q, k, k)
    batch = broadcast_shape(q.shape[:-2], k.shape[:-2])
    check_budget(tensor_bytes((*batch, n_q, n_k), q.dtype, 3), f"{n_q} x {n_k} kernel weights", "Use fewer points.")
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel == "exponential":
        log_k = (q @ k.transpose(-2, -1)) * resolve_scale(scale, q.shape[-1])
    else:
        h = check_positive("bandwidth", bandwidth)
        log_k = -(torch.cdist(q, k) ** 2) / (2 * h**2)
    kern = torch.exp(log_k - log_k.amax(dim=-1, keepdim=True))  # (..., n_q, n_k)
    return kern / kern.sum(dim=-1, keepdim=True)


def nadaraya_watson(q, k, v, *, kernel: str = "exponential", scale=None, bandwidth: float = 1.0):
    """Return (prediction (..., n_q, d_v), weights (..., n_q, n_k))."""
    check_qkv(q, k, v)
    w = kernel_weights(q, k, kernel=kernel, scale=scale, bandwidth=bandwidth)
    return w @ v, w


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(q, k) = w^T tanh(W_q q + W_k k), then softmax and a weighted sum."""

    def __init__(self, d_q: int, d_k: int, d_hidden: int):
        super().__init__()
        for name, value in (("d_q", d_q), ("d_k", d_k), ("d_hidden", d_hidden)):
            check_int(name, value, minimum=1)
        self.w_q = nn.Linear(d_q, d_hidden, bias=False)
        self.w_k = nn.Linear(d_k, d_hidden, bias=False)
        self.w = nn.Linear(d_hidden, 1, bias=False)

    def scores(self, q, k):
        """(..., n_q, n_k) additive scores."""
        shape = (*broadcast_shape(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2], self.w.in_features)
        check_budget(
            tensor_bytes(shape, q.dtype, 2),
            f"additive attention's {shape[-3]} x {shape[-2]} x {shape[-1]} hidden scores",
            "Use shorter sequences or a smaller d_hidden.",
        )
        hidden = torch.tanh(self.w_q(q).unsqueeze(-2) + self.w_k(k).unsqueeze(-3))  # (..., n_q, n_k, h)
        return self.w(hidden).squeeze(-1)

    def forward(self, q, k, v, mask=None):
        """q (..., n_q, d_q), k (..., n_k, d_k), v (..., n_k, d_v) -> (output, weights)."""
        for name, x, width in (("q", q, self.w_q.in_features), ("k", k, self.w_k.in_features)):
            if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.shape[-1] != width:
                raise ValueError(f"{name} must have shape (..., n, {width}), got {getattr(x, 'shape', x)}")
        if not isinstance(v, torch.Tensor) or v.dim() < 2 or v.shape[-2] != k.shape[-2]:
            raise ValueError(f"v must have shape (..., n_k={k.shape[-2]}, d_v), got {getattr(v, 'shape', v)}")
        s = self.scores(q, k)
        weights = masked_softmax(s, check_mask(mask, s.shape, s.device))
        return weights @ v, weights


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
