"""The score matrix as a bilinear form of the tokens: S = (X W_Q)(X W_K)^T = X (W_Q W_K^T) X^T.

Separate projections give M = W_Q W_K^T, any d x d matrix of rank <= d_k: s_ij = x_i^T M x_j need not
equal s_ji, so token i may attend to j more than j attends to i. One shared projection W gives
M = W W^T, symmetric, so S = S^T for every X. K Q^T is S^T: the same numbers, transposed, and
softmax normalises rows, so softmax(K Q^T) is not softmax(Q K^T) unless S is symmetric.
"""

from __future__ import annotations

import torch

from attn_core._checks import check_tensor, resolve_scale
from attn_core.budget import check_budget, tensor_bytes


def projected_scores(x, w_q, w_k=None, *, scale=None) -> torch.Tensor:
    """(..., n, n) scores (X W_q)(X W_k)^T * scale; w_k None means one shared W = w_q (scores then symmetric).

    x (..., n, d_model), w_q and w_k (d_model, d_k); scale defaults to 1/sqrt(d_k).
    """
    check_tensor("x", x, min_dim=2)
    check_tensor("w_q", w_q, min_dim=2)
    w_k = w_q if w_k is None else check_tensor("w_k", w_k, min_dim=2)
    for name, w in (("w_q", w_q), ("w_k", w_k)):
        if w.dim() != 2 or w.shape[0] != x.shape[-1] or w.shape[1] == 0:
            raise ValueError(f"{name} must have shape (d_model={x.shape[-1]}, d_k), got {tuple(w.shape)}")
        if w.dtype != x.dtype:
            raise ValueError(f"{name} must share x's dtype {x.dtype}, got {w.dtype}")
    if w_k.shape != w_q.shape:
        raise ValueError(f"w_k must have w_q's shape {tuple(w_q.shape)}, got {tuple(w_k.shape)}")
    n = x.shape[-2]
    check_budget(tensor_bytes((*x.shape[:-2], n, n), x.dtype), f"a {n} x {n} score matrix", "Use fewer tokens.")
    scale = resolve_scale(scale, w_q.shape[1])
    if w_k is w_q:
        return gram(x @ w_q) * scale  # (..., n, n), symmetric to the last bit
    return (x @ w_q) @ (x @ w_k).transpose(-2, -1) * scale  # (..., n, n)


def gram(p: torch.Tensor) -> torch.Tensor:
    """P P^T (..., n, n), exactly symmetric: the upper triangle of the product, mirrored.

    s_ij and s_ji are the same sum of the same products, but a general matrix product may add them in
    another order (seen: |s_ij - s_ji| = 2.8e-17 in float64 on an AMD EPYC); BLAS's own Gram routine
    (syrk) likewise computes one triangle.
    """
    s = p @ p.transpose(-2, -1)
    return s.triu() + s.triu(1).transpose(-2, -1)


def asymmetry(m: torch.Tensor) -> float:
    """max |M - M^T| over the last two (square) dimensions: 0 exactly when M is symmetric."""
    check_tensor("m", m, min_dim=2)
    if m.shape[-1] != m.shape[-2]:
        raise ValueError(f"m must be square in its last two dimensions, got {tuple(m.shape)}")
    return float((m - m.transpose(-2, -1)).abs().max()) if m.numel() else 0.0
