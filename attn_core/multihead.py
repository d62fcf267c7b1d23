"""Multi-head attention: h heads of width d_k = d_model / h, concatenated and mixed by W_o.

head_i = Attention(X W_q^i, X W_k^i, X W_v^i),   MHA(X) = Concat(head_1..head_h) W_o
"""

from __future__ import annotations

import torch
from torch import nn

from attn_core._checks import check_int, check_positive, check_tensor
from attn_core.naive import naive_attention


class MultiHeadAttention(nn.Module):
    """Self- or cross-attention with `num_heads` heads; forward returns (output, per-head weights).

    scale: the factor on q.k; None means 1/sqrt(d_k), 1.0 gives unscaled logits.
    """

    def __init__(self, d_model: int, num_heads: int, *, bias: bool = True, scale=None, device=None, dtype=None):
        super().__init__()
        check_int("d_model", d_model, minimum=1)
        check_int("num_heads", num_heads, minimum=1)
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.scale = check_positive("scale", scale, allow_none=True)
        factory = dict(bias=bias, device=device, dtype=dtype)
        self.w_q = nn.Linear(d_model, d_model, **factory)
        self.w_k = nn.Linear(d_model, d_model, **factory)
        self.w_v = nn.Linear(d_model, d_model, **factory)
        self.w_o = nn.Linear(d_model, d_model, **factory)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.d_k).transpose(1, 2)  # (B, H, n, d_k)

    def _check(self, name: str, x) -> None:
        check_tensor(name, x, min_dim=3)
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must have shape (B, n, d_model={self.d_model}), got {tuple(x.shape)}")

    def queries_keys(self, query, key=None) -> tuple[torch.Tensor, torch.Tensor]:
        """The per-head queries (B, H, n_q, d_k) and keys (B, H, n_k, d_k) that forward would use."""
        key = query if key is None else key
        for name, x in (("query", query), ("key", key)):
            self._check(name, x)
        return self._split(self.w_q(query)), self._split(self.w_k(key))

    def forward(self, query, key=None, value=None, mask=None):
        """query (B, n_q, d_model), key/value (B, n_k, d_model), default to query.

        mask: bool, True = may attend; (n_q, n_k), (B, n_q, n_k) or (B, 1, n_k) apply to every head,
        a 4-D mask (B or 1, H or 1, n_q, n_k) per head.
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("query", query), ("key", key), ("value", value)):
            self._check(name, x)
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"key and value must share (B, n_k), got {tuple(key.shape)} and {tuple(value.shape)}")
        if isinstance(mask, torch.Tensor) and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, n_q or 1, n_k): one mask for all heads
        q = self._split(self.w_q(query))  # (B, H, n_q, d_k)
        k = self._split(self.w_k(key))  # (B, H, n_k, d_k)
        v = self._split(self.w_v(value))  # (B, H, n_k, d_k)
        heads, weights = naive_attention(q, k, v, mask, scale=self.scale)  # (B, H, n_q, d_k), (B, H, n_q, n_k)
        b, _, n_q, _ = heads.shape
        concat = heads.transpose(1, 2).reshape(b, n_q, self.d_model)  # (B, n_q, d_model)
        return self.w_o(concat), weights
